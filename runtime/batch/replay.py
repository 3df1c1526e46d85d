"""Replay episodes: joint-state logs through a scene's kinematics, readings into a store.

A replay batch (``[replay]`` in the spec) turns every log of a folder into one episode:
the log's joint positions (and optional base pose and efforts) drive
:class:`~runtime.sensors.playback.KinematicPlayback`, whose states step a
:class:`~runtime.sensors.runtime.SensorRuntime` of the scene; every reading is recorded
like a ``simrt run`` recording (same channels: sensors, ``<robot>.positions`` /
``velocities`` / ``efforts``, body poses). No physics engine is involved.

Log formats (one file per episode, sorted by name):

* **CSV** / **Parquet** (``*.csv``, ``*.parquet``): a ``time`` column [s, strictly
  increasing], one column per DOF named by the joint prim name (``panda_joint1``) or path,
  optionally ``effort:<name>`` columns, and optionally a base pose ``base_px, base_py,
  base_pz, base_qw, base_qx, base_qy, base_qz`` (world frame, stage units, w first).
* **Recordings** (``*.zarr`` stores of ``simrt run`` / ``simrt batch``): the
  ``joint_state`` channel ``positions`` (DOF names from its ``dof_names`` attribute), the
  ``efforts`` channel and the recording's time.

Logs are checked like scenes before anything is replayed (:class:`LogError`, one line
naming the file, the row -- samples counted from 1 -- and the column; never retried):
finite, strictly increasing ``time``; no column twice (also a joint given by name and by
path); finite values; a column for every joint of the robot (or ``missing = "hold"`` in
``[replay]``: the joints without one keep their authored positions, listed in the
episode's parameters); positions within the joints' limits (or ``limits = "clamp"``: clamped,
the count per column in the episode's parameters); unit base quaternions (within 1e-3;
normalised).
"""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Any

import numpy as np

from runtime.batch.worker import WORKER_CACHE, attempt_path, failed_path, move_over
from runtime.errors import SimrtError

__all__ = ["JointLog", "LogError", "check_log", "find_logs", "read_log", "replay_log"]

LOG_SUFFIXES = (".csv", ".parquet", ".zarr")
BASE_COLUMNS = ("base_px", "base_py", "base_pz", "base_qw", "base_qx", "base_qy", "base_qz")


class LogError(SimrtError):
    """A joint-state log that cannot be replayed (the same on every attempt: not retried)."""

    retry = False


def _first_bad(path: Path, values: np.ndarray, columns: list[str], what: str) -> LogError:
    """The error naming the first (row, column) where ``values`` (N, C) are not finite."""
    flat = values.reshape(len(values), -1)
    row, column = (int(i) for i in np.argwhere(~np.isfinite(flat))[0])
    return LogError(
        f"{path}: row {row + 1}, column {columns[column]!r}: {what} {float(flat[row, column])!r} "
        "is not finite"
    )


class JointLog:
    """A joint-state log in memory.

    Attributes:
        path: the file.
        times: (N,) sample times [s].
        names: DOF names / joint paths of the columns.
        positions: (N, D) joint positions.
        efforts: (N, D) efforts or None.
        base: (N, 7) base pose (position, quaternion wxyz) or None.
    """

    def __init__(
        self,
        path: Path,
        times: np.ndarray,
        names: list[str],
        positions: np.ndarray,
        efforts: np.ndarray | None = None,
        base: np.ndarray | None = None,
    ) -> None:
        self.path = path
        self.times = times
        self.names = names
        self.positions = positions
        self.efforts = efforts
        self.base = base


def find_logs(folder: str | Path) -> list[Path]:
    """The logs of a folder, sorted by name.

    Raises:
        SimrtError: the folder does not exist or holds no log.
    """
    root = Path(folder)
    if not root.is_dir():
        raise SimrtError(f"{root}: replay.logs is not a folder")
    logs = sorted(p for p in root.iterdir() if p.suffix.lower() in LOG_SUFFIXES)
    if not logs:
        raise SimrtError(f"{root}: no joint-state logs ({', '.join(LOG_SUFFIXES)})")
    return logs


def _unique(path: Path, header: list[str]) -> None:
    seen: dict[str, int] = {}
    for number, name in enumerate(header, 1):
        if name in seen:
            raise LogError(
                f"{path}: column {name!r} appears twice (columns {seen[name]} and {number})"
            )
        seen[name] = number


