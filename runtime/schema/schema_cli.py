"""``simrt schema``: apply or validate the Isaac Robot Schema on a robot asset.

``simrt schema apply ROBOT.usd [--layer FILE] [--sites inline|last] [--floating-base]``
follows the Asset Structure guideline: the schema (``IsaacRobotAPI`` with its populated
``robotLinks`` / ``robotJoints``, link/joint/site APIs) is authored into a separate
robot-schema layer (default ``<asset dir>/configuration/<asset>_robot_schema.usda``), which
is added as a sublayer of the asset's root layer; no schema opinion is written into the
root (interface) layer. Both files are written atomically. The robot link tree and the DOF
table are printed. ``--floating-base`` also deactivates, in the same layer, the fixed
joints that bolt the robot to the world (the URDF / MJCF converters' ``root_joint``), so a
converted legged robot runs free-floating (:mod:`runtime.schema.floating_base`).

``simrt schema validate ROBOT.usd`` reports relationship targets that do not exist or are
of the wrong kind, and DOF-table errors; it exits with 1 when any exist.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["add_arguments", "run"]


def _emit(*parts: object, file=None) -> None:  # noqa: ANN001 - text stream
    """Write one line to stdout (or ``file``)."""
    (file or sys.stdout).write(" ".join(str(p) for p in parts) + "\n")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``simrt schema`` arguments.

    Args:
        parser: the subcommand parser.
    """
    parser.add_argument("action", choices=("apply", "validate"), help="what to do")
    parser.add_argument("usd", help="robot asset (its root / interface layer)")
    parser.add_argument(
        "--robot", default=None, help="robot prim path (default: the default prim / all robots)"
    )
    parser.add_argument(
        "--layer",
        default=None,
        help="robot-schema layer to write (default: configuration/<asset>_robot_schema.usda "
        "beside the asset)",
    )
    parser.add_argument(
        "--sites",
        choices=("inline", "last"),
        default=None,
        help="detect sites (childless Xforms under links): after their link or all last",
    )
    parser.add_argument("--traversal", choices=("dfs", "bfs"), default="dfs")
    parser.add_argument(
        "--floating-base",
        action="store_true",
        help="deactivate (in the schema layer) the fixed joints that attach the robot to the "
        "world, so a converted legged robot / humanoid runs free-floating",
    )
    parser.add_argument(
        "--no-sublayer",
        action="store_true",
        help="do not add the schema layer to the asset's sublayers (asset file left as is)",
    )


def _atomic_export(layer, path: Path) -> None:  # noqa: ANN001 - Sdf.Layer
    from runtime._files import atomic_write

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    args = {}
    if path.suffix == ".usd":
        try:
            with open(path, "rb") as fh:
                head = fh.read(8)
            args["format"] = "usdc" if head.startswith(b"PXR-USDC") else "usda"
        except OSError:
            args["format"] = "usda"

    def export(tmp: str) -> None:
        if not layer.Export(tmp, args=args):
            raise OSError(f"could not write {path}")

    atomic_write(path, export)


def _robot_prims(stage, robot: str | None, need_api: bool):  # noqa: ANN001, ANN202
    from runtime.errors import SchemaError
    from runtime.schema.utils import find_robot_prims

    if robot:
        prim = stage.GetPrimAtPath(robot)
        if not prim or not prim.IsValid():
            raise SchemaError(robot, "", "robot prim does not exist")
        return [prim]
    if need_api:
        robots = find_robot_prims(stage)
        if not robots:
            raise SchemaError(stage.GetRootLayer().identifier, "", "no prim carries IsaacRobotAPI")
        return robots
    prim = stage.GetDefaultPrim()
    if not prim:
        raise SchemaError(
            stage.GetRootLayer().identifier, "defaultPrim", "no default prim; pass --robot"
        )
    return [prim]


def _print_dofs(table) -> None:  # noqa: ANN001
    _emit(f"DOF table ({table.dof_count}):")
    for e in table:
        _emit(
            f"  {e.index:3d}  {e.name:<32s} {e.token:<6s} {e.joint_type:<9s} "
            f"[{e.lower:.6g}, {e.upper:.6g}]  {e.joint_path}"
        )


