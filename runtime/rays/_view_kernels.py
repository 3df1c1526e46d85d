"""Kernels of fixed pinhole views (:mod:`runtime.rays.views`): static part cast once.

:func:`view_kernel` is one update of a pinhole view whose rays never move (a depth camera
mounted on a static prim): the static groups' closest hits are cached per pixel, and only
the moving groups are cast, each on the pixels its box can hold at its current pose (per
row, the columns within the planes through the camera and the box's silhouette edges:
:func:`_silhouette_kernel`, :func:`_row_span`; the projected corners' rectangle when the
camera is inside the box), with the pixel's best hit so far as the limit. A pixel whose hit
came from a group at the world's last update tries that group first: a group that is one
convex hull with outward normals tests the leaf block of the last hit alone (a hit on a
face turned towards the camera is where the ray enters the hull: the group's closest hit);
otherwise, or when that finds nothing, it is cast up to a little beyond the last distance
(the group's motion since then, times 4): a hit there is the hit of the whole range, and
only when it finds none is the whole range cast. The casts use the scene cast's own
routines and arithmetic (its ray transform,
:func:`~runtime.rays._wide_bvh_kernels.wide_traverse_kernel` and its leaf step
:func:`~runtime.rays._wide_bvh_kernels.wide_leaf_kernel`,
:func:`~runtime.rays._solid_kernels.ray_solid_kernel` with
:func:`~runtime.rays._solid_kernels.scene_solid_hits_kernel`'s composed solid frames and
world-aligned box test, :func:`~runtime.rays._solid_kernels.group_inside_solid_kernel`), so
a pixel's hit equals the full scene cast's bit for bit (exact ties in distance aside: between
two groups the scene keeps the earlier group, the view the static one, or the moving group
whose origin is nearer the camera (the moving groups are cast nearest first, so that their
hits bound the farther groups' casts); between two triangles of a group at the same
distance, as for a ray through an edge to the rounding, the view can keep the other one).

The view's arrays are packed in two blocks (float64 and int64) whose first int64 values are
the layout (offset, rows, columns of each ``F_*`` and ``I_*`` slot), so that the kernel
takes eleven arrays and can be called through its native entry point
(:mod:`runtime._compile.native_call`); it is compiled without Numba's runtime (no
allocation, no reference counting in the pixel loops). Kernels trust their inputs (packed
and checked by :class:`~runtime.rays.views.PinholeView`).
"""

from __future__ import annotations

import math

import numpy as np

from runtime._compile.jit import jit
from runtime.rays._simd import NODE_WIDTH
from runtime.rays._solid_kernels import (
    SOLID_BOX,
    aligned_box_entry_kernel,
    group_inside_solid_kernel,
    group_solid_frames_kernel,
    ray_solid_kernel,
)
from runtime.rays._traversal_kernels import (
    inverse_direction_kernel,
    matrix_kernel,
    rotate_inverse_kernel,
)
from runtime.rays._wide_bvh_kernels import (
    NODE_ROWS,
    WIDE_STACK_SIZE,
    wide_leaf_kernel,
    wide_traverse_kernel,
)

__all__ = [
    "CONE_VALUES", "F_SLOTS", "I_SLOTS", "NODE_WIDTH", "V_SLOTS", "WIDE_STACK_SIZE", "view_kernel",
]  # fmt: skip

CONE_VALUES = 24
"""Scratch values of a box's silhouette cone (:func:`_silhouette_kernel`: up to 6 lower and
6 upper column bounds of 2 values)."""

# float64 slots: the scene's arrays, the view's rays and cached hits, working buffers
(F_FACE_NORMALS, F_SOLID_POSITIONS, F_SOLID_ORIENTATIONS, F_SOLID_PARAMS,
 F_PLANES, F_SOLID_BOUNDS, F_GROUP_SOLID_BOXES, F_VIEW, F_GROUP_BOUNDS, F_DIRECTIONS,
 F_INVERSE, F_MAX, F_FORWARD, F_STATIC_T, F_STATIC_NORMALS, F_T, F_NORMALS,
 F_GROUP_POSITIONS, F_GROUP_ORIENTATIONS, F_FRAMES,
 F_STACK, F_RAY_FRAMES, F_LAST_FRAMES, F_LAST_T, F_KEYS) = range(25)  # fmt: skip
F_SLOTS = 25
"""Float64 slots (``F_*``): face normals (F, 3), solid positions (S, 3), orientations (S, 4),
parameters (S, 3), planes (Q, 4), bounding spheres (S, 4), group solid boxes (G, 6), view
parameters (1, 13: camera position, orientation, fx, fy, cx, cy, max distance, the pixel
rays' largest distance from their integer pixel coordinates with a safety factor, inf when a
ray does not look forward), moving groups' boxes (K, 12: triangles, analytic solids), ray
directions (P, 3) and their inverses (P, 3), max distances (P,), forward components (P,),
static distances (P,) and normals (P, 3), working distances (P,) and normals (P, 3), group
positions (G, 3) and orientations (G, 4), solid frames (S', 16), traversal and cone scratch
(WIDE_STACK_SIZE + 3 NODE_WIDTH + CONE_VALUES,), moving groups' ray frames (G, 14: the
world-to-group rotation's entries, the camera in the group frame, how far the origin and the
rotation moved since the world's last update), per world and moving group the ray frame at
its last update (N K, 12; inf before the first), per world the distance of each pixel's
moving hit at its last update (N, P), the moving groups' squared distances from the camera
(K,; the keys of their cast order)."""

