"""Write docs/reference/usd-attributes.md: every USD attribute a simrt user authors.

The Isaac schema tables are read from the schema resources simrt registers
(``runtime/schema/resources/*/generatedSchema.usda``: name, type, default, allowed tokens,
description); units and simrt's own notes come from the hand-written tables below, and so do
simrt's own settings (the PhysicsScene's ``customData["simrt"]``) and the engine attributes
the MuJoCo builder honours (``runtime.engine.physics_attrs.HONOURED_ATTRIBUTES``).
An attribute without an entry in ``UNITS`` (or an honoured engine attribute without one in
``ENGINE_ATTRIBUTES``) stops the script, so a schema change cannot slip past the page.

    python tools/usd_attributes.py           # rewrite the page
    python tools/usd_attributes.py --check   # exit 1 if the page is out of date (tests run this)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "runtime" / "schema" / "resources"
PAGE = ROOT / "docs" / "reference" / "usd-attributes.md"

#: Attributes every Xformable / Imageable prim has; not repeated per schema.
GENERIC = {"proxyPrim", "purpose", "visibility", "xformOpOrder"}

#: (schema, attribute) -> unit ("" = none). Every schema attribute needs an entry.
UNITS: dict[tuple[str, str], str] = {
    ("IsaacBaseSensor", "enabled"): "",
    ("IsaacContactSensor", "color"): "RGBA, 0-1",
    ("IsaacContactSensor", "enabled"): "",
    ("IsaacContactSensor", "radius"): "stage units",
    ("IsaacContactSensor", "sensorPeriod"): "s",
    ("IsaacContactSensor", "threshold"): "mass x stage units / s^2",
    ("IsaacImuSensor", "angularVelocityFilterWidth"): "samples",
    ("IsaacImuSensor", "enabled"): "",
    ("IsaacImuSensor", "linearAccelerationFilterWidth"): "samples",
    ("IsaacImuSensor", "orientationFilterWidth"): "samples",
    ("IsaacImuSensor", "sensorPeriod"): "s",
    ("IsaacLightBeamSensor", "curtainAxis"): "unit vector, sensor frame",
    ("IsaacLightBeamSensor", "curtainLength"): "stage units",
    ("IsaacLightBeamSensor", "enabled"): "",
    ("IsaacLightBeamSensor", "forwardAxis"): "unit vector, sensor frame",
    ("IsaacLightBeamSensor", "maxRange"): "stage units",
    ("IsaacLightBeamSensor", "minRange"): "stage units",
    ("IsaacLightBeamSensor", "numRays"): "",
    ("IsaacRaycastSensor", "enabled"): "",
    ("IsaacRaycastSensor", "maxRange"): "stage units",
    ("IsaacRaycastSensor", "minRange"): "stage units",
    ("IsaacRaycastSensor", "numRays"): "",
    ("IsaacRaycastSensor", "outputFrameOfReference"): "",
    ("IsaacRaycastSensor", "rayDirections"): "sensor frame (need not be unit)",
    ("IsaacRaycastSensor", "rayOrigins"): "stage units, sensor frame",
    ("IsaacRaycastSensor", "rayTimeOffsets"): "s",
    ("IsaacRaycastSensor", "reportHitPrimPaths"): "",
    ("IsaacRobotAPI", "isaac:changelog"): "",
    ("IsaacRobotAPI", "isaac:description"): "",
    ("IsaacRobotAPI", "isaac:license"): "",
    ("IsaacRobotAPI", "isaac:namespace"): "",
    ("IsaacRobotAPI", "isaac:physics:robotJoints"): "",
    ("IsaacRobotAPI", "isaac:physics:robotLinks"): "",
    ("IsaacRobotAPI", "isaac:robot:namedPoses"): "",
    ("IsaacRobotAPI", "isaac:robotType"): "",
    ("IsaacRobotAPI", "isaac:source"): "",
    ("IsaacRobotAPI", "isaac:version"): "",
    ("IsaacLinkAPI", "isaac:nameOverride"): "",
    ("IsaacReferencePointAPI", "isaac:Description"): "",
    ("IsaacReferencePointAPI", "isaac:forwardAxis"): "",
    ("IsaacSiteAPI", "isaac:Description"): "",
    ("IsaacSiteAPI", "isaac:forwardAxis"): "",
    ("IsaacJointAPI", "isaac:actuator"): "",
    ("IsaacJointAPI", "isaac:NameOverride"): "",
    ("IsaacJointAPI", "isaac:physics:DofOffsetOpOrder"): "",
    ("IsaacSurfaceGripper", "isaac:attachmentPoints"): "",
    ("IsaacSurfaceGripper", "isaac:coaxialForceLimit"): "mass x stage units / s^2",
    ("IsaacSurfaceGripper", "isaac:grippedObjects"): "",
    ("IsaacSurfaceGripper", "isaac:maxGripDistance"): "stage units",
    ("IsaacSurfaceGripper", "isaac:retryInterval"): "s",
    ("IsaacSurfaceGripper", "isaac:shearForceLimit"): "mass x stage units / s^2",
    ("IsaacSurfaceGripper", "isaac:status"): "",
    ("IsaacAttachmentPointAPI", "isaac:clearanceOffset"): "stage units",
    ("IsaacAttachmentPointAPI", "isaac:forwardAxis"): "",
    ("IsaacNamedPose", "isaac:robot:pose:endLink"): "",
    ("IsaacNamedPose", "isaac:robot:pose:jointFixed"): "",
    ("IsaacNamedPose", "isaac:robot:pose:jointValues"): "deg (revolute) or stage units",
    ("IsaacNamedPose", "isaac:robot:pose:joints"): "",
    ("IsaacNamedPose", "isaac:robot:pose:startLink"): "",
    ("IsaacNamedPose", "isaac:robot:pose:valid"): "",
    ("RangeSensor", "drawLines"): "",
    ("RangeSensor", "drawPoints"): "",
    ("RangeSensor", "enabled"): "",
    ("RangeSensor", "horizontalFov"): "deg",
    ("RangeSensor", "horizontalResolution"): "deg",
    ("RangeSensor", "maxRange"): "stage units",
    ("RangeSensor", "minRange"): "stage units",
    ("RangeSensor", "rotationRate"): "Hz",
    ("RangeSensor", "verticalFov"): "deg",
    ("RangeSensor", "verticalResolution"): "deg",
    ("RangeSensor", "yawOffset"): "deg",
    ("RangeSensor", "highLod"): "",
    ("RangeSensor", "enableSemantics"): "",
    ("RangeSensor", "samplingRate"): "Hz",
    ("RangeSensor", "streaming"): "",
}

#: Schemas whose attributes take their units from another schema's entries.
UNIT_FAMILY = {"Lidar": "RangeSensor", "Generic": "RangeSensor"}

#: What simrt does with each schema, shown under its heading.
SCHEMA_NOTES = {
    "sensor_schema": (
        "Isaac Sim's Sensor Schema. simrt evaluates `IsaacContactSensor`, `IsaacImuSensor` "
        "and `IsaacRaycastSensor` prims (exact type name); the behaviour of each is on the "
        "[sensor behaviour](../sensors/index.md) pages. `IsaacLightBeamSensor` and the RTX "
        "marker APIs are registered so their prims keep their fallbacks, but not simulated."
    ),
    "robot_schema": (
        "Isaac Sim's Robot Schema: robot structure, DOF order, named poses and surface "
        "grippers (see [Inspect and schema tools](../guides/inspect-and-schema.md) and "
        "[surface gripper behaviour](../sensors/surface-gripper.md)). The readers apply "
        "these defaults also where usd-core cannot (the abstract `IsaacSurfaceGripper`)."
    ),
    "range_sensor_schema": (
        "The deprecated PhysX lidar schema (`RangeSensor`, typed `Lidar` and `Generic` "
        "prims). Registered so that such prims keep their fallbacks; simrt does not "
        "simulate them: author an `IsaacRaycastSensor` instead."
    ),
}

#: simrt's own run settings: the first PhysicsScene's customData["simrt"] dictionary.
#: (key, USD type, default, unit, meaning); tests/test_docs_snippets.py authors each one.
SIMRT_SETTINGS: list[tuple[str, str, str, str, str]] = [
    ("steps", "int", "1000", "steps", "physics steps of `simrt run`"),
    ("dt", "double", "the scene's rate (1/60 s)", "s", "step size"),
    (
        "ikTargets",
        "string[]",
        "none",
        "stage units, robot-base frame",
        "IK waypoints `LINK=x,y,z[,qw,qx,qy,qz][@T]`",
    ),
    ("ikEvery", "int", "10", "steps", "re-solve IK every this many steps"),
    ("ikUntilContact", "bool", "false", "", "freeze the IK targets at the robot's first contact"),
    ("imuMode", "string", '"isaac"', "", '`"isaac"` (parity) or `"physical"`'),
    ("robot", "string", "first `IsaacRobotAPI` prim", "", "robot prim path"),
    (
        "gripperActions",
        "string[]",
        "none",
        "s",
        "`GRIPPER=close@T`, `GRIPPER=open@T` or `GRIPPER=close@contact`",
    ),
    ("noiseSeed", "int", "0", "", "seed of the sensor noise (`simrt:noise:*` attributes)"),
    (
        "excludeReferenceOverlaps",
        "bool",
        "true",
        "",
        "exclude body pairs of one articulation that overlap at the start pose from colliding",
    ),
]

#: Engine attributes honoured beyond UsdPhysics: name -> what the MuJoCo builder does.
ENGINE_ATTRIBUTES = {
    "mjc:actuatorgravcomp": "drive actuators carry gravity compensation",
    "mjc:armature": "joint armature",
    "mjc:biasPrm": "actuator bias parameters",
    "mjc:biasType": "actuator bias type",
    "mjc:condim": "contact dimensionality of a collider",
    "mjc:ctrlLimited": "actuator control limited",
    "mjc:ctrlRange:max": "actuator control range, upper",
    "mjc:ctrlRange:min": "actuator control range, lower",
    "mjc:damping": "joint damping",
    "mjc:dynType": "actuator dynamics type",
    "mjc:forceLimited": "actuator force limited",
    "mjc:forceRange:max": "actuator force range, upper",
    "mjc:forceRange:min": "actuator force range, lower",
    "mjc:frictionloss": "joint dry friction",
    "mjc:gainPrm": "actuator gain parameters",
    "mjc:gainType": "actuator gain type",
    "mjc:gap": "collider contact gap (stage units)",
    "mjc:gear": "actuator gear",
    "mjc:gravcomp": "body gravity compensation (1 = cancelled)",
    "mjc:group": "collider group",
    "mjc:margin": "collider contact margin (stage units)",
    "mjc:path": "tendon path",
    "mjc:path:coef": "tendon path coefficients",
    "mjc:polycoef": "equality polynomial coefficients",
    "mjc:priority": "collider contact priority",
    "mjc:solimp": "collider solver impedance",
    "mjc:solimplimit": "joint-limit solver impedance",
    "mjc:solmix": "collider solver mix",
    "mjc:solref": "collider solver reference",
    "mjc:solreflimit": "joint-limit solver reference",
    "mjc:springref": "joint spring reference",
    "mjc:stiffness": "joint spring stiffness",
    "mjc:target": "actuator target (joint or tendon)",
    "mjc:type": "tendon type",
    "newton:armature": "joint armature (unless `mjc:armature`)",
    "newton:contactGap": "collider contact gap (unless `mjc:gap`)",
    "newton:contactMargin": "collider contact margin (unless `mjc:margin`)",
    "newton:damping": "joint damping (unless `mjc:damping`)",
    "newton:friction": "joint friction (unless `mjc:frictionloss`)",
    "newton:mimicCoef0": "mimic joint offset",
    "newton:mimicCoef1": "mimic joint ratio",
    "newton:mimicJoint": "mimic joint target",
    "newton:rollingFriction": "collider rolling friction",
    "newton:selfCollisionEnabled": "articulation self collisions",
    "newton:timeStepsPerSecond": "scene rate, when no `physxScene:timeStepsPerSecond`",
    "newton:torsionalFriction": "collider torsional friction",
    "physxArticulation:enabledSelfCollisions": "articulation self collisions",
    "physxCollision:contactOffset": "contact gap = contactOffset - restOffset",
    "physxCollision:restOffset": "contact margin",
    "physxJoint:armature": "joint armature",
    "physxRigidBody:disableGravity": "gravity compensation 1 (unless `mjc:gravcomp`)",
    "physxRigidBody:localSpaceVelocities": "checked: only world-space velocities are read",
    "physxScene:timeStepsPerSecond": "scene rate (step size = 1 / rate)",
}


def _format_value(value, type_name: str) -> str:
    if value is None:
        return "none"
    if type_name == "string":
        return f'"{value}"'
    if type_name == "token":
        return f'"{value}"'
    if type_name == "bool":
        return "true" if value else "false"
    if hasattr(value, "__len__") and not isinstance(value, str):
        items = list(value)
        if not items:
            return "[]"
        return "(" + ", ".join(_format_value(v, "") for v in items) + ")"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _schema_tables(name: str) -> list[str]:
    from pxr import Sdf

    layer = Sdf.Layer.FindOrOpen(str(RESOURCES / name / "generatedSchema.usda"))
    lines: list[str] = []
    for prim in layer.rootPrims:
        schema = prim.name
        attrs = [p for p in prim.properties if p.name not in GENERIC]
        kind = "API schema (applied)" if schema.endswith("API") else "prim type"
        if schema == "IsaacBaseSensor" or schema == "RangeSensor":
            kind = "abstract base"
        lines += [f"### {schema}", "", f"*{kind}.* {prim.documentation}", ""]
        if not attrs:
            lines += ["No attributes of its own.", ""]
            continue
        lines += ["| attribute | type | default | unit | meaning |", "|---|---|---|---|---|"]
        for spec in sorted(attrs, key=lambda p: p.name):
            key = (UNIT_FAMILY.get(schema, schema), spec.name)
            if key not in UNITS:
                raise SystemExit(
                    f"tools/usd_attributes.py: no UNITS entry for {schema}.{spec.name}"
                )
            if isinstance(spec, Sdf.RelationshipSpec):
                type_name, default = "rel", "none"
            else:
                type_name = str(spec.typeName)
                default = _format_value(spec.default, type_name)
                if spec.variability == Sdf.VariabilityUniform:
                    type_name = f"uniform {type_name}"
            doc = spec.documentation
            tokens = spec.GetInfo("allowedTokens") if spec.HasInfo("allowedTokens") else None
            if tokens:
                doc += " Allowed: " + ", ".join(f"`{t}`" for t in tokens) + "."
            lines.append(
                f"| `{spec.name}` | {type_name} | {default} | {UNITS[key] or '-'} | {doc} |"
            )
        lines.append("")
    return lines


def render() -> str:
    """The page's Markdown."""
    from runtime.engine.physics_attrs import HONOURED_ATTRIBUTES

    lines = [
        "# USD attributes",
        "",
        "Every attribute a simrt user authors on a scene, with its type, default and unit.",
        "This page is generated by `python tools/usd_attributes.py` from the schema files",
        "simrt registers (`runtime/schema/resources/*/generatedSchema.usda`) and the tables",
        "in that script; `tests/test_docs_snippets.py` fails when it is out of date.",
        "",
        "Units: *stage units* are the stage's length unit (`metersPerUnit`, USD's fallback",
        "0.01 when unauthored); forces are mass x stage units / s^2 (newtons only on a",
        "kg / m stage). Revolute joint values in USD are degrees; simrt's Python API uses",
        "radians. The Xformable attributes every sensor and pose prim also has",
        "(`proxyPrim`, `purpose`, `visibility`, `xformOpOrder`) are not repeated.",
        "",
    ]
    titles = {
        "sensor_schema": "Isaac sensor schema",
        "robot_schema": "Isaac robot schema",
        "range_sensor_schema": "Legacy range sensor schema",
    }
    for name in ("robot_schema", "sensor_schema", "range_sensor_schema"):
        lines += [f"## {titles[name]}", "", SCHEMA_NOTES[name], ""]
        lines += _schema_tables(name)
    lines += [
        "## simrt run settings",
        "",
        "Authored on the first `UsdPhysics.Scene` prim as `customData = { dictionary simrt = "
        "{ ... } }`; every key is optional and the command line or `run_scene` keywords",
        "override it. An unknown key is logged and ignored; a value of the wrong type stops",
        "the run with one error naming the prim and `customData:simrt:KEY`.",
        "",
        "| key | type | default | unit | meaning |",
        "|---|---|---|---|---|",
    ]
    for key, type_name, default, unit, meaning in SIMRT_SETTINGS:
        lines.append(f"| `{key}` | {type_name} | {default} | {unit or '-'} | {meaning} |")
    from runtime.sensors.noise import PARAMETERS

    lines += [
        "",
        "## Sensor noise attributes",
        "",
        "Authored on a sensor prim (the robot prim for joint states and efforts) as",
        "`simrt:noise:<field>:<parameter>`, `<field>` being the recorded reading field",
        "(`angular_velocity`, `depths`, `positions`, ...); `simrt run` then records",
        "`<channel>.noisy` beside the exact channel (guide: `docs/guides/noise.md`; the",
        "table is `runtime.sensors.noise.PARAMETERS`). A bad value stops the run with one",
        "error naming the prim and the attribute.",
        "",
        "| parameter | type | meaning |",
        "|---|---|---|",
    ]
    for name, (type_name, meaning) in PARAMETERS.items():
        lines.append(f"| `{name}` | {type_name} | {meaning} |")
    lines += [
        "",
        "## Isaac Lab style sensor attributes",
        "",
        "The `simrt:lab:*` attributes (`simrt:lab:kind`, `simrt:lab:primPath`,",
        "`simrt:lab:pattern:*`, `simrt:lab:offset:*`, ...) configure the Isaac Lab style",
        "sensors of `runtime.sensors.lab`; they are listed with their meaning in the",
        "[Isaac Lab sensors](../guides/isaaclab-sensors.md) guide.",
    ]
    lines += [
        "",
        "## Physics attributes the MuJoCo engine honours",
        "",
        "Besides UsdPhysics (rigid bodies, mass, colliders, joints and limits in degrees,",
        "drives, gravity, filtered pairs, collision groups), the engine builder reads these",
        "attributes (`runtime.engine.physics_attrs.HONOURED_ATTRIBUTES`; an `mjc:*` value",
        "wins over the PhysX / Newton one for the same thing). The scene's step size is",
        "`1 / physxScene:timeStepsPerSecond`, else `1 / newton:timeStepsPerSecond`, else",
        "**1/60 s**. Authored physics-cfg attributes without a MuJoCo equivalent are listed",
        "once in the log when the model is built.",
        "",
        "| attribute | effect in MuJoCo |",
        "|---|---|",
    ]
    for name in sorted(HONOURED_ATTRIBUTES):
        if name not in ENGINE_ATTRIBUTES:
            raise SystemExit(f"tools/usd_attributes.py: no ENGINE_ATTRIBUTES entry for {name}")
        lines.append(f"| `{name}` | {ENGINE_ATTRIBUTES[name]} |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write the page, or with ``--check`` compare it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    text = render()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python tools/usd_attributes.py")
            return 1
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
