"""Numba kernels of the ray scene: BVH build, closest-hit traversal, solid-inside tests.

Layout of a flattened BVH (one or several meshes concatenated into the same arrays):

* ``node_boxes`` (N, 12) float64: for internal node ``i`` the bounds of its two children,
  ``[left_lo(3), left_hi(3), right_lo(3), right_hi(3)]`` in the mesh frame. An empty child has
  ``lo = +inf`` and ``hi = -inf`` and is never entered.
* ``node_refs`` (N, 4) int64: ``[left_ref, left_count, right_ref, right_count]``. A count of 0
  means the ref is an internal node index (or -1 for an empty child); a count > 0 means a leaf
  holding triangles ``ref .. ref + count - 1`` of the leaf-ordered triangle arrays.
* ``triangles`` (T, 9) float64: leaf-ordered ``[v0(3), e1(3), e2(3)]`` with ``e1 = v1 - v0`` and
  ``e2 = v2 - v0`` (Möller–Trumbore form), in the mesh frame.
* ``triangle_ids`` (T,) int64: caller-defined id of each leaf-ordered triangle (a global face
  index), reported on hits.

Every mesh has an internal root node, so traversal starts by testing the root's children.
Kernels trust their inputs (shapes, dtypes, finite values); validation happens in
``runtime.rays.scene`` and ``runtime.rays.backends``.
"""

from __future__ import annotations

import numpy as np

from runtime._compile.jit import JIT_DISABLED, jit
from runtime.rays._simd import NODE_WIDTH
from runtime.rays._wide_bvh_kernels import NODE_ROWS, WIDE_STACK_SIZE, wide_traverse_kernel

__all__ = [
    "MAX_LEAF_SIZE",
    "MORTON_BUCKET_BITS",
    "STACK_SIZE",
    "bvh_build_kernel",
    "bvh_closest_hit_kernel",
    "embree_merge_groups_kernel",
    "embree_merge_kernel",
    "embree_pack_rays_kernel",
    "gather_rays_kernel",
    "ray_bucket_order_kernel",
    "ray_morton_codes_kernel",
    "scatter_hits_kernel",
    "scene_cast_kernel",
    "scene_cast_parallel_kernel",
    "scene_closest_hit_kernel",
    "scene_closest_hit_parallel_kernel",
    "scene_group_poses_kernel",
    "scene_hit_attributes_kernel",
    "scene_inside_solid_kernel",
    "scene_shade_kernel",
    "scene_solid_hits_kernel",
]

MAX_LEAF_SIZE = 4
"""Largest leaf the SAH builder creates when splitting still pays off."""

STACK_SIZE = 256
"""Traversal stack depth; the builder keeps every tree shallower than this."""

_MAX_SAH_DEPTH = 96

_SAH_BINS = 16
_BARY_EPS = 1e-12
_TINY = 1e-30
_HUGE = 1e30

SOLID_BOX = 0
SOLID_SPHERE = 1
SOLID_CAPSULE = 2
SOLID_CYLINDER = 3
SOLID_CONVEX = 4

PARALLEL_BLOCK = 1024
"""Rays per work item of the parallel kernels (items handed to the threads dynamically).

Measured on 100k-ray casts with 2 threads: 1024 scaled better than 256 (a thread keeps
longer runs of neighbouring rays, whose nodes are in its own cache) and kept 4 items for the
smallest parallel batch (4096 rays) to balance."""


def _jit_parallel(function):
    """Like :func:`runtime._compile.jit.jit`, with ``parallel=True`` (``prange`` over ray blocks).

    Each block runs the sequential kernel on its slice of the rays, so results are
    bit-identical to the sequential kernel whatever the thread count.
    """
    if JIT_DISABLED:
        return function
    import numba

    return numba.njit(cache=True, nogil=True, parallel=True)(function)


_prange = range
if not JIT_DISABLED:
    import numba as _numba

    _prange = _numba.prange


# --------------------------------------------------------------------------------------------
# Build
# --------------------------------------------------------------------------------------------


@jit
def _half_area_kernel(lo0, lo1, lo2, hi0, hi1, hi2):
    """Half surface area of a box (0 for an empty box)."""
    ex = hi0 - lo0
    ey = hi1 - lo1
    ez = hi2 - lo2
    if ex < 0.0 or ey < 0.0 or ez < 0.0:
        return 0.0
    return ex * ey + ey * ez + ez * ex


@jit
def bvh_build_kernel(
    vertices,
    faces,
    out_node_boxes,
    out_node_refs,
    out_triangles,
    out_triangle_order,
    out_node_count,
):
    """Build a binned-SAH BVH over one triangle mesh.

    Each pending range of triangles is binned once, on all three axes at a time (16 bins of
    centroid position per axis), split at the cheapest bin boundary, and partitioned in
    place; the partition also gathers both children's triangle and centroid bounds, so no
    range is read twice. The triangles' bounds and centroids travel with them, so every pass
    reads memory in order.

    Args:
        vertices: vertex positions [stage units], shape (V, 3), float64, mesh frame.
        faces: vertex indices per triangle, shape (F, 3), int64, F >= 1.
        out_node_boxes: child bounds per node, shape (max(2 * F, 2), 12), float64 (written).
        out_node_refs: child references per node, shape (max(2 * F, 2), 4), int64 (written).
        out_triangles: leaf-ordered ``[v0, e1, e2]`` rows, shape (F, 9), float64 (written).
        out_triangle_order: original face index of each leaf-ordered triangle, shape (F,),
            int64 (written).
        out_node_count: shape (1,), int64; receives the number of nodes used. Node 0 is the
            root.
    """
    face_count = faces.shape[0]
    # per triangle, in range order: [lo(3), hi(3), centroid(3)]
    prims = np.empty((face_count, 9))
    order = np.arange(face_count).astype(np.int64)
    root_box = np.empty(12)  # [box lo, box hi, centroid lo, centroid hi]
    for a in range(3):
        root_box[a] = np.inf
        root_box[3 + a] = -np.inf
        root_box[6 + a] = np.inf
        root_box[9 + a] = -np.inf
    for f in range(face_count):
        for a in range(3):
            x0 = vertices[faces[f, 0], a]
            x1 = vertices[faces[f, 1], a]
            x2 = vertices[faces[f, 2], a]
            lo = min(x0, min(x1, x2))
            hi = max(x0, max(x1, x2))
            c = 0.5 * (lo + hi)
            prims[f, a] = lo
            prims[f, 3 + a] = hi
            prims[f, 6 + a] = c
            root_box[a] = min(root_box[a], lo)
            root_box[3 + a] = max(root_box[3 + a], hi)
            root_box[6 + a] = min(root_box[6 + a], c)
            root_box[9 + a] = max(root_box[9 + a], c)

    node_count = 1
    bin_count = np.empty((3, _SAH_BINS), np.int64)
    bin_box = np.empty((3, _SAH_BINS, 6))
    right_area = np.empty(_SAH_BINS)
    right_count = np.empty(_SAH_BINS, np.int64)
    sides = np.empty((2, 12))  # per child: [box lo, box hi, centroid lo, centroid hi]

    # A pending range is split into the two children of an internal node; its centroid
    # bounds come with it. The root range is the whole mesh (node 0). Deep trees fall back
    # to median splits to bound the stack depth.
    pend_node = np.empty(face_count + 1, np.int64)
    pend_start = np.empty(face_count + 1, np.int64)
    pend_end = np.empty(face_count + 1, np.int64)
    pend_depth = np.empty(face_count + 1, np.int64)
    pend_cbox = np.empty((face_count + 1, 6))
    pend_node[0] = 0
    pend_start[0] = 0
    pend_end[0] = face_count
    pend_depth[0] = 0
    for a in range(6):
        pend_cbox[0, a] = root_box[6 + a]
    pend_top = 1

    while pend_top > 0:
        pend_top -= 1
        node = pend_node[pend_top]
        start = pend_start[pend_top]
        end = pend_end[pend_top]
        depth = pend_depth[pend_top]
        n = end - start
        # ---- choose the split of [start, end) ----
        mid = -1
        best_axis = -1
        best_bin = -1
        if n <= 1:
            mid = end  # everything left, right child empty
        elif depth >= _MAX_SAH_DEPTH:
            mid = start + n // 2
        else:
            scale = np.empty(3)
            for a in range(3):
                extent = pend_cbox[pend_top, 3 + a] - pend_cbox[pend_top, a]
                scale[a] = _SAH_BINS / extent if extent > 0.0 else 0.0
                for b in range(_SAH_BINS):
                    bin_count[a, b] = 0
                    for c6 in range(3):
                        bin_box[a, b, c6] = np.inf
                        bin_box[a, b, 3 + c6] = -np.inf
            for k in range(start, end):  # one pass bins all three axes
                for a in range(3):
                    if scale[a] == 0.0:
                        continue
                    b = int((prims[k, 6 + a] - pend_cbox[pend_top, a]) * scale[a])
                    if b >= _SAH_BINS:
                        b = _SAH_BINS - 1
                    if b < 0:
                        b = 0
                    bin_count[a, b] += 1
                    for c6 in range(3):
                        if prims[k, c6] < bin_box[a, b, c6]:
                            bin_box[a, b, c6] = prims[k, c6]
                        if prims[k, 3 + c6] > bin_box[a, b, 3 + c6]:
                            bin_box[a, b, 3 + c6] = prims[k, 3 + c6]
            best_cost = np.inf
            for a in range(3):
                if scale[a] == 0.0:
                    continue
                # sweep from the right
                rl0 = np.inf
                rl1 = np.inf
                rl2 = np.inf
                rh0 = -np.inf
                rh1 = -np.inf
                rh2 = -np.inf
                rc = 0
                for b in range(_SAH_BINS - 1, 0, -1):
                    rl0 = min(rl0, bin_box[a, b, 0])
                    rl1 = min(rl1, bin_box[a, b, 1])
                    rl2 = min(rl2, bin_box[a, b, 2])
                    rh0 = max(rh0, bin_box[a, b, 3])
                    rh1 = max(rh1, bin_box[a, b, 4])
                    rh2 = max(rh2, bin_box[a, b, 5])
                    rc += bin_count[a, b]
                    right_area[b] = _half_area_kernel(rl0, rl1, rl2, rh0, rh1, rh2)
                    right_count[b] = rc
                ll0 = np.inf
                ll1 = np.inf
                ll2 = np.inf
                lh0 = -np.inf
                lh1 = -np.inf
                lh2 = -np.inf
                lc = 0
                for b in range(_SAH_BINS - 1):
                    ll0 = min(ll0, bin_box[a, b, 0])
                    ll1 = min(ll1, bin_box[a, b, 1])
                    ll2 = min(ll2, bin_box[a, b, 2])
                    lh0 = max(lh0, bin_box[a, b, 3])
                    lh1 = max(lh1, bin_box[a, b, 4])
                    lh2 = max(lh2, bin_box[a, b, 5])
                    lc += bin_count[a, b]
                    if lc == 0 or right_count[b + 1] == 0:
                        continue
                    cost = (
                        _half_area_kernel(ll0, ll1, ll2, lh0, lh1, lh2) * lc
                        + right_area[b + 1] * right_count[b + 1]
                    )
                    if cost < best_cost:
                        best_cost = cost
                        best_axis = a
                        best_bin = b
            if best_axis < 0:
                # all centroids coincide: split the index range in half
                mid = start + n // 2
            else:
                a = best_axis
                lo_a = pend_cbox[pend_top, a]
                scale_a = scale[a]
                for c in range(2):
                    for c6 in range(3):
                        sides[c, c6] = np.inf
                        sides[c, 3 + c6] = -np.inf
                        sides[c, 6 + c6] = np.inf
                        sides[c, 9 + c6] = -np.inf
                i = start
                j = end - 1
                while i <= j:
                    b = int((prims[i, 6 + a] - lo_a) * scale_a)
                    if b >= _SAH_BINS:
                        b = _SAH_BINS - 1
                    if b < 0:
                        b = 0
                    side = 0 if b <= best_bin else 1
                    for c6 in range(3):
                        sides[side, c6] = min(sides[side, c6], prims[i, c6])
                        sides[side, 3 + c6] = max(sides[side, 3 + c6], prims[i, 3 + c6])
                        sides[side, 6 + c6] = min(sides[side, 6 + c6], prims[i, 6 + c6])
                        sides[side, 9 + c6] = max(sides[side, 9 + c6], prims[i, 6 + c6])
                    if side == 0:
                        i += 1
                    else:  # swap with the last unclassified triangle
                        f = order[i]
                        order[i] = order[j]
                        order[j] = f
                        for c9 in range(9):
                            x = prims[i, c9]
                            prims[i, c9] = prims[j, c9]
                            prims[j, c9] = x
                        j -= 1
                mid = i
                if mid == start or mid == end:
                    mid = start + n // 2
                    best_axis = -1  # (the bounds below are then gathered range by range)
        # ---- create the two children ----
        if best_axis < 0:
            for c in range(2):
                cs = start if c == 0 else mid
                ce = mid if c == 0 else end
                for c6 in range(3):
                    sides[c, c6] = np.inf
                    sides[c, 3 + c6] = -np.inf
                    sides[c, 6 + c6] = np.inf
                    sides[c, 9 + c6] = -np.inf
                for k in range(cs, ce):
                    for c6 in range(3):
                        sides[c, c6] = min(sides[c, c6], prims[k, c6])
                        sides[c, 3 + c6] = max(sides[c, 3 + c6], prims[k, 3 + c6])
                        sides[c, 6 + c6] = min(sides[c, 6 + c6], prims[k, 6 + c6])
                        sides[c, 9 + c6] = max(sides[c, 9 + c6], prims[k, 6 + c6])
        for slot in range(2):
            if slot == 0:
                cs = start
                ce = mid
            else:
                cs = mid
                ce = end
            cn = ce - cs
            if cn <= 0:
                for a in range(3):
                    out_node_boxes[node, 6 * slot + a] = np.inf
                    out_node_boxes[node, 6 * slot + 3 + a] = -np.inf
                out_node_refs[node, 2 * slot] = -1
                out_node_refs[node, 2 * slot + 1] = 0
                continue
            for c6 in range(6):
                out_node_boxes[node, 6 * slot + c6] = sides[slot, c6]
            if cn <= MAX_LEAF_SIZE:
                out_node_refs[node, 2 * slot] = cs
                out_node_refs[node, 2 * slot + 1] = cn
            else:
                child = node_count
                node_count += 1
                out_node_refs[node, 2 * slot] = child
                out_node_refs[node, 2 * slot + 1] = 0
                pend_node[pend_top] = child
                pend_start[pend_top] = cs
                pend_end[pend_top] = ce
                pend_depth[pend_top] = depth + 1
                for c6 in range(6):
                    pend_cbox[pend_top, c6] = sides[slot, 6 + c6]
                pend_top += 1
    for k in range(face_count):
        f = order[k]
        out_triangle_order[k] = f
        i0 = faces[f, 0]
        i1 = faces[f, 1]
        i2 = faces[f, 2]
        for a in range(3):
            out_triangles[k, a] = vertices[i0, a]
            out_triangles[k, 3 + a] = vertices[i1, a] - vertices[i0, a]
            out_triangles[k, 6 + a] = vertices[i2, a] - vertices[i0, a]
    out_node_count[0] = node_count


