"""Depth images of a fixed pinhole camera: the static part of the scene cast once.

A camera mounted on a static prim casts the same rays at every update; only the moving
groups of the :class:`~runtime.rays.scene.RayScene` can change what they see.
:class:`PinholeView` casts the static groups once (closest hit, actor and normal per
pixel) and, per update and world, casts each moving group only on the pixels its bound can
cover: the projection of the group's box at its current pose into the image, one pixel of
margin, with the pixel's best hit so far as the limit. It then rewrites only the pixels
whose result changed since the world's last update.

The casts are the scene cast's own routines with the same arithmetic, so each pixel's hit
(distance, actor, normal) equals :meth:`RayScene.cast <runtime.rays.scene.RayScene.cast>`
of the same ray with the same body poses (an exact tie in distance between a static and a
moving group aside: the scene keeps the earlier group, the view the static one). The
"camera starts inside a solid" rule is applied as the scene applies it (every pixel at
distance 0, normal ``-direction``, the first containing solid's actor).

Only the Numba backend's scenes are supported (:meth:`PinholeView.supports`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from runtime._compile.jit import compiled_entry

__all__ = ["PinholeView"]


class PinholeView:
    """The depth images of one fixed pinhole camera over a ray scene, N worlds.

    Args:
        scene: the :class:`~runtime.rays.scene.RayScene` (Numba backend).
        position: camera position [stage units], shape (3,), world.
        orientation: camera orientation (w, x, y, z), "world" convention (x forward,
            y left, z up), shape (4,).
        directions: unit ray directions, row-major pixels (``v * width + u``), shape
            (P, 3), world; the ray of pixel (u, v) must go through ``(u, v)`` of the
            ``intrinsics`` (the camera patterns' rays do).
        width: image width W [pixels].
        height: image height H [pixels] (P = W * H).
        intrinsics: ``(fx, fy, cx, cy)`` [pixels].
        max_distance: largest accepted hit distance [stage units].
        group_rows: per scene group, the row of its body in the pose arrays passed to
            :meth:`update` (-1: the group does not move), shape (G,), int.
        group_positions: pose of each group that does not move [stage units], shape
            (G, 3), world (rows of moving groups unused).
        group_orientations: their orientations (w, x, y, z), shape (G, 4).
        forward: each ray's component along the optical axis, shape (P,).
        clipping: 0 none (misses inf), 1 max (misses and farther: ``max_distance``),
            2 zero (misses and farther: 0).
        num_envs: worlds N (each keeps its own list of changed pixels).

    Raises:
        ValueError: the scene is not a Numba-backend scene, or an array has the wrong
            shape.
    """

    def __init__(
        self,
        scene,
        position: np.ndarray,
        orientation: np.ndarray,
        directions: np.ndarray,
        width: int,
        height: int,
        intrinsics: Sequence[float],
        max_distance: float,
        group_rows: np.ndarray,
        group_positions: np.ndarray,
        group_orientations: np.ndarray,
        forward: np.ndarray,
        clipping: int = 0,
        num_envs: int = 1,
    ) -> None:
        from runtime.rays import _view_kernels as kernels
        from runtime.rays._scene_cast_kernels import scene_cast_kernel
        from runtime.rays._solid_kernels import SOLID_CONVEX, scene_inside_solid_kernel

        if not self.supports(scene):
            raise ValueError("PinholeView needs a RayScene with the Numba backend")
        width, height = int(width), int(height)
        pixels = width * height
        directions = np.ascontiguousarray(directions, np.float64)
        forward = np.ascontiguousarray(forward, np.float64)
        g = scene.group_count
        group_rows = np.ascontiguousarray(group_rows, np.int64)
        group_positions = np.ascontiguousarray(np.array(group_positions, np.float64))
        group_orientations = np.ascontiguousarray(np.array(group_orientations, np.float64))
        for name, array, shape in (
            ("directions", directions, (pixels, 3)),
            ("forward", forward, (pixels,)),
            ("group_rows", group_rows, (g,)),
            ("group_positions", group_positions, (g, 3)),
            ("group_orientations", group_orientations, (g, 4)),
        ):
            if array.shape != shape:
                raise ValueError(f"{name}: expected shape {shape}, got {array.shape}")
        self.scene = scene
        self.width, self.height = width, height
        self.num_envs = int(num_envs)
        head, tail = scene.fused_arguments(pixels)
        b = scene.backend
        (face_groups, face_actors, face_normals, solid_groups, solid_kinds, solid_positions,
         solid_orientations, solid_params, solid_plane_ranges, planes, solid_bounds,
         solid_actors, group_solid_ranges, group_solid_boxes, double_sided, _, _, _, _,
         _) = tail  # fmt: skip
        roots = np.asarray(b.wide_roots, np.int64)
        local_boxes = np.ascontiguousarray(b.local_boxes, np.float64)
        moving = np.flatnonzero(group_rows >= 0)
        self.moving_groups = np.ascontiguousarray(moving, np.int64)
        origins = np.ascontiguousarray(np.tile(np.asarray(position, np.float64), (pixels, 1)))
        max_distances = np.full(pixels, float(max_distance))
        # -- the static cast: the scene's own kernel with the moving groups left out
        static_roots = roots.copy()
        static_roots[moving] = -1
        static_ranges_all = np.array(group_solid_ranges, np.int64).reshape(g, 2)
        static_ranges = static_ranges_all.copy()
        static_ranges[moving, 1] = 0
        ranges_by_group = np.zeros((moving.size, g, 2), np.int64)
        for k, group in enumerate(moving):
            ranges_by_group[k, group] = np.reshape(group_solid_ranges, (g, 2))[group]
        self._positions = group_positions.copy()
        self._orientations = group_orientations.copy()
        self._world_boxes = np.zeros((g, 6))
        self.static_distances = np.empty(pixels)
        self.static_actors = np.empty(pixels, np.int64)
        self.static_normals = np.empty((pixels, 3))
        scene_cast_kernel(
            b.wide_nodes, b.leaf_triangles, b.leaf_ids, static_roots, local_boxes,
            np.full(g, -1, np.int64), np.zeros((0, 3)), np.zeros((0, 4)), face_groups,
            face_actors, face_normals, solid_groups, solid_kinds, solid_positions,
            solid_orientations, solid_params, solid_plane_ranges, planes, solid_bounds,
            solid_actors, static_ranges, group_solid_boxes, origins, directions,
            max_distances, double_sided, self._positions, self._orientations,
            self._world_boxes, np.empty(pixels, np.int64), np.empty(pixels, np.int64),
            self.static_distances, self.static_actors, self.static_normals, 1,
        )  # fmt: skip
        inside = np.empty(1, np.int64)
        scene_inside_solid_kernel(
            solid_groups, solid_kinds, solid_positions, solid_orientations, solid_params,
            solid_plane_ranges, planes, solid_bounds, static_ranges, group_solid_boxes,
            self._positions, self._orientations, origins[:1], inside,
        )  # fmt: skip
        # -- bounds of the moving groups, group frame: their triangles' box, and the box
        # around the bounding spheres of their analytic solids (empty: lo > hi)
        bounds = np.zeros((moving.size, 12))
        bounds[:, 6:9] = np.inf
        bounds[:, 9:] = -np.inf
        kinds = np.asarray(solid_kinds)
        sphere_bounds = np.asarray(solid_bounds).reshape(-1, 4)
        for k, group in enumerate(moving):
            if roots[group] >= 0:
                bounds[k, :6] = local_boxes[group]
            first, count = static_ranges_all[group]
            for s in range(first, first + count):
                if kinds[s] == SOLID_CONVEX:
                    continue  # (their triangles are in the triangle box)
                c, r = sphere_bounds[s, :3], sphere_bounds[s, 3]
                bounds[k, 6:9] = np.minimum(bounds[k, 6:9], c - r)
                bounds[k, 9:] = np.maximum(bounds[k, 9:], c + r)
        with np.errstate(divide="ignore"):  # (inverse_direction_kernel's values)
            inverse = np.where(np.abs(directions) > 1e-30, 1.0 / directions, 0.0)
        inverse[np.abs(directions) <= 1e-30] = 1e30
        inverse[(np.abs(directions) <= 1e-30) & (directions < 0.0)] = -1e30
        fx, fy, cx, cy = (float(v) for v in intrinsics)
        view_f = np.array(
            [
                *np.asarray(position, np.float64),
                *np.asarray(orientation, np.float64),
                fx,
                fy,
                cx,
                cy,
                float(max_distance),
            ]  # fmt: skip
        )
        self._view_i = np.array([width, height, int(clipping), int(inside[0]), 0], np.int64)
        self._changed = np.zeros((self.num_envs, pixels), np.int64)
        self._changed_count = np.full(self.num_envs, -1, np.int64)
        columns = kernels.view_scratch_width(pixels)
        self._work = (
            self.static_distances.copy(),
            self.static_actors.copy(),
            self.static_normals.copy(),
        )
        self._kernel = kernels.view_update_kernel
        self._entry = None  # the compiled entry point, after the first call
        self._arguments_scene = (
            b.wide_nodes, b.leaf_triangles, b.leaf_ids, roots, local_boxes, face_actors,
            face_normals, double_sided, solid_kinds, solid_positions, solid_orientations,
            solid_params, solid_plane_ranges, planes, solid_bounds, solid_actors,
            np.ascontiguousarray(np.reshape(group_solid_ranges, (g, 2)), np.int64),
            group_solid_boxes, ranges_by_group, view_f, self._view_i,
            self.moving_groups, np.ascontiguousarray(group_rows[moving]), bounds, origins,
            directions, inverse, max_distances, forward, self.static_distances, self.static_actors,
            self.static_normals, *self._work, self._positions, self._orientations,
            self._world_boxes, self._changed, self._changed_count,
            np.zeros((kernels.VIEW_SCRATCH_INTS, columns), np.int64),
            np.zeros((kernels.VIEW_SCRATCH_FLOATS, columns)), np.zeros((3, pixels, 3)),
        )  # fmt: skip

    @staticmethod
    def supports(scene) -> bool:
        """Whether ``scene`` can be viewed (a RayScene whose backend is Numba's BVH)."""
        arguments = getattr(scene, "fused_arguments", None)
        return arguments is not None and arguments(1) is not None

    def invalidate(self, env: int | None = None) -> None:
        """Rewrite every pixel of world ``env`` (None: every world) at its next update."""
        if env is None:
            self._changed_count[:] = -1
        else:
            self._changed_count[env] = -1

    def update(
        self,
        env: int,
        body_positions: np.ndarray,
        body_orientations: np.ndarray,
        out_plane: np.ndarray,
        out_camera: np.ndarray,
        out_normals: np.ndarray,
        out_actors: np.ndarray,
    ) -> None:
        """World ``env``'s images at the given body poses (only changed pixels written).

        The output arrays must be the same ones at every update of a world (the view
        rewrites only the pixels that changed since that world's last update; call
        :meth:`invalidate` after writing to them).

        Args:
            env: the world (row of the outputs).
            body_positions: body origins [stage units], shape (B, 3), float64, world (rows
                per ``group_rows``).
            body_orientations: body orientations (w, x, y, z), shape (B, 4), float64.
            out_plane: distance to the image plane, shape (N, P), float64 (row updated).
            out_camera: distance to the camera, shape (N, P), float64 (row updated).
            out_normals: world normals (misses inf), shape (N, P, 3), float64.
            out_actors: hit actor (index into the scene's ``actor_paths``) or -1, shape
                (N, P), int64.

        Raises:
            ValueError: an array of the wrong shape or dtype, or ``env`` out of range.
        """
        n, p = self.num_envs, self.width * self.height
        rows = int(self._arguments_scene[22].max(initial=-1)) + 1
        for name, array, shape, dtype in (
            ("body_positions", body_positions, (None, 3), np.float64),
            ("body_orientations", body_orientations, (None, 4), np.float64),
            ("out_plane", out_plane, (n, p), np.float64),
            ("out_camera", out_camera, (n, p), np.float64),
            ("out_normals", out_normals, (n, p, 3), np.float64),
            ("out_actors", out_actors, (n, p), np.int64),
        ):
            good = (
                isinstance(array, np.ndarray)
                and array.dtype == dtype
                and array.flags.c_contiguous
                and array.ndim == len(shape)
                and all(s is None or s == a for s, a in zip(shape, array.shape, strict=True))
            )
            if not good:
                raise ValueError(f"{name}: expected C-contiguous {np.dtype(dtype).name} {shape}")
        if body_positions.shape[0] < rows or body_orientations.shape[0] < rows:
            raise ValueError(f"body poses: {rows} rows needed")
        if not 0 <= int(env) < n:
            raise ValueError(f"env {env} out of range for {n} worlds")
        self.update_trusted(
            int(env), body_positions, body_orientations, out_plane, out_camera, out_normals,
            out_actors,
        )  # fmt: skip

    def update_trusted(
        self,
        env: int,
        body_positions: np.ndarray,
        body_orientations: np.ndarray,
        out_plane: np.ndarray,
        out_camera: np.ndarray,
        out_normals: np.ndarray,
        out_actors: np.ndarray,
    ) -> None:
        """:meth:`update` without its checks, for callers that own checked arrays.

        Every array must already have the documented dtype, shape and C order (MuJoCo's
        ``xpos`` / ``xquat`` do), ``env`` an int in range: the compiled entry point
        converts them without checking.
        """
        args = (
            env, body_positions, body_orientations, *self._arguments_scene, out_plane,
            out_camera, out_normals, out_actors,
        )  # fmt: skip
        entry = self._entry
        if entry is None:
            self._kernel(*args)
            self._entry = compiled_entry(self._kernel, args)
        else:
            entry(*args)
