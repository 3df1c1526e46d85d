"""MuJoCo physics engine driven by a USD stage, producing :class:`PhysicsState` each step.

State mapping (all world frame, stage units; see ``runtime.sensors.state``):

* timing: everything describes the state *after* the last step. ``mj_step`` leaves the
  derived kinematics at the pre-integration state, so :meth:`MujocoEngine.state` first
  recomputes position / velocity kinematics (``mj_kinematics``, ``mj_comPos``,
  ``mj_comVel``); contacts and forces are those used during the step just taken.
* body poses: MuJoCo ``xpos``/``xquat`` -- the MuJoCo body frame is the USD body frame (the
  builder never moves it to the inertial frame).
* linear velocity: centre-of-mass velocity, from ``cvel`` (a spatial velocity expressed at the
  subtree centre of mass of the kinematic tree) shifted to the body COM ``xipos``:
  ``v_com = v + w x (xipos - subtree_com[root])``. Angular velocity: ``cvel[:3]``.
* accelerations (optional, ``compute_accelerations=True``): ``mj_rnePostConstraint`` ->
  ``cacc`` shifted to the COM, plus the ``w x v`` term (classical acceleration), plus
  gravity (MuJoCo's ``cacc`` carries a fictitious ``-gravity``); a free-falling body reports
  ``gravity``, a body at rest 0.
* contacts: one record per active MuJoCo contact. ``mj_contactForce`` gives the force that
  geom1 exerts on geom2 in the contact frame (normal = first frame row, from geom1 towards
  geom2). We report ``body0`` = body of geom2, ``body1`` = body of geom1, normal from body1
  towards body0, impulse on body0 = world force x dt. When geom2 belongs to nothing listed,
  the roles are swapped (impulse and normal negated).
* joints: DOF-table order. q / qd from ``qpos`` / ``qvel`` (sign flipped for joints used
  reversed in the tree); ball joints report the rotation vector (axis x angle) of the joint
  quaternion and the angular velocity, both in the child body frame (the joint frame when
  ``localRot`` on the child side is the identity, as in the converters' output).
  **Effort** (docs/sensors/joint-state-effort.md#effort: the generalised force transmitted through
  the DOF onto the child link, drive and limit included) = ``qfrc_actuator + qfrc_passive`` of that
  DOF (drive / actuator force, joint damping / springs, gravity compensation) + the joint-limit
  and DOF-friction-loss constraint forces of that DOF. Contact forces are not included (they
  act on the bodies, not through the joint). Ball-joint limit forces are not projected.

Cost: :meth:`MujocoEngine.state` is three MuJoCo calls (``mj_kinematics``, ``mj_comPos``,
``mj_comVel``; plus ``mj_rnePostConstraint`` for accelerations) and one Numba call
(:func:`runtime.engine._kernels.state_kernel`). The kernel reads ``MjData`` through one
float64 view of its buffer and MuJoCo's contact structs through a view of the start of the
arena (where MuJoCo keeps ``d.contact``), so no per-contact Python work happens; the
fresh output arrays are views into four blocks allocated per call. ``state(reuse=True)``
fills engine-owned buffers instead (no allocation; valid until the next such call).
``benchmarks/engine.py`` times both against ``mj_step``.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable, Sequence

import mujoco
import numpy as np
from pxr import Usd

from runtime.engine import _kernels as K
from runtime.engine._build_types import BuiltModel, DofBinding
from runtime.engine._divergence import check_warnings
from runtime.engine._dof_order import order_dofs
from runtime.engine._kernels import state_kernel
from runtime.engine.forward_reuse import ForwardReuse
from runtime.errors import SimrtError
from runtime.sensors.state import PhysicsState

__all__ = ["MujocoEngine"]

_LOG = logging.getLogger("runtime.engine")

# MjData arrays read by state_kernel, in the order of the H_XPOS ... H_QFRC_PASSIVE slots
_MJ_ARRAYS = (
    "xpos",
    "xquat",
    "xipos",
    "subtree_com",
    "cvel",
    "cacc",
    "qpos",
    "qvel",
    "qfrc_actuator",
    "qfrc_passive",
)


class MujocoEngine:
    """A MuJoCo simulation built from the USD physics of a stage.

    Construct once (parses USD, builds and compiles the model, resolves the DOF order),
    then call :meth:`step` and :meth:`state`.

    Args:
        stage: the stage (``runtime.schema`` imported before it was opened).
        robot_prim: robot prim (path or prim) whose DOF table
            (``runtime.schema.dof.build_dof_table``) orders the joint arrays; ``None``: the
            table of the stage's robot (first ``IsaacRobotAPI`` prim, else the default prim)
            when it covers exactly the simulated DOFs, else every simulated DOF in model
            build order (depth-first body tree).
        dt: time step override [s]; ``None`` = from the PhysicsScene (default 1/60 s).
        compute_accelerations: also fill body accelerations in :meth:`state`.

    Attributes:
        built: the builder output (MuJoCo spec/model, USD bookkeeping, warnings).
        model: the compiled ``mujoco.MjModel``.
        data: the ``mujoco.MjData``.
        dofs: DOF bindings in reported order.
    """

    def __init__(
        self,
        stage: Usd.Stage,
        robot_prim: str | Usd.Prim | None = None,
        dt: float | None = None,
        *,
        compute_accelerations: bool = False,
        built: BuiltModel | None = None,
    ) -> None:
        self.stage = stage
        # ``built``: a BuiltModel of this stage and dt made earlier (the scene cache)
        if built is None:
            from runtime.engine.builder import build_model  # (not needed on a cache hit)

            built = build_model(stage, dt)
        self.built: BuiltModel = built
        self.model = self.built.model
        self.data = mujoco.MjData(self.model)
        self.compute_accelerations = bool(compute_accelerations)
        self.dofs: list[DofBinding] = order_dofs(stage, list(self.built.dofs), robot_prim)
        self._index_dofs()
        built = self.built
        dynamic = ~built.is_static
        self._rows = np.nonzero(dynamic)[0]
        self._ids = built.body_ids[self._rows]
        self._roots = self.model.body_rootid[self._ids]
        self._com_local = np.zeros((len(built.body_paths), 3))
        self._com_local[self._rows] = self.model.body_ipos[self._ids]
        self._static_rows = np.nonzero(built.is_static)[0]
        self._gravity = np.array(self.model.opt.gravity, dtype=np.float64)
        self._limit_type = int(mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT)
        self._jnt_type = self.model.jnt_type.astype(np.int64)
        self._jnt_qposadr = self.model.jnt_qposadr.astype(np.int64)
        self._jnt_dofadr = self.model.jnt_dofadr.astype(np.int64)
        self._scalar_joint_types = (
            int(mujoco.mjtJoint.mjJNT_HINGE),
            int(mujoco.mjtJoint.mjJNT_SLIDE),
        )
        self._friction_type = int(mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF)
        self._pyramidal = bool(self.model.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL)
        self._rows = np.ascontiguousarray(self._rows, dtype=np.int64)
        self._ids = np.ascontiguousarray(self._ids, dtype=np.int64)
        self._roots = np.ascontiguousarray(self._roots, dtype=np.int64)
        self._step = 0
        self._map_data_buffer()
        self._build_tables()
        self._unmap_contacts()
        self._work_i = np.zeros(1, dtype=np.int64)
        self._work_f = np.zeros(self.model.nv)
        self._work_con = self._work_efc = 0  # contacts / constraint rows the scratch fits
        self._cap_con = self._cap_efc = 0
        self._scalar_dofs = bool(len(self._scalar))
        self._no_efc_f = np.zeros(0)
        self._no_efc_i = np.zeros(0, dtype=np.int32)
        self._reuse_buffers: tuple[np.ndarray, ...] | None = None
        self._reuse_cap = 0
        self._reuse_views: dict = {}
        self._reuse_states: dict = {}
        # the post-step mj_forward of readers of accelerations, reused by the next step
        self.forward_reuse = ForwardReuse(self.model, self.data)
        self.reset()

    def _index_dofs(self) -> None:
        self._q_adr = np.array([b.qpos_adr for b in self.dofs], dtype=np.int64)
        self._v_adr = np.array([b.dof_adr for b in self.dofs], dtype=np.int64)
        self._sign = np.array([b.sign for b in self.dofs], dtype=np.float64)
        self._ball = np.array([b.ball_axis for b in self.dofs], dtype=np.int64)
        self._scalar = np.nonzero(self._ball < 0)[0]
        self._balls = np.nonzero(self._ball >= 0)[0]
        self._lookup: dict[str, int] = {}
        for i, b in enumerate(self.dofs):
            self._lookup.setdefault(b.name, i)
            self._lookup.setdefault(f"{b.joint_path}:{b.token}", i)
        for i, b in enumerate(self.dofs):
            if sum(1 for x in self.dofs if x.joint_path == b.joint_path) == 1:
                self._lookup.setdefault(b.joint_path, i)
        self.dof_names = tuple(b.name for b in self.dofs)

    # ------------------------------------------------ MuJoCo's memory and the kernel tables
    # The state kernel reads MjData through one float64 view of its buffer and MuJoCo's
    # contact structs through a view of the start of the arena (where MuJoCo keeps
    # d.contact); these build and validate the views and the kernel's tables.

    def _map_data_buffer(self) -> None:
        """One float64 view over the MjData buffer region holding the arrays state() reads.

        ``mj_makeData`` places every fixed-size ``mjData`` array in one allocation
        (``nbuffer`` bytes) that lives as long as the ``MjData``; one view plus offsets
        saves ten array arguments per kernel call.
        """
        arrays = [getattr(self.data, name) for name in _MJ_ARRAYS]
        present = [a for a in arrays if a.size]  # empty arrays (nq = 0) have no address
        base = min(a.ctypes.data for a in present)
        end = max(a.ctypes.data + a.nbytes for a in present)
        for name, a in zip(_MJ_ARRAYS, arrays, strict=True):
            if (
                a.dtype != np.float64
                or not a.flags.c_contiguous
                or (a.size and (a.ctypes.data - base) % 8)
            ):
                raise SimrtError(f"unexpected MjData.{name} layout (MuJoCo {mujoco.__version__})")
        if end - base > self.data.nbuffer:
            raise SimrtError(f"MjData arrays span more than nbuffer (MuJoCo {mujoco.__version__})")
        n = (end - base) // 8
        self._mj = np.ctypeslib.as_array((ctypes.c_double * n).from_address(base))
        self._mj_offsets = [(a.ctypes.data - base) // 8 if a.size else 0 for a in arrays]
        for off, a in zip(self._mj_offsets, arrays, strict=True):  # the view is the data
            if a.size and not np.shares_memory(self._mj[off : off + a.size], a):
                raise SimrtError("MjData buffer view does not alias the MjData arrays")

    def _build_tables(self) -> None:
        """Pack the per-engine constants of :func:`state_kernel` into ``tab_i`` / ``tab_f``."""
        m, built = self.model, self.built
        nb = len(built.body_paths)
        nd = len(self.dofs)
        head = np.zeros(K.H_SIZE, dtype=np.int64)
        parts: list[np.ndarray] = [head]
        size = K.H_SIZE

        def add(slot: int, *arrays: np.ndarray) -> None:
            nonlocal size
            head[slot] = size
            for a in arrays:
                parts.append(np.asarray(a, dtype=np.int64).reshape(-1))
                size += parts[-1].size

        add(K.H_BODY_MAP, self._rows, self._ids, self._roots)
        add(K.H_GEOM_BODY, built.geom_body_index)
        add(K.H_DOF_MAP, self._q_adr, self._v_adr, self._ball)
        add(K.H_JNT_MAP, self._jnt_type, self._jnt_qposadr, self._jnt_dofadr)
        head[K.H_NBODY] = m.nbody
        head[K.H_B] = nb
        head[K.H_K] = len(self._rows)
        head[K.H_D] = nd
        head[K.H_NJNT] = m.njnt
        head[K.H_NV] = m.nv
        head[K.H_NQ] = m.nq
        head[K.H_NGEOM] = m.ngeom
        for slot, off in zip(range(K.H_XPOS, K.H_QFRC_PASSIVE + 1), self._mj_offsets, strict=True):
            head[slot] = off
        head[K.H_LIMIT_TYPE] = self._limit_type
        head[K.H_FRICTION_TYPE] = self._friction_type
        head[K.H_SLIDE] = int(mujoco.mjtJoint.mjJNT_SLIDE)
        head[K.H_HINGE] = int(mujoco.mjtJoint.mjJNT_HINGE)
        head[K.H_PYRAMIDAL] = int(self._pyramidal)
        head[K.H_SCALAR_DOFS] = len(self._scalar)
        self._tab_i = np.ascontiguousarray(np.concatenate(parts))
        self._tab_f = np.ascontiguousarray(
            np.concatenate(
                [
                    np.asarray(built.static_positions, dtype=np.float64).reshape(-1),
                    np.asarray(built.static_orientations, dtype=np.float64).reshape(-1),
                    self._gravity,
                    self._sign,
                    [float(m.opt.timestep)],
                ]
            )
        )
        self._jnt_range = m.jnt_range
        self._nb = nb
        self._nd = nd

    def _unmap_contacts(self) -> None:
        self._con_f = np.zeros((0, 1))
        self._con_i = np.zeros((0, 1), dtype=np.int32)
        self._con_base = 0
        self._con_seen = 0

    def _map_contacts(self, nc: int) -> None:
        """View MuJoCo's contact array (the start of the MjData arena) as float64 / int32 rows.

        MuJoCo keeps ``d.contact`` at the start of its arena (``parena = ncon *
        sizeof(mjContact)``), so the views stay valid for the life of the ``MjData``. They
        are re-validated whenever more contacts than ever before are present.
        """
        con = self.data.contact
        size = int(con.dist.strides[0])
        base = int(con.dist.ctypes.data)
        if base != self._con_base:
            if self._con_base:
                _LOG.warning("MuJoCo moved its contact array; re-mapping")
            cap = int(self.model.narena) // size
            if size % 8 or cap < nc:
                raise SimrtError(f"unexpected mjContact layout (MuJoCo {mujoco.__version__})")
            raw = (ctypes.c_char * (cap * size)).from_address(base)
            self._con_f = np.frombuffer(raw, dtype=np.float64).reshape(cap, size // 8)
            self._con_i = np.frombuffer(raw, dtype=np.int32).reshape(cap, size // 4)
            cols = {}
            for name, width in (("pos", 8), ("frame", 8), ("friction", 8)):
                cols[name] = (getattr(con, name).ctypes.data - base) // width
            for name in ("geom", "dim", "efc_address", "exclude"):
                cols[name] = (getattr(con, name).ctypes.data - base) // 4
            tab = self._tab_i
            tab[K.H_CON_POS] = cols["pos"]
            tab[K.H_CON_FRAME] = cols["frame"]
            tab[K.H_CON_FRICTION] = cols["friction"]
            tab[K.H_CON_GEOM] = cols["geom"]
            tab[K.H_CON_DIM] = cols["dim"]
            tab[K.H_CON_EFC_ADDRESS] = cols["efc_address"]
            tab[K.H_CON_EXCLUDE] = cols["exclude"]
            self._con_base = base
            # the views read what MuJoCo's own accessors read
            if not (
                np.array_equal(self._con_f[:nc, cols["pos"] : cols["pos"] + 3], con.pos)
                and np.array_equal(self._con_i[:nc, cols["geom"] : cols["geom"] + 2], con.geom)
                and np.array_equal(self._con_i[:nc, cols["efc_address"]], con.efc_address)
            ):
                raise SimrtError("contact view does not match MjData.contact")
        self._con_seen = nc

    def _grow(self, nc: int, nefc: int) -> None:
        """Map more contacts / enlarge the kernel scratch for ``nc`` contacts, ``nefc`` rows.

        Afterwards ``nc <= _cap_con`` and ``nefc <= _cap_efc`` (the per-call fast check).
        """
        if nc > self._con_seen:
            self._map_contacts(nc)
        if nc > self._work_con or nefc > self._work_efc:
            self._work_con = max(nc, 2 * self._work_con, 8)
            self._work_efc = max(nefc, 2 * self._work_efc, 8)
            self._work_i = np.zeros(1 + 5 * self._work_con + 2 * self._work_efc, dtype=np.int64)
            self._work_f = np.zeros(self.model.nv + 17 * self._work_con)
        self._cap_con = min(self._work_con, self._con_seen)
        self._cap_efc = self._work_efc

    # ------------------------------------------------------------------ public API

    @property
    def dt(self) -> float:
        """Time step [s]."""
        return float(self.model.opt.timestep)

    @property
    def body_paths(self) -> tuple[str, ...]:
        """USD paths in ``PhysicsState`` body order."""
        return self.built.body_paths

    @property
    def warnings(self) -> list[str]:
        """Warnings logged while building the model."""
        return list(self.built.warnings)

    def reset(self) -> None:
        """Return to the authored state (time 0, step 0, poses, velocities, drive targets)."""
        self.forward_reuse.invalidate()
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = self.built.initial_qpos
        if self.built.initial_qvel is not None:
            self.data.qvel[:] = self.built.initial_qvel
        if self.built.initial_ctrl is not None and self.model.nu:
            self.data.ctrl[:] = self.built.initial_ctrl
        self._dt = float(self.model.opt.timestep)
        self._tab_f[-1] = self._dt
        self._step = 0
        self._dirty = False
        mujoco.mj_forward(self.model, self.data)
        self._warnings = self.data.warning.number  # view of MuJoCo's warning counters
        self._warnings[:] = 0  # build-time warnings are reported by the builder
        self._no_warnings = self._warnings.tobytes()

    def step(self, n: int = 1) -> None:
        """Advance the simulation.

        After every physics step one comparison of MuJoCo's warning counters (a few hundred
        nanoseconds) detects instability; the arrays themselves are not scanned. A step
        right after :meth:`forward_after_step` reuses that forward
        (:mod:`runtime.engine.forward_reuse`; the same trajectory as ``mj_step``).

        Args:
            n: number of physics steps (>= 1).

        Raises:
            EngineDivergenceError: MuJoCo reported non-finite or huge positions,
                velocities, accelerations or controls (it then resets its state) or a
                near-singular inertia matrix; names the step, the time and the DOFs and
                bodies involved. The engine must be :meth:`reset` before stepping again.
        """
        warnings, clean = self._warnings, self._no_warnings
        step = self.forward_reuse.step
        for _ in range(int(n)):
            step()
            self._step += 1
            if warnings.tobytes() != clean:
                self._dirty = True
                check_warnings(self)
        self._dirty = True

    def forward_after_step(self) -> None:
        """``mj_forward`` of the state after the last step (accelerations of the new state).

        For readers of the whole post-step state (Isaac Lab-style IMUs, joint wrenches); the
        next :meth:`step` reuses it when nothing it read has changed, or only the controls
        and applied forces (:mod:`runtime.engine.forward_reuse`).
        """
        self.forward_reuse.forward()

    def resolve_dofs(self, names: Sequence[str | int] | None, count: int) -> np.ndarray:
        """Map DOF names / joint paths / indices onto DOF indices.

        Args:
            names: DOF names, ``"<joint path>:<token>"``, joint paths of single-DOF joints,
                or integer DOF indices; ``None`` = all DOFs in order.
            count: number of values supplied (must match).

        Returns:
            DOF indices, (count,) int64.

        Raises:
            SimrtError: unknown name, index out of range, or length mismatch.
        """
        if names is None:
            if count != len(self.dofs):
                raise SimrtError(f"expected {len(self.dofs)} values (one per DOF), got {count}")
            return np.arange(len(self.dofs), dtype=np.int64)
        if len(names) != count:
            raise SimrtError(f"{len(names)} names but {count} values")
        out = np.empty(count, dtype=np.int64)
        for k, key in enumerate(names):
            if isinstance(key, (int, np.integer)):
                if not 0 <= int(key) < len(self.dofs):
                    raise SimrtError(f"DOF index {key} out of range [0, {len(self.dofs)})")
                out[k] = int(key)
            else:
                idx = self._lookup.get(str(key))
                if idx is None:
                    raise SimrtError(f"unknown DOF {key!r}; known: {', '.join(self.dof_names)}")
                out[k] = idx
        return out

    def _dof_values(
        self, values: Sequence[float] | np.ndarray, names: Sequence[str | int] | None, what: str
    ) -> list[tuple[DofBinding, float]]:
        """Pair per-DOF values with their bindings (names resolved, values checked finite)."""
        vals = np.asarray(values, dtype=np.float64).reshape(-1)
        idx = self.resolve_dofs(names, len(vals))
        if not np.all(np.isfinite(vals)):
            raise SimrtError(f"{what} must be finite")
        return [(self.dofs[i], v) for i, v in zip(idx, vals, strict=False)]

    def set_joint_targets(
        self,
        values: Sequence[float] | np.ndarray,
        names: Sequence[str | int] | None = None,
        *,
        names_or_indices: Sequence[str | int] | None = None,
    ) -> None:
        """Set drive targets.

        Position targets for position drives, velocity targets for velocity drives, ``ctrl``
        for ``MjcActuator`` actuators.

        Args:
            values: targets [rad, rad/s, stage units or stage units/s], one per name.
            names: DOF names, joint paths or DOF indices; ``None`` = all DOFs in order.
            names_or_indices: keyword alias of ``names`` (docs/ARCHITECTURE.md spelling).

        Raises:
            SimrtError: unknown DOF, non-finite value, or a DOF without a drive.
        """
        if names_or_indices is not None:
            if names is not None:
                raise SimrtError("pass either names or names_or_indices, not both")
            names = names_or_indices
        for b, v in self._dof_values(values, names, "joint targets"):
            if b.actuator < 0:
                raise SimrtError(f"DOF {b.name!r} ({b.joint_path}) has no drive to target")
            self.data.ctrl[b.actuator] = v

    def joint_target_setter(self, names: Sequence[str | int]) -> Callable[[np.ndarray], None]:
        """A per-step setter of the drive targets of ``names``, resolved and checked once.

        ``setter(values)`` does what ``set_joint_targets(values, names)`` does (finite values
        required) without resolving the names again: for loops that send targets every step.

        Raises:
            SimrtError: unknown DOF or a DOF without a drive.
        """
        pairs = self._dof_values(np.zeros(len(names)), names, "joint targets")
        for b, _ in pairs:
            if b.actuator < 0:
                raise SimrtError(f"DOF {b.name!r} ({b.joint_path}) has no drive to target")
        actuators = np.array([b.actuator for b, _ in pairs], np.int64)

        def setter(values: np.ndarray) -> None:
            values = np.asarray(values, dtype=np.float64).reshape(-1)
            if values.shape != actuators.shape or not np.isfinite(values).all():
                self.set_joint_targets(values, names)  # its error names the problem
                return
            self.data.ctrl[actuators] = values

        setter.actuators = actuators  # type: ignore[attr-defined]  # (compiled step blocks)
        return setter

    @property
    def actuator_names(self) -> tuple[str, ...]:
        """MuJoCo actuator names (USD prim paths; drives: ``<joint path>:drive``)."""
        return tuple(self.model.actuator(i).name for i in range(self.model.nu))

    def set_controls(
        self, values: Sequence[float] | np.ndarray, names: Sequence[str | int] | None = None
    ) -> None:
        """Set raw MuJoCo actuator controls (e.g. ``MjcActuator`` prims driving a tendon).

        Args:
            values: controls in the actuator's own units, one per name.
            names: actuator names (prim paths, or their last path component when unique) or
                actuator indices; ``None`` = every actuator in model order.

        Raises:
            SimrtError: unknown actuator, length mismatch or non-finite value.
        """
        vals = np.asarray(values, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(vals)):
            raise SimrtError("controls must be finite")
        all_names = self.actuator_names
        if names is None:
            if len(vals) != len(all_names):
                raise SimrtError(f"expected {len(all_names)} controls, got {len(vals)}")
            self.data.ctrl[:] = vals
            return
        if len(names) != len(vals):
            raise SimrtError(f"{len(names)} names but {len(vals)} values")
        short: dict[str, list[int]] = {}
        for i, n in enumerate(all_names):
            short.setdefault(n.rsplit("/", 1)[-1], []).append(i)
        for key, value in zip(names, vals, strict=True):
            if isinstance(key, (int, np.integer)):
                if not 0 <= int(key) < len(all_names):
                    raise SimrtError(f"actuator index {key} out of range")
                idx = int(key)
            elif key in all_names:
                idx = all_names.index(key)
            elif len(short.get(str(key), [])) == 1:
                idx = short[str(key)][0]
            else:
                raise SimrtError(f"unknown actuator {key!r}; known: {', '.join(all_names)}")
            self.data.ctrl[idx] = value

    def set_joint_velocity_targets(
        self, values: Sequence[float] | np.ndarray, names: Sequence[str | int] | None = None
    ) -> None:
        """Set velocity targets of position drives (``kp (x* - x) + kd (v* - v)``).

        Velocity-drive DOFs take the value as their ``ctrl`` (same as
        :meth:`set_joint_targets`).

        Args:
            values: velocity targets [rad/s or stage units/s], one per name.
            names: DOF names, joint paths or DOF indices; ``None`` = all DOFs in order.

        Raises:
            SimrtError: unknown DOF, non-finite value, or a DOF without a USD drive.
        """
        for b, v in self._dof_values(values, names, "joint velocity targets"):
            if b.drive_mode == "position":
                self.model.actuator_biasprm[b.actuator, 0] = b.damping * v
            elif b.drive_mode == "velocity":
                self.data.ctrl[b.actuator] = v
            else:
                raise SimrtError(f"DOF {b.name!r} ({b.joint_path}) has no USD drive")

    def state(self, *, reuse: bool = False) -> PhysicsState:
        """The current physics state.

        Args:
            reuse: ``False`` (default): every array is fresh (safe to keep) except
                ``body_com_local`` and ``body_paths``, which are shared and read-only by
                convention. ``True``: the arrays (and the returned object) are engine-owned
                buffers overwritten by the next ``state(reuse=True)`` call -- no per-step
                allocation, for loops that consume the state before the next step (copy what
                you keep).

        Returns:
            A :class:`PhysicsState` in the conventions of ``runtime.sensors.state``.
        """
        nc, acc, efc_force, efc_type, efc_id = self._state_inputs()
        if reuse:
            return self._refill(nc, acc, efc_force, efc_type, efc_id)
        b = self._nb
        row = 5 * b if acc else 3 * b
        vec = np.empty((row + 3 * nc + 1, 3))
        quat = np.empty((b, 4))
        joint = np.empty((3, self._nd))
        ids = np.empty((2, nc), dtype=np.int64)
        work_i = self._work_i
        state_kernel(
            self._mj,
            self._con_f,
            self._con_i,
            efc_force,
            efc_type,
            efc_id,
            self._jnt_range,
            self._tab_i,
            self._tab_f,
            work_i,
            self._work_f,
            acc,
            vec,
            quat,
            joint,
            ids,
        )
        kept = int(work_i[0])
        return self._wrap(vec, quat, joint, ids, nc, kept, acc, self.data.time)

    def _state_inputs(self) -> tuple[int, bool, np.ndarray, np.ndarray, np.ndarray]:
        """Bring MuJoCo's derived arrays up to the step; the state kernel's per-step inputs.

        Returns:
            ``(contacts, accelerations, efc_force, efc_type, efc_id)``: the contact count,
            whether the acceleration rows are filled, and the constraint arrays (empty
            stand-ins when there are none or no scalar DOF receives their forces).
        """
        m, d = self.model, self.data
        if self._dirty:
            # mj_step leaves xpos / cvel at the state *before* its integration: bring the
            # position / velocity kinematics up to the new qpos / qvel (contacts and forces
            # stay those of the step just taken).
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_comVel(m, d)
            self._dirty = False
        acc = self.compute_accelerations
        if acc:
            mujoco.mj_rnePostConstraint(m, d)
        nc = d.ncon
        nefc = d.nefc
        if nc > self._cap_con or nefc > self._cap_efc:
            self._grow(nc, nefc)
        if nefc:
            efc_force = d.efc_force
            if self._scalar_dofs:
                efc_type, efc_id = d.efc_type, d.efc_id
            else:  # no hinge / slide DOF receives constraint forces
                efc_type = efc_id = self._no_efc_i
        else:
            efc_force, efc_type, efc_id = self._no_efc_f, self._no_efc_i, self._no_efc_i
        return nc, acc, efc_force, efc_type, efc_id

    def _wrap(
        self,
        vec: np.ndarray,
        quat: np.ndarray,
        joint: np.ndarray,
        ids: np.ndarray,
        nc: int,
        kept: int,
        acc: bool,
        time: float,
    ) -> PhysicsState:
        """A PhysicsState viewing the kernel's output blocks (layout: :func:`state_kernel`)."""
        b = self._nb
        row = 5 * b if acc else 3 * b
        return PhysicsState(
            self.built.body_paths,
            vec[:b],
            quat,
            self._com_local,
            vec[b : 2 * b],
            vec[2 * b : 3 * b],
            vec[3 * b : 4 * b] if acc else None,
            vec[4 * b : 5 * b] if acc else None,
            ids[0, :kept],
            ids[1, :kept],
            vec[row : row + kept],
            vec[row + nc : row + nc + kept],
            vec[row + 2 * nc : row + 2 * nc + kept],
            joint[0],
            joint[1],
            joint[2],
            self._dt,
            time,
            self._step,
            vec[-1],
            self.built.meters_per_unit,
            verified=True,  # views of the kernel's C-contiguous float64 / int64 blocks
        )

    def _reuse_block(self, nc: int, acc: bool) -> tuple[np.ndarray, ...]:
        """Views of the engine-owned output buffers for ``nc`` contacts (grown as needed)."""
        b = self._nb
        buf = self._reuse_buffers
        if buf is None or nc > self._reuse_cap:
            self._reuse_cap = max(nc, 2 * self._reuse_cap, 8)
            buf = self._reuse_buffers = (
                np.zeros((5 * b + 3 * self._reuse_cap + 1, 3)),
                np.zeros((b, 4)),
                np.zeros((3, self._nd)),
            )
            self._reuse_views = {}
            self._reuse_states = {}
        rows = (5 * b if acc else 3 * b) + 3 * nc + 1
        return buf[0][:rows], buf[1], buf[2], np.zeros((2, nc), dtype=np.int64)

    def _refill(
        self,
        nc: int,
        acc: bool,
        efc_force: np.ndarray,
        efc_type: np.ndarray,
        efc_id: np.ndarray,
    ) -> PhysicsState:
        """``state(reuse=True)``: run the kernel into engine-owned buffers.

        One buffer set per engine (grown with the contact count); per (contact count,
        accelerations) a view of it plus a contact-id block, per (contact count, records
        kept, accelerations) one cached PhysicsState of views into those.
        """
        views = self._reuse_views.get((nc, acc))
        if views is None:
            views = self._reuse_views[(nc, acc)] = self._reuse_block(nc, acc)
        vec, quat, joint, ids = views
        work_i = self._work_i
        state_kernel(
            self._mj,
            self._con_f,
            self._con_i,
            efc_force,
            efc_type,
            efc_id,
            self._jnt_range,
            self._tab_i,
            self._tab_f,
            work_i,
            self._work_f,
            acc,
            vec,
            quat,
            joint,
            ids,
        )
        kept = int(work_i[0])
        state = self._reuse_states.get((nc, kept, acc))
        if state is None:
            state = self._wrap(vec, quat, joint, ids, nc, kept, acc, 0.0)
            self._reuse_states[(nc, kept, acc)] = state
        state.time = self.data.time
        state.step = self._step
        state.dt = self._dt
        return state
