"""Kernels of the embreex backend (:mod:`runtime.rays.embree`).

Embree casts in float32 against merged scenes: :func:`embree_pack_rays_kernel` cuts each
ray into the segments inside the moving groups' boxes, shifted into each group's grid cell;
:func:`embree_merge_kernel` and :func:`embree_merge_groups_kernel` take Embree's hit
triangles back and compute the float64 distance from the triangle's plane.
"""

from __future__ import annotations

import numpy as np

from runtime._compile.jit import jit
from runtime.rays._traversal_kernels import (
    inverse_direction_kernel,
    matrix_kernel,
    rotate_inverse_kernel,
    store_world_box_kernel,
)

__all__ = [
    "embree_merge_groups_kernel",
    "embree_merge_kernel",
    "embree_pack_rays_kernel",
]


@jit
def _to_frame_kernel(frames, g, group_positions, origins, directions, i):
    """Ray ``i`` in the frame of group ``g``: ``R^T (o - p)`` and ``R^T d``.

    ``frames[g]`` holds the group's rotation R row-major.
    """
    px = origins[i, 0] - group_positions[g, 0]
    py = origins[i, 1] - group_positions[g, 1]
    pz = origins[i, 2] - group_positions[g, 2]
    dx = directions[i, 0]
    dy = directions[i, 1]
    dz = directions[i, 2]
    return (
        frames[g, 0] * px + frames[g, 3] * py + frames[g, 6] * pz,
        frames[g, 1] * px + frames[g, 4] * py + frames[g, 7] * pz,
        frames[g, 2] * px + frames[g, 5] * py + frames[g, 8] * pz,
        frames[g, 0] * dx + frames[g, 3] * dy + frames[g, 6] * dz,
        frames[g, 1] * dx + frames[g, 4] * dy + frames[g, 7] * dz,
        frames[g, 2] * dx + frames[g, 5] * dy + frames[g, 8] * dz,
    )


