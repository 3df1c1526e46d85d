"""Every name of the seeds' API sections imports from ``runtime.compat``.

The lists below are data copied from the seed documents (``../shared/seeds``): the Robot
Schema utils / kinematics / poser tables (seeds 000, 002), the physics-sensor API named by
issue 17 and the sensor schema types (seed 003), and the Isaac Lab cfg classes and spawners
(seed 004). Each entry is ``(compat module, dotted name)``; a dotted name checks a member of a
class (method, property, dataclass field). A name missing from ``runtime.compat`` fails here.
"""

from __future__ import annotations

import dataclasses
import importlib

import pytest

ISAAC = "runtime.compat.isaac"

# seed 000 "Utility Functions" (robot_schema.utils) and the RobotLinkNode members
UTILS = [
    "GenerateRobotLinkTree",
    "GetAllRobotLinks",
    "GetAllRobotJoints",
    "GetJointBodyRelationship",
    "GetJointPose",
    "GetLinksFromJoint",
    "PrintRobotTree",
    "RobotLinkNode",
    "PopulateRobotSchemaFromArticulation",
    "RecalculateRobotSchema",
    "DetectAndApplySites",
    "AddSitesToRobotLinks",
    "ValidateRobotSchemaRelationships",
    "EnsurePrependListForRobotRelationships",
    "RebuildRelationshipAsPrepend",
    "UpdateDeprecatedSchemas",
    "UpdateDeprecatedJointDofOrder",
    "GetAllNamedPoses",
    "GetNamedPoseStartLink",
    "GetNamedPoseEndLink",
    "GetNamedPoseJoints",
    "GetNamedPoseJointValues",
    "GetNamedPoseJointFixed",
    "GetNamedPoseValid",
]
# seed 000 "Applying the Robot Schema through code": rs.ApplyRobotAPI
ROBOT_SCHEMA = ["ApplyRobotAPI"]
# seed 000 "Math Primitives" (+ the poser UI helper named by issue 17)
MATH = [
    "Transform",
    "Transform.inv",
    "Joint",
    "Joint.exp",
    "quat_mul",
    "quat_conj",
    "quat_rotate",
    "axis_angle_to_quat",
    "quat_to_matrix",
    "skew",
    "adjoint",
    "_prim_pose_in_robot_frame",
    "prim_pose_in_robot_frame",
]
KINEMATIC_CHAIN = [
    "KinematicChain",
    "KinematicChain.compute_fk",
    "KinematicChain.compute_fk_and_jacobian",
    "KinematicChain.read_joint_states",
    "KinematicChain.teleport",
    "KinematicChain.teleport_anchored",
    "KinematicChain.joints",
    "KinematicChain.tree_root",
]
IK_SOLVER = [
    "IKSolver",
    "IKSolver.solve",
    "IKSolverRegistry",
    "IKSolverRegistry.register",
    "IKSolverRegistry.get",
    "IKSolverRegistry.available",
    "pose_error",
]
LM_IK = ["IKSolverLM", "ik_lm"]
# seed 002 "Python API" (isaacsim.robot.poser) and seed 000 "Named Pose CRUD"
POSER = [
    "RobotPoser",
    "RobotPoser.apply_pose",
    "RobotPoser.apply_pose_by_target",
    "RobotPoser.joints_to_native_values",
    "RobotPoser.set_chain",
    "RobotPoser.set_seed",
    "RobotPoser.solve_ik",
    "RobotPoser.chain",
    "RobotPoser.end_prim",
    "RobotPoser.joints",
    "RobotPoser.robot_prim",
    "RobotPoser.solver",
    "RobotPoser.stage",
    "RobotPoser.start_prim",
    "PoseResult",
    "PoseResult.success",
    "PoseResult.joints",
    "PoseResult.joint_fixed",
    "PoseResult.start_link",
    "PoseResult.end_link",
    "PoseResult.target_position",
    "PoseResult.target_orientation",
    "validate_robot_schema",
    "apply_joint_state",
    "apply_joint_state_anchored",
    "store_named_pose",
    "apply_pose_by_name",
    "get_named_pose",
    "list_named_poses",
    "delete_named_pose",
    "export_poses",
    "import_poses",
    "Transform",
    "IKSolver",
    "IKSolverRegistry",
]

