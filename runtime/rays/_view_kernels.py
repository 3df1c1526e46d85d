"""Kernels of fixed ray bundles (:mod:`runtime.rays.views`): static part cast once.

:func:`view_update_kernel` is one update of a pinhole view whose rays never move (a depth
camera mounted on a static prim): the static groups' closest hits are cached per pixel, and
only the moving groups are cast, each on the pixels its bound can cover (the projection of
the group's box at its current pose, one pixel of margin), with the cached or already found
hit as the limit. The casts use the scene cast's own routines
(:func:`~runtime.rays._wide_bvh_kernels.wide_traverse_kernel`,
:func:`~runtime.rays._solid_kernels.scene_solid_hits_kernel`,
:func:`~runtime.rays._solid_kernels.group_inside_solid_kernel`) with the same arithmetic, so
a pixel's hit equals the full scene cast's (exact ties between two groups aside: the scene
keeps the earlier group, the view the static one).

Kernels trust their inputs (checked by :class:`~runtime.rays.views.PinholeView`).
"""

from __future__ import annotations

import math

import numpy as np

from runtime._compile.jit import jit
from runtime.rays._simd import NODE_WIDTH
from runtime.rays._solid_kernels import (
    SOLID_CONVEX,
    group_inside_solid_kernel,
    scene_solid_hits_kernel,
)
from runtime.rays._traversal_kernels import (
    inverse_direction_kernel,
    matrix_kernel,
    rotate_inverse_kernel,
    store_world_box_kernel,
)
from runtime.rays._wide_bvh_kernels import NODE_ROWS, WIDE_STACK_SIZE, wide_traverse_kernel

__all__ = [
    "VIEW_SCRATCH_FLOATS",
    "VIEW_SCRATCH_INTS",
    "view_images_kernel",
    "view_moving_kernel",
    "view_update_kernel",
    "view_scratch_width",
]

VIEW_SCRATCH_INTS = 6
"""Rows of the view's int64 scratch: pixel and solid stamps, hits, gathered pixels and
their actors (P columns each), traversal stacks (``2 * WIDE_STACK_SIZE + NODE_WIDTH``)."""

VIEW_SCRATCH_FLOATS = 3
"""Rows of the view's float64 scratch: gathered limits and distances (P columns each), the
traversal's distance stack and lanes (``WIDE_STACK_SIZE + 3 * NODE_WIDTH``)."""


def view_scratch_width(pixel_count: int) -> int:
    """Columns of the view kernel's scratch arrays for ``pixel_count`` rays."""
    return max(pixel_count, 2 * WIDE_STACK_SIZE + NODE_WIDTH)


@jit(inline=True)
def _image_pixel(
    env, p, t, actor, nx, ny, nz, forward, max_distance, clipping, out_plane, out_camera,
    out_normals, out_ids,
):  # fmt: skip
    """Pixel ``p`` of world ``env``'s images from its hit (the camera image formulas)."""
    d = t
    if math.isinf(d):
        plane = math.inf
        out_normals[env, p, 0] = math.inf
        out_normals[env, p, 1] = math.inf
        out_normals[env, p, 2] = math.inf
    else:
        plane = d * forward[p]
        out_normals[env, p, 0] = nx
        out_normals[env, p, 1] = ny
        out_normals[env, p, 2] = nz
    if clipping == 1:
        d = min(d, max_distance)
        plane = min(plane, max_distance)
    elif clipping == 2:
        d = 0.0 if d > max_distance else d
        plane = 0.0 if plane > max_distance else plane
    out_plane[env, p] = plane
    out_camera[env, p] = d
    out_ids[env, p] = actor


@jit
def view_images_kernel(
    env,
    distances,
    actors,
    normals,
    forward,
    max_distance,
    clipping,
    out_plane,
    out_camera,
    out_normals,
    out_ids,
):
    """Every pixel of world ``env``'s images from per-pixel hits.

    Args:
        env: row of the outputs to write.
        distances: (P,) hit distance [m] or inf.
        actors: (P,) hit actor or -1, int64.
        normals: (P, 3) unit world normals.
        forward: (P,) each pixel ray's component along the optical axis.
        max_distance: the largest distance [m] (clipping).
        clipping: 0 none (misses inf), 1 max (misses and farther: max_distance),
            2 zero (misses and farther: 0).
        out_plane: (N, P) distance to the image plane [m] (row ``env`` written).
        out_camera: (N, P) distance to the camera [m] (row ``env`` written).
        out_normals: (N, P, 3) normals, misses inf (row ``env`` written).
        out_ids: (N, P) hit actors, int64 (row ``env`` written).
    """
    for p in range(distances.shape[0]):
        _image_pixel(
            env, p, distances[p], actors[p], normals[p, 0], normals[p, 1], normals[p, 2],
            forward, max_distance, clipping, out_plane, out_camera, out_normals, out_ids,
        )  # fmt: skip


