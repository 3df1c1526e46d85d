"""Numba kernels of the IMU sensor (spec sensors.md section 4).

Two modes share one kernel (per-sensor ``modes`` flag):

* ``0`` Isaac parity: centre-of-mass velocity rotated into the sensor frame, float32 history
  ring, finite difference over a lag of ``Nl`` samples, rolling averages (4.3). Gravity is
  added at read time by the Python layer.
* ``1`` physical: specific force of the sensor point,
  ``a = R^T (a_com + alpha x r + w x (w x r))`` (gravity ``R^T (-g)`` added at read time),
  with ``a_com`` / ``alpha`` from the engine when supplied, else backward differences of the
  world-frame COM and angular velocities. Float64 throughout.

Kernels trust their inputs (checked by the Python layer).
"""

from __future__ import annotations

import numpy as np

from runtime._jit import jit

__all__ = ["imu_update_kernel", "quat_matrix_round_trip_kernel"]


@jit
def _rotation_matrix(qw, qx, qy, qz, out):
    """Fill ``out`` (3, 3) with R(q) (column-vector convention, local -> world)."""
    out[0, 0] = 1.0 - 2.0 * (qy * qy + qz * qz)
    out[0, 1] = 2.0 * (qx * qy - qw * qz)
    out[0, 2] = 2.0 * (qx * qz + qw * qy)
    out[1, 0] = 2.0 * (qx * qy + qw * qz)
    out[1, 1] = 1.0 - 2.0 * (qx * qx + qz * qz)
    out[1, 2] = 2.0 * (qy * qz - qw * qx)
    out[2, 0] = 2.0 * (qx * qz - qw * qy)
    out[2, 1] = 2.0 * (qy * qz + qw * qx)
    out[2, 2] = 1.0 - 2.0 * (qx * qx + qy * qy)


@jit
def _matrix_to_quat(r, out):
    """Quaternion (wxyz) of rotation matrix ``r`` (3, 3) with USD's (Open Inventor) sign rule.

    ``m = r^T`` is the row-vector matrix USD uses; if the trace exceeds the largest diagonal
    element, ``w >= 0``; otherwise the imaginary part on that diagonal's axis is positive.
    """
    d0 = r[0, 0]
    d1 = r[1, 1]
    d2 = r[2, 2]
    if d0 > d1:
        i = 0 if d0 > d2 else 2
    else:
        i = 1 if d1 > d2 else 2
    trace = d0 + d1 + d2
    if trace > r[i, i]:
        w = 0.5 * np.sqrt(trace + 1.0)
        out[0] = w
        out[1] = (r[2, 1] - r[1, 2]) / (4.0 * w)
        out[2] = (r[0, 2] - r[2, 0]) / (4.0 * w)
        out[3] = (r[1, 0] - r[0, 1]) / (4.0 * w)
    else:
        j = (i + 1) % 3
        k = (i + 2) % 3
        q = 0.5 * np.sqrt(r[i, i] - r[j, j] - r[k, k] + 1.0)
        out[1 + i] = q
        # m[i][j] + m[j][i] with m = r^T is symmetric in r.
        out[1 + j] = (r[i, j] + r[j, i]) / (4.0 * q)
        out[1 + k] = (r[k, i] + r[i, k]) / (4.0 * q)
        # w = (m[j][k] - m[k][j]) / 4q with m = r^T.
        out[0] = (r[k, j] - r[j, k]) / (4.0 * q)


@jit
def quat_matrix_round_trip_kernel(quats, out_quats):
    """Convert quaternions to matrices and back with USD's sign rule.

    Args:
        quats: unit quaternions, shape (N, 4), float64, wxyz.
        out_quats: result, shape (N, 4), float64, wxyz (q or -q).
    """
    r = np.empty((3, 3))
    q = np.empty(4)
    for n in range(quats.shape[0]):
        _rotation_matrix(quats[n, 0], quats[n, 1], quats[n, 2], quats[n, 3], r)
        _matrix_to_quat(r, q)
        for c in range(4):
            out_quats[n, c] = q[c]


