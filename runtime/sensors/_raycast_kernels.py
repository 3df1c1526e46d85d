"""Numba kernels of the raycast sensor, all rays of all sensors per call.

See docs/sensors/raycast.md#each-step.

Rays of several sensors are concatenated; ``ray_sensor[i]`` names the sensor of ray ``i``.
With the Numba ray scene, :func:`raycast_batch_step_kernel` does a whole step in one call
on two packed blocks. Around another scene (e.g. Embree), :func:`raycast_prepare_kernel`
poses the sensors, finds the rays that fire and writes the world rays of only those,
compacted; the scene casts them; then :func:`raycast_outputs_kernel` writes every ray's
outputs (fired rays from the cast, the others the non-firing values of §5.3). Kernels trust
their inputs (validated by :mod:`runtime.sensors.raycast`).
"""

from __future__ import annotations

import math

import numpy as np

from runtime._compile.jit import jit
from runtime.rays.kernels import (
    NODE_WIDTH,
    WIDE_STACK_SIZE,
    group_solid_hit_kernel,
    inside_solid_kernel,
    inverse_direction_kernel,
    store_world_box_kernel,
    wide_traverse_kernel,
    world_box_kernel,
)
from runtime.rays.kernels import rotate_inverse_kernel as _rotate_inverse_kernel

__all__ = ["raycast_batch_step_kernel"]
# raycast_prepare_kernel and raycast_outputs_kernel serve a scene that is not the Numba BVH
# (e.g. Embree): the batch calls them around the scene's own cast. With the Numba scene the
# whole step is raycast_batch_step_kernel.


@jit
def _rotate_kernel(qw, qx, qy, qz, vx, vy, vz):
    """Rotate (vx, vy, vz) by the unit quaternion (qw, qx, qy, qz)."""
    cx = qy * vz - qz * vy + qw * vx
    cy = qz * vx - qx * vz + qw * vy
    cz = qx * vy - qy * vx + qw * vz
    return (
        vx + 2.0 * (qy * cz - qz * cy),
        vy + 2.0 * (qz * cx - qx * cz),
        vz + 2.0 * (qx * cy - qy * cx),
    )


@jit
def _same_float_kernel(a, b):
    """Whether two floats are the same value, sign of zero included (NaN never is)."""
    return a == b and np.signbit(a) == np.signbit(b)


@jit
def _sensor_world_pose_kernel(body_positions, body_orientations, b, local_pose, k, out_pose, j):
    """``out_pose[j] = [p(3), q(4)]``: the sensor pose ``local_pose[k]`` on body row ``b``.

    A static sensor (``b < 0``) has its world pose in ``local_pose[k]``.
    """
    if b < 0:
        for a in range(7):
            out_pose[j, a] = local_pose[k, a]
        return
    bw = body_orientations[b, 0]
    bx = body_orientations[b, 1]
    by = body_orientations[b, 2]
    bz = body_orientations[b, 3]
    lw = local_pose[k, 3]
    lx = local_pose[k, 4]
    ly = local_pose[k, 5]
    lz = local_pose[k, 6]
    rx, ry, rz = _rotate_kernel(
        bw, bx, by, bz, local_pose[k, 0], local_pose[k, 1], local_pose[k, 2]
    )
    out_pose[j, 0] = body_positions[b, 0] + rx
    out_pose[j, 1] = body_positions[b, 1] + ry
    out_pose[j, 2] = body_positions[b, 2] + rz
    qw = bw * lw - bx * lx - by * ly - bz * lz
    qx = bw * lx + bx * lw + by * lz - bz * ly
    qy = bw * ly - bx * lz + by * lw + bz * lx
    qz = bw * lz + bx * ly - by * lx + bz * lw
    norm = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    out_pose[j, 3] = qw / norm
    out_pose[j, 4] = qx / norm
    out_pose[j, 5] = qy / norm
    out_pose[j, 6] = qz / norm


@jit
def _append_firing_rays_kernel(
    counter, dt32, p32, sorted_offsets, order, first, end, out_fired, count
):
    """Append the rays of one sensor (rows ``first .. end - 1``) that fire this step.

    docs/sensors/raycast.md#each-step in float32 (fmod is exact, so float64 fmod of the float32
    operands rounds back to the float32 result). Offsets hold float32 values, so float64
    comparisons equal the float32 ones: the rays with ``s <= tau < e`` (wrapped: ``tau >= s``
    or ``tau < e``) are found by bisection in the sensor's offsets sorted ascending
    (``sorted_offsets[first:end]``, ray ``order[m]`` at row ``m``), then put back in ray
    order. A period ``p32 <= 0`` fires every ray.

    Returns:
        The new number of rows of ``out_fired``.
    """
    if not p32 > np.float32(0.0):
        for i in range(first, end):
            out_fired[count] = i
            count += 1
        return count
    e = np.float32(np.float32(counter) * dt32)
    e = np.float32(np.fmod(np.float64(e), np.float64(p32)))
    s = np.float32(e - dt32)
    wrapped = s < np.float32(0.0)
    if wrapped:
        s = np.float32(s + p32)
    lo = _search_left_kernel(sorted_offsets, first, end, np.float64(s))
    hi = _search_left_kernel(sorted_offsets, first, end, np.float64(e))
    start = count
    if wrapped and lo < hi:
        # s < e (period shorter than a step): every offset is >= s or < e
        for m in range(first, end):
            out_fired[count] = order[m]
            count += 1
    elif wrapped:
        for m in range(first, hi):
            out_fired[count] = order[m]
            count += 1
        for m in range(lo, end):
            out_fired[count] = order[m]
            count += 1
    else:
        for m in range(lo, hi):
            out_fired[count] = order[m]
            count += 1
    for m in range(start + 1, count):
        if out_fired[m] < out_fired[m - 1]:
            _heap_sort_kernel(out_fired, start, count)
            break
    return count


