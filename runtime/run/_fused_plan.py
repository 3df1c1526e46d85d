"""The fused step's plan: which runs it takes, and the row's write operations.

:func:`plan` checks that the run is one the fused step reproduces exactly (see
:mod:`runtime.run.fused`), asks every batch for its part of the step and every sensor for
its row (the sensor-kind protocol of :mod:`runtime.sensors.kinds`), and builds the write
operation of every tap's row (``runtime.run._row_kernels``: ``OP_*``). It names no sensor
kind: a batch whose sensors never evaluate in the run declares its part silent, and its
taps' rows are the general path's invalid rows, zeros (``OP_ZERO``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from runtime.run import _row_kernels as R
from runtime.run._fused_rows import EXTRA_COLUMNS

__all__ = ["plan"]


def plan(
    fused: Any,
    taps: Sequence[Any],
    joint_slots: Mapping[str, int],
    body_slots: Mapping[str, int],
    targets: np.ndarray | None,
) -> bool:
    """Fill ``fused``'s parts and write operations; False if it is not a fused case.

    Args:
        fused: the :class:`~runtime.run.fused.FusedStep` being bound (its parts through
            ``add_part``; its ``ops``, ``targets`` and ``channel_count`` are set here).
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
        hook = getattr(unit, "fused_part", None)
        if guard is not None or hook is None:
            return False  # an unbatched sensor, or a kind without a compiled part
        part = hook(fused)
        if part is None or not fused.add_part(part):
            return False
    for part in fused.row_parts:  # (after the batches: they read MjData as the step left it)
        if part.kernel is None or not fused.add_part(part):
            return False
    for sensor in runtime.sensors:
        if getattr(sensor, "disabled_reason", None) and not _is_silent(fused, sensor):
            return False
    tapped = {id(tap.sensor) for tap in taps}
    if len(tapped) != len(taps) or tapped != {id(s) for s in runtime.sensors}:
        return False
    ops: list[list[int]] = []
    for part in fused.parts:
        if part.kernel is not None:
            ops.append(
                [R.OP_PART, fused.kind_addresses[id(part.unit)], *fused.kind_blocks[id(part.unit)]]
            )
    for tap in taps:
        rows = _rows(fused, tap)
        if rows is None:
            return False
        ops.extend(rows)
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
    for p, op in enumerate(ops):  # indices into ``fused.extra``: its table rows
        for column in EXTRA_COLUMNS.get(op[0], ()):
            fused.ops[p, column] = R.T_FIRST_CHANNEL + fused.channel_count + op[column]
    if not all(buffer.flags.c_contiguous for buffer in channels):
        return False
    written = set()
    for op in fused.ops:  # each channel has the type the kernel stores
        kind = int(op[0])
        if kind == R.OP_ZERO:  # (zero bytes are valid in every channel type)
            written.update(int(slot) for slot in op[2 : 2 + op[1]])
            continue
        if kind == R.OP_FIELDS:  # (types checked by _fused_rows.field_ops)
            written.update(int(slot) for slot in op[6 : 6 + 2 * op[5] : 2])
            continue
        if kind == R.OP_PART:
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
    batch = getattr(sensor, "_batch", None)
    return batch is not None and any(batch is unit for unit in fused.silent)


def _rows(fused: Any, tap: Any) -> list[list[int]] | None:
    """The write operations of one tap's row, or None (not a case the kernel writes)."""
    sensor = tap.sensor
    if _is_silent(fused, sensor):  # the general path records an invalid row: zeros
        slots = [tap._valid_slot, *tap._zero_slots]
        return [[R.OP_ZERO, len(slots), *slots]] if len(slots) <= R.OP_WIDTH - 2 else None
    hook = getattr(sensor, "fused_row", None)
    if hook is None:
        return None
    rows = hook(fused, tap)
    if rows is None or isinstance(rows, list):
        return rows
    return fused.field_ops(tap, rows)