def _apply(args: argparse.Namespace) -> int:
    from pxr import Sdf, Tf, Usd

    import runtime.schema as rs
    from runtime.errors import SchemaError

    asset = Path(args.usd).resolve()
    stage = rs.open_stage(asset)
    root_layer = stage.GetRootLayer()
    if args.layer:
        layer_path = Path(args.layer).resolve()
    else:
        layer_path = asset.parent / "configuration" / f"{asset.stem}_robot_schema.usda"
    layer = None
    if layer_path.exists():
        try:
            layer = Sdf.Layer.FindOrOpen(str(layer_path))
        except Tf.ErrorException as exc:
            raise SchemaError(
                str(layer_path), "", f"existing schema layer: {rs.tf_error_line(exc)}"
            ) from None
    if layer is None:
        layer = Sdf.Layer.CreateAnonymous(layer_path.name)
    rel_path = os.path.relpath(layer_path, asset.parent).replace(os.sep, "/")
    sublayers = list(root_layer.subLayerPaths)
    already = rel_path in sublayers or str(layer_path) in sublayers
    if not already:
        # compose the schema layer (through the session layer) while authoring into it
        stage.GetSessionLayer().subLayerPaths.append(layer.identifier)
    [robot] = _robot_prims(stage, args.robot, need_api=False)
    floating: list[str] = []
    with Usd.EditContext(stage, layer):
        if args.floating_base:
            from runtime.schema.floating_base import make_floating_base

            floating = make_floating_base(robot)
        rs.apply_robot_api(
            robot,
            detect_sites=args.sites is not None,
            sites_last=args.sites == "last",
            traversal=args.traversal,
        )
    tree = rs.generate_robot_link_tree(stage, robot)
    if tree is None:  # nothing written yet: refuse a prim without any rigid-body link
        raise SchemaError(
            str(robot.GetPath()),
            "",
            "no links found (no rigid body at or under this prim, not an articulation)",
            "a robot prim with rigid-body links (pass --robot)",
        )
    table = rs.build_dof_table(stage, robot)
    _atomic_export(layer, layer_path)
    if not args.no_sublayer and not already:
        root_layer.subLayerPaths.append(rel_path)
        _atomic_export(root_layer, asset)
    if tree is not None:
        rs.print_robot_tree(tree, file=sys.stdout)
        for j in tree.loop_joints:
            _emit(f"loop-closing joint skipped: {j.GetPath()}", file=sys.stderr)
    if args.floating_base:
        if floating:
            _emit("floating base: deactivated " + ", ".join(floating))
        else:
            _emit("floating base: no active fixed joint attaches the robot to the world")
    _emit()
    _print_dofs(table)
    _emit(f"\nwrote {layer_path}" + ("" if args.no_sublayer else f" (sublayer of {asset.name})"))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from pxr import UsdPhysics

    import runtime.schema as rs
    from runtime.errors import SchemaError
    from runtime.schema import readers
    from runtime.schema.utils import find_loop_joints, is_site

    stage = rs.open_stage(args.usd)
    problems = 0
    for robot in _robot_prims(stage, args.robot, need_api=True):
        rpath = robot.GetPath()
        if not robot.HasAPI("IsaacRobotAPI"):
            _emit(f"{rpath}: IsaacRobotAPI is not applied")
            problems += 1
            continue
        valid_links, invalid_links, valid_joints, invalid_joints = (
            rs.validate_robot_schema_relationships(robot)
        )
        for t in invalid_links:
            _emit(f"{rpath}.isaac:physics:robotLinks: target {t} does not exist")
        for t in invalid_joints:
            _emit(f"{rpath}.isaac:physics:robotJoints: target {t} does not exist")
        problems += len(invalid_links) + len(invalid_joints)
        for t in valid_links:
            p = stage.GetPrimAtPath(t)
            if not (p.HasAPI("IsaacLinkAPI") or p.HasAPI("IsaacRobotAPI") or is_site(p)):
                _emit(
                    f"{rpath}.isaac:physics:robotLinks: target {t} has neither IsaacLinkAPI, "
                    "IsaacSiteAPI nor IsaacRobotAPI"
                )
                problems += 1
        for t in valid_joints:
            p = stage.GetPrimAtPath(t)
            if not (p.IsA(UsdPhysics.Joint) or p.HasAPI("IsaacRobotAPI")):
                _emit(
                    f"{rpath}.isaac:physics:robotJoints: target {t} (type "
                    f"{p.GetTypeName()!r}) is not a joint"
                )
                problems += 1
            elif p.IsA(UsdPhysics.Joint):
                try:  # body targets exist, body0 != body1, limits, axis, local frames
                    readers.read_joint(p)
                except SchemaError as exc:
                    _emit(str(exc))
                    problems += 1
        try:
            table = rs.build_dof_table(stage, robot)
        except SchemaError as exc:
            _emit(f"DOF table: {exc}")
            problems += 1
            table = None
        links = {str(p.GetPath()) for p in rs.get_all_robot_links(stage, robot)}
        for j, reason in find_loop_joints(rs.get_all_robot_joints(stage, robot), links):
            _emit(
                f"warning: {j.GetPath()} closes a kinematic loop: {reason}; set "
                "physics:excludeFromArticulation on it"
            )
        dofs = table.dof_count if table is not None else "?"
        _emit(
            f"{rpath}: {len(valid_links)} links, {len(valid_joints)} joints, {dofs} DOFs, "
            f"{len(invalid_links) + len(invalid_joints)} invalid targets"
        )
    _emit("OK" if problems == 0 else f"{problems} problem(s)")
    return 0 if problems == 0 else 1


def run(args: argparse.Namespace) -> int:
    """Run ``simrt schema``.

    Args:
        args: parsed arguments.

    Returns:
        Exit code: 0 on success, 1 when validation found problems.
    """
    if args.action == "apply":
        return _apply(args)
    return _validate(args)
