"""Deprecated Isaac Lab 2.x cfg class names (removed in 5.0).

Each legacy name subclasses its replacement and emits one ``DeprecationWarning`` (naming the
replacement and removal in 5.0) when instantiated, then runs the replacement's checks and
field-alias forwarding. The new names never warn.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from runtime.physics import physx
from runtime.physics.cfg import MeshCollisionBaseCfg

__all__ = [
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
]


def _legacy(name: str, replacement: type) -> type:
    def __post_init__(self) -> None:  # noqa: N807
        warnings.warn(
            f"{name} is deprecated and will be removed in 5.0; use "
            f"{replacement.__module__}.{replacement.__name__} instead.",
            DeprecationWarning,
            stacklevel=3,
        )
        replacement.__post_init__(self)

    namespace = {
        "__post_init__": __post_init__,
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": f"Deprecated alias of :class:`{replacement.__name__}` (removed in 5.0).",
    }
    return dataclass(type(name, (replacement,), namespace))


RigidBodyPropertiesCfg = _legacy("RigidBodyPropertiesCfg", physx.PhysxRigidBodyPropertiesCfg)
JointDrivePropertiesCfg = _legacy("JointDrivePropertiesCfg", physx.PhysxJointDrivePropertiesCfg)
CollisionPropertiesCfg = _legacy("CollisionPropertiesCfg", physx.PhysxCollisionPropertiesCfg)
ArticulationRootPropertiesCfg = _legacy(
    "ArticulationRootPropertiesCfg", physx.PhysxArticulationRootPropertiesCfg
)
RigidBodyMaterialCfg = _legacy("RigidBodyMaterialCfg", physx.PhysxRigidBodyMaterialCfg)
MeshCollisionPropertiesCfg = _legacy("MeshCollisionPropertiesCfg", MeshCollisionBaseCfg)
ConvexHullPropertiesCfg = _legacy("ConvexHullPropertiesCfg", physx.PhysxConvexHullPropertiesCfg)
ConvexDecompositionPropertiesCfg = _legacy(
    "ConvexDecompositionPropertiesCfg", physx.PhysxConvexDecompositionPropertiesCfg
)
TriangleMeshPropertiesCfg = _legacy(
    "TriangleMeshPropertiesCfg", physx.PhysxTriangleMeshPropertiesCfg
)
TriangleMeshSimplificationPropertiesCfg = _legacy(
    "TriangleMeshSimplificationPropertiesCfg", physx.PhysxTriangleMeshSimplificationPropertiesCfg
)
SDFMeshPropertiesCfg = _legacy("SDFMeshPropertiesCfg", physx.PhysxSDFMeshPropertiesCfg)
FixedTendonPropertiesCfg = _legacy("FixedTendonPropertiesCfg", physx.PhysxFixedTendonPropertiesCfg)
SpatialTendonPropertiesCfg = _legacy(
    "SpatialTendonPropertiesCfg", physx.PhysxSpatialTendonPropertiesCfg
)
