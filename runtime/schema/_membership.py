"""Links, joints and components of a robot, its link parent map and joint poses.

See docs/guides/inspect-and-schema.md#link-tree. Part of :mod:`runtime.schema.utils` (the public
path).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from pxr import Gf, Usd, UsdGeom, UsdPhysics

from runtime.schema._articulation import discover_articulation_graph
from runtime.schema._prims import (
    _WARNED_JOINTS,
    _WARNED_LINKS,
    JOINT_API,
    LINK_API,
    ROBOT_API,
    SITE_API,
    _is_joint,
    _is_rigid,
    _under,
    _valid,
    find_articulation_root,
    get_joint_body_relationship,
    get_sub_robots,
    has_deprecated_reference_point,
    is_site,
)
from runtime.schema.tokens import Relations

_LOG = logging.getLogger("runtime.schema.utils")

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


def _append_unlisted(
    members: list[Usd.Prim],
    discovered: list[Usd.Prim],
    robot_prim: Usd.Prim,
    kind: str,
    warned: set[str],
) -> list[Usd.Prim]:
    """``members`` plus the discovered prims it lacks; warns once per robot in ``warned``."""
    have = {str(p.GetPath()) for p in members}
    missing = [p for p in discovered if str(p.GetPath()) not in have]
    if missing:
        key = str(robot_prim.GetPath())
        if key not in warned:
            warned.add(key)
            _LOG.warning(
                "Robot at %s has %s missing from schema relationship: %s",
                key,
                kind,
                [str(p.GetPath()) for p in missing],
            )
        members.extend(missing)
    return members


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
    return _append_unlisted(joints, discovered, robot_prim, "joints", _WARNED_JOINTS)


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
    return _append_unlisted(links, discovered, robot_prim, "links", _WARNED_LINKS)


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
