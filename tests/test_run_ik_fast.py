"""The IK driver's seeded solve through one native call (``runtime.run._ik_fast``).

Oracles: the poser's own ``solve_ik_seeded`` (the path it replaces: the same kernel on the
same inputs must give the same solutions bit for bit), and a NumPy slerp written here from
its definition.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from runtime._compile.native_call import NATIVE_AVAILABLE
from runtime.run._ik_fast import SeededSolve, slerp

REPO = Path(__file__).resolve().parents[1]


def _slerp_reference(q0, q1, s):
    q0, q1 = np.asarray(q0, float), np.asarray(q1, float)
    if q0 @ q1 < 0:
        q1 = -q1
    angle = math.acos(min(1.0, float(q0 @ q1)))
    if angle < 1e-9:
        return q0
    return (math.sin((1 - s) * angle) * q0 + math.sin(s * angle) * q1) / math.sin(angle)


@pytest.mark.parametrize("seed", range(20))
def test_slerp_matches_its_definition(seed):
    rng = np.random.default_rng(seed)
    q0, q1 = (v / np.linalg.norm(v) for v in rng.normal(size=(2, 4)))
    if seed % 5 == 0:  # nearly parallel: the normalised-lerp branch
        q1 = q0 + 1e-4 * rng.normal(size=4)
        q1 /= np.linalg.norm(q1)
    s = float(rng.random())
    ours = np.array(slerp(q0, q1, s))
    np.testing.assert_allclose(ours, _slerp_reference(q0, q1, s), atol=1e-9)
    assert abs(np.linalg.norm(ours) - 1.0) < 1e-12


def _panda_run(tmp_path, name, monkeypatch, fast):
    pytest.importorskip("mujoco")
    from runtime.recording import load_recording
    from runtime.run.loop import run_scene

    calls = {"fast": 0, "poser": 0}
    solve = SeededSolve.solve

    def counted(self, *args, **kwargs):
        answer = solve(self, *args, **kwargs) if fast else None
        calls["fast" if answer is not None else "poser"] += 1
        return answer

    monkeypatch.setattr(SeededSolve, "solve", counted)
    out = tmp_path / f"{name}.zarr"
    result = run_scene(str(REPO / "scenes" / "panda_table.usda"), steps=600, out=out)
    return result, load_recording(out), calls


@pytest.mark.skipif(not NATIVE_AVAILABLE, reason="no native calls in this build")
def test_the_native_solve_gives_the_posers_solutions_bit_for_bit(tmp_path, monkeypatch):
    result, store, calls = _panda_run(tmp_path, "fast", monkeypatch, True)
    # (solves ahead of a block that contact ends are not counted as the driver's)
    assert calls["fast"] >= result.summary["ik"]["solves"] > 50 and calls["poser"] == 0
    _, reference, calls = _panda_run(tmp_path, "poser", monkeypatch, False)
    assert calls["fast"] == 0 and calls["poser"] > 50
    targets = store.data["/World/Panda.targets"]
    assert np.isfinite(targets[:, :7]).all()
    for name, values in reference.data.items():
        np.testing.assert_array_equal(store.data[name], values, err_msg=name)


def test_a_target_or_seed_that_is_not_finite_is_left_to_the_poser():
    """The poser's path raises the error (the driver then disables IK with its message)."""
    from pxr import Usd

    import runtime.schema  # noqa: F401
    from runtime.kinematics.poser import RobotPoser

    stage = Usd.Stage.Open(str(REPO / "scenes" / "simple_arm.usda"))
    arm = "/World/SimpleArm"
    poser = RobotPoser(
        stage,
        stage.GetPrimAtPath(arm),
        stage.GetPrimAtPath(f"{arm}/base"),
        stage.GetPrimAtPath(f"{arm}/link4"),
    )
    fast = SeededSolve(poser)
    n = len(poser.chain.joints)
    assert fast.solve((0.3, 0.0, float("nan")), (1.0, 0.0, 0.0, 0.0), np.zeros(n)) is None
    assert fast.solve((0.3, 0.0, 0.3), (1.0, 0.0, 0.0, 0.0), np.full(n, np.nan)) is None
    if NATIVE_AVAILABLE:
        q, _ = fast.solve((0.3, 0.0, 0.3), (1.0, 0.0, 0.0, 0.0), np.zeros(n))
        from runtime.kinematics.math import Transform

        expected, _ = poser.solve_ik_seeded(Transform((0.3, 0.0, 0.3)), np.zeros(n))
        np.testing.assert_array_equal(q, expected)
