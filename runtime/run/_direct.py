"""Direct taps: a sensor's row written from its batch's output arrays, no reading object.

The run loop records every sensor every step. Building a reading object per sensor per step
(and, for a ray-cast sensor, a copy of its whole output block and a tuple of hit paths) only
to copy its fields into the recording row costs more than the copy itself. A direct tap reads
the same numbers where the sensor batch left them and writes them into the row; it declines
(returns False) whenever anything is not the plain every-step case, and the tap then takes
the general path through ``sensor.reading()``. Both paths give the same row, bit for bit
(tests run whole scenes both ways and compare every channel).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["direct_writer"]

DirectWriter = Callable[[Sequence[np.ndarray], int], bool]


def direct_writer(tap: Any) -> DirectWriter | None:
    """The direct writer of ``tap``'s sensor, or None (the sensor has none)."""
    kind = type(tap.sensor).__name__
    if kind == "RaycastSensor" and tap.ray_count:
        return _RaycastDirect(tap)
    if kind == "ContactSensor":
        return _ContactDirect(tap)
    if kind == "ImuSensor":
        return _ImuDirect(tap)
    return None


def _slots(tap: Any) -> dict[str, int]:
    return {name: slot for name, slot, _, _ in tap._plan}


class _ContactDirect:
    """A contact sensor's fields from its batch's packed blocks (``ContactSensor.reading``)."""

    def __init__(self, tap: Any) -> None:
        from runtime.sensors.contact import READING_COLUMNS

        self.tap = tap
        self.sensor = tap.sensor
        slots = _slots(tap)
        self.usable = set(slots) == set(READING_COLUMNS)
        self.plan = []
        if self.usable:
            self.plan = [(slots[name], *where) for name, where in READING_COLUMNS.items()]

    def __call__(self, buffers: Sequence[np.ndarray], row: int) -> bool:
        sensor = self.sensor
        if not self.usable or sensor.disabled_reason is not None:
            return False
        rows = sensor._reading_rows()
        if rows is None:
            return False  # an invalid reading: the general path writes the zeros
        ints, floats = rows
        buffers[self.tap._valid_slot][row] = True
        for slot, block, column in self.plan:
            # the reading's values are Python floats / ints / bools of these elements
            buffers[slot][row] = floats[column] if block == "f" else ints[column]
        return True


class _ImuDirect:
    """An IMU's fields from its batch's read kernel (``ImuSensor.reading``), into one buffer."""

    FIELDS = ("time", "step", "linear_acceleration", "angular_velocity", "orientation")

    def __init__(self, tap: Any) -> None:
        self.tap = tap
        self.sensor = tap.sensor
        slots = _slots(tap)
        self.usable = set(slots) == set(self.FIELDS)
        self.out = np.empty(11)
        self.plan = (
            [
                (slots["linear_acceleration"], self.out[0:3]),
                (slots["angular_velocity"], self.out[3:6]),
                (slots["orientation"], self.out[6:10]),
            ]
            if self.usable
            else []
        )
        self.time_slot = slots.get("time", -1)
        self.step_slot = slots.get("step", -1)

    def __call__(self, buffers: Sequence[np.ndarray], row: int) -> bool:
        sensor = self.sensor
        if not self.usable or sensor.disabled_reason is not None:
            return False
        out = self.out
        if not sensor._read_into(out):
            return False  # an invalid reading: the general path writes the zeros
        buffers[self.tap._valid_slot][row] = True
        for slot, view in self.plan:
            buffers[slot][row] = view
        buffers[self.time_slot][row] = float(out[10])
        buffers[self.step_slot][row] = int(sensor._batch.status[sensor._index, 1])
        return True


