"""USD boundary: the Isaac Robot and Sensor schemas, registered with usd-core on import.

Importing this package registers the codeless schemas so that ``prim.HasAPI("IsaacRobotAPI")``,
``prim.IsA("IsaacNamedPose")``, fallbacks and allowed tokens work in plain usd-core. It must be
imported before the first ``Usd.Stage`` of the process is created.
"""

from runtime.schema._register import register_plugin_dir, register_schemas

register_schemas()

from runtime.errors import RegistrationError, SchemaError  # noqa: E402
from runtime.schema._stage import USD_SUFFIXES, open_stage, tf_error_line  # noqa: E402
from runtime.schema.tokens import (  # noqa: E402
    Attributes,
    Classes,
    DofOffsetOpOrder,
    Relations,
    SensorTypes,
)

__all__ = [
    "Attributes",
    "Classes",
    "DofOffsetOpOrder",
    "RegistrationError",
    "Relations",
    "SchemaError",
    "SensorTypes",
    "USD_SUFFIXES",
    "open_stage",
    "register_plugin_dir",
    "register_schemas",
    "tf_error_line",
]

# Robot-schema utilities: authoring, queries, populate/recalculate, migration, DOF table.
from runtime.schema.authoring import (  # noqa: E402
    apply_attachment_point_api,
    apply_joint_api,
    apply_link_api,
    apply_reference_point_api,
    apply_robot_api,
    apply_site_api,
    create_named_pose,
    create_surface_gripper,
    get_allowed_tokens,
)
from runtime.schema.dof import DofEntry, DofTable, build_dof_table  # noqa: E402
from runtime.schema.migration import (  # noqa: E402
    update_deprecated_joint_dof_order,
    update_deprecated_schemas,
)
from runtime.schema.populate import (  # noqa: E402
    add_sites_to_robot_links,
    detect_and_apply_sites,
    ensure_prepend_list_for_robot_relationships,
    populate_robot_schema_from_articulation,
    rebuild_relationship_as_prepend,
    recalculate_robot_schema,
    save_robot_schema_to_robot_layer,
    validate_robot_schema_relationships,
)
from runtime.schema.utils import (  # noqa: E402
    RobotLinkNode,
    find_robot_prims,
    format_robot_tree,
    generate_robot_link_tree,
    get_all_named_poses,
    get_all_robot_components,
    get_all_robot_joints,
    get_all_robot_links,
    get_joint_body_relationship,
    get_joint_pose,
    get_links_from_joint,
    get_named_pose_end_link,
    get_named_pose_joint_fixed,
    get_named_pose_joint_values,
    get_named_pose_joints,
    get_named_pose_start_link,
    get_named_pose_valid,
    get_robot_link_parent_map,
    print_robot_tree,
)

__all__ += [
    "DofEntry",
    "DofTable",
    "RobotLinkNode",
    "add_sites_to_robot_links",
    "apply_attachment_point_api",
    "apply_joint_api",
    "apply_link_api",
    "apply_reference_point_api",
    "apply_robot_api",
    "apply_site_api",
    "build_dof_table",
    "create_named_pose",
    "create_surface_gripper",
    "detect_and_apply_sites",
    "ensure_prepend_list_for_robot_relationships",
    "find_robot_prims",
    "format_robot_tree",
    "generate_robot_link_tree",
    "get_all_named_poses",
    "get_all_robot_components",
    "get_all_robot_joints",
    "get_all_robot_links",
    "get_allowed_tokens",
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
    "populate_robot_schema_from_articulation",
    "print_robot_tree",
    "rebuild_relationship_as_prepend",
    "recalculate_robot_schema",
    "save_robot_schema_to_robot_layer",
    "update_deprecated_joint_dof_order",
    "update_deprecated_schemas",
    "validate_robot_schema_relationships",
]
