"""``isaaclab_physx.sim.schemas``: the PhysX subclasses of the base property cfgs."""

from __future__ import annotations

from runtime.physics.physx import (
    PhysxArticulationRootPropertiesCfg,
    PhysxCollisionPropertiesCfg,
    PhysxConvexDecompositionPropertiesCfg,
    PhysxConvexHullPropertiesCfg,
    PhysxJointDrivePropertiesCfg,
    PhysxRigidBodyPropertiesCfg,
    PhysxSDFMeshPropertiesCfg,
    PhysxTriangleMeshPropertiesCfg,
    PhysxTriangleMeshSimplificationPropertiesCfg,
)

__all__ = [
    "PhysxArticulationRootPropertiesCfg",
    "PhysxCollisionPropertiesCfg",
    "PhysxConvexDecompositionPropertiesCfg",
    "PhysxConvexHullPropertiesCfg",
    "PhysxJointDrivePropertiesCfg",
    "PhysxRigidBodyPropertiesCfg",
    "PhysxSDFMeshPropertiesCfg",
    "PhysxTriangleMeshPropertiesCfg",
    "PhysxTriangleMeshSimplificationPropertiesCfg",
]
