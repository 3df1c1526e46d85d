"""simrt run: IK waypoint syntax, schedules, scene run settings, CLI argument errors."""

from __future__ import annotations

import numpy as np
import pytest

from runtime.errors import SchemaError
from runtime.run.config import parse_ik_target, read_scene_settings
from runtime.run.ik import IkSchedule


def test_parse_ik_target_forms():
    w = parse_ik_target("panda_hand=0.5,0,0.7")
    assert (w.link, w.position, w.orientation, w.time) == ("panda_hand", (0.5, 0.0, 0.7), None, 0.0)
    w = parse_ik_target(" /World/r/hand = 1,2,3, 0,2,0,0 @1.5")
    assert w.link == "/World/r/hand" and w.time == 1.5
    assert w.orientation == (0.0, 1.0, 0.0, 0.0)  # normalised


@pytest.mark.parametrize(
    "text, match",
    [
        ("hand", "missing '='"),
        ("=1,2,3", "empty link"),
        ("hand=1,2", "2 numbers"),
        ("hand=1,2,3,4", "4 numbers"),
        ("hand=1,a,3", "non-numeric"),
        ("hand=1,2,nan", "NaN"),
        ("hand=1,2,3,0,0,0,0", "zero quaternion"),
        ("hand=1,2,3@x", "not a number"),
        ("hand=1,2,3@-1", ">= 0"),
    ],
)
def test_parse_ik_target_errors(text, match):
    with pytest.raises(ValueError, match=match):
        parse_ik_target(text)


def test_schedule_interpolates_and_holds():
    s = IkSchedule(
        "h", [parse_ik_target("h=0,0,1,1,0,0,0@2"), parse_ik_target("h=0,0,0,1,0,0,0@1")]
    )
    p, q = s.target(0.0)
    np.testing.assert_allclose(p, [0, 0, 0])
    p, _ = s.target(1.5)
    np.testing.assert_allclose(p, [0, 0, 0.5])
    p, _ = s.target(5.0)
    np.testing.assert_allclose(p, [0, 0, 1])
    # orientation: slerp 0 -> 90 deg about z, halfway = 45 deg
    s = IkSchedule(
        "h",
        [
            parse_ik_target("h=0,0,0,1,0,0,0@0"),
            parse_ik_target(f"h=0,0,0,{np.cos(np.pi / 4)},0,0,{np.sin(np.pi / 4)}@1"),
        ],
    )
    _, q = s.target(0.5)
    np.testing.assert_allclose(q, [np.cos(np.pi / 8), 0, 0, np.sin(np.pi / 8)], atol=1e-12)
    # missing orientation -> start orientation
    s = IkSchedule("h", [parse_ik_target("h=1,1,1")])
    _, q = s.target(0.0, start_orientation=(0, 1, 0, 0))
    np.testing.assert_allclose(q, [0, 1, 0, 0])


def _stage_with(custom):
    from pxr import Usd, UsdPhysics

    stage = Usd.Stage.CreateInMemory()
    scene = UsdPhysics.Scene.Define(stage, "/World/PhysicsScene")
    scene.GetPrim().SetCustomDataByKey("simrt", custom)
    return stage


def test_scene_settings_read():
    stage = _stage_with(
        {
            "steps": 12,
            "dt": 0.004,
            "ikTargets": ["h=0,0,1@1"],
            "ikEvery": 3,
            "ikUntilContact": True,
            "imuMode": "physical",
        }
    )
    s = read_scene_settings(stage)
    assert s["steps"] == 12 and s["dt"] == 0.004 and s["ik_every"] == 3
    assert s["ik_until_contact"] is True and s["imu_mode"] == "physical"
    assert s["ik_targets"][0].time == 1.0


@pytest.mark.parametrize(
    "custom, key",
    [
        ({"steps": -1}, "steps"),
        ({"dt": 0.0}, "dt"),
        ({"ikTargets": ["nonsense"]}, "ikTargets"),
        ({"imuMode": "fancy"}, "imuMode"),
        ({"ikEvery": 0}, "ikEvery"),
    ],
)
def test_scene_settings_errors_name_prim_and_key(custom, key):
    with pytest.raises(SchemaError, match=f"/World/PhysicsScene.customData:simrt:{key}"):
        read_scene_settings(_stage_with(custom))


def test_cli_errors_are_one_line(tmp_path, capsys):
    from runtime.cli import main

    assert main(["run", str(tmp_path / "missing.usda"), "--steps", "3"]) == 1
    err = capsys.readouterr().err
    assert "missing.usda" in err and "Traceback" not in err
    assert main(["run", str(tmp_path / "x.usda"), "--steps", "-3"]) == 1
    assert main(["run", str(tmp_path / "x.usda"), "--ik-target", "bad"]) == 1
    assert "missing '='" in capsys.readouterr().err


def test_every_export_suffix_is_a_run_output(tmp_path):
    """``simrt run --out`` takes the recording package's export table (one table: .mcap too)."""
    from pathlib import Path

    from runtime.recording import EXPORT_SUFFIXES
    from runtime.run.loop import run_scene
    from runtime.run.result import output_paths

    assert EXPORT_SUFFIXES == (".npz", ".parquet", ".mcap")
    for suffix in EXPORT_SUFFIXES:
        store, export, scratch = output_paths(tmp_path / f"run{suffix}")
        assert (store, export, scratch) == (tmp_path / "run.zarr", tmp_path / f"run{suffix}", None)
    scene = Path(__file__).resolve().parents[1] / "scenes" / "simple_arm.usda"
    out = tmp_path / "arm.mcap"
    run_scene(str(scene), steps=5, out=out, summary=False)
    assert out.read_bytes()[:8] == b"\x89MCAP0\r\n"  # the MCAP magic


def test_run_exports_run_scene_without_loading_the_loop():
    import subprocess
    import sys

    code = (
        "import sys, runtime.run, runtime.run.config\n"
        "assert 'runtime.run.loop' not in sys.modules\n"
        "from runtime.run import RunConfig, RunResult, run_scene\n"
        "from runtime.run import config, loop, result\n"
        "assert run_scene is loop.run_scene and RunConfig is config.RunConfig\n"
        "assert RunResult is result.RunResult\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
