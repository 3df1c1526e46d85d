"""World poses of USD prims as rigid :class:`~runtime.kinematics.math.Transform` + scale.

Reading (:func:`world_pose`) splits a prim's world matrix into a rigid transform and a
per-axis scale; writing (:func:`set_world_pose`) authors translate / orient / scale ops so the
prim lands at a rigid world pose with its authored scale kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pxr import Gf, Usd, UsdGeom

from runtime.kinematics.math import Transform, quat_from_matrix

__all__ = ["rigid_and_scale", "set_world_pose", "world_matrix", "world_pose"]


def world_matrix(prim: Usd.Prim) -> np.ndarray:
    """4x4 column-convention world matrix of ``prim`` (with scale)."""
    m = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    return np.array(m, dtype=np.float64).T


def rigid_and_scale(m: np.ndarray) -> tuple[Transform, np.ndarray]:
    """Split a column-convention 4x4 into a rigid Transform and per-axis scale (3,)."""
    lin = m[:3, :3]
    scale = np.linalg.norm(lin, axis=0)
    safe = np.where(scale > 0.0, scale, 1.0)
    rot = lin / safe
    if np.linalg.det(rot) < 0.0:
        rot[:, 0] = -rot[:, 0]
        scale[0] = -scale[0]
    return Transform(m[:3, 3], quat_from_matrix(rot)), scale


def world_pose(prim: Usd.Prim) -> tuple[Transform, np.ndarray]:
    """Rigid world pose and world scale of ``prim``."""
    return rigid_and_scale(world_matrix(prim))


def set_world_pose(prim: Usd.Prim, pose: Transform) -> None:
    """Place ``prim`` at rigid world ``pose`` keeping its authored scale.

    Authors ``xformOp:translate``, ``xformOp:orient`` and ``xformOp:scale`` (in that order),
    reusing the precision of existing ops (double otherwise); the scale op keeps its authored
    value ((1, 1, 1) when there was none).
    """
    xf = UsdGeom.Xformable(prim)
    parent = prim.GetParent()
    if parent and not parent.IsPseudoRoot():
        parent_m = world_matrix(parent)
    else:
        parent_m = np.eye(4)
    local = np.linalg.solve(parent_m, pose.matrix())
    local_pose, _ = rigid_and_scale(local)
    precision = {}
    scale_value = None
    for op in xf.GetOrderedXformOps():
        precision[op.GetOpType()] = op.GetPrecision()
        if op.GetOpType() == UsdGeom.XformOp.TypeScale and op.GetOpName() == "xformOp:scale":
            scale_value = op.Get()
    xf.ClearXformOpOrder()
    dbl = UsdGeom.XformOp.PrecisionDouble

    def _op(kind: Any, adder: Any) -> UsdGeom.XformOp:
        prec = precision.get(kind, dbl)
        name = {
            UsdGeom.XformOp.TypeTranslate: "xformOp:translate",
            UsdGeom.XformOp.TypeOrient: "xformOp:orient",
            UsdGeom.XformOp.TypeScale: "xformOp:scale",
        }[kind]
        attr = prim.GetAttribute(name)
        if attr and kind not in precision:
            prim.RemoveProperty(name)
        try:
            return adder(prec)
        except Exception:  # noqa: BLE001 - type clash with a stale attribute
            prim.RemoveProperty(name)
            return adder(prec)

    t_op = _op(UsdGeom.XformOp.TypeTranslate, xf.AddTranslateOp)
    o_op = _op(UsdGeom.XformOp.TypeOrient, xf.AddOrientOp)
    s_op = _op(UsdGeom.XformOp.TypeScale, xf.AddScaleOp)
    if t_op.GetPrecision() == UsdGeom.XformOp.PrecisionFloat:
        t_op.Set(Gf.Vec3f(*local_pose.t))
    else:
        t_op.Set(Gf.Vec3d(*local_pose.t))
    q = local_pose.q
    if o_op.GetPrecision() == UsdGeom.XformOp.PrecisionFloat:
        o_op.Set(Gf.Quatf(float(q[0]), Gf.Vec3f(*q[1:])))
    else:
        o_op.Set(Gf.Quatd(float(q[0]), Gf.Vec3d(*q[1:])))
    if scale_value is None:
        scale_value = (1.0, 1.0, 1.0)
    if s_op.GetPrecision() == UsdGeom.XformOp.PrecisionFloat:
        s_op.Set(Gf.Vec3f(*scale_value))
    elif s_op.GetPrecision() == UsdGeom.XformOp.PrecisionHalf:
        s_op.Set(Gf.Vec3h(*scale_value))
    else:
        s_op.Set(Gf.Vec3d(*scale_value))
