"""Numba kernels of the contact sensor (spec sensors.md section 3).

Kernels trust their inputs (shapes, dtypes, index ranges are checked by the Python layer).
"""

from __future__ import annotations

import numpy as np

from runtime._jit import jit

__all__ = ["contact_update_kernel"]


@jit
def contact_update_kernel(
    body_positions,
    body_orientations,
    sensor_bodies,
    sensor_offsets,
    sensor_radius,
    sensor_fmin,
    sensor_fmax,
    sensor_active,
    sensor_indices,
    contact_body0,
    contact_body1,
    contact_positions,
    contact_impulses,
    contact_dts,
    dt,
    time,
    out_values,
    out_in_contact,
    out_counts,
    out_valid,
    out_times,
    out_sensor_positions,
):
    """Evaluate the contact sensors listed in ``sensor_indices`` for one physics step.

    Per sensor: sensor world position = body pose applied to the body-frame offset; contacts
    of the parent body (body0 or body1) are counted (raw count), kept when
    ``radius <= 0`` or ``|p_S - c| < radius``, sign-corrected to act on the parent
    (``-impulse`` when the parent is body1), summed as vectors in double; the force
    ``float32(|J| / dtc)`` is clamped to ``fmax`` and zeroed (not in contact) below ``fmin``.

    Args:
        body_positions: body origins, shape (B, 3), float64, stage units, world.
        body_orientations: body quaternions, shape (B, 4), float64, wxyz, body->world.
        sensor_bodies: parent body index per sensor, shape (S,), int64.
        sensor_offsets: sensor position in the parent body frame, shape (S, 3), float64,
            stage units.
        sensor_radius: filter radius per sensor, shape (S,), float64, stage units (<= 0: off).
        sensor_fmin: minimum force, shape (S,), float64 (float32-representable values).
        sensor_fmax: maximum force, shape (S,), float64 (float32-representable values).
        sensor_active: 1 to process, 0 when disabled (reading reset to invalid), shape (S,),
            int64.
        sensor_indices: sensors to evaluate this call, shape (K,), int64.
        contact_body0: body index of each contact point, shape (C,), int64.
        contact_body1: other body index or -1, shape (C,), int64.
        contact_positions: contact points, shape (C, 3), float64, stage units, world.
        contact_impulses: impulse on body0, shape (C, 3), float64, mass x stage units / s.
        contact_dts: per-contact report dt, shape (C,) or (0,) to use ``dt``, float64, s.
        dt: step size, seconds.
        time: simulation time t_k, seconds (stored as float32).
        out_values: force per sensor, shape (S,), float64 holding float32 values.
        out_in_contact: in-contact flag per sensor, shape (S,), int64.
        out_counts: raw contact count of the parent body, shape (S,), int64.
        out_valid: validity flag per sensor, shape (S,), int64.
        out_times: reading time per sensor, shape (S,), float64 holding float32 values.
        out_sensor_positions: sensor world positions, shape (S, 3), float64, stage units.
    """
    body_count = body_positions.shape[0]
    contact_count = contact_body0.shape[0]
    # Stable counting sort of contact points by body (a point belongs to body0 and body1).
    starts = np.zeros(body_count + 1, np.int64)
    for c in range(contact_count):
        starts[contact_body0[c] + 1] += 1
        b1 = contact_body1[c]
        if b1 >= 0 and b1 != contact_body0[c]:
            starts[b1 + 1] += 1
    for b in range(body_count):
        starts[b + 1] += starts[b]
    fill = starts[:body_count].copy()
    items = np.empty(starts[body_count], np.int64)
    for c in range(contact_count):
        b0 = contact_body0[c]
        items[fill[b0]] = c
        fill[b0] += 1
        b1 = contact_body1[c]
        if b1 >= 0 and b1 != b0:
            items[fill[b1]] = c
            fill[b1] += 1
    time32 = float(np.float32(time))
    use_contact_dts = contact_dts.shape[0] == contact_count and contact_count > 0
    for k in range(sensor_indices.shape[0]):
        s = sensor_indices[k]
        if sensor_active[s] == 0:
            out_values[s] = 0.0
            out_in_contact[s] = 0
            out_counts[s] = 0
            out_valid[s] = 0
            out_times[s] = 0.0
            continue
        b = sensor_bodies[s]
        # Sensor world position: p_b + R(q_b) offset.
        qw = body_orientations[b, 0]
        qx = body_orientations[b, 1]
        qy = body_orientations[b, 2]
        qz = body_orientations[b, 3]
        ox = sensor_offsets[s, 0]
        oy = sensor_offsets[s, 1]
        oz = sensor_offsets[s, 2]
        tx = 2.0 * (qy * oz - qz * oy)
        ty = 2.0 * (qz * ox - qx * oz)
        tz = 2.0 * (qx * oy - qy * ox)
        px = body_positions[b, 0] + ox + qw * tx + (qy * tz - qz * ty)
        py = body_positions[b, 1] + oy + qw * ty + (qz * tx - qx * tz)
        pz = body_positions[b, 2] + oz + qw * tz + (qx * ty - qy * tx)
        out_sensor_positions[s, 0] = px
        out_sensor_positions[s, 1] = py
        out_sensor_positions[s, 2] = pz
        out_valid[s] = 1
        out_times[s] = time32
        first = starts[b]
        last = starts[b + 1]
        out_counts[s] = last - first
        out_values[s] = 0.0
        out_in_contact[s] = 0
        if last == first:
            continue
        radius = sensor_radius[s]
        jx = 0.0
        jy = 0.0
        jz = 0.0
        dtc = dt
        for m in range(first, last):
            c = items[m]
            if radius > 0.0:
                dx = px - contact_positions[c, 0]
                dy = py - contact_positions[c, 1]
                dz = pz - contact_positions[c, 2]
                if np.sqrt(dx * dx + dy * dy + dz * dz) >= radius:
                    continue
            sign = 1.0
            if contact_body1[c] == b and contact_body0[c] != b:
                sign = -1.0
            jx += sign * contact_impulses[c, 0]
            jy += sign * contact_impulses[c, 1]
            jz += sign * contact_impulses[c, 2]
            if use_contact_dts:
                if contact_dts[c] > 0.0:
                    dtc = contact_dts[c]
        norm = np.sqrt(jx * jx + jy * jy + jz * jz)
        if not norm > 0.0:
            continue
        if not dtc > 0.0:
            dtc = 1.0 / 60.0
        force = float(np.float32(norm / dtc))
        if force > sensor_fmax[s]:
            force = sensor_fmax[s]
        if force < sensor_fmin[s]:
            continue
        out_values[s] = force
        out_in_contact[s] = 1
