"""Populate / recalculate the Isaac Robot Schema from the physics articulation.

Spec ``robot-schema.md`` §5. The articulation walk (:func:`discover_articulation_graph`)
is pure (it authors nothing) so the DOF table can reuse it on assets without a robot
schema; :func:`populate_robot_schema_from_articulation` and
:func:`recalculate_robot_schema` apply the APIs and write the relationships into the
current edit target.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pxr import Sdf, Usd, UsdGeom, UsdPhysics

from runtime.schema.tokens import Classes, Relations
from runtime.schema.utils import (
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

__all__ = [
    "ArticulationGraph",
    "add_sites_to_robot_links",
    "detect_and_apply_sites",
    "detect_sites_for_link",
    "discover_articulation_graph",
    "ensure_prepend_list_for_robot_relationships",
    "populate_robot_schema_from_articulation",
    "rebuild_relationship_as_prepend",
    "recalculate_robot_schema",
    "save_robot_schema_to_robot_layer",
    "validate_robot_schema_relationships",
]

_LOG = logging.getLogger("runtime.schema.populate")

ROBOT_API = Classes.ROBOT_API.value
LINK_API = Classes.LINK_API.value
JOINT_API = Classes.JOINT_API.value
SITE_API = Classes.SITE_API.value
ROBOT_LINKS = Relations.ROBOT_LINKS.name
ROBOT_JOINTS = Relations.ROBOT_JOINTS.name


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


# --------------------------------------------------------------------------------------
# relationship authoring (§5.4)
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# populate / recalculate (§5.2, §5.3)
# --------------------------------------------------------------------------------------


def _check_inputs(stage: Usd.Stage | None, robot_prim: Usd.Prim | None) -> None:
    if stage is None:
        raise ValueError("Stage is invalid.")
    if not robot_prim or not robot_prim.IsValid():
        raise ValueError("Robot prim is invalid.")


def _apply(prim: Usd.Prim, api: str) -> None:
    if not prim.HasAPI(api):
        prim.AddAppliedSchema(api)


def _fallback_sweeps(
    robot_prim: Usd.Prim, links: list[Usd.Prim], joints: list[Usd.Prim]
) -> tuple[list[Usd.Prim], list[Usd.Prim]]:
    links = list(links)
    joints = list(joints)
    if not joints:
        for p in Usd.PrimRange(robot_prim):
            if _is_joint(p):
                _apply(p, JOINT_API)
                if p.HasAPI(JOINT_API):
                    joints.append(p)
    if not links or not joints:
        have = {str(p.GetPath()) for p in links}
        for p in Usd.PrimRange(robot_prim):
            if _is_rigid(p) and str(p.GetPath()) not in have:
                _apply(p, LINK_API)
                have.add(str(p.GetPath()))
                links.append(p)
    return links, joints


def _apply_graph(graph: ArticulationGraph) -> None:
    for p in graph.links:
        if str(p.GetPath()) not in graph.sub_robots:
            _apply(p, LINK_API)
    for p in graph.joints:
        if str(p.GetPath()) not in graph.sub_robots:
            _apply(p, JOINT_API)
    for sites in graph.sites_by_link.values():
        for site in sites:
            if not is_site(site, warn=False):
                _apply(site, SITE_API)


def _keep_link(p: Usd.Prim) -> bool:
    return p.HasAPI(LINK_API) or is_site(p) or p.HasAPI(ROBOT_API)


def _keep_joint(p: Usd.Prim) -> bool:
    return p.HasAPI(JOINT_API) or p.HasAPI(ROBOT_API)


def populate_robot_schema_from_articulation(
    stage: Usd.Stage,
    robot_prim: Usd.Prim,
    articulation_prim: Usd.Prim | None = None,
    *,
    detect_sites: bool = False,
    sites_last: bool = False,
    traversal: str = "dfs",
) -> tuple[Usd.Prim | None, Usd.Prim | None]:
    """Walk the articulation, apply link/joint/site APIs and rewrite both relationships.

    Sites already applied (by an earlier run or by hand) stay listed after their link, also
    when ``detect_sites`` is False (the reference dropped them).
    Nested robots are single entries; everything is written into the edit target as
    prepend lists.

    Args:
        stage: the stage.
        robot_prim: the robot prim (``IsaacRobotAPI`` is not applied here).
        articulation_prim: where to look for the articulation root (robot prim if None).
        detect_sites: detect childless Xforms under links as sites.
        sites_last: all sites after all links (else each after its link).
        traversal: "dfs" or "bfs".

    Returns:
        ``(root_link, root_joint)``; the root link may be the robot prim itself (rigid-body
        only assets), the root joint may be None.

    Raises:
        ValueError: invalid stage, robot prim or traversal.
    """
    _check_inputs(stage, robot_prim)
    _check_traversal(traversal)
    graph = discover_articulation_graph(
        stage, robot_prim, articulation_prim, detect_sites=detect_sites, traversal=traversal
    )
    _apply_graph(graph)
    links, joints = _fallback_sweeps(robot_prim, graph.links, graph.joints)
    link_targets: list[Usd.Prim] = []
    if sites_last:
        link_targets = list(links)
        for link in links:
            link_targets.extend(graph.sites_by_link.get(str(link.GetPath()), []))
    else:
        for link in links:
            link_targets.append(link)
            link_targets.extend(graph.sites_by_link.get(str(link.GetPath()), []))
    link_paths = [p.GetPath() for p in link_targets if _keep_link(p)]
    joint_paths = [p.GetPath() for p in joints if _keep_joint(p)]
    _write_prepend(_get_or_create_rel(robot_prim, ROBOT_LINKS), link_paths)
    _write_prepend(_get_or_create_rel(robot_prim, ROBOT_JOINTS), joint_paths)
    return graph.root_link, graph.root_joint


def _suppress_weaker_layers(stage: Usd.Stage, robot_prim: Usd.Prim) -> None:
    edit_layer = stage.GetEditTarget().GetLayer()
    for name in (ROBOT_LINKS, ROBOT_JOINTS):
        rel = robot_prim.GetRelationship(name)
        if not rel:
            continue
        specs = _rel_specs(rel)
        own = [s for s in specs if s.layer == edit_layer]
        others = [s for s in specs if s.layer != edit_layer]
        composed = _compose_list_ops([s.targetPathList for s in reversed(others)])
        if not own:
            continue
        spec = own[0]
        mine = set(spec.targetPathList.prependedItems)
        extra = [t for t in composed if t not in mine]
        if extra:
            deleted = list(spec.targetPathList.deletedItems)
            spec.targetPathList.deletedItems = deleted + [t for t in extra if t not in deleted]


def recalculate_robot_schema(
    stage: Usd.Stage,
    robot_prim: Usd.Prim,
    articulation_prim: Usd.Prim | None = None,
    *,
    detect_sites: bool = False,
    sites_last: bool = False,
    force_update: bool = False,
    traversal: str = "dfs",
) -> tuple[Usd.Prim | None, Usd.Prim | None]:
    """Update the robot lists, keeping the user's order of still-valid targets.

    Existing valid targets keep their order, new links then new sites are appended, stale
    targets (missing prims, links no longer reachable) are dropped. With ``force_update``
    the lists are rebuilt from scratch and weaker layers' targets are deleted in the edit
    layer.

    Args:
        stage: the stage.
        robot_prim: the robot prim.
        articulation_prim: where to look for the articulation root.
        detect_sites: detect and apply new sites.
        sites_last: only used with ``force_update`` (new sites always go last otherwise).
        force_update: rebuild from the auto-detected root.
        traversal: "dfs" or "bfs".

    Returns:
        ``(root_link, root_joint)``.

    Raises:
        ValueError: invalid stage, robot prim or traversal.
    """
    _check_inputs(stage, robot_prim)
    _check_traversal(traversal)
    if force_update:
        result = populate_robot_schema_from_articulation(
            stage,
            robot_prim,
            articulation_prim,
            detect_sites=detect_sites,
            sites_last=sites_last,
            traversal=traversal,
        )
        _suppress_weaker_layers(stage, robot_prim)
        return result
    links_rel = robot_prim.GetRelationship(ROBOT_LINKS)
    joints_rel = robot_prim.GetRelationship(ROBOT_JOINTS)
    old_links = list(links_rel.GetTargets()) if links_rel else []
    old_joints = list(joints_rel.GetTargets()) if joints_rel else []
    override = None
    if old_links:
        p = stage.GetPrimAtPath(old_links[0])
        if _valid(p):
            override = p
    graph = discover_articulation_graph(
        stage,
        robot_prim,
        articulation_prim,
        detect_sites=detect_sites,
        root_link_override=override,
        traversal=traversal,
    )
    _apply_graph(graph)
    links, joints = _fallback_sweeps(robot_prim, graph.links, graph.joints)
    sites = [s for link in links for s in graph.sites_by_link.get(str(link.GetPath()), [])]
    valid: set[str] = {str(p.GetPath()) for p in links}
    valid |= {str(p.GetPath()) for p in sites}
    valid |= set(graph.sub_robots)
    valid |= {str(p.GetPath()) for p in Usd.PrimRange(robot_prim) if is_site(p, warn=False)}
    final_links: list[Sdf.Path] = [t for t in old_links if str(t) in valid]
    have = {str(t) for t in final_links}
    for p in list(links) + sites:
        if str(p.GetPath()) not in have and _keep_link(p):
            have.add(str(p.GetPath()))
            final_links.append(p.GetPath())
    discovered_joints = {str(p.GetPath()) for p in joints}
    final_joints: list[Sdf.Path] = []
    root_joint = graph.root_joint
    if root_joint is not None and root_joint.GetPath() not in old_joints:
        final_joints.append(root_joint.GetPath())
    final_joints.extend(t for t in old_joints if str(t) in discovered_joints)
    have_j = {str(t) for t in final_joints}
    for p in joints:
        if str(p.GetPath()) not in have_j and _keep_joint(p):
            have_j.add(str(p.GetPath()))
            final_joints.append(p.GetPath())
    _write_prepend(_get_or_create_rel(robot_prim, ROBOT_LINKS), final_links)
    _write_prepend(_get_or_create_rel(robot_prim, ROBOT_JOINTS), final_joints)
    return graph.root_link, graph.root_joint


# --------------------------------------------------------------------------------------
# sites (§5.5, §5.6)
# --------------------------------------------------------------------------------------


def detect_and_apply_sites(
    stage: Usd.Stage, robot_prim: Usd.Prim, *, sites_last: bool = False
) -> tuple[list[Usd.Prim], dict[str, list[Usd.Prim]]]:
    """Apply ``IsaacSiteAPI`` to new site candidates under every ``IsaacLinkAPI`` prim.

    Args:
        stage: the stage.
        robot_prim: the robot prim.
        sites_last: ignored (kept for signature compatibility).

    Returns:
        ``(all_sites, sites_by_parent)``: the newly applied sites in order, and link path →
        its new sites.
    """
    del sites_last
    if stage is None or not _valid(robot_prim):
        return [], {}
    all_sites: list[Usd.Prim] = []
    by_parent: dict[str, list[Usd.Prim]] = {}
    for p in Usd.PrimRange(robot_prim):
        if not p.HasAPI(LINK_API):
            continue
        found = detect_sites_for_link(p)
        for site in found:
            _apply(site, SITE_API)
        if found:
            by_parent[str(p.GetPath())] = found
            all_sites.extend(found)
    return all_sites, by_parent


def add_sites_to_robot_links(
    robot_prim: Usd.Prim,
    sites: list[Usd.Prim] | None = None,
    sites_by_parent: dict[str, list[Usd.Prim]] | None = None,
    *,
    sites_last: bool = False,
) -> None:
    """Add sites to ``robotLinks``: at the end, or each directly after its parent link.

    Args:
        robot_prim: prim with ``IsaacRobotAPI`` (others: no-op).
        sites: site prims (used when ``sites_last``).
        sites_by_parent: link path → site prims (used when not ``sites_last``).
        sites_last: append all at the end.
    """
    if not _valid(robot_prim) or not robot_prim.HasAPI(ROBOT_API):
        return
    rel = _get_or_create_rel(robot_prim, ROBOT_LINKS)
    current = list(rel.GetTargets())
    if sites_last:
        out = list(current)
        have = {str(t) for t in out}
        for s in sites or []:
            if _valid(s) and is_site(s, warn=False) and str(s.GetPath()) not in have:
                have.add(str(s.GetPath()))
                out.append(s.GetPath())
    else:
        out = []
        by_parent = sites_by_parent or {}
        for t in current:
            out.append(t)
            for s in by_parent.get(str(t), []):
                if _valid(s) and is_site(s, warn=False):
                    out.append(s.GetPath())
    _write_prepend(rel, out)


# --------------------------------------------------------------------------------------
# validation and robot-layer save (§5.4, §5.8)
# --------------------------------------------------------------------------------------


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
