"""Numba kernels of the contact sensor (docs/sensors/contact.md).

Packed per-sensor blocks (to keep the per-call argument count low: every array argument
costs Numba's dispatcher about 0.07 us per call):

* ``out_sensor_floats`` (S, 8) float64: ``[ox, oy, oz, radius, fmin, fmax | value, time]``
  -- configuration (read): sensor origin in the parent body frame (stage units), filter
  radius (stage units, <= 0 disables the filter), force thresholds (float32-representable
  values, mass x stage length / s^2); readings (written): force (float32 value) and reading
  time (float32 value).
* ``out_sensor_ints`` (S, 6) int64: ``[body, active | in_contact, number_of_contacts,
  valid, step]`` -- configuration (read), readings (written).

Kernels trust their inputs (shapes, dtypes, index ranges are checked by the Python layer).
"""

from __future__ import annotations

import numpy as np

from runtime._compile.jit import jit

__all__ = ["contact_update_kernel", "DIRECT_PAIRS_MAX"]

# Up to this many (evaluated sensor, contact point) pairs, every sensor scans the contact
# list itself (no scratch arrays); above it, the contacts are sorted by body once.
DIRECT_PAIRS_MAX = 256


@jit
def contact_update_kernel(
    body_positions,
    body_orientations,
    contact_body0,
    contact_body1,
    contact_positions,
    contact_impulses,
    contact_dts,
    dt,
    time,
    step,
    only,
    out_sensor_floats,
    out_sensor_ints,
):
    """Evaluate the contact sensors (all, or sensor ``only``) for one physics step.

    Per sensor: sensor world position = body pose applied to the body-frame offset; contacts
    of the parent body (body0 or body1) are counted (raw count), kept when
    ``radius <= 0`` or ``|p_S - c| < radius``, sign-corrected to act on the parent
    (``-impulse`` when the parent is body1), summed as vectors in double in contact order;
    the force ``float32(|J| / dtc)`` is clamped to ``fmax`` and zeroed (not in contact)
    below ``fmin``. Inactive sensors get the default invalid reading.

    Few sensors x contacts (``<= DIRECT_PAIRS_MAX`` pairs): each sensor scans the contact
    list. Otherwise the contacts are sorted by body once (stable counting sort) and
    unfiltered sensors read per-body sums. Both paths add the same terms in the same order,
    hence give bit-identical readings.

    Args:
        body_positions: body origins, shape (B, 3), float64, stage units, world.
        body_orientations: body quaternions, shape (B, 4), float64, wxyz, body->world.
        contact_body0: body index of each contact point, shape (C,), int64.
        contact_body1: other body index or -1, shape (C,), int64.
        contact_positions: contact points, shape (C, 3), float64, stage units, world.
        contact_impulses: impulse on body0, shape (C, 3), float64, mass x stage units / s.
        contact_dts: per-contact report dt, shape (C,) or (0,) to use ``dt``, float64, s.
        dt: step size, seconds (any real scalar; used as float64).
        time: simulation time t_k, seconds (any real scalar; stored as float32).
        step: physics step counter k (any integer scalar).
        only: sensor row to evaluate, or -1 for every sensor.
        out_sensor_floats: packed configuration and readings, shape (S, 8), float64
            (module docstring; columns 6-7 written).
        out_sensor_ints: packed configuration and readings, shape (S, 6), int64 (module
            docstring; columns 2-5 written).
    """
    dt64 = np.float64(dt)
    step64 = np.int64(step)
    time32 = np.float64(np.float32(time))
    first_sensor = 0
    end_sensor = out_sensor_ints.shape[0]
    if only >= 0:
        first_sensor = only
        end_sensor = only + 1
    contact_count = contact_body0.shape[0]
    use_contact_dts = contact_dts.shape[0] == contact_count and contact_count > 0
    if (end_sensor - first_sensor) * contact_count <= DIRECT_PAIRS_MAX:
        for s in range(first_sensor, end_sensor):
            if out_sensor_ints[s, 1] == 0:
                _invalid_reading(s, out_sensor_floats, out_sensor_ints)
                continue
            b = out_sensor_ints[s, 0]
            radius = out_sensor_floats[s, 3]
            filtered = radius > 0.0
            radius2 = radius * radius
            px = 0.0
            py = 0.0
            pz = 0.0
            if filtered:
                px, py, pz = _sensor_position(
                    body_positions, body_orientations, b, s, out_sensor_floats
                )
            jx = 0.0
            jy = 0.0
            jz = 0.0
            dtc = dt64
            count = np.int64(0)  # not a literal: one _write_reading specialization
            for c in range(contact_count):
                if contact_body0[c] == b:
                    sign = 1.0
                elif contact_body1[c] == b:
                    sign = -1.0
                else:
                    continue
                count += 1
                cx = contact_positions[c, 0]
                cy = contact_positions[c, 1]
                cz = contact_positions[c, 2]
                if filtered:
                    dx = px - cx
                    dy = py - cy
                    dz = pz - cz
                    keep = dx * dx + dy * dy + dz * dz < radius2
                else:
                    # Kept unless the squared distance is not finite (NaN or overflow).
                    keep = cx * cx + cy * cy + cz * cz < np.inf
                weight = sign if keep else 0.0
                jx += weight * contact_impulses[c, 0]
                jy += weight * contact_impulses[c, 1]
                jz += weight * contact_impulses[c, 2]
                if use_contact_dts and keep and contact_dts[c] > 0.0:
                    dtc = contact_dts[c]
            _write_reading(
                s, jx, jy, jz, dtc, count, time32, step64, out_sensor_floats, out_sensor_ints
            )
        return
    body_count = body_positions.shape[0]
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
    # Unfiltered sensors (radius <= 0) depend on their body only: per-body sums in one pass
    # over the contacts, in contact order (the order of the per-body lists above, hence
    # the same sums as the filtered loop below with an infinite radius).
    body_sums = np.zeros((body_count, 3))
    body_dts = np.full(body_count, dt64)
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
    for s in range(first_sensor, end_sensor):
        if out_sensor_ints[s, 1] == 0:
            _invalid_reading(s, out_sensor_floats, out_sensor_ints)
            continue
        b = out_sensor_ints[s, 0]
        first = starts[b]
        last = starts[b + 1]
        radius = out_sensor_floats[s, 3]
        if not radius > 0.0:
            _write_reading(
                s,
                body_sums[b, 0],
                body_sums[b, 1],
                body_sums[b, 2],
                body_dts[b],
                last - first,
                time32,
                step64,
                out_sensor_floats,
                out_sensor_ints,
            )
            continue
        radius2 = radius * radius
        px, py, pz = _sensor_position(body_positions, body_orientations, b, s, out_sensor_floats)
        jx = 0.0
        jy = 0.0
        jz = 0.0
        dtc = dt64
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
        _write_reading(
            s, jx, jy, jz, dtc, last - first, time32, step64, out_sensor_floats, out_sensor_ints
        )


