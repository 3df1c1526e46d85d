"""USD physics -> MuJoCo ``MjSpec`` builder.

The stage's physics is parsed with usd-core's ``UsdPhysics`` stage parser
(``UsdPhysicsLoadStageFromPrimRange``), then turned into one MuJoCo model:

* **Bodies.** Every enabled ``PhysicsRigidBodyAPI`` prim becomes one MuJoCo body whose frame
  *is* the USD body frame (so MuJoCo ``xpos``/``xquat`` are the USD body poses). Bodies are
  nested by the joint tree: parent = ``physics:body0``, child = ``physics:body1``; a joint
  whose ``body1`` is already in the tree is used reversed (its DOF sign flips). A body
  attached to the world (``body0``/``body1`` empty or not a rigid body) by a fixed joint is
  welded to the world; a body with no joint to the world gets a free joint (floating base).
  Kinematic bodies without joints become MuJoCo mocap bodies.
* **Placement.** A child body is placed from the joint frames (``localPos0/localRot0`` on
  the parent, ``localPos1/localRot1`` on the child) so that q = 0 means "joint frames
  aligned", as in PhysX. The authored USD world transforms give the *initial* joint
  positions (revolute / prismatic) and the pose of free bodies; a residual mismatch between
  authored poses and joint frames (the joint would have to snap) is logged as a warning.
  Initial positions outside the joint limits are clamped into them (one warning).
* **Mass.** ``PhysicsMassAPI`` mass, centre of mass, diagonal inertia and principal axes.
  Fallbacks (each logged as a warning naming the prim): no mass authored -> mass and inertia
  from the collision shapes with their density (shape ``physics:density``, else material
  density, else 1000 kg/m^3 converted to stage units); mass authored but no inertia ->
  inertia of the collision shapes scaled to that mass; nothing to derive from -> 1 kg (in
  stage mass units) solid sphere of radius 0.1 m. Negative / NaN mass, negative / NaN or
  partially zero inertia, or inertia violating the triangle inequality raise
  :class:`~runtime.errors.SchemaError`.
* **Shapes.** Cube, sphere, capsule, cylinder, plane (planes on moving bodies: thin box),
  meshes (``physics:approximation`` none / convexHull / ...: MuJoCo collides with the convex
  hull of the mesh; anything else than a convex hull is logged as approximated). Friction:
  the bound physics material's dynamic friction (+ ``newton:torsionalFriction`` /
  ``newton:rollingFriction``), else 0.5 (PhysX's default material). Meshes are
  triangulated and cleaned with trimesh; a mesh without points is skipped with a warning; a
  flat mesh is replaced by its bounding box (warning).
* **Joints.** Revolute (hinge), prismatic (slide), spherical (ball; cone limit = max of the
  two cone angles), fixed (welded, no MuJoCo joint), D6 / plain ``PhysicsJoint`` (one slide
  per free translation axis, then one hinge per free rotation axis, X, Y, Z; an axis whose
  ``PhysicsLimitAPI`` has low > high is locked). Limits in degrees are converted to radians.
  Disabled joints are skipped (warning). Joints outside the tree -- ``physics:
  excludeFromArticulation`` or closing a kinematic loop -- become MuJoCo equality
  constraints between two sites at the joint frames: fixed -> ``weld``, spherical ->
  ``connect``, revolute -> ``connect`` (axis not enforced, warning); other loop-closing
  types, distance and custom joints raise :class:`~runtime.errors.SchemaError`.
  ``newton:mimicJoint`` -> joint equality (``q = c0 + c1 q_other``); ``MjcTendon`` (fixed)
  -> fixed tendon; joint ``mjc:stiffness`` / ``mjc:springref`` / ``mjc:solreflimit`` /
  ``mjc:solimplimit`` are passed through.
* **Drives.** ``PhysicsDriveAPI`` with stiffness > 0 -> a position servo actuator
  (``ctrl`` = position target, ``force = kp (ctrl - q) + kd (v_target - qd)``); stiffness 0
  and damping > 0 -> a velocity servo (``ctrl`` = velocity target). Angular stiffness /
  damping are per degree in USD and are converted to per radian; targets in degrees are
  converted to radians. ``maxForce`` -> force range. Acceleration drives are approximated by
  force drives (warning). ``MjcActuator`` prims (mujoco-usd-converter output) become MuJoCo
  ``general`` actuators with their ``mjc:*`` gains / biases / ranges, on a joint or on a
  fixed tendon.
* **Scene.** Gravity from the ``PhysicsScene`` (the parser already resolves the default
  9.81 m/s^2 / metersPerUnit along -up). Time step: user ``dt`` > ``mjc:option:timestep`` >
  ``physxScene:timeStepsPerSecond`` > ``newton:timeStepsPerSecond`` > 1/60 s. Integrator:
  ``mjc:option:integrator`` if authored, else ``implicitfast`` (implicit drive damping, as
  PhysX drives are implicit).
* **Units.** The MuJoCo model is built directly in stage units (length) and stage mass units,
  so every output is in stage units as :class:`~runtime.sensors.state.PhysicsState` expects.
* **Filtering.** ``PhysicsFilteredPairsAPI`` between bodies -> MuJoCo ``exclude`` pairs;
  ``PhysicsCollisionGroup`` filtering -> ``contype``/``conaffinity`` bits (up to 31 groups,
  one group per shape; otherwise a warning). Joints with ``physics:collisionEnabled`` false
  (the default) exclude the two bodies from colliding, as PhysX does. An articulation root
  with ``physxArticulation:enabledSelfCollisions`` (or ``newton:selfCollisionEnabled``)
  false excludes every pair of its bodies; otherwise self-collisions are on (PhysX default).
  Body pairs of one articulation whose collision shapes already overlap at the start pose
  are excluded (logged once; ``exclude_reference_overlaps`` / the scene's
  ``excludeReferenceOverlaps`` setting; ``_build_collision``).
* **mjc attributes.** Body ``mjc:gravcomp``; joint ``mjc:actuatorgravcomp``,
  ``mjc:armature`` (also ``newton:armature`` / ``physxJoint:armature``), ``mjc:damping``
  (SI; ``newton:damping`` is per degree on angular joints), ``mjc:frictionloss`` (also
  ``newton:friction``, the converters' URDF ``<dynamics friction>``); shape
  ``mjc:margin``, ``mjc:gap``, ``mjc:condim``, ``mjc:priority``, ``mjc:solmix``,
  ``mjc:solref``, ``mjc:solimp``, ``mjc:group``; material friction with
  ``newton:torsionalFriction`` / ``newton:rollingFriction``.

Names: every MuJoCo element is named by its USD prim path (multi-DOF joints:
``<joint path>:<token>``), so MuJoCo error messages name the prim.

Layout: this module holds the public names and the order of the build; each step is a mixin
in a private module (``_build_scene``, ``_build_tree``, ``_build_collision``, ``_build_shapes``,
``_build_mass``, ``_build_joints``, ``_build_actuators``, ``_build_constraints``,
``_build_initial``) over the shared state of ``_build_base.BuildContext``.
"""

