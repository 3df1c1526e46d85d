"""Kinematics benchmark: simrt FK / FK+Jacobian / IK next to Pinocchio and ikpy, same run.

Usage::

    python benchmarks/kinematics.py [--configs 1000] [--targets 1000] [--ikpy-targets 200]

For each robot (converted USD in ``tests/assets/robots``; the peers load the original URDF)
and the same random in-limit configurations: per-configuration FK and FK+Jacobian time of
simrt (single call through the Python API, single kernel call, batched kernel) next to
Pinocchio's per-call time (``forwardKinematics`` + ``updateFramePlacement``;
``computeFrameJacobian``), and the agreement with Pinocchio. For the Panda: IK success rate
(position error < 1e-4 m and rotation error < 1e-3 rad, measured with Pinocchio) and median
solve time for cold starts, near seeds and batched solves, next to ikpy. Also the first-call
time of the kernels with an empty Numba cache (compile; and with the install's kernel seeds,
which load instead), with a warm on-disk cache (load),
and in-process steady state.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pxr import Usd  # noqa: E402

import runtime.schema  # noqa: E402,F401
from runtime.kinematics import _kernels as K  # noqa: E402
from runtime.kinematics.chain import KinematicChain  # noqa: E402
from runtime.kinematics.ik import ik_lm_batch, ik_lm_with_error  # noqa: E402
from runtime.kinematics.math import Transform  # noqa: E402
from runtime.kinematics.poser import RobotPoser  # noqa: E402
from tests.helpers import reference_kinematics as ref  # noqa: E402

CASES = {
    "panda": ("panda_link0", "panda_hand"),
    "ur5": ("base_link", "ee_link"),
    "solo12": ("base_link", "FL_FOOT"),
}


def _out(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _per_call(fn, count: int, repeat: int = 7) -> float:
    """Best-of-``repeat`` mean seconds per call of ``fn(i)`` over ``count`` calls."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for i in range(count):
            fn(i)
        best = min(best, (time.perf_counter() - t0) / count)
    return best


def _best(fn, repeat: int = 30) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def load(name: str):
    import pinocchio as pin

    usd, robot_path, _ = ref.ROBOTS[name]
    stage = Usd.Stage.Open(os.path.join(ref.ASSETS, usd))
    robot = stage.GetPrimAtPath(robot_path)
    start, end = (next(p for p in Usd.PrimRange(robot) if p.GetName() == n) for n in CASES[name])
    chain = KinematicChain(stage, robot, start, end)
    model, data = ref.pin_model(name)
    names = [p.rsplit("/", 1)[-1] for p in chain.joint_paths]
    return pin, chain, model, data, names


