"""Degenerate values and absurd sizes (issue 14): each is refused with one named line, or the
sensor is disabled with its reason, before anything is allocated or stepped.

Scenes are ``scenes/simple_arm.usda`` with one authored value changed (see
``test_hostile_usd.variant``); the commands run in-process through ``runtime.cli.main``.
"""

from __future__ import annotations

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from runtime.errors import EngineDivergenceError, SchemaError
from runtime.schema import open_stage, readers
from tests.helpers.hostile import SCENE, cli, one_error_line, variant

ARM = "/World/SimpleArm"
RAY = f"{ARM}/base/range_finder"
IMU = f"{ARM}/link3/imu"
CONTACT = f"{ARM}/link4/contact_sensor"

_DIRECTIONS = (
    "vector3f[] rayDirections = [(1, 0, 0), (1, 0, -0.1), (1, 0.2, -0.1), (1, -0.2, -0.1)]"
)
_OFFSETS = "float[] rayTimeOffsets = [0, 0.01, 0.02, 0.03]"

# raycast sensor disabled with its reason (inspect exit 0, the reason printed)
_DISABLED = {
    "zero_direction": (
        (_DIRECTIONS, _DIRECTIONS.replace("(1, 0, -0.1),", "(0, 0, 0),")),
        "rayDirections entry 1 (0.0, 0.0, 0.0) has zero length",
    ),
    "negative_min_range": (
        ("float minRange = 0.02", "float minRange = -1"),
        "minRange (-1) must be >= 0",
    ),
    "negative_time_offset": (
        (_OFFSETS, _OFFSETS.replace("0.02", "-1")),
        "rayTimeOffsets entry 2 (-1) is negative while others are positive",
    ),
    "huge_time_offset": (
        (_OFFSETS, _OFFSETS.replace("0.03", "1e30")),
        "rayTimeOffsets entry 3 (1e+30) exceeds 3600 s",
    ),
    "num_rays_4e9": (
        ("uint numRays = 4", "uint numRays = 4000000000"),
        "numRays (4000000000) exceeds the limit of 16777216 rays per sensor",
    ),
    "min_range_not_below_max": (
        ("float minRange = 0.02", "float minRange = 5"),
        "minRange (5) >= maxRange (5)",
    ),
    "time_offsets_length": (
        (_OFFSETS, "float[] rayTimeOffsets = [0, 0.01]"),
        "rayTimeOffsets length (2) != numRays (4)",
    ),
}


@pytest.mark.parametrize("case", sorted(_DISABLED))
def test_raycast_disabled_with_reason(tmp_path, capsys, case):
    edit, reason = _DISABLED[case]
    path = variant(tmp_path, edit)
    code, out, _ = cli(capsys, "inspect", str(path))
    assert code == 0
    assert f"DISABLED: IsaacRaycastSensor '{RAY}': {reason}. Sensor disabled." in out
    stage = open_stage(path)
    config = readers.read_raycast_sensor(stage.GetPrimAtPath(RAY))
    assert readers.validate_raycast(config) == (
        f"IsaacRaycastSensor '{RAY}': {reason}. Sensor disabled."
    )


def test_all_nonpositive_time_offsets_stay_legal(tmp_path):
    """All offsets <= 0 turn windowing off (reference behaviour, kept).

    See docs/sensors/raycast.md#sweep.
    """
    path = variant(tmp_path, (_OFFSETS, "float[] rayTimeOffsets = [0, -0.01, -0.02, -0.03]"))
    stage = open_stage(path)
    config = readers.read_raycast_sensor(stage.GetPrimAtPath(RAY))
    assert readers.validate_raycast(config) is None


