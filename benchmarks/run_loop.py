"""The whole `simrt run` loop against a bare `mj_step` loop, and cold / warm start times.

    python benchmarks/run_loop.py loop [--long N --short 200] [--repeats 3]
    python benchmarks/run_loop.py start [--repeats 2] [--peer]

``loop``: for the Panda scene and simple_arm, in one process: the whole loop
(``run_scene``: physics, state, every sensor, recording to a store on disk, IK every
``ik_every`` steps from the scene's settings) measured from outside as the wall-time
difference of a ``--long`` (default: Panda 4,200 steps, simple_arm 40,200, so that both
take a few tenths of a second) and a ``--short`` run (start-up cancels; each length's best
of ``--repeats``), per step. The peer is a bare ``mujoco.mj_step`` loop on the same
compiled model (the engine's ``MjModel``) over the same steps, from the run's initial state
with the run's controls (recorded by one untimed run; written only at the steps where they
change), so that it does the run's physics: its final ``qpos`` is compared with the run's.
Interleaved with the runs, best of ``--repeats``. Acceptance (issue 12): Panda <= 1.5x,
simple_arm <= 2x.

``loop --cli``: the same difference of whole ``simrt run`` processes (imports, start-up,
summary and the store's close included), against the same peer.

``start``: fresh subprocesses of ``simrt run``: cold (empty Numba cache, scene cache and
bytecode cache; 2,000 Panda steps; acceptance <= 10 s) and warm (the caches filled; 200
Panda steps, three processes per repeat; acceptance <= 1.0 s), process wall time, with the
CPU time (worker processes included: what a busy machine does not distort). The cold run
is a fresh install's first run: it loads the kernels the package build compiled
(``runtime/_compile/kernel_seeds``). Also
measured, interleaved: the cold run without them (``SIMRT_SEEDS=0``: the kernels compile
at first run, in parallel processes, as on a CPU the build did not compile for). ``--peer``
adds that run with its kernels compiled in one process (``SIMRT_PRECOMPILE=0``).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCENES = {
    "panda": REPO / "scenes" / "panda_table.usda",
    "simple_arm": REPO / "scenes" / "simple_arm.usda",
}
LIMITS = {"panda": 1.5, "simple_arm": 2.0}
LONG = {"panda": 4200, "simple_arm": 40200}  # steps of the long run
# the run's own timing parts (``compiled``: blocks of whole steps, physics included)
_PARTS = ("physics", "state", "sensors", "readings", "record", "ik", "fused", "compiled")


def _control_trace(scene: Path, steps: int) -> tuple[Any, Any]:
    """The run's ``ctrl`` at every step and its final ``qpos`` (one untimed run).

    ``on_step`` sees the ``ctrl`` the step was taken with (the IK driver sets the next one
    before the next step).
    """
    import numpy as np

    from runtime.run.loop import run_scene

    ctrls, last = [], {}

    def on_step(step: int, engine: Any, _sensors: Any, _state: Any) -> None:
        ctrls.append(engine.data.ctrl.copy())
        last["qpos"] = engine.data.qpos.copy()

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trace.zarr"
        run_scene(str(scene), steps=steps, out=out, on_step=on_step, summary=False)
    return np.array(ctrls), last["qpos"]


def _peer(scene: Path, controls: Any, short: int) -> tuple[float, Any]:
    """The bare ``mj_step`` loop on the run's model, from the run's initial state, with the
    run's controls: seconds per step over steps ``short ..`` and the final ``qpos``."""
    import mujoco
    from pxr import Usd

    import runtime.schema  # noqa: F401
    from runtime.run.build import build_engine, open_scene_cache

    stage = Usd.Stage.Open(str(scene))
    engine = build_engine(
        stage, open_scene_cache(stage, None, True), robot_prim=None, dt=None,
        compute_accelerations=False,
    )  # fmt: skip
    model, data = engine.model, engine.data  # the initial state (qpos, qvel, ctrl)
    # the peer writes ctrl only at the steps where it changes: its fastest loop
    changes = [i == 0 or bool((controls[i] != controls[i - 1]).any()) for i in range(len(controls))]
    ctrl, step = data.ctrl, mujoco.mj_step
    for i in range(short):
        if changes[i]:
            ctrl[:] = controls[i]
        step(model, data)
    began = time.perf_counter()
    for i in range(short, len(controls)):
        if changes[i]:
            ctrl[:] = controls[i]
        step(model, data)
    return (time.perf_counter() - began) / (len(controls) - short), data.qpos.copy()