def bench_fk(name: str, count: int) -> float:
    pin, chain, model, data, names = load(name)
    n = len(chain.joints)
    rng = np.random.default_rng(0)
    qs = np.ascontiguousarray(rng.uniform(chain.lower, chain.upper, size=(count, n)))
    pqs = [ref.pin_q(model, names, q) for q in qs]
    fid = model.getFrameId(CASES[name][1])
    arrays = chain.kernel_arrays
    pos, quat = np.empty(3), np.empty(4)
    jac = np.empty((6, n))
    bpos, bquat = np.empty((count, 3)), np.empty((count, 4))
    bjac = np.empty((count, 6, n))
    chain.fk(qs[0])
    chain.fk_batch(qs[:2])
    chain.fk_jacobian_batch(qs[:2])
    K.chain_fk_jacobian_kernel(*arrays, qs[0], pos, quat, jac)

    t_pin_fk = _per_call(
        lambda i: (
            pin.forwardKinematics(model, data, pqs[i]),
            pin.updateFramePlacement(model, data, fid),
        ),
        count,
    )
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    t_pin_j = _per_call(
        lambda i: (
            pin.computeFrameJacobian(model, data, pqs[i], fid, lwa),
            pin.updateFramePlacement(model, data, fid),
        ),
        count,
    )
    t_api = _per_call(lambda i: chain.fk(qs[i]), count)
    t_kernel = _per_call(lambda i: K.chain_fk_kernel(*arrays, qs[i], pos, quat), count)
    t_batch = _best(lambda: K.chain_fk_batch_kernel(*arrays, qs, bpos, bquat)) / count
    chain.fk_and_jacobian(qs[0])  # (binds the native call)
    t_j_api = _per_call(lambda i: chain.fk_and_jacobian(qs[i]), count)
    t_j_transform = _per_call(
        lambda i: chain.compute_fk_and_jacobian(qs[i], jacobian="point"), count
    )
    t_j_kernel = _per_call(
        lambda i: K.chain_fk_jacobian_kernel(*arrays, qs[i], pos, quat, jac), count
    )
    t_j_batch = (
        _best(lambda: K.chain_fk_jacobian_batch_kernel(*arrays, qs, bpos, bquat, bjac)) / count
    )
    # agreement with Pinocchio (chain-local frame = start link)
    sid = model.getFrameId(CASES[name][0])
    worst_p = worst_r = 0.0
    for i in range(count):
        pin.framesForwardKinematics(model, data, pqs[i])
        rel = data.oMf[sid].inverse() * data.oMf[fid]
        worst_p = max(worst_p, float(np.abs(bpos[i] - rel.translation).max()))
        worst_r = max(worst_r, float(ref.quat_angle(bquat[i], ref.wxyz_from_matrix(rel.rotation))))
    us = 1e6
    _out(
        f"{name:7s} n={n}  configs={count}  max |Δp| vs Pinocchio {worst_p:.1e} m, "
        f"max Δθ {worst_r:.1e} rad"
    )
    _out(
        f"  FK     pinocchio {t_pin_fk * us:7.3f} us/call | simrt API {t_api * us:7.3f}  "
        f"kernel {t_kernel * us:7.3f}  batched {t_batch * us:7.3f} us/config  "
        f"→ batched is {t_pin_fk / t_batch:5.1f}x faster than Pinocchio per config"
    )
    _out(
        f"  FK+J   pinocchio {t_pin_j * us:7.3f} us/call | simrt API {t_j_api * us:7.3f}  "
        f"kernel {t_j_kernel * us:7.3f}  batched {t_j_batch * us:7.3f} us/config  "
        f"→ batched is {t_pin_j / t_j_batch:5.1f}x faster than Pinocchio per config"
    )
    _out(
        f"         API ratios to Pinocchio: fk {t_api / t_pin_fk:.2f}x, fk_and_jacobian "
        f"{t_j_api / t_pin_j:.2f}x (compute_fk_and_jacobian, a Transform: "
        f"{t_j_transform * us:.3f} us, {t_j_transform / t_pin_j:.2f}x)"
    )
    # all links of the tree (body-pose reporting): compute_link_poses vs framesForwardKinematics
    tree = KinematicChain(chain.stage, chain.robot_prim)
    order = tree.tree_joint_paths()
    tree_names = [p.rsplit("/", 1)[-1] for p in order]
    tqs = np.ascontiguousarray(rng.uniform(-1.0, 1.0, size=(count, len(order))))
    tpq = [ref.pin_q(model, tree_names, q) for q in tqs]
    tree.compute_link_poses(tqs[:2])
    t_pin_tree = _per_call(lambda i: pin.framesForwardKinematics(model, data, tpq[i]), count)
    t_tree = _best(lambda: tree.compute_link_poses(tqs)) / count
    _out(
        f"  links  pinocchio framesForwardKinematics {t_pin_tree * us:7.3f} us/call | simrt "
        f"compute_link_poses batched {t_tree * us:7.3f} us/config ({len(tree.link_paths)} links)"
        f"  → {t_pin_tree / t_tree:5.1f}x"
    )
    return t_batch


def _pinocchio_lm(pin, model, data, fid, q, target, iters=30, tol=1e-6, damping=1e-6):
    """The peer's IK: damped least squares on Pinocchio's frame Jacobian and log6 error.

    Per iteration the calls a Pinocchio user makes: forward kinematics, the frame placement,
    the SE(3) error, the frame Jacobian, one damped solve, ``integrate``.
    """
    for it in range(1, iters + 1):
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacement(model, data, fid)
        to_target = data.oMf[fid].actInv(target)  # the target in the current end frame
        err = pin.log6(to_target).vector
        if err.dot(err) < tol * tol:
            return q, it - 1
        jac = pin.computeFrameJacobian(model, data, q, fid)  # local frame
        jac = -pin.Jlog6(to_target.inverse()) @ jac
        step = -jac.T @ np.linalg.solve(jac @ jac.T + damping * np.eye(6), err)
        q = pin.integrate(model, q, step)
    return q, iters