from __future__ import annotations

import mujoco
import numpy as np
from pxr import Usd

from runtime.engine import physics_attrs
from runtime.engine._build_actuators import ActuatorStep
from runtime.engine._build_base import LOG
from runtime.engine._build_collision import CollisionFilterStep
from runtime.engine._build_constraints import ConstraintStep
from runtime.engine._build_grippers import GripperStep
from runtime.engine._build_initial import InitialStateStep
from runtime.engine._build_joints import JointStep
from runtime.engine._build_mass import MassStep
from runtime.engine._build_math import compose, inverse
from runtime.engine._build_scene import SceneStep
from runtime.engine._build_shapes import ShapeStep
from runtime.engine._build_tree import TreeStep
from runtime.engine._build_types import BuiltModel, DofBinding, JointRecord

__all__ = ["BuiltModel", "DofBinding", "build_model"]


class _Builder(
    SceneStep,
    TreeStep,
    CollisionFilterStep,
    ShapeStep,
    MassStep,
    JointStep,
    ActuatorStep,
    ConstraintStep,
    GripperStep,
    InitialStateStep,
):
    """One build: the steps of the ``_build_*`` modules, run in order by :meth:`build`."""

    def build(self) -> BuiltModel:
        parsed = self.parse()
        gravity, _dt = self.scene(parsed)
        self.collect_bodies(parsed)
        self.collision_groups(parsed)
        self.collect_shapes(parsed)
        joints = self.take_gripper_joints(self.collect_joints(parsed))
        roots = []
        for _path, desc in parsed.get("Articulation", []):
            roots += [str(p) for p in desc.rootPrims]
        initial = self.add_bodies(self.build_tree(joints, roots))
        static_paths, static_pose = self.add_static_colliders()
        # collision exclusions: joints without collisionEnabled, filtered pairs
        self.exclusions(joints, parsed)
        self.loop_constraints()
        self.gripper_welds()  # surface-gripper attachment points (_build_grippers)
        self.mimic_constraints()
        self.tendons()
        self.mjc_actuators()
        physics_attrs.report_ignored_attributes(self.stage, LOG)
        model = self.rescale_derived_inertia(self.compile())
        if self.overlap_policy(parsed, self.exclude_overlaps):
            model = self.exclude_reference_overlaps(model, initial)
        return self.result(model, gravity, initial, static_paths, static_pose)

    def add_bodies(self, forest: list) -> dict[str, tuple]:
        """Add the bodies of the forest (DFS order) with their joints, shapes and mass.

        Returns:
            ``{body path: (joint, reversed, parent path)}`` of the jointed bodies.
        """
        world = self.spec.worldbody
        initial: dict[str, tuple] = {}
        for path, joint, reversed_, parent in forest:
            body = self.bodies[path]
            parent_spec = world if parent == "" else self.bodies[parent].spec_body
            if joint is None:
                pos, quat = body.world
            else:
                pos, quat = _child_in_parent(joint, reversed_)
            sb = parent_spec.add_body(name=path, pos=pos, quat=quat)
            body.spec_body = sb
            body.parent = parent
            if joint is None:
                if body.kinematic:
                    sb.mocap = True
                else:
                    sb.add_freejoint(name=f"{path}:free")
            else:
                if body.kinematic:
                    self.warn(path, "kinematic body inside an articulation simulated as dynamic")
                self.add_joint(body, joint, reversed_)
                initial[path] = (joint, reversed_, parent)
            # mjc:gravcomp, else physxRigidBody:disableGravity
            physics_attrs.apply_body_attrs(sb, body.prim)
            for spath, kind, desc in body.shapes:
                body.geom_count += self.add_shape(sb, path, spath, kind, desc, False)
            self.apply_mass(body)
            self.order.append(path)
        return initial

    def add_static_colliders(self) -> tuple[list[str], dict[str, tuple[np.ndarray, np.ndarray]]]:
        """Add the shapes of no simulated body to the world body.

        Returns:
            The static ``body_paths`` keys (owning body prim, else the shape prim) in order,
            and their world poses (position, wxyz orientation).
        """
        world = self.spec.worldbody
        static_paths: list[str] = []
        static_pose: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for spath, kind, desc in self.static_entries:
            owner = str(desc.rigidBody) if desc.rigidBody else spath
            key = owner if owner and self.stage.GetPrimAtPath(owner) else spath
            if key not in static_pose:
                prim = self.stage.GetPrimAtPath(key)
                p, q, _ = self.world_pose(prim)
                static_pose[key] = (p, q)
                static_paths.append(key)
            self.add_shape(world, key, spath, kind, desc, True)
        return static_paths, static_pose

    def result(
        self,
        model: mujoco.MjModel,
        gravity: np.ndarray,
        initial: dict[str, tuple],
        static_paths: list[str],
        static_pose: dict[str, tuple[np.ndarray, np.ndarray]],
    ) -> BuiltModel:
        """Resolve names to MuJoCo ids / addresses and assemble the :class:`BuiltModel`."""
        body_paths = tuple(self.order) + tuple(static_paths)
        n = len(body_paths)
        body_ids = np.zeros(n, dtype=np.int64)
        static_pos = np.zeros((n, 3))
        static_quat = np.zeros((n, 4))
        static_quat[:, 0] = 1.0
        is_static = np.zeros(n, dtype=bool)
        for i, p in enumerate(self.order):
            body_ids[i] = model.body(p).id
        for k, p in enumerate(static_paths):
            i = len(self.order) + k
            is_static[i] = True
            static_pos[i], static_quat[i] = static_pose[p]
        index_of = {p: i for i, p in enumerate(body_paths)}
        geom_body_index = np.full(model.ngeom, -1, dtype=np.int64)
        for gid in range(model.ngeom):
            bid = int(model.geom_bodyid[gid])
            if bid != 0:
                bpath = model.body(bid).name
                geom_body_index[gid] = index_of.get(bpath, -1)
        owners = dict(self.geom_owner)
        for gid in range(model.ngeom):
            if int(model.geom_bodyid[gid]) == 0:
                geom_body_index[gid] = index_of.get(owners.get(model.geom(gid).name, ""), -1)
        self.resolve_dof_addresses(model)
        ctrl0 = np.zeros(model.nu)
        for binding, act_name, c0 in self.pending_actuators:
            aid = model.actuator(act_name).id
            if binding.actuator < 0:
                binding.actuator = aid
            if c0 is not None:
                ctrl0[aid] = c0
        qpos = np.array(model.qpos0, dtype=np.float64)
        self.initial_configuration(initial, model, qpos)
        qvel = np.zeros(model.nv)
        self.initial_velocities(model, qvel)
        return BuiltModel(
            spec=self.spec,
            model=model,
            body_paths=body_paths,
            body_ids=body_ids,
            static_positions=static_pos,
            static_orientations=static_quat,
            is_static=is_static,
            geom_body_index=geom_body_index,
            dofs=self.dofs,
            initial_qpos=qpos,
            dt=float(model.opt.timestep),
            gravity=np.array(gravity, dtype=np.float64),
            meters_per_unit=self.mpu,
            kilograms_per_unit=self.kpu,
            warnings=self.warnings,
            initial_ctrl=ctrl0,
            initial_qvel=qvel,
        )


