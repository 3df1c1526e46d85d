"""Wide (8-ary) BVH: built from the binary SAH BVH, traversed with vector box and leaf tests.

The binary BVH of :mod:`runtime.rays._bvh_build_kernels` is collapsed into nodes of up to
:data:`~runtime.rays._simd.NODE_WIDTH` children (the inner child of largest surface area
is opened until a node has 8 children or only leaves), and every leaf's triangles are
stored as one block of :data:`~runtime.rays._simd.LEAF_WIDTH` lanes (a binary node
whose two children are leaves of 8 triangles or fewer in all becomes one leaf). A ray then visits
about a third of the nodes, tests all children of a node in one vector operation and all
triangles of a leaf in another. Distances and face ids are those of the binary traversal:
the triangle test is the same arithmetic, and the boxes only ever grow.

Layout (all groups of a scene concatenated, like the binary arrays):

* ``wide_nodes`` (M, 8, 8) float32: rows 0-5 the child boxes ``lo x, lo y, lo z, hi x, hi y,
  hi z`` by lane, rounded outward to float32; rows 6 and 7 hold int32 bit patterns (read
  through ``wide_nodes.view(np.int32)``): the child reference and its count. Count 0: an
  inner child, the reference is a wide node. Count 1-8: a leaf of that many triangles, the
  reference is a leaf block. Count -1: an empty lane (box ``+inf .. -inf``, never entered).
* ``leaf_triangles`` flat float64, 64-byte aligned: per leaf block, 9 rows of 8 lanes,
  ``v0 x, v0 y, v0 z, e1 x, ... e2 z``, then the block's 8 face ids as int32 (76 float64
  values per block), or the float32 corners ``v0, v1, v2`` then the 8 int32 ids (80 float32
  values, two per float64: 40 per block; 320 bytes, 5 cache lines) when that gives the
  same triangles to the bit (:func:`compact_leaves`: half the memory) and the float64
  blocks would take more than :data:`COMPACT_LEAVES_ABOVE_BYTES`. Unused lanes are zero:
  never hit. The ids inside the block are read on a hit from the lines the triangle test
  just loaded (a separate ``leaf_ids`` row costs a cache miss per hit on scenes larger
  than the cache: 5-10 % of a terrain lidar's time). Blocks without ids (72 or 36 values,
  :func:`compact_leaves` alone, or ids beyond int32) are traversed as well: the traversal
  tells the four layouts apart by the sizes of ``leaf_triangles`` and ``leaf_ids``.
* ``leaf_ids`` (L, 8) int64: the ``triangle_ids`` of each lane (-1 unused), also kept
  outside the blocks (for callers that pack the blocks their own way).
* ``wide_roots`` (G,) int64: each group's root wide node, -1 for an empty group.
* the float64 records (:func:`float64_nodes`), what the scene casts traverse: the same
  boxes as float64 rows, then the references and counts as 16 int32 in a seventh row
  (448 bytes a node): no conversion in the box test, at 1.75 times the memory.

Kernels trust their inputs (see :mod:`runtime.rays._traversal_kernels`).
"""

from __future__ import annotations

import numpy as np

from runtime._compile.jit import JIT_DISABLED, jit
from runtime.rays._simd import (
    LEAF_WIDTH,
    NODE_WIDTH,
    leaf_triangle_test,
    load_int32,
    lowest_bit,
    prefetch_lines,
    wide_box_test,
)

__all__ = [
    "COMPACT_LEAVES_ABOVE_BYTES",
    "NODE_ROWS",
    "NODE_ROWS_FLOAT64",
    "compact_leaves",
    "float64_nodes",
    "holds_float64",
    "leaf_blocks",
    "leaf_edges",
    "WIDE_STACK_SIZE",
    "wide_bvh",
    "wide_bvh_kernel",
    "wide_leaf_kernel",
    "wide_traverse_kernel",
]

