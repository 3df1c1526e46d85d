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
* **mjc attributes.** Body ``mjc:gravcomp``; joint ``mjc:actuatorgravcomp``,
  ``mjc:armature`` (also ``newton:armature`` / ``physxJoint:armature``), ``mjc:damping``
  (SI; ``newton:damping`` is per degree on angular joints), ``mjc:frictionloss``; shape
  ``mjc:margin``, ``mjc:gap``, ``mjc:condim``, ``mjc:priority``, ``mjc:solmix``,
  ``mjc:solref``, ``mjc:solimp``, ``mjc:group``; material friction with
  ``newton:torsionalFriction`` / ``newton:rollingFriction``.

Names: every MuJoCo element is named by its USD prim path (multi-DOF joints:
``<joint path>:<token>``), so MuJoCo error messages name the prim.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import mujoco
import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.errors import SchemaError

try:  # optional extension owned by the physics-cfg module (PhysX / Newton attributes)
    from runtime.engine import physics_attrs
except ImportError:  # pragma: no cover - only while that module is absent
    physics_attrs = None

__all__ = ["BuiltModel", "DofBinding", "build_model"]

_LOG = logging.getLogger("runtime.engine")

_DEG = math.pi / 180.0
_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}
_TOKENS = ("TransX", "TransY", "TransZ", "RotX", "RotY", "RotZ")
_DEFAULT_DT = 1.0 / 60.0
_FALLBACK_MASS = 1.0  # kg (stage mass units scaled below)
_FALLBACK_RADIUS = 0.1  # m
_POSE_TOL = 1e-4


# --------------------------------------------------------------------------------------
# small quaternion / pose helpers (wxyz, float64)
# --------------------------------------------------------------------------------------


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def _qconj(q: np.ndarray) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]])


def _qrot(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    w, x, y, z = q
    u = np.array([x, y, z])
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def _qnormalize(q: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(q))
    return q / n if n > 0.0 else np.array([1.0, 0.0, 0.0, 0.0])


def _compose(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]):
    return a[0] + _qrot(a[1], b[0]), _qnormalize(_qmul(a[1], b[1]))


def _inverse(a: tuple[np.ndarray, np.ndarray]):
    qi = _qconj(a[1])
    return -_qrot(qi, a[0]), qi


def _gf_quat(q) -> np.ndarray:
    im = q.GetImaginary()
    return np.array([q.GetReal(), im[0], im[1], im[2]], dtype=np.float64)


def _vec(v) -> np.ndarray:
    return np.array([v[0], v[1], v[2]], dtype=np.float64)


def _axis_quat(axis: str) -> np.ndarray:
    """Rotation taking local +Z onto the given USD axis (X, Y or Z)."""
    s = math.sqrt(0.5)
    if axis == "X":
        return np.array([s, 0.0, s, 0.0])
    if axis == "Y":
        return np.array([s, -s, 0.0, 0.0])
    return np.array([1.0, 0.0, 0.0, 0.0])


def _finite_pose(path: str, attribute: str, pos: np.ndarray, quat: np.ndarray) -> None:
    if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(quat))):
        raise SchemaError(path, attribute, "non-finite (NaN/inf) transform", "finite values")
    if np.linalg.norm(quat) < 1e-12:
        raise SchemaError(path, attribute, "zero-length rotation quaternion", "unit quaternion")


# --------------------------------------------------------------------------------------
# result types
# --------------------------------------------------------------------------------------


@dataclass
class DofBinding:
    """How one USD DOF maps onto the MuJoCo model.

    Attributes:
        joint_path: USD path of the joint prim.
        token: DOF token ("TransX".."RotZ"; revolute/prismatic: the token of their axis).
        name: reported DOF name (joint prim name; multi-DOF: ``"<name>:<token>"``).
        mj_joint: MuJoCo joint id.
        qpos_adr: index into ``qpos`` (ball joints: start of the quaternion).
        dof_adr: index into ``qvel`` (ball joints: start of the 3 angular DOFs).
        ball_axis: -1 for hinge/slide, else 0/1/2: component of a ball joint.
        sign: +1, or -1 when the USD joint is used reversed in the MuJoCo tree.
        angular: True for rotational DOFs.
        actuator: MuJoCo actuator id driving this DOF, -1 when none.
        drive_mode: "position", "velocity", "mjc" (MjcActuator ctrl) or "" when undriven.
        damping: drive damping [SI] used to turn velocity targets into bias (position mode).
        lower: lower limit [rad or stage units], -inf when unlimited.
        upper: upper limit, +inf when unlimited.
    """

    joint_path: str
    token: str
    name: str
    mj_joint: int
    qpos_adr: int
    dof_adr: int
    ball_axis: int
    sign: float
    angular: bool
    actuator: int = -1
    drive_mode: str = ""
    damping: float = 0.0
    lower: float = -math.inf
    upper: float = math.inf


@dataclass
class BuiltModel:
    """A compiled MuJoCo model plus the USD bookkeeping the engine needs.

    Attributes:
        spec: the MuJoCo spec the model was compiled from.
        model: the compiled model.
        body_paths: USD paths of the rigid bodies (MuJoCo tree order), then static colliders.
        body_ids: MuJoCo body id per ``body_paths`` entry (static colliders: 0), (B,) int64.
        static_positions: world position per ``body_paths`` entry of static colliders
            (rows of rigid bodies unused), (B, 3) float64, stage units.
        static_orientations: world orientation (wxyz) per entry, (B, 4) float64.
        is_static: True for static collider entries, (B,) bool.
        geom_body_index: ``body_paths`` index per MuJoCo geom, (ngeom,) int64.
        dofs: DOF bindings in build order (MuJoCo tree order).
        initial_qpos: qpos at the authored configuration, (nq,) float64.
        initial_ctrl: ctrl holding the authored drive targets, (nu,) float64.
        initial_qvel: qvel from the authored ``physics:velocity`` / ``physics:angularVelocity``
            of free bodies, (nv,) float64.
        dt: time step [s].
        gravity: gravity [stage units/s^2], (3,) float64, world.
        meters_per_unit: stage metersPerUnit.
        kilograms_per_unit: stage kilogramsPerUnit.
        warnings: every warning logged while building.
    """

    spec: mujoco.MjSpec
    model: mujoco.MjModel
    body_paths: tuple[str, ...]
    body_ids: np.ndarray
    static_positions: np.ndarray
    static_orientations: np.ndarray
    is_static: np.ndarray
    geom_body_index: np.ndarray
    dofs: list[DofBinding]
    initial_qpos: np.ndarray
    dt: float
    gravity: np.ndarray
    meters_per_unit: float
    kilograms_per_unit: float
    warnings: list[str] = field(default_factory=list)
    initial_ctrl: np.ndarray | None = None
    initial_qvel: np.ndarray | None = None


# --------------------------------------------------------------------------------------
# builder
# --------------------------------------------------------------------------------------


@dataclass
class _Body:
    path: str
    prim: Usd.Prim
    world: tuple[np.ndarray, np.ndarray]
    kinematic: bool
    velocity: np.ndarray | None = None  # authored linear velocity, world [stage units/s]
    angular_velocity: np.ndarray | None = None  # authored angular velocity, world [deg/s]
    shapes: list = field(default_factory=list)
    spec_body: object = None
    parent: str | None = None  # USD path of the parent body, "" for world
    needs_inertia_pass: bool = False
    geom_count: int = 0
    authored_mass: float = 0.0
    authored_com: np.ndarray | None = None


@dataclass
class _Joint:
    path: str
    kind: str  # revolute, prismatic, spherical, fixed, d6
    desc: object
    body0: str  # "" = world
    body1: str
    frame0: tuple[np.ndarray, np.ndarray]
    frame1: tuple[np.ndarray, np.ndarray]