# int64 slots
(I_ROOTS, I_FACE_ACTORS, I_SOLID_KINDS, I_PLANE_RANGES, I_SOLID_ACTORS,
 I_GROUP_SOLID_RANGES, I_PARAMS, I_MOVING, I_ROWS, I_STATIC_ACTORS, I_ACTORS, I_CHANGED,
 I_CHANGED_COUNT, I_STAMPS, I_HITS, I_STACK, I_FRAME_ROWS, I_LAST_GROUP,
 I_HIT_GROUP, I_FACE_LEAF, I_CONVEX, I_LAST_LEAF, I_HIT_LEAF, I_ORDER) = range(24)  # fmt: skip
I_SLOTS = 24
"""Int64 slots (``I_*``): group roots (G,), face actors (F,), solid kinds (S,), plane
ranges (S, 2), solid actors (S,), group solid ranges (G, 2), parameters (1, V_SLOTS),
moving groups (K,), their body rows (K,), static actors (P,), working actors (P,), changed
pixels per world (N, P) and their counts (N,; -1 every pixel), pixel stamps (P,), hit list
(P,), traversal stacks (2 WIDE_STACK_SIZE + NODE_WIDTH,), solid rows (S',), per world the
moving group (index into ``I_MOVING``) that gave each pixel's hit at its last update (N, P;
-1 none or an analytic solid), the group of each working hit (P,; -1 otherwise), the leaf
block of each face (F,), per moving group whether its triangles are one convex hull with
outward normals (K,; 1 / 0), per world the leaf block of each pixel's moving hit at its last
update (N, P), the leaf block of each working hit (P,), the moving groups in the order of
their casts (K,; nearest the camera first)."""

# I_PARAMS columns
V_ENV, V_WIDTH, V_HEIGHT, V_CLIPPING, V_INSIDE, V_CALLS, V_DOUBLE_SIDED = range(7)
V_SLOTS = 7
"""Parameter columns (``V_*``): the world to update (set per call), image width and
height, clipping (0 none, 1 max, 2 zero), the first static solid containing the camera
(-1 none), calls so far (the stamps), double-sided triangles (0 / 1)."""


@jit(inline=True)
def _floats(block_f, block_i, slot):
    """Float slot ``slot`` as a (rows, columns) view."""
    at = 3 * slot
    start = block_i[at]
    rows = block_i[at + 1]
    cols = block_i[at + 2]
    return block_f[start : start + rows * cols].reshape((rows, cols))


@jit(inline=True)
def _floats_flat(block_f, block_i, slot):
    """Float slot ``slot`` as a flat view."""
    at = 3 * slot
    start = block_i[at]
    return block_f[start : start + block_i[at + 1] * block_i[at + 2]]


@jit(inline=True)
def _ints(block_i, slot):
    """Int slot ``slot`` as a (rows, columns) view."""
    at = 3 * (F_SLOTS + slot)
    start = block_i[at]
    rows = block_i[at + 1]
    cols = block_i[at + 2]
    return block_i[start : start + rows * cols].reshape((rows, cols))


@jit(inline=True)
def _ints_flat(block_i, slot):
    """Int slot ``slot`` as a flat view."""
    at = 3 * (F_SLOTS + slot)
    start = block_i[at]
    return block_i[start : start + block_i[at + 1] * block_i[at + 2]]


@jit(inline=True)
def _image_pixel(
    row, p, t, actor, nx, ny, nz, forward, max_distance, clipping, out_plane, out_camera,
    out_normals, out_ids,
):  # fmt: skip
    """Pixel ``p`` of the images from its hit (the camera image formulas).

    ``row`` is the world's first flat index (world * P) in the flat images.
    """
    d = t
    k = row + p
    if math.isinf(d):
        plane = math.inf
        out_normals[3 * k] = math.inf
        out_normals[3 * k + 1] = math.inf
        out_normals[3 * k + 2] = math.inf
    else:
        plane = d * forward[p]
        out_normals[3 * k] = nx
        out_normals[3 * k + 1] = ny
        out_normals[3 * k + 2] = nz
    if clipping == 1:
        d = min(d, max_distance)
        plane = min(plane, max_distance)
    elif clipping == 2:
        d = 0.0 if d > max_distance else d
        plane = 0.0 if plane > max_distance else plane
    out_plane[k] = plane
    out_camera[k] = d
    out_ids[k] = actor


@jit(inline=True)
def _group_in_camera_kernel(view, group_positions, g, frame):
    """Group ``g``'s pose seen from the camera (``view``: its position and orientation).

    ``frame`` is the group's ray frame of this update (the world-to-group rotation's entries,
    i.e. the group's rotation ``R`` row-major, then the camera in the group frame).

    Returns:
        15 values: the rotation from the group frame to the camera frame (row-major), the
        group's origin in the camera frame, and the camera's position in the group frame.
    """
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = (
        frame[0], frame[1], frame[2], frame[3], frame[4], frame[5], frame[6], frame[7], frame[8]
    )  # fmt: skip
    c00, c01, c02, c10, c11, c12, c20, c21, c22 = matrix_kernel(
        view[0, 3], view[0, 4], view[0, 5], view[0, 6]
    )
    # M = C^T R: group frame to camera frame
    m00 = c00 * r00 + c10 * r10 + c20 * r20
    m01 = c00 * r01 + c10 * r11 + c20 * r21
    m02 = c00 * r02 + c10 * r12 + c20 * r22
    m10 = c01 * r00 + c11 * r10 + c21 * r20
    m11 = c01 * r01 + c11 * r11 + c21 * r21
    m12 = c01 * r02 + c11 * r12 + c21 * r22
    m20 = c02 * r00 + c12 * r10 + c22 * r20
    m21 = c02 * r01 + c12 * r11 + c22 * r21
    m22 = c02 * r02 + c12 * r12 + c22 * r22
    wx = group_positions[g, 0] - view[0, 0]
    wy = group_positions[g, 1] - view[0, 1]
    wz = group_positions[g, 2] - view[0, 2]
    return (
        m00, m01, m02, m10, m11, m12, m20, m21, m22,
        c00 * wx + c10 * wy + c20 * wz,
        c01 * wx + c11 * wy + c21 * wz,
        c02 * wx + c12 * wy + c22 * wz,
        frame[9],
        frame[10],
        frame[11],
    )  # fmt: skip


