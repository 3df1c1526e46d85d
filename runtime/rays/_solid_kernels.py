"""Analytic solids: exact ray entries and the "ray starts inside" rule.

Boxes, spheres, capsules and cylinders (and convex hulls, as half-spaces, for the inside
test) are hit exactly instead of as triangles: :func:`ray_solid_kernel` gives a ray's entry
distance and normal into one solid in its frame, :func:`scene_solid_hits_kernel` the closest
solid hit of every ray of a scene, and :func:`scene_inside_solid_kernel` which rays start
inside a solid (hit at distance 0 with normal ``-direction``, as PhysX scene queries do).
Solid kinds are the ``SOLID_*`` codes.
"""

from __future__ import annotations

import math

import numpy as np

from runtime._compile.jit import jit
from runtime.rays._traversal_kernels import HUGE, TINY, matrix_kernel, rotate_inverse_kernel

__all__ = [
    "SOLID_BOX",
    "SOLID_CAPSULE",
    "SOLID_CONVEX",
    "SOLID_CYLINDER",
    "SOLID_SPHERE",
    "group_inside_solid_kernel",
    "group_solid_hit_kernel",
    "inside_solid_kernel",
    "ray_solid_kernel",
    "scene_inside_solid_kernel",
    "scene_solid_hits_kernel",
]


SOLID_BOX = 0


SOLID_SPHERE = 1


SOLID_CAPSULE = 2


SOLID_CYLINDER = 3


