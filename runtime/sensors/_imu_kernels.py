"""Numba kernels of the IMU sensor (docs/sensors/imu.md).

Two modes share one kernel (per-sensor mode flag):

* ``0`` Isaac parity: centre-of-mass velocity rotated into the sensor frame, float32
  history, finite difference over a lag of ``Nl`` samples, rolling averages (4.3). Gravity
  is added at read time by the Python layer.
* ``1`` physical: specific force of the sensor point,
  ``a = R^T (a_com + alpha x r + w x (w x r))`` (gravity ``-R^T g`` added at read time),
  with ``a_com`` / ``alpha`` from the engine when supplied, else backward differences of the
  world-frame COM and angular velocities. Float64 throughout.

Packed per-sensor blocks (to keep the per-call argument count low: every array argument
costs Numba's dispatcher about 0.07 us per call):

* ``out_sensor_ints`` (S, 10) int64: ``[body, Nl, Nw, Nq, span, mode, active | head, valid,
  step]`` -- configuration (read), where ``span = max(Nw, Nq, 2 Nl)`` is the number of
  history slots read (the reference ring of size ``max(2 max(N), 20)`` never reads further
  back, so only ``span`` slots are stored); then (in/out) the ring slot of the newest
  sample, the validity flag and the step counter of the reading.
* ``out_sensor_floats`` (S, 2 + R, 14) float64, per sensor:

  * row 0: ``[px, py, pz, qw, qx, qy, qz | v(3), w(3), t]`` -- sensor pose in the parent
    body frame (stage units, wxyz; read), then the previous world COM velocity, angular
    velocity and time (physical mode finite differences; in/out).
  * row 1: ``[acc(3), gyro(3), quat(4), time, -, -, -]`` -- the reading: filtered
    acceleration without gravity (sensor frame), filtered angular velocity (sensor frame,
    rad/s), filtered world orientation (wxyz), reading time. Isaac-mode values are float32
    values stored in float64. The gravity reaction is added at read time from the newest
    sample's orientation (the reading's quat when ``Nq == 1`` in isaac mode, else the
    history slot ``head``), see :mod:`runtime.sensors.imu`.
  * rows ``2 + slot`` (``slot < R``): the history ring, per slot ``[t, v(3), w(3), q(4),
    a(3)]``: time [s], sensor-frame COM velocity (isaac mode), sensor-frame angular
    velocity, world orientation after the USD matrix round trip (wxyz), sensor-frame
    kinematic acceleration (physical).

Isaac-mode sensors whose three widths are 1 (the default configuration) take a compact
branch with the same float32 arithmetic; sensors mounted with the identity orientation share
one sample per body per step (identical formula, identical values).

Kernels trust their inputs (checked by the Python layer).
"""

from __future__ import annotations

import math

import numpy as np

from runtime._compile.jit import jit

__all__ = ["imu_update_kernel", "quat_matrix_round_trip_kernel"]

_RING = 2  # row of history slot 0 in ``out_sensor_floats``


@jit
def _usd_sign(qw, qx, qy, qz):
    """Sign (+1/-1) that USD's matrix-to-quaternion rule gives to the unit quaternion q.

    Equivalent to converting R(q) to a matrix and back with the Open Inventor rule: if the
    trace exceeds the largest diagonal element, ``w >= 0``; otherwise the imaginary
    component on that diagonal's axis is positive.
    """
    xx = qx * qx
    yy = qy * qy
    zz = qz * qz
    d0 = 1.0 - 2.0 * (yy + zz)
    d1 = 1.0 - 2.0 * (xx + zz)
    d2 = 1.0 - 2.0 * (xx + yy)
    trace = d0 + d1 + d2
    if d0 > d1:
        if d0 > d2:
            dmax = d0
            qi = qx
        else:
            dmax = d2
            qi = qz
    elif d1 > d2:
        dmax = d1
        qi = qy
    else:
        dmax = d2
        qi = qz
    if trace > dmax:
        return 1.0 if qw >= 0.0 else -1.0
    return 1.0 if qi >= 0.0 else -1.0


