"""Migration of deprecated Robot Schema data (docs/guides/inspect-and-schema.md#migration).

One consistent rule set (the reference's Python and C++ versions disagree, §9.11/§9.12):

* Per-axis legacy offsets ``isaac:physics:<Tr|Rot>_<X|Y|Z>:DoFOffset`` become the
  ``isaac:physics:DofOffsetOpOrder`` token list on every multi-DOF joint (anything that is
  not revolute, prismatic or fixed, plain ``PhysicsJoint`` included), ordered by
  ``(legacy value, canonical index)``. Tokens of axes locked by their limit
  (``low >= high``) are dropped with a warning, matching the DOF table. An already
  authored list is kept as is; legacy tokens missing from it are appended (never dropped).
* Single-DOF and fixed joints only lose the legacy attributes.
* The legacy attributes are removed from the edit-target layer; when they live in another
  layer they are blocked there from the edit target (so a second run reports no change).
* ``IsaacReferencePointAPI`` becomes ``IsaacSiteAPI`` wherever it is composed: list ops of
  the edit layer are rewritten in place (deleted/ordered items kept); tokens from other
  layers are deleted from the edit target.
"""

from __future__ import annotations

import logging

from pxr import Sdf, Usd, UsdPhysics

from runtime.schema.tokens import DEPRECATED_DOF_OFFSET_ATTRIBUTES, Attributes, Classes

__all__ = [
    "collect_deprecated_dof_offsets",
    "is_single_dof_joint",
    "update_deprecated_joint_dof_order",
    "update_deprecated_schemas",
]

_LOG = logging.getLogger("runtime.schema.migration")

_CANONICAL = [token for _a, token, _axis in DEPRECATED_DOF_OFFSET_ATTRIBUTES]
_SITE = Classes.SITE_API.value
_REF = Classes.REFERENCE_POINT_API.value


def is_single_dof_joint(prim: Usd.Prim) -> bool:
    """True for revolute, prismatic and fixed joints (ordering not meaningful).

    Args:
        prim: a joint prim.

    Returns:
        Whether the joint has at most one DOF by type.
    """
    return bool(prim) and (
        prim.IsA(UsdPhysics.RevoluteJoint)
        or prim.IsA(UsdPhysics.PrismaticJoint)
        or prim.IsA(UsdPhysics.FixedJoint)
    )


def collect_deprecated_dof_offsets(prim: Usd.Prim) -> dict[str, int]:
    """Authored legacy per-axis offsets of a joint.

    Args:
        prim: a joint prim.

    Returns:
        DOF token → integer offset, only for authored, int-convertible values.
    """
    out: dict[str, int] = {}
    if not prim:
        return out
    for attr_name, token, _axis in DEPRECATED_DOF_OFFSET_ATTRIBUTES:
        attr = prim.GetAttribute(attr_name)
        if not attr or not attr.HasAuthoredValue():
            continue
        value = attr.Get()
        if value is None:
            continue
        try:
            out[token] = int(value)
        except (TypeError, ValueError):
            _LOG.warning(
                "%s.%s: value %r is not an integer; ignored", prim.GetPath(), attr_name, value
            )
    return out


def _locked(prim: Usd.Prim, axis: str) -> bool:
    if not prim.HasAPI(UsdPhysics.LimitAPI, axis):
        return False
    lim = UsdPhysics.LimitAPI(prim, axis)
    low, high = lim.GetLowAttr().Get(), lim.GetHighAttr().Get()
    return low is not None and high is not None and low >= high


def _remove_legacy(prim: Usd.Prim, tokens: dict[str, int]) -> None:
    stage = prim.GetStage()
    target = stage.GetEditTarget()
    spec = target.GetPrimSpecForScenePath(prim.GetPath())
    for attr_name, token, _axis in DEPRECATED_DOF_OFFSET_ATTRIBUTES:
        if token not in tokens:
            continue
        if spec and attr_name in spec.properties:
            spec.RemoveProperty(spec.properties[attr_name])
        attr = prim.GetAttribute(attr_name)
        if attr and attr.HasAuthoredValue():
            # still authored in a weaker layer: block it from the edit target
            attr.Block()


