"""Physics-cfg attributes the USD -> MuJoCo builder honours beyond ``mjc:*`` and UsdPhysics.

The cfg classes of :mod:`runtime.physics` author portable attributes in PhysX / Newton
namespaces. Where MuJoCo has an equivalent, these helpers set it on the ``MjSpec`` element
*unless* the ``mjc:*`` attribute for the same thing is authored (``mjc:*`` always wins):

* ``physxRigidBody:disableGravity`` (``RigidBodyBaseCfg.disable_gravity``) ->
  ``body.gravcomp = 1`` (gravity exactly cancelled on the body), unless ``mjc:gravcomp``;
* ``newton:contactMargin`` -> ``geom.margin``, unless ``mjc:margin``;
* ``newton:contactGap`` (finite) -> ``geom.gap``, unless ``mjc:gap``;
* ``physxCollision:restOffset`` -> ``geom.margin`` (the resting separation, as in PhysX),
  unless ``mjc:margin`` / ``newton:contactMargin``;
* ``physxCollision:contactOffset`` -> ``geom.gap = contactOffset - restOffset`` (detection
  distance ``margin + gap``), unless ``mjc:gap`` / ``newton:contactGap``.

MuJoCo 4 sums the margins and gaps of the two geoms of a pair and PhysX sums the two shapes'
offsets, so per-shape values carry over; values are in stage units, like the rest of the
model. Negative offsets (allowed by PhysX for rest offsets) have no MuJoCo equivalent and are
not used.

:func:`report_ignored_attributes` logs **once per model** the authored physics-cfg attributes
that MuJoCo has no equivalent for (e.g. ``physxRigidBody:linearDamping``,
``physxJoint:maxJointVelocity``, ``newton:maxHullVertices``, ``physics:staticFriction``).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from pxr import Usd

__all__ = [
    "HONOURED_ATTRIBUTES",
    "apply_body_attrs",
    "apply_geom_attrs",
    "body_gravcomp",
    "geom_contact_params",
    "ignored_attributes",
    "report_ignored_attributes",
]

_LOG = logging.getLogger("runtime.engine")

#: Attributes of the cfg namespaces that the MuJoCo builder (builder.py, the ``_build_*.py``
#: steps and this module) reads. ``tests/test_engine_attrs.py`` checks this list against the
#: attribute-name literals of those modules, both ways.
HONOURED_ATTRIBUTES: frozenset[str] = frozenset(
    {
        # this module
        "physxRigidBody:disableGravity",
        "physxCollision:contactOffset",
        "physxCollision:restOffset",
        "newton:contactMargin",
        "newton:contactGap",
        "mjc:gravcomp",
        # the _build_*.py steps
        "mjc:actuatorgravcomp",
        "mjc:armature",
        "mjc:damping",
        "mjc:frictionloss",
        "newton:friction",
        "mjc:margin",
        "mjc:gap",
        "mjc:condim",
        "mjc:priority",
        "mjc:solmix",
        "mjc:solref",
        "mjc:solimp",
        "mjc:group",
        "mjc:target",
        "mjc:gear",
        "mjc:gainType",
        "mjc:gainPrm",
        "mjc:biasType",
        "mjc:biasPrm",
        "mjc:dynType",
        "mjc:ctrlRange:min",
        "mjc:ctrlRange:max",
        "mjc:forceRange:min",
        "mjc:forceRange:max",
        "mjc:ctrlLimited",
        "mjc:forceLimited",
        "mjc:stiffness",
        "mjc:springref",
        "mjc:solreflimit",
        "mjc:solimplimit",
        "mjc:type",
        "mjc:path",
        "mjc:path:coef",
        "mjc:polycoef",
        "newton:mimicJoint",
        "newton:mimicCoef0",
        "newton:mimicCoef1",
        "newton:armature",
        "newton:damping",
        "newton:torsionalFriction",
        "newton:rollingFriction",
        "newton:timeStepsPerSecond",
        "physxJoint:armature",
        "physxScene:timeStepsPerSecond",
        "physxArticulation:enabledSelfCollisions",
        "newton:selfCollisionEnabled",
        "physxRigidBody:localSpaceVelocities",
    }
)

#: Attribute-name prefixes of the physics cfg namespaces scanned for ignored attributes.
_CFG_PREFIXES = (
    "physxRigidBody:",
    "physxCollision:",
    "physxJoint:",
    "physxArticulation:",
    "physxMaterial:",
    "physxConvexHullCollision:",
    "physxConvexDecompositionCollision:",
    "physxTriangleMeshCollision:",
    "physxTriangleMeshSimplificationCollision:",
    "physxSDFMeshCollision:",
    "newton:",
    "mjc:",
)

#: At most this many attribute names are spelled out in the one report message.
_REPORT_LIMIT = 40

#: ``physics:*`` attributes (authored by the cfgs) that MuJoCo cannot represent.
_IGNORED_PHYSICS = frozenset({"physics:staticFriction"})


def _authored(prim: Usd.Prim, name: str) -> Any:
    attr = prim.GetAttribute(name)
    if not attr or not attr.HasAuthoredValue():
        return None
    return attr.Get()


def body_gravcomp(prim: Usd.Prim) -> float | None:
    """Gravity compensation of a rigid body for MuJoCo ``body.gravcomp``.

    Args:
        prim: the rigid-body prim.

    Returns:
        ``mjc:gravcomp`` when authored; else ``1.0`` when ``physxRigidBody:disableGravity`` is
        True (full compensation = no gravity on the body); else None (leave the default).
    """
    value = _authored(prim, "mjc:gravcomp")
    if value is not None:
        return float(value)
    if _authored(prim, "physxRigidBody:disableGravity"):
        return 1.0
    return None


def geom_contact_params(prim: Usd.Prim) -> dict[str, float]:
    """MuJoCo ``margin`` / ``gap`` of a collider from the Newton / PhysX cfg attributes.

    MuJoCo (4.x) sums the margins and gaps of the two geoms of a pair; a contact is detected
    below ``margin + gap`` and pushes the surfaces apart to ``margin``. PhysX sums the shapes'
    offsets too and rests at ``restOffset``, detecting below ``contactOffset``. Hence
    ``margin = restOffset`` and ``gap = contactOffset - restOffset`` (``restOffset`` defaults to
    0). Newton's ``contactMargin`` / ``contactGap`` map to ``margin`` / ``gap`` directly. Keys
    whose ``mjc:*`` attribute is authored are left out (the builder sets those); negative or
    non-finite values are not used.

    Args:
        prim: the collision prim.

    Returns:
        A dict with zero, one or both of ``"margin"`` and ``"gap"`` [stage units], each >= 0.
    """

    def usable(name: str) -> float | None:
        value = _authored(prim, name)
        if value is None:
            return None
        value = float(value)
        return value if math.isfinite(value) and value >= 0.0 else None

    out: dict[str, float] = {}
    rest = usable("physxCollision:restOffset")
    contact = usable("physxCollision:contactOffset")
    if _authored(prim, "mjc:margin") is None:
        margin = usable("newton:contactMargin")
        if margin is None:
            margin = rest
        if margin is not None:
            out["margin"] = margin
    if _authored(prim, "mjc:gap") is None:
        gap = usable("newton:contactGap")
        if gap is None and contact is not None:
            gap = max(0.0, contact - (rest or 0.0))
        if gap is not None:
            out["gap"] = gap
    return out


def apply_body_attrs(spec_body: Any, prim: Usd.Prim) -> None:
    """Set ``spec_body.gravcomp`` from :func:`body_gravcomp` when it returns a value.

    Args:
        spec_body: the ``mujoco.MjsBody`` of the prim.
        prim: the rigid-body prim.
    """
    gravcomp = body_gravcomp(prim)
    if gravcomp is not None:
        spec_body.gravcomp = gravcomp


def apply_geom_attrs(spec_geom: Any, prim: Usd.Prim) -> None:
    """Set ``spec_geom.margin`` / ``gap`` from :func:`geom_contact_params`.

    Args:
        spec_geom: the ``mujoco.MjsGeom`` of the collider.
        prim: the collision prim.
    """
    for key, value in geom_contact_params(prim).items():
        setattr(spec_geom, key, value)


def ignored_attributes(stage: Usd.Stage) -> dict[str, list[str]]:
    """Authored physics-cfg attributes the MuJoCo model does not honour.

    Args:
        stage: the composed stage.

    Returns:
        ``{attribute name: [prim paths]}`` sorted by name.
    """
    found: dict[str, list[str]] = {}
    for prim in stage.Traverse():
        for attr in prim.GetAuthoredAttributes():
            name = attr.GetName()
            if name in HONOURED_ATTRIBUTES or name.startswith("mjc:option:"):
                continue
            if name in _IGNORED_PHYSICS or name.startswith(_CFG_PREFIXES):
                found.setdefault(name, []).append(str(prim.GetPath()))
    return dict(sorted(found.items()))


def report_ignored_attributes(stage: Usd.Stage, logger: logging.Logger | None = None) -> dict:
    """Log, in one message, the authored physics-cfg attributes MuJoCo ignores.

    Args:
        stage: the composed stage.
        logger: where to log (default ``runtime.engine``).

    Returns:
        The :func:`ignored_attributes` mapping (empty when nothing is ignored).
    """
    found = ignored_attributes(stage)
    if found:
        parts = [
            f"{name} ({len(paths)} prim{'s' if len(paths) > 1 else ''}, e.g. {paths[0]})"
            for name, paths in list(found.items())[:_REPORT_LIMIT]
        ]
        if len(found) > _REPORT_LIMIT:
            parts.append(f"and {len(found) - _REPORT_LIMIT} more")
        (logger or _LOG).warning(
            "MuJoCo has no equivalent for these authored physics attributes; ignored: %s",
            "; ".join(parts),
        )
    return found
