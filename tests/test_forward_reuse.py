"""The step after a post-step mj_forward reuses it: trajectories are plain mj_step's, bit for bit.

Oracle: a bare ``MjData`` of the same model stepped by ``mujoco.mj_step`` (and given the
same post-step ``mj_forward``, which changes nothing ``mj_step`` reads). The reusing side
runs the Python path (:class:`runtime.engine.forward_reuse.ForwardReuse`), the compiled one
(:mod:`runtime.run._forward_kernels`, called directly) or both in turn, and through
``simrt run`` and the vector environments. MuJoCo's own counters (``timer[...].number``)
show the reuse happened: a reused step calls no ``mj_step``.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import mujoco
import numpy as np
import pytest
from pxr import Sdf, Usd

import runtime.schema  # noqa: F401  (registers the schemas)
from runtime._compile.jit import JIT_DISABLED
from runtime.batch.randomize import apply_parameters
from runtime.engine.forward_reuse import ARMED, ForwardReuse
from runtime.engine.mujoco_engine import MujocoEngine
from runtime.envs import SimVectorEnv
from runtime.recording import load_recording
from runtime.run._mujoco_native import reuse_block
from runtime.run._native_kernels import array_address
from runtime.run.loop import run_scene

REPO = Path(__file__).resolve().parents[1]
GO2_LAB = REPO / "scenes" / "go2_lab_sensors.usda"
PANDA = REPO / "scenes" / "panda_table.usda"
STEPS = 120
STEP = mujoco.mjtTimer.mjTIMER_STEP
FORWARD = mujoco.mjtTimer.mjTIMER_FORWARD
EULER, RK4, IMPLICIT, IMPLICITFAST = (
    int(mujoco.mjtIntegrator.mjINT_EULER), int(mujoco.mjtIntegrator.mjINT_RK4),
    int(mujoco.mjtIntegrator.mjINT_IMPLICIT), int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST),
)  # fmt: skip

needs_jit = pytest.mark.skipif(JIT_DISABLED, reason="the compiled step needs the JIT")


@pytest.fixture(scope="module")
def built():
    """Each scene's built model (every test copies it: tests change its options)."""
    found = {}
    for name, path in (("go2", GO2_LAB), ("panda", PANDA)):
        stage = Usd.Stage.Open(str(path))
        found[name] = (stage, MujocoEngine(stage).built)
    return found


def _engine(built, scene: str) -> MujocoEngine:
    stage, model = built[scene]
    return MujocoEngine(stage, built=dataclasses.replace(model, model=copy.copy(model.model)))


class _Reusing:
    """Steps and post-step forwards of an engine through one path: python, compiled, mixed."""

    def __init__(self, engine: MujocoEngine, path: str) -> None:
        self.engine, self.path, self.k = engine, path, 0
        if path != "python":
            from runtime.run._forward_kernels import forward_and_arm, step_reusing

            block = reuse_block(engine)
            assert block is not None and block[1] != 0
            self.args = (array_address(block), int(engine.model._address),
                         int(engine.data._address))  # fmt: skip
            self.compiled = (step_reusing, forward_and_arm)

    def _compiled(self) -> bool:
        return self.path == "compiled" or (self.path == "mixed" and self.k % 3 != 1)

    def step(self) -> None:
        if self._compiled():
            self.compiled[0](*self.args)
        else:
            self.engine.forward_reuse.step()

    def forward(self) -> None:
        if self._compiled():
            self.compiled[1](*self.args)
        else:
            self.engine.forward_reuse.forward()
        self.k += 1


def _same_state(model, a, b, k: int) -> None:
    """Everything a step leaves in MjData that the sensors read, bit for bit."""
    assert a.ncon == b.ncon and a.nefc == b.nefc, f"step {k}: contact counts differ"
    for name in ("qpos", "qvel", "act", "qacc", "sensordata", "efc_force", "qacc_warmstart",
                 "actuator_force", "qfrc_constraint"):  # fmt: skip
        assert np.array_equal(getattr(a, name), getattr(b, name)), f"step {k}: {name} differs"
    if a.ncon:
        for name in ("pos", "frame", "dist"):
            x, y = getattr(a.contact, name), getattr(b.contact, name)
            assert np.array_equal(x, y), f"step {k}: contact {name} differs"
        for c in range(a.ncon):  # (the contact forces the lab contact sensors read)
            fa, fb = np.zeros(6), np.zeros(6)
            mujoco.mj_contactForce(model, a, c, fa)
            mujoco.mj_contactForce(model, b, c, fb)
            assert np.array_equal(fa, fb), f"step {k}: contact {c} force differs"


