"""Closest-hit ray casting backends over rigidly moving triangle-mesh groups.

One :class:`RayBackend` protocol, two implementations with identical signatures:

* :class:`NumbaBvhBackend` (default): a binned-SAH BVH per group, built once with Numba;
  rays are transformed into each group's frame per cast, so moving groups never rebuild.
* :class:`~runtime.rays.embree.EmbreexBackend`: Intel Embree through the
  optional ``embreex`` package (float32), imported lazily; constructing it without
  ``embreex`` raises a clear ``ImportError``.

Both report misses as distance ``inf`` and triangle ``-1``, and are single-sided unless built
with ``double_sided=True`` (a triangle is hit from its front side, i.e. where its
counter-clockwise winding ``(v1 - v0) x (v2 - v0)`` points towards the ray origin).

Threads: the Numba backend casts batches of at least :data:`PARALLEL_MIN_RAYS` rays on
``threads`` threads of Numba's pool (default: Numba's thread count, i.e.
``NUMBA_NUM_THREADS`` or ``numba.set_num_threads``), blocks of rays handed to the threads
by a work queue (``runtime.rays._scene_cast_kernels``); the Morton sort and the scatter
back to caller order of a large batch run on the same threads. The results are
bit-identical to the single-threaded cast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from runtime._quat import rotation_matrices
from runtime.rays._backend_args import MeshArrays, check_cast_arguments, check_meshes

__all__ = [
    "BACKEND_NAMES",
    "EmbreexBackend",  # noqa: F822 - resolved lazily by __getattr__ (embree_backend)
    "MeshArrays",
    "NumbaBvhBackend",
    "PARALLEL_MIN_RAYS",
    "RayBackend",
    "make_ray_backend",
    "resolve_threads",
    "run_parallel",
]

PARALLEL_MIN_RAYS = 4096
"""Smallest batch the Numba kernels cast on several threads (smaller: one thread)."""

_COHERENCE_SAMPLE = 2048
"""Rays sampled to decide whether a large batch needs the Morton sort."""

BACKEND_NAMES = ("numba", "embreex")
"""Names accepted by :func:`make_ray_backend`."""


@runtime_checkable
class RayBackend(Protocol):
    """Closest-hit queries over triangle-mesh groups that move rigidly.

    Attributes:
        name: backend name (one of :data:`BACKEND_NAMES`).
        group_count: number of mesh groups G.
        face_count: total number of triangles; global face ids run over the groups'
            faces in group order.
    """

    name: str
    group_count: int
    face_count: int

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
        """Closest hit of each ray over all groups.

        Args:
            origins: ray origins [stage units], shape (R, 3), float64, world frame.
            directions: unit ray directions, shape (R, 3), float64, world frame.
            max_distances: largest accepted distance [stage units], shape (R,), float64.
            group_positions: group frame origins [stage units], shape (G, 3), float64, world.
            group_orientations: group orientations (w, x, y, z), shape (G, 4), float64.
            out_distances: hit distance or ``inf``, shape (R,), float64 (written).
            out_faces: global face id of the hit or -1, shape (R,), int64 (written).
        """
        ...


def resolve_threads(threads: int | None) -> int:
    """The number of threads a cast uses.

    Args:
        threads: requested count, or None for Numba's current thread count (the
            ``NUMBA_NUM_THREADS`` environment variable, or ``numba.set_num_threads``).

    Returns:
        ``threads`` clamped to ``1 .. NUMBA_NUM_THREADS`` (Numba cannot run more).

    Raises:
        ValueError: ``threads`` is not a positive integer.
    """
    import numba

    if threads is None:
        return int(numba.get_num_threads())
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be a positive integer or None, got {threads!r}")
    return min(int(threads), int(numba.config.NUMBA_NUM_THREADS))


def run_parallel(kernel: Callable[..., Any], args: tuple, threads: int) -> None:
    """Call a parallel ray kernel on ``threads`` threads of Numba's pool.

    Numba's thread count is set around the call and restored after. The kernel starts one
    worker per thread; the cast kernels' workers take blocks of rays from a work queue, so
    a thread slowed by other load on the machine, or by costlier rays, takes fewer of them.

    Args:
        kernel: a ``*_parallel_kernel`` of ``runtime.rays._scene_cast_kernels``.
        args: its arguments without ``threads``.
        threads: thread count, 1 .. ``NUMBA_NUM_THREADS`` (see :func:`resolve_threads`).
    """
    import numba

    saved = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        kernel(*args, threads)
    finally:
        numba.set_num_threads(saved)


class NumbaBvhBackend:
    """Numba BVH backend: one SAH BVH per group in shared flattened arrays.

    Args:
        meshes: per group, (vertices (V, 3) float64 [stage units], faces (F, 3) int64),
            vertices in the group frame. Groups may be empty.
        double_sided: hit back faces too (default False: single-sided like PhysX meshes).
        threads: threads per cast of :data:`PARALLEL_MIN_RAYS` rays or more (None: Numba's
            thread count at each cast); settable later through :attr:`threads`.
    """

    name = "numba"
    coherent_sort_threshold = 4096
    """Batches of at least this many rays are cast in coarse 6-D Morton order (the code's top
    12 bits: ``_scene_cast_kernels.ray_bucket_order_kernel``) unless they come in a coherent order
    already (0 disables sorting)."""

    def __init__(
        self,
        meshes: Sequence[MeshArrays],
        double_sided: bool = False,
        threads: int | None = None,
    ) -> None:
        from runtime.rays import _scene_cast_kernels as kernels
        from runtime.rays._bvh_build_kernels import bvh_build_kernel

        self._kernels = kernels
        self.threads = threads
        checked = check_meshes(meshes)
        self.group_count = len(checked)
        self.double_sided = bool(double_sided)
        boxes: list[np.ndarray] = []
        refs: list[np.ndarray] = []
        triangles: list[np.ndarray] = []
        ids: list[np.ndarray] = []
        roots = np.full(self.group_count, -1, np.int64)
        node_base = 0
        face_base = 0
        leaf_base = 0
        for g, (vertices, faces) in enumerate(checked):
            face_count = faces.shape[0]
            if face_count == 0:
                continue
            capacity = max(2 * face_count, 2)
            node_boxes = np.empty((capacity, 12))
            node_refs = np.empty((capacity, 4), np.int64)
            tris = np.empty((face_count, 9))
            order = np.empty(face_count, np.int64)
            used = np.empty(1, np.int64)
            bvh_build_kernel(vertices, faces, node_boxes, node_refs, tris, order, used)
            n = int(used[0])
            node_boxes = node_boxes[:n]
            node_refs = node_refs[:n].copy()
            for slot in (0, 2):
                is_leaf = node_refs[:, slot + 1] > 0
                is_node = (~is_leaf) & (node_refs[:, slot] >= 0)
                node_refs[is_leaf, slot] += leaf_base
                node_refs[is_node, slot] += node_base
            roots[g] = node_base
            boxes.append(node_boxes)
            refs.append(node_refs)
            triangles.append(tris)
            ids.append(order + face_base)
            node_base += n
            leaf_base += face_count
            face_base += face_count
        self.face_count = int(sum(f.shape[0] for _, f in checked))
        if boxes:
            self.node_boxes = np.ascontiguousarray(np.concatenate(boxes))
            self.node_refs = np.ascontiguousarray(np.concatenate(refs))
            self.triangles = np.ascontiguousarray(np.concatenate(triangles))
            self.triangle_ids = np.ascontiguousarray(np.concatenate(ids))
        else:
            self.node_boxes = np.zeros((1, 12))
            self.node_refs = np.full((1, 4), -1, np.int64)
            self.triangles = np.zeros((0, 9))
            self.triangle_ids = np.zeros(0, np.int64)
        self.group_roots = roots
        self.node_count = node_base
        # the wide BVH every cast traverses (the binary arrays stay: the groups' local boxes
        # come from them, and bvh_closest_hit_kernel, the binary traversal, reads them)
        from runtime.rays._wide_bvh_kernels import float64_nodes, wide_bvh

        self.wide_nodes, self.leaf_triangles, self.leaf_ids, self.wide_roots = wide_bvh(
            self.node_boxes, self.node_refs, self.triangles, self.triangle_ids, roots
        )
        # the same nodes with float64 box rows: what this backend's and RayScene's casts
        # traverse (no conversion in the box test; the float32 records stay for the view
        # and lab kernels that read that layout)
        self.wide_nodes_float64 = float64_nodes(self.wide_nodes)
        # local box of each group (union of its root's two child boxes), for the broad phase
        local = np.zeros((self.group_count, 6))
        for g in range(self.group_count):
            if roots[g] >= 0:
                b = self.node_boxes[roots[g]]
                local[g, :3] = np.minimum(b[0:3], b[6:9])
                local[g, 3:] = np.maximum(b[3:6], b[9:12])
        self.local_boxes = np.ascontiguousarray(local)
        corners = np.array([[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)], bool)
        self._local_corners = np.where(
            corners[None, :, :], local[:, None, 3:], local[:, None, :3]
        )  # (G, 8, 3)
        self._world_boxes = np.zeros((self.group_count, 6))
        # reused buffers of the Morton-ordered path (one cast at a time per backend)
        self._sort_scratch: tuple[np.ndarray, ...] | None = None
        self._coherence_codes = np.empty(_COHERENCE_SAMPLE, np.int64)
        self._packed: tuple[np.ndarray, ...] | None = None  # (packed_bvh, made once)

    def packed_bvh(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The wide BVH as the raycast step kernel packs it (float64 / int64 block rows).

        Returns:
            ``(boxes, refs, leaf_triangles, leaf_ids)``: node boxes as float64 rows of 12
            (4 rows per node: 6 box rows of 8 lanes), child references and counts as int64
            rows of 4 (4 rows per node: 8 references, 8 counts), leaf blocks as float64 rows
            of 12 (6 rows per leaf), leaf ids as int64 rows of 4 (2 per leaf); each
            C-contiguous and
            computed once.
        """
        packed = self._packed
        if packed is None:
            from runtime.rays._wide_bvh_kernels import leaf_edges

            boxes = self.wide_nodes[:, :6].astype(np.float64).reshape(-1, 12)
            refs = self.wide_nodes.view(np.int32)[:, 6:].astype(np.int64).reshape(-1, 4)
            leaves = self.leaf_ids.shape[0]
            packed = (
                np.ascontiguousarray(boxes),
                np.ascontiguousarray(refs),
                np.ascontiguousarray(leaf_edges(self.leaf_triangles, leaves).reshape(-1, 12)),
                np.ascontiguousarray(self.leaf_ids.reshape(-1, 4)),
            )
            self._packed = packed
        return packed

    @property
    def threads(self) -> int | None:
        """Requested threads per large cast (None: Numba's thread count at each cast)."""
        return self._threads

    @threads.setter
    def threads(self, value: int | None) -> None:
        if value is not None:
            resolve_threads(value)  # validates
        self._threads = value

    @staticmethod
    def _run(
        one: Callable[..., Any], parallel: Callable[..., Any], args: tuple, threads: int
    ) -> None:
        """Kernel ``one`` on the calling thread, or its twin ``parallel`` on ``threads``."""
        if threads > 1:
            run_parallel(parallel, args, threads)
        else:
            one(*args)

    def _already_coherent(self, origins: np.ndarray, directions: np.ndarray) -> bool:
        """Whether the batch comes in a coherent order already (e.g. lidar columns).

        Judged on the first :data:`_COHERENCE_SAMPLE` rays: at least half of the
        consecutive pairs share the top 3 bits of every coordinate of their 6-D Morton
        codes. Scattered rays almost never do (Morton order then pays for its sort);
        lidar fans emitted column by column mostly do.
        """
        n = min(origins.shape[0], _COHERENCE_SAMPLE)
        codes = self._coherence_codes
        self._kernels.ray_morton_codes_kernel(origins[:n], directions[:n], codes[:n])
        top = codes[:n] >> 42
        return bool(np.count_nonzero(top[1:] == top[:-1]) >= 0.5 * (n - 1))

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
        if self.group_count:
            world = (
                np.einsum(
                    "gij,gkj->gki", rotation_matrices(group_orientations), self._local_corners
                )
                + group_positions[:, None, :]
            )
            pad = 1e-9 * (1.0 + np.abs(world).max(axis=(1, 2)))
            self._world_boxes[:, :3] = world.min(axis=1) - pad[:, None]
            self._world_boxes[:, 3:] = world.max(axis=1) + pad[:, None]
        ray_count = origins.shape[0]
        threads = resolve_threads(self._threads) if ray_count >= PARALLEL_MIN_RAYS else 1
        threshold = self.coherent_sort_threshold
        if threshold <= 0 or ray_count < threshold or self._already_coherent(origins, directions):
            args = (
                self.wide_nodes_float64,
                self.leaf_triangles,
                self.leaf_ids,
                self.wide_roots,
                group_positions,
                group_orientations,
                self._world_boxes,
                origins,
                directions,
                max_distances,
                self.double_sided,
                out_distances,
                out_faces,
            )
            kernels = self._kernels
            self._run(kernels.scene_closest_hit_kernel, kernels.scene_closest_hit_parallel_kernel,
                      args, threads)  # fmt: skip
            return
        # large batch: cast in coarse 6-D Morton order of (origin, direction) so that
        # consecutive rays visit the same nodes while they are cached; results go back in
        # caller order
        kernels = self._kernels
        scratch = self._sort_scratch
        if scratch is None or scratch[0].shape[0] < ray_count:
            scratch = (
                np.empty(ray_count, np.int64),
                np.empty(ray_count, np.int64),
                np.empty((ray_count, 3)),
                np.empty((ray_count, 3)),
                np.empty(ray_count),
                np.empty(ray_count),
                np.empty(ray_count, np.int64),
            )
            self._sort_scratch = scratch
        keys, order, o, d, m, distances, faces = (a[:ray_count] for a in scratch)
        sort = (origins, directions, max_distances, keys, order, o, d, m)
        self._run(kernels.ray_bucket_order_kernel, kernels.ray_bucket_order_parallel_kernel, sort,
                  threads)  # fmt: skip
        args = (
            self.wide_nodes_float64,
            self.leaf_triangles,
            self.leaf_ids,
            self.wide_roots,
            group_positions,
            group_orientations,
            self._world_boxes,
            o,
            d,
            m,
            self.double_sided,
            distances,
            faces,
        )
        self._run(kernels.scene_closest_hit_kernel, kernels.scene_closest_hit_parallel_kernel,
                  args, threads)  # fmt: skip
        scatter = (order, distances, faces, out_distances, out_faces)
        self._run(kernels.scatter_hits_kernel, kernels.scatter_hits_parallel_kernel, scatter,
                  threads)  # fmt: skip


