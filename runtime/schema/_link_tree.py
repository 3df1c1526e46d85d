"""The robot link tree: build, print, and split at a joint.

See docs/guides/inspect-and-schema.md#link-tree.

Part of :mod:`runtime.schema.utils` (the public import path).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from typing import TextIO

from pxr import Sdf, Usd, UsdPhysics

from runtime.schema._membership import get_all_robot_joints, get_all_robot_links
from runtime.schema._prims import (
    JOINT_API,
    LINK_API,
    _is_joint,
    _is_rigid,
    _under,
    _valid,
    get_joint_body_relationship,
    get_sub_robots,
)

_LOG = logging.getLogger("runtime.schema.utils")


class RobotLinkNode:
    """A node of the robot link tree.

    Attributes:
        prim: the link prim (may be invalid when a joint targets a missing prim).
        path: ``Sdf.Path`` of the prim or None.
        name: prim name or None.
        children: child nodes, in joint order.
        loop_joints: on the root node only, joints skipped because they would close a
            kinematic loop (each such joint's second link is already in the tree).
    """

    def __init__(
        self,
        prim: Usd.Prim | None,
        parent: RobotLinkNode | None = None,
        joint: Usd.Prim | None = None,
    ) -> None:
        """Create a node.

        Args:
            prim: the link prim.
            parent: parent node (None for the root). Not added to the parent's children.
            joint: the joint connecting this node to its parent.
        """
        self.prim = prim
        ok = _valid(prim)
        self.path: Sdf.Path | None = prim.GetPath() if ok else None
        self.name: str | None = prim.GetName() if ok else None
        self._parent = parent
        self.children: list[RobotLinkNode] = []
        self._joints: list[Usd.Prim] = []
        self._joint_to_parent = joint
        self.loop_joints: list[Usd.Prim] = []

    @property
    def parent(self) -> RobotLinkNode | None:
        """The parent node (None for the root)."""
        return self._parent

    @property
    def joint_to_parent(self) -> Usd.Prim | None:
        """The joint connecting this link to its parent (None for the root)."""
        return self._joint_to_parent

    @property
    def joints(self) -> list[Usd.Prim]:
        """Joints to the children, in child order."""
        return list(self._joints)

    def add_child(self, child: RobotLinkNode) -> None:
        """Append a child node (does not set the child's parent).

        Args:
            child: the node to append.
        """
        self.children.append(child)

    def iter_nodes(self) -> Iterable[RobotLinkNode]:
        """Yield this node's subtree in pre-order (this node first)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def __repr__(self) -> str:
        return f"RobotLinkNode({self.path}, children={len(self.children)})"


def _sub_robot_members(
    sub: Usd.Prim,
) -> tuple[list[Usd.Prim], list[Usd.Prim]]:
    prims = list(Usd.PrimRange(sub))
    links = [p for p in prims if p.HasAPI(LINK_API)]
    if not links:
        links = [p for p in prims if _is_rigid(p)]
    joints = [p for p in prims if p.HasAPI(JOINT_API) and _is_joint(p)]
    if not joints:
        joints = [p for p in prims if _is_joint(p)]
    joints = [j for j in joints if not UsdPhysics.Joint(j).GetExcludeFromArticulationAttr().Get()]
    return links, joints


def find_loop_joints(
    joints: list[Usd.Prim], link_paths: set[str] | frozenset[str]
) -> list[tuple[Usd.Prim, str]]:
    """The joints that close kinematic loops among ``link_paths``, with the reason for each.

    Only joints whose two bodies are both links take part. The joints are added to a
    spanning forest in ``joints`` order (union-find); a joint whose two links are already
    connected by earlier joints closes a loop. So the joint reported is always the one
    listed last among the joints forming the loop (for a link given two parent joints, the
    later of the two when it is listed after the rest of the loop), and the result does not
    depend on the walk order of the tree.

    Args:
        joints: joint prims in robot-joint order (excluded joints are ignored).
        link_paths: paths of the robot's links.

    Returns:
        (joint prim, reason) per loop-closing joint, in ``joints`` order.
    """
    parent_joint: dict[str, str] = {}
    root: dict[str, str] = {}

    def find(path: str) -> str:
        root.setdefault(path, path)
        while root[path] != path:
            root[path] = root[root[path]]
            path = root[path]
        return path

    loops: list[tuple[Usd.Prim, str]] = []
    for j in joints:
        b0 = get_joint_body_relationship(j, 0)
        b1 = get_joint_body_relationship(j, 1)
        if b0 is None or b1 is None or str(b0) == str(b1):
            continue
        p0, p1 = str(b0), str(b1)
        if p0 not in link_paths or p1 not in link_paths:
            continue
        jp = str(j.GetPath())
        if find(p0) == find(p1):
            if p1 in parent_joint:
                reason = f"link {p1} already has the parent joint {parent_joint[p1]}"
            else:
                reason = f"{p0} and {p1} are already connected"
            loops.append((j, reason + " (kinematic loop)"))
            continue
        parent_joint.setdefault(p1, jp)
        root[find(p1)] = find(p0)
    return loops


def generate_robot_link_tree(stage: Usd.Stage, robot_prim: Usd.Prim) -> RobotLinkNode | None:
    """Build the link tree of a robot, rooted at its first link.

    Links and joints come from :func:`get_all_robot_links` / :func:`get_all_robot_joints`;
    links and joints of nested robots are grafted in. The walk is depth-first (LIFO) and
    follows joints in either direction, so reversed (child→parent) joints give the right
    edge. Joints that close kinematic loops (:func:`find_loop_joints`: the later of two
    parent joints of a link, or the later joint of a cycle) are skipped (no duplicated
    link), logged, and recorded in ``root.loop_joints``; any other joint whose other body
    is already in the tree is skipped the same way. Joints to
    an existing prim that is neither a listed link nor a rigid body (a world anchor such as
    the robot Xform) or to a rigid body outside the robot prim add no node; a missing prim
    gives a node without name, like the reference.

    Args:
        stage: the stage.
        robot_prim: prim with ``IsaacRobotAPI``.

    Returns:
        The root node, or None when the robot has no links.
    """
    if stage is None or not _valid(robot_prim):
        return None
    links = get_all_robot_links(stage, robot_prim)
    joints = get_all_robot_joints(stage, robot_prim)
    link_paths = {str(p.GetPath()) for p in links}
    joint_paths = {str(p.GetPath()) for p in joints}
    for sub in get_sub_robots(robot_prim):
        sub_links, sub_joints = _sub_robot_members(sub)
        for p in sub_links:
            if str(p.GetPath()) not in link_paths:
                link_paths.add(str(p.GetPath()))
                links.append(p)
        for p in sub_joints:
            if str(p.GetPath()) not in joint_paths:
                joint_paths.add(str(p.GetPath()))
                joints.append(p)
    if not links:
        return None
    by_slot: tuple[dict[str, list[Usd.Prim]], dict[str, list[Usd.Prim]]] = ({}, {})
    for j in joints:
        for i in (0, 1):
            b = get_joint_body_relationship(j, i)
            if b is not None and str(b) in link_paths:
                by_slot[i].setdefault(str(b), []).append(j)
    robot_path = str(robot_prim.GetPath())
    root = RobotLinkNode(links[0])
    in_tree = {str(links[0].GetPath())}
    processed: set[str] = set()
    for j, reason in find_loop_joints(joints, link_paths):
        processed.add(str(j.GetPath()))
        root.loop_joints.append(j)
        _LOG.warning(
            "Kinematic loop: joint %s of robot %s is skipped: %s (set "
            "physics:excludeFromArticulation on loop-closing joints).",
            j.GetPath(),
            robot_prim.GetPath(),
            reason,
        )
    stack = [root]
    while stack:
        node = stack.pop()
        if node.path is None:
            continue
        key = str(node.path)
        for i in (0, 1):
            for j in by_slot[i].get(key, []):
                jp = str(j.GetPath())
                if jp in processed:
                    continue
                processed.add(jp)
                other = get_joint_body_relationship(j, 1 - i)
                if other is None:
                    continue
                other_prim = stage.GetPrimAtPath(other)
                if (
                    str(other) not in link_paths
                    and _valid(other_prim)
                    and (not _is_rigid(other_prim) or not _under(str(other), robot_path))
                ):
                    # a joint to a non-body prim (world anchor, the robot Xform) or to a
                    # body outside this robot (the arm a gripper is mounted on): no node
                    continue
                if str(other) in in_tree:
                    if str(other) != key:
                        root.loop_joints.append(j)
                        _LOG.warning(
                            "Kinematic loop: joint %s connects %s to %s, which is already in "
                            "the tree of robot %s; the joint is skipped (set "
                            "physics:excludeFromArticulation on loop-closing joints).",
                            jp,
                            key,
                            other,
                            robot_prim.GetPath(),
                        )
                    continue
                in_tree.add(str(other))
                child = RobotLinkNode(other_prim, node, j)
                node.children.append(child)
                node._joints.append(j)
                stack.append(child)
    return root


def format_robot_tree(root: RobotLinkNode | None, indent: int = 0) -> str:
    """Text of :func:`print_robot_tree`: one line per node, two spaces per level.

    Args:
        root: tree root (None gives "").
        indent: spaces before the root's name.

    Returns:
        The lines joined with newlines, ending with a newline.

    Raises:
        TypeError: a node has no name (invalid prim), as in the reference.
    """
    if root is None:
        return ""
    lines: list[str] = []
    stack: list[tuple[RobotLinkNode, int]] = [(root, indent)]
    while stack:
        node, ind = stack.pop()
        lines.append(" " * ind + node.name)  # TypeError for name None, like the reference
        stack.extend((c, ind + 2) for c in reversed(node.children))
    return "\n".join(lines) + "\n"


def print_robot_tree(
    root: RobotLinkNode | None, indent: int = 0, file: TextIO | None = None
) -> str:
    """Write the tree to stdout (or ``file``): ``indent`` spaces then the name, pre-order.

    Args:
        root: tree root.
        indent: spaces before the root's name; children get two more per level.
        file: text stream; ``sys.stdout`` when None.

    Returns:
        The text written.
    """
    text = format_robot_tree(root, indent)
    (file or sys.stdout).write(text)
    return text


def get_links_from_joint(
    root: RobotLinkNode | None, joint_prim: Usd.Prim
) -> tuple[list[Usd.Prim], list[Usd.Prim]]:
    """Links on each side of a joint in a link tree.

    Args:
        root: tree root from :func:`generate_robot_link_tree`.
        joint_prim: the joint.

    Returns:
        ``(before, after)``: ``after`` is the subtree below the joint (pre-order, child
        first); ``before`` is every other link of the tree: the joint's parent link, the
        parent's other children's subtrees, then each further ancestor followed by its other
        children's subtrees. ``([], [])`` when the joint is not a tree edge.
    """
    if root is None or not _valid(joint_prim):
        return [], []
    target = None
    for node in root.iter_nodes():
        jtp = node._joint_to_parent
        if jtp is not None and jtp.GetPath() == joint_prim.GetPath():
            target = node
            break
    if target is None:
        return [], []
    after = [n.prim for n in target.iter_nodes()]
    before: list[Usd.Prim] = []
    seen = {str(p.GetPath()) for p in after}

    def add(prim: Usd.Prim) -> None:
        key = str(prim.GetPath()) if _valid(prim) else repr(prim)
        if key not in seen:
            seen.add(key)
            before.append(prim)

    came_from = target
    ancestor = target.parent
    while ancestor is not None:
        add(ancestor.prim)
        for child in ancestor.children:
            if child is came_from:
                continue
            for n in child.iter_nodes():
                add(n.prim)
        came_from = ancestor
        ancestor = ancestor.parent
    return before, after
