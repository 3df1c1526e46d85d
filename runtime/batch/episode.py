"""One episode: :func:`run_episode` (task -> store path), and the per-process scene cache.

An :class:`EpisodeTask` is everything an episode needs (scene, episode id, seed, run
settings, what to randomize, or the parameters to re-apply, and where its store goes); it is
small and picklable, so the same pure function runs in a local worker process or a Ray task.
:func:`execute` wraps :func:`run_episode` for the executors: it never raises, and reports the
outcome (status, steps, wall time, error, worker host and pid, the drawn parameters, and
how long the episode took to start stepping).

A worker opens each scene's stage and builds each engine once, through its
:data:`~runtime.batch.worker.WORKER_CACHE`; Numba's on-disk cache serves the kernels.

**Stores.** An attempt records into ``<dataset>/.attempts/<id>-<host>-<pid>.zarr`` and is
renamed to ``<dataset>/episodes/<id>.zarr`` once complete, so the final path only ever
holds a complete recording; a failed attempt's store is kept in ``<dataset>/failed/``
(:mod:`runtime.batch.worker`).
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.batch.randomize import apply_parameters, draw_parameters
from runtime.batch.replay import replay_log
from runtime.batch.spec import Randomization
from runtime.batch.worker import WORKER_CACHE, attempt_path, failed_path, move_over
from runtime.errors import SchemaError

__all__ = [
    "WORKER_CACHE",
    "EpisodeTask",
    "execute",
    "rerun_arguments",
    "run_episode",
    "run_kwargs",
]


@dataclass(frozen=True)
class EpisodeTask:
    """Everything one episode needs (picklable).

    Attributes:
        episode: episode id (unique in the dataset).
        scene: absolute path of the USD scene.
        seed: the episode seed (:func:`runtime.batch.randomize.episode_seed`).
        out: final store path (``<dataset>/episodes/<id>.zarr``).
        steps / dt / ik_every / ik_until_contact / robot: run settings (None: the
            scene's own, as ``simrt run``).
        record_bodies: record body poses.
        randomize: what to draw.
        params: parameters to apply as they are (a re-run); None draws them from ``seed``.
        log: a joint-state log to replay instead of simulating (replay batches).
        imu_mode: IMU mode of a replay.
        timeout: wall seconds an attempt may take (enforced by the local executor).
        durable: the worker syncs its store to disk; False when the driver syncs the
            dataset's file system before its manifest names the episode done (local
            executors: one sync per manifest save instead of one per episode).
        attempt: 1 for the first attempt, 2 for the first retry, ...
        noise: sensor noise ``{sensor path: {field: {parameter: value}}}`` (the spec's
            ``[noise]``), seeded by ``seed``.
        log_options: a replay's log checks (``missing``, ``limits``: see
            :func:`runtime.batch.replay.check_log`), as ``(name, value)`` pairs.
    """

    episode: int
    scene: str
    seed: int
    out: str
    steps: int | None = None
    dt: float | None = None
    ik_every: int | None = None
    ik_until_contact: bool | None = None
    robot: str | None = None
    record_bodies: bool = True
    randomize: Randomization = field(default_factory=Randomization)
    params: dict[str, Any] | None = None
    log: str | None = None
    imu_mode: str | None = None
    timeout: float | None = None
    durable: bool = True
    attempt: int = 1
    noise: dict[str, Any] = field(default_factory=dict)
    log_options: tuple[tuple[str, str], ...] = ()


def run_kwargs(task: EpisodeTask, params: dict[str, Any], settings: dict[str, Any]) -> dict:
    """Keyword arguments of :func:`runtime.run.loop.run_scene` for one episode.

    Args:
        task: the episode.
        params: its parameters.
        settings: the scene's run settings.

    Returns:
        ``steps``, ``dt``, ``ik_targets``, ``ik_every``, ``ik_until_contact``,
        ``imu_mode``, ``robot``, ``record_bodies``, ``setup``, ``run_meta``, ``noise``
        and ``noise_seed`` (the episode seed).
    """
    from runtime.run.config import IkWaypoint

    waypoints = None
    if params.get("ik_targets") is not None:
        waypoints = [
            IkWaypoint(
                link=str(w["link"]),
                position=tuple(float(v) for v in w["position"]),
                orientation=None
                if w.get("orientation") is None
                else tuple(float(v) for v in w["orientation"]),
                time=float(w.get("time", 0.0)),
            )
            for w in params["ik_targets"]
        ]
    episode = {"id": task.episode, "seed": task.seed, "params": params}
    return {
        "steps": task.steps,
        "dt": task.dt,
        "ik_targets": waypoints,
        "ik_every": task.ik_every,
        "ik_until_contact": task.ik_until_contact,
        "imu_mode": params.get("imu_mode") or settings.get("imu_mode"),
        "robot": task.robot,
        "record_bodies": task.record_bodies,
        "setup": lambda engine: apply_parameters(engine, params),
        "run_meta": {"scene": task.scene, "episode": episode},
        "noise": task.noise or None,
        "noise_seed": task.seed,
    }


def run_episode(task: EpisodeTask, report: dict[str, Any] | None = None) -> Path:
    """Run one episode into its store.

    Args:
        task: the episode.
        report: filled with ``params``, ``steps``, ``reused`` (the engine came from the
            cache) and ``startup`` (seconds until the engine was ready) as they are known.

    Returns:
        The final store path (complete).

    Raises:
        Exception: whatever the run raised (the attempt's store moves to ``failed/``).
    """
    report = {} if report is None else report
    started = time.perf_counter()
    builds = WORKER_CACHE.builds
    WORKER_CACHE.episodes += 1
    if task.log is not None:
        return replay_log(task, report)
    from runtime.run.loop import run_scene

    stage, settings = WORKER_CACHE.stage(task.scene)
    robot = task.robot or settings.get("robot")
    dt = task.dt if task.dt is not None else settings.get("dt")
    params = task.params
    if params is None:

        def engine_for(mode: str | None) -> Any:
            mode = mode or settings.get("imu_mode", "isaac")
            return WORKER_CACHE.engine(task.scene, robot, dt, mode == "physical")[0]

        params = draw_parameters(task.randomize, task.seed, engine_for)
    report["params"] = params
    kwargs = run_kwargs(task, params, settings)
    mode = kwargs["imu_mode"] or "isaac"
    engine, _ = WORKER_CACHE.engine(task.scene, robot, dt, mode == "physical")
    report["reused"] = WORKER_CACHE.builds == builds  # no engine was built for this episode
    report["startup"] = time.perf_counter() - started

    def factory(*_args: Any, compute_accelerations: bool = False, **_kwargs: Any) -> Any:
        if bool(compute_accelerations) != engine.compute_accelerations:  # pragma: no cover
            raise RuntimeError("cached engine has the wrong accelerations flag")
        return engine

    attempt = attempt_path(task.out)
    if attempt.exists():
        shutil.rmtree(attempt)
    try:
        result = run_scene(
            stage,
            out=attempt,
            engine_factory=factory,
            ray_scenes=WORKER_CACHE.ray_scenes.setdefault(task.scene, {}),
            ik_chains=WORKER_CACHE.ik_chains.setdefault(task.scene, {}),
            # (the workers keep the cores busy already: no writer thread)
            store_options={"background": False, "durable": task.durable},
            summary=False,
            **kwargs,
        )
    except BaseException as error:
        report["steps"] = int(getattr(error, "steps_done", 0) or 0)
        if attempt.exists():
            move_over(attempt, failed_path(task.out, attempt))
        raise
    report["steps"] = result.steps
    final = Path(task.out)
    move_over(attempt, final)
    return final


def execute(task: EpisodeTask) -> dict[str, Any]:
    """Run an episode and report its outcome (never raises ``Exception``).

    Args:
        task: the episode.

    Returns:
        ``episode``, ``attempt``, ``status`` (``"done"`` / ``"failed"``), ``steps``,
        ``wall_time``, ``cpu_time`` (this process, all threads), ``error``,
        ``worker_host``, ``worker_pid``, ``params``, ``store``, ``reused``, ``startup``,
        ``retry`` (False: a failure that would repeat, e.g. a bad replay log).
    """
    report: dict[str, Any] = {}
    started, cpu = time.perf_counter(), time.process_time()
    status, error, store, retry = "done", "", None, True
    try:
        store = str(run_episode(task, report))
    except Exception as exc:  # noqa: BLE001 - isolated: reported, retried by the driver
        status, error = "failed", f"{type(exc).__name__}: {exc}"
        # the same input fails the same way: a bad log, a scene USD refuses
        retry = bool(getattr(exc, "retry", not isinstance(exc, SchemaError)))
    return {
        "episode": task.episode,
        "attempt": task.attempt,
        "status": status,
        "steps": int(report.get("steps", 0)),
        "wall_time": time.perf_counter() - started,
        "cpu_time": time.process_time() - cpu,
        "error": error,
        "worker_host": socket.gethostname(),
        "worker_pid": os.getpid(),
        "params": report.get("params"),
        "store": store,
        "reused": bool(report.get("reused", False)),
        "startup": float(report.get("startup", 0.0)),
        "retry": retry,
    }


def rerun_arguments(reference: str) -> tuple[str, dict[str, Any]]:
    """The scene and :func:`~runtime.run.loop.run_scene` arguments of a dataset's episode.

    Used by ``simrt run --episode DATASET:ID``: the episode runs again, alone, with the
    parameters drawn for it (from the manifest) and the batch's run settings.

    Args:
        reference: ``DATASET:ID`` (dataset folder, episode id).

    Returns:
        ``(scene path, run_scene keyword arguments)`` (without ``out``).

    Raises:
        SimrtError: malformed reference, unknown episode, a replay episode, or an episode
            that never started (no parameters recorded).
    """
    from runtime.batch.dataset import load_dataset
    from runtime.errors import SimrtError

    folder, _, ident = str(reference).rpartition(":")
    if not folder or not ident.strip().isdigit():
        raise SimrtError(f"--episode {reference!r}: expected DATASET:ID (e.g. out/ds:12)")
    dataset = load_dataset(folder)
    try:
        entry = dataset[int(ident)]
    except KeyError as exc:
        raise SimrtError(str(exc.args[0])) from None
    if entry.row.get("log"):
        raise SimrtError(f"{folder}: episode {ident} replays a log; --episode re-runs simulations")
    if not entry.row.get("params"):
        raise SimrtError(f"{folder}: episode {ident} never started (no drawn parameters yet)")
    spec = dataset.spec
    scene = str(entry.row["scene"])
    robot = next((s.get("robot") for s in spec.get("scenes", []) if s.get("path") == scene), None)
    task = EpisodeTask(
        episode=entry.episode,
        scene=scene,
        seed=int(entry.row["seed"]),
        out="",
        steps=spec.get("steps"),
        dt=spec.get("dt"),
        ik_every=spec.get("ik_every"),
        ik_until_contact=spec.get("ik_until_contact"),
        robot=robot,
        record_bodies=bool(spec.get("record_bodies", True)),
        noise=dict(spec.get("noise") or {}),
    )
    return scene, run_kwargs(task, entry.params, {})
