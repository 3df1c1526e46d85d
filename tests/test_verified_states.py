"""Verified states take the sensor batches' compiled-entry path; others the Numba dispatcher.

Both paths must give the same readings, and a hand-built state whose arrays break the
conventions (not C-contiguous) must still read right through the checked dispatcher.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from pxr import Gf, Sdf, Usd  # noqa: E402

from runtime.engine.mujoco_engine import MujocoEngine  # noqa: E402
from runtime.run.scene import find_robot as _find_robot  # noqa: E402
from runtime.schema.dof import build_dof_table  # noqa: E402
from runtime.sensors.runtime import SensorRuntime  # noqa: E402
from runtime.sensors.state import make_physics_state  # noqa: E402

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "panda_table.usda"


def _fortran(value):
    """The same values in a non-C-contiguous layout (2-D arrays), else unchanged."""
    if isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[0] > 1:
        return np.asfortranarray(value)
    return value


def _readings(rt):
    out = []
    for sensor in rt.sensors:
        reading = sensor.reading()
        out.append({k: getattr(reading, k) for k in vars(reading)} if hasattr(reading, "__dict__")
                   else dataclasses.asdict(reading))  # fmt: skip
    return out


def _same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=key)
        else:
            assert x == y, key


def test_verified_and_unverified_states_read_the_same():
    stage = Usd.Stage.Open(str(SCENE))
    # contact sensors on the objects resting on the table (contacts from the first steps),
    # one with a radius filter (reads the body poses)
    for name, radius in (("RedBox", 0.2), ("GreenBall", -1.0), ("BlueCylinder", -1.0)):
        prim = stage.DefinePrim(f"/World/{name}/Contact", "IsaacContactSensor")
        prim.CreateAttribute("radius", Sdf.ValueTypeNames.Float).Set(radius)
        prim.CreateAttribute("threshold", Sdf.ValueTypeNames.Float2).Set(Gf.Vec2f(0.0, 1e6))
    robot = _find_robot(stage, None)
    engine = MujocoEngine(stage, robot_prim=robot, compute_accelerations=True)
    table = build_dof_table(stage, robot)
    body_paths = engine.state().body_paths
    fast = SensorRuntime(stage, body_paths, table, imu_mode="physical", watch_usd=False)
    mixed = SensorRuntime(stage, body_paths, table, imu_mode="physical", watch_usd=False)
    kinds = sorted({s.kind for s in fast.sensors})
    assert kinds == ["contact", "imu", "raycast"]
    touched = 0
    for step in range(400):
        engine.step()
        state = engine.state()
        assert state.verified
        fields = {f.name: _fortran(getattr(state, f.name)) for f in dataclasses.fields(state)}
        fields["verified"] = False
        odd = type(state)(**fields)
        assert not odd.body_positions.flags.c_contiguous
        fast.step(state)
        # the second runtime alternates: its compiled entries (recorded from verified
        # states) must never see the odd layout
        mixed.step(odd if step % 2 else state)
        if step % 7 == 0 or step > 390:
            for a, b in zip(_readings(fast), _readings(mixed), strict=True):
                _same(a, b)
        touched += sum(bool(getattr(s.reading(), "in_contact", False)) for s in fast.sensors)
    assert touched > 900  # the contact sensors read contact points, not only empty arrays


def test_make_physics_state_is_verified():
    state = make_physics_state(["/A"], [[0.0, 0.0, 1.0]], [[1.0, 0.0, 0.0, 0.0]], dt=0.01)
    assert state.verified
    assert state.body_positions.flags.c_contiguous