@jit
def _heap_sort_kernel(a, first, end):
    """Sort ``a[first:end]`` ascending in place (integers: the same result as np.sort).

    Written out: ``np.sort`` and the slice assignment compile several times longer.
    """
    n = end - first
    for root in range(n // 2 - 1, -1, -1):
        _sift_down_kernel(a, first, root, n)
    for last in range(n - 1, 0, -1):
        top = a[first]
        a[first] = a[first + last]
        a[first + last] = top
        _sift_down_kernel(a, first, np.int64(0), last)


@jit
def _sift_down_kernel(a, first, root, n):
    """Restore the max-heap ``a[first:first + n]`` below ``root``."""
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and a[first + child + 1] > a[first + child]:
            child += 1
        if a[first + root] >= a[first + child]:
            return
        value = a[first + root]
        a[first + root] = a[first + child]
        a[first + child] = value
        root = child


@jit
def _search_left_kernel(values, first, end, v):
    """``first + np.searchsorted(values[first:end], v, side="left")`` (NaN sorts last).

    Written out: NumPy's ``searchsorted`` compiles several times longer in Numba.
    """
    lo = first
    hi = end
    while lo < hi:
        mid = (lo + hi) >> 1
        a = values[mid]
        if a < v or (v != v and a == a):
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit
def _ray_pose_kernel(px, py, pz, qw, qx, qy, qz, tau, extrapolate, b, lin, ang):
    """The sensor pose extrapolated over a ray's time offset ``tau``.

    See docs/sensors/raycast.md#each-step.

    First order in the body velocities of row ``b`` when ``extrapolate`` and the body moves.

    Returns:
        ``(px, py, pz, qw, qx, qy, qz)``.
    """
    if not extrapolate or b < 0 or not abs(tau) > 1e-8:
        return px, py, pz, qw, qx, qy, qz
    vx = lin[b, 0]
    vy = lin[b, 1]
    vz = lin[b, 2]
    wx = ang[b, 0]
    wy = ang[b, 1]
    wz = ang[b, 2]
    v_norm = math.sqrt(vx * vx + vy * vy + vz * vz)
    w_norm = math.sqrt(wx * wx + wy * wy + wz * wz)
    if not (v_norm > 1e-10 or w_norm > 1e-10):
        return px, py, pz, qw, qx, qy, qz
    hx = wx * tau * 0.5
    hy = wy * tau * 0.5
    hz = wz * tau * 0.5
    nw = qw - hx * qx - hy * qy - hz * qz
    nx = qx + hx * qw + hy * qz - hz * qy
    ny = qy - hx * qz + hy * qw + hz * qx
    nz = qz + hx * qy - hy * qx + hz * qw
    norm = math.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
    if norm > 1e-10:
        nw /= norm
        nx /= norm
        ny /= norm
        nz /= norm
    return px + vx * tau, py + vy * tau, pz + vz * tau, nw, nx, ny, nz


@jit
def _world_ray_kernel(px, py, pz, qw, qx, qy, qz, origins, directions, i, min_range):
    """World origin, cast start and direction of ray ``i`` from the sensor pose (p, q).

    The reference passes origin and direction to the scene query as float32: the start
    ``o + d * minRange`` and the unit direction are rounded to float32.

    Returns:
        ``(ox, oy, oz, sx, sy, sz, dx, dy, dz)``.
    """
    ox, oy, oz = _rotate_kernel(qw, qx, qy, qz, origins[i, 0], origins[i, 1], origins[i, 2])
    ox += px
    oy += py
    oz += pz
    dx, dy, dz = _rotate_kernel(
        qw, qx, qy, qz, directions[i, 0], directions[i, 1], directions[i, 2]
    )
    d_norm = math.sqrt(dx * dx + dy * dy + dz * dz)
    if d_norm > 1e-10:
        dx /= d_norm
        dy /= d_norm
        dz /= d_norm
    return (
        ox,
        oy,
        oz,
        np.float64(np.float32(ox + dx * min_range)),
        np.float64(np.float32(oy + dy * min_range)),
        np.float64(np.float32(oz + dz * min_range)),
        np.float64(np.float32(dx)),
        np.float64(np.float32(dy)),
        np.float64(np.float32(dz)),
    )


@jit
def _write_hit_kernel(
    i, h, sx, sy, sz, dx, dy, dz, n0, n1, n2, poses, row, sensor_frame, out_p, out_n, out_e
):
    """Hit outputs of ray ``i``: end point, and hit point / normal in the output frame.

    Args:
        i: the ray's row in the outputs.
        h: hit distance from the cast start.
        sx: cast start x (world).
        sy: cast start y.
        sz: cast start z.
        dx: unit direction x as cast (world).
        dy: direction y.
        dz: direction z.
        n0: unit hit normal x (world).
        n1: normal y.
        n2: normal z.
        poses: sensor poses ``[p'(3), q'(4)]`` of the rays (read for the SENSOR frame).
        row: the ray's row in ``poses``.
        sensor_frame: output in the sensor frame (else world).
        out_p: hit positions (row ``i`` written).
        out_n: hit normals (row ``i`` written).
        out_e: end points world (row ``i`` written).
    """
    x0 = sx + dx * h
    x1 = sy + dy * h
    x2 = sz + dz * h
    out_e[i, 0] = x0
    out_e[i, 1] = x1
    out_e[i, 2] = x2
    if sensor_frame:
        qw = poses[row, 3]
        qx = -poses[row, 4]
        qy = -poses[row, 5]
        qz = -poses[row, 6]
        x0, x1, x2 = _rotate_kernel(
            qw, qx, qy, qz, x0 - poses[row, 0], x1 - poses[row, 1], x2 - poses[row, 2]
        )
        n0, n1, n2 = _rotate_kernel(qw, qx, qy, qz, n0, n1, n2)
    out_p[i, 0] = x0
    out_p[i, 1] = x1
    out_p[i, 2] = x2
    out_n[i, 0] = n0
    out_n[i, 1] = n1
    out_n[i, 2] = n2


@jit
def raycast_prepare_kernel(
    sensor_counters,
    sensor_periods,
    dt32,
    sensor_bodies,
    sensor_local_poses,
    sensor_extrapolate,
    sensor_ranges,
    body_positions,
    body_orientations,
    body_linear_velocities,
    body_angular_velocities,
    ray_sensor,
    ray_origins_local,
    ray_directions_local,
    ray_offsets,
    ray_offset_order,
    ray_sorted_offsets,
    out_sensor_poses,
    out_fired,
    out_origins,
    out_starts,
    out_directions,
    out_max_distances,
    out_ray_poses,
    out_count,
):
    """Sensor poses, firing windows and the compacted world rays of the firing rays.

    Args:
        sensor_counters: processed-step counter ``c`` of each sensor after this step's
            increment, shape (S,), int64 (used when the period is > 0).
        sensor_periods: sweep period ``P`` (largest offset) per sensor, float32 values,
            shape (S,), float32; ``<= 0`` disables windowing (every ray fires).
        dt32: step size [s] as float32.
        sensor_bodies: body row of each sensor's parent body in the pose arrays, -1 for a
            static sensor, shape (S,), int64.
        sensor_local_poses: ``[t(3), q(4)]`` per sensor, shape (S, 7), float64: the pose in
            the parent body frame, or the world pose of a static sensor (q is w, x, y, z).
        sensor_extrapolate: 1 when ``rayTimeOffsets`` is authored and a body exists (use
            the body velocities), shape (S,), int64.
        sensor_ranges: ``[minRange, maxRange]`` [stage units], shape (S, 2), float64.
        body_positions: body origins [stage units], shape (B, 3), float64, world.
        body_orientations: body orientations (w, x, y, z), shape (B, 4), float64, world.
        body_linear_velocities: COM velocities [stage units/s], shape (B, 3), float64.
        body_angular_velocities: angular velocities [rad/s], shape (B, 3), float64, world.
        ray_sensor: sensor index of each ray, ascending (each sensor's rays contiguous),
            shape (R,), int64.
        ray_origins_local: ``rayOrigins`` [stage units], shape (R, 3), float64, sensor frame.
        ray_directions_local: unit ray directions, shape (R, 3), float64, sensor frame.
        ray_offsets: time offsets [s] (float32 values), shape (R,), float64.
        ray_offset_order: each sensor's ray indices (batch rows) sorted by offset (stable),
            in the sensor's own rows, shape (R,), int64.
        ray_sorted_offsets: ``ray_offsets[ray_offset_order]``, shape (R,), float64.
        out_sensor_poses: sensor world pose ``[p(3), q(4)]``, shape (S, 7), float64
            (written).
        out_fired: ray index of each compact row, shape (R,), int64 (first ``count`` rows
            written).
        out_origins: ray origin o, shape (R, 3), float64, world (compact rows).
        out_starts: cast start ``o + d * minRange`` rounded to float32, shape (R, 3),
            float64, world (compact rows).
        out_directions: unit direction d rounded to float32, shape (R, 3), float64, world
            (compact rows).
        out_max_distances: cast length ``maxRange - minRange``, shape (R,), float64 (compact
            rows).
        out_ray_poses: extrapolated sensor pose ``[p'(3), q'(4)]``, shape (R, 7), float64
            (compact rows).
        out_count: shape (1,), int64; receives the number of firing rays.
    """
    for k in range(sensor_counters.shape[0]):
        _sensor_world_pose_kernel(
            body_positions, body_orientations, sensor_bodies[k], sensor_local_poses, k,
            out_sensor_poses, k,
        )  # fmt: skip
    ray_count = ray_sensor.shape[0]
    # firing windows, one sensor's run of rays at a time
    count = np.int64(0)  # not a literal: one specialization of the append kernel
    first = 0
    while first < ray_count:
        k = ray_sensor[first]
        end = np.searchsorted(ray_sensor, k, side="right")
        count = _append_firing_rays_kernel(
            sensor_counters[k], dt32, sensor_periods[k], ray_sorted_offsets, ray_offset_order,
            first, end, out_fired, count,
        )  # fmt: skip
        first = end
    for c in range(count):
        i = out_fired[c]
        k = ray_sensor[i]
        px, py, pz, qw, qx, qy, qz = _ray_pose_kernel(
            out_sensor_poses[k, 0], out_sensor_poses[k, 1], out_sensor_poses[k, 2],
            out_sensor_poses[k, 3], out_sensor_poses[k, 4], out_sensor_poses[k, 5],
            out_sensor_poses[k, 6], ray_offsets[i], sensor_extrapolate[k] != 0,
            sensor_bodies[k], body_linear_velocities, body_angular_velocities,
        )  # fmt: skip
        min_range = sensor_ranges[k, 0]
        ox, oy, oz, sx, sy, sz, dx, dy, dz = _world_ray_kernel(
            px, py, pz, qw, qx, qy, qz, ray_origins_local, ray_directions_local, i, min_range
        )
        out_origins[c, 0] = ox
        out_origins[c, 1] = oy
        out_origins[c, 2] = oz
        out_starts[c, 0] = sx
        out_starts[c, 1] = sy
        out_starts[c, 2] = sz
        out_directions[c, 0] = dx
        out_directions[c, 1] = dy
        out_directions[c, 2] = dz
        out_max_distances[c] = sensor_ranges[k, 1] - min_range
        out_ray_poses[c, 0] = px
        out_ray_poses[c, 1] = py
        out_ray_poses[c, 2] = pz
        out_ray_poses[c, 3] = qw
        out_ray_poses[c, 4] = qx
        out_ray_poses[c, 5] = qy
        out_ray_poses[c, 6] = qz
    out_count[0] = count


@jit
def raycast_outputs_kernel(
    ray_sensor,
    fired,
    fired_count,
    sensor_poses,
    origins,
    directions,
    starts,
    ray_poses,
    hit_distances,
    hit_normals,
    hit_actors,
    sensor_ranges,
    sensor_world_frame,
    io_template_origins,
    io_template_end_points,
    out_depths,
    out_hit_positions,
    out_hit_normals,
    out_origins_world,
    out_end_points_world,
    out_hits,
    out_hit_count,
):
    """Per-ray outputs for every ray.

    See docs/sensors/raycast.md#each-step, docs/sensors/raycast.md#outputs.

    Args:
        ray_sensor: sensor index of each ray, ascending, shape (R,), int64.
        fired: ray index of each compact row, in ray order, shape (>= C,), int64.
        fired_count: ``[C]``, the number of firing rays, shape (1,), int64.
        sensor_poses: sensor world pose ``[p(3), q(4)]``, shape (S, 7), float64.
        origins: ray origins o [stage units], compact rows, shape (>= C, 3), float64, world.
        directions: unit directions d as cast, compact rows, shape (>= C, 3), float64.
        starts: cast start points as cast, compact rows, shape (>= C, 3), float64, world.
        ray_poses: extrapolated sensor poses ``[p'(3), q'(4)]``, compact rows, shape
            (>= C, 7), float64.
        hit_distances: cast hit distance from the start, ``inf`` on a miss, compact rows,
            shape (>= C,), float64 [stage units].
        hit_normals: unit hit normals, compact rows, shape (>= C, 3), float64, world.
        hit_actors: hit actor index (-1 unknown), compact rows, shape (>= C,), int64.
        sensor_ranges: ``[minRange, maxRange]`` per sensor, shape (S, 2), float64.
        sensor_world_frame: 1 for ``WORLD`` output, 0 for ``SENSOR``, shape (S,), int64.
        io_template_origins: shape (0, 3) to write every ray's not-firing values; or
            shape (R, 3), float32, world: the sensor positions already copied into
            ``out_origins_world`` / ``out_end_points_world`` (with maxRange depths and zero
            hits in the other outputs) from a template whose origin / end-point rows these
            two arrays are; a sensor whose position changed has its rows rewritten in both.
        io_template_end_points: shape (0, 3), or (R, 3), float32, world (see above).
        out_depths: depth from the ray origin (``maxRange`` on miss / not firing), shape
            (R,), float32 [stage units] (written).
        out_hit_positions: hit point in the output frame, zeros on miss, shape (R, 3),
            float32 (written).
        out_hit_normals: hit normal in the output frame, zeros on miss, shape (R, 3),
            float32 (written).
        out_origins_world: ray origin (sensor position when not firing), shape (R, 3),
            float32, world (written).
        out_end_points_world: hit point, ``o + d * maxRange`` on a miss, sensor position when
            not firing, shape (R, 3), float32, world (written).
        out_hits: ``[ray, actor]`` of each hit (float32 depth below maxRange) with a known
            actor, shape (R, 2), int64
            (first ``hit_count`` rows written, in ray order).
        out_hit_count: shape (1,), int64; receives the number of hits.
    """
    ray_count = ray_sensor.shape[0]
    # every ray: the not-firing values (sensor position, maxRange, zeros), one sensor's run
    # of rays at a time
    prefilled = io_template_origins.shape[0] == ray_count and ray_count > 0
    if not prefilled:
        out_hit_positions[:, :] = 0.0
        out_hit_normals[:, :] = 0.0
    first = 0
    while first < ray_count:
        k = ray_sensor[first]
        end = np.searchsorted(ray_sensor, k, side="right")
        px = np.float32(sensor_poses[k, 0])
        py = np.float32(sensor_poses[k, 1])
        pz = np.float32(sensor_poses[k, 2])
        if prefilled:
            if (
                _same_float_kernel(io_template_origins[first, 0], px)
                and _same_float_kernel(io_template_origins[first, 1], py)
                and _same_float_kernel(io_template_origins[first, 2], pz)
            ):
                first = end
                continue
            for i in range(first, end):
                io_template_origins[i, 0] = px
                io_template_origins[i, 1] = py
                io_template_origins[i, 2] = pz
            io_template_end_points[first:end, :] = io_template_origins[first:end, :]
        else:
            out_depths[first:end] = np.float32(sensor_ranges[k, 1])
        for i in range(first, end):
            out_origins_world[i, 0] = px
            out_origins_world[i, 1] = py
            out_origins_world[i, 2] = pz
        out_end_points_world[first:end, :] = out_origins_world[first:end, :]
        first = end
    # the firing rays (compact rows, in ray order) overwrite theirs
    hit_count = 0
    for j in range(fired_count[0]):
        i = fired[j]
        k = ray_sensor[i]
        max_range = sensor_ranges[k, 1]
        for a in range(3):
            out_origins_world[i, a] = origins[j, a]
        h = hit_distances[j]
        if not (h < math.inf):
            for a in range(3):
                out_end_points_world[i, a] = origins[j, a] + directions[j, a] * max_range
            continue
        out_depths[i] = h + sensor_ranges[k, 0]
        # a named actor only for a hit as recorded: float32 depth below maxRange
        if hit_actors[j] >= 0 and out_depths[i] < np.float32(max_range):
            out_hits[hit_count, 0] = i
            out_hits[hit_count, 1] = hit_actors[j]
            hit_count += 1
        _write_hit_kernel(
            i, h, starts[j, 0], starts[j, 1], starts[j, 2], directions[j, 0], directions[j, 1],
            directions[j, 2], hit_normals[j, 0], hit_normals[j, 1], hit_normals[j, 2],
            ray_poses, j, sensor_world_frame[k] == 0, out_hit_positions, out_hit_normals,
            out_end_points_world,
        )  # fmt: skip
    out_hit_count[0] = hit_count


# Packed layout of :func:`raycast_batch_step_kernel`. Two 2-D blocks hold every array, one
# float64 (width F_WIDTH) and one int64 (width I_WIDTH), static and per-step arrays alike.
# Rows 0 .. LAYOUT_ROWS - 1 of the int64 block are the layout table: row k is ``[first row,
# rows, columns]`` of array k in its block; an array is the block's rows ``first .. first +
# rows - 1``, columns ``0 .. columns - 1`` (row slices of a 2-D block cost nothing in Numba,
# unlike the reshapes of a flat block, and fewer arguments make the call cheaper).
F_WIDTH = 12
I_WIDTH = 4
# float64, static: scene
L_NODE_BOXES = 0  # (4 M, 12) wide BVH node boxes: 6 rows of 8 lanes per node (48 values)
L_TRIANGLES = 1  # (6 L, 12) wide BVH leaf blocks: 9 rows of 8 lanes per leaf, group frames
L_FACE_NORMALS = 2  # (F, 3) unit front normal per global face, group frame
L_PLANES = 3  # (P, 4) convex half-spaces [n, d], solid frames
L_GROUP_LOCAL_BOXES = 4  # (G, 12) group-frame box of the triangles (6), around the solids (6)
L_SOLID_POSITIONS = 5  # (S, 3) solid origin, group frame
L_SOLID_ORIENTATIONS = 6  # (S, 4) solid orientation (w, x, y, z), group frame
L_SOLID_PARAMS = 7  # (S, 3) half extents or (radius, half height, 0)
L_SOLID_BOXES = 8  # (S, 6) group-frame box of each solid
# float64, static: sensors
L_SENSOR_F = 9  # (K, 10) local pose [t(3), q(4)], minRange, maxRange, period (float32 value)
L_RAY_F = 10  # (R, 8) origin (3), unit direction (3), offset, offset of offset-sorted row
# float64, per step
L_SENSOR_IO = 11  # (K, 10) world pose [p(3), q(4)], float32 position last written (3)
L_GROUP_POSES = 12  # (G, 7) group pose [p(3), q(4)], world
L_GROUP_BOXES = 13  # (G, 12) world box of the triangles (6), around the solids (6)
L_GROUP_FLAGS = 14  # (G, 4) solids may hold a start, off this step's bundle, moving,
#                     holds an analytic solid (static: set by the layout)
L_RAYS = 15  # (R, 12) world ray of each ray as last fired: origin (3), cast start (3),
#              direction (3), max distance, then for a static sensor's ray (the same at
#              every firing, so kept) its closest hit [t, face] over the fixed groups (face:
#              -1 none, >= 0 a triangle, <= -2 the analytic solid -2 - face)
#              (t NaN until the ray first fires, inf: no hit)
L_RAY_POSES = 16  # (R, 7) extrapolated sensor pose [p'(3), q'(4)] of each ray as last fired
L_SOLID_WORLD_BOXES = 17  # (S, 6) world box of each solid (fixed groups: first call;
#                           moving groups: when a candidate)
# int64, static
L_NODE_REFS = 18  # (4 M, 4) wide BVH child references (8) and counts (8) per node
L_TRIANGLE_IDS = 19  # (2 L, 4) global face id per leaf lane (8 per leaf)
L_FACE_I = 20  # (F, 2) group, actor per global face
L_GROUP_I = 21  # (G, 4) BVH root (-1 empty), body row (-1 fixed), first solid, solid count
L_SOLID_I = 22  # (S, 4) SOLID_* kind, first plane, plane count, actor
L_SENSOR_I = 23  # (K, 4) body row (-1 static), extrapolate flag, WORLD flag, first ray
L_RAY_I = 24  # (R, 2) sensor, ray index of offset-sorted row (within the batch)
L_FLAGS = 25  # (1, 2) double-sided, scene follows the bodies
# int64, per step
L_COUNTERS = 26  # (K, 1) processed-step counter of each sensor (windowed ones advance here)
L_FIRED = 27  # (R, 1) ray index of each compact row (kept: next step resets these rows)
L_HITS = 28  # (R, 2) [ray, actor] of each hit (depth < maxRange) with a known actor, ray order
L_COUNTS = 29  # (2, 2) [firing rays, hits], [initialised, 0]
L_CANDIDATES = 30  # (S, 1) solids that may hold a start point this step, in solid order
L_CANDIDATE_GROUPS = 31  # (S, 1) their groups
# static derivations (made by the layout) and scratch: float64 then int64, each packed flat
# (its block rows read as one C-contiguous run of values: no per-call allocation, no
# strided views)
L_SOLID_BOUNDS = 32  # (4 S flat) bounding sphere [c(3), r] of each solid from its box
L_SCRATCH_F = 33  # (WIDE_STACK_SIZE + 3 NODE_WIDTH flat) traversal stack t, lane scratch
L_SOLID_KINDS = 34  # (S flat) SOLID_* kind of each solid (L_SOLID_I column 0)
L_SCRATCH_I = 35  # (2 WIDE_STACK_SIZE + NODE_WIDTH flat) traversal stacks, lane children
LAYOUT_ROWS = 36
F_ARRAYS = (*range(L_NODE_BOXES, L_NODE_REFS), L_SOLID_BOUNDS, L_SCRATCH_F)
"""Layout rows of the float64 block's arrays (the others are in the int64 block)."""
SCRATCH_F_SIZE = WIDE_STACK_SIZE + 3 * NODE_WIDTH
SCRATCH_I_SIZE = 2 * WIDE_STACK_SIZE + NODE_WIDTH


# The views of a layout's arrays. Inlined into their callers: the step kernel runs without
# Numba's reference counting (``jit(nrt=False)``), which cannot receive a view from a call.
# Callers pass ``np.int64(L_...)`` (a bare constant is typed ``Literal[int]``).
@jit(inline=True)
def _block_rows_kernel(block, layout, k):
    """Array ``k`` of ``layout``: rows and leading columns of its 2-D block."""
    first = layout[k, 0]
    return block[first : first + layout[k, 1], : layout[k, 2]]


@jit(inline=True)
def _block_full_rows_kernel(block, layout, k):
    """Array ``k`` of ``layout`` as whole, C-contiguous block rows (extra columns are 0)."""
    first = layout[k, 0]
    return block[first : first + layout[k, 1]]


@jit(inline=True)
def _block_column_kernel(block, layout, k):
    """Array ``k`` of ``layout`` as a 1-D array (its block rows, column 0)."""
    first = layout[k, 0]
    return block[first : first + layout[k, 1], 0]


@jit(inline=True)
def _block_flat_kernel(block, layout, k, n):
    """The first ``n`` values of array ``k`` of ``layout`` stored flat (C order) in its rows."""
    first = layout[k, 0]
    rows = block[first : first + layout[k, 1]]
    return rows.reshape(rows.size)[:n]


@jit
def _write_rays_not_firing_kernel(
    first, end, max_range, px, py, pz, out_depths, out_p, out_n, out_o, out_e
):
    """Rays ``first .. end - 1``: maxRange, zero hits, origin = end point = sensor position."""
    for i in range(first, end):
        out_depths[i] = max_range
        for a in range(3):
            out_p[i, a] = 0.0
            out_n[i, a] = 0.0
        out_o[i, 0] = px
        out_o[i, 1] = py
        out_o[i, 2] = pz
        out_e[i, 0] = px
        out_e[i, 1] = py
        out_e[i, 2] = pz


@jit
def _slab_kernel(boxes, row, col, ox, oy, oz, ix, iy, iz, t_max):
    """Whether a ray meets the box ``boxes[row, col:col + 6]`` within ``0 .. t_max``.

    The ray is its origin (ox, oy, oz) and inverse direction (ix, iy, iz); the box is
    ``[lo(3), hi(3)]``.
    """
    ax = (boxes[row, col] - ox) * ix
    bx = (boxes[row, col + 3] - ox) * ix
    ay = (boxes[row, col + 1] - oy) * iy
    by = (boxes[row, col + 4] - oy) * iy
    az = (boxes[row, col + 2] - oz) * iz
    bz = (boxes[row, col + 5] - oz) * iz
    enter = max(min(ax, bx), min(ay, by), min(az, bz), 0.0)
    leave = min(max(ax, bx), max(ay, by), max(az, bz), t_max)
    return enter <= leave


@jit(nrt=False)
def raycast_batch_step_kernel(
    block_f,
    block_i,
    io_rays,
    dt,
    body_positions,
    body_orientations,
    body_linear_velocities,
    body_angular_velocities,
):
    """One raycast step of every sensor of a batch against the Numba ray scene, in one call.

    ``io_rays`` persists between steps: only the rows that change are written (the rays
    that fired last step are reset to the not-firing values, the rays of a sensor whose
    position changed get the new position, the firing rays get their cast results). The
    first call (``COUNTS[1, 0] == 0``) writes every row and every group's world boxes.

    Per firing ray (docs/sensors/raycast.md#each-step): the sensor pose extrapolated over the ray's
    time offset, the world ray, the cast start ``o + d * minRange`` and direction rounded to
    float32, the closest triangle hit over the scene's groups (world-box broad phase, BVH in
    the group frame), and the "starts inside a solid" rule (distance 0, normal ``-d``).
    Work skipped without changing a result: groups whose world box lies outside the slab
    around the fan of this step's firing rays; for a static sensor, recomputing its ray
    and casting it against the fixed groups after its first firing (kept in ``L_RAYS``;
    a moving group exactly as far as a fixed one then loses the tie); the inside test
    against solids whose world box misses every start point of this step.

    Args:
        block_f: the float64 arrays ``L_*`` (``F_ARRAYS``), shape (M, F_WIDTH) (per-step
            arrays written).
        block_i: the layout table then the int64 arrays, shape (M, I_WIDTH) (per-step
            arrays written; ``COUNTERS``: each sensor's processed-step counter before this
            step, windowed sensors' (period > 0) advanced by one).
        io_rays: outputs of every ray, concatenated: depths (R,), hit positions (R, 3), hit
            normals (R, 3), origins world (R, 3), end points world (R, 3); shape (13 R,),
            float32 (rows that change are written).
        dt: step size [s] (rounded to float32 as the reference does).
        body_positions: body origins [stage units], shape (B, 3), float64, world (B may be
            0 when no sensor and no scene group follows a body).
        body_orientations: body orientations (w, x, y, z), shape (B, 4), float64.
        body_linear_velocities: COM velocities [stage units/s], shape (B or 0, 3), float64.
        body_angular_velocities: angular velocities [rad/s], shape (B or 0, 3), float64.
    """
    dt32 = np.float32(dt)
    layout = block_i[:LAYOUT_ROWS, :3]
    sensor_counters = _block_column_kernel(block_i, layout, np.int64(L_COUNTERS))
    sensor_f = _block_rows_kernel(block_f, layout, np.int64(L_SENSOR_F))
    sensor_i = _block_rows_kernel(block_i, layout, np.int64(L_SENSOR_I))
    ray_f = _block_rows_kernel(block_f, layout, np.int64(L_RAY_F))
    ray_i = _block_rows_kernel(block_i, layout, np.int64(L_RAY_I))
    group_i = _block_rows_kernel(block_i, layout, np.int64(L_GROUP_I))
    group_local = _block_rows_kernel(block_f, layout, np.int64(L_GROUP_LOCAL_BOXES))
    sensor_io = _block_rows_kernel(block_f, layout, np.int64(L_SENSOR_IO))
    group_pose = _block_rows_kernel(block_f, layout, np.int64(L_GROUP_POSES))
    group_boxes = _block_rows_kernel(block_f, layout, np.int64(L_GROUP_BOXES))
    group_flags = _block_rows_kernel(block_f, layout, np.int64(L_GROUP_FLAGS))
    rays = _block_rows_kernel(block_f, layout, np.int64(L_RAYS))
    ray_poses = _block_rows_kernel(block_f, layout, np.int64(L_RAY_POSES))
    fired = _block_column_kernel(block_i, layout, np.int64(L_FIRED))
    hits = _block_rows_kernel(block_i, layout, np.int64(L_HITS))
    counts = _block_rows_kernel(block_i, layout, np.int64(L_COUNTS))
    flags = _block_rows_kernel(block_i, layout, np.int64(L_FLAGS))
    double_sided = flags[0, 0] != 0
    body_count = body_positions.shape[0] if flags[0, 1] != 0 else 0
    sensor_count = sensor_i.shape[0]
    r = ray_i.shape[0]
    depths = io_rays[:r]
    hit_p = io_rays[r : 4 * r].reshape((r, 3))
    hit_n = io_rays[4 * r : 7 * r].reshape((r, 3))
    o_w = io_rays[7 * r : 10 * r].reshape((r, 3))
    e_w = io_rays[10 * r : 13 * r].reshape((r, 3))
    first_call = counts[1, 0] == 0
    n_solids = layout[L_SOLID_I, 1]
    solid_kinds = _block_flat_kernel(block_i, layout, np.int64(L_SOLID_KINDS), n_solids)
    solid_bounds = _block_flat_kernel(
        block_f, layout, np.int64(L_SOLID_BOUNDS), 4 * n_solids
    ).reshape((n_solids, 4))

    # sensor poses; every ray of a sensor whose float32 position changed gets it
    for k in range(sensor_count):
        b = sensor_i[k, 0]
        if b >= 0 or first_call:
            _sensor_world_pose_kernel(
                body_positions, body_orientations, b, sensor_f, k, sensor_io, k
            )
        px = np.float32(sensor_io[k, 0])
        py = np.float32(sensor_io[k, 1])
        pz = np.float32(sensor_io[k, 2])
        if first_call or not (
            _same_float_kernel(np.float32(sensor_io[k, 7]), px)
            and _same_float_kernel(np.float32(sensor_io[k, 8]), py)
            and _same_float_kernel(np.float32(sensor_io[k, 9]), pz)
        ):
            sensor_io[k, 7] = px
            sensor_io[k, 8] = py
            sensor_io[k, 9] = pz
            end = sensor_i[k + 1, 3] if k + 1 < sensor_count else r
            if first_call:
                _write_rays_not_firing_kernel(
                    sensor_i[k, 3], end, np.float32(sensor_f[k, 8]), px, py, pz,
                    depths, hit_p, hit_n, o_w, e_w,
                )  # fmt: skip
                continue
            for i in range(sensor_i[k, 3], end):
                o_w[i, 0] = px
                o_w[i, 1] = py
                o_w[i, 2] = pz
                e_w[i, 0] = px
                e_w[i, 1] = py
                e_w[i, 2] = pz
    # last step's firing rays go back to the not-firing values
    for c in range(counts[0, 0]):
        i = fired[c]
        k = ray_i[i, 0]
        _write_rays_not_firing_kernel(
            i, i + 1, np.float32(sensor_f[k, 8]), np.float32(sensor_io[k, 7]),
            np.float32(sensor_io[k, 8]), np.float32(sensor_io[k, 9]),
            depths, hit_p, hit_n, o_w, e_w,
        )  # fmt: skip

    # firing windows (docs/sensors/raycast.md#each-step, in float32), one sensor at a time
    count = np.int64(0)  # not a literal: one specialization of the append kernel
    sorted_offsets = ray_f[:, 7]
    order = ray_i[:, 1]
    for k in range(sensor_count):
        end = sensor_i[k + 1, 3] if k + 1 < sensor_count else r
        if sensor_f[k, 9] > 0.0:
            sensor_counters[k] += 1
        count = _append_firing_rays_kernel(
            sensor_counters[k], dt32, np.float32(sensor_f[k, 9]), sorted_offsets, order,
            sensor_i[k, 3], end, fired, count,
        )  # fmt: skip
    counts[0, 0] = count
    counts[0, 1] = 0
    counts[1, 0] = 1
    if count == 0 and not first_call:
        return

    # world rays of the firing rays, and the box around their cast start points
    ray_origins = ray_f[:, 0:3]
    ray_directions = ray_f[:, 3:6]
    lo_x = math.inf
    lo_y = math.inf
    lo_z = math.inf
    hi_x = -math.inf
    hi_y = -math.inf
    hi_z = -math.inf
    for c in range(count):
        i = fired[c]
        k = ray_i[i, 0]
        if sensor_i[k, 0] < 0 and rays[i, 10] == rays[i, 10]:
            # a static sensor's ray that fired before: the same world ray
            sx = rays[i, 3]
            sy = rays[i, 4]
            sz = rays[i, 5]
            lo_x = min(lo_x, sx)
            lo_y = min(lo_y, sy)
            lo_z = min(lo_z, sz)
            hi_x = max(hi_x, sx)
            hi_y = max(hi_y, sy)
            hi_z = max(hi_z, sz)
            continue
        px, py, pz, qw, qx, qy, qz = _ray_pose_kernel(
            sensor_io[k, 0], sensor_io[k, 1], sensor_io[k, 2], sensor_io[k, 3],
            sensor_io[k, 4], sensor_io[k, 5], sensor_io[k, 6], ray_f[i, 6],
            sensor_i[k, 1] != 0, sensor_i[k, 0], body_linear_velocities,
            body_angular_velocities,
        )  # fmt: skip
        min_range = sensor_f[k, 7]
        ox, oy, oz, sx, sy, sz, dx, dy, dz = _world_ray_kernel(
            px, py, pz, qw, qx, qy, qz, ray_origins, ray_directions, i, min_range
        )
        rays[i, 0] = ox
        rays[i, 1] = oy
        rays[i, 2] = oz
        rays[i, 3] = sx
        rays[i, 4] = sy
        rays[i, 5] = sz
        rays[i, 6] = dx
        rays[i, 7] = dy
        rays[i, 8] = dz
        rays[i, 9] = sensor_f[k, 8] - min_range
        ray_poses[i, 0] = px
        ray_poses[i, 1] = py
        ray_poses[i, 2] = pz
        ray_poses[i, 3] = qw
        ray_poses[i, 4] = qx
        ray_poses[i, 5] = qy
        ray_poses[i, 6] = qz
        lo_x = min(lo_x, sx)
        lo_y = min(lo_y, sy)
        lo_z = min(lo_z, sz)
        hi_x = max(hi_x, sx)
        hi_y = max(hi_y, sy)
        hi_z = max(hi_z, sz)

    # group poses and world boxes (fixed groups once); groups whose solids may hold a start
    group_count = group_i.shape[0]
    for g in range(group_count):
        b = group_i[g, 1]
        moving = b >= 0 and b < body_count
        group_flags[g, 2] = 1.0 if moving else 0.0
        if moving:
            for a in range(3):
                group_pose[g, a] = body_positions[b, a]
            for a in range(4):
                group_pose[g, 3 + a] = body_orientations[b, a]
        if moving or first_call:
            qw = group_pose[g, 3]
            qx = group_pose[g, 4]
            qy = group_pose[g, 5]
            qz = group_pose[g, 6]
            px = group_pose[g, 0]
            py = group_pose[g, 1]
            pz = group_pose[g, 2]
            if group_i[g, 0] >= 0:
                box = world_box_kernel(
                    qw, qx, qy, qz, px, py, pz, group_local[g, 0], group_local[g, 1],
                    group_local[g, 2], group_local[g, 3], group_local[g, 4], group_local[g, 5],
                )  # fmt: skip
                for a in range(6):
                    group_boxes[g, a] = box[a]
            if group_i[g, 3] > 0:
                box = world_box_kernel(
                    qw, qx, qy, qz, px, py, pz, group_local[g, 6], group_local[g, 7],
                    group_local[g, 8], group_local[g, 9], group_local[g, 10], group_local[g, 11],
                )  # fmt: skip
                for a in range(6):
                    group_boxes[g, 6 + a] = box[a]
        candidate = (
            group_i[g, 3] > 0
            and count > 0
            and group_boxes[g, 6] <= hi_x
            and group_boxes[g, 7] <= hi_y
            and group_boxes[g, 8] <= hi_z
            and group_boxes[g, 9] >= lo_x
            and group_boxes[g, 10] >= lo_y
            and group_boxes[g, 11] >= lo_z
        )
        group_flags[g, 0] = 1.0 if candidate else 0.0
    if count == 0:
        return

    # the wide BVH, flat (see the layout rows)
    node_boxes = _block_full_rows_kernel(block_f, layout, np.int64(L_NODE_BOXES))
    node_boxes = node_boxes.reshape(node_boxes.size)
    node_refs = _block_full_rows_kernel(block_i, layout, np.int64(L_NODE_REFS))
    node_refs = node_refs.reshape(node_refs.size)
    leaf_triangles = _block_full_rows_kernel(block_f, layout, np.int64(L_TRIANGLES))
    leaf_triangles = leaf_triangles.reshape(leaf_triangles.size)  # (72 L: float64 layout)
    leaf_corners = leaf_triangles.view(np.float32)  # (unused: not the compact layout)
    leaf_ids = _block_full_rows_kernel(block_i, layout, np.int64(L_TRIANGLE_IDS))
    leaf_ids = leaf_ids.reshape(leaf_ids.size)
    face_i = _block_rows_kernel(block_i, layout, np.int64(L_FACE_I))
    face_normals = _block_rows_kernel(block_f, layout, np.int64(L_FACE_NORMALS))
    solid_i = _block_rows_kernel(block_i, layout, np.int64(L_SOLID_I))
    scratch_f = _block_flat_kernel(block_f, layout, np.int64(L_SCRATCH_F), SCRATCH_F_SIZE)
    scratch_i = _block_flat_kernel(block_i, layout, np.int64(L_SCRATCH_I), SCRATCH_I_SIZE)
    stack_t = scratch_f[:WIDE_STACK_SIZE]
    lanes_enter = scratch_f[WIDE_STACK_SIZE : WIDE_STACK_SIZE + NODE_WIDTH]
    lanes_leaf = scratch_f[WIDE_STACK_SIZE + NODE_WIDTH : WIDE_STACK_SIZE + 2 * NODE_WIDTH]
    lanes_order = scratch_f[WIDE_STACK_SIZE + 2 * NODE_WIDTH :]
    stack_ref = scratch_i[:WIDE_STACK_SIZE]
    stack_count = scratch_i[WIDE_STACK_SIZE : 2 * WIDE_STACK_SIZE]
    lanes_child = scratch_i[2 * WIDE_STACK_SIZE :]
    solid_positions = _block_rows_kernel(block_f, layout, np.int64(L_SOLID_POSITIONS))
    solid_orientations = _block_rows_kernel(block_f, layout, np.int64(L_SOLID_ORIENTATIONS))
    solid_params = _block_rows_kernel(block_f, layout, np.int64(L_SOLID_PARAMS))
    planes = _block_rows_kernel(block_f, layout, np.int64(L_PLANES))
    # solids whose world box meets the box of this step's start points, in solid order
    candidates = _block_column_kernel(block_i, layout, np.int64(L_CANDIDATES))
    candidate_groups = _block_column_kernel(block_i, layout, np.int64(L_CANDIDATE_GROUPS))
    solid_world = _block_rows_kernel(block_f, layout, np.int64(L_SOLID_WORLD_BOXES))
    solid_boxes = _block_rows_kernel(block_f, layout, np.int64(L_SOLID_BOXES))
    candidate_count = 0
    for g in range(group_count):
        moving = group_flags[g, 2] != 0.0
        if group_flags[g, 0] == 0.0 and not (first_call and not moving):
            continue
        for solid in range(group_i[g, 2], group_i[g, 2] + group_i[g, 3]):
            if moving or first_call:
                store_world_box_kernel(
                    group_pose[g, 3], group_pose[g, 4], group_pose[g, 5], group_pose[g, 6],
                    group_pose[g, 0], group_pose[g, 1], group_pose[g, 2],
                    solid_boxes, solid, np.int64(0), solid_world, solid, np.int64(0),
                )  # fmt: skip
            if (
                group_flags[g, 0] != 0.0
                and solid_world[solid, 0] <= hi_x
                and solid_world[solid, 1] <= hi_y
                and solid_world[solid, 2] <= hi_z
                and solid_world[solid, 3] >= lo_x
                and solid_world[solid, 4] >= lo_y
                and solid_world[solid, 5] >= lo_z
            ):
                candidates[candidate_count] = solid
                candidate_groups[candidate_count] = g
                candidate_count += 1

    # groups off this step's ray bundle: the firing rays of a spinning sensor form a thin
    # fan; a group whose world box lies outside the slab around the fan's plane (through
    # the first start point, normal to two of the directions) is skipped by every ray
    i0 = fired[0]
    s0x = rays[i0, 3]
    s0y = rays[i0, 4]
    s0z = rays[i0, 5]
    d0x = rays[i0, 6]
    d0y = rays[i0, 7]
    d0z = rays[i0, 8]
    far = 0
    far_cos = 2.0
    for c in range(count):
        i = fired[c]
        cos = abs(d0x * rays[i, 6] + d0y * rays[i, 7] + d0z * rays[i, 8])
        if cos < far_cos:
            far_cos = cos
            far = i
    nx = d0y * rays[far, 8] - d0z * rays[far, 7]
    ny = d0z * rays[far, 6] - d0x * rays[far, 8]
    nz = d0x * rays[far, 7] - d0y * rays[far, 6]
    n_norm = math.sqrt(nx * nx + ny * ny + nz * nz)
    if n_norm < 1e-6:
        # parallel directions: any normal of d0
        if abs(d0x) < 0.9:
            nx, ny, nz = 0.0, d0z, -d0y
        else:
            nx, ny, nz = -d0z, 0.0, d0x
        n_norm = math.sqrt(nx * nx + ny * ny + nz * nz)
    nx /= n_norm
    ny /= n_norm
    nz /= n_norm
    margin = 0.0
    for c in range(count):
        i = fired[c]
        off = abs(nx * (rays[i, 3] - s0x) + ny * (rays[i, 4] - s0y) + nz * (rays[i, 5] - s0z))
        spread = abs(nx * rays[i, 6] + ny * rays[i, 7] + nz * rays[i, 8]) * rays[i, 9]
        margin = max(margin, off + spread)
    margin += 1e-9 * (1.0 + abs(s0x) + abs(s0y) + abs(s0z) + margin)
    for g in range(group_count):
        # the group's world box: around its triangles and its analytic solids
        lo0 = math.inf
        lo1 = math.inf
        lo2 = math.inf
        hi0 = -math.inf
        hi1 = -math.inf
        hi2 = -math.inf
        for part in range(2):
            if (group_i[g, 0] < 0) if part == 0 else (group_i[g, 3] == 0):
                continue
            c = 6 * part
            lo0 = min(lo0, group_boxes[g, c])
            lo1 = min(lo1, group_boxes[g, c + 1])
            lo2 = min(lo2, group_boxes[g, c + 2])
            hi0 = max(hi0, group_boxes[g, c + 3])
            hi1 = max(hi1, group_boxes[g, c + 4])
            hi2 = max(hi2, group_boxes[g, c + 5])
        if not lo0 <= hi0:
            group_flags[g, 1] = 1.0  # nothing to hit
            continue
        cx = 0.5 * (lo0 + hi0) - s0x
        cy = 0.5 * (lo1 + hi1) - s0y
        cz = 0.5 * (lo2 + hi2) - s0z
        reach = (
            abs(nx) * 0.5 * (hi0 - lo0) + abs(ny) * 0.5 * (hi1 - lo1) + abs(nz) * 0.5 * (hi2 - lo2)
        )
        off_bundle = abs(nx * cx + ny * cy + nz * cz) - reach > margin
        group_flags[g, 1] = 1.0 if off_bundle else 0.0

    hit_count = 0
    for c in range(count):
        i = fired[c]
        k = ray_i[i, 0]
        wox = rays[i, 3]
        woy = rays[i, 4]
        woz = rays[i, 5]
        wdx = rays[i, 6]
        wdy = rays[i, 7]
        wdz = rays[i, 8]
        wix = inverse_direction_kernel(wdx)
        wiy = inverse_direction_kernel(wdy)
        wiz = inverse_direction_kernel(wdz)
        # closest triangle over the groups whose world box the ray meets. A static sensor's
        # ray is the same every time it fires: its hit among the fixed groups is cast once
        # and kept, and only the moving groups are cast again (a moving group at exactly the
        # same distance as a fixed one then loses the tie)
        t_best = rays[i, 9]
        face = -1
        mode = 0  # 0: every group, 1: fixed groups only, 2: moving groups only
        if sensor_i[k, 0] < 0:
            if rays[i, 10] != rays[i, 10]:
                mode = 1  # first time this ray fires
            else:
                mode = 2
                if rays[i, 11] != -1.0:  # a triangle (>= 0) or an analytic solid (<= -2)
                    t_best = rays[i, 10]
                    face = int(rays[i, 11])
        while True:
            for g in range(group_count):
                root = group_i[g, 0]
                if group_flags[g, 1] != 0.0:
                    continue
                if mode != 0 and (group_flags[g, 2] != 0.0) != (mode == 2):
                    continue
                # broad phase: the group's world boxes (slab tests) of triangles and solids
                tri_ok = root >= 0 and _slab_kernel(
                    group_boxes, g, np.int64(0), wox, woy, woz, wix, wiy, wiz, t_best
                )
                solid_ok = group_flags[g, 3] != 0.0 and _slab_kernel(
                    group_boxes, g, np.int64(6), wox, woy, woz, wix, wiy, wiz, t_best
                )
                if not (tri_ok or solid_ok):
                    continue
                qw = group_pose[g, 3]
                qx = group_pose[g, 4]
                qy = group_pose[g, 5]
                qz = group_pose[g, 6]
                ox, oy, oz = _rotate_inverse_kernel(
                    qw, qx, qy, qz,
                    wox - group_pose[g, 0], woy - group_pose[g, 1], woz - group_pose[g, 2],
                )  # fmt: skip
                dx, dy, dz = _rotate_inverse_kernel(qw, qx, qy, qz, wdx, wdy, wdz)
                if tri_ok:
                    t_best, hit = wide_traverse_kernel(
                        node_boxes, 6 * NODE_WIDTH, node_refs, 2 * NODE_WIDTH, leaf_triangles,
                        leaf_corners, leaf_ids, root, ox, oy, oz, dx, dy, dz,
                        inverse_direction_kernel(dx), inverse_direction_kernel(dy),
                        inverse_direction_kernel(dz), t_best, double_sided,
                        stack_ref, stack_count, stack_t, lanes_enter, lanes_leaf, lanes_order,
                        lanes_child,
                    )  # fmt: skip
                    if hit >= 0:
                        face = hit
                if solid_ok:
                    t, solid, _, _, _ = group_solid_hit_kernel(
                        solid_kinds, solid_positions, solid_orientations, solid_params,
                        solid_bounds, group_i[g, 2], group_i[g, 3], ox, oy, oz, dx, dy, dz,
                        t_best,
                    )  # fmt: skip
                    if solid >= 0:
                        t_best = t
                        face = -2 - solid  # an analytic solid
            if mode == 1:
                rays[i, 10] = t_best if face != -1 else math.inf
                rays[i, 11] = face
                mode = 2
                continue
            break
        h = math.inf
        actor = -1
        n0 = 0.0
        n1 = 0.0
        n2 = 0.0
        if face <= -2:
            # an analytic solid: its normal, recomputed exactly as found (the same call)
            h = t_best
            solid = -2 - face
            actor = solid_i[solid, 3]
            g = 0
            while not (group_i[g, 2] <= solid < group_i[g, 2] + group_i[g, 3]):
                g += 1
            qw = group_pose[g, 3]
            qx = group_pose[g, 4]
            qy = group_pose[g, 5]
            qz = group_pose[g, 6]
            ox, oy, oz = _rotate_inverse_kernel(
                qw, qx, qy, qz,
                wox - group_pose[g, 0], woy - group_pose[g, 1], woz - group_pose[g, 2],
            )  # fmt: skip
            dx, dy, dz = _rotate_inverse_kernel(qw, qx, qy, qz, wdx, wdy, wdz)
            _, _, gx, gy, gz = group_solid_hit_kernel(
                solid_kinds, solid_positions, solid_orientations, solid_params, solid_bounds,
                solid, np.int64(1), ox, oy, oz, dx, dy, dz, math.inf,
            )  # fmt: skip
            n0, n1, n2 = _rotate_inverse_kernel(qw, -qx, -qy, -qz, gx, gy, gz)
        elif face >= 0:
            h = t_best
            g = face_i[face, 0]
            actor = face_i[face, 1]
            # group normal to world: rotation by q (the inverse of the conjugate's)
            n0, n1, n2 = _rotate_inverse_kernel(
                group_pose[g, 3], -group_pose[g, 4], -group_pose[g, 5], -group_pose[g, 6],
                face_normals[face, 0], face_normals[face, 1], face_normals[face, 2],
            )  # fmt: skip
            if double_sided and n0 * wdx + n1 * wdy + n2 * wdz > 0.0:
                n0 = -n0
                n1 = -n1
                n2 = -n2
        # a start inside a solid hits at distance 0 (first containing solid in solid order)
        for m in range(candidate_count):
            solid = candidates[m]
            g = candidate_groups[m]
            if (
                wox < solid_world[solid, 0]
                or woy < solid_world[solid, 1]
                or woz < solid_world[solid, 2]
                or wox > solid_world[solid, 3]
                or woy > solid_world[solid, 4]
                or woz > solid_world[solid, 5]
            ):
                continue
            gx, gy, gz = _rotate_inverse_kernel(
                group_pose[g, 3], group_pose[g, 4], group_pose[g, 5], group_pose[g, 6],
                wox - group_pose[g, 0], woy - group_pose[g, 1], woz - group_pose[g, 2],
            )  # fmt: skip
            x, y, z = _rotate_inverse_kernel(
                solid_orientations[solid, 0], solid_orientations[solid, 1],
                solid_orientations[solid, 2], solid_orientations[solid, 3],
                gx - solid_positions[solid, 0], gy - solid_positions[solid, 1],
                gz - solid_positions[solid, 2],
            )  # fmt: skip
            if inside_solid_kernel(
                solid_i[solid, 0], solid_params, solid, planes, solid_i[solid, 1],
                solid_i[solid, 2], x, y, z,
            ):  # fmt: skip
                h = 0.0
                actor = solid_i[solid, 3]
                n0 = -wdx
                n1 = -wdy
                n2 = -wdz
                break
        # outputs (docs/sensors/raycast.md#each-step, docs/sensors/raycast.md#outputs)
        for a in range(3):
            o_w[i, a] = rays[i, a]
        if not (h < math.inf):
            max_range = sensor_f[k, 8]
            for a in range(3):
                e_w[i, a] = rays[i, a] + rays[i, 6 + a] * max_range
            continue
        depths[i] = h + sensor_f[k, 7]
        # a named actor only for a hit as recorded: float32 depth below maxRange
        if actor >= 0 and depths[i] < np.float32(sensor_f[k, 8]):
            hits[hit_count, 0] = i
            hits[hit_count, 1] = actor
            hit_count += 1
        _write_hit_kernel(
            i, h, wox, woy, woz, wdx, wdy, wdz, n0, n1, n2, ray_poses, i, sensor_i[k, 2] == 0,
            hit_p, hit_n, e_w,
        )  # fmt: skip
    counts[0, 1] = hit_count


@jit
def raycast_row_ids_kernel(hits, count, a, b, table_len, depths, max_ranges, out_hit, out_ids):
    """One sensor's ``hit`` and hit-path ids of a recorded row, from the step's hit rows.

    For a path table that numbers the scene's actors as they are (actor index = path id):
    ``out_hit[i] = depths[i] < max_ranges[i]`` (as ``np.less``: False for NaN) and
    ``out_ids[i]`` the actor hit by ray ``a + i``, -1 for none.

    Args:
        hits: ``[ray, actor]`` rows of the step's hits in ray order, shape (H, 2), int64.
        count: rows of ``hits`` written this step.
        a: first ray of the sensor.
        b: one past its last ray.
        table_len: length of the actor table.
        depths: the sensor's depths, shape (b - a,), float32.
        max_ranges: per ray ``maxRange``, shape (b - a,), float32.
        out_hit: shape (b - a,), bool (written).
        out_ids: shape (b - a,), int32 (written).

    Returns:
        False when an actor lies outside the table (``out_ids`` then incomplete).
    """
    for i in range(out_ids.shape[0]):
        out_hit[i] = depths[i] < max_ranges[i]
        out_ids[i] = -1
    for k in range(count):
        ray = hits[k, 0]
        if ray >= a and ray < b:
            actor = hits[k, 1]
            if actor < 0 or actor >= table_len:
                return False
            out_ids[ray - a] = actor
    return True