NODE_ROWS = 8
"""Rows of a wide node record: 6 box rows, the references, the counts."""
NODE_ROWS_FLOAT64 = 7
"""Rows of a float64 wide node record (:func:`float64_nodes`): 6 box rows, then the references
and counts as 16 int32 in the seventh."""
WIDE_STACK_SIZE = 1024
"""Pending children of one traversal: at most NODE_WIDTH - 1 per level, and the binary build
is at most 96 + 32 levels deep (so is the wide BVH)."""
COMPACT_LEAVES_ABOVE_BYTES = 16 << 20
"""Float64 leaf blocks larger than this are stored as float32 corners when exact
(:func:`compact_leaves`); smaller ones stay float64, whose triangle test needs no conversion.

Measured on one thread (benchmarks/raycast.py scenes, Zen 5, 2 MB L2 per core): float64
leaves cast fans 5-10 % faster on the dense sphere (82k triangles, 8.4 MB of float64 leaves),
the room (75k) and the Panda scene; on spheres of 330k and 1.3M triangles float32 corners
are 1-4 % faster on every ray set. With the float64 node records (:func:`float64_nodes`),
same process, thread CPU time, two runs: the terrain (130k, 10.9 MB) casts height scans
7-13 % faster with float64 leaves, camera fans 0-4 %, lidar fans 1 %, scattered rays within
-3..+1 %; the dense sphere's fans 3-10 %; a 318k-triangle terrain (29 MB) 1-3 % slower on
fans (it stays compact)."""
_NODE_LINES = NODE_ROWS * NODE_WIDTH * 4 // 64  # cache lines of a node record
_NODE_LINES_FLOAT64 = NODE_ROWS_FLOAT64 * NODE_WIDTH * 8 // 64  # of a float64 node record
_u = np.uint64  # an index Numba need not check for negative values
_ROW_VALUES = 9 * LEAF_WIDTH  # triangle values of a leaf block (9 rows of 8 lanes)
_BLOCK = _ROW_VALUES + LEAF_WIDTH // 2  # float64 values of a float64 block with ids
_CORNER_BLOCK = _ROW_VALUES + LEAF_WIDTH  # float32 values of a compact block with ids
_LEAF_LINES = _BLOCK * 8 // 64 + 1  # cache lines of a float64 leaf block (608 bytes)
_CORNER_LINES = _CORNER_BLOCK * 4 // 64  # cache lines of a compact leaf block (aligned)


@jit(inline=True)
def _as_leaf_kernel(node_refs, ref, count):
    """A binary child ``(ref, count)`` as the wide BVH takes it.

    An inner node whose two children are leaves of :data:`LEAF_WIDTH` triangles or fewer in
    all becomes one leaf over their contiguous range (the build splits a node's range into
    its children's).
    """
    if count == 0 and ref >= 0 and node_refs[ref, 1] > 0 and node_refs[ref, 3] > 0:
        total = node_refs[ref, 1] + node_refs[ref, 3]
        if total <= LEAF_WIDTH:
            return node_refs[ref, 0], total
    return ref, count


