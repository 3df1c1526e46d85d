"""Gymnasium environments: compiled = general path, independence of N and threads, oracles.

Oracles: ``simrt run`` (``run_scene``, the general path) recording the same scene with the
same targets and draws; MuJoCo stepping a bare ``MjData`` of the same model with the same
controls or forces; Gymnasium's own ``SyncVectorEnv`` of single envs for the autoreset
semantics; Gymnasium's ``check_env``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import runtime.schema  # noqa: F401  (the Isaac schemas, before any stage)
from runtime._compile.jit import JIT_DISABLED

gym = pytest.importorskip("gymnasium")
mujoco = pytest.importorskip("mujoco")

from runtime.envs import SimEnv, SimVectorEnv, episode_seed  # noqa: E402
from runtime.errors import SimrtError  # noqa: E402
from runtime.run.worlds import Worlds  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GO2 = str(REPO / "scenes" / "go2_standing.usda")
PANDA = str(REPO / "scenes" / "panda_table.usda")
ARM = str(REPO / "scenes" / "simple_arm.usda")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _actions(base: np.ndarray, envs: np.ndarray, k: int) -> np.ndarray:
    """Time-varying targets, a function of (env, step) only."""
    columns = np.arange(base.shape[0])
    return np.ascontiguousarray(
        base + 0.08 * np.sin(0.3 * k + envs[:, None] * 0.7 + columns[None, :])
    )


def _rollout(scene, n, steps, *, threads=1, compiled=True, decimation=2, envs=None):
    worlds = Worlds(scene, n, decimation=decimation, threads=threads, compiled=compiled)
    try:
        base = worlds.initial_targets()
        ids = np.arange(n)
        rows = []
        for k in range(steps):
            worlds.step(_actions(base, ids, k))
            rows.append({name: v.copy() for name, v in worlds.buffers.items()})
        used = worlds._table[:, 18].copy()  # (W_ACTIVE: worlds on the compiled path)
    finally:
        worlds.close()
    return rows, used


def _same(a, b, envs=slice(None)):
    assert len(a) == len(b)
    for k, (ra, rb) in enumerate(zip(a, b, strict=True)):
        assert ra.keys() == rb.keys()
        for name in ra:
            x, y = ra[name][envs], rb[name][envs]
            assert x.dtype == y.dtype
            assert np.array_equal(x, y, equal_nan=True), f"step {k}: {name} differs"


@pytest.mark.skipif(JIT_DISABLED, reason="the compiled step needs the JIT")
@pytest.mark.parametrize("scene", [GO2, PANDA], ids=["go2", "panda-lidar"])
def test_compiled_equals_general_and_independent_of_n_and_threads(scene):
    general, used = _rollout(scene, 3, 12, compiled=False)
    assert not used.any()
    compiled, used = _rollout(scene, 3, 12)
    assert used.all()  # (every world ended on the compiled path)
    _same(general, compiled)
    wide, used = _rollout(scene, 7, 12, threads=2)
    assert used.all()
    _same(compiled, wide, slice(0, 3))


def test_physics_equals_bare_mujoco():
    """The worlds' joint positions = a bare MjData of the same model, same controls."""
    worlds = Worlds(ARM, 2, decimation=3)
    try:
        model = worlds.model
        bare = [mujoco.MjData(model) for _ in range(2)]
        for e, data in enumerate(bare):
            engine = worlds.engines[e]
            data.qpos[:] = engine.data.qpos
            data.qvel[:] = engine.data.qvel
            data.ctrl[:] = engine.data.ctrl
            mujoco.mj_forward(model, data)
        dofs = worlds.engines[0].dofs
        base = worlds.initial_targets()
        for k in range(20):
            actions = _actions(base, np.arange(2), k)
            worlds.step(actions)
            for e, data in enumerate(bare):  # (targets clipped to the DOF limits)
                data.ctrl[worlds.act_index] = np.clip(
                    actions[e], worlds.action_lower, worlds.action_upper
                )
                for _ in range(3):
                    mujoco.mj_step(model, data)
                expected = np.array([b.sign * data.qpos[b.qpos_adr] for b in dofs])
                assert np.array_equal(worlds.joint_positions()[e], expected)
    finally:
        worlds.close()