# --------------------------------------------------------------------------------------------
# Traversal
# --------------------------------------------------------------------------------------------


@jit
def _rotate_inverse_kernel(qw, qx, qy, qz, vx, vy, vz):
    """Rotate (vx, vy, vz) by the inverse of the unit quaternion (qw, qx, qy, qz)."""
    # v' = v + 2 * r x (r x v + w v) with r = -q.xyz for the inverse rotation
    rx = -qx
    ry = -qy
    rz = -qz
    cx = ry * vz - rz * vy + qw * vx
    cy = rz * vx - rx * vz + qw * vy
    cz = rx * vy - ry * vx + qw * vz
    return (
        vx + 2.0 * (ry * cz - rz * cy),
        vy + 2.0 * (rz * cx - rx * cz),
        vz + 2.0 * (rx * cy - ry * cx),
    )


@jit
def group_closest_hit_kernel(
    node_boxes,
    node_refs,
    triangles,
    triangle_ids,
    root,
    ox,
    oy,
    oz,
    dx,
    dy,
    dz,
    t_best,
    double_sided,
    stack_ref,
    stack_cnt,
    stack_t,
):
    """Closest hit closer than ``t_best`` of one ray in one group's BVH (group frame).

    The BVH is traversed with an explicit stack: both children are tested at their parent
    with precomputed inverse directions and per-axis near/far plane selection; the nearer
    hit child is visited first, the farther one is pushed with its entry distance and
    skipped on pop when a closer hit was found meanwhile. Leaves run Möller–Trumbore.

    Args:
        node_boxes: BVH child bounds, shape (N, 12), float64 (module layout).
        node_refs: BVH child references, shape (N, 4), int64.
        triangles: leaf-ordered ``[v0, e1, e2]``, shape (T, 9), float64, group frame.
        triangle_ids: id reported for each leaf-ordered triangle, shape (T,), int64.
        root: root node of the group's BVH (>= 0).
        ox: ray origin [stage units], group frame.
        oy: ray origin [stage units], group frame.
        oz: ray origin [stage units], group frame.
        dx: unit ray direction, group frame.
        dy: unit ray direction, group frame.
        dz: unit ray direction, group frame.
        t_best: only hits closer than this count [stage units].
        double_sided: when False back faces are ignored.
        stack_ref: traversal scratch, shape (STACK_SIZE,) each.
        stack_cnt: traversal scratch, shape (STACK_SIZE,) each.
        stack_t: traversal scratch, shape (STACK_SIZE,) each.

    Returns:
        ``(t, id)``: the closest hit distance and its ``triangle_ids`` entry, or
        ``(t_best, -1)`` when nothing is closer.
    """
    best = -1
    ix = 1.0 / dx if abs(dx) > _TINY else (_HUGE if dx >= 0.0 else -_HUGE)
    iy = 1.0 / dy if abs(dy) > _TINY else (_HUGE if dy >= 0.0 else -_HUGE)
    iz = 1.0 / dz if abs(dz) > _TINY else (_HUGE if dz >= 0.0 else -_HUGE)
    # offsets of the near and far planes in a [lo(3), hi(3)] box
    nx = 0 if ix >= 0.0 else 3
    ny = 1 if iy >= 0.0 else 4
    nz = 2 if iz >= 0.0 else 5
    fx = 3 - nx
    fy = 5 - ny
    fz = 7 - nz
    oix = ox * ix
    oiy = oy * iy
    oiz = oz * iz
    top = 0
    ref = root
    cnt = 0
    while True:
        if cnt == 0:
            node = ref
            t0 = max(
                node_boxes[node, nx] * ix - oix,
                node_boxes[node, ny] * iy - oiy,
                node_boxes[node, nz] * iz - oiz,
                0.0,
            )
            t1 = min(
                node_boxes[node, fx] * ix - oix,
                node_boxes[node, fy] * iy - oiy,
                node_boxes[node, fz] * iz - oiz,
                t_best,
            )
            u0 = max(
                node_boxes[node, 6 + nx] * ix - oix,
                node_boxes[node, 6 + ny] * iy - oiy,
                node_boxes[node, 6 + nz] * iz - oiz,
                0.0,
            )
            u1 = min(
                node_boxes[node, 6 + fx] * ix - oix,
                node_boxes[node, 6 + fy] * iy - oiy,
                node_boxes[node, 6 + fz] * iz - oiz,
                t_best,
            )
            hit_l = t0 <= t1
            hit_r = u0 <= u1
            right_first = hit_r and ((not hit_l) or u0 < t0)
            a_ref = node_refs[node, 0]
            a_cnt = node_refs[node, 1]
            b_ref = node_refs[node, 2]
            b_cnt = node_refs[node, 3]
            # push the farther child (kept only when both children are hit)
            stack_ref[top] = a_ref if right_first else b_ref
            stack_cnt[top] = a_cnt if right_first else b_cnt
            stack_t[top] = t0 if right_first else u0
            top += 1 if (hit_l and hit_r) else 0
            if hit_l or hit_r:
                ref = b_ref if right_first else a_ref
                cnt = b_cnt if right_first else a_cnt
                continue
        else:
            for k in range(ref, ref + cnt):
                e2x = triangles[k, 6]
                e2y = triangles[k, 7]
                e2z = triangles[k, 8]
                px = dy * e2z - dz * e2y
                py = dz * e2x - dx * e2z
                pz = dx * e2y - dy * e2x
                e1x = triangles[k, 3]
                e1y = triangles[k, 4]
                e1z = triangles[k, 5]
                det = e1x * px + e1y * py + e1z * pz
                if double_sided:
                    if det == 0.0:
                        continue
                elif det <= 0.0:
                    continue
                inv_det = 1.0 / det
                sx = ox - triangles[k, 0]
                sy = oy - triangles[k, 1]
                sz = oz - triangles[k, 2]
                u = (sx * px + sy * py + sz * pz) * inv_det
                # written to reject NaN (non-finite rays never hit)
                if not (u >= -_BARY_EPS and u <= 1.0 + _BARY_EPS):
                    continue
                qx2 = sy * e1z - sz * e1y
                qy2 = sz * e1x - sx * e1z
                qz2 = sx * e1y - sy * e1x
                v = (dx * qx2 + dy * qy2 + dz * qz2) * inv_det
                if not (v >= -_BARY_EPS and u + v <= 1.0 + _BARY_EPS):
                    continue
                t = (e2x * qx2 + e2y * qy2 + e2z * qz2) * inv_det
                if t >= 0.0 and t < t_best:
                    t_best = t
                    best = triangle_ids[k]
        # pop the most recent pending item that can still hold a closer hit
        found = False
        while top > 0:
            top -= 1
            if stack_t[top] <= t_best:
                found = True
                break
        if not found:
            break
        ref = stack_ref[top]
        cnt = stack_cnt[top]
    return t_best, best