# issue 17 / sensor spec §7: isaacsim.sensors.experimental.physics (seed 003 links it)
SENSORS = [
    "Contact",
    "Contact.create",
    "Contact.get_radius",
    "Contact.set_radius",
    "Contact.get_min_threshold",
    "Contact.set_min_threshold",
    "Contact.get_max_threshold",
    "Contact.set_max_threshold",
    "IMU",
    "IMU.create",
    "IMU.get_linear_acceleration_filter_width",
    "IMU.set_linear_acceleration_filter_width",
    "Raycast",
    "Raycast.create",
    "Raycast.get_min_range",
    "Raycast.set_max_range",
    "ContactSensor",
    "IMUSensor",
    "RaycastSensor",
    "EffortSensor",
    "JointStateSensor",
    "ContactSensorReading",
    "IMUSensorReading",
    "EffortSensorReading",
    "JointStateSensorReading",
    "RaycastSensorReading",
    "IMURawData",
    "get_imu_sensor_interface",
    "get_contact_sensor_interface",
    "get_effort_sensor_interface",
    "get_joint_state_sensor_interface",
    "get_raycast_sensor_interface",
]
# seed 003: the typed sensor schemas (USD types, checked in the schema registry below)
SENSOR_SCHEMA_TYPES = [
    "IsaacBaseSensor",
    "IsaacContactSensor",
    "IsaacImuSensor",
    "IsaacRaycastSensor",
]

# seed 004 "Schema Configuration Classes": class hierarchy, spawner usage, routed fields
LAB = "runtime.compat.isaaclab.sim"
LAB_SIM = [
    "UsdFileCfg",
    "UsdFileCfg.usd_path",
    "UsdFileCfg.rigid_props",
    "UsdFileCfg.joint_drive_props",
    "UsdFileCfg.collision_props",
    "UsdFileCfg.articulation_props",
    "UsdFileCfg.mass_props",
    "MeshCuboidCfg",
    "MeshSphereCfg",
    "spawn_from_usd",
    "schemas",
]
LAB_SCHEMAS = [
    "RigidBodyBaseCfg",
    "RigidBodyBaseCfg.disable_gravity",
    "JointDriveBaseCfg",
    "JointDriveBaseCfg.max_velocity",
    "JointDriveBaseCfg.max_joint_velocity",
    "JointDriveBaseCfg.max_effort",
    "JointDriveBaseCfg.max_force",
    "CollisionBaseCfg",
    "ArticulationRootBaseCfg",
    "MeshCollisionBaseCfg",
]
LAB_MATERIALS = ["RigidBodyMaterialBaseCfg"]
PHYSX = "runtime.compat.isaaclab_physx.sim"
PHYSX_SCHEMAS = [
    "PhysxRigidBodyPropertiesCfg",
    "PhysxJointDrivePropertiesCfg",
    "PhysxCollisionPropertiesCfg",
    "PhysxArticulationRootPropertiesCfg",
    "PhysxConvexHullPropertiesCfg",
    "PhysxConvexDecompositionPropertiesCfg",
    "PhysxTriangleMeshPropertiesCfg",
    "PhysxSDFMeshPropertiesCfg",
]
PHYSX_MATERIALS = ["PhysxRigidBodyMaterialCfg"]
NEWTON = "runtime.compat.isaaclab_newton.sim.schemas"
NEWTON_SCHEMAS = [
    "NewtonRigidBodyPropertiesCfg",
    "MujocoRigidBodyPropertiesCfg",
    "MujocoRigidBodyPropertiesCfg.gravcomp",
    "NewtonJointDrivePropertiesCfg",
    "MujocoJointDrivePropertiesCfg",
    "MujocoJointDrivePropertiesCfg.actuatorgravcomp",
    "NewtonCollisionPropertiesCfg",
    "NewtonCollisionPropertiesCfg.contact_margin",
    "NewtonCollisionPropertiesCfg.contact_gap",
    "NewtonArticulationRootPropertiesCfg",
    "NewtonMeshCollisionPropertiesCfg",
    "NewtonMeshCollisionPropertiesCfg.mesh_approximation_name",
    "NewtonMaterialPropertiesCfg",
]

NAMES: list[tuple[str, str]] = (
    [(f"{ISAAC}.utils", n) for n in UTILS]
    + [(ISAAC, n) for n in UTILS + ROBOT_SCHEMA]
    + [(f"{ISAAC}.math", n) for n in MATH]
    + [(ISAAC, n) for n in ("quat_mul", "quat_conj", "axis_angle_to_quat")]
    + [(f"{ISAAC}.kinematic_chain", n) for n in KINEMATIC_CHAIN]
    + [(f"{ISAAC}.ik_solver", n) for n in IK_SOLVER]
    + [(f"{ISAAC}.lm_ik", n) for n in LM_IK]
    + [(f"{ISAAC}.poser", n) for n in POSER]
    + [(ISAAC, n) for n in SENSORS]
    + [(LAB, n) for n in LAB_SIM + LAB_SCHEMAS]
    + [(f"{LAB}.schemas", n) for n in LAB_SCHEMAS]
    + [(f"{LAB}.spawners.materials", n) for n in LAB_MATERIALS]
    + [(f"{PHYSX}.schemas", n) for n in PHYSX_SCHEMAS]
    + [(f"{PHYSX}.spawners.materials", n) for n in PHYSX_MATERIALS]
    + [(NEWTON, n) for n in NEWTON_SCHEMAS]
)


