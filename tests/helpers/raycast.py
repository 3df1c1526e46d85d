"""Ray-cast sensor stages and states for the ray-cast tests.

Shared by several test modules (moved from tests/test_raycast.py).
"""

from __future__ import annotations

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.sensors.state import make_physics_state

DT = 1.0 / 60.0


def make_stage():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.Xform.Define(stage, "/World")
    return stage


def add_box(stage, path, center, size, rigid=False, collider=True):
    if rigid:
        body = UsdGeom.Xform.Define(stage, path)
        body.AddTranslateOp().Set(Gf.Vec3d(*center))
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        if collider:
            cube = UsdGeom.Cube.Define(stage, path + "/collision")
            cube.GetSizeAttr().Set(1.0)
            cube.AddScaleOp().Set(Gf.Vec3f(*size))
            UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
        return body.GetPrim()
    cube = UsdGeom.Cube.Define(stage, path)
    cube.GetSizeAttr().Set(1.0)
    cube.AddTranslateOp().Set(Gf.Vec3d(*center))
    cube.AddScaleOp().Set(Gf.Vec3f(*size))
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    return cube.GetPrim()


def add_raycast(
    stage,
    path,
    origins,
    directions,
    min_range=0.4,
    max_range=100.0,
    frame="SENSOR",
    offsets=None,
    paths=False,
    num_rays=None,
    translate=None,
    yaw_deg=None,
):
    prim = stage.DefinePrim(path, "IsaacRaycastSensor")
    n = len(origins) if num_rays is None else num_rays
    prim.CreateAttribute("numRays", Sdf.ValueTypeNames.UInt).Set(int(n))
    prim.CreateAttribute("minRange", Sdf.ValueTypeNames.Float).Set(float(min_range))
    prim.CreateAttribute("maxRange", Sdf.ValueTypeNames.Float).Set(float(max_range))
    prim.CreateAttribute("rayOrigins", Sdf.ValueTypeNames.Float3Array).Set(
        [Gf.Vec3f(*map(float, o)) for o in origins]
    )
    prim.CreateAttribute("rayDirections", Sdf.ValueTypeNames.Float3Array).Set(
        [Gf.Vec3f(*map(float, d)) for d in directions]
    )
    if offsets is not None:
        prim.CreateAttribute("rayTimeOffsets", Sdf.ValueTypeNames.FloatArray).Set(
            [float(t) for t in offsets]
        )
    prim.CreateAttribute("outputFrameOfReference", Sdf.ValueTypeNames.Token).Set(frame)
    prim.CreateAttribute("reportHitPrimPaths", Sdf.ValueTypeNames.Bool).Set(bool(paths))
    xf = UsdGeom.Xformable(prim)
    if translate is not None:
        xf.AddTranslateOp().Set(Gf.Vec3d(*translate))
    if yaw_deg is not None:
        xf.AddRotateZOp().Set(float(yaw_deg))
    return prim


def state_for(body_paths, positions=None, orientations=None, lin=None, step=1, dt=DT):
    b = len(body_paths)
    positions = np.zeros((b, 3)) if positions is None else np.asarray(positions, float)
    if orientations is None:
        orientations = np.tile([1.0, 0.0, 0.0, 0.0], (b, 1))
    return make_physics_state(
        list(body_paths),
        positions.reshape(b, 3),
        np.asarray(orientations, float).reshape(b, 4),
        None if lin is None else np.asarray(lin, float).reshape(b, 3),
        None,
        dt=dt,
        time=step * dt,
        step=step,
    )


def example_scene():
    stage = make_stage()
    add_box(stage, "/World/Ground", (0, 0, -0.5), (40, 40, 1))
    add_box(stage, "/World/Wall", (5, 0, 1.5), (0.2, 8, 3))
    add_box(stage, "/World/Box", (3, -3, 0.5), (1, 1, 1))
    return stage


def fired(offsets, s, e, wrapped):
    tau = np.asarray(offsets, np.float32)
    return (tau >= s) | (tau < e) if wrapped else (tau >= s) & (tau < e)
