"""Isaac Sim names over simrt's API, so Isaac scripts port by changing the import.

Replace ``from usd.schema.isaac import robot_schema`` with
``from runtime.compat import isaac as robot_schema``; ``robot_schema.utils.X`` also works
(``utils`` is this module). Behaviour follows simrt's fixed versions of the reference
functions (see ``runtime.schema.utils`` / ``populate`` / ``migration``).

Shared file: each area appends its names in its own section (additive edits only).
"""

from __future__ import annotations

import sys

from pxr import Usd, UsdPhysics  # noqa: F401  (the reference utils module exposes UsdPhysics)

import runtime.schema  # noqa: F401  (registers the schemas before any stage exists)

# ---------------------------------------------------------------- robot schema (schema area)
from runtime.schema import authoring as _au
from runtime.schema import migration as _mig
from runtime.schema import populate as _pop
from runtime.schema import utils as _ut
from runtime.schema.dof import build_dof_table
from runtime.schema.tokens import Attributes, Classes, DofOffsetOpOrder, Relations

utils = sys.modules[__name__]
"""``robot_schema.utils.GenerateRobotLinkTree(...)`` style access."""

get_allowed_tokens = _au.get_allowed_tokens
RobotLinkNode = _ut.RobotLinkNode


def ApplyRobotAPI(prim: Usd.Prim) -> None:  # noqa: N802
    """Apply ``IsaacRobotAPI`` and populate links/joints (DFS, no sites)."""
    _au.apply_robot_api(prim)


def ApplyLinkAPI(prim: Usd.Prim) -> None:  # noqa: N802
    """Apply ``IsaacLinkAPI``."""
    _au.apply_link_api(prim)


def ApplyJointAPI(prim: Usd.Prim) -> None:  # noqa: N802
    """Apply ``IsaacJointAPI``."""
    _au.apply_joint_api(prim)


def ApplySiteAPI(prim: Usd.Prim) -> None:  # noqa: N802
    """Apply ``IsaacSiteAPI``."""
    _au.apply_site_api(prim)


def ApplyReferencePointAPI(prim: Usd.Prim) -> None:  # noqa: N802
    """Deprecated: applies ``IsaacSiteAPI`` with a warning."""
    _au.apply_reference_point_api(prim)


def ApplyAttachmentPointAPI(prim: Usd.Prim) -> None:  # noqa: N802
    """Apply ``IsaacAttachmentPointAPI``."""
    _au.apply_attachment_point_api(prim)


def CreateSurfaceGripper(stage, prim_path):  # noqa: N802
    """Define an ``IsaacSurfaceGripper`` prim."""
    return _au.create_surface_gripper(stage, prim_path)


def CreateNamedPose(stage, prim_path):  # noqa: N802
    """Define an ``IsaacNamedPose`` prim."""
    return _au.create_named_pose(stage, prim_path)


def GetJointBodyRelationship(joint_prim, bodyIndex):  # noqa: N802, N803
    """First target of ``physics:body<bodyIndex>`` or None."""
    return _ut.get_joint_body_relationship(joint_prim, bodyIndex)


def GetAllRobotJoints(stage, robot_link_prim, parse_nested_robots=True):  # noqa: N802
    """All joints of a robot."""
    return _ut.get_all_robot_joints(stage, robot_link_prim, parse_nested_robots)


def GetAllRobotLinks(stage, robot_link_prim, include_reference_points=False):  # noqa: N802
    """All links of a robot."""
    return _ut.get_all_robot_links(stage, robot_link_prim, include_reference_points)


def GetAllRobotComponents(stage, robot_prim):  # noqa: N802
    """Prims under the robot carrying any Robot Schema API."""
    return _ut.get_all_robot_components(stage, robot_prim)


def GetRobotLinkParentMap(stage, robot_prim):  # noqa: N802
    """Child link path → parent link path (C++ utility)."""
    return _ut.get_robot_link_parent_map(stage, robot_prim)


def GetJointPose(robot_prim, joint_prim):  # noqa: N802
    """Joint frame in the robot frame (``Gf.Matrix4d``) or None."""
    return _ut.get_joint_pose(robot_prim, joint_prim)


