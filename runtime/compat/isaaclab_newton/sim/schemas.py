"""``isaaclab_newton.sim.schemas``: the Newton and MuJoCo-solver subclasses of the base cfgs."""

from __future__ import annotations

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