class _Builder:
    def __init__(self, stage: Usd.Stage, dt: float | None) -> None:
        self.stage = stage
        self.user_dt = dt
        self.warnings: list[str] = []
        self.mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
        self.kpu = float(UsdPhysics.GetStageKilogramsPerUnit(stage))
        self.xcache = UsdGeom.XformCache(Usd.TimeCode.Default())
        self.spec = mujoco.MjSpec()
        self.spec.compiler.degree = False
        self.spec.compiler.autolimits = True
        self.bodies: dict[str, _Body] = {}
        self.order: list[str] = []
        self.dofs: list[DofBinding] = []
        self.joint_mj_names: dict[str, list[tuple[str, str, float, bool]]] = {}
        self.initial: dict[str, float] = {}  # mj joint name -> initial value
        self.static_entries: list[tuple[str, np.ndarray, np.ndarray]] = []
        self.geom_owner: list[tuple[str, str]] = []  # (geom name, body_paths key)
        self.mesh_count = 0
        self.groups: dict[str, int] = {}
        self.loop_joints: list[_Joint] = []
        self.group_filter: dict[str, set[str]] = {}

    # -- logging -----------------------------------------------------------------------

    def warn(self, path: str, message: str) -> None:
        text = f"{path}: {message}"
        self.warnings.append(text)
        _LOG.warning(text)

    # -- helpers -----------------------------------------------------------------------

    def world_pose(self, prim: Usd.Prim) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m = self.xcache.GetLocalToWorldTransform(prim)
        path = str(prim.GetPath())
        values = np.array(m, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            raise SchemaError(path, "xformOp", "non-finite (NaN/inf) world transform", "finite")
        xf = Gf.Transform(m)
        pos = _vec(xf.GetTranslation())
        quat = _qnormalize(_gf_quat(xf.GetRotation().GetQuat()))
        scale = _vec(xf.GetScale())
        return pos, quat, scale

    def attr(self, prim: Usd.Prim, name: str):
        a = prim.GetAttribute(name)
        if a and a.HasAuthoredValue():
            return a.Get()
        return None

    # -- parse -------------------------------------------------------------------------

    def parse(self) -> dict:
        loader = getattr(UsdPhysics, "UsdPhysicsLoadStageFromPrimRange", None)
        if loader is None:  # older usd-core
            loader = UsdPhysics.LoadUsdPhysicsFromRange
        result = loader(self.stage, [Sdf.Path("/")])
        out: dict[str, list] = {}
        for obj_type, (paths, descs) in result.items():
            out[str(obj_type.name) if hasattr(obj_type, "name") else str(obj_type)] = list(
                zip([str(p) for p in paths], descs, strict=False)
            )
        return out

    # -- scene -------------------------------------------------------------------------

    def scene(self, parsed: dict) -> tuple[np.ndarray, float]:
        scenes = parsed.get("Scene", [])
        up = str(UsdGeom.GetStageUpAxis(self.stage))
        gravity = np.zeros(3)
        gravity[_AXIS_INDEX.get(up, 2)] = -9.81 / self.mpu  # no PhysicsScene: -up, 9.81 m/s^2
        scene_prim = None
        if scenes:
            path, desc = scenes[0]
            scene_prim = self.stage.GetPrimAtPath(path)
            direction = _vec(desc.gravityDirection)
            magnitude = float(desc.gravityMagnitude)
            if not (np.all(np.isfinite(direction)) and math.isfinite(magnitude)):
                raise SchemaError(path, "physics:gravityMagnitude", "non-finite gravity", "finite")
            gravity = direction * magnitude
            if len(scenes) > 1:
                self.warn(path, f"{len(scenes)} PhysicsScenes; using the first one")
        else:
            self.warn("/", "no PhysicsScene; default gravity 9.81 m/s^2 along -up, dt 1/60 s")
        dt = _DEFAULT_DT
        if self.user_dt is not None:
            dt = float(self.user_dt)
            if not (math.isfinite(dt) and dt > 0.0):
                raise SchemaError("", "dt", f"invalid time step {self.user_dt}", "> 0")
        elif scene_prim is not None:
            ts = self.attr(scene_prim, "mjc:option:timestep")
            if ts is None:
                for name in ("physxScene:timeStepsPerSecond", "newton:timeStepsPerSecond"):
                    rate = self.attr(scene_prim, name)
                    if rate is not None:
                        if not (math.isfinite(float(rate)) and float(rate) > 0):
                            raise SchemaError(
                                str(scene_prim.GetPath()), name, f"invalid rate {rate}", "> 0"
                            )
                        ts = 1.0 / float(rate)
                        break
            if ts is not None:
                dt = float(ts)
        opt = self.spec.option
        opt.timestep = dt
        opt.gravity = gravity
        integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        if scene_prim is not None:
            name = self.attr(scene_prim, "mjc:option:integrator")
            table = {
                "euler": mujoco.mjtIntegrator.mjINT_EULER,
                "rk4": mujoco.mjtIntegrator.mjINT_RK4,
                "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
                "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
            }
            if name is not None:
                if str(name).lower() not in table:
                    self.warn(
                        str(scene_prim.GetPath()),
                        f"mjc:option:integrator {name!r} unknown; using implicitfast",
                    )
                else:
                    integrator = table[str(name).lower()]
            for attr_name, key in (
                ("mjc:option:iterations", "iterations"),
                ("mjc:option:ls_iterations", "ls_iterations"),
                ("mjc:option:impratio", "impratio"),
                ("mjc:option:tolerance", "tolerance"),
            ):
                value = self.attr(scene_prim, attr_name)
                if value is not None:
                    setattr(opt, key, value)
            cone = self.attr(scene_prim, "mjc:option:cone")
            if cone is not None:
                opt.cone = (
                    mujoco.mjtCone.mjCONE_ELLIPTIC
                    if str(cone) == "elliptic"
                    else mujoco.mjtCone.mjCONE_PYRAMIDAL
                )
        opt.integrator = integrator
        return gravity, dt

    # -- bodies and joints -------------------------------------------------------------

    def collect_bodies(self, parsed: dict) -> None:
        for path, desc in parsed.get("RigidBody", []):
            prim = self.stage.GetPrimAtPath(path)
            if not desc.rigidBodyEnabled:
                self.warn(path, "physics:rigidBodyEnabled is false; treated as static collider")
                continue
            pos, quat, scale = self.world_pose(prim)
            if np.any(np.abs(scale - 1.0) > 1e-6):
                self.warn(
                    path,
                    f"rigid body has non-unit world scale {tuple(scale)}; shapes use the "
                    "scaled sizes, mass properties are used as authored",
                )
            self.bodies[path] = _Body(path, prim, (pos, quat), bool(desc.kinematicBody))
            lin = _vec(desc.linearVelocity)
            ang = _vec(desc.angularVelocity)
            if not (np.all(np.isfinite(lin)) and np.all(np.isfinite(ang))):
                raise SchemaError(path, "physics:velocity", "non-finite velocity", "finite")
            if np.any(lin != 0.0) or np.any(ang != 0.0):
                self.bodies[path].velocity = lin
                self.bodies[path].angular_velocity = ang

    def collect_joints(self, parsed: dict) -> list[_Joint]:
        joints: list[_Joint] = []
        kinds = {
            "RevoluteJoint": "revolute",
            "PrismaticJoint": "prismatic",
            "SphericalJoint": "spherical",
            "FixedJoint": "fixed",
            "D6Joint": "d6",
        }
        for key in ("DistanceJoint", "CustomJoint"):
            for path, _ in parsed.get(key, []):
                raise SchemaError(
                    path,
                    "",
                    f"unsupported joint type {key}",
                    "revolute, prismatic, spherical, fixed, D6 joints",
                )
        for key, kind in kinds.items():
            for path, desc in parsed.get(key, []):
                if not desc.jointEnabled:
                    self.warn(path, "physics:jointEnabled is false; joint ignored")
                    continue
                b0 = str(desc.body0) if desc.body0 and str(desc.body0) in self.bodies else ""
                b1 = str(desc.body1) if desc.body1 and str(desc.body1) in self.bodies else ""
                for rel, raw, got in (
                    ("physics:body0", desc.rel0, b0),
                    ("physics:body1", desc.rel1, b1),
                ):
                    if raw and str(raw) and not got:
                        rel_prim = self.stage.GetPrimAtPath(raw)
                        if rel_prim and rel_prim.HasAPI(UsdPhysics.RigidBodyAPI):
                            self.warn(path, f"{rel} targets a disabled body; treated as world")
                if not b0 and not b1:
                    self.warn(path, "joint connects no rigid body; ignored")
                    continue
                p0 = _vec(desc.localPose0Position)
                q0 = _gf_quat(desc.localPose0Orientation)
                p1 = _vec(desc.localPose1Position)
                q1 = _gf_quat(desc.localPose1Orientation)
                _finite_pose(path, "physics:localPos0/localRot0", p0, q0)
                _finite_pose(path, "physics:localPos1/localRot1", p1, q1)
                f0 = (p0, _qnormalize(q0))
                f1 = (p1, _qnormalize(q1))
                # a side the parser kept as a body but we do not simulate (disabled body):
                # its local frame becomes a world frame through that prim's transform
                if desc.body0 and not b0:
                    f0 = _compose(self.world_pose(self.stage.GetPrimAtPath(desc.body0))[:2], f0)
                if desc.body1 and not b1:
                    f1 = _compose(self.world_pose(self.stage.GetPrimAtPath(desc.body1))[:2], f1)
                joints.append(_Joint(path, kind, desc, b0, b1, f0, f1))
        joints.sort(key=lambda j: j.path)
        return joints

    def build_tree(self, joints: list[_Joint], articulation_roots: list[str]) -> list:
        """Order bodies into a forest; returns [(body, joint or None, reversed)] in DFS order."""
        adjacency: dict[str, list[_Joint]] = {p: [] for p in self.bodies}
        world_joints: list[_Joint] = []
        for j in joints:
            if j.desc.excludeFromArticulation:
                self.loop_joints.append(j)  # maximal-coordinate joint: an equality constraint
                continue
            if j.body0 and j.body1:
                adjacency[j.body0].append(j)
                adjacency[j.body1].append(j)
            else:
                world_joints.append(j)
        placed: dict[str, tuple[_Joint | None, bool, str]] = {}
        order: list[str] = []
        children: dict[str, list[str]] = {"": []}

        def attach(child: str, joint: _Joint | None, reversed_: bool, parent: str) -> None:
            placed[child] = (joint, reversed_, parent)
            children.setdefault(parent, []).append(child)
            children.setdefault(child, [])

        def grow(root: str) -> None:
            queue = [root]
            while queue:
                current = queue.pop(0)
                for j in adjacency[current]:
                    other = j.body1 if j.body0 == current else j.body0
                    if j.path in used:
                        continue
                    used.add(j.path)
                    if other in placed:
                        self.loop_joints.append(j)  # closes a loop: equality constraint
                        continue
                    attach(other, j, j.body0 != current, current)
                    queue.append(other)

        used: set[str] = set()
        for j in world_joints:
            child = j.body1 or j.body0
            used.add(j.path)
            if child in placed:  # reached through the tree already: closes a loop
                self.loop_joints.append(j)
                continue
            attach(child, j, j.body1 == "", "")
            grow(child)
        # free-floating components: articulation roots first, then path order
        candidates = [p for p in articulation_roots if p in self.bodies]
        candidates += sorted(self.bodies)
        for root in candidates:
            if root in placed:
                continue
            attach(root, None, False, "")
            grow(root)
        # depth-first order so every parent precedes its children
        stack = list(reversed(children[""]))
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(reversed(children.get(node, [])))
        return [(p, placed[p][0], placed[p][1], placed[p][2]) for p in order]

    # -- mass --------------------------------------------------------------------------

    def apply_mass(self, body: _Body) -> None:
        prim = body.prim
        path = body.path
        sb = body.spec_body
        mass_api = UsdPhysics.MassAPI(prim) if prim.HasAPI(UsdPhysics.MassAPI) else None
        mass = 0.0
        diag = np.zeros(3)
        com = None
        axes = None
        if mass_api is not None:
            m = mass_api.GetMassAttr().Get()
            mass = 0.0 if m is None else float(m)
            d = mass_api.GetDiagonalInertiaAttr().Get()
            diag = np.zeros(3) if d is None else _vec(d)
            c = mass_api.GetCenterOfMassAttr().Get()
            if c is not None and np.all(np.isfinite(_vec(c))):
                com = _vec(c)
            elif c is not None and np.any(np.isnan(_vec(c))):
                raise SchemaError(path, "physics:centerOfMass", "NaN centre of mass", "finite")
            a = mass_api.GetPrincipalAxesAttr().Get()
            if a is not None:
                qa = _gf_quat(a)
                if not np.all(np.isfinite(qa)):
                    raise SchemaError(path, "physics:principalAxes", "NaN quaternion", "finite")
                if np.linalg.norm(qa) > 1e-9:
                    axes = _qnormalize(qa)
        if not math.isfinite(mass) or mass < 0.0:
            raise SchemaError(path, "physics:mass", f"invalid mass {mass}", "finite, >= 0")
        if not np.all(np.isfinite(diag)) or np.any(diag < 0.0):
            raise SchemaError(
                path,
                "physics:diagonalInertia",
                f"invalid inertia {tuple(diag)}",
                "finite, >= 0 (all zero = derive from shapes)",
            )
        has_inertia = bool(np.any(diag > 0.0))
        if has_inertia and np.any(diag <= 0.0):
            raise SchemaError(
                path,
                "physics:diagonalInertia",
                f"zero inertia component in {tuple(diag)}",
                "all three > 0, or all zero",
            )
        if has_inertia:
            a, b, c = sorted(diag)
            if a + b < c * (1.0 - 1e-5):
                raise SchemaError(
                    path,
                    "physics:diagonalInertia",
                    f"inertia {tuple(diag)} violates the triangle inequality",
                    "I1 + I2 >= I3 for every permutation",
                )
            if a + b < c:  # float32 rounding of a flat body (I3 = I1 + I2): make it exact
                diag = np.where(diag == c, a + b, diag)
        if mass > 0.0 and has_inertia:
            sb.explicitinertial = True
            sb.mass = mass
            sb.inertia = diag
            sb.ipos = com if com is not None else np.zeros(3)
            sb.iquat = axes if axes is not None else np.array([1.0, 0.0, 0.0, 0.0])
            return
        has_geoms = body.geom_count > 0
        if mass > 0.0:
            if has_geoms:
                self.warn(
                    path,
                    "physics:mass authored without physics:diagonalInertia; inertia derived "
                    "from the collision shapes, scaled to the authored mass",
                )
                body.needs_inertia_pass = True
                body.authored_mass = mass
                body.authored_com = com
                sb.explicitinertial = False
                return
            self.fallback_inertia(body, mass, com, "no collision shapes to derive inertia from")
            return
        if has_geoms:
            self.warn(
                path,
                "no physics:mass authored; mass and inertia computed from the collision "
                "shapes' density (default 1000 kg/m^3)",
            )
            sb.explicitinertial = False
            return
        self.fallback_inertia(body, None, com, "no physics:mass and no collision shapes")

    def fallback_inertia(self, body: _Body, mass: float | None, com, why: str) -> None:
        m = mass if mass is not None else _FALLBACK_MASS / self.kpu
        r = _FALLBACK_RADIUS / self.mpu
        inertia = 0.4 * m * r * r
        self.warn(
            body.path,
            f"{why}; using mass {m:g} and the inertia of a solid sphere of radius {r:g} "
            "(stage units)",
        )
        sb = body.spec_body
        sb.explicitinertial = True
        sb.mass = m
        sb.inertia = np.array([inertia, inertia, inertia])
        sb.ipos = com if com is not None else np.zeros(3)
        sb.iquat = np.array([1.0, 0.0, 0.0, 0.0])

    # -- shapes ------------------------------------------------------------------------

    def collect_shapes(self, parsed: dict) -> None:
        materials = {p: d for p, d in parsed.get("RigidBodyMaterial", [])}
        self.materials = materials
        kinds = (
            "CubeShape",
            "SphereShape",
            "CapsuleShape",
            "CylinderShape",
            "PlaneShape",
            "MeshShape",
            "ConeShape",
            "Capsule1Shape",
            "Cylinder1Shape",
            "SpherePointsShape",
            "CustomShape",
        )
        for kind in kinds:
            for path, desc in parsed.get(kind, []):
                if not desc.collisionEnabled:
                    continue
                owner = str(desc.rigidBody) if desc.rigidBody else ""
                if owner and owner in self.bodies:
                    self.bodies[owner].shapes.append((path, kind, desc))
                else:
                    self.static_entries.append((path, kind, desc))

    def add_shape(self, mj_body, owner_key: str, path: str, kind: str, desc, static: bool) -> int:
        """Add one collision shape as MuJoCo geom(s); returns how many geoms were added."""
        prim = self.stage.GetPrimAtPath(path)
        if static:
            pos, quat, scale = self.world_pose(prim)
        else:
            pos = _vec(desc.localPos)
            quat = _qnormalize(_gf_quat(desc.localRot))
            _finite_pose(path, "xformOp", pos, quat)
        geom_kw: dict = {"name": path}
        if kind == "CubeShape":
            half = _vec(desc.halfExtents)
            geom_kw.update(type=mujoco.mjtGeom.mjGEOM_BOX, size=np.abs(half))
        elif kind == "SphereShape":
            geom_kw.update(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[abs(desc.radius), 0, 0])
        elif kind in ("CapsuleShape", "CylinderShape", "Capsule1Shape", "Cylinder1Shape"):
            radius = (
                float(desc.radius)
                if hasattr(desc, "radius")
                else max(float(desc.topRadius), float(desc.bottomRadius))
            )
            if kind in ("Capsule1Shape", "Cylinder1Shape"):
                self.warn(path, "tapered shape approximated with the larger radius")
            quat = _qnormalize(_qmul(quat, _axis_quat(_axis_letter(desc.axis))))
            gtype = (
                mujoco.mjtGeom.mjGEOM_CAPSULE
                if "Capsule" in kind
                else mujoco.mjtGeom.mjGEOM_CYLINDER
            )
            geom_kw.update(type=gtype, size=[abs(radius), abs(float(desc.halfHeight)), 0])
        elif kind == "ConeShape":
            self.warn(path, "cone approximated by a cylinder of the same radius and height")
            quat = _qnormalize(_qmul(quat, _axis_quat(_axis_letter(desc.axis))))
            geom_kw.update(
                type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                size=[abs(float(desc.radius)), abs(float(desc.halfHeight)), 0],
            )
        elif kind == "PlaneShape":
            quat = _qnormalize(_qmul(quat, _axis_quat(_axis_letter(desc.axis))))
            if static:
                geom_kw.update(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1])
            else:
                self.warn(path, "plane on a moving body approximated by a 100 x 100 thin box")
                half = 50.0 / self.mpu
                pos = pos - _qrot(quat, np.array([0.0, 0.0, 0.005 / self.mpu]))
                geom_kw.update(type=mujoco.mjtGeom.mjGEOM_BOX, size=[half, half, 0.005 / self.mpu])
        elif kind == "MeshShape":
            if self.mesh_geom(path, prim, desc, geom_kw) is None:
                return 0
        elif kind == "SpherePointsShape":
            count = 0
            for i, sp in enumerate(desc.spherePoints):
                g = mj_body.add_geom(
                    name=f"{path}:{i}",
                    type=mujoco.mjtGeom.mjGEOM_SPHERE,
                    size=[abs(float(sp.radius)), 0, 0],
                    pos=pos + _qrot(quat, _vec(sp.center)),
                    quat=quat,
                )
                self.style_geom(g, prim, desc, static)
                self.geom_owner.append((f"{path}:{i}", owner_key))
                count += 1
            return count
        else:
            self.warn(path, f"unsupported collision shape {kind}; ignored")
            return 0
        geom_kw.setdefault("pos", pos)
        if "quat" not in geom_kw:
            geom_kw["quat"] = quat
        else:
            geom_kw["pos"] = pos + _qrot(quat, geom_kw["pos"])
            geom_kw["quat"] = _qnormalize(_qmul(quat, geom_kw["quat"]))
        g = mj_body.add_geom(**geom_kw)
        self.style_geom(g, prim, desc, static)
        self.geom_owner.append((path, owner_key))
        return 1

    def mesh_geom(self, path: str, prim: Usd.Prim, desc, geom_kw: dict):
        import trimesh

        mesh = UsdGeom.Mesh(prim)
        points = mesh.GetPointsAttr().Get()
        counts = mesh.GetFaceVertexCountsAttr().Get()
        indices = mesh.GetFaceVertexIndicesAttr().Get()
        if points is None or len(points) == 0:
            self.warn(path, "collision mesh has no points; shape ignored")
            return None
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3) * _vec(desc.meshScale)
        if not np.all(np.isfinite(pts)):
            raise SchemaError(path, "points", "non-finite mesh points", "finite")
        faces = _triangulate(path, counts, indices, len(pts))
        approx = str(desc.approximation) if desc.approximation else "none"
        if approx not in ("convexHull", "boundingCube", "boundingSphere"):
            self.warn(
                path,
                f"physics:approximation {approx!r}: MuJoCo collides with the convex hull of "
                "the mesh",
            )
        tm = trimesh.Trimesh(vertices=pts, faces=faces if len(faces) else None, process=True)
        vertices = np.asarray(tm.vertices, dtype=np.float64)
        lo, hi = vertices.min(axis=0), vertices.max(axis=0)
        volume = 0.0
        if len(vertices) >= 4:
            try:
                volume = float(trimesh.convex.convex_hull(vertices).volume)
            except Exception:  # qhull failure: degenerate point set
                volume = 0.0
        extent = float(np.max(hi - lo)) if len(vertices) else 0.0
        if (
            approx == "boundingSphere"
            or approx == "boundingCube"
            or volume <= 1e-12 * max(extent, 1e-12) ** 3
        ):
            if volume <= 1e-12 * max(extent, 1e-12) ** 3 and approx not in (
                "boundingSphere",
                "boundingCube",
            ):
                self.warn(path, "flat or degenerate collision mesh replaced by its bounding box")
            half = np.maximum((hi - lo) / 2.0, 1e-4 / self.mpu)
            center = (hi + lo) / 2.0
            if approx == "boundingSphere":
                geom_kw.update(
                    type=mujoco.mjtGeom.mjGEOM_SPHERE,
                    size=[float(np.linalg.norm(half)), 0, 0],
                    pos=center,
                    quat=np.array([1.0, 0, 0, 0]),
                )
            else:
                geom_kw.update(
                    type=mujoco.mjtGeom.mjGEOM_BOX,
                    size=half,
                    pos=center,
                    quat=np.array([1.0, 0, 0, 0]),
                )
            return "box"
        name = f"{path}:mesh"
        self.spec.add_mesh(
            name=name,
            uservert=vertices.reshape(-1).tolist(),
            userface=np.asarray(tm.faces, dtype=np.int64).reshape(-1).tolist(),
        )
        self.mesh_count += 1
        geom_kw.update(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=name)
        return "mesh"

    def style_geom(self, g, prim: Usd.Prim, desc, static: bool) -> None:
        # density / mass for geometry-derived inertia
        density = None
        if prim.HasAPI(UsdPhysics.MassAPI):
            mapi = UsdPhysics.MassAPI(prim)
            d = mapi.GetDensityAttr().Get()
            if d is not None and float(d) > 0.0:
                density = float(d)
            m = mapi.GetMassAttr().Get()
            if m is not None and float(m) > 0.0:
                g.mass = float(m)
        friction = [1.0, 0.005, 0.0001]
        mats = [str(p) for p in desc.materials if str(p)]
        if mats:
            mdesc = self.materials.get(mats[0])
            if mdesc is not None:
                friction[0] = float(mdesc.dynamicFriction)
                if density is None and float(mdesc.density) > 0.0:
                    density = float(mdesc.density)
                mprim = self.stage.GetPrimAtPath(mats[0])
                tf = self.attr(mprim, "newton:torsionalFriction")
                rf = self.attr(mprim, "newton:rollingFriction")
                if tf is not None:
                    friction[1] = float(tf)
                if rf is not None:
                    friction[2] = float(rf)
                if float(mdesc.restitution) > 0.0:
                    self.warn(mats[0], "restitution is not modelled by MuJoCo; ignored")
        else:
            friction[0] = 0.5  # PhysX default material friction
        g.friction = friction
        if density is None:
            density = 1000.0 * self.mpu**3 / self.kpu
        g.density = density
        for name, key in (
            ("mjc:margin", "margin"),
            ("mjc:gap", "gap"),
            ("mjc:condim", "condim"),
            ("mjc:priority", "priority"),
            ("mjc:solmix", "solmix"),
            ("mjc:group", "group"),
        ):
            value = self.attr(prim, name)
            if value is not None:
                setattr(g, key, value)
        if physics_attrs is not None:
            physics_attrs.apply_geom_attrs(g, prim)  # newton/physx margins (mjc:* wins)
        for name, key in (("mjc:solref", "solref"), ("mjc:solimp", "solimp")):
            value = self.attr(prim, name)
            if value is not None:
                setattr(g, key, list(value))
        groups = self.shape_groups.get(str(prim.GetPath()), [])
        if groups:
            if len(groups) > 1:
                self.warn(
                    str(prim.GetPath()),
                    "shape is in several collision groups; only the first is used for filtering",
                )
            bit = self.groups.get(groups[0], -1)
            if bit >= 0:
                g.contype = 1 << bit
                g.conaffinity = self.affinity[bit]
                return
        g.contype = 1
        g.conaffinity = self.affinity[0]

    # -- collision groups --------------------------------------------------------------

    def collision_groups(self, parsed: dict) -> None:
        self.shape_groups: dict[str, list[str]] = {}
        group_list = parsed.get("CollisionGroup", [])
        bits: dict[str, int] = {}
        for path, _desc in group_list:
            if len(bits) >= 31:
                self.warn(path, "more than 31 collision groups; group ignored for filtering")
                continue
            bits[path] = len(bits) + 1
        self.groups = bits
        full = (1 << (len(bits) + 1)) - 1
        affinity = {0: full}
        for path, desc in group_list:
            if path not in bits:
                continue
            filtered = {str(p) for p in desc.filteredGroups}
            mask = full
            invert = bool(
                UsdPhysics.CollisionGroup(self.stage.GetPrimAtPath(path))
                .GetInvertFilteredGroupsAttr()
                .Get()
            )
            if invert:
                mask = 1 | (1 << bits[path])
                for other in filtered:
                    if other in bits:
                        mask |= 1 << bits[other]
            else:
                for other in filtered:
                    if other in bits:
                        mask &= ~(1 << bits[other])
            affinity[bits[path]] = mask
            prim = self.stage.GetPrimAtPath(path)
            coll = UsdPhysics.CollisionGroup(prim).GetCollidersCollectionAPI()
            query = coll.ComputeMembershipQuery()
            for member in Usd.CollectionAPI.ComputeIncludedPaths(query, self.stage):
                self.shape_groups.setdefault(str(member), []).append(path)
        # symmetric filtering: if A filters B, B must not accept A either
        for _a_path, a_bit in bits.items():
            for _b_path, b_bit in bits.items():
                if not (affinity[a_bit] >> b_bit) & 1:
                    affinity[b_bit] &= ~(1 << a_bit)
        self.affinity = affinity

    # -- joints into MuJoCo ------------------------------------------------------------

    def add_joint(self, body: _Body, joint: _Joint, reversed_: bool) -> None:
        sb = body.spec_body
        child_frame = joint.frame0 if reversed_ else joint.frame1
        sign = -1.0 if reversed_ else 1.0
        jprim = self.stage.GetPrimAtPath(joint.path)
        jname = jprim.GetName()
        desc = joint.desc
        extra = self.joint_extras(jprim, joint.kind)
        if joint.kind == "fixed":
            return
        if joint.kind in ("revolute", "prismatic"):
            letter = _axis_letter(desc.axis)
            axis = _qrot(child_frame[1], np.eye(3)[_AXIS_INDEX[letter]])
            angular = joint.kind == "revolute"
            token = ("Rot" if angular else "Trans") + letter
            lower, upper = -math.inf, math.inf
            if desc.limit.enabled:
                lo, hi = float(desc.limit.lower), float(desc.limit.upper)
                if math.isnan(lo) or math.isnan(hi):
                    raise SchemaError(joint.path, "physics:lowerLimit", "NaN limit", "finite")
                if angular:
                    lo, hi = lo * _DEG, hi * _DEG
                if lo > hi:
                    self.warn(joint.path, "lower limit > upper limit; joint locked at 0")
                    lo = hi = 0.0
                lower, upper = lo, hi
            mj_lo, mj_hi = (lower, upper) if sign > 0 else (-upper, -lower)
            j = sb.add_joint(
                name=joint.path,
                type=mujoco.mjtJoint.mjJNT_HINGE if angular else mujoco.mjtJoint.mjJNT_SLIDE,
                pos=child_frame[0],
                axis=axis,
            )
            if math.isfinite(mj_lo) or math.isfinite(mj_hi):
                big = 1e10
                j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
                j.range = [
                    mj_lo if math.isfinite(mj_lo) else -big,
                    mj_hi if math.isfinite(mj_hi) else big,
                ]
            else:
                j.limited = mujoco.mjtLimited.mjLIMITED_FALSE
            self.style_joint(j, extra, angular)
            binding = DofBinding(
                joint.path, token, jname, -1, -1, -1, -1, sign, angular, lower=lower, upper=upper
            )
            self.dofs.append(binding)
            self.pending_dofs.append((binding, joint.path))
            self.add_drive(jprim, binding, desc.drive, angular, joint.path)
            return
        if joint.kind == "spherical":
            j = sb.add_joint(name=joint.path, type=mujoco.mjtJoint.mjJNT_BALL, pos=child_frame[0])
            if desc.limit.enabled:
                c0, c1 = abs(float(desc.limit.lower)), abs(float(desc.limit.upper))
                if math.isfinite(c0) and math.isfinite(c1) and max(c0, c1) < 180.0:
                    if abs(c0 - c1) > 1e-9:
                        self.warn(
                            joint.path,
                            "elliptic cone limit approximated by a circular cone of the "
                            "larger angle",
                        )
                    j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
                    j.range = [0.0, max(c0, c1) * _DEG]
            self.style_joint(j, extra, True)
            for k, tok in enumerate(("RotX", "RotY", "RotZ")):
                binding = DofBinding(joint.path, tok, f"{jname}:{tok}", -1, -1, -1, k, sign, True)
                self.dofs.append(binding)
                self.pending_dofs.append((binding, joint.path))
            return
        # D6
        limits = {}
        for pair in desc.jointLimits:
            limits[str(pair.first).split(".")[-1]] = pair.second
        drives = {}
        for pair in desc.jointDrives:
            drives[str(pair.first).split(".")[-1]] = pair.second
        for token in _TOKENS:
            lim = limits.get(token)
            if lim is not None and lim.enabled and float(lim.lower) >= float(lim.upper):
                continue  # locked
            angular = token.startswith("Rot")
            axis = _qrot(child_frame[1], np.eye(3)[_AXIS_INDEX[token[-1]]])
            name = f"{joint.path}:{token}"
            j = sb.add_joint(
                name=name,
                type=mujoco.mjtJoint.mjJNT_HINGE if angular else mujoco.mjtJoint.mjJNT_SLIDE,
                pos=child_frame[0],
                axis=axis,
            )
            lower, upper = -math.inf, math.inf
            if lim is not None and lim.enabled:
                lower, upper = float(lim.lower), float(lim.upper)
                if angular:
                    lower, upper = lower * _DEG, upper * _DEG
            mj_lo, mj_hi = (lower, upper) if sign > 0 else (-upper, -lower)
            if math.isfinite(mj_lo) and math.isfinite(mj_hi):
                j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
                j.range = [mj_lo, mj_hi]
            else:
                j.limited = mujoco.mjtLimited.mjLIMITED_FALSE
            self.style_joint(j, extra, angular)
            binding = DofBinding(
                joint.path,
                token,
                f"{jname}:{token}",
                -1,
                -1,
                -1,
                -1,
                sign,
                angular,
                lower=lower,
                upper=upper,
            )
            self.dofs.append(binding)
            self.pending_dofs.append((binding, name))
            if token in drives:
                self.add_drive(jprim, binding, drives[token], angular, name)

    def joint_extras(self, jprim: Usd.Prim, kind: str) -> dict:
        out = {}
        for key, names in (
            ("armature", ("mjc:armature", "newton:armature", "physxJoint:armature")),
            ("frictionloss", ("mjc:frictionloss",)),
        ):
            for n in names:
                v = self.attr(jprim, n)
                if v is not None:
                    out[key] = float(v)
                    break
        v = self.attr(jprim, "mjc:damping")
        if v is not None:
            out["damping"] = float(v)
        else:
            v = self.attr(jprim, "newton:damping")
            if v is not None:
                out["damping_usd"] = float(v)
        v = self.attr(jprim, "mjc:actuatorgravcomp")
        if v is not None:
            out["actgravcomp"] = bool(v)
        for key in ("mjc:stiffness", "mjc:springref", "mjc:solreflimit", "mjc:solimplimit"):
            v = self.attr(jprim, key)
            if v is not None:
                out[key] = v
        return out

    def style_joint(self, j, extra: dict, angular: bool) -> None:
        if "armature" in extra:
            j.armature = extra["armature"]
        if "frictionloss" in extra:
            j.frictionloss = extra["frictionloss"]
        if "damping" in extra:
            _set_damping(j, extra["damping"])
        elif "damping_usd" in extra:
            _set_damping(j, extra["damping_usd"] / _DEG if angular else extra["damping_usd"])
        if extra.get("actgravcomp"):
            j.actgravcomp = True
        if "mjc:stiffness" in extra:
            try:
                j.stiffness = [float(extra["mjc:stiffness"]), 0.0, 0.0]
            except TypeError:  # MuJoCo 3.x: scalar
                j.stiffness = float(extra["mjc:stiffness"])
        if "mjc:springref" in extra:
            j.springref = float(extra["mjc:springref"])
        if "mjc:solreflimit" in extra:
            j.solref_limit = list(extra["mjc:solreflimit"])
        if "mjc:solimplimit" in extra:
            j.solimp_limit = list(extra["mjc:solimplimit"])

    def add_drive(self, jprim, binding: DofBinding, drive, angular: bool, mj_joint: str) -> None:
        if drive is None or not drive.enabled:
            return
        path = binding.joint_path
        kp = float(drive.stiffness)
        kd = float(drive.damping)
        if not (math.isfinite(kp) and math.isfinite(kd)) or kp < 0 or kd < 0:
            raise SchemaError(
                path,
                "drive:*:physics:stiffness/damping",
                f"invalid drive gains stiffness={kp} damping={kd}",
                "finite, >= 0",
            )
        if angular:
            kp, kd = kp / _DEG, kd / _DEG
        target_pos = float(drive.targetPosition)
        target_vel = float(drive.targetVelocity)
        if angular:
            target_pos *= _DEG
            target_vel *= _DEG
        if drive.acceleration:
            self.warn(path, "acceleration drive approximated by a force drive")
        sign = binding.sign
        if kp <= 0.0 and kd <= 0.0:
            self.warn(path, "drive with zero stiffness and damping; no actuator created")
            return
        act = self.spec.add_actuator(name=f"{mj_joint}:drive", target=mj_joint)
        act.trntype = mujoco.mjtTrn.mjTRN_JOINT
        act.gear = [sign, 0, 0, 0, 0, 0]
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        if kp > 0.0:
            # force = kp*ctrl + kd*v_target - kp*q - kd*qd (q, qd in the USD sign convention)
            act.gainprm = [kp] + [0.0] * 9
            act.biasprm = [kd * target_vel, -kp, -kd] + [0.0] * 7
            binding.drive_mode = "position"
            ctrl0 = target_pos
        else:
            act.gainprm = [kd] + [0.0] * 9
            act.biasprm = [0.0, 0.0, -kd] + [0.0] * 7
            binding.drive_mode = "velocity"
            ctrl0 = target_vel
        binding.damping = kd
        fmax = float(drive.forceLimit)
        if math.isfinite(fmax) and 0.0 < fmax < 1e30:
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-fmax, fmax]
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        self.pending_actuators.append((binding, act.name, ctrl0))

    def general_actuator(self, prim: Usd.Prim, path: str, act, sign: float) -> bool:
        """Fill a MuJoCo ``general`` actuator from ``mjc:*`` attributes; False = unsupported."""
        gear = self.attr(prim, "mjc:gear")
        g = list(gear) if gear is not None else [1.0, 0, 0, 0, 0, 0]
        g[0] *= sign
        act.gear = g
        table_gain = {"fixed": mujoco.mjtGain.mjGAIN_FIXED, "affine": mujoco.mjtGain.mjGAIN_AFFINE}
        table_bias = {"none": mujoco.mjtBias.mjBIAS_NONE, "affine": mujoco.mjtBias.mjBIAS_AFFINE}
        gt = str(self.attr(prim, "mjc:gainType") or "fixed")
        bt = str(self.attr(prim, "mjc:biasType") or "none")
        if gt not in table_gain or bt not in table_bias:
            self.warn(path, f"unsupported gain/bias type {gt}/{bt}; actuator ignored")
            return False
        act.gaintype = table_gain[gt]
        act.biastype = table_bias[bt]
        for name, key in (("mjc:gainPrm", "gainprm"), ("mjc:biasPrm", "biasprm")):
            value = self.attr(prim, name)
            if value is not None:
                setattr(act, key, (list(value) + [0.0] * 10)[:10])
        dyn = self.attr(prim, "mjc:dynType")
        if dyn is not None and str(dyn) != "none":
            self.warn(path, f"actuator dynamics {dyn} not supported; treated as none")
        for base, key, lim in (
            ("mjc:ctrlRange", "ctrlrange", "ctrllimited"),
            ("mjc:forceRange", "forcerange", "forcelimited"),
        ):
            lo, hi = self.attr(prim, base + ":min"), self.attr(prim, base + ":max")
            limited = self.attr(prim, "mjc:" + lim.replace("limited", "Limited"))
            if lo is not None or hi is not None:  # MJCF default of a missing side: 0
                setattr(act, key, [float(lo or 0.0), float(hi or 0.0)])
                if limited is None or str(limited) in ("auto", "true"):
                    setattr(act, lim, mujoco.mjtLimited.mjLIMITED_TRUE)
                else:
                    setattr(act, lim, mujoco.mjtLimited.mjLIMITED_FALSE)
        return True

    def mjc_actuators(self) -> None:
        for prim in self.stage.Traverse():
            if prim.GetTypeName() != "MjcActuator":
                continue
            path = str(prim.GetPath())
            targets = (
                prim.GetRelationship("mjc:target").GetTargets()
                if prim.GetRelationship("mjc:target")
                else []
            )
            if not targets:
                self.warn(path, "MjcActuator without mjc:target; ignored")
                continue
            target = str(targets[0])
            if target in self.tendon_paths:
                act = self.spec.add_actuator(name=path, target=target)
                act.trntype = mujoco.mjtTrn.mjTRN_TENDON
                if not self.general_actuator(prim, path, act, 1.0):
                    self.spec.delete(act)
                continue
            bindings = [b for b in self.dofs if b.joint_path == target]
            if len(bindings) != 1 or bindings[0].ball_axis >= 0:
                self.warn(path, f"MjcActuator target {target} is not a 1-DOF joint; ignored")
                continue
            binding = bindings[0]
            mj_joint = next(n for b, n in self.pending_dofs if b is binding)
            act = self.spec.add_actuator(name=path, target=mj_joint)
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT
            if not self.general_actuator(prim, path, act, binding.sign):
                self.spec.delete(act)
                continue
            binding.drive_mode = "mjc"
            self.pending_actuators.append((binding, path, None))

    # -- main --------------------------------------------------------------------------

    def build(self) -> BuiltModel:
        self.pending_dofs: list[tuple[DofBinding, str]] = []
        self.pending_actuators: list[tuple[DofBinding, str, float | None]] = []
        parsed = self.parse()
        gravity, dt = self.scene(parsed)
        self.collect_bodies(parsed)
        self.collision_groups(parsed)
        self.collect_shapes(parsed)
        joints = self.collect_joints(parsed)
        roots = []
        for _path, desc in parsed.get("Articulation", []):
            roots += [str(p) for p in desc.rootPrims]
        forest = self.build_tree(joints, roots)
        world = self.spec.worldbody
        initial: dict[str, object] = {}
        for path, joint, reversed_, parent in forest:
            body = self.bodies[path]
            parent_spec = world if parent == "" else self.bodies[parent].spec_body
            if joint is None:
                pos, quat = body.world
            else:
                # child pose in parent = F_parent * inv(F_child)  (joint frames aligned, q = 0)
                f_parent = joint.frame1 if reversed_ else joint.frame0
                f_child = joint.frame0 if reversed_ else joint.frame1
                pos, quat = _compose(f_parent, _inverse(f_child))
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
                initial[path] = (joint, reversed_, parent, pos, quat)
            gravcomp = self.attr(body.prim, "mjc:gravcomp")
            if gravcomp is not None:
                sb.gravcomp = float(gravcomp)
            if physics_attrs is not None:
                physics_attrs.apply_body_attrs(sb, body.prim)  # + physxRigidBody:disableGravity
            for spath, kind, desc in body.shapes:
                body.geom_count += self.add_shape(sb, path, spath, kind, desc, False)
            self.apply_mass(body)
            self.order.append(path)
        # static colliders on the world body
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
        # collision exclusions: joints without collisionEnabled, filtered pairs
        self.exclusions(joints, parsed)
        self.loop_constraints()
        self.mimic_constraints()
        self.tendons()
        self.mjc_actuators()
        if physics_attrs is not None:
            physics_attrs.report_ignored_attributes(self.stage, _LOG)
        model = self.compile()
        if any(b.needs_inertia_pass for b in self.bodies.values()):
            for b in self.bodies.values():
                if not b.needs_inertia_pass:
                    continue
                bid = model.body(b.path).id
                computed = float(model.body_mass[bid])
                ratio = b.authored_mass / computed if computed > 0 else 1.0
                sb = b.spec_body
                sb.explicitinertial = True
                sb.mass = b.authored_mass
                sb.inertia = np.array(model.body_inertia[bid]) * ratio
                sb.ipos = (
                    b.authored_com if b.authored_com is not None else np.array(model.body_ipos[bid])
                )
                sb.iquat = np.array(model.body_iquat[bid])
            model = self.compile()
        # bookkeeping
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
        for binding, mj_name in self.pending_dofs:
            jid = model.joint(mj_name).id
            binding.mj_joint = jid
            binding.qpos_adr = int(model.jnt_qposadr[jid])
            binding.dof_adr = int(model.jnt_dofadr[jid])
            if binding.ball_axis >= 0:
                binding.dof_adr += binding.ball_axis
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
        built = BuiltModel(
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
        return built

    def loop_constraints(self) -> None:
        """Joints outside the tree (loop closures, ``excludeFromArticulation``) -> equalities.

        Fixed -> ``weld`` of two sites at the joint frames; spherical -> ``connect`` of the two
        joint anchors; revolute -> ``connect`` (the hinge axis is not enforced: warning).
        ``mjc:solref`` / ``mjc:solimp`` on the joint prim are used when authored.
        """
        for j in self.loop_joints:
            if j.kind not in ("fixed", "spherical", "revolute"):
                raise SchemaError(
                    j.path,
                    "",
                    f"{j.kind} joint outside the articulation tree (loop closure or "
                    "excludeFromArticulation) is not supported",
                    "fixed, spherical or revolute loop-closing joints",
                )
            if j.kind == "revolute":
                self.warn(
                    j.path,
                    "loop-closing revolute joint modelled as a point (connect) constraint; its "
                    "axis is not enforced",
                )
            sites = []
            for side, (body_path, frame) in enumerate(((j.body0, j.frame0), (j.body1, j.frame1))):
                parent = self.spec.worldbody if not body_path else self.bodies[body_path].spec_body
                site = parent.add_site(name=f"{j.path}:site{side}", pos=frame[0], quat=frame[1])
                sites.append(site.name)
            eq = self.spec.add_equality(
                name=j.path,
                type=mujoco.mjtEq.mjEQ_WELD if j.kind == "fixed" else mujoco.mjtEq.mjEQ_CONNECT,
                objtype=mujoco.mjtObj.mjOBJ_SITE,
                name1=sites[0],
                name2=sites[1],
            )
            self.style_equality(eq, self.stage.GetPrimAtPath(j.path))

    def style_equality(self, eq, prim: Usd.Prim) -> None:
        for name, key in (("mjc:solref", "solref"), ("mjc:solimp", "solimp")):
            value = self.attr(prim, name)
            if value is not None:
                setattr(eq, key, list(value))

    def mimic_constraints(self) -> None:
        """``newton:mimicJoint`` (joint follows another): MuJoCo joint equality.

        ``q_this = c0 + c1 q_other`` with ``newton:mimicCoef0`` (offset, degrees on angular
        joints) / ``newton:mimicCoef1`` (gear), or ``mjc:polycoef`` when authored.
        """
        by_path = {b.joint_path: (b, n) for b, n in self.pending_dofs if b.ball_axis < 0}
        for joint_path, (binding, mj_name) in sorted(by_path.items()):
            prim = self.stage.GetPrimAtPath(joint_path)
            rel = prim.GetRelationship("newton:mimicJoint")
            targets = rel.GetTargets() if rel else []
            if not targets:
                continue
            other = by_path.get(str(targets[0]))
            if other is None:
                self.warn(joint_path, f"mimic target {targets[0]} is not a simulated 1-DOF joint")
                continue
            poly = self.attr(prim, "mjc:polycoef")
            if poly is not None:
                coef = (list(poly) + [0.0] * 5)[:5]
            else:
                c0 = float(self.attr(prim, "newton:mimicCoef0") or 0.0)
                c1 = self.attr(prim, "newton:mimicCoef1")
                c1 = 1.0 if c1 is None else float(c1)
                if binding.angular:
                    c0 *= _DEG
                coef = [c0, c1, 0.0, 0.0, 0.0]
            if binding.sign < 0 or other[0].sign < 0:
                self.warn(joint_path, "mimic between reversed joints: coefficients not adapted")
            eq = self.spec.add_equality(
                name=f"{joint_path}:mimic",
                type=mujoco.mjtEq.mjEQ_JOINT,
                objtype=mujoco.mjtObj.mjOBJ_JOINT,
                name1=mj_name,
                name2=other[1],
            )
            data = np.zeros(len(eq.data))
            data[:5] = coef
            eq.data = data
            self.style_equality(eq, prim)

    def tendons(self) -> None:
        """``MjcTendon`` prims of type fixed -> MuJoCo fixed tendons (joint coefficients)."""
        self.tendon_paths: set[str] = set()
        by_path = {b.joint_path: (b, n) for b, n in self.pending_dofs if b.ball_axis < 0}
        for prim in self.stage.Traverse():
            if prim.GetTypeName() != "MjcTendon":
                continue
            path = str(prim.GetPath())
            kind = str(self.attr(prim, "mjc:type") or "fixed")
            rel = prim.GetRelationship("mjc:path")
            targets = [str(t) for t in rel.GetTargets()] if rel else []
            coefs = list(self.attr(prim, "mjc:path:coef") or [1.0] * len(targets))
            if kind != "fixed":
                self.warn(path, f"{kind} tendon not supported; ignored")
                continue
            if len(coefs) != len(targets) or any(t not in by_path for t in targets):
                self.warn(
                    path, "fixed tendon with unknown joints or mismatched coefficients; ignored"
                )
                continue
            tendon = self.spec.add_tendon(name=path)
            for target, coef in zip(targets, coefs, strict=True):
                binding, mj_name = by_path[target]
                tendon.wrap_joint(mj_name, float(coef) * binding.sign)
            for name, key in (
                ("mjc:stiffness", "stiffness"),
                ("mjc:damping", "damping"),
                ("mjc:frictionloss", "frictionloss"),
                ("mjc:armature", "armature"),
            ):
                value = self.attr(prim, name)
                if value is not None:
                    try:
                        setattr(tendon, key, float(value))
                    except TypeError:
                        setattr(tendon, key, [float(value), 0.0, 0.0])
            self.tendon_paths.add(path)

    def exclusions(self, joints: list[_Joint], parsed: dict) -> None:
        pairs: set[tuple[str, str]] = set()
        for j in joints:
            if j.body0 and j.body1 and not j.desc.collisionEnabled:
                pairs.add(tuple(sorted((j.body0, j.body1))))
        for key, items in parsed.items():
            for path, desc in items:
                filtered = getattr(desc, "filteredCollisions", None)
                if not filtered:
                    continue
                if path not in self.bodies:
                    if key != "Articulation":
                        self.warn(path, "filtered pairs on a shape are applied to its whole body")
                owner = path if path in self.bodies else str(getattr(desc, "rigidBody", ""))
                for other in filtered:
                    o = str(other)
                    if owner in self.bodies and o in self.bodies and owner != o:
                        pairs.add(tuple(sorted((owner, o))))
        for path, desc in parsed.get("Articulation", []):
            prim = self.stage.GetPrimAtPath(path)
            enabled = None
            for name in ("physxArticulation:enabledSelfCollisions", "newton:selfCollisionEnabled"):
                value = self.attr(prim, name)
                if value is not None:
                    enabled = bool(value)
                    break
            if enabled is False:
                members = sorted({str(b) for b in desc.articulatedBodies if str(b) in self.bodies})
                for i, a in enumerate(members):
                    for b in members[i + 1 :]:
                        pairs.add((a, b))
        for a, b in sorted(pairs):
            # MuJoCo already skips parent-child pairs (unless filterparent is disabled)
            self.spec.add_exclude(bodyname1=a, bodyname2=b)

    def compile(self) -> mujoco.MjModel:
        try:
            return self.spec.compile()
        except ValueError as exc:
            message = str(exc)
            path = ""
            for token in message.replace("'", " ").split():
                if token.startswith("/") and self.stage.GetPrimAtPath(token.split(":")[0]):
                    path = token.split(":")[0]
                    break
            raise SchemaError(path, "", f"MuJoCo rejected the model: {message}") from exc

    def initial_velocities(self, model: mujoco.MjModel, qvel: np.ndarray) -> None:
        """Authored body velocities (world frame, COM linear, deg/s angular) of free bodies."""
        for path, b in self.bodies.items():
            if b.velocity is None:
                continue
            bid = model.body(path).id
            jnt = int(model.body_jntadr[bid])
            if model.body_jntnum[bid] != 1 or int(model.jnt_type[jnt]) != int(
                mujoco.mjtJoint.mjJNT_FREE
            ):
                self.warn(
                    path,
                    "authored physics:velocity / angularVelocity ignored (body is jointed or "
                    "kinematic)",
                )
                continue
            if self.attr(b.prim, "physxRigidBody:localSpaceVelocities"):
                self.warn(path, "physxRigidBody:localSpaceVelocities not supported; world used")
            w = b.angular_velocity * _DEG
            quat = b.world[1]
            com_world = _qrot(quat, np.array(model.body_ipos[bid]))
            adr = int(model.jnt_dofadr[jnt])
            qvel[adr : adr + 3] = b.velocity - np.cross(w, com_world)  # body-origin velocity
            qvel[adr + 3 : adr + 6] = _qrot(_qconj(quat), w)  # body-local angular velocity

    def initial_configuration(self, initial: dict, model: mujoco.MjModel, qpos: np.ndarray) -> None:
        for path, (joint, reversed_, parent, _pos, _quat) in initial.items():
            if joint.kind == "fixed":
                continue
            f_parent = joint.frame1 if reversed_ else joint.frame0
            f_child = joint.frame0 if reversed_ else joint.frame1
            child_world = self.bodies[path].world
            if parent == "":
                parent_world = (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
            else:
                parent_world = self.bodies[parent].world
            a = _compose(parent_world, f_parent)
            b = _compose(child_world, f_child)
            rel = _compose(_inverse(a), b)  # child joint frame in parent joint frame
            bindings = [d for d in self.dofs if d.joint_path == joint.path]
            residual_p = rel[0].copy()
            residual_q = rel[1].copy()
            if joint.kind in ("revolute", "prismatic") and bindings:
                d = bindings[0]
                axis = np.eye(3)[_AXIS_INDEX[d.token[-1]]]
                if joint.kind == "revolute":
                    w = residual_q[0]
                    s = float(np.dot(residual_q[1:], axis))
                    angle = 2.0 * math.atan2(s, w)
                    if angle > math.pi:
                        angle -= 2 * math.pi
                    if angle < -math.pi:
                        angle += 2 * math.pi
                    qpos[d.qpos_adr] = angle * d.sign
                    twist = np.array([math.cos(angle / 2), *(math.sin(angle / 2) * axis)])
                    residual_q = _qmul(_qconj(twist), residual_q)
                else:
                    value = float(np.dot(residual_p, axis))
                    qpos[d.qpos_adr] = value * d.sign
                    residual_p = residual_p - value * axis
            elif joint.kind == "spherical" and bindings:
                d = bindings[0]
                q = residual_q if d.sign > 0 else _qconj(residual_q)
                qpos[d.qpos_adr : d.qpos_adr + 4] = q
                residual_q = np.array([1.0, 0.0, 0.0, 0.0])
            err_p = float(np.linalg.norm(residual_p))
            err_q = 2.0 * math.asin(min(1.0, float(np.linalg.norm(residual_q[1:]))))
            if err_p > _POSE_TOL or err_q > _POSE_TOL:
                self.warn(
                    joint.path,
                    f"authored body poses disagree with the joint frames by {err_p:.3g} "
                    f"(stage units) / {err_q:.3g} rad beyond the joint's DOFs; bodies are "
                    "placed by the joint frames",
                )


def _set_damping(joint, value: float) -> None:
    """MuJoCo >= 4 stores joint damping as a polynomial (3 coefficients), 3.x as a scalar."""
    try:
        joint.damping = [float(value), 0.0, 0.0]
    except TypeError:
        joint.damping = float(value)


def _axis_letter(axis) -> str:
    text = str(axis)
    letter = text[-1]
    if letter not in _AXIS_INDEX:
        raise SchemaError("", "physics:axis", f"invalid axis {text}", "X, Y, Z")
    return letter


def _triangulate(path: str, counts, indices, point_count: int) -> np.ndarray:
    if counts is None or indices is None or len(counts) == 0:
        return np.zeros((0, 3), dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    if counts.sum() != len(indices) or np.any(counts < 3):
        raise SchemaError(
            path, "faceVertexCounts", "face counts do not match faceVertexIndices", "consistent"
        )
    if len(indices) and (indices.min() < 0 or indices.max() >= point_count):
        raise SchemaError(path, "faceVertexIndices", "index out of range of points", "valid")
    tris = []
    start = 0
    for c in counts:
        for k in range(1, c - 1):
            tris.append((indices[start], indices[start + k], indices[start + k + 1]))
        start += c
    return np.asarray(tris, dtype=np.int64).reshape(-1, 3)


def build_model(stage: Usd.Stage, dt: float | None = None) -> BuiltModel:
    """Build a MuJoCo model from the physics content of a USD stage.

    Args:
        stage: the opened stage (``runtime.schema`` imported before opening it).
        dt: time step override [s]; ``None`` reads it from the PhysicsScene (default 1/60).

    Returns:
        The compiled model and the USD <-> MuJoCo bookkeeping.

    Raises:
        SchemaError: USD physics content that cannot be simulated correctly, naming the prim.
    """
    return _Builder(stage, dt).build()
