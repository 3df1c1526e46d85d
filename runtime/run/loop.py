"""The step loop: :func:`run_scene`.

One run: open the scene, build the MuJoCo engine from its USD physics, bind the sensor
loop (:class:`runtime.sensors.runtime.SensorRuntime`) to the engine's bodies and DOFs, then
for every physics step: (optionally) update IK joint targets, ``engine.step()``,
``sensors.step(engine.state())`` and write every sensor reading (plus joint state and body
poses) into the recording store (:class:`runtime.recording.StoreWriter`), which streams it
to disk. The store is closed in a ``finally`` block, so an exception, Ctrl-C or SIGTERM
leaves every completed step (``complete = False``).
"""

from __future__ import annotations

import logging
import shutil
import time as _time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from runtime._compile import gc_pause as _gc_pause
from runtime._compile import precompile as _precompile
from runtime.engine import check_warnings
from runtime.errors import SimrtError
from runtime.run._fused_kernels import ST_PYTHON, ST_WARNED
from runtime.run.blocks import StepBlocks
from runtime.run.build import build_engine, cached_ray_scene, open_scene_cache, store_ray_scene
from runtime.run.config import RunConfig, read_scene_settings
from runtime.run.fused import FusedStep
from runtime.run.grippers import GripperDriver
from runtime.run.ik import IkDriver, build_schedules
from runtime.run.lab_channels import LabChannels
from runtime.run.noise_channels import attach_noise, read_noise
from runtime.run.outputs import EXPORT_KEY
from runtime.run.progress import Progress
from runtime.run.result import RunResult, output_paths, run_metadata, stop_reason
from runtime.run.rows import define_state_channels
from runtime.run.scene import check_robot, find_robot, open_scene_stage
from runtime.run.summary import StreamingSummary, add_driver_summaries, run_summary
from runtime.run.taps import SensorTap

LOGGER = logging.getLogger("runtime.run")

__all__ = ["RunResult", "run_scene"]


# ---------------------------------------------------------------------------- run