def _has_member(cls: type, member: str) -> bool:
    if hasattr(cls, member):
        return True
    if dataclasses.is_dataclass(cls) and member in {f.name for f in dataclasses.fields(cls)}:
        return True
    return False


@pytest.mark.parametrize(("module", "name"), NAMES, ids=[f"{m}:{n}" for m, n in NAMES])
def test_seed_name_imports(module: str, name: str) -> None:
    mod = importlib.import_module(module)
    head, _, member = name.partition(".")
    assert hasattr(mod, head), f"{module} has no {head}"
    obj = getattr(mod, head)
    if member:
        assert _has_member(obj, member), f"{module}.{head} has no member {member}"
    # the from-import statement form works for every dotted module path
    exec(f"from {module} import {head}", {})


def test_robot_link_node_members() -> None:
    from runtime.compat.isaac import RobotLinkNode

    node = RobotLinkNode(None)
    for member in ("prim", "name", "path", "parent", "children"):
        assert hasattr(node, member), member


def test_math_aliases_behave_as_documented() -> None:
    import numpy as np
    from runtime.compat.isaac.math import axis_angle_to_quat, quat_conj, quat_mul

    # independent oracle: rotation matrices
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=3), rng.normal(size=3)
    qa = axis_angle_to_quat(a / np.linalg.norm(a), 0.7)
    qb = axis_angle_to_quat(b / np.linalg.norm(b), -1.9)

    def mat(q: np.ndarray) -> np.ndarray:
        w, x, y, z = q
        return np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
            ]
        )

    np.testing.assert_allclose(mat(quat_mul(qa, qb)), mat(qa) @ mat(qb), atol=1e-12)
    np.testing.assert_allclose(mat(quat_conj(qa)), mat(qa).T, atol=1e-12)
    half = 0.35
    np.testing.assert_allclose(qa[0], np.cos(half), atol=1e-12)


def test_prim_pose_in_robot_frame() -> None:
    import numpy as np
    from pxr import Gf, Usd, UsdGeom
    from runtime.compat.isaac.math import _prim_pose_in_robot_frame

    from runtime.compat.isaac import prim_pose_in_robot_frame

    stage = Usd.Stage.CreateInMemory()
    robot = UsdGeom.Xform.Define(stage, "/World/Robot")
    robot.AddTranslateOp().Set(Gf.Vec3d(1.0, 2.0, 0.5))
    robot.AddRotateZOp().Set(90.0)
    link = UsdGeom.Xform.Define(stage, "/World/Link")
    link.AddTranslateOp().Set(Gf.Vec3d(1.0, 3.0, 0.5))
    # Isaac's order: (robot_prim, prim); the private name is the same function
    assert _prim_pose_in_robot_frame is prim_pose_in_robot_frame
    pose = prim_pose_in_robot_frame(robot.GetPrim(), link.GetPrim())
    # world offset (0, 1, 0) seen from a base rotated +90 deg about Z is +X
    np.testing.assert_allclose(pose.t, [1.0, 0.0, 0.0], atol=1e-12)
    angle = 2.0 * np.arccos(min(1.0, abs(pose.q[0])))
    np.testing.assert_allclose(angle, np.pi / 2, atol=1e-9)
    with pytest.raises(ValueError, match="robot_prim"):
        prim_pose_in_robot_frame(stage.GetPrimAtPath("/Nope"), link.GetPrim())


def test_prim_pose_in_robot_frame_argument_order_matters() -> None:
    """Base at the origin turned 180 deg about X; a link (unrotated) at world (1, 0, -1).

    By hand: the link in the base frame is R^T (p_link - p_base) = Rx(180) (1, 0, -1) =
    (1, 0, 1); the swapped order returns the base in the link frame,
    p_base - p_link = (-1, 0, 1) -- the silent wrong result of the old order.
    """
    import numpy as np
    from pxr import Gf, Usd, UsdGeom
    from runtime.compat.isaac.math import _prim_pose_in_robot_frame

    stage = Usd.Stage.CreateInMemory()
    robot = UsdGeom.Xform.Define(stage, "/World/Robot")
    robot.AddRotateXOp().Set(180.0)
    link = UsdGeom.Xform.Define(stage, "/World/Link")
    link.AddTranslateOp().Set(Gf.Vec3d(1.0, 0.0, -1.0))
    right = _prim_pose_in_robot_frame(robot.GetPrim(), link.GetPrim())
    swapped = _prim_pose_in_robot_frame(link.GetPrim(), robot.GetPrim())
    np.testing.assert_allclose(right.t, [1.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(swapped.t, [-1.0, 0.0, 1.0], atol=1e-12)


@pytest.mark.parametrize("type_name", SENSOR_SCHEMA_TYPES)
def test_seed_sensor_schema_types_registered(type_name: str) -> None:
    from pxr import Usd

    import runtime.compat.isaac  # noqa: F401  (registers the schemas)

    assert Usd.SchemaRegistry.GetTypeFromSchemaTypeName(type_name), type_name
