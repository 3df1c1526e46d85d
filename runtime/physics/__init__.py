"""Isaac-Lab-style physics property cfg classes that author USD physics attributes.

The cfg classes (dataclasses, no ``pxr``) are importable from here directly; the USD writers
(``modify_*`` / ``define_*``), :func:`apply_asset_physics` and :func:`author_physics_layer`
are loaded lazily on first access (they import ``pxr``).

Routing rule: a field is written under the namespace of the class that *declares* it;
base-class exception fields (``disable_gravity``, ``contact_offset``, ``rest_offset``,
``articulation_enabled``, ``max_joint_velocity``) use their PhysX attribute on every subclass.
See ``runtime/physics/README.md`` for the attribute table and what the MuJoCo engine reads.
"""

from __future__ import annotations

import importlib
from typing import Any

from runtime.physics._meta import CfgTypeError, PhysicsCfgError, UnsupportedValueError
from runtime.physics.cfg import (
    MESH_APPROXIMATION_TOKENS,
    ArticulationRootBaseCfg,
    BoundingCubePropertiesCfg,
    BoundingSpherePropertiesCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    PhysicsMaterialCfg,
    RigidBodyBaseCfg,
    RigidBodyMaterialBaseCfg,
)
from runtime.physics.newton import (
    MujocoJointDrivePropertiesCfg,
    MujocoRigidBodyPropertiesCfg,
    NewtonArticulationRootPropertiesCfg,
    NewtonCollisionPropertiesCfg,
    NewtonJointDrivePropertiesCfg,
    NewtonMaterialPropertiesCfg,
    NewtonMeshCollisionPropertiesCfg,
    NewtonRigidBodyPropertiesCfg,
)
from runtime.physics.physx import (
    PhysxArticulationRootPropertiesCfg,
    PhysxCollisionPropertiesCfg,
    PhysxConvexDecompositionPropertiesCfg,
    PhysxConvexHullPropertiesCfg,
    PhysxJointDrivePropertiesCfg,
    PhysxRigidBodyMaterialCfg,
    PhysxRigidBodyPropertiesCfg,
    PhysxSDFMeshPropertiesCfg,
    PhysxTriangleMeshPropertiesCfg,
    PhysxTriangleMeshSimplificationPropertiesCfg,
)

_LAZY = {
    "apply_asset_physics": "runtime.physics.spawn",
    "PhysicsApplyReport": "runtime.physics.spawn",
    "spawn_shape": "runtime.physics.spawn",
    "author_physics_layer": "runtime.physics.layer",
    "apply_cfg_to_prim": "runtime.physics.writers",
    "apply_namespaced_schemas": "runtime.physics.writers",
    "applied_schemas": "runtime.physics.writers",
    "bind_physics_material": "runtime.physics.writers",
    "bind_physics_material_to_colliders": "runtime.physics.writers",
    "define_articulation_root_properties": "runtime.physics.writers",
    "define_collision_properties": "runtime.physics.writers",
    "define_mass_properties": "runtime.physics.writers",
    "define_mesh_collision_properties": "runtime.physics.writers",
    "define_rigid_body_properties": "runtime.physics.writers",
    "modify_articulation_root_properties": "runtime.physics.writers",
    "modify_collision_properties": "runtime.physics.writers",
    "modify_joint_drive_properties": "runtime.physics.writers",
    "modify_mass_properties": "runtime.physics.writers",
    "modify_mesh_collision_properties": "runtime.physics.writers",
    "modify_rigid_body_properties": "runtime.physics.writers",
    "spawn_rigid_body_material": "runtime.physics.writers",
}

__all__ = [
    "MESH_APPROXIMATION_TOKENS",
    "ArticulationRootBaseCfg",
    "BoundingCubePropertiesCfg",
    "BoundingSpherePropertiesCfg",
    "CfgTypeError",
    "CollisionBaseCfg",
    "JointDriveBaseCfg",
    "MassPropertiesCfg",
    "MeshCollisionBaseCfg",
    "MujocoJointDrivePropertiesCfg",
    "MujocoRigidBodyPropertiesCfg",
    "NewtonArticulationRootPropertiesCfg",
    "NewtonCollisionPropertiesCfg",
    "NewtonJointDrivePropertiesCfg",
    "NewtonMaterialPropertiesCfg",
    "NewtonMeshCollisionPropertiesCfg",
    "NewtonRigidBodyPropertiesCfg",
    "PhysicsCfgError",
    "PhysicsMaterialCfg",
    "PhysxArticulationRootPropertiesCfg",
    "PhysxCollisionPropertiesCfg",
    "PhysxConvexDecompositionPropertiesCfg",
    "PhysxConvexHullPropertiesCfg",
    "PhysxJointDrivePropertiesCfg",
    "PhysxRigidBodyMaterialCfg",
    "PhysxRigidBodyPropertiesCfg",
    "PhysxSDFMeshPropertiesCfg",
    "PhysxTriangleMeshPropertiesCfg",
    "PhysxTriangleMeshSimplificationPropertiesCfg",
    "RigidBodyBaseCfg",
    "RigidBodyMaterialBaseCfg",
    "UnsupportedValueError",
    *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'runtime.physics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
