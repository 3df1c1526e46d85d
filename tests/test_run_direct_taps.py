"""Direct taps (rows written from the sensor batches' arrays) against the general path.

The general path builds every sensor's reading object and records its fields; the direct
path must leave the same store, bit for bit, every channel and every step.
"""

from __future__ import annotations

import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")

from runtime.recording import load_recording  # noqa: E402
from runtime.run import taps  # noqa: E402
from runtime.run.fused import FusedStep  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402
from runtime.run.taps import SensorTap  # noqa: E402
from tests.helpers.run_compare import REPO, _assert_identical, _hand_rays_scene  # noqa: E402, F401


def _run_both(scene, tmp_path, monkeypatch, **overrides):
    """The store of the direct taps, and that of the readings' path (checked to equal the
    readings' path without the generated fast writer, which maps hit paths as strings)."""
    stores = {}
    monkeypatch.setattr(FusedStep, "ENABLED", False)  # (test_run_fused compares that path)
    for mode in ("direct", "readings", "general"):
        monkeypatch.setattr(SensorTap, "DIRECT", mode == "direct")
        if mode == "general":
            monkeypatch.setattr(taps, "fast_row_writer", lambda *_: lambda *_: False)
        out = tmp_path / f"{mode}.zarr"
        run_scene(str(scene), out=out, **overrides)
        stores[mode] = load_recording(out)
    _assert_identical(stores["readings"], stores["general"])
    return stores["direct"], stores["readings"]


def test_panda_direct_rows_equal_the_readings_rows(tmp_path, monkeypatch):
    from runtime.sensors import _raycast_kernels

    kernel = _raycast_kernels.raycast_row_ids_kernel
    calls = []

    def counted(*args):  # (not a dispatcher: every call goes through here)
        calls.append(1)
        return kernel(*args)

    monkeypatch.setattr(_raycast_kernels, "raycast_row_ids_kernel", counted)
    direct, general = _run_both(
        REPO / "scenes" / "panda_table.usda", tmp_path, monkeypatch, steps=700
    )
    _assert_identical(direct, general)
    # the lidar's path table numbers the scene's actors as they are: hit and ids of every
    # direct row came from the compiled row kernel
    assert len(calls) == 700
    lidar = "/World/LidarMount/Lidar"
    assert direct.data[f"{lidar}.hit"].any()  # the lidar hit things, with paths
    assert (direct.data[f"{lidar}.hit_prim_paths"] >= 0).any()
    assert direct.data[f"{lidar}.valid"].all()


def test_hand_mounted_sweeping_rays_direct_rows_equal_the_readings_rows(tmp_path, monkeypatch):
    scene, sensor = _hand_rays_scene(tmp_path)
    direct, general = _run_both(scene, tmp_path, monkeypatch, steps=400, cache=False)
    _assert_identical(direct, general)
    assert direct.data[f"{sensor}.valid"].all()
    assert direct.data[f"{sensor}.hit"].any()
    assert len(direct.channels[f"{sensor}.hit_prim_paths"].attrs["path_table"]) >= 1


def test_simple_arm_direct_rows_equal_the_readings_rows(tmp_path, monkeypatch):
    scene = REPO / "scenes" / "simple_arm.usda"
    direct, general = _run_both(scene, tmp_path, monkeypatch, steps=500)
    _assert_identical(direct, general)
    assert any(name.endswith("imu.valid") and v.all() for name, v in direct.data.items())


def test_sensors_switched_off_and_on_mid_run_record_alike(tmp_path, monkeypatch):
    """Sensors switched off and on between steps (``sensor.enabled``): same rows both ways."""
    from pxr import Usd

    import runtime.schema  # noqa: F401

    def edits(step, engine, sensors, state):
        if step in (60, 140):  # off after step 60, on again after step 140
            for sensor in sensors.sensors:
                sensor.enabled = step == 140

    stores = {}
    for direct in (True, False):
        monkeypatch.setattr(SensorTap, "DIRECT", direct)
        stage = Usd.Stage.Open(str(REPO / "scenes" / "panda_table.usda"))
        out = tmp_path / f"edits{int(direct)}.zarr"
        run_scene(stage, out=out, steps=220, on_step=edits)
        stores[direct] = load_recording(out)
    _assert_identical(stores[True], stores[False])
    valid = stores[True].data["/World/LidarMount/Lidar.valid"]
    assert valid[:60].all() and not valid[61:140].any() and valid[-1]
