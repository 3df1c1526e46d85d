"""The binary BVH build: a binned-SAH tree over one or several triangle meshes.

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
The wide BVH the scene casts traverse is collapsed from this tree
(:mod:`runtime.rays._wide_bvh_kernels`). Kernels trust their inputs (shapes, dtypes, finite
values); validation happens in ``runtime.rays.scene`` and ``runtime.rays.backends``.
"""

from __future__ import annotations

import numpy as np

from runtime._compile.jit import jit

__all__ = [
    "MAX_LEAF_SIZE",
    "bvh_build_kernel",
]


MAX_LEAF_SIZE = 4
"""Largest leaf the SAH builder creates when splitting still pays off."""


_MAX_SAH_DEPTH = 96


_SAH_BINS = 16


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
