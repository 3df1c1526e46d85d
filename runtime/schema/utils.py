"""Read-only queries on the Isaac Robot Schema: joints, links, components, tree, poses.

Snake_case implementations of the reference ``robot_schema.utils`` queries (spec
``robot-schema.md`` §4) with the reference bugs of §9 fixed:

* a robot prim that is itself a link still has its ``robotLinks`` order honoured (§4.4);
* ``get_joint_pose`` composes the body1 frame in the right order (§4.8);
* ``generate_robot_link_tree`` never duplicates a link: loop-closing joints are skipped
  deterministically, logged and listed in ``root.loop_joints`` (§4.10);
* ``get_links_from_joint`` includes the siblings of the after-joint link (§4.12);
* prims carrying the deprecated ``IsaacReferencePointAPI`` count as sites (with a
  deprecation warning), although ``HasAPI`` cannot see that unregistered name (§2.7).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from typing import TextIO

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.schema.tokens import Classes, Relations

__all__ = [
    "RobotLinkNode",
    "UsdPhysics",
    "clear_warning_cache",
    "find_articulation_root",
    "find_robot_prims",
    "format_robot_tree",
    "generate_robot_link_tree",
    "get_all_named_poses",
    "get_all_robot_components",
    "get_all_robot_joints",
    "get_all_robot_links",
    "get_joint_body_relationship",
    "get_joint_pose",
    "get_links_from_joint",
    "get_named_pose_end_link",
    "get_named_pose_joint_fixed",
    "get_named_pose_joint_values",
    "get_named_pose_joints",
    "get_named_pose_start_link",
    "get_named_pose_valid",
    "get_robot_link_parent_map",
    "get_sub_robots",
    "has_deprecated_reference_point",
    "is_site",
    "print_robot_tree",
]

_LOG = logging.getLogger("runtime.schema.utils")

ROBOT_API = Classes.ROBOT_API.value
LINK_API = Classes.LINK_API.value
JOINT_API = Classes.JOINT_API.value
SITE_API = Classes.SITE_API.value
REFERENCE_POINT_API = Classes.REFERENCE_POINT_API.value

# Warn-once bookkeeping of the reference (§4.3/§4.4): robot path strings already warned about.
_WARNED_JOINTS: set[str] = set()
_WARNED_LINKS: set[str] = set()
_WARNED_DEPRECATED: set[str] = set()


def clear_warning_cache() -> None:
    """Forget which robots were already warned about (missing links/joints, deprecated API)."""
    _WARNED_JOINTS.clear()
    _WARNED_LINKS.clear()
    _WARNED_DEPRECATED.clear()


# --------------------------------------------------------------------------------------
# small predicates
# --------------------------------------------------------------------------------------


def _valid(prim: Usd.Prim | None) -> bool:
    return prim is not None and bool(prim) and prim.IsValid()


def has_deprecated_reference_point(prim: Usd.Prim) -> bool:
    """True when the deprecated ``IsaacReferencePointAPI`` token is applied to ``prim``.

    ``HasAPI`` cannot report an unregistered schema name, so the applied-schema list of the
    prim type info (which keeps unknown tokens) is read instead.

    Args:
        prim: any prim (invalid prims give False).

    Returns:
        Whether the deprecated token is in the composed ``apiSchemas``.
    """
    if not _valid(prim):
        return False
    if prim.HasAPI(REFERENCE_POINT_API):  # registered by some builds
        return True
    return REFERENCE_POINT_API in prim.GetPrimTypeInfo().GetAppliedAPISchemas()


def is_site(prim: Usd.Prim, warn: bool = True) -> bool:
    """True when ``prim`` is a site: ``IsaacSiteAPI`` or the deprecated reference-point API.

    Args:
        prim: prim to test.
        warn: log a deprecation warning (once per prim path) for the deprecated API.

    Returns:
        Whether the prim is a site.
    """
    if not _valid(prim):
        return False
    if prim.HasAPI(SITE_API):
        return True
    if has_deprecated_reference_point(prim):
        key = str(prim.GetPath())
        if warn and key not in _WARNED_DEPRECATED:
            _WARNED_DEPRECATED.add(key)
            _LOG.warning("%s has ReferencePointAPI which is deprecated. Use SiteAPI instead.", key)
        return True
    return False


def _is_joint(prim: Usd.Prim) -> bool:
    return _valid(prim) and prim.IsA(UsdPhysics.Joint)


def _is_rigid(prim: Usd.Prim) -> bool:
    return _valid(prim) and prim.HasAPI(UsdPhysics.RigidBodyAPI)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def get_joint_body_relationship(joint_prim: Usd.Prim, body_index: int) -> Sdf.Path | None:
    """First target of ``physics:body0`` / ``physics:body1`` of a joint.

    Args:
        joint_prim: a ``UsdPhysics.Joint`` prim (anything else gives None).
        body_index: 0 or 1.

    Returns:
        The target path, or None for non-joints, joints excluded from the articulation,
        other indices and empty relationships.
    """
    if not _is_joint(joint_prim):
        return None
    joint = UsdPhysics.Joint(joint_prim)
    if joint.GetExcludeFromArticulationAttr().Get():
        return None
    if body_index == 0:
        rel = joint.GetBody0Rel()
    elif body_index == 1:
        rel = joint.GetBody1Rel()
    else:
        return None
    targets = rel.GetTargets() if rel else []
    return targets[0] if targets else None


def get_sub_robots(robot_prim: Usd.Prim) -> list[Usd.Prim]:
    """Strict descendants of ``robot_prim`` carrying ``IsaacRobotAPI`` (depth-first order).

    Args:
        robot_prim: the robot prim.

    Returns:
        The nested robot prims.
    """
    if not _valid(robot_prim):
        return []
    return [p for p in Usd.PrimRange(robot_prim) if p != robot_prim and p.HasAPI(ROBOT_API)]


def find_articulation_root(prim: Usd.Prim) -> Usd.Prim | None:
    """``prim`` if it has ``PhysicsArticulationRootAPI``, else the first descendant that has it.

    Args:
        prim: where to start (depth-first pre-order over ``Usd.PrimRange``).

    Returns:
        The articulation root prim or None.
    """
    if not _valid(prim):
        return None
    for p in Usd.PrimRange(prim):
        if p.HasAPI(UsdPhysics.ArticulationRootAPI):
            return p
    return None


def find_robot_prims(stage: Usd.Stage) -> list[Usd.Prim]:
    """Top-level robots of a stage: prims with ``IsaacRobotAPI`` not nested in another robot.

    Args:
        stage: the stage.

    Returns:
        Robot prims in depth-first order.
    """
    out: list[Usd.Prim] = []
    it = iter(Usd.PrimRange(stage.GetPseudoRoot()))
    for prim in it:
        if prim.HasAPI(ROBOT_API):
            out.append(prim)
            it.PruneChildren()
    return out


# --------------------------------------------------------------------------------------
# articulation discovery (§4.5)
# --------------------------------------------------------------------------------------


def _discover_articulation_prims(
    stage: Usd.Stage, robot_prim: Usd.Prim
) -> tuple[list[Usd.Prim], list[Usd.Prim]]:
    """Links and joints reachable from the articulation root (BFS), sub-robots excluded."""
    subs = [str(p.GetPath()) for p in get_sub_robots(robot_prim)]

    def in_sub(path: str) -> bool:
        return any(_under(path, s) for s in subs)

    art = find_articulation_root(robot_prim)
    if art is None:
        return [], []
    joints = [p for p in Usd.PrimRange(robot_prim) if _is_joint(p) and not in_sub(str(p.GetPath()))]
    root_link = art
    root_joint = None
    if _is_joint(art):
        root_joint = art
        b = get_joint_body_relationship(art, 0) or get_joint_body_relationship(art, 1)
        if b is None:
            return [], []
        root_link = stage.GetPrimAtPath(b)
    adjacency: dict[str, list[tuple[Usd.Prim, int]]] = {}
    root_path = str(root_link.GetPath())
    for j in joints:
        for i in (0, 1):
            b = get_joint_body_relationship(j, i)
            if b is None:
                continue
            adjacency.setdefault(str(b), []).append((j, i))
            if root_joint is None and str(b) == root_path:
                root_joint = j
    links: list[Usd.Prim] = []
    out_joints: list[Usd.Prim] = [root_joint] if root_joint is not None else []
    seen_joints = {str(root_joint.GetPath())} if root_joint is not None else set()
    visited: set[str] = set()
    queue = [root_link]
    head = 0
    while head < len(queue):
        prim = queue[head]
        head += 1
        path = str(prim.GetPath())
        if path in visited or in_sub(path):
            continue
        visited.add(path)
        if _is_rigid(prim):
            links.append(prim)
        for j, i in adjacency.get(path, []):
            jp = str(j.GetPath())
            if jp not in seen_joints:
                seen_joints.add(jp)
                out_joints.append(j)
            other = get_joint_body_relationship(j, 1 - i)
            inside = other is not None and _under(str(other), str(robot_prim.GetPath()))
            if inside and str(other) not in visited:
                op = stage.GetPrimAtPath(other)
                if _valid(op):
                    queue.append(op)
    return links, out_joints


# --------------------------------------------------------------------------------------
# relationship collection (§4.2)
# --------------------------------------------------------------------------------------


def _walk_members(stage: Usd.Stage, robot_prim: Usd.Prim, rel_name: str) -> list[Usd.Prim]:
    """Links or joints of an unpopulated robot from the articulation walk (nothing authored)."""
    from runtime.schema.populate import discover_articulation_graph

    graph = discover_articulation_graph(stage, robot_prim)
    return graph.joints if rel_name == Relations.ROBOT_JOINTS.name else graph.links


def _collect(
    stage: Usd.Stage,
    prim: Usd.Prim,
    rel_name: str,
    include: Callable[[Usd.Prim], bool],
    descend: Callable[[Usd.Prim], bool],
    visited: set[str],
    nested: bool = False,
) -> list[Usd.Prim]:
    path = str(prim.GetPath())
    if path in visited:
        return []
    visited.add(path)
    if not prim.HasAPI(ROBOT_API):
        return [prim] if include(prim) else []
    rel = prim.GetRelationship(rel_name)
    targets = list(rel.GetTargets()) if rel else []
    members: list[Usd.Prim] = []
    from_walk = False
    for target in targets:
        p = stage.GetPrimAtPath(target)
        if _valid(p):
            members.append(p)
    if not targets:
        if not nested:
            # Fixed §4.4 quirk: only when the robot lists nothing does "robot is a link" matter.
            return [prim] if include(prim) else []
        # A nested robot that was never populated: take its members from the articulation
        # walk rather than silently dropping them.
        members = _walk_members(stage, prim, rel_name)
        from_walk = True
    out: list[Usd.Prim] = []
    for p in members:
        if p == prim:
            if include(p):
                out.append(p)
            continue
        if p.HasAPI(ROBOT_API):
            if descend(p):
                out.extend(_collect(stage, p, rel_name, include, descend, visited, True))
            elif include(p):
                out.append(p)
        elif from_walk or include(p):
            # walked members are links/joints by construction (their APIs are not applied)
            out.append(p)
    return out


def _dedup(prims: Iterable[Usd.Prim]) -> list[Usd.Prim]:
    seen: set[str] = set()
    out = []
    for p in prims:
        key = str(p.GetPath())
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def get_all_robot_joints(
    stage: Usd.Stage, robot_prim: Usd.Prim, parse_nested_robots: bool = True
) -> list[Usd.Prim]:
    """All joints of a robot: ``robotJoints`` order, then unlisted articulation joints.

    Nested robots listed in ``robotJoints`` are expanded in place when
    ``parse_nested_robots``. Joints found by the articulation walk but absent from the
    relationship are appended (warning once per robot path).

    Args:
        stage: the stage.
        robot_prim: prim with ``IsaacRobotAPI``.
        parse_nested_robots: expand nested robot targets.

    Returns:
        Joint prims, without duplicates.
    """
    if stage is None or not _valid(robot_prim):
        return []
    joints = _collect(
        stage,
        robot_prim,
        Relations.ROBOT_JOINTS.name,
        lambda p: p.HasAPI(JOINT_API),
        lambda p: parse_nested_robots,
        set(),
    )
    joints = _dedup(joints)
    _links, discovered = _discover_articulation_prims(stage, robot_prim)
    have = {str(p.GetPath()) for p in joints}
    missing = [p for p in discovered if str(p.GetPath()) not in have]
    if missing:
        key = str(robot_prim.GetPath())
        if key not in _WARNED_JOINTS:
            _WARNED_JOINTS.add(key)
            _LOG.warning(
                "Robot at %s has joints missing from schema relationship: %s",
                key,
                [str(p.GetPath()) for p in missing],
            )
        joints.extend(missing)
    return joints


def get_all_robot_links(
    stage: Usd.Stage, robot_prim: Usd.Prim, include_reference_points: bool = False
) -> list[Usd.Prim]:
    """All links of a robot: ``robotLinks`` order (nested robots spliced), then unlisted links.

    Unlike the reference, a robot prim that is itself a link keeps its ``robotLinks``
    order. Sites (``IsaacSiteAPI`` or the deprecated reference-point API) are kept only
    when ``include_reference_points``.

    Args:
        stage: the stage.
        robot_prim: prim with ``IsaacRobotAPI``.
        include_reference_points: keep site prims listed in ``robotLinks``.

    Returns:
        Link (and optionally site) prims, without duplicates.
    """
    if stage is None or not _valid(robot_prim):
        return []

    def include(p: Usd.Prim) -> bool:
        if p.HasAPI(LINK_API):
            return True
        return include_reference_points and is_site(p)

    links = _dedup(
        _collect(
            stage,
            robot_prim,
            Relations.ROBOT_LINKS.name,
            include,
            lambda p: True,
            set(),
        )
    )
    discovered, _joints = _discover_articulation_prims(stage, robot_prim)
    have = {str(p.GetPath()) for p in links}
    missing = [p for p in discovered if str(p.GetPath()) not in have]
    if missing:
        key = str(robot_prim.GetPath())
        if key not in _WARNED_LINKS:
            _WARNED_LINKS.add(key)
            _LOG.warning(
                "Robot at %s has links missing from schema relationship: %s",
                key,
                [str(p.GetPath()) for p in missing],
            )
        links.extend(missing)
    return links


def get_all_robot_components(stage: Usd.Stage, robot_prim: Usd.Prim) -> list[Usd.Prim]:
    """Prims under the robot (itself included) carrying any Robot Schema API, depth-first.

    Args:
        stage: the stage (unused except for validity).
        robot_prim: the robot prim.

    Returns:
        Robot, link, joint and site prims (the deprecated reference-point API included).
    """
    if stage is None or not _valid(robot_prim):
        return []
    out = []
    for p in Usd.PrimRange(robot_prim):
        if (
            p.HasAPI(ROBOT_API)
            or p.HasAPI(LINK_API)
            or p.HasAPI(JOINT_API)
            or p.HasAPI(SITE_API)
            or has_deprecated_reference_point(p)
        ):
            out.append(p)
    return out


def get_robot_link_parent_map(stage: Usd.Stage, robot_prim: Usd.Prim) -> dict[str, str]:
    """Map child link path → parent link path from the direct ``robotJoints`` targets.

    Args:
        stage: the stage.
        robot_prim: prim with ``IsaacRobotAPI``.

    Returns:
        ``{body1 path: body0 path}``; the root link is absent (parented to the world).
    """
    if stage is None or not _valid(robot_prim):
        return {}
    rel = robot_prim.GetRelationship(Relations.ROBOT_JOINTS.name)
    out: dict[str, str] = {}
    for target in rel.GetTargets() if rel else []:
        j = stage.GetPrimAtPath(target)
        if not _valid(j):
            continue
        b0 = get_joint_body_relationship(j, 0)
        b1 = get_joint_body_relationship(j, 1)
        if b0 is None or b1 is None:
            continue
        out[str(b1)] = str(b0)
    return out


def _local_frame(joint: UsdPhysics.Joint, index: int) -> Gf.Matrix4d:
    pos = (joint.GetLocalPos0Attr() if index == 0 else joint.GetLocalPos1Attr()).Get()
    rot = (joint.GetLocalRot0Attr() if index == 0 else joint.GetLocalRot1Attr()).Get()
    pos = Gf.Vec3d(0, 0, 0) if pos is None else Gf.Vec3d(pos)
    rot = Gf.Quatd(1, 0, 0, 0) if rot is None else Gf.Quatd(rot)
    m = Gf.Matrix4d(1.0)
    m.SetRotateOnly(Gf.Rotation(rot))
    m.SetTranslateOnly(pos)
    return m


def get_joint_pose(robot_prim: Usd.Prim, joint_prim: Usd.Prim) -> Gf.Matrix4d | None:
    """Joint frame expressed in the robot prim's frame (USD row-vector matrix).

    Uses body0's frame when available, else body1's. Both branches compose
    ``local_i · body_i_world`` (the reference's body1 branch had the operands swapped).

    Args:
        robot_prim: the robot prim.
        joint_prim: a joint prim.

    Returns:
        ``joint_world · robot_world⁻¹`` or None (not a joint / no usable body).
    """
    if not _is_joint(joint_prim) or not _valid(robot_prim):
        return None
    stage = joint_prim.GetStage()
    joint = UsdPhysics.Joint(joint_prim)
    for i in (0, 1):
        b = get_joint_body_relationship(joint_prim, i)
        if b is None:
            continue
        body = stage.GetPrimAtPath(b)
        if not _valid(body):
            continue
        body_world = UsdGeom.Xformable(body).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
        joint_world = _local_frame(joint, i) * body_world
        robot_world = UsdGeom.Xformable(robot_prim).ComputeLocalToWorldTransform(
            Usd.TimeCode.Default()
        )
        return joint_world * robot_world.GetInverse()
    return None


# --------------------------------------------------------------------------------------
# tree (§4.9-§4.12)
# --------------------------------------------------------------------------------------


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


def generate_robot_link_tree(stage: Usd.Stage, robot_prim: Usd.Prim) -> RobotLinkNode | None:
    """Build the link tree of a robot, rooted at its first link.

    Links and joints come from :func:`get_all_robot_links` / :func:`get_all_robot_joints`;
    links and joints of nested robots are grafted in. The walk is depth-first (LIFO) and
    follows joints in either direction, so reversed (child→parent) joints give the right
    edge. A joint whose other body is already in the tree closes a kinematic loop: it is
    skipped (no duplicated link), logged, and recorded in ``root.loop_joints``. Joints to
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


# --------------------------------------------------------------------------------------
# named poses (§4.13)
# --------------------------------------------------------------------------------------


def get_all_named_poses(stage: Usd.Stage, robot_prim: Usd.Prim) -> list[Usd.Prim]:
    """Valid prims targeted by the robot's ``isaac:robot:namedPoses``, in order.

    Args:
        stage: the stage.
        robot_prim: prim with ``IsaacRobotAPI``.

    Returns:
        Named-pose prims (empty for invalid input or prims without the robot API).
    """
    if stage is None or not _valid(robot_prim) or not robot_prim.HasAPI(ROBOT_API):
        return []
    rel = robot_prim.GetRelationship(Relations.NAMED_POSES.name)
    out = []
    for t in rel.GetTargets() if rel else []:
        p = stage.GetPrimAtPath(t)
        if _valid(p):
            out.append(p)
    return out


def _first_target(prim: Usd.Prim, rel_name: str) -> Sdf.Path | None:
    if not _valid(prim):
        return None
    rel = prim.GetRelationship(rel_name)
    targets = rel.GetTargets() if rel else []
    return targets[0] if targets else None


def get_named_pose_start_link(named_pose_prim: Usd.Prim) -> Sdf.Path | None:
    """First target of ``isaac:robot:pose:startLink`` or None."""
    return _first_target(named_pose_prim, Relations.POSE_START_LINK.name)


def get_named_pose_end_link(named_pose_prim: Usd.Prim) -> Sdf.Path | None:
    """First target of ``isaac:robot:pose:endLink`` or None."""
    return _first_target(named_pose_prim, Relations.POSE_END_LINK.name)


def get_named_pose_joints(named_pose_prim: Usd.Prim) -> list[Sdf.Path]:
    """All targets of ``isaac:robot:pose:joints`` in order (empty when none)."""
    if not _valid(named_pose_prim):
        return []
    rel = named_pose_prim.GetRelationship(Relations.POSE_JOINTS.name)
    return list(rel.GetTargets()) if rel else []


def _attr_value(prim: Usd.Prim, name: str) -> object:
    if not _valid(prim):
        return None
    attr = prim.GetAttribute(name)
    if not attr or not attr.HasAuthoredValue():
        return None
    return attr.Get()


def get_named_pose_joint_values(named_pose_prim: Usd.Prim) -> object:
    """``isaac:robot:pose:jointValues`` (native units) or None when unauthored."""
    return _attr_value(named_pose_prim, "isaac:robot:pose:jointValues")


def get_named_pose_joint_fixed(named_pose_prim: Usd.Prim) -> object:
    """``isaac:robot:pose:jointFixed`` or None when unauthored."""
    return _attr_value(named_pose_prim, "isaac:robot:pose:jointFixed")


def get_named_pose_valid(named_pose_prim: Usd.Prim) -> object:
    """``isaac:robot:pose:valid`` or None when unauthored."""
    return _attr_value(named_pose_prim, "isaac:robot:pose:valid")
