"""Numba kernels of the raycast sensor (sensors.md §5.3), all rays of all sensors per call.

Rays of several sensors are concatenated; ``ray_sensor[i]`` names the sensor of ray ``i``.
Per step, :func:`raycast_prepare_kernel` poses the sensors, finds the rays that fire and
writes the world rays of only those, compacted; the scene casts the compacted rays; then
:func:`raycast_outputs_kernel` writes every ray's outputs (fired rays from the cast, the
others the non-firing values of §5.3). Kernels trust their inputs (validated by
:mod:`runtime.sensors.raycast`).
"""

from __future__ import annotations

import math

import numpy as np

from runtime._jit import jit
from runtime.sensors._bvh_kernels import scene_cast_kernel

__all__ = ["raycast_step_kernel"]
# raycast_prepare_kernel and raycast_outputs_kernel are the step kernel's building blocks;
# the batch calls them directly only around a non-Numba scene (e.g. Embree). A cached step
# kernel embeds them, so their own dispatchers may hold no compiled signature.


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
    sensor_count = sensor_counters.shape[0]
    for k in range(sensor_count):
        tx = sensor_local_poses[k, 0]
        ty = sensor_local_poses[k, 1]
        tz = sensor_local_poses[k, 2]
        lw = sensor_local_poses[k, 3]
        lx = sensor_local_poses[k, 4]
        ly = sensor_local_poses[k, 5]
        lz = sensor_local_poses[k, 6]
        b = sensor_bodies[k]
        if b >= 0:
            bw = body_orientations[b, 0]
            bx = body_orientations[b, 1]
            by = body_orientations[b, 2]
            bz = body_orientations[b, 3]
            rx, ry, rz = _rotate_kernel(bw, bx, by, bz, tx, ty, tz)
            out_sensor_poses[k, 0] = body_positions[b, 0] + rx
            out_sensor_poses[k, 1] = body_positions[b, 1] + ry
            out_sensor_poses[k, 2] = body_positions[b, 2] + rz
            qw = bw * lw - bx * lx - by * ly - bz * lz
            qx = bw * lx + bx * lw + by * lz - bz * ly
            qy = bw * ly - bx * lz + by * lw + bz * lx
            qz = bw * lz + bx * ly - by * lx + bz * lw
            norm = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
            out_sensor_poses[k, 3] = qw / norm
            out_sensor_poses[k, 4] = qx / norm
            out_sensor_poses[k, 5] = qy / norm
            out_sensor_poses[k, 6] = qz / norm
        else:
            for a in range(7):
                out_sensor_poses[k, a] = sensor_local_poses[k, a]
    ray_count = ray_sensor.shape[0]
    # firing windows, one sensor's run of rays at a time (branch-free compaction)
    count = 0
    first = 0
    while first < ray_count:
        k = ray_sensor[first]
        end = np.searchsorted(ray_sensor, k, side="right")
        p32 = sensor_periods[k]
        if p32 > np.float32(0.0):
            # sensors.md §5.3 step 3 in float32 (fmod is exact, so float64 fmod of the
            # float32 operands rounds back to the float32 result)
            e = np.float32(np.float32(sensor_counters[k]) * dt32)
            e = np.float32(np.fmod(np.float64(e), np.float64(p32)))
            s = np.float32(e - dt32)
            wrapped = s < np.float32(0.0)
            if wrapped:
                s = np.float32(s + p32)
            # offsets hold float32 values: float64 comparisons equal the float32 ones. The
            # rays with s <= tau < e (wrapped: tau >= s or tau < e) are found by bisection
            # in the sensor's offsets sorted ascending, then put back in ray order.
            sorted_run = ray_sorted_offsets[first:end]
            lo = first + np.searchsorted(sorted_run, np.float64(s), side="left")
            hi = first + np.searchsorted(sorted_run, np.float64(e), side="left")
            start = count
            if wrapped and lo < hi:
                # s < e (period shorter than a step): every offset is >= s or < e
                for m in range(first, end):
                    out_fired[count] = ray_offset_order[m]
                    count += 1
            elif wrapped:
                for m in range(first, hi):
                    out_fired[count] = ray_offset_order[m]
                    count += 1
                for m in range(lo, end):
                    out_fired[count] = ray_offset_order[m]
                    count += 1
            else:
                for m in range(lo, hi):
                    out_fired[count] = ray_offset_order[m]
                    count += 1
            ordered = True
            for m in range(start + 1, count):
                if out_fired[m] < out_fired[m - 1]:
                    ordered = False
                    break
            if not ordered:
                out_fired[start:count] = np.sort(out_fired[start:count])
        else:
            for i in range(first, end):
                out_fired[count] = i
                count += 1
        first = end
    for c in range(count):
        i = out_fired[c]
        k = ray_sensor[i]
        px = out_sensor_poses[k, 0]
        py = out_sensor_poses[k, 1]
        pz = out_sensor_poses[k, 2]
        qw = out_sensor_poses[k, 3]
        qx = out_sensor_poses[k, 4]
        qy = out_sensor_poses[k, 5]
        qz = out_sensor_poses[k, 6]
        tau = ray_offsets[i]
        b = sensor_bodies[k]
        if sensor_extrapolate[k] != 0 and b >= 0:
            vx = body_linear_velocities[b, 0]
            vy = body_linear_velocities[b, 1]
            vz = body_linear_velocities[b, 2]
            wx = body_angular_velocities[b, 0]
            wy = body_angular_velocities[b, 1]
            wz = body_angular_velocities[b, 2]
        else:
            vx = 0.0
            vy = 0.0
            vz = 0.0
            wx = 0.0
            wy = 0.0
            wz = 0.0
        v_norm = math.sqrt(vx * vx + vy * vy + vz * vz)
        w_norm = math.sqrt(wx * wx + wy * wy + wz * wz)
        if abs(tau) > 1e-8 and (v_norm > 1e-10 or w_norm > 1e-10):
            px = px + vx * tau
            py = py + vy * tau
            pz = pz + vz * tau
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
            qw = nw
            qx = nx
            qy = ny
            qz = nz
        ox, oy, oz = _rotate_kernel(
            qw,
            qx,
            qy,
            qz,
            ray_origins_local[i, 0],
            ray_origins_local[i, 1],
            ray_origins_local[i, 2],
        )
        ox += px
        oy += py
        oz += pz
        dx, dy, dz = _rotate_kernel(
            qw,
            qx,
            qy,
            qz,
            ray_directions_local[i, 0],
            ray_directions_local[i, 1],
            ray_directions_local[i, 2],
        )
        d_norm = math.sqrt(dx * dx + dy * dy + dz * dz)
        if d_norm > 1e-10:
            dx /= d_norm
            dy /= d_norm
            dz /= d_norm
        min_range = sensor_ranges[k, 0]
        out_origins[c, 0] = ox
        out_origins[c, 1] = oy
        out_origins[c, 2] = oz
        # the reference passes origin and direction to the scene query as float32
        out_starts[c, 0] = np.float64(np.float32(ox + dx * min_range))
        out_starts[c, 1] = np.float64(np.float32(oy + dy * min_range))
        out_starts[c, 2] = np.float64(np.float32(oz + dz * min_range))
        out_directions[c, 0] = np.float64(np.float32(dx))
        out_directions[c, 1] = np.float64(np.float32(dy))
        out_directions[c, 2] = np.float64(np.float32(dz))
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
    """Per-ray outputs of sensors.md §5.3 step 4 and §5.5 for every ray.

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
        out_hits: ``[ray, actor]`` of each hit with a known actor, shape (R, 2), int64
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
        if hit_actors[j] >= 0:
            out_hits[hit_count, 0] = i
            out_hits[hit_count, 1] = hit_actors[j]
            hit_count += 1
        x0 = starts[j, 0] + directions[j, 0] * h
        x1 = starts[j, 1] + directions[j, 1] * h
        x2 = starts[j, 2] + directions[j, 2] * h
        out_end_points_world[i, 0] = x0
        out_end_points_world[i, 1] = x1
        out_end_points_world[i, 2] = x2
        n0 = hit_normals[j, 0]
        n1 = hit_normals[j, 1]
        n2 = hit_normals[j, 2]
        if sensor_world_frame[k] == 0:
            qw = ray_poses[j, 3]
            qx = -ray_poses[j, 4]
            qy = -ray_poses[j, 5]
            qz = -ray_poses[j, 6]
            x0, x1, x2 = _rotate_kernel(
                qw,
                qx,
                qy,
                qz,
                x0 - ray_poses[j, 0],
                x1 - ray_poses[j, 1],
                x2 - ray_poses[j, 2],
            )
            n0, n1, n2 = _rotate_kernel(qw, qx, qy, qz, n0, n1, n2)
        out_hit_positions[i, 0] = x0
        out_hit_positions[i, 1] = x1
        out_hit_positions[i, 2] = x2
        out_hit_normals[i, 0] = n0
        out_hit_normals[i, 1] = n1
        out_hit_normals[i, 2] = n2
    out_hit_count[0] = hit_count


# Rows of the packed layout table of :func:`raycast_step_kernel` (static float64 block,
# static int64 block, float64 scratch block, int64 scratch block). Each row of the table is
# ``[offset, rows, cols]`` of one C-contiguous array inside its block.
PACKED_STATIC_F = (
    "node_boxes", "triangles", "group_local_boxes", "face_normals", "solid_positions",
    "solid_orientations", "solid_params", "planes", "solid_bounds", "group_solid_boxes",
    "local_poses", "ranges", "origins", "directions", "offsets", "sorted_offsets",
)  # fmt: skip
PACKED_STATIC_I = (
    "node_refs", "triangle_ids", "group_roots", "group_body", "face_groups", "face_actors",
    "solid_groups", "solid_kinds", "solid_plane_ranges", "solid_actors",
    "group_solid_ranges", "bodies", "extrapolate", "frames", "ray_sensor", "offset_order",
)  # fmt: skip
PACKED_IO_F = (
    "sensor_poses", "c_origins", "c_starts", "c_directions", "c_max_distances", "c_poses",
    "c_distances", "c_normals", "group_positions", "group_orientations", "world_boxes",
)  # fmt: skip
PACKED_IO_I = (
    "fired", "c_actors", "hits", "scratch_faces", "scratch_inside", "count",
    "hit_count",
)  # fmt: skip
PACKED_NAMES = PACKED_STATIC_F + PACKED_STATIC_I + PACKED_IO_F + PACKED_IO_I
_F0 = len(PACKED_STATIC_F)
_I0 = _F0 + len(PACKED_STATIC_I)
_G0 = _I0 + len(PACKED_IO_F)


@jit
def _packed_1d_kernel(block, layout, k):
    """View of table row ``k`` of ``layout`` in ``block`` as shape (rows * cols,)."""
    o = layout[k, 0]
    return block[o : o + layout[k, 1] * layout[k, 2]]


@jit
def _packed_2d_kernel(block, layout, k):
    """View of table row ``k`` of ``layout`` in ``block`` as shape (rows, cols)."""
    o = layout[k, 0]
    rows = layout[k, 1]
    cols = layout[k, 2]
    return block[o : o + rows * cols].reshape((rows, cols))


@jit
def raycast_step_kernel(
    sensor_counters,
    sensor_periods,
    dt32,
    layout,
    static_f,
    static_i,
    double_sided,
    body_positions,
    body_orientations,
    body_linear_velocities,
    body_angular_velocities,
    scene_has_bodies,
    io_f,
    io_i,
    io_template,
    out_rays,
):
    """One raycast step in one call (prepare, scene query of the firing rays, outputs).

    Runs :func:`raycast_prepare_kernel`, the Numba scene query
    :func:`runtime.sensors._bvh_kernels.scene_cast_kernel` on the firing rays only, and
    :func:`raycast_outputs_kernel`. Their static and scratch arrays are packed into four
    blocks (few arguments: the call's dispatch cost grows with their number); ``layout``
    locates each array, row ``k`` for the ``k``-th name of ``PACKED_NAMES``.

    Args:
        sensor_counters: see :func:`raycast_prepare_kernel`, shape (S,), int64.
        sensor_periods: see :func:`raycast_prepare_kernel`, shape (S,), float32.
        dt32: step size [s] as float32.
        layout: ``[offset, rows, cols]`` of each packed array, shape (K, 3), int64.
        static_f: the ``PACKED_STATIC_F`` arrays (scene arrays of ``scene_cast_kernel``,
            then the sensor arrays of :func:`raycast_prepare_kernel`), float64.
        static_i: the ``PACKED_STATIC_I`` arrays, int64.
        double_sided: see ``scene_cast_kernel``.
        body_positions: body origins, shape (B, 3), float64, world.
        body_orientations: body orientations (w, x, y, z), shape (B, 4), float64.
        body_linear_velocities: see :func:`raycast_prepare_kernel`, shape (B or 0, 3).
        body_angular_velocities: see :func:`raycast_prepare_kernel`, shape (B or 0, 3).
        scene_has_bodies: 1 when the scene's groups follow the bodies (cast with
            ``body_positions`` / ``body_orientations``), 0 for a static scene.
        io_f: the ``PACKED_IO_F`` arrays (compact rays, sensor poses, group poses whose
            static rows are pre-filled, scratch), float64 (written).
        io_i: the ``PACKED_IO_I`` arrays (fired rays, compact actors, hits ``[ray, actor]``,
            scratch, ``count`` and ``hit_count`` of shape (1,)), int64 (written).
        io_template: the not-firing outputs, laid out as ``out_rays`` (maxRange depths,
            zero hits, origins = end points = the sensor positions last written), shape
            (13 R,), float32; ``out_rays`` arrives as its copy, and the rows of a sensor that
            moved are rewritten in both.
        out_rays: per-ray outputs of :func:`raycast_outputs_kernel`, concatenated: depths
            (R,), hit positions (R, 3), hit normals (R, 3), origins world (R, 3), end
            points world (R, 3); shape (13 R,), float32 (written).
    """
    sf = static_f
    si = static_i
    lay = layout
    f0 = _F0
    i0 = _I0
    g0 = _G0
    ray_sensor = _packed_1d_kernel(si, lay, f0 + 14)
    sensor_ranges = _packed_2d_kernel(sf, lay, 11)
    sensor_poses = _packed_2d_kernel(io_f, lay, i0 + 0)
    fired = _packed_1d_kernel(io_i, lay, g0 + 0)
    c_origins = _packed_2d_kernel(io_f, lay, i0 + 1)
    c_starts = _packed_2d_kernel(io_f, lay, i0 + 2)
    c_directions = _packed_2d_kernel(io_f, lay, i0 + 3)
    c_max_distances = _packed_1d_kernel(io_f, lay, i0 + 4)
    c_poses = _packed_2d_kernel(io_f, lay, i0 + 5)
    c_distances = _packed_1d_kernel(io_f, lay, i0 + 6)
    c_normals = _packed_2d_kernel(io_f, lay, i0 + 7)
    c_actors = _packed_1d_kernel(io_i, lay, g0 + 1)
    count = _packed_1d_kernel(io_i, lay, g0 + 5)
    raycast_prepare_kernel(
        sensor_counters,
        sensor_periods,
        dt32,
        _packed_1d_kernel(si, lay, f0 + 11),
        _packed_2d_kernel(sf, lay, 10),
        _packed_1d_kernel(si, lay, f0 + 12),
        sensor_ranges,
        body_positions,
        body_orientations,
        body_linear_velocities,
        body_angular_velocities,
        ray_sensor,
        _packed_2d_kernel(sf, lay, 12),
        _packed_2d_kernel(sf, lay, 13),
        _packed_1d_kernel(sf, lay, 14),
        _packed_1d_kernel(si, lay, f0 + 15),
        _packed_1d_kernel(sf, lay, 15),
        sensor_poses,
        fired,
        c_origins,
        c_starts,
        c_directions,
        c_max_distances,
        c_poses,
        count,
    )
    n = count[0]
    if n > 0:
        if scene_has_bodies:
            scene_positions = body_positions
            scene_orientations = body_orientations
        else:
            scene_positions = body_positions[:0]
            scene_orientations = body_orientations[:0]
        scene_cast_kernel(
            _packed_2d_kernel(sf, lay, 0),
            _packed_2d_kernel(si, lay, f0 + 0),
            _packed_2d_kernel(sf, lay, 1),
            _packed_1d_kernel(si, lay, f0 + 1),
            _packed_1d_kernel(si, lay, f0 + 2),
            _packed_2d_kernel(sf, lay, 2),
            _packed_1d_kernel(si, lay, f0 + 3),
            scene_positions,
            scene_orientations,
            _packed_1d_kernel(si, lay, f0 + 4),
            _packed_1d_kernel(si, lay, f0 + 5),
            _packed_2d_kernel(sf, lay, 3),
            _packed_1d_kernel(si, lay, f0 + 6),
            _packed_1d_kernel(si, lay, f0 + 7),
            _packed_2d_kernel(sf, lay, 4),
            _packed_2d_kernel(sf, lay, 5),
            _packed_2d_kernel(sf, lay, 6),
            _packed_2d_kernel(si, lay, f0 + 8),
            _packed_2d_kernel(sf, lay, 7),
            _packed_2d_kernel(sf, lay, 8),
            _packed_1d_kernel(si, lay, f0 + 9),
            _packed_2d_kernel(si, lay, f0 + 10),
            _packed_2d_kernel(sf, lay, 9),
            c_starts[:n],
            c_directions[:n],
            c_max_distances[:n],
            double_sided,
            _packed_2d_kernel(io_f, lay, i0 + 8),
            _packed_2d_kernel(io_f, lay, i0 + 9),
            _packed_2d_kernel(io_f, lay, i0 + 10),
            _packed_1d_kernel(io_i, lay, g0 + 3)[:n],
            _packed_1d_kernel(io_i, lay, g0 + 4)[:n],
            c_distances[:n],
            c_actors[:n],
            c_normals[:n],
        )
    r = ray_sensor.shape[0]
    raycast_outputs_kernel(
        ray_sensor,
        fired,
        count,
        sensor_poses,
        c_origins,
        c_directions,
        c_starts,
        c_poses,
        c_distances,
        c_normals,
        c_actors,
        sensor_ranges,
        _packed_1d_kernel(si, lay, f0 + 13),
        io_template[7 * r : 10 * r].reshape((r, 3)),
        io_template[10 * r : 13 * r].reshape((r, 3)),
        out_rays[:r],
        out_rays[r : 4 * r].reshape((r, 3)),
        out_rays[4 * r : 7 * r].reshape((r, 3)),
        out_rays[7 * r : 10 * r].reshape((r, 3)),
        out_rays[10 * r : 13 * r].reshape((r, 3)),
        _packed_2d_kernel(io_i, lay, g0 + 2),
        _packed_1d_kernel(io_i, lay, g0 + 6),
    )
