"""What every ray backend takes: mesh groups and cast arrays, checked the same way.

Shared by :class:`~runtime.rays.backends.NumbaBvhBackend` and
:class:`~runtime.rays.embree.EmbreexBackend` (the protocol they follow is
:class:`~runtime.rays.backends.RayBackend`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["MeshArrays", "check_cast_arguments", "check_meshes"]

MeshArrays = tuple[np.ndarray, np.ndarray]
"""One group's geometry: vertices (V, 3) float64 [stage units] and faces (F, 3) int64."""


def check_meshes(meshes: Sequence[MeshArrays]) -> list[MeshArrays]:
    checked: list[MeshArrays] = []
    for index, (vertices, faces) in enumerate(meshes):
        v = np.ascontiguousarray(vertices, dtype=np.float64)
        f = np.ascontiguousarray(faces, dtype=np.int64)
        if v.ndim != 2 or v.shape[1] != 3:
            raise ValueError(f"mesh {index}: vertices must have shape (V, 3), got {v.shape}")
        if f.size == 0:
            f = np.zeros((0, 3), np.int64)
        if f.ndim != 2 or f.shape[1] != 3:
            raise ValueError(f"mesh {index}: faces must have shape (F, 3), got {f.shape}")
        if f.size and (f.min() < 0 or f.max() >= v.shape[0]):
            raise ValueError(f"mesh {index}: face indices outside 0..{v.shape[0] - 1}")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"mesh {index}: vertices must be finite")
        checked.append((v, f))
    return checked


def check_cast_arguments(
    origins: np.ndarray,
    directions: np.ndarray,
    max_distances: np.ndarray,
    group_positions: np.ndarray,
    group_orientations: np.ndarray,
    out_distances: np.ndarray,
    out_faces: np.ndarray,
    group_count: int,
) -> None:
    ray_count = origins.shape[0]
    for name, array, shape, dtype in (
        ("origins", origins, (ray_count, 3), np.float64),
        ("directions", directions, (ray_count, 3), np.float64),
        ("max_distances", max_distances, (ray_count,), np.float64),
        ("group_positions", group_positions, (group_count, 3), np.float64),
        ("group_orientations", group_orientations, (group_count, 4), np.float64),
        ("out_distances", out_distances, (ray_count,), np.float64),
        ("out_faces", out_faces, (ray_count,), np.int64),
    ):
        if array.shape != shape or array.dtype != dtype or not array.flags.c_contiguous:
            raise ValueError(
                f"{name}: expected C-contiguous {np.dtype(dtype).name} array of shape {shape}, "
                f"got {array.dtype} {array.shape}"
            )
