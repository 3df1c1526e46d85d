"""The fused step's plan: which runs it takes, and the row's write operations.

:func:`plan` checks that the run is one the fused step reproduces exactly (see
:mod:`runtime.run.fused`) and builds the write operation of every tap's row
(``runtime.run._row_kernels``: ``OP_*``). A ray-cast batch whose sensors never evaluate in
the run (disabled, or ``enabled`` off) is not stepped at all: its taps' rows are the
general path's invalid rows, zeros (``OP_ZERO``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from runtime.run import _row_kernels as R

__all__ = ["plan"]

_KINDS = ("ContactBatch", "ImuBatch", "RaycastBatch")


def _never_evaluates(sensor: Any) -> bool:
    """A ray-cast sensor that no step of this run evaluates: disabled, or ``enabled`` off.

    Only a USD edit could change that, and an edit ends the fused step
    (``SensorRuntime._changed_paths``).
    """
    config = sensor.config
    return not sensor._is_active() or config is None or not config.enabled


def plan(
    fused: Any,
    taps: Sequence[Any],
    joint_slots: Mapping[str, int],
    body_slots: Mapping[str, int],
    targets: np.ndarray | None,
) -> bool:
    """Fill ``fused``'s units, ray layout and write operations; False if it is not a fused case.

    Args:
        fused: the :class:`~runtime.run.fused.FusedStep` being bound (its ``units``,
            ``silent``, ``layout``, ``windowed``, ``extra``, ``ops``, ``targets`` and
            ``channel_count`` are set here).
        taps: the run's sensor taps, one per sensor.
        joint_slots: the recorder slots of the DOF channels (empty: not recorded).
        body_slots: the recorder slots of the body-pose channels (empty: not recorded).
        targets: the run's joint targets array (IK), or None.

    Returns:
        True when every channel of the recording row is written by one operation of a type
        the kernel stores.
    """
    runtime = fused.sensors
    if runtime._changed_paths:
        return False
    for _update, guard, unit in runtime._step_plan:
        kind = type(unit).__name__
        if guard is not None or kind not in _KINDS or kind in fused.units:
            return False
        if kind == "RaycastBatch" and all(map(_never_evaluates, unit.sensors)):
            fused.silent = unit  # nothing to step: its taps write invalid rows (OP_ZERO)
            continue
        fused.units[kind] = unit
    for sensor in runtime.sensors:
        if getattr(sensor, "disabled_reason", None) and not _is_silent(fused, sensor):
            return False
    tapped = {id(tap.sensor) for tap in taps}
    if len(tapped) != len(taps) or tapped != {id(s) for s in runtime.sensors}:
        return False
    ops: list[list[int]] = []
    imu = fused.units.get("ImuBatch")
    if imu is not None and not imu._all_processed:
        return False
    ray = fused.units.get("RaycastBatch")
    if ray is not None:
        fast = ray._fast
        if fast is None:  # not in its steady state
            return False
        fused.layout, fused.windowed = fast[0], list(fast[1])
        if not all(s._steady and s._source is fused.layout for s in fused.layout.sensors):
            return False
    for tap in taps:
        op = _op(fused, tap)
        if op is None:
            return False
        ops.append(op)
    if joint_slots:
        ops.append(
            [R.OP_JOINT, joint_slots["positions"], joint_slots["velocities"],
             joint_slots["efforts"], joint_slots["targets"], 1 if targets is not None else -1]
        )  # fmt: skip
    if body_slots:
        ops.append([R.OP_BODY, body_slots["positions"], body_slots["orientations"]])
    fused.targets = targets if targets is not None else np.zeros(0)
    if fused.targets.dtype != np.float64 or not fused.targets.flags.c_contiguous:
        return False
    fused.ops = np.zeros((len(ops), R.OP_WIDTH), np.int64)
    for p, op in enumerate(ops):
        fused.ops[p, : len(op)] = op
    channels = fused.recorder._buffers[:-2]
    fused.channel_count = len(channels)
    for p, op in enumerate(ops):
        if op[0] == R.OP_RAY:
            fused.ops[p, 15] = R.T_FIRST_CHANNEL + fused.channel_count + op[15]
    if not all(buffer.flags.c_contiguous for buffer in channels):
        return False
    written = set()
    for op in fused.ops:  # each channel has the type the kernel stores
        kind = int(op[0])
        if kind == R.OP_ZERO:  # (zero bytes are valid in every channel type)
            written.update(int(slot) for slot in op[2 : 2 + op[1]])
            continue
        for column, dtype in zip(R.CHANNEL_COLUMNS[kind], R.CHANNEL_TYPES[kind], strict=True):
            slot = int(op[column])
            if slot >= 0 and channels[slot].dtype != np.dtype(dtype):
                return False
            written.add(slot)
    # every channel of the row is written (buffers are reused: a missed one would record
    # another row's values)
    return (written | fused.writer_slots) - {-1} == set(range(fused.channel_count))


def _is_silent(fused: Any, sensor: Any) -> bool:
    return fused.silent is not None and sensor._batch is fused.silent


def _op(fused: Any, tap: Any) -> list[int] | None:
    """The write operation of one tap's row, or None (not a case the kernel writes)."""
    direct = tap._direct
    sensor = tap.sensor
    kind = type(sensor).__name__
    if _is_silent(fused, sensor):  # the general path records an invalid row: zeros
        slots = [tap._valid_slot, *tap._zero_slots]
        return [R.OP_ZERO, len(slots), *slots] if len(slots) <= R.OP_WIDTH - 2 else None
    if direct is None or not direct.usable:
        return None
    slots = direct.slots if kind == "RaycastSensor" else {n: s for n, s, _, _ in tap._plan}
    if kind == "ContactSensor" and sensor._batch is fused.units.get("ContactBatch"):
        return [
            R.OP_CONTACT, sensor._index, tap._valid_slot, slots["time"], slots["step"],
            slots["value"], slots["in_contact"], slots["number_of_contacts"],
        ]  # fmt: skip
    if kind == "ImuSensor" and sensor._batch is fused.units.get("ImuBatch"):
        return [
            R.OP_IMU, sensor._index, tap._valid_slot, slots["linear_acceleration"],
            slots["angular_velocity"], slots["orientation"], slots["time"], slots["step"],
        ]  # fmt: skip
    if kind != "RaycastSensor" or sensor._batch is not fused.units.get("RaycastBatch"):
        return None
    lay = fused.layout
    if not sensor._is_active() or not direct._bind(lay):
        return None
    table_len, ids_slot = -1, -1
    if direct.ids is not None:
        ids_slot = direct.ids_slot
        if sensor.config.report_hit_prim_paths:
            table = direct._identity_table(lay)
            if table is None:
                return None  # path ids through the channel's own table: Python
            table_len = len(table)
    hits = lay.hits
    if not (
        hits.dtype == np.int64 and hits.ndim == 2 and hits.shape[1] == 2
        and lay.hit_count.dtype == np.int64 and lay.out.dtype == np.float32
        and direct.depths.dtype == np.float32
    ):  # fmt: skip
        return None
    a, b = direct.bounds
    fused.extra.append(np.ascontiguousarray(tap._max_ranges, np.float32))
    return [
        R.OP_RAY, a, b, lay.ray_count, table_len, tap._valid_slot, tap._hit_slot, ids_slot,
        slots["depths"], slots["hit_positions"], slots["hit_normals"],
        slots["ray_end_points_world"], slots["time"], slots["step"], 0, len(fused.extra) - 1,
    ]  # fmt: skip
