"""RunConfig: scene settings + overrides, validated once, with errors naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.cli import main
from runtime.run.config import IkWaypoint, RunConfig

REPO = Path(__file__).resolve().parents[1]


def test_overrides_win_over_scene_settings_and_none_is_not_given():
    settings = {"steps": 50, "dt": 0.01, "ik_every": 5, "imu_mode": "physical"}
    config = RunConfig.resolve(settings, steps=7, dt=None, ik_targets=["hand=1,2,3@0.5"])
    assert (config.steps, config.dt, config.ik_every, config.imu_mode) == (7, 0.01, 5, "physical")
    assert config.ik_targets == (IkWaypoint("hand", (1.0, 2.0, 3.0), None, 0.5),)
    assert RunConfig.resolve({}) == RunConfig()


@pytest.mark.parametrize(
    "override, name",
    [
        ({"steps": -1}, "steps"),
        ({"steps": 1.5}, "steps"),
        ({"steps": True}, "steps"),
        ({"dt": 0.0}, "dt"),
        ({"dt": float("nan")}, "dt"),
        ({"dt": 1e6}, "dt"),
        ({"ik_every": 0}, "ik_every"),
        ({"ik_every": -1}, "ik_every"),
        ({"imu_mode": "magic"}, "imu_mode"),
    ],
)
def test_bad_values_name_the_setting(override, name):
    with pytest.raises(ValueError, match=f"^{name}: "):
        RunConfig.resolve({}, **override)


def test_unknown_override_is_a_type_error():
    with pytest.raises(TypeError, match="unknown run settings"):
        RunConfig.resolve({}, stepz=3)


@pytest.mark.parametrize(
    "argv, text",
    [
        (["--ik-every", "0"], "ik_every: 0"),
        (["--ik-every", "-1"], "ik_every: -1"),
        (["--dt", "1e6"], "dt: 1000000.0"),
        (["--steps", "-5"], "steps"),
    ],
)
def test_cli_rejects_bad_run_options_in_one_line(argv, text, capsys, tmp_path):
    code = main(["run", str(REPO / "scenes" / "simple_arm.usda"), *argv, "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and text in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "content, text",
    [
        (b'#usda 1.0\ndef Xform "A" {\n  double x = \n}\n', "bad.usda:3:3"),
        (b"", "the file is empty"),
        (bytes(range(256)) * 8, "cannot read as USD"),
    ],
    ids=["syntax", "zero-byte", "random-bytes"],
)
def test_unparsable_scene_is_one_line_with_file_and_line(content, text, capsys, tmp_path):
    path = tmp_path / ("bad.usdc" if b"usda" not in content and content else "bad.usda")
    path.write_bytes(content)
    assert main(["run", str(path), "--steps", "3", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert text in err and str(path) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_disabled_raycast_sensor_with_absurd_ray_count_records_valid_only(tmp_path):
    pytest.importorskip("mujoco")
    from pxr import Sdf, Usd

    from runtime.recording import load_recording
    from runtime.run.loop import run_scene

    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.subLayerPaths.append(str(REPO / "scenes" / "panda_table.usda"))
    stage = Usd.Stage.Open(layer)
    lidar = stage.GetPrimAtPath("/World/LidarMount/Lidar")
    lidar.GetAttribute("numRays").Set(4_000_000_000)
    result = run_scene(stage, steps=5, out=tmp_path / "r.zarr", cache=False)
    assert "/World/LidarMount/Lidar" in result.disabled
    rec = load_recording(tmp_path / "r.zarr")
    assert len(rec) == 5
    assert not rec.data["/World/LidarMount/Lidar.valid"].any()
    assert all(a.nbytes < 10_000_000 for a in rec.data.values())