def GenerateRobotLinkTree(stage, robot_link_prim):  # noqa: N802
    """Link tree of a robot (root ``RobotLinkNode``) or None."""
    return _ut.generate_robot_link_tree(stage, robot_link_prim)


def PrintRobotTree(root, indent=0):  # noqa: N802
    """Print the tree to stdout, two spaces per level."""
    _ut.print_robot_tree(root, indent)


def GetLinksFromJoint(root, joint_prim):  # noqa: N802
    """(links before, links after) a joint in a link tree."""
    return _ut.get_links_from_joint(root, joint_prim)


def GetAllNamedPoses(stage, robot_prim):  # noqa: N802
    """Named-pose prims of a robot."""
    return _ut.get_all_named_poses(stage, robot_prim)


def GetNamedPoseStartLink(named_pose_prim):  # noqa: N802
    """Start link path of a named pose or None."""
    return _ut.get_named_pose_start_link(named_pose_prim)


def GetNamedPoseEndLink(named_pose_prim):  # noqa: N802
    """End link path of a named pose or None."""
    return _ut.get_named_pose_end_link(named_pose_prim)


def GetNamedPoseJoints(named_pose_prim):  # noqa: N802
    """Joint paths of a named pose."""
    return _ut.get_named_pose_joints(named_pose_prim)


def GetNamedPoseJointValues(named_pose_prim):  # noqa: N802
    """Joint values of a named pose (native units) or None."""
    return _ut.get_named_pose_joint_values(named_pose_prim)


def GetNamedPoseJointFixed(named_pose_prim):  # noqa: N802
    """Per-joint fixed flags of a named pose or None."""
    return _ut.get_named_pose_joint_fixed(named_pose_prim)


def GetNamedPoseValid(named_pose_prim):  # noqa: N802
    """Validity flag of a named pose or None."""
    return _ut.get_named_pose_valid(named_pose_prim)


def PopulateRobotSchemaFromArticulation(  # noqa: N802
    stage,
    robot_prim,
    articulation_prim=None,
    *,
    detect_sites=False,
    sites_last=False,
    traversal="dfs",
):
    """Populate links/joints from the articulation; returns (root_link, root_joint)."""
    return _pop.populate_robot_schema_from_articulation(
        stage,
        robot_prim,
        articulation_prim,
        detect_sites=detect_sites,
        sites_last=sites_last,
        traversal=traversal,
    )


def RecalculateRobotSchema(  # noqa: N802
    stage,
    robot_prim,
    articulation_prim=None,
    *,
    detect_sites=False,
    sites_last=False,
    force_update=False,
    traversal="dfs",
):
    """Update links/joints keeping the user's order; returns (root_link, root_joint)."""
    return _pop.recalculate_robot_schema(
        stage,
        robot_prim,
        articulation_prim,
        detect_sites=detect_sites,
        sites_last=sites_last,
        force_update=force_update,
        traversal=traversal,
    )


def DetectAndApplySites(stage, robot_prim, *, sites_last=False):  # noqa: N802
    """Apply ``IsaacSiteAPI`` to new sites; returns (all_sites, sites_by_parent)."""
    return _pop.detect_and_apply_sites(stage, robot_prim, sites_last=sites_last)


def AddSitesToRobotLinks(  # noqa: N802
    robot_prim, sites=None, sites_by_parent=None, *, sites_last=False
):
    """Add sites to ``robotLinks``."""
    _pop.add_sites_to_robot_links(robot_prim, sites, sites_by_parent, sites_last=sites_last)


def ValidateRobotSchemaRelationships(robot_prim):  # noqa: N802
    """(valid_links, invalid_links, valid_joints, invalid_joints)."""
    return _pop.validate_robot_schema_relationships(robot_prim)


def RebuildRelationshipAsPrepend(prim, rel_name, targets):  # noqa: N802
    """Author a relationship as a prepend list (order kept)."""
    _pop.rebuild_relationship_as_prepend(prim, rel_name, targets)


def EnsurePrependListForRobotRelationships(robot_prim):  # noqa: N802
    """Rewrite ``robotLinks``/``robotJoints`` as prepend lists."""
    _pop.ensure_prepend_list_for_robot_relationships(robot_prim)