# one-line SchemaError (inspect exit 1) naming the prim and the attribute
_REFUSED = {
    "imu_width_int_max": (
        ("int orientationFilterWidth = 1", "int orientationFilterWidth = 2147483647"),
        f"{IMU}.orientationFilterWidth: filter width 2147483647 is too large",
    ),
    "imu_width_negative": (
        ("int linearAccelerationFilterWidth = 1", "int linearAccelerationFilterWidth = -3"),
        f"{IMU}.linearAccelerationFilterWidth: negative filter width -3",
    ),
    "contact_threshold_negative": (
        ("float2 threshold = (0.01, 100000)", "float2 threshold = (-5, -1)"),
        f"{CONTACT}.threshold: negative force threshold (-5, -1)",
    ),
    "contact_threshold_inverted": (
        ("float2 threshold = (0.01, 100000)", "float2 threshold = (10, 1)"),
        f"{CONTACT}.threshold: min 10.0 > max 1.0",
    ),
    "contact_threshold_nan": (
        ("float2 threshold = (0.01, 100000)", "float2 threshold = (nan, 1)"),
        f"{CONTACT}.threshold: value (nan, 1.0) is not finite",
    ),
    "ray_time_offset_nan": (
        (_OFFSETS, _OFFSETS.replace("0.02", "nan")),
        f"{RAY}.rayTimeOffsets: entry 2 (nan) is not finite",
    ),
    "ray_direction_inf": (
        (_DIRECTIONS, _DIRECTIONS.replace("(1, 0, 0),", "(inf, 0, 0),")),
        f"{RAY}.rayDirections: entry 0 (inf, 0.0, 0.0) is not finite",
    ),
    "sensor_orient_zero": (
        (
            "int orientationFilterWidth = 1\n"
            "                double3 xformOp:translate = (0, 0, 0.2)\n"
            "                quatf xformOp:orient = (1, 0, 0, 0)",
            "int orientationFilterWidth = 1\n"
            "                double3 xformOp:translate = (0, 0, 0.2)\n"
            "                quatf xformOp:orient = (0, 0, 0, 0)",
        ),
        f"{IMU}.xformOp:orient: zero quaternion (0.0, 0.0, 0.0, 0.0)",
    ),
    "sensor_scale_zero": (
        (
            "float radius = -1\n"
            "                double3 xformOp:translate = (0, 0, 0.02)\n"
            '                uniform token[] xformOpOrder = ["xformOp:translate"]',
            "float radius = -1\n"
            "                double3 xformOp:translate = (0, 0, 0.02)\n"
            "                float3 xformOp:scale = (0, 0, 0)\n"
            '                uniform token[] xformOpOrder = ["xformOp:translate", '
            '"xformOp:scale"]',
        ),
        f"{CONTACT}.xformOp:scale: scale (0.0, 0.0, 0.0) has a zero component",
    ),
    "sensor_translate_nan": (
        (
            "double3 xformOp:translate = (0.1, 0, 0)",
            "double3 xformOp:translate = (nan, 0, 0)",
        ),
        f"{RAY}.xformOp:translate: transform value",
    ),
    "robot_type_token": (
        ('token isaac:robotType = "Manipulator"', 'token isaac:robotType = "Robot Arm"'),
        f"{ARM}.isaac:robotType: unknown token 'Robot Arm'",
    ),
    "joint_limit_nan": (
        ("float physics:lowerLimit = -90", "float physics:lowerLimit = nan"),
        ".physics:lowerLimit: value nan is not finite",
    ),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_bad_value_is_one_schema_error_line(tmp_path, capsys, case):
    edit, message = _REFUSED[case]
    path = variant(tmp_path, edit)
    code, _, err = cli(capsys, "inspect", str(path))
    assert code == 1
    assert message in one_error_line(err, "inspect")


def test_imu_width_is_checked_before_any_buffer(tmp_path):
    path = variant(tmp_path, _REFUSED["imu_width_int_max"][0])
    stage = open_stage(path)
    with pytest.raises(SchemaError, match="too large") as info:
        readers.read_imu_sensor(stage.GetPrimAtPath(IMU))
    assert info.value.prim_path == IMU and info.value.attribute == "orientationFilterWidth"


# ------------------------------------------------------------------ colliders


def _collider_stage(scale=(1.0, 1.0, 1.0), parent_scale=None, orient=None):
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.Xform.Define(stage, "/World")
    body = UsdGeom.Xform.Define(stage, "/World/Body")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    if parent_scale is not None:
        body.AddScaleOp().Set(Gf.Vec3f(*parent_scale))
    cube = UsdGeom.Cube.Define(stage, "/World/Body/box")
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    cube.AddScaleOp().Set(Gf.Vec3f(*scale))
    if orient is not None:
        cube.AddOrientOp().Set(Gf.Quatf(*orient))
    return stage


@pytest.mark.parametrize(
    ("kwargs", "attribute", "problem"),
    [
        (dict(scale=(0.0, 0.0, 0.0)), "xformOp:scale", "has a zero component"),
        (dict(scale=(1.0, 0.0, 1.0)), "xformOp:scale", "has a zero component"),
        (dict(parent_scale=(0.0, 0.0, 0.0)), "xformOp:scale", "has a zero component"),
        (dict(orient=(0.0, 0.0, 0.0, 0.0)), "xformOp:orient", "zero quaternion"),
    ],
)
def test_degenerate_collider_refused_by_the_ray_scene(kwargs, attribute, problem):
    from runtime.rays.scene import RayScene

    stage = _collider_stage(**kwargs)
    with pytest.raises(SchemaError, match=problem) as info:
        RayScene.from_stage(stage, ["/World/Body"])
    assert info.value.attribute == attribute
    assert info.value.prim_path in ("/World/Body", "/World/Body/box")
    RayScene.from_stage(_collider_stage(), ["/World/Body"])  # the healthy scene builds


# ------------------------------------------------------------------ engine divergence


def _engine(path, dt=None):
    from runtime.engine import MujocoEngine

    return MujocoEngine(open_stage(path), dt=dt)


def test_body_mass_1e30_stops_with_divergence_naming_the_dofs(tmp_path):
    path = variant(tmp_path, ("float physics:mass = 0.5", "float physics:mass = 1e30"))
    engine = _engine(path)
    with pytest.raises(EngineDivergenceError) as info:
        engine.step(50)
    error = info.value
    assert error.step == 1 and error.time == pytest.approx(engine.dt)
    assert "mjWARN_INERTIA" in error.reason
    assert error.dofs and all("/World/SimpleArm/joints/" in d for d in error.dofs)
    assert error.bodies and all(b.startswith(f"{ARM}/link") for b in error.bodies)
    assert str(error).startswith("simulation diverged at step 1 (t = ")


def test_huge_dt_stops_with_divergence_at_the_failing_step(tmp_path):
    engine = _engine(SCENE, dt=1e6)
    with pytest.raises(EngineDivergenceError) as info:
        for _ in range(20):
            engine.step()
    error = info.value
    assert "mjWARN_BADQPOS" in error.reason or "mjWARN_BADQACC" in error.reason
    assert 1 <= error.step < 20 and error.time == pytest.approx(error.step * 1e6)
    assert len(error.dofs) == 1 and len(error.bodies) == 1
    # the engine is usable again after a reset
    engine.reset()
    healthy = _engine(SCENE)
    healthy.step(100)
    assert np.all(np.isfinite(healthy.state().joint_positions))