def test_effort_actions_equal_bare_mujoco():
    env = SimVectorEnv(ARM, 2, action="joint_effort", decimation=2)
    try:
        env.reset(seed=0)
        model = env.model
        dofs = env.worlds.engines[0].dofs
        bare = mujoco.MjData(model)
        first = env.worlds.engines[1]
        bare.qpos[:] = first.data.qpos
        bare.ctrl[:] = first.data.ctrl
        mujoco.mj_forward(model, bare)
        for k in range(15):
            efforts = np.full((2, env.actions.size), 0.3 * np.sin(0.2 * k))
            observations, *_ = env.step(efforts)
            for j, b in enumerate(dofs):
                bare.qfrc_applied[b.dof_adr] = b.sign * efforts[1, j]
            for _ in range(2):
                mujoco.mj_step(model, bare)
            expected = np.array([b.sign * bare.qpos[b.qpos_adr] for b in dofs])
            assert np.array_equal(observations["joint_pos"][1], expected)
    finally:
        env.close()


def test_episode_equals_run_scene_with_the_same_draws(tmp_path):
    """An env's episode = ``run_scene`` of the scene with the same draws (general path)."""
    from runtime.batch.randomize import apply_parameters
    from runtime.recording import load_recording
    from runtime.run.loop import run_scene

    steps = 25
    env = SimVectorEnv(
        GO2, 3, randomization={"joints": {"fraction": 0.2}}, observations=["*"], threads=2
    )
    try:
        env.reset(seed=11)
        e = 2
        params = env.params[e]
        assert params is not None and params["joints"]
        held = env.worlds.targets[:, env.worlds.action_dof_index].copy()
        rows = []
        for _ in range(steps):
            observations, *_ = env.step(held)
            rows.append({k: v[e] for k, v in observations.items()})
    finally:
        env.close()
    out = tmp_path / "run.zarr"
    run_scene(GO2, out=out, steps=steps, setup=lambda engine: apply_parameters(engine, params))
    recording = load_recording(out)
    assert set(rows[0]) == set(recording.data)
    # (the targets channel: the env records the targets its actions sent; a run without IK
    # records zeros, its IK targets)
    assert np.array_equal(rows[0]["/World/Go2.targets"], held[e])
    assert not recording.data["/World/Go2.targets"].any()
    for k in range(steps):
        for name, values in recording.data.items():
            if name == "/World/Go2.targets":
                continue
            assert np.array_equal(rows[k][name], values[k], equal_nan=True), (k, name)


def test_same_results_for_any_n_and_thread_count():
    def run(n, threads):
        draws = {"joints": {"fraction": 0.3}}
        env = SimVectorEnv(
            GO2, n, decimation=2, threads=threads, randomization=draws, max_episode_steps=6
        )
        try:
            observations, _ = env.reset(seed=5)
            out = [observations["joint_pos"][:1].copy()]
            base = env.worlds.initial_targets()
            for k in range(14):  # (two autoresets: episodes 0, 1 and 2 of each env)
                observations, rewards, *_ = env.step(_actions(base, np.arange(n), k))
                out.append(observations["joint_pos"][: min(n, 7)].copy())
            return out
        finally:
            env.close()

    one, seven, sixty_four = run(1, 1), run(7, 1), run(64, 2)
    for a, b, c in zip(one, seven, sixty_four, strict=True):
        assert np.array_equal(a[:1], b[:1]) and np.array_equal(b, c[: b.shape[0]])


def _sync_and_ours(mode):
    scene = ARM
    options = {
        "decimation": 2,
        "max_episode_steps": 4,
        "reward_fn": lambda obs, act: obs["joint_pos"].sum(axis=1),
        "terminated_fn": lambda obs: obs["joint_vel"][:, 0] > 0.05,
    }
    sync = gym.vector.SyncVectorEnv(
        [lambda: SimEnv(scene, **options) for _ in range(3)], autoreset_mode=mode
    )
    ours = SimVectorEnv(scene, 3, autoreset_mode=mode, **options)
    return sync, ours