@jit
def view_update_kernel(
    env,
    body_positions,
    body_orientations,
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    wide_roots,
    group_local_boxes,
    face_actors,
    face_normals,
    double_sided,
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
    solid_ranges_by_group,
    view_f,
    view_i,
    moving_groups,
    group_rows,
    group_bounds,
    origins,
    directions,
    inverse_directions,
    max_distances,
    forward,
    static_t,
    static_actors,
    static_normals,
    io_t,
    io_actors,
    io_normals,
    io_group_positions,
    io_group_orientations,
    io_world_boxes,
    io_changed,
    io_changed_count,
    scratch_i,
    scratch_f,
    scratch_3,
    out_plane,
    out_camera,
    out_normals,
    out_ids,
):
    """One update of world ``env``'s pinhole view: moving groups cast where they can be seen.

    On entry ``io_t`` / ``io_actors`` / ``io_normals`` hold the static hits (and do again on
    return); the pixels whose images differ from the static ones are listed per world in
    ``io_changed`` (count -1: every pixel, e.g. before the first update).

    Steps: the moving groups' poses (``group_rows`` into the body pose arrays) and world
    boxes; the "camera starts inside a solid" rule (the first containing solid in solid
    order, static ones cached in ``view_i[3]``: every pixel at distance 0, normal
    ``-direction``); per moving group with triangles, its pixel rectangle (the projection
    of its box, ``group_bounds``, one pixel of margin; the whole image when a corner is not
    in front of the camera), each pixel's ray through the group's world box and BVH with
    the pixel's best hit so far as the limit; the analytic solids of the moving groups
    group by group on the rectangle of its analytic solids' bounding spheres
    (:func:`scene_solid_hits_kernel` on the gathered rays); the images of the pixels that
    changed now or last update.

    Args:
        env: the world (row of ``io_changed`` and of the images).
        body_positions: body origins [m], shape (B, 3), float64, world (this world's).
        body_orientations: body orientations (w, x, y, z), shape (B, 4), float64.
        wide_nodes: the scene's wide BVH nodes, shape (M, 8, 8), float32.
        leaf_triangles: the scene's leaf blocks, flat float64.
        leaf_ids: global face per leaf lane, shape (L, 8), int64.
        wide_roots: root per group (-1 empty), shape (G,), int64.
        group_local_boxes: group-frame triangle box per group, shape (G, 6), float64.
        face_actors: actor per face, shape (F,), int64.
        face_normals: unit front normal per face, group frame, shape (F, 3), float64.
        double_sided: back faces hit too (normals flipped towards the ray).
        solid_kinds: ``SOLID_*`` per solid, shape (S,), int64.
        solid_positions: solid origin, group frame, shape (S, 3), float64.
        solid_orientations: solid orientation, group frame, shape (S, 4), float64.
        solid_params: solid parameters, shape (S, 3), float64.
        solid_plane_ranges: (first plane, count) per solid, shape (S, 2), int64.
        planes: convex half-spaces, shape (Q, 4), float64.
        solid_bounds: bounding sphere per solid, group frame, shape (S, 4), float64.
        solid_actors: actor per solid, shape (S,), int64.
        group_solid_ranges: (first solid, count) per group, shape (G, 2), int64.
        group_solid_boxes: group-frame box around each group's solids, shape (G, 6).
        solid_ranges_by_group: per moving group k, ``group_solid_ranges`` with every
            other group's count 0, shape (K, G, 2), int64.
        view_f: camera position (3), orientation (4, w x y z; x forward, y left, z up),
            fx, fy, cx, cy [pixels], max distance [m]; shape (12,), float64.
        view_i: width, height, clipping, first static solid containing the camera (-1
            none), calls so far (updated); shape (5,), int64.
        moving_groups: the moving groups, shape (K,), int64.
        group_rows: row of each moving group in the body pose arrays, shape (K,), int64.
        group_bounds: group-frame boxes ``[lo, hi]`` of each moving group's triangles and
            of its analytic solids (the bounding spheres' box), shape (K, 12), float64.
        origins: ray origins (all the camera position) [m], shape (P, 3), float64, world.
        directions: unit ray directions, shape (P, 3), float64, world.
        inverse_directions: their ``inverse_direction_kernel`` values, shape (P, 3).
        max_distances: largest accepted distance per ray [m], shape (P,), float64.
        forward: each ray's component along the optical axis, shape (P,), float64.
        static_t: static hit distance or inf, shape (P,), float64.
        static_actors: static hit actor or -1, shape (P,), int64.
        static_normals: static hit normal, shape (P, 3), float64.
        io_t: working distances, shape (P,), float64 (static on entry and return).
        io_actors: working actors, shape (P,), int64 (the same).
        io_normals: working normals, shape (P, 3), float64 (the same).
        io_group_positions: group origins, shape (G, 3), float64 (moving rows written).
        io_group_orientations: group orientations, shape (G, 4) (moving rows written).
        io_world_boxes: group world boxes, shape (G, 6) (moving rows written).
        io_changed: per world, the pixels whose images differ from the static ones,
            shape (N, P), int64 (row ``env`` updated).
        io_changed_count: their count per world (-1: every pixel), shape (N,), int64.
        scratch_i: shape (VIEW_SCRATCH_INTS, view_scratch_width(P)), int64 (rows 0 and 1:
            stamps, kept between calls; zeros before the first).
        scratch_f: shape (VIEW_SCRATCH_FLOATS, view_scratch_width(P)), float64.
        scratch_3: shape (3, P, 3), float64.
        out_plane: (N, P) distance to the image plane [m] (row ``env`` updated).
        out_camera: (N, P) distance to the camera [m] (row ``env`` updated).
        out_normals: (N, P, 3) world normals, misses inf (row ``env`` updated).
        out_ids: (N, P) hit actors or -1 (row ``env`` updated).
    """
    pixel_count = directions.shape[0]
    clipping = view_i[2]
    max_distance = view_f[11]
    # stamps: one value per call (view_i[4] counts the calls), so nothing needs clearing
    stamp = view_i[4] + 1
    view_i[4] = stamp
    stamp_pixels = scratch_i[0]
    hits = scratch_i[2]
    gathered = scratch_i[3]
    g_actors_all = scratch_i[4]
    gather_max = scratch_f[0]
    gather_t = scratch_f[1]
    moving_count = moving_groups.shape[0]
    # -- 1. moving group poses and world boxes
    for k in range(moving_count):
        g = moving_groups[k]
        b = group_rows[k]
        for a in range(3):
            io_group_positions[g, a] = body_positions[b, a]
        for a in range(4):
            io_group_orientations[g, a] = body_orientations[b, a]
        if wide_roots[g] >= 0:
            store_world_box_kernel(
                io_group_orientations[g, 0], io_group_orientations[g, 1],
                io_group_orientations[g, 2], io_group_orientations[g, 3],
                io_group_positions[g, 0], io_group_positions[g, 1], io_group_positions[g, 2],
                group_local_boxes, g, 0, io_world_boxes, g, 0,
            )  # fmt: skip
    # -- 2. the camera inside a solid: the first containing solid in solid order
    ox = origins[0, 0] if pixel_count > 0 else 0.0
    oy = origins[0, 1] if pixel_count > 0 else 0.0
    oz = origins[0, 2] if pixel_count > 0 else 0.0
    inside = view_i[3]
    for k in range(moving_count):
        g = moving_groups[k]
        count = group_solid_ranges[g, 1]
        if count == 0:
            continue
        first = group_solid_ranges[g, 0]
        if inside >= 0 and inside < first:
            continue
        gx, gy, gz = rotate_inverse_kernel(
            io_group_orientations[g, 0], io_group_orientations[g, 1],
            io_group_orientations[g, 2], io_group_orientations[g, 3],
            ox - io_group_positions[g, 0], oy - io_group_positions[g, 1],
            oz - io_group_positions[g, 2],
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
            solid_kinds, solid_positions, solid_orientations, solid_params,
            solid_plane_ranges, planes, solid_bounds, first, count, gx, gy, gz,
        )  # fmt: skip
        if s >= 0 and (inside < 0 or s < inside):
            inside = s
    if inside >= 0:
        actor = solid_actors[inside]
        for p in range(pixel_count):
            _image_pixel(
                env, p, 0.0, actor, -directions[p, 0], -directions[p, 1], -directions[p, 2],
                forward, max_distance, clipping, out_plane, out_camera, out_normals, out_ids,
            )  # fmt: skip
        io_changed_count[env] = -1
        return
    # -- 3. triangles of the moving groups on their pixel rectangles; the rectangles of
    # their analytic solids
    hit_count = view_moving_kernel(
        stamp, ox, oy, oz, wide_nodes, leaf_triangles, leaf_ids, wide_roots, face_actors,
        face_normals, double_sided, solid_kinds, solid_ranges_by_group, view_f, view_i,
        moving_groups, group_bounds, directions, inverse_directions, max_distances, io_t,
        io_actors, io_normals, io_group_positions, io_group_orientations, io_world_boxes,
        scratch_i, scratch_f,
    )  # fmt: skip
    # -- 4. analytic solids of the moving groups, group by group on their rectangles
    width = view_i[0]
    solid_rects = scratch_i[1]
    for k in range(moving_count):
        u0 = solid_rects[4 * k]
        u1 = solid_rects[4 * k + 1]
        v0 = solid_rects[4 * k + 2]
        v1 = solid_rects[4 * k + 3]
        if u0 > u1 or v0 > v1:
            continue
        count = 0
        for v in range(v0, v1 + 1):
            for u in range(u0, u1 + 1):
                gathered[count] = v * width + u
                count += 1
        g_origins = scratch_3[0, :count]
        g_directions = scratch_3[1, :count]
        g_normals = scratch_3[2, :count]
        g_max = gather_max[:count]
        g_t = gather_t[:count]
        g_actors = g_actors_all[:count]
        for j in range(count):
            p = gathered[j]
            for a in range(3):
                g_origins[j, a] = origins[p, a]
                g_directions[j, a] = directions[p, a]
                g_normals[j, a] = io_normals[p, a]
            g_max[j] = max_distances[p]
            g_t[j] = io_t[p]
            g_actors[j] = -2  # (a solid hit writes its actor)
        scene_solid_hits_kernel(
            solid_kinds, solid_positions, solid_orientations, solid_params, solid_bounds,
            solid_actors, solid_ranges_by_group[k], group_solid_boxes, io_group_positions,
            io_group_orientations, g_origins, g_directions, g_max, g_t, g_actors, g_normals,
        )  # fmt: skip
        for j in range(count):
            if g_actors[j] == -2:
                continue
            p = gathered[j]
            io_t[p] = g_t[j]
            io_actors[p] = g_actors[j]
            for a in range(3):
                io_normals[p, a] = g_normals[j, a]
            if stamp_pixels[p] != stamp:
                stamp_pixels[p] = stamp
                hits[hit_count] = p
                hit_count += 1
    # -- 5. images: last update's changed pixels, then this update's hits
    changed = io_changed[env]
    previous = io_changed_count[env]
    if previous < 0:
        for p in range(pixel_count):
            _image_pixel(
                env, p, io_t[p], io_actors[p], io_normals[p, 0], io_normals[p, 1],
                io_normals[p, 2], forward, max_distance, clipping, out_plane, out_camera,
                out_normals, out_ids,
            )  # fmt: skip
    else:
        for j in range(previous):
            p = changed[j]
            _image_pixel(
                env, p, io_t[p], io_actors[p], io_normals[p, 0], io_normals[p, 1],
                io_normals[p, 2], forward, max_distance, clipping, out_plane, out_camera,
                out_normals, out_ids,
            )  # fmt: skip
        for j in range(hit_count):
            p = hits[j]
            _image_pixel(
                env, p, io_t[p], io_actors[p], io_normals[p, 0], io_normals[p, 1],
                io_normals[p, 2], forward, max_distance, clipping, out_plane, out_camera,
                out_normals, out_ids,
            )  # fmt: skip
    # -- 6. remember this update's pixels; the working hits back to the static ones
    for j in range(hit_count):
        p = hits[j]
        changed[j] = p
        io_t[p] = static_t[p]
        io_actors[p] = static_actors[p]
        for a in range(3):
            io_normals[p, a] = static_normals[p, a]
    io_changed_count[env] = hit_count


