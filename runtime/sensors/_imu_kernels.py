"""Numba kernels of the IMU sensor (spec sensors.md section 4).

Two modes share one kernel (per-sensor mode flag):

* ``0`` Isaac parity: centre-of-mass velocity rotated into the sensor frame, float32
  history, finite difference over a lag of ``Nl`` samples, rolling averages (4.3). Gravity
  is added at read time by the Python layer.
* ``1`` physical: specific force of the sensor point,
  ``a = R^T (a_com + alpha x r + w x (w x r))`` (gravity ``-R^T g`` added at read time),
  with ``a_com`` / ``alpha`` from the engine when supplied, else backward differences of the
  world-frame COM and angular velocities. Float64 throughout.

Packed layouts (to keep the per-call argument count low):

* ``sensor_ints`` (S, 7) int64: ``[body, Nl, Nw, Nq, span, mode, active]`` where ``span =
  max(Nw, Nq, 2 Nl)`` is the number of history slots read (the reference ring of size
  ``max(2 max(N), 20)`` never reads further back, so only ``span`` slots are stored).
* ``sensor_floats`` (S, 7) float64: sensor pose in the parent body frame
  ``[px, py, pz, qw, qx, qy, qz]`` (stage units, wxyz).
* ``out_ring`` (S, R, 14) float64, per slot ``[t, v(3), w(3), q(4), a(3)]``: time [s],
  sensor-frame COM velocity (isaac mode), sensor-frame angular velocity, world orientation
  after the USD matrix round trip (wxyz), sensor-frame kinematic acceleration (physical).
* ``out_prev`` (S, 7) float64: previous world COM velocity, angular velocity and time
  (physical mode finite differences).
* ``out_readings`` (S, 11) float64: ``[acc(3), gyro(3), quat(4), time]`` -- filtered
  acceleration without gravity (sensor frame), filtered angular velocity (sensor frame,
  rad/s), filtered world orientation (wxyz), reading time. Isaac-mode values are float32
  values stored in float64. The gravity reaction is added at read time from the newest
  sample's orientation (``out_readings`` quat when ``Nq == 1`` in isaac mode, else the
  history slot ``out_heads``), see :mod:`runtime.sensors.imu`.

Isaac-mode sensors whose three widths are 1 (the default configuration) take a compact
branch with the same float32 arithmetic; sensors mounted with the identity orientation share
one sample per body per step (identical formula, identical values).

Kernels trust their inputs (checked by the Python layer).
"""

from __future__ import annotations

import numpy as np

from runtime._jit import jit