@pytest.mark.parametrize("mode", ["NEXT_STEP", "SAME_STEP"])
def test_autoreset_matches_gymnasium_sync_vector_env(mode):
    """Gymnasium's SyncVectorEnv of single envs is the oracle of the autoreset semantics."""
    sync, ours = _sync_and_ours(gym.vector.AutoresetMode[mode])
    try:
        a, _ = sync.reset(seed=0)
        b, _ = ours.reset(seed=0)
        base = ours.worlds.initial_targets()
        finished = 0
        for k in range(12):
            actions = _actions(base, np.arange(3), k)
            ra = sync.step(actions)
            rb = ours.step(actions)
            for x, y in zip(ra[:4], rb[:4], strict=True):
                if isinstance(x, dict):
                    for key in x:
                        assert np.array_equal(x[key], y[key]), (k, key)
                else:
                    assert np.array_equal(x, y), k
            if mode == "SAME_STEP" and "final_obs" in ra[4]:
                mask = ra[4]["_final_obs"]
                assert np.array_equal(mask, rb[4]["_final_obs"])
                for e in np.nonzero(mask)[0]:
                    assert np.array_equal(
                        ra[4]["final_obs"][e]["joint_pos"], rb[4]["final_obs"]["joint_pos"][e]
                    )
            finished += int((ra[2] | ra[3]).sum())
        assert finished >= 3  # (episodes ended and were reset)
    finally:
        sync.close()
        ours.close()


def test_check_env_and_registered_tasks():
    from gymnasium.utils.env_checker import check_env

    import runtime.envs  # noqa: F401  (registers the tasks)

    env = gym.make("simrt/Go2Stand-v0")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env.unwrapped)
    finally:
        env.close()
    vector = gym.make_vec("simrt/Go2Stand-v0", num_envs=4, vectorization_mode="vector_entry_point")
    vector = gym.wrappers.vector.RecordEpisodeStatistics(vector)
    try:
        observations, _ = vector.reset(seed=3)
        assert vector.observation_space.contains(
            {k: v for k, v in observations.items() if k in vector.observation_space.spaces}
        )
        ended = 0
        for _ in range(260):
            observations, rewards, terminated, truncated, infos = vector.step(
                vector.action_space.sample()
            )
            ended += int((terminated | truncated).sum())
        assert ended >= 4
    finally:
        vector.close()


def test_panda_reach_ik_actions_reach_the_goal():
    """Hand-pose actions: the simulated hand (MuJoCo's body pose) reaches the goal."""
    import runtime.envs  # noqa: F401

    env = gym.make_vec("simrt/PandaReach-v0", num_envs=2, vectorization_mode="vector_entry_point")
    try:
        observations, _ = env.reset(seed=1)
        for _ in range(40):
            goal = observations["goal"]
            pose = np.concatenate([goal, np.tile([0.0, 1.0, 0.0, 0.0], (2, 1))], axis=1)
            observations, rewards, *_ = env.step(pose)
        engines = env.unwrapped.worlds.engines
        hand = engines[0].model.body(_body_name(engines[0], "panda_hand")).id
        for e in range(2):
            simulated = engines[e].data.xpos[hand]
            assert np.linalg.norm(simulated - observations["goal"][e]) < 0.02
    finally:
        env.close()


def _body_name(engine, leaf):
    names = [engine.model.body(i).name for i in range(engine.model.nbody)]
    return next(n for n in names if n.rsplit("/", 1)[-1] == leaf)


