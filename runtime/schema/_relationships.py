"""Robot relationships: prepend-list authoring, validation, robot-layer save.

See docs/guides/inspect-and-schema.md#populate, docs/guides/inspect-and-schema.md#relationships.

Part of :mod:`runtime.schema.populate` (the public import path).
"""

from __future__ import annotations

import logging

from pxr import Sdf, Usd

from runtime.schema._prims import ROBOT_API, _valid
from runtime.schema.tokens import Relations

_LOG = logging.getLogger("runtime.schema.populate")

ROBOT_LINKS = Relations.ROBOT_LINKS.name
ROBOT_JOINTS = Relations.ROBOT_JOINTS.name


def _get_or_create_rel(prim: Usd.Prim, name: str) -> Usd.Relationship:
    rel = prim.GetRelationship(name)
    if not rel:
        rel = prim.CreateRelationship(name, True)
    return rel


def _write_prepend(rel: Usd.Relationship, targets: list[Sdf.Path | str]) -> None:
    unique: list[Sdf.Path] = []
    seen: set[str] = set()
    for t in targets:
        key = str(t)
        if key not in seen:
            seen.add(key)
            unique.append(Sdf.Path(key))
    rel.ClearTargets(False)
    for t in reversed(unique):
        rel.AddTarget(t, Usd.ListPositionFrontOfPrependList)


def rebuild_relationship_as_prepend(
    prim: Usd.Prim, rel_name: str, targets: list[Sdf.Path | str]
) -> None:
    """Author ``prepend rel <rel_name> = [targets]`` in the edit target (order kept).

    Weaker layers still contribute additively. Duplicates keep their first occurrence.

    Args:
        prim: the prim (invalid prims: no-op).
        rel_name: relationship name (created ``custom`` when missing).
        targets: target paths in the desired order.
    """
    if not _valid(prim):
        return
    _write_prepend(_get_or_create_rel(prim, rel_name), list(targets))


def ensure_prepend_list_for_robot_relationships(robot_prim: Usd.Prim) -> None:
    """Rewrite ``robotLinks`` / ``robotJoints`` as prepend lists of their composed targets.

    Args:
        robot_prim: the robot prim (invalid prims: no-op).
    """
    if not _valid(robot_prim):
        return
    for name in (ROBOT_LINKS, ROBOT_JOINTS):
        rel = robot_prim.GetRelationship(name)
        if rel:
            targets = rel.GetTargets()
            if targets:
                _write_prepend(rel, list(targets))


def _compose_list_ops(ops: list[Sdf.PathListOp]) -> list[Sdf.Path]:
    """Compose path list ops, weakest first, the way USD composes relationship targets."""
    result: list[Sdf.Path] = []
    for op in ops:
        if op.isExplicit:
            result = list(op.explicitItems)
            continue
        deleted = set(op.deletedItems)
        result = [t for t in result if t not in deleted]
        for t in op.addedItems:
            if t not in result:
                result.append(t)
        pre = list(op.prependedItems)
        result = pre + [t for t in result if t not in pre]
        app = list(op.appendedItems)
        result = [t for t in result if t not in app] + app
        if op.orderedItems:
            ordered = [t for t in op.orderedItems if t in result]
            rest = iter(ordered)
            result = [next(rest) if t in ordered else t for t in result]
    return result


def _rel_specs(rel: Usd.Relationship) -> list[Sdf.RelationshipSpec]:
    return [s for s in rel.GetPropertyStack(Usd.TimeCode.Default()) if s]


def _check_inputs(stage: Usd.Stage | None, robot_prim: Usd.Prim | None) -> None:
    if stage is None:
        raise ValueError("Stage is invalid.")
    if not robot_prim or not robot_prim.IsValid():
        raise ValueError("Robot prim is invalid.")


