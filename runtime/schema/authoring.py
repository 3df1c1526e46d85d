"""Authoring helpers of the Isaac Robot Schema (docs/guides/inspect-and-schema.md#authoring).

All edits go to the stage's current edit target. ``apply_*_api`` helpers do nothing when
the API is already applied (so re-running never rewrites ``apiSchemas``).
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from pxr import Sdf, Usd

from runtime.schema._prims import is_surface_gripper
from runtime.schema._schema_tables import SURFACE_GRIPPER_FALLBACKS
from runtime.schema.populate import populate_robot_schema_from_articulation
from runtime.schema.tokens import Attributes, Classes, Relations

__all__ = [
    "SURFACE_GRIPPER_DEFAULTS",
    "apply_attachment_point_api",
    "apply_joint_api",
    "apply_link_api",
    "apply_reference_point_api",
    "apply_robot_api",
    "apply_site_api",
    "create_named_pose",
    "create_surface_gripper",
    "get_allowed_tokens",
    "is_surface_gripper",
    "read_surface_gripper_attribute",
]

_LOG = logging.getLogger("runtime.schema.authoring")

_SCHEMA_FILE = (
    Path(__file__).resolve().parent / "resources" / "robot_schema" / "generatedSchema.usda"
)

SURFACE_GRIPPER_DEFAULTS: dict[str, object] = SURFACE_GRIPPER_FALLBACKS
"""Fallbacks of ``IsaacSurfaceGripper`` by attribute name (``readers.SURFACE_GRIPPER_FALLBACKS``).