@jit
def quat_matrix_round_trip_kernel(quats, out_quats):
    """Quaternion -> rotation matrix -> quaternion with USD's sign rule.

    See docs/sensors/imu.md#orientation-sign.

    Args:
        quats: unit quaternions, shape (N, 4), float64, wxyz.
        out_quats: result, shape (N, 4), float64, wxyz (q or -q).
    """
    for n in range(quats.shape[0]):
        sign = _usd_sign(quats[n, 0], quats[n, 1], quats[n, 2], quats[n, 3])
        for c in range(4):
            out_quats[n, c] = sign * quats[n, c]


@jit
def imu_update_kernel(
    body_orientations,
    body_com_local,
    body_linear_velocities,
    body_angular_velocities,
    body_linear_accelerations,
    body_angular_accelerations,
    time,
    step,
    only,
    out_sensor_ints,
    out_sensor_floats,
):
    """Process one physics step for the IMUs (all, or sensor ``only``).

    Inactive sensors push nothing and get ``valid = 0`` (history kept).

    Args:
        body_orientations: body quaternions, shape (B, 4), float64, wxyz, body->world.
        body_com_local: centre of mass in the body frame, shape (B, 3), float64, stage units.
        body_linear_velocities: COM linear velocities, shape (B, 3), float64, units/s, world.
        body_angular_velocities: angular velocities, shape (B, 3), float64, rad/s, world.
        body_linear_accelerations: COM accelerations, shape (B, 3), float64, units/s^2,
            world, or shape (0, 3) when the engine supplies none (finite differences).
        body_angular_accelerations: angular accelerations, shape (B, 3) or (0, 3), float64,
            rad/s^2, world.
        time: simulation time t_k, seconds (any real scalar; used as float64).
        step: physics step counter k (any integer scalar).
        only: sensor row to evaluate, or -1 for every sensor.
        out_sensor_ints: packed configuration and state, shape (S, 10), int64 (module
            docstring; columns 7-9 written).
        out_sensor_floats: packed pose, state, reading and history, shape (S, 2 + R, 14),
            float64 (module docstring; row 0 columns 7-13 and rows 1.. written).
    """
    have_acc = body_linear_accelerations.shape[0] == body_orientations.shape[0]
    t64 = np.float64(time)
    step64 = np.int64(step)
    time32 = np.float32(t64)
    first = 0
    end = out_sensor_ints.shape[0]
    if only >= 0:
        first = only
        end = only + 1
    # Isaac mode with all widths 1 (the default configuration) takes a compact branch at
    # the top of the loop. When there are more sensors than bodies, those mounted with the
    # identity orientation are finished by _isaac_width1_shared (one sample per body);
    # otherwise sharing is rare and its bookkeeping would cost more than it saves.
    share = end - first > body_orientations.shape[0]
    n_shared = 0
    t_new = np.float64(time32)
    for s in range(first, end):
        if out_sensor_ints[s, 6] == 0:
            out_sensor_ints[s, 8] = 0
            continue
        b = out_sensor_ints[s, 0]
        nl = out_sensor_ints[s, 1]
        nw = out_sensor_ints[s, 2]
        nq = out_sensor_ints[s, 3]
        size = out_sensor_ints[s, 4]
        mode = out_sensor_ints[s, 5]
        if mode == 0 and nl == 1 and nw == 1 and nq == 1:
            ow = out_sensor_floats[s, 0, 3]
            ox = out_sensor_floats[s, 0, 4]
            oy = out_sensor_floats[s, 0, 5]
            oz = out_sensor_floats[s, 0, 6]
            if share and ow == 1.0 and ox == 0.0 and oy == 0.0 and oz == 0.0:
                n_shared += 1  # done by _isaac_width1_shared below
                continue
            bw = body_orientations[b, 0]
            bx = body_orientations[b, 1]
            by = body_orientations[b, 2]
            bz = body_orientations[b, 3]
            vx = body_linear_velocities[b, 0]
            vy = body_linear_velocities[b, 1]
            vz = body_linear_velocities[b, 2]
            wx = body_angular_velocities[b, 0]
            wy = body_angular_velocities[b, 1]
            wz = body_angular_velocities[b, 2]
            # Same formulas as the general loop (float32 samples kept as float64).
            sw = bw * ow - bx * ox - by * oy - bz * oz
            sx = bw * ox + bx * ow + by * oz - bz * oy
            sy = bw * oy - bx * oz + by * ow + bz * ox
            sz = bw * oz + bx * oy - by * ox + bz * ow
            r00 = 1.0 - 2.0 * (sy * sy + sz * sz)
            r01 = 2.0 * (sx * sy - sw * sz)
            r02 = 2.0 * (sx * sz + sw * sy)
            r10 = 2.0 * (sx * sy + sw * sz)
            r11 = 1.0 - 2.0 * (sx * sx + sz * sz)
            r12 = 2.0 * (sy * sz - sw * sx)
            r20 = 2.0 * (sx * sz - sw * sy)
            r21 = 2.0 * (sy * sz + sw * sx)
            r22 = 1.0 - 2.0 * (sx * sx + sy * sy)
            sign = _usd_sign(sw, sx, sy, sz)
            v0 = np.float64(np.float32(r00 * vx + r10 * vy + r20 * vz))
            v1 = np.float64(np.float32(r01 * vx + r11 * vy + r21 * vz))
            v2 = np.float64(np.float32(r02 * vx + r12 * vy + r22 * vz))
            g0 = np.float64(np.float32(r00 * wx + r10 * wy + r20 * wz))
            g1 = np.float64(np.float32(r01 * wx + r11 * wy + r21 * wz))
            g2 = np.float64(np.float32(r02 * wx + r12 * wy + r22 * wz))
            q0 = np.float64(np.float32(sign * sw))
            q1 = np.float64(np.float32(sign * sx))
            q2 = np.float64(np.float32(sign * sy))
            q3 = np.float64(np.float32(sign * sz))
            head = out_sensor_ints[s, 7] - 1
            if head < 0:
                head += size
            out_sensor_ints[s, 7] = head
            old = head + 1
            if old >= size:
                old -= size
            d_t = np.float32(t_new - out_sensor_floats[s, _RING + old, 0])
            a0 = np.float32(0.0)
            a1 = np.float32(0.0)
            a2 = np.float32(0.0)
            if d_t > 1e-10:
                a0 = np.float32(
                    a0 + np.float32(np.float32(v0 - out_sensor_floats[s, _RING + old, 1]) / d_t)
                )
                a1 = np.float32(
                    a1 + np.float32(np.float32(v1 - out_sensor_floats[s, _RING + old, 2]) / d_t)
                )
                a2 = np.float32(
                    a2 + np.float32(np.float32(v2 - out_sensor_floats[s, _RING + old, 3]) / d_t)
                )
            out_sensor_floats[s, _RING + head, 0] = t_new
            out_sensor_floats[s, _RING + head, 1] = v0
            out_sensor_floats[s, _RING + head, 2] = v1
            out_sensor_floats[s, _RING + head, 3] = v2
            out_sensor_floats[s, 1, 0] = a0
            out_sensor_floats[s, 1, 1] = a1
            out_sensor_floats[s, 1, 2] = a2
            out_sensor_floats[s, 1, 3] = g0
            out_sensor_floats[s, 1, 4] = g1
            out_sensor_floats[s, 1, 5] = g2
            out_sensor_floats[s, 1, 6] = q0
            out_sensor_floats[s, 1, 7] = q1
            out_sensor_floats[s, 1, 8] = q2
            out_sensor_floats[s, 1, 9] = q3
            out_sensor_floats[s, 1, 10] = t_new
            out_sensor_ints[s, 8] = 1
            out_sensor_ints[s, 9] = step64
            continue
        bw = body_orientations[b, 0]
        bx = body_orientations[b, 1]
        by = body_orientations[b, 2]
        bz = body_orientations[b, 3]
        ow = out_sensor_floats[s, 0, 3]
        ox = out_sensor_floats[s, 0, 4]
        oy = out_sensor_floats[s, 0, 5]
        oz = out_sensor_floats[s, 0, 6]
        # Sensor world orientation q_S = q_b (x) q_offset and R = R(q_S).
        sw = bw * ow - bx * ox - by * oy - bz * oz
        sx = bw * ox + bx * ow + by * oz - bz * oy
        sy = bw * oy - bx * oz + by * ow + bz * ox
        sz = bw * oz + bx * oy - by * ox + bz * ow
        r00 = 1.0 - 2.0 * (sy * sy + sz * sz)
        r01 = 2.0 * (sx * sy - sw * sz)
        r02 = 2.0 * (sx * sz + sw * sy)
        r10 = 2.0 * (sx * sy + sw * sz)
        r11 = 1.0 - 2.0 * (sx * sx + sz * sz)
        r12 = 2.0 * (sy * sz - sw * sx)
        r20 = 2.0 * (sx * sz - sw * sy)
        r21 = 2.0 * (sy * sz + sw * sx)
        r22 = 1.0 - 2.0 * (sx * sx + sy * sy)
        sign = _usd_sign(sw, sx, sy, sz)
        head = out_sensor_ints[s, 7] - 1
        if head < 0:
            head += size
        out_sensor_ints[s, 7] = head
        wx = body_angular_velocities[b, 0]
        wy = body_angular_velocities[b, 1]
        wz = body_angular_velocities[b, 2]
        vx = body_linear_velocities[b, 0]
        vy = body_linear_velocities[b, 1]
        vz = body_linear_velocities[b, 2]
        # Sensor-frame angular velocity R^T w.
        swx = r00 * wx + r10 * wy + r20 * wz
        swy = r01 * wx + r11 * wy + r21 * wz
        swz = r02 * wx + r12 * wy + r22 * wz
        if mode == 0:
            # ---- Isaac parity: float32 samples and sums.
            out_sensor_floats[s, _RING + head, 0] = time32
            out_sensor_floats[s, _RING + head, 1] = np.float32(r00 * vx + r10 * vy + r20 * vz)
            out_sensor_floats[s, _RING + head, 2] = np.float32(r01 * vx + r11 * vy + r21 * vz)
            out_sensor_floats[s, _RING + head, 3] = np.float32(r02 * vx + r12 * vy + r22 * vz)
            # Width 1: the reading is the sample itself (angular velocity / orientation
            # slots of the history are only read, hence only written, for widths > 1).
            if nw == 1:
                out_sensor_floats[s, 1, 3] = np.float32(swx)
                out_sensor_floats[s, 1, 4] = np.float32(swy)
                out_sensor_floats[s, 1, 5] = np.float32(swz)
            else:
                out_sensor_floats[s, _RING + head, 4] = np.float32(swx)
                out_sensor_floats[s, _RING + head, 5] = np.float32(swy)
                out_sensor_floats[s, _RING + head, 6] = np.float32(swz)
                g0 = np.float32(0.0)
                g1 = np.float32(0.0)
                g2 = np.float32(0.0)
                for n in range(nw):
                    slot = head + n
                    if slot >= size:
                        slot -= size
                    g0 = np.float32(g0 + np.float32(out_sensor_floats[s, _RING + slot, 4]))
                    g1 = np.float32(g1 + np.float32(out_sensor_floats[s, _RING + slot, 5]))
                    g2 = np.float32(g2 + np.float32(out_sensor_floats[s, _RING + slot, 6]))
                fnw = np.float32(nw)
                out_sensor_floats[s, 1, 3] = np.float32(g0 / fnw)
                out_sensor_floats[s, 1, 4] = np.float32(g1 / fnw)
                out_sensor_floats[s, 1, 5] = np.float32(g2 / fnw)
            a0 = np.float32(0.0)
            a1 = np.float32(0.0)
            a2 = np.float32(0.0)
            for n in range(nl):
                new = head + n
                if new >= size:
                    new -= size
                old = new + nl
                if old >= size:
                    old -= size
                d_t = np.float32(
                    out_sensor_floats[s, _RING + new, 0] - out_sensor_floats[s, _RING + old, 0]
                )
                if d_t > 1e-10:
                    a0 = np.float32(
                        a0
                        + np.float32(
                            np.float32(
                                out_sensor_floats[s, _RING + new, 1]
                                - out_sensor_floats[s, _RING + old, 1]
                            )
                            / d_t
                        )
                    )
                    a1 = np.float32(
                        a1
                        + np.float32(
                            np.float32(
                                out_sensor_floats[s, _RING + new, 2]
                                - out_sensor_floats[s, _RING + old, 2]
                            )
                            / d_t
                        )
                    )
                    a2 = np.float32(
                        a2
                        + np.float32(
                            np.float32(
                                out_sensor_floats[s, _RING + new, 3]
                                - out_sensor_floats[s, _RING + old, 3]
                            )
                            / d_t
                        )
                    )
            if nl == 1:
                out_sensor_floats[s, 1, 0] = a0
                out_sensor_floats[s, 1, 1] = a1
                out_sensor_floats[s, 1, 2] = a2
            else:
                fnl = np.float32(nl)
                out_sensor_floats[s, 1, 0] = np.float32(a0 / fnl)
                out_sensor_floats[s, 1, 1] = np.float32(a1 / fnl)
                out_sensor_floats[s, 1, 2] = np.float32(a2 / fnl)
            if nq == 1:
                # One sample: the reading is the (unit) sample itself; the read-time
                # renormalisation (4.4) covers the float32 rounding.
                out_sensor_floats[s, 1, 6] = np.float32(sign * sw)
                out_sensor_floats[s, 1, 7] = np.float32(sign * sx)
                out_sensor_floats[s, 1, 8] = np.float32(sign * sy)
                out_sensor_floats[s, 1, 9] = np.float32(sign * sz)
            else:
                out_sensor_floats[s, _RING + head, 7] = np.float32(sign * sw)
                out_sensor_floats[s, _RING + head, 8] = np.float32(sign * sx)
                out_sensor_floats[s, _RING + head, 9] = np.float32(sign * sy)
                out_sensor_floats[s, _RING + head, 10] = np.float32(sign * sz)
                qs0 = np.float32(0.0)
                qs1 = np.float32(0.0)
                qs2 = np.float32(0.0)
                qs3 = np.float32(0.0)
                for n in range(nq):
                    slot = head + n
                    if slot >= size:
                        slot -= size
                    qs0 = np.float32(qs0 + np.float32(out_sensor_floats[s, _RING + slot, 7]))
                    qs1 = np.float32(qs1 + np.float32(out_sensor_floats[s, _RING + slot, 8]))
                    qs2 = np.float32(qs2 + np.float32(out_sensor_floats[s, _RING + slot, 9]))
                    qs3 = np.float32(qs3 + np.float32(out_sensor_floats[s, _RING + slot, 10]))
                inv = np.float32(np.float32(1.0) / np.float32(nq))
                qs0 = np.float32(qs0 * inv)
                qs1 = np.float32(qs1 * inv)
                qs2 = np.float32(qs2 * inv)
                qs3 = np.float32(qs3 * inv)
                norm = np.float32(
                    np.sqrt(np.float32(qs0 * qs0 + qs1 * qs1 + qs2 * qs2 + qs3 * qs3))
                )
                if np.isfinite(norm) and norm > 0.0:
                    out_sensor_floats[s, 1, 6] = np.float32(qs0 / norm)
                    out_sensor_floats[s, 1, 7] = np.float32(qs1 / norm)
                    out_sensor_floats[s, 1, 8] = np.float32(qs2 / norm)
                    out_sensor_floats[s, 1, 9] = np.float32(qs3 / norm)
                else:
                    for i in range(4):
                        out_sensor_floats[s, 1, 6 + i] = out_sensor_floats[s, _RING + head, 7 + i]
            out_sensor_floats[s, 1, 10] = time32
        else:
            # ---- Physical: specific force of the sensor point, float64.
            if have_acc:
                ax = body_linear_accelerations[b, 0]
                ay = body_linear_accelerations[b, 1]
                az = body_linear_accelerations[b, 2]
                alx = body_angular_accelerations[b, 0]
                aly = body_angular_accelerations[b, 1]
                alz = body_angular_accelerations[b, 2]
            else:
                d_t = t64 - out_sensor_floats[s, 0, 13]
                if d_t > 1e-12:
                    ax = (vx - out_sensor_floats[s, 0, 7]) / d_t
                    ay = (vy - out_sensor_floats[s, 0, 8]) / d_t
                    az = (vz - out_sensor_floats[s, 0, 9]) / d_t
                    alx = (wx - out_sensor_floats[s, 0, 10]) / d_t
                    aly = (wy - out_sensor_floats[s, 0, 11]) / d_t
                    alz = (wz - out_sensor_floats[s, 0, 12]) / d_t
                else:
                    ax = 0.0
                    ay = 0.0
                    az = 0.0
                    alx = 0.0
                    aly = 0.0
                    alz = 0.0
            out_sensor_floats[s, 0, 7] = vx
            out_sensor_floats[s, 0, 8] = vy
            out_sensor_floats[s, 0, 9] = vz
            out_sensor_floats[s, 0, 10] = wx
            out_sensor_floats[s, 0, 11] = wy
            out_sensor_floats[s, 0, 12] = wz
            out_sensor_floats[s, 0, 13] = t64
            # Lever arm r = R_b (offset - com), world frame.
            lx = out_sensor_floats[s, 0, 0] - body_com_local[b, 0]
            ly = out_sensor_floats[s, 0, 1] - body_com_local[b, 1]
            lz = out_sensor_floats[s, 0, 2] - body_com_local[b, 2]
            tx = 2.0 * (by * lz - bz * ly)
            ty = 2.0 * (bz * lx - bx * lz)
            tz = 2.0 * (bx * ly - by * lx)
            rx = lx + bw * tx + (by * tz - bz * ty)
            ry = ly + bw * ty + (bz * tx - bx * tz)
            rz = lz + bw * tz + (bx * ty - by * tx)
            # alpha x r + w x (w x r).
            cx = wy * rz - wz * ry
            cy = wz * rx - wx * rz
            cz = wx * ry - wy * rx
            ax += (aly * rz - alz * ry) + (wy * cz - wz * cy)
            ay += (alz * rx - alx * rz) + (wz * cx - wx * cz)
            az += (alx * ry - aly * rx) + (wx * cy - wy * cx)
            out_sensor_floats[s, _RING + head, 0] = t64
            out_sensor_floats[s, _RING + head, 4] = swx
            out_sensor_floats[s, _RING + head, 5] = swy
            out_sensor_floats[s, _RING + head, 6] = swz
            out_sensor_floats[s, _RING + head, 7] = sign * sw
            out_sensor_floats[s, _RING + head, 8] = sign * sx
            out_sensor_floats[s, _RING + head, 9] = sign * sy
            out_sensor_floats[s, _RING + head, 10] = sign * sz
            out_sensor_floats[s, _RING + head, 11] = r00 * ax + r10 * ay + r20 * az
            out_sensor_floats[s, _RING + head, 12] = r01 * ax + r11 * ay + r21 * az
            out_sensor_floats[s, _RING + head, 13] = r02 * ax + r12 * ay + r22 * az
            for i in range(3):
                acc = 0.0
                for n in range(nw):
                    slot = head + n
                    if slot >= size:
                        slot -= size
                    acc += out_sensor_floats[s, _RING + slot, 4 + i]
                out_sensor_floats[s, 1, 3 + i] = acc / nw
                acc = 0.0
                for n in range(nl):
                    slot = head + n
                    if slot >= size:
                        slot -= size
                    acc += out_sensor_floats[s, _RING + slot, 11 + i]
                out_sensor_floats[s, 1, i] = acc / nl
            q0 = 0.0
            q1 = 0.0
            q2 = 0.0
            q3 = 0.0
            for n in range(nq):
                slot = head + n
                if slot >= size:
                    slot -= size
                q0 += out_sensor_floats[s, _RING + slot, 7]
                q1 += out_sensor_floats[s, _RING + slot, 8]
                q2 += out_sensor_floats[s, _RING + slot, 9]
                q3 += out_sensor_floats[s, _RING + slot, 10]
            norm = np.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
            if np.isfinite(norm) and norm > 0.0:
                out_sensor_floats[s, 1, 6] = q0 / norm
                out_sensor_floats[s, 1, 7] = q1 / norm
                out_sensor_floats[s, 1, 8] = q2 / norm
                out_sensor_floats[s, 1, 9] = q3 / norm
            else:
                for i in range(4):
                    out_sensor_floats[s, 1, 6 + i] = out_sensor_floats[s, _RING + head, 7 + i]
            out_sensor_floats[s, 1, 10] = t64
        out_sensor_ints[s, 8] = 1
        out_sensor_ints[s, 9] = step64
    if n_shared:
        _isaac_width1_shared(
            body_orientations,
            body_linear_velocities,
            body_angular_velocities,
            first,
            end,
            t_new,
            step64,
            out_sensor_ints,
            out_sensor_floats,
        )