def SaveRobotSchemaToRobotLayer(stage, robot_prim, *, save=True):  # noqa: N802
    """Write the robot lists into the layer that applies ``IsaacRobotAPI``."""
    return _pop.save_robot_schema_to_robot_layer(stage, robot_prim, save=save)


def UpdateDeprecatedJointDofOrder(joint_prim):  # noqa: N802
    """Migrate legacy per-axis DOF offsets; True when legacy data was found."""
    return _mig.update_deprecated_joint_dof_order(joint_prim)


def UpdateDeprecatedSchemas(robot_prim):  # noqa: N802
    """Migrate deprecated schema data under a robot."""
    _mig.update_deprecated_schemas(robot_prim)


def BuildDofTable(stage, robot_prim=None):  # noqa: N802
    """Build the simrt DOF table (no Isaac equivalent; the flattened DOF order)."""
    return build_dof_table(stage, robot_prim)


__all__ = [
    "AddSitesToRobotLinks",
    "ApplyAttachmentPointAPI",
    "ApplyJointAPI",
    "ApplyLinkAPI",
    "ApplyReferencePointAPI",
    "ApplyRobotAPI",
    "ApplySiteAPI",
    "Attributes",
    "BuildDofTable",
    "Classes",
    "CreateNamedPose",
    "CreateSurfaceGripper",
    "DetectAndApplySites",
    "DofOffsetOpOrder",
    "EnsurePrependListForRobotRelationships",
    "GenerateRobotLinkTree",
    "GetAllNamedPoses",
    "GetAllRobotComponents",
    "GetAllRobotJoints",
    "GetAllRobotLinks",
    "GetJointBodyRelationship",
    "GetJointPose",
    "GetLinksFromJoint",
    "GetNamedPoseEndLink",
    "GetNamedPoseJointFixed",
    "GetNamedPoseJointValues",
    "GetNamedPoseJoints",
    "GetNamedPoseStartLink",
    "GetNamedPoseValid",
    "GetRobotLinkParentMap",
    "PopulateRobotSchemaFromArticulation",
    "PrintRobotTree",
    "RebuildRelationshipAsPrepend",
    "RecalculateRobotSchema",
    "Relations",
    "RobotLinkNode",
    "SaveRobotSchemaToRobotLayer",
    "UpdateDeprecatedJointDofOrder",
    "UpdateDeprecatedSchemas",
    "UsdPhysics",
    "ValidateRobotSchemaRelationships",
    "get_allowed_tokens",
    "utils",
]
# ------------------------------- other areas append below (extend with `__all__ += [...]`)

# ---------------------------------------------------- kinematics / poser (kinematics area)
from runtime.kinematics.chain import Joint, KinematicChain  # noqa: E402
from runtime.kinematics.ik import (  # noqa: E402
    IKSolver,
    IKSolverLM,
    IKSolverRegistry,
    ik_lm,
)
from runtime.kinematics.math import (  # noqa: E402
    Transform,
    adjoint,
    pose_error,
    quat_conjugate,
    quat_from_axis_angle,
    quat_multiply,
    quat_rotate,
    quat_to_matrix,
    skew,
)
from runtime.kinematics.named_poses import (  # noqa: E402
    NAMED_POSES_SCOPE,
    apply_pose_by_name,
    delete_named_pose,
    export_poses,
    get_named_pose,
    import_poses,
    list_named_poses,
    store_named_pose,
)
from runtime.kinematics.poser import (  # noqa: E402
    PoseResult,
    RobotPoser,
    apply_joint_state,
    apply_joint_state_anchored,
    validate_robot_schema,
)

__all__ += [
    "IKSolver",
    "IKSolverLM",
    "IKSolverRegistry",
    "Joint",
    "KinematicChain",
    "NAMED_POSES_SCOPE",
    "PoseResult",
    "RobotPoser",
    "Transform",
    "adjoint",
    "apply_joint_state",
    "apply_joint_state_anchored",
    "apply_pose_by_name",
    "delete_named_pose",
    "export_poses",
    "get_named_pose",
    "ik_lm",
    "import_poses",
    "list_named_poses",
    "pose_error",
    "quat_conjugate",
    "quat_from_axis_angle",
    "quat_multiply",
    "quat_rotate",
    "quat_to_matrix",
    "skew",
    "store_named_pose",
    "validate_robot_schema",
]