@jit
def imu_update_kernel(
    body_positions,
    body_orientations,
    body_com_local,
    body_linear_velocities,
    body_angular_velocities,
    body_linear_accelerations,
    body_angular_accelerations,
    sensor_bodies,
    sensor_offset_positions,
    sensor_offset_orientations,
    sensor_widths,
    sensor_ring_sizes,
    sensor_modes,
    sensor_active,
    sensor_indices,
    gravity_up,
    gravity,
    time,
    out_ring_t,
    out_ring_v,
    out_ring_w,
    out_ring_q,
    out_ring_a,
    out_heads,
    out_prev_v,
    out_prev_w,
    out_prev_t,
    out_acc,
    out_gyro,
    out_quat,
    out_gravity_sensor,
    out_times,
    out_valid,
):
    """Process one physics step for the IMUs listed in ``sensor_indices``.

    Inactive sensors push nothing and get ``out_valid = 0`` (history kept).

    Args:
        body_positions: body origins, shape (B, 3), float64, stage units, world (unused by
            the math; kept for a uniform signature with the pose convention).
        body_orientations: body quaternions, shape (B, 4), float64, wxyz, body->world.
        body_com_local: centre of mass in the body frame, shape (B, 3), float64, stage units.
        body_linear_velocities: COM linear velocities, shape (B, 3), float64, units/s, world.
        body_angular_velocities: angular velocities, shape (B, 3), float64, rad/s, world.
        body_linear_accelerations: COM accelerations, shape (B, 3), float64, units/s^2,
            world, or shape (0, 3) when the engine supplies none (finite differences).
        body_angular_accelerations: angular accelerations, shape (B, 3) or (0, 3), float64,
            rad/s^2, world.
        sensor_bodies: parent body index, shape (S,), int64.
        sensor_offset_positions: sensor origin in the body frame, shape (S, 3), float64.
        sensor_offset_orientations: sensor orientation in the body frame, shape (S, 4), wxyz.
        sensor_widths: filter widths (Nl, Nw, Nq) >= 1, shape (S, 3), int64.
        sensor_ring_sizes: ring size B_s = max(2 max(N), 20) <= R, shape (S,), int64.
        sensor_modes: 0 Isaac parity, 1 physical, shape (S,), int64.
        sensor_active: 1 process, 0 skip (invalid), shape (S,), int64.
        sensor_indices: sensors to evaluate this call, shape (K,), int64.
        gravity_up: Isaac-mode gravity reaction, shape (3,), float64, units/s^2, world (up).
        gravity: physical-mode gravity acceleration, shape (3,), float64, units/s^2, world.
        time: simulation time t_k, seconds.
        out_ring_t: sample times, shape (S, R), float64 (in/out).
        out_ring_v: sensor-frame COM velocities (Isaac mode), shape (S, R, 3) (in/out).
        out_ring_w: sensor-frame angular velocities, shape (S, R, 3) (in/out).
        out_ring_q: world orientations after the matrix round trip, shape (S, R, 4) (in/out).
        out_ring_a: sensor-frame kinematic accelerations (physical mode), shape (S, R, 3).
        out_heads: ring slot of the newest sample, shape (S,), int64 (in/out).
        out_prev_v: previous world COM velocity (physical mode), shape (S, 3) (in/out).
        out_prev_w: previous world angular velocity (physical mode), shape (S, 3) (in/out).
        out_prev_t: time of the previous sample (physical mode), shape (S,) (in/out).
        out_acc: filtered linear acceleration without gravity, shape (S, 3), sensor frame.
        out_gyro: filtered angular velocity, shape (S, 3), rad/s, sensor frame.
        out_quat: filtered world orientation, shape (S, 4), wxyz.
        out_gravity_sensor: gravity reaction in the sensor frame, shape (S, 3), units/s^2.
        out_times: reading time (float32 value), shape (S,).
        out_valid: validity flag, shape (S,), int64.
    """
    r_b = np.empty((3, 3))
    r_s = np.empty((3, 3))
    q_rt = np.empty(4)
    have_acc = body_linear_accelerations.shape[0] == body_orientations.shape[0]
    time32 = np.float32(time)
    for k in range(sensor_indices.shape[0]):
        s = sensor_indices[k]
        if sensor_active[s] == 0:
            out_valid[s] = 0
            continue
        b = sensor_bodies[s]
        bw = body_orientations[b, 0]
        bx = body_orientations[b, 1]
        by = body_orientations[b, 2]
        bz = body_orientations[b, 3]
        ow = sensor_offset_orientations[s, 0]
        ox = sensor_offset_orientations[s, 1]
        oy = sensor_offset_orientations[s, 2]
        oz = sensor_offset_orientations[s, 3]
        # Sensor world orientation q_S = q_b (x) q_offset.
        sw = bw * ow - bx * ox - by * oy - bz * oz
        sx = bw * ox + bx * ow + by * oz - bz * oy
        sy = bw * oy - bx * oz + by * ow + bz * ox
        sz = bw * oz + bx * oy - by * ox + bz * ow
        _rotation_matrix(sw, sx, sy, sz, r_s)
        _matrix_to_quat(r_s, q_rt)
        size = sensor_ring_sizes[s]
        head = out_heads[s] - 1
        if head < 0:
            head += size
        out_heads[s] = head
        nl = sensor_widths[s, 0]
        nw = sensor_widths[s, 1]
        nq = sensor_widths[s, 2]
        wx = body_angular_velocities[b, 0]
        wy = body_angular_velocities[b, 1]
        wz = body_angular_velocities[b, 2]
        vx = body_linear_velocities[b, 0]
        vy = body_linear_velocities[b, 1]
        vz = body_linear_velocities[b, 2]
        if sensor_modes[s] == 0:
            # ---- Isaac parity: float32 samples and sums.
            out_ring_t[s, head] = time32
            for i in range(3):
                out_ring_v[s, head, i] = np.float32(
                    r_s[0, i] * vx + r_s[1, i] * vy + r_s[2, i] * vz
                )
                out_ring_w[s, head, i] = np.float32(
                    r_s[0, i] * wx + r_s[1, i] * wy + r_s[2, i] * wz
                )
                out_gravity_sensor[s, i] = np.float32(
                    r_s[0, i] * gravity_up[0] + r_s[1, i] * gravity_up[1] + r_s[2, i] * gravity_up[2]
                )
            for i in range(4):
                out_ring_q[s, head, i] = np.float32(q_rt[i])
            for i in range(3):
                acc = np.float32(0.0)
                for n in range(nw):
                    acc = np.float32(acc + np.float32(out_ring_w[s, (head + n) % size, i]))
                out_gyro[s, i] = np.float32(acc / np.float32(nw))
            for i in range(3):
                acc = np.float32(0.0)
                for n in range(nl):
                    new = (head + n) % size
                    old = (head + n + nl) % size
                    d_t = np.float32(
                        np.float32(out_ring_t[s, new]) - np.float32(out_ring_t[s, old])
                    )
                    if d_t > 1e-10:
                        d_v = np.float32(
                            np.float32(out_ring_v[s, new, i]) - np.float32(out_ring_v[s, old, i])
                        )
                        acc = np.float32(acc + np.float32(d_v / d_t))
                out_acc[s, i] = np.float32(acc / np.float32(nl))
            qs0 = np.float32(0.0)
            qs1 = np.float32(0.0)
            qs2 = np.float32(0.0)
            qs3 = np.float32(0.0)
            for n in range(nq):
                slot = (head + n) % size
                qs0 = np.float32(qs0 + np.float32(out_ring_q[s, slot, 0]))
                qs1 = np.float32(qs1 + np.float32(out_ring_q[s, slot, 1]))
                qs2 = np.float32(qs2 + np.float32(out_ring_q[s, slot, 2]))
                qs3 = np.float32(qs3 + np.float32(out_ring_q[s, slot, 3]))
            inv = np.float32(1.0) / np.float32(nq)
            qs0 = np.float32(qs0 * inv)
            qs1 = np.float32(qs1 * inv)
            qs2 = np.float32(qs2 * inv)
            qs3 = np.float32(qs3 * inv)
            norm = np.float32(np.sqrt(qs0 * qs0 + qs1 * qs1 + qs2 * qs2 + qs3 * qs3))
            if np.isfinite(norm) and norm > 0.0:
                out_quat[s, 0] = np.float32(qs0 / norm)
                out_quat[s, 1] = np.float32(qs1 / norm)
                out_quat[s, 2] = np.float32(qs2 / norm)
                out_quat[s, 3] = np.float32(qs3 / norm)
            else:
                for i in range(4):
                    out_quat[s, i] = out_ring_q[s, head, i]
            out_times[s] = time32
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
                d_t = time - out_prev_t[s]
                if d_t > 1e-12:
                    ax = (vx - out_prev_v[s, 0]) / d_t
                    ay = (vy - out_prev_v[s, 1]) / d_t
                    az = (vz - out_prev_v[s, 2]) / d_t
                    alx = (wx - out_prev_w[s, 0]) / d_t
                    aly = (wy - out_prev_w[s, 1]) / d_t
                    alz = (wz - out_prev_w[s, 2]) / d_t
                else:
                    ax = 0.0
                    ay = 0.0
                    az = 0.0
                    alx = 0.0
                    aly = 0.0
                    alz = 0.0
            out_prev_v[s, 0] = vx
            out_prev_v[s, 1] = vy
            out_prev_v[s, 2] = vz
            out_prev_w[s, 0] = wx
            out_prev_w[s, 1] = wy
            out_prev_w[s, 2] = wz
            out_prev_t[s] = time
            # Lever arm r = R_b (offset - com), world frame.
            _rotation_matrix(bw, bx, by, bz, r_b)
            lx = sensor_offset_positions[s, 0] - body_com_local[b, 0]
            ly = sensor_offset_positions[s, 1] - body_com_local[b, 1]
            lz = sensor_offset_positions[s, 2] - body_com_local[b, 2]
            rx = r_b[0, 0] * lx + r_b[0, 1] * ly + r_b[0, 2] * lz
            ry = r_b[1, 0] * lx + r_b[1, 1] * ly + r_b[1, 2] * lz
            rz = r_b[2, 0] * lx + r_b[2, 1] * ly + r_b[2, 2] * lz
            # w x r, then w x (w x r) and alpha x r.
            cx = wy * rz - wz * ry
            cy = wz * rx - wx * rz
            cz = wx * ry - wy * rx
            ax += (aly * rz - alz * ry) + (wy * cz - wz * cy)
            ay += (alz * rx - alx * rz) + (wz * cx - wx * cz)
            az += (alx * ry - aly * rx) + (wx * cy - wy * cx)
            out_ring_t[s, head] = time
            for i in range(3):
                out_ring_a[s, head, i] = r_s[0, i] * ax + r_s[1, i] * ay + r_s[2, i] * az
                out_ring_w[s, head, i] = r_s[0, i] * wx + r_s[1, i] * wy + r_s[2, i] * wz
                out_gravity_sensor[s, i] = -(
                    r_s[0, i] * gravity[0] + r_s[1, i] * gravity[1] + r_s[2, i] * gravity[2]
                )
            for i in range(4):
                out_ring_q[s, head, i] = q_rt[i]
            for i in range(3):
                acc = 0.0
                for n in range(nw):
                    acc += out_ring_w[s, (head + n) % size, i]
                out_gyro[s, i] = acc / nw
                acc = 0.0
                for n in range(nl):
                    acc += out_ring_a[s, (head + n) % size, i]
                out_acc[s, i] = acc / nl
            q0 = 0.0
            q1 = 0.0
            q2 = 0.0
            q3 = 0.0
            for n in range(nq):
                slot = (head + n) % size
                q0 += out_ring_q[s, slot, 0]
                q1 += out_ring_q[s, slot, 1]
                q2 += out_ring_q[s, slot, 2]
                q3 += out_ring_q[s, slot, 3]
            norm = np.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
            if np.isfinite(norm) and norm > 0.0:
                out_quat[s, 0] = q0 / norm
                out_quat[s, 1] = q1 / norm
                out_quat[s, 2] = q2 / norm
                out_quat[s, 3] = q3 / norm
            else:
                for i in range(4):
                    out_quat[s, i] = q_rt[i]
            out_times[s] = time
        out_valid[s] = 1