def validate_robot_schema_relationships(
    robot_prim: Usd.Prim,
) -> tuple[list[Sdf.Path], list[Sdf.Path], list[Sdf.Path], list[Sdf.Path]]:
    """Split the composed ``robotLinks`` / ``robotJoints`` targets into existing / missing.

    Args:
        robot_prim: the robot prim.

    Returns:
        ``(valid_links, invalid_links, valid_joints, invalid_joints)``.
    """
    if not _valid(robot_prim):
        return [], [], [], []
    stage = robot_prim.GetStage()
    out: list[list[Sdf.Path]] = []
    for name in (ROBOT_LINKS, ROBOT_JOINTS):
        rel = robot_prim.GetRelationship(name)
        good: list[Sdf.Path] = []
        bad: list[Sdf.Path] = []
        for t in rel.GetTargets() if rel else []:
            (good if _valid(stage.GetPrimAtPath(t)) else bad).append(t)
        out += [good, bad]
    return out[0], out[1], out[2], out[3]


def _api_list_contains(spec: Sdf.PrimSpec, token: str) -> bool:
    if not spec.HasInfo("apiSchemas"):
        return False
    op = spec.GetInfo("apiSchemas")
    return any(
        token in items
        for items in (op.prependedItems, op.appendedItems, op.explicitItems, op.addedItems)
    )


def save_robot_schema_to_robot_layer(
    stage: Usd.Stage, robot_prim: Usd.Prim, *, save: bool = True
) -> Sdf.Layer | None:
    """Write the composed robot lists into the layer that applies ``IsaacRobotAPI``.

    The layer gets, per relationship, prepended items (targets missing from the other
    layers' composition) and deleted items (other layers' targets no longer wanted).

    Args:
        stage: the stage.
        robot_prim: the robot prim.
        save: save the layer afterwards.

    Returns:
        The robot layer, or None (logged) when none authors the API or it is not editable.

    Raises:
        ValueError: invalid stage or robot prim.
    """
    _check_inputs(stage, robot_prim)
    target_spec = None
    for spec in robot_prim.GetPrimStack():
        if _api_list_contains(spec, ROBOT_API):
            target_spec = spec
            break
    if target_spec is None:
        _LOG.warning(
            "SaveRobotSchemaToRobotLayer: could not locate the layer that authors IsaacRobotAPI "
            "on %s",
            robot_prim.GetPath(),
        )
        return None
    layer = target_spec.layer
    if not layer.permissionToEdit:
        _LOG.warning("SaveRobotSchemaToRobotLayer: %s is not editable; nothing was written.", layer)
        return None
    robot_path = robot_prim.GetPath()
    layer_robot_path = target_spec.path

    def to_layer(p: Sdf.Path) -> Sdf.Path:
        if p.HasPrefix(robot_path) and robot_path != layer_robot_path:
            return p.ReplacePrefix(robot_path, layer_robot_path)
        return p

    for name in (ROBOT_LINKS, ROBOT_JOINTS):
        rel = robot_prim.GetRelationship(name)
        if not rel:
            continue
        desired = list(rel.GetTargets())
        others = [s for s in _rel_specs(rel) if s.layer != layer]
        baseline = _compose_list_ops([s.targetPathList for s in reversed(others)])
        prepend = [to_layer(t) for t in desired if t not in baseline]
        delete = [to_layer(t) for t in baseline if t not in desired]
        rel_spec = layer.GetRelationshipAtPath(layer_robot_path.AppendProperty(name))
        if not rel_spec:
            rel_spec = Sdf.RelationshipSpec(target_spec, name, True)
        rel_spec.targetPathList.ClearEdits()
        rel_spec.targetPathList.prependedItems = prepend
        rel_spec.targetPathList.deletedItems = delete
    if save:
        try:
            layer.Save()
        except Exception as exc:  # noqa: BLE001 - logged like the reference
            _LOG.warning(
                "SaveRobotSchemaToRobotLayer: failed to save robot layer %s: %s", layer, exc
            )
    return layer
