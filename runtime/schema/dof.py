"""The DOF table: the single source of truth for flattened joint (DOF) order.

See docs/guides/inspect-and-schema.md#dof-order [REC]. The joints are taken in robot order
(:func:`runtime.schema.utils.get_all_robot_joints`, nested robots expanded in place) or,
for assets without ``IsaacRobotAPI`` (plain URDF/MJCF conversions) or whose
``robotJoints`` was never populated, in the order of the articulation walk used by
populate (depth-first from the root link, nothing authored). Unpopulated nested robots
are expanded the same way.
Per joint:

* revolute / prismatic: one DOF whose token is the axis (``RotX`` / ``TransZ`` ...);
* fixed (and distance) joints: no DOF;
* spherical: the rotation axes, d6 (any other joint type): every axis not locked by a
  ``PhysicsLimitAPI:<axis>`` with ``low > high`` (or ``low == high``), ordered by the
  authored ``isaac:physics:DofOffsetOpOrder``, else by the legacy per-axis
  ``isaac:physics:<Tr|Rot>_<X|Y|Z>:DoFOffset`` values, else canonically
  (TransX, TransY, TransZ, RotX, RotY, RotZ). Listed tokens naming locked axes are skipped
  (logged); free axes missing from the list are appended in canonical order (logged);
  unknown or repeated tokens raise :class:`~runtime.errors.SchemaError`.

Joints excluded from the articulation (``physics:excludeFromArticulation``) have no DOF.
Limits are reported in SI (rad, m) and as authored (degrees, stage units).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from pxr import Usd, UsdGeom, UsdPhysics

from runtime.errors import SchemaError
from runtime.schema.populate import discover_articulation_graph
from runtime.schema.tokens import (
    DEPRECATED_DOF_OFFSET_ATTRIBUTES,
    Attributes,
    Classes,
    Relations,
)
from runtime.schema.utils import find_robot_prims, get_all_robot_joints

__all__ = ["CANONICAL_DOF_TOKENS", "DofEntry", "DofTable", "build_dof_table", "joint_dofs"]

_LOG = logging.getLogger("runtime.schema.dof")

CANONICAL_DOF_TOKENS: tuple[str, ...] = ("TransX", "TransY", "TransZ", "RotX", "RotY", "RotZ")
"""DOF tokens in canonical order (the fallback order of multi-DOF joints)."""

_TOKEN_TO_AXIS = {t: a for _attr, t, a in DEPRECATED_DOF_OFFSET_ATTRIBUTES}
_ROT_TOKENS = ("RotX", "RotY", "RotZ")


@dataclass(frozen=True)
class DofEntry:
    """One degree of freedom of the robot.

    Attributes:
        index: flattened DOF index.
        joint_path: USD path of the joint prim.
        name: reported name: name override (``isaac:nameOverride`` first, then
            ``isaac:NameOverride``) else the prim name; multi-DOF joints get
            ``f"{joint_name}:{token}"``.
        token: ``"TransX"`` .. ``"RotZ"``; for revolute/prismatic the token of its axis.
        joint_type: ``"revolute"``, ``"prismatic"``, ``"spherical"`` or ``"d6"``.
        lower: lower limit in SI (rad or m); ``-inf`` when unlimited.
        upper: upper limit in SI; ``+inf`` when unlimited.
        usd_lower: lower limit as authored (degrees or stage units).
        usd_upper: upper limit as authored.
    """

    index: int
    joint_path: str
    name: str
    token: str
    joint_type: str
    lower: float
    upper: float
    usd_lower: float
    usd_upper: float

    @property
    def is_rotational(self) -> bool:
        """True for Rot* tokens (values in rad), False for Trans* (values in m)."""
        return self.token.startswith("Rot")


@dataclass(frozen=True)
class DofTable:
    """Ordered DOFs of a robot.

    Attributes:
        entries: the DOFs, ``entries[i].index == i``.
        robot_path: path of the robot prim the table was built for.
        meters_per_unit: stage linear unit in meters.
    """

    entries: tuple[DofEntry, ...]
    robot_path: str = ""
    meters_per_unit: float = 1.0

    @property
    def dof_count(self) -> int:
        """Number of DOFs."""
        return len(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def __getitem__(self, i: int) -> DofEntry:
        return self.entries[i]

    @property
    def names(self) -> tuple[str, ...]:
        """Reported names, DOF order."""
        return tuple(e.name for e in self.entries)

    @property
    def joint_paths(self) -> tuple[str, ...]:
        """Joint path of every DOF (repeated for multi-DOF joints), DOF order."""
        return tuple(e.joint_path for e in self.entries)

    @property
    def unique_joint_paths(self) -> tuple[str, ...]:
        """Joints contributing DOFs, first-DOF order, each once."""
        return tuple(dict.fromkeys(e.joint_path for e in self.entries))

    @property
    def tokens(self) -> tuple[str, ...]:
        """DOF tokens, DOF order."""
        return tuple(e.token for e in self.entries)

    @property
    def lower(self) -> np.ndarray:
        """Lower limits [rad or m], shape (dof_count,), float64 (``-inf`` unlimited)."""
        return np.array([e.lower for e in self.entries], dtype=np.float64)

    @property
    def upper(self) -> np.ndarray:
        """Upper limits [rad or m], shape (dof_count,), float64 (``+inf`` unlimited)."""
        return np.array([e.upper for e in self.entries], dtype=np.float64)

    @cached_property
    def _lookup(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for e in self.entries:
            out.setdefault(e.name, []).append(e.index)
            if e.joint_path != e.name:
                out.setdefault(e.joint_path, []).append(e.index)
        return out

    def indices_of(self, name_or_path: str) -> tuple[int, ...]:
        """All DOF indices of a reported name or a joint path.

        Args:
            name_or_path: reported DOF name or joint prim path.

        Returns:
            The indices (several for a multi-DOF joint path).

        Raises:
            KeyError: unknown name/path.
        """
        key = str(name_or_path)
        if key not in self._lookup:
            raise KeyError(f"{key!r} is not a DOF name or joint path of robot {self.robot_path}")
        return tuple(self._lookup[key])

    def index_of(self, name_or_path: str) -> int:
        """The DOF index of a reported name or a single-DOF joint path.

        Args:
            name_or_path: reported DOF name or joint prim path.

        Returns:
            The flattened index.

        Raises:
            KeyError: unknown, or ambiguous (several DOFs match; use :meth:`indices_of`).
        """
        idx = self.indices_of(name_or_path)
        if len(idx) != 1:
            raise KeyError(
                f"{name_or_path!r} matches DOFs {list(idx)} of robot {self.robot_path}; use "
                "indices_of() or a '<joint>:<token>' name"
            )
        return idx[0]


# --------------------------------------------------------------------------------------


def _joint_name(prim: Usd.Prim) -> str:
    for attr_name in (Attributes.NAME_OVERRIDE.name, Attributes.JOINT_NAME_OVERRIDE.name):
        attr = prim.GetAttribute(attr_name)
        if attr and attr.HasAuthoredValue():
            value = attr.Get()
            if value:
                return str(value)
    return prim.GetName()


def _float(prim: Usd.Prim, attr: Usd.Attribute, default: float) -> float:
    value = attr.Get() if attr else None
    if value is None:
        return default
    value = float(value)
    if math.isnan(value):
        raise SchemaError(str(prim.GetPath()), attr.GetName(), "limit is NaN", "a number or ±inf")
    return value


def _axis_token(prim: Usd.Prim, axis: str | None, rotational: bool) -> str:
    if axis not in ("X", "Y", "Z"):
        raise SchemaError(str(prim.GetPath()), "physics:axis", f"axis is {axis!r}", "X, Y, Z")
    return ("Rot" if rotational else "Trans") + axis


def _limit_pair(
    prim: Usd.Prim, lo_attr: Usd.Attribute, hi_attr: Usd.Attribute
) -> tuple[float, float]:
    return _float(prim, lo_attr, -math.inf), _float(prim, hi_attr, math.inf)


def _limits_si(token: str, lo: float, hi: float, meters_per_unit: float) -> tuple[float, float]:
    """Limits of a ``token`` axis in SI: degrees to radians, stage units to metres."""
    if token.startswith("Rot"):
        return math.radians(lo), math.radians(hi)
    return lo * meters_per_unit, hi * meters_per_unit


def _axis_limits(prim: Usd.Prim, token: str) -> tuple[float, float, bool]:
    """(low, high, locked) of one D6 axis from ``PhysicsLimitAPI:<axis>``."""
    axis = _TOKEN_TO_AXIS[token]
    if not prim.HasAPI(UsdPhysics.LimitAPI, axis):
        return -math.inf, math.inf, False
    lim = UsdPhysics.LimitAPI(prim, axis)
    low, high = _limit_pair(prim, lim.GetLowAttr(), lim.GetHighAttr())
    return low, high, low >= high


def _legacy_offsets(prim: Usd.Prim) -> dict[str, int]:
    out: dict[str, int] = {}
    for attr_name, token, _axis in DEPRECATED_DOF_OFFSET_ATTRIBUTES:
        attr = prim.GetAttribute(attr_name)
        if attr and attr.HasAuthoredValue() and attr.Get() is not None:
            try:
                out[token] = int(attr.Get())
            except (TypeError, ValueError) as exc:
                raise SchemaError(
                    str(prim.GetPath()), attr_name, f"value {attr.Get()!r} is not an integer"
                ) from exc
    return out


def _multi_dof_order(prim: Usd.Prim, candidates: tuple[str, ...]) -> list[str]:
    path = str(prim.GetPath())
    attr = prim.GetAttribute(Attributes.DOF_OFFSET_OP_ORDER.name)
    authored = list(attr.Get() or []) if attr and attr.HasAuthoredValue() else []
    if authored:
        seen: set[str] = set()
        for tok in authored:
            if tok not in CANONICAL_DOF_TOKENS:
                raise SchemaError(
                    path,
                    Attributes.DOF_OFFSET_OP_ORDER.name,
                    f"unknown DOF token {tok!r}",
                    ", ".join(CANONICAL_DOF_TOKENS),
                )
            if tok in seen:
                raise SchemaError(
                    path, Attributes.DOF_OFFSET_OP_ORDER.name, f"DOF token {tok!r} repeated"
                )
            seen.add(tok)
        order = [str(t) for t in authored]
    else:
        legacy = _legacy_offsets(prim)
        order = sorted(legacy, key=lambda t: (legacy[t], CANONICAL_DOF_TOKENS.index(t)))
    return order


def joint_dofs(prim: Usd.Prim, meters_per_unit: float = 1.0) -> list[tuple]:
    """DOFs of one joint prim (no index yet).

    Args:
        prim: a ``UsdPhysics.Joint`` prim.
        meters_per_unit: stage linear unit in meters (prismatic / translational limits).

    Returns:
        ``[(name, token, joint_type, lower_si, upper_si, usd_lower, usd_upper), ...]``;
        empty for fixed, distance and excluded joints.

    Raises:
        SchemaError: bad axis, NaN limits, unknown/repeated DofOffsetOpOrder tokens.
    """
    path = str(prim.GetPath())
    if not prim.IsA(UsdPhysics.Joint):
        raise SchemaError(path, "", f"prim of type {prim.GetTypeName()!r} is not a joint")
    if UsdPhysics.Joint(prim).GetExcludeFromArticulationAttr().Get():
        return []
    name = _joint_name(prim)
    if prim.IsA(UsdPhysics.FixedJoint) or prim.IsA(UsdPhysics.DistanceJoint):
        return []
    revolute = prim.IsA(UsdPhysics.RevoluteJoint)
    if revolute or prim.IsA(UsdPhysics.PrismaticJoint):
        j = UsdPhysics.RevoluteJoint(prim) if revolute else UsdPhysics.PrismaticJoint(prim)
        token = _axis_token(prim, j.GetAxisAttr().Get(), revolute)
        lo, hi = _limit_pair(prim, j.GetLowerLimitAttr(), j.GetUpperLimitAttr())
        if lo > hi:
            raise SchemaError(
                path, "physics:lowerLimit", f"lower limit {lo} > upper limit {hi}", "lower <= upper"
            )
        jtype = "revolute" if revolute else "prismatic"
        return [(name, token, jtype, *_limits_si(token, lo, hi, meters_per_unit), lo, hi)]
    if prim.IsA(UsdPhysics.SphericalJoint):
        jtype = "spherical"
        j = UsdPhysics.SphericalJoint(prim)
        axis = j.GetAxisAttr().Get() or "X"
        cone0 = _float(prim, j.GetConeAngle0LimitAttr(), -1.0)
        cone1 = _float(prim, j.GetConeAngle1LimitAttr(), -1.0)
        axes = "XYZ"
        k = axes.index(axis) if axis in axes else 0
        limits = {"Rot" + axis: (-math.inf, math.inf)}
        for cone, off in ((cone0, 1), (cone1, 2)):
            lim = (-cone, cone) if cone >= 0 else (-math.inf, math.inf)
            limits["Rot" + axes[(k + off) % 3]] = lim
        free = {t: (limits[t][0], limits[t][1], False) for t in _ROT_TOKENS}
        for t in CANONICAL_DOF_TOKENS[:3]:
            free[t] = (0.0, 0.0, True)
    else:
        jtype = "d6"
        free = {t: _axis_limits(prim, t) for t in CANONICAL_DOF_TOKENS}
    order = _multi_dof_order(prim, CANONICAL_DOF_TOKENS)
    result_tokens: list[str] = []
    for tok in order:
        if free[tok][2]:
            _LOG.warning(
                "Joint %s: %s lists %s but that axis is locked; it has no DOF.",
                path,
                Attributes.DOF_OFFSET_OP_ORDER.name,
                tok,
            )
            continue
        result_tokens.append(tok)
    missing = [t for t in CANONICAL_DOF_TOKENS if not free[t][2] and t not in result_tokens]
    if order and missing:
        _LOG.warning(
            "Joint %s: free axes %s are missing from its DOF order; appended in canonical order.",
            path,
            missing,
        )
    result_tokens.extend(missing)
    out = []
    for tok in result_tokens:
        lo, hi, _locked = free[tok]
        out.append((f"{name}:{tok}", tok, jtype, *_limits_si(tok, lo, hi, meters_per_unit), lo, hi))
    return out


def _robot_joint_prims(stage: Usd.Stage, robot_prim: Usd.Prim, seen: set[str]) -> list[Usd.Prim]:
    key = str(robot_prim.GetPath())
    if key in seen:
        return []
    seen.add(key)
    rel = robot_prim.GetRelationship(Relations.ROBOT_JOINTS.name)
    if robot_prim.HasAPI(Classes.ROBOT_API.value) and rel and rel.GetTargets():
        prims = get_all_robot_joints(stage, robot_prim, parse_nested_robots=True)
    else:
        # no schema, or a robot API whose joint list was never populated
        prims = discover_articulation_graph(stage, robot_prim).joints
    out: list[Usd.Prim] = []
    for p in prims:
        if p.IsA(UsdPhysics.Joint):
            out.append(p)
        elif p.HasAPI(Classes.ROBOT_API.value) and p != robot_prim:
            out.extend(_robot_joint_prims(stage, p, seen))
        else:
            _LOG.warning(
                "Robot %s lists %s (type %r) as a joint; it is not a joint and has no DOF.",
                key,
                p.GetPath(),
                p.GetTypeName(),
            )
    return out


def build_dof_table(stage: Usd.Stage, robot_prim: Usd.Prim | str | None = None) -> DofTable:
    """Build the DOF table of a robot.

    Args:
        stage: the stage.
        robot_prim: the robot prim (or its path). None: the first top-level prim with
            ``IsaacRobotAPI``, else the default prim, else the pseudo-root.

    Returns:
        The table; ``entries[i].index == i``.

    Raises:
        SchemaError: invalid robot prim, or invalid joint data (the message names the prim
            and the attribute).
    """
    if stage is None:
        raise SchemaError("", "", "stage is invalid")
    if isinstance(robot_prim, str):
        path = robot_prim
        robot_prim = stage.GetPrimAtPath(path)
        if not robot_prim or not robot_prim.IsValid():
            raise SchemaError(path, "", "robot prim does not exist")
    if robot_prim is None:
        robots = find_robot_prims(stage)
        robot_prim = robots[0] if robots else stage.GetDefaultPrim()
        if not robot_prim:
            robot_prim = stage.GetPseudoRoot()
    if not robot_prim or not robot_prim.IsValid():
        raise SchemaError("", "", "robot prim is invalid")
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
    entries: list[DofEntry] = []
    for joint in _robot_joint_prims(stage, robot_prim, set()):
        for name, token, jtype, lo, hi, ulo, uhi in joint_dofs(joint, mpu):
            entries.append(
                DofEntry(
                    index=len(entries),
                    joint_path=str(joint.GetPath()),
                    name=name,
                    token=token,
                    joint_type=jtype,
                    lower=float(lo),
                    upper=float(hi),
                    usd_lower=float(ulo),
                    usd_upper=float(uhi),
                )
            )
    return DofTable(tuple(entries), str(robot_prim.GetPath()), mpu)
