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

from runtime._compile.jit import JIT_DISABLED  # noqa: E402
from runtime._compile.native_call import NATIVE_AVAILABLE  # noqa: E402
from runtime.recording import load_recording  # noqa: E402
from runtime.run.blocks import StepBlocks  # noqa: E402
from runtime.run.fused import FusedStep  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402
from tests.helpers.run_compare import _assert_identical, _hand_rays_scene  # noqa: E402

pytestmark = pytest.mark.skipif(JIT_DISABLED, reason="the fused step needs the JIT")

REPO = Path(__file__).resolve().parents[1]


def _run(scene, out, monkeypatch, fused, blocks=False, **overrides):
    monkeypatch.setattr(FusedStep, "ENABLED", fused)
    monkeypatch.setattr(StepBlocks, "ENABLED", blocks)
    result = run_scene(str(scene), out=out, **overrides)
    return result, load_recording(out)


def _both(scene, tmp_path, monkeypatch, **overrides):
    """Blocks of whole steps, the fused step alone, the general path: the same store."""
    blocks, blocks_store = _run(scene, tmp_path / "b.zarr", monkeypatch, True, True, **overrides)
    fused, fused_store = _run(scene, tmp_path / "fused.zarr", monkeypatch, True, **overrides)
    general, general_store = _run(scene, tmp_path / "general.zarr", monkeypatch, False, **overrides)
    # each run took its steps the way it was asked to
    assert blocks.timings["compiled"] > 0.0 and blocks.timings["state"] == 0.0
    assert fused.timings["fused"] > 0.0 and fused.timings["compiled"] == 0.0
    assert fused.timings["state"] == 0.0
    assert general.timings["fused"] == general.timings["compiled"] == 0.0
    assert general.timings["state"] > 0.0
    assert blocks.steps == fused.steps == general.steps == overrides["steps"]
    _assert_identical(fused_store, general_store)
    _assert_identical(blocks_store, general_store)
    return blocks_store


def _block_ends(monkeypatch):
    """A list that ``StepBlocks.run`` fills with every block's ``(count, taken, status)``."""
    run = StepBlocks.run
    ends = []

    def recorded(self, count):
        taken, status = run(self, count)
        ends.append((count, taken, status))
        return taken, status

    monkeypatch.setattr(StepBlocks, "run", recorded)
    return ends


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


def test_panda_blocks_end_where_python_must_act(tmp_path, monkeypatch):
    """Blocks stop for contact arrays that grow and the first robot contact (IK freezes) and
    cross the IK solves found ahead: the Panda run meets each of these and records the
    general path's rows, with the same solves."""
    from runtime.run import _fused_kernels as F

    statuses = _block_ends(monkeypatch)
    scene = REPO / "scenes" / "panda_table.usda"
    blocks, blocks_store = _run(scene, tmp_path / "b.zarr", monkeypatch, True, True, steps=1500)
    general, general_store = _run(scene, tmp_path / "g.zarr", monkeypatch, False, steps=1500)
    _assert_identical(blocks_store, general_store)
    assert {F.ST_DONE, F.ST_PYTHON} <= {status for _, _, status in statuses}
    # IK froze its targets at the first contact, at the same time both ways
    frozen = blocks.summary["ik"]["frozen_at"]
    assert frozen is not None and frozen == general.summary["ik"]["frozen_at"]
    assert blocks.summary["ik"] == general.summary["ik"]  # the same solves, each counted once
    # before it, blocks cross the IK intervals' starts (solved ahead: 10 steps each); the
    # solves ahead are native calls (runtime._ik_fast): a build without the C module ends a
    # block at each interval instead
    steps = [taken for _, taken, _ in statuses]
    before = [n for n, _ in zip(steps, range(5), strict=False)]
    if NATIVE_AVAILABLE:
        assert max(before) > 10 and sum(steps) > 1000
    else:
        assert max(before) == 10 and sum(steps) > 1000
    assert blocks.summary["ik"]["solves"] > 100