@jit
def wide_bvh_kernel(
    node_boxes,
    node_refs,
    triangles,
    triangle_ids,
    roots,
    out_boxes,
    out_refs,
    out_leaf_triangles,
    out_leaf_ids,
    out_roots,
    out_counts,
):
    """Collapse binary BVHs into wide nodes and leaf blocks (module layout).

    Args:
        node_boxes: binary child bounds, shape (N, 12), float64.
        node_refs: binary child references, shape (N, 4), int64 (global indices).
        triangles: leaf-ordered ``[v0, e1, e2]``, shape (T, 9), float64.
        triangle_ids: id of each leaf-ordered triangle, shape (T,), int64.
        roots: binary root node of each group, -1 for an empty group, shape (G,), int64.
        out_boxes: child boxes, float64, shape (>= M, 6, 8) (written; rounded later).
        out_refs: child reference and count, shape (>= M, 2, 8), int64 (written).
        out_leaf_triangles: shape (>= L, 9, 8), float64 (written).
        out_leaf_ids: shape (>= L, 8), int64 (written).
        out_roots: each group's root wide node, -1 when empty, shape (G,), int64 (written).
        out_counts: ``[M, L]``, shape (2,), int64 (written).
    """
    w = NODE_WIDTH
    todo_node = np.empty(node_boxes.shape[0] + 1, np.int64)
    todo_slot = np.empty(node_boxes.shape[0] + 1, np.int64)
    child_ref = np.empty(w, np.int64)
    child_count = np.empty(w, np.int64)
    child_box = np.empty((w, 6))
    node_count = 0
    leaf_count = 0
    for g in range(roots.shape[0]):
        if roots[g] < 0:
            out_roots[g] = -1
            continue
        out_roots[g] = node_count
        todo_node[0] = roots[g]
        todo_slot[0] = node_count
        node_count += 1
        pending = 1
        while pending > 0:
            pending -= 1
            n = todo_node[pending]
            s = todo_slot[pending]
            k = 2
            for c in range(2):
                child_ref[c], child_count[c] = _as_leaf_kernel(
                    node_refs, node_refs[n, 2 * c], node_refs[n, 2 * c + 1]
                )
                for a in range(6):
                    child_box[c, a] = node_boxes[n, 6 * c + a]
            while k < w:  # open the inner child of largest surface area
                widest = -1
                widest_area = -1.0
                for c in range(k):
                    if child_count[c] == 0 and child_ref[c] >= 0:
                        ex = child_box[c, 3] - child_box[c, 0]
                        ey = child_box[c, 4] - child_box[c, 1]
                        ez = child_box[c, 5] - child_box[c, 2]
                        area = ex * ey + ey * ez + ez * ex
                        if area > widest_area:
                            widest_area = area
                            widest = c
                if widest < 0:
                    break
                b = child_ref[widest]
                child_ref[widest], child_count[widest] = _as_leaf_kernel(
                    node_refs, node_refs[b, 0], node_refs[b, 1]
                )
                child_ref[k], child_count[k] = _as_leaf_kernel(
                    node_refs, node_refs[b, 2], node_refs[b, 3]
                )
                for a in range(6):
                    child_box[widest, a] = node_boxes[b, a]
                    child_box[k, a] = node_boxes[b, 6 + a]
                k += 1
            for c in range(w):
                if c < k and child_ref[c] >= 0:
                    for a in range(6):
                        out_boxes[s, a, c] = child_box[c, a]
                    if child_count[c] == 0:  # an inner child: a new wide node
                        out_refs[s, 0, c] = node_count
                        out_refs[s, 1, c] = 0
                        todo_node[pending] = child_ref[c]
                        todo_slot[pending] = node_count
                        pending += 1
                        node_count += 1
                    else:  # a leaf: its triangles become one block of lanes
                        first = child_ref[c]
                        out_refs[s, 0, c] = leaf_count
                        out_refs[s, 1, c] = child_count[c]
                        for lane in range(LEAF_WIDTH):
                            used = lane < child_count[c]
                            for a in range(9):
                                out_leaf_triangles[leaf_count, a, lane] = (
                                    triangles[first + lane, a] if used else 0.0
                                )
                            out_leaf_ids[leaf_count, lane] = (
                                triangle_ids[first + lane] if used else -1
                            )
                        leaf_count += 1
                else:  # an empty lane
                    for a in range(3):
                        out_boxes[s, a, c] = np.inf
                        out_boxes[s, 3 + a, c] = -np.inf
                    out_refs[s, 0, c] = 0
                    out_refs[s, 1, c] = -1
    out_counts[0] = node_count
    out_counts[1] = leaf_count


@jit(inline=True)
def _leaf_layout(leaf_triangles, leaf_ids):
    """The leaf blocks' layout from the arrays' sizes (module layout).

    Returns:
        ``(compact, leaf_size, corner_size, id_stride, id_row)``: float32 corners or float64
        blocks, float64 values per float64 block, float32 values per compact block, int32
        values per block and the int32 offset of the ids inside a block (0 and -1 for blocks
        without ids).
    """
    lanes = leaf_ids.size
    compact = leaf_triangles.size < 9 * lanes
    ids_inside = leaf_triangles.size == 5 * lanes or 2 * leaf_triangles.size == 19 * lanes
    leaf_size = _BLOCK if ids_inside else _ROW_VALUES
    corner_size = _CORNER_BLOCK if ids_inside else _ROW_VALUES
    if not ids_inside:
        return compact, leaf_size, corner_size, 0, -1
    id_stride = _CORNER_BLOCK if compact else 2 * _BLOCK
    id_row = _ROW_VALUES if compact else 2 * _ROW_VALUES
    return compact, leaf_size, corner_size, id_stride, id_row


