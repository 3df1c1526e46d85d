"""What a recording holds: channel descriptions, format constants and array names.

A recording is one row per recorded physics step: the step counter ``step`` (int64), the
simulation time ``time`` (float64, seconds) and any number of named *channels*, each a
fixed-shape array per step (e.g. ``"/World/robot/hand/imu.linear_acceleration"`` with shape
``(3,)``). This module is shared by the writer (:mod:`runtime.recording.store`), the readers
and the exports; it imports neither zarr nor pyarrow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "RESERVED_NAMES",
    "ChannelInfo",
    "array_key",
    "json_default",
]

FORMAT_NAME = "simrt-recording"
FORMAT_VERSION = 2
"""2: streaming Zarr v3 store (1: the single-file ``.npz`` of simrt 0.1, still readable)."""
RESERVED_NAMES = frozenset({"step", "time", "__meta__"})


@dataclass(frozen=True)
class ChannelInfo:
    """Description of one recorded channel.

    Attributes:
        name: channel name, e.g. ``"/World/robot/hand/imu.angular_velocity"``.
        shape: per-step shape, e.g. ``(3,)``; ``()`` for scalars.
        dtype: NumPy dtype name (``"float32"``, ``"float64"``, ``"bool"``, ``"int64"``, ...).
        sensor: USD path of the sensor (or body/robot) the channel belongs to ("" if none).
        kind: sensor kind: ``"contact"``, ``"imu"``, ``"raycast"``, ``"joint_state"``,
            ``"effort"``, ``"body"``, ``"command"`` or ``""``.
        field: reading field name, e.g. ``"linear_acceleration"``.
        unit: unit string, free text (e.g. ``"stage_units/s^2"``).
        attrs: extra JSON-serialisable facts (a raycast sensor's ``max_range``, the
            ``dof_names`` of joint channels, the ``body_paths`` of body channels, ...).
        frame: the frame the values are expressed in (``"world"``, ``"sensor"``,
            ``"joint"``, ...; "" when it does not apply).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    sensor: str = ""
    kind: str = ""
    field: str = ""
    unit: str = ""
    attrs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    frame: str = ""

    def to_json(self) -> dict[str, Any]:
        """Return the JSON-serialisable form stored with the array."""
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "sensor": self.sensor,
            "kind": self.kind,
            "field": self.field,
            "unit": self.unit,
            "frame": self.frame,
            "attrs": dict(self.attrs),
        }

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> ChannelInfo:
        """Inverse of :meth:`to_json` (``name`` wins over a stored one).

        Raises:
            TypeError / ValueError: ``data`` is not a channel description.
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"channel {name!r}: description is not a mapping")
        attrs = data.get("attrs", {})
        if not isinstance(attrs, Mapping):
            raise TypeError(f"channel {name!r}: 'attrs' is not a mapping")
        dtype = str(data.get("dtype", "float64"))
        np.dtype(dtype)  # raises TypeError on a nonsense dtype name
        return cls(
            name=name,
            shape=tuple(int(n) for n in data.get("shape", ())),
            dtype=dtype,
            sensor=str(data.get("sensor", "")),
            kind=str(data.get("kind", "")),
            field=str(data.get("field", "")),
            unit=str(data.get("unit", "")),
            attrs=dict(attrs),
            frame=str(data.get("frame", "")),
        )


def array_key(name: str) -> str:
    """The array name of a channel inside a store: flat (no ``/``), readable, unique.

    USD paths contain ``/``, which Zarr reads as group nesting; channels stay flat arrays
    of one group (one xarray Dataset) by writing ``/`` as ``.``: the channel
    ``"/World/Lidar.depths"`` is the array ``"World.Lidar.depths"``. The exact channel
    name is stored in the array's attributes.
    """
    return name.lstrip("/").replace("/", ".")


def json_default(value: Any) -> Any:
    """``json.dumps`` fallback for NumPy scalars / arrays and paths."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
