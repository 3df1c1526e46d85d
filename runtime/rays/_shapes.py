"""Collision geometry for the ray scene: shapes, groups and USD transform helpers."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime.errors import SchemaError

__all__ = ["SolidShape"]

LOGGER = logging.getLogger("runtime.rays.scene")


def _require_trimesh() -> Any:
    try:
        import trimesh
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "RayScene needs the package trimesh to tessellate collision geometry "
            "(pip install trimesh)"
        ) from error
    return trimesh


@dataclass(frozen=True)
class SolidShape:
    """A convex solid for the "ray starts inside" rule, in its group frame.

    Attributes:
        kind: ``"box"``, ``"sphere"``, ``"capsule"``, ``"cylinder"`` or ``"convex"``.
        position: solid frame origin in the group frame [stage units], shape (3,).
        orientation: solid frame orientation in the group frame (w, x, y, z), shape (4,).
        params: box half extents, or (radius, half height of the axis part, 0) with the axis
            along the solid frame's z, shape (3,) [stage units]; zeros for convex.
        planes: convex half-spaces ``n . p <= d`` as rows ``[nx, ny, nz, d]`` in the solid
            frame, shape (P, 4); empty unless convex.
        bounds: enclosing sphere ``[cx, cy, cz, r]`` in the group frame, shape (4,); None
            derives it from the primitive parameters (required for convex solids).
    """

    kind: str
    position: np.ndarray
    orientation: np.ndarray
    params: np.ndarray
    planes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    bounds: np.ndarray | None = None


@dataclass
class _Group:
    path: str  # body path, or "" for the static world group
    body_index: int  # index into body_paths, -1 when the pose is fixed
    fixed_position: np.ndarray
    fixed_orientation: np.ndarray
    vertices: list[np.ndarray] = field(default_factory=list)
    faces: list[np.ndarray] = field(default_factory=list)
    face_actor: list[np.ndarray] = field(default_factory=list)
    solids: list[tuple[SolidShape, int]] = field(default_factory=list)
    vertex_count: int = 0
    # tessellations of analytic solids: shown by group_meshes(), never cast against
    shown_vertices: list[np.ndarray] = field(default_factory=list)
    shown_faces: list[np.ndarray] = field(default_factory=list)
    shown_count: int = 0

    def add(self, vertices: np.ndarray, faces: np.ndarray, actor: int) -> None:
        self.vertices.append(np.asarray(vertices, np.float64).reshape(-1, 3))
        self.faces.append(np.asarray(faces, np.int64).reshape(-1, 3) + self.vertex_count)
        self.face_actor.append(np.full(len(faces), actor, np.int64))
        self.vertex_count += len(vertices)
        self.show(vertices, faces)

    def show(self, vertices: np.ndarray, faces: np.ndarray) -> None:
        self.shown_vertices.append(np.asarray(vertices, np.float64).reshape(-1, 3))
        self.shown_faces.append(np.asarray(faces, np.int64).reshape(-1, 3) + self.shown_count)
        self.shown_count += len(vertices)


def _bounding_sphere(solid: SolidShape) -> np.ndarray:
    """``[cx, cy, cz, r]`` enclosing ``solid`` in its group frame (slightly padded)."""
    if solid.bounds is not None:
        return np.asarray(solid.bounds, np.float64)
    p = solid.params
    if solid.kind == "box":
        radius = float(np.linalg.norm(p))
    elif solid.kind == "sphere":
        radius = float(p[0])
    elif solid.kind == "capsule":
        radius = float(p[0] + p[1])
    else:
        radius = float(math.hypot(p[0], p[1]))
    return np.array([*solid.position, radius * (1.0 + 1e-9) + 1e-12])


def _decompose(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Translation (3,), rotation (3, 3) and per-axis scale (3,) of an affine 4x4 matrix."""
    linear = matrix[:3, :3]
    scale = np.linalg.norm(linear, axis=0)
    scale = np.where(scale > 0.0, scale, 1.0)
    rotation = linear / scale
    u, _, vt = np.linalg.svd(rotation)
    rotation = u @ vt
    if np.linalg.det(rotation) < 0.0:
        u[:, -1] *= -1.0
        rotation = u @ vt
    return matrix[:3, 3].copy(), rotation, scale


def _axis_rotation(axis: str) -> np.ndarray:
    """Rotation taking local z onto the given USD axis token."""
    if axis == "X":
        return np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    if axis == "Y":
        return np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    return np.eye(3)


def _axis_index(axis: str) -> int:
    return {"X": 0, "Y": 1}.get(axis, 2)


def _column_matrix(gf_matrix: Any) -> np.ndarray:
    """Column-vector 4x4 numpy matrix of a (row-vector) ``Gf.Matrix4d``."""
    return np.array(gf_matrix, dtype=np.float64).T


def _attr(prim: Any, name: str, default: Any) -> Any:
    attr = prim.GetAttribute(name)
    if attr and attr.IsValid():
        value = attr.Get()
        if value is not None:
            return value
    return default


def _is_rigid_body(prim: Any) -> bool:
    from pxr import UsdPhysics

    attr = prim.GetAttribute("physics:rigidBodyEnabled")
    if attr and attr.IsValid() and attr.HasAuthoredValue():
        return bool(attr.Get())
    return bool(prim.HasAPI(UsdPhysics.RigidBodyAPI))


def _owning_body(prim: Any) -> Any | None:
    current = prim
    while current and current.IsValid() and not current.IsPseudoRoot():
        if _is_rigid_body(current):
            return current
        current = current.GetParent()
    return None


def _mesh_triangles(prim: Any) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) and fan-triangulated faces (F, 3) of a ``UsdGeom.Mesh``, local frame."""
    path = str(prim.GetPath())
    points = _attr(prim, "points", None)
    counts = _attr(prim, "faceVertexCounts", None)
    indices = _attr(prim, "faceVertexIndices", None)
    if points is None or counts is None or indices is None:
        raise SchemaError(path, "points", "mesh collider without points/faces", "a closed mesh")
    vertices = np.asarray(points, np.float64).reshape(-1, 3)
    counts_a = np.asarray(counts, np.int64).reshape(-1)
    indices_a = np.asarray(indices, np.int64).reshape(-1)
    if counts_a.sum() != indices_a.size or np.any(counts_a < 3):
        raise SchemaError(
            path, "faceVertexCounts", "counts do not match faceVertexIndices", "counts >= 3"
        )
    if indices_a.size and (indices_a.min() < 0 or indices_a.max() >= len(vertices)):
        raise SchemaError(path, "faceVertexIndices", "index out of range", "0 .. len(points)-1")
    if not np.all(np.isfinite(vertices)):
        raise SchemaError(path, "points", "non-finite point", "finite numbers")
    triangles: list[list[int]] = []
    start = 0
    for count in counts_a:
        poly = indices_a[start : start + count]
        for k in range(1, count - 1):
            triangles.append([poly[0], poly[k], poly[k + 1]])
        start += count
    faces = np.array(triangles, np.int64).reshape(-1, 3)
    if str(_attr(prim, "orientation", "rightHanded")) == "leftHanded":
        faces = faces[:, ::-1].copy()
    return vertices, faces
