"""Populate / recalculate the Isaac Robot Schema from the physics articulation.

See docs/guides/inspect-and-schema.md#populate. The articulation walk
(:func:`discover_articulation_graph`) is pure (it authors nothing) so the DOF table can reuse it on
assets without a robot schema; :func:`populate_robot_schema_from_articulation` and
:func:`recalculate_robot_schema` apply the APIs and write the relationships into the
current edit target.

This module is the public import path; the code lives in private modules by topic:
``_articulation`` (the walk), ``_populate`` (populate, recalculate, sites) and
``_relationships`` (prepend lists, validation, robot-layer save).
"""

from __future__ import annotations

from runtime.schema._articulation import (
    ArticulationGraph,
    detect_sites_for_link,
    discover_articulation_graph,
)
from runtime.schema._populate import (
    add_sites_to_robot_links,
    detect_and_apply_sites,
    populate_robot_schema_from_articulation,
    recalculate_robot_schema,
)
from runtime.schema._relationships import (
    ensure_prepend_list_for_robot_relationships,
    rebuild_relationship_as_prepend,
    save_robot_schema_to_robot_layer,
    validate_robot_schema_relationships,
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