@jit
def inverse_direction_kernel(d):
    """``1 / d`` with ``+-_HUGE`` for a (near) zero component (slab tests)."""
    return 1.0 / d if abs(d) > _TINY else (_HUGE if d >= 0.0 else -_HUGE)


@jit
def scene_closest_hit_kernel(
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    wide_roots,
    group_positions,
    group_orientations,
    group_world_boxes,
    origins,
    directions,
    max_distances,
    double_sided,
    out_distances,
    out_triangle_ids,
):
    """Closest hit of each world ray over several rigidly moving BVH groups.

    Each ray is tested against every group's world box, transformed into the frame of each
    group it meets (no rebuild when groups move) and traced through the group's wide BVH
    (:func:`~runtime.rays._wide_bvh_kernels.wide_traverse_kernel`, inlined: all children
    of a node and all triangles of a leaf tested at once, nearest child first); a later
    group's hit replaces an earlier one only when strictly closer.

    Args:
        wide_nodes: concatenated wide BVH nodes of all groups, shape (M, 8, 8), float32
            (:mod:`~runtime.rays._wide_bvh_kernels` layout, references already offset).
        leaf_triangles: leaf blocks, flat float64 (module layout), group frames.
        leaf_ids: global face id of each leaf lane, shape (L, 8), int64.
        wide_roots: root wide node of each group (-1 for an empty group), shape (G,), int64.
        group_positions: group frame origin [stage units], shape (G, 3), float64, world.
        group_orientations: group frame orientation (w, x, y, z), unit, shape (G, 4), float64.
        group_world_boxes: world-frame box enclosing each group's geometry at its current
            pose ``[lo(3), hi(3)]``, shape (G, 6), float64; rays missing it skip the group.
        origins: ray origins [stage units], shape (R, 3), float64, world.
        directions: unit ray directions, shape (R, 3), float64, world.
        max_distances: largest accepted hit distance [stage units], shape (R,), float64.
        double_sided: when False back faces are ignored.
        out_distances: hit distance, ``inf`` on a miss, shape (R,), float64 (written).
        out_triangle_ids: face id of the hit, -1 on a miss, shape (R,), int64 (written).
    """
    w = NODE_WIDTH
    record = NODE_ROWS * w
    boxes = wide_nodes.reshape(wide_nodes.size)
    refs = wide_nodes.view(np.int32).reshape(wide_nodes.size)[6 * w :]  # node n's at n * record
    corners = leaf_triangles.view(np.float32)
    flat_ids = leaf_ids.reshape(leaf_ids.size)
    stack_ref = np.empty(WIDE_STACK_SIZE, np.int64)
    stack_count = np.empty(WIDE_STACK_SIZE, np.int64)
    stack_t = np.empty(WIDE_STACK_SIZE)
    enter = np.empty(w)
    leaf_t = np.empty(w)
    order_t = np.empty(w)
    order_c = np.empty(w, np.int64)
    group_count = wide_roots.shape[0]
    # per group once: its rotation matrix (rays go to the group frame as R^T (x - p)), or
    # identity (frame = world: the world ray and its inverse direction are used as they are)
    frames = np.empty((group_count, 9))
    identity = np.empty(group_count, np.bool_)
    for g in range(group_count):
        qw = group_orientations[g, 0]
        qx = group_orientations[g, 1]
        qy = group_orientations[g, 2]
        qz = group_orientations[g, 3]
        identity[g] = (
            qw == 1.0
            and qx == 0.0
            and qy == 0.0
            and qz == 0.0
            and group_positions[g, 0] == 0.0
            and group_positions[g, 1] == 0.0
            and group_positions[g, 2] == 0.0
        )
        m = _matrix_kernel(qw, qx, qy, qz)
        for k in range(9):
            frames[g, k] = m[k]
    for i in range(origins.shape[0]):
        t_best = max_distances[i]
        best = -1
        wox = origins[i, 0]
        woy = origins[i, 1]
        woz = origins[i, 2]
        wdx = directions[i, 0]
        wdy = directions[i, 1]
        wdz = directions[i, 2]
        wix = inverse_direction_kernel(wdx)
        wiy = inverse_direction_kernel(wdy)
        wiz = inverse_direction_kernel(wdz)
        for g in range(group_count):
            if wide_roots[g] < 0:
                continue
            if group_count > 1:  # broad phase: the group's world box (alone: its root's)
                ax = (group_world_boxes[g, 0] - wox) * wix
                bx = (group_world_boxes[g, 3] - wox) * wix
                ay = (group_world_boxes[g, 1] - woy) * wiy
                by = (group_world_boxes[g, 4] - woy) * wiy
                az = (group_world_boxes[g, 2] - woz) * wiz
                bz = (group_world_boxes[g, 5] - woz) * wiz
                enter_t = max(min(ax, bx), min(ay, by), min(az, bz), 0.0)
                if enter_t > min(max(ax, bx), max(ay, by), max(az, bz), t_best):
                    continue
            if identity[g]:
                ox = wox
                oy = woy
                oz = woz
                dx = wdx
                dy = wdy
                dz = wdz
                ix = wix
                iy = wiy
                iz = wiz
            else:
                px = wox - group_positions[g, 0]
                py = woy - group_positions[g, 1]
                pz = woz - group_positions[g, 2]
                ox = frames[g, 0] * px + frames[g, 3] * py + frames[g, 6] * pz
                oy = frames[g, 1] * px + frames[g, 4] * py + frames[g, 7] * pz
                oz = frames[g, 2] * px + frames[g, 5] * py + frames[g, 8] * pz
                dx = frames[g, 0] * wdx + frames[g, 3] * wdy + frames[g, 6] * wdz
                dy = frames[g, 1] * wdx + frames[g, 4] * wdy + frames[g, 7] * wdz
                dz = frames[g, 2] * wdx + frames[g, 5] * wdy + frames[g, 8] * wdz
                ix = inverse_direction_kernel(dx)
                iy = inverse_direction_kernel(dy)
                iz = inverse_direction_kernel(dz)
            t, hit = wide_traverse_kernel(
                boxes, record, refs, record, leaf_triangles, corners, flat_ids, wide_roots[g],
                ox, oy, oz, dx, dy, dz, ix, iy, iz, t_best, double_sided, stack_ref,
                stack_count, stack_t, enter, leaf_t, order_t, order_c,
            )  # fmt: skip
            if hit >= 0:
                t_best = t
                best = hit
        if best >= 0:
            out_distances[i] = t_best
            out_triangle_ids[i] = best
        else:
            out_distances[i] = np.inf
            out_triangle_ids[i] = -1


@jit
def bvh_closest_hit_kernel(
    node_boxes,
    node_refs,
    triangles,
    triangle_ids,
    root,
    origins,
    directions,
    max_distances,
    double_sided,
    out_distances,
    out_triangle_ids,
):
    """Closest hit of each ray against one binary BVH (all rays in the BVH's frame).

    The binary traversal (:func:`group_closest_hit_kernel`); scenes cast through their wide
    BVH (:func:`scene_closest_hit_kernel`).

    Args:
        node_boxes: BVH child bounds, shape (N, 12), float64 (module layout).
        node_refs: BVH child references, shape (N, 4), int64.
        triangles: leaf-ordered ``[v0, e1, e2]``, shape (T, 9), float64 [stage units].
        triangle_ids: id reported for each leaf-ordered triangle, shape (T,), int64.
        root: index of the root node.
        origins: ray origins [stage units], shape (R, 3), float64, mesh frame.
        directions: ray directions (unit length), shape (R, 3), float64, mesh frame.
        max_distances: largest accepted hit distance [stage units], shape (R,), float64.
        double_sided: when False only front faces (counter-clockwise seen from the ray) hit.
        out_distances: hit distance, ``inf`` on a miss, shape (R,), float64 (written).
        out_triangle_ids: ``triangle_ids`` of the hit triangle, -1 on a miss, shape (R,),
            int64 (written).
    """
    stack_ref = np.empty(STACK_SIZE, np.int64)
    stack_cnt = np.empty(STACK_SIZE, np.int64)
    stack_t = np.empty(STACK_SIZE)
    for i in range(origins.shape[0]):
        t, hit = group_closest_hit_kernel(
            node_boxes, node_refs, triangles, triangle_ids, root, origins[i, 0],
            origins[i, 1], origins[i, 2], directions[i, 0], directions[i, 1],
            directions[i, 2], max_distances[i], double_sided, stack_ref, stack_cnt, stack_t,
        )  # fmt: skip
        out_distances[i] = t if hit >= 0 else np.inf
        out_triangle_ids[i] = hit


# --------------------------------------------------------------------------------------------
# Solid shapes: "ray starts inside" test
# --------------------------------------------------------------------------------------------


@jit
def inside_solid_kernel(kind, params, s, planes, plane_start, plane_count, x, y, z):
    """Whether the point (x, y, z), given in the frame of solid ``s``, lies inside it.

    ``params[s]`` holds the solid's half extents or (radius, half height, 0).
    """
    if kind == SOLID_BOX:
        return abs(x) <= params[s, 0] and abs(y) <= params[s, 1] and abs(z) <= params[s, 2]
    if kind == SOLID_SPHERE:
        return x * x + y * y + z * z <= params[s, 0] * params[s, 0]
    if kind == SOLID_CAPSULE:
        # axis along local z, half height params[s, 1] of the cylinder part, radius params[s, 0]
        h = params[s, 1]
        zc = min(max(z, -h), h)
        dz = z - zc
        return x * x + y * y + dz * dz <= params[s, 0] * params[s, 0]
    if kind == SOLID_CYLINDER:
        return abs(z) <= params[s, 1] and x * x + y * y <= params[s, 0] * params[s, 0]
    # convex: all half-spaces n . p <= d
    for k in range(plane_start, plane_start + plane_count):
        if planes[k, 0] * x + planes[k, 1] * y + planes[k, 2] * z > planes[k, 3]:
            return False
    return True


@jit
def group_inside_solid_kernel(
    solid_kinds,
    solid_positions,
    solid_orientations,
    solid_params,
    solid_plane_ranges,
    planes,
    solid_bounds,
    first,
    count,
    gx,
    gy,
    gz,
):
    """First solid of ``first .. first + count - 1`` containing a point of the group frame.

    Args:
        solid_kinds: ``SOLID_*`` code of each solid, shape (S,), int64.
        solid_positions: solid frame origin in its group frame, shape (S, 3), float64.
        solid_orientations: solid orientation in its group frame (w, x, y, z), shape (S, 4).
        solid_params: box half extents, or (radius, half height, 0), shape (S, 3), float64.
        solid_plane_ranges: (first plane, plane count) of convex solids, shape (S, 2), int64.
        planes: half-spaces ``[nx, ny, nz, d]`` in solid frames, shape (P, 4), float64.
        solid_bounds: bounding sphere ``[cx, cy, cz, r]`` per solid, group frame, shape (S, 4).
        first: first solid of the group.
        count: number of solids of the group.
        gx: the point [stage units], group frame.
        gy: the point [stage units], group frame.
        gz: the point [stage units], group frame.

    Returns:
        The containing solid's index, or -1.
    """
    for s in range(first, first + count):
        bx = gx - solid_bounds[s, 0]
        by = gy - solid_bounds[s, 1]
        bz = gz - solid_bounds[s, 2]
        if bx * bx + by * by + bz * bz > solid_bounds[s, 3] * solid_bounds[s, 3]:
            continue
        x, y, z = _rotate_inverse_kernel(
            solid_orientations[s, 0],
            solid_orientations[s, 1],
            solid_orientations[s, 2],
            solid_orientations[s, 3],
            gx - solid_positions[s, 0],
            gy - solid_positions[s, 1],
            gz - solid_positions[s, 2],
        )
        if inside_solid_kernel(
            solid_kinds[s],
            solid_params,
            s,
            planes,
            solid_plane_ranges[s, 0],
            solid_plane_ranges[s, 1],
            x,
            y,
            z,
        ):
            return s
    return -1


