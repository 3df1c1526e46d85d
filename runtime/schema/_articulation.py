"""The articulation walk of a robot; it authors nothing.

See docs/guides/inspect-and-schema.md#populate.

The DOF table reuses it on assets without a robot schema. Part of
:mod:`runtime.schema.populate` (the public import path).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pxr import Usd, UsdGeom, UsdPhysics

from runtime.schema._prims import (
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

_LOG = logging.getLogger("runtime.schema.populate")


@dataclass
class ArticulationGraph:
    """Result of the articulation walk (nothing authored).

    Attributes:
        root_link: the root link prim (may be the robot prim: synthetic root), or None.
        root_joint: the root joint prim or None.
        links: rigid-body links in walk order; nested robot prims appear as single entries.
        joints: joints in first-seen order; nested robot prims appear as single entries.
        sites_by_link: link path → site candidate prims (only when sites were detected).
        sub_robots: paths of nested robots (strict descendants with ``IsaacRobotAPI``).
    """

    root_link: Usd.Prim | None
    root_joint: Usd.Prim | None
    links: list[Usd.Prim] = field(default_factory=list)
    joints: list[Usd.Prim] = field(default_factory=list)
    sites_by_link: dict[str, list[Usd.Prim]] = field(default_factory=dict)
    sub_robots: list[str] = field(default_factory=list)


def _check_traversal(traversal: str | None) -> str:
    if traversal is None:
        return "dfs"
    value = str(traversal).lower()
    if value not in ("dfs", "bfs"):
        raise ValueError(f"Invalid traversal strategy: {traversal!r}. Expected 'dfs' or 'bfs'.")
    return value


def detect_sites_for_link(
    link_prim: Usd.Prim, include_existing: bool = False, include_new: bool = True
) -> list[Usd.Prim]:
    """Site candidates among a link's direct children (instance proxies included).

    A candidate is a childless ``UsdGeom.Xform`` (subtypes included) without
    ``IsaacSiteAPI`` (nor the deprecated reference-point API), without ``RigidBodyAPI``
    and not a joint.

    Args:
        link_prim: the link.
        include_existing: also return children that already are sites (``IsaacSiteAPI`` or
            the deprecated reference-point API), in child order with the new candidates.
        include_new: return new candidates (False: only the existing sites).

    Returns:
        Candidates in child order.
    """
    if not _valid(link_prim):
        return []
    out = []
    for child in link_prim.GetFilteredChildren(Usd.TraverseInstanceProxies()):
        if child.HasAPI(SITE_API) or has_deprecated_reference_point(child):
            if include_existing:
                is_site(child)  # deprecation warning for the old API
                out.append(child)
            continue
        if not include_new or not child.IsA(UsdGeom.Xform):
            continue
        if child.GetFilteredChildren(Usd.TraverseInstanceProxies()):
            continue
        if child.HasAPI(UsdPhysics.RigidBodyAPI) or _is_joint(child):
            continue
        out.append(child)
    return out


def discover_articulation_graph(
    stage: Usd.Stage,
    robot_prim: Usd.Prim,
    articulation_prim: Usd.Prim | None = None,
    *,
    detect_sites: bool = False,
    root_link_override: Usd.Prim | None = None,
    traversal: str | None = "dfs",
) -> ArticulationGraph:
    """Walk the physics articulation of a robot (spec §5.1) without authoring anything.

    Fixes relative to the reference: unreached nested robots are appended sorted by path;
    a rejected root override still lets the root scoring run; joints whose bodies both lie
    outside the robot prim, and body targets naming missing prims, are logged (naming the
    joint) and ignored. Bodies outside the robot prim (world anchors, the parent robot of a
    nested gripper) are never walked into nor chosen as root; the joint itself is kept.

    Args:
        stage: the stage.
        robot_prim: the robot prim.
        articulation_prim: where to search for ``PhysicsArticulationRootAPI`` (robot prim
            when None).
        detect_sites: collect new site candidates under each link (children that already
            are sites are always collected).
        root_link_override: preferred root link (used if it is a joint body or rigid).
        traversal: "dfs" (default) or "bfs", case-insensitive.

    Returns:
        The walk result.

    Raises:
        ValueError: invalid traversal strategy.
    """
    mode = _check_traversal(traversal)
    subs = [str(p.GetPath()) for p in get_sub_robots(robot_prim)]
    robot_path = str(robot_prim.GetPath())

    def owner(path: str) -> str | None:
        best = None
        for s in subs:
            if _under(path, s) and (best is None or len(s) > len(best)):
                best = s
        return best

    # articulation root
    start = articulation_prim if _valid(articulation_prim) else robot_prim
    art = find_articulation_root(start)
    if art is not None and owner(str(art.GetPath())) is not None:
        art = articulation_prim if _valid(articulation_prim) else robot_prim
    if art is None:
        art = robot_prim

    # parent-robot joints
    joints_all: list[Usd.Prim] = []
    for p in Usd.PrimRange(robot_prim):
        if not _is_joint(p):
            continue
        bodies = []
        for i in (0, 1):
            b = get_joint_body_relationship(p, i)
            if b is None:
                continue
            if not _valid(stage.GetPrimAtPath(b)):
                _LOG.warning(
                    "Joint %s: physics:body%d targets %s, which does not exist; that side "
                    "is ignored.",
                    p.GetPath(),
                    i,
                    b,
                )
                continue
            bodies.append(str(b))
        if not bodies:
            continue
        if all(not _under(b, robot_path) for b in bodies):
            _LOG.warning(
                "Joint %s connects bodies %s that are all outside robot %s; it is not part "
                "of the robot.",
                p.GetPath(),
                bodies,
                robot_path,
            )
            continue
        if all(owner(b) is not None for b in bodies):
            continue
        joints_all.append(p)

    root_joint = None
    root_link = art
    if _is_joint(art):
        root_joint = art
        b = get_joint_body_relationship(art, 0) or get_joint_body_relationship(art, 1)
        root_link = stage.GetPrimAtPath(b) if b is not None else Usd.Prim()
        if not _valid(root_link):
            return ArticulationGraph(None, root_joint, sub_robots=subs)

    adjacency: dict[str, list[tuple[Usd.Prim, int]]] = {}
    root_path = str(root_link.GetPath())
    for j in joints_all:
        for i in (0, 1):
            b = get_joint_body_relationship(j, i)
            if b is None or not _valid(stage.GetPrimAtPath(b)):
                continue
            adjacency.setdefault(str(b), []).append((j, i))
            if root_joint is None and str(b) == root_path:
                root_joint = j

    # root resolution
    use_override = _valid(root_link_override) and (
        str(root_link_override.GetPath()) in adjacency or _is_rigid(root_link_override)
    )
    if use_override:
        root_link = root_link_override
    elif not _is_rigid(root_link):
        scores = dict.fromkeys(adjacency, 0)
        for j in joints_all:
            b0 = get_joint_body_relationship(j, 0)
            b1 = get_joint_body_relationship(j, 1)
            if b0 is not None and str(b0) in scores:
                scores[str(b0)] += 1
            if b1 is not None and str(b1) in scores:
                scores[str(b1)] -= 1
        best = None
        best_key = None
        for order, (path, score) in enumerate(scores.items()):
            if owner(path) is not None or not _under(path, robot_path):
                continue
            prim = stage.GetPrimAtPath(path)
            if not _is_rigid(prim):
                continue
            key = (-score, path.count("/"), order)
            if best_key is None or key < best_key:
                best, best_key = prim, key
        if best is not None:
            root_link = best

    graph = ArticulationGraph(root_link, root_joint, sub_robots=subs)
    seen_joints: set[str] = set()
    if root_joint is not None:
        graph.joints.append(root_joint)
        seen_joints.add(str(root_joint.GetPath()))
    met_subs: set[str] = set()
    visited: set[str] = set()
    frontier = [root_link]
    while frontier:
        prim = frontier.pop() if mode == "dfs" else frontier.pop(0)
        if not _valid(prim):
            continue
        path = str(prim.GetPath())
        if path in visited:
            continue
        visited.add(path)
        if _is_rigid(prim):
            graph.links.append(prim)
            # sites applied earlier stay listed; new candidates only when detecting
            sites = detect_sites_for_link(prim, include_existing=True, include_new=detect_sites)
            if sites:
                graph.sites_by_link[path] = sites
        neighbours = []
        for j, i in adjacency.get(path, []):
            jp = str(j.GetPath())
            if jp not in seen_joints:
                seen_joints.add(jp)
                graph.joints.append(j)
            other = get_joint_body_relationship(j, 1 - i)
            if other is None:
                continue
            sub = owner(str(other))
            if sub is not None:
                if sub not in met_subs:
                    met_subs.add(sub)
                    visited.add(sub)
                    sub_prim = stage.GetPrimAtPath(sub)
                    graph.links.append(sub_prim)
                    graph.joints.append(sub_prim)
                continue
            if str(other) not in visited and _under(str(other), robot_path):
                op = stage.GetPrimAtPath(other)
                if _valid(op):
                    neighbours.append(op)
        if mode == "dfs":
            frontier.extend(reversed(neighbours))
        else:
            frontier.extend(neighbours)
    top_subs = [s for s in subs if not any(s != o and _under(s, o) for o in subs)]
    for sub in sorted(set(top_subs) - met_subs):
        sub_prim = stage.GetPrimAtPath(sub)
        graph.links.append(sub_prim)
        graph.joints.append(sub_prim)
    return graph
