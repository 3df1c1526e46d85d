"""Typed readers: every documented bad input is one SchemaError naming the prim and the
attribute; the simple_arm scene's joint frames and named poses against USD and Pinocchio.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pxr import Usd

from runtime.errors import SchemaError
from runtime.schema import readers
from tests.helpers.readers import (  # noqa: E402
    SCENE,
    _stage,
)

# ---------------------------------------------------------------------------------------------
# bad input: every case names the prim path and the attribute
# ---------------------------------------------------------------------------------------------

_BODY = 'def Xform "B" (prepend apiSchemas = ["PhysicsRigidBodyAPI"]) {{\n{inner}\n}}'
_ROBOT = 'def Xform "R" (prepend apiSchemas = ["IsaacRobotAPI"]) {{\n{inner}\n}}'
_JOINT = 'def Xform "A" {{\n}}\ndef Xform "C" {{\n}}\ndef PhysicsRevoluteJoint "J" {{\n{inner}\n}}'

BAD_CASES = [
    # (id, usda, reader, prim path, attribute, text in message)
    (
        "robot_type_token",
        _ROBOT.format(inner=' token isaac:robotType = "Robot Arm"'),
        readers.read_robot,
        "/R",
        "isaac:robotType",
        "unknown token 'Robot Arm'",
    ),
    (
        "license_token",
        _ROBOT.format(inner=' token isaac:license = "WTFPL"'),
        readers.read_robot,
        "/R",
        "isaac:license",
        "'Apache-2.0'",
    ),
    (
        "description_wrong_type",
        _ROBOT.format(inner=" float isaac:description = 3"),
        readers.read_robot,
        "/R",
        "isaac:description",
        "a string",
    ),
    (
        "robot_links_missing_target",
        'def Xform "L" {\n}\n'
        + _ROBOT.format(inner=" rel isaac:physics:robotLinks = [</L>, </Ghost>]"),
        readers.read_robot,
        "/R",
        "isaac:physics:robotLinks",
        "target /Ghost does not exist",
    ),
    (
        "robot_joints_missing_target",
        _ROBOT.format(inner=" rel isaac:physics:robotJoints = </joints/nope>"),
        readers.read_robot,
        "/R",
        "isaac:physics:robotJoints",
        "/joints/nope does not exist",
    ),
    (
        "site_forward_axis_token",
        'def Xform "S" (prepend apiSchemas = ["IsaacSiteAPI"]) {\n'
        ' uniform token isaac:forwardAxis = "W"\n}',
        readers.read_site,
        "/S",
        "isaac:forwardAxis",
        "unknown token 'W'",
    ),
    (
        "gripper_status_token",
        'def IsaacSurfaceGripper "G" {\n uniform token isaac:status = "Half"\n}',
        readers.read_surface_gripper,
        "/G",
        "isaac:status",
        "'Open', 'Closed', 'Closing'",
    ),
    (
        "output_frame_token",
        'def IsaacRaycastSensor "R" {\n token outputFrameOfReference = "world"\n}',
        readers.read_raycast_sensor,
        "/R",
        "outputFrameOfReference",
        "unknown token 'world'",
    ),
    (
        "dof_offset_op_order_token",
        _JOINT.format(
            inner=' rel physics:body0 = </A>\n token[] isaac:physics:DofOffsetOpOrder = ["rotX"]'
        ),
        readers.read_joint,
        "/J",
        "isaac:physics:DofOffsetOpOrder",
        "unknown token 'rotX'",
    ),
    (
        "dof_offset_op_order_duplicate",
        _JOINT.format(
            inner=" rel physics:body0 = </A>\n"
            ' token[] isaac:physics:DofOffsetOpOrder = ["RotX", "RotX"]'
        ),
        readers.read_joint,
        "/J",
        "isaac:physics:DofOffsetOpOrder",
        "duplicate",
    ),
    (
        "joint_axis_token",
        _JOINT.format(inner=' rel physics:body0 = </A>\n uniform token physics:axis = "W"'),
        readers.read_joint,
        "/J",
        "physics:axis",
        "unknown token 'W'",
    ),
    (
        "joint_body_rel_missing",
        _JOINT.format(inner=" float physics:lowerLimit = 0"),
        readers.read_joint,
        "/J",
        "physics:body0",
        "neither physics:body0 nor physics:body1 has a target",
    ),
    (
        "joint_body_target_missing",
        _JOINT.format(inner=" rel physics:body0 = </A>\n rel physics:body1 = </Nowhere>"),
        readers.read_joint,
        "/J",
        "physics:body1",
        "target /Nowhere does not exist",
    ),
    (
        "joint_limit_nan",
        _JOINT.format(inner=" rel physics:body0 = </A>\n float physics:upperLimit = nan"),
        readers.read_joint,
        "/J",
        "physics:upperLimit",
        "not finite",
    ),
    (
        "joint_limit_wrong_type",
        _JOINT.format(inner=' rel physics:body0 = </A>\n string physics:lowerLimit = "low"'),
        readers.read_joint,
        "/J",
        "physics:lowerLimit",
        "value 'low' has type str",
    ),
    (
        "joint_local_pos_nan",
        _JOINT.format(inner=" rel physics:body0 = </A>\n point3f physics:localPos0 = (0, nan, 0)"),
        readers.read_joint,
        "/J",
        "physics:localPos0",
        "not finite",
    ),
    (
        "contact_without_rigid_body",
        'def Xform "X" {\n def IsaacContactSensor "C" {\n }\n}',
        readers.read_contact_sensor,
        "/X/C",
        "physics:rigidBodyEnabled",
        "no ancestor with an enabled rigid body",
    ),
    (
        "imu_under_disabled_rigid_body",
        'def Xform "X" (prepend apiSchemas = ["PhysicsRigidBodyAPI"]) {\n'
        ' bool physics:rigidBodyEnabled = 0\n def IsaacImuSensor "I" {\n }\n}',
        readers.read_imu_sensor,
        "/X/I",
        "physics:rigidBodyEnabled",
        "IMU sensor has no ancestor",
    ),
    (
        "imu_negative_filter_width",
        _BODY.format(inner=' def IsaacImuSensor "I" {\n  int orientationFilterWidth = -2\n }'),
        readers.read_imu_sensor,
        "/B/I",
        "orientationFilterWidth",
        "negative filter width -2",
    ),
    (
        "imu_filter_width_wrong_type",
        _BODY.format(
            inner=' def IsaacImuSensor "I" {\n  float linearAccelerationFilterWidth = 2.5\n }'
        ),
        readers.read_imu_sensor,
        "/B/I",
        "linearAccelerationFilterWidth",
        "an integer",
    ),
    (
        "contact_radius_wrong_type",
        _BODY.format(inner=' def IsaacContactSensor "C" {\n  string radius = "big"\n }'),
        readers.read_contact_sensor,
        "/B/C",
        "radius",
        "value 'big' has type str",
    ),
    (
        "contact_threshold_inverted",
        _BODY.format(inner=' def IsaacContactSensor "C" {\n  float2 threshold = (10, 1)\n }'),
        readers.read_contact_sensor,
        "/B/C",
        "threshold",
        "min 10.0 > max 1.0",
    ),
    (
        "sensor_nan_transform",
        _BODY.format(
            inner=' def IsaacContactSensor "C" {\n  double3 xformOp:translate = (0, nan, 0)\n'
            '  uniform token[] xformOpOrder = ["xformOp:translate"]\n }'
        ),
        readers.read_contact_sensor,
        "/B/C",
        "xformOp:translate",
        "not finite",
    ),
    (
        "raycast_origins_wrong_type",
        'def IsaacRaycastSensor "R" {\n float[] rayOrigins = [1, 2, 3]\n}',
        readers.read_raycast_sensor,
        "/R",
        "rayOrigins",
        "not a 3-vector array",
    ),
    (
        "raycast_enabled_wrong_type",
        'def IsaacRaycastSensor "R" {\n int enabled = 1\n}',
        readers.read_raycast_sensor,
        "/R",
        "enabled",
        "a bool",
    ),
    (
        "raycast_nan_max_range",
        'def IsaacRaycastSensor "R" {\n float maxRange = inf\n}',
        readers.read_raycast_sensor,
        "/R",
        "maxRange",
        "not finite",
    ),
    (
        "named_pose_values_length",
        'def Xform "A" {\n}\ndef IsaacNamedPose "P" {\n rel isaac:robot:pose:joints = </A>\n'
        " float[] isaac:robot:pose:jointValues = [1, 2]\n}",
        readers.read_named_pose,
        "/P",
        "isaac:robot:pose:jointValues",
        "has 2 values for 1 joints",
    ),
    (
        "named_pose_nan_transform",
        'def IsaacNamedPose "P" {\n quatd xformOp:orient = (nan, 0, 0, 0)\n'
        ' uniform token[] xformOpOrder = ["xformOp:orient"]\n}',
        readers.read_named_pose,
        "/P",
        "xformOp:orient",
        "not finite",
    ),
    (
        "named_pose_missing_end_link",
        'def IsaacNamedPose "P" {\n rel isaac:robot:pose:endLink = </Gone>\n}',
        readers.read_named_pose,
        "/P",
        "isaac:robot:pose:endLink",
        "target /Gone does not exist",
    ),
    (
        "link_name_override_wrong_type",
        'def Xform "L" (prepend apiSchemas = ["IsaacLinkAPI"]) {\n int isaac:nameOverride = 4\n}',
        readers.read_link,
        "/L",
        "isaac:nameOverride",
        "a string",
    ),
    (
        "attachment_clearance_nan",
        'def PhysicsJoint "J" (prepend apiSchemas = ["IsaacAttachmentPointAPI"]) {\n'
        " float isaac:clearanceOffset = nan\n}",
        readers.read_attachment_point,
        "/J",
        "isaac:clearanceOffset",
        "not finite",
    ),
    (
        "sensor_wrong_type_name",
        'def Xform "X" {\n}',
        readers.read_sensor,
        "/X",
        "typeName",
        "is not a sensor",
    ),
]


@pytest.mark.parametrize(
    ("usda", "reader", "path", "attribute", "text"),
    [case[1:] for case in BAD_CASES],
    ids=[case[0] for case in BAD_CASES],
)
def test_bad_input_raises_schema_error(usda, reader, path, attribute, text):
    stage = _stage(usda)
    with pytest.raises(SchemaError) as info:
        reader(stage.GetPrimAtPath(path))
    err = info.value
    assert err.prim_path == path
    assert err.attribute == attribute
    message = str(err)
    assert message.startswith(f"{path}.{attribute}: "), message
    assert text in message, message


def test_bad_cases_count():
    assert len(BAD_CASES) >= 15


def test_non_positive_meters_per_unit_is_rejected():
    stage = _stage(
        'def Xform "A" {\n}\ndef PhysicsPrismaticJoint "J" {\n rel physics:body0 = </A>\n}',
        header="metersPerUnit = 0",
    )
    with pytest.raises(SchemaError, match="metersPerUnit"):
        readers.read_joint(stage.GetPrimAtPath("/J"))


def test_rigid_body_enabled_without_api_qualifies():
    """Rule 1: an authored true physics:rigidBodyEnabled is enough.

    See docs/sensors/index.md#parent-body.
    """
    stage = _stage(
        'def Xform "X" {\n bool physics:rigidBodyEnabled = 1\n def Xform "M" {\n'
        '  def IsaacImuSensor "I" {\n  }\n }\n}'
    )
    prim = stage.GetPrimAtPath("/X/M/I")
    assert readers.find_parent_rigid_body(prim).GetPath() == "/X"
    assert readers.find_parent_rigid_body(stage.GetPrimAtPath("/X")) is None


def test_simple_arm_joint_frames_agree_at_zero_configuration():
    """Each joint's two frames coincide in the authored pose (USD computes the world poses)."""
    from pxr import Gf, UsdGeom

    stage = Usd.Stage.Open(str(SCENE))
    info = readers.read_robot(stage.GetPrimAtPath("/World/SimpleArm"))
    cache = UsdGeom.XformCache()
    for path in info.joint_paths:
        joint = readers.read_joint(stage.GetPrimAtPath(path))
        frames = []
        for body, pos, rot in (
            (joint.body0, joint.local_pos0, joint.local_rot0),
            (joint.body1, joint.local_pos1, joint.local_rot1),
        ):
            world = (
                cache.GetLocalToWorldTransform(stage.GetPrimAtPath(body))
                if body
                else Gf.Matrix4d(1.0)
            )
            local = Gf.Matrix4d(1.0)
            local.SetRotateOnly(Gf.Quatd(float(rot[0]), Gf.Vec3d(*map(float, rot[1:]))))
            local.SetTranslateOnly(Gf.Vec3d(*map(float, pos)))
            frames.append(np.array(local * world))
        np.testing.assert_allclose(frames[0], frames[1], atol=1e-9, err_msg=path)


