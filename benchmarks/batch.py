"""Batch throughput: 1 vs 2 local workers, and what a worker's later episodes cost.

    python benchmarks/batch.py [--episodes 200] [--steps 50] [--workers 1,2] [--repeats 3]
    python benchmarks/batch.py --cli [...]   # whole `simrt batch` processes, timed from outside

Runs the same batch (``scenes/panda_batch.toml``'s randomization: perturbed start pose,
randomized IK waypoints, object pose and physics scales; ``--episodes`` episodes of
``--steps`` steps) once per worker count into a fresh dataset, and prints:

* episodes/s over the whole batch (worker start-up included) and in steady state (from the
  moment every worker finished its first episode to the end), and their ratios to the
  1-worker run of the same repeat (the worker counts run interleaved, ``--repeats`` times,
  since this machine's speed drifts over minutes; acceptance: >= 1.8 for 2 workers on 2
  cores);
* per worker, its first episode (process start, imports, Numba cache loads, stage open and
  engine build) vs its later ones (the cached engine is reset, not rebuilt: ``reused`` in
  the manifest), with the ``startup`` column (seconds until the engine was ready);
* the peer for that start-up: opening the stage and building the engine in this process.

A warm-up batch first starts the local executor's fork server (the modules and cached kernels
every worker is forked with; once per driver process, printed apart). Each run starts
after ``os.sync()`` and the datasets are deleted only at the end, so no run
pays for another's writeback or deletion.

The machine may be shared: the load average is printed before and after each run, and the
peer for the 1-vs-2 ratio is a pure-CPU loop in 1 vs 2 processes measured around each run
(what the machine itself gives two processes at that moment).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "scenes" / "panda_batch.toml"


def _timed_executor(workers: int):  # noqa: ANN202 - local subclass
    from runtime.batch.executors import LocalExecutor

    class Timed(LocalExecutor):
        def __init__(self) -> None:
            super().__init__(workers)
            self.finished: list[tuple[float, dict]] = []

        def wait(self, timeout=None):  # noqa: ANN001, ANN202
            outcomes = super().wait(timeout)
            now = time.perf_counter()
            self.finished.extend((now, o) for o in outcomes)
            return outcomes

    return Timed()


def _run(spec, workers: int) -> dict:  # noqa: ANN001
    from runtime.batch import load_dataset, run_batch

    out = Path(tempfile.mkdtemp(prefix=f"simrt-bench-batch-{workers}w-")) / "ds"
    executor = _timed_executor(workers)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    try:
        summary = run_batch(spec, out, executor=executor, retries=0)
    finally:
        executor.close()
    wall = time.perf_counter() - start
    rows = load_dataset(out).manifest.to_pylist()
    finish = {int(o["episode"]): t - start for t, o in executor.finished}
    by_pid: dict[int, list[dict]] = {}
    for row in sorted(rows, key=lambda r: finish[r["episode"]]):
        by_pid.setdefault(row["worker_pid"], []).append(row)
    warm = max(finish[episodes[0]["episode"]] for episodes in by_pid.values())
    steady = [e for e, t in finish.items() if t > warm]
    return {
        "workers": workers,
        "done": summary.done,
        "failed": summary.failed,
        "wall": wall,
        "eps": len(rows) / wall,
        "steady_eps": len(steady) / (wall - warm) if wall > warm else float("nan"),
        "warm": warm,
        "first": [e[0] for e in by_pid.values()],
        "later": [r for e in by_pid.values() for r in e[1:]],
        "second": [e[1] for e in by_pid.values() if len(e) > 1],
        "load": (load, os.getloadavg()[0]),
        "out": out.parent,
    }


def _spin(_: int) -> float:
    start = time.perf_counter()
    total = 0
    for i in range(4_000_000):
        total += i * i
    return time.perf_counter() - start


def _cpu_peer() -> float:
    """Throughput ratio of a pure-CPU loop in 2 processes vs 1, measured now (the machine)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        pool.map(_spin, [0, 1])  # start-up
        one = min(pool.apply(_spin, (0,)) for _ in range(2))
        two = max(pool.map(_spin, [0, 1]))
    return 2.0 * one / two


def _peer_build(scene: str) -> tuple[float, float]:
    """Seconds to open the stage and to build the engine, in this process (warm)."""
    import runtime.schema  # noqa: F401
    from runtime.engine.mujoco_engine import MujocoEngine
    from runtime.run.scene import open_scene_stage as _open_stage

    MujocoEngine(_open_stage(scene))  # warm imports and kernels
    t0 = time.perf_counter()
    stage = _open_stage(scene)
    t1 = time.perf_counter()
    MujocoEngine(stage)
    return t1 - t0, time.perf_counter() - t1


