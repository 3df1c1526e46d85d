"""Cost of sensor noise: the Panda scene run with noise on every sensor channel vs without.

    python benchmarks/noise.py [--steps 5000] [--repeats 5] [--scene scenes/panda_table.usda]

Both runs step the same scene the same way (``run_scene``, the compiled blocks, the store
written by its writer thread); the noisy one also records a ``<channel>.noisy`` twin of
every sensor measurement channel: the contact sensors' force, the IMU's acceleration,
angular velocity and orientation, the lidar's depths and the robot's joint positions,
velocities and efforts (767 values a step), each with a realistic mix of noise (noise
density + bias random walk, Gaussian + resolution + saturation, range noise + ray dropout,
latency). Per step: the loop's wall time after the first step plus the store's close
(which writes the last chunk: its noisy rows are mostly filled already, by the writer
thread as the rows were recorded), over the steps after the first; the stepping thread's
CPU time per step (it steps, records the rows and, at close, writes the last chunk); and
the process's CPU time per step (every thread: the store's writer thread computes the
noise, compresses the noisy channels and writes their files), both over the whole
``run_scene`` call. The two runs alternate, and the minimum over repeats is reported (the
machine is shared), with the load average. Acceptance: noise adds <= 5 % per step.

``--all-float`` also puts noise on the lidar's hit positions, normals and ray end points
(every float channel of every sensor: 7247 values a step), for reference.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import runtime.schema  # noqa: F401  (schemas registered before any stage)

REPO = Path(__file__).resolve().parents[1]


def _noise_table(channels: dict, all_float: bool) -> dict:
    """Noise parameters for every sensor measurement channel of the recorded channels."""
    table: dict = {}
    for info in channels.values():
        if not info.sensor.startswith("/") or info.dtype not in ("float32", "float64"):
            continue
        if info.field in ("time", "targets"):
            continue
        params: dict
        if info.kind == "imu" and info.field == "orientation":
            params = {"gaussianStd": 1e-3, "latencySteps": 1}
        elif info.kind == "imu":
            params = {"noiseDensity": 2e-3, "biasRandomWalk": 4e-5, "latencySteps": 1}
        elif info.kind == "raycast" and info.field == "depths":
            params = {
                "rangeStd": 0.01,
                "rangeProportional": 0.002,
                "dropoutProbability": 0.02,
                "dropoutPerElement": True,
                "dropoutValue": "maxRange",
            }
        elif info.kind == "raycast":
            if not all_float:
                continue
            params = {"gaussianStd": 0.01}
        elif info.kind == "contact":
            params = {"gaussianStd": 0.05, "saturationMin": 0.0, "saturationMax": 200.0}
        else:  # joint states and efforts
            params = {"gaussianStd": 1e-4, "resolution": 1e-5, "biasStd": 1e-4}
        table.setdefault(info.sensor, {})[info.field] = params
    return table


def _per_step(result) -> float:
    timings = result.timings
    steady = timings["wall_time"] - timings.get("first_step", 0.0) + timings.get("close", 0.0)
    return steady / max(1, result.steps - 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default=str(REPO / "scenes" / "panda_table.usda"))
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--all-float", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()

    from runtime.recording.reader import open_recording
    from runtime.run.loop import run_scene

    with tempfile.TemporaryDirectory(prefix="simrt-noise-bench-") as folder:
        probe = Path(folder) / "probe.zarr"
        run_scene(args.scene, out=probe, steps=2, summary=False)
        table = _noise_table(open_recording(probe).channels, args.all_float)
        values = 0
        channels = open_recording(probe).channels
        for info in channels.values():
            if info.field in table.get(info.sensor, {}):
                size = 1
                for n in info.shape:
                    size *= n
                values += size
        times: dict[str, list[float]] = {"without noise": [], "with noise": []}
        cpu: dict[str, list[float]] = {"without noise": [], "with noise": []}
        loop: dict[str, list[float]] = {"without noise": [], "with noise": []}
        for repeat in range(args.repeats):
            for label, noise in (("without noise", None), ("with noise", table)):
                out = Path(folder) / f"{repeat}-{label.replace(' ', '-')}.zarr"
                began, thread_began = time.process_time(), time.thread_time()
                result = run_scene(
                    args.scene, out=out, steps=args.steps, noise=noise, summary=False
                )
                cpu[label].append((time.process_time() - began) / args.steps)
                loop[label].append((time.thread_time() - thread_began) / args.steps)
                times[label].append(_per_step(result))
        base, noisy = min(times["without noise"]), min(times["with noise"])
        cpu_base, cpu_noisy = min(cpu["without noise"]), min(cpu["with noise"])
        loop_base, loop_noisy = min(loop["without noise"]), min(loop["with noise"])
        check = open_recording(out)
        noisy_channels = [n for n in check.channels if n.endswith(".noisy")]
    ratio = noisy / base - 1.0
    numbers = {
        "scene": args.scene,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "steps": args.steps,
        "repeats": args.repeats,
        "noisy_channels": len(noisy_channels),
        "noisy_values_per_step": values,
        "us_per_step_without_noise": 1e6 * base,
        "us_per_step_with_noise": 1e6 * noisy,
        "added_percent": 100.0 * ratio,
        "loop_cpu_us_per_step_without_noise": 1e6 * loop_base,
        "loop_cpu_us_per_step_with_noise": 1e6 * loop_noisy,
        "loop_cpu_added_percent": 100.0 * (loop_noisy / loop_base - 1.0),
        "cpu_us_per_step_without_noise": 1e6 * cpu_base,
        "cpu_us_per_step_with_noise": 1e6 * cpu_noisy,
        "cpu_added_percent": 100.0 * (cpu_noisy / cpu_base - 1.0),
        "all_runs_us": {k: [round(1e6 * v, 2) for v in vs] for k, vs in times.items()},
        "all_runs_cpu_us": {k: [round(1e6 * v, 2) for v in vs] for k, vs in cpu.items()},
    }
    if args.json:
        print(json.dumps(numbers, indent=2))  # noqa: T201
    else:
        print(  # noqa: T201
            f"{Path(args.scene).name}: {len(noisy_channels)} noisy channels, {values} values "
            f"a step, {args.steps} steps, min of {args.repeats}; load average "
            f"{' '.join(f'{x:.2f}' for x in numbers['load_average'])}\n"
            f"  without noise {1e6 * base:8.2f} us/step\n"
            f"  with noise    {1e6 * noisy:8.2f} us/step  ({100 * ratio:+.1f} %; "
            f"acceptance <= +5 %)\n"
            f"  CPU, stepping thread: {1e6 * loop_base:.2f} -> {1e6 * loop_noisy:.2f} us/step "
            f"({100 * (loop_noisy / loop_base - 1):+.1f} %)\n"
            f"  CPU, every thread: {1e6 * cpu_base:.2f} -> {1e6 * cpu_noisy:.2f} us/step "
            f"({100 * (cpu_noisy / cpu_base - 1):+.1f} %)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