The registered schema has the same fallbacks; the table also covers assets opened where
Isaac Sim's own (abstract, fallback-less) copy of the schema is the registered one.
"""


def _apply(prim: Usd.Prim, name: str) -> None:
    if not prim or not prim.IsValid():
        raise ValueError(f"cannot apply {name}: prim is invalid")
    if not prim.HasAPI(name):
        prim.AddAppliedSchema(name)


def apply_robot_api(
    prim: Usd.Prim,
    *,
    populate: bool = True,
    detect_sites: bool = False,
    sites_last: bool = False,
    traversal: str = "dfs",
) -> None:
    """Apply ``IsaacRobotAPI`` and (re)populate the robot's links and joints.

    As in the reference, population runs every time, even when the API was already
    applied (§3.2).

    Args:
        prim: the robot root prim.
        populate: run :func:`~runtime.schema.populate.populate_robot_schema_from_articulation`.
        detect_sites: passed to populate.
        sites_last: passed to populate.
        traversal: "dfs" or "bfs", passed to populate.
    """
    _apply(prim, Classes.ROBOT_API.value)
    if populate and prim.GetStage() is not None:
        populate_robot_schema_from_articulation(
            prim.GetStage(),
            prim,
            prim,
            detect_sites=detect_sites,
            sites_last=sites_last,
            traversal=traversal,
        )


def apply_link_api(prim: Usd.Prim) -> None:
    """Apply ``IsaacLinkAPI`` (no-op when present)."""
    _apply(prim, Classes.LINK_API.value)


def apply_site_api(prim: Usd.Prim) -> None:
    """Apply ``IsaacSiteAPI`` (no-op when present)."""
    _apply(prim, Classes.SITE_API.value)


def apply_joint_api(prim: Usd.Prim) -> None:
    """Apply ``IsaacJointAPI`` (no-op when present)."""
    _apply(prim, Classes.JOINT_API.value)


def apply_attachment_point_api(prim: Usd.Prim) -> None:
    """Apply ``IsaacAttachmentPointAPI`` (no-op when present)."""
    _apply(prim, Classes.ATTACHMENT_POINT_API.value)


def apply_reference_point_api(prim: Usd.Prim) -> None:
    """Deprecated: logs a warning and applies ``IsaacSiteAPI`` instead."""
    _LOG.warning("ApplyReferencePointAPI is deprecated. Use ApplySiteAPI instead.")
    _apply(prim, Classes.SITE_API.value)


def create_surface_gripper(stage: Usd.Stage, prim_path: str | Sdf.Path) -> Usd.Prim:
    """Define an ``IsaacSurfaceGripper`` prim with its attributes and relationships.

    Unlike the reference (whose schema declares the type abstract, without fallbacks, and
    which authors no value), the defaults are authored and ``isaac:status`` is uniform.

    Args:
        stage: the stage.
        prim_path: where to define the prim.

    Returns:
        The gripper prim.
    """
    prim = stage.DefinePrim(Sdf.Path(str(prim_path)), Classes.SURFACE_GRIPPER.value)
    for attr in (
        Attributes.STATUS,
        Attributes.SHEAR_FORCE_LIMIT,
        Attributes.COAXIAL_FORCE_LIMIT,
        Attributes.MAX_GRIP_DISTANCE,
        Attributes.RETRY_INTERVAL,
    ):
        uniform = attr is Attributes.STATUS
        variability = Sdf.VariabilityUniform if uniform else Sdf.VariabilityVarying
        a = prim.CreateAttribute(attr.name, attr.type, False, variability)
        if not a.HasAuthoredValue():
            a.Set(SURFACE_GRIPPER_DEFAULTS[attr.name])
    for rel in (Relations.ATTACHMENT_POINTS, Relations.GRIPPED_OBJECTS):
        prim.CreateRelationship(rel.name, False)
    return prim


def read_surface_gripper_attribute(prim: Usd.Prim, attribute: Attributes) -> object:
    """Value of a gripper attribute, the schema default when unauthored.

    Args:
        prim: an ``IsaacSurfaceGripper`` prim.
        attribute: one of STATUS, SHEAR_FORCE_LIMIT, COAXIAL_FORCE_LIMIT,
            MAX_GRIP_DISTANCE, RETRY_INTERVAL.

    Returns:
        The authored value or the default.
    """
    attr = prim.GetAttribute(attribute.name)
    value = attr.Get() if attr else None
    return SURFACE_GRIPPER_DEFAULTS[attribute.name] if value is None else value


def create_named_pose(stage: Usd.Stage, prim_path: str | Sdf.Path) -> Usd.Prim:
    """Define an ``IsaacNamedPose`` prim with its (valueless) attributes and relationships.

    Args:
        stage: the stage.
        prim_path: where to define the prim.

    Returns:
        The named-pose prim.
    """
    prim = stage.DefinePrim(Sdf.Path(str(prim_path)), Classes.NAMED_POSE.value)
    for attr in (
        Attributes.POSE_VALID,
        Attributes.POSE_JOINT_VALUES,
        Attributes.POSE_JOINT_FIXED,
    ):
        prim.CreateAttribute(attr.name, attr.type, False)
    for rel in (Relations.POSE_START_LINK, Relations.POSE_END_LINK, Relations.POSE_JOINTS):
        prim.CreateRelationship(rel.name, False)
    return prim


@lru_cache(maxsize=1)
def _schema_layer() -> Sdf.Layer | None:
    return Sdf.Layer.FindOrOpen(str(_SCHEMA_FILE))


def get_allowed_tokens(attribute: Attributes) -> tuple[str, ...]:
    """Allowed tokens of a schema attribute, as declared in the shipped schema.

    Looks in ``IsaacRobotAPI``, ``IsaacJointAPI``, ``IsaacSurfaceGripper`` and
    ``IsaacAttachmentPointAPI`` (in that order), like the reference.

    Args:
        attribute: an :class:`~runtime.schema.tokens.Attributes` member.

    Returns:
        The tokens (empty when the attribute declares none or is not found).
    """
    layer = _schema_layer()
    if layer is None:
        _LOG.warning("Could not open RobotSchema.usda at %s", _SCHEMA_FILE)
        return ()
    for cls in ("IsaacRobotAPI", "IsaacJointAPI", "IsaacSurfaceGripper", "IsaacAttachmentPointAPI"):
        spec = layer.GetAttributeAtPath(f"/{cls}.{attribute.name}")
        if spec:
            tokens = spec.GetInfo("allowedTokens") if spec.HasInfo("allowedTokens") else []
            return tuple(str(t) for t in tokens)
    return ()
