"""Box scenes: a ray scene that is only static, world-aligned boxes, cast without its BVH.

A height scan that sees only the ground box (or a terrain of aligned boxes) needs neither
the BVH nor the solid frames the general cast composes per call. :func:`box_scene_rows`
turns such a :class:`~runtime.rays.scene.RayScene` into one row per box, which
:func:`runtime.rays.kernels.box_scene_hit_kernel` casts a ray against with the scene cast's
own rules and arithmetic (the result equals :meth:`RayScene.cast
<runtime.rays.scene.RayScene.cast>` bit for bit). Other scenes give None.
"""

from __future__ import annotations

import numpy as np

__all__ = ["box_scene_rows"]

_IDENTITY = (1.0, 0.0, 0.0, 0.0)


def box_scene_rows(
    scene, group_positions: np.ndarray, group_orientations: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows of a scene made only of static, world-aligned boxes, or None.

    Args:
        scene: a :class:`~runtime.rays.scene.RayScene`.
        group_positions: the pose of every group [stage units], shape (G, 3), world (the
            scene's fixed poses, or the static bodies' poses the caller passes to casts).
        group_orientations: their orientations (w, x, y, z), shape (G, 4).

    Returns:
        ``(boxes, actors)``: (K, BOX_COLUMNS) float64 rows and (K,) int64 actor indices, in
        the scene's solid order; None when the scene has triangles, a solid other than a
        box, or a box (or its group) not aligned with the world axes.
    """
    from runtime.rays._box_kernels import BOX_COLUMNS

    if scene.face_count != 0 or not scene.solids:
        return None
    arguments = scene.fused_arguments(1) if hasattr(scene, "fused_arguments") else None
    if arguments is None:
        return None
    (_, _, _, solid_groups, solid_kinds, solid_positions, solid_orientations, solid_params,
     _, _, solid_bounds, solid_actors, _, _, _, _, _, _, _, _) = arguments[1]  # fmt: skip
    count = len(solid_kinds)
    boxes = np.zeros((count, BOX_COLUMNS))
    for s in range(count):
        g = int(solid_groups[s])
        if int(solid_kinds[s]) != 0:  # (runtime.rays.kernels.SOLID_BOX)
            return None
        if tuple(float(v) for v in group_orientations[g]) != _IDENTITY:
            return None
        if tuple(float(v) for v in solid_orientations[s]) != _IDENTITY:
            return None
        gx, gy, gz = (float(v) for v in group_positions[g])
        px, py, pz = (float(v) for v in solid_positions[s])
        # the scene's composed solid frame for identity rotations: g + R p, R = I
        boxes[s, 0] = gx + 1.0 * px + 0.0 * py + 0.0 * pz
        boxes[s, 1] = gy + 0.0 * px + 1.0 * py + 0.0 * pz
        boxes[s, 2] = gz + 0.0 * px + 0.0 * py + 1.0 * pz
        boxes[s, 3:6] = solid_params[s]
        boxes[s, 6:9] = (gx, gy, gz)
        boxes[s, 9:12] = (px, py, pz)
        boxes[s, 12:16] = solid_bounds[s]
    return np.ascontiguousarray(boxes), np.ascontiguousarray(solid_actors, np.int64)
