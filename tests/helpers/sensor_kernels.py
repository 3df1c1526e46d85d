"""IMU kernel buffers and calls shared by the sensor-kernel tests.

Shared by several test modules (moved from tests/test_sensors_kernels.py).
"""

from __future__ import annotations

import numpy as np

from tests.helpers.reference_sensors import (
    quat_to_matrix,
)


def _imu_buffers(n, ring):
    # The kernel's packed blocks (layout: runtime.sensors._imu_kernels docstring) and
    # named views of their parts.
    ints = np.zeros((n, 10), np.int64)
    floats = np.zeros((n, 2 + ring, 14))
    floats[:, 2:, 7] = 1.0
    floats[:, 1, 6] = 1.0  # identity reading quaternion before the first step
    return dict(
        ints=ints,
        floats=floats,
        ring=floats[:, 2:, :],
        heads=ints[:, 7],
        prev=floats[:, 0, 7:14],
        readings=floats[:, 1, 0:11],
        status=ints[:, 8:10],
    )


def _imu_config(buf, sensors, mode):
    ints = buf["ints"]
    ints[:, 0] = sensors["bodies"]
    ints[:, 1:4] = sensors["widths"]
    ints[:, 4] = sensors["rings"]
    ints[:, 5] = mode
    ints[:, 6] = 1
    buf["floats"][:, 0, 0:7] = np.hstack([sensors["off_p"], sensors["off_q"]])


def _imu_call(kernel, x, sensors, buf, mode, time, use_acc, only=-1, step=7):
    n = sensors["bodies"].shape[0]
    _imu_config(buf, sensors, mode)
    kernel(
        x["quat"],
        x["com"],
        x["lin"],
        x["ang"],
        x["lacc"] if use_acc else np.zeros((0, 3)),
        x["aacc"] if use_acc else np.zeros((0, 3)),
        time,
        step,
        only,
        buf["ints"],
        buf["floats"],
    )
    r = buf["readings"]
    # Gravity reaction from the newest sample's orientation (read-time rule of the kernel
    # docstring): isaac g_up = (0, 0, 9.80665) in float32; physical -g, g = (0, 0, -9.81).
    gs = np.zeros((n, 3))
    for s in range(n):
        from_ring = mode == 1 or sensors["widths"][s][2] > 1
        q = buf["ring"][s, buf["heads"][s], 7:11] if from_ring else r[s, 6:10]
        rot = quat_to_matrix(q / np.linalg.norm(q))
        g_up = np.array([0.0, 0.0, 9.80665]) if mode == 0 else np.array([0.0, 0.0, 9.81])
        gs[s] = rot.T @ g_up
        if mode == 0:
            gs[s] = gs[s].astype(np.float32)
    return r[:, 0:3], r[:, 3:6], r[:, 6:10], gs, r[:, 10]