def test_mujoco_error_handler_reports_instead_of_exiting():
    """A MuJoCo error in a direct C call (an exhausted arena) is recorded by the handler
    blocks install; MuJoCo's default handler would exit the process."""
    import ctypes

    import mujoco

    from runtime.run import _mujoco_native

    native = _mujoco_native.native()
    if native is None:
        pytest.skip("another error handler is installed, or no libmujoco")
    bodies = "".join(
        f'<body pos="0 0 {0.3 * i}"><freejoint/><geom size=".1"/></body>' for i in range(40)
    )
    xml = (
        '<mujoco><size memory="60K"/><worldbody>'
        f'{bodies}<geom type="plane" size="1 1 .1"/></worldbody></mujoco>'
    )
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    step = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(int(native["functions"][0]))
    for _ in range(400):
        step(model._address, data._address)
        if native["error"][0]:
            break
    assert native["error"][0] == 1
    assert "out of memory" in native["messages"][-1]
    native["error"][0] = 0
    native["messages"].clear()


def test_blocks_hand_warned_steps_back_to_python(tmp_path, monkeypatch):
    """A block that sees MuJoCo's warning counters change ends after that step, which the
    loop finishes (warning check, then the fused step): here every block ends so, through
    a wrong "clean" snapshot, and the store still equals the general path's."""
    ready = StepBlocks._ready

    def wrong_snapshot(self):
        if not ready(self):
            return False
        self.clean[:] = 7  # no counter reads 7: every step looks warned
        return True

    monkeypatch.setattr(StepBlocks, "_ready", wrong_snapshot)
    ends = _block_ends(monkeypatch)
    scene = REPO / "scenes" / "simple_arm.usda"
    _, blocks_store = _run(scene, tmp_path / "b.zarr", monkeypatch, True, True, steps=300)
    _, general_store = _run(scene, tmp_path / "g.zarr", monkeypatch, False, steps=300)
    _assert_identical(blocks_store, general_store)
    from runtime.run import _fused_kernels as F

    assert len(ends) == 299 and {status for _, _, status in ends} == {F.ST_WARNED}


def test_a_mujoco_error_in_a_block_stops_the_run_and_keeps_the_rows(tmp_path, monkeypatch):
    """MuJoCo's error handler fired during a block: the run stops with an error naming
    MuJoCo's message; the store keeps every step before, marked incomplete."""
    from runtime.errors import SimrtError
    from runtime.run import _mujoco_native

    native = _mujoco_native.native()
    if native is None:
        pytest.skip("another error handler is installed, or no libmujoco")
    run = StepBlocks.run
    calls = []

    def erring(self, count):
        calls.append(count)
        if len(calls) == 3:  # as if mju_error ran inside this block's first mj_step
            native["error"][0] = 1
            native["messages"].append("mj_stackAlloc: out of memory (test)")
        return run(self, count)

    monkeypatch.setattr(StepBlocks, "run", erring)
    monkeypatch.setattr(StepBlocks, "MAX_STEPS", 200)  # (blocks are sized by time: >= 3 here)
    scene = REPO / "scenes" / "simple_arm.usda"
    out = tmp_path / "e.zarr"
    monkeypatch.setattr(FusedStep, "ENABLED", True)
    monkeypatch.setattr(StepBlocks, "ENABLED", True)
    with pytest.raises(SimrtError, match="MuJoCo error at step .*out of memory"):
        run_scene(str(scene), out=out, steps=2000)
    assert native["error"][0] == 0 and not native["messages"]
    stored = load_recording(out)
    assert not stored.complete
    rows = len(stored.time)
    assert rows == 1 + sum(calls[:2])  # the first (Python) step and two whole blocks
    np.testing.assert_array_equal(stored.data["/World/SimpleArm.positions"][-1].shape, (4,))


def test_a_callers_mujoco_engine_runs_blocks_too(tmp_path, monkeypatch):
    """Batch workers hand run_scene their cached MujocoEngine (engine_factory): their
    episodes take blocks as well, and record what the general path records."""
    from pxr import Usd

    from runtime.engine.mujoco_engine import MujocoEngine

    def factory(stage, **options):
        return MujocoEngine(stage, **options)

    scene = REPO / "scenes" / "simple_arm.usda"
    stores, results = {}, {}
    for mode in ("blocks", "general"):
        monkeypatch.setattr(FusedStep, "ENABLED", mode == "blocks")
        monkeypatch.setattr(StepBlocks, "ENABLED", mode == "blocks")
        out = tmp_path / f"{mode}.zarr"
        stage = Usd.Stage.Open(str(scene))
        results[mode] = run_scene(stage, out=out, steps=300, engine_factory=factory)
        stores[mode] = load_recording(out)
    assert results["blocks"].timings["compiled"] > 0.0
    assert results["general"].timings["compiled"] == 0.0
    _assert_identical(stores["blocks"], stores["general"])


