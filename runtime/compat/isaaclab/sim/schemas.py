"""``isaaclab.sim.schemas``: the backend-portable base cfg classes and the writers.

The cfg classes are :mod:`runtime.physics.cfg`'s. The writers are
:mod:`runtime.physics.writers`' with Isaac Lab's signature ``f(prim_path, cfg, stage=None)``:
without ``stage`` they use :func:`runtime.compat.set_current_stage`'s stage.
"""

from __future__ import annotations

from typing import Any

from runtime.compat._stage import resolve_stage
from runtime.physics import writers as _w
from runtime.physics.cfg import (
    ArticulationRootBaseCfg,
    BoundingCubePropertiesCfg,
    BoundingSpherePropertiesCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    RigidBodyBaseCfg,
)

__all__ = [
    "ArticulationRootBaseCfg",
    "BoundingCubePropertiesCfg",
    "BoundingSpherePropertiesCfg",
    "CollisionBaseCfg",
    "JointDriveBaseCfg",
    "MassPropertiesCfg",
    "MeshCollisionBaseCfg",
    "RigidBodyBaseCfg",
    "define_articulation_root_properties",
    "define_collision_properties",
    "define_mass_properties",
    "define_mesh_collision_properties",
    "define_rigid_body_properties",
    "modify_articulation_root_properties",
    "modify_collision_properties",
    "modify_joint_drive_properties",
    "modify_mass_properties",
    "modify_mesh_collision_properties",
    "modify_rigid_body_properties",
]


def modify_rigid_body_properties(prim_path: str, cfg: RigidBodyBaseCfg, stage: Any = None) -> bool:
    """Author ``cfg`` on the outermost rigid bodies under ``prim_path``; True if any."""
    return _w.modify_rigid_body_properties(prim_path, cfg, resolve_stage(stage)) > 0


def define_rigid_body_properties(prim_path: str, cfg: RigidBodyBaseCfg, stage: Any = None) -> None:
    """Apply ``PhysicsRigidBodyAPI`` to ``prim_path`` and author ``cfg``."""
    _w.define_rigid_body_properties(prim_path, cfg, resolve_stage(stage))


def modify_collision_properties(prim_path: str, cfg: CollisionBaseCfg, stage: Any = None) -> bool:
    """Author ``cfg`` on the outermost colliders under ``prim_path``; True if any."""
    return _w.modify_collision_properties(prim_path, cfg, resolve_stage(stage)) > 0


def define_collision_properties(prim_path: str, cfg: CollisionBaseCfg, stage: Any = None) -> None:
    """Apply ``PhysicsCollisionAPI`` to ``prim_path`` and author ``cfg``."""
    _w.define_collision_properties(prim_path, cfg, resolve_stage(stage))


def modify_mass_properties(prim_path: str, cfg: MassPropertiesCfg, stage: Any = None) -> bool:
    """Author ``cfg`` on the outermost ``PhysicsMassAPI`` prims under ``prim_path``."""
    return _w.modify_mass_properties(prim_path, cfg, resolve_stage(stage)) > 0


def define_mass_properties(prim_path: str, cfg: MassPropertiesCfg, stage: Any = None) -> None:
    """Apply ``PhysicsMassAPI`` to ``prim_path`` and author ``cfg``."""
    _w.define_mass_properties(prim_path, cfg, resolve_stage(stage))


def modify_mesh_collision_properties(
    prim_path: str, cfg: MeshCollisionBaseCfg, stage: Any = None
) -> bool:
    """Author a mesh-collision cfg on the mesh colliders under ``prim_path``."""
    return bool(_w.modify_mesh_collision_properties(prim_path, cfg, resolve_stage(stage)))


def define_mesh_collision_properties(
    prim_path: str, cfg: MeshCollisionBaseCfg, stage: Any = None
) -> None:
    """Apply ``PhysicsMeshCollisionAPI`` to ``prim_path`` and author ``cfg``."""
    _w.define_mesh_collision_properties(prim_path, cfg, resolve_stage(stage))


def modify_articulation_root_properties(
    prim_path: str, cfg: ArticulationRootBaseCfg, stage: Any = None
) -> bool:
    """Author ``cfg`` on the outermost articulation roots under ``prim_path``."""
    return _w.modify_articulation_root_properties(prim_path, cfg, resolve_stage(stage)) > 0


def define_articulation_root_properties(
    prim_path: str, cfg: ArticulationRootBaseCfg, stage: Any = None
) -> None:
    """Apply ``PhysicsArticulationRootAPI`` to ``prim_path`` and author ``cfg``."""
    _w.define_articulation_root_properties(prim_path, cfg, resolve_stage(stage))


def modify_joint_drive_properties(
    prim_path: str, cfg: JointDriveBaseCfg, stage: Any = None
) -> bool:
    """Author ``cfg`` on every revolute / prismatic joint under ``prim_path``."""
    return _w.modify_joint_drive_properties(prim_path, cfg, resolve_stage(stage)) > 0