def _check_times(path: Path, times: np.ndarray) -> None:
    if not len(times):
        raise LogError(f"{path}: no samples")
    if not np.all(np.isfinite(times)):
        raise _first_bad(path, times[:, None], ["time"], "time")
    steps = np.diff(times)
    if np.any(steps <= 0):
        row = int(np.argmax(steps <= 0)) + 1
        raise LogError(
            f"{path}: row {row + 1}, column 'time': {float(times[row])!r} s does not increase "
            f"strictly (row {row}: {float(times[row - 1])!r} s)"
        )


def _unit_quaternions(path: Path, base: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(base[:, 3:], axis=1)
    bad = np.abs(norms - 1.0) > 1e-3
    if np.any(bad):
        row = int(np.argmax(bad))
        raise LogError(
            f"{path}: row {row + 1}, columns 'base_qw'..'base_qz': the base orientation "
            f"{base[row, 3:].tolist()} is not a unit quaternion (norm {norms[row]:.6g})"
        )
    out = base.copy()
    out[:, 3:] /= norms[:, None]
    return out


def _from_columns(path: Path, columns: dict[str, np.ndarray]) -> JointLog:
    if "time" not in columns:
        raise LogError(f"{path}: no 'time' column")
    names = [c for c in columns if c != "time" and c not in BASE_COLUMNS]
    names = [c for c in names if not c.startswith("effort:")]
    if not names:
        raise LogError(f"{path}: no joint columns besides 'time'")
    positions = np.column_stack([columns[n] for n in names])
    efforts = None
    if any(f"effort:{n}" in columns for n in names):
        missing = [n for n in names if f"effort:{n}" not in columns]
        if missing:
            raise LogError(f"{path}: effort columns given but 'effort:{missing[0]}' missing")
        efforts = np.column_stack([columns[f"effort:{n}"] for n in names])
    base = None
    present = [c for c in BASE_COLUMNS if c in columns]
    if present:
        if len(present) != len(BASE_COLUMNS):
            absent = next(c for c in BASE_COLUMNS if c not in columns)
            raise LogError(f"{path}: base pose columns incomplete ('{absent}' missing)")
        base = np.column_stack([columns[c] for c in BASE_COLUMNS])
    times = np.ascontiguousarray(columns["time"], dtype=np.float64)
    _check_times(path, times)
    efforts_names = [f"effort:{n}" for n in names]
    for what, values, labels in (
        ("position", positions, names),
        ("effort", efforts, efforts_names),
        ("base pose value", base, list(BASE_COLUMNS)),
    ):
        if values is not None and not np.all(np.isfinite(values)):
            raise _first_bad(path, values, labels, what)
    if base is not None:
        base = _unit_quaternions(path, base)
    return JointLog(path, times, names, positions, efforts, base)


def read_log(path: str | Path) -> JointLog:
    """Read one log (CSV, Parquet or a recording store).

    Raises:
        SimrtError: unreadable file, missing or malformed columns (named).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".zarr":
        from runtime.recording import load_recording

        recording = load_recording(path)
        for info in recording.channels.values():
            if info.kind == "joint_state" and info.field == "positions":
                names = list(info.attrs.get("dof_names") or [])
                positions = np.asarray(recording.data[info.name], dtype=np.float64)
                if len(names) != positions.shape[1]:
                    raise LogError(f"{path}: {info.name} has no matching dof_names attribute")
                _unique(path, names)
                efforts = recording.data.get(f"{info.sensor}.efforts")
                times = np.asarray(recording.time, dtype=np.float64)
                _check_times(path, times)
                if not np.all(np.isfinite(positions)):
                    raise _first_bad(path, positions, names, "position")
                return JointLog(
                    path,
                    times,
                    names,
                    positions,
                    None if efforts is None else np.asarray(efforts, dtype=np.float64),
                )
        raise LogError(f"{path}: the recording has no joint_state positions channel")
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise SimrtError(f"{path}: Parquet logs need pyarrow") from None
        try:
            table = pq.read_table(path)
        except Exception as exc:  # noqa: BLE001 - any unreadable file: say which
            raise LogError(f"{path}: unreadable Parquet file: {exc}") from None
        _unique(path, list(table.column_names))
        columns = {
            name: table.column(name).to_numpy().astype(np.float64) for name in table.column_names
        }
        return _from_columns(path, columns)
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError) as exc:
        raise LogError(f"{path}: unreadable CSV file: {exc}") from None
    if len(rows) < 2:
        raise LogError(f"{path}: a header row and at least one sample are needed")
    header = [h.strip() for h in rows[0]]
    _unique(path, header)
    try:
        values = np.array([[float(v) for v in row] for row in rows[1:] if row], dtype=np.float64)
    except ValueError as exc:
        raise LogError(f"{path}: non-numeric value: {exc}") from None
    if values.ndim != 2 or values.shape[1] != len(header):
        raise LogError(f"{path}: rows do not all have {len(header)} values")
    return _from_columns(path, {name: values[:, i] for i, name in enumerate(header)})


def _joint_paths(chain: Any, names: list[str], path: Path) -> list[str]:
    paths = chain.tree_joint_paths()
    by_name = {p.rsplit("/", 1)[-1]: p for p in paths}
    out: list[str] = []
    for name in names:
        if name in paths:
            joint = name
        elif name in by_name:
            joint = by_name[name]
        else:
            raise LogError(
                f"{path}: column {name!r} is not a joint of the robot "
                f"(joints: {', '.join(by_name)})"
            )
        if joint in out:
            other = names[out.index(joint)]
            raise LogError(f"{path}: columns {other!r} and {name!r} are the same joint {joint}")
        out.append(joint)
    return out


def check_log(
    log: JointLog,
    joint_paths: list[str],
    table: Any,
    *,
    missing: str = "error",
    limits: str = "error",
) -> dict[str, Any]:
    """Check a log against its robot (every joint given, positions within the limits).

    Args:
        log: the log (its times, values and quaternions are checked when read).
        joint_paths: the joint of each column.
        table: the robot's :class:`~runtime.schema.dof.DofTable`.
        missing: ``"error"``, or ``"hold"``: joints without a column keep their authored
            positions.
        limits: ``"error"``, or ``"clamp"``: positions clamped into the limits (in place).

    Returns:
        What was let through: ``{"held": [joints], "clamped": {column: count}}`` (empty
        entries left out).

    Raises:
        LogError: a joint without a column, or a position out of its limits (naming the
            file, row and column).
    """
    report: dict[str, Any] = {}
    single = [e for e in table.entries if e.joint_type in ("revolute", "prismatic")]
    absent = [e.joint_path for e in single if e.joint_path not in joint_paths]
    if absent:
        if missing != "hold":
            names = ", ".join(p.rsplit("/", 1)[-1] for p in absent[:4])
            more = f" and {len(absent) - 4} more" if len(absent) > 4 else ""
            raise LogError(
                f"{log.path}: no column for joint {names}{more} of the robot (every joint needs "
                'one; missing = "hold" in [replay] keeps them at their authored positions)'
            )
        report["held"] = absent
    by_path = {e.joint_path: e for e in single}
    clamped: dict[str, int] = {}
    for column, (name, joint) in enumerate(zip(log.names, joint_paths, strict=True)):
        entry = by_path.get(joint)
        if entry is None:
            continue
        low, high = (entry.lower, entry.upper)
        if entry.joint_type == "prismatic":  # (the log is in stage units)
            low, high = entry.usd_lower, entry.usd_upper
        slack = 1e-6 * max(
            1.0, abs(low) if np.isfinite(low) else 1.0, abs(high) if np.isfinite(high) else 1.0
        )
        values = log.positions[:, column]
        out = (values < low - slack) | (values > high + slack)
        if not np.any(out):
            continue
        if limits != "clamp":
            row = int(np.argmax(out))
            raise LogError(
                f"{log.path}: row {row + 1}, column {name!r}: position {float(values[row])!r} "
                f"is outside the joint's limits [{low:.6g}, {high:.6g}] "
                '(limits = "clamp" in [replay] clamps)'
            )
        clamped[name] = int(np.count_nonzero(out))
        log.positions[:, column] = np.clip(values, low, high)
    if clamped:
        report["clamped"] = clamped
    return report


def replay_log(task: Any, report: dict[str, Any]) -> Path:
    """Replay one log (``task.log``) into the episode's store (see the module docstring).

    Args:
        task: the :class:`~runtime.batch.episode.EpisodeTask` (``scene``, ``robot``,
            ``log``, ``imu_mode``, ``out``, ``record_bodies``).
        report: filled with ``params`` (the log), ``steps``, ``reused``, ``startup``.

    Returns:
        The final store path.
    """
    from runtime.kinematics.chain import KinematicChain
    from runtime.recording import ChannelInfo, StoreWriter
    from runtime.run.scene import find_robot as _find_robot
    from runtime.run.taps import SensorTap
    from runtime.sensors.playback import KinematicPlayback
    from runtime.sensors.runtime import SensorRuntime

    started = time.perf_counter()
    reused = task.scene in WORKER_CACHE.stages
    stage, settings = WORKER_CACHE.stage(task.scene)
    robot_prim = _find_robot(stage, task.robot or settings.get("robot"))
    if robot_prim is None:
        raise SimrtError(f"{task.scene}: no robot to replay the log through")
    log = read_log(task.log)
    report["params"] = {"log": str(task.log), "imu_mode": task.imu_mode}
    chain = KinematicChain(stage, robot_prim)
    joints = _joint_paths(chain, log.names, log.path)
    from runtime.schema.dof import build_dof_table

    options = dict(getattr(task, "log_options", ()) or ())
    report["params"].update(check_log(log, joints, build_dof_table(stage, robot_prim), **options))
    base = log.base
    playback = KinematicPlayback(
        stage,
        robot_prim,
        log.times,
        log.positions,
        joints,
        base_positions=None if base is None else base[:, :3],
        base_orientations=None if base is None else base[:, 3:],
        joint_efforts=log.efforts,
    )
    sensors = SensorRuntime(
        stage, playback.body_paths, dof_names=playback.joint_names, imu_mode=task.imu_mode
    )
    report["reused"] = reused
    report["startup"] = time.perf_counter() - started
    robot_path = str(robot_prim.GetPath())
    names = list(playback.joint_names)
    meta = {
        "scene": task.scene,
        "robot": robot_path,
        "imu_mode": task.imu_mode,
        "requested_steps": playback.sample_count,
        "dof_names": names,
        "body_paths": list(playback.body_paths),
        "episode": {"id": task.episode, "seed": task.seed, "params": report["params"]},
    }
    attempt = attempt_path(task.out)
    writer = StoreWriter(
        attempt,
        meta=meta,
        expected_rows=playback.sample_count,
        background=False,
        durable=task.durable,
    )
    taps = [SensorTap(s, stage) for s in sensors.sensors]
    slots: dict[str, int] = {}
    complete = False
    try:
        for k, state in enumerate(playback.states()):
            sensors.step(state)
            if k == 0:
                for tap in taps:
                    tap.define(writer)
                for name in ("positions", "velocities", "efforts"):
                    slots[name] = writer.add_channel(
                        ChannelInfo(
                            f"{robot_path}.{name}",
                            (len(names),),
                            "float64",
                            robot_path,
                            "joint_state",
                            name,
                            "",
                            {"dof_names": names},
                        )
                    )
                if task.record_bodies:
                    shapes = (("positions", 3, "stage_units"), ("orientations", 4, "wxyz"))
                    for name, width, unit in shapes:
                        slots[f"bodies.{name}"] = writer.add_channel(
                            ChannelInfo(
                                f"bodies.{name}",
                                (len(playback.body_paths), width),
                                "float64",
                                "",
                                "body",
                                name,
                                unit,
                                {"body_paths": list(playback.body_paths)},
                            )
                        )
            buffers, row = writer.begin_row()
            for tap in taps:
                tap.write(buffers, row, tap.sensor.reading())
            buffers[slots["positions"]][row] = state.joint_positions
            buffers[slots["velocities"]][row] = state.joint_velocities
            buffers[slots["efforts"]][row] = state.joint_efforts
            if task.record_bodies:
                buffers[slots["bodies.positions"]][row] = state.body_positions
                buffers[slots["bodies.orientations"]][row] = state.body_orientations
            writer.end_row(state.step, state.time)
            report["steps"] = k + 1
        complete = True
    finally:
        writer.close(complete=complete, reason=None if complete else "replay stopped")
        sensors.close()
        if not complete and attempt.exists():
            move_over(attempt, failed_path(task.out, attempt))
    final = Path(task.out)
    move_over(attempt, final)
    return final
