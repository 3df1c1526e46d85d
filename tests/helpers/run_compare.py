"""Bit-for-bit comparison of two recordings, and the hand-mounted rays scene.

Shared by several test modules (moved from tests/test_run_direct_taps.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def _assert_identical(direct, general):
    assert direct.data.keys() == general.data.keys()
    np.testing.assert_array_equal(direct.time, general.time)
    for name, values in general.data.items():
        np.testing.assert_array_equal(direct.data[name], values, err_msg=name)
        assert direct.data[name].dtype == values.dtype, name
    assert direct.channels.keys() == general.channels.keys()
    for name, info in general.channels.items():
        assert direct.channels[name].attrs == info.attrs, name  # hit-path tables included


def _hand_rays_scene(tmp_path):
    """The Panda scene plus a ray-cast sensor on the hand: a sweeping fan with time offsets."""
    from pxr import Gf, Sdf, Usd, UsdGeom, Vt

    import runtime.schema  # noqa: F401  (the Isaac schemas registered)

    hand = (
        "/World/Panda/Geometry/panda_link0/panda_link1/panda_link2/panda_link3/panda_link4/"
        "panda_link5/panda_link6/panda_link7/panda_link8/panda_hand"
    )
    path = tmp_path / "hand_rays.usda"
    stage = Usd.Stage.CreateNew(str(path))
    stage.GetRootLayer().subLayerPaths.append(str(REPO / "scenes" / "panda_table.usda"))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetDefaultPrim(stage.GetPrimAtPath("/World"))
    prim = stage.DefinePrim(f"{hand}/HandRays", "IsaacRaycastSensor")
    count = 48
    angles = np.linspace(-0.6, 0.6, count)
    directions = [Gf.Vec3f(float(np.sin(a)), 0.0, float(np.cos(a))) for a in angles]
    offsets = [float(0.012 * k / count) for k in range(count)]  # 6 steps per sweep at 500 Hz
    values = {
        "enabled": (Sdf.ValueTypeNames.Bool, True),
        "maxRange": (Sdf.ValueTypeNames.Float, 2.0),
        "minRange": (Sdf.ValueTypeNames.Float, 0.01),
        "numRays": (Sdf.ValueTypeNames.UInt, count),
        "rayDirections": (Sdf.ValueTypeNames.Float3Array, Vt.Vec3fArray(directions)),
        "rayOrigins": (Sdf.ValueTypeNames.Float3Array, Vt.Vec3fArray([Gf.Vec3f(0.0)] * count)),
        "rayTimeOffsets": (Sdf.ValueTypeNames.FloatArray, Vt.FloatArray(offsets)),
        "reportHitPrimPaths": (Sdf.ValueTypeNames.Bool, True),
    }
    for name, (kind, value) in values.items():
        prim.CreateAttribute(name, kind).Set(value)
    UsdGeom.Xformable(prim).AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, 0.11))
    stage.GetRootLayer().Save()
    return path, f"{hand}/HandRays"