def _child_in_parent(joint: JointRecord, reversed_: bool) -> tuple[np.ndarray, np.ndarray]:
    """Child body pose in its parent at q = 0 (joint frames aligned): F_parent * inv(F_child)."""
    f_parent, f_child = joint.frames(reversed_)
    return compose(f_parent, inverse(f_child))


def build_model(
    stage: Usd.Stage, dt: float | None = None, *, exclude_reference_overlaps: bool | None = None
) -> BuiltModel:
    """Build a MuJoCo model from the physics content of a USD stage.

    Args:
        stage: the opened stage (``runtime.schema`` imported before opening it).
        dt: time step override [s]; ``None`` reads it from the PhysicsScene (default 1/60).
        exclude_reference_overlaps: exclude the body pairs of one articulation whose
            collision shapes overlap at the initial pose (logged once, see
            ``runtime/engine/_build_collision.py``); ``None``: the PhysicsScene's
            ``customData["simrt"]["excludeReferenceOverlaps"]``, default True.

    Returns:
        The compiled model and the USD <-> MuJoCo bookkeeping.

    Raises:
        SchemaError: USD physics content that cannot be simulated correctly, naming the prim.
    """
    builder = _Builder(stage, dt)
    builder.exclude_overlaps = exclude_reference_overlaps
    return builder.build()
