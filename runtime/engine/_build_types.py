"""Result types of the USD -> MuJoCo builder and its internal body / joint records."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mujoco
import numpy as np
from pxr import Usd


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
class BodyRecord:
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
class JointRecord:
    path: str
    kind: str  # revolute, prismatic, spherical, fixed, d6
    desc: object
    body0: str  # "" = world
    body1: str
    frame0: tuple[np.ndarray, np.ndarray]
    frame1: tuple[np.ndarray, np.ndarray]

    def frames(self, reversed_: bool) -> tuple[tuple, tuple]:
        """(parent-side, child-side) joint frames when used ``reversed_`` in the tree."""
        if reversed_:
            return self.frame1, self.frame0
        return self.frame0, self.frame1
