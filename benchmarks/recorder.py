"""Per-step cost of recording on the Panda scene vs a plain ``memcpy`` of the same arrays.

    python benchmarks/recorder.py [--steps 2000] [--repeats 3] [--scene scenes/panda_table.usda]

The scene is stepped once (MuJoCo engine + every sensor) and each step's readings and state
are kept; then, over the same rows, the blocks below are timed (interleaved, best of
``--repeats``, because the machine is shared):

* ``memcpy peer``         -- ``buffer[k] = value`` of every recorded array of the step into
  preallocated ``(steps, *shape)`` buffers (the floor the recorder should approach);
* ``record (memory)``     -- the run loop's recording without a file: each tap writes its
  reading in place into the recorder's buffers (``Recorder.begin_row``,
  ``_SensorTap.write``, ``Recorder.end_row``);
* ``record (dict rows)``   -- the same through a per-step dict (``_SensorTap.row`` plus
  ``Recorder.append``), the API for callers without slots;
* ``record (.npz)``       -- the same with a file flushed every ``--flush-every`` rows
  (``min_flush_interval=0``: every flush happens; segments appended to the reused bytes);
* ``record (.npz, bg)``   -- the same with ``background_flush`` and ``prepare_chunks`` (as
  ``simrt run``): the segments are written, and the next chunk buffer is allocated and
  paged in, on helper threads;
* ``whole-file rewrite``  -- the previous design's flush for comparison: ``numpy.savez`` of
  every row so far every ``--flush-every`` rows, on top of the memory recording;

plus the final ``close()`` (consolidated, compressed file) once per repeat.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import runtime.schema  # noqa: F401  (schemas registered before any stage)

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default=str(REPO / "scenes" / "panda_table.usda"))
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--flush-every", type=int, default=250)
    args = parser.parse_args()

    from pxr import Usd

    from runtime.engine.job import _find_robot, _SensorTap  # run-loop internals
    from runtime.engine.mujoco_engine import MujocoEngine
    from runtime.engine.recorder import ChannelInfo, Recorder
    from runtime.schema.dof import build_dof_table
    from runtime.sensors.runtime import SensorRuntime

    stage = Usd.Stage.Open(args.scene)
    robot = _find_robot(stage, None)
    engine = MujocoEngine(stage, robot_prim=robot)
    state = engine.state()
    table = build_dof_table(stage, robot)
    sensors = SensorRuntime(stage, state.body_paths, table, watch_usd=False)
    taps = [_SensorTap(s, stage) for s in sensors.sensors]
    n = args.steps
    rows = []  # (step, time, [reading per tap], state arrays)
    for _ in range(n):
        engine.step()
        state = engine.state()
        sensors.step(state)
        readings = [tap.read() for tap in taps]
        extra = {
            "q": np.array(state.joint_positions),
            "qd": np.array(state.joint_velocities),
            "tau": np.array(state.joint_efforts),
            "bp": np.array(state.body_positions),
            "bq": np.array(state.body_orientations),
        }
        rows.append((int(state.step), float(state.time), readings, extra))

    slots = {}

    def make(path, background=False):
        rec = Recorder(
            path,
            flush_every=args.flush_every,
            min_flush_interval=0.0,
            background_flush=background,
            prepare_chunks=background,
        )
        for tap in taps:
            tap.define(rec)
        for name, array in rows[0][3].items():
            slots[name] = rec.add_channel(ChannelInfo(name, array.shape, "float64"))
        return rec

    def fill(rec, rewrite_dir=None, dict_rows=False):
        for k, (step, t, readings, extra) in enumerate(rows, start=1):
            if dict_rows:
                row = dict(extra)
                for tap, reading in zip(taps, readings, strict=True):
                    tap.row(row, reading)
                rec.append(step, t, row)
            else:
                buffers, i = rec.begin_row()
                for tap, reading in zip(taps, readings, strict=True):
                    tap.write(buffers, i, reading)
                for name, value in extra.items():
                    buffers[slots[name]][i] = value
                rec.end_row(step, t)
            if rewrite_dir is not None and k % args.flush_every == 0:
                snap = rec.snapshot()
                np.savez(
                    rewrite_dir / "legacy.npz",
                    step=snap.step,
                    time=snap.time,
                    **{f"c{i}": a for i, a in enumerate(snap.data.values())},
                )
        return rec

    probe = fill(make(None)).snapshot()
    buffers = [np.zeros_like(a) for a in probe.data.values()]
    per_row = [[a[k] for a in probe.data.values()] for k in range(n)]
    row_bytes = sum(a[0].nbytes for a in probe.data.values())
    print(
        f"scene {args.scene}: {len(probe.data)} channels, {row_bytes / 1024:.1f} KiB per step, "
        f"{n} steps, flush every {args.flush_every}"
    )

    results: dict[str, list[float]] = {}
    perf = time.perf_counter
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        for _ in range(args.repeats):
            t0 = perf()
            for k, values in enumerate(per_row):
                for buffer, value in zip(buffers, values, strict=True):
                    buffer[k] = value
            results.setdefault("memcpy peer", []).append(perf() - t0)
            t0 = perf()
            fill(make(None))
            results.setdefault("record (memory)", []).append(perf() - t0)
            t0 = perf()
            fill(make(None), dict_rows=True)
            results.setdefault("record (dict rows)", []).append(perf() - t0)
            t0 = perf()
            rec = fill(make(tmp_dir / "run.npz"))
            results.setdefault("record (.npz)", []).append(perf() - t0)
            t0 = perf()
            rec.close()
            results.setdefault("close (final write)", []).append(perf() - t0)
            t0 = perf()
            rec = fill(make(tmp_dir / "run_bg.npz", background=True))
            results.setdefault("record (.npz, bg)", []).append(perf() - t0)
            rec.close()
            t0 = perf()
            fill(make(None), rewrite_dir=tmp_dir)
            results.setdefault("whole-file rewrite", []).append(perf() - t0)
        size = (tmp_dir / "run.npz").stat().st_size
    base = min(results["memcpy peer"])
    print(f"\n{'block':24s} {'us/step':>10s} {'x memcpy':>10s}")
    for name, values in results.items():
        best = min(values)
        print(f"{name:24s} {1e6 * best / n:10.1f} {best / base:10.2f}")
    print(f"final file: {size / 1e6:.2f} MB for {row_bytes * n / 1e6:.1f} MB of rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