@pytest.mark.parametrize(
    "attribute, value",
    [("enabled", False), ("numRays", 719)],  # switched off; disabled by a bad configuration
    ids=["enabled-off", "disabled"],
)
def test_a_ray_cast_sensor_that_never_evaluates_keeps_the_fused_step(
    tmp_path, monkeypatch, attribute, value
):
    """Its rows are the general path's invalid rows; the rest of the run stays compiled."""
    from pxr import Sdf, Usd

    import runtime.schema  # noqa: F401  (the Isaac schemas registered)

    path = tmp_path / "panda_lidar_off.usda"
    stage = Usd.Stage.CreateNew(str(path))
    stage.GetRootLayer().subLayerPaths.append(str(REPO / "scenes" / "panda_table.usda"))
    stage.SetDefaultPrim(stage.GetPrimAtPath("/World"))
    lidar = "/World/LidarMount/Lidar"
    kind = Sdf.ValueTypeNames.Bool if attribute == "enabled" else Sdf.ValueTypeNames.UInt
    stage.OverridePrim(lidar).CreateAttribute(attribute, kind).Set(value)
    stage.GetRootLayer().Save()
    store = _both(path, tmp_path, monkeypatch, steps=300, cache=False)
    assert not store.data[f"{lidar}.valid"].any()
    assert any(v.any() for name, v in store.data.items() if name.endswith("HandImu.valid"))


@pytest.mark.skipif(not NATIVE_AVAILABLE, reason="solves ahead are native calls")
def test_a_solve_ahead_for_another_time_ends_the_block_before_its_interval(tmp_path, monkeypatch):
    """The block checks MuJoCo's time at each interval solved ahead: a solve made for
    another time is not used (ST_LOOKAHEAD), the driver solves that interval itself."""
    from runtime.run import _fused_kernels as F
    from runtime.run import blocks as B

    ahead = B.lookahead

    def off_by_a_bit(*args):
        solutions, times = ahead(*args)
        return solutions, [np.nextafter(t, np.inf) for t in times]

    monkeypatch.setattr(B, "lookahead", off_by_a_bit)
    ends = _block_ends(monkeypatch)
    scene = REPO / "scenes" / "panda_table.usda"
    blocks, blocks_store = _run(scene, tmp_path / "b.zarr", monkeypatch, True, True, steps=300)
    general, general_store = _run(scene, tmp_path / "g.zarr", monkeypatch, False, steps=300)
    assert [status for _, _, status in ends].count(F.ST_LOOKAHEAD) > 10
    assert blocks.summary["ik"] == general.summary["ik"]
    _assert_identical(blocks_store, general_store)


@pytest.mark.parametrize(
    "overrides",
    [
        {"ik_every": 1},  # a solve at every step: blocks cross one interval per step
        {"ik_every": 7, "ik_until_contact": False},  # intervals across chunk and block ends
        {"ik_every": 3, "imu_mode": "isaac"},
        {"ik_every": 10, "store_options": {"chunk_rows": 37}},  # chunks end mid-interval
    ],
    ids=["every-1", "every-7-no-freeze", "every-3-isaac", "chunks-of-37"],
)
def test_blocks_with_ik_solved_ahead_equal_the_general_path(tmp_path, monkeypatch, overrides):
    scene = REPO / "scenes" / "panda_table.usda"
    settings = {"steps": 700, **overrides}
    blocks, blocks_store = _run(scene, tmp_path / "b.zarr", monkeypatch, True, True, **settings)
    general, general_store = _run(scene, tmp_path / "g.zarr", monkeypatch, False, **settings)
    assert blocks.timings["compiled"] > 0.0
    assert blocks.summary["ik"] == general.summary["ik"] and general.summary["ik"]["solves"] > 50
    _assert_identical(blocks_store, general_store)
