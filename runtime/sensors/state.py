"""Engine-agnostic physics state handed to the sensor loop after every physics step.

:class:`PhysicsState` is the one contract between a physics source (``runtime.engine``'s
``MujocoEngine``, the kinematic :mod:`runtime.sensors.playback` source, a test harness) and
the sensors. It holds one step of engine output as flat, C-contiguous ``float64`` arrays
(indices ``int64``) so the sensor kernels can consume it without copies.

Conventions (all fields):

* Lengths are in **stage units** (``meters_per_unit`` converts to metres), times in seconds,
  angles in radians. Every vector is expressed in the **world** frame.
* Quaternions are ``(w, x, y, z)``, unit norm, rotating body-local vectors to world.
* Body arrays follow ``body_paths`` order, which is fixed for a run.
* Contacts: ``contact_impulses[c]`` is the impulse acting on ``contact_body0[c]`` (PhysX
  convention), units mass x stage length / s. ``contact_body1`` may be ``-1`` for a contact
  with something that is not in ``body_paths`` (e.g. the world / a static collider that is
  not listed).
* DOF arrays follow the DOF-table order (``runtime.schema.dof``), SI-like engine units
  (rad, rad/s, N m for rotational DOFs; stage units, stage units/s, force for translational).

Use :func:`make_physics_state` at a boundary (it converts and validates); the dataclass
constructor itself does no checking so engines can refill preallocated arrays cheaply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from runtime.errors import SimrtError

__all__ = ["PhysicsState", "make_physics_state", "empty_physics_state"]


@dataclass(slots=True)
class PhysicsState:
    """One physics step of engine output (see the module docstring for conventions).

    Attributes:
        body_paths: USD paths of the rigid bodies (and touchable static colliders), length B.
        body_positions: body frame origins, shape (B, 3), float64, stage units, world.
        body_orientations: body orientations, shape (B, 4), float64, wxyz, body->world.
        body_com_local: centre of mass in the body frame, shape (B, 3), float64, stage units,
            body frame; static for a run.
        body_linear_velocities: centre-of-mass linear velocities, shape (B, 3), float64,
            stage units/s, world.
        body_angular_velocities: angular velocities, shape (B, 3), float64, rad/s, world.
        body_linear_accelerations: centre-of-mass linear accelerations, shape (B, 3),
            float64, stage units/s^2, world; ``None`` when the engine does not supply them.
            Kinematic (not including gravity: a body in free fall reports ``gravity``).
        body_angular_accelerations: angular accelerations, shape (B, 3), float64, rad/s^2,
            world; ``None`` when not supplied.
        contact_body0: first body of each contact point, shape (C,), int64 index into
            ``body_paths``.
        contact_body1: second body of each contact point, shape (C,), int64 index into
            ``body_paths`` or -1 when the other side is not a listed body.
        contact_positions: contact points, shape (C, 3), float64, stage units, world.
        contact_normals: contact normals, shape (C, 3), float64, unit, world (pointing from
            body1 towards body0).
        contact_impulses: impulse on body0 during the step, shape (C, 3), float64,
            mass x stage length / s, world.
        joint_positions: DOF positions, shape (D,), float64, rad or stage units.
        joint_velocities: DOF velocities, shape (D,), float64, rad/s or stage units/s.
        joint_efforts: DOF efforts (generalised force through the DOF onto the child link),
            shape (D,), float64, N m or force units.
        dt: step size of the step just taken, seconds.
        time: simulation time after the step, seconds (``step * dt`` for a fixed rate).
        step: number of physics steps since the run started (1 after the first step).
        gravity: gravity acceleration vector, shape (3,), float64, stage units/s^2, world
            (pointing down, e.g. ``(0, 0, -9.81)`` for a Z-up metre stage).
        meters_per_unit: stage ``metersPerUnit``.
        contact_dts: optional per-contact report dt, shape (C,), float64, seconds; ``None``
            means every contact uses ``dt``.
        contact_events: optional contact-report event id of each point, shape (C,), int64
            (points of one event -- one shape pair -- share an id; report order). When given,
            the contact sensors reproduce the reference's bookkeeping
            (docs/sensors/contact.md#bookkeeping): per unordered body pair only the points of the
            pair's last event count. ``None``: every point counts.
        verified: True when the producer guarantees the conventions above (every array
            C-contiguous float64 / int64 of the documented shape): :func:`make_physics_state`
            and the engines set it, and the sensor batches then skip Numba's per-call type
            checks. Leave it False for a hand-built state, and set it False before assigning
            an array that breaks the conventions to a field of a verified state.
    """

    body_paths: tuple[str, ...]
    body_positions: np.ndarray
    body_orientations: np.ndarray
    body_com_local: np.ndarray
    body_linear_velocities: np.ndarray
    body_angular_velocities: np.ndarray
    body_linear_accelerations: np.ndarray | None = None
    body_angular_accelerations: np.ndarray | None = None
    contact_body0: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    contact_body1: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    contact_positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    contact_normals: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    contact_impulses: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    joint_positions: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_velocities: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_efforts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dt: float = 0.0
    time: float = 0.0
    step: int = 0
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    meters_per_unit: float = 1.0
    contact_dts: np.ndarray | None = None
    contact_events: np.ndarray | None = None
    verified: bool = False

    @property
    def body_count(self) -> int:
        """Number of bodies B."""
        return len(self.body_paths)

    @property
    def contact_count(self) -> int:
        """Number of contact points C."""
        return int(self.contact_body0.shape[0])

    @property
    def dof_count(self) -> int:
        """Number of DOFs D."""
        return int(self.joint_positions.shape[0])

    def validate(self) -> None:
        """Check every array's shape, dtype and contiguity.

        Raises:
            SimrtError: naming the first offending field.
        """
        b = len(self.body_paths)
        c = int(np.asarray(self.contact_body0).shape[0])
        d = int(np.asarray(self.joint_positions).shape[0])
        specs = [
            ("body_positions", (b, 3), np.float64),
            ("body_orientations", (b, 4), np.float64),
            ("body_com_local", (b, 3), np.float64),
            ("body_linear_velocities", (b, 3), np.float64),
            ("body_angular_velocities", (b, 3), np.float64),
            ("body_linear_accelerations", (b, 3), np.float64),
            ("body_angular_accelerations", (b, 3), np.float64),
            ("contact_body0", (c,), np.int64),
            ("contact_body1", (c,), np.int64),
            ("contact_positions", (c, 3), np.float64),
            ("contact_normals", (c, 3), np.float64),
            ("contact_impulses", (c, 3), np.float64),
            ("contact_dts", (c,), np.float64),
            ("contact_events", (c,), np.int64),
            ("joint_positions", (d,), np.float64),
            ("joint_velocities", (d,), np.float64),
            ("joint_efforts", (d,), np.float64),
            ("gravity", (3,), np.float64),
        ]
        for name, shape, dtype in specs:
            value = getattr(self, name)
            if value is None and name in (
                "body_linear_accelerations",
                "body_angular_accelerations",
                "contact_dts",
                "contact_events",
            ):
                continue
            if not isinstance(value, np.ndarray):
                raise SimrtError(f"PhysicsState.{name}: expected a numpy array, got {type(value)}")
            if value.shape != shape or value.dtype != dtype:
                raise SimrtError(
                    f"PhysicsState.{name}: expected shape {shape} dtype {np.dtype(dtype)}, "
                    f"got shape {value.shape} dtype {value.dtype}"
                )
            if not value.flags.c_contiguous:
                raise SimrtError(f"PhysicsState.{name}: array must be C-contiguous")
        if c and (
            np.any(self.contact_body0 < 0)
            or np.any(self.contact_body0 >= b)
            or np.any(self.contact_body1 < -1)
            or np.any(self.contact_body1 >= b)
        ):
            raise SimrtError("PhysicsState.contact_body0/1: index out of range of body_paths")
        if not (np.isfinite(self.dt) and self.dt >= 0.0):
            raise SimrtError(f"PhysicsState.dt: must be finite and >= 0, got {self.dt}")
        if not (np.isfinite(self.meters_per_unit) and self.meters_per_unit > 0.0):
            raise SimrtError(
                f"PhysicsState.meters_per_unit: must be finite and > 0, got {self.meters_per_unit}"
            )


def _f64(value: object, shape: tuple[int, ...], name: str) -> np.ndarray:
    array = np.ascontiguousarray(np.asarray(value, dtype=np.float64))
    if array.size == 0 and int(np.prod(shape)) == 0:
        array = array.reshape(shape)
    if array.shape != shape:
        raise SimrtError(f"PhysicsState.{name}: expected shape {shape}, got {array.shape}")
    return array


def _i64(value: object, count: int, name: str) -> np.ndarray:
    array = np.ascontiguousarray(np.asarray(value, dtype=np.int64)).reshape(-1)
    if array.shape != (count,):
        raise SimrtError(f"PhysicsState.{name}: expected shape ({count},), got {array.shape}")
    return array


def make_physics_state(
    body_paths: Sequence[str],
    body_positions: object,
    body_orientations: object,
    body_linear_velocities: object | None = None,
    body_angular_velocities: object | None = None,
    *,
    body_com_local: object | None = None,
    body_linear_accelerations: object | None = None,
    body_angular_accelerations: object | None = None,
    contact_body0: object | None = None,
    contact_body1: object | None = None,
    contact_positions: object | None = None,
    contact_normals: object | None = None,
    contact_impulses: object | None = None,
    contact_dts: object | None = None,
    contact_events: object | None = None,
    joint_positions: object | None = None,
    joint_velocities: object | None = None,
    joint_efforts: object | None = None,
    dt: float = 0.0,
    time: float = 0.0,
    step: int = 0,
    gravity: object = (0.0, 0.0, -9.81),
    meters_per_unit: float = 1.0,
) -> PhysicsState:
    """Build a validated :class:`PhysicsState` from array-likes (the boundary helper).

    Missing optional arrays default to zeros (velocities, COM offsets, joint velocities and
    efforts), empty (contacts, joints) or ``None`` (accelerations, contact dts). Inputs are
    converted to C-contiguous float64 / int64 copies.

    Args:
        body_paths: rigid-body USD paths, length B.
        body_positions: (B, 3) body origins [stage units], world.
        body_orientations: (B, 4) wxyz body->world quaternions (normalised here).
        body_linear_velocities: (B, 3) COM linear velocities [stage units/s], world.
        body_angular_velocities: (B, 3) angular velocities [rad/s], world.
        body_com_local: (B, 3) centre of mass in the body frame [stage units].
        body_linear_accelerations: optional (B, 3) COM accelerations [stage units/s^2], world.
        body_angular_accelerations: optional (B, 3) angular accelerations [rad/s^2], world.
        contact_body0: (C,) body indices; impulse acts on this body.
        contact_body1: (C,) body indices or -1.
        contact_positions: (C, 3) contact points [stage units], world.
        contact_normals: (C, 3) unit normals, world.
        contact_impulses: (C, 3) impulses on body0 [mass x stage units / s], world.
        contact_dts: optional (C,) per-contact report dt [s].
        contact_events: optional (C,) report event id per point (see :class:`PhysicsState`).
        joint_positions: (D,) DOF positions [rad or stage units].
        joint_velocities: (D,) DOF velocities.
        joint_efforts: (D,) DOF efforts.
        dt: step size [s].
        time: simulation time after the step [s].
        step: step counter (1 after the first step).
        gravity: (3,) gravity acceleration [stage units/s^2], world.
        meters_per_unit: stage metersPerUnit.

    Returns:
        The validated state.

    Raises:
        SimrtError: on any shape, dtype or range problem, naming the field.
    """
    if type(body_paths) is tuple and all(type(p) is str for p in body_paths):
        paths = body_paths  # the caller's tuple: SensorRuntime.step checks it by identity
    else:
        paths = tuple(str(p) for p in body_paths)
    b = len(paths)
    orientations = _f64(body_orientations, (b, 4), "body_orientations")
    norms = np.linalg.norm(orientations, axis=1)
    if b and not np.all(np.isfinite(norms) & (norms > 0.0)):
        raise SimrtError("PhysicsState.body_orientations: quaternions must be finite, non-zero")
    if b:
        orientations = np.ascontiguousarray(orientations / norms[:, None])
    zeros_b3 = np.zeros((b, 3))
    c = 0 if contact_body0 is None else int(np.asarray(contact_body0).reshape(-1).shape[0])
    jp = np.zeros(0) if joint_positions is None else np.asarray(joint_positions, np.float64)
    d = int(jp.reshape(-1).shape[0])
    state = PhysicsState(
        body_paths=paths,
        body_positions=_f64(body_positions, (b, 3), "body_positions"),
        body_orientations=orientations,
        body_com_local=_f64(
            zeros_b3 if body_com_local is None else body_com_local, (b, 3), "body_com_local"
        ),
        body_linear_velocities=_f64(
            zeros_b3 if body_linear_velocities is None else body_linear_velocities,
            (b, 3),
            "body_linear_velocities",
        ),
        body_angular_velocities=_f64(
            zeros_b3 if body_angular_velocities is None else body_angular_velocities,
            (b, 3),
            "body_angular_velocities",
        ),
        body_linear_accelerations=None
        if body_linear_accelerations is None
        else _f64(body_linear_accelerations, (b, 3), "body_linear_accelerations"),
        body_angular_accelerations=None
        if body_angular_accelerations is None
        else _f64(body_angular_accelerations, (b, 3), "body_angular_accelerations"),
        contact_body0=_i64(
            np.zeros(0) if contact_body0 is None else contact_body0, c, "contact_body0"
        ),
        contact_body1=_i64(
            np.full(c, -1) if contact_body1 is None else contact_body1, c, "contact_body1"
        ),
        contact_positions=_f64(
            np.zeros((c, 3)) if contact_positions is None else contact_positions,
            (c, 3),
            "contact_positions",
        ),
        contact_normals=_f64(
            np.zeros((c, 3)) if contact_normals is None else contact_normals,
            (c, 3),
            "contact_normals",
        ),
        contact_impulses=_f64(
            np.zeros((c, 3)) if contact_impulses is None else contact_impulses,
            (c, 3),
            "contact_impulses",
        ),
        contact_dts=None if contact_dts is None else _f64(contact_dts, (c,), "contact_dts"),
        contact_events=None
        if contact_events is None
        else _i64(contact_events, c, "contact_events"),
        joint_positions=_f64(jp, (d,), "joint_positions"),
        joint_velocities=_f64(
            np.zeros(d) if joint_velocities is None else joint_velocities, (d,), "joint_velocities"
        ),
        joint_efforts=_f64(
            np.zeros(d) if joint_efforts is None else joint_efforts, (d,), "joint_efforts"
        ),
        dt=float(dt),
        time=float(time),
        step=int(step),
        gravity=_f64(gravity, (3,), "gravity"),
        meters_per_unit=float(meters_per_unit),
        verified=True,
    )
    state.validate()
    return state


def empty_physics_state(body_paths: Sequence[str], dof_count: int = 0) -> PhysicsState:
    """A state with every body at the origin, at rest, identity orientation, no contacts.

    Args:
        body_paths: rigid-body USD paths, length B.
        dof_count: number of DOFs D.

    Returns:
        A validated state (step 0, time 0, dt 0) suitable as a preallocated buffer.
    """
    b = len(body_paths)
    orientations = np.zeros((b, 4))
    orientations[:, 0] = 1.0
    return make_physics_state(
        body_paths,
        np.zeros((b, 3)),
        orientations,
        joint_positions=np.zeros(dof_count),
    )