def test_hostile_actions_and_specs(tmp_path):
    env = SimVectorEnv(ARM, 2)
    try:
        env.reset(seed=0)
        size = env.actions.size
        good = np.tile(env.worlds.initial_targets(), (2, 1))
        for bad, pattern in (
            (np.full((2, size), np.nan), r"env 0: action .* is nan"),
            (np.where(np.arange(size) == size - 1, np.inf, good), "is inf"),
            (good[:1], "shape"),
            (good.ravel(), "shape"),
            (np.full((2, size), "a"), "numeric"),
            (np.array([[object()] * size] * 2), "numeric"),
        ):
            with pytest.raises(SimrtError, match=pattern):
                env.step(bad)
        bad = good.copy()
        bad[1, 0] = np.nan
        with pytest.raises(SimrtError, match=r"env 1: action '.*' is nan"):
            env.step(bad)
        # out of range: clipped to the DOF limits (documented)
        far = good + 1e6
        observations, *_ = env.step(far)
        sent = env.worlds.targets[:, env.worlds.action_dof_index]
        assert np.array_equal(sent, np.broadcast_to(env.actions.upper, sent.shape))
    finally:
        env.close()
    with pytest.raises(SimrtError, match="unknown observation 'nope'"):
        SimVectorEnv(ARM, 1, observations=["nope"])
    with pytest.raises(SimrtError, match="num_envs must be at least 1"):
        SimVectorEnv(ARM, 0)
    with pytest.raises(SimrtError, match="num_envs must be an integer"):
        SimVectorEnv(ARM, 2.5)
    with pytest.raises(SimrtError, match="above the limit"):
        SimVectorEnv(ARM, 10**9)
    with pytest.raises(SimrtError, match="threads must be an integer"):
        SimVectorEnv(ARM, 1, threads=0)
    with pytest.raises(SimrtError, match="observations must be a list"):
        SimVectorEnv(ARM, 1, observations=5)
    with pytest.raises(SimrtError, match="unknown body 'nobody'"):
        SimVectorEnv(ARM, 1, observations=["body_pos"], bodies=["nobody"])
    with pytest.raises(SimrtError, match="decimation"):
        SimVectorEnv(ARM, 1, decimation=0)
    with pytest.raises(SimrtError, match="action 'fly'"):
        SimVectorEnv(ARM, 1, action="fly")
    empty = tmp_path / "empty.usda"
    empty.write_text('#usda 1.0\n(\n    defaultPrim = "World"\n)\ndef Xform "World"\n{\n}\n')
    with pytest.raises(SimrtError, match="no robot"):
        SimVectorEnv(str(empty), 1)
    fresh = SimVectorEnv(ARM, 1)
    try:
        with pytest.raises(SimrtError, match="before reset"):
            fresh.step(np.zeros((1, fresh.actions.size)))
    finally:
        fresh.close()


def test_episode_seeds():
    assert episode_seed(3, 0, 0) != episode_seed(3, 1, 0) != episode_seed(3, 0, 1)
    assert episode_seed(3, 5, 2) == episode_seed(3, 5, 2)
    assert 0 <= episode_seed(2**62, 2, 9) < 2**63


def test_record_writes_a_dataset_that_load_dataset_reads(tmp_path):
    from runtime.batch import load_dataset

    out = tmp_path / "rollouts"
    env = SimVectorEnv(ARM, 2, max_episode_steps=5, record=out,
                       randomization={"joints": {"fraction": 0.2}})  # fmt: skip
    seen = {0: [], 1: []}
    try:
        env.reset(seed=4)
        base = env.worlds.initial_targets()
        for k in range(12):  # (episodes of 5 steps; next-step autoreset)
            actions = _actions(base, np.arange(2), k)
            observations, rewards, terminated, truncated, _ = env.step(actions)
            for e in range(2):
                seen[e].append((observations["joint_pos"][e].copy(), actions[e].copy()))
    finally:
        env.close()
    dataset = load_dataset(out)
    entries = list(dataset)
    done = [entry for entry in entries if entry.status == "done"]
    assert len(done) == 4  # two episodes of 5 steps per env; the third ones were cut short
    assert {entry.status for entry in entries} == {"done", "failed"}
    first = done[0].load()
    env_id = first.run["episode"]["env"]
    robot = env.worlds.robot_path
    assert first.step.shape == (5,)
    positions = first.data[f"{robot}.positions"]
    for k in range(5):  # episode 0 of its env: env steps 0..4
        assert np.array_equal(positions[k], seen[env_id][k][0])
        assert np.array_equal(first.data["action"][k], seen[env_id][k][1])
    assert done[0].params["joints"]


