"""Typed readers: values read from the Isaac-style fixture, and every documented bad input.

Expected values come from the fixture text (what was authored) and the spec formulas
(degrees -> radians, stage units * metersPerUnit), never from our own output.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from pxr import Usd

from runtime.schema import _values, readers
from tests.helpers.readers import SCENE, _stage  # noqa: E402, F401

FIXTURE = Path(__file__).parent / "fixtures" / "isaac_style.usda"


@pytest.fixture(scope="module")
def fixture_stage():
    return Usd.Stage.Open(str(FIXTURE))


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
    # unauthored: schema fallbacks of docs/sensors/contact.md#attributes
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
    """Attributes absent entirely (no schema) read as the table values.

    See docs/sensors/index.md#fallbacks.
    """
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
