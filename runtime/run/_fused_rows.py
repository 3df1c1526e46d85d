"""The fused step's row operations: built-in parts by name, other kinds from their fields.

A sensor answers ``sensor.fused_row(fused, tap)`` (:mod:`runtime.sensors.kinds`). The
built-in kinds answer with :meth:`FusedStep.builtin_row <runtime.run.fused.FusedStep>`,
which lands in :data:`BUILTIN_ROWS`: their rows are written by the fused kernel's
dedicated writers (``runtime.run._row_kernels``: ``OP_CONTACT``, ``OP_IMU``, ``OP_RAY``)
from their direct writers' bindings (:mod:`runtime.run._direct`). Any other kind answers
with a :class:`~runtime.sensors.kinds.FusedFields`, turned here into ``OP_FIELDS``
operations (:func:`field_ops`).

Table rows of arrays the fused step appends after the channels (``fused.extra``) are given
as their index in ``fused.extra``; :func:`runtime.run._fused_plan.plan` makes them table rows
once the channel count is known (:data:`EXTRA_COLUMNS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from runtime.run import _row_kernels as R

__all__ = ["BUILTIN_ROWS", "EXTRA_COLUMNS", "field_ops"]

# the operation columns that hold an index into ``fused.extra`` (made table rows later)
EXTRA_COLUMNS = {R.OP_RAY: (15,), R.OP_PART: (2, 3), R.OP_FIELDS: (1, 2)}

_FIELD_TYPES = {R.FIELD_F64: "float64", R.FIELD_I64: "int64", R.FIELD_BOOL: "bool"}


def _slots(tap: Any) -> dict[str, int]:
    return {name: slot for name, slot, _, _ in tap._plan}


def _usable(tap: Any) -> Any:
    direct = tap._direct
    return direct if direct is not None and direct.usable else None


def _contact_row(fused: Any, sensor: Any, tap: Any) -> list[list[int]] | None:
    if _usable(tap) is None or sensor._batch is not fused.units.get("contact"):
        return None
    slots = _slots(tap)
    return [[
        R.OP_CONTACT, sensor._index, tap._valid_slot, slots["time"], slots["step"],
        slots["value"], slots["in_contact"], slots["number_of_contacts"],
    ]]  # fmt: skip


def _imu_row(fused: Any, sensor: Any, tap: Any) -> list[list[int]] | None:
    if _usable(tap) is None or sensor._batch is not fused.units.get("imu"):
        return None
    slots = _slots(tap)
    return [[
        R.OP_IMU, sensor._index, tap._valid_slot, slots["linear_acceleration"],
        slots["angular_velocity"], slots["orientation"], slots["time"], slots["step"],
    ]]  # fmt: skip


def _ray_row(fused: Any, sensor: Any, tap: Any) -> list[list[int]] | None:
    direct = _usable(tap)
    if direct is None or sensor._batch is not fused.units.get("ray"):
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
    slots = direct.slots
    fused.extra.append(np.ascontiguousarray(tap._max_ranges, np.float32))
    return [[
        R.OP_RAY, a, b, lay.ray_count, table_len, tap._valid_slot, tap._hit_slot, ids_slot,
        slots["depths"], slots["hit_positions"], slots["hit_normals"],
        slots["ray_end_points_world"], slots["time"], slots["step"], 0, len(fused.extra) - 1,
    ]]  # fmt: skip


# the built-in parts' row operations (a sensor's ``fused_row`` names its part)
BUILTIN_ROWS: dict[str, Callable[[Any, Any, Any], list[list[int]] | None]] = {
    "contact": _contact_row,
    "imu": _imu_row,
    "ray": _ray_row,
}


def field_ops(fused: Any, tap: Any, fields: Any) -> list[list[int]] | None:
    """``OP_FIELDS`` operations writing ``tap``'s row from its kind's blocks, or None.

    None (the run keeps the general path) when the sensor's batch is not a part of the step,
    the declared fields are not exactly the tap's channels, a channel's type is not the one
    its block stores, or a field would read past its block's row.

    Args:
        fused: the fused step being bound (its kind parts registered).
        tap: the sensor's tap (channels defined).
        fields: the sensor's :class:`~runtime.sensors.kinds.FusedFields`.
    """
    part = fused.kind_blocks.get(id(fields.unit))
    if part is None or tap._hit_slot is not None:
        return None
    extra_f, extra_i = part
    floats, ints = fused.extra[extra_f], fused.extra[extra_i]
    slots = _slots(tap)
    index, valid = int(fields.index), int(fields.valid_column)
    if set(fields.fields) != set(slots) or not 0 <= valid < ints.shape[1]:
        return None
    if not (0 <= index < floats.shape[0] and index < ints.shape[0]):
        return None
    channels = fused.recorder._buffers
    entries = [(tap._valid_slot, valid << 2 | R.FIELD_BOOL)]
    for name, (block, column) in fields.fields.items():
        slot = slots[name]
        buffer = channels[slot]
        count = int(np.prod(buffer.shape[1:], dtype=np.int64))
        if block == "f":
            code, width = R.FIELD_F64, floats.shape[1]
        elif block == "i":
            code = R.FIELD_BOOL if buffer.dtype == np.bool_ else R.FIELD_I64
            width = ints.shape[1]
        else:
            return None
        if buffer.dtype != np.dtype(_FIELD_TYPES[code]) or not 0 <= column <= width - count:
            return None
        entries.append((slot, int(column) << 2 | code))
    if channels[tap._valid_slot].dtype != np.bool_:
        return None
    ops = []
    for k in range(0, len(entries), R.FIELDS_PER_OP):
        chunk = entries[k : k + R.FIELDS_PER_OP]
        flat = [value for entry in chunk for value in entry]
        ops.append([R.OP_FIELDS, extra_f, extra_i, index, valid, len(chunk), *flat])
    return ops