@jit(inline=True)
def _pixel_rectangle(
    view_f, group_positions, group_orientations, g, group_bounds, k, col, fx, fy, cx, cy,
    width, height,
):  # fmt: skip
    """Columns u0..u1 and rows v0..v1 whose rays may meet a box of group ``g`` (may be empty).

    The box is ``group_bounds[k, col:col + 6]`` (group frame).

    The box's 8 corners at the group's pose are projected through the pinhole; the
    rectangle around them grows by one pixel on every side (rounding of the rays' own
    directions). A corner not in front of the camera gives the whole image.
    """
    qw = group_orientations[g, 0]
    qx = group_orientations[g, 1]
    qy = group_orientations[g, 2]
    qz = group_orientations[g, 3]
    u_lo = math.inf
    u_hi = -math.inf
    v_lo = math.inf
    v_hi = -math.inf
    whole = False
    for c in range(8):
        lx = group_bounds[k, col + 3] if c & 1 else group_bounds[k, col]
        ly = group_bounds[k, col + 4] if c & 2 else group_bounds[k, col + 1]
        lz = group_bounds[k, col + 5] if c & 4 else group_bounds[k, col + 2]
        # corner to world (rotation by q), then to the camera frame (inverse camera rotation)
        wx, wy, wz = rotate_inverse_kernel(qw, -qx, -qy, -qz, lx, ly, lz)
        wx += group_positions[g, 0] - view_f[0]
        wy += group_positions[g, 1] - view_f[1]
        wz += group_positions[g, 2] - view_f[2]
        x, y, z = rotate_inverse_kernel(view_f[3], view_f[4], view_f[5], view_f[6], wx, wy, wz)
        if not x > 1e-9 * (1.0 + abs(y) + abs(z)):
            whole = True
            break
        u = cx - fx * y / x
        v = cy - fy * z / x
        u_lo = min(u_lo, u)
        u_hi = max(u_hi, u)
        v_lo = min(v_lo, v)
        v_hi = max(v_hi, v)
    if whole:
        return 0, width - 1, 0, height - 1
    # (the bounds stay finite: x is positive and not tiny against y and z)
    u0 = max(int(math.floor(max(u_lo, -2.0))) - 1, 0)
    u1 = min(int(math.ceil(min(u_hi, width + 2.0))) + 1, width - 1)
    v0 = max(int(math.floor(max(v_lo, -2.0))) - 1, 0)
    v1 = min(int(math.ceil(min(v_hi, height + 2.0))) + 1, height - 1)
    return u0, u1, v0, v1


