"""What an environment observes: named views of the worlds' observation arrays, and spaces.

Every channel a run records is observable under its channel name (``"/World/Robot/hand/
Imu.linear_acceleration"``, ``"bodies.positions"``, ...), plus short names for the robot's
state:

==================  ==========================================  =====================
name                value                                       shape (per env)
==================  ==========================================  =====================
``joint_pos``       DOF positions [rad or m]                    (D,)
``joint_vel``       DOF velocities [rad/s or m/s]               (D,)
``joint_effort``    DOF efforts [N m or N]                      (D,)
``joint_target``    the drive targets sent [rad or m]           (D,)
``body_pos``        positions of the chosen bodies, world       (B', 3)
``body_quat``       orientations of the chosen bodies, wxyz     (B', 4)
==================  ==========================================  =====================

An observation spec is a list of these names, channel names or ``fnmatch`` patterns of
channel names (``"*FootContact.in_contact"``); the default is the robot's joint positions
and velocities and every sensor channel except its ``time`` / ``step`` stamps.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.errors import SimrtError

__all__ = ["ObservationLayout", "STATE_NAMES"]

STATE_NAMES = ("joint_pos", "joint_vel", "joint_effort", "joint_target", "body_pos", "body_quat")
_STATE_FIELDS = {
    "joint_pos": "positions",
    "joint_vel": "velocities",
    "joint_effort": "efforts",
    "joint_target": "targets",
}
_STAMPS = ("time", "step")


class ObservationLayout:
    """The observation's names, their sources in :class:`~runtime.run.worlds.Worlds` and spaces.

    Args:
        worlds: the worlds observed.
        spec: names / channel names / patterns (None: the default, see the module).
        bodies: body prim paths (or their last path component) for ``body_pos`` /
            ``body_quat``; None: every body of the physics state.

    Raises:
        SimrtError: an unknown name, a pattern matching nothing, an unknown body.
    """

    def __init__(
        self,
        worlds: Any,
        spec: Sequence[str] | None = None,
        bodies: Sequence[str] | None = None,
        lab: dict[str, Any] | None = None,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.worlds = worlds
        extra = dict(extra or {})  # alias -> channel (a noisy channel's exact reading)
        robot = worlds.robot_path
        self.lab = _lab_fields(lab or {}, worlds.num_envs)
        channels = {**worlds.channels, **{name: info for name, (_, _, info) in self.lab.items()}}
        self.channels = channels
        sensor_channels = [
            name
            for name, info in channels.items()
            if info.kind not in ("joint_state", "command", "body", "lab")
        ]
        if spec is None:
            names = ["joint_pos", "joint_vel"] + [
                name for name in sensor_channels if channels[name].field not in _STAMPS
            ]
            names += list(self.lab)
        else:
            if isinstance(spec, str):
                spec = [spec]
            if not isinstance(spec, (list, tuple)) or not all(isinstance(i, str) for i in spec):
                raise SimrtError(f"observations must be a list of names, got {spec!r}")
            names = []
            for item in spec:
                item = str(item)
                if item in STATE_NAMES or item in channels or item in extra:
                    found = [item]
                elif item == "*":  # (everything: the lab fields too)
                    found = list(channels)
                else:
                    found = [n for n in channels if fnmatch.fnmatchcase(n, item)]
                if not found:
                    raise SimrtError(
                        f"unknown observation {item!r}: not one of {', '.join(STATE_NAMES)}, "
                        f"a channel name or a pattern matching one (channels: "
                        f"{', '.join(sorted(channels))})"
                    )
                names.extend(n for n in found if n not in names)
        self.body_index = self._bodies(bodies)
        self.sources: dict[str, tuple[str, np.ndarray | None]] = {}
        for name in names:
            if name in _STATE_FIELDS:
                key = f"{robot}.{_STATE_FIELDS[name]}"
                if key not in channels:
                    raise SimrtError(f"observation {name!r}: the robot has no DOF")
                self.sources[name] = (key, None)
            elif name in ("body_pos", "body_quat"):
                key = "bodies.positions" if name == "body_pos" else "bodies.orientations"
                if key not in channels:
                    raise SimrtError(
                        f"observation {name!r}: body poses are not recorded (record_bodies)"
                    )
                self.sources[name] = (key, self.body_index)
            elif name in extra:
                self.sources[name] = (extra[name], None)
            elif name in self.lab:
                self.sources[name] = (name, None)
            else:
                self.sources[name] = (name, None)
        self.names = tuple(self.sources)
        # the arrays (fixed for the worlds' life), and world 0's rows as views (0-d for
        # scalars) for a single env's observation
        buffers = worlds.buffers
        self._plan = [
            (name, buffers[key], index)
            for name, (key, index) in self.sources.items()
            if key not in self.lab
        ]
        self._rows0 = [
            (name, array[0] if array.ndim > 1 else array[0:1].reshape(()))
            for name, array, index in self._plan
            if index is None
        ]
        self._picked0 = [
            (name, array, index) for name, array, index in self._plan if index is not None
        ]
        self._lab_plan = [(name, *self.lab[name][:2]) for name in self.names if name in self.lab]

    def _bodies(self, bodies: Sequence[str] | None) -> np.ndarray | None:
        paths = self.worlds.body_paths
        if bodies is None:
            return None
        index = []
        for body in bodies:
            body = str(body)
            found = [k for k, p in enumerate(paths) if p == body or p.rsplit("/", 1)[-1] == body]
            if len(found) != 1:
                what = "unknown" if not found else "ambiguous"
                raise SimrtError(f"{what} body {body!r} (bodies: {', '.join(paths)})")
            index.append(found[0])
        return np.array(index, np.int64)

    def observe(self, envs: slice | np.ndarray = slice(None)) -> dict[str, np.ndarray]:
        """A fresh dict of arrays (copies) for the envs ``envs``, env axis first."""
        if isinstance(envs, slice) and envs == slice(None):
            out = {
                name: array.copy() if index is None else array[:, index]
                for name, array, index in self._plan
            }
        else:
            out = {}
            for name, array, index in self._plan:
                values = array[envs]
                out[name] = values[:, index] if index is not None else values.copy()
        for name, data, field in self._lab_plan:
            out[name] = np.array(_lab_value(data(), field)[envs])
        return self._ordered(out) if self._lab_plan else out

    def _ordered(self, out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not self._lab_plan and not self._picked0:
            return out
        return {name: out[name] for name in self.names}

    def observe_first(self) -> dict[str, np.ndarray]:
        """A fresh dict of world 0's arrays (copies) without the env axis."""
        out = {name: row.copy() for name, row in self._rows0}
        for name, array, index in self._picked0:  # (chosen bodies: picked at each call)
            out[name] = array[0, index]
        for name, data, field in self._lab_plan:
            out[name] = np.array(_lab_value(data(), field)[0])
        return self._ordered(out)

    def space(self, num_envs: int | None = None) -> Any:
        """The observation space: a ``gymnasium.spaces.Dict`` of ``Box`` es.

        Args:
            num_envs: None: one env's space; else the batched space (env axis first).
        """
        from gymnasium import spaces

        boxes = {}
        for name, (key, index) in self.sources.items():
            info = self.channels[key]
            shape = tuple(info.shape)
            if index is not None:
                shape = (len(index), *shape[1:])
            low, high = self._bounds(name, info, shape)
            if num_envs is not None:
                shape = (num_envs, *shape)
                low = np.broadcast_to(low, shape)
                high = np.broadcast_to(high, shape)
            boxes[name] = spaces.Box(low=low, high=high, shape=shape, dtype=np.dtype(info.dtype))
        return spaces.Dict(boxes)

    def _bounds(self, name: str, info: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
        dtype = np.dtype(info.dtype)
        if dtype == np.bool_:
            return np.zeros(shape, bool), np.ones(shape, bool)
        if dtype.kind in "iu":
            limits = np.iinfo(dtype)
            low = -1 if info.field == "hit_prim_paths" else 0 if info.field in _STAMPS else None
            return (
                np.full(shape, limits.min if low is None else low, dtype),
                np.full(shape, limits.max, dtype),
            )
        worlds = self.worlds
        if name == "joint_pos":
            return worlds.lower.astype(dtype), worlds.upper.astype(dtype)
        if name == "body_quat" or info.field == "orientation":
            return np.full(shape, -1.0, dtype), np.full(shape, 1.0, dtype)
        if info.field == "depths" and "max_range" in info.attrs:
            high = np.full(shape, np.inf, dtype)
            return np.zeros(shape, dtype), high
        return np.full(shape, -np.inf, dtype), np.full(shape, np.inf, dtype)


def _lab_value(data: Any, field: str) -> np.ndarray:
    """A lab sensor data field (``"output.NAME"``: an entry of a camera's image dict)."""
    if field.startswith("output."):
        return data.output[field[len("output.") :]]
    return getattr(data, field)


def _lab_fields(lab: dict[str, Any], num_envs: int) -> dict[str, tuple[Any, str, Any]]:
    """Observable fields of the lab sensors: name -> (data getter, field, ChannelInfo).

    Every array field of a sensor's data with the env axis first, named
    ``"<sensor prim path>:<field>"`` (camera images: ``"<path>:<image type>"``).
    """
    import dataclasses

    from runtime.recording import ChannelInfo

    fields: dict[str, tuple[Any, str, Any]] = {}
    for path, sensor in lab.items():
        data = sensor.data
        candidates = []
        for item in dataclasses.fields(data):
            value = getattr(data, item.name)
            if isinstance(value, dict):
                candidates += [(f"output.{k}", k, v) for k, v in value.items()]
            else:
                candidates.append((item.name, item.name, value))
        for field, label, value in candidates:
            if not isinstance(value, np.ndarray) or value.ndim < 1 or value.shape[0] != num_envs:
                continue
            name = f"{path}:{label}"
            info = ChannelInfo(name, tuple(value.shape[1:]), value.dtype.name, path, "lab", label)
            fields[name] = (lambda s=sensor: s.data, field, info)
    return fields
