"""Recording: per-step cost against a plain memcpy, and flat memory over a long run.

    python benchmarks/soak.py cost [--steps 2000] [--rows 20000] [--repeats 3]
    python benchmarks/soak.py soak [--steps 1000000] [--scene scenes/panda_table.usda]
    python benchmarks/soak.py soak --quick        # simple_arm, 200,000 steps

``cost``: the Panda scene is stepped once (engine + every sensor) and each step's readings
and state arrays are kept; then ``--rows`` rows (the kept steps, cycled) are recorded by
each block below, interleaved, best of ``--repeats``:

* ``memcpy peer``       -- ``buffer[k] = value`` of every recorded array of the row into
  preallocated buffers (the same arrays in the same order: the copy a recorder must do);
* ``one memcpy``        -- the row's bytes as one contiguous copy (the floor: no Python
  per array);
* ``record (store)``    -- the run loop's recording into the streaming store: each tap
  writes its reading in place (``StoreWriter.begin_row``, ``SensorTap.write``,
  ``end_row``) while the writer thread compresses and writes full chunks beside it (what
  the loop pays, GIL contention included); split into the time the loop waited for the
  writer (this block records as fast as it can, with no physics between rows, so the
  writer thread's throughput bounds it) and the rest; ``close`` (the last chunk,
  trimming) apart.

``soak``: ``simrt run`` in a subprocess with ``--out`` a store; its RSS is sampled every
0.5 s. Prints the RSS at step ~1,000 (first commit past it), the peak, their difference
(acceptance: <= 150 MB), the steps per second and the store size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def cost(args: argparse.Namespace) -> None:
    from pxr import Usd

    import runtime.schema  # noqa: F401  (schemas registered before any stage)
    from runtime.engine.mujoco_engine import MujocoEngine
    from runtime.recording import ChannelInfo, StoreWriter
    from runtime.run.loop import _find_robot  # run-loop internals
    from runtime.run.taps import SensorTap
    from runtime.schema.dof import build_dof_table
    from runtime.sensors.runtime import SensorRuntime

    stage = Usd.Stage.Open(args.scene)
    robot = _find_robot(stage, None)
    engine = MujocoEngine(stage, robot_prim=robot)
    state = engine.state()
    sensors = SensorRuntime(stage, state.body_paths, build_dof_table(stage, robot))
    taps = [SensorTap(s, stage) for s in sensors.sensors]
    kept = []
    for _ in range(args.steps):
        engine.step()
        state = engine.state()
        sensors.step(state)
        extra = {
            "q": np.array(state.joint_positions),
            "qd": np.array(state.joint_velocities),
            "bp": np.array(state.body_positions),
            "bq": np.array(state.body_orientations),
        }
        kept.append((int(state.step), float(state.time), [t.read() for t in taps], extra))

    def make(path: Path) -> tuple[StoreWriter, dict[str, int]]:
        writer = StoreWriter(path, expected_rows=args.rows)
        for tap in taps:
            tap.define(writer)
        slots = {
            name: writer.add_channel(ChannelInfo(name, a.shape, "float64"))
            for name, a in kept[0][3].items()
        }
        return writer, slots

    def record(writer: StoreWriter, slots: dict[str, int]) -> None:
        for k in range(args.rows):
            step, t, readings, extra = kept[k % len(kept)]
            buffers, i = writer.begin_row()
            for tap, reading in zip(taps, readings, strict=True):
                tap.write(buffers, i, reading)
            for name, value in extra.items():
                buffers[slots[name]][i] = value
            writer.end_row(k + 1, t)

    with tempfile.TemporaryDirectory() as tmp:
        probe, slots = make(Path(tmp) / "probe.zarr")
        channels = list(probe.channels.values())
        buffers, _ = probe.begin_row()
        arrays = [np.zeros((args.rows, *c.shape), dtype=c.dtype) for c in channels]
        # the row values as the recorder sees them, per array, from the first kept steps
        per_row = []
        for k in range(len(kept)):
            buffers, i = probe.begin_row()
            _, _, readings, extra = kept[k]
            for tap, reading in zip(taps, readings, strict=True):
                tap.write(buffers, i, reading)
            for name, value in extra.items():
                buffers[slots[name]][i] = value
            per_row.append([b[i].copy() for b in buffers[: len(channels)]])
            probe.end_row(k + 1, 0.0)
        probe.close()
        row_bytes = sum(v.nbytes for v in per_row[0])
        flat = np.zeros((args.rows, row_bytes), np.uint8)
        flat_rows = [np.concatenate([np.ravel(v).view(np.uint8) for v in r]) for r in per_row]
        print(
            f"{args.scene}: {len(channels)} channels, {row_bytes / 1024:.1f} KiB per row, "
            f"{args.rows} rows (the {len(kept)} kept steps cycled), chunk {probe.chunk_rows} rows"
        )
        results: dict[str, list[float]] = {}
        perf = time.perf_counter
        for repeat in range(args.repeats):
            t0 = perf()
            for k in range(args.rows):
                for array, value in zip(arrays, per_row[k % len(per_row)], strict=True):
                    array[k] = value
            results.setdefault("memcpy peer", []).append(perf() - t0)
            t0 = perf()
            for k in range(args.rows):
                flat[k] = flat_rows[k % len(flat_rows)]
            results.setdefault("one memcpy", []).append(perf() - t0)
            writer, slots = make(Path(tmp) / f"run{repeat}.zarr")
            t0 = perf()
            record(writer, slots)
            results.setdefault("record (store)", []).append(perf() - t0)
            results.setdefault("  waiting for writer", []).append(writer.wait_seconds)
            results.setdefault("  record w/o waits", []).append(perf() - t0 - writer.wait_seconds)
            t0 = perf()
            writer.close()
            results.setdefault("close", []).append(perf() - t0)
            results.setdefault("writer thread", []).append(writer.write_seconds)
        size = sum(f.stat().st_size for f in (Path(tmp) / "run0.zarr").rglob("*") if f.is_file())
    base = min(results["memcpy peer"])
    print(f"\n{'block':18s} {'us/row':>9s} {'x memcpy peer':>14s}")
    for name, times in results.items():
        best = min(times)
        ratio = f"{best / base:14.2f}" if name not in ("close", "writer thread") else " " * 14
        per = best / args.rows * 1e6
        print(f"{name:18s} {per:9.2f} {ratio}")
    raw = row_bytes * args.rows
    print(f"\nstore: {size / 1e6:.1f} MB on disk for {raw / 1e6:.0f} MB of rows")


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _committed(store: Path) -> int:
    try:
        lines = (store / "simrt" / "commits.jsonl").read_text().split("\n")[:-1]
        return json.loads(lines[-1])["rows"] if lines else 0
    except (OSError, ValueError, KeyError):
        return 0


def soak(args: argparse.Namespace) -> None:
    scene = args.scene
    steps = args.steps
    if args.quick:
        scene, steps = str(REPO / "scenes" / "simple_arm.usda"), 200_000
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "soak.zarr"
        cmd = [sys.executable, "-m", "runtime.cli", "run", scene, "--steps", str(steps)]
        cmd += ["--out", str(store), "--no-progress", "--json"]
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
        rss_at_1000 = peak = 0
        samples = []
        while proc.poll() is None:
            rss = _rss_kib(proc.pid)
            rows = _committed(store)
            if rows >= 1000 and not rss_at_1000:
                rss_at_1000 = rss
            peak = max(peak, rss)
            samples.append((time.perf_counter() - began, rows, rss))
            time.sleep(0.5)
        out, _ = proc.communicate()
        wall = time.perf_counter() - began
        result = json.loads(out) if proc.returncode == 0 else {}
        size = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    print(f"{scene}: {steps} steps, exit {proc.returncode}, {wall:.0f} s wall")
    for t, rows, rss in samples[:: max(1, len(samples) // 12)]:
        print(f"  t={t:7.1f} s  committed {rows:>9d}  RSS {rss / 1024:7.1f} MiB")
    growth = (peak - rss_at_1000) / 1024
    verdict = "PASS" if growth <= 150 else "FAIL"
    print(f"RSS at step ~1000: {rss_at_1000 / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB")
    print(f"growth {growth:.1f} MiB (limit 150): {verdict}")
    if result:
        loop = result["timings"].get("wall_time", 0.0)
        print(f"steps recorded {result['steps']}, loop {loop:.0f} s")
    print(f"store size {size / 1e6:.0f} MB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("cost", "soak"))
    parser.add_argument("--scene", default=str(REPO / "scenes" / "panda_table.usda"))
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="soak: simple_arm, 200k steps")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    if args.mode == "cost":
        args.steps = args.steps or 2000
        cost(args)
    else:
        args.steps = args.steps or 1_000_000
        soak(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