@jit
def embree_pack_rays_kernel(
    origins,
    directions,
    limits,
    group_moving,
    group_local_boxes,
    group_shifts,
    group_positions,
    group_orientations,
    out_world_boxes,
    out_offsets,
    out_origins,
    out_directions,
    out_limits,
    out_rays,
):
    """Float32 ray segments of every (ray, moving group) pair whose group box it meets.

    Each segment is the part of the group-frame ray inside the group's (padded) box,
    shifted by ``group_shifts[g]``: every moving group sits in its own cell of one Embree
    scene (:class:`~runtime.rays.embree.EmbreexBackend`), and a segment never
    leaves its cell. Pairs are packed group by group: group ``g``'s rays are rows
    ``out_offsets[g] .. out_offsets[g + 1] - 1``. Nothing is written past the buffers: when
    they are too small only the counts are computed and the needed size is returned.

    Args:
        origins: ray origins [stage units], shape (R, 3), float64, world.
        directions: unit ray directions, shape (R, 3), float64, world.
        limits: largest useful hit distance per ray, shape (R,), float64.
        group_moving: 1 for a group with its own Embree scene, else 0, shape (G,), int64.
        group_local_boxes: group-frame box of each group's triangles, shape (G, 6), float64.
        group_shifts: offset of each group's cell in the merged scene, shape (G, 3),
            float64.
        group_positions: group origins, shape (G, 3), float64, world.
        group_orientations: group orientations (w, x, y, z), shape (G, 4), float64.
        out_world_boxes: scratch, shape (G, 6), float64 (written).
        out_offsets: first pair row of each group, shape (G + 1,), int64 (written).
        out_origins: segment starts (shifted group frame), shape (P, 3), float32 (written).
        out_directions: group-frame directions, shape (P, 3), float32 (written).
        out_limits: segment lengths, shape (P,), float32 (written).
        out_rays: ray index of each pair, shape (P,), int64 (written).

    Returns:
        The number of pairs (the buffers were filled only when it is <= P).
    """
    group_count = group_moving.shape[0]
    ray_count = origins.shape[0]
    # group rotations once: a group-frame ray is R^T (x - p)
    frames = np.empty((group_count, 9))
    for g in range(group_count):
        if group_moving[g] == 0:
            continue
        m = matrix_kernel(
            group_orientations[g, 0], group_orientations[g, 1], group_orientations[g, 2],
            group_orientations[g, 3],
        )  # fmt: skip
        for k in range(9):
            frames[g, k] = m[k]
        store_world_box_kernel(
            group_orientations[g, 0], group_orientations[g, 1], group_orientations[g, 2],
            group_orientations[g, 3], group_positions[g, 0], group_positions[g, 1],
            group_positions[g, 2], group_local_boxes, g, 0, out_world_boxes, g, 0,
        )  # fmt: skip
    capacity = out_rays.shape[0]
    big = 3.4028234663852886e38
    # the box around every moving group: a ray missing it skips them all
    union = np.empty(6)
    union[:3] = np.inf
    union[3:] = -np.inf
    for g in range(group_count):
        if group_moving[g] != 0:
            for a in range(3):
                union[a] = min(union[a], out_world_boxes[g, a])
                union[3 + a] = max(union[3 + a], out_world_boxes[g, 3 + a])
    # pass 1, ray by ray: which groups each ray can reach (world box, then group box)
    reach = np.zeros((ray_count, group_count), np.uint8)
    counts = np.zeros(group_count, np.int64)
    for i in range(ray_count):
        wix = inverse_direction_kernel(directions[i, 0])
        wiy = inverse_direction_kernel(directions[i, 1])
        wiz = inverse_direction_kernel(directions[i, 2])
        ax = (union[0] - origins[i, 0]) * wix
        bx = (union[3] - origins[i, 0]) * wix
        ay = (union[1] - origins[i, 1]) * wiy
        by = (union[4] - origins[i, 1]) * wiy
        az = (union[2] - origins[i, 2]) * wiz
        bz = (union[5] - origins[i, 2]) * wiz
        enter = max(min(ax, bx), min(ay, by), min(az, bz), 0.0)
        leave = min(max(ax, bx), max(ay, by), max(az, bz), limits[i])
        if enter > leave:
            continue
        for g in range(group_count):
            if group_moving[g] == 0:
                continue
            ax = (out_world_boxes[g, 0] - origins[i, 0]) * wix
            bx = (out_world_boxes[g, 3] - origins[i, 0]) * wix
            ay = (out_world_boxes[g, 1] - origins[i, 1]) * wiy
            by = (out_world_boxes[g, 4] - origins[i, 1]) * wiy
            az = (out_world_boxes[g, 2] - origins[i, 2]) * wiz
            bz = (out_world_boxes[g, 5] - origins[i, 2]) * wiz
            enter = max(min(ax, bx), min(ay, by), min(az, bz), 0.0)
            leave = min(max(ax, bx), max(ay, by), max(az, bz), limits[i])
            if enter > leave:
                continue
            # the group-frame ray against the group's own (tighter) box, padded
            ox, oy, oz, dx, dy, dz = _to_frame_kernel(frames, g, group_positions, origins,
                                                      directions, i)  # fmt: skip
            pad = 1e-6 * (1.0 + abs(ox) + abs(oy) + abs(oz))
            lix = inverse_direction_kernel(dx)
            liy = inverse_direction_kernel(dy)
            liz = inverse_direction_kernel(dz)
            ax = (group_local_boxes[g, 0] - pad - ox) * lix
            bx = (group_local_boxes[g, 3] + pad - ox) * lix
            ay = (group_local_boxes[g, 1] - pad - oy) * liy
            by = (group_local_boxes[g, 4] + pad - oy) * liy
            az = (group_local_boxes[g, 2] - pad - oz) * liz
            bz = (group_local_boxes[g, 5] + pad - oz) * liz
            enter = max(min(ax, bx), min(ay, by), min(az, bz), 0.0)
            leave = min(max(ax, bx), max(ay, by), max(az, bz), limits[i] * (1.0 + 1e-6))
            if enter > leave:
                continue
            reach[i, g] = 1
            counts[g] += 1
    total = 0
    for g in range(group_count):
        out_offsets[g] = total
        total += counts[g]
    out_offsets[group_count] = total
    if total > capacity:
        return total
    # pass 2: the group-frame float32 rays, group by group
    for g in range(group_count):
        if counts[g] == 0:
            continue
        row = out_offsets[g]
        for i in range(ray_count):
            if reach[i, g] == 0:
                continue
            ox, oy, oz, dx, dy, dz = _to_frame_kernel(frames, g, group_positions, origins,
                                                      directions, i)  # fmt: skip
            # the segment inside the padded group box (as pass 1 found it)
            pad = 1e-6 * (1.0 + abs(ox) + abs(oy) + abs(oz))
            lix = inverse_direction_kernel(dx)
            liy = inverse_direction_kernel(dy)
            liz = inverse_direction_kernel(dz)
            ax = (group_local_boxes[g, 0] - pad - ox) * lix
            bx = (group_local_boxes[g, 3] + pad - ox) * lix
            ay = (group_local_boxes[g, 1] - pad - oy) * liy
            by = (group_local_boxes[g, 4] + pad - oy) * liy
            az = (group_local_boxes[g, 2] - pad - oz) * liz
            bz = (group_local_boxes[g, 5] + pad - oz) * liz
            enter = max(min(ax, bx), min(ay, by), min(az, bz), 0.0)
            leave = min(max(ax, bx), max(ay, by), max(az, bz), limits[i] * (1.0 + 1e-6))
            start = max(enter - pad, 0.0)
            out_origins[row, 0] = ox + start * dx + group_shifts[g, 0]
            out_origins[row, 1] = oy + start * dy + group_shifts[g, 1]
            out_origins[row, 2] = oz + start * dz + group_shifts[g, 2]
            out_directions[row, 0] = dx
            out_directions[row, 1] = dy
            out_directions[row, 2] = dz
            out_limits[row] = min(leave - start + pad, big)
            out_rays[row] = i
            row += 1
    return total


