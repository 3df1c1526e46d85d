"""Order of the engine's DOFs: the robot's DOF table (``runtime.schema.dof``) or build order."""

from __future__ import annotations

import logging

from pxr import Usd

from runtime.engine._build_types import DofBinding
from runtime.errors import SchemaError
from runtime.schema.dof import build_dof_table

_LOG = logging.getLogger("runtime.engine")


def order_dofs(
    stage: Usd.Stage, bindings: list[DofBinding], robot_prim: str | Usd.Prim | None
) -> list[DofBinding]:
    """DOF bindings in reported order, renamed to their DOF-table names.

    Args:
        stage: the stage.
        bindings: the builder's DOF bindings in model build order.
        robot_prim: robot prim (path or prim) whose DOF table orders the DOFs; ``None``: the
            table of the stage's robot when it covers exactly the simulated DOFs, else build
            order.

    Returns:
        The ordered bindings (``name`` set from the table when one is used).

    Raises:
        SchemaError: the robot prim does not exist, or a DOF of its table is not simulated.
    """
    if robot_prim is None:
        return _default_order(stage, bindings)
    prim = robot_prim if isinstance(robot_prim, Usd.Prim) else stage.GetPrimAtPath(str(robot_prim))
    if not prim or not prim.IsValid():
        raise SchemaError(str(robot_prim), "", "robot prim does not exist")
    table = build_dof_table(stage, prim)
    by_key = {(b.joint_path, b.token): b for b in bindings}
    by_joint: dict[str, list[DofBinding]] = {}
    for b in bindings:
        by_joint.setdefault(b.joint_path, []).append(b)
    ordered = []
    for entry in table.entries:
        b = by_key.get((entry.joint_path, entry.token))
        if b is None and len(by_joint.get(entry.joint_path, [])) == 1:
            b = by_joint[entry.joint_path][0]
        if b is None:
            raise SchemaError(
                entry.joint_path,
                "",
                f"DOF {entry.name!r} ({entry.token}) of the robot's DOF table is not "
                "simulated (joint disabled, locked or not a physics joint)",
            )
        b.name = entry.name
        ordered.append(b)
    return ordered


def _default_order(stage: Usd.Stage, bindings: list[DofBinding]) -> list[DofBinding]:
    """DOF-table order of the stage's robot when it covers exactly the simulated DOFs."""
    try:
        table = build_dof_table(stage)
    except SchemaError as exc:
        _LOG.info("no DOF table for the stage (%s); DOFs in model build order", exc)
        return bindings
    keys = {(b.joint_path, b.token): b for b in bindings}
    ordered = []
    for entry in table.entries:
        b = keys.get((entry.joint_path, entry.token))
        if b is None:
            break
        ordered.append(b)
    if len(ordered) != len(bindings) or len(table.entries) != len(bindings):
        _LOG.info("the stage's DOF table does not cover every simulated DOF; build order")
        return bindings
    for b, entry in zip(ordered, table.entries, strict=True):
        b.name = entry.name
    return ordered