@jit(inline=True)
def wide_leaf_kernel(
    leaf_triangles, leaf_corners, leaf_ids, ref, ox, oy, oz, dx, dy, dz, t_best, double_sided,
    leaf_t,
):  # fmt: skip
    """Closest hit closer than ``t_best`` among leaf block ``ref``'s triangles (group frame).

    The leaf step of :func:`wide_traverse_kernel` (the same test, the nearest accepted lane,
    the first of equals); arguments as there. For kernels compiled without Numba's runtime
    (the pinhole view's): the traversal keeps these lines inline, because in kernels with
    the runtime each call's array arguments are reference-counted around it (measured:
    traversals 2.2 times slower); the view tests check both against the scene cast bit for
    bit.

    Returns:
        ``(t, id)``: the hit distance and its id, or ``(t_best, -1)``.
    """
    compact, leaf_size, corner_size, id_stride, id_row = _leaf_layout(leaf_triangles, leaf_ids)
    if compact:
        hits = leaf_triangle_test(leaf_corners, ref * corner_size, ox, oy, oz, dx, dy, dz,
                                  t_best, double_sided, leaf_t)  # fmt: skip
    else:
        hits = leaf_triangle_test(leaf_triangles, ref * leaf_size, ox, oy, oz, dx, dy, dz,
                                  t_best, double_sided, leaf_t)  # fmt: skip
    if hits == 0:
        return t_best, -1
    c = lowest_bit(hits)
    t = leaf_t[c]
    hits &= hits - 1
    while hits != 0:
        lane = lowest_bit(hits)
        hits &= hits - 1
        if leaf_t[lane] < t:
            t = leaf_t[lane]
            c = lane
    if id_row >= 0:
        return t, load_int32(leaf_triangles, ref * id_stride + id_row + c)
    return t, leaf_ids[ref * LEAF_WIDTH + c]


if JIT_DISABLED:

    def holds_float64(array):
        """Whether ``array`` holds float64 values (in kernels: a constant of its type)."""
        return array.dtype == np.float64

else:
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def holds_float64(typingctx, array):
        """Whether ``array`` holds float64 values: a constant of its type.

        ``array.itemsize`` is read from the array at run time; this is known when the kernel
        compiles, so that a node record's size is a constant (a shift, not a multiply, on the
        chain from a node to its child; branches on it vanish).
        """
        value = isinstance(array, types.Array) and array.dtype == types.float64
        sig = types.boolean(array)

        def codegen(context, builder, signature, args):
            return context.get_constant(types.boolean, value)

        return sig, codegen


@jit(inline=True)
def _prefetch_node(boxes, at):
    """Prefetch the node record starting at element ``at`` of ``boxes`` (float32 or float64)."""
    if holds_float64(boxes):
        prefetch_lines(boxes, at, _NODE_LINES_FLOAT64)
    else:
        prefetch_lines(boxes, at, _NODE_LINES)


