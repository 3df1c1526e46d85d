"""An interrupted `run_scene` (exception) leaves a valid recording; signals: test_run_crash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from runtime.recording import load_recording  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCENE = REPO / "scenes" / "panda_table.usda"


class Boom(RuntimeError):
    pass


def test_exception_mid_run_keeps_every_completed_step(tmp_path):
    from runtime.run.loop import run_scene

    out = tmp_path / "run.npz"
    seen = []

    def on_step(k, engine, sensors, state):
        seen.append(float(state.time))
        if k == 137:
            raise Boom("stop here")

    with pytest.raises(Boom):
        run_scene(
            str(SCENE), steps=1000, out=out, flush_every=50, min_flush_interval=0.0, on_step=on_step
        )
    rec = load_recording(out)
    assert not rec.complete
    # the step that raised was recorded before the callback ran: 137 rows
    assert len(rec) == 137
    np.testing.assert_array_equal(rec.step, np.arange(1, 138))
    np.testing.assert_allclose(rec.time, seen)
    assert rec.run["requested_steps"] == 1000
    # the store and its export, no temp files left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz", "run.zarr"]
    assert "Boom" in rec.reason and "137 steps" in rec.reason


def test_zero_steps_and_failure_before_first_step_leave_valid_files(tmp_path):
    from runtime.run.loop import run_scene

    result = run_scene(str(SCENE), steps=0, out=tmp_path / "zero.npz")
    rec = load_recording(tmp_path / "zero.npz")
    assert result.complete and rec.complete and len(rec) == 0

    def boom(k, engine, sensors, state):
        raise Boom("at once")

    with pytest.raises(Boom):
        run_scene(str(SCENE), steps=10, out=tmp_path / "one.npz", on_step=boom)
    rec = load_recording(tmp_path / "one.npz")
    assert len(rec) == 1 and not rec.complete