@jit
def embree_merge_kernel(
    prim,
    out_t,
    static_ids,
    rays,
    origins,
    directions,
    group,
    face_base,
    face_normals,
    face_points,
    double_sided,
    group_positions,
    group_orientations,
    io_distances,
    io_faces,
):
    """Merge one Embree call's hit triangles into the closest hits so far.

    Embree is asked for the hit triangle only; its distance is computed here in float64
    from the world ray and the triangle's plane (no float32 rounding of the distance).

    Args:
        prim: Embree primitive id per cast row, -1 on a miss, shape (n,), int32.
        out_t: hit distance per row, ``inf`` on a miss, shape (n,), float64 (written).
        static_ids: global face of each triangle of the fixed-groups scene, shape (S,).
        rays: ray index of each row, shape (n,), int64; empty: row i is ray i.
        origins: world ray origins, shape (R, 3), float64.
        directions: world ray directions, shape (R, 3), float64.
        group: the group cast (its faces start at ``face_base[group]``), or -1 for the
            fixed-groups scene (faces through ``static_ids``, normals and points already
            world).
        face_base: first global face of each group, shape (G,), int64.
        face_normals: front normal (not unit) of each global face, its group frame (world
            for fixed groups), shape (F, 3), float64.
        face_points: first vertex of each global face, same frames, shape (F, 3), float64.
        double_sided: when False a hit whose normal faces along the ray is a back face.
        group_positions: group origins, shape (G, 3), float64, world.
        group_orientations: group orientations (w, x, y, z), shape (G, 4), float64.
        io_distances: closest distance so far per ray, shape (R,), float64 (updated).
        io_faces: its global face or -1, shape (R,), int64 (updated).

    Returns:
        The rows that hit a back face (to re-cast from ``out_t`` on), int64.
    """
    n = prim.shape[0]
    back = np.empty(n, np.int64)
    back_count = 0
    for row in range(n):
        p = prim[row]
        out_t[row] = np.inf
        if p < 0:
            continue
        i = rays[row] if rays.shape[0] > 0 else row
        if group < 0:
            f = static_ids[p]
            nx = face_normals[f, 0]
            ny = face_normals[f, 1]
            nz = face_normals[f, 2]
            px = face_points[f, 0]
            py = face_points[f, 1]
            pz = face_points[f, 2]
        else:
            f = face_base[group] + p
            qw = group_orientations[group, 0]
            qx = -group_orientations[group, 1]
            qy = -group_orientations[group, 2]
            qz = -group_orientations[group, 3]
            nx, ny, nz = rotate_inverse_kernel(
                qw, qx, qy, qz, face_normals[f, 0], face_normals[f, 1], face_normals[f, 2]
            )
            px, py, pz = rotate_inverse_kernel(
                qw, qx, qy, qz, face_points[f, 0], face_points[f, 1], face_points[f, 2]
            )
            px += group_positions[group, 0]
            py += group_positions[group, 1]
            pz += group_positions[group, 2]
        facing = nx * directions[i, 0] + ny * directions[i, 1] + nz * directions[i, 2]
        if facing == 0.0:  # exactly in the plane: no distance along the ray
            continue
        t = nx * (px - origins[i, 0]) + ny * (py - origins[i, 1]) + nz * (pz - origins[i, 2])
        t = t / facing
        if not (t > -np.inf and t < np.inf):  # a non-finite ray: no distance
            continue
        t = max(t, 0.0)
        out_t[row] = t
        if not double_sided and facing >= 0.0:
            back[back_count] = row
            back_count += 1
            continue
        if t < io_distances[i]:
            io_distances[i] = t
            io_faces[i] = f
    return back[:back_count]