@jit
def _sensor_position(body_positions, body_orientations, b, s, sensor_floats):
    """Sensor world position ``p_b + R(q_b) offset`` (stage units, world) as a 3-tuple."""
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
    return px, py, pz


@jit
def _invalid_reading(s, out_sensor_floats, out_sensor_ints):
    """Default invalid reading for sensor row ``s`` (inactive sensor)."""
    out_sensor_floats[s, 6] = 0.0
    out_sensor_floats[s, 7] = 0.0
    out_sensor_ints[s, 2] = 0
    out_sensor_ints[s, 3] = 0
    out_sensor_ints[s, 4] = 0
    out_sensor_ints[s, 5] = 0


@jit
def _write_reading(s, jx, jy, jz, dtc, count, time32, step, out_sensor_floats, out_sensor_ints):
    """Store sensor ``s``'s reading from its summed impulse ``J`` (world) and report dt."""
    touching, force = _contact_force(
        jx, jy, jz, dtc, out_sensor_floats[s, 4], out_sensor_floats[s, 5]
    )
    out_sensor_floats[s, 6] = force
    out_sensor_floats[s, 7] = time32
    out_sensor_ints[s, 2] = 1 if touching else 0
    out_sensor_ints[s, 3] = count
    out_sensor_ints[s, 4] = 1
    out_sensor_ints[s, 5] = step


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
