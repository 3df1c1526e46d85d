"""``simrt inspect SCENE.usd[a|c]``: robots, link tree, joints/DOFs and sensors of a scene.

Everything shown is read through the validating readers of :mod:`runtime.schema.readers`,
so inspecting a scene also checks it: any invalid content stops the command with a
one-line :class:`~runtime.errors.SchemaError` naming the prim and the attribute.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from runtime.errors import SimrtError
from runtime.schema._stage import open_stage, tf_error_line

__all__ = ["add_arguments", "inspect_stage", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the command line of ``simrt inspect``.

    Args:
        parser: the subcommand's parser.
    """
    parser.add_argument("scene", help="USD file to inspect (.usd, .usda, .usdc, .usdz)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument(
        "--robot", default=None, help="only this robot prim path (default: every robot)"
    )


def _num(value: float) -> float | str:
    """JSON-safe number (inf as the strings "inf"/"-inf")."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return float(value)


def _vec(array: Any) -> list[float]:
    return [float(x) for x in array]


def _tree_to_dict(node: Any) -> dict[str, Any]:
    joint = getattr(node, "_joint_to_parent", None)
    return {
        "name": node.name,
        "path": str(node.path) if node.path is not None else None,
        "joint": str(joint.GetPath()) if joint is not None else None,
        "children": [_tree_to_dict(child) for child in node.children],
    }


def _sensor_dict(config: Any) -> dict[str, Any]:
    from runtime.schema import readers

    out: dict[str, Any] = {
        "path": config.path,
        "type": config.type_name,
        "enabled": config.enabled,
        "parent_body": config.parent_body or None,
        "translation_in_body": _vec(config.translation_in_body),
        "orientation_in_body": _vec(config.orientation_in_body),
    }
    if isinstance(config, readers.ContactSensorConfig):
        out.update(
            threshold=[config.threshold_min, config.threshold_max],
            radius=config.radius,
            color=list(config.color),
        )
    elif isinstance(config, readers.ImuSensorConfig):
        out.update(
            linear_acceleration_filter_width=config.linear_acceleration_filter_width,
            angular_velocity_filter_width=config.angular_velocity_filter_width,
            orientation_filter_width=config.orientation_filter_width,
        )
    else:
        reason = readers.validate_raycast(config)
        out.update(
            num_rays=config.num_rays,
            min_range=config.min_range,
            max_range=config.max_range,
            ray_origins=[_vec(r) for r in config.ray_origins],
            ray_directions=[_vec(r) for r in config.ray_directions],
            ray_time_offsets=_vec(config.ray_time_offsets),
            output_frame_of_reference=config.output_frame_of_reference,
            report_hit_prim_paths=config.report_hit_prim_paths,
            disabled_reason=reason,
        )
    return out


def _robot_dict(stage: Any, robot_prim: Any) -> dict[str, Any]:
    from runtime.schema import readers, utils
    from runtime.schema.dof import build_dof_table

    is_robot = bool(robot_prim.HasAPI("IsaacRobotAPI"))
    info = readers.read_robot(robot_prim) if is_robot else None
    if info is not None:
        link_paths = info.link_paths
        joint_paths = info.joint_paths
        pose_paths = info.named_pose_paths
    else:  # raw conversion: structure from articulation discovery, like Isaac's utilities
        link_paths = tuple(str(p.GetPath()) for p in utils.get_all_robot_links(stage, robot_prim))
        joint_paths = ()
        pose_paths = ()
    links: list[dict[str, Any]] = []
    sites: list[dict[str, Any]] = []
    for path in link_paths:
        prim = stage.GetPrimAtPath(path)
        if prim.HasAPI("IsaacRobotAPI") and prim.GetPath() != robot_prim.GetPath():
            links.append({"path": path, "name": prim.GetName(), "kind": "robot"})
        elif prim.HasAPI("IsaacSiteAPI") or utils.has_deprecated_reference_point(prim):
            site = readers.read_site(prim)
            sites.append(
                {
                    "path": site.path,
                    "name": site.name,
                    "description": site.description,
                    "forward_axis": site.forward_axis,
                    "parent_link": site.parent_link or None,
                    "deprecated": site.deprecated,
                    "translation_in_parent": _vec(site.translation_in_parent),
                    "orientation_in_parent": _vec(site.orientation_in_parent),
                }
            )
        else:
            link = readers.read_link(prim)
            links.append(
                {
                    "path": link.path,
                    "name": link.name,
                    "kind": "link",
                    "has_link_api": link.has_link_api,
                    "rigid_body": link.is_rigid_body,
                }
            )
    joints = []
    for prim in utils.get_all_robot_joints(stage, robot_prim):
        joint = readers.read_joint(prim)
        joints.append(
            {
                "path": joint.path,
                "name": joint.name,
                "type": joint.joint_type,
                "axis": joint.axis or None,
                "body0": joint.body0 or None,
                "body1": joint.body1 or None,
                "usd_limits": [_num(joint.usd_lower), _num(joint.usd_upper)],
                "limits_si": [_num(joint.lower), _num(joint.upper)],
                "dof_offset_op_order": list(joint.dof_offset_op_order),
                "axes": [
                    {
                        "token": d.token,
                        "locked": d.locked,
                        "usd_limits": [_num(d.usd_lower), _num(d.usd_upper)],
                        "limits_si": [_num(d.lower), _num(d.upper)],
                    }
                    for d in joint.dofs
                ],
                "in_robot_joints": joint.path in joint_paths,
            }
        )
    table = build_dof_table(stage, robot_prim)
    dofs = [
        {
            "index": e.index,
            "name": e.name,
            "type": e.joint_type,
            "token": e.token,
            "usd_lower": _num(e.usd_lower),
            "usd_upper": _num(e.usd_upper),
            "lower": _num(e.lower),
            "upper": _num(e.upper),
            "joint_path": e.joint_path,
        }
        for e in table.entries
    ]
    poses = []
    for path in pose_paths:
        pose = readers.read_named_pose(stage.GetPrimAtPath(path))
        poses.append(
            {
                "path": pose.path,
                "name": pose.name,
                "start_link": pose.start_link or None,
                "end_link": pose.end_link or None,
                "joints": list(pose.joints),
                "joint_values": None if pose.joint_values is None else _vec(pose.joint_values),
                "joint_fixed": None if pose.joint_fixed is None else list(pose.joint_fixed),
                "valid": pose.valid,
                "target_translation": _vec(pose.target_translation),
                "target_orientation": _vec(pose.target_orientation),
            }
        )
    tree = utils.generate_robot_link_tree(stage, robot_prim)
    return {
        "path": str(robot_prim.GetPath()),
        "kind": "robot" if is_robot else "articulation",
        "description": info.description if info else None,
        "namespace": info.namespace if info else None,
        "robot_type": info.robot_type if info else None,
        "license": info.license if info else None,
        "version": info.version if info else None,
        "source": info.source if info else None,
        "changelog": list(info.changelog) if info else [],
        "links": links,
        "sites": sites,
        "joints": joints,
        "dofs": dofs,
        "named_poses": poses,
        "tree": _tree_to_dict(tree) if tree is not None else None,
        "tree_text": utils.format_robot_tree(tree) if tree is not None else "",
    }


def _articulation_owners(stage: Any) -> list[Any]:
    """Prims to describe when no prim has ``IsaacRobotAPI`` (raw URDF/MJCF conversions).

    The default prim when it holds an articulation root, else the top-level prim above each
    articulation root.
    """
    from pxr import Sdf, UsdPhysics

    roots = [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.ArticulationRootAPI)]
    if not roots:
        return []
    default = stage.GetDefaultPrim()
    if default and all(r.GetPath().HasPrefix(default.GetPath()) for r in roots):
        return [default]
    owners: dict[str, Any] = {}
    for root in roots:
        top = root.GetPath().GetPrefixes()[0] if root.GetPath() != Sdf.Path("/") else None
        if top is not None:
            owners.setdefault(str(top), stage.GetPrimAtPath(top))
    return list(owners.values())


def _robot_dict_quiet(stage: Any, prim: Any) -> dict[str, Any]:
    """Describe ``prim`` like :func:`_robot_dict`, quietly for non-robots.

    The robot-schema utilities warn "missing from schema relationship" for prims without
    ``IsaacRobotAPI``; for a raw conversion that is expected, so the warning is muted.
    """
    import logging

    if prim.HasAPI("IsaacRobotAPI"):
        return _robot_dict(stage, prim)
    loggers = [logging.getLogger(n) for n in ("runtime.schema.utils", "runtime.schema.dof")]
    levels = [lg.level for lg in loggers]
    try:
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        return _robot_dict(stage, prim)
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def inspect_stage(stage: Any, robot_path: str | None = None) -> dict[str, Any]:
    """Collect everything ``simrt inspect`` shows, as plain JSON-ready data.

    Args:
        stage: an open ``Usd.Stage``.
        robot_path: restrict to this robot prim; None for every top-level robot.

    Returns:
        ``{"stage": ..., "robots": [...], "surface_grippers": [...], "sensors": [...]}``.

    Raises:
        SchemaError: invalid content (first problem found).
    """
    from pxr import UsdGeom

    from runtime.errors import SchemaError
    from runtime.schema import readers, utils

    if robot_path is not None:
        prim = stage.GetPrimAtPath(robot_path)
        if not prim or not prim.IsValid():
            raise SchemaError(robot_path, "", "robot prim does not exist")
        robots = [prim]
    else:
        robots = utils.find_robot_prims(stage) or _articulation_owners(stage)
    grippers = []
    for prim in stage.Traverse():
        if readers.is_surface_gripper(prim):
            g = readers.read_surface_gripper(prim)
            grippers.append(
                {
                    "path": g.path,
                    "status": g.status,
                    "max_grip_distance": g.max_grip_distance,
                    "retry_interval": g.retry_interval,
                    "shear_force_limit": g.shear_force_limit,
                    "coaxial_force_limit": g.coaxial_force_limit,
                    "attachment_points": list(g.attachment_points),
                }
            )
    root = stage.GetRootLayer()
    composition = getattr(stage, "GetCompositionErrors", lambda: [])()
    return {
        "composition_errors": [str(e) for e in composition],
        "stage": {
            "path": root.realPath or root.identifier,
            "meters_per_unit": float(UsdGeom.GetStageMetersPerUnit(stage)),
            "up_axis": str(UsdGeom.GetStageUpAxis(stage)),
            "default_prim": str(stage.GetDefaultPrim().GetPath())
            if stage.GetDefaultPrim()
            else None,
        },
        "robots": [_robot_dict_quiet(stage, prim) for prim in robots],
        "surface_grippers": grippers,
        "sensors": [_sensor_dict(c) for c in readers.discover_sensors(stage)],
    }


def _fmt(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _leaf(path: str | None) -> str:
    return path.rsplit("/", 1)[-1] if path else "(world)"


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    for row in rows:
        cells = [str(c).ljust(w) for c, w in zip(row, widths, strict=True)]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def format_text(data: dict[str, Any]) -> str:
    """Human-readable report of :func:`inspect_stage` data.

    Args:
        data: the dictionary from :func:`inspect_stage`.

    Returns:
        The text, ending with a newline.
    """
    st = data["stage"]
    out = [
        f"Scene {st['path']}",
        f"  metersPerUnit {_fmt(st['meters_per_unit'])}, upAxis {st['up_axis']}, "
        f"defaultPrim {st['default_prim']}",
    ]
    for problem in data.get("composition_errors", []):
        out.append(f"  composition error: {problem}")
    if not data["robots"]:
        out.append("")
        out.append("No prim with IsaacRobotAPI and no articulation.")
        if data.get("composition_errors"):
            out.append("(the stage did not compose completely: see the composition errors above)")
    for robot in data["robots"]:
        if robot["kind"] == "articulation":
            out += [
                "",
                f"Articulation {robot['path']} (no IsaacRobotAPI: links and joints from "
                "articulation discovery)",
            ]
        else:
            out += ["", f"Robot {robot['path']}"]
            for key in ("description", "namespace", "robot_type", "license", "version"):
                out.append(f"  {key.replace('_', ' ')}: {robot[key]}")
            out.append(f"  source: {robot['source']}")
        if robot["changelog"]:
            out.append("  changelog:")
            out += [f"    - {entry}" for entry in robot["changelog"]]
        out += ["", "Link tree:"]
        out += robot["tree_text"].splitlines() or ["(no links)"]
        order = "robotLinks order" if robot["kind"] == "robot" else "discovery order"
        out += ["", f"Links ({order}):"]
        out += _table(
            [[str(i), r["name"], r["kind"], r["path"]] for i, r in enumerate(robot["links"])],
            ["#", "name", "kind", "path"],
        )
        if robot["sites"]:
            out += ["", "Sites:"]
            out += _table(
                [
                    [s["name"], s["forward_axis"], s["parent_link"] or "-", s["description"]]
                    for s in robot["sites"]
                ],
                ["name", "forward", "parent link", "description"],
            )
        out += ["", "Joints:"]
        out += _table(
            [
                [
                    j["name"],
                    j["type"],
                    j["axis"] or "-",
                    _leaf(j["body0"]),
                    _leaf(j["body1"]),
                    j["path"],
                ]
                for j in robot["joints"]
            ],
            ["name", "type", "axis", "body0", "body1", "path"],
        )
        out += ["", "DOFs (lower/upper in USD units: deg or stage units; SI: rad or m):"]
        out += _table(
            [
                [
                    str(d["index"]),
                    d["name"],
                    d["type"],
                    d["token"],
                    _fmt(d["usd_lower"]),
                    _fmt(d["usd_upper"]),
                    _fmt(d["lower"]),
                    _fmt(d["upper"]),
                ]
                for d in robot["dofs"]
            ],
            ["idx", "name", "type", "token", "lower", "upper", "lower SI", "upper SI"],
        )
        if robot["named_poses"]:
            out += ["", "Named poses:"]
            for p in robot["named_poses"]:
                values = ", ".join(_fmt(v) for v in p["joint_values"] or [])
                out.append(
                    f"  {p['name']}: {p['start_link']} -> {p['end_link']}, "
                    f"values [{values}], valid {p['valid']}"
                )
    if data["surface_grippers"]:
        out += ["", "Surface grippers:"]
        for g in data["surface_grippers"]:
            out.append(
                f"  {g['path']}: status {g['status']}, maxGripDistance "
                f"{_fmt(g['max_grip_distance'])}, attachment points {len(g['attachment_points'])}"
            )
    out += ["", "Sensors:"]
    if not data["sensors"]:
        out.append("  (none)")
    for s in data["sensors"]:
        head = f"  {s['path']}  {s['type']}  parent body {s['parent_body'] or '(none, static)'}"
        out.append(head + ("" if s["enabled"] else "  [enabled = false]"))
        if s["type"] == "IsaacContactSensor":
            out.append(
                f"      threshold {_fmt(s['threshold'][0])}..{_fmt(s['threshold'][1])}, "
                f"radius {_fmt(s['radius'])}"
            )
        elif s["type"] == "IsaacImuSensor":
            out.append(
                "      filter widths: linear acceleration "
                f"{s['linear_acceleration_filter_width']}, angular velocity "
                f"{s['angular_velocity_filter_width']}, orientation "
                f"{s['orientation_filter_width']}"
            )
        else:
            times = s["ray_time_offsets"]
            if len(times) > 8:
                offsets = f"{len(times)} values in {_fmt(min(times))}..{_fmt(max(times))}"
            else:
                offsets = ", ".join(_fmt(v) for v in times) or "none"
            out.append(
                f"      {s['num_rays']} rays, range {_fmt(s['min_range'])}..{_fmt(s['max_range'])}"
                f", frame {s['output_frame_of_reference']}, time offsets [{offsets}]"
            )
            if s["disabled_reason"]:
                out.append(f"      DISABLED: {s['disabled_reason']}")
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    """Run ``simrt inspect``.

    Args:
        args: parsed arguments (``scene``, ``json``, ``robot``).

    Returns:
        0 on success.

    Raises:
        SimrtError: unreadable scene or invalid content (printed as one line by the CLI).
        OSError: the file does not exist.
    """
    from pxr import Tf

    # composition errors (a missing referenced file) are listed in the output
    stage = open_stage(args.scene, allow_composition_errors=True)
    try:
        data = inspect_stage(stage, args.robot)
    except Tf.ErrorException as exc:
        raise SimrtError(f"{args.scene}: USD error: {tf_error_line(exc)}") from None
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_text(data))
    return 0