@jit
def scene_inside_solid_kernel(
    solid_groups,
    solid_kinds,
    solid_positions,
    solid_orientations,
    solid_params,
    solid_plane_ranges,
    planes,
    solid_bounds,
    group_solid_ranges,
    group_solid_boxes,
    group_positions,
    group_orientations,
    points,
    out_solids,
):
    """Index of a solid shape containing each world point (first match), -1 if none.

    Solids are stored grouped by group (ascending group index), so the first match in solid
    order is found by visiting the groups in order. A point is moved into a group's frame
    once and rejected by the group's local solid box before any per-solid test.

    Args:
        solid_groups: group of each solid (non-decreasing), shape (S,), int64.
        solid_kinds: ``SOLID_*`` code of each solid, shape (S,), int64.
        solid_positions: solid frame origin in its group frame, shape (S, 3), float64.
        solid_orientations: solid frame orientation in its group frame (w, x, y, z), shape
            (S, 4), float64.
        solid_params: box half extents, or (radius, half height, 0), shape (S, 3), float64
            [stage units].
        solid_plane_ranges: (first plane, plane count) of convex solids, shape (S, 2), int64.
        planes: half-spaces ``n . p <= d`` as ``[nx, ny, nz, d]`` in solid frames, shape (P, 4),
            float64.
        solid_bounds: bounding sphere of each solid in its group frame ``[cx, cy, cz, r]``,
            shape (S, 4), float64 [stage units] (a cheap reject before the exact test).
        group_solid_ranges: (first solid, solid count) of each group, shape (G, 2), int64.
        group_solid_boxes: group-frame box enclosing the bounding spheres of the group's
            solids ``[lo(3), hi(3)]``, shape (G, 6), float64 [stage units].
        group_positions: group frame origin [stage units], shape (G, 3), float64, world.
        group_orientations: group orientation (w, x, y, z), shape (G, 4), float64, world.
        points: query points [stage units], shape (R, 3), float64, world.
        out_solids: containing solid index or -1, shape (R,), int64 (written).
    """
    # world bounding sphere of each group's solid box (a cheap reject before the rotation)
    group_count = group_solid_ranges.shape[0]
    spheres = np.empty((group_count, 4))
    for g in range(group_count):
        cx = 0.5 * (group_solid_boxes[g, 0] + group_solid_boxes[g, 3])
        cy = 0.5 * (group_solid_boxes[g, 1] + group_solid_boxes[g, 4])
        cz = 0.5 * (group_solid_boxes[g, 2] + group_solid_boxes[g, 5])
        hx = 0.5 * (group_solid_boxes[g, 3] - group_solid_boxes[g, 0])
        hy = 0.5 * (group_solid_boxes[g, 4] - group_solid_boxes[g, 1])
        hz = 0.5 * (group_solid_boxes[g, 5] - group_solid_boxes[g, 2])
        wx, wy, wz = _rotate_inverse_kernel(  # the inverse of q^-1: rotation by q
            group_orientations[g, 0],
            -group_orientations[g, 1],
            -group_orientations[g, 2],
            -group_orientations[g, 3],
            cx,
            cy,
            cz,
        )
        wx += group_positions[g, 0]
        wy += group_positions[g, 1]
        wz += group_positions[g, 2]
        radius = np.sqrt(hx * hx + hy * hy + hz * hz)
        # padded for rounding: only points far outside the box are rejected here
        radius += 1e-9 * (1.0 + radius + abs(wx) + abs(wy) + abs(wz))
        spheres[g, 0] = wx
        spheres[g, 1] = wy
        spheres[g, 2] = wz
        spheres[g, 3] = radius * radius
    # candidates: solids whose world bounding sphere meets the box of all the points (the
    # rays of a sensor start close together), in solid order, listed group by group
    point_count = points.shape[0]
    lo_x = np.inf
    lo_y = np.inf
    lo_z = np.inf
    hi_x = -np.inf
    hi_y = -np.inf
    hi_z = -np.inf
    for i in range(point_count):
        lo_x = min(lo_x, points[i, 0])
        lo_y = min(lo_y, points[i, 1])
        lo_z = min(lo_z, points[i, 2])
        hi_x = max(hi_x, points[i, 0])
        hi_y = max(hi_y, points[i, 1])
        hi_z = max(hi_z, points[i, 2])
    candidates = np.empty(solid_groups.shape[0], np.int64)
    group_candidates = np.zeros((group_count, 2), np.int64)
    candidate_count = 0
    for g in range(group_count):
        group_candidates[g, 0] = candidate_count
        if group_solid_ranges[g, 1] == 0 or not _sphere_meets_box_kernel(
            spheres[g, 0], spheres[g, 1], spheres[g, 2], spheres[g, 3],
            lo_x, lo_y, lo_z, hi_x, hi_y, hi_z,
        ):  # fmt: skip
            continue
        first = group_solid_ranges[g, 0]
        for s in range(first, first + group_solid_ranges[g, 1]):
            wx, wy, wz = _rotate_inverse_kernel(
                group_orientations[g, 0], -group_orientations[g, 1],
                -group_orientations[g, 2], -group_orientations[g, 3],
                solid_bounds[s, 0], solid_bounds[s, 1], solid_bounds[s, 2],
            )  # fmt: skip
            wx += group_positions[g, 0]
            wy += group_positions[g, 1]
            wz += group_positions[g, 2]
            r = solid_bounds[s, 3]
            r += 1e-9 * (1.0 + r + abs(wx) + abs(wy) + abs(wz))
            if _sphere_meets_box_kernel(wx, wy, wz, r * r, lo_x, lo_y, lo_z, hi_x, hi_y, hi_z):
                candidates[candidate_count] = s
                candidate_count += 1
        group_candidates[g, 1] = candidate_count - group_candidates[g, 0]
    for i in range(point_count):
        out_solids[i] = -1
        if candidate_count == 0:
            continue
        if (
            i > 0
            and points[i, 0] == points[i - 1, 0]
            and points[i, 1] == points[i - 1, 1]
            and points[i, 2] == points[i - 1, 2]
        ):
            out_solids[i] = out_solids[i - 1]  # rays of one sensor share their start
            continue
        for g in range(group_count):
            if group_candidates[g, 1] == 0:
                continue
            ex = points[i, 0] - spheres[g, 0]
            ey = points[i, 1] - spheres[g, 1]
            ez = points[i, 2] - spheres[g, 2]
            if ex * ex + ey * ey + ez * ez > spheres[g, 3]:
                continue
            gx, gy, gz = _rotate_inverse_kernel(
                group_orientations[g, 0],
                group_orientations[g, 1],
                group_orientations[g, 2],
                group_orientations[g, 3],
                points[i, 0] - group_positions[g, 0],
                points[i, 1] - group_positions[g, 1],
                points[i, 2] - group_positions[g, 2],
            )
            if (
                gx < group_solid_boxes[g, 0]
                or gy < group_solid_boxes[g, 1]
                or gz < group_solid_boxes[g, 2]
                or gx > group_solid_boxes[g, 3]
                or gy > group_solid_boxes[g, 4]
                or gz > group_solid_boxes[g, 5]
            ):
                continue
            start = group_candidates[g, 0]
            for m in range(start, start + group_candidates[g, 1]):
                found = group_inside_solid_kernel(
                    solid_kinds, solid_positions, solid_orientations, solid_params,
                    solid_plane_ranges, planes, solid_bounds, candidates[m], 1, gx, gy, gz,
                )  # fmt: skip
                if found >= 0:
                    out_solids[i] = found
                    break
            if out_solids[i] >= 0:
                break


@jit
def _sphere_meets_box_kernel(cx, cy, cz, r2, lo_x, lo_y, lo_z, hi_x, hi_y, hi_z):
    """Whether the sphere (centre c, squared radius r2) meets the box [lo, hi]."""
    dx = max(lo_x - cx, 0.0, cx - hi_x)
    dy = max(lo_y - cy, 0.0, cy - hi_y)
    dz = max(lo_z - cz, 0.0, cz - hi_z)
    return dx * dx + dy * dy + dz * dz <= r2


@jit
def scene_hit_attributes_kernel(
    faces,
    face_groups,
    face_actors,
    face_normals,
    group_orientations,
    directions,
    double_sided,
    out_actors,
    out_normals,
):
    """Actor index and world normal of each hit face.

    Args:
        faces: global face id per ray, -1 on a miss, shape (R,), int64.
        face_groups: group of each global face, shape (F,), int64.
        face_actors: actor index of each global face, shape (F,), int64.
        face_normals: unit front-face normal of each face in its group frame, shape (F, 3),
            float64.
        group_orientations: group orientations (w, x, y, z), shape (G, 4), float64, world.
        directions: unit ray directions, shape (R, 3), float64, world.
        double_sided: when True a normal facing away from the ray is flipped towards it.
        out_actors: actor index or -1, shape (R,), int64 (written).
        out_normals: unit hit normal or zeros, shape (R, 3), float64, world (written).
    """
    for i in range(faces.shape[0]):
        f = faces[i]
        if f < 0:
            out_actors[i] = -1
            out_normals[i, 0] = 0.0
            out_normals[i, 1] = 0.0
            out_normals[i, 2] = 0.0
            continue
        g = face_groups[f]
        # rotate the local normal to world: inverse of the inverse rotation
        nx, ny, nz = _rotate_inverse_kernel(
            group_orientations[g, 0],
            -group_orientations[g, 1],
            -group_orientations[g, 2],
            -group_orientations[g, 3],
            face_normals[f, 0],
            face_normals[f, 1],
            face_normals[f, 2],
        )
        facing = nx * directions[i, 0] + ny * directions[i, 1] + nz * directions[i, 2]
        if double_sided and facing > 0.0:
            nx = -nx
            ny = -ny
            nz = -nz
        out_actors[i] = face_actors[f]
        out_normals[i, 0] = nx
        out_normals[i, 1] = ny
        out_normals[i, 2] = nz


