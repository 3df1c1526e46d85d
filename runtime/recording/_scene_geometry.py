"""Collision geometry of a scene for viewers: triangles per body frame, with colours.

The geometry comes from the ray scene (:meth:`runtime.rays.scene.RayScene.from_stage`,
the same triangles the raycast sensors hit): one part per moving body, expressed in that
body's frame, plus parts fixed in the world (static colliders, and rigid bodies that were not
recorded). Colours are the colliders' ``primvars:displayColor`` where authored; static
triangles are coloured by the static collider whose world bound contains them.

``pxr`` and ``trimesh`` are imported lazily.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import SimrtError

__all__ = ["GeometryPart", "collision_geometry", "open_scene"]

LOGGER = logging.getLogger("runtime.recording.export_mcap")

BODY_COLOR = (0.72, 0.74, 0.78, 1.0)
"""RGBA of robot links and other bodies without a display colour."""
STATIC_COLOR = (0.55, 0.55, 0.55, 1.0)
"""RGBA of static geometry without a display colour."""
VIEW_PLANE_HALF_EXTENT_M = 10.0
"""Half size [m] of the square drawn for an infinite collision plane."""


@dataclass(frozen=True)
class GeometryPart:
    """Triangles rigidly attached to one frame.

    Attributes:
        frame_id: body path (moves with the recorded body pose) or ``"world"``.
        key: a stable identifier (body or group path; ``"world"`` for static colliders).
        position: part origin in ``frame_id`` [stage units], shape (3,), float64.
        orientation: part rotation in ``frame_id`` (w, x, y, z), shape (4,), float64.
        triangles: vertices [stage units] in the part frame, shape (T, 3, 3), float64,
            counter-clockwise seen from outside.
        colors: RGBA in [0, 1] per triangle, shape (T, 4), float64.
    """

    frame_id: str
    key: str
    position: np.ndarray
    orientation: np.ndarray
    triangles: np.ndarray
    colors: np.ndarray


def open_scene(
    scene: Any, recording_path: Path, *, explicit: bool
) -> tuple[Any | None, str | None]:
    """Open the scene of a recording.

    Args:
        scene: a ``Usd.Stage``, or a path (relative paths are tried from the current
            directory, then from the recording's directory).
        recording_path: the recording (for relative scene paths).
        explicit: the caller named the scene; errors raise instead of being reported.

    Returns:
        ``(stage, None)``, or ``(None, reason)`` when the scene cannot be used.

    Raises:
        FileNotFoundError / SimrtError: ``explicit`` and the scene cannot be opened.
    """
    if scene is None or scene == "":
        return None, "the recording names no scene"
    if not isinstance(scene, (str, os.PathLike)):
        return scene, None
    candidates = [Path(scene)]
    if not Path(scene).is_absolute():
        candidates.append(Path(recording_path).parent / scene)
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        if explicit:
            raise FileNotFoundError(f"{scene}: no such scene file")
        return None, f"scene file {scene} not found"
    from runtime.schema.inspect_cli import open_stage

    try:
        return open_stage(str(found)), None
    except (OSError, SimrtError) as error:
        if explicit:
            raise
        return None, str(error)


def collision_geometry(stage: Any, body_paths: Sequence[str]) -> list[GeometryPart]:
    """The collision geometry of ``stage`` as triangle parts per frame.

    Args:
        stage: a ``Usd.Stage``.
        body_paths: recorded bodies; their parts are attached to frames of these names.

    Returns:
        Parts with at least one triangle: moving bodies first (recording order of the ray
        scene), then the static world.

    Raises:
        SchemaError: malformed collider geometry (names the prim and attribute).
    """
    from pxr import UsdGeom

    from runtime.rays.scene import RayScene

    meters = float(UsdGeom.GetStageMetersPerUnit(stage)) or 1.0
    scene = RayScene.from_stage(
        stage, list(body_paths), plane_half_extent=VIEW_PLANE_HALF_EXTENT_M / meters
    )
    recorded = set(body_paths)
    fixed_positions, fixed_orientations = scene.group_poses(None, None)
    parts: list[GeometryPart] = []
    for g, (path, mesh) in enumerate(scene.group_meshes()):
        vertices = np.asarray(mesh.vertices, np.float64)
        faces = np.asarray(mesh.faces, np.int64).reshape(-1, 3)
        if faces.shape[0] == 0:
            continue
        triangles = vertices[faces]
        if path in recorded:
            frame_id, position, orientation = path, np.zeros(3), np.array([1.0, 0, 0, 0])
            colors = np.tile(_subtree_color(stage, path, BODY_COLOR), (len(faces), 1))
        elif path:  # a rigid body that was not recorded: fixed at its USD pose
            frame_id = "world"
            position = np.array(fixed_positions[g], np.float64)
            orientation = np.array(fixed_orientations[g], np.float64)
            colors = np.tile(_subtree_color(stage, path, BODY_COLOR), (len(faces), 1))
        else:
            frame_id, position, orientation = "world", np.zeros(3), np.array([1.0, 0, 0, 0])
            colors = _static_colors(stage, triangles)
        parts.append(
            GeometryPart(frame_id, path or "world", position, orientation, triangles, colors)
        )
    return parts


def _display_color(prim: Any) -> tuple[float, float, float, float] | None:
    """First authored ``primvars:displayColor`` (and opacity) of ``prim``, or None."""
    attr = prim.GetAttribute("primvars:displayColor")
    if not attr or not attr.HasAuthoredValue():
        return None
    value = attr.Get()
    if value is None or len(value) == 0:
        return None
    rgb = np.clip(np.asarray(value[0], np.float64), 0.0, 1.0)
    alpha = 1.0
    opacity = prim.GetAttribute("primvars:displayOpacity")
    if opacity and opacity.HasAuthoredValue():
        values = opacity.Get()
        if values is not None and len(values) > 0:
            alpha = float(np.clip(values[0], 0.0, 1.0))
    return (float(rgb[0]), float(rgb[1]), float(rgb[2]), alpha)


def _colliders(stage: Any, root: str | None) -> list[Any]:
    """Collision-enabled prims under ``root`` (the whole stage for None)."""
    from pxr import Usd, UsdPhysics

    start = stage.GetPseudoRoot() if root is None else stage.GetPrimAtPath(root)
    if not start or not start.IsValid():
        return []
    predicate = Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)
    found = []
    for prim in Usd.PrimRange(start, predicate):
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            enabled = prim.GetAttribute("physics:collisionEnabled")
            if enabled and enabled.HasAuthoredValue() and not enabled.Get():
                continue
            found.append(prim)
    return found


def _in_rigid_body(prim: Any) -> bool:
    """Whether ``prim`` or an ancestor is an enabled rigid body (as the ray scene decides)."""
    from pxr import UsdPhysics

    current = prim
    while current and current.IsValid() and not current.IsPseudoRoot():
        enabled = current.GetAttribute("physics:rigidBodyEnabled")
        if enabled and enabled.IsValid() and enabled.HasAuthoredValue():
            if bool(enabled.Get()):
                return True
        elif current.HasAPI(UsdPhysics.RigidBodyAPI):
            return True
        current = current.GetParent()
    return False


def _subtree_color(stage: Any, path: str, default: tuple) -> np.ndarray:
    """Display colour of a body: its own, else its first coloured collider's."""
    prim = stage.GetPrimAtPath(path)
    if prim and prim.IsValid():
        color = _display_color(prim)
        if color is not None:
            return np.array(color)
    for collider in _colliders(stage, path):
        color = _display_color(collider)
        if color is not None:
            return np.array(color)
    return np.array(default, np.float64)


def _static_colors(stage: Any, triangles: np.ndarray) -> np.ndarray:
    """Per-triangle colour of static geometry (world frame) from the static colliders.

    Each triangle takes the colour of the smallest static collider whose world bound holds
    its centroid (bounds padded by 1e-6 of their size); the rest stay :data:`STATIC_COLOR`.
    """
    from pxr import Usd, UsdGeom

    colors = np.tile(np.array(STATIC_COLOR, np.float64), (len(triangles), 1))
    centroids = triangles.mean(axis=1)
    purposes = [UsdGeom.Tokens.default_, UsdGeom.Tokens.render, UsdGeom.Tokens.proxy,
                UsdGeom.Tokens.guide]  # fmt: skip
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), purposes, useExtentsHint=False)
    volume = np.full(len(triangles), np.inf)
    for prim in _colliders(stage, None):
        if _in_rigid_body(prim):
            continue
        color = _display_color(prim)
        if color is None:
            continue
        bound = cache.ComputeWorldBound(prim)
        box = bound.GetRange()
        if box.IsEmpty():
            continue
        lo = np.array(box.GetMin(), np.float64)
        hi = np.array(box.GetMax(), np.float64)
        pad = 1e-6 * max(float(np.max(hi - lo)), 1e-9) + 1e-9
        to_box = np.array(bound.GetInverseMatrix(), np.float64)  # row-vector convention
        local = centroids @ to_box[:3, :3] + to_box[3, :3]
        inside = np.all((local >= lo - pad) & (local <= hi + pad), axis=1)
        size = float(np.prod(np.maximum(hi - lo, 1e-12)))
        take = inside & (size < volume)
        colors[take] = color
        volume[take] = size
    return colors
