"""What a run returns and where it writes: :class:`RunResult`, output paths, stop reasons."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.errors import SimrtError
from runtime.recording.export import EXPORT_SUFFIXES  # (the one table: .npz, .parquet, .mcap)
from runtime.run.outputs import check_export_store, scratch_folder

__all__ = ["EXPORT_SUFFIXES", "STORE_SUFFIX", "RunResult", "output_paths", "stop_reason"]


@dataclass
class RunResult:
    """Outcome of :func:`run_scene`.

    Attributes:
        steps: physics steps completed.
        requested_steps: steps requested.
        sim_time: simulation time after the last step [s].
        wall_time: wall-clock time of the stepping loop [s].
        out: recording path, or None.
        complete: True when every requested step ran.
        summary: :func:`summarize` of the recording.
        timings: accumulated wall time per phase [s]: ``physics`` (engine step),
            ``state`` (engine state extraction), ``sensors`` (``SensorRuntime.step``),
            ``readings`` (each sensor's ``reading()``: lazily built parts such as the
            raycast snapshot copy and the IMU's gravity term are built here), ``record``
            (reading fields to channel rows and the recorder's buffer copy and periodic
            flushes), ``ik`` -- each over the
            steps after the first -- ``first_step`` (the whole first step: one-off costs such
            as the ray scene build and kernel cache loads), ``wall_time`` (the stepping loop)
            and ``close`` (the final recording write, after the loop).
        disabled: sensor path -> reason, for sensors disabled by bad configuration.
    """

    steps: int
    requested_steps: int
    sim_time: float
    wall_time: float
    out: Path | None
    complete: bool
    summary: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    disabled: dict[str, str] = field(default_factory=dict)
    store: Path | None = None


STORE_SUFFIX = ".zarr"


def run_metadata(
    scene: Any,
    dt: float,
    config: Any,
    robot_path: str,
    disabled: dict[str, str],
    body_paths: tuple[str, ...],
    dof_names: list[str],
    run_meta: Any,
) -> dict[str, Any]:
    """The run's metadata recorded with its store (settings, robot, bodies, DOFs)."""
    import dataclasses

    return {
        "scene": str(scene) if isinstance(scene, (str, Path)) else "<stage>",
        "scene_path": str(Path(scene).resolve()) if isinstance(scene, (str, Path)) else "",
        "dt": dt,
        "requested_steps": config.steps,
        "settings": {
            "steps": config.steps,
            "dt": config.dt,
            "ik_every": config.ik_every,
            "ik_until_contact": config.ik_until_contact,
            "imu_mode": config.imu_mode,
            "robot": config.robot,
            "record_bodies": config.record_bodies,
            "cache": config.cache,
            "gripper_actions": [dataclasses.asdict(a) for a in config.gripper_actions],
        },
        "imu_mode": config.imu_mode,
        "robot": robot_path,
        "ik_targets": [dataclasses.asdict(w) for w in config.ik_targets],
        "disabled_sensors": disabled,
        "body_paths": list(body_paths),
        "dof_names": dof_names,
        **dict(run_meta or {}),
    }


def output_paths(out: Any, force: bool = False) -> tuple[Path, Path | None, Path | None]:
    """(store, export file or None, scratch folder to delete or None) for ``out``.

    ``*.zarr`` (or a path without a suffix) is the store itself; an export suffix
    (``.npz``, ``.parquet``, ``.mcap``: :data:`runtime.recording.EXPORT_SUFFIXES`) records
    into the store beside it (same name, ``.zarr``) and exports it at the end; None
    records into a scratch store that is deleted after the summary.

    ``force``: replace a store beside an export file although it was not recorded for it.

    Raises:
        SimrtError: another suffix, an unusable store path, a missing export package, or a
            store beside the export file that another run recorded (without ``force``).
    """
    from runtime.recording import check_export_path, check_store_path

    if out is None:
        scratch = scratch_folder()
        return scratch / "run.zarr", None, scratch
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix in EXPORT_SUFFIXES:
        check_export_path(path)
        store = check_store_path(path.with_suffix(STORE_SUFFIX))
        check_export_store(store, path, force=force)
        return store, path, None
    if suffix not in (STORE_SUFFIX, ""):
        raise SimrtError(
            f"{path}: unsupported recording format {suffix!r} (a store: .zarr; "
            f"or an export written at the end: {', '.join(EXPORT_SUFFIXES)})"
        )
    return check_store_path(path), None, None


def stop_reason(error: BaseException, done: int) -> str:
    """Why a run stopped early, for the recording's ``reason``."""
    name = getattr(error, "signal_name", None)
    if name:
        return f"interrupted by {name} after {done} steps"
    if isinstance(error, KeyboardInterrupt):
        return f"interrupted (Ctrl-C / SIGINT) after {done} steps"
    return f"stopped after {done} steps: {type(error).__name__}: {error}"
