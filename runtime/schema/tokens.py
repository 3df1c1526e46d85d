"""Names of the Isaac Robot and Sensor schemas: classes, attributes, relationships, tokens.

The values are the exact USD spellings, including the reference's capitalisation quirks
(``isaac:nameOverride`` on links, ``isaac:NameOverride`` on joints; ``isaac:description`` on
robots, ``isaac:Description`` on sites).
"""

from __future__ import annotations

from enum import Enum

from pxr import Sdf

__all__ = [
    "Attributes",
    "Classes",
    "DEPRECATED_DOF_OFFSET_ATTRIBUTES",
    "DofOffsetOpOrder",
    "Relations",
    "SensorTypes",
]


class Classes(Enum):
    """Schema names of the Robot Schema."""

    ROBOT_API = "IsaacRobotAPI"
    LINK_API = "IsaacLinkAPI"
    REFERENCE_POINT_API = "IsaacReferencePointAPI"
    SITE_API = "IsaacSiteAPI"
    JOINT_API = "IsaacJointAPI"
    SURFACE_GRIPPER = "IsaacSurfaceGripper"
    ATTACHMENT_POINT_API = "IsaacAttachmentPointAPI"
    NAMED_POSE = "IsaacNamedPose"


class SensorTypes(Enum):
    """Prim type names of the Sensor Schema."""

    BASE = "IsaacBaseSensor"
    CONTACT = "IsaacContactSensor"
    IMU = "IsaacImuSensor"
    RAYCAST = "IsaacRaycastSensor"
    LIGHT_BEAM = "IsaacLightBeamSensor"


class DofOffsetOpOrder(Enum):
    """DOF tokens of ``isaac:physics:DofOffsetOpOrder`` in canonical order."""

    TRANS_X = "TransX"
    TRANS_Y = "TransY"
    TRANS_Z = "TransZ"
    ROT_X = "RotX"
    ROT_Y = "RotY"
    ROT_Z = "RotZ"


class Attributes(Enum):
    """Robot Schema attributes; ``.name`` is the USD name."""

    DESCRIPTION = ("isaac:description", "Description", Sdf.ValueTypeNames.String)
    NAMESPACE = ("isaac:namespace", "Namespace", Sdf.ValueTypeNames.String)
    ROBOT_TYPE = ("isaac:robotType", "Robot Type", Sdf.ValueTypeNames.Token)
    LICENSE = ("isaac:license", "License", Sdf.ValueTypeNames.Token)
    VERSION = ("isaac:version", "Version", Sdf.ValueTypeNames.String)
    SOURCE = ("isaac:source", "Source", Sdf.ValueTypeNames.String)
    CHANGELOG = ("isaac:changelog", "Changelog", Sdf.ValueTypeNames.StringArray)
    NAME_OVERRIDE = ("isaac:nameOverride", "Name Override", Sdf.ValueTypeNames.String)
    REFERENCE_DESCRIPTION = (
        "isaac:Description",
        "Reference Description",
        Sdf.ValueTypeNames.String,
    )
    FORWARD_AXIS = ("isaac:forwardAxis", "Forward Axis", Sdf.ValueTypeNames.Token)
    JOINT_NAME_OVERRIDE = (
        "isaac:NameOverride",
        "Joint Name Override",
        Sdf.ValueTypeNames.String,
    )
    DOF_OFFSET_OP_ORDER = (
        "isaac:physics:DofOffsetOpOrder",
        "Dof Offset Op Order",
        Sdf.ValueTypeNames.TokenArray,
    )
    ACTUATOR = ("isaac:actuator", "Actuator", Sdf.ValueTypeNames.BoolArray)
    RETRY_INTERVAL = ("isaac:retryInterval", "Retry Interval", Sdf.ValueTypeNames.Float)
    STATUS = ("isaac:status", "Status", Sdf.ValueTypeNames.Token)
    SHEAR_FORCE_LIMIT = ("isaac:shearForceLimit", "Shear Force Limit", Sdf.ValueTypeNames.Float)
    COAXIAL_FORCE_LIMIT = (
        "isaac:coaxialForceLimit",
        "Coaxial Force Limit",
        Sdf.ValueTypeNames.Float,
    )
    MAX_GRIP_DISTANCE = ("isaac:maxGripDistance", "Max Grip Distance", Sdf.ValueTypeNames.Float)
    CLEARANCE_OFFSET = ("isaac:clearanceOffset", "Clearance Offset", Sdf.ValueTypeNames.Float)
    POSE_VALID = ("isaac:robot:pose:valid", "Pose Valid", Sdf.ValueTypeNames.Bool)
    POSE_JOINT_VALUES = (
        "isaac:robot:pose:jointValues",
        "Pose Joint Values",
        Sdf.ValueTypeNames.FloatArray,
    )
    POSE_JOINT_FIXED = (
        "isaac:robot:pose:jointFixed",
        "Pose Joint Fixed",
        Sdf.ValueTypeNames.BoolArray,
    )

    @property
    def name(self) -> str:  # type: ignore[override]
        """The USD attribute name."""
        return str(self.value[0])

    @property
    def display_name(self) -> str:
        """The display name of the attribute."""
        return str(self.value[1])

    @property
    def type(self) -> Sdf.ValueTypeName:
        """The ``Sdf.ValueTypeNames`` entry of the attribute."""
        return self.value[2]


class Relations(Enum):
    """Robot Schema relationships; ``.name`` is the USD name."""

    ROBOT_LINKS = ("isaac:physics:robotLinks", "Robot Links")
    ROBOT_JOINTS = ("isaac:physics:robotJoints", "Robot Joints")
    NAMED_POSES = ("isaac:robot:namedPoses", "Named Poses")
    ATTACHMENT_POINTS = ("isaac:attachmentPoints", "Attachment Points")
    GRIPPED_OBJECTS = ("isaac:grippedObjects", "Gripped Objects")
    POSE_START_LINK = ("isaac:robot:pose:startLink", "Pose Start Link")
    POSE_END_LINK = ("isaac:robot:pose:endLink", "Pose End Link")
    POSE_JOINTS = ("isaac:robot:pose:joints", "Pose Joints")

    @property
    def name(self) -> str:  # type: ignore[override]
        """The USD relationship name."""
        return str(self.value[0])

    @property
    def display_name(self) -> str:
        """The display name of the relationship."""
        return str(self.value[1])


DEPRECATED_DOF_OFFSET_ATTRIBUTES: tuple[tuple[str, str, str], ...] = (
    ("isaac:physics:Tr_X:DoFOffset", "TransX", "transX"),
    ("isaac:physics:Tr_Y:DoFOffset", "TransY", "transY"),
    ("isaac:physics:Tr_Z:DoFOffset", "TransZ", "transZ"),
    ("isaac:physics:Rot_X:DoFOffset", "RotX", "rotX"),
    ("isaac:physics:Rot_Y:DoFOffset", "RotY", "rotY"),
    ("isaac:physics:Rot_Z:DoFOffset", "RotZ", "rotZ"),
)
"""(legacy attribute, DOF token, UsdPhysics axis token) in canonical order."""
