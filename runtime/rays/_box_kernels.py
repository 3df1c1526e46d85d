"""Kernels of box scenes (:mod:`runtime.rays.box_scenes`): world-aligned boxes, no BVH.

A scene whose colliders are only static boxes aligned with the world axes (a ground box, a
table's boards) is cast exactly without its BVH, solid frames or scratch:
:func:`box_scene_hit_kernel` is one ray's closest hit. It computes what
:func:`~runtime.rays._solid_kernels.scene_solid_hits_kernel` (aligned boxes' slab test and
entry face) and :func:`~runtime.rays._solid_kernels.scene_inside_solid_kernel` (the "ray
starts inside a solid" rule, the box's bounding-sphere reject included) compute for such a
scene, with the same arithmetic, so the hits equal the scene cast's bit for bit.

Kernels trust their inputs (rows built by :func:`runtime.rays.box_scenes.box_scene_rows`).
"""

from __future__ import annotations

import math

from runtime._compile.jit import jit
from runtime.rays._solid_kernels import aligned_box_entry_kernel
from runtime.rays._traversal_kernels import HUGE, TINY

__all__ = ["BOX_COLUMNS", "box_scene_hit_kernel"]

BOX_COLUMNS = 16
"""Columns of a box row: world position p (the scene's composed solid frame) (3), half
extents h (3), group position g (3), solid position s in the group (3), bounding sphere
centre in the group (3) and radius (1)."""


@jit(inline=True)
def box_scene_hit_kernel(boxes, actors, ox, oy, oz, dx, dy, dz, max_distance):
    """Closest hit of one ray in a box scene (the scene cast's rules and arithmetic).

    Entering hits closer than ``max_distance`` (the first box in row order wins a tie; the
    entry face is the first axis reaching the entry distance); a ray starting inside a box
    (the first in row order) hits it at 0 with normal ``-direction``.

    Args:
        boxes: box rows, shape (K, BOX_COLUMNS), float64 (see :data:`BOX_COLUMNS`).
        actors: actor index of each box, shape (K,), int64.
        ox: ray origin x [stage units], world.
        oy: ray origin y.
        oz: ray origin z.
        dx: unit direction x, world.
        dy: direction y.
        dz: direction z.
        max_distance: largest accepted distance [stage units].

    Returns:
        ``(t, actor, nx, ny, nz)``: distance (inf on a miss), actor (-1 on a miss), world
        normal (zeros on a miss).
    """
    count = boxes.shape[0]
    for k in range(count):
        # inside: the point in the group frame (identity rotation), then the solid frame
        gx = ox - boxes[k, 6]
        gy = oy - boxes[k, 7]
        gz = oz - boxes[k, 8]
        bx = gx - boxes[k, 12]
        by = gy - boxes[k, 13]
        bz = gz - boxes[k, 14]
        if bx * bx + by * by + bz * bz > boxes[k, 15] * boxes[k, 15]:
            continue
        if (
            abs(gx - boxes[k, 9]) <= boxes[k, 3]
            and abs(gy - boxes[k, 10]) <= boxes[k, 4]
            and abs(gz - boxes[k, 11]) <= boxes[k, 5]
        ):
            return 0.0, actors[k], -dx, -dy, -dz
    t_best = max_distance
    best = -1
    nx = 0.0
    ny = 0.0
    nz = 0.0
    wix = 1.0 / dx if abs(dx) > TINY else (HUGE if dx >= 0.0 else -HUGE)
    wiy = 1.0 / dy if abs(dy) > TINY else (HUGE if dy >= 0.0 else -HUGE)
    wiz = 1.0 / dz if abs(dz) > TINY else (HUGE if dz >= 0.0 else -HUGE)
    for k in range(count):
        t_in, fx, fy, fz = aligned_box_entry_kernel(
            boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3], boxes[k, 4], boxes[k, 5],
            ox, oy, oz, dx, dy, dz, wix, wiy, wiz,
        )  # fmt: skip
        if t_in < t_best:
            t_best = t_in
            best = k
            nx = fx
            ny = fy
            nz = fz
    if best < 0:
        return math.inf, -1, 0.0, 0.0, 0.0
    return t_best, actors[best], nx, ny, nz
