"""The ray scene: collision geometry of a USD stage as rigidly moving triangle-mesh groups.

:meth:`RayScene.from_stage` collects every prim with ``UsdPhysics.CollisionAPI`` (and
``physics:collisionEnabled`` not false) and turns it into triangles in the frame of its
owning rigid body (nearest ancestor-or-self with an enabled rigid body). Colliders without a
rigid body form the static "world" group; their hit path is the collider prim itself.
Supported geometry: ``Mesh`` (triangle mesh, or its convex hull / bounding box / bounding
sphere per ``physics:approximation``), ``Cube``, ``Sphere``, ``Capsule``, ``Cylinder``,
``Cone`` and ``Plane`` (a large single-sided quad facing ``+axis``). Everything is in stage
units (``metersPerUnit`` plays no role).

A BVH (or Embree scene) is built once per group; :meth:`RayScene.cast` moves rays into the
group frames with the current body poses, so moving bodies need no rebuild. Solid shapes
(boxes, spheres, capsules, cylinders, convex hulls) report a hit at distance 0 with normal
``-direction`` for rays starting inside them, as PhysX scene queries do; triangle meshes and
planes are single-sided.

``trimesh`` is imported lazily (clear ``ImportError`` at construction when missing).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.rays._scene_build import DEFAULT_PLANE_HALF_EXTENT, collect_colliders
from runtime.rays._shapes import (
    SolidShape,
    _bounding_sphere,
    _column_matrix,
    _decompose,
    _Group,
    _require_trimesh,
)
from runtime.rays.backends import (
    PARALLEL_MIN_RAYS,
    RayBackend,
    make_ray_backend,
    resolve_threads,
    run_parallel,
)

__all__ = ["DEFAULT_PLANE_HALF_EXTENT", "RayScene", "SolidShape", "usd_world_pose"]

LOGGER = logging.getLogger("runtime.rays.scene")


_SOLID_CODES = {"box": 0, "sphere": 1, "capsule": 2, "cylinder": 3, "convex": 4}


def usd_world_pose(prim: Any) -> tuple[np.ndarray, np.ndarray]:
    """World position (3,) and rotation-only orientation wxyz (4,) of a prim (default time).

    The pose the scene gives a collider's frame (scale taken out), for a sensor placed on a
    prim without a rigid body.
    """
    from pxr import Usd, UsdGeom

    from runtime._quat import from_matrix as _quat_from_matrix

    matrix = _column_matrix(
        UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    )
    translation, rotation, _ = _decompose(matrix)
    return translation, _quat_from_matrix(rotation)


class RayScene:
    """Closest-hit ray queries over the collision geometry of a stage.

    Build with :meth:`from_stage`; the constructor takes already prepared groups and is
    mostly for tests.

    Attributes:
        actor_paths: hit paths; index i of ``cast``'s ``out_actors`` refers to entry i. The
            first ``len(body_paths)`` entries are ``body_paths`` themselves, then static
            collider prims and rigid bodies missing from ``body_paths``.
        body_paths: rigid bodies in ``PhysicsState`` order.
        backend: the :class:`~runtime.rays.backends.RayBackend` in use.
        face_count: number of triangles.
    """

    def __init__(
        self,
        body_paths: Sequence[str],
        actor_paths: Sequence[str],
        groups: Sequence[_Group],
        backend: str = "numba",
        double_sided: bool = False,
        threads: int | None = None,
    ) -> None:
        from runtime.rays import _scene_cast_kernels as kernels

        self._kernels = kernels
        self.body_paths = tuple(str(p) for p in body_paths)
        self.actor_paths = tuple(str(p) for p in actor_paths)
        self.double_sided = bool(double_sided)
        meshes = []
        face_groups = []
        face_actors = []
        normals = []
        solids: list[tuple[SolidShape, int, int]] = []
        for g, group in enumerate(groups):
            if group.vertices:
                vertices = np.concatenate(group.vertices)
                faces = np.concatenate(group.faces)
                actors = np.concatenate(group.face_actor)
            else:
                vertices = np.zeros((0, 3))
                faces = np.zeros((0, 3), np.int64)
                actors = np.zeros(0, np.int64)
            meshes.append((vertices, faces))
            face_groups.append(np.full(len(faces), g, np.int64))
            face_actors.append(actors)
            tri = vertices[faces]
            n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]).reshape(-1, 3)
            length = np.linalg.norm(n, axis=1, keepdims=True)
            normals.append(np.divide(n, length, out=np.zeros_like(n), where=length > 0.0))
            for solid, actor in group.solids:
                solids.append((solid, g, actor))
        fixed_poses = [
            None if g.body_index >= 0 else (g.fixed_position, g.fixed_orientation) for g in groups
        ]
        self.backend: RayBackend = make_ray_backend(
            backend, meshes, self.double_sided, threads, fixed_poses
        )
        self.face_count = self.backend.face_count
        self._face_groups = np.ascontiguousarray(np.concatenate(face_groups or [np.zeros(0)]))
        self._face_groups = self._face_groups.astype(np.int64)
        self._face_actors = np.ascontiguousarray(
            np.concatenate(face_actors or [np.zeros(0)]).astype(np.int64)
        )
        self._face_normals = np.ascontiguousarray(
            np.concatenate(normals) if normals else np.zeros((0, 3))
        )
        self.group_count = len(groups)
        self._group_body = np.array([g.body_index for g in groups], np.int64)
        self.group_paths = tuple(g.path for g in groups)
        self._fixed_positions = np.array([g.fixed_position for g in groups], np.float64).reshape(
            -1, 3
        )
        self._fixed_orientations = np.array(
            [g.fixed_orientation for g in groups], np.float64
        ).reshape(-1, 4)
        self._moving = np.nonzero(self._group_body >= 0)[0]
        # solids
        planes: list[np.ndarray] = []
        plane_ranges = []
        plane_count = 0
        for solid, _, _ in solids:
            plane_ranges.append((plane_count, len(solid.planes)))
            planes.append(np.asarray(solid.planes, np.float64).reshape(-1, 4))
            plane_count += len(solid.planes)
        self.solids = tuple(s for s, _, _ in solids)
        self._solid_groups = np.array([g for _, g, _ in solids], np.int64)
        self._solid_actors = np.array([a for _, _, a in solids], np.int64)
        self._solid_kinds = np.array([_SOLID_CODES[s.kind] for s, _, _ in solids], np.int64)
        self._solid_positions = np.array([s.position for s, _, _ in solids], np.float64)
        self._solid_positions = self._solid_positions.reshape(-1, 3)
        self._solid_orientations = np.array([s.orientation for s, _, _ in solids], np.float64)
        self._solid_orientations = self._solid_orientations.reshape(-1, 4)
        self._solid_params = np.array([s.params for s, _, _ in solids], np.float64).reshape(-1, 3)
        self._solid_plane_ranges = np.array(plane_ranges, np.int64).reshape(-1, 2)
        self._planes = np.ascontiguousarray(np.concatenate(planes) if planes else np.zeros((0, 4)))
        self._solid_bounds = np.array(
            [_bounding_sphere(s) for s, _, _ in solids], np.float64
        ).reshape(-1, 4)
        self._group_meshes = [
            (np.concatenate(g.shown_vertices), np.concatenate(g.shown_faces))
            if g.shown_vertices
            else (np.zeros((0, 3)), np.zeros((0, 3), np.int64))
            for g in groups
        ]
        self._group_positions = np.ascontiguousarray(self._fixed_positions.copy())
        self._group_orientations = np.ascontiguousarray(self._fixed_orientations.copy())
        # solids are collected group by group, so each group's solids are one index range;
        # a group-frame box around their bounding spheres rejects far points at once
        g_count = self.group_count
        self._group_solid_ranges = np.zeros((g_count, 2), np.int64)
        self._group_solid_boxes = np.zeros((g_count, 6))
        if self._solid_groups.size:
            if np.any(np.diff(self._solid_groups) < 0):  # pragma: no cover - by construction
                raise AssertionError("solids must be stored in group order")
            for g in range(g_count):
                rows = np.nonzero(self._solid_groups == g)[0]
                if rows.size == 0:
                    continue
                self._group_solid_ranges[g] = (rows[0], rows.size)
                b = self._solid_bounds[rows]
                self._group_solid_boxes[g, :3] = (b[:, :3] - b[:, 3:4]).min(axis=0)
                self._group_solid_boxes[g, 3:] = (b[:, :3] + b[:, 3:4]).max(axis=0)
        for name in ("_solid_positions", "_solid_orientations", "_solid_params",
                     "_solid_bounds", "_solid_plane_ranges", "_solid_groups", "_solid_kinds",
                     "_solid_actors"):  # fmt: skip
            setattr(self, name, np.ascontiguousarray(getattr(self, name)))
        # fused single-kernel queries for the Numba backend (no per-cast NumPy work)
        from runtime.rays.backends import NumbaBvhBackend

        self._fused = isinstance(self.backend, NumbaBvhBackend)
        self._no_bodies = (np.zeros((0, 3)), np.zeros((0, 4)))
        self._group_body_rows = np.ascontiguousarray(self._group_body)
        self._world_boxes = np.zeros((g_count, 6))
        self._scratch_size = -1
        self._shade_scratch: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_stage(
        cls,
        stage: Any,
        body_paths: Sequence[str],
        backend: str = "numba",
        plane_half_extent: float = DEFAULT_PLANE_HALF_EXTENT,
        double_sided: bool = False,
        threads: int | None = None,
    ) -> RayScene:
        """Collect the collision geometry of ``stage``.

        Args:
            stage: a ``Usd.Stage``.
            body_paths: rigid bodies in ``PhysicsState`` order; their poses are passed to
                :meth:`cast`. Rigid bodies with colliders that are missing here keep their
                USD pose (default time code).
            backend: ``"numba"`` (default) or ``"embreex"``.
            plane_half_extent: half size of the quad used for collision planes.
            double_sided: hit back faces of triangle meshes too (PhysX: False).
            threads: threads per query of at least
                :data:`~runtime.rays.backends.PARALLEL_MIN_RAYS` rays with the Numba
                backend (None: Numba's thread count, ``NUMBA_NUM_THREADS``); results do not
                depend on it.

        Returns:
            The scene.

        Raises:
            SchemaError: malformed collider geometry (names the prim and attribute).
            ImportError: trimesh (or the chosen backend's package) is missing.
        """
        bodies, actor_paths, groups = collect_colliders(stage, body_paths, plane_half_extent)
        return cls(
            bodies, actor_paths, groups, backend=backend, double_sided=double_sided, threads=threads
        )

    def group_meshes(self) -> list[tuple[str, Any]]:
        """The collision geometry as ``trimesh.Trimesh`` objects, one per group.

        Boxes, spheres, capsules and cylinders appear tessellated here; casts intersect
        them exactly.

        Returns:
            ``(body path or "" for the static world group, mesh in the group frame)`` pairs,
            in group order (faces wound counter-clockwise seen from outside).
        """
        trimesh = _require_trimesh()
        return [
            (path, trimesh.Trimesh(vertices=v, faces=f, process=False))
            for path, (v, f) in zip(self.group_paths, self._group_meshes, strict=True)
        ]

    # ------------------------------------------------------------------ queries

    def group_poses(
        self, body_positions: np.ndarray | None, body_orientations: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Current group frames: moving groups from the body poses, the others fixed.

        Args:
            body_positions: body origins [stage units], shape (B, 3), float64, world (or None
                to use the USD poses).
            body_orientations: body orientations (w, x, y, z), shape (B, 4), float64.

        Returns:
            Positions (G, 3) and orientations (G, 4), float64 (internal buffers).
        """
        if body_positions is not None and body_orientations is not None and self._moving.size:
            rows = self._group_body[self._moving]
            self._group_positions[self._moving] = body_positions[rows]
            self._group_orientations[self._moving] = body_orientations[rows]
        return self._group_positions, self._group_orientations

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RayScene:
        """The scene whose :meth:`plain_state` this is (a scene cache entry), not rebuilt.

        Args:
            state: the attributes :meth:`plain_state` returned (arrays, plain values and the
                backend object), already checked by the caller's reader.
        """
        from runtime.rays import _scene_cast_kernels as kernels

        scene = cls.__new__(cls)
        scene.__dict__.update(state)
        scene._kernels = kernels
        return scene

    def plain_state(self) -> dict[str, Any]:
        """Every attribute but the kernels module: what :meth:`from_state` restores."""
        return {k: v for k, v in vars(self).items() if k != "_kernels"}

    def cast(
        self,
        origins: np.ndarray,
        directions: np.ndarray,
        max_distances: np.ndarray,
        body_positions: np.ndarray | None,
        body_orientations: np.ndarray | None,
        out_distances: np.ndarray,
        out_actors: np.ndarray,
        out_normals: np.ndarray,
    ) -> None:
        """Closest hit of each world ray (single-sided meshes, solids hit at 0 from inside).

        Args:
            origins: ray start points [stage units], shape (R, 3), float64, world.
            directions: unit directions, shape (R, 3), float64, world.
            max_distances: largest accepted distance [stage units], shape (R,), float64.
            body_positions: ``PhysicsState.body_positions`` (B, 3) in ``body_paths`` order,
                or None for the USD poses.
            body_orientations: ``PhysicsState.body_orientations`` (B, 4), wxyz, or None.
            out_distances: hit distance or ``inf``, shape (R,), float64 (written).
            out_actors: index into :attr:`actor_paths` or -1, shape (R,), int64 (written).
            out_normals: unit world hit normal or zeros, shape (R, 3), float64 (written).
        """
        if body_positions is not None and body_positions.shape[0] != len(self.body_paths):
            raise ValueError(
                f"body_positions has {body_positions.shape[0]} rows, the scene was built for "
                f"{len(self.body_paths)} bodies"
            )
        ray_count = origins.shape[0]
        for name, array, shape, dtype in (
            ("origins", origins, (ray_count, 3), np.float64),
            ("directions", directions, (ray_count, 3), np.float64),
            ("max_distances", max_distances, (ray_count,), np.float64),
            ("out_distances", out_distances, (ray_count,), np.float64),
            ("out_actors", out_actors, (ray_count,), np.int64),
            ("out_normals", out_normals, (ray_count, 3), np.float64),
        ):
            if array.shape != shape or array.dtype != dtype or not array.flags.c_contiguous:
                raise ValueError(
                    f"{name}: expected C-contiguous {np.dtype(dtype).name} array of shape "
                    f"{shape}, got {array.dtype} {array.shape}"
                )
        if body_positions is not None and body_orientations is not None:
            body_positions = np.ascontiguousarray(body_positions, np.float64)
            body_orientations = np.ascontiguousarray(body_orientations, np.float64)
            if body_orientations.shape != (body_positions.shape[0], 4):
                raise ValueError("body_orientations must have shape (B, 4)")
        if self._fused:
            self.cast_trusted(
                origins,
                directions,
                max_distances,
                body_positions,
                body_orientations,
                out_distances,
                out_actors,
                out_normals,
            )
            return
        positions, orientations = self.group_poses(body_positions, body_orientations)
        scratch = self._shade_scratch
        if scratch is None or scratch[0].shape[0] < ray_count:
            scratch = (np.empty(ray_count, np.int64), np.empty(ray_count, np.int64))
            self._shade_scratch = scratch
        faces = scratch[0][:ray_count]
        inside = scratch[1][:ray_count]
        # validated above: the backend's unchecked entry when it has one
        cast = getattr(self.backend, "cast_trusted", self.backend.cast)
        cast(origins, directions, max_distances, positions, orientations, out_distances, faces)
        self._kernels.scene_shade_kernel(
            faces, self._face_groups, self._face_actors, self._face_normals,
            self._solid_groups, self._solid_kinds, self._solid_positions,
            self._solid_orientations, self._solid_params, self._solid_plane_ranges,
            self._planes, self._solid_bounds, self._solid_actors, self._group_solid_ranges,
            self._group_solid_boxes, origins, directions, max_distances, self.double_sided,
            positions, orientations, inside, out_distances, out_actors, out_normals,
        )  # fmt: skip

    def fused_arguments(self, ray_count: int) -> tuple | None:
        """Scene arrays of the one-call Numba query, for kernels that embed it.

        Args:
            ray_count: largest number of rays per query (sizes the scratch buffers).

        Returns:
            ``(node_boxes, node_refs, leaf_triangles, leaf_ids, group_roots,
            group_local_boxes, group_body)`` (the wide BVH as
            :meth:`~runtime.rays.backends.NumbaBvhBackend.packed_bvh` packs it),
            ``(face_groups, ..., double_sided,
            group_positions, group_orientations, world_boxes, scratch_faces,
            scratch_inside)`` in :func:`~runtime.rays._scene_cast_kernels.scene_cast_kernel`
            order around the body poses, or None when the backend is not the Numba BVH.
        """
        if not self._fused:
            return None
        if ray_count > self._scratch_size:
            self._scratch_size = max(ray_count, 2 * self._scratch_size, 16)
            self._scratch_faces = np.empty(self._scratch_size, np.int64)
            self._scratch_inside = np.empty(self._scratch_size, np.int64)
        b = self.backend
        head = (
            *b.packed_bvh(),  # type: ignore[attr-defined]
            b.wide_roots,  # type: ignore[attr-defined]
            b.local_boxes,  # type: ignore[attr-defined]
            self._group_body_rows,
        )
        tail = (
            self._face_groups,
            self._face_actors,
            self._face_normals,
            self._solid_groups,
            self._solid_kinds,
            self._solid_positions,
            self._solid_orientations,
            self._solid_params,
            self._solid_plane_ranges,
            self._planes,
            self._solid_bounds,
            self._solid_actors,
            self._group_solid_ranges,
            self._group_solid_boxes,
            self.double_sided,
            self._group_positions,
            self._group_orientations,
            self._world_boxes,
            self._scratch_faces,
            self._scratch_inside,
        )
        return head, tail

    def cast_trusted(
        self,
        origins: np.ndarray,
        directions: np.ndarray,
        max_distances: np.ndarray,
        body_positions: np.ndarray | None,
        body_orientations: np.ndarray | None,
        out_distances: np.ndarray,
        out_actors: np.ndarray,
        out_normals: np.ndarray,
    ) -> None:
        """:meth:`cast` without argument checks, for callers that own validated buffers.

        Same arguments and results as :meth:`cast`; every array must already be C-contiguous
        with the documented dtype and shape (the raycast sensor batch calls this per step).
        With the Numba backend the whole query is one kernel call.
        """
        if not self._fused:
            self.cast(origins, directions, max_distances, body_positions, body_orientations,
                      out_distances, out_actors, out_normals)  # fmt: skip
            return
        ray_count = origins.shape[0]
        if ray_count > self._scratch_size:
            self._scratch_size = max(ray_count, 2 * self._scratch_size, 16)
            self._scratch_faces = np.empty(self._scratch_size, np.int64)
            self._scratch_inside = np.empty(self._scratch_size, np.int64)
        if body_positions is None or body_orientations is None:
            body_positions, body_orientations = self._no_bodies
        elif body_positions.shape[0] != len(self.body_paths):
            raise ValueError(
                f"body_positions has {body_positions.shape[0]} rows, the scene was built for "
                f"{len(self.body_paths)} bodies"
            )
        b = self.backend
        kernel = self._kernels.scene_cast_kernel
        threads = 1
        if ray_count >= PARALLEL_MIN_RAYS:
            threads = resolve_threads(b.threads)  # type: ignore[attr-defined]
            if threads > 1:
                kernel = self._kernels.scene_cast_parallel_kernel
        args = (
            b.wide_nodes_float64,  # type: ignore[attr-defined]
            b.leaf_triangles,  # type: ignore[attr-defined]
            b.leaf_ids,  # type: ignore[attr-defined]
            b.wide_roots,  # type: ignore[attr-defined]
            b.local_boxes,  # type: ignore[attr-defined]
            self._group_body_rows,
            body_positions,
            body_orientations,
            self._face_groups,
            self._face_actors,
            self._face_normals,
            self._solid_groups,
            self._solid_kinds,
            self._solid_positions,
            self._solid_orientations,
            self._solid_params,
            self._solid_plane_ranges,
            self._planes,
            self._solid_bounds,
            self._solid_actors,
            self._group_solid_ranges,
            self._group_solid_boxes,
            origins,
            directions,
            max_distances,
            self.double_sided,
            self._group_positions,
            self._group_orientations,
            self._world_boxes,
            self._scratch_faces[:ray_count],
            self._scratch_inside[:ray_count],
            out_distances,
            out_actors,
            out_normals,
        )
        if threads > 1:
            run_parallel(kernel, args, threads)
        else:
            kernel(*args, 1)