@jit
def world_box_kernel(qw, qx, qy, qz, px, py, pz, lx, ly, lz, ux, uy, uz):
    """World box of the local box ``[l, u]`` posed by (p, q), padded for rounding.

    The centre is rotated and the half extents are taken through ``|R|``: the exact box of
    the rotated box's corners, padded by ``1e-9 * (1 + max |corner|)``.

    Args:
        qw: orientation w (unit quaternion, local to world).
        qx: orientation x.
        qy: orientation y.
        qz: orientation z.
        px: local frame origin x [stage units], world.
        py: local frame origin y.
        pz: local frame origin z.
        lx: local box low x [stage units], local frame.
        ly: local box low y.
        lz: local box low z.
        ux: local box high x.
        uy: local box high y.
        uz: local box high z.

    Returns:
        ``(lo_x, lo_y, lo_z, hi_x, hi_y, hi_z)`` of the world box.
    """
    cx = 0.5 * (lx + ux)
    cy = 0.5 * (ly + uy)
    cz = 0.5 * (lz + uz)
    hx = 0.5 * (ux - lx)
    hy = 0.5 * (uy - ly)
    hz = 0.5 * (uz - lz)
    r00 = 1.0 - 2.0 * (qy * qy + qz * qz)
    r01 = 2.0 * (qx * qy - qw * qz)
    r02 = 2.0 * (qx * qz + qw * qy)
    r10 = 2.0 * (qx * qy + qw * qz)
    r11 = 1.0 - 2.0 * (qx * qx + qz * qz)
    r12 = 2.0 * (qy * qz - qw * qx)
    r20 = 2.0 * (qx * qz - qw * qy)
    r21 = 2.0 * (qy * qz + qw * qx)
    r22 = 1.0 - 2.0 * (qx * qx + qy * qy)
    wx = px + r00 * cx + r01 * cy + r02 * cz
    wy = py + r10 * cx + r11 * cy + r12 * cz
    wz = pz + r20 * cx + r21 * cy + r22 * cz
    ex = abs(r00) * hx + abs(r01) * hy + abs(r02) * hz
    ey = abs(r10) * hx + abs(r11) * hy + abs(r12) * hz
    ez = abs(r20) * hx + abs(r21) * hy + abs(r22) * hz
    largest = max(abs(wx) + ex, abs(wy) + ey, abs(wz) + ez)
    # |R| h is exact up to rounding of a few ulps of the extents: the pad covers them
    pad = 1e-9 * (1.0 + largest)
    return (
        wx - ex - pad,
        wy - ey - pad,
        wz - ez - pad,
        wx + ex + pad,
        wy + ey + pad,
        wz + ez + pad,
    )


@jit
def store_world_box_kernel(
    qw, qx, qy, qz, px, py, pz, local_boxes, row, col, out_boxes, out_row, out_col
):
    """:func:`world_box_kernel` of ``local_boxes[row, col:col + 6]`` into ``out_boxes``.

    Args:
        qw: orientation w (unit quaternion, local to world).
        qx: orientation x.
        qy: orientation y.
        qz: orientation z.
        px: local frame origin x [stage units], world.
        py: local frame origin y.
        pz: local frame origin z.
        local_boxes: boxes ``[lo(3), hi(3)]`` from column ``col``, float64, local frame.
        row: the local box's row.
        col: column of the local box's first value.
        out_boxes: world boxes from column ``out_col``, float64
            (``out_boxes[out_row, out_col:out_col + 6]`` written).
        out_row: the world box's row.
        out_col: column of the world box's first value.
    """
    box = world_box_kernel(
        qw, qx, qy, qz, px, py, pz,
        local_boxes[row, col], local_boxes[row, col + 1], local_boxes[row, col + 2],
        local_boxes[row, col + 3], local_boxes[row, col + 4], local_boxes[row, col + 5],
    )  # fmt: skip
    for a in range(6):
        out_boxes[out_row, out_col + a] = box[a]


@jit
def scene_group_poses_kernel(
    group_body,
    body_positions,
    body_orientations,
    group_local_boxes,
    group_roots,
    io_group_positions,
    io_group_orientations,
    out_world_boxes,
):
    """Current group frames and world broad-phase boxes of every group.

    Args:
        group_body: body row of each group in the pose arrays, -1 for a fixed group, shape
            (G,), int64.
        body_positions: body origins [stage units], shape (B, 3), float64, world (B may be 0
            when every group is fixed).
        body_orientations: body orientations (w, x, y, z), shape (B, 4), float64, world.
        group_local_boxes: group-frame box of each group's triangles ``[lo(3), hi(3)]``,
            shape (G, 6), float64 [stage units].
        group_roots: BVH root of each group, -1 for an empty group, shape (G,), int64.
        io_group_positions: group frame origins, shape (G, 3), float64, world (moving rows
            written, fixed rows read).
        io_group_orientations: group orientations (w, x, y, z), shape (G, 4), float64 (moving
            rows written, fixed rows read).
        out_world_boxes: world box enclosing each group's triangles at its pose, padded by
            ``1e-9 * (1 + max |corner|)`` (:func:`world_box_kernel`), shape (G, 6), float64
            (written).
    """
    for g in range(group_body.shape[0]):
        b = group_body[g]
        if b >= 0 and b < body_positions.shape[0]:
            for a in range(3):
                io_group_positions[g, a] = body_positions[b, a]
            for a in range(4):
                io_group_orientations[g, a] = body_orientations[b, a]
        if group_roots[g] < 0:
            for a in range(6):
                out_world_boxes[g, a] = 0.0
            continue
        store_world_box_kernel(
            io_group_orientations[g, 0], io_group_orientations[g, 1],
            io_group_orientations[g, 2], io_group_orientations[g, 3],
            io_group_positions[g, 0], io_group_positions[g, 1], io_group_positions[g, 2],
            group_local_boxes, g, 0, out_world_boxes, g, 0,
        )  # fmt: skip


@jit
def scene_cast_kernel(
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    group_roots,
    group_local_boxes,
    group_body,
    body_positions,
    body_orientations,
    face_groups,
    face_actors,
    face_normals,
    solid_groups,
    solid_kinds,
    solid_positions,
    solid_orientations,
    solid_params,
    solid_plane_ranges,
    planes,
    solid_bounds,
    solid_actors,
    group_solid_ranges,
    group_solid_boxes,
    origins,
    directions,
    max_distances,
    double_sided,
    io_group_positions,
    io_group_orientations,
    out_world_boxes,
    out_faces,
    out_inside,
    out_distances,
    out_actors,
    out_normals,
):
    """One full ray-scene query in a single call.

    Group poses, closest hit, hit attributes and the "ray starts inside a solid" rule
    (distance 0, normal ``-direction``), as :func:`scene_group_poses_kernel`,
    :func:`scene_closest_hit_kernel`, :func:`scene_hit_attributes_kernel` and
    :func:`scene_inside_solid_kernel` document their arguments.

    Args:
        wide_nodes: wide BVH nodes, shape (M, 8, 8), float32
            (:mod:`~runtime.rays._wide_bvh_kernels` layout).
        leaf_triangles: leaf blocks, flat float64
            (:mod:`~runtime.rays._wide_bvh_kernels` layout), group frames.
        leaf_ids: global face id per leaf lane, shape (L, 8), int64.
        group_roots: wide BVH root per group (-1 empty), shape (G,), int64.
        group_local_boxes: group-frame triangle box ``[lo, hi]``, shape (G, 6), float64.
        group_body: body row per group (-1 fixed), shape (G,), int64.
        body_positions: body origins, shape (B, 3), float64, world (B may be 0).
        body_orientations: body orientations (w, x, y, z), shape (B, 4), float64.
        face_groups: group per global face, shape (F,), int64.
        face_actors: actor per global face, shape (F,), int64.
        face_normals: unit front normal per face, group frame, shape (F, 3), float64.
        solid_groups: group per solid (non-decreasing), shape (S,), int64.
        solid_kinds: ``SOLID_*`` code per solid, shape (S,), int64.
        solid_positions: solid origin in its group frame, shape (S, 3), float64.
        solid_orientations: solid orientation in its group frame, shape (S, 4), float64.
        solid_params: half extents or (radius, half height, 0), shape (S, 3), float64.
        solid_plane_ranges: (first plane, count) per solid, shape (S, 2), int64.
        planes: convex half-spaces ``[n, d]``, shape (P, 4), float64.
        solid_bounds: bounding sphere per solid ``[c, r]``, shape (S, 4), float64.
        solid_actors: actor index of each solid, shape (S,), int64.
        group_solid_ranges: (first solid, count) per group, shape (G, 2), int64.
        group_solid_boxes: group-frame box around the group's solids, shape (G, 6), float64.
        origins: ray start points [stage units], shape (R, 3), float64, world.
        directions: unit ray directions, shape (R, 3), float64, world.
        max_distances: largest accepted hit distance [stage units], shape (R,), float64.
        double_sided: hit back faces of triangles too.
        io_group_positions: group origins, shape (G, 3), float64 (moving rows written).
        io_group_orientations: group orientations, shape (G, 4), float64 (moving rows
            written).
        out_world_boxes: scratch, shape (G, 6), float64 (written).
        out_faces: scratch, global face of the closest hit or -1, shape (R,), int64.
        out_inside: scratch, containing solid or -1, shape (R,), int64.
        out_distances: hit distance or ``inf``, shape (R,), float64 (written).
        out_actors: actor index or -1, shape (R,), int64 (written).
        out_normals: unit world hit normal or zeros, shape (R, 3), float64 (written).
    """
    scene_group_poses_kernel(
        group_body,
        body_positions,
        body_orientations,
        group_local_boxes,
        group_roots,
        io_group_positions,
        io_group_orientations,
        out_world_boxes,
    )
    scene_cast_rays_kernel(
        wide_nodes, leaf_triangles, leaf_ids, group_roots, face_groups, face_actors,
        face_normals, solid_groups, solid_kinds, solid_positions, solid_orientations,
        solid_params, solid_plane_ranges, planes, solid_bounds, solid_actors,
        group_solid_ranges, group_solid_boxes, origins, directions, max_distances,
        double_sided, io_group_positions, io_group_orientations, out_world_boxes, out_faces,
        out_inside, out_distances, out_actors, out_normals,
    )  # fmt: skip


@jit
def scene_cast_rays_kernel(
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    group_roots,
    face_groups,
    face_actors,
    face_normals,
    solid_groups,
    solid_kinds,
    solid_positions,
    solid_orientations,
    solid_params,
    solid_plane_ranges,
    planes,
    solid_bounds,
    solid_actors,
    group_solid_ranges,
    group_solid_boxes,
    origins,
    directions,
    max_distances,
    double_sided,
    group_positions,
    group_orientations,
    world_boxes,
    out_faces,
    out_inside,
    out_distances,
    out_actors,
    out_normals,
):
    """The per-ray part of :func:`scene_cast_kernel` with the group poses already set.

    Closest triangle hit, hit attributes, exact entries into analytic solids (boxes,
    spheres, capsules, cylinders: :func:`scene_solid_hits_kernel`) and the "starts inside
    a solid" rule of every given ray;
    arguments as :func:`scene_cast_kernel` documents them (``group_positions``,
    ``group_orientations`` and ``world_boxes`` are read).
    """
    scene_closest_hit_kernel(
        wide_nodes,
        leaf_triangles,
        leaf_ids,
        group_roots,
        group_positions,
        group_orientations,
        world_boxes,
        origins,
        directions,
        max_distances,
        double_sided,
        out_distances,
        out_faces,
    )
    scene_shade_kernel(
        out_faces, face_groups, face_actors, face_normals, solid_groups, solid_kinds,
        solid_positions, solid_orientations, solid_params, solid_plane_ranges, planes,
        solid_bounds, solid_actors, group_solid_ranges, group_solid_boxes, origins,
        directions, max_distances, double_sided, group_positions, group_orientations,
        out_inside, out_distances, out_actors, out_normals,
    )  # fmt: skip