def __getattr__(name: str) -> object:
    """``EmbreexBackend`` lives in :mod:`runtime.rays.embree` (imported lazily)."""
    if name == "EmbreexBackend":
        from runtime.rays.embree import EmbreexBackend

        return EmbreexBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_ray_backend(
    name: str,
    meshes: Sequence[MeshArrays],
    double_sided: bool = False,
    threads: int | None = None,
    fixed_poses: Sequence[tuple[np.ndarray, np.ndarray] | None] | None = None,
) -> RayBackend:
    """Construct a backend by name.

    Args:
        name: ``"numba"`` (default BVH) or ``"embreex"``.
        meshes: per group, (vertices (V, 3) float64, faces (F, 3) int64) in the group frame.
        double_sided: hit back faces too.
        threads: threads per large cast of the Numba backend (None: Numba's count); Embree
            through embreex casts on one thread.
        fixed_poses: per group its constant world pose ``(position, orientation wxyz)`` or
            None when it moves (the embreex backend merges the fixed groups into one scene).

    Returns:
        The backend.

    Raises:
        ValueError: unknown name.
        ImportError: the backend's optional dependency is missing.
    """
    if name == "numba":
        return NumbaBvhBackend(meshes, double_sided, threads)
    if name == "embreex":
        from runtime.rays.embree import EmbreexBackend

        return EmbreexBackend(meshes, double_sided, fixed_poses)
    raise ValueError(f"unknown ray backend {name!r} (allowed: {', '.join(BACKEND_NAMES)})")