def _ik_per_iteration(pin, chain, model, data, names, targets, near, success) -> None:
    """Near-seed IK per LM iteration: simrt's single calls against a Pinocchio loop."""
    fid = model.getFrameId("panda_hand")
    count = min(100, len(targets))
    ours, iterations, sols = [], [], []
    for i in range(count):
        T = Transform(targets[i][0], targets[i][1])
        seed = np.ascontiguousarray(near[i])
        ik_lm_with_error(chain, seed, T)
        t0 = time.perf_counter()
        q, _ = ik_lm_with_error(chain, seed, T)
        ours.append(time.perf_counter() - t0)
        sols.append(q)
        for k in range(31):  # the iterations it took: the fewest that give the same result
            if np.array_equal(ik_lm_with_error(chain, seed, T, iters=k)[0], q):
                iterations.append(max(k, 1))
                break
    ok = success(np.array(sols))
    peer, peer_iterations, peer_sols = [], [], []
    for i in range(count):
        target = pin.SE3(targets[i][2])
        q0 = ref.pin_q(model, names, near[i])
        t0 = time.perf_counter()
        q, used = _pinocchio_lm(pin, model, data, fid, q0, target)
        peer.append(time.perf_counter() - t0)
        peer_iterations.append(max(used, 1))
        peer_sols.append([q[model.joints[model.getJointId(n)].idx_q] for n in names])
    peer_ok = success(np.array(peer_sols))
    per_ours = float(np.median(np.array(ours) / np.array(iterations)))
    per_peer = float(np.median(np.array(peer) / np.array(peer_iterations)))
    _out(
        f"  per LM iteration, near seed ({count} targets): simrt ik_lm {per_ours * 1e6:6.2f} us "
        f"({np.mean(iterations):.1f} iterations, success {ok.mean() * 100:.0f} %) | Pinocchio "
        f"loop {per_peer * 1e6:6.2f} us ({np.mean(peer_iterations):.1f} iterations, success "
        f"{peer_ok.mean() * 100:.0f} %)  -> {per_ours / per_peer:.2f}x"
    )


