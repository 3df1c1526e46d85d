"""Authoring raycast sensor prims (docs/sensors/raycast.md#authoring)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from runtime.errors import SchemaError

LOGGER = logging.getLogger("runtime.sensors")

__all__ = ["create_raycast_sensor", "set_raycast_time_offsets"]


def create_raycast_sensor(
    stage: Any,
    prim_path: str,
    origins: Any,
    directions: Any,
    *,
    min_range: float = 0.4,
    max_range: float = 100.0,
    output_frame_of_reference: str = "SENSOR",
    report_hit_prim_paths: bool = False,
    time_offsets: Any = None,
    translation: Any = None,
    position: Any = None,
    orientation: Any = None,
) -> Any:
    """Author an ``IsaacRaycastSensor`` prim (the reference's Python ``create`` defaults).

    Writes ``numRays = len(origins)``, ``minRange``, ``maxRange``, ``rayOrigins``,
    ``rayDirections``, ``outputFrameOfReference``, ``reportHitPrimPaths`` and
    ``rayTimeOffsets`` only when given.

    Args:
        stage: the ``Usd.Stage``.
        prim_path: path of the new sensor prim.
        origins: per-ray origins [stage units], shape (N, 3), sensor frame.
        directions: per-ray directions, shape (N, 3), sensor frame (need not be unit).
        min_range: ``minRange`` [stage units].
        max_range: ``maxRange`` [stage units].
        output_frame_of_reference: ``"SENSOR"`` or ``"WORLD"``.
        report_hit_prim_paths: ``reportHitPrimPaths``.
        time_offsets: optional per-ray ``rayTimeOffsets`` [s], shape (N,).
        translation: optional local translation (parent frame) [stage units], (3,).
        position: optional world position [stage units], (3,); exclusive with
            ``translation``.
        orientation: optional local orientation (w, x, y, z), (4,).

    Returns:
        The created ``Usd.Prim``.

    Raises:
        SchemaError: mismatched array lengths, ``position`` together with ``translation``,
            an unknown output frame, or non-finite values.
    """
    from pxr import Gf, Sdf, UsdGeom

    path = str(prim_path)
    o = np.asarray(origins, np.float64).reshape(-1, 3)
    d = np.asarray(directions, np.float64).reshape(-1, 3)
    if len(o) != len(d):
        raise SchemaError(path, "rayDirections", f"{len(d)} directions for {len(o)} origins",
                          "one direction per origin")  # fmt: skip
    if len(o) == 0:
        raise SchemaError(path, "rayOrigins", "no rays", "at least one ray")
    if position is not None and translation is not None:
        raise SchemaError(path, "xformOp:translate", "both position and translation given",
                          "position (world) or translation (local), not both")  # fmt: skip
    if output_frame_of_reference not in ("SENSOR", "WORLD"):
        raise SchemaError(path, "outputFrameOfReference", repr(output_frame_of_reference),
                          "SENSOR, WORLD")  # fmt: skip
    offsets = None if time_offsets is None else np.asarray(time_offsets, np.float64).reshape(-1)
    if offsets is not None and len(offsets) != len(o):
        raise SchemaError(path, "rayTimeOffsets", f"{len(offsets)} offsets for {len(o)} rays",
                          "one offset per ray")  # fmt: skip
    for name, values in (("rayOrigins", o), ("rayDirections", d)):
        if not np.all(np.isfinite(values)):
            raise SchemaError(path, name, "non-finite value", "finite numbers")
    prim = stage.DefinePrim(path, "IsaacRaycastSensor")
    prim.CreateAttribute("numRays", Sdf.ValueTypeNames.UInt).Set(len(o))
    prim.CreateAttribute("minRange", Sdf.ValueTypeNames.Float).Set(float(min_range))
    prim.CreateAttribute("maxRange", Sdf.ValueTypeNames.Float).Set(float(max_range))
    prim.CreateAttribute("rayOrigins", Sdf.ValueTypeNames.Float3Array).Set(
        [Gf.Vec3f(*map(float, row)) for row in o]
    )
    prim.CreateAttribute("rayDirections", Sdf.ValueTypeNames.Float3Array).Set(
        [Gf.Vec3f(*map(float, row)) for row in d]
    )
    prim.CreateAttribute("outputFrameOfReference", Sdf.ValueTypeNames.Token).Set(
        output_frame_of_reference
    )
    prim.CreateAttribute("reportHitPrimPaths", Sdf.ValueTypeNames.Bool).Set(
        bool(report_hit_prim_paths)
    )
    if offsets is not None:
        set_raycast_time_offsets(prim, offsets)
    xformable = UsdGeom.Xformable(prim)
    if position is not None:
        parent = UsdGeom.Xformable(prim.GetParent())
        parent_world = parent.ComputeLocalToWorldTransform(0.0) if parent else Gf.Matrix4d(1.0)
        translation = parent_world.GetInverse().Transform(Gf.Vec3d(*map(float, position)))
    if translation is not None:
        xformable.AddTranslateOp().Set(Gf.Vec3d(*map(float, translation)))
    if orientation is not None:
        w, x, y, z = map(float, orientation)
        xformable.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(w, x, y, z))
    return prim


def set_raycast_time_offsets(prim: Any, time_offsets: Any) -> None:
    """Author ``rayTimeOffsets`` on an existing ``IsaacRaycastSensor`` prim.

    Args:
        prim: the sensor prim.
        time_offsets: per-ray time offsets [s], one per ray (``numRays``).

    Raises:
        SchemaError: the prim is not a raycast sensor or the length differs from ``numRays``.
    """
    from pxr import Sdf

    path = str(prim.GetPath())
    if str(prim.GetTypeName()) != "IsaacRaycastSensor":
        raise SchemaError(path, "typeName", f"{str(prim.GetTypeName())!r}", "IsaacRaycastSensor")
    offsets = np.asarray(time_offsets, np.float64).reshape(-1)
    attr = prim.GetAttribute("numRays")
    value = attr.Get() if attr else None
    num_rays = int(value) if value is not None else 1
    if len(offsets) != num_rays:
        raise SchemaError(path, "rayTimeOffsets", f"{len(offsets)} offsets for {num_rays} rays",
                          "one offset per ray (numRays)")  # fmt: skip
    if not np.all(np.isfinite(offsets)):
        raise SchemaError(path, "rayTimeOffsets", "non-finite value", "finite numbers")
    prim.CreateAttribute("rayTimeOffsets", Sdf.ValueTypeNames.FloatArray).Set(
        [float(t) for t in offsets]
    )