def _trajectory(engine, path, every, integrator, *, events=True):
    """Plain mj_step beside the reusing path: ctrl changed every ``every`` steps (0: never),
    an applied wrench and force on and off, a reset (qpos / qvel written) midway."""
    model = engine.model
    model.opt.integrator = integrator
    bare = mujoco.MjData(model)
    mujoco.mj_copyData(bare, model, engine.data)
    reusing = _Reusing(engine, path)
    data = engine.data
    rng = np.random.default_rng(every)
    base = data.ctrl.copy()  # (the authored drive targets)
    body = model.nbody - 1
    start = data.qpos.copy()
    for k in range(STEPS):
        if every and k % every == 0:
            ctrl = base + rng.uniform(-0.1, 0.1, model.nu)
            data.ctrl[:] = bare.ctrl[:] = ctrl
        if events and k == 30:
            data.xfrc_applied[body] = bare.xfrc_applied[body] = (0.0, 0.0, 20.0, 0.3, 0.0, 0.0)
        if events and k == 40:
            data.xfrc_applied[:] = bare.xfrc_applied[:] = 0.0
            data.qfrc_applied[0] = bare.qfrc_applied[0] = 1.5
        if events and k == 50:
            data.qfrc_applied[:] = bare.qfrc_applied[:] = 0.0
        if events and k == 70:  # (a reset's writes; nothing tells the engine)
            data.qpos[:] = bare.qpos[:] = start
            data.qvel[:] = bare.qvel[:] = 0.0
        mujoco.mj_step(model, bare)
        reusing.step()
        _same_state(model, bare, data, k)
        mujoco.mj_forward(model, bare)
        reusing.forward()
        _same_state(model, bare, data, k)
    return data.timer[STEP].number, data.timer[FORWARD].number


_CASES = [
    (scene, integrator, every, path)
    for scene in ("go2", "panda")
    for integrator in ("implicitfast", "euler", "rk4")
    for every in (1, 4, 0)
    for path in ("python", "compiled", "mixed")
] + [("go2", "implicit", 4, "compiled"), ("panda", "implicit", 1, "python")]


@pytest.mark.parametrize(("scene", "integrator", "every", "path"), _CASES,
                         ids=["-".join(map(str, case)) for case in _CASES])  # fmt: skip
def test_reusing_steps_equal_plain_mj_step(built, scene, integrator, every, path):
    """ctrl changed every step (1), every 4th (4), never (0); wrench, force and reset too."""
    if path != "python" and JIT_DISABLED:
        pytest.skip("the compiled step needs the JIT")
    integrator = {"implicitfast": IMPLICITFAST, "euler": EULER, "rk4": RK4,
                  "implicit": IMPLICIT}[integrator]  # fmt: skip
    engine = _engine(built, scene)
    before = engine.data.timer[STEP].number, engine.data.timer[FORWARD].number
    steps, forwards = _trajectory(engine, path, every, integrator)
    plain, forwards = steps - before[0], forwards - before[1]
    if integrator == RK4:  # (RK4 evaluates the dynamics itself: plain mj_step)
        assert plain == STEPS
        return
    # plain: the first step (nothing armed) and the step after the reset; the steps after
    # changed controls, wrench or force skip to the acceleration stage; the others reuse all
    assert plain == 2, f"{plain} plain mj_step calls"
    changed = {k for k in range(1, STEPS) if every and k % every == 0} | {30, 40, 50}
    skipped = forwards - STEPS - plain  # (one forward per step after it, one per mj_step)
    assert skipped == len(changed - {70})


@needs_jit
@pytest.mark.parametrize("path", ["python", "compiled"])
def test_unsure_cases_step_plainly(built, path):
    """A callback, the fwdinv flag, a changed option or integrator: plain mj_step."""
    engine = _engine(built, "go2")
    model, data = engine.model, engine.data
    bare = mujoco.MjData(model)
    mujoco.mj_copyData(bare, model, data)
    reusing = _Reusing(engine, path)

    def step(k):
        count = data.timer[STEP].number
        mujoco.mj_step(model, bare)
        reusing.step()
        _same_state(model, bare, data, k)
        mujoco.mj_forward(model, bare)
        reusing.forward()
        return data.timer[STEP].number - count

    assert step(0) == 1  # (not armed yet)
    assert step(1) == 0
    mujoco.set_mjcb_control(lambda m, d: None)
    try:
        assert step(2) == 1
    finally:
        mujoco.set_mjcb_control(None)
    assert step(3) == 0
    model.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_FWDINV)
    assert step(4) == 1
    model.opt.enableflags = 0
    step(5)
    model.opt.gravity[2] = -9.0  # (read by the forward: the snapshot has the options)
    assert step(6) == 1
    model.geom_friction[:, 0] *= 0.5  # (a randomized model array)
    assert step(7) == 1
    assert step(8) == 0
    data.time += 1e-3  # (any step taken meanwhile changes the time)
    bare.time += 1e-3
    assert step(9) == 1