def _ikpy_chain():
    from ikpy.chain import Chain

    urdf = os.path.join(ref.erd_root(), ref.ROBOTS["panda"][2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = Chain.from_urdf_file(urdf, base_elements=["panda_link0"])
        # drop the trailing panda_hand_tcp_joint so the end frame is panda_hand, as ours
        return Chain(
            full.links[:-1], active_links_mask=[False] + [True] * 7 + [False, False], name="panda"
        )


def bench_ik(n_targets: int, n_ikpy: int) -> None:
    pin, chain, model, data, names = load("panda")
    poser = RobotPoser(chain.stage, chain.robot_prim, chain.start_prim, chain.end_prim)
    chain = poser.chain
    rng = np.random.default_rng(7)
    qs = rng.uniform(chain.lower, chain.upper, size=(n_targets, 7))
    fid = model.getFrameId("panda_hand")
    targets = []
    for q in qs:
        m = ref.pin_frame_pose(model, data, ref.pin_q(model, names, q), "panda_hand")
        targets.append((m.translation.copy(), ref.wxyz_from_matrix(m.rotation), m.homogeneous))
    tpos = np.array([t[0] for t in targets])
    tquat = np.array([t[1] for t in targets])
    near = np.clip(qs + rng.normal(0.0, 0.05, qs.shape), chain.lower, chain.upper)

    def success(sol):
        ok = np.empty(len(sol), dtype=bool)
        for i, q in enumerate(sol):
            pin.framesForwardKinematics(model, data, ref.pin_q(model, names, q))
            m = data.oMf[fid]
            ok[i] = (
                np.linalg.norm(m.translation - targets[i][0]) < 1e-4
                and ref.quat_angle(ref.wxyz_from_matrix(m.rotation), targets[i][1]) < 1e-3
            )
        return ok

    # simrt: cold start through the poser (spec ladder + extended ladder), one target per call
    times, sols = [], []
    for tp, tq, _ in targets:
        poser.set_seed(None)
        t0 = time.perf_counter()
        result = poser.solve_ik(Transform(tp, tq))
        times.append(time.perf_counter() - t0)
        sols.append([result.joints[p] for p in chain.joint_paths])
    cold_ok = success(np.array(sols))
    cold_med = float(np.median(times))
    # simrt: spec ladder only (reference behaviour, 5 seeds)
    poser_ref = RobotPoser(
        chain.stage, chain.robot_prim, chain.start_prim, chain.end_prim, extended_restarts=0
    )
    sols = []
    for tp, tq, _ in targets:
        poser_ref.set_seed(None)
        result = poser_ref.solve_ik(Transform(tp, tq))
        sols.append([result.joints[p] for p in chain.joint_paths])
    ladder_ok = success(np.array(sols))
    # simrt: near seed (tracking), single call
    times, sols = [], []
    for i, (tp, tq, _) in enumerate(targets):
        T = Transform(tp, tq)
        t0 = time.perf_counter()
        q, _ = ik_lm_with_error(chain, near[i], T)
        times.append(time.perf_counter() - t0)
        sols.append(q)
    near_ok = success(np.array(sols))
    near_med = float(np.median(times))
    times = []
    for i, (tp, tq, _) in enumerate(targets):
        t0 = time.perf_counter()
        poser.solve_ik(Transform(tp, tq), seed=near[i])
        times.append(time.perf_counter() - t0)
    near_poser_med = float(np.median(times))
    # simrt: tracking a moving target with the poser's cached solution (no seed=): a smooth
    # joint-space trajectory (limit midpoint ± 40 % of the range, 1000 steps), targets by
    # Pinocchio FK; each solve starts from the previous solution
    steps = np.linspace(0.0, 2.0 * np.pi, n_targets)[:, None]
    phase = np.random.default_rng(3).uniform(0.0, 2.0 * np.pi, 7)
    mid, half = 0.5 * (chain.lower + chain.upper), 0.5 * (chain.upper - chain.lower)
    track_q = mid + 0.4 * half * np.sin(steps * np.arange(1, 8) * 0.5 + phase)
    track = []
    for q in track_q:
        m = ref.pin_frame_pose(model, data, ref.pin_q(model, names, q), "panda_hand")
        track.append((m.translation.copy(), ref.wxyz_from_matrix(m.rotation)))
    poser.set_seed(track_q[0])
    times, sols = [], []
    for tp, tq in track:
        t0 = time.perf_counter()
        result = poser.solve_ik(Transform(tp, tq))
        times.append(time.perf_counter() - t0)
        sols.append([result.joints[p] for p in chain.joint_paths])
    saved = list(targets)
    targets[:] = [(tp, tq, None) for tp, tq in track]
    track_ok = success(np.array(sols))
    targets[:] = saved
    track_med = float(np.median(times))
    # simrt batched
    ik_lm_batch(chain, tpos[:2], tquat[:2], near[:2])
    t_batch = _best(lambda: ik_lm_batch(chain, tpos, tquat, near), 3)
    q_b, _, _ = ik_lm_batch(chain, tpos, tquat, near)
    batch_ok = success(q_b)
    t0 = time.perf_counter()
    q_c, _ = poser.solve_ik_batch(tpos, tquat)
    t_cold_batch = time.perf_counter() - t0
    cold_batch_ok = success(q_c)

    _out(
        f"IK panda, {n_targets} reachable targets (FK of random in-limit configurations); "
        "success = |Δp| < 1e-4 m and Δθ < 1e-3 rad, checked with Pinocchio"
    )
    _out(
        f"  simrt cold start (spec ladder + extended)  success {cold_ok.mean() * 100:6.2f} %  "
        f"median {cold_med * 1e6:9.1f} us"
    )
    _out(f"  simrt cold start (spec ladder only)         success {ladder_ok.mean() * 100:6.2f} %")
    _out(
        f"  simrt tracking (RobotPoser cached seed)    success {track_ok.mean() * 100:6.2f} %  "
        f"median {track_med * 1e6:9.1f} us"
    )
    _out(
        f"  simrt near seed ik_lm (single call)        success {near_ok.mean() * 100:6.2f} %  "
        f"median {near_med * 1e6:9.1f} us  (RobotPoser.solve_ik(seed=): "
        f"{near_poser_med * 1e6:.1f} us)"
    )
    _out(
        f"  simrt near seed batched                    success {batch_ok.mean() * 100:6.2f} %  "
        f"{n_targets / t_batch:9.0f} solves/s ({t_batch / n_targets * 1e6:.1f} us/solve)"
    )
    _out(
        f"  simrt cold start batched                   success "
        f"{cold_batch_ok.mean() * 100:6.2f} %  {n_targets / t_cold_batch:9.0f} solves/s"
    )

    _ik_per_iteration(pin, chain, model, data, names, targets, near, success)

    try:
        ik_chain = _ikpy_chain()
    except Exception as exc:  # noqa: BLE001 - optional peer
        _out(f"  ikpy unavailable: {exc}")
        return
    count = min(n_ikpy, n_targets)
    for label, seeds in (("zeros", np.zeros_like(qs)), ("near seed", near)):
        times, sols = [], []
        for i in range(count):
            init = np.zeros(len(ik_chain.links))
            init[1:8] = seeds[i]
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = ik_chain.inverse_kinematics_frame(
                    targets[i][2], initial_position=init, orientation_mode="all"
                )
            times.append(time.perf_counter() - t0)
            sols.append(s[1:8])
        ok = success(np.array(sols))
        _out(
            f"  ikpy  from {label:9s} ({count} targets)       success {ok.mean() * 100:6.2f} %  "
            f"median {np.median(times) * 1e6:9.1f} us"
        )


_COMPILE_SNIPPET = r"""
import time, numpy as np, sys
sys.path.insert(0, sys.argv[1])
import runtime.schema
from tests.helpers.kinematics import build_hand_stage
from runtime.kinematics.chain import KinematicChain
from runtime.kinematics import _kernels as K
from runtime.kinematics.ik import ik_lm_with_error
from runtime.kinematics.math import Transform
st = build_hand_stage()
ch = KinematicChain(st, st.GetPrimAtPath("/World/Robot"), st.GetPrimAtPath("/World/Robot/base"),
                    st.GetPrimAtPath("/World/Robot/l5/tool"))
q = np.array([0.1, 0.2, 0.1, 0.3])
out = []
for label, fn in (("chain_fk", lambda: ch.fk(q)), ("chain_fk_batch", lambda: ch.fk_batch(q[None])),
                  ("chain_fk_jacobian", lambda: ch.compute_fk_and_jacobian(q)),
                  ("chain_fk_jacobian_batch", lambda: ch.fk_jacobian_batch(q[None])),
                  ("ik_lm", lambda: ik_lm_with_error(ch, q, Transform(*ch.fk(q))))):
    t0 = time.perf_counter(); fn(); t1 = time.perf_counter(); fn(); t2 = time.perf_counter()
    out.append(f"{label}:{t1 - t0:.6f}:{t2 - t1:.6f}")
print(";".join(out))
"""


def _first_calls(env: dict[str, str]) -> dict[str, tuple[float, float]]:
    proc = subprocess.run(
        [sys.executable, "-c", _COMPILE_SNIPPET, ROOT],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return dict(
        (p.split(":")[0], (float(p.split(":")[1]), float(p.split(":")[2])))
        for p in proc.stdout.strip().splitlines()[-1].split(";")
    )


def bench_compile() -> None:
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as seeded:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, SIMRT_SEEDS="0")
        compiled = _first_calls(env)  # empty cache, no seeds: Numba compiles
        loaded = _first_calls(env)  # the cache it filled
        planted = _first_calls(dict(os.environ, NUMBA_CACHE_DIR=seeded, SIMRT_SEEDS="1"))
    _out(
        "First call per API entry point (fresh process; the first row also pays the numba "
        "import): empty Numba cache, compiled (SIMRT_SEEDS=0) | empty cache, the install's "
        "kernel seeds | warm on-disk cache | second call"
    )
    for label in compiled:
        _out(
            f"  {label:24s} {compiled[label][0] * 1e3:9.1f} ms | {planted[label][0] * 1e3:7.1f} ms"
            f" | {loaded[label][0] * 1e3:7.1f} ms | {loaded[label][1] * 1e6:7.1f} us"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", type=int, default=1000)
    parser.add_argument("--targets", type=int, default=1000)
    parser.add_argument("--ikpy-targets", type=int, default=200)
    parser.add_argument("--skip-compile", action="store_true")
    args = parser.parse_args()
    # failed cold starts are counted below; their per-call warnings would flood the output
    logging.getLogger("runtime.kinematics.poser").setLevel(logging.ERROR)
    _out(
        "simrt kinematics benchmark (single core; per-call times are best-of-7 means, "
        "batched best-of-30, IK medians)"
    )
    for name in CASES:
        bench_fk(name, args.configs)
    bench_ik(args.targets, args.ikpy_targets)
    if not args.skip_compile:
        bench_compile()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