@jit
def _isaac_width1_shared(
    body_orientations,
    body_linear_velocities,
    body_angular_velocities,
    first,
    end,
    t_new,
    step,
    out_sensor_ints,
    out_sensor_floats,
):
    """Isaac-mode, width-1, identity-mounted sensors: one sample per body, same arithmetic.

    The sample of a body (its sensor-frame velocities and USD-signed orientation, float32
    values) is computed by the body's first sensor with the general formula and the
    identity offset, so every sensor gets the values it would compute itself. Processes the
    rows ``first <= s < end`` that :func:`imu_update_kernel` left to it: active, isaac
    mode, the three widths 1, identity mount.

    Args:
        body_orientations: body quaternions, shape (B, 4), float64, wxyz, body->world.
        body_linear_velocities: COM linear velocities, shape (B, 3), float64, world.
        body_angular_velocities: angular velocities, shape (B, 3), float64, rad/s, world.
        first: first sensor row.
        end: one past the last sensor row.
        t_new: float32 time of the step (as float64).
        step: physics step counter.
        out_sensor_ints: packed integers, shape (S, 10), int64 (module docstring).
        out_sensor_floats: packed floats, shape (S, 2 + R, 14), float64 (module docstring).
    """
    body_count = body_orientations.shape[0]
    samples = np.empty((body_count, 10))
    done = np.zeros(body_count, np.bool_)
    for s in range(first, end):
        if not (
            out_sensor_ints[s, 6] != 0
            and out_sensor_ints[s, 5] == 0
            and out_sensor_ints[s, 1] == 1
            and out_sensor_ints[s, 2] == 1
            and out_sensor_ints[s, 3] == 1
            and out_sensor_floats[s, 0, 3] == 1.0
            and out_sensor_floats[s, 0, 4] == 0.0
            and out_sensor_floats[s, 0, 5] == 0.0
            and out_sensor_floats[s, 0, 6] == 0.0
        ):
            continue
        b = out_sensor_ints[s, 0]
        if not done[b]:
            done[b] = True
            bw = body_orientations[b, 0]
            bx = body_orientations[b, 1]
            by = body_orientations[b, 2]
            bz = body_orientations[b, 3]
            vx = body_linear_velocities[b, 0]
            vy = body_linear_velocities[b, 1]
            vz = body_linear_velocities[b, 2]
            wx = body_angular_velocities[b, 0]
            wy = body_angular_velocities[b, 1]
            wz = body_angular_velocities[b, 2]
            # q_S = q_b (x) (1, 0, 0, 0), written out as in the general loop.
            sw = bw * 1.0 - bx * 0.0 - by * 0.0 - bz * 0.0
            sx = bw * 0.0 + bx * 1.0 + by * 0.0 - bz * 0.0
            sy = bw * 0.0 - bx * 0.0 + by * 1.0 + bz * 0.0
            sz = bw * 0.0 + bx * 0.0 - by * 0.0 + bz * 1.0
            r00 = 1.0 - 2.0 * (sy * sy + sz * sz)
            r01 = 2.0 * (sx * sy - sw * sz)
            r02 = 2.0 * (sx * sz + sw * sy)
            r10 = 2.0 * (sx * sy + sw * sz)
            r11 = 1.0 - 2.0 * (sx * sx + sz * sz)
            r12 = 2.0 * (sy * sz - sw * sx)
            r20 = 2.0 * (sx * sz - sw * sy)
            r21 = 2.0 * (sy * sz + sw * sx)
            r22 = 1.0 - 2.0 * (sx * sx + sy * sy)
            sign = _usd_sign(sw, sx, sy, sz)
            samples[b, 0] = np.float32(r00 * vx + r10 * vy + r20 * vz)
            samples[b, 1] = np.float32(r01 * vx + r11 * vy + r21 * vz)
            samples[b, 2] = np.float32(r02 * vx + r12 * vy + r22 * vz)
            samples[b, 3] = np.float32(r00 * wx + r10 * wy + r20 * wz)
            samples[b, 4] = np.float32(r01 * wx + r11 * wy + r21 * wz)
            samples[b, 5] = np.float32(r02 * wx + r12 * wy + r22 * wz)
            samples[b, 6] = np.float32(sign * sw)
            samples[b, 7] = np.float32(sign * sx)
            samples[b, 8] = np.float32(sign * sy)
            samples[b, 9] = np.float32(sign * sz)
        size = out_sensor_ints[s, 4]
        head = out_sensor_ints[s, 7] - 1
        if head < 0:
            head += size
        out_sensor_ints[s, 7] = head
        old = head + 1
        if old >= size:
            old -= size
        d_t = np.float32(t_new - out_sensor_floats[s, _RING + old, 0])
        out_sensor_floats[s, _RING + head, 0] = t_new
        for j in range(3):
            v = samples[b, j]
            a = np.float32(0.0)
            if d_t > 1e-10:
                a = np.float32(
                    a + np.float32(np.float32(v - out_sensor_floats[s, _RING + old, 1 + j]) / d_t)
                )
            out_sensor_floats[s, _RING + head, 1 + j] = v
            out_sensor_floats[s, 1, j] = a
        for j in range(3, 10):
            out_sensor_floats[s, 1, j] = samples[b, j]
        out_sensor_floats[s, 1, 10] = t_new
        out_sensor_ints[s, 8] = 1
        out_sensor_ints[s, 9] = step