def test_model_writes_not_compared_need_invalidate(built):
    """Randomization and resets invalidate; a model write outside them calls invalidate()."""
    engine = _engine(built, "go2")
    model, data = engine.model, engine.data
    for _ in range(20):
        engine.step()
        engine.forward_after_step()
    assert engine.forward_reuse.flag[0] == ARMED
    apply_parameters(engine, {"scales": {"mass": 1.1}})
    assert engine.forward_reuse.flag[0] == 0
    engine.forward_after_step()
    engine.reset()
    assert engine.forward_reuse.flag[0] == 0
    # geom_solref is not compared: without invalidate() the step would use the old forward
    for _ in range(5):
        engine.step()
    engine.forward_after_step()
    results = []
    for invalidate in (True, False):
        saved = mujoco.MjData(model)
        mujoco.mj_copyData(saved, model, data)
        bare = mujoco.MjData(model)
        mujoco.mj_copyData(bare, model, data)
        solref = model.geom_solref.copy()
        model.geom_solref[:, 0] = 0.05
        if invalidate:
            engine.forward_reuse.invalidate()
        engine.forward_reuse.step()
        mujoco.mj_step(model, bare)
        results.append(np.array_equal(bare.qvel, data.qvel))
        model.geom_solref[:] = solref
        mujoco.mj_copyData(data, model, saved)
        engine.forward_after_step()
    assert results == [True, False]  # (the second shows the forward was reused)


def test_reuse_off_and_unsupported_models_step_plainly(built, monkeypatch):
    engine = _engine(built, "go2")
    assert engine.forward_reuse.reason is None
    monkeypatch.setattr(ForwardReuse, "ENABLED", False)
    engine.step()
    engine.forward_after_step()
    assert engine.forward_reuse.flag[0] == 0
    flex = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><flexcomp name='f' type='grid' count='3 3 1' spacing='.1 .1 .1'"
        " dim='2'/></worldbody></mujoco>"
    )
    assert ForwardReuse(flex, mujoco.MjData(flex)).reason == "the model has flexes"


# ---------------------------------------------------------------- simrt run
def _capture(found: list):
    return lambda engine: found.append(engine)


@needs_jit
def test_run_with_lab_imu_records_plain_mj_step_physics(tmp_path):
    """go2 with its lab IMU (post-step forward after every step) through the compiled
    blocks: the recorded joints are a bare mj_step loop's; the steps reused the forward."""
    steps = 200
    engines: list = []
    run_scene(GO2_LAB, out=tmp_path / "run.zarr", steps=steps, summary=False,
              setup=_capture(engines))  # fmt: skip
    recording = load_recording(tmp_path / "run.zarr")
    engine = engines[0]
    assert engine.data.timer[STEP].number <= 2  # (the first step, before any forward)
    oracle = MujocoEngine(Usd.Stage.Open(str(GO2_LAB)))
    robot = next(n[: -len(".positions")] for n in recording.channels if n.endswith(".positions")
                 and ":" not in n)  # fmt: skip
    for k in range(steps):
        mujoco.mj_step(oracle.model, oracle.data)
        state = oracle.state()
        positions = recording.data[f"{robot}.positions"][k]
        assert np.array_equal(positions, state.joint_positions), f"step {k}"
        assert np.array_equal(recording.data[f"{robot}.velocities"][k], state.joint_velocities)
    assert np.array_equal(engine.data.qpos, oracle.data.qpos)
    assert np.array_equal(engine.data.qvel, oracle.data.qvel)


def _panda_with_imu() -> Usd.Stage:
    stage = Usd.Stage.Open(str(REPO / "scenes" / "panda_lab_camera.usda"))
    stage.SetEditTarget(stage.GetSessionLayer())
    imu = stage.DefinePrim("/World/LabSensors/HandImu", "Scope")
    imu.CreateAttribute("simrt:lab:kind", Sdf.ValueTypeNames.Token).Set("imu")
    imu.CreateAttribute("simrt:lab:primPath", Sdf.ValueTypeNames.String).Set(".*/panda_hand")
    return stage


