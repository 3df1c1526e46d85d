"""The run summary: per-sensor statistics read back from the store, and its text form."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

LOGGER = logging.getLogger("runtime.run")

__all__ = ["StreamingSummary", "format_summary", "run_summary", "summarize"]


# ---------------------------------------------------------------------------- summary

# the channels summarize() reads
_SUMMARY_KINDS = frozenset({"contact", "imu", "raycast"})
_SUMMARY_FIELDS = frozenset(
    {"valid", "value", "force", "in_contact", "linear_acceleration", "angular_velocity", "hit"}
)


def summarize(recording: Any) -> dict[str, Any]:
    """Per-sensor statistics of a recording, read chunk by chunk (flat memory).

    Args:
        recording: a :class:`runtime.recording.RecordingReader` (streamed) or a loaded
            :class:`runtime.recording.Recording`.

    Returns:
        ``{"steps", "sim_time", "sensors": {path: stats}}`` where contact stats are
        ``hits`` (steps in contact) and ``max_force``; IMU stats the per-axis ``min``/``max``
        of ``linear_acceleration`` and ``angular_velocity`` over valid steps; raycast stats
        ``hits`` (ray hits summed over steps) and ``valid_steps``.
    """
    summary = StreamingSummary(recording.channels)
    for start, block in _blocks(recording, summary.names):
        summary.add(start, block)
    return summary.result()


class StreamingSummary:
    """:func:`summarize` of rows as they are written, without reading the store back.

    The store's writer thread feeds it each chunk it writes (:meth:`observe`).

    A chunk written again (a partial chunk, then the whole one) replaces its statistics.
    """

    def __init__(self, channels: Mapping[str, Any]):
        # the summarized channels by their store slot (the channels' order), and by sensor
        self.slots: dict[str, int] = {}
        self.by_sensor: dict[str, dict[str, str]] = {}  # sensor -> {field: channel}
        self.kinds: dict[str, str] = {}
        for slot, (name, info) in enumerate(channels.items()):
            if info.kind in _SUMMARY_KINDS and info.field in _SUMMARY_FIELDS:
                self.slots[name] = slot
                self.by_sensor.setdefault(info.sensor, {})[info.field] = name
                self.kinds[info.sensor] = info.kind
        self.names = list(self.slots)
        self.chunks: dict[int, tuple[int, float, dict[str, dict[str, Any]]]] = {}

    @classmethod
    def watch(cls, recorder: Any) -> StreamingSummary:
        """A summary fed by ``recorder``, a StoreWriter whose channels are all defined."""
        summary = cls(recorder.channels)
        recorder.add_observer(summary.observe)
        return summary

    def observe(self, start: int, rows: int, buffers: list[np.ndarray]) -> None:
        """The store's observer: ``rows`` rows from ``start`` in chunk ``buffers`` (by slot)."""
        block = {name: buffers[slot][:rows] for name, slot in self.slots.items()}
        block["time"] = buffers[-1][:rows]
        self.add(start, block)

    def add(self, start: int, block: Mapping[str, np.ndarray]) -> None:
        """The statistics of the rows from row ``start``: ``{"time", channel: rows}``."""
        rows = int(block["time"].shape[0])
        if not rows:
            self.chunks.pop(start, None)
            return
        stats: dict[str, dict[str, Any]] = {}
        for sensor, fields in self.by_sensor.items():
            kind = self.kinds[sensor]
            entry: dict[str, Any] = {}
            valid = block[fields["valid"]].astype(bool) if "valid" in fields else None
            entry["valid_steps"] = int(valid.sum()) if valid is not None else rows
            if kind == "contact":
                if "in_contact" in fields:
                    entry["hits"] = int(block[fields["in_contact"]].sum())
                force = fields.get("value", fields.get("force"))
                if force is not None and block[force].size:
                    entry["max_force"] = float(block[force].max())
            elif kind == "raycast":
                if "hit" in fields:
                    entry["hits"] = int(block[fields["hit"]].sum())
            else:
                for field_name in ("linear_acceleration", "angular_velocity"):
                    if field_name not in fields:
                        continue
                    data = block[fields[field_name]]
                    data = data[valid] if valid is not None else data
                    if data.size:
                        entry[field_name] = (data.min(axis=0), data.max(axis=0))
            stats[sensor] = entry
        self.chunks[start] = (rows, float(block["time"][-1]), stats)

    def result(self) -> dict[str, Any]:
        """``{"steps", "sim_time", "sensors"}`` over the rows seen, as :func:`summarize`."""
        totals: dict[str, dict[str, Any]] = {}
        for sensor, kind in self.kinds.items():
            totals[sensor] = {"kind": kind, "valid_steps": 0}
            if kind in ("contact", "raycast"):
                totals[sensor]["hits"] = 0
            if kind == "contact":
                totals[sensor]["max_force"] = 0.0
        steps, sim_time = 0, 0.0
        for start in sorted(self.chunks):
            rows, sim_time, stats = self.chunks[start]
            steps += rows
            for sensor, entry in stats.items():
                total = totals[sensor]
                total["valid_steps"] += entry["valid_steps"]
                if "hits" in entry:
                    total["hits"] += entry["hits"]
                if "max_force" in entry:
                    total["max_force"] = max(total["max_force"], entry["max_force"])
                for field_name in ("linear_acceleration", "angular_velocity"):
                    if field_name not in entry:
                        continue
                    low, high = entry[field_name]
                    if field_name in total:
                        low = np.minimum(low, total[field_name]["min"])
                        high = np.maximum(high, total[field_name]["max"])
                    total[field_name] = {"min": low.tolist(), "max": high.tolist()}
        return {"steps": steps, "sim_time": sim_time, "sensors": totals}


