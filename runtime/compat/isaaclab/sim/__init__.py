"""``isaaclab.sim`` (``import runtime.compat.isaaclab.sim as sim_utils``).

Spawner cfgs and spawn functions (:mod:`.spawners`), the base property cfgs and writers
(:mod:`.schemas`, also re-exported here as Isaac Lab's ``sim_utils`` does) and the rigid-body
material base cfg.
"""

from __future__ import annotations

from runtime.compat.isaaclab.sim import schemas, spawners
from runtime.compat.isaaclab.sim.schemas import (
    ArticulationRootBaseCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    RigidBodyBaseCfg,
)
from runtime.compat.isaaclab.sim.spawners import (
    CapsuleCfg,
    ConeCfg,
    CuboidCfg,
    CylinderCfg,
    FileCfg,
    MeshCapsuleCfg,
    MeshCfg,
    MeshConeCfg,
    MeshCuboidCfg,
    MeshCylinderCfg,
    MeshSphereCfg,
    RigidObjectSpawnerCfg,
    ShapeCfg,
    SpawnerCfg,
    SphereCfg,
    UsdFileCfg,
    spawn_capsule,
    spawn_cone,
    spawn_cuboid,
    spawn_cylinder,
    spawn_from_usd,
    spawn_mesh_capsule,
    spawn_mesh_cone,
    spawn_mesh_cuboid,
    spawn_mesh_cylinder,
    spawn_mesh_sphere,
    spawn_sphere,
)
from runtime.compat.isaaclab.sim.spawners.materials import (
    RigidBodyMaterialBaseCfg,
    spawn_rigid_body_material,
)

# The 13 legacy (Isaac Lab 2.x) cfg names, deprecated there and here (a warning on use):
# ``sim_utils.RigidBodyPropertiesCfg(...)`` keeps working after the import change.
from runtime.physics.legacy import (  # noqa: E402
    ArticulationRootPropertiesCfg,
    CollisionPropertiesCfg,
    ConvexDecompositionPropertiesCfg,
    ConvexHullPropertiesCfg,
    FixedTendonPropertiesCfg,
    JointDrivePropertiesCfg,
    MeshCollisionPropertiesCfg,
    RigidBodyMaterialCfg,
    RigidBodyPropertiesCfg,
    SDFMeshPropertiesCfg,
    SpatialTendonPropertiesCfg,
    TriangleMeshPropertiesCfg,
    TriangleMeshSimplificationPropertiesCfg,
)

LEGACY_CFG_NAMES = (
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
"""Isaac Lab's legacy cfg names re-exported here (from :mod:`runtime.physics.legacy`)."""

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
    "LEGACY_CFG_NAMES",
    "ArticulationRootBaseCfg",
    "CapsuleCfg",
    "CollisionBaseCfg",
    "ConeCfg",
    "CuboidCfg",
    "CylinderCfg",
    "FileCfg",
    "JointDriveBaseCfg",
    "MassPropertiesCfg",
    "MeshCapsuleCfg",
    "MeshCfg",
    "MeshCollisionBaseCfg",
    "MeshConeCfg",
    "MeshCuboidCfg",
    "MeshCylinderCfg",
    "MeshSphereCfg",
    "RigidBodyBaseCfg",
    "RigidBodyMaterialBaseCfg",
    "RigidObjectSpawnerCfg",
    "ShapeCfg",
    "SpawnerCfg",
    "SphereCfg",
    "UsdFileCfg",
    "schemas",
    "spawn_capsule",
    "spawn_cone",
    "spawn_cuboid",
    "spawn_cylinder",
    "spawn_from_usd",
    "spawn_mesh_capsule",
    "spawn_mesh_cone",
    "spawn_mesh_cuboid",
    "spawn_mesh_cylinder",
    "spawn_mesh_sphere",
    "spawn_rigid_body_material",
    "spawn_sphere",
    "spawners",
]