@jit
def scene_shade_kernel(
    faces,
    face_groups,
    face_actors,
    face_normals,
    solid_groups,
    solid_kinds,
    solid_positions,
    solid_orientations,
    solid_params,
    solid_plane_ranges,
    planes,
    solid_bounds,
    solid_actors,
    group_solid_ranges,
    group_solid_boxes,
    origins,
    directions,
    max_distances,
    double_sided,
    group_positions,
    group_orientations,
    out_inside,
    io_distances,
    out_actors,
    out_normals,
):
    """Everything after the closest triangle hit, in one call (any backend's hits).

    Hit attributes of the triangle hits (:func:`scene_hit_attributes_kernel`), exact
    entries into analytic solids (:func:`scene_solid_hits_kernel`) and the "starts inside
    a solid" rule (distance 0, normal ``-direction``); arguments as
    :func:`scene_cast_kernel` documents them, with ``faces`` the global face per ray (-1
    on a miss), ``io_distances`` its distance (``inf`` on a miss; updated) and
    ``out_inside`` scratch of shape (R,).
    """
    scene_hit_attributes_kernel(
        faces,
        face_groups,
        face_actors,
        face_normals,
        group_orientations,
        directions,
        double_sided,
        out_actors,
        out_normals,
    )
    if solid_groups.shape[0] == 0:
        return
    scene_solid_hits_kernel(
        solid_kinds, solid_positions, solid_orientations, solid_params, solid_bounds,
        solid_actors, group_solid_ranges, group_solid_boxes, group_positions,
        group_orientations, origins, directions, max_distances, io_distances, out_actors,
        out_normals,
    )  # fmt: skip
    scene_inside_solid_kernel(
        solid_groups,
        solid_kinds,
        solid_positions,
        solid_orientations,
        solid_params,
        solid_plane_ranges,
        planes,
        solid_bounds,
        group_solid_ranges,
        group_solid_boxes,
        group_positions,
        group_orientations,
        origins,
        out_inside,
    )
    for i in range(origins.shape[0]):
        s = out_inside[i]
        if s >= 0:
            io_distances[i] = 0.0
            out_actors[i] = solid_actors[s]
            out_normals[i, 0] = -directions[i, 0]
            out_normals[i, 1] = -directions[i, 1]
            out_normals[i, 2] = -directions[i, 2]


# --------------------------------------------------------------------------------------------
# Parallel (both cores): prange over blocks of rays, each block the sequential kernel
# --------------------------------------------------------------------------------------------


@_jit_parallel
def scene_closest_hit_parallel_kernel(
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    group_roots,
    group_positions,
    group_orientations,
    group_world_boxes,
    origins,
    directions,
    max_distances,
    double_sided,
    out_distances,
    out_triangle_ids,
    threads,
):
    """:func:`scene_closest_hit_kernel` over blocks of :data:`PARALLEL_BLOCK` rays in parallel.

    Same arguments plus ``threads``, and bit-identical results (every ray is cast by the
    sequential kernel): 1 casts all rays as one block; more splits them into blocks for
    Numba's thread pool, whose size and scheduling the caller sets
    (:func:`runtime.rays.backends.run_parallel`: ``threads`` threads taking the
    blocks dynamically, so that a thread slowed by other load takes fewer).
    """
    ray_count = origins.shape[0]
    size = PARALLEL_BLOCK if threads > 1 else max(ray_count, 1)
    blocks = (ray_count + size - 1) // size
    for b in _prange(blocks):
        s = b * size
        e = min(ray_count, s + size)
        scene_closest_hit_kernel(
            wide_nodes, leaf_triangles, leaf_ids, group_roots, group_positions,
            group_orientations, group_world_boxes, origins[s:e], directions[s:e],
            max_distances[s:e], double_sided, out_distances[s:e], out_triangle_ids[s:e],
        )  # fmt: skip


@_jit_parallel
def scene_cast_parallel_kernel(
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    group_roots,
    group_local_boxes,
    group_body,
    body_positions,
    body_orientations,
    face_groups,
    face_actors,
    face_normals,
    solid_groups,
    solid_kinds,
    solid_positions,
    solid_orientations,
    solid_params,
    solid_plane_ranges,
    planes,
    solid_bounds,
    solid_actors,
    group_solid_ranges,
    group_solid_boxes,
    origins,
    directions,
    max_distances,
    double_sided,
    io_group_positions,
    io_group_orientations,
    out_world_boxes,
    out_faces,
    out_inside,
    out_distances,
    out_actors,
    out_normals,
    threads,
):
    """:func:`scene_cast_kernel` with the per-ray work in parallel blocks of rays.

    Same arguments plus ``threads``, and bit-identical results: group poses are set once,
    then :func:`scene_cast_rays_kernel` runs on blocks of :data:`PARALLEL_BLOCK` rays
    (one block for ``threads`` 1) on Numba's thread pool, sized and scheduled by the
    caller (:func:`runtime.rays.backends.run_parallel`).
    """
    scene_group_poses_kernel(
        group_body,
        body_positions,
        body_orientations,
        group_local_boxes,
        group_roots,
        io_group_positions,
        io_group_orientations,
        out_world_boxes,
    )
    ray_count = origins.shape[0]
    size = PARALLEL_BLOCK if threads > 1 else max(ray_count, 1)
    blocks = (ray_count + size - 1) // size
    for b in _prange(blocks):
        s = b * size
        e = min(ray_count, s + size)
        scene_cast_rays_kernel(
            wide_nodes, leaf_triangles, leaf_ids, group_roots, face_groups,
            face_actors, face_normals, solid_groups, solid_kinds, solid_positions,
            solid_orientations, solid_params, solid_plane_ranges, planes, solid_bounds,
            solid_actors, group_solid_ranges, group_solid_boxes, origins[s:e],
            directions[s:e], max_distances[s:e], double_sided, io_group_positions,
            io_group_orientations, out_world_boxes, out_faces[s:e], out_inside[s:e],
            out_distances[s:e], out_actors[s:e], out_normals[s:e],
        )  # fmt: skip


@jit
def ray_morton_codes_kernel(origins, directions, out_codes):
    """6-D Morton code of each ray, to order large batches for coherent traversal.

    Origins are quantised in the batch's bounding box, directions in [-1, 1]^3, 10 bits per
    coordinate (a NaN coordinate as 0).

    Args:
        origins: ray origins [stage units], shape (R, 3), float64.
        directions: unit ray directions, shape (R, 3), float64.
        out_codes: interleaved code per ray, shape (R,), int64 (written, < 2**60).
    """
    ray_count = origins.shape[0]
    lo0 = np.inf
    lo1 = np.inf
    lo2 = np.inf
    hi0 = -np.inf
    hi1 = -np.inf
    hi2 = -np.inf
    for i in range(ray_count):
        lo0 = min(lo0, origins[i, 0])
        lo1 = min(lo1, origins[i, 1])
        lo2 = min(lo2, origins[i, 2])
        hi0 = max(hi0, origins[i, 0])
        hi1 = max(hi1, origins[i, 1])
        hi2 = max(hi2, origins[i, 2])
    s0 = 1023.0 / max(hi0 - lo0, 1e-300)
    s1 = 1023.0 / max(hi1 - lo1, 1e-300)
    s2 = 1023.0 / max(hi2 - lo2, 1e-300)
    # the 10 bits of q spread six apart, tabulated
    spread = np.zeros(1024, np.int64)
    for q in range(1024):
        for bit in range(10):
            spread[q] |= ((q >> bit) & 1) << (6 * bit)
    for i in range(ray_count):
        q0 = _quantise_kernel((origins[i, 0] - lo0) * s0)
        q1 = _quantise_kernel((origins[i, 1] - lo1) * s1)
        q2 = _quantise_kernel((origins[i, 2] - lo2) * s2)
        q3 = _quantise_kernel((directions[i, 0] + 1.0) * 511.5)
        q4 = _quantise_kernel((directions[i, 1] + 1.0) * 511.5)
        q5 = _quantise_kernel((directions[i, 2] + 1.0) * 511.5)
        out_codes[i] = (
            (spread[q0] << 5)
            | (spread[q1] << 4)
            | (spread[q2] << 3)
            | (spread[q3] << 2)
            | (spread[q4] << 1)
            | spread[q5]
        )


MORTON_BUCKET_BITS = 12
"""Bits of the 6-D Morton code that order a large batch (2 per coordinate: 4096 buckets)."""


@jit
def _quantise_kernel(x):
    """``int(x)`` clamped to 0 .. 1023, NaN to 0 (a bucket index that is always valid)."""
    if not x > 0.0:
        return 0
    if x >= 1023.0:
        return 1023
    return int(x)