def test_single_env_observes_what_the_vector_env_observes():
    """SimEnv's lean path (row views) = the one-env vector env's observation."""
    import runtime.envs  # noqa: F401

    options = {"randomization": {"joints": {"fraction": 0.2}}, "bodies": ["base"],
               "observations": ["*", "body_pos"]}  # fmt: skip
    single = SimEnv(str(REPO / "scenes" / "go2_lab_sensors.usda"), **options)
    vector = SimVectorEnv(
        str(REPO / "scenes" / "go2_lab_sensors.usda"), 1, autoreset_mode="disabled", **options
    )
    try:
        a, _ = single.reset(seed=2)
        b, _ = vector.reset(seed=2)
        base = vector.worlds.initial_targets()
        for k in range(6):
            action = _actions(base, np.arange(1), k)
            a, *_ = single.step(action[0])
            b, *_ = vector.step(action)
            assert a.keys() == b.keys()
            for name in a:
                assert np.array_equal(a[name], b[name][0], equal_nan=True), (k, name)
        # the lab height scan's rays hit the ground plane (z = 0) under the standing robot
        hits = a["/World/LabSensors/HeightScan:ray_hits_w"]
        assert hits.shape == (187, 3)
        assert np.allclose(hits[:, 2], 0.0, atol=1e-6)
        assert a["body_pos"].shape == (1, 3) and a["body_pos"][0, 2] > 0.1
    finally:
        single.close()
        vector.close()


def test_a_diverging_env_is_flagged_and_reset_while_the_others_go_on():
    env = SimVectorEnv(ARM, 3, action="joint_effort", decimation=2)
    try:
        env.reset(seed=0)
        calm = np.zeros((3, env.actions.size))
        for _ in range(3):
            env.step(calm)
        before = env.worlds.step_count.copy()
        wild = calm.copy()
        wild[1] = 1e200  # (MuJoCo reports a huge acceleration and resets its data)
        observations, rewards, terminated, truncated, infos = env.step(wild)
        assert infos["diverged"].tolist() == [False, True, False]
        assert truncated.tolist() == [False, True, False] and not terminated.any()
        assert (env.worlds.step_count[[0, 2]] == before[[0, 2]] + 2).all()
        observations, rewards, terminated, truncated, infos = env.step(calm)  # (autoreset)
        assert not infos["diverged"].any() and env.episodes[1] == 2
        assert np.isfinite(observations["joint_pos"]).all()
        assert env.episode_steps.tolist() == [5, 0, 5]
    finally:
        env.close()


IMU = "/World/Go2/Geometry/base/TrunkImu"


def _noisy_run(n, threads, noise, steps=8):
    names = [f"{IMU}.angular_velocity", f"{IMU}.linear_acceleration"]
    if noise:
        names.append(f"{IMU}.angular_velocity.exact")
    env = SimVectorEnv(GO2, n, decimation=2, threads=threads, noise=noise, observations=names,
                       randomization={"joints": {"fraction": 0.1}})  # fmt: skip
    try:
        env.reset(seed=21)
        base = env.worlds.initial_targets()
        out = []
        for k in range(steps):
            observations, *_ = env.step(_actions(base, np.arange(n), k))
            out.append({key: v.copy() for key, v in observations.items()})
        return out
    finally:
        env.close()


