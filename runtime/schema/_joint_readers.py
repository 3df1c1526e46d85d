"""Reader of physics joints with their Isaac joint data (DOFs, limits, DOF order).

Part of :mod:`runtime.schema.readers` (the public import path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from pxr import Usd, UsdGeom, UsdPhysics

from runtime.errors import SchemaError
from runtime.schema._schema_tables import DOF_TOKENS, FORWARD_AXIS_TOKENS
from runtime.schema._values import (
    _freeze,
    _name_override,
    _path,
    _read_bool,
    _read_float,
    _read_string_array,
    _read_token,
    _read_vec,
    _targets,
    _wrong_prim_type,
)


@dataclass(frozen=True)
class JointDof:
    """One degree of freedom of a joint.

    Attributes:
        token: ``"TransX"`` .. ``"RotZ"``.
        usd_lower: lower limit in USD units (degrees or stage length); -inf when free.
        usd_upper: upper limit in USD units; +inf when free.
        lower: lower limit in SI (radians or metres); -inf when free.
        upper: upper limit in SI; +inf when free.
        locked: True for a D6 axis whose limit has ``low > high`` (UsdPhysics: locked).
    """

    token: str
    usd_lower: float
    usd_upper: float
    lower: float
    upper: float
    locked: bool = False


@dataclass(frozen=True, eq=False)
class JointInfo:
    """A physics joint with its Isaac joint data.

    Attributes:
        path: USD path of the joint prim.
        name: reported name (``isaac:nameOverride``, then ``isaac:NameOverride``, else prim name).
        name_override: the override that was used (``""`` when none).
        joint_type: ``"revolute" | "prismatic" | "spherical" | "fixed" | "d6" | "generic"``.
        axis: ``"X" | "Y" | "Z"`` for revolute/prismatic/spherical; ``""`` otherwise.
        usd_lower: revolute/prismatic lower limit as authored (degrees / stage units),
            -inf when unlimited; NaN-free. Inverted limits (lower > upper) mean unlimited
            (USD convention) and read (-inf, +inf).
        usd_upper: upper counterpart of ``usd_lower``.
        lower: ``usd_lower`` in SI (radians; metres = stage units * metersPerUnit).
        upper: ``usd_upper`` in SI.
        body0: first target of ``physics:body0`` (``""`` when none, i.e. the world).
        body1: first target of ``physics:body1`` (``""`` when none).
        local_pos0: ``physics:localPos0`` [stage units], shape (3,), float64.
        local_rot0: ``physics:localRot0`` quaternion wxyz, shape (4,), float64.
        local_pos1: ``physics:localPos1`` [stage units], shape (3,), float64.
        local_rot1: ``physics:localRot1`` quaternion wxyz, shape (4,), float64.
        dof_offset_op_order: authored ``isaac:physics:DofOffsetOpOrder`` tokens.
        dofs: the joint's DOFs (revolute/prismatic: one; fixed: none; spherical: RotX..RotZ;
            d6/generic: the six axes, ``locked`` set for locked ones), canonical order.
        has_joint_api: whether ``IsaacJointAPI`` is applied.
        exclude_from_articulation: ``physics:excludeFromArticulation``.
        meters_per_unit: the stage's ``metersPerUnit``.
    """

    path: str
    name: str
    name_override: str
    joint_type: str
    axis: str
    usd_lower: float
    usd_upper: float
    lower: float
    upper: float
    body0: str
    body1: str
    local_pos0: np.ndarray = field(repr=False)
    local_rot0: np.ndarray = field(repr=False)
    local_pos1: np.ndarray = field(repr=False)
    local_rot1: np.ndarray = field(repr=False)
    dof_offset_op_order: tuple[str, ...]
    dofs: tuple[JointDof, ...]
    has_joint_api: bool
    exclude_from_articulation: bool
    meters_per_unit: float

    @property
    def free_dofs(self) -> tuple[JointDof, ...]:
        """DOFs that are not locked."""
        return tuple(d for d in self.dofs if not d.locked)


_JOINT_TYPES = {
    "PhysicsRevoluteJoint": "revolute",
    "PhysicsPrismaticJoint": "prismatic",
    "PhysicsSphericalJoint": "spherical",
    "PhysicsFixedJoint": "fixed",
    "PhysicsJoint": "d6",
    "PhysicsD6Joint": "d6",
}


def joint_type_of(prim: Usd.Prim) -> str | None:
    """Classify a joint prim.

    Args:
        prim: any prim.

    Returns:
        ``"revolute"``, ``"prismatic"``, ``"spherical"``, ``"fixed"``, ``"d6"`` (a plain
        ``PhysicsJoint``), ``"generic"`` (any other ``UsdPhysics.Joint``), or None when the
        prim is not a physics joint.
    """
    type_name = str(prim.GetTypeName())
    if type_name in _JOINT_TYPES:
        return _JOINT_TYPES[type_name]
    if prim.IsA(UsdPhysics.Joint):
        return "generic"
    return None


def _stage_mpu(stage: Usd.Stage) -> float:
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
    if not math.isfinite(mpu) or mpu <= 0.0:
        raise SchemaError(
            "/",
            "metersPerUnit",
            f"value {mpu!r} is not a positive finite number",
            "a positive float",
        )
    return mpu


def _limit_pair(prim: Usd.Prim, low_name: str, high_name: str) -> tuple[float, float, bool]:
    """(low, high, inverted) with NaN rejected and unauthored values as ∓inf."""
    low = _read_float(prim, low_name, -math.inf, allow_inf=True)
    high = _read_float(prim, high_name, math.inf, allow_inf=True)
    return low, high, low > high


def _to_si(token: str, value: float, mpu: float) -> float:
    if math.isinf(value):
        return value
    return math.radians(value) if token.startswith("Rot") else value * mpu


def _body_target(prim: Usd.Prim, name: str) -> str:
    targets = _targets(prim, name)
    if len(targets) > 1:
        raise SchemaError(
            _path(prim), name, f"{len(targets)} targets {list(targets)}", "at most one body"
        )
    return targets[0] if targets else ""


def _local_rotation(prim: Usd.Prim, name: str) -> np.ndarray:
    """A joint frame rotation (wxyz), rejected when its norm is zero (no rotation at all)."""
    quat = _read_vec(prim, name, 4, (1.0, 0.0, 0.0, 0.0))
    norm = float(np.linalg.norm(quat))
    if norm < 1e-12:
        raise SchemaError(
            _path(prim), name, f"zero quaternion {tuple(quat.tolist())}", "a non-zero quaternion"
        )
    return _freeze(quat)


def _read_dof_order(prim: Usd.Prim) -> tuple[str, ...]:
    name = "isaac:physics:DofOffsetOpOrder"
    tokens = _read_string_array(prim, name, "token[]")
    for token in tokens:
        if token not in DOF_TOKENS:
            raise SchemaError(_path(prim), name, f"unknown token {token!r}", ", ".join(DOF_TOKENS))
    if len(set(tokens)) != len(tokens):
        raise SchemaError(
            _path(prim), name, f"duplicate tokens in {list(tokens)}", "each token at most once"
        )
    return tokens


def read_joint(prim: Usd.Prim) -> JointInfo:
    """Read and validate a physics joint.

    Args:
        prim: a ``UsdPhysics.Joint`` prim.

    Returns:
        The joint record with limits in USD units and SI.

    Raises:
        SchemaError: not a joint, no body target at all, a body target that does not exist,
            more than one target, body0 == body1, an unknown axis or DOF token, a wrong value
            type, NaN in a limit or local pose, or a zero local rotation quaternion.
    """
    path = _path(prim)
    joint_type = joint_type_of(prim)
    if joint_type is None:
        raise _wrong_prim_type(
            prim,
            "a physics joint",
            "PhysicsRevoluteJoint, PhysicsPrismaticJoint, PhysicsSphericalJoint, "
            "PhysicsFixedJoint, PhysicsJoint",
        )
    mpu = _stage_mpu(prim.GetStage())
    body0 = _body_target(prim, "physics:body0")
    body1 = _body_target(prim, "physics:body1")
    if not body0 and not body1:
        raise SchemaError(
            path,
            "physics:body0",
            "neither physics:body0 nor physics:body1 has a target",
            "at least one body target",
        )
    if body0 and body0 == body1:
        raise SchemaError(
            path,
            "physics:body1",
            f"body0 and body1 are the same prim {body0}",
            "two different bodies (or one empty for the world)",
        )
    axis = ""
    if joint_type in ("revolute", "prismatic", "spherical"):
        axis = _read_token(prim, "physics:axis", "X", FORWARD_AXIS_TOKENS)
    dofs: list[JointDof] = []
    usd_lower, usd_upper = -math.inf, math.inf
    if joint_type in ("revolute", "prismatic"):
        token = ("Rot" if joint_type == "revolute" else "Trans") + axis
        low, high, inverted = _limit_pair(prim, "physics:lowerLimit", "physics:upperLimit")
        if not inverted:
            usd_lower, usd_upper = low, high
        dofs.append(
            JointDof(
                token,
                usd_lower,
                usd_upper,
                _to_si(token, usd_lower, mpu),
                _to_si(token, usd_upper, mpu),
            )
        )
    elif joint_type != "fixed":
        tokens = DOF_TOKENS[3:] if joint_type == "spherical" else DOF_TOKENS
        for token in tokens:
            usd_axis = token[0].lower() + token[1:]
            low, high, locked = -math.inf, math.inf, False
            if prim.HasAPI(UsdPhysics.LimitAPI, usd_axis):
                low, high, locked = _limit_pair(
                    prim, f"limit:{usd_axis}:physics:low", f"limit:{usd_axis}:physics:high"
                )
            dofs.append(
                JointDof(
                    token, low, high, _to_si(token, low, mpu), _to_si(token, high, mpu), locked
                )
            )
    name_override = _name_override(prim)
    exclude = _read_bool(prim, "physics:excludeFromArticulation", False)
    return JointInfo(
        path=path,
        name=name_override or prim.GetName(),
        name_override=name_override,
        joint_type=joint_type,
        axis=axis,
        usd_lower=usd_lower,
        usd_upper=usd_upper,
        lower=_to_si(dofs[0].token, usd_lower, mpu) if len(dofs) == 1 else -math.inf,
        upper=_to_si(dofs[0].token, usd_upper, mpu) if len(dofs) == 1 else math.inf,
        body0=body0,
        body1=body1,
        local_pos0=_freeze(_read_vec(prim, "physics:localPos0", 3, (0.0, 0.0, 0.0))),
        local_rot0=_local_rotation(prim, "physics:localRot0"),
        local_pos1=_freeze(_read_vec(prim, "physics:localPos1", 3, (0.0, 0.0, 0.0))),
        local_rot1=_local_rotation(prim, "physics:localRot1"),
        dof_offset_op_order=_read_dof_order(prim),
        dofs=tuple(dofs),
        has_joint_api=bool(prim.HasAPI("IsaacJointAPI")),
        exclude_from_articulation=bool(exclude),
        meters_per_unit=mpu,
    )
