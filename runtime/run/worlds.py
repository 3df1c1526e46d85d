"""Many worlds of one scene, stepped together: the core of the vector environments.

:class:`Worlds` holds N copies of a scene's simulation -- N ``MujocoEngine`` s over one
compiled model (from the scene cache), N sensor runtimes over one ray scene, each world's
sensor taps writing into one set of observation arrays whose first axis is the world --
and steps them with the run's own machinery:

* the general path (``engine.step()``, ``SensorRuntime.step``, every tap's row), which a
  world takes for its first step after a reset, after a MuJoCo warning, or when contact
  arrays grow; it is the reference;
* the compiled path, once a world is in its steady state: one call of
  :func:`runtime.run._vector_kernels.vector_step_kernel` per slice of worlds, releasing the
  GIL, writes each world's actions into MuJoCo, takes ``decimation`` physics steps and runs
  the fused step (:class:`~runtime.run.fused.FusedStep`: state, sensors, observation row)
  after each, as ``simrt run``'s compiled blocks do. Tests compare both paths bit for bit.

Sensors are stepped after every physics step (as in ``simrt run``), so a world's rows
equal a recording of the same scene with the same targets; the observation row holds the
last physics step's values. ``threads`` > 1 steps slices of worlds on a persistent pool.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from runtime._compile.jit import JIT_DISABLED, CompiledCall
from runtime.engine import ModelSnapshot, check_warnings
from runtime.errors import EngineDivergenceError, SimrtError
from runtime.run import _fused_kernels as F
from runtime.run import _mujoco_native
from runtime.run import _vector_kernels as V
from runtime.run._native_kernels import array_address
from runtime.run.build import build_engine, cached_ray_scene, open_scene_cache, store_ray_scene
from runtime.run.config import RunConfig, read_scene_settings
from runtime.run.fused import FusedStep
from runtime.run.rows import define_state_channels
from runtime.run.scene import find_robot, open_scene_stage
from runtime.run.taps import SensorTap

LOGGER = logging.getLogger("runtime.run")

__all__ = ["Worlds", "ACTION_MODES"]

ACTION_MODES = ("position", "velocity", "effort")
MAX_WORLDS = 1 << 16  # (each world holds a MuJoCo data, sensors and observation rows)
_ALIGN = 64


def _aligned(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A zeroed C-ordered array whose data starts on a cache line."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(size + _ALIGN, np.uint8)
    start = (-array_address(raw)) % _ALIGN
    return raw[start : start + size].view(dtype).reshape(shape)


class _Rows:
    """A store writer's stand-in for one world: its rows are one row of shared arrays.

    Taps and :func:`define_state_channels` register channels with :meth:`add_channel`; the
    fused step writes a world's row in place (row = the world's index).
    """

    def __init__(self, row: int) -> None:
        self.row = row
        self.infos: list[Any] = []
        self._buffers: list[np.ndarray] = []

    def add_channel(self, info: Any) -> int:
        self.infos.append(info)
        return len(self.infos) - 1

    def begin_row(self) -> tuple[list[np.ndarray], int]:
        return self._buffers, self.row

    def end_row(self, step: int, time: float) -> None:
        self._buffers[-2][self.row] = step
        self._buffers[-1][self.row] = time


@dataclasses.dataclass
class _World:
    engine: Any
    sensors: Any
    taps: list[Any]
    rows: _Rows
    joint_slots: dict[str, int]
    body_slots: dict[str, int]
    targets: np.ndarray  # (D,) the recorded drive targets (a row of Worlds.targets)
    snapshot: Any = None  # the ModelSnapshot restored at reset (worlds with their own model)
    fused: Any = None
    bound_step: int = 0  # the engine's step when the world took the compiled path
    contacts: int = 0  # the most contacts seen (the fused step's state buffers hold them)
    clean: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))


class Worlds:
    """N worlds of one scene stepped together (see the module docstring).

    Args:
        scene: path of a USD scene, or an open ``Usd.Stage``.
        num_envs: number of worlds (>= 1).
        decimation: physics steps per :meth:`step` (>= 1).
        actuated: the DOFs the actions drive (names, joint paths or indices); None: every
            DOF with a drive (``"position"``) or every DOF (``"effort"``).
        action_mode: ``"position"`` (position drives' targets [rad or m]),
            ``"velocity"`` (velocity drives' targets [rad/s or m/s]) or ``"effort"``
            (generalized forces [N m or N] added as MuJoCo's ``qfrc_applied``).
        threads: threads stepping slices of worlds (>= 1).
        own_models: give every world its own copy of the compiled model (for per-world
            mass / friction / gain randomization); otherwise one model is shared.
        compiled: use the compiled path (False: the general path only; tests).
        **settings: :class:`~runtime.run.config.RunConfig` overrides (``dt``, ``robot``,
            ``imu_mode``, ``record_bodies``, ``cache``).

    Attributes:
        stage: the scene's stage.
        model: world 0's compiled ``mujoco.MjModel`` (every world's when shared).
        engines: the worlds' engines.
        dof_names: DOF names in DOF-table order.
        lower / upper: DOF limits [rad or m], (D,).
        channels: the observation channels' ``ChannelInfo`` by name.
        buffers: the observation arrays by channel name, (N, *shape) each, written in
            place by every step (copy what you keep).
        step_count / time: (N,) each world's physics step counter and time [s].
    """

    def __init__(
        self,
        scene: Any,
        num_envs: int,
        *,
        decimation: int = 1,
        actuated: Sequence[str | int] | None = None,
        action_mode: str = "position",
        threads: int = 1,
        own_models: bool = False,
        compiled: bool = True,
        **settings: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise SimrtError(f"num_envs must be an integer, got {num_envs!r}")
        if num_envs < 1:
            raise SimrtError(f"num_envs must be at least 1, got {num_envs}")
        if num_envs > MAX_WORLDS:
            raise SimrtError(f"num_envs {num_envs} is above the limit of {MAX_WORLDS} worlds")
        if isinstance(decimation, bool) or not isinstance(decimation, (int, np.integer)):
            raise SimrtError(f"decimation must be an integer, got {decimation!r}")
        if decimation < 1:
            raise SimrtError(f"decimation must be at least 1, got {decimation}")
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
            raise SimrtError(f"threads must be an integer >= 1, got {threads!r}")
        if action_mode not in ACTION_MODES:
            raise SimrtError(f"action_mode {action_mode!r} not in {ACTION_MODES}")
        from runtime.engine.mujoco_engine import MujocoEngine
        from runtime.schema.dof import build_dof_table
        from runtime.sensors.runtime import SensorRuntime

        self.num_envs = n = int(num_envs)
        self.decimation = int(decimation)
        self.threads = int(threads)
        self.action_mode = action_mode
        self.stage = stage = open_scene_stage(scene)
        self.config = config = RunConfig.resolve(read_scene_settings(stage), **settings)
        robot_prim = find_robot(stage, config.robot)
        if robot_prim is None:
            raise SimrtError(
                f"{_name(scene)}: the scene has no robot (no prim with IsaacRobotAPI); "
                "an environment needs one"
            )
        self.robot_path = robot_path = str(robot_prim.GetPath())
        grippers = [str(p.GetPath()) for p in stage.Traverse()
                    if p.GetTypeName() == "IsaacSurfaceGripper"]  # fmt: skip
        if grippers:  # (their runtime writes its state back into the one shared stage)
            LOGGER.warning(
                "%s: surface grippers are not simulated in the worlds (they stay open): %s",
                _name(scene),
                ", ".join(grippers),
            )
        self.scene_cache = open_scene_cache(stage, config.dt, config.cache)
        options = {
            "robot_prim": robot_prim,
            "dt": config.dt,
            "compute_accelerations": config.imu_mode == "physical",
        }
        first = build_engine(stage, self.scene_cache, **options)
        engines = [first]
        for _ in range(1, n):
            built = first.built
            if own_models:
                built = dataclasses.replace(built, model=copy.copy(built.model))
            engines.append(MujocoEngine(stage, built=built, **options))
        if own_models:  # (world 0 too: its model is the one the cache holds)
            first_built = dataclasses.replace(first.built, model=copy.copy(first.built.model))
            engines[0] = MujocoEngine(stage, built=first_built, **options)
        self.engines = engines
        self.model = engines[0].model
        dof_table = getattr(first, "dof_table", None) or build_dof_table(stage, robot_prim)
        self.dof_table = dof_table
        self.dof_names = tuple(dof_table.names)
        self.lower = np.array([e.lower for e in dof_table.entries], np.float64)
        self.upper = np.array([e.upper for e in dof_table.entries], np.float64)
        state = first.state()
        self.body_paths = body_paths = tuple(state.body_paths)
        ray_scene = cached_ray_scene(self.scene_cache, body_paths)
        self._ray_scene_stored = ray_scene is not None
        self.targets = np.zeros((n, len(self.dof_names)))
        self._worlds: list[_World] = []
        record_bodies = config.record_bodies
        for e, engine in enumerate(engines):
            sensors = SensorRuntime(
                stage, body_paths, dof_table, imu_mode=config.imu_mode, ray_scene=ray_scene
            )
            rows = _Rows(e)
            taps = [SensorTap(s, stage) for s in sensors.sensors]
            for tap in taps:
                tap.define(rows)
            joint_slots, body_slots = define_state_channels(
                rows, robot_path, len(self.dof_names), self.dof_names,
                body_paths if record_bodies else (),
            )  # fmt: skip
            snapshot = ModelSnapshot(engine.model) if own_models else None
            self._worlds.append(
                _World(engine, sensors, taps, rows, joint_slots, body_slots, self.targets[e],
                       snapshot)
            )  # fmt: skip
        infos = self._worlds[0].rows.infos
        for world in self._worlds[1:]:
            if [i.name for i in world.rows.infos] != [i.name for i in infos]:
                raise SimrtError("worlds of one scene registered different channels")
        self.channels = {info.name: info for info in infos}
        arrays = [_aligned((n, *info.shape), info.dtype) for info in infos]
        arrays.append(_aligned((n,), np.int64))
        arrays.append(_aligned((n,), np.float64))
        for world in self._worlds:
            world.rows._buffers = arrays
        self.buffers = {info.name: arrays[k] for k, info in enumerate(infos)}
        self.step_count = arrays[-2]
        self.time = arrays[-1]
        self._actions_for(actuated)
        # the compiled path's inputs
        self._native = _mujoco_native.native() if compiled and not JIT_DISABLED else None
        self._offsets = _mujoco_native.layout(first.data) if self._native is not None else None
        self._table = np.zeros((n, V.W_SIZE), np.int64)
        self._shared = np.zeros(V.V_SIZE, np.int64)
        if self._offsets is not None:
            self._fill_shared()
        self.forward_after_step = False  # (set_forward_after_step)
        self._inactive = n  # worlds off the compiled path
        self._claim = np.zeros(1, np.int64)  # (the kernel's next unclaimed world)
        self._call = CompiledCall(V.vector_step_kernel)
        self._pool: _Pool | None = None
        self.diverged = np.zeros(n, bool)
        self._none_diverged = np.zeros(n, bool)  # (the steady state's answer, read-only)
        self._none_diverged.flags.writeable = False
        self.closed = False

    # ------------------------------------------------------------------ actions
    def _actions_for(self, actuated: Sequence[str | int] | None) -> None:
        """The action columns: DOF indices, and their controls (or velocity DOFs)."""
        first = self.engines[0]
        dofs = first.dofs
        drive = {"position": "position", "velocity": "velocity"}.get(self.action_mode)
        if actuated is None:
            if drive is not None:
                indices = [i for i, b in enumerate(dofs) if b.drive_mode == drive]
            else:
                indices = list(range(len(dofs)))
        else:
            indices = [int(i) for i in first.resolve_dofs(list(actuated), len(actuated))]
        if len(set(indices)) != len(indices):
            raise SimrtError("actuated DOFs repeat a DOF")
        if not indices:
            raise SimrtError(
                f"{self.robot_path}: no DOF to act on (no joint {drive or ''} drive; pass "
                "action_mode='effort' or name the DOFs)"
            )
        if drive is not None:
            missing = [dofs[i].name for i in indices if dofs[i].drive_mode != drive]
            if missing:
                raise SimrtError(
                    f"{self.robot_path}: DOFs without a {drive} drive cannot take "
                    f"{drive} targets: " + ", ".join(missing)
                )
            self.act_index = np.array([dofs[i].actuator for i in indices], np.int64)
            # (position targets are recorded in the targets channel; velocity ones are not)
            dofs_recorded = indices if drive == "position" else [-1] * len(indices)
            self.dof_index = np.array(dofs_recorded, np.int64)
        else:
            if any(dofs[i].ball_axis >= 0 for i in indices):
                raise SimrtError("effort actions on ball-joint DOFs are not supported")
            self.act_index = np.array([dofs[i].dof_adr for i in indices], np.int64)
            self.dof_index = np.full(len(indices), -1, np.int64)
            self._sign = np.array([dofs[i].sign for i in indices], np.float64)
        bounded = self.action_mode == "position"
        self.action_lower = self.lower[indices] if bounded else np.full(len(indices), -np.inf)
        self.action_upper = self.upper[indices] if bounded else np.full(len(indices), np.inf)
        self.action_dofs = tuple(dofs[i].name for i in indices)
        self.action_dof_index = np.array(indices, np.int64)

    def initial_targets(self) -> np.ndarray:
        """Each action DOF's authored drive target [rad or m, or rad/s or m/s], (A,)."""
        first = self.engines[0]
        if self.action_mode == "effort":
            return np.zeros(len(self.action_dofs))
        ctrl = first.built.initial_ctrl
        if ctrl is None:
            return np.zeros(len(self.action_dofs))
        return np.asarray(ctrl, np.float64)[self.act_index].copy()

    # ------------------------------------------------------------------ compiled path
    def _fill_shared(self) -> None:
        shared, off, native = self._shared, self._offsets, self._native
        shared[V.V_FN : V.V_FN + 5] = native["functions"]
        shared[V.V_ERROR] = array_address(native["error"])
        shared[V.V_OFF_NCON] = off["ncon"]
        shared[V.V_OFF_NEFC] = off["nefc"]
        shared[V.V_OFF_TIME] = off["time"]
        shared[V.V_OFF_EFC_FORCE] = off["efc_force"]
        shared[V.V_OFF_EFC_TYPE] = off["efc_type"]
        shared[V.V_OFF_EFC_ID] = off["efc_id"]
        shared[V.V_WARN_COUNT] = self.engines[0]._warnings.shape[0]
        shared[V.V_DECIMATION] = self.decimation
        shared[V.V_MODE] = V.MODE_FORCE if self.action_mode == "effort" else V.MODE_CTRL

    def set_forward_after_step(self, on: bool) -> None:
        """Run ``mj_forward`` on every world after its last physics step of each :meth:`step`.

        For readers of the whole post-step state (accelerations of the new positions and
        velocities: Isaac Lab-style IMUs, joint wrenches). The next physics step reuses it
        (:mod:`runtime.engine.forward_reuse`): unless the state changed meanwhile (a
        reset), it runs only what ``mj_step`` runs after its own forward, plus
        ``mj_forwardSkip(mjSTAGE_VEL)`` when the actions changed the controls or applied
        forces; the trajectory is ``mj_step``'s bit for bit (tested). In the compiled step
        it runs inside the threads' call.
        """
        self.forward_after_step = bool(on)
        if self._native is not None:
            self._shared[V.V_FORWARD] = self._native["forward"] if on else 0

    def _bind(self, e: int) -> bool:
        """World ``e``'s row of the compiled step (False: it stays on the general path)."""
        world = self._worlds[e]
        row = self._table[e]
        if row[V.W_ACTIVE]:
            self._unbind(e)
        if self._offsets is None:
            return False
        engine = world.engine
        warnings = engine._warnings
        if warnings.strides != (8,) or warnings.dtype != np.int32:
            return False
        # room to spare for contacts and constraint rows: a world whose contacts outgrow its
        # views leaves the compiled step for a general one (and a new binding)
        # (while contacts are present: MuJoCo's empty contact array shows no layout to check)
        want = 2 * max(world.contacts, 4)
        if engine.data.ncon and (engine._cap_con < want or engine._cap_efc < 4 * want):
            engine._grow(want, 4 * want)
        fused = FusedStep.bind(
            engine, world.sensors, world.taps, world.rows, world.joint_slots,
            world.body_slots, world.targets,
        )  # fmt: skip
        if fused is None:
            return False
        if world.contacts > fused.capacity:
            fused._grow(2 * world.contacts)  # (room to spare: growing leaves the kernel)
        world.fused = fused
        world.clean = np.frombuffer(engine._no_warnings, np.int32).astype(np.int64)
        fused.si[F.S_STEP] = engine._step
        world.bound_step = engine._step
        fused.si[F.S_ACC] = bool(engine.compute_accelerations)
        row[V.W_TABLE] = array_address(fused.table)
        row[V.W_ROWS] = fused.table.shape[0]
        row[V.W_OPS] = array_address(fused.ops)
        row[V.W_OPS_ROWS] = fused.ops.shape[0]
        row[V.W_SI] = array_address(fused.si)
        row[V.W_SF] = array_address(fused.sf)
        row[V.W_DATA] = int(engine.data._address)
        row[V.W_MODEL] = int(engine.model._address)
        row[V.W_CTRL] = array_address(engine.data.ctrl) if engine.data.ctrl.size else 0
        row[V.W_FORCE] = array_address(engine.data.qfrc_applied)
        row[V.W_WARN] = array_address(warnings)
        row[V.W_WARN_CLEAN] = array_address(world.clean)
        row[V.W_SCALAR_DOFS] = bool(engine._scalar_dofs)
        row[V.W_ACC] = bool(engine.compute_accelerations)
        reuse = _mujoco_native.reuse_block(engine)
        row[V.W_REUSE] = array_address(reuse) if reuse is not None else 0
        self._capacities(e)
        row[V.W_ACTIVE] = 1
        self._inactive -= 1
        return True

    def _capacities(self, e: int) -> None:
        world, row = self._worlds[e], self._table[e]
        row[V.W_CAP_CON] = world.engine._cap_con
        row[V.W_CAP_EFC] = world.engine._cap_efc
        row[V.W_CAP_VEC] = world.fused.capacity

    def _unbind(self, e: int) -> None:
        world = self._worlds[e]
        if world.fused is not None:
            self._sync(e)
            world.fused.leave()
            world.fused = None
        if self._table[e, V.W_ACTIVE]:
            self._inactive += 1
        self._table[e, V.W_ACTIVE] = 0
        self._table[e, V.W_STATUS] = F.ST_DONE

    # ------------------------------------------------------------------ stepping
    def step(self, actions: np.ndarray, skip: np.ndarray | None = None) -> np.ndarray:
        """Send ``actions`` and take ``decimation`` physics steps in every world.

        Args:
            actions: float64 (N, A), C-ordered, finite (checked by the caller): drive
                targets [rad or m] or generalized forces [N m or N] per action DOF.
            skip: bool (N,): worlds that do not step (their rows stay as they are).

        Returns:
            The worlds that diverged during this step (bool (N,), read-only); their state
            is undefined until :meth:`reset`. The observation arrays hold every other
            world's last physics step.
        """
        if self.closed:
            raise SimrtError("Worlds.step after close()")
        if self.action_mode == "effort":  # (DOF direction -> MuJoCo's joint direction)
            actions = np.ascontiguousarray(actions * self._sign)
        table = self._table
        if skip is None and not self._inactive:  # the steady state: one call
            if not self._run_compiled(actions):  # (every world ST_DONE)
                return self._none_diverged
            stepped = np.ones(self.num_envs, bool)
        else:
            active = table[:, V.W_ACTIVE]
            stepped = active != 0
            if skip is not None:
                stepped &= ~skip
            held = np.nonzero(active != stepped)[0]
            table[held, V.W_ACTIVE] = 0
            try:
                if stepped.any():
                    self._run_compiled(actions)
            finally:
                table[held, V.W_ACTIVE] = 1
        diverged = np.zeros(self.num_envs, bool)
        for e in range(self.num_envs):
            if self.diverged[e] or (skip is not None and skip[e]):
                continue
            if not stepped[e]:
                self._general(e, actions[e], self.decimation, diverged)
                continue
            row = table[e]
            status = int(row[V.W_STATUS])
            if status != F.ST_DONE:
                self._finish(e, status, int(row[V.W_DONE]), actions[e], diverged)
        self.diverged |= diverged
        return diverged

    def _run_compiled(self, actions: np.ndarray) -> int:
        """The kernel over every world (threads: slices); the worlds not ``ST_DONE``."""
        claim = self._claim
        claim[0] = 0
        args = (
            self._table, self.step_count, self.time, self._shared, actions, self.act_index,
            self.dof_index, self.action_lower, self.action_upper, claim,
        )  # fmt: skip
        n = self.num_envs
        if self.threads == 1 or n == 1:
            call = self._call
            return int((call.entry or call.record)(*args, n))
        if self._pool is None:
            self._pool = _Pool(self.threads, self._call)
        # every thread claims slices of a quarter of its share (a slowed thread takes fewer)
        return self._pool.run((*args, max(1, n // (4 * self.threads))))

    def _sync(self, e: int) -> None:
        """Bring world ``e``'s engine and fused step up to the steps the kernel took.

        The compiled path keeps its counts in the world's row; the engine's step counter
        and the fused step's count of steps to hand back (``FusedStep.leave``) are brought
        up to date only when the world leaves it.
        """
        world, row = self._worlds[e], self._table[e]
        engine = world.engine
        status = int(row[V.W_STATUS])
        taken = int(row[V.W_STEP_OUT]) - world.bound_step
        engine._step = int(row[V.W_STEP_OUT])
        unrecorded = status in (F.ST_WARNED, F.ST_PYTHON, F.ST_MJ_ERROR, F.ST_BAD_ACTOR)
        engine._dirty = status in (F.ST_WARNED, F.ST_MJ_ERROR)
        world.fused.steps = taken - (1 if unrecorded else 0)

    def _finish(
        self, e: int, status: int, done: int, action: np.ndarray, diverged: np.ndarray
    ) -> None:
        """World ``e``'s step after the kernel stopped it: the general path finishes it."""
        world = self._worlds[e]
        engine = world.engine
        self._unbind(e)  # (the engine's counters brought up to the kernel's first)
        if status == F.ST_MJ_ERROR:
            flag, messages = self._native["error"], self._native["messages"]
            flag[0] = 0
            message = messages[-1] if messages else "unknown error"
            messages.clear()
            LOGGER.warning("world %d: MuJoCo error at step %d: %s", e, engine._step, message)
            diverged[e] = True
            return
        if status == F.ST_BAD_ACTOR:
            raise RuntimeError(f"world {e}: a ray hit an actor outside its sensor's path table")
        if status == F.ST_WARNED:
            try:
                check_warnings(engine)
            except EngineDivergenceError as error:
                LOGGER.warning("world %d diverged: %s", e, error)
                diverged[e] = True
                return
        # the last step taken is not recorded yet (warned, or the views must grow)
        self._sense_and_write(e)
        self._general(e, action, self.decimation - done, diverged, send=False)

    def _general(
        self, e: int, action: np.ndarray, count: int, diverged: np.ndarray, *, send: bool = True
    ) -> None:
        """``count`` physics steps of world ``e`` through the general path, then bind."""
        world = self._worlds[e]
        engine = world.engine
        if send:
            self._send(e, action)
        try:
            for _ in range(count):
                engine.step()
                self._sense_and_write(e)
        except EngineDivergenceError as error:
            LOGGER.warning("world %d diverged: %s", e, error)
            diverged[e] = True
            return
        if self.forward_after_step:  # (as the compiled step does after the last step)
            engine.forward_after_step()
        if not self._ray_scene_stored:
            built = world.sensors.built_ray_scene()
            if built is not None:  # (built by this world's first step: the others share it)
                store_ray_scene(self.scene_cache, built)
                self._ray_scene_stored = True
                for other in self._worlds:
                    if other.sensors.ray_scene is None:
                        other.sensors.ray_scene = built
        self._bind(e)

    def _send(self, e: int, action: np.ndarray) -> None:
        world = self._worlds[e]
        data = world.engine.data
        if self.action_mode != "effort":  # (clipped to the bounds, as the kernel does)
            action = np.minimum(np.maximum(action, self.action_lower), self.action_upper)
            data.ctrl[self.act_index] = action
            if self.action_mode == "position":
                world.targets[self.dof_index] = action
        else:
            data.qfrc_applied[self.act_index] = action

    def _sense_and_write(self, e: int) -> None:
        world = self._worlds[e]
        engine = world.engine
        state = engine.state(reuse=True)
        world.contacts = max(world.contacts, int(engine.data.ncon))
        world.sensors.step(state)
        buffers, row = world.rows.begin_row()
        for tap in world.taps:
            tap.write(buffers, row)
        _write_state(world, state, buffers, row)
        world.rows.end_row(int(state.step), float(state.time))

    # ------------------------------------------------------------------ resets
    def reset(self, e: int, setup: Callable[[Any], None] | None = None) -> None:
        """Return world ``e`` to the authored state (then ``setup(engine)``, e.g. draws).

        The observation row then holds the reset state's joints and body poses; sensor
        channels read zero (no sensor has sensed yet: valid flags False).
        """
        world = self._worlds[e]
        self._unbind(e)
        engine = world.engine
        if world.snapshot is not None:
            world.snapshot.restore()
        engine.reset()
        world.targets[:] = 0.0
        if self.action_mode == "position":
            world.targets[self.dof_index] = engine.data.ctrl[self.act_index]
        if setup is not None:
            setup(engine)
            if self.action_mode == "position":
                world.targets[self.dof_index] = engine.data.ctrl[self.act_index]
        world.sensors.reset()
        self.diverged[e] = False
        state = engine.state(reuse=True)
        buffers = world.rows._buffers
        for k in range(len(buffers) - 2):
            buffers[k][e] = 0
        _write_state(world, state, buffers, e)
        self.step_count[e] = engine._step
        self.time[e] = float(engine.data.time)

    def joint_positions(self) -> np.ndarray:
        """Every world's DOF positions after its last step [rad or m], (N, D) (a view)."""
        return self.buffers[f"{self.robot_path}.positions"]

    def close(self) -> None:
        """Stop the thread pool and the sensors' USD listeners."""
        if self.closed:
            return
        self.closed = True
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        for e, world in enumerate(self._worlds):
            self._unbind(e)
            world.sensors.close()


def _write_state(world: _World, state: Any, buffers: list[np.ndarray], row: int) -> None:
    """A world's joint and body channels of ``row`` from its engine ``state``."""
    slots = world.joint_slots
    if slots:
        buffers[slots["positions"]][row] = state.joint_positions
        buffers[slots["velocities"]][row] = state.joint_velocities
        buffers[slots["efforts"]][row] = state.joint_efforts
        buffers[slots["targets"]][row] = world.targets
    if world.body_slots:
        buffers[world.body_slots["positions"]][row] = state.body_positions
        buffers[world.body_slots["orientations"]][row] = state.body_orientations


class _Pool:
    """Persistent threads running the step kernel together (the caller's thread is one)."""

    def __init__(self, threads: int, call: CompiledCall) -> None:
        self.call = call
        self.start = [threading.Event() for _ in range(threads - 1)]
        self.done = [threading.Event() for _ in range(threads - 1)]
        self.job: tuple[Any, ...] = ()
        self.results = [0] * threads
        self.errors: list[BaseException] = []
        self.stopping = False
        self.workers = [
            threading.Thread(target=self._work, args=(k,), daemon=True, name=f"simrt-worlds-{k}")
            for k in range(threads - 1)
        ]
        for worker in self.workers:
            worker.start()

    def _work(self, k: int) -> None:
        while True:
            self.start[k].wait()
            self.start[k].clear()
            if self.stopping:
                return
            try:
                self.results[k + 1] = int(self.call.kernel(*self.job))
            except BaseException as error:  # noqa: BLE001 - re-raised in the caller
                self.errors.append(error)
            self.done[k].set()

    def run(self, args: tuple[Any, ...]) -> int:
        """The kernel in every thread with the same ``args``; the sum of their answers."""
        self.job = args
        for event in self.start:
            event.set()
        try:
            call = self.call
            self.results[0] = int((call.entry or call.record)(*args))
        finally:
            for event in self.done:
                event.wait()
                event.clear()
        if self.errors:
            error = self.errors[0]
            self.errors.clear()
            raise error
        return sum(self.results)

    def close(self) -> None:
        self.stopping = True
        for event in self.start:
            event.set()
        for worker in self.workers:
            worker.join(timeout=5)


def _name(scene: Any) -> str:
    if isinstance(scene, str):
        return scene
    layer = getattr(scene, "GetRootLayer", None)
    return str(layer().identifier) if layer is not None else str(scene)
