"""Newton- and MuJoCo-targeted cfg subclasses (``newton:*`` and ``mjc:*`` attributes).

Every class declares ``_usd_field_exceptions = {}`` meaning "adds no exception"; the base
exception fields (``disable_gravity``, ``contact_offset``, ...) are still routed as on the base
class (the effective exception map is the union over the MRO). This module does not import
``pxr``.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.physics.cfg import (
    ArticulationRootBaseCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MeshCollisionBaseCfg,
    RigidBodyBaseCfg,
    RigidBodyMaterialBaseCfg,
)

__all__ = [
    "MujocoJointDrivePropertiesCfg",
    "MujocoRigidBodyPropertiesCfg",
    "NewtonArticulationRootPropertiesCfg",
    "NewtonCollisionPropertiesCfg",
    "NewtonJointDrivePropertiesCfg",
    "NewtonMaterialPropertiesCfg",
    "NewtonMeshCollisionPropertiesCfg",
    "NewtonRigidBodyPropertiesCfg",
]


@dataclass
class NewtonRigidBodyPropertiesCfg(RigidBodyBaseCfg):
    """Newton rigid body (no own fields yet; reserves ``newton:*``)."""

    _usd_namespace = "newton"
    _usd_applied_schema = None
    _usd_field_exceptions = {}


@dataclass
class MujocoRigidBodyPropertiesCfg(NewtonRigidBodyPropertiesCfg):
    """MuJoCo-solver rigid-body knobs (``mjc:*``, raw attributes, no applied schema).

    Attributes:
        gravcomp: gravity compensation of the body, 0 (none) .. 1 (full); ``mjc:gravcomp``.
    """

    _usd_namespace = "mjc"
    _usd_applied_schema = None
    _usd_field_exceptions = {}

    gravcomp: float | None = None


@dataclass
class NewtonJointDrivePropertiesCfg(JointDriveBaseCfg):
    """Newton joint drive (no own fields yet; reserves ``newton:*``)."""

    _usd_namespace = "newton"
    _usd_applied_schema = None
    _usd_field_exceptions = {}


@dataclass
class MujocoJointDrivePropertiesCfg(NewtonJointDrivePropertiesCfg):
    """MuJoCo-solver joint knobs (``mjc:*``, ``MjcJointAPI``).

    Attributes:
        actuatorgravcomp: route the body gravity compensation of this joint through the
            actuator channel (limited by the actuator force range); ``mjc:actuatorgravcomp``.
    """

    _usd_namespace = "mjc"
    _usd_applied_schema = "MjcJointAPI"
    _usd_field_exceptions = {}

    actuatorgravcomp: bool | None = None


@dataclass
class NewtonCollisionPropertiesCfg(CollisionBaseCfg):
    """Newton collision knobs (``newton:*``, ``NewtonCollisionAPI``).

    Attributes:
        contact_margin: contact detection margin [m]; ``newton:contactMargin``.
        contact_gap: contact gap [m] (``-inf`` = builder default); ``newton:contactGap``.
    """

    _usd_namespace = "newton"
    _usd_applied_schema = "NewtonCollisionAPI"
    _usd_field_exceptions = {}

    contact_margin: float | None = None
    contact_gap: float | None = None


@dataclass
class NewtonMeshCollisionPropertiesCfg(NewtonCollisionPropertiesCfg, MeshCollisionBaseCfg):
    """Newton mesh collision: collision knobs plus mesh approximation and hull cooking.

    Attributes:
        max_hull_vertices: hull vertex limit (``-1`` = unlimited); ``newton:maxHullVertices``.
    """

    _usd_namespace = "newton"
    _usd_applied_schema = "NewtonMeshCollisionAPI"
    _usd_field_exceptions = {}

    max_hull_vertices: int | None = None


@dataclass
class NewtonMaterialPropertiesCfg(RigidBodyMaterialBaseCfg):
    """Newton material knobs (``newton:*``, ``NewtonMaterialAPI``).

    Attributes:
        torsional_friction: torsional friction coefficient; ``newton:torsionalFriction``.
        rolling_friction: rolling friction coefficient; ``newton:rollingFriction``.
    """

    _usd_namespace = "newton"
    _usd_applied_schema = "NewtonMaterialAPI"
    _usd_field_exceptions = {}

    torsional_friction: float | None = None
    rolling_friction: float | None = None


@dataclass
class NewtonArticulationRootPropertiesCfg(ArticulationRootBaseCfg):
    """Newton articulation knobs (``newton:*``, ``NewtonArticulationRootAPI``).

    Attributes:
        self_collision_enabled: collisions between links; ``newton:selfCollisionEnabled``.
    """

    _usd_namespace = "newton"
    _usd_applied_schema = "NewtonArticulationRootAPI"
    _usd_field_exceptions = {}

    self_collision_enabled: bool | None = None
