"""A USD stage's colliders as the groups of a ray scene (``RayScene.from_stage``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime._quat import from_matrix as _quat_from_matrix
from runtime.errors import SchemaError
from runtime.rays._shapes import (
    SolidShape,
    _attr,
    _axis_index,
    _axis_rotation,
    _column_matrix,
    _decompose,
    _Group,
    _mesh_triangles,
    _owning_body,
    _require_trimesh,
)

__all__ = ["DEFAULT_PLANE_HALF_EXTENT", "collect_colliders"]

LOGGER = logging.getLogger("runtime.rays.scene")

DEFAULT_PLANE_HALF_EXTENT = 1.0e5
"""Half extent [stage units] of the quad standing in for an infinite collision plane."""


def collect_colliders(
    stage: Any, body_paths: Sequence[str], plane_half_extent: float = DEFAULT_PLANE_HALF_EXTENT
) -> tuple[tuple[str, ...], list[str], list[_Group]]:
    """The collision geometry of ``stage``, grouped by the rigid body that moves it.

    Every prim with ``UsdPhysics.CollisionAPI`` (and ``physics:collisionEnabled`` not false)
    becomes triangles or an analytic solid in the frame of its owning rigid body (nearest
    ancestor-or-self with a rigid body); colliders without one go to the static world group
    (group 0), their hit path the collider prim itself.

    Args:
        stage: a ``Usd.Stage``.
        body_paths: rigid bodies in ``PhysicsState`` order (their groups move with them).
        plane_half_extent: half size of the quad used for collision planes.

    Returns:
        ``(body_paths, actor_paths, groups)``: the bodies as a tuple, the hit paths (bodies
        first, then static collider prims and rigid bodies missing from ``body_paths``) and
        the groups (:class:`~runtime.rays._shapes._Group`), as ``RayScene`` takes them.

    Raises:
        SchemaError: malformed collider geometry (names the prim and attribute).
        ImportError: trimesh is missing.
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
        _add_collider(trimesh, prim, to_group, group, actor, dynamic, plane_half_extent)
    return body_paths, actor_paths, groups


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
            solid = SolidShape("sphere", centre, np.array([1.0, 0, 0, 0]), np.array([radius, 0, 0]))
            group.solids.append((solid, actor))
        else:
            if np.linalg.det(to_group[:3, :3]) < 0.0:
                faces = faces[:, ::-1].copy()
            group.add(posed, faces, actor)
    else:
        LOGGER.warning(
            "%s: collider type %r is not supported by the ray scene; ignored", path, type_name
        )
