"""Environments against their peers, measured in one run on the same model.

* ``vector``: ``SimVectorEnv.step`` (every sensor of the scene on, observations built)
  against ``mujoco.rollout.Rollout`` (MuJoCo's persistent thread pool, GIL released, raw
  physics: no sensors) stepping the same model, the same N, the same threads, the same
  controls from the same initial state; the peer gets its best call: one rollout of every
  step (``nstep`` = all) and, as an RL loop would call it, one rollout per env step
  (``nstep`` = decimation) continuing from the last state. Physics steps per second.
* ``single``: ``SimEnv.step`` (joint targets, every sensor into the observation) against
  a bare Python loop (``data.ctrl[:] = a``, ``decimation`` x ``mujoco.mj_step``).
* ``scaling``: the vector env with 1 and 2 threads.

With ``all`` on go2, the go2 scene with its Isaac Lab-style sensors (contacts, IMU, height
scan) too: its IMU reads the post-step accelerations (an ``mj_forward`` after each env
step), printed with the next step's reuse of that forward off (before) and on, with
constant actions and with actions changing every env step.

Run: ``python benchmarks/envs.py [vector|single|scaling|all] [--scene go2|panda] [--envs 64]``.
Compile time is kept apart (the first steps are not timed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import runtime.schema  # noqa: E402,F401

SCENES = {
    "go2": "go2_standing.usda",
    "go2-lab": "go2_lab_sensors.usda",  # (+ Isaac Lab-style contacts, IMU, height scan)
    "panda": "panda_table.usda",
    "arm": "simple_arm.usda",
}


def _vector_env(scene, n, threads, decimation, action="joint_position"):
    from runtime.envs import SimVectorEnv

    options = {}
    if action == "ee_pose":
        options["ik_link"] = "panda_hand"
    return SimVectorEnv(
        str(REPO / "scenes" / SCENES[scene]), n, decimation=decimation, threads=threads,
        observations=None, action=action, **options,
    )  # fmt: skip


def _actions_for(env, n):
    if env.actions.action == "ee_pose":
        worlds = env.worlds
        chain = env.actions.chain
        q = worlds.joint_positions()[:, env.actions.ik_dofs]
        position, quat = chain.fk(np.ascontiguousarray(q[0]))
        s = env.actions
        world_position = s.start_rotation @ position + s.start_translation
        from runtime.kinematics.math import quat_multiply

        world_quat = quat_multiply(s.start_orientation, quat)
        pose = np.concatenate([world_position + [0.0, 0.0, -0.05], world_quat])
        return np.tile(pose, (n, 1))
    return np.tile(env.worlds.initial_targets(), (n, 1))


def vector(
    scene, n, threads, decimation, steps, repeats, action="joint_position", reuse=None, vary=False
):
    """``reuse``: True / False builds the env with the post-step forward's reuse on / off
    (:mod:`runtime.engine.forward_reuse`; None: as configured). ``vary``: the actions
    change every env step (a small wave on the targets: the controls change, so the
    reusing step recomputes the acceleration stage)."""
    from runtime.engine.forward_reuse import ForwardReuse

    configured = ForwardReuse.ENABLED
    if reuse is not None:  # (read when the worlds bind their compiled step, and per forward)
        ForwardReuse.ENABLED = bool(reuse)
    try:
        return _vector(scene, n, threads, decimation, steps, repeats, action, reuse, vary)
    finally:
        ForwardReuse.ENABLED = configured


def _vector(scene, n, threads, decimation, steps, repeats, action, reuse, vary):
    import mujoco
    from mujoco import rollout

    env = _vector_env(scene, n, threads, decimation, action)
    try:
        env.reset(seed=0)
        actions = _actions_for(env, n)
        waves = [actions]
        if vary:
            columns = np.arange(actions.shape[1])
            waves = [
                np.ascontiguousarray(actions + 0.01 * np.sin(0.5 * k + columns)) for k in range(8)
            ]
        for _ in range(3):  # (compiled kernels loaded, every world on the compiled path)
            env.step(actions)
        model = env.model
        first = env.worlds.engines[0]
        init = mujoco.MjData(model)
        init.qpos[:] = first.built.initial_qpos
        if first.built.initial_ctrl is not None:
            init.ctrl[:] = first.built.initial_ctrl
        init.ctrl[env.worlds.act_index] = env.worlds.targets[0, env.worlds.action_dof_index]
        mujoco.mj_forward(model, init)
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        state0 = np.zeros((n, mujoco.mj_stateSize(model, spec)))
        for e in range(n):
            mujoco.mj_getState(model, init, state0[e], spec)
        total = steps * decimation
        control = np.tile(init.ctrl, (n, total, 1))
        short = np.ascontiguousarray(control[:, :decimation])
        datas = [mujoco.MjData(model) for _ in range(threads)]
        ours, long_peer, short_peer = [], [], []
        with rollout.Rollout(nthread=threads) as pool:
            pool.rollout([model] * n, datas, state0, short, nstep=decimation)  # (warm-up)
            for _ in range(repeats):
                env.reset(seed=0)
                env.step(actions)  # (the reset's first step: general path, not timed)
                began = time.perf_counter()
                for k in range(steps):
                    env.step(waves[k % len(waves)])
                ours.append(steps * decimation * n / (time.perf_counter() - began))
                began = time.perf_counter()
                pool.rollout([model] * n, datas, state0, control, nstep=total)
                long_peer.append(total * n / (time.perf_counter() - began))
                state = state0
                began = time.perf_counter()
                for _ in range(steps):
                    states, _ = pool.rollout([model] * n, datas, state, short, nstep=decimation)
                    state = np.ascontiguousarray(states[:, -1])
                short_peer.append(total * n / (time.perf_counter() - began))
    finally:
        env.close()
    best = max(ours)
    label = "" if reuse is None else (" forward reuse on" if reuse else " forward reuse off")
    label += ", actions varying" if vary else ""
    print(
        f"vector {scene}{label} N={n} threads={threads} decimation={decimation} action={action}: "
        f"SimVectorEnv {best:,.0f} physics steps/s; mujoco.rollout one call "
        f"{max(long_peer):,.0f} ({best / max(long_peer):.2f}x), per env step "
        f"{max(short_peer):,.0f} ({best / max(short_peer):.2f}x)"
    )
    return best


def single(scene, decimation, steps, repeats):
    import mujoco

    from runtime.envs import SimEnv

    env = SimEnv(str(REPO / "scenes" / SCENES[scene]), decimation=decimation, observations=None)
    try:
        env.reset(seed=0)
        action = np.ascontiguousarray(env.vector.worlds.initial_targets())
        for _ in range(3):
            env.step(action)
        model = env.model
        data = mujoco.MjData(model)
        first = env.vector.worlds.engines[0]
        data.qpos[:] = first.built.initial_qpos
        if first.built.initial_ctrl is not None:
            data.ctrl[:] = first.built.initial_ctrl
        act = env.vector.worlds.act_index
        ours, peer = [], []
        for _ in range(repeats):
            env.reset(seed=0)
            env.step(action)
            began = time.perf_counter()
            for _ in range(steps):
                env.step(action)
            ours.append((time.perf_counter() - began) / (steps * decimation))
            mujoco.mj_resetData(model, data)
            data.qpos[:] = first.built.initial_qpos
            began = time.perf_counter()
            for _ in range(steps):
                data.ctrl[act] = action
                for _ in range(decimation):
                    mujoco.mj_step(model, data)
            peer.append((time.perf_counter() - began) / (steps * decimation))
    finally:
        env.close()
    a, b = min(ours) * 1e6, min(peer) * 1e6
    print(
        f"single {scene} decimation={decimation}: SimEnv.step {a:.1f} us per physics step, "
        f"bare Python mj_step loop {b:.1f} us: {a / b:.2f}x"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "what", nargs="?", default="all", choices=["vector", "single", "scaling", "all"]
    )
    parser.add_argument("--scene", default="go2", choices=sorted(SCENES))
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--decimation", type=int, default=4)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--action", default="joint_position")
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores: above ~1 the peers share a core)")
    if args.what in ("vector", "all"):
        vector(args.scene, args.envs, args.threads, args.decimation, args.steps, args.repeats,
               args.action)  # fmt: skip
        if args.what == "all" and args.scene == "go2":
            # the lab IMU's post-step forward: the next step reusing it, and before (off)
            for vary in (False, True):
                for reuse in (False, True):
                    vector("go2-lab", args.envs, args.threads, args.decimation, args.steps,
                           args.repeats, reuse=reuse, vary=vary)  # fmt: skip
                    print(f"  (load average {os.getloadavg()[0]:.2f})")
            vector("panda", args.envs, args.threads, 10, args.steps // 4, args.repeats, "ee_pose")
    if args.what in ("single", "all"):
        single(args.scene, 1, args.steps * 10, args.repeats)
        single(args.scene, args.decimation, args.steps * 3, args.repeats)
    if args.what in ("scaling", "all"):
        one = vector(args.scene, args.envs, 1, args.decimation, args.steps, args.repeats)
        two = vector(args.scene, args.envs, 2, args.decimation, args.steps, args.repeats)
        print(f"scaling {args.scene} N={args.envs}: 1 -> 2 threads {two / one:.2f}x")


if __name__ == "__main__":
    main()