@jit(inline=True)
def _pixel_rectangle(view, frame, bounds, k, col, width, height):
    """Columns u0..u1 and rows v0..v1 whose rays may meet a box of group ``g`` (may be empty).

    The box is ``bounds[k, col:col + 6]`` (group frame); its 8 corners at the group's pose
    (``frame``: :func:`_group_in_camera_kernel`) are projected through the pinhole
    (``view``: fx, fy, cx, cy) and the rectangle around them grows by one pixel on every
    side (rounding of the rays' own directions and of the corners, here the box's centre
    and its three half edges turned into the camera frame once). A corner not in front of
    the camera gives the whole image.
    """
    m00, m01, m02, m10, m11, m12, m20, m21, m22, ox, oy, oz, _, _, _ = frame
    lx = 0.5 * (bounds[k, col] + bounds[k, col + 3])
    ly = 0.5 * (bounds[k, col + 1] + bounds[k, col + 4])
    lz = 0.5 * (bounds[k, col + 2] + bounds[k, col + 5])
    hx = 0.5 * (bounds[k, col + 3] - bounds[k, col])
    hy = 0.5 * (bounds[k, col + 4] - bounds[k, col + 1])
    hz = 0.5 * (bounds[k, col + 5] - bounds[k, col + 2])
    bx = ox + m00 * lx + m01 * ly + m02 * lz
    by = oy + m10 * lx + m11 * ly + m12 * lz
    bz = oz + m20 * lx + m21 * ly + m22 * lz
    u_lo = math.inf
    u_hi = -math.inf
    v_lo = math.inf
    v_hi = -math.inf
    for c in range(8):
        sx = hx if c & 1 else -hx
        sy = hy if c & 2 else -hy
        sz = hz if c & 4 else -hz
        x = bx + m00 * sx + m01 * sy + m02 * sz
        y = by + m10 * sx + m11 * sy + m12 * sz
        z = bz + m20 * sx + m21 * sy + m22 * sz
        if not x > 1e-9 * (1.0 + abs(y) + abs(z)):
            return 0, width - 1, 0, height - 1
        inverse = 1.0 / x
        u = view[0, 9] - view[0, 7] * (y * inverse)
        v = view[0, 10] - view[0, 8] * (z * inverse)
        u_lo = min(u_lo, u)
        u_hi = max(u_hi, u)
        v_lo = min(v_lo, v)
        v_hi = max(v_hi, v)
    # (finite: x is positive and not tiny against y and z)
    u0 = max(int(math.floor(max(u_lo, -2.0))) - 1, 0)
    u1 = min(int(math.ceil(min(u_hi, width + 2.0))) + 1, width - 1)
    v0 = max(int(math.floor(max(v_lo, -2.0))) - 1, 0)
    v1 = min(int(math.ceil(min(v_hi, height + 2.0))) + 1, height - 1)
    return u0, u1, v0, v1