def run_scene(
    scene: Any,
    config: RunConfig | None = None,
    *,
    out: str | Path | None = None,
    progress: TextIO | None = None,
    on_step: Callable[[int, Any, Any, Any], None] | None = None,
    engine_factory: Callable[..., Any] | None = None,
    setup: Callable[[Any], None] | None = None,
    run_meta: Mapping[str, Any] | None = None,
    flush_every: int | None = None,
    min_flush_interval: float | None = None,
    ray_scenes: dict[tuple[str, ...], Any] | None = None,
    ik_chains: dict[tuple[str, str], Any] | None = None,
    store_options: Mapping[str, Any] | None = None,
    summary: bool = True,
    force: bool = False,
    **overrides: Any,
) -> RunResult:
    """Step a scene headless and record every sensor reading.

    Args:
        scene: path of a USD scene, or an open ``Usd.Stage``.
        config: the run's :class:`~runtime.run.config.RunConfig`; None resolves one from
            the scene's ``customData["simrt"]`` settings and ``overrides``.
        out: the recording store (``*.zarr``), or ``.npz`` / ``.parquet`` (a store beside
            it, exported at the end); None records into a scratch store deleted after the
            summary.
        progress: stream for the progress bar (None: silent).
        on_step: callback ``on_step(step, engine, sensor_runtime, state)`` after each
            recorded step (tests use it to interrupt runs or compare with an oracle).
        engine_factory: ``factory(stage, robot_prim=..., dt=..., compute_accelerations=...)``
            building the engine (default: :class:`runtime.engine.mujoco_engine.MujocoEngine`
            through the scene cache; accelerations are computed for the physical IMU mode).
        setup: ``setup(engine)`` called once after the engine is built and before the first
            state is read (episode randomization: initial joint positions, object poses,
            mass / friction / gain scales on the engine's model and data).
        run_meta: extra JSON-serialisable run metadata recorded with the run (e.g. an
            episode's id, seed and drawn parameters, under ``run["episode"]``).
        flush_every: ignored (simrt 0.1; the store commits every chunk and every second).
        min_flush_interval: ignored (simrt 0.1).
        ray_scenes: a memo of built ray scenes by body paths, for a caller that runs many
            episodes of one stage it does not edit (batch workers): read before the
            sensors are bound, filled after the first step.
        ik_chains: a memo of built IK chains by (root link, IK link) path, for the same
            callers: an IK driver takes its chains from it and adds those it builds.
        store_options: extra :class:`~runtime.recording.StoreWriter` arguments (batch
            workers: ``background=False``, one worker per core already; ``durable=False``
            when the driver syncs the dataset before naming an episode done).
        summary: read the store back for :attr:`RunResult.summary` (False: an empty
            summary; batch workers, whose dataset manifest has what they need).
        force: ``out`` an export file (``.npz`` ...): replace the store beside it although
            another run recorded it (otherwise refused; see :mod:`runtime.run.outputs`).
        **overrides: :class:`RunConfig` fields (``steps``, ``dt``, ``ik_targets``,
            ``ik_every``, ``ik_until_contact``, ``imu_mode``, ``robot``,
            ``record_bodies``, ``cache``) on top of ``config`` / the scene's settings.

    Returns:
        The :class:`RunResult`.

    Raises:
        SimrtError: a bad scene or setting (SchemaError for bad USD content).
        OSError: an output path that cannot be written. Errors and a KeyboardInterrupt
            during stepping propagate after the recording is closed (valid,
            ``complete = False``).
    """
    from runtime.recording import StoreWriter
    from runtime.run.interrupts import signals_deferred
    from runtime.sensors.runtime import SensorRuntime

    store_path, export_path, scratch = output_paths(out, force)  # fail before the build
    stage = open_scene_stage(scene)
    if config is None:
        config = RunConfig.resolve(read_scene_settings(stage), **overrides)
    elif overrides:
        current = {name: getattr(config, name) for name in RunConfig.__dataclass_fields__}
        config = RunConfig.resolve(current, **overrides)
    steps, dt, imu_mode = config.steps, config.dt, config.imu_mode
    waypoints = list(config.ik_targets)
    ik_every, until_contact = config.ik_every, config.ik_until_contact
    record_bodies, cache = config.record_bodies, config.cache
    robot_prim = find_robot(stage, config.robot)
    check_robot(stage, robot_prim)  # (as `simrt inspect`: a broken robot named by its cause)
    noise = read_noise(stage, config.noise)  # (bad noise parameters: before the build)
    # a cold Numba cache: the sensor kernels compile in a worker process meanwhile
    features = _precompile.scene_features(stage, engine=engine_factory is None, ik=bool(waypoints))
    warmup = _precompile.start(features, progress)

    # The built-in engine can refill its own state buffers each step (no per-step allocation).
    # Only safe when no user callback may keep a state object across steps.
    reuse_state = engine_factory is None and on_step is None
    scene_cache = open_scene_cache(stage, dt, cache and engine_factory is None)
    options = {"robot_prim": robot_prim, "dt": dt, "compute_accelerations": imu_mode == "physical"}
    if engine_factory is None:
        engine = build_engine(stage, scene_cache, **options)
    else:
        engine = engine_factory(stage, **options)
    if setup is not None:
        setup(engine)
    state = engine.state()
    body_paths = tuple(state.body_paths)
    dof_table = getattr(engine, "dof_table", None)
    if dof_table is None and robot_prim is not None:
        from runtime.schema.dof import build_dof_table

        dof_table = build_dof_table(stage, robot_prim)
    ray_scene = ray_scenes.get(body_paths) if ray_scenes is not None else None
    if ray_scene is None and "raycast" in features:
        if engine_factory is not None and cache:
            # the ray scene comes from the stage, not the engine: cached for any engine
            # (a batch worker's first episode then imports no trimesh)
            scene_cache = open_scene_cache(stage, dt, cache)
        ray_scene = cached_ray_scene(scene_cache, body_paths)
    sensors = SensorRuntime(stage, body_paths, dof_table, imu_mode=imu_mode, ray_scene=ray_scene)
    grippers = None
    if GripperDriver.wanted(stage, config.gripper_actions):
        grippers = GripperDriver(engine, config.gripper_actions, sensors.ray_scene)
    robot_path = str(robot_prim.GetPath()) if robot_prim is not None else "/"
    robot_contacts = [
        s
        for s in sensors.of_kind("contact")
        if getattr(s, "prim_path", "").startswith(robot_path + "/")
    ]
    # (a contact sensor answers without building its reading; other sensors of the kind
    # through their readings)
    contact_checks = [
        s.in_contact
        if callable(getattr(s, "in_contact", None))
        else (lambda s=s: bool(getattr(s.reading(), "in_contact", False)))
        for s in robot_contacts
    ]

    ik = None
    if waypoints:
        if robot_prim is None or dof_table is None:
            raise SimrtError("IK targets given but the scene has no robot (IsaacRobotAPI)")
        ik = IkDriver(
            stage,
            robot_prim,
            dof_table,
            build_schedules(waypoints),
            engine,
            ik_every,
            until_contact,
            chains=ik_chains,
        )

    disabled = {
        str(getattr(s, "prim_path", "")): str(s.disabled_reason)
        for s in sensors.sensors
        if getattr(s, "disabled_reason", None)
    }
    lab = LabChannels.build(stage, engine, disabled)  # the scene's Isaac Lab-style sensors
    meta = run_metadata(
        scene,
        float(getattr(state, "dt", 0.0) or getattr(engine, "dt", 0.0) or dt or 0.0),
        config,
        robot_path,
        disabled,
        body_paths,
        list(dof_table.names) if dof_table is not None else [],
        run_meta,
    )
    if export_path is not None:  # (the store beside it may be replaced by the next such run)
        meta[EXPORT_KEY] = export_path.name
    recorder, streamed = None, None  # (the store, and its summary as it is written)
    taps = [SensorTap(s, stage) for s in sensors.sensors]
    joint_slots: dict[str, int] = {}  # recorder slots of the joint and body channels
    body_slots: dict[str, int] = {}
    parts = ("physics", "state", "sensors", "readings", "record", "ik", "fused", "compiled")
    timings = dict.fromkeys(parts, 0.0)
    bar = Progress(steps, progress)
    done, complete, reason = 0, False, ""
    loop_start = _time.perf_counter()
    joint_positions = np.asarray(state.joint_positions, dtype=np.float64)
    dof_count = joint_positions.shape[0]
    step_dt = float(getattr(state, "dt", 0.0) or getattr(engine, "dt", 0.0) or dt or 1.0 / 60.0)
    perf = _time.perf_counter
    compiling = perf()
    warmup.finish()  # (an empty Numba cache: this process's share, then the workers')
    timings["compile"] = perf() - compiling
    _gc_pause.resume()  # (the collector, if the simrt program paused it for the start)
    fused = None  # the steady state's one compiled call per step (runtime.run.fused)
    blocks = None  # and its blocks of whole steps (runtime.run.blocks)
    sim_time = float(getattr(state, "time", 0.0))
    k = 0
    try:
        while k < steps:
            k += 1
            stepped = False  # (a block took step k; the fused step records it)
            ik_sent = False  # (step k's IK update done: a block may start with the solve)
            if blocks is not None and ik is not None and ik.solves_at(k):
                began = perf()
                ik.update_or_disable(k, sim_time, step_dt, joint_positions, contact_checks)
                timings["ik"] += perf() - began
                ik_sent = True
            if blocks is not None and fused is not None and (n := blocks.plan(k, steps, ik_sent)):
                began = perf()
                taken, status = blocks.run(n)
                timings["compiled"] += perf() - began
                done = recorder.row_count
                bar.update(done)
                k += taken - 1  # the last step taken
                if taken:
                    joint_positions = fused.joint_positions()
                    sim_time = float(engine.data.time)
                if status == ST_WARNED:
                    check_warnings(engine)  # (as engine.step does: raises on divergence)
                stepped = status in (ST_WARNED, ST_PYTHON)
                if not stepped:
                    continue
            if k == 1:
                bar.first_step_begins()
            t0 = perf()
            if not (stepped or ik_sent) and ik is not None and ik.disabled_reason is None:
                ik.update_or_disable(k, sim_time, step_dt, joint_positions, contact_checks)
            t1 = perf()
            if not stepped:
                engine.step()
            if grippers is not None:
                grippers.after_step(k * step_dt)
            t2 = perf()
            if fused is not None:
                if fused.step():  # state, sensors and the recording row: one compiled call
                    joint_positions = fused.joint_positions()
                    sim_time = float(fused.sf[0])
                    timings["ik"] += t1 - t0
                    timings["physics"] += t2 - t1
                    timings["fused"] += perf() - t2
                    done = k
                    bar.update(done)
                    continue
                state = fused.leave() or state  # the general path takes over
                fused = None
            state = engine.state(reuse=True) if reuse_state else engine.state()
            sim_time = float(getattr(state, "time", 0.0))
            t3 = perf()
            sensors.step(state)
            t4 = perf()
            t5 = perf()  # readings: built only when asked (taps write from the batches)
            if recorder is None:
                recorder = StoreWriter(
                    store_path, meta=meta, expected_rows=steps, **dict(store_options or {})
                )
                for tap in taps:
                    tap.define(recorder)
                if grippers is not None:
                    grippers.define(recorder)
                if lab is not None:
                    lab.define(recorder)
                joint_slots, body_slots = define_state_channels(
                    recorder,
                    robot_path,
                    dof_count,
                    meta["dof_names"],
                    body_paths if record_bodies else (),
                )
                if noise:  # noisy twins, filled by the store chunk by chunk
                    recorder.meta["noise"] = attach_noise(
                        recorder, noise, step_dt, config.noise_seed
                    )
                streamed = StreamingSummary.watch(recorder) if summary else None
            # the row is written in place into the recorder's buffers (one copy per channel)
            buffers, row = recorder.begin_row()
            for tap in taps:
                tap.write(buffers, row)
            if grippers is not None:
                grippers.write(buffers, row)
            if lab is not None:
                lab.write(buffers, row)
            joint_positions = state.joint_positions.copy()
            if dof_count:
                buffers[joint_slots["positions"]][row] = state.joint_positions
                buffers[joint_slots["velocities"]][row] = state.joint_velocities
                buffers[joint_slots["efforts"]][row] = state.joint_efforts
                buffers[joint_slots["targets"]][row] = ik.targets if ik is not None else 0.0
            if body_slots:
                buffers[body_slots["positions"]][row] = state.body_positions
                buffers[body_slots["orientations"]][row] = state.body_orientations
            recorder.end_row(int(getattr(state, "step", k)), float(state.time))
            t6 = perf()
            if k == 1:  # one-off costs (ray scene build, kernel cache loads): kept apart
                timings["first_step"] = t6 - t0
                bar.first_step_done()
                built = sensors.built_ray_scene()
                store_ray_scene(scene_cache, built)
                if ray_scenes is not None and built is not None:
                    ray_scenes[body_paths] = built
                if on_step is None and grippers is None:  # (an engine of ours: fused)
                    fused = FusedStep.bind(
                        engine,
                        sensors,
                        taps,
                        recorder,
                        joint_slots,
                        body_slots,
                        ik.targets if ik is not None else None,
                        lab.row_writers if lab is not None else (),
                        lab.row_parts if lab is not None else (),
                    )
                    # (a block writes many rows: not with a row writer in Python)
                    if fused is not None and not fused.row_writers:
                        blocks = StepBlocks.bind(fused, ik, robot_contacts)
            else:
                timings["ik"] += t1 - t0
                timings["physics"] += t2 - t1
                timings["state"] += t3 - t2
                timings["sensors"] += t4 - t3
                timings["readings"] += t5 - t4
                timings["record"] += t6 - t5
            done = k
            if on_step is not None:
                on_step(k, engine, sensors, state)
            bar.update(done)
        complete = True
    except BaseException as error:
        if recorder is not None:  # rows ended (an interrupt may land after end_row)
            done = recorder.row_count
        reason = stop_reason(error, done)
        error.steps_done = done  # type: ignore[attr-defined]  # for the CLI's message
        raise
    finally:
        wall = _time.perf_counter() - loop_start
        if blocks is not None:  # (IK solved ahead of the blocks)
            timings["ik"] += blocks.ik_seconds
        if fused is not None:  # the sensors' bookkeeping at the last step
            state = fused.leave() or state
        if recorder is None:  # no step completed: an empty, loadable store
            recorder = StoreWriter(
                store_path, meta=meta, expected_rows=0, **dict(store_options or {})
            )
        closing = _time.perf_counter()
        try:
            with signals_deferred():  # a stop signal now waits until the store is closed
                recorder.close(complete=complete, reason=None if complete else reason)
                if export_path is not None:  # also after an interruption: what was recorded
                    from runtime.recording import export_recording

                    exporting = _time.perf_counter()
                    export_recording(store_path, export_path)
                    timings["export"] = _time.perf_counter() - exporting
        finally:
            timings["close"] = _time.perf_counter() - closing
            bar.close(done)
            sensors.close()
            warmup.close()
            if grippers is not None:
                grippers.close()
    try:
        result_summary = run_summary(streamed, recorder, store_path) if summary else {}
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    timings["wall_time"] = wall
    for s in sensors.sensors:
        if getattr(s, "disabled_reason", None):
            disabled[str(getattr(s, "prim_path", ""))] = str(s.disabled_reason)
    add_driver_summaries(result_summary, grippers, ik)
    return RunResult(
        steps=done,
        requested_steps=steps,
        sim_time=float(result_summary.get("sim_time", getattr(state, "time", 0.0))),
        wall_time=wall,
        out=Path(out) if out is not None else None,
        store=store_path if scratch is None else None,
        complete=complete,
        summary=result_summary,
        timings=timings,
        disabled=disabled,
    )