@jit
def ray_bucket_order_kernel(
    origins,
    directions,
    max_distances,
    scratch_keys,
    out_order,
    out_origins,
    out_directions,
    out_max_distances,
):
    """Rays in coarse 6-D Morton order: a stable counting sort on the code's top 12 bits.

    The key of a ray is ``code >> 48`` for its :func:`ray_morton_codes_kernel` code (the two
    top bits of each quantised coordinate, interleaved), so the order equals
    ``np.argsort(codes >> 48, kind="stable")``. One pass counts the 4096 buckets and a
    second moves the rays into place (sequential reads), which costs a fraction of a full
    sort and a gather; casts gain about as much as from the full 60-bit order, since rays of a
    bucket already share the upper levels of the BVH.

    Args:
        origins: ray origins [stage units], shape (R, 3), float64.
        directions: unit ray directions, shape (R, 3), float64.
        max_distances: largest accepted distances, shape (R,), float64.
        scratch_keys: shape (R,), int64 (overwritten).
        out_order: caller index of each ordered ray, shape (R,), int64 (written).
        out_origins: ordered origins, shape (R, 3), float64 (written).
        out_directions: ordered directions, shape (R, 3), float64 (written).
        out_max_distances: ordered distances, shape (R,), float64 (written).
    """
    ray_count = origins.shape[0]
    lo0 = np.inf
    lo1 = np.inf
    lo2 = np.inf
    hi0 = -np.inf
    hi1 = -np.inf
    hi2 = -np.inf
    for i in range(ray_count):
        lo0 = min(lo0, origins[i, 0])
        lo1 = min(lo1, origins[i, 1])
        lo2 = min(lo2, origins[i, 2])
        hi0 = max(hi0, origins[i, 0])
        hi1 = max(hi1, origins[i, 1])
        hi2 = max(hi2, origins[i, 2])
    s0 = 1023.0 / max(hi0 - lo0, 1e-300)
    s1 = 1023.0 / max(hi1 - lo1, 1e-300)
    s2 = 1023.0 / max(hi2 - lo2, 1e-300)
    buckets = 1 << MORTON_BUCKET_BITS
    start = np.zeros(buckets, np.int64)
    for i in range(ray_count):
        # the quantisation of ray_morton_codes_kernel (NaN to 0); bits 9 and 8 of each value
        q0 = _quantise_kernel((origins[i, 0] - lo0) * s0) >> 8
        q1 = _quantise_kernel((origins[i, 1] - lo1) * s1) >> 8
        q2 = _quantise_kernel((origins[i, 2] - lo2) * s2) >> 8
        q3 = _quantise_kernel((directions[i, 0] + 1.0) * 511.5) >> 8
        q4 = _quantise_kernel((directions[i, 1] + 1.0) * 511.5) >> 8
        q5 = _quantise_kernel((directions[i, 2] + 1.0) * 511.5) >> 8
        high = (q0 >> 1) << 5 | (q1 >> 1) << 4 | (q2 >> 1) << 3 | (q3 >> 1) << 2 | (q4 >> 1) << 1
        low = (q0 & 1) << 5 | (q1 & 1) << 4 | (q2 & 1) << 3 | (q3 & 1) << 2 | (q4 & 1) << 1
        key = (high | (q5 >> 1)) << 6 | low | (q5 & 1)
        scratch_keys[i] = key
        start[key] += 1
    total = 0
    for b in range(buckets):
        count = start[b]
        start[b] = total
        total += count
    for i in range(ray_count):
        key = scratch_keys[i]
        k = start[key]
        start[key] = k + 1
        out_order[k] = i
        for a in range(3):
            out_origins[k, a] = origins[i, a]
            out_directions[k, a] = directions[i, a]
        out_max_distances[k] = max_distances[i]


@jit
def gather_rays_kernel(
    order, origins, directions, max_distances, out_origins, out_directions, out_max_distances
):
    """Rays in the given order: ``out[k] = in[order[k]]`` for the three ray arrays.

    Args:
        order: ray index per output row, shape (R,), int64.
        origins: ray origins, shape (R, 3), float64.
        directions: ray directions, shape (R, 3), float64.
        max_distances: largest accepted distances, shape (R,), float64.
        out_origins: reordered origins, shape (R, 3), float64 (written).
        out_directions: reordered directions, shape (R, 3), float64 (written).
        out_max_distances: reordered distances, shape (R,), float64 (written).
    """
    for k in range(order.shape[0]):
        i = order[k]
        for a in range(3):
            out_origins[k, a] = origins[i, a]
            out_directions[k, a] = directions[i, a]
        out_max_distances[k] = max_distances[i]


@jit
def scatter_hits_kernel(order, distances, faces, out_distances, out_faces):
    """Results back in caller order: ``out[order[k]] = in[k]``.

    Args:
        order: ray index of each row, shape (R,), int64.
        distances: hit distance per row, shape (R,), float64.
        faces: hit face per row, shape (R,), int64.
        out_distances: hit distance per caller ray, shape (R,), float64 (written).
        out_faces: hit face per caller ray, shape (R,), int64 (written).
    """
    for k in range(order.shape[0]):
        out_distances[order[k]] = distances[k]
        out_faces[order[k]] = faces[k]