@jit(inline=True)
def wide_traverse_kernel(
    boxes,
    box_record,
    refs,
    ref_record,
    leaf_triangles,
    leaf_corners,
    leaf_ids,
    root,
    ox,
    oy,
    oz,
    dx,
    dy,
    dz,
    ix,
    iy,
    iz,
    t_best,
    double_sided,
    stack_ref,
    stack_count,
    stack_t,
    enter,
    leaf_t,
    order_t,
    order_c,
):
    """Closest hit closer than ``t_best`` of one ray in one group's wide BVH (group frame).

    The children the ray enters are visited nearest first; the others wait on an explicit
    stack with their entry distance (prefetched) and are skipped when a closer hit was
    found meanwhile. Inlined into its callers, which own the flat arrays and the scratch.

    Args:
        boxes: node boxes, flat, float32 or float64: node ``n``'s six rows of 8 lanes
            start at ``n * box_record``.
        box_record: elements per node in ``boxes``.
        refs: child references, flat, int32 or int64: node ``n``'s 8 references start at
            ``n * ref_record``, its 8 counts right after them.
        ref_record: elements per node in ``refs``.
        leaf_triangles: leaf blocks, flat float64 (module layout), group frame.
        leaf_corners: ``leaf_triangles.view(np.float32)``: the compact layout's corners,
            leaf ``k``'s 9 rows of 8 lanes from ``k * 80`` (``k * 72`` without ids).
        leaf_ids: id of each lane, int64, L * 8 values: leaf ``k``'s at ``k * 8`` (read
            only for blocks without ids; its size tells the layout).
        root: the group's root node (>= 0).
        ox: ray origin x [stage units], group frame.
        oy: ray origin y.
        oz: ray origin z.
        dx: unit ray direction x, group frame.
        dy: unit ray direction y.
        dz: unit ray direction z.
        ix: ``1 / dx``, or ``+-1e30`` for a zero component
            (:func:`~runtime.rays._traversal_kernels.inverse_direction_kernel`).
        iy: ``1 / dy`` (the same way).
        iz: ``1 / dz`` (the same way).
        t_best: only hits closer than this count [stage units].
        double_sided: when False back faces are ignored.
        stack_ref: scratch, shape (WIDE_STACK_SIZE,), int64.
        stack_count: scratch, shape (WIDE_STACK_SIZE,), int64.
        stack_t: scratch, shape (WIDE_STACK_SIZE,), float64.
        enter: scratch, shape (NODE_WIDTH,), float64.
        leaf_t: scratch, shape (NODE_WIDTH,), float64.
        order_t: scratch, shape (NODE_WIDTH,), float64.
        order_c: scratch, shape (NODE_WIDTH,), int64.

    Returns:
        ``(t, id)``: the closest hit distance and its id, or ``(t_best, -1)``.
    """
    w = NODE_WIDTH
    # the leaf layout from the sizes (module layout): compact or float64, ids inside or not
    # (inline, not through _leaf_layout: a call with array arguments costs reference counts)
    lanes = leaf_ids.size
    compact = leaf_triangles.size < 9 * lanes
    ids_inside = leaf_triangles.size == 5 * lanes or 2 * leaf_triangles.size == 19 * lanes
    leaf_size = _BLOCK if ids_inside else _ROW_VALUES  # float64 values per float64 block
    corner_size = _CORNER_BLOCK if ids_inside else _ROW_VALUES  # float32 values per block
    id_stride = _CORNER_BLOCK if compact else 2 * _BLOCK  # int32 values per block
    id_row = _ROW_VALUES if compact else 2 * _ROW_VALUES  # int32 offset of the ids
    best = -1
    # rows of the near planes in a node's [lo(3), hi(3)] rows
    nx = 0 if ix >= 0.0 else 3
    ny = 1 if iy >= 0.0 else 4
    nz = 2 if iz >= 0.0 else 5
    oix = ox * ix
    oiy = oy * iy
    oiz = oz * iz
    top = 0
    ref = root
    count = 0
    # (indices below are made unsigned (_u): they are never negative, and Numba then skips
    # its negative-index wraparound, two instructions on the chain from a node to its child)
    while True:
        if count == 0:
            node = ref
            # the references and counts, read once the box test is done: their line(s) now,
            # with the box rows (a node out of cache is then one wait, not two)
            prefetch_lines(refs, node * ref_record, 1)
            prefetch_lines(refs, node * ref_record + 2 * w - 1, 1)
            mask = wide_box_test(boxes, node * box_record, nx, ny, nz, ix, iy, iz, oix, oiy,
                                 oiz, t_best, enter)  # fmt: skip
            if mask != 0:
                at = node * ref_record
                c = lowest_bit(mask)
                mask &= mask - 1
                if mask == 0:  # one child entered: no stack
                    ref = refs[_u(at + c)]
                    count = refs[_u(at + w + c)]
                    continue
                c2 = lowest_bit(mask)
                mask &= mask - 1
                if mask == 0:  # two: the farther waits
                    near, far = (c2, c) if enter[_u(c2)] < enter[_u(c)] else (c, c2)
                    far_ref = refs[_u(at + far)]
                    far_count = refs[_u(at + w + far)]
                    if far_count == 0:
                        _prefetch_node(boxes, far_ref * box_record)
                    elif compact:
                        prefetch_lines(leaf_corners, far_ref * corner_size, _CORNER_LINES)
                    else:
                        prefetch_lines(leaf_triangles, far_ref * leaf_size, _LEAF_LINES)
                    stack_ref[_u(top)] = far_ref
                    stack_count[_u(top)] = far_count
                    stack_t[_u(top)] = enter[_u(far)]
                    top += 1
                    ref = refs[_u(at + near)]
                    count = refs[_u(at + w + near)]
                    continue
                # three or more: sorted by entry distance, farthest first
                order_t[0] = enter[_u(c)]
                order_c[0] = c
                entered = 1
                mask |= np.int64(1) << c2
                while mask != 0:
                    c = lowest_bit(mask)
                    mask &= mask - 1
                    tc = enter[_u(c)]
                    j = entered
                    while j > 0 and order_t[_u(j - 1)] < tc:
                        order_t[_u(j)] = order_t[_u(j - 1)]
                        order_c[_u(j)] = order_c[_u(j - 1)]
                        j -= 1
                    order_t[_u(j)] = tc
                    order_c[_u(j)] = c
                    entered += 1
                for j in range(entered - 1):
                    c = order_c[_u(j)]
                    far_ref = refs[_u(at + c)]
                    far_count = refs[_u(at + w + c)]
                    if far_count == 0:
                        _prefetch_node(boxes, far_ref * box_record)
                    elif compact:
                        prefetch_lines(leaf_corners, far_ref * corner_size, _CORNER_LINES)
                    else:
                        prefetch_lines(leaf_triangles, far_ref * leaf_size, _LEAF_LINES)
                    stack_ref[_u(top)] = far_ref
                    stack_count[_u(top)] = far_count
                    stack_t[_u(top)] = order_t[_u(j)]
                    top += 1
                c = order_c[_u(entered - 1)]
                ref = refs[_u(at + c)]
                count = refs[_u(at + w + c)]
                continue
        else:
            if compact:
                hits = leaf_triangle_test(leaf_corners, ref * corner_size, ox, oy, oz, dx, dy,
                                          dz, t_best, double_sided, leaf_t)  # fmt: skip
            else:
                hits = leaf_triangle_test(leaf_triangles, ref * leaf_size, ox, oy, oz, dx, dy,
                                          dz, t_best, double_sided, leaf_t)  # fmt: skip
            if hits != 0:  # the nearest accepted lane (the first of equals)
                c = lowest_bit(hits)
                t = leaf_t[_u(c)]
                hits &= hits - 1
                while hits != 0:
                    lane = lowest_bit(hits)
                    hits &= hits - 1
                    if leaf_t[_u(lane)] < t:
                        t = leaf_t[_u(lane)]
                        c = lane
                t_best = t
                if ids_inside:
                    best = load_int32(leaf_triangles, ref * id_stride + id_row + c)
                else:
                    best = leaf_ids[_u(ref * LEAF_WIDTH + c)]
        # pop the most recent pending child that can still hold a closer hit
        found = False
        while top > 0:
            top -= 1
            if stack_t[_u(top)] <= t_best:
                found = True
                break
        if not found:
            break
        ref = stack_ref[_u(top)]
        count = stack_count[_u(top)]
    return t_best, best