@jit
def imu_read_kernel(
    sensor_ints, sensor_floats, i, physical_gravity, gravity_up, read_gravity, out_reading
):
    """Read-time processing of one IMU's reading (docs/sensors/imu.md#read-time), in one call.

    The same IEEE operations in the same order as ``ImuBatch.arrays`` (bit-identical):
    the gravity reaction ``R^T v`` of the newest sample's orientation, by the conjugate
    quaternion ``t = 2 (u x v)``, ``v + w t + u x t`` with ``v = g_up`` (isaac mode, rounded
    to float32 and added in float32 to the float32 reading) or ``v = -g`` (physical mode,
    float64); non-finite values zeroed; the orientation normalised (its norm a sequential
    sum of squares, as NumPy's ``add.reduce`` of four values), identity when degenerate.

    Args:
        sensor_ints: the batch's int block, shape (S, 10), int64 (module layout).
        sensor_floats: the batch's float block, shape (S, 2 + R, 14), float64.
        i: the sensor's row.
        physical_gravity: engine gravity ``g`` of the last step, shape (3,), float64,
            stage units/s^2, world.
        gravity_up: the stage's ``g_up``, shape (3,), float64.
        read_gravity: add the gravity reaction.
        out_reading: ``[acc(3), gyro(3), quat(4), time]``, shape (11,), float64 (written).
    """
    physical = sensor_ints[i, 5] == 1
    reading = sensor_floats[i, 1]
    gx = 0.0
    gy = 0.0
    gz = 0.0
    if read_gravity:
        if physical or sensor_ints[i, 3] > 1:
            q = sensor_floats[i, 2 + sensor_ints[i, 7], 7:11]
        else:
            q = reading[6:10]
        s = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
        w = q[0] / s
        ux = -(q[1] / s)
        uy = -(q[2] / s)
        uz = -(q[3] / s)
        if physical:
            vx = -physical_gravity[0]
            vy = -physical_gravity[1]
            vz = -physical_gravity[2]
        else:
            vx = gravity_up[0]
            vy = gravity_up[1]
            vz = gravity_up[2]
        tx = 2.0 * (uy * vz - uz * vy)
        ty = 2.0 * (uz * vx - ux * vz)
        tz = 2.0 * (ux * vy - uy * vx)
        gx = vx + w * tx + (uy * tz - uz * ty)
        gy = vy + w * ty + (uz * tx - ux * tz)
        gz = vz + w * tz + (ux * ty - uy * tx)
    if not read_gravity:
        ax = reading[0]
        ay = reading[1]
        az = reading[2]
    elif physical:
        ax = reading[0] + gx
        ay = reading[1] + gy
        az = reading[2] + gz
    else:
        ax = np.float64(np.float32(reading[0]) + np.float32(gx))
        ay = np.float64(np.float32(reading[1]) + np.float32(gy))
        az = np.float64(np.float32(reading[2]) + np.float32(gz))
    out_reading[0] = ax if math.isfinite(ax) else 0.0
    out_reading[1] = ay if math.isfinite(ay) else 0.0
    out_reading[2] = az if math.isfinite(az) else 0.0
    for a in range(3):
        v = reading[3 + a]
        out_reading[3 + a] = v if math.isfinite(v) else 0.0
    q0 = reading[6]
    q1 = reading[7]
    q2 = reading[8]
    q3 = reading[9]
    norm = math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    if math.isfinite(norm) and norm > 0.0:
        out_reading[6] = q0 / norm
        out_reading[7] = q1 / norm
        out_reading[8] = q2 / norm
        out_reading[9] = q3 / norm
    else:
        out_reading[6] = 1.0
        out_reading[7] = 0.0
        out_reading[8] = 0.0
        out_reading[9] = 0.0
    out_reading[10] = reading[10]