def update_deprecated_joint_dof_order(joint_prim: Usd.Prim) -> bool:
    """Migrate a joint's legacy per-axis DOF offsets to ``isaac:physics:DofOffsetOpOrder``.

    Args:
        joint_prim: a joint prim.

    Returns:
        True when legacy data was found (and migrated), False otherwise.
    """
    if not joint_prim or not joint_prim.IsValid() or not joint_prim.IsA(UsdPhysics.Joint):
        return False
    legacy = collect_deprecated_dof_offsets(joint_prim)
    if not legacy:
        return False
    if not is_single_dof_joint(joint_prim):
        axis_of = {token: axis for _a, token, axis in DEPRECATED_DOF_OFFSET_ATTRIBUTES}
        ordered = sorted(legacy, key=lambda t: (legacy[t], _CANONICAL.index(t)))
        kept = []
        for token in ordered:
            if joint_prim.IsA(UsdPhysics.SphericalJoint) and token.startswith("Trans"):
                locked = True
            else:
                locked = _locked(joint_prim, axis_of[token])
            if locked:
                _LOG.warning(
                    "Joint %s: legacy DOF offset for %s ignored, the axis is locked",
                    joint_prim.GetPath(),
                    token,
                )
                continue
            kept.append(token)
        name = Attributes.DOF_OFFSET_OP_ORDER.name
        attr = joint_prim.GetAttribute(name)
        existing = [str(t) for t in (attr.Get() or [])] if attr and attr.HasAuthoredValue() else []
        result = existing + [t for t in kept if t not in existing]
        if result != existing or not existing:
            if not attr:
                attr = joint_prim.CreateAttribute(name, Sdf.ValueTypeNames.TokenArray, False)
            attr.Set(result)
    _remove_legacy(joint_prim, legacy)
    return True


def _replace_in(items: list[str]) -> tuple[list[str], bool]:
    if _REF not in items:
        return items, False
    out = [t for t in items if t != _REF]
    if _SITE not in out:
        out.append(_SITE)
    return out, True


def update_deprecated_schemas(robot_prim: Usd.Prim) -> int:
    """Migrate deprecated schema data under a robot (itself included).

    Replaces ``IsaacReferencePointAPI`` by ``IsaacSiteAPI`` and migrates legacy DOF
    offsets of every joint carrying ``IsaacJointAPI``. Edits go to the edit target.

    Args:
        robot_prim: the robot prim (invalid: no-op).

    Returns:
        Number of prims changed.
    """
    if not robot_prim or not robot_prim.IsValid():
        return 0
    stage = robot_prim.GetStage()
    target = stage.GetEditTarget()
    changed = 0
    for prim in Usd.PrimRange(robot_prim):
        touched = False
        spec = target.GetPrimSpecForScenePath(prim.GetPath())
        if spec and spec.HasInfo("apiSchemas"):
            op = spec.GetInfo("apiSchemas")
            new = Sdf.TokenListOp()
            any_change = False
            if op.isExplicit:
                items, ch = _replace_in(list(op.explicitItems))
                new.explicitItems = items
                any_change |= ch
            else:
                for field in ("prependedItems", "appendedItems", "addedItems"):
                    items, ch = _replace_in(list(getattr(op, field)))
                    setattr(new, field, items)
                    any_change |= ch
                new.deletedItems = list(op.deletedItems)
                new.orderedItems = [_SITE if t == _REF else t for t in op.orderedItems]
            if any_change:
                spec.SetInfo("apiSchemas", new)
                touched = True
        if _REF in prim.GetPrimTypeInfo().GetAppliedAPISchemas():
            # authored in a weaker layer: delete it from the edit target, apply the new API
            prim.RemoveAppliedSchema(_REF)
            if not prim.HasAPI(_SITE):
                prim.AddAppliedSchema(_SITE)
            touched = True
        if prim.HasAPI(Classes.JOINT_API.value) and update_deprecated_joint_dof_order(prim):
            touched = True
        if touched:
            _LOG.info("migrated deprecated Robot Schema data on %s", prim.GetPath())
            changed += 1
    return changed
