"""`run_scene` refills the engine's state buffers when no callback can keep a state object.

The recording must be identical to a run that allocates a fresh state every step (the
`on_step` callback switches buffer reuse off).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from runtime.recording import load_recording  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "panda_table.usda"


def test_reused_state_buffers_record_the_same_as_fresh_states(tmp_path):
    reused, fresh = tmp_path / "reused.npz", tmp_path / "fresh.npz"
    common = dict(steps=400, imu_mode="physical", progress=io.StringIO())
    run_scene(str(SCENE), out=reused, **common)
    run_scene(str(SCENE), out=fresh, on_step=lambda *args: None, **common)
    a, b = load_recording(reused), load_recording(fresh)
    assert a.data.keys() == b.data.keys()
    np.testing.assert_array_equal(a.step, b.step)
    changed = [
        name for name in a.data if not np.array_equal(a.data[name], b.data[name], equal_nan=True)
    ]
    assert not changed, changed
    contact = [n for n in a.data if n.endswith(".force") or "inContact" in n or "in_contact" in n]
    assert contact, sorted(a.data)[:20]