@needs_jit
def test_run_with_ik_and_lab_imu_equals_the_run_without_reuse(tmp_path, monkeypatch):
    """The Panda moved by IK (controls change every step) with a lab IMU: every channel
    equals the run that steps with plain mj_step (reuse off); the reuse skipped forwards."""
    runs = []
    for enabled in (True, False):
        monkeypatch.setattr(ForwardReuse, "ENABLED", enabled)
        engines: list = []
        out = tmp_path / f"run_{enabled}.zarr"
        result = run_scene(
            _panda_with_imu(), out=out, steps=240, summary=False, setup=_capture(engines),
            ik_targets=["panda_hand=0.45,0.1,0.6@0.3"],
        )  # fmt: skip
        assert result.complete
        runs.append((load_recording(out), engines[0], result))
    (on, engine_on, result_on), (off, engine_off, _) = runs
    assert any(i.kind == "lab" and "HandImu" in n for n, i in on.channels.items())
    assert result_on.timings["compiled"] > 0.0
    assert engine_off.data.timer[STEP].number == 240
    assert engine_on.data.timer[STEP].number < 240 // 4
    assert set(on.channels) == set(off.channels)
    for name in on.channels:
        np.testing.assert_array_equal(on.data[name], off.data[name], err_msg=name)
    targets = next(n for n in on.channels if n.endswith(".targets"))
    assert np.nanmax(np.abs(np.diff(on.data[targets][:60], axis=0))) > 0  # (ctrl changed)


# ---------------------------------------------------------------- vector envs
@needs_jit
@pytest.mark.parametrize("action", ["joint_position", "joint_effort"])
@pytest.mark.parametrize("every", [1, 3, 0], ids=["every-step", "every-3rd", "never"])
def test_vector_env_with_lab_sensors_equals_plain_mj_step(action, every):
    """SimVectorEnv on go2 with its lab sensors (post-step forward in the compiled step):
    each world's state after every env step is a bare MjData's stepped by mj_step with the
    same controls / applied forces; world 1 is reset midway."""
    env = SimVectorEnv(str(GO2_LAB), 2, action=action, decimation=2, observations=["*"])
    try:
        assert env.worlds.forward_after_step
        env.reset(seed=3)
        model = env.model
        bares = []
        for engine in env.worlds.engines:
            bare = mujoco.MjData(model)
            mujoco.mj_copyData(bare, model, engine.data)
            bares.append(bare)
        size = env.actions.size
        rng = np.random.default_rng(every)
        low = env.single_action_space.low
        high = env.single_action_space.high
        finite = np.isfinite(low) & np.isfinite(high)
        low, high = np.where(finite, low, -1.0), np.where(finite, high, 1.0)
        span, centre = high - low, (low + high) / 2
        actions = np.tile(centre, (2, 1))
        plain_before = [e.data.timer[STEP].number for e in env.worlds.engines]
        for k in range(30):
            if every and k % every == 0:
                actions = centre + 0.1 * span * rng.uniform(-1, 1, (2, size))
            reset = k == 12
            if reset:
                env.reset(options={"reset_mask": np.array([False, True])})
                mujoco.mj_copyData(bares[1], model, env.worlds.engines[1].data)
            env.step(actions)
            for e, engine in enumerate(env.worlds.engines):
                bare = bares[e]
                bare.ctrl[:] = engine.data.ctrl  # (the inputs the env wrote, given to both)
                bare.qfrc_applied[:] = engine.data.qfrc_applied
                for _ in range(2):
                    mujoco.mj_step(model, bare)
                assert np.array_equal(bare.qpos, engine.data.qpos), f"env step {k}, world {e}"
                assert np.array_equal(bare.qvel, engine.data.qvel), f"env step {k}, world {e}"
                mujoco.mj_forward(model, bare)
                assert np.array_equal(bare.sensordata, engine.data.sensordata)
                assert np.array_equal(bare.qacc, engine.data.qacc)
        plain = [e.data.timer[STEP].number - b for e, b in
                 zip(env.worlds.engines, plain_before, strict=True)]  # fmt: skip
        assert max(plain) < 30 * 2 - 20  # (a reused step per env step: no mj_step)
    finally:
        env.close()


@pytest.mark.parametrize("path", ["python", pytest.param("compiled", marks=needs_jit)])
def test_bad_values_in_the_reused_state_reset_as_mj_step_does(built, path):
    """A forward of a state with a huge velocity: mj_checkVel resets the data, then the
    full forward runs (as in mj_step), not the reused one."""
    engine = _engine(built, "go2")
    model, data = engine.model, engine.data
    reusing = _Reusing(engine, path)
    for _ in range(3):
        reusing.step()
        reusing.forward()
    bare = mujoco.MjData(model)
    data.qvel[2] = 1e11  # (above mjMAXVAL)
    reusing.forward()  # (armed with it)
    mujoco.mj_copyData(bare, model, data)
    warned = data.warning[mujoco.mjtWarning.mjWARN_BADQVEL].number
    mujoco.mj_step(model, bare)
    reusing.step()
    assert data.warning[mujoco.mjtWarning.mjWARN_BADQVEL].number == warned + 1
    _same_state(model, bare, data, 0)
    assert np.all(np.abs(data.qvel) < 1e3)