__all__ = ["imu_update_kernel", "quat_matrix_round_trip_kernel"]


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
    """Quaternion -> rotation matrix -> quaternion with USD's sign rule (sensors.md 4.5).

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
    sensor_ints,
    sensor_floats,
    sensor_indices,
    time,
    step,
    out_ring,
    out_heads,
    out_prev,
    out_readings,
    out_status,
):
    """Process one physics step for the IMUs listed in ``sensor_indices``.

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
        sensor_ints: packed per-sensor integers, shape (S, 7), int64 (module docstring).
        sensor_floats: sensor pose in the parent body frame, shape (S, 7), float64.
        sensor_indices: sensors to evaluate this call, shape (K,), int64.
        time: simulation time t_k, seconds.
        step: physics step counter k, int.
        out_ring: history, shape (S, R, 14), float64 (in/out).
        out_heads: ring slot of the newest sample, shape (S,), int64 (in/out).
        out_prev: previous velocities and time, shape (S, 7), float64 (in/out).
        out_readings: readings, shape (S, 11), float64 (module docstring).
        out_status: ``[valid, step]`` per sensor, shape (S, 2), int64.
    """
    have_acc = body_linear_accelerations.shape[0] == body_orientations.shape[0]
    time32 = np.float32(time)
    count = sensor_indices.shape[0]
    # Isaac mode with all widths 1 (the default configuration) takes a compact branch at
    # the top of the loop. When there are more sensors than bodies, those mounted with the
    # identity orientation are finished by _isaac_width1_shared (one sample per body);
    # otherwise sharing is rare and its bookkeeping would cost more than it saves.
    share = count > body_orientations.shape[0]
    shared = np.empty(count, np.int64)
    n_shared = 0
    t_new = np.float64(time32)
    for k in range(count):
        s = sensor_indices[k]
        if sensor_ints[s, 6] == 0:
            out_status[s, 0] = 0
            continue
        b = sensor_ints[s, 0]
        nl = sensor_ints[s, 1]
        nw = sensor_ints[s, 2]
        nq = sensor_ints[s, 3]
        size = sensor_ints[s, 4]
        mode = sensor_ints[s, 5]
        if mode == 0 and nl == 1 and nw == 1 and nq == 1:
            ow = sensor_floats[s, 3]
            ox = sensor_floats[s, 4]
            oy = sensor_floats[s, 5]
            oz = sensor_floats[s, 6]
            if share and ow == 1.0 and ox == 0.0 and oy == 0.0 and oz == 0.0:
                shared[n_shared] = s
                n_shared += 1
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
            head = out_heads[s] - 1
            if head < 0:
                head += size
            out_heads[s] = head
            old = head + 1
            if old >= size:
                old -= size
            d_t = np.float32(t_new - out_ring[s, old, 0])
            a0 = np.float32(0.0)
            a1 = np.float32(0.0)
            a2 = np.float32(0.0)
            if d_t > 1e-10:
                a0 = np.float32(a0 + np.float32(np.float32(v0 - out_ring[s, old, 1]) / d_t))
                a1 = np.float32(a1 + np.float32(np.float32(v1 - out_ring[s, old, 2]) / d_t))
                a2 = np.float32(a2 + np.float32(np.float32(v2 - out_ring[s, old, 3]) / d_t))
            out_ring[s, head, 0] = t_new
            out_ring[s, head, 1] = v0
            out_ring[s, head, 2] = v1
            out_ring[s, head, 3] = v2
            out_readings[s, 0] = a0
            out_readings[s, 1] = a1
            out_readings[s, 2] = a2
            out_readings[s, 3] = g0
            out_readings[s, 4] = g1
            out_readings[s, 5] = g2
            out_readings[s, 6] = q0
            out_readings[s, 7] = q1
            out_readings[s, 8] = q2
            out_readings[s, 9] = q3
            out_readings[s, 10] = t_new
            out_status[s, 0] = 1
            out_status[s, 1] = step
            continue
        bw = body_orientations[b, 0]
        bx = body_orientations[b, 1]
        by = body_orientations[b, 2]
        bz = body_orientations[b, 3]
        ow = sensor_floats[s, 3]
        ox = sensor_floats[s, 4]
        oy = sensor_floats[s, 5]
        oz = sensor_floats[s, 6]
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
        head = out_heads[s] - 1
        if head < 0:
            head += size
        out_heads[s] = head
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
            out_ring[s, head, 0] = time32
            out_ring[s, head, 1] = np.float32(r00 * vx + r10 * vy + r20 * vz)
            out_ring[s, head, 2] = np.float32(r01 * vx + r11 * vy + r21 * vz)
            out_ring[s, head, 3] = np.float32(r02 * vx + r12 * vy + r22 * vz)
            # Width 1: the reading is the sample itself (angular velocity / orientation
            # slots of the history are only read, hence only written, for widths > 1).
            if nw == 1:
                out_readings[s, 3] = np.float32(swx)
                out_readings[s, 4] = np.float32(swy)
                out_readings[s, 5] = np.float32(swz)
            else:
                out_ring[s, head, 4] = np.float32(swx)
                out_ring[s, head, 5] = np.float32(swy)
                out_ring[s, head, 6] = np.float32(swz)
                g0 = np.float32(0.0)
                g1 = np.float32(0.0)
                g2 = np.float32(0.0)
                for n in range(nw):
                    slot = head + n
                    if slot >= size:
                        slot -= size
                    g0 = np.float32(g0 + np.float32(out_ring[s, slot, 4]))
                    g1 = np.float32(g1 + np.float32(out_ring[s, slot, 5]))
                    g2 = np.float32(g2 + np.float32(out_ring[s, slot, 6]))
                fnw = np.float32(nw)
                out_readings[s, 3] = np.float32(g0 / fnw)
                out_readings[s, 4] = np.float32(g1 / fnw)
                out_readings[s, 5] = np.float32(g2 / fnw)
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
                d_t = np.float32(out_ring[s, new, 0] - out_ring[s, old, 0])
                if d_t > 1e-10:
                    a0 = np.float32(
                        a0 + np.float32(np.float32(out_ring[s, new, 1] - out_ring[s, old, 1]) / d_t)
                    )
                    a1 = np.float32(
                        a1 + np.float32(np.float32(out_ring[s, new, 2] - out_ring[s, old, 2]) / d_t)
                    )
                    a2 = np.float32(
                        a2 + np.float32(np.float32(out_ring[s, new, 3] - out_ring[s, old, 3]) / d_t)
                    )
            if nl == 1:
                out_readings[s, 0] = a0
                out_readings[s, 1] = a1
                out_readings[s, 2] = a2
            else:
                fnl = np.float32(nl)
                out_readings[s, 0] = np.float32(a0 / fnl)
                out_readings[s, 1] = np.float32(a1 / fnl)
                out_readings[s, 2] = np.float32(a2 / fnl)
            if nq == 1:
                # One sample: the reading is the (unit) sample itself; the read-time
                # renormalisation (4.4) covers the float32 rounding.
                out_readings[s, 6] = np.float32(sign * sw)
                out_readings[s, 7] = np.float32(sign * sx)
                out_readings[s, 8] = np.float32(sign * sy)
                out_readings[s, 9] = np.float32(sign * sz)
            else:
                out_ring[s, head, 7] = np.float32(sign * sw)
                out_ring[s, head, 8] = np.float32(sign * sx)
                out_ring[s, head, 9] = np.float32(sign * sy)
                out_ring[s, head, 10] = np.float32(sign * sz)
                qs0 = np.float32(0.0)
                qs1 = np.float32(0.0)
                qs2 = np.float32(0.0)
                qs3 = np.float32(0.0)
                for n in range(nq):
                    slot = head + n
                    if slot >= size:
                        slot -= size
                    qs0 = np.float32(qs0 + np.float32(out_ring[s, slot, 7]))
                    qs1 = np.float32(qs1 + np.float32(out_ring[s, slot, 8]))
                    qs2 = np.float32(qs2 + np.float32(out_ring[s, slot, 9]))
                    qs3 = np.float32(qs3 + np.float32(out_ring[s, slot, 10]))
                inv = np.float32(np.float32(1.0) / np.float32(nq))
                qs0 = np.float32(qs0 * inv)
                qs1 = np.float32(qs1 * inv)
                qs2 = np.float32(qs2 * inv)
                qs3 = np.float32(qs3 * inv)
                norm = np.float32(
                    np.sqrt(np.float32(qs0 * qs0 + qs1 * qs1 + qs2 * qs2 + qs3 * qs3))
                )
                if np.isfinite(norm) and norm > 0.0:
                    out_readings[s, 6] = np.float32(qs0 / norm)
                    out_readings[s, 7] = np.float32(qs1 / norm)
                    out_readings[s, 8] = np.float32(qs2 / norm)
                    out_readings[s, 9] = np.float32(qs3 / norm)
                else:
                    for i in range(4):
                        out_readings[s, 6 + i] = out_ring[s, head, 7 + i]
            out_readings[s, 10] = time32
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
                d_t = time - out_prev[s, 6]
                if d_t > 1e-12:
                    ax = (vx - out_prev[s, 0]) / d_t
                    ay = (vy - out_prev[s, 1]) / d_t
                    az = (vz - out_prev[s, 2]) / d_t
                    alx = (wx - out_prev[s, 3]) / d_t
                    aly = (wy - out_prev[s, 4]) / d_t
                    alz = (wz - out_prev[s, 5]) / d_t
                else:
                    ax = 0.0
                    ay = 0.0
                    az = 0.0
                    alx = 0.0
                    aly = 0.0
                    alz = 0.0
            out_prev[s, 0] = vx
            out_prev[s, 1] = vy
            out_prev[s, 2] = vz
            out_prev[s, 3] = wx
            out_prev[s, 4] = wy
            out_prev[s, 5] = wz
            out_prev[s, 6] = time
            # Lever arm r = R_b (offset - com), world frame.
            lx = sensor_floats[s, 0] - body_com_local[b, 0]
            ly = sensor_floats[s, 1] - body_com_local[b, 1]
            lz = sensor_floats[s, 2] - body_com_local[b, 2]
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
            out_ring[s, head, 0] = time
            out_ring[s, head, 4] = swx
            out_ring[s, head, 5] = swy
            out_ring[s, head, 6] = swz
            out_ring[s, head, 7] = sign * sw
            out_ring[s, head, 8] = sign * sx
            out_ring[s, head, 9] = sign * sy
            out_ring[s, head, 10] = sign * sz
            out_ring[s, head, 11] = r00 * ax + r10 * ay + r20 * az
            out_ring[s, head, 12] = r01 * ax + r11 * ay + r21 * az
            out_ring[s, head, 13] = r02 * ax + r12 * ay + r22 * az
            for i in range(3):
                acc = 0.0
                for n in range(nw):
                    slot = head + n
                    if slot >= size:
                        slot -= size
                    acc += out_ring[s, slot, 4 + i]
                out_readings[s, 3 + i] = acc / nw
                acc = 0.0
                for n in range(nl):
                    slot = head + n
                    if slot >= size:
                        slot -= size
                    acc += out_ring[s, slot, 11 + i]
                out_readings[s, i] = acc / nl
            q0 = 0.0
            q1 = 0.0
            q2 = 0.0
            q3 = 0.0
            for n in range(nq):
                slot = head + n
                if slot >= size:
                    slot -= size
                q0 += out_ring[s, slot, 7]
                q1 += out_ring[s, slot, 8]
                q2 += out_ring[s, slot, 9]
                q3 += out_ring[s, slot, 10]
            norm = np.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
            if np.isfinite(norm) and norm > 0.0:
                out_readings[s, 6] = q0 / norm
                out_readings[s, 7] = q1 / norm
                out_readings[s, 8] = q2 / norm
                out_readings[s, 9] = q3 / norm
            else:
                for i in range(4):
                    out_readings[s, 6 + i] = out_ring[s, head, 7 + i]
            out_readings[s, 10] = time
        out_status[s, 0] = 1
        out_status[s, 1] = step
    if n_shared:
        _isaac_width1_shared(
            body_orientations,
            body_linear_velocities,
            body_angular_velocities,
            sensor_ints,
            shared[:n_shared],
            t_new,
            step,
            out_ring,
            out_heads,
            out_readings,
            out_status,
        )


@jit
def _isaac_width1_shared(
    body_orientations,
    body_linear_velocities,
    body_angular_velocities,
    sensor_ints,
    sensors,
    t_new,
    step,
    out_ring,
    out_heads,
    out_readings,
    out_status,
):
    """Isaac-mode, width-1, identity-mounted sensors: one sample per body, same arithmetic.

    The sample of a body (its sensor-frame velocities and USD-signed orientation, float32
    values) is computed by the body's first sensor with the general formula and the
    identity offset, so every sensor gets the values it would compute itself.

    Args:
        body_orientations: body quaternions, shape (B, 4), float64, wxyz, body->world.
        body_linear_velocities: COM linear velocities, shape (B, 3), float64, world.
        body_angular_velocities: angular velocities, shape (B, 3), float64, rad/s, world.
        sensor_ints: packed per-sensor integers, shape (S, 7), int64.
        sensors: sensor rows to process, shape (K,), int64.
        t_new: float32 time of the step (as float64).
        step: physics step counter.
        out_ring: history, shape (S, R, 14), float64 (in/out).
        out_heads: ring slot of the newest sample, shape (S,), int64 (in/out).
        out_readings: readings, shape (S, 11), float64.
        out_status: ``[valid, step]`` per sensor, shape (S, 2), int64.
    """
    body_count = body_orientations.shape[0]
    samples = np.empty((body_count, 10))
    done = np.zeros(body_count, np.bool_)
    for k in range(sensors.shape[0]):
        s = sensors[k]
        b = sensor_ints[s, 0]
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
        size = sensor_ints[s, 4]
        head = out_heads[s] - 1
        if head < 0:
            head += size
        out_heads[s] = head
        old = head + 1
        if old >= size:
            old -= size
        d_t = np.float32(t_new - out_ring[s, old, 0])
        out_ring[s, head, 0] = t_new
        for j in range(3):
            v = samples[b, j]
            a = np.float32(0.0)
            if d_t > 1e-10:
                a = np.float32(a + np.float32(np.float32(v - out_ring[s, old, 1 + j]) / d_t))
            out_ring[s, head, 1 + j] = v
            out_readings[s, j] = a
        for j in range(3, 10):
            out_readings[s, j] = samples[b, j]
        out_readings[s, 10] = t_new
        out_status[s, 0] = 1
        out_status[s, 1] = step