class _RaycastDirect:
    """A ray-cast sensor's fields from its layout's output block (``_Layout.reading``)."""

    def __init__(self, tap: Any) -> None:
        self.tap = tap
        self.sensor = tap.sensor
        self.slots = _slots(tap)
        self.ids = next((p for _, _, _, p in tap._plan if p is not None), None)
        self.ids_slot = next((s for _, s, _, p in tap._plan if p is not None), -1)
        self.no_paths = np.full(tap.ray_count or 0, -1, np.int32)
        self.usable = tap._hit_slot is not None and {
            "depths",
            "hit_positions",
            "hit_normals",
            "ray_end_points_world",
            "time",
            "step",
        } <= set(self.slots)
        self.time_slot = self.slots.get("time", -1)
        self.step_slot = self.slots.get("step", -1)
        self.layout: Any = None
        self.out: Any = None
        self.views: list[tuple[int, np.ndarray]] = []
        self.depths: np.ndarray | None = None
        self.bounds = (0, 0)
        self.index = 0  # the sensor's index in its layout
        from runtime._compile.jit import CompiledCall
        from runtime.sensors._raycast_kernels import raycast_row_ids_kernel

        # A kernel's entry point converts its arguments unchecked, so it is called only with
        # the types it was recorded with: one entry per layout of the hit rows (a view of
        # the layout's block may be strided), the other types checked at binding (``hit``
        # is a bool channel, the path channel has the tap's field type).
        self.row_ids_by_layout = {
            True: CompiledCall(raycast_row_ids_kernel),
            False: CompiledCall(raycast_row_ids_kernel),
        }
        path_field = next((n for n, _, _, p in tap._plan if p is not None), None)
        self.kernel_ok = (
            tap._hit_slot is not None
            and path_field is not None
            and tap.fields[path_field][1] == "int32"
        )
        self.kernel_types = False

    def _bind(self, layout: Any) -> bool:
        """Views of ``layout.out`` for this sensor's rays (False: not the plain case)."""
        j = layout.index.get(id(self.sensor))
        if j is None:
            return False
        a, b = int(layout.bounds[j]), int(layout.bounds[j + 1])
        if b - a != self.tap.ray_count:
            return False
        r = layout.ray_count
        out = layout.out
        blocks = out[r:].reshape(4, r, 3)[:, a:b]
        self.views = [
            (self.slots["depths"], out[a:b]),
            (self.slots["hit_positions"], blocks[0]),
            (self.slots["hit_normals"], blocks[1]),
            (self.slots["ray_end_points_world"], blocks[3]),
        ]
        self.depths = out[a:b]
        self.layout, self.out, self.bounds, self.index = layout, out, (a, b), j
        ranges = self.tap._max_ranges
        hits = layout.hits
        self.kernel_types = (
            self.kernel_ok
            and self.depths.dtype == np.float32
            and self.depths.flags.c_contiguous
            and ranges.dtype == np.float32
            and ranges.flags.c_contiguous
            and ranges.shape == self.depths.shape
            and hits.dtype == np.int64
            and hits.ndim == 2
        )
        return True

    def __call__(self, buffers: Sequence[np.ndarray], row: int) -> bool:
        sensor = self.sensor
        layout = sensor._source
        if not self.usable or layout is None or not sensor._is_active():
            return False
        if (layout is not self.layout or layout.out is not self.out) and not self._bind(layout):
            return False
        tap = self.tap
        hit_row = buffers[tap._hit_slot][row]
        table = self._identity_table(layout)
        if table is not None:  # hit and ids in one compiled call
            a, b = self.bounds
            hits = layout.hits
            args = (
                hits, int(layout.hit_count[0]), a, b, len(table), self.depths,
                tap._max_ranges, hit_row, buffers[self.ids_slot][row],
            )  # fmt: skip
            call = self.row_ids_by_layout[hits.flags.c_contiguous]
            if not (call.entry or call.record)(*args):
                raise RuntimeError(f"ray-cast hit outside the actor table ({self.sensor})")
        else:
            np.less(self.depths, tap._max_ranges, out=hit_row)
            if self.ids is not None:
                self._path_ids(layout, buffers[self.ids_slot][row])
        buffers[tap._valid_slot][row] = True
        for slot, view in self.views:
            buffers[slot][row] = view
        # the reading's stamps: its time is the step time rounded to float32
        buffers[self.time_slot][row] = np.float32(layout.time)
        buffers[self.step_slot][row] = int(layout.step)
        return True

    def _path_ids(self, layout: Any, out: np.ndarray) -> None:
        """Per ray of this sensor, into ``out``: the path-table index of what it hit, or -1.

        The kernels name an actor only for rays that hit (depth below ``maxRange``); the
        table is the one :class:`~runtime.run.hit_paths.HitPathIds` keeps for the channel,
        so this path and the readings' number alike.
        """
        if not self.sensor.config.report_hit_prim_paths:
            out[...] = self.no_paths
            return
        a, b = self.bounds
        actors, table = self.sensor._batch._hit_actors(layout, self.index, a, b)
        self.ids.ids_of_actors(actors, table, out)

    def _identity_table(self, layout: Any) -> tuple[str, ...] | None:
        """The scene's actor table when this sensor's path ids are its actor indices.

        That is when the sensor reports hit paths and the channel's path table numbers
        this actor table as it is (:attr:`HitPathIds.identity_of`); None otherwise.
        """
        if not self.kernel_types or not self.sensor.config.report_hit_prim_paths:
            return None
        table = self.sensor._batch._actor_table(layout)
        return table if self.ids.use_actor_table(table) else None
