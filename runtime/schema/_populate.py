"""Populate / recalculate the robot lists from the articulation, and add sites.

See docs/guides/inspect-and-schema.md#populate, docs/guides/inspect-and-schema.md#sites.

Part of :mod:`runtime.schema.populate` (the public import path).
"""

from __future__ import annotations

from pxr import Sdf, Usd

from runtime.schema._articulation import (
    ArticulationGraph,
    _check_traversal,
    detect_sites_for_link,
    discover_articulation_graph,
)
from runtime.schema._prims import (
    JOINT_API,
    LINK_API,
    ROBOT_API,
    SITE_API,
    _is_joint,
    _is_rigid,
    _valid,
    is_site,
)
from runtime.schema._relationships import (
    ROBOT_JOINTS,
    ROBOT_LINKS,
    _check_inputs,
    _compose_list_ops,
    _get_or_create_rel,
    _rel_specs,
    _write_prepend,
)


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