@jit(inline=True)
def _silhouette_kernel(view, frame, bounds, k, col, cone, v0, v1):
    """The pixel half-planes whose intersection holds every ray that can meet a box.

    The box is ``bounds[k, col:col + 6]`` (group frame, the group posed by ``frame``:
    :func:`_group_in_camera_kernel`), padded by ``1e-9`` of its size. Seen
    from the camera (outside it), the rays that meet it form a cone bounded by one plane
    through the camera per silhouette edge (an edge between a face turned towards the
    camera and one turned away: 4 or 6 of them). A plane with normal ``n`` (camera frame,
    x forward, y left, z up) holds the rays ``d`` with ``n . d >= 0``; the ray of the
    continuous pixel coordinates (u, v) is ``(1, (cx - u) / fx, (cy - v) / fy)`` times a
    positive factor, so each plane is the pixel half-plane ``A + B u + C v >= 0``, taken at
    its loosest over the rows ``v +- margin`` (the pixel rays' distance from their integer
    coordinates): ``B u >= -(A + C v + |C| margin)``. A plane with ``B > 0`` bounds the
    columns from below, ``u >= a + b v`` (``a, b`` in ``cone[2 i : 2 i + 2]``, the column
    margin included), one with ``B < 0`` from above (from ``cone[12]`` on), one with
    ``B == 0`` bounds the rows.

    Returns:
        ``(lowers, uppers, v0, v1)``: the number of lower and upper column bounds, and the
        rows ``v0..v1`` narrowed; ``(0, 0, v0, v1)`` when there is no cone (the camera
        inside the padded box, on a silhouette edge's line, or a non-finite pose): the
        rectangle's rows and columns.
    """
    m00, m01, m02, m10, m11, m12, m20, m21, m22, _, _, _, ex, ey, ez = frame
    eye = (ex, ey, ez)
    size = 0.0
    for a in range(6):
        size = max(size, abs(bounds[k, col + a]))
    pad = 1e-9 * (1.0 + size)
    lo = (bounds[k, col] - pad, bounds[k, col + 1] - pad, bounds[k, col + 2] - pad)
    hi = (bounds[k, col + 3] + pad, bounds[k, col + 4] + pad, bounds[k, col + 5] + pad)
    side = (
        -1 if eye[0] < lo[0] else (1 if eye[0] > hi[0] else 0),
        -1 if eye[1] < lo[1] else (1 if eye[1] > hi[1] else 0),
        -1 if eye[2] < lo[2] else (1 if eye[2] > hi[2] else 0),
    )
    if side[0] == 0 and side[1] == 0 and side[2] == 0:
        return 0, 0, v0, v1  # (inside, or NaN: no comparison holds)
    fx = view[0, 7]
    fy = view[0, 8]
    cx = view[0, 9]
    cy = view[0, 10]
    margin = view[0, 12]
    lowers = 0
    uppers = 0
    row_lo = float(v0)
    row_hi = float(v1)
    for c in range(3):  # the edges along axis c, at the sides of axes a and b
        a = (c + 1) % 3
        b = (c + 2) % 3
        for corner in range(4):
            sa = 2 * (corner & 1) - 1
            sb = (corner & 2) - 1
            if (side[a] == sa) == (side[b] == sb):
                continue  # both faces turned the same way: not on the silhouette
            # the plane through the camera and the edge: normal across the edge, in the
            # plane of axes a and b (a cyclic order of the axes keeps the handedness)
            qa = (hi[a] if sa > 0 else lo[a]) - eye[a]
            qb = (hi[b] if sb > 0 else lo[b]) - eye[b]
            na = qb
            nb = -qa
            if abs(qa) + abs(qb) <= 1e-6 * (1.0 + size):
                return 0, 0, v0, v1  # (the camera on the edge's line: no plane to trust)
            if na * (0.5 * (lo[a] + hi[a]) - eye[a]) + nb * (0.5 * (lo[b] + hi[b]) - eye[b]) < 0:
                na = -na  # the box's centre on the inner side
                nb = -nb
            gx = na if a == 0 else (nb if b == 0 else 0.0)
            gy = na if a == 1 else (nb if b == 1 else 0.0)
            gz = na if a == 2 else (nb if b == 2 else 0.0)
            nx = m00 * gx + m01 * gy + m02 * gz
            ny = m10 * gx + m11 * gy + m12 * gz
            nz = m20 * gx + m21 * gy + m22 * gz
            big_a = nx + ny * (cx / fx) + nz * (cy / fy)
            big_b = -ny / fx
            big_c = -nz / fy
            rows = -(big_a + abs(big_c) * margin)  # B u >= rows - C v
            if big_b > 0.0:
                cone[2 * lowers] = rows / big_b - margin
                cone[2 * lowers + 1] = -big_c / big_b
                lowers += 1
            elif big_b < 0.0:
                cone[12 + 2 * uppers] = rows / big_b + margin
                cone[13 + 2 * uppers] = -big_c / big_b
                uppers += 1
            elif big_c > 0.0:
                row_lo = max(row_lo, rows / big_c)
            elif big_c < 0.0:
                row_hi = min(row_hi, rows / big_c)
            elif rows > 0.0:
                row_hi = -1.0  # (no row)
    for i in range(2 * lowers):
        if not math.isfinite(cone[i]):
            return 0, 0, v0, v1
    for i in range(2 * uppers):
        if not math.isfinite(cone[12 + i]):
            return 0, 0, v0, v1
    if not row_lo <= row_hi:  # (also NaN)
        return lowers, uppers, 1, 0
    return lowers, uppers, int(math.ceil(row_lo)), int(math.floor(row_hi))


@jit(inline=True)
def _pixel_region(view, frame, bounds, k, col, width, height, cone):
    """The pixels whose rays may meet box ``bounds[k, col:col + 6]``: rectangle and cone.

    Returns:
        ``(u0, u1, v0, v1, lowers, uppers)``: the rectangle (:func:`_pixel_rectangle`) with
        its rows narrowed by the silhouette cone (:func:`_silhouette_kernel`, written into
        ``cone``), whose column bounds :func:`_row_span` applies row by row.
    """
    u0, u1, v0, v1 = _pixel_rectangle(view, frame, bounds, k, col, width, height)
    if u0 > u1 or v0 > v1:
        return u0, u1, v0, v1, 0, 0
    lowers, uppers, v0, v1 = _silhouette_kernel(view, frame, bounds, k, col, cone, v0, v1)
    return u0, u1, v0, v1, lowers, uppers


@jit(inline=True)
def _row_span(cone, lowers, uppers, v, u0, u1):
    """Columns ``(first, last)`` of row ``v`` within ``[u0, u1]`` that the cone may hold.

    The column bounds of :func:`_silhouette_kernel` (margins included): a superset of the
    pixels whose rays meet the box. Empty: ``first > last``.
    """
    lo = float(u0)
    hi = float(u1)
    row = float(v)
    for i in range(lowers):
        lo = max(lo, cone[2 * i] + cone[2 * i + 1] * row)
    for i in range(uppers):
        hi = min(hi, cone[12 + 2 * i] + cone[13 + 2 * i] * row)
    if not lo <= hi:
        return 1, 0
    return int(math.ceil(lo)), int(math.floor(hi))


