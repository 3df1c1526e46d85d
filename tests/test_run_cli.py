"""`simrt run` command line on the Panda scene: JSON summary, overrides, bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from runtime.cli import main  # noqa: E402
from runtime.recording import load_recording  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCENE = str(REPO / "scenes" / "panda_table.usda")


def test_cli_run_json_summary_and_overrides(tmp_path, capsys):
    out = tmp_path / "r.npz"
    code = main(
        [
            "run",
            SCENE,
            "--steps",
            "60",
            "--dt",
            "0.004",
            "--out",
            str(out),
            "--json",
            "--imu-mode",
            "isaac",
            "--ik-target",
            "panda_hand=0.5,0,0.7,0,1,0,0@0.1",
            "--ik-every",
            "5",
            "--no-progress",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    payload = json.loads(captured.out)
    assert payload["steps"] == 60 and payload["complete"] and payload["out"] == str(out)
    assert payload["summary"]["ik"]["solves"] == 12  # every 5 steps
    sensors = payload["summary"]["sensors"]
    kinds = sorted(stats["kind"] for stats in sensors.values())
    assert kinds == ["contact", "contact", "imu", "raycast"]
    rec = load_recording(out)
    assert len(rec) == 60 and rec.run["imu_mode"] == "isaac"
    np.testing.assert_allclose(rec.time, 0.004 * np.arange(1, 61), rtol=1e-9)
    assert rec.run["ik_targets"][0]["position"] == [0.5, 0.0, 0.7]
    # IK targets of the 7 arm joints were sent; the fingers keep their authored targets
    targets = rec.data[f"{rec.run['robot']}.targets"]
    assert np.isfinite(targets[-1, :7]).all() and np.isnan(targets[-1, 7:]).all()


def test_cli_run_bad_ik_link_is_one_line_error(tmp_path, capsys):
    code = main(
        ["run", SCENE, "--steps", "5", "--ik-target", "no_such_link=0.5,0,0.7", "--no-progress"]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "no_such_link" in err and "/World/Panda" in err and "Traceback" not in err


def test_cli_run_parquet_without_pyarrow(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    code = main(["run", SCENE, "--steps", "5", "--out", str(tmp_path / "r.parquet")])
    assert code == 1
    assert "pyarrow" in capsys.readouterr().err


def test_run_scene_without_robot_box_comes_to_rest(tmp_path):
    """A scene with no robot: a 2 kg box dropped on the ground ends at rest; its contact
    sensor then reads its weight m*g and its IMU the gravity reaction (physics facts)."""
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

    import runtime.schema  # noqa: F401
    from runtime.run.loop import run_scene

    path = tmp_path / "box.usda"
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, "Z")
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    scene = UsdPhysics.Scene.Define(stage, "/PhysicsScene")
    scene.CreateGravityMagnitudeAttr(9.81)
    scene.GetPrim().SetCustomDataByKey("simrt", {"steps": 400, "dt": 0.005})
    ground = UsdGeom.Cube.Define(stage, "/Ground")
    ground.CreateSizeAttr(1.0)
    ground.AddTranslateOp().Set(Gf.Vec3d(0, 0, -0.05))
    ground.AddScaleOp().Set(Gf.Vec3f(2, 2, 0.1))
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    box = UsdGeom.Xform.Define(stage, "/Box")
    box.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.3))
    UsdPhysics.RigidBodyAPI.Apply(box.GetPrim())
    mass = UsdPhysics.MassAPI.Apply(box.GetPrim())
    mass.CreateMassAttr(2.0)
    mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.003, 0.003, 0.003))
    geom = UsdGeom.Cube.Define(stage, "/Box/geom")
    geom.CreateSizeAttr(0.1)
    UsdPhysics.CollisionAPI.Apply(geom.GetPrim())
    stage.DefinePrim("/Box/contact", "IsaacContactSensor")
    stage.DefinePrim("/Box/imu", "IsaacImuSensor")
    stage.GetRootLayer().Save()

    out = tmp_path / "box.npz"
    result = run_scene(str(path), out=out)  # steps and dt from the scene's settings
    rec = load_recording(out)
    assert result.complete and len(rec) == 400
    np.testing.assert_allclose(rec.time[-1], 2.0, rtol=1e-9)
    assert not rec.channels_of_kind("joint_state")  # no robot, no joint channels
    value = rec.field("/Box/contact", "value")
    in_contact = rec.field("/Box/contact", "in_contact")
    assert not in_contact[:10].any() and in_contact[-50:].all()
    np.testing.assert_allclose(value[-50:], 2.0 * 9.81, rtol=1e-3)
    acc = rec.field("/Box/imu", "linear_acceleration")
    np.testing.assert_allclose(acc[-50:], np.tile([0, 0, 9.81], (50, 1)), atol=1e-2)
    z = rec.data["bodies.positions"][
        :, rec.channels["bodies.positions"].attrs["body_paths"].index("/Box"), 2
    ]
    np.testing.assert_allclose(z[-1], 0.05, atol=2e-3)  # resting on the ground


def test_ik_target_without_orientation_keeps_the_start_orientation(tmp_path):
    from runtime.run.loop import run_scene

    out = tmp_path / "r.npz"
    run_scene(
        SCENE,
        steps=400,
        out=out,
        ik_targets=["panda_hand=0.45,0.1,0.68@0.4"],
        ik_until_contact=False,
    )
    rec = load_recording(out)
    paths = rec.channels["bodies.positions"].attrs["body_paths"]
    hand = next(i for i, p in enumerate(paths) if p.endswith("/panda_hand"))
    q0 = rec.data["bodies.orientations"][0, hand]
    q1 = rec.data["bodies.orientations"][-1, hand]
    angle = 2 * np.arccos(min(1.0, abs(float(np.dot(q0, q1)))))
    assert angle < 0.03, angle  # orientation held (the scene starts pointing down)
    p1 = rec.data["bodies.positions"][-1, hand]
    # the Panda base is at the robot-base origin: the hand reaches the target (drive sag ~1 cm)
    np.testing.assert_allclose(p1, [0.45, 0.1, 0.68], atol=0.02)
    moved = np.linalg.norm(p1 - rec.data["bodies.positions"][0, hand])
    assert moved > 0.08


def test_a_warm_run_imports_no_heavy_optional_package(tmp_path):
    """Neither zarr (the store writes and reads its own files), nor the scene builders'
    trimesh / SciPy, nor the exporters' or plots' packages load in a run whose scene cache
    is filled (the first run below fills it), nor Numba's compiler registries (cached
    kernels load without them: ``runtime._compile.jit``) and so neither its BLAS probe's SciPy."""
    import os
    import subprocess

    code = (
        "import json, sys, runtime.cli\n"
        "argv = ['run', sys.argv[1], '--steps', '3', '--out', sys.argv[2], '--no-progress']\n"
        "assert runtime.cli.main(argv) == 0\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = dict(os.environ, SIMRT_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    for _ in range(2):  # cold scene cache, then warm
        out = subprocess.run(
            [sys.executable, "-c", code, SCENE, str(tmp_path / "r.zarr")],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            check=True,
        )
    modules = json.loads(out.stdout.strip().splitlines()[-1])
    heavy = ("zarr", "trimesh", "matplotlib", "pyarrow", "foxglove", "mcap", "ray", "PIL")
    loaded = [m for m in modules if m.split(".")[0] in heavy]
    loaded += [
        m for m in modules if m.startswith(("scipy.spatial", "scipy.sparse", "scipy.optimize"))
    ]
    assert loaded == []
    # kernels came from the Numba cache without the lowering modules (runtime._compile.jit)
    assert "numba.np.arraymath" not in modules and "scipy.linalg" not in modules
    assert load_recording(tmp_path / "r.zarr").complete


def test_summary_rate_leaves_out_the_kernel_compile():
    """An empty kernel cache's compile (before step 1) is reported apart, and the rate after
    the first step is that of the steps alone."""
    from runtime.run.summary import format_summary

    timings = {"wall_time": 15.0, "first_step": 0.5, "compile": 13.5, "physics": 0.5}
    text = format_summary({"steps": 1001, "sim_time": 2.0}, timings)
    assert "1000 steps/s after the first step" in text
    assert "kernel compile before the first step: 13.5 s (first run only)" in text
    warm = format_summary({"steps": 1001, "sim_time": 2.0}, {**timings, "compile": 0.0})
    assert "kernel compile" not in warm and "steps/s after the first step" in warm


def test_progress_line_has_no_nonsense_numbers_before_a_rate_exists():
    """Right after the first step there is no rate yet: the bar says so instead of
    printing 0 steps/s and an ETA of nan."""
    import io

    from runtime.run.progress import Progress

    stream = io.StringIO()
    bar = Progress(10, stream, min_interval=0.0)
    bar.first_step_done()
    line = bar._line(1)
    assert "nan" not in line and " 0 steps/s" not in line and "ETA" in line


def test_cli_run_compressor_zstd_records_the_same_rows_as_lz4(tmp_path, capsys):
    """Both compressors are readable by zarr itself (the oracle) and hold the same rows."""
    zarr = pytest.importorskip("zarr")
    stores = {}
    for compressor in ("lz4", "zstd"):
        out = tmp_path / f"{compressor}.zarr"
        argv = ["run", SCENE, "--steps", "40", "--out", str(out), "--no-progress"]
        code = main([*argv, "--compressor", compressor])
        assert code == 0, capsys.readouterr().err
        group = zarr.open_group(out, mode="r")
        blosc = [c for c in group["time"].metadata.to_dict()["codecs"] if c["name"] == "blosc"]
        assert blosc[0]["configuration"]["cname"] == compressor
        stores[compressor] = {name: np.asarray(group[name]) for name in group.array_keys()}
    assert stores["lz4"].keys() == stores["zstd"].keys()
    for name, values in stores["lz4"].items():
        np.testing.assert_array_equal(stores["zstd"][name], values, err_msg=name)


def test_simrt_run_starts_with_the_collector_paused_and_turns_it_back_on(tmp_path):
    """The program pauses the cyclic collector for the start; the run resumes it, frozen."""
    import gc

    from runtime._compile import gc_pause as _gc_pause

    _gc_pause.pause()  # (as runtime.cli.entry does for "run")
    try:
        assert not gc.isenabled()
        out = str(tmp_path / "r.zarr")
        code = main(["run", SCENE, "--steps", "5", "--out", out, "--no-progress"])
        enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    finally:
        _gc_pause.resume()
        gc.unfreeze()
    assert code == 0
    assert enabled and frozen > 0  # on again, the start's objects out of its walks