def run_summary(streamed: StreamingSummary | None, recorder: Any, store: Any) -> dict[str, Any]:
    """A closed run's summary: ``streamed`` by its writer, else read back from ``store``.

    The store is read when nothing was streamed (no row, or the observer failed) or when
    the streamed rows are not the rows committed.
    """
    if streamed is not None and streamed.observe not in recorder.failed_observers:
        result = streamed.result()
        if result["steps"] == recorder.committed_rows:
            return result
    from runtime.recording import open_recording

    return summarize(open_recording(store))


def _blocks(recording: Any, names: list[str]) -> Any:
    """``(start, {"time", name: rows})`` blocks of a reader, or one block of a Recording."""
    if hasattr(recording, "iter_chunks"):
        yield from recording.iter_chunks(names)
        return
    block = {name: np.asarray(recording.data[name]) for name in names}
    block["time"] = np.asarray(recording.time)
    yield 0, block


def add_driver_summaries(summary: dict[str, Any], grippers: Any, ik: Any) -> None:
    """Add the gripper events and the IK driver's counts (when the run had them)."""
    if grippers is not None:
        summary["grippers"] = [
            {"time": t, "gripper": path, "action": what} for t, path, what in grippers.events
        ]
    if ik is not None:
        summary["ik"] = {
            "solves": ik.solves,
            "seeded_failures": ik.failures,
            "cold_start_ladders": ik.ladders,
            "frozen_at": ik.frozen_at,
            "disabled": ik.disabled_reason,
        }


def format_summary(summary: Mapping[str, Any], timings: Mapping[str, float] | None = None) -> str:
    """Human-readable multi-line summary of :func:`summarize` plus timings."""
    lines = [
        f"steps: {summary.get('steps', 0)}   sim time: {summary.get('sim_time', 0.0):.4f} s",
    ]
    if timings:
        wall = timings.get("wall_time", 0.0)
        steps = summary.get("steps", 0)
        first = timings.get("first_step", 0.0)
        compile_wait = timings.get("compile", 0.0)  # (an empty kernel cache, before step 1)
        later_wall = wall - first - compile_wait
        rate = (steps - 1) / later_wall if first and later_wall > 0 and steps > 1 else float("nan")
        if not first:
            rate = steps / wall if wall > 0 else float("nan")
        note = " after the first step" if first else ""
        lines.append(f"wall time: {wall:.3f} s   {rate:.0f} steps/s{note}")
        # the first step's one-off costs are reported apart from the per-step means
        later = steps - 1 if "first_step" in timings else steps
        # (blocks take whole steps, the fused step state, sensors and the row in one call:
        # the general path's parts are listed when steps took it)
        names = {
            "compiled": "compiled blocks (physics, state, sensors, row)",
            "physics": "physics",
            "fused": "fused step (state, sensors, row)",
            "state": "state",
            "sensors": "sensors",
            "readings": "readings",
            "record": "record",
            "ik": "ik",
        }
        parts = [
            f"{label} {1e6 * timings[name] / max(later, 1):.1f} us"
            for name, label in names.items()
            if name in timings and (timings[name] >= 5e-8 * max(later, 1) or name == "ik")
        ]
        if parts and later > 0:
            label = "per step after the first" if "first_step" in timings else "per step"
            lines.append(f"{label}: " + ", ".join(parts))
        if "first_step" in timings:
            lines.append(
                f"first step: {1e3 * timings['first_step']:.1f} ms (ray scene build unless cached; "
                "Numba kernels loaded from their cache, or compiled when it is empty)"
            )
        if compile_wait >= 0.05:
            lines.append(
                f"kernel compile before the first step: {compile_wait:.1f} s (first run only)"
            )
        if "close" in timings:
            lines.append(f"closing the recording: {1e3 * timings['close']:.1f} ms")
    for full_path, stats in summary.get("sensors", {}).items():
        kind = stats.get("kind", "")
        parts = [p for p in str(full_path).split("/") if p]
        path = ".../" + "/".join(parts[-2:]) if len(parts) > 3 else full_path
        if kind == "contact":
            lines.append(
                f"contact {path}: in contact {stats['hits']} steps, "
                f"max force {stats['max_force']:.4g}"
            )
        elif kind == "imu":
            acc = stats.get("linear_acceleration")
            gyro = stats.get("angular_velocity")
            text = f"imu {path}:"
            if acc:
                text += " acc " + " ".join(
                    f"{a}[{lo:.3g}, {hi:.3g}]"
                    for a, lo, hi in zip("xyz", acc["min"], acc["max"], strict=True)
                )
            if gyro:
                text += "  gyro " + " ".join(
                    f"{a}[{lo:.3g}, {hi:.3g}]"
                    for a, lo, hi in zip("xyz", gyro["min"], gyro["max"], strict=True)
                )
            lines.append(text)
        elif kind == "raycast":
            lines.append(
                f"raycast {path}: {stats['hits']} ray hits over {stats['valid_steps']} valid steps"
            )
    ik = summary.get("ik")
    if ik:
        text = f"ik: {ik.get('solves', 0)} solves"
        if ik.get("seeded_failures"):
            text += (
                f" ({ik['seeded_failures']} failed from the previous solution; "
                f"cold-start ladder run {ik.get('cold_start_ladders', 0)} times)"
            )
        if ik.get("frozen_at") is not None:
            text += f", targets frozen at first contact t = {ik['frozen_at']:.3f} s"
        if ik.get("disabled"):
            text += f"; {ik['disabled']}"
        lines.append(text)
    for event in summary.get("grippers", []):
        lines.append(f"gripper {event['gripper']}: {event['action']} at t = {event['time']:.3f} s")
    return "\n".join(lines)