def loop(args: argparse.Namespace) -> None:
    import numpy as np

    from runtime.run.loop import run_scene

    with tempfile.TemporaryDirectory() as tmp:
        for name, scene in SCENES.items():
            long = args.long or LONG[name]
            controls, final_qpos = _control_trace(scene, long)
            whole, bare = [], []
            for repeat in range(args.repeats):
                walls = {}
                for steps in (args.short, long):
                    out = Path(tmp) / f"{name}{repeat}_{steps}.zarr"
                    if args.cli:  # whole `simrt run` processes (imports, start, summary)
                        walls[steps] = _timed_run(dict(os.environ), steps, scene)[0]
                        continue
                    began = time.perf_counter()
                    result = run_scene(str(scene), steps=steps, out=out)
                    walls[steps] = time.perf_counter() - began
                whole.append((walls[args.short], walls[long]))
                per_step, qpos = _peer(scene, controls, args.short)
                bare.append(per_step)
            same = "same" if np.array_equal(qpos, final_qpos) else "DIFFERENT"
            # each run length's best wall time, then their difference: a difference per
            # repeat, then its minimum, would favour a repeat whose short run was slow
            short_wall = min(walls[0] for walls in whole)
            long_wall = min(walls[1] for walls in whole)
            w, b = (long_wall - short_wall) / (long - args.short), min(bare)
            verdict = "PASS" if w / b <= LIMITS[name] else "FAIL"
            print(
                f"{name:11s} whole loop {w * 1e6:8.1f} us/step   "
                f"bare mj_step {b * 1e6:6.1f} us/step   "
                f"ratio {w / b:6.2f} (limit {LIMITS[name]}): {verdict}"
            )
            print(f"{'':11s} the peer's trajectory: {same} final qpos as the run's")
            if args.cli:
                print(f"{'':11s} (the loop measured as `simrt run` processes)")
                continue
            print(
                f"{'':11s} the run's own breakdown (us/step): "
                + ", ".join(
                    f"{k} {v / max(1, result.steps - 1) * 1e6:.1f}"
                    for k, v in result.timings.items()
                    if k in _PARTS
                )
            )


def _timed_run(
    env: dict[str, str], steps: int, scene: Path = SCENES["panda"]
) -> tuple[float, float]:
    """Wall time and CPU time (user + system, worker processes included) of one run."""
    cmd = [sys.executable, "-m", "runtime.cli", "run", str(scene), "--steps", str(steps)]
    with tempfile.TemporaryDirectory() as tmp:
        cmd += ["--out", str(Path(tmp) / "run.zarr"), "--no-progress"]
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)
        wall = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime


def _caches_env(caches: str, precompile: bool, seeds: bool = True) -> dict[str, str]:
    env = dict(os.environ)
    env["SIMRT_SEEDS"] = "1" if seeds else "0"
    env["NUMBA_CACHE_DIR"] = str(Path(caches) / "numba")
    env["SIMRT_CACHE_DIR"] = str(Path(caches) / "scenes")
    # Python's bytecode cache is a cache too: empty when cold, filled when warm (an
    # installed package has it; PYTHONDONTWRITEBYTECODE recompiles every module each run)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(caches) / "pycache")
    env["SIMRT_PRECOMPILE"] = "1" if precompile else "0"
    return env


def start(args: argparse.Namespace) -> None:
    from runtime._compile.seeds import SEED_PATH

    if not Path(SEED_PATH).is_file():
        print(f"no kernel seeds at {SEED_PATH}: reinstall (pip install -e .) to build them")
    cold, warm, jit, serial = [], [], [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as caches:
            env = _caches_env(caches, precompile=True)
            cold.append(_timed_run(env, 2000))
            warm.extend(_timed_run(env, 200) for _ in range(3))  # (fresh processes each)
        with tempfile.TemporaryDirectory() as caches:  # compiled at first run, in parallel
            jit.append(_timed_run(_caches_env(caches, precompile=True, seeds=False), 2000))
        if args.peer:  # the same cold run compiling in one process, interleaved
            with tempfile.TemporaryDirectory() as caches:
                env = _caches_env(caches, precompile=False, seeds=False)
                serial.append(_timed_run(env, 2000))
    (c, c_cpu), (w, w_cpu), (j, j_cpu) = min(cold), min(warm), min(jit)
    print(
        f"cold start, 2000 Panda steps: {c:6.2f} s (CPU {c_cpu:6.2f} s; limit 10 s): "
        + ("PASS" if c <= 10 else "FAIL")
        + " (kernels compiled by the package build)"
    )
    print(
        f"  without them, compiled at first run: {j:6.2f} s (CPU {j_cpu:6.2f} s): "
        f"{j / c:.2f}x the wall time"
    )
    if serial:
        s, s_cpu = min(serial)
        print(
            f"  peer: cold, kernels compiled in one process: {s:6.2f} s (CPU {s_cpu:6.2f} s): "
            f"{s / c:.2f}x the wall time"
        )
    print(
        f"warm start,  200 Panda steps: {w:6.2f} s (CPU {w_cpu:6.2f} s; limit 1.0 s): "
        + ("PASS" if w <= 1 else "FAIL")
        + f" (best of {len(warm)}; median {sorted(x[0] for x in warm)[len(warm) // 2]:.2f} s)"
    )
    print(f"load average during the runs: {os.getloadavg()[0]:.2f} (2 cores are shared)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("loop", "start"))
    parser.add_argument("--long", type=int, default=0, help="default: per scene (LONG)")
    parser.add_argument("--short", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--peer", action="store_true", help="start: also a cold run compiling in one process"
    )
    parser.add_argument(
        "--cli", action="store_true", help="loop: time whole `simrt run` processes instead"
    )
    args = parser.parse_args()
    loop(args) if args.mode == "loop" else start(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