@pytest.mark.parametrize("name", ["ready", "touch_table"])
def test_simple_arm_named_pose_matches_pinocchio(name):
    """A named pose's transform equals link4's pose from an independent Pinocchio model."""
    pin = pytest.importorskip("pinocchio")
    stage = Usd.Stage.Open(str(SCENE))
    pose = readers.read_named_pose(stage.GetPrimAtPath(f"/World/SimpleArm/named_poses/{name}"))
    model = pin.Model()
    parent = 0
    # joint placements relative to the previous joint, from the scene's link layout
    for name, joint, offset in (
        ("pan", pin.JointModelRZ(), 0.10),
        ("lift", pin.JointModelRY(), 0.10),
        ("elbow", pin.JointModelRY(), 0.30),
        ("slide", pin.JointModelPZ(), 0.25),
    ):
        placement = pin.SE3(np.eye(3), np.array([0.0, 0.0, offset]))
        parent = model.addJoint(parent, joint, placement, name)
    data = model.createData()
    q = np.array([math.radians(v) for v in pose.joint_values[:3]] + [pose.joint_values[3]])
    pin.forwardKinematics(model, data, q)
    link4 = data.oMi[parent]
    np.testing.assert_allclose(pose.target_translation, link4.translation, atol=1e-9)
    quat = pin.Quaternion(link4.rotation)
    expected = np.array([quat.w, quat.x, quat.y, quat.z])
    np.testing.assert_allclose(pose.target_orientation, expected * np.sign(expected[0]), atol=1e-9)
    robot = readers.read_robot(stage.GetPrimAtPath("/World/SimpleArm"))
    assert pose.joints == robot.joint_paths[1:]  # the four movable joints, in order