SOLID_CONVEX = 4


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
        x, y, z = rotate_inverse_kernel(
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
def _sphere_meets_box_kernel(cx, cy, cz, r2, lo_x, lo_y, lo_z, hi_x, hi_y, hi_z):
    """Whether the sphere (centre c, squared radius r2) meets the box [lo, hi]."""
    dx = max(lo_x - cx, 0.0, cx - hi_x)
    dy = max(lo_y - cy, 0.0, cy - hi_y)
    dz = max(lo_z - cz, 0.0, cz - hi_z)
    return dx * dx + dy * dy + dz * dz <= r2


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
        wx, wy, wz = rotate_inverse_kernel(  # the inverse of q^-1: rotation by q
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
            wx, wy, wz = rotate_inverse_kernel(
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
            gx, gy, gz = rotate_inverse_kernel(
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
        lx, ly, lz = rotate_inverse_kernel(
            qw, qx, qy, qz, ox - solid_positions[s, 0], oy - solid_positions[s, 1],
            oz - solid_positions[s, 2],
        )  # fmt: skip
        ex, ey, ez = rotate_inverse_kernel(qw, qx, qy, qz, dx, dy, dz)
        t, mx, my, mz = ray_solid_kernel(kind, solid_params, s, lx, ly, lz, ex, ey, ez)
        if t < t_best:
            t_best = t
            best = s
            # solid normal to the group frame: rotation by q
            nx, ny, nz = rotate_inverse_kernel(qw, -qx, -qy, -qz, mx, my, mz)
    return t_best, best, nx, ny, nz


@jit(inline=True)
def aligned_box_entry_kernel(cx, cy, cz, hx, hy, hz, ox, oy, oz, dx, dy, dz, wix, wiy, wiz):
    """Entry of a ray into a world-aligned box (centre ``c``, half sizes ``h``), slab test.

    ``wix, wiy, wiz``: the direction's inverse (large finite values for tiny components).
    Returns ``(t, nx, ny, nz)``: the entry distance and the entry face's outward normal
    (the first axis reaching it); ``t`` is inf for a miss or an origin not outside.
    """
    ax = (cx - hx - ox) * wix
    ux = (cx + hx - ox) * wix
    ay = (cy - hy - oy) * wiy
    uy = (cy + hy - oy) * wiy
    az = (cz - hz - oz) * wiz
    uz = (cz + hz - oz) * wiz
    tx = min(ax, ux)
    ty = min(ay, uy)
    tz = min(az, uz)
    t_in = max(tx, ty, tz)
    if t_in <= 0.0 or t_in > min(max(ax, ux), max(ay, uy), max(az, uz)):
        return math.inf, 0.0, 0.0, 0.0
    nx = 0.0
    ny = 0.0
    nz = 0.0
    if tx >= ty and tx >= tz:
        nx = -1.0 if dx > 0.0 else 1.0
    elif ty >= tz:
        ny = -1.0 if dy > 0.0 else 1.0
    else:
        nz = -1.0 if dz > 0.0 else 1.0
    return t_in, nx, ny, nz


@jit(inline=True)
def group_solid_frames_kernel(
    g, qw, qx, qy, qz, group_positions, solid_ranges, solid_kinds, solid_positions,
    solid_orientations, solid_bounds, out_frames, out_rows, start,
):  # fmt: skip
    """World frames of group ``g``'s analytic solids (orientation ``qw, qx, qy, qz``).

    From row ``start`` on, ``out_frames[m] = [p(3), M(9, row-major), c(3), r]``
    (``x_solid = M^T (x - p)``, the world bounding sphere padded for rounding) and
    ``out_rows[m]`` the solid, for the group's solids other than convex ones (those are
    triangles); returns the row after the last one written. The scene cast and the fixed
    pinhole view (:mod:`runtime.rays._view_kernels`) compose their frames with it.
    """
    first = solid_ranges[g, 0]
    count = solid_ranges[g, 1]
    if count == 0:
        return start
    g00, g01, g02, g10, g11, g12, g20, g21, g22 = matrix_kernel(qw, qx, qy, qz)
    gx = group_positions[g, 0]
    gy = group_positions[g, 1]
    gz = group_positions[g, 2]
    n = start
    for s in range(first, first + count):
        if solid_kinds[s] == SOLID_CONVEX:
            continue
        s00, s01, s02, s10, s11, s12, s20, s21, s22 = matrix_kernel(
            solid_orientations[s, 0], solid_orientations[s, 1], solid_orientations[s, 2],
            solid_orientations[s, 3],
        )  # fmt: skip
        px = solid_positions[s, 0]
        py = solid_positions[s, 1]
        pz = solid_positions[s, 2]
        out_frames[n, 0] = gx + g00 * px + g01 * py + g02 * pz
        out_frames[n, 1] = gy + g10 * px + g11 * py + g12 * pz
        out_frames[n, 2] = gz + g20 * px + g21 * py + g22 * pz
        out_frames[n, 3] = g00 * s00 + g01 * s10 + g02 * s20
        out_frames[n, 4] = g00 * s01 + g01 * s11 + g02 * s21
        out_frames[n, 5] = g00 * s02 + g01 * s12 + g02 * s22
        out_frames[n, 6] = g10 * s00 + g11 * s10 + g12 * s20
        out_frames[n, 7] = g10 * s01 + g11 * s11 + g12 * s21
        out_frames[n, 8] = g10 * s02 + g11 * s12 + g12 * s22
        out_frames[n, 9] = g20 * s00 + g21 * s10 + g22 * s20
        out_frames[n, 10] = g20 * s01 + g21 * s11 + g22 * s21
        out_frames[n, 11] = g20 * s02 + g21 * s12 + g22 * s22
        cx = solid_bounds[s, 0]
        cy = solid_bounds[s, 1]
        cz = solid_bounds[s, 2]
        out_frames[n, 12] = gx + g00 * cx + g01 * cy + g02 * cz
        out_frames[n, 13] = gy + g10 * cx + g11 * cy + g12 * cz
        out_frames[n, 14] = gz + g20 * cx + g21 * cy + g22 * cz
        r = solid_bounds[s, 3]
        scale = 1.0 + r + abs(out_frames[n, 12]) + abs(out_frames[n, 13]) + abs(out_frames[n, 14])
        out_frames[n, 15] = r + 1e-9 * scale
        out_rows[n] = s
        n += 1
    return n


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
        n = group_solid_frames_kernel(
            g, group_orientations[g, 0], group_orientations[g, 1], group_orientations[g, 2],
            group_orientations[g, 3], group_positions, group_solid_ranges, solid_kinds,
            solid_positions, solid_orientations, solid_bounds, frames, rows, n,
        )  # fmt: skip
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
        wix = 1.0 / dx if abs(dx) > TINY else (HUGE if dx >= 0.0 else -HUGE)
        wiy = 1.0 / dy if abs(dy) > TINY else (HUGE if dy >= 0.0 else -HUGE)
        wiz = 1.0 / dz if abs(dz) > TINY else (HUGE if dz >= 0.0 else -HUGE)
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
                t_in, ex, ey, ez = aligned_box_entry_kernel(
                    frames[m, 0], frames[m, 1], frames[m, 2], solid_params[s, 0],
                    solid_params[s, 1], solid_params[s, 2], ox, oy, oz, dx, dy, dz, wix, wiy, wiz,
                )  # fmt: skip
                if t_in < t_best:
                    t_best = t_in
                    best = s
                    bx = ex
                    by = ey
                    bz = ez
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