def test_noisy_observations_are_seeded_per_env_and_exact_beside():
    noise = {IMU: {"angular_velocity": {"constantBias": 0.5, "gaussianStd": 0.01}}}
    one, many = _noisy_run(1, 1, noise), _noisy_run(16, 2, noise)
    for a, b in zip(one, many, strict=True):
        for key in a:  # env 0 reads the same whatever N and the threads
            assert np.array_equal(a[key][0], b[key][0])
        noisy, exact = b[f"{IMU}.angular_velocity"], b[f"{IMU}.angular_velocity.exact"]
        error = noisy - exact - 0.5
        assert np.abs(error).max() < 0.06 and 0.003 < error.std() < 0.02
        assert not np.array_equal(noisy[0], noisy[1])  # (each env its own stream)
    # no noise on a channel not configured; the same seed replays the same noise
    again = _noisy_run(16, 1, noise)
    for a, b in zip(many, again, strict=True):
        for key in a:
            assert np.array_equal(a[key], b[key])
    exact = _noisy_run(1, 1, None)
    assert np.array_equal(exact[3][f"{IMU}.linear_acceleration"],
                          one[3][f"{IMU}.linear_acceleration"])  # fmt: skip
    with pytest.raises(SimrtError, match="gaussianStd"):
        _noisy_run(1, 1, {IMU: {"angular_velocity": {"gaussianStd": -1.0}}})


def test_lab_sensors_do_not_change_the_trajectory():
    """The lab IMU's mj_forward before its update leaves the physics as it was."""
    scene = str(REPO / "scenes" / "go2_lab_sensors.usda")
    runs = []
    for lab in (True, False):
        env = SimVectorEnv(scene, 2, decimation=2, lab_sensors=lab, observations=["*"])
        try:
            assert env._forward == lab and bool(env.lab) == lab
            env.reset(seed=3)
            base = env.worlds.initial_targets()
            rows = []
            for k in range(10):
                observations, *_ = env.step(_actions(base, np.arange(2), k))
                rows.append({k: v for k, v in observations.items() if ":" not in k})
            runs.append(rows)
            if lab:
                assert np.isfinite(observations["/World/LabSensors/BaseImu:lin_acc_b"]).all()
        finally:
            env.close()
    _same(runs[0], runs[1])


def test_velocity_actions_drive_velocity_drives(tmp_path):
    """A velocity drive (stiffness 0) follows velocity targets; MuJoCo stepped bare agrees."""
    text = (REPO / "scenes" / "simple_arm.usda").read_text()
    text = text.replace("float drive:angular:physics:stiffness = 5",
                        "float drive:angular:physics:stiffness = 0")  # fmt: skip
    scene = tmp_path / "velocity_arm.usda"
    scene.write_text(text)
    env = SimVectorEnv(str(scene), 2, action="joint_velocity", decimation=2)
    try:
        assert env.worlds.action_mode == "velocity" and env.actions.size >= 1
        with pytest.raises(SimrtError, match="without a position drive"):
            SimVectorEnv(str(scene), 1, action="joint_position", actuated=env.actions.names)
        env.reset(seed=0)
        model = env.model
        bare = mujoco.MjData(model)
        engine = env.worlds.engines[1]
        bare.qpos[:] = engine.data.qpos
        bare.ctrl[:] = engine.data.ctrl
        mujoco.mj_forward(model, bare)
        dofs = engine.dofs
        for k in range(10):
            speeds = np.full((2, env.actions.size), 0.5 * np.cos(0.3 * k))
            observations, *_ = env.step(speeds)
            bare.ctrl[env.worlds.act_index] = speeds[1]
            for _ in range(2):
                mujoco.mj_step(model, bare)
            expected = np.array([b.sign * bare.qpos[b.qpos_adr] for b in dofs])
            assert np.array_equal(observations["joint_pos"][1], expected)
    finally:
        env.close()


def test_lab_observations_compiled_equal_general():
    """mj_forward after the last step: inside the compiled call or in Python, same readings."""
    scene = str(REPO / "scenes" / "go2_lab_sensors.usda")
    runs = []
    for compiled in (True, False):
        env = SimVectorEnv(scene, 3, decimation=2, threads=2, compiled=compiled,
                           observations=["*"])  # fmt: skip
        try:
            assert env.worlds.forward_after_step
            env.reset(seed=8)
            base = env.worlds.initial_targets()
            rows = []
            for k in range(8):
                observations, *_ = env.step(_actions(base, np.arange(3), k))
                rows.append({k: v.copy() for k, v in observations.items()})
            runs.append(rows)
            assert bool(env.worlds._table[:, 18].all()) == compiled
        finally:
            env.close()
    _same(runs[0], runs[1])
