"""Cost of the Isaac Lab style sensors (runtime.sensors.lab) against ``mj_step``, same run.

Run: ``python benchmarks/sensors_lab.py [--steps 2000]``.

Each case is timed as the thread's CPU time of 50-step blocks (median block; first calls,
i.e. compilation or cache loads, are made before timing). An update is timed after a
step, as runs and environments call it: blocks of (``mj_step``, update) less blocks of
``mj_step`` alone timed right before (each update sees a new state, and the caches as the
step left them). Cases:

* go2 (scenes/go2_lab_sensors.usda): one contact sensor on the 4 feet (air time, history 3,
  filter on the ground), the base IMU and the 187-ray height scan (grid 1.6 m x 1.0 m at
  0.1 m, yaw-aligned, ground only); target <= 0.3x ``mj_step``.
* the same with 16 worlds (16 ``MjData``; the height scans are one cast);
* Panda (scenes/panda_lab_camera.usda): a 64 x 48 depth camera (image-plane depth and
  normals) on one thread, the arm holding its pose, then moving (its joint targets swing
  +-0.3 rad, one phase per joint, a period of 500 steps); target <= 1x ``mj_step``.
* cameras the shortcuts were not designed for: the same camera on the Panda's hand (a
  moving mount: every ray is cast at every update), and a 64 x 48 camera on a static mount
  in front of go2 looking at the standing robot (its convex-hull links).

What is timed is what runs and vector environments call after each step: one
``LabSensorSet.update`` of all the scene's sensors (contact sensors, IMUs, frame
transformers, joint wrenches, ray casters (the go2 height scan; below 4,096 rays over moving
geometry) and fixed cameras in one compiled call; cameras on moving bodies and larger ray
casters over moving geometry through their own ``update``).
(``simrt run`` calls that compiled call from its compiled step blocks when it covers every
lab sensor of the scene, without the ``update`` method's Python around it.) Per sensor:
that sensor alone in a set (the compiled call, or its ``update``), and the per-sensor
``update`` path of all sensors (the reference path) for comparison.

The peer is ``mujoco.mj_step`` of the same model, timed in the same blocks. Prints
microseconds per step, the ratio and the load average.

Not in the sensors' figure, printed apart: a lab IMU whose model does not compute
accelerations in its step (no acceleration-stage MuJoCo sensor) reads the post-step state,
so runs and environments call ``mj_forward`` before the update (go2's IMU does: about one
more ``mj_step`` alone). The next step reuses that forward
(:mod:`runtime.engine.forward_reuse`): printed is what the forward adds to a step before
(``mj_step`` + ``mj_forward``) and with the reuse (the compiled step that reuses it +
the forward), the controls changed every step and every 4th step, each against
``mj_step`` with the same control writes in the same round. Timed here after a bare
``mj_step``, that IMU reads a state whose velocities are one step ahead of its
accelerations; the sensors' figure is their own cost.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from typing import Any

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


def measure(
    scene: str, steps: int, worlds: int = 1, camera: Any = None, swing: float = 0.0
) -> tuple[float, float, dict[str, tuple[float, bool]], float, float | None]:
    """mj_step [us], the set's update [us], per sensor (us, compiled), per-sensor path [us],
    and the ``mj_forward`` runs and environments call before the update [us] (None: the
    sensors need none).

    ``camera``: a ``RayCasterCameraConfig`` timed alone instead of the scene's sensors.
    ``swing``: the first 7 controls (the Panda's joint targets) swing by this much [rad]
    about their held values (a period of 500 steps, one phase per joint), in the steps
    timed alone and in those before each update alike.
    """
    import mujoco
    from pxr import Usd

    import runtime.schema  # noqa: F401
    from runtime.engine.mujoco_engine import MujocoEngine
    from runtime.run.lab_set import LabSensorSet
    from runtime.sensors.lab import make_lab_sensors

    engine = MujocoEngine(Usd.Stage.Open(scene))
    if camera is None:
        sensors = make_lab_sensors(engine, num_envs=worlds)
    else:
        from runtime.sensors.lab import RayCasterCamera

        sensors = {"/Camera": RayCasterCamera(engine, camera, num_envs=worlds)}
    for path, sensor in sensors.items():
        if sensor is None or not sensor.enabled:
            raise SystemExit(f"{path}: sensor disabled")
    m, dt = engine.model, engine.dt
    phases = np.random.default_rng(0).uniform(0.0, 2.0 * math.pi, 7)
    datas = [engine.data]
    for _ in range(worlds - 1):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.ctrl[:] = engine.data.qpos, engine.data.qvel, engine.data.ctrl
        mujoco.mj_forward(m, d)
        datas.append(d)
    lab = LabSensorSet(sensors, datas)
    alone = {path: LabSensorSet({path: sensor}, datas) for path, sensor in sensors.items()}
    for _ in range(20):  # settle, compile
        for d in datas:
            mujoco.mj_step(m, d)
        lab.update(dt)
        for single in alone.values():
            single.update(dt)

    held = [d.ctrl.copy() for d in datas]
    calls = [0]

    def physics() -> None:
        if swing:  # the arm's joint targets swing +-swing rad about the held pose
            calls[0] += 1
            for w, d in enumerate(datas):
                d.ctrl[:7] = held[w][:7] + swing * np.sin(0.0126 * calls[0] + phases)
        for d in datas:
            mujoco.mj_step(m, d)

    def read() -> None:
        lab.update(dt)

    def each() -> None:
        for sensor in sensors.values():
            sensor.update(datas, dt)

    def stepped(update, count: int) -> float:
        # each update after a step (a new state, and what the step left in the caches),
        # less the steps alone timed right before
        step = _blocks(physics, count)
        return _blocks(lambda: (physics(), update()), count) - step

    step_us = []
    sensor_us = []
    for _ in range(3):  # interleaved rounds: both see the same machine load
        step_us.append(_blocks(physics, steps))
        sensor_us.append(stepped(read, steps))
    per_sensor = {
        path.rsplit("/", 1)[-1]: (
            stepped(lambda s=single: s.update(dt), steps // 2),
            bool(single.compiled),
        )
        for path, single in alone.items()
    }
    compiled = {path: sensors[path] for path, single in alone.items() if single.compiled}
    if len(compiled) > 1:  # the sensors of the one compiled call, together
        together = LabSensorSet(compiled, datas)
        label = " + ".join(path.rsplit("/", 1)[-1] for path in compiled)
        per_sensor[label] = (stepped(lambda: together.update(dt), steps // 2), True)
    reference = stepped(each, steps // 2)
    # a lab IMU without accelerations computed in the step (or a joint wrench) reads the
    # post-step state: runs and environments call mj_forward before the update
    forward_us = None
    if any(
        s.kind == "joint_wrench" or (s.kind == "imu" and not s.step_accelerations)
        for s in sensors.values()
    ):

        def forward() -> None:
            for d in datas:
                mujoco.mj_forward(m, d)

        forward_us = {"alone": _blocks(forward, steps // 2), **_reuse_costs(m, datas, steps)}
    return min(step_us), min(sensor_us), per_sensor, reference, forward_us


def _reuse_costs(m: Any, datas: list[Any], steps: int) -> dict[str, float]:
    """What the post-step forward adds to a step [us], before and with the reuse.

    Per world and step: the controls written (changed every step, or every 4th), then
    ``mj_step`` (the peer), ``mj_step`` + ``mj_forward`` (before: the next step computes
    the forward again), or the compiled step that reuses the forward + the forward
    (``runtime.run._forward_kernels``, as the run's blocks and the vector step call them).
    Interleaved rounds; the extra over the peer of the same round (median blocks).
    """
    from types import SimpleNamespace

    import mujoco

    from runtime.engine.forward_reuse import ForwardReuse
    from runtime.run._forward_kernels import forward_and_arm, step_reusing
    from runtime.run._mujoco_native import reuse_block
    from runtime.run._native_kernels import array_address

    args = []
    holders = []  # (they own the blocks and snapshots the addresses point into)
    for d in datas:
        holders.append(SimpleNamespace(model=m, data=d, forward_reuse=ForwardReuse(m, d)))
        block = reuse_block(holders[-1])
        if block is None or not block[6]:  # (R_ENABLED)
            return {}
        args.append((array_address(block), int(m._address), int(d._address)))
    base = [d.ctrl.copy() for d in datas]
    count = [0]

    def controls(every: int) -> None:
        k = count[0] = count[0] + 1
        if k % every == 0:
            for d, b in zip(datas, base, strict=True):
                d.ctrl[:] = b + (1e-4 if (k // every) % 2 else 0.0)

    def loop(kind: str, every: int) -> Any:
        def run() -> None:
            controls(every)
            for d, a in zip(datas, args, strict=True):
                if kind == "reuse":
                    step_reusing(*a)
                    forward_and_arm(*a)
                else:
                    mujoco.mj_step(m, d)
                    if kind == "before":
                        mujoco.mj_forward(m, d)

        return run

    extra: dict[str, list[float]] = {}
    for _ in range(3):
        for every in (1, 4):
            peer = _blocks(loop("peer", every), steps // 2)
            for kind in ("before", "reuse"):
                key = f"{kind}/{every}"
                extra.setdefault(key, []).append(_blocks(loop(kind, every), steps // 2) - peer)
    del holders  # (kept until here)
    return {key: float(np.median(values)) for key, values in extra.items()}


def _hand_camera() -> Any:
    """The Panda scene's camera moved to the hand: beside it, looking along the gripper.

    (Closer to the hand's origin the camera would start inside the hand's convex hull and
    see nothing but distance 0.)
    """
    from runtime.sensors.lab import CameraOffset, PinholeCameraPattern, RayCasterCameraConfig

    return RayCasterCameraConfig(
        prim_path=".*/panda_hand",
        offset=CameraOffset(pos=(0.06, 0.0, 0.02), rot=(1.0, 0.0, 0.0, 0.0), convention="ros"),
        pattern_cfg=PinholeCameraPattern(width=64, height=48, focal_length=12.0),
        data_types=["distance_to_image_plane", "normals"],
        mesh_prim_paths=["/World/Ground", "/World/Table", "/World/RedBox", "/World/Panda"],
    )


def _go2_camera() -> Any:
    """A camera on the ground prim, 1.2 m in front of go2 and 0.6 m up, facing it."""
    from runtime.sensors.lab import CameraOffset, PinholeCameraPattern, RayCasterCameraConfig

    half_yaw, half_pitch = math.pi / 2.0, 0.15  # yaw 180 degrees, then pitch down 0.3 rad
    rot = (
        math.cos(half_yaw) * math.cos(half_pitch),
        -math.sin(half_yaw) * math.sin(half_pitch),
        math.cos(half_yaw) * math.sin(half_pitch),
        math.sin(half_yaw) * math.cos(half_pitch),
    )
    return RayCasterCameraConfig(
        prim_path="/World/Ground",
        offset=CameraOffset(pos=(1.2, 0.0, 0.65), rot=rot, convention="world"),
        pattern_cfg=PinholeCameraPattern(width=64, height=48, focal_length=12.0),
        data_types=["distance_to_image_plane", "normals"],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    import numba

    numba.set_num_threads(1)
    for label, scene, target, worlds, camera, swing in (
        ("go2: 4-foot contact (air time, history 3) + IMU + 187-ray height scan",
         "scenes/go2_lab_sensors.usda", 0.3, 1, None, 0.0),
        ("go2, 16 worlds (mj_step of each world; sensors of all)",
         "scenes/go2_lab_sensors.usda", 0.3, 16, None, 0.0),
        ("panda: 64 x 48 depth camera, one thread, the arm holding its pose",
         "scenes/panda_lab_camera.usda", 1.0, 1, None, 0.0),
        ("panda: the same, the arm moving (joint targets swing +-0.3 rad)",
         "scenes/panda_lab_camera.usda", 1.0, 1, None, 0.3),
        ("panda: the 64 x 48 camera on the hand (moving mount), one thread",
         "scenes/panda_lab_camera.usda", 1.0, 1, _hand_camera(), 0.0),
        ("go2: a 64 x 48 camera on a static mount looking at the robot, one thread",
         "scenes/go2_lab_sensors.usda", 1.0, 1, _go2_camera(), 0.0),
    ):  # fmt: skip
        step, sensors, parts, reference, forward = measure(scene, args.steps, worlds, camera, swing)
        ratio = sensors / step
        print(f"{label}   (load average {os.getloadavg()[0]:.2f})")  # noqa: T201
        print(  # noqa: T201
            f"  mj_step {step:8.2f} us   sensors {sensors:8.2f} us   ratio {ratio:.2f}x "
            f"(target <= {target}x: {'met' if ratio <= target else 'NOT met'})"
        )
        for name, (us, compiled) in parts.items():
            how = "compiled" if compiled else "own update"
            if us <= 0.0:  # (a difference of two medians below their noise)
                print(f"    {name:24s}    ~0    (below the noise of mj_step)  ({how})")  # noqa: T201
                continue
            print(f"    {name:24s} {us:8.2f} us  {us / step:5.2f}x  ({how})")  # noqa: T201
        print(f"    {'per-sensor update() path':24s} {reference:8.2f} us  {reference / step:5.2f}x")  # noqa: T201
        if forward is not None:
            alone = forward["alone"]
            print(  # noqa: T201
                f"    {'+ mj_forward (post-step)':24s} {alone:8.2f} us  {alone / step:5.2f}x  "
                f"(runs and envs call it first: the IMU's post-step accelerations)"
            )
            for every, when in ((1, "ctrl changed every step"), (4, "ctrl every 4th step")):
                if f"reuse/{every}" not in forward:
                    continue
                before, after = forward[f"before/{every}"], forward[f"reuse/{every}"]
                print(  # noqa: T201
                    f"      what it adds to a step, {when}: before {before:6.2f} us "
                    f"({before / step:.2f}x), reused by the next step {after:6.2f} us "
                    f"({after / step:.2f}x); sensors + forward {(sensors + after) / step:.2f}x "
                    f"(before {(sensors + before) / step:.2f}x)"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
