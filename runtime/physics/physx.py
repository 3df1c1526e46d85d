"""PhysX-specific cfg subclasses: fields written under ``physx*:`` with ``Physx*API`` schemas.

Base-class fields keep their own namespace (``physics:`` or the base exception namespace);
only the fields declared here use the PhysX namespace of their class. This module does not
import ``pxr``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from runtime.physics._meta import validate_cfg_values
from runtime.physics.cfg import (
    ArticulationRootBaseCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MeshCollisionBaseCfg,
    RigidBodyBaseCfg,
    RigidBodyMaterialBaseCfg,
)

__all__ = [
    "PhysxArticulationRootPropertiesCfg",
    "PhysxCollisionPropertiesCfg",
    "PhysxConvexDecompositionPropertiesCfg",
    "PhysxConvexHullPropertiesCfg",
    "PhysxFixedTendonPropertiesCfg",
    "PhysxJointDrivePropertiesCfg",
    "PhysxRigidBodyMaterialCfg",
    "PhysxRigidBodyPropertiesCfg",
    "PhysxSDFMeshPropertiesCfg",
    "PhysxSpatialTendonPropertiesCfg",
    "PhysxTriangleMeshPropertiesCfg",
    "PhysxTriangleMeshSimplificationPropertiesCfg",
]


@dataclass
class PhysxRigidBodyPropertiesCfg(RigidBodyBaseCfg):
    """PhysX rigid-body knobs (``physxRigidBody:*``, ``PhysxRigidBodyAPI``).

    Attributes:
        linear_damping: linear damping coefficient.
        angular_damping: angular damping coefficient.
        max_linear_velocity: [m/s].
        max_angular_velocity: [deg/s] (written as given, not converted).
        max_depenetration_velocity: [m/s].
        max_contact_impulse: contact impulse limit.
        enable_gyroscopic_forces: enable gyroscopic forces.
        retain_accelerations: carry accelerations over sub-steps.
        solver_position_iteration_count: TGS position iterations.
        solver_velocity_iteration_count: TGS velocity iterations.
        sleep_threshold: mass-normalised kinetic energy below which the body sleeps.
        stabilization_threshold: stabilization energy threshold.
    """

    _usd_namespace = "physxRigidBody"
    _usd_applied_schema = "PhysxRigidBodyAPI"

    linear_damping: float | None = None
    angular_damping: float | None = None
    max_linear_velocity: float | None = None
    max_angular_velocity: float | None = None
    max_depenetration_velocity: float | None = None
    max_contact_impulse: float | None = None
    enable_gyroscopic_forces: bool | None = None
    retain_accelerations: bool | None = None
    solver_position_iteration_count: int | None = None
    solver_velocity_iteration_count: int | None = None
    sleep_threshold: float | None = None
    stabilization_threshold: float | None = None


@dataclass
class PhysxJointDrivePropertiesCfg(JointDriveBaseCfg):
    """PhysX joint drive (no own fields yet; reserves ``physxJoint:*`` / ``PhysxJointAPI``)."""

    _usd_namespace = "physxJoint"
    _usd_applied_schema = "PhysxJointAPI"


@dataclass
class PhysxCollisionPropertiesCfg(CollisionBaseCfg):
    """PhysX collision knobs (``physxCollision:*``, ``PhysxCollisionAPI``).

    Attributes:
        torsional_patch_radius: torsional friction patch radius [m].
        min_torsional_patch_radius: minimum torsional patch radius [m].
    """

    _usd_namespace = "physxCollision"
    _usd_applied_schema = "PhysxCollisionAPI"

    torsional_patch_radius: float | None = None
    min_torsional_patch_radius: float | None = None


@dataclass
class PhysxArticulationRootPropertiesCfg(ArticulationRootBaseCfg):
    """PhysX articulation knobs (``physxArticulation:*``, ``PhysxArticulationAPI``).

    Attributes:
        enabled_self_collisions: collisions between links of the articulation.
        solver_position_iteration_count: TGS position iterations.
        solver_velocity_iteration_count: TGS velocity iterations.
        sleep_threshold: sleep energy threshold.
        stabilization_threshold: stabilization energy threshold.
    """

    _usd_namespace = "physxArticulation"
    _usd_applied_schema = "PhysxArticulationAPI"

    enabled_self_collisions: bool | None = None
    solver_position_iteration_count: int | None = None
    solver_velocity_iteration_count: int | None = None
    sleep_threshold: float | None = None
    stabilization_threshold: float | None = None


@dataclass
class PhysxRigidBodyMaterialCfg(RigidBodyMaterialBaseCfg):
    """PhysX material knobs (``physxMaterial:*``, ``PhysxMaterialAPI``).

    Attributes:
        compliant_contact_stiffness: compliant contact spring stiffness.
        compliant_contact_damping: compliant contact damping.
        friction_combine_mode: ``"average" | "min" | "multiply" | "max"`` (token).
        restitution_combine_mode: ``"average" | "min" | "multiply" | "max"`` (token).
    """

    _usd_namespace = "physxMaterial"
    _usd_applied_schema = "PhysxMaterialAPI"

    compliant_contact_stiffness: float | None = None
    compliant_contact_damping: float | None = None
    friction_combine_mode: Literal["average", "min", "multiply", "max"] | None = None
    restitution_combine_mode: Literal["average", "min", "multiply", "max"] | None = None


@dataclass
class PhysxConvexHullPropertiesCfg(MeshCollisionBaseCfg):
    """Convex-hull cooking (``physxConvexHullCollision:*``).

    Attributes:
        hull_vertex_limit: maximum hull vertices.
        min_thickness: minimum hull thickness [m].
    """

    _usd_namespace = "physxConvexHullCollision"
    _usd_applied_schema = "PhysxConvexHullCollisionAPI"

    mesh_approximation_name: str = "convexHull"
    hull_vertex_limit: int | None = None
    min_thickness: float | None = None


@dataclass
class PhysxConvexDecompositionPropertiesCfg(MeshCollisionBaseCfg):
    """Convex-decomposition cooking (``physxConvexDecompositionCollision:*``).

    Attributes:
        hull_vertex_limit: maximum vertices per hull.
        max_convex_hulls: maximum number of hulls.
        min_thickness: minimum hull thickness [m].
        voxel_resolution: voxelisation resolution.
        error_percentage: decomposition error [%].
        shrink_wrap: shrink-wrap hulls onto the source mesh.
    """

    _usd_namespace = "physxConvexDecompositionCollision"
    _usd_applied_schema = "PhysxConvexDecompositionCollisionAPI"

    mesh_approximation_name: str = "convexDecomposition"
    hull_vertex_limit: int | None = None
    max_convex_hulls: int | None = None
    min_thickness: float | None = None
    voxel_resolution: int | None = None
    error_percentage: float | None = None
    shrink_wrap: bool | None = None


@dataclass
class PhysxTriangleMeshPropertiesCfg(MeshCollisionBaseCfg):
    """Triangle-mesh cooking (``physxTriangleMeshCollision:*``).

    Attributes:
        weld_tolerance: vertex weld tolerance [m].
    """

    _usd_namespace = "physxTriangleMeshCollision"
    _usd_applied_schema = "PhysxTriangleMeshCollisionAPI"

    mesh_approximation_name: str = "none"
    weld_tolerance: float | None = None


@dataclass
class PhysxTriangleMeshSimplificationPropertiesCfg(MeshCollisionBaseCfg):
    """Simplified triangle-mesh cooking (``physxTriangleMeshSimplificationCollision:*``).

    Attributes:
        simplification_metric: simplification metric (0..1).
        weld_tolerance: vertex weld tolerance [m].
    """

    _usd_namespace = "physxTriangleMeshSimplificationCollision"
    _usd_applied_schema = "PhysxTriangleMeshSimplificationCollisionAPI"

    mesh_approximation_name: str = "meshSimplification"
    simplification_metric: float | None = None
    weld_tolerance: float | None = None


@dataclass
class PhysxSDFMeshPropertiesCfg(MeshCollisionBaseCfg):
    """SDF mesh cooking (``physxSDFMeshCollision:*``).

    Attributes:
        sdf_margin: margin [m].
        sdf_narrow_band_thickness: narrow band thickness [m].
        sdf_resolution: SDF resolution.
        sdf_subgrid_resolution: sparse subgrid resolution.
    """

    _usd_namespace = "physxSDFMeshCollision"
    _usd_applied_schema = "PhysxSDFMeshCollisionAPI"

    mesh_approximation_name: str = "sdf"
    sdf_margin: float | None = None
    sdf_narrow_band_thickness: float | None = None
    sdf_resolution: int | None = None
    sdf_subgrid_resolution: int | None = None


@dataclass
class PhysxFixedTendonPropertiesCfg:
    """PhysX fixed-tendon properties (no routing metadata; no writer in simrt).

    Attributes:
        tendon_enabled: enable the tendon.
        stiffness: tendon stiffness.
        damping: tendon damping.
        limit_stiffness: limit stiffness.
        offset: length offset.
        rest_length: rest length.
    """

    tendon_enabled: bool | None = None
    stiffness: float | None = None
    damping: float | None = None
    limit_stiffness: float | None = None
    offset: float | None = None
    rest_length: float | None = None

    def __post_init__(self) -> None:
        validate_cfg_values(self)


@dataclass
class PhysxSpatialTendonPropertiesCfg:
    """PhysX spatial-tendon properties (no routing metadata; no writer in simrt).

    Attributes:
        tendon_enabled: enable the tendon.
        stiffness: tendon stiffness.
        damping: tendon damping.
        limit_stiffness: limit stiffness.
        offset: length offset.
    """

    tendon_enabled: bool | None = None
    stiffness: float | None = None
    damping: float | None = None
    limit_stiffness: float | None = None
    offset: float | None = None

    def __post_init__(self) -> None:
        validate_cfg_values(self)