# ---------------------------------------------------------------- physics cfgs (physics area)
# Isaac Lab 3.0 names: the cfg classes keep their Isaac Lab names in ``runtime.physics``;
# ``schemas`` stands for ``isaaclab.sim.schemas`` (writers take the stage explicitly:
# ``schemas.modify_rigid_body_properties(prim_path, cfg, stage)``).
from runtime.physics import writers as schemas  # noqa: E402
from runtime.physics.cfg import (  # noqa: E402
    ArticulationRootBaseCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    RigidBodyBaseCfg,
    RigidBodyMaterialBaseCfg,
)
from runtime.physics.newton import (  # noqa: E402
    MujocoJointDrivePropertiesCfg,
    MujocoRigidBodyPropertiesCfg,
)

__all__ += [
    "ArticulationRootBaseCfg",
    "CollisionBaseCfg",
    "JointDriveBaseCfg",
    "MassPropertiesCfg",
    "MeshCollisionBaseCfg",
    "MujocoJointDrivePropertiesCfg",
    "MujocoRigidBodyPropertiesCfg",
    "RigidBodyBaseCfg",
    "RigidBodyMaterialBaseCfg",
    "schemas",
]

# ---------------------------------------------------------------- sensors (engine/run area)
# Isaac Sim's sensor Python layer (sensor spec §7): wrappers read the running simulation of the
# current stage's SimulationContext (below), or the ``runtime=`` SensorRuntime they are given.
from runtime.compat.isaac_sensors import (  # noqa: E402
    ContactSensor,
    EffortSensor,
    IMUSensor,
    ImuSensorReading,
    JointStateSensor,
    RaycastSensor,
)

__all__ += [
    "ContactSensor",
    "EffortSensor",
    "IMUSensor",
    "ImuSensorReading",
    "JointStateSensor",
    "RaycastSensor",
]

# ------------------------------------------------- seed import paths (compat area, issue 17)
# Isaac's submodule paths: ``robot_schema.math`` / ``.kinematic_chain`` / ``.ik_solver`` /
# ``.lm_ik`` and ``isaacsim.robot.poser`` (as ``poser``), each importable with
# ``from runtime.compat.isaac.<name> import ...`` (see ``runtime.compat._submodules``).
from runtime.compat import _isaac_math as math  # noqa: E402
from runtime.compat._isaac_math import (  # noqa: E402
    _prim_pose_in_robot_frame,
    axis_angle_to_quat,
    prim_pose_in_robot_frame,
    quat_conj,
    quat_mul,
)
from runtime.compat._submodules import register_submodule as _register_submodule  # noqa: E402

_register_submodule(__name__, "math", math)
_register_submodule(__name__, "utils", utils)
kinematic_chain = _register_submodule(
    __name__, "kinematic_chain", KinematicChain=KinematicChain, Joint=Joint, Transform=Transform
)
ik_solver = _register_submodule(
    __name__,
    "ik_solver",
    IKSolver=IKSolver,
    IKSolverRegistry=IKSolverRegistry,
    pose_error=pose_error,
)
lm_ik = _register_submodule(__name__, "lm_ik", IKSolverLM=IKSolverLM, ik_lm=ik_lm)
poser = _register_submodule(
    __name__,
    "poser",
    IKSolver=IKSolver,
    IKSolverRegistry=IKSolverRegistry,
    PoseResult=PoseResult,
    RobotPoser=RobotPoser,
    Transform=Transform,
    apply_joint_state=apply_joint_state,
    apply_joint_state_anchored=apply_joint_state_anchored,
    apply_pose_by_name=apply_pose_by_name,
    delete_named_pose=delete_named_pose,
    export_poses=export_poses,
    get_named_pose=get_named_pose,
    import_poses=import_poses,
    list_named_poses=list_named_poses,
    store_named_pose=store_named_pose,
    validate_robot_schema=validate_robot_schema,
)

