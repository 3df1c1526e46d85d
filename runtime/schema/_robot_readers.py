"""Readers of robot prims: the robot, its links, sites and named poses.

Part of :mod:`runtime.schema.readers` (the public import path).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pxr import Usd, UsdPhysics

from runtime.errors import SchemaError
from runtime.schema._prims import has_deprecated_reference_point
from runtime.schema._schema_tables import FORWARD_AXIS_TOKENS, LICENSE_TOKENS, ROBOT_TYPE_TOKENS
from runtime.schema._values import (
    _check_xform_ops,
    _checked_pose,
    _freeze,
    _name_override,
    _path,
    _raw,
    _read_bool,
    _read_float_array,
    _read_string,
    _read_string_array,
    _read_token,
    _targets,
    _wrong_prim_type,
    _wrong_value_type,
)


@dataclass(frozen=True)
class RobotInfo:
    """Metadata and authored relationships of an ``IsaacRobotAPI`` prim.

    Attributes:
        path: USD path of the robot prim.
        description: ``isaac:description``.
        namespace: ``isaac:namespace``.
        robot_type: ``isaac:robotType`` (one of :data:`ROBOT_TYPE_TOKENS`).
        license: ``isaac:license`` (one of :data:`LICENSE_TOKENS`).
        version: ``isaac:version``.
        source: ``isaac:source``.
        changelog: ``isaac:changelog`` entries.
        link_paths: targets of ``isaac:physics:robotLinks`` in authored order (links, sites
            or nested robots).
        joint_paths: targets of ``isaac:physics:robotJoints`` in authored order.
        named_pose_paths: targets of ``isaac:robot:namedPoses``.
    """

    path: str
    description: str
    namespace: str
    robot_type: str
    license: str
    version: str
    source: str
    changelog: tuple[str, ...]
    link_paths: tuple[str, ...]
    joint_paths: tuple[str, ...]
    named_pose_paths: tuple[str, ...]


def read_robot(prim: Usd.Prim) -> RobotInfo:
    """Read and validate an ``IsaacRobotAPI`` prim.

    Args:
        prim: a prim with ``IsaacRobotAPI`` applied.

    Returns:
        The robot's metadata and relationship targets.

    Raises:
        SchemaError: the API is missing, a token is unknown, a value has the wrong type, or
            a relationship target does not exist.
    """
    if not prim or not prim.IsValid():
        raise SchemaError(str(prim.GetPath()) if prim else "", "", "prim does not exist")
    if not prim.HasAPI("IsaacRobotAPI"):
        raise SchemaError(
            _path(prim), "apiSchemas", "IsaacRobotAPI is not applied", "IsaacRobotAPI"
        )
    return RobotInfo(
        path=_path(prim),
        description=_read_string(prim, "isaac:description"),
        namespace=_read_string(prim, "isaac:namespace"),
        robot_type=_read_token(prim, "isaac:robotType", "Default", ROBOT_TYPE_TOKENS),
        license=_read_token(prim, "isaac:license", "Other", LICENSE_TOKENS),
        version=_read_string(prim, "isaac:version"),
        source=_read_string(prim, "isaac:source"),
        changelog=_read_string_array(prim, "isaac:changelog"),
        link_paths=_targets(prim, "isaac:physics:robotLinks"),
        joint_paths=_targets(prim, "isaac:physics:robotJoints"),
        named_pose_paths=_targets(prim, "isaac:robot:namedPoses"),
    )


def reported_name(prim: Usd.Prim) -> str:
    """Name a link or joint is reported under.

    Reads ``isaac:nameOverride`` first, then ``isaac:NameOverride``
    (docs/reference/usd-attributes.md [REC]); the first non-empty one wins, else the prim name.

    Args:
        prim: a link, joint or site prim.

    Returns:
        The reported name.

    Raises:
        SchemaError: an override is authored with a non-string value.
    """
    return _name_override(prim) or prim.GetName()


@dataclass(frozen=True)
class LinkInfo:
    """A robot link.

    Attributes:
        path: USD path of the link prim.
        name: reported name (name override, else prim name).
        name_override: authored ``isaac:nameOverride`` (``""`` when none).
        has_link_api: whether ``IsaacLinkAPI`` is applied.
        is_rigid_body: whether ``UsdPhysics.RigidBodyAPI`` is applied.
    """

    path: str
    name: str
    name_override: str
    has_link_api: bool
    is_rigid_body: bool


def read_link(prim: Usd.Prim) -> LinkInfo:
    """Read a link prim.

    Args:
        prim: a link prim (normally with ``IsaacLinkAPI`` and ``RigidBodyAPI``).

    Returns:
        The link record.

    Raises:
        SchemaError: wrong value type of a name override, or a non-finite xformOp.
    """
    _check_xform_ops(prim)
    return LinkInfo(
        path=_path(prim),
        name=reported_name(prim),
        name_override=_read_string(prim, "isaac:nameOverride"),
        has_link_api=bool(prim.HasAPI("IsaacLinkAPI")),
        is_rigid_body=bool(prim.HasAPI(UsdPhysics.RigidBodyAPI)),
    )


@dataclass(frozen=True, eq=False)
class SiteInfo:
    """A site (``IsaacSiteAPI``, or the deprecated ``IsaacReferencePointAPI``).

    Attributes:
        path: USD path of the site prim.
        name: reported name.
        description: ``isaac:Description`` (capital D).
        forward_axis: ``"X" | "Y" | "Z"``.
        parent_link: path of the nearest ancestor with ``IsaacLinkAPI`` or ``RigidBodyAPI``
            (``""`` when none).
        deprecated: True when only the deprecated reference-point API marks the prim.
        translation_in_parent: site origin in the parent link frame [stage units], (3,).
        orientation_in_parent: site orientation in the parent link frame, wxyz, (4,).
    """

    path: str
    name: str
    description: str
    forward_axis: str
    parent_link: str
    deprecated: bool
    translation_in_parent: np.ndarray = field(repr=False)
    orientation_in_parent: np.ndarray = field(repr=False)


def read_site(prim: Usd.Prim) -> SiteInfo:
    """Read a site prim.

    Args:
        prim: a prim with ``IsaacSiteAPI`` (or the deprecated reference-point token).

    Returns:
        The site record.

    Raises:
        SchemaError: unknown ``isaac:forwardAxis`` token, wrong value type, NaN transform.
    """
    parent = prim.GetParent()
    while parent and not parent.IsPseudoRoot():
        if parent.HasAPI("IsaacLinkAPI") or parent.HasAPI(UsdPhysics.RigidBodyAPI):
            break
        parent = parent.GetParent()
    parent_prim = parent if parent and not parent.IsPseudoRoot() else None
    translation, orientation = _checked_pose(prim, parent_prim)
    return SiteInfo(
        path=_path(prim),
        name=reported_name(prim),
        description=_read_string(prim, "isaac:Description"),
        forward_axis=_read_token(prim, "isaac:forwardAxis", "X", FORWARD_AXIS_TOKENS),
        parent_link=_path(parent_prim) if parent_prim is not None else "",
        deprecated=not prim.HasAPI("IsaacSiteAPI") and has_deprecated_reference_point(prim),
        translation_in_parent=translation,
        orientation_in_parent=orientation,
    )


@dataclass(frozen=True, eq=False)
class NamedPoseInfo:
    """An ``IsaacNamedPose`` prim.

    Attributes:
        path: USD path of the pose prim.
        name: prim name.
        start_link: first target of ``isaac:robot:pose:startLink`` (``""`` when none).
        end_link: first target of ``isaac:robot:pose:endLink`` (``""`` when none).
        joints: targets of ``isaac:robot:pose:joints`` in order.
        joint_values: ``isaac:robot:pose:jointValues`` in USD units (degrees / stage units),
            shape (len(joints),), float64; None when unauthored.
        joint_fixed: ``isaac:robot:pose:jointFixed``; None when unauthored.
        valid: ``isaac:robot:pose:valid``; None when unauthored.
        target_translation: world position of the pose prim [stage units], (3,).
        target_orientation: world orientation of the pose prim, wxyz, (4,).
    """

    path: str
    name: str
    start_link: str
    end_link: str
    joints: tuple[str, ...]
    joint_values: np.ndarray | None = field(repr=False)
    joint_fixed: tuple[bool, ...] | None
    valid: bool | None
    target_translation: np.ndarray = field(repr=False)
    target_orientation: np.ndarray = field(repr=False)


def read_named_pose(prim: Usd.Prim) -> NamedPoseInfo:
    """Read an ``IsaacNamedPose`` prim.

    Args:
        prim: a prim of type ``IsaacNamedPose``.

    Returns:
        The named pose record.

    Raises:
        SchemaError: wrong type, a missing relationship target, NaN values or transform, or
            joint values / fixed flags whose length differs from the joint list.
    """
    path = _path(prim)
    if str(prim.GetTypeName()) != "IsaacNamedPose":
        raise _wrong_prim_type(prim, "a named pose", "IsaacNamedPose")
    start = _targets(prim, "isaac:robot:pose:startLink")
    end = _targets(prim, "isaac:robot:pose:endLink")
    joints = _targets(prim, "isaac:robot:pose:joints")
    values = _read_float_array(prim, "isaac:robot:pose:jointValues")
    if values is not None and len(values) != len(joints):
        raise SchemaError(
            path,
            "isaac:robot:pose:jointValues",
            f"has {len(values)} values for {len(joints)} joints",
            "one value per target of isaac:robot:pose:joints",
        )
    fixed_raw = _raw(prim, "isaac:robot:pose:jointFixed")
    fixed: tuple[bool, ...] | None = None
    if fixed_raw is not None:
        if isinstance(fixed_raw, (str, bool)) or not all(isinstance(v, bool) for v in fixed_raw):
            raise _wrong_value_type(prim, "isaac:robot:pose:jointFixed", fixed_raw, "bool[]")
        fixed = tuple(bool(v) for v in fixed_raw)
        if len(fixed) != len(joints):
            raise SchemaError(
                path,
                "isaac:robot:pose:jointFixed",
                f"has {len(fixed)} flags for {len(joints)} joints",
                "one flag per target of isaac:robot:pose:joints",
            )
    translation, orientation = _checked_pose(prim, None)
    return NamedPoseInfo(
        path=path,
        name=prim.GetName(),
        start_link=start[0] if start else "",
        end_link=end[0] if end else "",
        joints=joints,
        joint_values=None if values is None else _freeze(values),
        joint_fixed=fixed,
        valid=_read_bool(prim, "isaac:robot:pose:valid", None),
        target_translation=translation,
        target_orientation=orientation,
    )
