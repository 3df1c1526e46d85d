"""Sensor taps: one sensor's readings turned into recording rows.

Recorded channels (see :mod:`runtime.recording`): ``<sensor path>.<field>`` for every
numeric field of every sensor reading (contact ``value``/``in_contact``/
``number_of_contacts``; IMU ``linear_acceleration``/``angular_velocity``/``orientation``;
raycast ``depths``, ``hit_positions``, ``hit_normals``, ``ray_end_points_world`` as float32
(ray origins are not recorded), plus ``hit`` (depth < maxRange) and ``hit_prim_paths`` (int32
index into the channel's ``path_table`` attribute, -1 for none)), each sensor with its
reading's own ``time`` / ``step`` stamps and ``valid`` (False rows hold zeros);
``<robot>.positions`` / ``velocities`` / ``efforts`` (kind ``joint_state``),
``<robot>.targets`` (kind ``command``, the IK joint targets sent, NaN for DOFs IK does not
drive) and ``bodies.positions`` / ``bodies.orientations`` (kind ``body``; attribute
``body_paths``; the poses the sensors saw).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from runtime.run._direct import direct_writer
from runtime.run._fast_rows import fast_row_writer
from runtime.run.hit_paths import HitPathIds

__all__ = ["HitPathIds", "SensorTap"]


# ---------------------------------------------------------------------------- reading taps


def _reading_items(reading: Any) -> dict[str, Any]:
    if reading is None:
        return {}
    if dataclasses.is_dataclass(reading):
        return {f.name: getattr(reading, f.name) for f in dataclasses.fields(reading)}
    if isinstance(reading, Mapping):
        return dict(reading)
    if hasattr(reading, "__dict__"):
        return {k: v for k, v in vars(reading).items() if not k.startswith("_")}
    if hasattr(reading, "__slots__"):
        return {k: getattr(reading, k) for k in reading.__slots__ if not k.startswith("_")}
    return {}


# ``is_valid`` is recorded as ``valid``; the reading's own ``time`` / ``step`` stamps are
# recorded per sensor (they are 0 in invalid readings, see docs/sensors/index.md#validity)
_SKIP_FIELDS = {"is_valid", "valid", "ray_count"}
# raycast fields kept in recordings (ray origins are the sensor position; not recorded)
_RAYCAST_FIELDS = ("depths", "hit_positions", "hit_normals", "ray_end_points_world")
_VALID_FIELDS = ("is_valid", "valid")
_UNSET: Any = object()
_SCALAR_TYPE_SET = frozenset(
    (float, int, bool, np.float32, np.float64, np.int64, np.int32, np.bool_)
)


class SensorTap:
    """Turns one sensor's readings into recorder rows (channels fixed at the first step)."""

    # write rows of sensors that have one through a direct writer (runtime.run._direct) when
    # no reading is given; False: always through ``sensor.reading()`` (tests compare both)
    DIRECT = True

    def __init__(self, sensor: Any, stage: Any) -> None:
        self.sensor = sensor
        self.path = str(getattr(sensor, "prim_path", "") or type(sensor).__name__)
        self.kind = str(getattr(sensor, "kind", "") or type(sensor).__name__.lower())
        self.max_range: float | None = None
        self.ray_count: int | None = None
        if self.kind == "raycast":
            prim = stage.GetPrimAtPath(self.path) if self.path.startswith("/") else None
            max_range, num_rays = 100.0, None
            if prim is not None and prim.IsValid():
                value = prim.GetAttribute("maxRange").Get()
                max_range = float(value) if value is not None else 100.0
                value = prim.GetAttribute("numRays").Get()
                num_rays = int(value) if value is not None else None
            config = getattr(sensor, "config", None)  # (what the kernels compare with)
            if isinstance(getattr(config, "max_range", None), (int, float)):
                max_range = float(config.max_range)
            if num_rays is None and isinstance(getattr(config, "num_rays", None), int):
                num_rays = int(config.num_rays)  # (a sensor mounted by hand: no prim)
            self.max_range = max_range
            self.ray_count = num_rays
        self.fields: dict[str, tuple[tuple[int, ...], str]] = {}
        # recorder slots and channel keys (set by define)
        self._valid_slot = 0
        self._hit_slot: int | None = None
        self._zero_slots: list[int] = []
        self._keys: dict[int, str] = {}
        self._max_range32 = np.float32(self.max_range if self.max_range is not None else np.inf)
        self._ray_shape = (self.ray_count,)
        self._max_ranges: np.ndarray | None = None  # per ray (set by define)
        self.path_tables: dict[str, list[str]] = {}
        self._plan: list[tuple[str, int, tuple[int, ...], HitPathIds | None]] = []
        self._is_mapping: dict[type, bool] = {}
        self._fast_type: type | None = None  # dataclass readings that take `_fast`
        self._direct: Any = None  # runtime.run._direct writer (set by define)
        self._fast: Any = None  # runtime.run._fast_rows writer (set by define)

    def define(self, recorder: Any) -> None:
        """Register this sensor's channels from its current reading."""
        from runtime.recording import ChannelInfo

        if self.kind == "raycast" and getattr(self.sensor, "disabled_reason", None):
            self.ray_count = 0  # a disabled sensor records `valid` only: no ray-sized channels
            self._ray_shape = (0,)
        items = _reading_items(self.sensor.reading())
        for name, value in items.items():
            if name in _SKIP_FIELDS or name.startswith("_"):
                continue
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                if self.kind == "raycast" and self.ray_count is not None:
                    self.fields[name] = ((self.ray_count,), "int32")
                    self.path_tables[name] = []
                continue
            if isinstance(value, (str, bytes)) or value is None:
                continue
            array = np.asarray(value)
            if array.dtype.kind not in "biuf":
                continue
            shape = tuple(array.shape)
            rays = self.ray_count
            if self.kind == "raycast" and rays is not None and shape and shape[0] in (0, rays):
                shape = (self.ray_count, *shape[1:])
                if len(shape) == 1 and name != "depths" and array.ndim == 2:
                    shape = (self.ray_count, 3)
            if array.ndim == 2 and array.shape[0] == 0 and self.ray_count is not None:
                shape = (self.ray_count, array.shape[1])
            if self.kind == "raycast" and name not in ("time", "step"):
                if name not in _RAYCAST_FIELDS:
                    continue
                dtype = "float32"  # readings are float32 in the reference; keeps files small
            elif array.dtype.kind == "b":
                dtype = "bool"
            elif array.dtype.kind in "iu":
                dtype = "int64"
            else:
                dtype = "float64"
            self.fields[name] = (shape, dtype)
        slots: dict[str, int] = {}
        for name, (shape, dtype) in self.fields.items():
            attrs: dict[str, Any] = {}
            if name in self.path_tables:
                attrs["path_table"] = self.path_tables[name]
            slots[name] = recorder.add_channel(
                ChannelInfo(
                    f"{self.path}.{name}",
                    shape,
                    dtype,
                    self.path,
                    self.kind,
                    name,
                    _unit(self.kind, name),
                    attrs,
                    _frame(self.kind, name),
                )
            )
        self._hit_slot = None
        if self.kind == "raycast" and self.ray_count is not None:
            attrs = {"max_range": self.max_range}
            self._hit_slot = recorder.add_channel(
                ChannelInfo(
                    f"{self.path}.hit",
                    (self.ray_count,),
                    "bool",
                    self.path,
                    self.kind,
                    "hit",
                    "",
                    attrs,
                )
            )
            # per ray, for the fast and direct writers (a comparison with an array of the
            # same shape is a cheaper call than with a scalar)
            self._max_ranges = np.full(self._ray_shape, self._max_range32, np.float32)
        self._valid_slot = recorder.add_channel(
            ChannelInfo(f"{self.path}.valid", (), "bool", self.path, self.kind, "valid", "")
        )
        # per field: (reading field, recorder slot, channel shape, path-id mapper or None)
        self._plan = [
            (
                name,
                slots[name],
                shape,
                HitPathIds(self.path_tables[name], shape) if name in self.path_tables else None,
            )
            for name, (shape, _) in self.fields.items()
        ]
        self._fast = fast_row_writer(self, _SCALAR_TYPE_SET)
        self._direct = direct_writer(self) if self.DIRECT else None
        self._zero_slots = [slots[name] for name in self.fields]  # of an invalid reading
        if self._hit_slot is not None:
            self._zero_slots.append(self._hit_slot)
        self._keys = {slots[name]: f"{self.path}.{name}" for name in self.fields}
        self._keys[self._valid_slot] = f"{self.path}.valid"
        if self._hit_slot is not None:
            self._keys[self._hit_slot] = f"{self.path}.hit"

    def read(self) -> Any:
        """The sensor's current reading (sensor evaluation; readings may be lazy)."""
        return self.sensor.reading()

    def row(self, out: dict[str, Any], reading: Any = _UNSET) -> None:
        """Add a reading (default: the sensor's current one) to ``out`` (channel -> value).

        For ``StoreWriter.append`` (channels without a value are recorded as zeros); the
        values are the reading's own arrays. :meth:`write` is the in-place equivalent.
        """
        if reading is _UNSET:
            reading = self.sensor.reading()
        get = self._getter(reading)
        keys = self._keys
        valid = self._valid(get)
        out[keys[self._valid_slot]] = valid
        if not valid:
            if self._hit_slot is not None:
                out[keys[self._hit_slot]] = False
            return
        hits = None
        if self._hit_slot is not None:
            hits = self._hits(get)
            if hits is not None:
                out[keys[self._hit_slot]] = hits
        for name, slot, shape, path_ids in self._plan:
            value = get(name)
            if shape:
                if type(value) is np.ndarray and value.shape == shape:
                    out[keys[slot]] = value
                    continue
            elif type(value) in _SCALAR_TYPE_SET:
                out[keys[slot]] = value
                continue
            if path_ids is not None:
                value = path_ids.ids_of_reading(get, name, hits)
            else:
                value = self._convert(value, shape)
            if value is not None:
                out[keys[slot]] = value

    def write(self, buffers: Sequence[np.ndarray], row: int, reading: Any = _UNSET) -> None:
        """Write a reading (default: the sensor's current one) into a recorder row in place.

        Args:
            buffers: the recorder's channel buffers by slot (``Recorder.begin_row``).
            row: the row index to write.
            reading: the reading to record.

        Every channel of the tap is written: the reading's values, zeros (False) for the
        fields an invalid, missing or wrongly sized reading lacks.
        """
        if reading is _UNSET:
            direct = self._direct
            if direct is not None and direct(buffers, row):
                return  # written from the sensor batch's arrays: no reading object built
            reading = self.sensor.reading()
        if reading.__class__ is self._fast_type and self._fast(buffers, row, reading.__dict__):
            return
        fields = getattr(reading, "__dict__", None)
        if (
            type(fields) is dict
            and "is_valid" in fields
            and self._is_mapping.get(type(reading)) is False
        ):
            get = fields.get  # dataclass readings: plain field lookups
            self._fast_type = type(reading)
        else:
            get = self._getter(reading)
        valid = get("is_valid")
        valid = bool(get("valid", True) if valid is None else valid)
        if valid and getattr(self.sensor, "disabled_reason", None) is not None:
            valid = False
        buffers[self._valid_slot][row] = valid
        if not valid:
            for slot in self._zero_slots:
                buffers[slot][row] = 0
            return
        hits = None
        if self._hit_slot is not None:
            depths = get("depths")
            hit_row = buffers[self._hit_slot][row]
            if type(depths) is np.ndarray and depths.shape == self._ray_shape:
                hits = np.less(depths, self._max_range32, out=hit_row)  # in place, no copy
            else:
                hits = self._hits(get)
                hit_row[...] = 0 if hits is None else hits
        for name, slot, shape, path_ids in self._plan:
            value = get(name)
            if shape:
                if type(value) is np.ndarray and value.shape == shape:
                    buffers[slot][row] = value  # the common case: one copy, no conversion
                    continue
            elif type(value) in _SCALAR_TYPE_SET:
                buffers[slot][row] = value
                continue
            if path_ids is not None:
                if path_ids.ids_of_reading(get, name, hits, buffers[slot][row]) is None:
                    buffers[slot][row] = -1  # (no paths in this reading)
                continue
            value = self._convert(value, shape)
            buffers[slot][row] = 0 if value is None else value

    def _getter(self, reading: Any) -> Callable[..., Any]:
        """``get(field, default=None)`` of a reading: dataclass, mapping or object."""
        is_mapping = self._is_mapping.get(type(reading))
        if is_mapping is None:
            is_mapping = self._is_mapping[type(reading)] = isinstance(reading, Mapping)
        if is_mapping:
            return reading.get
        fields = getattr(reading, "__dict__", None)
        if type(fields) is dict and "is_valid" in fields:
            return fields.get  # dataclass readings: plain field lookups

        def get(name: str, default: Any = None) -> Any:
            return getattr(reading, name, default)

        return get

    def _valid(self, get: Callable[..., Any]) -> bool:
        valid = get("is_valid")
        valid = bool(get("valid", True) if valid is None else valid)
        return valid and getattr(self.sensor, "disabled_reason", None) is None

    def _hits(self, get: Callable[..., Any]) -> np.ndarray | None:
        """Per ray: depth below ``maxRange``; None when the depths are missing or mis-sized."""
        depths = get("depths")
        if depths is None:
            return None
        if type(depths) is not np.ndarray:
            depths = np.asarray(depths)
        if depths.shape != self._ray_shape:
            return None
        return depths < self._max_range32

    @staticmethod
    def _convert(value: Any, shape: tuple[int, ...]) -> Any:
        """The uncommon values: other types or sizes (None: record zeros)."""
        if value is None:
            return None
        array = np.asarray(value)
        if array.shape != shape:
            if array.size != int(np.prod(shape)):
                return None  # invalid/empty reading: recorded as zeros
            array = array.reshape(shape)
        return array


def _frame(kind: str, name: str) -> str:
    """The frame a recorded field is expressed in ("" for frame-free values)."""
    if kind == "imu":
        return "world" if name == "orientation" else "sensor"
    if kind == "raycast" and name in ("hit_positions", "hit_normals", "ray_end_points_world"):
        return "world"
    if kind == "contact" and name in ("value", "force"):
        return "sensor"
    return ""


def _unit(kind: str, name: str) -> str:
    units = {
        ("contact", "value"): "mass*stage_units/s^2",
        ("contact", "force"): "mass*stage_units/s^2",
        ("imu", "linear_acceleration"): "stage_units/s^2",
        ("imu", "angular_velocity"): "rad/s",
        ("imu", "orientation"): "quaternion wxyz",
        ("raycast", "depths"): "stage_units",
    }
    if (kind, name) in units:
        return units[(kind, name)]
    if kind == "raycast" and name.endswith(("positions", "world")):
        return "stage_units"
    return ""
