"""Cost of the Isaac Lab style sensors (runtime.sensors.lab) against ``mj_step``, same run.

Run: ``python benchmarks/sensors_lab.py [--steps 2000]``.

Two cases, each timed as the thread's CPU time of 50-step blocks (median block; first calls,
i.e. compilation or cache loads, are made before timing):

* go2 (scenes/go2_lab_sensors.usda): one contact sensor on the 4 feet (air time, history 3,
  filter on the ground), the base IMU and the 187-ray height scan (grid 1.6 m x 1.0 m at
  0.1 m, yaw-aligned, ground only); target <= 0.3x ``mj_step``.
* the same with 16 worlds (16 ``MjData``; the height scans are one cast);
* Panda (scenes/panda_lab_camera.usda): a 64 x 48 depth camera (image-plane depth and
  normals) on one thread; target <= 1x ``mj_step``.

The peer is ``mujoco.mj_step`` of the same model, timed in the same blocks (the IMU's
``mj_rnePostConstraint`` is counted as sensor cost). Prints microseconds per step and
the ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _blocks(function, steps: int, block: int = 50) -> float:
    """Median CPU time per call [us] over blocks of ``block`` calls."""
    times = []
    for _ in range(max(1, steps // block)):
        start = time.thread_time_ns()
        for _ in range(block):
            function()
        times.append((time.thread_time_ns() - start) / block / 1e3)
    return float(np.median(times))


def measure(scene: str, steps: int, worlds: int = 1) -> tuple[float, float, dict[str, float]]:
    import mujoco
    from pxr import Usd

    import runtime.schema  # noqa: F401
    from runtime.engine.mujoco_engine import MujocoEngine
    from runtime.sensors.lab import make_lab_sensors

    engine = MujocoEngine(Usd.Stage.Open(scene))
    sensors = make_lab_sensors(engine, num_envs=worlds)
    for path, sensor in sensors.items():
        if sensor is None or not sensor.enabled:
            raise SystemExit(f"{path}: sensor disabled")
    m, dt = engine.model, engine.dt
    datas = [engine.data]
    for _ in range(worlds - 1):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.ctrl[:] = engine.data.qpos, engine.data.qvel, engine.data.ctrl
        mujoco.mj_forward(m, d)
        datas.append(d)
    for _ in range(20):  # settle, compile
        for d in datas:
            mujoco.mj_step(m, d)
        for sensor in sensors.values():
            sensor.update(datas, dt)

    def physics() -> None:
        for d in datas:
            mujoco.mj_step(m, d)

    def read() -> None:
        for sensor in sensors.values():
            sensor.update(datas, dt)

    per_sensor = {}
    step_us = []
    sensor_us = []
    for _ in range(3):  # interleaved rounds: both see the same machine load
        step_us.append(_blocks(physics, steps))
        sensor_us.append(_blocks(read, steps))
    for path, sensor in sensors.items():
        per_sensor[path.rsplit("/", 1)[-1]] = _blocks(
            lambda s=sensor: s.update(datas, dt), steps // 2
        )
    return min(step_us), min(sensor_us), per_sensor


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    import numba

    numba.set_num_threads(1)
    for label, scene, target, worlds in (
        ("go2: 4-foot contact (air time, history 3) + IMU + 187-ray height scan",
         "scenes/go2_lab_sensors.usda", 0.3, 1),
        ("go2, 16 worlds (mj_step of each world; sensors of all)",
         "scenes/go2_lab_sensors.usda", 0.3, 16),
        ("panda: 64 x 48 depth camera, one thread", "scenes/panda_lab_camera.usda", 1.0, 1),
    ):  # fmt: skip
        step, sensors, parts = measure(scene, args.steps, worlds)
        ratio = sensors / step
        print(f"{label}")  # noqa: T201
        print(  # noqa: T201
            f"  mj_step {step:8.2f} us   sensors {sensors:8.2f} us   ratio {ratio:.2f}x "
            f"(target <= {target}x: {'met' if ratio <= target else 'NOT met'})"
        )
        for name, us in parts.items():
            print(f"    {name:14s} {us:8.2f} us")  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
