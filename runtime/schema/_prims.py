"""Small prim predicates and lookups shared by the robot-schema modules.

Site detection, joint bodies, nested robots and articulation roots, plus the warn-once
bookkeeping of the reference (docs/guides/inspect-and-schema.md#link-tree).
``IsaacReferencePointAPI`` is a registered (deprecated) schema, so ``HasAPI`` sees it on old assets
(§2.7).

Public names are imported from :mod:`runtime.schema.utils`; ``is_surface_gripper`` from
:mod:`runtime.schema.readers` or :mod:`runtime.schema.authoring`.
"""

from __future__ import annotations

import logging

from pxr import Sdf, Usd, UsdPhysics

from runtime.schema.tokens import Classes

_LOG = logging.getLogger("runtime.schema.utils")

ROBOT_API = Classes.ROBOT_API.value
LINK_API = Classes.LINK_API.value
JOINT_API = Classes.JOINT_API.value
SITE_API = Classes.SITE_API.value
REFERENCE_POINT_API = Classes.REFERENCE_POINT_API.value

# Warn-once bookkeeping of the reference (§4.3/§4.4): robot path strings already warned about.
_WARNED_JOINTS: set[str] = set()
_WARNED_LINKS: set[str] = set()
_WARNED_DEPRECATED: set[str] = set()


def clear_warning_cache() -> None:
    """Forget which robots were already warned about (missing links/joints, deprecated API)."""
    _WARNED_JOINTS.clear()
    _WARNED_LINKS.clear()
    _WARNED_DEPRECATED.clear()


# --------------------------------------------------------------------------------------
# small predicates
# --------------------------------------------------------------------------------------


def _valid(prim: Usd.Prim | None) -> bool:
    return prim is not None and bool(prim) and prim.IsValid()


def has_deprecated_reference_point(prim: Usd.Prim) -> bool:
    """True when the deprecated ``IsaacReferencePointAPI`` is applied to ``prim``.

    The API is registered, so ``HasAPI`` answers; the applied-schema list of the prim type
    info is read as well, which also keeps the token when another copy of the schema
    (without that API) was registered instead.

    Args:
        prim: any prim (invalid prims give False).

    Returns:
        Whether the deprecated API is in the composed ``apiSchemas``.
    """
    if not _valid(prim):
        return False
    if prim.HasAPI(REFERENCE_POINT_API):
        return True
    return REFERENCE_POINT_API in prim.GetPrimTypeInfo().GetAppliedAPISchemas()


def is_site(prim: Usd.Prim, warn: bool = True) -> bool:
    """True when ``prim`` is a site: ``IsaacSiteAPI`` or the deprecated reference-point API.

    Args:
        prim: prim to test.
        warn: log a deprecation warning (once per prim path) for the deprecated API.

    Returns:
        Whether the prim is a site.
    """
    if not _valid(prim):
        return False
    if prim.HasAPI(SITE_API):
        return True
    if has_deprecated_reference_point(prim):
        key = str(prim.GetPath())
        if warn and key not in _WARNED_DEPRECATED:
            _WARNED_DEPRECATED.add(key)
            _LOG.warning("%s has ReferencePointAPI which is deprecated. Use SiteAPI instead.", key)
        return True
    return False


def _is_joint(prim: Usd.Prim) -> bool:
    return _valid(prim) and prim.IsA(UsdPhysics.Joint)


def _is_rigid(prim: Usd.Prim) -> bool:
    return _valid(prim) and prim.HasAPI(UsdPhysics.RigidBodyAPI)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def get_joint_body_relationship(joint_prim: Usd.Prim, body_index: int) -> Sdf.Path | None:
    """First target of ``physics:body0`` / ``physics:body1`` of a joint.

    Args:
        joint_prim: a ``UsdPhysics.Joint`` prim (anything else gives None).
        body_index: 0 or 1.

    Returns:
        The target path, or None for non-joints, joints excluded from the articulation,
        other indices and empty relationships.
    """
    if not _is_joint(joint_prim):
        return None
    joint = UsdPhysics.Joint(joint_prim)
    if joint.GetExcludeFromArticulationAttr().Get():
        return None
    if body_index == 0:
        rel = joint.GetBody0Rel()
    elif body_index == 1:
        rel = joint.GetBody1Rel()
    else:
        return None
    targets = rel.GetTargets() if rel else []
    return targets[0] if targets else None


def get_sub_robots(robot_prim: Usd.Prim) -> list[Usd.Prim]:
    """Strict descendants of ``robot_prim`` carrying ``IsaacRobotAPI`` (depth-first order).

    Args:
        robot_prim: the robot prim.

    Returns:
        The nested robot prims.
    """
    if not _valid(robot_prim):
        return []
    return [p for p in Usd.PrimRange(robot_prim) if p != robot_prim and p.HasAPI(ROBOT_API)]


def find_articulation_root(prim: Usd.Prim) -> Usd.Prim | None:
    """``prim`` if it has ``PhysicsArticulationRootAPI``, else the first descendant that has it.

    Args:
        prim: where to start (depth-first pre-order over ``Usd.PrimRange``).

    Returns:
        The articulation root prim or None.
    """
    if not _valid(prim):
        return None
    for p in Usd.PrimRange(prim):
        if p.HasAPI(UsdPhysics.ArticulationRootAPI):
            return p
    return None


def find_robot_prims(stage: Usd.Stage) -> list[Usd.Prim]:
    """Top-level robots of a stage: prims with ``IsaacRobotAPI`` not nested in another robot.

    Args:
        stage: the stage.

    Returns:
        Robot prims in depth-first order.
    """
    out: list[Usd.Prim] = []
    it = iter(Usd.PrimRange(stage.GetPseudoRoot()))
    for prim in it:
        if prim.HasAPI(ROBOT_API):
            out.append(prim)
            it.PruneChildren()
    return out


def is_surface_gripper(prim: Usd.Prim) -> bool:
    """Whether ``prim`` is a surface gripper (type name equals ``IsaacSurfaceGripper``).

    The registered schema makes the type concrete, so ``IsA`` works too; the type-name test
    also recognises grippers when Isaac Sim's own (abstract) copy of the schema is the
    registered one (docs/guides/inspect-and-schema.md#registration).

    Args:
        prim: any prim.

    Returns:
        True for a surface gripper prim.
    """
    return bool(prim) and str(prim.GetTypeName()) == Classes.SURFACE_GRIPPER.value
