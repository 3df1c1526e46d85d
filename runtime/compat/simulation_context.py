"""Isaac Sim's ``SimulationContext`` over simrt: play / pause / stop / step a stage.

Isaac scripts drive the simulation through one process-wide context
(``isaacsim.core.api.SimulationContext``); its sensors, interfaces and grippers find the
running simulation by themselves. Here the context owns, while the timeline runs, the three
simrt parts a run is made of and steps them in the run loop's order:

* :class:`~runtime.engine.mujoco_engine.MujocoEngine` (all the physics),
* :class:`~runtime.sensors.runtime.SensorRuntime` (every ``IsaacContactSensor`` /
  ``IsaacImuSensor`` / ``IsaacRaycastSensor`` prim, plus the joint-state and effort sensors
  wrappers asked for),
* :class:`~runtime.engine.surface_gripper.SurfaceGripperRuntime` (every
  ``IsaacSurfaceGripper``; grippers start at the first physics step, as in Isaac).

The context does no physics of its own. One context per stage: ``SimulationContext()``
again for the same stage returns the same object; the compat wrappers
(:class:`~runtime.compat.isaac_sensors.ContactSensor`, ...), the ``get_*_sensor_interface()``
accessors, the surface-gripper interface and ``GripperView`` use the context of the current
stage (creating it on first use). Before play (and after stop) nothing exists and every
reading is invalid, as in Isaac.

Lifecycle (sensor spec §2.3): ``play()`` builds the engine from USD (time 0) and discovers the
sensors; ``pause()`` keeps everything; ``stop()`` destroys it all (readings invalid, step
counter and time 0); the next ``play()`` rebuilds from USD. ``step(render=...)`` advances one
physics step while playing; ``step(render=False)`` while stopped or paused is a physics-only
step (the simulation is built if needed, the timeline does not change), ``step(render=True)``
then only renders (nothing: simrt has no renderer).

Differences from Isaac: no Kit application, renderer or asynchronous event loop (the
``*_async`` methods run synchronously); ``set_simulation_dt`` while playing takes effect at
the next play; a sensor prim authored during play is picked up by re-creating the sensor
runtime (every sensor's history starts again).

Example::

    sim = SimulationContext(stage=stage)
    imu = IMUSensor("/World/Robot/link3/imu")   # no runtime= needed
    sim.play()
    for _ in range(100):
        sim.step(render=False)
    frame = imu.get_current_frame()
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.compat._stage import get_current_stage, set_current_stage

__all__ = [
    "SimulationContext",
    "Timeline",
    "TimelineEvent",
    "TimelineEventType",
    "World",
    "current_context",
    "get_timeline_interface",
]

_LOG = logging.getLogger("runtime.compat.simulation_context")

_DEFAULT_DT = 1.0 / 60.0


class TimelineEventType(enum.IntEnum):
    """Timeline event kinds passed to timeline callbacks (Kit's ``TimelineEventType``)."""

    PLAY = 0
    PAUSE = 1
    STOP = 2


@dataclass(frozen=True)
class TimelineEvent:
    """What a timeline callback receives.

    Attributes:
        type: the event kind (an ``int``, compare with :class:`TimelineEventType`).
        time: simulation time when it happened [s].
    """

    type: int
    time: float = 0.0


class _Subscription:
    """Handle of an ``on_timeline_*`` subscription; :meth:`unsubscribe` removes it."""

    def __init__(self, owner: SimulationContext, name: str) -> None:
        self._owner = owner
        self._name = name

    def unsubscribe(self) -> None:
        """Stop calling the callback (idempotent)."""
        self._owner._timeline_callbacks.pop(self._name, None)


def _scene_dt(stage: Any) -> float:
    """The step size the engine builder will use for ``stage`` (first PhysicsScene)."""
    from pxr import UsdPhysics

    for prim in stage.Traverse():
        if not prim.IsA(UsdPhysics.Scene):
            continue
        attr = prim.GetAttribute("mjc:option:timestep")
        if attr and attr.HasAuthoredValue():
            return float(attr.Get())
        for name in ("physxScene:timeStepsPerSecond", "newton:timeStepsPerSecond"):
            attr = prim.GetAttribute(name)
            if attr and attr.HasAuthoredValue() and float(attr.Get()) > 0:
                return 1.0 / float(attr.Get())
        break
    return _DEFAULT_DT


def _check_dt(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    dt = float(value)
    if not (math.isfinite(dt) and 0.0 < dt <= 1.0):
        raise ValueError(f"SimulationContext: {name} {value!r} must be finite, > 0 and <= 1 s")
    return dt


_CONTEXTS: list[SimulationContext] = []


def current_context(*, create: bool = False) -> SimulationContext | None:
    """The context of the current stage (``runtime.compat.set_current_stage``).

    Args:
        create: make one for the current stage when none exists.

    Returns:
        The context; without ``create``, the most recently created context when the current
        stage has none (or no current stage is set), None when there is none at all.

    Raises:
        RuntimeError: ``create`` is true and neither a context nor a current stage exists.
    """
    try:
        stage = get_current_stage()
    except RuntimeError:
        stage = None
    if stage is not None:
        for ctx in _CONTEXTS:
            if ctx.stage == stage:
                return ctx
        if create:
            return SimulationContext(stage=stage)
    if _CONTEXTS:
        return _CONTEXTS[-1]
    if create:
        raise RuntimeError(
            "no simulation context: create SimulationContext(stage=stage) or call "
            "runtime.compat.set_current_stage(stage) first"
        )
    return None


class SimulationContext:
    """One stage's simulation: timeline (play / pause / stop), stepping and callbacks.

    Args:
        physics_dt: physics step [s]; None: the stage's PhysicsScene rate (1/60 s without).
        rendering_dt: rendering step [s] (kept for ``get_rendering_dt``; default physics_dt).
        stage_units_in_meters: author the stage's ``metersPerUnit`` (None leaves it).
        physics_prim_path: accepted for Isaac's signature (the first PhysicsScene is used).
        sim_params: accepted for Isaac's signature (ignored).
        set_defaults: accepted for Isaac's signature (ignored).
        backend: ``"numpy"`` only.
        device: accepted for Isaac's signature (CPU only).
        stage: the stage (default: the current stage); becomes the current stage.
        robot_prim: robot prim whose DOF table orders the engine's joints (default: the
            stage's robot, as :class:`~runtime.engine.mujoco_engine.MujocoEngine` decides).

    Raises:
        RuntimeError: no stage given and no current stage set.
        ValueError: a step size that is not finite and in (0, 1] s; a backend other than
            numpy.
    """

    def __new__(cls, *args: Any, stage: Any = None, **kwargs: Any) -> SimulationContext:
        """The stage's existing context (Isaac's singleton), else a new object."""
        target = stage if stage is not None else get_current_stage()
        for ctx in _CONTEXTS:
            if ctx.stage == target:
                return ctx
        return super().__new__(cls)

    def __init__(
        self,
        physics_dt: float | None = None,
        rendering_dt: float | None = None,
        stage_units_in_meters: float | None = None,
        physics_prim_path: str = "/physicsScene",
        sim_params: dict | None = None,
        set_defaults: bool = True,
        backend: str = "numpy",
        device: str | None = None,
        *,
        stage: Any = None,
        robot_prim: Any = None,
    ) -> None:
        if getattr(self, "_initialized", False):
            if physics_dt is not None or rendering_dt is not None:
                self.set_simulation_dt(physics_dt, rendering_dt)
            set_current_stage(self.stage)
            return
        if backend != "numpy":
            raise ValueError(f"SimulationContext: backend {backend!r} not supported (numpy)")
        self.stage = stage if stage is not None else get_current_stage()
        if stage_units_in_meters is not None:
            from pxr import UsdGeom

            UsdGeom.SetStageMetersPerUnit(self.stage, float(stage_units_in_meters))
        self._physics_dt = _check_dt("physics_dt", physics_dt)
        self._rendering_dt = _check_dt("rendering_dt", rendering_dt)
        self.physics_prim_path = physics_prim_path
        self.robot_prim = robot_prim
        self._state = "stopped"
        self._engine: Any = None
        self._sensors: Any = None
        self._grippers: Any = None
        self._extra: dict[str, tuple[str, Any]] = {}
        self._physics_callbacks: dict[str, Callable[[float], None]] = {}
        self._timeline_callbacks: dict[str, Callable[[TimelineEvent], None]] = {}
        self._render_callbacks: dict[str, Callable[[Any], None]] = {}
        self._subscriptions = 0
        self.epoch = 0
        """Incremented whenever the simulation is built or destroyed (wrappers' caches)."""
        self._initialized = True
        _CONTEXTS.append(self)
        set_current_stage(self.stage)

    # ------------------------------------------------------------------ the singleton
    @classmethod
    def instance(cls) -> SimulationContext | None:
        """The context of the current stage (else the latest one), or None."""
        return current_context()

    @classmethod
    def clear_instance(cls) -> None:
        """Stop and forget every context (a new ``SimulationContext()`` starts afresh)."""
        for ctx in list(_CONTEXTS):
            ctx._teardown()
            ctx._state = "stopped"
        _CONTEXTS.clear()

    # ------------------------------------------------------------------ simrt parts
    @property
    def engine(self) -> Any:
        """The running :class:`~runtime.engine.mujoco_engine.MujocoEngine` (None: stopped)."""
        return self._engine

    @property
    def sensor_runtime(self) -> Any:
        """The running :class:`~runtime.sensors.runtime.SensorRuntime` (None: stopped)."""
        return self._sensors

    @property
    def gripper_runtime(self) -> Any:
        """The running ``SurfaceGripperRuntime`` (None: stopped)."""
        return self._grippers

    def request_sensor(self, kind: str, prim_path: str, sensor: Any) -> None:
        """Include a sensor the stage does not describe (joint state, effort) from now on.

        Args:
            kind: its ``kind`` (``"joint_state"`` / ``"effort"``).
            prim_path: its path (articulation root / joint).
            sensor: a factory ``f(prim_path) -> sensor`` called for each built runtime.
        """
        key = f"{kind}:{prim_path}"
        if key in self._extra:
            return
        self._extra[key] = (prim_path, sensor)
        if self._sensors is not None:
            self._rebuild_sensors()

    def refresh_sensors(self) -> None:
        """Re-discover the stage's sensors (prims authored during play); histories restart."""
        if self._sensors is not None:
            self._rebuild_sensors()

    def _new_sensor_runtime(self) -> Any:
        from runtime.schema.dof import build_dof_table
        from runtime.sensors.runtime import SensorRuntime

        engine = self._engine
        sensors = SensorRuntime.discover(self.stage)
        sensors += [factory(path) for path, factory in self._extra.values()]
        robot = self.robot_prim
        if isinstance(robot, str):
            robot = self.stage.GetPrimAtPath(robot)
        try:
            table = build_dof_table(self.stage, robot)
        except Exception:  # noqa: BLE001 - no robot: the engine's own DOF names
            table = None
        if table is None or tuple(table.names) != tuple(engine.dof_names):
            table = list(engine.dof_names)
        return SensorRuntime(self.stage, engine.body_paths, table, sensors=sensors)

    def _rebuild_sensors(self) -> None:
        old = self._sensors
        if old is not None:
            old.close()
        self._sensors = self._new_sensor_runtime()
        if old is not None and old.last_state is not None:
            self._sensors.step_count = old.step_count
        self.epoch += 1

    def _build(self) -> None:
        from runtime.engine.mujoco_engine import MujocoEngine
        from runtime.engine.surface_gripper import SurfaceGripperRuntime

        self._engine = MujocoEngine(self.stage, robot_prim=self.robot_prim, dt=self._physics_dt)
        self._sensors = self._new_sensor_runtime()
        self._grippers = SurfaceGripperRuntime(self._engine)
        self.epoch += 1

    def _teardown(self) -> None:
        if self._grippers is not None:
            self._grippers.close()
        if self._sensors is not None:
            self._sensors.close()
        built = self._engine is not None
        self._engine = self._sensors = self._grippers = None
        if built:
            self.epoch += 1

    def initialize_physics(self) -> None:
        """Build the simulation from USD if it is not built (the timeline does not change)."""
        if self._engine is None:
            self._build()

    # ------------------------------------------------------------------ timeline
    def _fire(self, kind: TimelineEventType) -> None:
        event = TimelineEvent(int(kind), self.current_time)
        for callback in list(self._timeline_callbacks.values()):
            callback(event)

    def play(self) -> None:
        """Start (build from USD, time 0) or resume the simulation; PLAY callbacks run."""
        if self._state == "playing":
            return
        self.initialize_physics()
        self._state = "playing"
        self._fire(TimelineEventType.PLAY)

    def pause(self) -> None:
        """Pause (state kept); PAUSE callbacks run."""
        if self._state != "playing":
            return
        self._state = "paused"
        self._fire(TimelineEventType.PAUSE)

    def stop(self) -> None:
        """Stop: STOP callbacks run, then the simulation is destroyed (readings invalid)."""
        if self._state == "stopped" and self._engine is None:
            return
        self._fire(TimelineEventType.STOP)
        self._teardown()
        self._state = "stopped"

    def is_playing(self) -> bool:
        """True while the timeline plays."""
        return self._state == "playing"

    def is_stopped(self) -> bool:
        """True while the timeline is stopped."""
        return self._state == "stopped"

    def is_simulating(self) -> bool:
        """True while a simulation is built (playing, paused, or physics-only steps)."""
        return self._engine is not None

    def reset(self, soft: bool = False) -> None:
        """Back to time 0: stop and play again (``soft``: rewind the built simulation).

        Args:
            soft: keep the built simulation and rewind it (engine to its authored state,
                sensors' histories dropped, grippers released) instead of rebuilding.
        """
        if soft and self._engine is not None:
            from runtime.engine.surface_gripper import SurfaceGripperRuntime

            self._grippers.close()
            self._engine.reset()
            self._sensors.reset()
            self._grippers = SurfaceGripperRuntime(self._engine)
            self.epoch += 1
            if self._state != "playing":
                self.play()
            return
        self.stop()
        self.play()

    # ------------------------------------------------------------------ stepping
    def step(self, render: bool = True) -> None:
        """One step: a physics step while playing, then rendering (nothing) when ``render``.

        Args:
            render: also render; while stopped or paused, ``False`` makes this a
                physics-only step (the simulation is built if needed).
        """
        if self._state == "playing" or not render:
            self._physics_step()
        if render:
            self.render()

    def _physics_step(self) -> None:
        self.initialize_physics()
        engine = self._engine
        engine.step()
        self._grippers.update()
        self._sensors.step(engine.state())
        dt = engine.dt
        for callback in list(self._physics_callbacks.values()):
            callback(dt)

    def render(self) -> None:
        """Run the render callbacks (simrt draws nothing)."""
        for callback in list(self._render_callbacks.values()):
            callback(None)

    async def play_async(self) -> None:
        """:meth:`play` (synchronous)."""
        self.play()

    async def pause_async(self) -> None:
        """:meth:`pause` (synchronous)."""
        self.pause()

    async def stop_async(self) -> None:
        """:meth:`stop` (synchronous)."""
        self.stop()

    async def reset_async(self, soft: bool = False) -> None:
        """:meth:`reset` (synchronous)."""
        self.reset(soft)

    # ------------------------------------------------------------------ time
    def get_physics_dt(self) -> float:
        """Physics step [s] (the running engine's, else the configured or the scene's)."""
        if self._engine is not None:
            return float(self._engine.dt)
        return self._physics_dt if self._physics_dt is not None else _scene_dt(self.stage)

    def get_rendering_dt(self) -> float:
        """Rendering step [s] (the physics step unless set)."""
        return self._rendering_dt if self._rendering_dt is not None else self.get_physics_dt()

    def set_simulation_dt(
        self, physics_dt: float | None = None, rendering_dt: float | None = None
    ) -> None:
        """Set the physics and/or rendering step [s] (physics: from the next play).

        Raises:
            ValueError: a step that is not finite and in (0, 1] s.
        """
        physics = _check_dt("physics_dt", physics_dt)
        rendering = _check_dt("rendering_dt", rendering_dt)
        if physics is not None:
            self._physics_dt = physics
            if self._engine is not None and abs(physics - self._engine.dt) > 1e-15:
                _LOG.warning(
                    f"SimulationContext.set_simulation_dt: physics_dt {physics} takes effect "
                    f"at the next play (running at {self._engine.dt})"
                )
        if rendering is not None:
            self._rendering_dt = rendering

    @property
    def current_time(self) -> float:
        """Simulation time [s] (0 while stopped)."""
        return 0.0 if self._engine is None else float(self._engine.data.time)

    @property
    def current_time_step_index(self) -> int:
        """Physics steps since play (0 while stopped)."""
        return 0 if self._sensors is None else int(self._sensors.step_count)

    # ------------------------------------------------------------------ callbacks
    def add_physics_callback(self, callback_name: str, callback_fn: Callable) -> None:
        """Call ``callback_fn(step_size)`` after every physics step."""
        self._physics_callbacks[str(callback_name)] = callback_fn

    def remove_physics_callback(self, callback_name: str) -> None:
        """Remove a physics callback (unknown names are ignored)."""
        self._physics_callbacks.pop(str(callback_name), None)

    def physics_callback_exists(self, callback_name: str) -> bool:
        """True when a physics callback of that name exists."""
        return str(callback_name) in self._physics_callbacks

    def clear_physics_callbacks(self) -> None:
        """Remove every physics callback."""
        self._physics_callbacks.clear()

    def add_timeline_callback(self, callback_name: str, callback_fn: Callable) -> None:
        """Call ``callback_fn(event)`` on play, pause and stop (``event.type``)."""
        self._timeline_callbacks[str(callback_name)] = callback_fn

    def remove_timeline_callback(self, callback_name: str) -> None:
        """Remove a timeline callback (unknown names are ignored)."""
        self._timeline_callbacks.pop(str(callback_name), None)

    def timeline_callback_exists(self, callback_name: str) -> bool:
        """True when a timeline callback of that name exists."""
        return str(callback_name) in self._timeline_callbacks

    def clear_timeline_callbacks(self) -> None:
        """Remove every timeline callback."""
        self._timeline_callbacks.clear()

    def add_render_callback(self, callback_name: str, callback_fn: Callable) -> None:
        """Call ``callback_fn(event)`` (event None) after every rendering step."""
        self._render_callbacks[str(callback_name)] = callback_fn

    def remove_render_callback(self, callback_name: str) -> None:
        """Remove a render callback (unknown names are ignored)."""
        self._render_callbacks.pop(str(callback_name), None)

    def _on(self, kind: TimelineEventType, callback_fn: Callable) -> _Subscription:
        self._subscriptions += 1
        name = f"_on_timeline_{kind.name.lower()}_{self._subscriptions}"

        def only(event: TimelineEvent) -> None:
            if event.type == kind:
                callback_fn(event)

        self._timeline_callbacks[name] = only
        return _Subscription(self, name)

    def on_timeline_play(self, callback_fn: Callable) -> _Subscription:
        """Call ``callback_fn(event)`` on every play; returns a handle to unsubscribe."""
        return self._on(TimelineEventType.PLAY, callback_fn)

    def on_timeline_pause(self, callback_fn: Callable) -> _Subscription:
        """Call ``callback_fn(event)`` on every pause; returns a handle to unsubscribe."""
        return self._on(TimelineEventType.PAUSE, callback_fn)

    def on_timeline_stop(self, callback_fn: Callable) -> _Subscription:
        """Call ``callback_fn(event)`` on every stop; returns a handle to unsubscribe."""
        return self._on(TimelineEventType.STOP, callback_fn)

    def __repr__(self) -> str:
        root = self.stage.GetRootLayer().identifier if self.stage is not None else None
        return f"<SimulationContext {self._state} stage={root!r} t={self.current_time:.6g}>"


class World(SimulationContext):
    """``World``: the same simulation context (Isaac's scene registry is not provided)."""


class Timeline:
    """Kit's timeline interface (``omni.timeline``) over the current stage's context.

    Every call acts on :func:`current_context` (created for the current stage on first
    use), so ``get_timeline_interface().play()`` and ``SimulationContext.play()`` are the
    same action.
    """

    def _ctx(self) -> SimulationContext:
        return current_context(create=True)  # type: ignore[return-value]

    def play(self) -> None:
        """Play (build from USD on a start)."""
        self._ctx().play()

    def pause(self) -> None:
        """Pause."""
        self._ctx().pause()

    def stop(self) -> None:
        """Stop (the simulation is destroyed)."""
        self._ctx().stop()

    def is_playing(self) -> bool:
        """True while playing."""
        ctx = current_context()
        return ctx is not None and ctx.is_playing()

    def is_stopped(self) -> bool:
        """True while stopped (also when no context exists)."""
        ctx = current_context()
        return ctx is None or ctx.is_stopped()

    def get_current_time(self) -> float:
        """Simulation time [s]."""
        ctx = current_context()
        return 0.0 if ctx is None else ctx.current_time


_TIMELINE = Timeline()


def get_timeline_interface() -> Timeline:
    """The process-wide timeline interface."""
    return _TIMELINE
