"""Registered Isaac schemas: kinds, HasAPI / IsA, fallbacks and allowed tokens, round-trip.

Expected values are the schema tables of docs/reference/usd-attributes.md and
docs/sensors/index.md#schema-attributes (the spec), not values computed by our code.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pxr import Sdf, Usd

from runtime.schema import readers

FIXTURE = Path(__file__).parent / "fixtures" / "isaac_style.usda"

ROBOT_API_SCHEMAS = (
    "IsaacRobotAPI",
    "IsaacLinkAPI",
    "IsaacJointAPI",
    "IsaacSiteAPI",
    "IsaacAttachmentPointAPI",
)
SENSOR_API_SCHEMAS = ("IsaacRtxLidarSensorAPI", "IsaacRtxRadarSensorAPI")

ROBOT_TYPES = [
    "Default",
    "End Effector",
    "Manipulator",
    "Humanoid",
    "Wheeled",
    "Holonomic",
    "Quadruped",
    "Mobile Manipulators",
    "Aerial",
]
LICENSES = [
    "MIT",
    "Apache-2.0",
    "GPL-3.0",
    "LGPL-3.0",
    "BSD-3-Clause",
    "BSD-2-Clause",
    "ISC",
    "MPL-2.0",
    "EPL-2.0",
    "CC0-1.0",
    "Unlicense",
    "Other",
]

# (schema, attribute, fallback, allowed tokens or None) straight from the spec tables.
API_FALLBACKS = [
    ("IsaacRobotAPI", "isaac:description", "", None),
    ("IsaacRobotAPI", "isaac:namespace", "", None),
    ("IsaacRobotAPI", "isaac:robotType", "Default", ROBOT_TYPES),
    ("IsaacRobotAPI", "isaac:license", "Other", LICENSES),
    ("IsaacRobotAPI", "isaac:version", "", None),
    ("IsaacRobotAPI", "isaac:source", "", None),
    ("IsaacRobotAPI", "isaac:changelog", [], None),
    ("IsaacLinkAPI", "isaac:nameOverride", "", None),
    ("IsaacJointAPI", "isaac:NameOverride", "", None),
    ("IsaacJointAPI", "isaac:physics:DofOffsetOpOrder", [], None),
    ("IsaacJointAPI", "isaac:actuator", [], None),
    ("IsaacSiteAPI", "isaac:Description", "", None),
    ("IsaacSiteAPI", "isaac:forwardAxis", "X", ["X", "Y", "Z"]),
    ("IsaacAttachmentPointAPI", "isaac:forwardAxis", "X", ["X", "Y", "Z"]),
    ("IsaacAttachmentPointAPI", "isaac:clearanceOffset", 0.0, None),
]

TYPED_FALLBACKS = [
    ("IsaacContactSensor", "enabled", True, None),
    ("IsaacContactSensor", "threshold", (0.01, 100000.0), None),
    ("IsaacContactSensor", "radius", -1.0, None),
    ("IsaacContactSensor", "color", (1.0, 1.0, 1.0, 1.0), None),
    ("IsaacContactSensor", "sensorPeriod", 0.0025, None),
    ("IsaacImuSensor", "enabled", True, None),
    ("IsaacImuSensor", "sensorPeriod", 0.01, None),
    ("IsaacImuSensor", "linearAccelerationFilterWidth", 1, None),
    ("IsaacImuSensor", "angularVelocityFilterWidth", 1, None),
    ("IsaacImuSensor", "orientationFilterWidth", 1, None),
    ("IsaacRaycastSensor", "enabled", True, None),
    ("IsaacRaycastSensor", "numRays", 1, None),
    ("IsaacRaycastSensor", "minRange", 0.4, None),
    ("IsaacRaycastSensor", "maxRange", 100.0, None),
    ("IsaacRaycastSensor", "rayOrigins", [], None),
    ("IsaacRaycastSensor", "rayDirections", [], None),
    ("IsaacRaycastSensor", "rayTimeOffsets", [], None),
    ("IsaacRaycastSensor", "outputFrameOfReference", "SENSOR", ["SENSOR", "WORLD"]),
    ("IsaacRaycastSensor", "reportHitPrimPaths", False, None),
    ("IsaacLightBeamSensor", "enabled", True, None),
    ("IsaacLightBeamSensor", "numRays", 1, None),
    ("IsaacLightBeamSensor", "curtainLength", 0.0, None),
    ("IsaacLightBeamSensor", "forwardAxis", (1.0, 0.0, 0.0), None),
    ("IsaacLightBeamSensor", "curtainAxis", (0.0, 0.0, 1.0), None),
    ("IsaacLightBeamSensor", "minRange", 0.4, None),
    ("IsaacLightBeamSensor", "maxRange", 100.0, None),
    ("IsaacNamedPose", "isaac:robot:pose:valid", None, None),
    ("IsaacNamedPose", "isaac:robot:pose:jointValues", None, None),
    ("IsaacNamedPose", "isaac:robot:pose:jointFixed", None, None),
    ("IsaacNamedPose", "visibility", "inherited", ["inherited", "invisible"]),
]


def _same(value, expected) -> bool:
    if expected is None:
        return value is None
    if isinstance(expected, bool):
        return value is expected
    if isinstance(expected, str):
        return value == expected
    if isinstance(expected, (int, float)):
        return math.isclose(float(value), float(expected), rel_tol=1e-6)
    values = list(value)
    return len(values) == len(expected) and all(
        math.isclose(float(a), float(b), rel_tol=1e-6) if not isinstance(b, str) else a == b
        for a, b in zip(values, expected, strict=True)
    )


@pytest.fixture()
def stage():
    return Usd.Stage.CreateInMemory()


@pytest.mark.parametrize("name", ROBOT_API_SCHEMAS + SENSOR_API_SCHEMAS)
def test_api_schema_kind_apply_hasapi(stage, name):
    assert Usd.SchemaRegistry.GetSchemaKind(name) == Usd.SchemaKind.SingleApplyAPI
    prim = stage.DefinePrim("/P", "Xform")
    assert not prim.HasAPI(name)
    assert prim.ApplyAPI(name)
    assert prim.HasAPI(name)
    assert name in prim.GetAppliedSchemas()


@pytest.mark.parametrize(
    ("name", "kind", "base"),
    [
        ("IsaacNamedPose", Usd.SchemaKind.ConcreteTyped, "Xform"),
        ("IsaacContactSensor", Usd.SchemaKind.ConcreteTyped, "IsaacBaseSensor"),
        ("IsaacImuSensor", Usd.SchemaKind.ConcreteTyped, "IsaacBaseSensor"),
        ("IsaacRaycastSensor", Usd.SchemaKind.ConcreteTyped, "IsaacBaseSensor"),
        ("IsaacLightBeamSensor", Usd.SchemaKind.ConcreteTyped, "IsaacBaseSensor"),
    ],
)
def test_typed_schema_isa(stage, name, kind, base):
    assert Usd.SchemaRegistry.GetSchemaKind(name) == kind
    prim = stage.DefinePrim("/P", name)
    assert prim.IsA(name)
    assert prim.IsA(base)
    assert prim.IsA("Xformable")


def test_base_sensor_is_abstract():
    assert Usd.SchemaRegistry.GetSchemaKind("IsaacBaseSensor") == Usd.SchemaKind.AbstractTyped


def test_surface_gripper_is_concrete_with_fallbacks(stage):
    """Defect fixed: concrete, so IsA works and fallbacks resolve.

    See docs/guides/inspect-and-schema.md#registration.
    """
    assert Usd.SchemaRegistry.GetSchemaKind("IsaacSurfaceGripper") == Usd.SchemaKind.ConcreteTyped
    prim = stage.DefinePrim("/G", "IsaacSurfaceGripper")
    assert prim.IsA("IsaacSurfaceGripper")
    assert prim.GetAttribute("isaac:status").Get() == "Open"
    assert prim.GetAttribute("isaac:status").GetVariability() == Sdf.VariabilityUniform
    info = readers.read_surface_gripper(prim)
    assert info.status == "Open"
    assert info.max_grip_distance == pytest.approx(0.01)
    assert info.retry_interval == 0.0
    assert info.shear_force_limit == -1.0
    assert info.coaxial_force_limit == -1.0
    assert info.attachment_points == ()


def test_reference_point_api_is_defined_for_old_assets(stage):
    """Defect fixed: the deprecated API is a real schema, HasAPI works.

    See docs/guides/inspect-and-schema.md#registration.
    """
    prim = stage.DefinePrim("/P", "Xform")
    prim.AddAppliedSchema("IsaacReferencePointAPI")
    assert prim.HasAPI("IsaacReferencePointAPI")
    assert prim.GetAttribute("isaac:Description").Get() == ""


@pytest.mark.parametrize(("schema", "attr", "fallback", "tokens"), API_FALLBACKS)
def test_api_fallbacks_and_tokens(stage, schema, attr, fallback, tokens):
    prim = stage.DefinePrim("/P", "Xform")
    prim.ApplyAPI(schema)
    attribute = prim.GetAttribute(attr)
    assert attribute.IsValid() and not attribute.IsCustom()
    assert not attribute.HasAuthoredValue()
    assert _same(attribute.Get(), fallback), (attr, attribute.Get())
    allowed = attribute.GetMetadata("allowedTokens")
    if tokens is None:
        assert not allowed
    else:
        assert list(allowed) == tokens


@pytest.mark.parametrize(("schema", "attr", "fallback", "tokens"), TYPED_FALLBACKS)
def test_typed_fallbacks_and_tokens(stage, schema, attr, fallback, tokens):
    prim = stage.DefinePrim("/P", schema)
    attribute = prim.GetAttribute(attr)
    assert attribute.IsValid() and not attribute.IsCustom()
    assert _same(attribute.Get(), fallback), (attr, attribute.Get())
    allowed = attribute.GetMetadata("allowedTokens")
    if tokens is None:
        assert not allowed
    else:
        assert list(allowed) == tokens


def test_variability_and_types_match_the_spec(stage):
    prim = stage.DefinePrim("/P", "Xform")
    for name in ROBOT_API_SCHEMAS:
        prim.ApplyAPI(name)
    assert prim.GetAttribute("isaac:forwardAxis").GetVariability() == Sdf.VariabilityUniform
    assert prim.GetAttribute("isaac:robotType").GetVariability() == Sdf.VariabilityVarying
    assert str(prim.GetAttribute("isaac:changelog").GetTypeName()) == "string[]"
    assert str(prim.GetAttribute("isaac:physics:DofOffsetOpOrder").GetTypeName()) == "token[]"
    ray = stage.DefinePrim("/R", "IsaacRaycastSensor")
    assert str(ray.GetAttribute("numRays").GetTypeName()) == "uint"
    beam = stage.DefinePrim("/B", "IsaacLightBeamSensor")
    assert str(beam.GetAttribute("numRays").GetTypeName()) == "int"
    for rel in ("isaac:physics:robotLinks", "isaac:physics:robotJoints", "isaac:robot:namedPoses"):
        assert prim.GetRelationship(rel).IsValid()


def test_reader_token_tables_equal_schema_metadata(stage):
    prim = stage.DefinePrim("/P", "Xform")
    for name in ROBOT_API_SCHEMAS:
        prim.ApplyAPI(name)
    assert tuple(prim.GetAttribute("isaac:robotType").GetMetadata("allowedTokens")) == (
        readers.ROBOT_TYPE_TOKENS
    )
    assert tuple(prim.GetAttribute("isaac:license").GetMetadata("allowedTokens")) == (
        readers.LICENSE_TOKENS
    )
    assert tuple(prim.GetAttribute("isaac:forwardAxis").GetMetadata("allowedTokens")) == (
        readers.FORWARD_AXIS_TOKENS
    )
    ray = stage.DefinePrim("/R", "IsaacRaycastSensor")
    assert tuple(ray.GetAttribute("outputFrameOfReference").GetMetadata("allowedTokens")) == (
        readers.OUTPUT_FRAME_TOKENS
    )
    layer = Sdf.Layer.FindOrOpen(
        str(Path(readers.__file__).parent / "resources" / "robot_schema" / "generatedSchema.usda")
    )
    spec = layer.GetAttributeAtPath("/IsaacSurfaceGripper.isaac:status")
    assert tuple(spec.GetInfo("allowedTokens")) == readers.STATUS_TOKENS


def test_fixture_types_and_apis():
    stage = Usd.Stage.Open(str(FIXTURE))
    expect_api = {
        "/World/Robot": "IsaacRobotAPI",
        "/World/Robot/Base": "IsaacLinkAPI",
        "/World/Robot/Arm/tool_site": "IsaacSiteAPI",
        "/World/Robot/joints/shoulder": "IsaacJointAPI",
        "/World/Robot/joints/attach0": "IsaacAttachmentPointAPI",
        "/World/Robot/Base/lidar": "IsaacRtxLidarSensorAPI",
        "/World/Robot/Base/radar": "IsaacRtxRadarSensorAPI",
    }
    for path, api in expect_api.items():
        assert stage.GetPrimAtPath(path).HasAPI(api), path
    expect_type = {
        "/World/Robot/Poses/home": "IsaacNamedPose",
        "/World/Robot/Hand/contact": "IsaacContactSensor",
        "/World/Robot/Arm/Mount/imu": "IsaacImuSensor",
        "/World/Robot/Base/ray": "IsaacRaycastSensor",
        "/World/Robot/Base/beam": "IsaacLightBeamSensor",
    }
    for path, name in expect_type.items():
        assert stage.GetPrimAtPath(path).IsA(name), path
    gripper = stage.GetPrimAtPath("/World/Robot/SurfaceGripper")
    assert readers.is_surface_gripper(gripper)
    # both capitalisations of the name override are authored on the prismatic joint
    slide = stage.GetPrimAtPath("/World/Robot/joints/slide")
    assert slide.GetAttribute("isaac:nameOverride").Get() == "slider"
    assert slide.GetAttribute("isaac:NameOverride").Get() == "SliderCapital"


def _plain(value) -> str:
    """Comparable text of a field value (list ops by their item lists)."""
    if hasattr(value, "prependedItems"):
        parts = (
            value.isExplicit,
            value.explicitItems,
            value.prependedItems,
            value.appendedItems,
            value.deletedItems,
        )
        return repr(tuple(p if isinstance(p, bool) else tuple(str(i) for i in p) for p in parts))
    return repr(value)


def _spec_dump(layer: Sdf.Layer) -> list[tuple]:
    """Every spec of a layer with its fields and values, in a comparable form."""
    out: list[tuple] = []

    def visit(path: Sdf.Path) -> None:
        if path.IsTargetPath():  # relationship targets are compared through targetPaths
            return
        spec = layer.GetObjectAtPath(path)
        fields = tuple((key, _plain(spec.GetInfo(key))) for key in sorted(spec.ListInfoKeys()))
        out.append((str(path), fields))

    layer.Traverse(Sdf.Path.absoluteRootPath, visit)
    return sorted(out)


def test_fixture_round_trip_is_unchanged(tmp_path):
    text = FIXTURE.read_text(encoding="utf-8")
    stage = Usd.Stage.Open(str(FIXTURE))
    # reading everything through the readers must not author anything
    info = readers.read_robot(stage.GetPrimAtPath("/World/Robot"))
    for path in info.link_paths:
        prim = stage.GetPrimAtPath(path)
        if prim.HasAPI("IsaacSiteAPI"):
            readers.read_site(prim)
        else:
            readers.read_link(prim)
    for path in info.joint_paths:
        readers.read_joint(stage.GetPrimAtPath(path))
    for prim in readers.discover_sensor_prims(stage, ("IsaacImuSensor", "IsaacRaycastSensor")):
        readers.read_sensor(prim)
    readers.read_surface_gripper(stage.GetPrimAtPath("/World/Robot/SurfaceGripper"))
    assert not stage.GetRootLayer().dirty
    assert stage.GetSessionLayer().empty

    exported = stage.GetRootLayer().ExportToString()
    assert exported == text
    out = tmp_path / "export.usda"
    assert stage.GetRootLayer().Export(str(out))
    reopened = Sdf.Layer.FindOrOpen(str(out))
    original = Sdf.Layer.FindOrOpen(str(FIXTURE))
    assert _spec_dump(reopened) == _spec_dump(original)
    assert out.read_text(encoding="utf-8") == text
    # the binary crate format keeps the same specs too
    crate = tmp_path / "export.usdc"
    assert stage.GetRootLayer().Export(str(crate))
    assert _spec_dump(Sdf.Layer.FindOrOpen(str(crate))) == _spec_dump(original)
