"""Embree through the optional ``embreex`` package, as a :class:`RayBackend`.

Built once: the groups whose pose never changes (``fixed_poses``) are merged, in the world
frame, into one Embree scene; the moving groups are merged into a second one, each in its
group frame shifted into its own cell of a grid (cells twice the largest group box, so
boxes stay apart). A cast is then one Embree call for the fixed groups (the world rays as
they are) and one for all moving groups: a Numba kernel tests every ray against every
moving group's world box (then its own box in the group frame) and writes, for the pairs
that pass, the float32 segment of the group-frame ray inside the group's box, shifted into
the group's cell (so it cannot reach another group), packed group by group.
Embree is asked for the hit triangle only (``query="INTERSECT"``, its lightest call that
names the triangle); one more kernel call computes each hit's distance in float64 from
the world ray and the triangle's plane and merges all hits (closest wins, back faces
marked for single-sided casts); the rare back-face hits are re-cast from just past the
hit triangle (per-group scenes, kept for this). Embree traverses float32 geometry and rays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from runtime._quat import rotation_matrices
from runtime.rays._backend_args import MeshArrays, check_cast_arguments, check_meshes

__all__ = ["EmbreexBackend"]

_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _past(t: np.ndarray) -> np.ndarray:
    """Distance just past hits at distances ``t`` (where a re-cast starts)."""
    return t + 1e-5 * np.maximum(1.0, t)


class EmbreexBackend:
    """Embree backend through ``embreex`` (float32 geometry and rays).

    Single-sided casts re-cast rays that hit a back face from just past that face.

    Args:
        meshes: per group, (vertices (V, 3) float64 [stage units], faces (F, 3) int64),
            vertices in the group frame.
        double_sided: hit back faces too (default False).
        fixed_poses: per group, its constant pose ``(position (3,), orientation (w, x, y,
            z))`` in the world, or None for a group that moves; fixed groups are merged into
            one world-frame Embree scene and the poses passed to :meth:`cast` for them are
            ignored. None: every group moves.

    Raises:
        ImportError: ``embreex`` is not installed.
    """

    name = "embreex"
    _MAX_RECASTS = 16

    def __init__(
        self,
        meshes: Sequence[MeshArrays],
        double_sided: bool = False,
        fixed_poses: Sequence[tuple[np.ndarray, np.ndarray] | None] | None = None,
    ) -> None:
        try:
            from embreex import rtcore_scene
            from embreex.mesh_construction import TriangleMesh
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError(
                "the 'embreex' ray backend needs the optional package embreex "
                "(pip install embreex); use backend='numba' otherwise"
            ) from error
        from runtime.rays import _embree_kernels as kernels

        self._kernels = kernels
        checked = check_meshes(meshes)
        self.group_count = len(checked)
        self.double_sided = bool(double_sided)
        if fixed_poses is None:
            fixed_poses = [None] * self.group_count
        if len(fixed_poses) != self.group_count:
            raise ValueError(f"fixed_poses: expected {self.group_count} entries")
        face_base = 0
        normals = []
        points = []
        static_v: list[np.ndarray] = []
        static_f: list[np.ndarray] = []
        static_ids: list[np.ndarray] = []
        static_base = 0
        self._scenes: list[object | None] = []
        moving = np.zeros(self.group_count, np.int64)
        local_boxes = np.zeros((self.group_count, 6))
        for g, (vertices, faces) in enumerate(checked):
            tri = vertices[faces]
            normals.append(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]).reshape(-1, 3))
            points.append(tri[:, 0].reshape(-1, 3))
            pose = fixed_poses[g]
            scene = None
            if faces.shape[0] and pose is None:
                scene = rtcore_scene.EmbreeScene()
                TriangleMesh(scene, vertices.astype(np.float32), faces.astype(np.int32))
                moving[g] = 1
                local_boxes[g, :3] = vertices.min(axis=0)
                local_boxes[g, 3:] = vertices.max(axis=0)
            elif faces.shape[0]:
                position = np.asarray(pose[0], np.float64).reshape(3)
                rotation = rotation_matrices(np.asarray(pose[1], np.float64).reshape(1, 4))[0]
                static_v.append(vertices @ rotation.T + position)
                static_f.append(faces + static_base)
                static_ids.append(np.arange(faces.shape[0]) + face_base)
                static_base += vertices.shape[0]
                normals[-1] = normals[-1] @ rotation.T  # world frame, like the rays
                points[-1] = points[-1] @ rotation.T + position
            self._scenes.append(scene)
            face_base += faces.shape[0]
        self.face_count = face_base
        self._normals = np.ascontiguousarray(
            np.concatenate(normals) if normals else np.zeros((0, 3))
        )
        self._points = np.ascontiguousarray(np.concatenate(points) if points else np.zeros((0, 3)))
        self._face_base = np.cumsum([0] + [f.shape[0] for _, f in checked])[:-1].astype(np.int64)
        self._static = None
        self._static_ids = np.zeros(0, np.int64)
        if static_f:
            self._static = rtcore_scene.EmbreeScene()
            TriangleMesh(
                self._static,
                np.concatenate(static_v).astype(np.float32),
                np.concatenate(static_f).astype(np.int32),
            )
            self._static_ids = np.ascontiguousarray(np.concatenate(static_ids))
        self._moving = moving
        self._build_merged(rtcore_scene, TriangleMesh, checked, moving, local_boxes)
        self._no_rows = np.zeros(0, np.int64)
        self._moving_rows = np.nonzero(moving)[0]
        self._local_boxes = local_boxes
        self._world_boxes = np.zeros((self.group_count, 6))
        self._offsets = np.zeros(self.group_count + 1, np.int64)
        self._capacity = 0
        self._grow(64)

    def _build_merged(
        self,
        rtcore_scene: object,
        triangle_mesh: object,
        checked: list[MeshArrays],
        moving: np.ndarray,
        local_boxes: np.ndarray,
    ) -> None:
        """One Embree scene holding every moving group, each in its own cell.

        Group ``g``'s triangles, in its group frame, are shifted by ``self._shifts[g]`` so
        that its box sits centred in one cell of a cubic grid whose cells are twice the
        largest group box: boxes are at least one box size apart. A cast then needs one
        Embree call for all moving groups; the pack kernel clips each ray to the part
        inside its group's box, so it never reaches another group's cell.
        """
        rows = np.nonzero(moving)[0]
        self._shifts = np.zeros((self.group_count, 3))
        self._prim_base = np.zeros(self.group_count, np.int64)
        self._merged = None
        if rows.size == 0:
            return
        extent = float((local_boxes[rows, 3:] - local_boxes[rows, :3]).max())
        cell = 2.0 * extent + 1e-9 * (1.0 + np.abs(local_boxes[rows]).max())
        side = int(np.ceil(rows.size ** (1.0 / 3.0) - 1e-9))
        vertices, faces = [], []
        vertex_base = 0
        face_base = 0
        for j, g in enumerate(rows):
            cell_index = np.array([j % side, (j // side) % side, j // (side * side)], float)
            centre = (cell_index - 0.5 * (side - 1)) * cell
            self._shifts[g] = centre - 0.5 * (local_boxes[g, :3] + local_boxes[g, 3:])
            v, f = checked[g]
            vertices.append(v + self._shifts[g])
            faces.append(f + vertex_base)
            self._prim_base[g] = face_base
            vertex_base += v.shape[0]
            face_base += f.shape[0]
        self._merged = rtcore_scene.EmbreeScene()  # type: ignore[attr-defined]
        triangle_mesh(  # type: ignore[operator]
            self._merged,
            np.concatenate(vertices).astype(np.float32),
            np.concatenate(faces).astype(np.int32),
        )

    def _grow(self, pairs: int) -> None:
        self._capacity = max(pairs, 2 * self._capacity)
        self._pair_rays = np.empty((self._capacity, 3), np.float32)
        self._pair_dirs = np.empty((self._capacity, 3), np.float32)
        self._pair_limits = np.empty(self._capacity, np.float32)
        self._pair_index = np.empty(self._capacity, np.int64)
        self._pair_prim = np.empty(self._capacity, np.int32)
        self._pair_t = np.empty(self._capacity)

    def cast(
        self,
        origins: np.ndarray,
        directions: np.ndarray,
        max_distances: np.ndarray,
        group_positions: np.ndarray,
        group_orientations: np.ndarray,
        out_distances: np.ndarray,
        out_faces: np.ndarray,
    ) -> None:
        """Closest hit of each ray over all groups (see :class:`RayBackend`)."""
        check_cast_arguments(
            origins,
            directions,
            max_distances,
            group_positions,
            group_orientations,
            out_distances,
            out_faces,
            self.group_count,
        )
        self.cast_trusted(
            origins,
            directions,
            max_distances,
            group_positions,
            group_orientations,
            out_distances,
            out_faces,
        )

    def cast_trusted(
        self,
        origins: np.ndarray,
        directions: np.ndarray,
        max_distances: np.ndarray,
        group_positions: np.ndarray,
        group_orientations: np.ndarray,
        out_distances: np.ndarray,
        out_faces: np.ndarray,
    ) -> None:
        """:meth:`cast` without checking the arguments (callers that validated them)."""
        k = self._kernels
        ray_count = origins.shape[0]
        out_distances[:] = max_distances
        out_faces[:] = -1
        if ray_count == 0:
            return
        if self._static is not None:
            o32 = origins.astype(np.float32)
            d32 = directions.astype(np.float32)
            limits = np.minimum(max_distances, _FLOAT32_MAX).astype(np.float32)
            # the hit triangles only (Embree's lightest full query); distances in float64
            prim = self._static.run(o32, d32, dists=limits, query="INTERSECT")  # type: ignore[attr-defined]
            t = np.empty(ray_count)
            back = k.embree_merge_kernel(
                np.asarray(prim), t, self._static_ids, self._no_rows, origins, directions, -1,
                self._face_base, self._normals, self._points, self.double_sided,
                group_positions, group_orientations, out_distances, out_faces,
            )  # fmt: skip
            if back.size:
                self._recast(back, _past(t[back]), -1, origins, directions,
                             group_positions, group_orientations, out_distances,
                             out_faces)  # fmt: skip
        if self._moving_rows.size:
            while True:
                needed = k.embree_pack_rays_kernel(
                    origins, directions, out_distances, self._moving, self._local_boxes,
                    self._shifts, group_positions, group_orientations, self._world_boxes,
                    self._offsets, self._pair_rays, self._pair_dirs, self._pair_limits,
                    self._pair_index,
                )  # fmt: skip
                if needed <= self._capacity:
                    break
                self._grow(needed)
            offsets = self._offsets
            total = int(offsets[-1])
            prim = self._pair_prim[:total]
            pair_t = self._pair_t[:total]
            if total:
                # every moving group's segments in one call to the merged scene
                prim[:] = self._merged.run(  # type: ignore[union-attr]
                    self._pair_rays[:total], self._pair_dirs[:total],
                    dists=self._pair_limits[:total], query="INTERSECT",
                )  # fmt: skip
            if total:
                back = k.embree_merge_groups_kernel(
                    prim, pair_t, offsets, self._prim_base, self._static_ids,
                    self._pair_index, origins, directions, self._face_base, self._normals,
                    self._points, self.double_sided, group_positions, group_orientations,
                    out_distances, out_faces,
                )  # fmt: skip
                if back.size:
                    groups = np.searchsorted(offsets, back, side="right") - 1
                    past = _past(pair_t[back])
                    for g in np.unique(groups):
                        mine = groups == g
                        self._recast(self._pair_index[back[mine]], past[mine], int(g), origins,
                                     directions, group_positions, group_orientations,
                                     out_distances, out_faces)  # fmt: skip
        out_distances[out_faces < 0] = np.inf

    def _recast(
        self,
        rays: np.ndarray,
        travelled: np.ndarray,
        group: int,
        origins: np.ndarray,
        directions: np.ndarray,
        group_positions: np.ndarray,
        group_orientations: np.ndarray,
        best: np.ndarray,
        faces_hit: np.ndarray,
    ) -> None:
        """Re-cast rays whose hit in ``group`` (-1: the fixed scene) was a back face.

        Each ray continues from ``travelled`` (just past the back face) along itself; at most
        :attr:`_MAX_RECASTS` more back faces are skipped.
        """
        if group < 0:
            scene = self._static
            local_o = origins[rays]
            local_d = directions[rays]
        else:
            scene = self._scenes[group]
            rotation = rotation_matrices(group_orientations[group : group + 1])[0]
            local_o = (origins[rays] - group_positions[group]) @ rotation
            local_d = directions[rays] @ rotation
        pending = np.arange(rays.size)
        pending = pending[travelled < best[rays]]
        for _ in range(self._MAX_RECASTS):
            first = self._first_hits(scene, local_o, local_d, travelled, pending, rays, best)
            if first is None:
                return
            prim, tfar, hit = first
            faces = np.where(hit, prim, 0)
            if group < 0:
                faces = self._static_ids[faces]
                normals = self._normals[faces]
            else:
                faces = faces + self._face_base[group]
                normals = self._normals[faces]
            facing = np.einsum("ij,ij->i", normals, local_d[pending])
            is_back = hit & (facing >= 0.0) & (not self.double_sided)
            front = hit & ~is_back
            ray = rays[pending[front]]
            distance = travelled[pending[front]] + tfar[front]
            closer = distance < best[ray]
            best[ray[closer]] = distance[closer]
            faces_hit[ray[closer]] = faces[front][closer]
            again = pending[is_back]
            travelled[again] += tfar[is_back] + 1e-5 * np.maximum(1.0, tfar[is_back])
            pending = again[travelled[again] < best[rays[again]]]
            if pending.size == 0:
                return

    @staticmethod
    def _first_hits(
        scene: object,
        local_o: np.ndarray,
        local_d: np.ndarray,
        travelled: np.ndarray,
        pending: np.ndarray,
        rays: np.ndarray,
        best: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """First hits of the pending rays from ``travelled`` on; None when none is left."""
        if pending.size == 0:
            return None
        start = local_o[pending] + local_d[pending] * travelled[pending, None]
        limit = np.minimum(best[rays[pending]] - travelled[pending], _FLOAT32_MAX)
        result = scene.run(  # type: ignore[attr-defined]
            np.ascontiguousarray(start, np.float32),
            np.ascontiguousarray(local_d[pending], np.float32),
            dists=limit.astype(np.float32),
            output=1,
        )
        prim = np.asarray(result["primID"], np.int64)
        return prim, np.asarray(result["tfar"], np.float64), prim >= 0
