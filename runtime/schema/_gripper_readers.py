"""Readers of surface grippers and their attachment points.

Part of :mod:`runtime.schema.readers` (the public import path).
"""

from __future__ import annotations

from dataclasses import dataclass

from pxr import Usd

from runtime.schema._prims import is_surface_gripper
from runtime.schema._schema_tables import (
    ATTACHMENT_POINT_FALLBACKS,
    FORWARD_AXIS_TOKENS,
    STATUS_TOKENS,
    SURFACE_GRIPPER_FALLBACKS,
)
from runtime.schema._values import (
    _path,
    _read_float,
    _read_token,
    _targets,
    _wrong_prim_type,
)


@dataclass(frozen=True)
class SurfaceGripperInfo:
    """An ``IsaacSurfaceGripper`` prim with table defaults for unauthored attributes.

    Attributes:
        path: USD path.
        status: ``"Open" | "Closed" | "Closing"``.
        max_grip_distance: ``isaac:maxGripDistance`` [m].
        retry_interval: ``isaac:retryInterval`` [s].
        shear_force_limit: ``isaac:shearForceLimit`` [N]; -1 = no limit.
        coaxial_force_limit: ``isaac:coaxialForceLimit`` [N]; -1 = no limit.
        attachment_points: targets of ``isaac:attachmentPoints``.
        gripped_objects: targets of ``isaac:grippedObjects``.
    """

    path: str
    status: str
    max_grip_distance: float
    retry_interval: float
    shear_force_limit: float
    coaxial_force_limit: float
    attachment_points: tuple[str, ...]
    gripped_objects: tuple[str, ...]


def read_surface_gripper(prim: Usd.Prim) -> SurfaceGripperInfo:
    """Read a surface gripper prim.

    Args:
        prim: a prim whose type name is ``IsaacSurfaceGripper``.

    Returns:
        The gripper record.

    Raises:
        SchemaError: wrong prim type, unknown status token, wrong value type, NaN, or a
            missing attachment-point target.
    """
    path = _path(prim)
    if not is_surface_gripper(prim):
        raise _wrong_prim_type(prim, "a surface gripper", "IsaacSurfaceGripper")
    fb = SURFACE_GRIPPER_FALLBACKS
    return SurfaceGripperInfo(
        path=path,
        status=_read_token(prim, "isaac:status", fb["isaac:status"], STATUS_TOKENS),
        max_grip_distance=_read_float(prim, "isaac:maxGripDistance", fb["isaac:maxGripDistance"]),
        retry_interval=_read_float(prim, "isaac:retryInterval", fb["isaac:retryInterval"]),
        shear_force_limit=_read_float(prim, "isaac:shearForceLimit", fb["isaac:shearForceLimit"]),
        coaxial_force_limit=_read_float(
            prim, "isaac:coaxialForceLimit", fb["isaac:coaxialForceLimit"]
        ),
        attachment_points=_targets(prim, "isaac:attachmentPoints"),
        gripped_objects=_targets(prim, "isaac:grippedObjects", must_exist=False),
    )


@dataclass(frozen=True)
class AttachmentPointInfo:
    """A joint with ``IsaacAttachmentPointAPI``.

    Attributes:
        path: USD path of the joint.
        forward_axis: ``"X" | "Y" | "Z"``.
        clearance_offset: ``isaac:clearanceOffset`` [m].
    """

    path: str
    forward_axis: str
    clearance_offset: float


def read_attachment_point(prim: Usd.Prim) -> AttachmentPointInfo:
    """Read an attachment point.

    Args:
        prim: a joint prim with ``IsaacAttachmentPointAPI``.

    Returns:
        The attachment point record.

    Raises:
        SchemaError: unknown forward axis token, wrong value type or NaN.
    """
    fb = ATTACHMENT_POINT_FALLBACKS
    return AttachmentPointInfo(
        path=_path(prim),
        forward_axis=_read_token(
            prim, "isaac:forwardAxis", fb["isaac:forwardAxis"], FORWARD_AXIS_TOKENS
        ),
        clearance_offset=_read_float(prim, "isaac:clearanceOffset", fb["isaac:clearanceOffset"]),
    )
