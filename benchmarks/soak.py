"""Recording: per-step cost against a plain memcpy, and flat memory over a long run.

    python benchmarks/soak.py cost [--rows 4000] [--repeats 3]
    python benchmarks/soak.py soak [--steps 1000000] [--scene scenes/panda_table.usda]
    python benchmarks/soak.py soak --quick        # simple_arm, 200,000 steps

``cost``: the Panda scene is stepped for real, ``--rows`` steps per repeat (engine, state,
every sensor, readings: the loop's work between rows, untimed), and after each step two
blocks record that step's row, in alternating order (neither always finds the data in cache
first); best of ``--repeats``:

* ``memcpy peer``     -- ``buffer[k] = value`` of every recorded array of the row (the values
  the taps record, in the same order) into preallocated chunk-sized buffers: the copy any
  recorder must do;
* ``record (store)``  -- the recorder's job: the step's readings (built untimed, as for the
  peer) written into the streaming store, each tap in place (``StoreWriter.begin_row``,
  ``SensorTap.write(buffers, row, reading)``, ``end_row``) while
  the writer thread compresses and writes full chunks beside it (what the loop pays, GIL
  contention and waits for the writer included; the waits also apart).
  ``writer thread`` (its time per row, on the other core) and ``close`` (per row) apart;
* ``direct taps (store)`` -- what the run loop does now: no reading objects, each tap reads
  its sensor batch's arrays (the IMU's read-time gravity kernel, ray hit-path ids
  included) and writes the row; the readings' construction is then part of this block.

Each store block is compared with the peer timed beside it, row by row, in the same repeat.
Acceptance (issue 11): ``record (store)`` <= 1.5x its memcpy peer.

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
    from runtime.run.scene import find_robot as _find_robot
    from runtime.run.taps import SensorTap
    from runtime.schema.dof import build_dof_table
    from runtime.sensors.runtime import SensorRuntime

    stage = Usd.Stage.Open(args.scene)
    robot = _find_robot(stage, None)
    perf = time.perf_counter
    with tempfile.TemporaryDirectory() as tmp:
        results: dict[str, list[float]] = {}
        for repeat, mode in [(r, m) for r in range(args.repeats) for m in ("given", "direct")]:
            engine = MujocoEngine(stage, robot_prim=robot, compute_accelerations=True)
            state = engine.state()
            sensors = SensorRuntime(
                stage, state.body_paths, build_dof_table(stage, robot), imu_mode="physical"
            )
            taps = [SensorTap(s, stage) for s in sensors.sensors]
            writer = StoreWriter(Path(tmp) / f"{mode}{repeat}.zarr", expected_rows=args.rows)
            engine.step()
            sensors.step(engine.state())
            for tap in taps:
                tap.define(writer)
            extra = {
                "q": lambda s: s.joint_positions,
                "qd": lambda s: s.joint_velocities,
                "bp": lambda s: s.body_positions,
                "bq": lambda s: s.body_orientations,
            }
            first = engine.state()
            slots = {
                name: writer.add_channel(ChannelInfo(name, get(first).shape, "float64"))
                for name, get in extra.items()
            }
            channels = list(writer.channels.values())
            names = [c.name for c in channels]
            peer = None
            store_t = peer_t = 0.0
            for k in range(args.rows):
                engine.step()
                state = engine.state()
                sensors.step(state)
                readings = [t.read() for t in taps]
                if peer is None:  # the chunk buffers exist from the first row on
                    buffers, row = writer.begin_row()
                    peer = [np.ones_like(b) for b in buffers[: len(channels)]]  # paged in
                # the peer's sources: the values the taps record, by channel (untimed)
                values: dict[str, object] = {}
                for tap, reading in zip(taps, readings, strict=True):
                    tap.row(values, reading)
                for name, get in extra.items():
                    values[name] = get(state)
                sources = [values.get(name, 0) for name in names]
                # the state channels' values, given to both blocks alike (as the readings)
                state_values = [(slots[name], get(state)) for name, get in extra.items()]
                for order in (0, 1) if k % 2 else (1, 0):
                    if order == 0:
                        t0 = perf()
                        buffers, row = writer.begin_row()
                        if mode == "direct":  # as the run loop: readings on demand
                            for tap in taps:
                                tap.write(buffers, row)
                        else:
                            for tap, reading in zip(taps, readings, strict=True):
                                tap.write(buffers, row, reading)
                        for slot, value in state_values:
                            buffers[slot][row] = value
                        writer.end_row(k + 1, float(state.time))
                        store_t += perf() - t0
                    else:
                        # the peer: buffer[k] = value of every recorded array of the row,
                        # the same values in the same order, into preallocated buffers
                        t0 = perf()
                        for dst, src in zip(peer, sources, strict=True):
                            dst[k % len(dst)] = src
                        peer_t += perf() - t0
            t0 = perf()
            writer.close()
            label = "record (store)" if mode == "given" else "direct taps (store)"
            # each store block against the peer measured beside it, row by row, in the
            # same repeat (best of the repeats)
            results.setdefault(f"memcpy peer ({mode})", []).append(peer_t / args.rows)
            results.setdefault(label, []).append(store_t / args.rows)
            results.setdefault(f"ratio ({mode})", []).append(store_t / peer_t)
            results.setdefault(f"  waiting ({mode})", []).append(writer.wait_seconds / args.rows)
            results.setdefault("writer thread", []).append(writer.write_seconds / args.rows)
            results.setdefault("close", []).append((perf() - t0) / args.rows)
            sensors.close()
        row_bytes = sum(int(np.prod(c.shape)) * np.dtype(c.dtype).itemsize for c in channels)
        size = sum(f.stat().st_size for f in (Path(tmp) / "given0.zarr").rglob("*") if f.is_file())
    print(
        f"{args.scene}: {len(channels)} channels, {row_bytes / 1024:.1f} KiB per row, "
        f"{args.rows} real steps per repeat (physics and sensors between rows, untimed)"
    )
    print(f"\n{'block':22s} {'us/row':>9s} {'x memcpy peer':>14s}")
    for name, times in results.items():
        if name.startswith("ratio"):
            continue
        best = min(times)
        mode = "direct" if name.endswith(("(direct)", "taps (store)")) else "given"
        peer = min(results[f"memcpy peer ({mode})"])
        plain = name in ("close", "writer thread") or name.startswith("memcpy")
        ratio = " " * 14 if plain else f"{best / peer:14.2f}"
        print(f"{name:22s} {best * 1e6:9.2f} {ratio}")
    ratios = results["ratio (given)"]
    ratio = min(ratios)
    print(
        f"\nrecording cost {ratio:.2f}x the memcpy peer of the same repeat (limit 1.5; "
        f"repeats {', '.join(f'{r:.2f}' for r in ratios)}): {'PASS' if ratio <= 1.5 else 'FAIL'}"
    )
    print(f"store: {size / 1e6:.1f} MB on disk for {row_bytes * args.rows / 1e6:.0f} MB of rows")


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
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="soak: simple_arm, 200k steps")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    if args.mode == "cost":
        cost(args)
    else:
        args.steps = args.steps or 1_000_000
        soak(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
