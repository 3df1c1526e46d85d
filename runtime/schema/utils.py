"""Read-only queries on the Isaac Robot Schema: joints, links, components, tree, poses.

Snake_case implementations of the reference ``robot_schema.utils`` queries
(docs/guides/inspect-and-schema.md#link-tree) with the reference bugs of §9 fixed:

* a robot prim that is itself a link still has its ``robotLinks`` order honoured (§4.4);
* ``get_joint_pose`` composes the body1 frame in the right order (§4.8);
* ``generate_robot_link_tree`` never duplicates a link: loop-closing joints are skipped
  deterministically, logged and listed in ``root.loop_joints`` (§4.10);
* ``get_links_from_joint`` includes the siblings of the after-joint link (§4.12);
* prims carrying the deprecated ``IsaacReferencePointAPI`` count as sites (with a
  deprecation warning); the API is registered, so ``HasAPI`` sees it on old assets (§2.7).

This module is the public import path; the code lives in private modules by topic:
``_prims`` (predicates, lookups, warn-once cache), ``_membership`` (links, joints,
components, parent map, joint pose), ``_link_tree`` and ``_named_pose_queries``.
``UsdPhysics`` is exposed as in the reference module.
"""

from __future__ import annotations

from pxr import UsdPhysics

from runtime.schema._link_tree import (
    RobotLinkNode,
    find_loop_joints,
    format_robot_tree,
    generate_robot_link_tree,
    get_links_from_joint,
    print_robot_tree,
)
from runtime.schema._membership import (
    get_all_robot_components,
    get_all_robot_joints,
    get_all_robot_links,
    get_joint_pose,
    get_robot_link_parent_map,
)
from runtime.schema._named_pose_queries import (
    get_all_named_poses,
    get_named_pose_end_link,
    get_named_pose_joint_fixed,
    get_named_pose_joint_values,
    get_named_pose_joints,
    get_named_pose_start_link,
    get_named_pose_valid,
)
from runtime.schema._prims import (
    clear_warning_cache,
    find_articulation_root,
    find_robot_prims,
    get_joint_body_relationship,
    get_sub_robots,
    has_deprecated_reference_point,
    is_site,
)

__all__ = [
    "RobotLinkNode",
    "UsdPhysics",
    "clear_warning_cache",
    "find_articulation_root",
    "find_loop_joints",
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
