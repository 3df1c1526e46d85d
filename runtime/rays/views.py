"""Depth images of a fixed pinhole camera: the static part of the scene cast once.

A camera mounted on a static prim casts the same rays at every update; only the moving
groups of the :class:`~runtime.rays.scene.RayScene` can change what they see.
:class:`PinholeView` casts the static groups once (closest hit, actor and normal per
pixel) and, per update and world, casts each moving group only on the pixels its bound can
cover: the projection of the group's box at its current pose into the image, one pixel of
margin, with the pixel's best hit so far as the limit; a pixel that group hit at the
world's last update is first cast only up to a little beyond that hit (the whole range
when nothing is found there). It then rewrites only the pixels whose result changed since
the world's last update.

The casts are the scene cast's own routines with the same arithmetic, so each pixel's hit
(distance, actor, normal) equals :meth:`RayScene.cast <runtime.rays.scene.RayScene.cast>`
of the same ray with the same body poses (exact ties in distance aside: between two groups
the scene keeps the earlier group, the view the static one or the moving group whose origin
is nearer the camera; between two triangles of a moving group, at the same distance to the
rounding, the view can keep the other one). The
"camera starts inside a solid" rule is applied as the scene applies it (every pixel at
distance 0, normal ``-direction``, the first containing solid's actor).

Only the Numba backend's scenes are supported (:meth:`PinholeView.supports`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from runtime._compile.native_call import In, Out, native_kernel

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
        out_plane: distance to the image plane per world, shape (N, P), float64,
            C-contiguous (written by :meth:`update`; kept).
        out_camera: distance to the camera, shape (N, P), float64 (the same).
        out_normals: world normals (misses inf), shape (N, P, 3), float64 (the same).
        out_actors: hit actor (index into the scene's ``actor_paths``) or -1, shape (N, P),
            int64 (the same).
        clipping: 0 none (misses inf), 1 max (misses and farther: ``max_distance``),
            2 zero (misses and farther: 0).
        body_count: rows of the pose arrays :meth:`update` takes (B).

    Raises:
        ValueError: the scene is not a Numba-backend scene, or an array has the wrong
            shape, dtype or order.
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
        out_plane: np.ndarray,
        out_camera: np.ndarray,
        out_normals: np.ndarray,
        out_actors: np.ndarray,
        clipping: int = 0,
        body_count: int = 0,
    ) -> None:
        from runtime.rays import _view_kernels as k
        from runtime.rays._scene_cast_kernels import scene_cast_kernel
        from runtime.rays._simd import LEAF_WIDTH
        from runtime.rays._solid_kernels import SOLID_CONVEX, scene_inside_solid_kernel
        from runtime.rays._traversal_kernels import matrix_kernel

        if not self.supports(scene):
            raise ValueError("PinholeView needs a RayScene with the Numba backend")
        width, height = int(width), int(height)
        pixels = width * height
        num_envs = out_plane.shape[0] if out_plane.ndim == 2 else -1
        directions = np.ascontiguousarray(directions, np.float64)
        forward = np.ascontiguousarray(forward, np.float64)
        g = scene.group_count
        group_rows = np.ascontiguousarray(group_rows, np.int64)
        group_positions = np.ascontiguousarray(np.array(group_positions, np.float64))
        group_orientations = np.ascontiguousarray(np.array(group_orientations, np.float64))
        for name, array, shape, dtype in (
            ("directions", directions, (pixels, 3), np.float64),
            ("forward", forward, (pixels,), np.float64),
            ("group_rows", group_rows, (g,), np.int64),
            ("group_positions", group_positions, (g, 3), np.float64),
            ("group_orientations", group_orientations, (g, 4), np.float64),
            ("out_plane", out_plane, (num_envs, pixels), np.float64),
            ("out_camera", out_camera, (num_envs, pixels), np.float64),
            ("out_normals", out_normals, (num_envs, pixels, 3), np.float64),
            ("out_actors", out_actors, (num_envs, pixels), np.int64),
        ):
            if array.shape != shape or array.dtype != dtype or not array.flags.c_contiguous:
                raise ValueError(
                    f"{name}: expected C-contiguous {np.dtype(dtype).name} {shape}, got "
                    f"{array.dtype} {array.shape}"
                )
        if group_rows.max(initial=-1) >= body_count:
            raise ValueError(f"group_rows: rows up to {group_rows.max()}, body_count {body_count}")
        self.scene = scene
        self.width, self.height = width, height
        self.num_envs = int(num_envs)
        self.body_count = int(body_count)
        _, tail = scene.fused_arguments(pixels)
        b = scene.backend
        (face_groups, face_actors, face_normals, solid_groups, solid_kinds, solid_positions,
         solid_orientations, solid_params, solid_plane_ranges, planes, solid_bounds,
         solid_actors, group_solid_ranges, group_solid_boxes, double_sided, _, _, _, _,
         _) = tail  # fmt: skip
        roots = np.asarray(b.wide_roots, np.int64)
        local_boxes = np.ascontiguousarray(b.local_boxes, np.float64)
        ranges = np.array(group_solid_ranges, np.int64).reshape(g, 2)
        kinds = np.asarray(solid_kinds, np.int64)
        moving = np.flatnonzero(group_rows >= 0)
        origins = np.ascontiguousarray(np.tile(np.asarray(position, np.float64), (pixels, 1)))
        max_distances = np.full(pixels, float(max_distance))
        # -- the static cast: the scene's own kernel with the moving groups left out
        static_roots = roots.copy()
        static_roots[moving] = -1
        static_ranges = ranges.copy()
        static_ranges[moving, 1] = 0
        positions = group_positions.copy()
        orientations = group_orientations.copy()
        world_boxes = np.zeros((g, 6))
        static_t = np.empty(pixels)
        static_actors = np.empty(pixels, np.int64)
        static_normals = np.empty((pixels, 3))
        scene_cast_kernel(  # (the float64 node records, as RayScene.cast passes them)
            b.wide_nodes_float64, b.leaf_triangles, b.leaf_ids, static_roots, local_boxes,
            np.full(g, -1, np.int64), np.zeros((0, 3)), np.zeros((0, 4)), face_groups,
            face_actors, face_normals, solid_groups, solid_kinds, solid_positions,
            solid_orientations, solid_params, solid_plane_ranges, planes, solid_bounds,
            solid_actors, static_ranges, group_solid_boxes, origins, directions,
            max_distances, double_sided, positions, orientations, world_boxes,
            np.empty(pixels, np.int64), np.empty(pixels, np.int64), static_t, static_actors,
            static_normals, 1,
        )  # fmt: skip
        inside = np.empty(1, np.int64)
        scene_inside_solid_kernel(
            solid_groups, solid_kinds, solid_positions, solid_orientations, solid_params,
            solid_plane_ranges, planes, solid_bounds, static_ranges, group_solid_boxes,
            positions, orientations, origins[:1], inside,
        )  # fmt: skip
        self.static_distances, self.static_actors = static_t, static_actors
        self.static_normals = static_normals
        # -- the moving groups' boxes, group frame: their triangles', and their analytic
        # solids' (each solid's box turned into the group frame, within the box around its
        # bounding sphere)
        bounds = np.zeros((moving.size, 12))
        sphere_bounds = np.asarray(solid_bounds, np.float64).reshape(-1, 4)
        most_solids = 1
        for k_, group in enumerate(moving):
            if roots[group] >= 0:
                bounds[k_, :6] = local_boxes[group]
            first, count = ranges[group]
            analytic = [s for s in range(first, first + count) if kinds[s] != SOLID_CONVEX]
            most_solids = max(most_solids, len(analytic))
            if analytic:
                boxes = np.array(
                    [
                        _solid_box(
                            kinds[s],
                            np.reshape(solid_params, (-1, 3))[s],
                            np.reshape(solid_positions, (-1, 3))[s],
                            np.reshape(solid_orientations, (-1, 4))[s],
                            sphere_bounds[s],
                        )
                        for s in analytic
                    ]  # fmt: skip
                )
                bounds[k_, 6:9] = boxes[:, :3].min(axis=0)
                bounds[k_, 9:] = boxes[:, 3:].max(axis=0)
        # -- the leaf block of each face, and the moving groups whose triangles are one
        # convex hull with outward normals (their last hits are tried first)
        leaf_ids = np.asarray(b.leaf_ids, np.int64).reshape(-1)
        normals = np.reshape(np.asarray(face_normals, np.float64), (-1, 3))
        face_leaf = np.full(normals.shape[0], -1, np.int64)
        lanes = np.flatnonzero(leaf_ids >= 0)
        face_leaf[leaf_ids[lanes]] = lanes // LEAF_WIDTH
        rows = np.asarray(b.triangles, np.float64).reshape(-1, 3, 3)  # v0, e1, e2
        triangles = np.stack([rows[:, 0], rows[:, 0] + rows[:, 1], rows[:, 0] + rows[:, 2]], 1)
        triangle_ids = np.asarray(b.triangle_ids, np.int64)
        triangle_groups = np.asarray(face_groups, np.int64)[triangle_ids]
        convex = np.zeros(moving.size, np.int64)
        for k_, group in enumerate(moving):
            mine = triangle_groups == group
            if roots[group] >= 0 and np.any(mine):
                convex[k_] = _convex_faces(triangles[mine], normals[triangle_ids[mine]])
        self._convex_groups = tuple(int(g) for g in moving[convex != 0])
        with np.errstate(divide="ignore"):  # inverse_direction_kernel's values
            inverse = 1.0 / directions
        tiny = np.abs(directions) <= 1e-30
        inverse[tiny] = np.where(directions[tiny] >= 0.0, 1e30, -1e30)
        fx, fy, cx, cy = (float(v) for v in intrinsics)
        # how far the rays lie from their pixels' integer coordinates (the silhouette
        # spans' margin, twice that and a thousandth of a pixel; inf: no spans)
        column, row = np.arange(pixels) % width, np.arange(pixels) // width
        w, x, y, z = (float(v) for v in np.asarray(orientation, np.float64))
        turn = np.array(matrix_kernel(w, x, y, z)).reshape(3, 3)  # camera to world
        local = directions @ turn  # the camera frame: x forward, y left, z up
        with np.errstate(divide="ignore", invalid="ignore"):
            off_u = np.abs(cx - fx * local[:, 1] / local[:, 0] - column)
            off_v = np.abs(cy - fy * local[:, 2] / local[:, 0] - row)
        forward_rays = np.all(local[:, 0] > 0.0)
        margin = 2.0 * float(np.max(np.maximum(off_u, off_v), initial=0.0)) + 1e-3
        if not (forward_rays and np.isfinite(margin)):
            margin = np.inf
        view = np.array(
            [
                *np.asarray(position, np.float64),
                *np.asarray(orientation, np.float64),
                fx,
                fy,
                cx,
                cy,
                float(max_distance),
                margin,
            ]  # fmt: skip
        )
        params = np.zeros(k.V_SLOTS, np.int64)
        params[[k.V_WIDTH, k.V_HEIGHT, k.V_CLIPPING, k.V_INSIDE, k.V_DOUBLE_SIDED]] = (
            width, height, int(clipping), int(inside[0]), int(bool(double_sided)),
        )  # fmt: skip
        floats = {
            k.F_FACE_NORMALS: np.reshape(face_normals, (-1, 3)),
            k.F_SOLID_POSITIONS: np.reshape(solid_positions, (-1, 3)),
            k.F_SOLID_ORIENTATIONS: np.reshape(solid_orientations, (-1, 4)),
            k.F_SOLID_PARAMS: np.reshape(solid_params, (-1, 3)),
            k.F_PLANES: np.reshape(planes, (-1, 4)),
            k.F_SOLID_BOUNDS: sphere_bounds,
            k.F_GROUP_SOLID_BOXES: np.reshape(group_solid_boxes, (g, 6)),
            k.F_VIEW: view.reshape(1, -1),
            k.F_GROUP_BOUNDS: bounds,
            k.F_DIRECTIONS: directions,
            k.F_INVERSE: inverse,
            k.F_MAX: max_distances.reshape(-1, 1),
            k.F_FORWARD: forward.reshape(-1, 1),
            k.F_STATIC_T: static_t.reshape(-1, 1),
            k.F_STATIC_NORMALS: static_normals,
            k.F_T: static_t.reshape(-1, 1),
            k.F_NORMALS: static_normals,
            k.F_GROUP_POSITIONS: positions,
            k.F_GROUP_ORIENTATIONS: orientations,
            k.F_FRAMES: np.zeros((most_solids, 16)),
            k.F_STACK: np.zeros((k.WIDE_STACK_SIZE + 3 * k.NODE_WIDTH + k.CONE_VALUES, 1)),
            k.F_RAY_FRAMES: np.zeros((g, 14)),
            k.F_LAST_FRAMES: np.full((self.num_envs * moving.size, 12), np.inf),
            k.F_LAST_T: np.zeros((self.num_envs, pixels)),
            k.F_KEYS: np.zeros((moving.size, 1)),
        }
        ints = {
            k.I_ROOTS: roots.reshape(-1, 1),
            k.I_FACE_ACTORS: np.reshape(face_actors, (-1, 1)),
            k.I_SOLID_KINDS: kinds.reshape(-1, 1),
            k.I_PLANE_RANGES: np.reshape(solid_plane_ranges, (-1, 2)),
            k.I_SOLID_ACTORS: np.reshape(solid_actors, (-1, 1)),
            k.I_GROUP_SOLID_RANGES: ranges,
            k.I_PARAMS: params.reshape(1, -1),
            k.I_MOVING: moving.reshape(-1, 1),
            k.I_ROWS: group_rows[moving].reshape(-1, 1),
            k.I_STATIC_ACTORS: static_actors.reshape(-1, 1),
            k.I_ACTORS: static_actors.reshape(-1, 1),
            k.I_CHANGED: np.zeros((self.num_envs, pixels), np.int64),
            k.I_CHANGED_COUNT: np.full((self.num_envs, 1), -1, np.int64),
            k.I_STAMPS: np.zeros((pixels, 1), np.int64),
            k.I_HITS: np.zeros((pixels, 1), np.int64),
            k.I_STACK: np.zeros((2 * k.WIDE_STACK_SIZE + k.NODE_WIDTH, 1), np.int64),
            k.I_FRAME_ROWS: np.zeros((most_solids, 1), np.int64),
            k.I_LAST_GROUP: np.full((self.num_envs, pixels), -1, np.int64),
            k.I_HIT_GROUP: np.full((pixels, 1), -1, np.int64),
            k.I_FACE_LEAF: face_leaf.reshape(-1, 1),
            k.I_CONVEX: convex.reshape(-1, 1),
            k.I_LAST_LEAF: np.full((self.num_envs, pixels), -1, np.int64),
            k.I_HIT_LEAF: np.full((pixels, 1), -1, np.int64),
            k.I_ORDER: np.zeros((moving.size, 1), np.int64),
        }
        self._block_f, self._block_i, self._slots = _pack(floats, ints, k.F_SLOTS, k.I_SLOTS)
        self._env_at = self._slots[("i", k.I_PARAMS)] + k.V_ENV
        self._count_at = self._slots[("i", k.I_CHANGED_COUNT)]
        self._arguments = (
            np.ascontiguousarray(b.wide_nodes).reshape(-1),
            np.ascontiguousarray(b.leaf_triangles).reshape(-1),
            np.ascontiguousarray(b.leaf_ids).reshape(-1),
            self._block_f, self._block_i, out_plane.reshape(-1), out_camera.reshape(-1),
            out_normals.reshape(-1), out_actors.reshape(-1),
        )  # fmt: skip
        self._kernel = k.view_kernel
        self._call = None
        if self.body_count > 0:
            self._call = native_kernel(
                k.view_kernel,
                (
                    In(np.float64, (self.body_count, 3)),
                    In(np.float64, (self.body_count, 4)),
                    *self._arguments,
                    Out(np.int64, (1,)),
                ),  # fmt: skip
            )

    @property
    def kernel_arrays(self) -> tuple[tuple[np.ndarray, ...], int]:
        """What a compiled caller passes to :func:`runtime.rays.kernels.view_kernel`.

        Returns:
            ``(arrays, env_index)``: the kernel's arguments after the two pose arrays and
            before its (1,) int64 count output (all bound: the same objects at every call),
            and the index in ``arrays[4]`` (the int64 block) where the caller writes the
            world to update before each call.
        """
        return self._arguments, self._env_at

    @property
    def convex_groups(self) -> tuple[int, ...]:
        """The moving groups whose triangles are one convex hull with outward normals.

        A pixel whose last hit was on such a group first tests the leaf block of that hit: a
        hit on a face turned towards the camera is where the ray enters the hull, the
        group's closest hit, and needs no traversal.
        """
        return self._convex_groups

    @staticmethod
    def supports(scene) -> bool:
        """Whether ``scene`` can be viewed (a RayScene whose backend is Numba's BVH)."""
        arguments = getattr(scene, "fused_arguments", None)
        return arguments is not None and arguments(1) is not None

    def invalidate(self, env: int | None = None) -> None:
        """Rewrite every pixel of world ``env`` (None: every world) at its next update."""
        counts = self._block_i[self._count_at : self._count_at + self.num_envs]
        if env is None:
            counts[:] = -1
        else:
            counts[env] = -1

    def update(self, env: int, body_positions: np.ndarray, body_orientations: np.ndarray) -> None:
        """World ``env``'s images at the given body poses (only changed pixels written).

        The view rewrites only the pixels of its output arrays that changed since that
        world's last update: call :meth:`invalidate` after writing to them yourself.

        Args:
            env: the world (row of the outputs), 0 <= env < N.
            body_positions: body origins [stage units], shape (body_count, 3), float64,
                C-contiguous, world (rows per ``group_rows``; MuJoCo's ``xpos``).
            body_orientations: body orientations (w, x, y, z), shape (body_count, 4)
                (MuJoCo's ``xquat``).

        Raises:
            ValueError: ``env`` out of range, or a pose array of another shape, dtype or
                order.
        """
        if not 0 <= env < self.num_envs:
            raise ValueError(f"env {env} out of range for {self.num_envs} worlds")
        self._block_i[self._env_at] = env
        call = self._call
        if call is not None and call(body_positions, body_orientations) is not None:
            return  # (the native call: None when an input does not match its plan)
        for name, array, columns in (
            ("body_positions", body_positions, 3),
            ("body_orientations", body_orientations, 4),
        ):
            shape = (self.body_count, columns)
            if (
                not isinstance(array, np.ndarray)
                or array.shape != shape
                or array.dtype != np.float64
                or not array.flags.c_contiguous
            ):
                raise ValueError(f"{name}: expected a C-contiguous float64 array {shape}")
        self._kernel(body_positions, body_orientations, *self._arguments, np.empty(1, np.int64))


def _convex_faces(triangles: np.ndarray, normals: np.ndarray) -> int:
    """1 when every corner of ``triangles`` lies on or behind every triangle's plane.

    Then the triangles lie in the convex body of their corners, each face's plane supports
    it with its normal pointing out, and a ray that meets a face turned towards it
    (``normal . direction < 0``) meets no triangle before that point: its hit there is the
    group's closest. The tolerance is the rounding of the corners (``1e-10`` of their size);
    normals must be unit and finite.

    Args:
        triangles: corners (T, 3, 3), group frame.
        normals: the faces' normals (T, 3).
    """
    if not (np.all(np.isfinite(triangles)) and np.all(np.isfinite(normals))):
        return 0
    if np.any(np.abs(np.linalg.norm(normals, axis=1) - 1.0) > 1e-6):
        return 0
    corners = np.unique(triangles.reshape(-1, 3), axis=0)
    tolerance = 1e-10 * (1.0 + float(np.abs(corners).max()))
    offsets = np.einsum("ij,ij->i", normals, triangles[:, 0])
    for start in range(0, len(normals), 256):  # (faces by 256: bounded memory)
        heights = corners @ normals[start : start + 256].T - offsets[start : start + 256]
        if np.any(heights > tolerance):
            return 0
    return 1


def _pack(
    floats: dict[int, np.ndarray], ints: dict[int, np.ndarray], f_slots: int, i_slots: int
) -> tuple[np.ndarray, np.ndarray, dict[tuple[str, int], int]]:
    """The float64 and int64 blocks of the view kernel (layout first in the int block).

    Returns:
        ``(block_f, block_i, offsets)``: the blocks, and each slot's first element
        (``("f", slot)`` / ``("i", slot)``).
    """
    header = 3 * (f_slots + i_slots)
    layout = np.zeros(header, np.int64)
    offsets: dict[tuple[str, int], int] = {}
    start = 0
    for slot in range(f_slots):
        rows, cols = floats[slot].shape
        layout[3 * slot : 3 * slot + 3] = (start, rows, cols)
        offsets[("f", slot)] = start
        start += rows * cols
    block_f = np.zeros(max(start, 1))
    for slot in range(f_slots):
        at = offsets[("f", slot)]
        block_f[at : at + floats[slot].size] = floats[slot].reshape(-1)
    start = header
    for slot in range(i_slots):
        rows, cols = ints[slot].shape
        layout[3 * (f_slots + slot) : 3 * (f_slots + slot) + 3] = (start, rows, cols)
        offsets[("i", slot)] = start
        start += rows * cols
    block_i = np.zeros(start, np.int64)
    block_i[:header] = layout
    for slot in range(i_slots):
        at = offsets[("i", slot)]
        block_i[at : at + ints[slot].size] = ints[slot].reshape(-1)
    return block_f, block_i, offsets


def _solid_box(kind: int, params: np.ndarray, position, orientation, sphere) -> np.ndarray:
    """An analytic solid's box ``[lo(3), hi(3)]`` in its group's frame.

    The solid's own extent (box half extents, a sphere's radius, a capsule's or cylinder's
    radius and half height along z) turned by its orientation, clipped to the box around
    its bounding sphere ``sphere`` (both hold the solid).
    """
    from runtime.rays._solid_kernels import SOLID_BOX, SOLID_CAPSULE, SOLID_CYLINDER

    r = float(params[0])
    if kind == SOLID_BOX:
        half = np.abs(np.asarray(params[:3], np.float64))
    elif kind == SOLID_CAPSULE:
        half = np.array([r, r, abs(float(params[1])) + r])
    elif kind == SOLID_CYLINDER:
        half = np.array([r, r, abs(float(params[1]))])
    else:
        half = np.full(3, r)
    w, x, y, z = np.asarray(orientation, np.float64) / np.linalg.norm(orientation)
    rotation = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    reach = np.abs(rotation) @ half
    reach *= 1.0 + 1e-9  # (rounding of the turned corners)
    centre = np.asarray(position, np.float64)
    sphere = np.asarray(sphere, np.float64)
    lo = np.maximum(centre - reach, sphere[:3] - sphere[3])
    hi = np.minimum(centre + reach, sphere[:3] + sphere[3])
    return np.concatenate([lo, hi])