@jit
def embree_merge_groups_kernel(
    prim,
    out_t,
    offsets,
    prim_base,
    static_ids,
    rays,
    origins,
    directions,
    face_base,
    face_normals,
    face_points,
    double_sided,
    group_positions,
    group_orientations,
    io_distances,
    io_faces,
):
    """:func:`embree_merge_kernel` of every moving group's packed rows in one call.

    Args:
        prim: Embree primitive id per packed row (-1 miss), shape (P,), int32; the rows of
            group ``g`` get ``prim_base[g]`` subtracted from their hits (updated).
        out_t: hit distance per packed row, shape (P,), float64 (written).
        offsets: first packed row of each group, shape (G + 1,), int64.
        prim_base: first primitive of each group in the merged scene, shape (G,), int64.
        static_ids: as :func:`embree_merge_kernel` (unused rows of fixed groups).
        rays: ray index of each packed row, shape (P,), int64.
        origins: world ray origins, shape (R, 3), float64.
        directions: world ray directions, shape (R, 3), float64.
        face_base: first global face of each group, shape (G,), int64.
        face_normals: front normal of each global face, group frame, shape (F, 3), float64.
        face_points: first vertex of each global face, group frame, shape (F, 3), float64.
        double_sided: when False hits on back faces are returned instead of merged.
        group_positions: group origins, shape (G, 3), float64, world.
        group_orientations: group orientations (w, x, y, z), shape (G, 4), float64.
        io_distances: closest distance so far per ray, shape (R,), float64 (updated).
        io_faces: its global face or -1, shape (R,), int64 (updated).

    Returns:
        The packed rows that hit a back face, int64, ascending.
    """
    total = offsets[offsets.shape[0] - 1]
    back = np.empty(total, np.int64)
    count = 0
    for g in range(offsets.shape[0] - 1):
        s = offsets[g]
        e = offsets[g + 1]
        if e == s:
            continue
        for r in range(s, e):
            if prim[r] >= 0:
                prim[r] -= prim_base[g]
        rows = embree_merge_kernel(
            prim[s:e], out_t[s:e], static_ids, rays[s:e], origins, directions, g, face_base,
            face_normals, face_points, double_sided, group_positions, group_orientations,
            io_distances, io_faces,
        )  # fmt: skip
        for r in range(rows.shape[0]):
            back[count] = rows[r] + s
            count += 1
    return back[:count]