def wide_bvh(
    node_boxes: np.ndarray,
    node_refs: np.ndarray,
    triangles: np.ndarray,
    triangle_ids: np.ndarray,
    roots: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The wide BVH of binary BVH arrays (module layout of both).

    Returns:
        ``(wide_nodes, leaf_triangles, leaf_ids, wide_roots)``.
    """
    n = max(int(node_boxes.shape[0]), 1)
    leaves = max(int(triangles.shape[0]), 1)
    boxes = np.empty((n, 6, NODE_WIDTH))
    node_refs_out = np.empty((n, 2, NODE_WIDTH), np.int64)
    leaf_triangles = np.empty((leaves, 9, LEAF_WIDTH))
    leaf_ids = np.empty((leaves, LEAF_WIDTH), np.int64)
    wide_roots = np.empty(roots.shape[0], np.int64)
    counts = np.zeros(2, np.int64)
    wide_bvh_kernel(node_boxes, node_refs, triangles, triangle_ids, roots, boxes,
                    node_refs_out, leaf_triangles, leaf_ids, wide_roots, counts)  # fmt: skip
    m, leaf_count = int(counts[0]), max(int(counts[1]), 1)
    if counts[1] == 0:
        leaf_triangles[0] = 0.0
        leaf_ids[0] = -1
    boxes = boxes[: max(m, 1)]
    if m == 0:
        boxes[:] = np.inf
        boxes[:, 3:] = -np.inf
        node_refs_out = np.zeros((1, 2, NODE_WIDTH), np.int64)
        node_refs_out[:, 1] = -1
    # float32 boxes rounded outward: a ray entering the float64 box enters this one
    with np.errstate(over="ignore"):
        lo = boxes[:, :3].astype(np.float32)
        hi = boxes[:, 3:].astype(np.float32)
    lo = np.where(lo.astype(np.float64) > boxes[:, :3], np.nextafter(lo, np.float32(-np.inf)), lo)
    hi = np.where(hi.astype(np.float64) < boxes[:, 3:], np.nextafter(hi, np.float32(np.inf)), hi)
    nodes = _aligned_empty((boxes.shape[0], NODE_ROWS, NODE_WIDTH), np.float32)
    nodes[:, :3] = lo
    nodes[:, 3:6] = hi
    nodes.view(np.int32)[:, 6:] = node_refs_out[: boxes.shape[0]]
    ids = np.ascontiguousarray(leaf_ids[:leaf_count])
    leaves = leaf_triangles[:leaf_count]
    return (
        nodes,
        leaf_blocks(leaves, ids, leaves.nbytes > COMPACT_LEAVES_ABOVE_BYTES),
        ids,
        wide_roots,
    )


def float64_nodes(wide_nodes: np.ndarray) -> np.ndarray:
    """The wide nodes with float64 box rows: the record the scene casts traverse fastest.

    The same boxes (the float32 values, exactly), references and counts, 448 bytes a node
    (7 whole cache lines) instead of 256: the box test then loads its rows without a
    float32 -> float64 conversion, which sits on the chain from a node to its child
    (measured, one thread, against the float32 records in the same process: lidar and
    camera fans 3-7 % faster on the benchmark's terrain, room and sphere, 3-5 % on a 318k
    triangle terrain whose float64 nodes take 9.5 MB). Hits are the same to the bit: the
    box test widens the float32 rows to these values anyway.

    Args:
        wide_nodes: wide nodes (module layout), shape (M, 8, 8), float32.

    Returns:
        Shape (M, :data:`NODE_ROWS_FLOAT64`, 8), float64, 64-byte aligned: rows 0-5 the
        boxes, row 6 the 8 references then the 8 counts as int32 (``.view(np.int32)``).
    """
    count = wide_nodes.shape[0]
    out = _aligned_empty((count, NODE_ROWS_FLOAT64, NODE_WIDTH), np.float64)
    out[:, :6] = wide_nodes[:, :6]
    out.view(np.int32)[:, 6] = wide_nodes.view(np.int32)[:, 6:].reshape(count, 2 * NODE_WIDTH)
    return out


def leaf_blocks(leaf_triangles: np.ndarray, leaf_ids: np.ndarray, compact: bool) -> np.ndarray:
    """Leaf blocks as the traversal stores them (module layout): ids inside, 64-byte aligned.

    Args:
        leaf_triangles: leaf blocks ``v0, e1, e2``, shape (L, 9, 8), float64.
        leaf_ids: face id of each lane, -1 unused, shape (L, 8), int64.
        compact: store float32 corners when exact (:func:`compact_leaves`).

    Returns:
        Flat float64, a new array: 76 L values (float64 rows, then the ids as int32), or
        40 L (float32 corners, then the ids); without the ids (72 L or 36 L) when an id
        does not fit in an int32.
    """
    count = leaf_ids.shape[0]
    stored = compact_leaves(leaf_triangles) if compact else leaf_triangles.reshape(-1)
    if count and (leaf_ids.min() < -1 or leaf_ids.max() > np.iinfo(np.int32).max):
        blocks = stored.reshape(count, -1)
    else:
        ids = leaf_ids.astype(np.int32).view(np.float64)  # (L, 4): 8 int32 per block
        blocks = np.concatenate([stored.reshape(count, -1), ids], axis=1)
    out = _aligned_empty((blocks.size,), np.float64)  # a compact block: 5 whole lines
    out[:] = blocks.reshape(-1)
    return out


def _aligned_empty(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a 64-byte cache line.

    A node record is then 4 whole lines (its references and counts one), a compact leaf
    block 5.
    """
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(size + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start : start + size].view(dtype).reshape(shape)


def compact_leaves(leaf_triangles: np.ndarray) -> np.ndarray:
    """The triangle rows of leaf blocks, flat float64, compacted when exact (no ids).

    A mesh whose vertices are float32 values (USD points, most mesh files) has float64
    leaf blocks ``v0, e1, e2`` whose corners ``v0``, ``v0 + e1``, ``v0 + e2`` are float32
    values too. Stored as float32 corners, a leaf takes half the memory, and the triangle
    test takes the edges back in float64 (:func:`~runtime.rays._simd.leaf_triangle_test`).
    The float32 corners are kept in a float64 array (two per element), so that kernels see
    one array type either way: a block of ``72 * L`` values is the float64 layout, one of
    ``36 * L`` the compact one.

    Args:
        leaf_triangles: leaf blocks ``v0, e1, e2``, shape (L, 9, 8), float64.

    Returns:
        Shape (36 L,): the float32 corners ``v0, v1, v2`` (9 rows of 8 lanes per leaf),
        when the edges taken back equal ``e1`` and ``e2`` to the bit in every lane; else
        shape (72 L,): ``leaf_triangles`` flattened. Float64, C-contiguous.
    """
    v0 = leaf_triangles[:, 0:3]
    with np.errstate(over="ignore", invalid="ignore"):
        corners = np.concatenate(
            [v0, v0 + leaf_triangles[:, 3:6], v0 + leaf_triangles[:, 6:9]], axis=1
        ).astype(np.float32)
        back = corners.astype(np.float64)
        same = (
            np.array_equal(back[:, 0:3], v0)
            and np.array_equal(back[:, 3:6] - back[:, 0:3], leaf_triangles[:, 3:6])
            and np.array_equal(back[:, 6:9] - back[:, 0:3], leaf_triangles[:, 6:9])
        )
    if same:
        return np.ascontiguousarray(corners).reshape(-1).view(np.float64)
    return np.ascontiguousarray(leaf_triangles).reshape(-1)


def leaf_edges(leaf_triangles: np.ndarray, leaf_count: int) -> np.ndarray:
    """Float64 leaf blocks ``v0, e1, e2``, shape (L, 9, 8), of any stored layout.

    Args:
        leaf_triangles: stored leaf blocks (module layout, with or without ids), flat float64.
        leaf_count: number of leaves L.
    """
    per_leaf = leaf_triangles.size // max(leaf_count, 1)
    if per_leaf in (_ROW_VALUES, _BLOCK):  # float64 rows
        rows = leaf_triangles.reshape(leaf_count, per_leaf)[:, :_ROW_VALUES]
        return np.ascontiguousarray(rows).reshape(leaf_count, 9, LEAF_WIDTH)
    corners = leaf_triangles.view(np.float32).reshape(leaf_count, 2 * per_leaf)
    rows = corners[:, :_ROW_VALUES].reshape(leaf_count, 9, LEAF_WIDTH).astype(np.float64)
    rows[:, 3:6] -= rows[:, 0:3]
    rows[:, 6:9] -= rows[:, 0:3]
    return rows
