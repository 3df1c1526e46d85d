"""Solver-common physics property cfg classes (the "base" tier).

Each class is a dataclass whose fields are the user-facing properties. Three class-level
metadata attributes (plain class variables, never dataclass fields) drive where a field is
written (see :mod:`runtime.physics.writers`):

* ``_usd_namespace`` -- attribute prefix for the fields *declared by this class*;
* ``_usd_applied_schema`` -- applied API schema added when one of those fields is written;
* ``_usd_field_exceptions`` -- ``{schema: (namespace, [field, ...])}`` for fields declared
  here but written under another namespace / schema (e.g. ``disable_gravity`` ->
  ``physxRigidBody:disableGravity`` + ``PhysxRigidBodyAPI``).

``None`` means "do not author". This module does not import ``pxr``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field
from typing import Any, Literal

from runtime.physics._meta import forward_field_alias, validate_cfg_values

__all__ = [
    "MESH_APPROXIMATION_TOKENS",
    "ArticulationRootBaseCfg",
    "BoundingCubePropertiesCfg",
    "BoundingSpherePropertiesCfg",
    "CollisionBaseCfg",
    "JointDriveBaseCfg",
    "MassPropertiesCfg",
    "MeshCollisionBaseCfg",
    "PhysicsMaterialCfg",
    "RigidBodyBaseCfg",
    "RigidBodyMaterialBaseCfg",
    "spawn_rigid_body_material",
]

#: Valid ``mesh_approximation_name`` values. The first six are ``UsdPhysics.Tokens`` of the
#: same name; ``sdf`` is a plain token string.
MESH_APPROXIMATION_TOKENS: dict[str, str] = {
    "boundingCube": "boundingCube",
    "boundingSphere": "boundingSphere",
    "convexDecomposition": "convexDecomposition",
    "convexHull": "convexHull",
    "none": "none",
    "meshSimplification": "meshSimplification",
    "sdf": "sdf",
}


@dataclass
class ArticulationRootBaseCfg:
    """Articulation-root properties common to every solver.

    Attributes:
        articulation_enabled: enable the articulation; written as
            ``physxArticulation:articulationEnabled`` with ``PhysxArticulationAPI``.
        fix_root_link: fix the root to the world (writer-side: toggles an existing
            world-attached joint or creates a world ``FixedJoint``).
    """

    _usd_namespace = None
    _usd_applied_schema = None
    _usd_field_exceptions = {
        "PhysxArticulationAPI": ("physxArticulation", ["articulation_enabled"]),
    }

    articulation_enabled: bool | None = None
    fix_root_link: bool | None = None

    def __post_init__(self) -> None:
        validate_cfg_values(self)


@dataclass
class RigidBodyBaseCfg:
    """Rigid-body properties common to every solver.

    Attributes:
        rigid_body_enabled: ``physics:rigidBodyEnabled``.
        kinematic_enabled: ``physics:kinematicEnabled``.
        disable_gravity: ``physxRigidBody:disableGravity`` (+ ``PhysxRigidBodyAPI``); the one
            attribute every importer honours for per-body gravity.
    """

    _usd_namespace = "physics"
    _usd_applied_schema = None
    _usd_field_exceptions = {"PhysxRigidBodyAPI": ("physxRigidBody", ["disable_gravity"])}

    rigid_body_enabled: bool | None = None
    kinematic_enabled: bool | None = None
    disable_gravity: bool | None = None

    def __post_init__(self) -> None:
        validate_cfg_values(self)


@dataclass
class CollisionBaseCfg:
    """Collision properties common to every solver.

    Attributes:
        collision_enabled: ``physics:collisionEnabled``.
        contact_offset: contact generation distance [m]; ``physxCollision:contactOffset``.
        rest_offset: rest separation [m]; ``physxCollision:restOffset``.
    """

    _usd_namespace = "physics"
    _usd_applied_schema = None
    _usd_field_exceptions = {
        "PhysxCollisionAPI": ("physxCollision", ["contact_offset", "rest_offset"]),
    }

    collision_enabled: bool | None = None
    contact_offset: float | None = None
    rest_offset: float | None = None

    def __post_init__(self) -> None:
        validate_cfg_values(self)


@dataclass
class MassPropertiesCfg:
    """Mass properties (``UsdPhysics.MassAPI``).

    Attributes:
        mass: body mass [kg]; ``physics:mass``.
        density: density [kg/m^3]; ``physics:density``.
    """

    _usd_namespace = "physics"
    _usd_applied_schema = None
    _usd_field_exceptions = {}

    mass: float | None = None
    density: float | None = None

    def __post_init__(self) -> None:
        validate_cfg_values(self)


@dataclass
class JointDriveBaseCfg:
    """Joint drive properties common to every solver (revolute and prismatic joints).

    Angular values are given in SI per radian and stored by the writer per degree, as
    UsdPhysics expects (stiffness and damping times pi/180, velocity times 180/pi).

    Attributes:
        drive_type: ``"force"`` or ``"acceleration"``; ``drive:<axis>:physics:type``.
        max_force: force / torque limit [N or N m]; ``drive:<axis>:physics:maxForce``.
        max_effort: deprecated alias of ``max_force`` (removed in 4.0).
        stiffness: [N/m or N m/rad]; ``drive:<axis>:physics:stiffness``.
        damping: [N s/m or N m s/rad]; ``drive:<axis>:physics:damping``.
        ensure_drives_exist: give unauthored drives a tiny stiffness so they exist.
        max_joint_velocity: [m/s or rad/s]; ``physxJoint:maxJointVelocity`` (+ PhysxJointAPI).
        max_velocity: deprecated alias of ``max_joint_velocity`` (removed in 4.0).
    """

    _usd_namespace = None
    _usd_applied_schema = None
    _usd_field_exceptions = {"PhysxJointAPI": ("physxJoint", ["max_joint_velocity"])}

    drive_type: Literal["force", "acceleration"] | None = None
    max_force: float | None = None
    max_effort: float | None = None
    stiffness: float | None = None
    damping: float | None = None
    ensure_drives_exist: bool = False
    max_joint_velocity: float | None = None
    max_velocity: float | None = None

    def __post_init__(self) -> None:
        validate_cfg_values(self)
        forward_field_alias(self, "max_velocity", "max_joint_velocity")
        forward_field_alias(self, "max_effort", "max_force")


@dataclass
class MeshCollisionBaseCfg:
    """Mesh collision approximation (``UsdPhysics.MeshCollisionAPI``).

    Attributes:
        mesh_approximation_name: one of :data:`MESH_APPROXIMATION_TOKENS`; always written as
            ``physics:approximation``.
    """

    _usd_namespace = None
    _usd_applied_schema = "MeshCollisionAPI"
    _usd_field_exceptions = {}
    _usd_attr_name_map = {}  # legacy, unused

    mesh_approximation_name: str = "none"

    def __post_init__(self) -> None:
        validate_cfg_values(self)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: the two legacy read-only attributes.
        if name == "usd_api":
            warnings.warn(
                f"{type(self).__name__}.usd_api is deprecated and will be removed in 4.0.",
                DeprecationWarning,
                stacklevel=2,
            )
            return "MeshCollisionAPI" if type(self)._usd_applied_schema is not None else None
        if name == "physx_api":
            warnings.warn(
                f"{type(self).__name__}.physx_api is deprecated and will be removed in 4.0.",
                DeprecationWarning,
                stacklevel=2,
            )
            schema = type(self)._usd_applied_schema
            return schema if schema is not None and schema.startswith("Physx") else None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


@dataclass
class BoundingCubePropertiesCfg(MeshCollisionBaseCfg):
    """Bounding-cube mesh approximation."""

    mesh_approximation_name: str = "boundingCube"


@dataclass
class BoundingSpherePropertiesCfg(MeshCollisionBaseCfg):
    """Bounding-sphere mesh approximation."""

    mesh_approximation_name: str = "boundingSphere"


def spawn_rigid_body_material(prim_path: str, cfg: Any, stage: Any) -> Any:
    """Create (or reuse) a physics material at ``prim_path`` and author ``cfg`` on it.

    Thin lazy forwarder to the writer's function (also exported as
    :func:`runtime.physics.writers.spawn_rigid_body_material`) so this module stays free of
    ``pxr``.

    Args:
        prim_path: material prim path.
        cfg: a :class:`RigidBodyMaterialBaseCfg` (or subclass) instance.
        stage: the ``Usd.Stage`` to author on.

    Returns:
        The material ``Usd.Prim``.
    """
    from runtime.physics import _material_writer

    return _material_writer.spawn_rigid_body_material(prim_path, cfg, stage)


@dataclass
class PhysicsMaterialCfg:
    """Base of physics material cfgs.

    Attributes:
        func: the spawn function ``func(prim_path, cfg, stage) -> Usd.Prim``.
    """

    func: Callable = MISSING  # type: ignore[assignment]

    def __post_init__(self) -> None:
        validate_cfg_values(self)


@dataclass
class RigidBodyMaterialBaseCfg(PhysicsMaterialCfg):
    """Rigid-body physics material common to every solver (``UsdPhysics.MaterialAPI``).

    Attributes:
        static_friction: static Coulomb friction coefficient; ``physics:staticFriction``.
        dynamic_friction: dynamic Coulomb friction coefficient; ``physics:dynamicFriction``.
        restitution: coefficient of restitution; ``physics:restitution``.
    """

    _usd_namespace = "physics"
    _usd_applied_schema = None
    _usd_field_exceptions = {}

    func: Callable = field(default=spawn_rigid_body_material, repr=False)
    static_friction: float = 0.5
    dynamic_friction: float = 0.5
    restitution: float = 0.0


# Lazy forwarding of names that moved to the backend modules (and the deprecated 2.x names):
# ``from runtime.physics.cfg import PhysxRigidBodyPropertiesCfg`` resolves to the very class
# of ``runtime.physics.physx``. Resolved on first access so importing this module never
# imports a backend. ``tests/test_physics_cfg_forwarding.py`` keeps the table equal to the
# modules' ``__all__``.
_FORWARDED = {
    **{
        name: "runtime.physics.physx"
        for name in (
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
        )
    },
    **{
        name: "runtime.physics.newton"
        for name in (
            "MujocoJointDrivePropertiesCfg",
            "MujocoRigidBodyPropertiesCfg",
            "NewtonArticulationRootPropertiesCfg",
            "NewtonCollisionPropertiesCfg",
            "NewtonJointDrivePropertiesCfg",
            "NewtonMaterialPropertiesCfg",
            "NewtonMeshCollisionPropertiesCfg",
            "NewtonRigidBodyPropertiesCfg",
        )
    },
    **{
        name: "runtime.physics.legacy"
        for name in (
            "ArticulationRootPropertiesCfg",
            "CollisionPropertiesCfg",
            "ConvexDecompositionPropertiesCfg",
            "ConvexHullPropertiesCfg",
            "FixedTendonPropertiesCfg",
            "JointDrivePropertiesCfg",
            "MeshCollisionPropertiesCfg",
            "RigidBodyMaterialCfg",
            "RigidBodyPropertiesCfg",
            "SDFMeshPropertiesCfg",
            "SpatialTendonPropertiesCfg",
            "TriangleMeshPropertiesCfg",
            "TriangleMeshSimplificationPropertiesCfg",
        )
    },
}


def __getattr__(name: str) -> Any:
    module_name = _FORWARDED.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(
            f"{name} moved to {module_name}, which cannot be imported: {exc}"
        ) from exc
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FORWARDED))