# --------------------------------------------------------------------------------------------
# Embree backend helpers (runtime.rays.embree)
# --------------------------------------------------------------------------------------------


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
        m = _matrix_kernel(
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
            nx, ny, nz = _rotate_inverse_kernel(
                qw, qx, qy, qz, face_normals[f, 0], face_normals[f, 1], face_normals[f, 2]
            )
            px, py, pz = _rotate_inverse_kernel(
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


# --------------------------------------------------------------------------------------------
# Analytic solids: exact ray intersections (box, sphere, capsule, cylinder)
# --------------------------------------------------------------------------------------------


@jit
def _matrix_kernel(qw, qx, qy, qz):
    """Rotation matrix (row-major, 9 values) of the unit quaternion (qw, qx, qy, qz)."""
    return (
        1.0 - 2.0 * (qy * qy + qz * qz),
        2.0 * (qx * qy - qw * qz),
        2.0 * (qx * qz + qw * qy),
        2.0 * (qx * qy + qw * qz),
        1.0 - 2.0 * (qx * qx + qz * qz),
        2.0 * (qy * qz - qw * qx),
        2.0 * (qx * qz - qw * qy),
        2.0 * (qy * qz + qw * qx),
        1.0 - 2.0 * (qx * qx + qy * qy),
    )


@jit
def _sphere_entry_kernel(cz, r, ox, oy, oz, dx, dy, dz):
    """Entry distance of a ray into the sphere (centre (0, 0, cz), radius r), else inf.

    A ray starting inside (or moving away) has no entry. The discriminant is taken from
    the ray's closest approach to the centre, which keeps grazing hits accurate.
    """
    px = ox
    py = oy
    pz = oz - cz
    b = px * dx + py * dy + pz * dz
    c = (px * px + py * py + pz * pz) - r * r
    if c <= 0.0 or b >= 0.0:
        return np.inf
    fx = px - b * dx
    fy = py - b * dy
    fz = pz - b * dz
    disc = r * r - (fx * fx + fy * fy + fz * fz)
    if disc < 0.0:
        return np.inf
    # the near root c / (-b + sqrt(disc)) without cancellation
    return c / (-b + np.sqrt(disc))


@jit
def _side_entry_kernel(r, ox, oy, dx, dy):
    """Entry distance of a ray into the infinite cylinder x^2 + y^2 <= r^2, else inf."""
    a = dx * dx + dy * dy
    if a <= 0.0:
        return np.inf
    b = ox * dx + oy * dy
    c = (ox * ox + oy * oy) - r * r
    if c <= 0.0 or b >= 0.0:
        return np.inf
    s = b / a
    fx = ox - s * dx
    fy = oy - s * dy
    disc = r * r - (fx * fx + fy * fy)
    if disc < 0.0:
        return np.inf
    return c / (-b + np.sqrt(a * disc))


@jit
def ray_solid_kernel(kind, params, s, ox, oy, oz, dx, dy, dz):
    """Entry of a ray into an analytic solid, in the solid's frame.

    Boxes (half extents ``params[s]``), spheres (radius ``params[s, 0]``), capsules and
    cylinders (radius ``params[s, 0]``, half height ``params[s, 1]`` of the axis part along
    z); convex solids are triangles and never hit here. Only entering hits count: a ray
    starting inside has none (the "starts inside" rule answers it).

    Args:
        kind: ``SOLID_*`` code.
        params: solid parameters, shape (S, 3), float64 [stage units].
        s: the solid's row.
        ox: ray origin x, solid frame.
        oy: ray origin y.
        oz: ray origin z.
        dx: unit direction x, solid frame.
        dy: direction y.
        dz: direction z.

    Returns:
        ``(t, nx, ny, nz)``: entry distance (inf when none) and unit outward normal there.
    """
    if kind == SOLID_BOX:
        # slabs with one reciprocal per axis; the entry axis is the first largest entry
        t_in = -np.inf
        t_out = np.inf
        axis = -1
        for a in range(3):
            o = ox if a == 0 else (oy if a == 1 else oz)
            d = dx if a == 0 else (dy if a == 1 else dz)
            h = params[s, a]
            if d == 0.0:
                if o < -h or o > h:
                    return np.inf, 0.0, 0.0, 0.0
                continue
            inv = 1.0 / d
            t0 = (-h - o) * inv
            t1 = (h - o) * inv
            if t0 > t1:
                t0, t1 = t1, t0
            if t0 > t_in:
                t_in = t0
                axis = a
            t_out = min(t_out, t1)
        if axis < 0 or t_in > t_out or t_in <= 0.0:
            return np.inf, 0.0, 0.0, 0.0
        d = dx if axis == 0 else (dy if axis == 1 else dz)
        sign = -1.0 if d > 0.0 else 1.0
        return (
            t_in,
            sign if axis == 0 else 0.0,
            sign if axis == 1 else 0.0,
            sign if axis == 2 else 0.0,
        )
    r = params[s, 0]
    if kind == SOLID_SPHERE:
        t = _sphere_entry_kernel(0.0, r, ox, oy, oz, dx, dy, dz)
        if t == np.inf:
            return np.inf, 0.0, 0.0, 0.0
        return t, (ox + t * dx) / r, (oy + t * dy) / r, (oz + t * dz) / r
    if kind != SOLID_CAPSULE and kind != SOLID_CYLINDER:
        return np.inf, 0.0, 0.0, 0.0
    h = params[s, 1]
    best = np.inf
    nx = 0.0
    ny = 0.0
    nz = 0.0
    t = _side_entry_kernel(r, ox, oy, dx, dy)
    if t < best:
        z = oz + t * dz
        if -h <= z <= h:
            best = t
            nx = (ox + t * dx) / r
            ny = (oy + t * dy) / r
            nz = 0.0
    for end in range(2):
        cz = h if end == 0 else -h
        if kind == SOLID_CAPSULE:
            t = _sphere_entry_kernel(cz, r, ox, oy, oz, dx, dy, dz)
            if t < best:
                z = oz + t * dz
                if (z >= cz) if end == 0 else (z <= cz):
                    best = t
                    nx = (ox + t * dx) / r
                    ny = (oy + t * dy) / r
                    nz = (z - cz) / r
        else:
            # flat cap at z = cz, entered from outside (above the top, below the bottom)
            outside = oz > cz if end == 0 else oz < cz
            toward = dz < 0.0 if end == 0 else dz > 0.0
            if outside and toward:
                t = (cz - oz) / dz
                x = ox + t * dx
                y = oy + t * dy
                if t < best and x * x + y * y <= r * r:
                    best = t
                    nx = 0.0
                    ny = 0.0
                    nz = 1.0 if end == 0 else -1.0
    return best, nx, ny, nz


@jit
def group_solid_hit_kernel(
    solid_kinds,
    solid_positions,
    solid_orientations,
    solid_params,
    solid_bounds,
    first,
    count,
    ox,
    oy,
    oz,
    dx,
    dy,
    dz,
    t_best,
):
    """Closest analytic-solid entry closer than ``t_best`` among one group's solids.

    Args:
        solid_kinds: ``SOLID_*`` code per solid, shape (S,), int64.
        solid_positions: solid origin in its group frame, shape (S, 3), float64.
        solid_orientations: solid orientation in its group frame (w, x, y, z), (S, 4).
        solid_params: solid parameters, shape (S, 3), float64.
        solid_bounds: bounding sphere ``[c, r]`` per solid, group frame, shape (S, 4).
        first: the group's first solid.
        count: its number of solids.
        ox: ray origin x [stage units], group frame.
        oy: ray origin y.
        oz: ray origin z.
        dx: unit direction x, group frame.
        dy: direction y.
        dz: direction z.
        t_best: only entries closer than this count.

    Returns:
        ``(t, solid, nx, ny, nz)``: distance, solid index (-1 when none is closer) and unit
        normal in the group frame.
    """
    best = -1
    nx = 0.0
    ny = 0.0
    nz = 0.0
    for s in range(first, first + count):
        kind = solid_kinds[s]
        if kind == SOLID_CONVEX:
            continue
        # bounding-sphere reject: closest approach and entry distance along the ray
        cx = solid_bounds[s, 0] - ox
        cy = solid_bounds[s, 1] - oy
        cz = solid_bounds[s, 2] - oz
        along = cx * dx + cy * dy + cz * dz
        r = solid_bounds[s, 3]
        gap = cx * cx + cy * cy + cz * cz - along * along
        if gap > r * r or along + r < 0.0 or along - r > t_best:
            continue
        qw = solid_orientations[s, 0]
        qx = solid_orientations[s, 1]
        qy = solid_orientations[s, 2]
        qz = solid_orientations[s, 3]
        lx, ly, lz = _rotate_inverse_kernel(
            qw, qx, qy, qz, ox - solid_positions[s, 0], oy - solid_positions[s, 1],
            oz - solid_positions[s, 2],
        )  # fmt: skip
        ex, ey, ez = _rotate_inverse_kernel(qw, qx, qy, qz, dx, dy, dz)
        t, mx, my, mz = ray_solid_kernel(kind, solid_params, s, lx, ly, lz, ex, ey, ez)
        if t < t_best:
            t_best = t
            best = s
            # solid normal to the group frame: rotation by q
            nx, ny, nz = _rotate_inverse_kernel(qw, -qx, -qy, -qz, mx, my, mz)
    return t_best, best, nx, ny, nz


@jit
def scene_solid_hits_kernel(
    solid_kinds,
    solid_positions,
    solid_orientations,
    solid_params,
    solid_bounds,
    solid_actors,
    group_solid_ranges,
    group_solid_boxes,
    group_positions,
    group_orientations,
    origins,
    directions,
    max_distances,
    io_distances,
    io_actors,
    io_normals,
):
    """Analytic solids closer than the triangle hits replace them (exact hits, normals).

    Args:
        solid_kinds: ``SOLID_*`` code per solid, shape (S,), int64.
        solid_positions: solid origin in its group frame, shape (S, 3), float64.
        solid_orientations: solid orientation in its group frame, shape (S, 4), float64.
        solid_params: solid parameters, shape (S, 3), float64.
        solid_bounds: bounding sphere per solid, group frame, shape (S, 4), float64.
        solid_actors: actor index per solid, shape (S,), int64.
        group_solid_ranges: (first solid, count) per group, shape (G, 2), int64.
        group_solid_boxes: group-frame box around each group's solids, shape (G, 6).
        group_positions: group origins, shape (G, 3), float64, world.
        group_orientations: group orientations (w, x, y, z), shape (G, 4), float64.
        origins: ray origins, shape (R, 3), float64, world.
        directions: unit ray directions, shape (R, 3), float64, world.
        max_distances: largest accepted distance per ray, shape (R,), float64.
        io_distances: triangle hit distance or inf, shape (R,), float64 (updated).
        io_actors: actor or -1, shape (R,), int64 (updated).
        io_normals: unit world normal, shape (R, 3), float64 (updated).
    """
    # world frame of every analytic solid (convex ones are triangles), composed once per
    # call: ``frames[m] = [p(3), M(9, row-major), c(3), r]`` with ``x_solid = M^T (x - p)``
    # and the solid's world bounding sphere (c, r) for a cheap reject
    total = solid_kinds.shape[0]
    rows = np.empty(total, np.int64)
    frames = np.empty((total, 16))
    n = 0
    for g in range(group_solid_ranges.shape[0]):
        first = group_solid_ranges[g, 0]
        count = group_solid_ranges[g, 1]
        if count == 0:
            continue
        g00, g01, g02, g10, g11, g12, g20, g21, g22 = _matrix_kernel(
            group_orientations[g, 0], group_orientations[g, 1], group_orientations[g, 2],
            group_orientations[g, 3],
        )  # fmt: skip
        gx = group_positions[g, 0]
        gy = group_positions[g, 1]
        gz = group_positions[g, 2]
        for s in range(first, first + count):
            if solid_kinds[s] == SOLID_CONVEX:
                continue
            s00, s01, s02, s10, s11, s12, s20, s21, s22 = _matrix_kernel(
                solid_orientations[s, 0], solid_orientations[s, 1], solid_orientations[s, 2],
                solid_orientations[s, 3],
            )  # fmt: skip
            px = solid_positions[s, 0]
            py = solid_positions[s, 1]
            pz = solid_positions[s, 2]
            frames[n, 0] = gx + g00 * px + g01 * py + g02 * pz
            frames[n, 1] = gy + g10 * px + g11 * py + g12 * pz
            frames[n, 2] = gz + g20 * px + g21 * py + g22 * pz
            frames[n, 3] = g00 * s00 + g01 * s10 + g02 * s20
            frames[n, 4] = g00 * s01 + g01 * s11 + g02 * s21
            frames[n, 5] = g00 * s02 + g01 * s12 + g02 * s22
            frames[n, 6] = g10 * s00 + g11 * s10 + g12 * s20
            frames[n, 7] = g10 * s01 + g11 * s11 + g12 * s21
            frames[n, 8] = g10 * s02 + g11 * s12 + g12 * s22
            frames[n, 9] = g20 * s00 + g21 * s10 + g22 * s20
            frames[n, 10] = g20 * s01 + g21 * s11 + g22 * s21
            frames[n, 11] = g20 * s02 + g21 * s12 + g22 * s22
            cx = solid_bounds[s, 0]
            cy = solid_bounds[s, 1]
            cz = solid_bounds[s, 2]
            frames[n, 12] = gx + g00 * cx + g01 * cy + g02 * cz
            frames[n, 13] = gy + g10 * cx + g11 * cy + g12 * cz
            frames[n, 14] = gz + g20 * cx + g21 * cy + g22 * cz
            r = solid_bounds[s, 3]
            scale = 1.0 + r + abs(frames[n, 12]) + abs(frames[n, 13]) + abs(frames[n, 14])
            frames[n, 15] = r + 1e-9 * scale
            rows[n] = s
            n += 1
    if n == 0:
        return
    # bounding spheres as structure of arrays: the reject test of all solids vectorises
    sx = np.ascontiguousarray(frames[:n, 12])
    sy = np.ascontiguousarray(frames[:n, 13])
    sz = np.ascontiguousarray(frames[:n, 14])
    sr = np.ascontiguousarray(frames[:n, 15])
    near = np.empty(n, np.bool_)
    reach = np.empty(n)
    # boxes whose world frame is the world's orientation (tables, shelves): a world slab
    # test with the ray's inverse direction, no rotation or division per box
    aligned = np.empty(n, np.bool_)
    for m in range(n):
        aligned[m] = (
            solid_kinds[rows[m]] == SOLID_BOX
            and frames[m, 3] == 1.0
            and frames[m, 7] == 1.0
            and frames[m, 11] == 1.0
            and frames[m, 4] == 0.0
            and frames[m, 5] == 0.0
            and frames[m, 6] == 0.0
            and frames[m, 8] == 0.0
            and frames[m, 9] == 0.0
            and frames[m, 10] == 0.0
        )
    for i in range(origins.shape[0]):
        t_best = min(io_distances[i], max_distances[i])
        ox = origins[i, 0]
        oy = origins[i, 1]
        oz = origins[i, 2]
        dx = directions[i, 0]
        dy = directions[i, 1]
        dz = directions[i, 2]
        wix = 1.0 / dx if abs(dx) > _TINY else (_HUGE if dx >= 0.0 else -_HUGE)
        wiy = 1.0 / dy if abs(dy) > _TINY else (_HUGE if dy >= 0.0 else -_HUGE)
        wiz = 1.0 / dz if abs(dz) > _TINY else (_HUGE if dz >= 0.0 else -_HUGE)
        best = -1
        bx = 0.0
        by = 0.0
        bz = 0.0
        for m in range(n):
            cx = sx[m] - ox
            cy = sy[m] - oy
            cz = sz[m] - oz
            along = cx * dx + cy * dy + cz * dz
            r = sr[m]
            near[m] = (along + r >= 0.0) & (cx * cx + cy * cy + cz * cz - along * along <= r * r)
            reach[m] = along - r
        for m in range(n):
            # a solid whose sphere starts beyond the closest hit so far cannot be closer
            if not near[m] or reach[m] > t_best:
                continue
            if aligned[m]:
                s = rows[m]
                ax = (frames[m, 0] - solid_params[s, 0] - ox) * wix
                ux = (frames[m, 0] + solid_params[s, 0] - ox) * wix
                ay = (frames[m, 1] - solid_params[s, 1] - oy) * wiy
                uy = (frames[m, 1] + solid_params[s, 1] - oy) * wiy
                az = (frames[m, 2] - solid_params[s, 2] - oz) * wiz
                uz = (frames[m, 2] + solid_params[s, 2] - oz) * wiz
                tx = min(ax, ux)
                ty = min(ay, uy)
                tz = min(az, uz)
                t_in = max(tx, ty, tz)
                if t_in <= 0.0 or t_in > min(max(ax, ux), max(ay, uy), max(az, uz)):
                    continue
                if t_in < t_best:
                    t_best = t_in
                    best = s
                    # entry face: the first axis reaching the entry distance
                    bx = 0.0
                    by = 0.0
                    bz = 0.0
                    if tx >= ty and tx >= tz:
                        bx = -1.0 if dx > 0.0 else 1.0
                    elif ty >= tz:
                        by = -1.0 if dy > 0.0 else 1.0
                    else:
                        bz = -1.0 if dz > 0.0 else 1.0
                continue
            px = ox - frames[m, 0]
            py = oy - frames[m, 1]
            pz = oz - frames[m, 2]
            s = rows[m]
            t, mx, my, mz = ray_solid_kernel(
                solid_kinds[s], solid_params, s,
                frames[m, 3] * px + frames[m, 6] * py + frames[m, 9] * pz,
                frames[m, 4] * px + frames[m, 7] * py + frames[m, 10] * pz,
                frames[m, 5] * px + frames[m, 8] * py + frames[m, 11] * pz,
                frames[m, 3] * dx + frames[m, 6] * dy + frames[m, 9] * dz,
                frames[m, 4] * dx + frames[m, 7] * dy + frames[m, 10] * dz,
                frames[m, 5] * dx + frames[m, 8] * dy + frames[m, 11] * dz,
            )  # fmt: skip
            if t < t_best:
                t_best = t
                best = s
                bx = frames[m, 3] * mx + frames[m, 4] * my + frames[m, 5] * mz
                by = frames[m, 6] * mx + frames[m, 7] * my + frames[m, 8] * mz
                bz = frames[m, 9] * mx + frames[m, 10] * my + frames[m, 11] * mz
        if best >= 0:
            io_distances[i] = t_best
            io_actors[i] = solid_actors[best]
            io_normals[i, 0] = bx
            io_normals[i, 1] = by
            io_normals[i, 2] = bz