def _cli(args: argparse.Namespace, counts: list[int]) -> int:
    """Whole ``simrt batch`` processes (fork server, imports and all), 1 vs N workers."""
    import shutil
    import subprocess
    import sys

    text = SPEC.read_text()
    text = text.replace("episodes = 36", f"episodes = {args.episodes}")
    text = text.replace("steps = 100", f"steps = {args.steps}")
    text = text.replace('path = "panda_table.usda"', f'path = "{SPEC.parent / "panda_table.usda"}"')
    root = Path(tempfile.mkdtemp(prefix="simrt-bench-batch-cli-"))
    spec = root / "spec.toml"
    spec.write_text(text)
    print(f"simrt batch processes: {args.episodes} Panda episodes x {args.steps} steps")
    walls: dict[int, list[float]] = {w: [] for w in counts}
    peers = []
    try:
        for repeat in range(args.repeats):
            for workers in counts:
                peers.append(_cpu_peer())
                os.sync()
                out = root / f"ds{repeat}_{workers}"
                cmd = [sys.executable, "-m", "runtime.cli", "batch", str(spec), "--out", str(out)]
                cmd += ["--workers", str(workers), "--no-progress"]
                began = time.perf_counter()
                subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
                walls[workers].append(time.perf_counter() - began)
                print(f"[{repeat + 1}] {workers} worker(s): {walls[workers][-1]:.2f} s")
        base = walls[counts[0]]
        for workers in counts[1:]:
            ratios = [b / w for b, w in zip(base, walls[workers], strict=True)]
            print(
                f"throughput ratio {workers} vs {counts[0]} worker(s), whole processes, per "
                f"repeat: {', '.join(f'{r:.2f}' for r in ratios)} (median "
                f"{statistics.median(ratios):.2f}; target >= 1.8)"
            )
        print(
            "peer: a pure-CPU loop in 2 processes vs 1, measured before each run: "
            f"{', '.join(f'{p:.2f}' for p in peers)} (2.0 = two free cores)"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--workers", default="1,2", help="worker counts, comma separated")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats")
    parser.add_argument("--keep", action="store_true", help="keep the datasets")
    parser.add_argument(
        "--cli", action="store_true", help="time whole `simrt batch` processes instead"
    )
    args = parser.parse_args()

    import logging
    import shutil

    from runtime.batch import parse_spec

    logging.getLogger("runtime").setLevel(logging.ERROR)
    med = statistics.median
    data = tomllib.loads(SPEC.read_text())
    data.update(episodes=args.episodes, steps=args.steps)
    spec = parse_spec(data, SPEC)
    print(f"batch: {args.episodes} Panda episodes x {args.steps} steps, randomized IK targets")
    runs = []
    peers = []
    ratios: dict[int, list[tuple[float, float]]] = {}
    counts = [int(w) for w in args.workers.split(",")]
    if args.cli:
        return _cli(args, counts)
    # The local executor's fork server (imports and kernel loads, once per driver process)
    # starts here, so that no timed run pays it for the others; a fresh `simrt batch` pays
    # it once, whatever its worker count (printed).
    began = time.perf_counter()
    warmup = _run(parse_spec({**data, "episodes": 2 * max(counts)}, SPEC), max(counts))
    print(
        f"warm-up: fork server started and {warmup['done']} episodes run in "
        f"{time.perf_counter() - began:.1f} s (first worker ready after {warmup['warm']:.1f} s)"
    )
    shutil.rmtree(warmup["out"], ignore_errors=True)
    for repeat in range(args.repeats):  # interleaved: each ratio from runs minutes apart
        base = None
        for workers in counts:
            peers.append(_cpu_peer())
            os.sync()  # every run starts without another run's writeback pending
            result = _run(spec, workers)
            runs.append(result)
            print(
                f"[{repeat + 1}] {workers} worker(s): {result['done']} done / {result['failed']} "
                f"failed in {result['wall']:.1f} s = {result['eps']:.2f} episodes/s; steady "
                f"state {result['steady_eps']:.2f} episodes/s after {result['warm']:.1f} s of "
                f"worker start-up (load average {result['load'][0]:.1f} -> "
                f"{result['load'][1]:.1f})"
            )
            if base is None:
                base = result
            else:
                ratios.setdefault(workers, []).append(
                    (result["eps"] / base["eps"], result["steady_eps"] / base["steady_eps"])
                )
        peers.append(_cpu_peer())
    for workers, pairs in ratios.items():
        whole = ", ".join(f"{w:.2f}" for w, _ in pairs)
        steady = ", ".join(f"{s:.2f}" for _, s in pairs)
        print(
            f"throughput ratio {workers} vs {counts[0]} worker(s), per repeat: whole batch "
            f"{whole} (median {med(w for w, _ in pairs):.2f}); steady state {steady} "
            f"(median {med(s for _, s in pairs):.2f}; target >= 1.8)"
        )
    print(
        "peer: a pure-CPU loop in 2 processes vs 1 on this machine, measured around each run: "
        f"{', '.join(f'{p:.2f}' for p in peers)} (2.0 = two free cores)"
    )
    print("per-episode start-up (all runs):")
    first = [r for run in runs for r in run["first"]]
    second = [r for run in runs for r in run["second"]]
    later = [r for run in runs for r in run["later"]]
    print(
        f"  a worker's first episode: wall {med(r['wall_time'] for r in first):.2f} s "
        f"(median of {len(first)}), engine ready after {med(r['startup'] for r in first):.3f} s"
    )
    print(
        f"  its second episode:       wall {med(r['wall_time'] for r in second):.2f} s, "
        f"engine ready after {med(r['startup'] for r in second):.4f} s; "
        f"engine reused (not rebuilt) in {sum(r['reused'] for r in second)}/{len(second)}"
    )
    print(
        f"  all later episodes:       wall {med(r['wall_time'] for r in later):.2f} s median, "
        f"engine reused in {sum(r['reused'] for r in later)}/{len(later)}"
    )
    for run in runs:
        rows = run["later"]
        wall = sum(r["wall_time"] for r in rows)
        cpu = sum(r["cpu_time"] for r in rows)
        print(
            f"  {run['workers']} worker(s): later episodes {med(r['cpu_time'] for r in rows):.2f} "
            f"CPU s median; the workers were on a CPU {cpu / wall:.0%} of their episodes' wall "
            "time (the rest: waiting for a core or the disk)"
        )
    open_s, build_s = _peer_build(spec.scenes[0].path)
    print(
        f"  peer (this process, warm): open stage {open_s:.3f} s + build engine "
        f"{build_s:.3f} s = what every episode would pay without the worker cache"
    )
    if not args.keep:  # (deleted at the end: a deletion's disk work would slow the next run)
        for run in runs:
            shutil.rmtree(run["out"], ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