__all__ += [
    "_prim_pose_in_robot_frame",
    "axis_angle_to_quat",
    "prim_pose_in_robot_frame",
    "ik_solver",
    "kinematic_chain",
    "lm_ik",
    "math",
    "poser",
    "quat_conj",
    "quat_mul",
]

# ----------------------------------- physics-sensor API surface + loggers (compat, issue 17)
# ``isaacsim.sensors.experimental.physics``: authoring classes, reading structs, interface
# accessors. Importing this module also routes ``runtime.*`` log records to Isaac's logger
# names (``runtime.compat.logging_bridge``).
from runtime.compat import logging_bridge as _logging_bridge  # noqa: E402
from runtime.compat.isaac_sensor_authoring import IMU, Contact, Raycast  # noqa: E402
from runtime.compat.isaac_sensor_interfaces import (  # noqa: E402
    ContactSensorReading,
    EffortSensorReading,
    IMURawData,
    IMUSensorReading,
    JointStateSensorReading,
    RaycastSensorReading,
    get_contact_sensor_interface,
    get_effort_sensor_interface,
    get_imu_sensor_interface,
    get_joint_state_sensor_interface,
    get_raycast_sensor_interface,
)

_logging_bridge.install()

__all__ += [
    "Contact",
    "ContactSensorReading",
    "EffortSensorReading",
    "IMU",
    "IMURawData",
    "IMUSensorReading",
    "JointStateSensorReading",
    "Raycast",
    "RaycastSensorReading",
    "get_contact_sensor_interface",
    "get_effort_sensor_interface",
    "get_imu_sensor_interface",
    "get_joint_state_sensor_interface",
    "get_raycast_sensor_interface",
]

# ----------------------------------------------------- surface gripper (compat, issue 17)
# ``isaacsim.robot.surface_gripper``: the interface serves the SimulationContext's grippers
# (or a SurfaceGripperRuntime given to ``bind_runtime``).
from runtime.compat.isaac_surface_gripper import (  # noqa: E402
    GripperStatus,
    GripperView,
    SurfaceGripperInterface,
    acquire_surface_gripper_interface,
    create_surface_gripper,
)

__all__ += [
    "GripperStatus",
    "GripperView",
    "SurfaceGripperInterface",
    "acquire_surface_gripper_interface",
    "create_surface_gripper",
]

# ------------------------------------------------------ simulation context (compat, issue 34)
# ``isaacsim.core.api.SimulationContext``: play / pause / stop / step over MujocoEngine +
# SensorRuntime + SurfaceGripperRuntime; the wrappers above find it without ``runtime=``.
from runtime.compat.simulation_context import (  # noqa: E402
    SimulationContext,
    TimelineEvent,
    TimelineEventType,
    World,
    get_timeline_interface,
)

__all__ += [
    "SimulationContext",
    "TimelineEvent",
    "TimelineEventType",
    "World",
    "get_timeline_interface",
]

# ------------------------------------------------- schema plugin registration (compat, issue 34)
from runtime.schema import register_plugin_dir  # noqa: E402  (accepts str or a path)

__all__ += ["register_plugin_dir"]

# ------------------------------------------------ Isaac's module-level loggers (compat, issue 34)
# ``robot_schema.utils.logger``, ``poser.logger``, ...: records of the simrt code behind each
# module reach them formatted; a mock put in their place sees the final message.
_logging_bridge.expose_logger(utils, "usd.schema.isaac.robot_schema.utils")
_logging_bridge.expose_logger(kinematic_chain, "usd.schema.isaac.robot_schema.kinematic_chain")
_logging_bridge.expose_logger(lm_ik, "usd.schema.isaac.robot_schema.lm_ik")
_logging_bridge.expose_logger(poser, "isaacsim.robot.poser.robot_poser")
_logging_bridge.expose_logger(
    sys.modules["runtime.compat.isaac_sensors"], "isaacsim.sensors.experimental.physics"
)
_logging_bridge.expose_logger(
    sys.modules["runtime.compat.isaac_surface_gripper"], "isaacsim.robot.surface_gripper"
)
