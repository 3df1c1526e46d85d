"""Numba kernels of the contact sensor (spec sensors.md section 3).

Packed layouts (to keep the per-call argument count low):

* ``sensor_floats`` (S, 6) float64: ``[ox, oy, oz, radius, fmin, fmax]`` -- sensor origin
  in the parent body frame (stage units), filter radius (stage units, <= 0 disables the
  filter), force thresholds (float32-representable values, mass x stage length / s^2).
* ``sensor_ints`` (S, 2) int64: ``[body, active]``.
* ``out_floats`` (S, 2) float64: ``[value, time]`` -- force (float32 value), reading time
  (float32 value).
* ``out_ints`` (S, 4) int64: ``[in_contact, number_of_contacts, valid, step]``.

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
    sensor_floats,
    sensor_ints,
    sensor_indices,
    contact_body0,
    contact_body1,
    contact_positions,
    contact_impulses,
    contact_dts,
    dt,
    time,
    step,
    out_floats,
    out_ints,
):
    """Evaluate the contact sensors listed in ``sensor_indices`` for one physics step.

    Per sensor: sensor world position = body pose applied to the body-frame offset; contacts
    of the parent body (body0 or body1) are counted (raw count), kept when
    ``radius <= 0`` or ``|p_S - c| < radius``, sign-corrected to act on the parent
    (``-impulse`` when the parent is body1), summed as vectors in double; the force
    ``float32(|J| / dtc)`` is clamped to ``fmax`` and zeroed (not in contact) below ``fmin``.
    Inactive sensors get the default invalid reading.

    Args:
        body_positions: body origins, shape (B, 3), float64, stage units, world.
        body_orientations: body quaternions, shape (B, 4), float64, wxyz, body->world.
        sensor_floats: packed sensor configuration, shape (S, 6), float64 (module doc).
        sensor_ints: packed ``[body, active]``, shape (S, 2), int64.
        sensor_indices: sensors to evaluate this call, shape (K,), int64.
        contact_body0: body index of each contact point, shape (C,), int64.
        contact_body1: other body index or -1, shape (C,), int64.
        contact_positions: contact points, shape (C, 3), float64, stage units, world.
        contact_impulses: impulse on body0, shape (C, 3), float64, mass x stage units / s.
        contact_dts: per-contact report dt, shape (C,) or (0,) to use ``dt``, float64, s.
        dt: step size, seconds.
        time: simulation time t_k, seconds (stored as float32).
        step: physics step counter k, int.
        out_floats: ``[value, time]`` per sensor, shape (S, 2), float64.
        out_ints: ``[in_contact, number_of_contacts, valid, step]`` per sensor, shape (S, 4),
            int64.
    """
    body_count = body_positions.shape[0]
    contact_count = contact_body0.shape[0]
    # Stable counting sort of contact points by body (a point belongs to body0 and body1);
    # each entry stores the contact index and the sign that makes its impulse act on the
    # listed body.
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
    signs = np.empty(starts[body_count])
    for c in range(contact_count):
        b0 = contact_body0[c]
        items[fill[b0]] = c
        signs[fill[b0]] = 1.0
        fill[b0] += 1
        b1 = contact_body1[c]
        if b1 >= 0 and b1 != b0:
            items[fill[b1]] = c
            signs[fill[b1]] = -1.0
            fill[b1] += 1
    time32 = float(np.float32(time))
    use_contact_dts = contact_dts.shape[0] == contact_count and contact_count > 0
    # Unfiltered sensors (radius <= 0) depend on their body only: per-body sums in one pass
    # over the contacts, in contact order (the order of the per-body lists above, hence
    # the same sums as the filtered loop below with an infinite radius).
    body_sums = np.zeros((body_count, 3))
    body_dts = np.full(body_count, dt)
    for c in range(contact_count):
        cx = contact_positions[c, 0]
        cy = contact_positions[c, 1]
        cz = contact_positions[c, 2]
        # Kept unless the squared distance is not finite (NaN or overflow).
        keep = cx * cx + cy * cy + cz * cz < np.inf
        weight = 1.0 if keep else 0.0
        b0 = contact_body0[c]
        body_sums[b0, 0] += weight * contact_impulses[c, 0]
        body_sums[b0, 1] += weight * contact_impulses[c, 1]
        body_sums[b0, 2] += weight * contact_impulses[c, 2]
        use_dt = use_contact_dts and keep and contact_dts[c] > 0.0
        if use_dt:
            body_dts[b0] = contact_dts[c]
        b1 = contact_body1[c]
        if b1 >= 0 and b1 != b0:
            weight = -1.0 if keep else 0.0
            body_sums[b1, 0] += weight * contact_impulses[c, 0]
            body_sums[b1, 1] += weight * contact_impulses[c, 1]
            body_sums[b1, 2] += weight * contact_impulses[c, 2]
            if use_dt:
                body_dts[b1] = contact_dts[c]
    for k in range(sensor_indices.shape[0]):
        s = sensor_indices[k]
        if sensor_ints[s, 1] == 0:
            out_floats[s, 0] = 0.0
            out_floats[s, 1] = 0.0
            out_ints[s, 0] = 0
            out_ints[s, 1] = 0
            out_ints[s, 2] = 0
            out_ints[s, 3] = 0
            continue
        b = sensor_ints[s, 0]
        first = starts[b]
        last = starts[b + 1]
        out_floats[s, 1] = time32
        out_ints[s, 1] = last - first
        out_ints[s, 2] = 1
        out_ints[s, 3] = step
        radius = sensor_floats[s, 3]
        if not radius > 0.0:
            touching, force = _contact_force(
                body_sums[b, 0],
                body_sums[b, 1],
                body_sums[b, 2],
                body_dts[b],
                sensor_floats[s, 4],
                sensor_floats[s, 5],
            )
            out_floats[s, 0] = force
            out_ints[s, 0] = 1 if touching else 0
            continue
        radius2 = radius * radius
        # Sensor world position (only needed for the filter): p_b + R(q_b) offset.
        qw = body_orientations[b, 0]
        qx = body_orientations[b, 1]
        qy = body_orientations[b, 2]
        qz = body_orientations[b, 3]
        ox = sensor_floats[s, 0]
        oy = sensor_floats[s, 1]
        oz = sensor_floats[s, 2]
        tx = 2.0 * (qy * oz - qz * oy)
        ty = 2.0 * (qz * ox - qx * oz)
        tz = 2.0 * (qx * oy - qy * ox)
        px = body_positions[b, 0] + ox + qw * tx + (qy * tz - qz * ty)
        py = body_positions[b, 1] + oy + qw * ty + (qz * tx - qx * tz)
        pz = body_positions[b, 2] + oz + qw * tz + (qx * ty - qy * tx)
        jx = 0.0
        jy = 0.0
        jz = 0.0
        dtc = dt
        for m in range(first, last):
            c = items[m]
            dx = px - contact_positions[c, 0]
            dy = py - contact_positions[c, 1]
            dz = pz - contact_positions[c, 2]
            keep = dx * dx + dy * dy + dz * dz < radius2
            weight = signs[m] if keep else 0.0
            jx += weight * contact_impulses[c, 0]
            jy += weight * contact_impulses[c, 1]
            jz += weight * contact_impulses[c, 2]
            if use_contact_dts and keep and contact_dts[c] > 0.0:
                dtc = contact_dts[c]
        touching, force = _contact_force(jx, jy, jz, dtc, sensor_floats[s, 4], sensor_floats[s, 5])
        out_floats[s, 0] = force
        out_ints[s, 0] = 1 if touching else 0


@jit
def _contact_force(jx, jy, jz, dtc, fmin, fmax):
    """Force from the summed impulse with the thresholds (scalars only: no refcounts).

    Written with selects rather than early returns: whether a sensor is touching is
    data-dependent, and mispredicted branches dominated the per-sensor cost.

    Args:
        jx: summed impulse x (on the parent body), world; ``jy``, ``jz`` likewise.
        jy: summed impulse y.
        jz: summed impulse z.
        dtc: report dt [s] (non-positive: 1/60).
        fmin: minimum threshold (float32 value).
        fmax: maximum threshold (float32 value).

    Returns:
        ``(in_contact, force)``: force ``float32(|J| / dtc)`` clamped to ``fmax``;
        ``in_contact`` False (force 0) for a zero impulse or below ``fmin``.
    """
    norm = np.sqrt(jx * jx + jy * jy + jz * jz)
    dtc = dtc if dtc > 0.0 else 1.0 / 60.0
    force = float(np.float32(norm / dtc))
    force = fmax if force > fmax else force
    touching = norm > 0.0 and not force < fmin
    return touching, force if touching else 0.0
