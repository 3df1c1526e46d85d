"""Stages, prims and value checks for the physics-cfg tests.

Shared by several test modules (moved from tests/test_physics_cfg.py).
"""

from __future__ import annotations

from pxr import UsdGeom, UsdPhysics

from runtime.physics import (
    ArticulationRootBaseCfg,
    BoundingCubePropertiesCfg,
    BoundingSpherePropertiesCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    MujocoJointDrivePropertiesCfg,
    MujocoRigidBodyPropertiesCfg,
    NewtonArticulationRootPropertiesCfg,
    NewtonCollisionPropertiesCfg,
    NewtonJointDrivePropertiesCfg,
    NewtonMaterialPropertiesCfg,
    NewtonMeshCollisionPropertiesCfg,
    NewtonRigidBodyPropertiesCfg,
    PhysicsMaterialCfg,
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
    RigidBodyBaseCfg,
    RigidBodyMaterialBaseCfg,
)

ALL_CLASSES = [
    ArticulationRootBaseCfg,
    BoundingCubePropertiesCfg,
    BoundingSpherePropertiesCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    MujocoJointDrivePropertiesCfg,
    MujocoRigidBodyPropertiesCfg,
    NewtonArticulationRootPropertiesCfg,
    NewtonCollisionPropertiesCfg,
    NewtonJointDrivePropertiesCfg,
    NewtonMaterialPropertiesCfg,
    NewtonMeshCollisionPropertiesCfg,
    NewtonRigidBodyPropertiesCfg,
    PhysicsMaterialCfg,
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
    RigidBodyBaseCfg,
    RigidBodyMaterialBaseCfg,
]


def applied(prim):
    return list(prim.GetPrimTypeInfo().GetAppliedAPISchemas())


def value(prim, name):
    attr = prim.GetAttribute(name)
    assert attr, f"{prim.GetPath()} has no attribute {name}"
    return attr.Get()


def has_value(prim, name):
    attr = prim.GetAttribute(name)
    return bool(attr) and attr.HasAuthoredValue()


def make_joint(stage, path, kind="revolute", body0=None, body1=None):
    cls = {
        "revolute": UsdPhysics.RevoluteJoint,
        "prismatic": UsdPhysics.PrismaticJoint,
        "spherical": UsdPhysics.SphericalJoint,
        "fixed": UsdPhysics.FixedJoint,
    }[kind]
    joint = cls.Define(stage, path)
    if body0:
        joint.CreateBody0Rel().SetTargets([body0])
    if body1:
        joint.CreateBody1Rel().SetTargets([body1])
    return joint.GetPrim()


def make_body(stage, path, cube=True):
    prim = (UsdGeom.Cube if cube else UsdGeom.Xform).Define(stage, path).GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    return prim
