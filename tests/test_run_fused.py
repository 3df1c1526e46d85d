"""The fused step (one compiled call per step) against the general path.

The general path (``engine.state()`` → ``SensorRuntime.step`` → the taps' row writes) is
the reference: a run through the fused step must leave the same store, bit for bit, every
channel and every step -- also when the run leaves the fused step midway.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")

from runtime._jit import JIT_DISABLED  # noqa: E402
from runtime.recording import load_recording  # noqa: E402
from runtime.run.fused import FusedStep  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402
from tests.test_run_direct_taps import _assert_identical, _hand_rays_scene  # noqa: E402

pytestmark = pytest.mark.skipif(JIT_DISABLED, reason="the fused step needs the JIT")

REPO = Path(__file__).resolve().parents[1]


def _run(scene, out, monkeypatch, fused, **overrides):
    monkeypatch.setattr(FusedStep, "ENABLED", fused)
    result = run_scene(str(scene), out=out, **overrides)
    return result, load_recording(out)


def _both(scene, tmp_path, monkeypatch, **overrides):
    fused, fused_store = _run(scene, tmp_path / "fused.zarr", monkeypatch, True, **overrides)
    general, general_store = _run(scene, tmp_path / "general.zarr", monkeypatch, False, **overrides)
    # the fused run did take its steps through the fused call; the general run never did
    assert fused.timings["fused"] > 0.0 and fused.timings["state"] == 0.0
    assert general.timings["fused"] == 0.0 and general.timings["state"] > 0.0
    assert fused.steps == general.steps == overrides["steps"]
    _assert_identical(fused_store, general_store)
    return fused_store


def test_panda_run_fused_equals_general(tmp_path, monkeypatch):
    store = _both(REPO / "scenes" / "panda_table.usda", tmp_path, monkeypatch, steps=1400)
    lidar = "/World/LidarMount/Lidar"
    assert store.data[f"{lidar}.hit"].any() and (store.data[f"{lidar}.hit_prim_paths"] >= 0).any()
    contact = [v for name, v in store.data.items() if name.endswith("in_contact")]
    assert contact and any(v.any() for v in contact)  # a fingertip touched (t = 2.634 s)
    targets = store.data["/World/Panda.targets"]
    assert np.isfinite(targets).any()  # IK targets recorded


def test_simple_arm_run_fused_equals_general(tmp_path, monkeypatch):
    store = _both(REPO / "scenes" / "simple_arm.usda", tmp_path, monkeypatch, steps=500)
    assert any(name.endswith("imu.valid") and v.all() for name, v in store.data.items())


def test_hand_mounted_sweeping_rays_fused_equals_general(tmp_path, monkeypatch):
    """A ray-cast sensor on the moving hand, rays with time offsets (a sweep over 6 steps)."""
    scene, sensor = _hand_rays_scene(tmp_path)
    store = _both(scene, tmp_path, monkeypatch, steps=400, cache=False)
    assert store.data[f"{sensor}.valid"].all() and store.data[f"{sensor}.hit"].any()


def test_leaving_the_fused_step_midway_hands_over_exactly(tmp_path, monkeypatch):
    """The fused step declines at step 300 (as after a USD edit): the general path takes
    over from its bookkeeping, and the store still equals the general run's."""
    step = FusedStep.step
    calls = []

    def declines_later(self):
        calls.append(1)
        return False if len(calls) >= 299 else step(self)

    monkeypatch.setattr(FusedStep, "step", declines_later)
    scene = REPO / "scenes" / "simple_arm.usda"
    mixed, mixed_store = _run(scene, tmp_path / "mixed.zarr", monkeypatch, True, steps=600)
    monkeypatch.setattr(FusedStep, "step", step)
    _, general_store = _run(scene, tmp_path / "general.zarr", monkeypatch, False, steps=600)
    assert len(calls) == 299  # declined once, then the general path kept the run
    assert mixed.timings["fused"] > 0.0 and mixed.timings["state"] > 0.0
    _assert_identical(mixed_store, general_store)


def test_runs_with_a_step_callback_keep_the_general_path(tmp_path, monkeypatch):
    seen = []
    result = run_scene(
        str(REPO / "scenes" / "simple_arm.usda"),
        out=tmp_path / "cb.zarr",
        steps=20,
        on_step=lambda k, engine, sensors, state: seen.append(state.time),
    )
    assert result.timings["fused"] == 0.0 and len(seen) == 20