@jit(inline=True)
def _entry_kernel(
    leaf_triangles, corners, leaf_ids, face_normals, ref, ox, oy, oz, dx, dy, dz, t_best,
    double_sided, leaf_t,
):  # fmt: skip
    """Leaf ``ref``'s closest hit when it is on a face turned towards the ray, else none.

    For a group that is one convex hull with outward normals: such a hit is where the ray
    enters the hull, so no triangle of the group is nearer. Returns ``(t, face)`` or
    ``(t_best, -1)``.
    """
    t, face = wide_leaf_kernel(
        leaf_triangles, corners, leaf_ids, ref, ox, oy, oz, dx, dy, dz, t_best, double_sided,
        leaf_t,
    )  # fmt: skip
    if face >= 0 and (
        face_normals[face, 0] * dx + face_normals[face, 1] * dy + face_normals[face, 2] * dz < 0.0
    ):
        return t, face
    return t_best, -1


@jit(nrt=False)
def view_kernel(
    body_positions,
    body_orientations,
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    block_f,
    block_i,
    out_plane,
    out_camera,
    out_normals,
    out_ids,
    out_count,
):
    """One update of world ``V_ENV``'s pinhole view: the moving groups cast where seen.

    On entry the working hits (``F_T``, ``I_ACTORS``, ``F_NORMALS``) are the static ones
    (and are again on return); the pixels whose images differ from the static ones are
    listed per world in ``I_CHANGED`` (count -1: every pixel, e.g. before the first update).

    Steps: the moving groups' poses (``I_ROWS`` into the body pose arrays) and ray frames;
    the "camera starts inside a solid" rule (the first containing solid in solid order,
    static ones cached in ``V_INSIDE``: every pixel at distance 0, normal ``-direction``);
    per moving group, nearest the camera first, its triangles on the row spans of its
    triangle box (skipped where the pixel has a hit nearer than the box; the scene cast's
    ray transform, the BVH traversal with the pixel's best hit so far as the limit; when
    the group gave the pixel's last hit, first the leaf of that hit for a convex hull, or
    up to a little beyond its last distance), then its analytic solids on the row spans of
    their box (the
    scene cast's solid frames, bounding-sphere reject, world-aligned box test and exact
    entries); the images of the pixels that changed now or at the world's last update.

    Args:
        body_positions: body origins [m], shape (B, 3), float64, world (this world's).
        body_orientations: body orientations (w, x, y, z), shape (B, 4), float64.
        wide_nodes: the scene's wide BVH nodes, flat, float32.
        leaf_triangles: the scene's leaf blocks, flat, float64.
        leaf_ids: global face per leaf lane, flat, int64.
        block_f: the float64 slots (``F_*``), flat.
        block_i: the layout, then the int64 slots (``I_*``), flat.
        out_plane: distance to the image plane [m], (N * P,) (world ``V_ENV``'s updated).
        out_camera: distance to the camera [m], (N * P,) (the same).
        out_normals: world normals, misses inf, (N * P * 3,) (the same).
        out_ids: hit actors or -1, (N * P,) int64 (the same).
        out_count: (1,) int64: the pixels that differ from the static view (-1: the
            camera is inside a solid) (written).
    """
    params = _ints_flat(block_i, I_PARAMS)
    env = params[V_ENV]
    width = params[V_WIDTH]
    height = params[V_HEIGHT]
    clipping = params[V_CLIPPING]
    double_sided = params[V_DOUBLE_SIDED] != 0
    stamp = params[V_CALLS] + 1  # one value per call: the stamps need no clearing
    params[V_CALLS] = stamp
    roots = _ints_flat(block_i, I_ROOTS)
    face_actors = _ints_flat(block_i, I_FACE_ACTORS)
    solid_kinds = _ints_flat(block_i, I_SOLID_KINDS)
    plane_ranges = _ints(block_i, I_PLANE_RANGES)
    solid_actors = _ints_flat(block_i, I_SOLID_ACTORS)
    solid_ranges = _ints(block_i, I_GROUP_SOLID_RANGES)
    moving = _ints_flat(block_i, I_MOVING)
    rows = _ints_flat(block_i, I_ROWS)
    static_actors = _ints_flat(block_i, I_STATIC_ACTORS)
    actors = _ints_flat(block_i, I_ACTORS)
    changed_all = _ints(block_i, I_CHANGED)
    changed_count = _ints_flat(block_i, I_CHANGED_COUNT)
    stamps = _ints_flat(block_i, I_STAMPS)
    hits = _ints_flat(block_i, I_HITS)
    stack_i = _ints_flat(block_i, I_STACK)
    frame_rows = _ints_flat(block_i, I_FRAME_ROWS)
    face_normals = _floats(block_f, block_i, F_FACE_NORMALS)
    solid_positions = _floats(block_f, block_i, F_SOLID_POSITIONS)
    solid_orientations = _floats(block_f, block_i, F_SOLID_ORIENTATIONS)
    solid_params = _floats(block_f, block_i, F_SOLID_PARAMS)
    planes = _floats(block_f, block_i, F_PLANES)
    solid_bounds = _floats(block_f, block_i, F_SOLID_BOUNDS)
    group_solid_boxes = _floats(block_f, block_i, F_GROUP_SOLID_BOXES)
    view = _floats(block_f, block_i, F_VIEW)
    bounds = _floats(block_f, block_i, F_GROUP_BOUNDS)
    directions = _floats(block_f, block_i, F_DIRECTIONS)
    inverse = _floats(block_f, block_i, F_INVERSE)
    max_distances = _floats_flat(block_f, block_i, F_MAX)
    forward = _floats_flat(block_f, block_i, F_FORWARD)
    static_t = _floats_flat(block_f, block_i, F_STATIC_T)
    static_normals = _floats(block_f, block_i, F_STATIC_NORMALS)
    io_t = _floats_flat(block_f, block_i, F_T)
    io_normals = _floats(block_f, block_i, F_NORMALS)
    group_positions = _floats(block_f, block_i, F_GROUP_POSITIONS)
    group_orientations = _floats(block_f, block_i, F_GROUP_ORIENTATIONS)
    frames = _floats(block_f, block_i, F_FRAMES)
    stack_f = _floats_flat(block_f, block_i, F_STACK)
    ray_frames = _floats(block_f, block_i, F_RAY_FRAMES)
    last_frames = _floats(block_f, block_i, F_LAST_FRAMES)
    last_t = _floats(block_f, block_i, F_LAST_T)[env]
    last_group = _ints(block_i, I_LAST_GROUP)[env]
    hit_group = _ints_flat(block_i, I_HIT_GROUP)
    face_leaf = _ints_flat(block_i, I_FACE_LEAF)
    convex = _ints_flat(block_i, I_CONVEX)
    last_leaf = _ints(block_i, I_LAST_LEAF)[env]
    hit_leaf = _ints_flat(block_i, I_HIT_LEAF)
    max_distance = view[0, 11]
    pixel_count = directions.shape[0]
    base = env * pixel_count
    moving_count = moving.shape[0]
    ox = view[0, 0]
    oy = view[0, 1]
    oz = view[0, 2]
    # -- 1. moving group poses and the rays' frames (the camera's position
    # and the world-to-group rotation) with how far they moved since the world's last
    # update: ray_frames[g, 12] the origin's shift, [g, 13] the rotation's change
    for k in range(moving_count):
        g = moving[k]
        b = rows[k]
        for a in range(3):
            group_positions[g, a] = body_positions[b, a]
        for a in range(4):
            group_orientations[g, a] = body_orientations[b, a]
        frame = ray_frames[g]
        f0, f1, f2, f3, f4, f5, f6, f7, f8 = matrix_kernel(
            group_orientations[g, 0], group_orientations[g, 1], group_orientations[g, 2],
            group_orientations[g, 3],
        )  # fmt: skip
        px = ox - group_positions[g, 0]
        py = oy - group_positions[g, 1]
        pz = oz - group_positions[g, 2]
        frame[0] = f0
        frame[1] = f1
        frame[2] = f2
        frame[3] = f3
        frame[4] = f4
        frame[5] = f5
        frame[6] = f6
        frame[7] = f7
        frame[8] = f8
        frame[9] = f0 * px + f3 * py + f6 * pz
        frame[10] = f1 * px + f4 * py + f7 * pz
        frame[11] = f2 * px + f5 * py + f8 * pz
        before = last_frames[env * moving_count + k]
        turn = 0.0
        for a in range(9):
            turn += (frame[a] - before[a]) * (frame[a] - before[a])
        shift = 0.0
        for a in range(9, 12):
            shift += (frame[a] - before[a]) * (frame[a] - before[a])
        frame[12] = math.sqrt(shift)
        frame[13] = math.sqrt(turn)
        for a in range(12):
            before[a] = frame[a]
    # -- 2. the camera inside a solid: the first containing solid in solid order
    inside = params[V_INSIDE]
    for k in range(moving_count):
        g = moving[k]
        count = solid_ranges[g, 1]
        first = solid_ranges[g, 0]
        if count == 0 or (inside >= 0 and inside < first):
            continue
        gx, gy, gz = rotate_inverse_kernel(
            group_orientations[g, 0], group_orientations[g, 1], group_orientations[g, 2],
            group_orientations[g, 3], ox - group_positions[g, 0], oy - group_positions[g, 1],
            oz - group_positions[g, 2],
        )  # fmt: skip
        if (
            gx < group_solid_boxes[g, 0]
            or gy < group_solid_boxes[g, 1]
            or gz < group_solid_boxes[g, 2]
            or gx > group_solid_boxes[g, 3]
            or gy > group_solid_boxes[g, 4]
            or gz > group_solid_boxes[g, 5]
        ):
            continue
        s = group_inside_solid_kernel(
            solid_kinds, solid_positions, solid_orientations, solid_params, plane_ranges,
            planes, solid_bounds, first, count, gx, gy, gz,
        )  # fmt: skip
        if s >= 0 and (inside < 0 or s < inside):
            inside = s
    if inside >= 0:
        actor = solid_actors[inside]
        for p in range(pixel_count):
            _image_pixel(
                base, p, 0.0, actor, -directions[p, 0], -directions[p, 1], -directions[p, 2],
                forward, max_distance, clipping, out_plane, out_camera, out_normals, out_ids,
            )  # fmt: skip
        changed_count[env] = -1
        out_count[0] = -1
        return
    # -- 3. per moving group: triangles, then analytic solids, on their rectangles
    w = NODE_WIDTH
    record = NODE_ROWS * w
    refs = wide_nodes.view(np.int32)[6 * w :]
    corners = leaf_triangles.view(np.float32)
    stack_ref = stack_i[:WIDE_STACK_SIZE]
    stack_count = stack_i[WIDE_STACK_SIZE : 2 * WIDE_STACK_SIZE]
    order_c = stack_i[2 * WIDE_STACK_SIZE : 2 * WIDE_STACK_SIZE + w]
    stack_t = stack_f[:WIDE_STACK_SIZE]
    enter = stack_f[WIDE_STACK_SIZE : WIDE_STACK_SIZE + w]
    leaf_t = stack_f[WIDE_STACK_SIZE + w : WIDE_STACK_SIZE + 2 * w]
    order_t = stack_f[WIDE_STACK_SIZE + 2 * w : WIDE_STACK_SIZE + 3 * w]
    cone = stack_f[WIDE_STACK_SIZE + 3 * w : WIDE_STACK_SIZE + 3 * w + CONE_VALUES]
    keys = _floats_flat(block_f, block_i, F_KEYS)
    hit_count = 0
    # the groups nearest the camera first: their hits bound the farther groups' casts
    order = _ints_flat(block_i, I_ORDER)
    for k in range(moving_count):
        g = moving[k]
        dx = group_positions[g, 0] - ox
        dy = group_positions[g, 1] - oy
        dz = group_positions[g, 2] - oz
        keys[k] = dx * dx + dy * dy + dz * dz
        j = k
        while j > 0 and keys[order[j - 1]] > keys[k]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = k
    for kk in range(moving_count):
        k = order[kk]
        g = moving[k]
        qw = group_orientations[g, 0]
        qx = group_orientations[g, 1]
        qy = group_orientations[g, 2]
        qz = group_orientations[g, 3]
        root = roots[g]
        seen = _group_in_camera_kernel(view, group_positions, g, ray_frames[g])
        if root >= 0:
            u0, u1, v0, v1, lowers, uppers = _pixel_region(
                view, seen, bounds, k, 0, width, height, cone
            )
            # the rays share their origin: its place in the group frame
            frame = ray_frames[g]
            f0 = frame[0]
            f1 = frame[1]
            f2 = frame[2]
            f3 = frame[3]
            f4 = frame[4]
            f5 = frame[5]
            f6 = frame[6]
            f7 = frame[7]
            f8 = frame[8]
            lox = frame[9]
            loy = frame[10]
            loz = frame[11]
            shift = frame[12]
            turn = frame[13]
            # how near the camera the triangles' box comes (group frame; padded for a hit's
            # rounding): no hit of the group is nearer, so a pixel whose best hit so far is
            # nearer skips the group
            pad = 0.0
            for a in range(6):
                pad = max(pad, abs(bounds[k, a]))
            pad = 1e-9 * (1.0 + pad)
            gap_x = max(bounds[k, 0] - pad - lox, lox - bounds[k, 3] - pad, 0.0)
            gap_y = max(bounds[k, 1] - pad - loy, loy - bounds[k, 4] - pad, 0.0)
            gap_z = max(bounds[k, 2] - pad - loz, loz - bounds[k, 5] - pad, 0.0)
            near = math.sqrt(gap_x * gap_x + gap_y * gap_y + gap_z * gap_z) * (1.0 - 1e-12)
            for v in range(v0, v1 + 1):
                first, last = _row_span(cone, lowers, uppers, v, u0, u1)
                for u in range(first, last + 1):
                    p = v * width + u
                    t_best = min(io_t[p], max_distances[p])
                    if near > t_best:
                        continue
                    # the scene cast's ray transform (its inverses only for a traversal)
                    wdx = directions[p, 0]
                    wdy = directions[p, 1]
                    wdz = directions[p, 2]
                    ldx = f0 * wdx + f3 * wdy + f6 * wdz
                    ldy = f1 * wdx + f4 * wdy + f7 * wdz
                    ldz = f2 * wdx + f5 * wdy + f8 * wdz
                    limit = t_best
                    face = -1
                    if last_group[p] == k and convex[k] != 0:
                        # one convex hull: a hit on a face turned towards the camera is
                        # where the ray enters it, the group's closest hit; first the leaf
                        # of the pixel's hit at the world's last update
                        t, face = _entry_kernel(
                            leaf_triangles, corners, leaf_ids, face_normals, last_leaf[p], lox,
                            loy, loz, ldx, ldy, ldz, t_best, double_sided, leaf_t,
                        )  # fmt: skip
                    if face < 0 and last_group[p] == k:
                        # this group gave the pixel's hit at the world's last update:
                        # first a traversal up to a little beyond the last distance (a
                        # hit below it is the one of the whole range), the whole range only
                        # if it finds none
                        before = last_t[p]
                        reach = before + 4.0 * (shift + before * turn) + 1e-9 * (1.0 + before)
                        if reach < t_best:  # (False for NaN)
                            limit = reach
                    if face < 0:
                        ix = inverse_direction_kernel(ldx)
                        iy = inverse_direction_kernel(ldy)
                        iz = inverse_direction_kernel(ldz)
                        t, face = wide_traverse_kernel(
                            wide_nodes, record, refs, record, leaf_triangles, corners,
                            leaf_ids, root, lox, loy, loz, ldx, ldy, ldz, ix, iy, iz, limit,
                            double_sided, stack_ref, stack_count, stack_t, enter, leaf_t,
                            order_t, order_c,
                        )  # fmt: skip
                        if face < 0 and limit < t_best:
                            t, face = wide_traverse_kernel(
                                wide_nodes, record, refs, record, leaf_triangles, corners,
                                leaf_ids, root, lox, loy, loz, ldx, ldy, ldz, ix, iy, iz,
                                t_best, double_sided, stack_ref, stack_count, stack_t, enter,
                                leaf_t, order_t, order_c,
                            )  # fmt: skip
                    if face < 0:
                        continue
                    nx, ny, nz = rotate_inverse_kernel(
                        qw, -qx, -qy, -qz, face_normals[face, 0], face_normals[face, 1],
                        face_normals[face, 2],
                    )  # fmt: skip
                    if double_sided and nx * wdx + ny * wdy + nz * wdz > 0.0:
                        nx = -nx
                        ny = -ny
                        nz = -nz
                    io_t[p] = t
                    actors[p] = face_actors[face]
                    io_normals[p, 0] = nx
                    io_normals[p, 1] = ny
                    io_normals[p, 2] = nz
                    hit_group[p] = k
                    hit_leaf[p] = face_leaf[face]
                    if stamps[p] != stamp:
                        stamps[p] = stamp
                        hits[hit_count] = p
                        hit_count += 1
        # analytic solids: scene_solid_hits_kernel's frames and tests, this group's solids
        n = group_solid_frames_kernel(
            g, qw, qx, qy, qz, group_positions, solid_ranges, solid_kinds, solid_positions,
            solid_orientations, solid_bounds, frames, frame_rows, 0,
        )  # fmt: skip
        if n == 0:
            continue
        u0, u1, v0, v1, lowers, uppers = _pixel_region(
            view, seen, bounds, k, 6, width, height, cone
        )
        for v in range(v0, v1 + 1):
            first, last = _row_span(cone, lowers, uppers, v, u0, u1)
            for u in range(first, last + 1):
                p = v * width + u
                t_best = min(io_t[p], max_distances[p])
                dx = directions[p, 0]
                dy = directions[p, 1]
                dz = directions[p, 2]
                best = -1
                bx = 0.0
                by = 0.0
                bz = 0.0
                for m in range(n):
                    cx = frames[m, 12] - ox
                    cy = frames[m, 13] - oy
                    cz = frames[m, 14] - oz
                    along = cx * dx + cy * dy + cz * dz
                    r = frames[m, 15]
                    gap = cx * cx + cy * cy + cz * cz - along * along
                    near = (along + r >= 0.0) & (gap <= r * r)
                    if not near or along - r > t_best:
                        continue
                    s = frame_rows[m]
                    if _aligned(solid_kinds[s], frames, m):
                        t_in, ex, ey, ez = aligned_box_entry_kernel(
                            frames[m, 0], frames[m, 1], frames[m, 2], solid_params[s, 0],
                            solid_params[s, 1], solid_params[s, 2], ox, oy, oz, dx, dy, dz,
                            inverse[p, 0], inverse[p, 1], inverse[p, 2],
                        )  # fmt: skip
                        if t_in < t_best:
                            t_best = t_in
                            best = s
                            bx = ex
                            by = ey
                            bz = ez
                        continue
                    qx0 = ox - frames[m, 0]
                    qy0 = oy - frames[m, 1]
                    qz0 = oz - frames[m, 2]
                    t, mx, my, mz = ray_solid_kernel(
                        solid_kinds[s], solid_params, s,
                        frames[m, 3] * qx0 + frames[m, 6] * qy0 + frames[m, 9] * qz0,
                        frames[m, 4] * qx0 + frames[m, 7] * qy0 + frames[m, 10] * qz0,
                        frames[m, 5] * qx0 + frames[m, 8] * qy0 + frames[m, 11] * qz0,
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
                if best < 0:
                    continue
                io_t[p] = t_best
                actors[p] = solid_actors[best]
                io_normals[p, 0] = bx
                io_normals[p, 1] = by
                io_normals[p, 2] = bz
                hit_group[p] = -1
                if stamps[p] != stamp:
                    stamps[p] = stamp
                    hits[hit_count] = p
                    hit_count += 1
    # -- 4. images: this update's hits, then last update's changed pixels not hit now (back
    # to the static hits)
    changed = changed_all[env]
    previous = changed_count[env]
    if previous < 0:
        for p in range(pixel_count):
            _image_pixel(
                base, p, io_t[p], actors[p], io_normals[p, 0], io_normals[p, 1],
                io_normals[p, 2], forward, max_distance, clipping, out_plane, out_camera,
                out_normals, out_ids,
            )  # fmt: skip
    else:
        for j in range(hit_count):
            p = hits[j]
            _image_pixel(
                base, p, io_t[p], actors[p], io_normals[p, 0], io_normals[p, 1],
                io_normals[p, 2], forward, max_distance, clipping, out_plane, out_camera,
                out_normals, out_ids,
            )  # fmt: skip
        for j in range(previous):
            p = changed[j]
            if stamps[p] != stamp:
                _image_pixel(
                    base, p, io_t[p], actors[p], io_normals[p, 0], io_normals[p, 1],
                    io_normals[p, 2], forward, max_distance, clipping, out_plane,
                    out_camera, out_normals, out_ids,
                )  # fmt: skip
    # -- 5. remember this update's pixels (and which group hit them, how far); the
    # working hits back to the static ones
    for j in range(max(previous, 0)):
        last_group[changed[j]] = -1
    for j in range(hit_count):
        p = hits[j]
        changed[j] = p
        last_group[p] = hit_group[p]
        last_leaf[p] = hit_leaf[p]
        last_t[p] = io_t[p]
        hit_group[p] = -1
        io_t[p] = static_t[p]
        actors[p] = static_actors[p]
        for a in range(3):
            io_normals[p, a] = static_normals[p, a]
    changed_count[env] = hit_count
    out_count[0] = hit_count


@jit(inline=True)
def _aligned(kind, frames, m):
    """Whether solid frame ``m`` is a box with the world's orientation (exact entries)."""
    return (
        kind == SOLID_BOX
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