@jit(nrt=False)
def view_moving_kernel(
    stamp,
    ox,
    oy,
    oz,
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    wide_roots,
    face_actors,
    face_normals,
    double_sided,
    solid_kinds,
    solid_ranges_by_group,
    view_f,
    view_i,
    moving_groups,
    group_bounds,
    directions,
    inverse_directions,
    max_distances,
    io_t,
    io_actors,
    io_normals,
    group_positions,
    group_orientations,
    world_boxes,
    scratch_i,
    scratch_f,
):
    """Step 3 of :func:`view_update_kernel`: the moving groups' triangles, solid rays listed.

    Without Numba's runtime (no reference counting of the arrays in the pixel loops).
    Arguments as :func:`view_update_kernel` documents them; ``stamp`` is this call's
    stamp, (ox, oy, oz) the camera position. The pixels whose hit changed are listed in
    ``scratch_i[2]``; each moving group's rectangle of analytic solids (u0, u1, v0, v1;
    empty when u0 > u1) in ``scratch_i[1, 4 k : 4 k + 4]``.

    Returns:
        The length of the list of changed pixels.
    """
    width = view_i[0]
    height = view_i[1]
    stamp_pixels = scratch_i[0]
    solid_rects = scratch_i[1]
    hits = scratch_i[2]
    stack_ref = scratch_i[5, :WIDE_STACK_SIZE]
    stack_count = scratch_i[5, WIDE_STACK_SIZE : 2 * WIDE_STACK_SIZE]
    order_c = scratch_i[5, 2 * WIDE_STACK_SIZE : 2 * WIDE_STACK_SIZE + NODE_WIDTH]
    stack_t = scratch_f[2, :WIDE_STACK_SIZE]
    enter = scratch_f[2, WIDE_STACK_SIZE : WIDE_STACK_SIZE + NODE_WIDTH]
    leaf_t = scratch_f[2, WIDE_STACK_SIZE + NODE_WIDTH : WIDE_STACK_SIZE + 2 * NODE_WIDTH]
    order_t = scratch_f[2, WIDE_STACK_SIZE + 2 * NODE_WIDTH : WIDE_STACK_SIZE + 3 * NODE_WIDTH]
    w = NODE_WIDTH
    record = NODE_ROWS * w
    boxes = wide_nodes.reshape(wide_nodes.size)
    refs = wide_nodes.view(np.int32).reshape(wide_nodes.size)[6 * w :]
    corners = leaf_triangles.view(np.float32)
    flat_ids = leaf_ids.reshape(leaf_ids.size)
    group_count = wide_roots.shape[0]
    moving_count = moving_groups.shape[0]
    fx = view_f[7]
    fy = view_f[8]
    cx = view_f[9]
    cy = view_f[10]
    hit_count = 0
    for k in range(moving_count):
        g = moving_groups[k]
        has_triangles = wide_roots[g] >= 0
        has_solids = False
        first = solid_ranges_by_group[k, g, 0]
        for s in range(first, first + solid_ranges_by_group[k, g, 1]):
            if solid_kinds[s] != SOLID_CONVEX:
                has_solids = True
        # the pixel rectangle of the group's analytic solids (empty: none)
        u0, u1, v0, v1 = 1, 0, 1, 0
        if has_solids:
            u0, u1, v0, v1 = _pixel_rectangle(
                view_f, group_positions, group_orientations, g, group_bounds, k, 6, fx,
                fy, cx, cy, width, height,
            )  # fmt: skip
        solid_rects[4 * k] = u0
        solid_rects[4 * k + 1] = u1
        solid_rects[4 * k + 2] = v0
        solid_rects[4 * k + 3] = v1
        if not has_triangles:
            continue
        u0, u1, v0, v1 = _pixel_rectangle(
            view_f, group_positions, group_orientations, g, group_bounds, k, 0, fx, fy,
            cx, cy, width, height,
        )  # fmt: skip
        qw = group_orientations[g, 0]
        qx = group_orientations[g, 1]
        qy = group_orientations[g, 2]
        qz = group_orientations[g, 3]
        f0, f1, f2, f3, f4, f5, f6, f7, f8 = matrix_kernel(qw, qx, qy, qz)
        # the rays share their origin: its offsets from the group and its world box
        px = ox - group_positions[g, 0]
        py = oy - group_positions[g, 1]
        pz = oz - group_positions[g, 2]
        lox = f0 * px + f3 * py + f6 * pz
        loy = f1 * px + f4 * py + f7 * pz
        loz = f2 * px + f5 * py + f8 * pz
        box_lo_x = world_boxes[g, 0] - ox
        box_lo_y = world_boxes[g, 1] - oy
        box_lo_z = world_boxes[g, 2] - oz
        box_hi_x = world_boxes[g, 3] - ox
        box_hi_y = world_boxes[g, 4] - oy
        box_hi_z = world_boxes[g, 5] - oz
        root = wide_roots[g]
        for v in range(v0, v1 + 1):
            for u in range(u0, u1 + 1):
                p = v * width + u
                t_best = min(io_t[p], max_distances[p])
                wdx = directions[p, 0]
                wdy = directions[p, 1]
                wdz = directions[p, 2]
                if group_count > 1:  # the scene cast's broad phase
                    wix = inverse_directions[p, 0]
                    wiy = inverse_directions[p, 1]
                    wiz = inverse_directions[p, 2]
                    ax = box_lo_x * wix
                    bx = box_hi_x * wix
                    ay = box_lo_y * wiy
                    by = box_hi_y * wiy
                    az = box_lo_z * wiz
                    bz = box_hi_z * wiz
                    enter_t = max(min(ax, bx), min(ay, by), min(az, bz), 0.0)
                    if enter_t > min(max(ax, bx), max(ay, by), max(az, bz), t_best):
                        continue
                ldx = f0 * wdx + f3 * wdy + f6 * wdz
                ldy = f1 * wdx + f4 * wdy + f7 * wdz
                ldz = f2 * wdx + f5 * wdy + f8 * wdz
                t, face = wide_traverse_kernel(
                    boxes, record, refs, record, leaf_triangles, corners, flat_ids, root,
                    lox, loy, loz, ldx, ldy, ldz, inverse_direction_kernel(ldx),
                    inverse_direction_kernel(ldy), inverse_direction_kernel(ldz), t_best,
                    double_sided, stack_ref, stack_count, stack_t, enter, leaf_t, order_t,
                    order_c,
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
                io_actors[p] = face_actors[face]
                io_normals[p, 0] = nx
                io_normals[p, 1] = ny
                io_normals[p, 2] = nz
                if stamp_pixels[p] != stamp:
                    stamp_pixels[p] = stamp
                    hits[hit_count] = p
                    hit_count += 1
    return hit_count
