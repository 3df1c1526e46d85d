"""`simrt run` records the scene's Isaac Lab-style sensors (runtime.run.lab_channels)."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from pxr import Sdf, Usd

import runtime.schema  # noqa: F401  (registers the schemas)
from runtime.engine.mujoco_engine import MujocoEngine
from runtime.recording import load_recording
from runtime.run.blocks import StepBlocks
from runtime.run.fused import FusedStep
from runtime.run.loop import run_scene
from runtime.sensors.lab import make_lab_sensors

REPO = Path(__file__).resolve().parents[1]
GO2_LAB = REPO / "scenes" / "go2_lab_sensors.usda"
GO2 = REPO / "scenes" / "go2_standing.usda"
STEPS = 150


def _oracle(steps: int) -> list[dict[str, np.ndarray]]:
    """Lab sensors beside an engine of their own, stepped as a run steps: values per step."""
    engine = MujocoEngine(Usd.Stage.Open(str(GO2_LAB)))
    sensors = make_lab_sensors(engine)
    # the go2 scene's base IMU needs the post-step accelerations: mj_forward before updates
    assert not sensors["/World/LabSensors/BaseImu"].step_accelerations
    rows = []
    for _ in range(steps):
        engine.step()
        mujoco.mj_forward(engine.model, engine.data)
        values = {}
        for path, sensor in sensors.items():
            sensor.update([engine.data], engine.dt)
            for name in vars(sensor.data):
                value = getattr(sensor.data, name)
                if isinstance(value, np.ndarray) and value.ndim and value.shape[0] == 1:
                    values[f"{path}:{name}"] = value[0].copy()
        rows.append(values)
    return rows


@pytest.fixture(scope="module")
def go2_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lab_runs")
    # (small chunks: blocks end at every chunk's end, the next ones write new buffers)
    lab = run_scene(
        GO2_LAB, out=folder / "lab.zarr", steps=STEPS, summary=False,
        store_options={"chunk_rows": 37},
    )  # fmt: skip
    plain = run_scene(GO2, out=folder / "plain.zarr", steps=STEPS, summary=False)
    return lab, load_recording(folder / "lab.zarr"), plain, load_recording(folder / "plain.zarr")


def test_lab_channels_are_named_described_and_equal_an_independent_sensor(go2_runs):
    result, recording, _, _ = go2_runs
    assert result.complete and result.steps == STEPS
    lab = {name: info for name, info in recording.channels.items() if info.kind == "lab"}
    oracle = _oracle(STEPS)
    assert set(lab) == set(oracle[0])  # one channel per data field, env axis dropped
    feet = lab["/World/LabSensors/FootContacts:current_air_time"]
    assert feet.shape == (4,) and feet.unit == "s" and feet.attrs["sensor_kind"] == "contact"
    assert lab["/World/LabSensors/FootContacts:net_forces_w"].attrs["units"] == "N"
    scan = lab["/World/LabSensors/HeightScan:ray_hits_w"]
    assert scan.shape == (187, 3) and scan.frame == "world"
    assert scan.attrs["pattern"] == {
        "pattern": "grid", "resolution": 0.1, "size": [1.6, 1.0], "ordering": "xy"
    }  # fmt: skip
    assert lab["/World/LabSensors/BaseImu:lin_acc_b"].unit == "m/s^2"
    for name in lab:
        recorded = recording.data[name]
        expected = np.stack([row[name] for row in oracle])
        np.testing.assert_array_equal(recorded, expected, err_msg=name)
    # the recording is not trivially zero: feet stand on the ground, the scan hits it
    forces = recording.data["/World/LabSensors/FootContacts:net_forces_w"][-1]
    assert np.all(forces[:, 2] > 1.0)
    assert np.all(np.isfinite(recording.data[scan.name][-1]))


def test_lab_sensors_leave_every_other_channel_bit_identical(go2_runs):
    lab_result, lab, plain_result, plain = go2_runs
    others = [name for name, info in lab.channels.items() if info.kind != "lab"]
    assert set(others) == set(plain.channels)
    for name in others:
        np.testing.assert_array_equal(lab.data[name], plain.data[name], err_msg=name)
    np.testing.assert_array_equal(lab.time, plain.time)
    # the compiled step blocks recorded the lab run (the lab sensors' update and row inside)
    assert lab_result.timings["compiled"] > 0.0


@pytest.mark.parametrize("path", ["general", "fused steps"])
def test_general_path_records_the_same_lab_rows(go2_runs, tmp_path, monkeypatch, path):
    """The general path (lab sensors through their set's update in Python) and fused steps
    without blocks (the set's compiled part, one step per call) record the blocks' rows."""
    _, blocked, _, _ = go2_runs
    if path == "general":
        monkeypatch.setattr(FusedStep, "ENABLED", False)
    else:
        monkeypatch.setattr(StepBlocks, "ENABLED", False)
    result = run_scene(GO2_LAB, out=tmp_path / "other.zarr", steps=STEPS, summary=False)
    assert result.timings["compiled"] == 0.0
    assert (result.timings["fused"] == 0.0) == (path == "general")
    other = load_recording(tmp_path / "other.zarr")
    assert set(other.channels) == set(blocked.channels)
    for name in other.channels:
        np.testing.assert_array_equal(other.data[name], blocked.data[name], err_msg=name)
    np.testing.assert_array_equal(other.time, blocked.time)
    assert any(info.kind == "lab" for info in other.channels.values())


def _panda_camera(mount: str | None, history: int = 0) -> Usd.Stage:
    """The Panda camera scene, its camera moved to ``mount`` (None: the table) with images
    kept ``history`` updates (session-layer edits)."""
    stage = Usd.Stage.Open(str(REPO / "scenes" / "panda_lab_camera.usda"))
    stage.SetEditTarget(stage.GetSessionLayer())
    prim = stage.GetPrimAtPath("/World/LabSensors/DepthCamera")
    if mount is not None:
        prim.GetAttribute("simrt:lab:primPath").Set(mount)
    if history:
        prim.CreateAttribute("simrt:lab:historyLength", Sdf.ValueTypeNames.Int).Set(history)
    return stage


@pytest.mark.parametrize(
    ("mount", "blocks"), [(None, True), (".*/panda_hand", False)], ids=["fixed", "on the hand"]
)
def test_lab_camera_runs_record_the_general_rows(tmp_path, monkeypatch, mount, blocks):
    """A fixed camera runs inside the compiled step blocks; a camera on a moving body is
    updated in Python after each fused step (no blocks). Both record the general path's
    rows."""
    steps = 60
    fused = run_scene(
        _panda_camera(mount, history=2), out=tmp_path / "fused.zarr", steps=steps,
        summary=False, store_options={"chunk_rows": 23},
    )  # fmt: skip
    assert fused.timings["fused"] > 0.0
    assert (fused.timings["compiled"] > 0.0) == blocks
    monkeypatch.setattr(FusedStep, "ENABLED", False)
    run_scene(_panda_camera(mount, history=2), out=tmp_path / "general.zarr", steps=steps,
              summary=False)  # fmt: skip
    a, b = load_recording(tmp_path / "fused.zarr"), load_recording(tmp_path / "general.zarr")
    depth = "/World/LabSensors/DepthCamera:distance_to_image_plane"
    assert a.channels[depth].shape == (48, 64, 1)
    assert a.channels[depth + "_history"].shape == (2, 48, 64, 1)
    assert np.isfinite(a.data[depth][-1]).any()
    assert set(a.channels) == set(b.channels)
    for name in a.channels:
        np.testing.assert_array_equal(a.data[name], b.data[name], err_msg=name)


def test_a_disabled_lab_sensor_is_named_and_records_nothing(tmp_path):
    stage = Usd.Stage.Open(str(GO2_LAB))
    # (the edit goes to the stage's session layer: the scene's layers, shared by every stage
    # of the process that opens the file, stay as they are on disk)
    stage.SetEditTarget(stage.GetSessionLayer())
    prim = stage.GetPrimAtPath("/World/LabSensors/HeightScan")
    prim.GetAttribute("simrt:lab:pattern:resolution").Set(-1.0)
    result = run_scene(stage, out=tmp_path / "bad.zarr", steps=3, summary=False)
    reason = result.disabled["/World/LabSensors/HeightScan"]
    assert "resolution" in reason
    channels = load_recording(tmp_path / "bad.zarr").channels
    assert not any(name.startswith("/World/LabSensors/HeightScan:") for name in channels)
    assert "/World/LabSensors/BaseImu:lin_acc_b" in channels
