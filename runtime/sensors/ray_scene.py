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
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime.errors import SchemaError
from runtime.sensors.ray_backends import (
    PARALLEL_MIN_RAYS,
    RayBackend,
    make_ray_backend,
    resolve_threads,
)

__all__ = ["RayScene", "SolidShape", "DEFAULT_PLANE_HALF_EXTENT"]

LOGGER = logging.getLogger("runtime.sensors.ray_scene")

DEFAULT_PLANE_HALF_EXTENT = 1.0e5
"""Half extent [stage units] of the quad standing in for an infinite collision plane."""

_SOLID_CODES = {"box": 0, "sphere": 1, "capsule": 2, "cylinder": 3, "convex": 4}


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


def _quat_from_matrix(rotation: np.ndarray) -> np.ndarray:
    """(w, x, y, z) of a proper rotation matrix (3, 3)."""
    m = rotation
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    out = np.array(q, np.float64)
    out /= np.linalg.norm(out)
    return out if out[0] >= 0.0 else -out


def _rotation_from_quat(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


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


class RayScene:
    """Closest-hit ray queries over the collision geometry of a stage.

    Build with :meth:`from_stage`; the constructor takes already prepared groups and is
    mostly for tests.

    Attributes:
        actor_paths: hit paths; index i of ``cast``'s ``out_actors`` refers to entry i. The
            first ``len(body_paths)`` entries are ``body_paths`` themselves, then static
            collider prims and rigid bodies missing from ``body_paths``.
        body_paths: rigid bodies in ``PhysicsState`` order.
        backend: the :class:`~runtime.sensors.ray_backends.RayBackend` in use.
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
        from runtime.sensors import _bvh_kernels as kernels

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
        from runtime.sensors.ray_backends import NumbaBvhBackend

        self._fused = isinstance(self.backend, NumbaBvhBackend)
        self._no_bodies = (np.zeros((0, 3)), np.zeros((0, 4)))
        self._group_body_rows = np.ascontiguousarray(self._group_body)
        self._world_boxes = np.zeros((g_count, 6))
        self._scratch_size = -1

    # ------------------------------------------------------------------ construction

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
                :data:`~runtime.sensors.ray_backends.PARALLEL_MIN_RAYS` rays with the Numba
                backend (None: Numba's thread count, ``NUMBA_NUM_THREADS``); results do not
                depend on it.

        Returns:
            The scene.

        Raises:
            SchemaError: malformed collider geometry (names the prim and attribute).
            ImportError: trimesh (or the chosen backend's package) is missing.
        """
        from pxr import Usd, UsdGeom

        trimesh = _require_trimesh()
        body_paths = tuple(str(p) for p in body_paths)
        body_index = {p: i for i, p in enumerate(body_paths)}
        actor_paths = list(body_paths)
        actor_index = dict(body_index)
        time = Usd.TimeCode.Default()
        cache = UsdGeom.XformCache(time)
        world = _Group("", -1, np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
        groups: list[_Group] = [world]
        group_of: dict[str, _Group] = {}
        # instance proxies too: robot assets often keep their colliders in instanceable prims
        predicate = Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)
        for prim in Usd.PrimRange(stage.GetPseudoRoot(), predicate):
            from pxr import UsdPhysics

            if not prim.HasAPI(UsdPhysics.CollisionAPI):
                continue
            if not bool(_attr(prim, "physics:collisionEnabled", True)):
                continue
            body = _owning_body(prim)
            collider_world = _column_matrix(cache.GetLocalToWorldTransform(prim))
            if body is None:
                group = world
                to_group = collider_world
                actor_path = str(prim.GetPath())
                dynamic = False
            else:
                body_path = str(body.GetPath())
                body_world = _column_matrix(cache.GetLocalToWorldTransform(body))
                b_t, b_r, _ = _decompose(body_world)
                rigid = np.eye(4)
                rigid[:3, :3] = b_r
                rigid[:3, 3] = b_t
                to_group = np.linalg.solve(rigid, collider_world)
                actor_path = body_path
                dynamic = True
                group = group_of.get(body_path)  # type: ignore[assignment]
                if group is None:
                    index = body_index.get(body_path, -1)
                    group = _Group(body_path, index, b_t, _quat_from_matrix(b_r))
                    group_of[body_path] = group
                    groups.append(group)
            if actor_path not in actor_index:
                actor_index[actor_path] = len(actor_paths)
                actor_paths.append(actor_path)
            actor = actor_index[actor_path]
            cls._add_collider(trimesh, prim, to_group, group, actor, dynamic, plane_half_extent)
        return cls(
            body_paths,
            actor_paths,
            groups,
            backend=backend,
            double_sided=double_sided,
            threads=threads,
        )

    @staticmethod
    def _add_collider(
        trimesh: Any,
        prim: Any,
        to_group: np.ndarray,
        group: _Group,
        actor: int,
        dynamic: bool,
        plane_half_extent: float,
    ) -> None:
        path = str(prim.GetPath())
        type_name = str(prim.GetTypeName())
        from runtime.schema.readers import check_collider_transform

        check_collider_transform(prim)  # zero scale / zero quaternion: SchemaError
        t, r, scale = _decompose(to_group)
        if not (np.all(np.isfinite(to_group))):
            raise SchemaError(path, "xformOpOrder", "collider transform is not finite", "finite")

        def add_solid(kind: str, mesh: Any, rotation: np.ndarray, params: tuple) -> None:
            # cast exactly (analytic); the tessellation is only shown by group_meshes()
            vertices = np.asarray(mesh.vertices) @ rotation.T + t
            group.show(vertices, np.asarray(mesh.faces))
            solid = SolidShape(
                kind,
                t.copy(),
                _quat_from_matrix(rotation),
                np.array(params, np.float64),
            )
            group.solids.append((solid, actor))

        def add_convex(vertices: np.ndarray) -> None:
            hull = trimesh.Trimesh(vertices=vertices, process=True).convex_hull
            hv = np.asarray(hull.vertices, np.float64)
            hf = np.asarray(hull.faces, np.int64)
            group.add(hv, hf, actor)
            normals = np.asarray(hull.face_normals, np.float64)
            offsets = np.einsum("ij,ij->i", normals, hv[hf[:, 0]])
            planes = np.concatenate([normals, offsets[:, None]], axis=1)
            centre = 0.5 * (hv.min(axis=0) + hv.max(axis=0))
            radius = float(np.linalg.norm(hv - centre, axis=1).max())
            bounds = np.array([*centre, radius * (1.0 + 1e-9) + 1e-12])
            solid = SolidShape(
                "convex", np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3), planes, bounds
            )
            group.solids.append((solid, actor))

        if type_name == "Cube":
            size = float(_attr(prim, "size", 2.0))
            half = 0.5 * size * scale
            add_solid("box", trimesh.creation.box(extents=2.0 * half), r, tuple(half))
        elif type_name == "Sphere":
            radius = float(_attr(prim, "radius", 1.0)) * float(scale.max())
            mesh = trimesh.creation.icosphere(subdivisions=3, radius=radius)
            add_solid("sphere", mesh, r, (radius, 0.0, 0.0))
        elif type_name in ("Capsule", "Cylinder"):
            axis = str(_attr(prim, "axis", "Z"))
            k = _axis_index(axis)
            radial = float(max(scale[(k + 1) % 3], scale[(k + 2) % 3]))
            default_radius, default_height = (0.5, 1.0) if type_name == "Capsule" else (1.0, 2.0)
            radius = float(_attr(prim, "radius", default_radius)) * radial
            height = float(_attr(prim, "height", default_height)) * float(scale[k])
            rotation = r @ _axis_rotation(axis)
            if type_name == "Capsule":
                mesh = trimesh.creation.capsule(height=height, radius=radius, count=[24, 24])
                add_solid("capsule", mesh, rotation, (radius, 0.5 * height, 0.0))
            else:
                mesh = trimesh.creation.cylinder(radius=radius, height=height, sections=48)
                add_solid("cylinder", mesh, rotation, (radius, 0.5 * height, 0.0))
        elif type_name == "Cone":
            axis = str(_attr(prim, "axis", "Z"))
            radius = float(_attr(prim, "radius", 1.0))
            height = float(_attr(prim, "height", 2.0))
            cone = trimesh.creation.cone(radius=radius, height=height, sections=48)
            local = np.asarray(cone.vertices) - np.array([0.0, 0.0, 0.5 * height])
            local = local @ _axis_rotation(axis).T
            add_convex(local @ to_group[:3, :3].T + to_group[:3, 3])
        elif type_name == "Plane":
            axis = str(_attr(prim, "axis", "Z"))
            rotation = r @ _axis_rotation(axis)
            e = float(plane_half_extent)
            quad = np.array([[-e, -e, 0.0], [e, -e, 0.0], [e, e, 0.0], [-e, e, 0.0]])
            group.add(quad @ rotation.T + t, np.array([[0, 1, 2], [0, 2, 3]]), actor)
        elif type_name == "Mesh":
            vertices, faces = _mesh_triangles(prim)
            if len(faces) == 0:
                return
            approximation = str(_attr(prim, "physics:approximation", "none"))
            posed = vertices @ to_group[:3, :3].T + to_group[:3, 3]
            if approximation in ("convexHull", "convexDecomposition") or (
                dynamic and approximation == "none"
            ):
                add_convex(posed)
            elif approximation == "boundingCube":
                lo = vertices.min(axis=0)
                hi = vertices.max(axis=0)
                centre = 0.5 * (lo + hi)
                half = 0.5 * (hi - lo) * scale
                box = trimesh.creation.box(extents=2.0 * half)
                local_t = to_group[:3, :3] @ centre + to_group[:3, 3]
                group.show(np.asarray(box.vertices) @ r.T + local_t, box.faces)
                solid = SolidShape("box", local_t, _quat_from_matrix(r), half)
                group.solids.append((solid, actor))
            elif approximation == "boundingSphere":
                centre = 0.5 * (posed.min(axis=0) + posed.max(axis=0))
                radius = float(np.linalg.norm(posed - centre, axis=1).max())
                mesh = trimesh.creation.icosphere(subdivisions=3, radius=radius)
                group.show(np.asarray(mesh.vertices) + centre, mesh.faces)
                solid = SolidShape(
                    "sphere", centre, np.array([1.0, 0, 0, 0]), np.array([radius, 0, 0])
                )
                group.solids.append((solid, actor))
            else:
                if np.linalg.det(to_group[:3, :3]) < 0.0:
                    faces = faces[:, ::-1].copy()
                group.add(posed, faces, actor)
        else:
            LOGGER.warning(
                "%s: collider type %r is not supported by the ray scene; ignored", path, type_name
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
        if self._fused:
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
        faces = np.empty(origins.shape[0], np.int64)
        self.backend.cast(
            origins, directions, max_distances, positions, orientations, out_distances, faces
        )
        self._kernels.scene_hit_attributes_kernel(
            faces,
            self._face_groups,
            self._face_actors,
            self._face_normals,
            orientations,
            directions,
            self.double_sided,
            out_actors,
            out_normals,
        )
        if self._solid_groups.size:
            self._kernels.scene_solid_hits_kernel(
                self._solid_kinds, self._solid_positions, self._solid_orientations,
                self._solid_params, self._solid_bounds, self._solid_actors,
                self._group_solid_ranges, self._group_solid_boxes, positions, orientations,
                origins, directions, max_distances, out_distances, out_actors, out_normals,
            )  # fmt: skip
            inside = np.empty(origins.shape[0], np.int64)
            self._kernels.scene_inside_solid_kernel(
                self._solid_groups,
                self._solid_kinds,
                self._solid_positions,
                self._solid_orientations,
                self._solid_params,
                self._solid_plane_ranges,
                self._planes,
                self._solid_bounds,
                self._group_solid_ranges,
                self._group_solid_boxes,
                positions,
                orientations,
                origins,
                inside,
            )
            rows = np.nonzero(inside >= 0)[0]
            if rows.size:
                out_distances[rows] = 0.0
                out_actors[rows] = self._solid_actors[inside[rows]]
                out_normals[rows] = -directions[rows]

    def fused_arguments(self, ray_count: int) -> tuple | None:
        """Scene arrays of the one-call Numba query, for kernels that embed it.

        Args:
            ray_count: largest number of rays per query (sizes the scratch buffers).

        Returns:
            ``(node_boxes, node_refs, triangles, triangle_ids, group_roots,
            group_local_boxes, group_body)``, ``(face_groups, ..., double_sided,
            group_positions, group_orientations, world_boxes, scratch_faces,
            scratch_inside)`` in :func:`~runtime.sensors._bvh_kernels.scene_cast_kernel`
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
            b.node_boxes,  # type: ignore[attr-defined]
            b.node_refs,  # type: ignore[attr-defined]
            b.triangles,  # type: ignore[attr-defined]
            b.triangle_ids,  # type: ignore[attr-defined]
            b.group_roots,  # type: ignore[attr-defined]
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
            b.node_boxes,  # type: ignore[attr-defined]
            b.node_refs,  # type: ignore[attr-defined]
            b.triangles,  # type: ignore[attr-defined]
            b.triangle_ids,  # type: ignore[attr-defined]
            b.group_roots,  # type: ignore[attr-defined]
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
            kernel(*args, threads)
        else:
            kernel(*args)
