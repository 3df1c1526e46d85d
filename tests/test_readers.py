"""Typed readers: values read from the Isaac-style fixture, and every documented bad input.

Expected values come from the fixture text (what was authored) and the spec formulas
(degrees -> radians, stage units * metersPerUnit), never from our own output.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from pxr import Sdf, Usd

from runtime.errors import SchemaError
from runtime.schema import _values, readers

FIXTURE = Path(__file__).parent / "fixtures" / "isaac_style.usda"
SCENE = Path(__file__).parent.parent / "scenes" / "simple_arm.usda"


@pytest.fixture(scope="module")
def fixture_stage():
    return Usd.Stage.Open(str(FIXTURE))


def _stage(body: str, header: str = "metersPerUnit = 1") -> Usd.Stage:
    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.ImportFromString(f"#usda 1.0\n(\n    {header}\n)\n{body}\n")
    return Usd.Stage.Open(layer)


# ---------------------------------------------------------------------------------------------
# good input
# ---------------------------------------------------------------------------------------------


def test_robot_metadata_and_relationship_order(fixture_stage):
    info = readers.read_robot(fixture_stage.GetPrimAtPath("/World/Robot"))
    assert info.description == "Fixture robot"
    assert info.namespace == "fixture_ns"
    assert info.robot_type == "Mobile Manipulators"
    assert info.license == "BSD-3-Clause"
    assert info.version == "2.1.0"
    assert info.source == "https://example.invalid/robot.urdf"
    assert info.changelog == ("2.0.0: initial", "2.1.0: added gripper")
    assert info.link_paths == tuple(
        f"/World/Robot/{n}" for n in ("Base", "Arm", "Arm/tool_site", "Wrist", "Hand", "Finger")
    )
    assert info.joint_paths == tuple(
        f"/World/Robot/joints/{n}" for n in ("fixed_base", "shoulder", "slide", "wrist_d6", "ball")
    )
    assert info.named_pose_paths == ("/World/Robot/Poses/home",)


def test_robot_fallbacks():
    stage = _stage('def Xform "R" (prepend apiSchemas = ["IsaacRobotAPI"]) {\n}')
    info = readers.read_robot(stage.GetPrimAtPath("/R"))
    assert (info.robot_type, info.license, info.description) == ("Default", "Other", "")
    assert info.link_paths == () and info.changelog == ()


def test_link_names_both_capitalisations(fixture_stage):
    base = readers.read_link(fixture_stage.GetPrimAtPath("/World/Robot/Base"))
    assert (base.name, base.name_override, base.has_link_api) == ("base_link", "base_link", True)
    wrist = readers.read_link(fixture_stage.GetPrimAtPath("/World/Robot/Wrist"))
    assert wrist.name == "Wrist"
    # joint API spelling (capital N) is honoured
    shoulder = readers.read_joint(fixture_stage.GetPrimAtPath("/World/Robot/joints/shoulder"))
    assert shoulder.name == "ShoulderJoint"
    # both authored: lower-case first
    slide = readers.read_joint(fixture_stage.GetPrimAtPath("/World/Robot/joints/slide"))
    assert slide.name == "slider"
    assert readers.reported_name(fixture_stage.GetPrimAtPath("/World/Robot/joints/ball")) == "ball"


def test_revolute_limits_degrees_and_radians(fixture_stage):
    j = readers.read_joint(fixture_stage.GetPrimAtPath("/World/Robot/joints/shoulder"))
    assert j.joint_type == "revolute" and j.axis == "Y"
    assert (j.usd_lower, j.usd_upper) == (-45.0, 120.0)
    assert j.lower == pytest.approx(-math.pi / 4)
    assert j.upper == pytest.approx(120 * math.pi / 180)
    assert j.body0 == "/World/Robot/Base" and j.body1 == "/World/Robot/Arm"
    assert j.local_pos0.dtype == np.float64 and j.local_pos0.tolist() == [0.0, 0.0, 10.0]
    assert j.local_rot0.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert [d.token for d in j.dofs] == ["RotY"]


def test_prismatic_limits_use_meters_per_unit(fixture_stage):
    j = readers.read_joint(fixture_stage.GetPrimAtPath("/World/Robot/joints/slide"))
    assert j.meters_per_unit == pytest.approx(0.01)
    assert (j.usd_lower, j.usd_upper) == (0.0, 25.0)  # centimetres as authored
    assert j.upper == pytest.approx(0.25)  # metres
    assert [d.token for d in j.dofs] == ["TransX"]


def test_d6_locked_axes_and_dof_order(fixture_stage):
    j = readers.read_joint(fixture_stage.GetPrimAtPath("/World/Robot/joints/wrist_d6"))
    assert j.joint_type == "d6"
    assert j.dof_offset_op_order == ("RotZ", "RotX")
    locked = {d.token: d.locked for d in j.dofs}
    assert locked == {
        "TransX": True,
        "TransY": True,
        "TransZ": True,
        "RotX": False,
        "RotY": True,
        "RotZ": False,
    }
    rot_x = next(d for d in j.dofs if d.token == "RotX")
    assert (rot_x.usd_lower, rot_x.usd_upper) == (-30.0, 30.0)
    assert rot_x.upper == pytest.approx(math.pi / 6)
    rot_z = next(d for d in j.dofs if d.token == "RotZ")
    assert (rot_z.lower, rot_z.upper) == (-math.inf, math.inf)
    assert [d.token for d in j.free_dofs] == ["RotX", "RotZ"]


def test_fixed_and_spherical_joints(fixture_stage):
    fixed = readers.read_joint(fixture_stage.GetPrimAtPath("/World/Robot/joints/fixed_base"))
    assert fixed.joint_type == "fixed" and fixed.dofs == () and fixed.body0 == ""
    ball = readers.read_joint(fixture_stage.GetPrimAtPath("/World/Robot/joints/ball"))
    assert ball.joint_type == "spherical"
    assert [d.token for d in ball.dofs] == ["RotX", "RotY", "RotZ"]


def test_inverted_revolute_limits_mean_unlimited():
    stage = _stage(
        'def Xform "A" {\n}\ndef PhysicsRevoluteJoint "J" {\n rel physics:body0 = </A>\n'
        " float physics:lowerLimit = 180\n float physics:upperLimit = -180\n}"
    )
    j = readers.read_joint(stage.GetPrimAtPath("/J"))
    assert (j.usd_lower, j.usd_upper, j.lower, j.upper) == (
        -math.inf,
        math.inf,
        -math.inf,
        math.inf,
    )


def test_joint_type_of_generic_and_non_joint():
    stage = _stage('def PhysicsDistanceJoint "D" {\n}\ndef Xform "X" {\n}')
    assert readers.joint_type_of(stage.GetPrimAtPath("/D")) == "generic"
    assert readers.joint_type_of(stage.GetPrimAtPath("/X")) is None


def test_site_and_deprecated_reference_point(fixture_stage):
    site = readers.read_site(fixture_stage.GetPrimAtPath("/World/Robot/Arm/tool_site"))
    assert site.description == "tool mount" and site.forward_axis == "Y"
    assert site.parent_link == "/World/Robot/Arm" and not site.deprecated
    assert site.translation_in_parent.tolist() == [0.0, 0.0, 15.0]
    np.testing.assert_allclose(
        site.orientation_in_parent, [math.sqrt(0.5), math.sqrt(0.5), 0, 0], atol=1e-6
    )
    old = readers.read_site(fixture_stage.GetPrimAtPath("/World/Robot/Wrist/old_reference"))
    assert old.deprecated and old.forward_axis == "Z" and old.parent_link == "/World/Robot/Wrist"


def test_named_pose(fixture_stage):
    pose = readers.read_named_pose(fixture_stage.GetPrimAtPath("/World/Robot/Poses/home"))
    assert pose.start_link == "/World/Robot/Base" and pose.end_link == "/World/Robot/Wrist"
    assert pose.joints == ("/World/Robot/joints/shoulder", "/World/Robot/joints/slide")
    assert pose.joint_values.tolist() == [45.0, 12.5]
    assert pose.joint_fixed == (False, True) and pose.valid is True
    assert pose.target_translation.tolist() == [10.0, 0.0, 30.0]


def test_surface_gripper_and_attachment_point(fixture_stage):
    g = readers.read_surface_gripper(fixture_stage.GetPrimAtPath("/World/Robot/SurfaceGripper"))
    assert g.status == "Closed" and g.max_grip_distance == 0.5 and g.shear_force_limit == 20
    assert g.retry_interval == 0.0 and g.coaxial_force_limit == -1.0  # table defaults
    assert g.attachment_points == ("/World/Robot/joints/attach0",)
    a = readers.read_attachment_point(fixture_stage.GetPrimAtPath("/World/Robot/joints/attach0"))
    assert a.forward_axis == "Z" and a.clearance_offset == pytest.approx(0.1)


def test_contact_config(fixture_stage):
    c = readers.read_contact_sensor(fixture_stage.GetPrimAtPath("/World/Robot/Hand/contact"))
    assert c.parent_body == "/World/Robot/Hand" and c.enabled
    assert (c.threshold_min, c.threshold_max, c.radius) == (1.0, 500.0, 2.0)
    assert c.color == (1.0, 0.0, 0.0, 1.0) and c.sensor_period == 0.005


def test_disabled_rigid_body_is_skipped(fixture_stage):
    prim = fixture_stage.GetPrimAtPath("/World/Robot/Hand/Pad/pad_contact")
    assert readers.find_parent_rigid_body(prim).GetPath() == "/World/Robot/Hand"
    c = readers.read_contact_sensor(prim)
    assert c.parent_body == "/World/Robot/Hand"
    # unauthored: schema fallbacks of sensors.md §1.3
    assert (c.threshold_min, c.threshold_max, c.radius) == (0.01, 100000.0, -1.0)


def test_imu_config_and_pose_in_body(fixture_stage):
    imu = readers.read_imu_sensor(fixture_stage.GetPrimAtPath("/World/Robot/Arm/Mount/imu"))
    assert imu.parent_body == "/World/Robot/Arm" and imu.enabled is False
    assert (
        imu.linear_acceleration_filter_width,
        imu.angular_velocity_filter_width,
        imu.orientation_filter_width,
    ) == (3, 2, 0)
    assert imu.effective_widths == (3, 2, 1)
    assert imu.translation_in_body.tolist() == [1.0, 2.0, 3.0]  # intermediate Mount Xform
    np.testing.assert_allclose(np.abs(imu.orientation_in_body), [0, 0, 0, 1], atol=1e-7)


def test_raycast_config(fixture_stage):
    r = readers.read_raycast_sensor(fixture_stage.GetPrimAtPath("/World/Robot/Base/ray"))
    assert r.parent_body == "/World/Robot/Base" and r.num_rays == 3
    assert (r.min_range, r.max_range) == (1.0, 500.0)
    assert r.ray_origins.shape == (3, 3) and r.ray_origins.flags.c_contiguous
    assert r.ray_directions.tolist() == [[2, 0, 0], [1, 0, 0], [0, 0, 0]]
    assert r.ray_time_offsets.tolist() == pytest.approx([0, 0.05, 0.1])
    assert r.output_frame_of_reference == "WORLD" and r.report_hit_prim_paths
    # the fixture's third direction is zero: the reference casts it along +X, simrt disables
    assert readers.validate_raycast(r) == (
        "IsaacRaycastSensor '/World/Robot/Base/ray': rayDirections entry 2 (0.0, 0.0, 0.0) "
        "has zero length. Sensor disabled."
    )
    static = readers.read_raycast_sensor(fixture_stage.GetPrimAtPath("/World/StaticRay"))
    assert static.parent_body == ""
    assert readers.validate_raycast(static) == (
        "IsaacRaycastSensor '/World/StaticRay': rayOrigins length (0) != numRays (1). "
        "Sensor disabled."
    )


def test_discovery_exact_type_and_default_predicate(fixture_stage):
    paths = [str(p.GetPath()) for p in readers.discover_sensor_prims(fixture_stage)]
    assert paths == [
        "/World/Robot/Base/ray",
        "/World/Robot/Arm/Mount/imu",
        "/World/Robot/Hand/contact",
        "/World/Robot/Hand/Pad/pad_contact",
        "/World/StaticRay",
    ]
    stage = _stage(
        'def Xform "B" (prepend apiSchemas = ["PhysicsRigidBodyAPI"]) {\n'
        ' def IsaacImuSensor "on" {\n }\n'
        ' def IsaacImuSensor "off" (active = false) {\n }\n'
        ' class IsaacImuSensor "abstract_one" {\n }\n'
        ' def IsaacBaseSensor "base" {\n }\n}'
    )
    configs = readers.discover_sensors(stage)
    assert [c.path for c in configs] == ["/B/on"]
    assert isinstance(configs[0], readers.ImuSensorConfig)


@pytest.mark.parametrize(
    ("authored", "message"),
    [
        ("uint numRays = 0", "numRays (0) must be > 0. Sensor disabled."),
        (
            "uint numRays = 1\n float minRange = 5\n float maxRange = 5",
            "minRange (5) >= maxRange (5). Sensor disabled.",
        ),
        (
            "uint numRays = 2\n point3f[] rayOrigins = [(0,0,0)]",
            "rayOrigins length (1) != numRays (2). Sensor disabled.",
        ),
        (
            "uint numRays = 1\n point3f[] rayOrigins = [(0,0,0)]",
            "rayDirections length (0) != numRays (1). Sensor disabled.",
        ),
        (
            "uint numRays = 1\n point3f[] rayOrigins = [(0,0,0)]\n"
            " vector3f[] rayDirections = [(1,0,0)]\n float[] rayTimeOffsets = [0, 1]",
            "rayTimeOffsets length (2) != numRays (1). Sensor disabled.",
        ),
    ],
)
def test_validate_raycast_messages(authored, message):
    stage = _stage(f'def IsaacRaycastSensor "R" {{\n {authored}\n}}')
    config = readers.read_raycast_sensor(stage.GetPrimAtPath("/R"))
    assert readers.validate_raycast(config) == f"IsaacRaycastSensor '/R': {message}"


def test_unregistered_fallbacks_are_applied_by_the_readers():
    """sensors.md §1.7: attributes absent entirely (no schema) read as the table values."""
    stage = _stage(
        'def Xform "B" (prepend apiSchemas = ["PhysicsRigidBodyAPI"]) {\n def Xform "S" {\n }\n}'
    )
    prim = stage.GetPrimAtPath("/B/S")
    assert _values._read_vec(
        prim, "threshold", 2, readers.CONTACT_FALLBACKS["threshold"]
    ).tolist() == [0.01, 100000.0]
    assert _values._read_int(prim, "numRays", 1) == 1


def test_simple_arm_scene_reads(tmp_path):
    stage = Usd.Stage.Open(str(SCENE))
    info = readers.read_robot(stage.GetPrimAtPath("/World/SimpleArm"))
    joints = [readers.read_joint(stage.GetPrimAtPath(p)) for p in info.joint_paths]
    assert [j.joint_type for j in joints] == [
        "fixed",
        "revolute",
        "revolute",
        "revolute",
        "prismatic",
    ]
    kinds = sorted(type(c).__name__ for c in readers.discover_sensors(stage))
    assert kinds == ["ContactSensorConfig", "ImuSensorConfig", "RaycastSensorConfig"]
    for config in readers.discover_sensors(stage):
        if isinstance(config, readers.RaycastSensorConfig):
            assert readers.validate_raycast(config) is None


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
    """sensors.md §1.8 rule 1: an authored true physics:rigidBodyEnabled is enough."""
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
