"""The ``simrt run`` loop as a library function: :func:`run_scene`.

One run: open the scene, build the MuJoCo engine from its USD physics, bind the sensor
loop (:class:`runtime.sensors.runtime.SensorRuntime`) to the engine's bodies and DOFs, then
for every physics step: (optionally) update IK joint targets, ``engine.step()``,
``sensors.step(engine.state())`` and append every sensor reading (plus joint state and body
poses) to a :class:`runtime.engine.recorder.Recorder`. The recording is flushed atomically
every ``flush_every`` steps and closed in a ``finally`` block, so an exception or Ctrl-C
leaves a valid file with every completed step (marked ``complete = False``).

Scene run settings
------------------
The first ``UsdPhysics.Scene`` prim may carry ``customData["simrt"]`` (a dictionary); every
key is optional and command-line / keyword arguments override it:

==================  ===========  ==========================================================
key                 type         meaning
==================  ===========  ==========================================================
``steps``           int          number of physics steps
``dt``              double       step size [s] (else the scene's own rate)
``ikTargets``       string[]     IK waypoints, syntax ``LINK=x,y,z[,qw,qx,qy,qz][@T]``
``ikEvery``         int          re-solve IK every this many steps (default 10)
``ikUntilContact``  bool         freeze the IK targets once a contact sensor of the robot
                                 reports contact (default False)
``imuMode``         string       ``"isaac"`` (default) or ``"physical"``
``robot``           string       robot prim path (default: first ``IsaacRobotAPI`` prim)
==================  ===========  ==========================================================

IK waypoint syntax (CLI ``--ik-target`` and ``ikTargets``)::

    LINK=x,y,z[,qw,qx,qy,qz][@T]

* ``LINK``: the end link of the IK chain: a link prim name (``panda_hand``) or a full prim
  path. The chain starts at the robot's root link; the target is given in the
  **robot-base frame** (as :meth:`runtime.kinematics.RobotPoser.solve_ik` expects), in
  stage units.
* ``qw,qx,qy,qz``: optional target orientation (w first; normalised). Without it the link
  keeps the orientation it had at the start of the run.
* ``@T``: optional time in seconds at which the target is reached (default 0). Several
  waypoints for the same link form a schedule: the target moves linearly (position) and
  by spherical interpolation (orientation) from one waypoint to the next and then holds
  the last one. Before the first waypoint the first one is used.

Recorded channels (see :mod:`runtime.engine.recorder`): ``<sensor path>.<field>`` for every
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
import logging
import math
import shutil
import threading
import time as _time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from runtime.errors import SimrtError

__all__ = [
    "IkWaypoint",
    "IkSchedule",
    "RunResult",
    "parse_ik_target",
    "read_scene_settings",
    "run_scene",
    "summarize",
    "format_summary",
]

LOGGER = logging.getLogger("runtime.engine")


@dataclass(frozen=True)
class IkWaypoint:
    """One IK target waypoint.

    Attributes:
        link: end link name or prim path.
        position: target position, robot-base frame [stage units], length 3.
        orientation: unit quaternion (w, x, y, z), robot-base frame, or None (keep).
        time: simulation time at which the target is reached [s].
    """

    link: str
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float] | None
    time: float = 0.0


def parse_ik_target(text: str) -> IkWaypoint:
    """Parse ``LINK=x,y,z[,qw,qx,qy,qz][@T]``.

    Args:
        text: the waypoint string.

    Returns:
        The waypoint.

    Raises:
        ValueError: malformed text, naming the problem and the expected syntax.
    """
    syntax = "expected LINK=x,y,z[,qw,qx,qy,qz][@T]"
    raw = str(text).strip()
    if "=" not in raw:
        raise ValueError(f"IK target {text!r}: missing '=' ({syntax})")
    link, _, rest = raw.partition("=")
    link = link.strip()
    if not link:
        raise ValueError(f"IK target {text!r}: empty link name ({syntax})")
    when = 0.0
    if "@" in rest:
        rest, _, time_text = rest.partition("@")
        try:
            when = float(time_text)
        except ValueError:
            raise ValueError(f"IK target {text!r}: time {time_text!r} is not a number") from None
        if not math.isfinite(when) or when < 0:
            raise ValueError(f"IK target {text!r}: time must be finite and >= 0")
    parts = [p for p in rest.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"IK target {text!r}: non-numeric component ({syntax})") from None
    if len(values) not in (3, 7):
        raise ValueError(f"IK target {text!r}: {len(values)} numbers given ({syntax})")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"IK target {text!r}: NaN or infinite component")
    orientation = None
    if len(values) == 7:
        q = np.asarray(values[3:], dtype=np.float64)
        norm = float(np.linalg.norm(q))
        if norm < 1e-9:
            raise ValueError(f"IK target {text!r}: zero quaternion")
        q = q / norm
        orientation = (float(q[0]), float(q[1]), float(q[2]), float(q[3]))
    position = (values[0], values[1], values[2])
    return IkWaypoint(link=link, position=position, orientation=orientation, time=when)


def _slerp(q0: np.ndarray, q1: np.ndarray, s: float) -> np.ndarray:
    dot = float(np.dot(q0, q1))
    if dot < 0.0:
        q1, dot = -q1, -dot
    if dot > 0.9995:
        q = q0 + s * (q1 - q0)
        return q / np.linalg.norm(q)
    theta = math.acos(min(dot, 1.0))
    sin_theta = math.sin(theta)
    return (math.sin((1 - s) * theta) * q0 + math.sin(s * theta) * q1) / sin_theta


class IkSchedule:
    """Time-interpolated target of one link.

    Args:
        link: end link name or path.
        waypoints: this link's waypoints (any order; sorted by time, stable).
    """

    def __init__(self, link: str, waypoints: Sequence[IkWaypoint]) -> None:
        if not waypoints:
            raise ValueError(f"IK schedule for {link!r} has no waypoints")
        self.link = link
        self.waypoints = tuple(sorted(waypoints, key=lambda w: w.time))
        self._times = np.array([w.time for w in self.waypoints])
        self._positions = np.array([w.position for w in self.waypoints], dtype=np.float64)

    def needs_start_orientation(self) -> bool:
        """True when a waypoint leaves its orientation to the start orientation."""
        return any(w.orientation is None for w in self.waypoints)

    def target(
        self, time: float, start_orientation: Sequence[float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Target pose at ``time``.

        Args:
            time: simulation time [s].
            start_orientation: (w, x, y, z) used for waypoints without orientation.

        Returns:
            ``(position (3,), orientation (4,) wxyz)`` in the robot-base frame.
        """
        start_q = np.array(
            start_orientation if start_orientation is not None else (1.0, 0.0, 0.0, 0.0),
            dtype=np.float64,
        )

        def quat(index: int) -> np.ndarray:
            q = self.waypoints[index].orientation
            return start_q if q is None else np.asarray(q, dtype=np.float64)

        times = self._times
        if time <= times[0]:
            return self._positions[0].copy(), quat(0)
        if time >= times[-1]:
            return self._positions[-1].copy(), quat(len(times) - 1)
        hi = int(np.searchsorted(times, time, side="right"))
        lo = hi - 1
        span = times[hi] - times[lo]
        s = 0.0 if span <= 0 else (time - times[lo]) / span
        position = self._positions[lo] + s * (self._positions[hi] - self._positions[lo])
        return position, _slerp(quat(lo), quat(hi), s)


def build_schedules(waypoints: Iterable[IkWaypoint]) -> list[IkSchedule]:
    """Group waypoints by link (first-appearance order) into schedules."""
    grouped: dict[str, list[IkWaypoint]] = {}
    for waypoint in waypoints:
        grouped.setdefault(waypoint.link, []).append(waypoint)
    return [IkSchedule(link, items) for link, items in grouped.items()]


# ---------------------------------------------------------------------------- settings


def _first_physics_scene(stage: Any) -> Any:
    from pxr import UsdPhysics

    for prim in stage.Traverse():
        if prim.IsA(UsdPhysics.Scene):
            return prim
    return None


def read_scene_settings(stage: Any) -> dict[str, Any]:
    """Run settings stored in the first PhysicsScene's ``customData["simrt"]``.

    Args:
        stage: the ``Usd.Stage``.

    Returns:
        Normalised settings (keys ``steps``, ``dt``, ``ik_targets`` (list of
        :class:`IkWaypoint`), ``ik_every``, ``ik_until_contact``, ``imu_mode``, ``robot``),
        only those authored.

    Raises:
        SchemaError: a setting of the wrong type or value (naming the scene prim and key).
    """
    from runtime.errors import SchemaError

    prim = _first_physics_scene(stage)
    if prim is None:
        return {}
    data = prim.GetCustomDataByKey("simrt")
    if data is None:
        return {}
    path = str(prim.GetPath())
    if not isinstance(data, Mapping):
        raise SchemaError(path, "customData:simrt", f"expected a dictionary, got {data!r}")
    out: dict[str, Any] = {}

    def bad(key: str, problem: str, allowed: str) -> SchemaError:
        return SchemaError(path, f"customData:simrt:{key}", problem, allowed)

    for key, value in data.items():
        if key == "steps":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise bad(key, f"invalid value {value!r}", "an integer >= 0")
            out["steps"] = int(value)
        elif key == "dt":
            if not isinstance(value, (int, float)) or not (value > 0 and math.isfinite(value)):
                raise bad(key, f"invalid value {value!r}", "a finite number > 0 [s]")
            out["dt"] = float(value)
        elif key == "ikTargets":
            texts = [value] if isinstance(value, str) else list(value)
            try:
                out["ik_targets"] = [parse_ik_target(str(t)) for t in texts]
            except ValueError as exc:
                raise bad(key, str(exc), "strings LINK=x,y,z[,qw,qx,qy,qz][@T]") from None
        elif key == "ikEvery":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad(key, f"invalid value {value!r}", "an integer >= 1")
            out["ik_every"] = int(value)
        elif key == "ikUntilContact":
            if not isinstance(value, bool):
                raise bad(key, f"invalid value {value!r}", "true or false")
            out["ik_until_contact"] = value
        elif key == "imuMode":
            if value not in ("isaac", "physical"):
                raise bad(key, f"invalid value {value!r}", "'isaac' or 'physical'")
            out["imu_mode"] = str(value)
        elif key == "robot":
            out["robot"] = str(value)
        else:
            LOGGER.warning("%s: customData simrt:%s is not a known run setting; ignored", path, key)
    return out


# ---------------------------------------------------------------------------- progress


class Progress:
    """Plain-text progress bar on a stream (stderr by default), rate-limited.

    Args:
        total: number of steps of the run.
        stream: text stream; None disables output.
        min_interval: seconds between redraws.
    """

    def __init__(self, total: int, stream: TextIO | None, min_interval: float = 0.25) -> None:
        self.total = max(int(total), 0)
        self.stream = stream
        self.min_interval = min_interval
        self._start = _time.perf_counter()
        self._last = -1e9
        self._tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self._last_decile = -1
        self._base = 0  # steps done before the rate clock started (the first step)
        self._notice: threading.Timer | None = None

    def first_step_begins(self, after: float = 1.0) -> None:
        """Announce the first step's one-off work if it takes longer than ``after`` seconds.

        The first step loads the Numba kernels from the cache, or compiles them when the
        cache is empty (tens of seconds): the user is told instead of watching a stalled
        bar with a meaningless ETA.
        """
        if self.stream is None:
            return
        stream = self.stream

        def say() -> None:
            stream.write("compiling kernels (first run only; cached for later runs) ...\n")
            stream.flush()

        self._notice = threading.Timer(after, say)
        self._notice.daemon = True
        self._notice.start()

    def first_step_done(self) -> None:
        """Stop the announcement; rates and ETA count from here (first step excluded)."""
        if self._notice is not None:
            self._notice.cancel()
            self._notice = None
        self._start = _time.perf_counter()
        self._base = 1

    def _line(self, done: int) -> str:
        elapsed = _time.perf_counter() - self._start
        rate = (done - self._base) / elapsed if elapsed > 0 and done > self._base else 0.0
        frac = done / self.total if self.total else 1.0
        width = 30
        filled = int(round(width * frac))
        eta = (self.total - done) / rate if rate > 0 else float("nan")
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} steps "
            f"{100 * frac:5.1f}%  {rate:8.0f} steps/s  ETA {eta:6.1f} s"
        )

    def update(self, done: int) -> None:
        """Redraw for ``done`` completed steps (cheap when nothing is drawn)."""
        if self.stream is None:
            return
        now = _time.perf_counter()
        if self._tty:
            if now - self._last < self.min_interval and done < self.total:
                return
            self._last = now
            self.stream.write("\r" + self._line(done))
            self.stream.flush()
        else:  # logs / pipes: one line per 10 %
            decile = int(10 * done / self.total) if self.total else 10
            if decile > self._last_decile:
                self._last_decile = decile
                self.stream.write(self._line(done) + "\n")
                self.stream.flush()

    def close(self, done: int) -> None:
        """Final redraw and newline."""
        if self._notice is not None:
            self._notice.cancel()
        if self.stream is None:
            return
        if self._tty:
            self.stream.write("\r" + self._line(done) + "\n")
            self.stream.flush()
        else:
            self.update(done)


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
# recorded per sensor (they are 0 in invalid readings, see sensors.md 2.7)
_SKIP_FIELDS = {"is_valid", "valid", "ray_count"}
# raycast fields kept in recordings (ray origins are the sensor position; not recorded)
_RAYCAST_FIELDS = ("depths", "hit_positions", "hit_normals", "ray_end_points_world")
_VALID_FIELDS = ("is_valid", "valid")
_UNSET: Any = object()
_SCALAR_TYPE_SET = frozenset(
    (float, int, bool, np.float32, np.float64, np.int64, np.int32, np.bool_)
)


class _SensorTap:
    """Turns one sensor's readings into recorder rows (channels fixed at the first step)."""

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
        self.path_tables: dict[str, list[str]] = {}
        self._plan: list[tuple[str, int, tuple[int, ...], _HitPathIds | None]] = []
        self._is_mapping: dict[type, bool] = {}

    def define(self, recorder: Any) -> None:
        """Register this sensor's channels from its current reading."""
        from runtime.recording import ChannelInfo

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
            if (
                self.kind == "raycast"
                and self.ray_count is not None
                and shape
                and shape[0]
                in (
                    0,
                    self.ray_count,
                )
            ):
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
        self._valid_slot = recorder.add_channel(
            ChannelInfo(f"{self.path}.valid", (), "bool", self.path, self.kind, "valid", "")
        )
        # per field: (reading field, recorder slot, channel shape, path-id mapper or None)
        self._plan = [
            (
                name,
                slots[name],
                shape,
                _HitPathIds(self.path_tables[name], shape) if name in self.path_tables else None,
            )
            for name, (shape, _) in self.fields.items()
        ]
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

        For ``Recorder.append``: channels without a value (invalid, missing or wrongly
        sized fields) are left out and recorded as zeros. The values are the reading's
        own arrays (the recorder copies them once into its buffers) or arrays this tap
        does not change afterwards. :meth:`write` is the faster in-place equivalent.
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
            value = self._convert(value, shape, path_ids, hits)
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
            reading = self.sensor.reading()
        fields = getattr(reading, "__dict__", None)
        if (
            type(fields) is dict
            and "is_valid" in fields
            and self._is_mapping.get(type(reading)) is False
        ):
            get = fields.get  # dataclass readings: plain field lookups
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
            hits = self._hits(get)
            buffers[self._hit_slot][row] = 0 if hits is None else hits
        for name, slot, shape, path_ids in self._plan:
            value = get(name)
            if shape:
                if type(value) is np.ndarray and value.shape == shape:
                    buffers[slot][row] = value  # the common case: one copy, no conversion
                    continue
            elif type(value) in _SCALAR_TYPE_SET:
                buffers[slot][row] = value
                continue
            value = self._convert(value, shape, path_ids, hits)
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
    def _convert(
        value: Any,
        shape: tuple[int, ...],
        path_ids: _HitPathIds | None,
        hits: np.ndarray | None,
    ) -> Any:
        """The uncommon values: paths to ids, other types or sizes (None: record zeros)."""
        if value is None:
            return None
        if path_ids is not None:
            return path_ids.ids(value, hits)
        array = np.asarray(value)
        if array.shape != shape:
            if array.size != int(np.prod(shape)):
                return None  # invalid/empty reading: recorded as zeros
            array = array.reshape(shape)
        return array


class _HitPathIds:
    """Maps a raycast reading's hit prim paths (one string per ray) to path-table indices.

    ``ids(paths, hits)`` is an int32 array of the channel shape: for each ray that hit
    (``hits``; without it, each of the first ``len(paths)`` rays) with a non-empty path,
    the index of that path in ``table`` (paths are appended in order of first
    appearance), else -1. The sensor reuses one tuple object for a repeated hit pattern,
    so results are cached by the tuple object and the hit mask's bytes; a cached result
    is a read-only array shared between the steps that share it.
    """

    CACHE_SIZE = 256

    def __init__(self, table: list[str], shape: tuple[int, ...]) -> None:
        self.table = table
        self.shape = shape
        self._index: dict[str, int] = {}
        # id(paths tuple) -> (the tuple, hit mask bytes, ids); the tuple is held so its id
        # cannot be reused by another object while the entry exists
        self._cache: dict[int, tuple[tuple[str, ...], bytes, np.ndarray]] = {}

    def ids(self, paths: Sequence[str], hits: np.ndarray | None) -> np.ndarray:
        """The int32 indices of one reading's paths (see the class docstring)."""
        cacheable = type(paths) is tuple and hits is not None
        if cacheable:
            mask = hits.tobytes()
            entry = self._cache.get(id(paths))
            if entry is not None and entry[0] is paths and entry[1] == mask:
                return entry[2]
        ids = np.full(self.shape, -1, dtype=np.int32)
        count = min(len(paths), self.shape[0])
        rows = np.flatnonzero(hits).tolist() if hits is not None else range(count)
        table, index = self.table, self._index
        for i in rows:
            text = paths[i] if i < count else ""
            if text:
                found = index.get(text)
                if found is None:
                    found = index[text] = len(table)
                    table.append(text)
                ids[i] = found
        if cacheable:
            ids.flags.writeable = False
            if len(self._cache) >= self.CACHE_SIZE:
                self._cache.clear()
            self._cache[id(paths)] = (paths, mask, ids)
        return ids


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


# ---------------------------------------------------------------------------- summary

# what summarize() reads (run_scene snapshots only these channels for its summary)
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
    wanted: dict[str, tuple[str, str, str]] = {}  # channel -> (sensor, kind, field)
    for name, info in recording.channels.items():
        if info.kind in _SUMMARY_KINDS and info.field in _SUMMARY_FIELDS:
            wanted[name] = (info.sensor, info.kind, info.field)
    stats: dict[str, dict[str, Any]] = {}
    for sensor, kind, _ in wanted.values():
        stats.setdefault(sensor, {"kind": kind, "valid_steps": 0})
        if kind in ("contact", "raycast"):
            stats[sensor]["hits"] = 0
        if kind == "contact":
            stats[sensor]["max_force"] = 0.0
    by_sensor: dict[str, dict[str, str]] = {}
    for name, (sensor, _, field_name) in wanted.items():
        by_sensor.setdefault(sensor, {})[field_name] = name
    steps, sim_time = 0, 0.0
    for _, block in _blocks(recording, list(wanted)):
        rows = int(block["time"].shape[0])
        if not rows:
            continue
        steps += rows
        sim_time = float(block["time"][-1])
        for sensor, fields in by_sensor.items():
            entry = stats[sensor]
            valid = block[fields["valid"]].astype(bool) if "valid" in fields else None
            entry["valid_steps"] += int(valid.sum()) if valid is not None else rows
            if entry["kind"] == "contact":
                if "in_contact" in fields:
                    entry["hits"] += int(block[fields["in_contact"]].sum())
                force = fields.get("value", fields.get("force"))
                if force is not None and block[force].size:
                    entry["max_force"] = max(entry["max_force"], float(block[force].max()))
            elif entry["kind"] == "raycast":
                if "hit" in fields:
                    entry["hits"] += int(block[fields["hit"]].sum())
            else:
                for field_name in ("linear_acceleration", "angular_velocity"):
                    if field_name not in fields:
                        continue
                    data = block[fields[field_name]]
                    data = data[valid] if valid is not None else data
                    if not data.size:
                        continue
                    low, high = data.min(axis=0), data.max(axis=0)
                    if field_name in entry:
                        low = np.minimum(low, entry[field_name]["min"])
                        high = np.maximum(high, entry[field_name]["max"])
                    entry[field_name] = {"min": low.tolist(), "max": high.tolist()}
    return {"steps": steps, "sim_time": sim_time, "sensors": stats}


def _blocks(recording: Any, names: list[str]) -> Any:
    """``(start, {"time", name: rows})`` blocks of a reader, or one block of a Recording."""
    if hasattr(recording, "iter_chunks"):
        yield from recording.iter_chunks(names)
        return
    block = {name: np.asarray(recording.data[name]) for name in names}
    block["time"] = np.asarray(recording.time)
    yield 0, block


def format_summary(summary: Mapping[str, Any], timings: Mapping[str, float] | None = None) -> str:
    """Human-readable multi-line summary of :func:`summarize` plus timings."""
    lines = [
        f"steps: {summary.get('steps', 0)}   sim time: {summary.get('sim_time', 0.0):.4f} s",
    ]
    if timings:
        wall = timings.get("wall_time", 0.0)
        steps = summary.get("steps", 0)
        rate = steps / wall if wall > 0 else float("nan")
        lines.append(f"wall time: {wall:.3f} s   {rate:.0f} steps/s")
        # the first step's one-off costs are reported apart from the per-step means
        later = steps - 1 if "first_step" in timings else steps
        parts = [
            f"{name} {1e6 * timings[name] / max(later, 1):.1f} us"
            for name in ("physics", "state", "sensors", "readings", "record", "ik")
            if name in timings
        ]
        if parts and later > 0:
            label = "per step after the first" if "first_step" in timings else "per step"
            lines.append(f"{label}: " + ", ".join(parts))
        if "first_step" in timings:
            lines.append(
                f"first step: {1e3 * timings['first_step']:.1f} ms (ray scene build; Numba kernels "
                "loaded from the cache, or compiled when it is empty)"
            )
        if "close" in timings:
            lines.append(f"final recording write: {1e3 * timings['close']:.1f} ms")
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
    return "\n".join(lines)


# ---------------------------------------------------------------------------- IK driving


def _resolve_link(stage: Any, robot_prim: Any, link: str) -> str:
    from runtime.errors import SchemaError

    if link.startswith("/"):
        prim = stage.GetPrimAtPath(link)
        if not prim or not prim.IsValid():
            raise SchemaError(link, "", "IK target link does not exist")
        return link
    from pxr import Usd

    matches = [
        str(p.GetPath())
        for p in Usd.PrimRange(robot_prim)
        if p.GetName() == link and p.GetTypeName() not in ("Mesh", "Cube", "Sphere")
    ]
    if not matches:
        raise SchemaError(
            str(robot_prim.GetPath()),
            "",
            f"IK target link {link!r} not found under the robot",
            "a link prim name or full path",
        )
    return matches[0]


def _root_link(stage: Any, robot_prim: Any) -> str:
    """First link of the robot: the articulation-root body, else the first robot link."""
    from pxr import Usd, UsdPhysics

    for prim in Usd.PrimRange(robot_prim):
        if prim.HasAPI(UsdPhysics.ArticulationRootAPI) and prim.HasAPI(UsdPhysics.RigidBodyAPI):
            return str(prim.GetPath())
    try:
        from runtime.schema.utils import get_all_robot_links

        links = get_all_robot_links(stage, robot_prim)
        if links:
            return str(links[0].GetPath())
    except Exception:  # noqa: BLE001 - fall through to the rigid-body walk
        pass
    for prim in Usd.PrimRange(robot_prim):
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            return str(prim.GetPath())
    from runtime.errors import SchemaError

    raise SchemaError(str(robot_prim.GetPath()), "", "robot has no rigid-body link for IK")


def _pose_in(stage: Any, frame_prim: Any, prim: Any, transform_type: Any) -> Any:
    """Rigid pose of ``prim`` in ``frame_prim``'s frame (authored USD transforms)."""
    from pxr import Usd, UsdGeom

    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    frame = np.array(cache.GetLocalToWorldTransform(frame_prim)).T  # column convention
    world = np.array(cache.GetLocalToWorldTransform(prim)).T
    m = np.linalg.solve(frame, world)
    u, _, vt = np.linalg.svd(m[:3, :3])  # drop any scale
    m[:3, :3] = u @ vt
    return transform_type.from_matrix(m)


class _IkDriver:
    """Solves IK on the schedules and sends joint targets to the engine."""

    def __init__(
        self,
        stage: Any,
        robot_prim: Any,
        dof_table: Any,
        schedules: Sequence[IkSchedule],
        engine: Any,
        every: int,
        until_contact: bool,
    ) -> None:
        from runtime.kinematics.math import Transform
        from runtime.kinematics.poser import RobotPoser

        self._transform = Transform
        self.engine = engine
        self.every = max(int(every), 1)
        self.until_contact = until_contact
        self.frozen_at: float | None = None
        self.disabled_reason: str | None = None
        self.failures = 0
        self.ladders = 0
        self.solves = 0
        root = _root_link(stage, robot_prim)
        self.items: list[dict[str, Any]] = []
        for schedule in schedules:
            end = _resolve_link(stage, robot_prim, schedule.link)
            poser = RobotPoser(
                stage, robot_prim, stage.GetPrimAtPath(root), stage.GetPrimAtPath(end)
            )
            chain = poser.chain
            if chain is None or not chain.joint_paths:
                raise SimrtError(f"{end}: no movable joints between {root} and the IK link")
            indices = np.array([dof_table.index_of(p) for p in chain.joint_paths], np.int64)
            start_in_robot = _pose_in(stage, robot_prim, stage.GetPrimAtPath(root), Transform)
            self.items.append(
                {
                    "schedule": schedule,
                    "poser": poser,
                    "chain": chain,
                    "indices": indices,
                    "index_list": [int(i) for i in indices],
                    "start_orientation": None,
                    "q_from": None,
                    "q_to": None,
                    "end": end,
                    "start_in_robot": start_in_robot,
                    "failing": False,
                }
            )
        self.targets = np.full(len(dof_table.entries), np.nan)

    def update(
        self, step: int, time: float, dt: float, joint_positions: np.ndarray, in_contact: bool
    ) -> bool:
        """Send this step's joint targets; returns True when targets were sent.

        Every ``every`` steps IK is solved for the schedule's target at the end of the next
        block (``time + every * dt``); within the block the joint targets move linearly from
        the previously sent targets to that solution, so the drives see a smooth reference.
        With ``until_contact`` the targets freeze at the first contact.

        Args:
            step: the step about to be taken (1-based).
            time: simulation time before the step [s].
            dt: step size [s].
            joint_positions: current DOF positions (DOF-table order).
            in_contact: whether a robot contact sensor reports contact.
        """
        if self.until_contact and in_contact and self.frozen_at is None:
            self.frozen_at = time
        if self.frozen_at is not None:
            return False  # hold the last targets sent
        phase = (step - 1) % self.every
        sent = False
        for item in self.items:
            if phase == 0:
                self._solve(item, time + self.every * dt, joint_positions)
            if item["q_to"] is None:
                continue
            s = (phase + 1) / self.every
            q = item["q_from"] + s * (item["q_to"] - item["q_from"])
            self.targets[item["indices"]] = q
            self.engine.set_joint_targets(q, item["index_list"])
            sent = True
        return sent

    def _solve(self, item: dict[str, Any], t_goal: float, joint_positions: np.ndarray) -> None:
        q_now = np.asarray(joint_positions, dtype=np.float64)[item["indices"]]
        if item["start_orientation"] is None and item["schedule"].needs_start_orientation():
            # robot-base frame orientation at run start (only waypoints without an
            # orientation use it; skipping it otherwise saves the FK-frames kernel compile)
            local, _ = item["chain"].compute_fk(q_now)  # end pose in the chain's start frame
            start_in_robot = item["start_in_robot"]
            item["start_orientation"] = np.asarray((start_in_robot @ local).q, np.float64)
        position, orientation = item["schedule"].target(t_goal, item["start_orientation"])
        target = self._transform(position, orientation)
        seed = item["q_to"] if item["q_to"] is not None else q_now
        result = item["poser"].solve_ik(target, seed=seed)  # one LM attempt from the seed
        self.solves += 1
        if result.success:
            item["failing"] = False
        else:
            self.failures += 1
            # The cold-start ladder (and the poser's extended ladder: 40 restarts) only runs
            # on the first failure of a streak: while the target stays out of reach of the
            # previous solution, re-running it every `every` steps would cost far more than
            # the step loop and, starting from the same seeds, fail the same way.
            if not item["failing"] or item["q_to"] is None:
                item["failing"] = True
                self.ladders += 1
                result = item["poser"].solve_ik(target)  # cached solution, then the ladder
            if not result.success and item["q_to"] is not None:
                item["q_from"] = item["q_to"]
                return  # keep tracking the last good solution
            item["failing"] = not result.success
        q = np.array([result.joints[p] for p in item["chain"].joint_paths], np.float64)
        item["q_from"] = item["q_to"] if item["q_to"] is not None else q_now
        item["q_to"] = q


# ---------------------------------------------------------------------------- run


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
EXPORT_SUFFIXES = (".npz", ".parquet")


def _output_paths(out: Any) -> tuple[Path, Path | None, Path | None]:
    """(store, export file or None, scratch folder to delete or None) for ``out``.

    ``*.zarr`` (or a path without a suffix) is the store itself; ``.npz`` / ``.parquet``
    record into the store beside it (same name, ``.zarr``) and export it at the end; None
    records into a scratch store that is deleted after the summary.

    Raises:
        SimrtError: another suffix, an unusable store path or a missing export package.
    """
    import tempfile

    from runtime.recording import check_export_path, check_store_path

    if out is None:
        scratch = Path(tempfile.mkdtemp(prefix="simrt-run-"))
        return scratch / "run.zarr", None, scratch
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix in EXPORT_SUFFIXES:
        check_export_path(path)
        return check_store_path(path.with_suffix(STORE_SUFFIX)), path, None
    if suffix not in (STORE_SUFFIX, ""):
        raise SimrtError(
            f"{path}: unsupported recording format {suffix!r} (a store: .zarr; "
            f"or an export written at the end: {', '.join(EXPORT_SUFFIXES)})"
        )
    return check_store_path(path), None, None


def _stop_reason(error: BaseException, done: int) -> str:
    """Why a run stopped early, for the recording's ``reason``."""
    name = getattr(error, "signal_name", None)
    if name:
        return f"interrupted by {name} after {done} steps"
    if isinstance(error, KeyboardInterrupt):
        return f"interrupted (Ctrl-C / SIGINT) after {done} steps"
    return f"stopped after {done} steps: {type(error).__name__}: {error}"


def _open_stage(scene: Any) -> Any:
    from pxr import Usd

    import runtime.schema  # noqa: F401  (schemas registered before the stage exists)

    if not isinstance(scene, (str, Path)):
        return scene
    path = Path(scene)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    stage = Usd.Stage.Open(str(path))
    if stage is None:
        raise SimrtError(f"{path}: could not open as a USD stage")
    return stage


def _find_robot(stage: Any, robot: str | None) -> Any:
    from runtime.errors import SchemaError

    if robot:
        prim = stage.GetPrimAtPath(robot)
        if not prim or not prim.IsValid():
            raise SchemaError(robot, "", "robot prim does not exist")
        return prim
    from runtime.schema.utils import find_robot_prims

    robots = find_robot_prims(stage)
    return robots[0] if robots else None


def run_scene(
    scene: Any,
    *,
    steps: int | None = None,
    dt: float | None = None,
    out: str | Path | None = None,
    ik_targets: Iterable[IkWaypoint | str] | None = None,
    ik_every: int | None = None,
    ik_until_contact: bool | None = None,
    imu_mode: str | None = None,
    robot: str | None = None,
    flush_every: int = 250,
    min_flush_interval: float = 1.0,
    progress: TextIO | None = None,
    record_bodies: bool = True,
    on_step: Callable[[int, Any, Any, Any], None] | None = None,
    engine_factory: Callable[..., Any] | None = None,
) -> RunResult:
    """Step a scene headless and record every sensor reading.

    Args:
        scene: path of a USD scene, or an open ``Usd.Stage``.
        steps: number of physics steps (default: scene setting, else 1000).
        dt: step size [s] (default: scene setting, else the engine's rate from the scene).
        out: recording path (``.npz`` / ``.parquet``); None records in memory only.
        ik_targets: IK waypoints (strings or :class:`IkWaypoint`); None uses the scene's.
        ik_every: re-solve IK every this many steps (default scene setting, else 10).
        ik_until_contact: freeze IK targets at the first robot contact (default scene /
            False).
        imu_mode: ``"isaac"`` or ``"physical"`` (default scene setting, else isaac).
        robot: robot prim path (default scene setting, else the first IsaacRobotAPI prim).
        flush_every: rewrite the recording every this many steps ...
        min_flush_interval: ... but not more often than every this many wall seconds (the
            final write on completion, error or Ctrl-C always includes every step).
        progress: stream for the progress bar (None: silent).
        record_bodies: also record body poses every step.
        on_step: callback ``on_step(step, engine, sensor_runtime, state)`` after each
            recorded step (tests use it to interrupt runs or compare with an oracle).
        engine_factory: ``factory(stage, robot_prim=..., dt=..., compute_accelerations=...)``
            building the engine (default :class:`runtime.engine.mujoco_engine.MujocoEngine`;
            accelerations are computed for the physical IMU mode).

    Returns:
        The :class:`RunResult`.

    Raises:
        SimrtError / SchemaError / OSError: bad scene, settings or output path. Errors and
        KeyboardInterrupt during stepping propagate after the recording is closed (valid,
        ``complete = False``).
    """
    from runtime.recording import ChannelInfo, StoreWriter, open_recording
    from runtime.run.interrupts import signals_deferred
    from runtime.sensors.runtime import SensorRuntime

    store_path, export_path, scratch = _output_paths(out)  # fail before the engine build
    stage = _open_stage(scene)
    settings = read_scene_settings(stage)
    steps = int(steps if steps is not None else settings.get("steps", 1000))
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    dt = dt if dt is not None else settings.get("dt")
    if dt is not None and not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt must be a finite number > 0, got {dt}")
    imu_mode = imu_mode or settings.get("imu_mode", "isaac")
    waypoints: list[IkWaypoint] = []
    source = ik_targets if ik_targets is not None else settings.get("ik_targets", [])
    for item in source:
        waypoints.append(item if isinstance(item, IkWaypoint) else parse_ik_target(str(item)))
    ik_every = int(ik_every if ik_every is not None else settings.get("ik_every", 10))
    until_contact = bool(
        ik_until_contact
        if ik_until_contact is not None
        else settings.get("ik_until_contact", False)
    )
    robot_prim = _find_robot(stage, robot or settings.get("robot"))

    # The built-in engine can refill its own state buffers each step (no per-step allocation).
    # Only safe when no user callback may keep a state object across steps.
    reuse_state = engine_factory is None and on_step is None
    if engine_factory is None:
        from runtime.engine.mujoco_engine import MujocoEngine

        engine_factory = MujocoEngine
    engine = engine_factory(
        stage, robot_prim=robot_prim, dt=dt, compute_accelerations=(imu_mode == "physical")
    )
    state = engine.state()
    body_paths = tuple(state.body_paths)
    dof_table = getattr(engine, "dof_table", None)
    if dof_table is None and robot_prim is not None:
        from runtime.schema.dof import build_dof_table

        dof_table = build_dof_table(stage, robot_prim)
    sensors = SensorRuntime(stage, body_paths, dof_table, imu_mode=imu_mode)
    robot_path = str(robot_prim.GetPath()) if robot_prim is not None else "/"
    robot_bodies = {i for i, p in enumerate(body_paths) if p.startswith(robot_path + "/")}
    robot_contacts = [
        s
        for s in sensors.of_kind("contact")
        if getattr(s, "prim_path", "").startswith(robot_path + "/")
    ]
    del robot_bodies

    ik = None
    if waypoints:
        if robot_prim is None or dof_table is None:
            raise SimrtError("IK targets given but the scene has no robot (IsaacRobotAPI)")
        ik = _IkDriver(
            stage,
            robot_prim,
            dof_table,
            build_schedules(waypoints),
            engine,
            ik_every,
            until_contact,
        )

    disabled = {
        str(getattr(s, "prim_path", "")): str(s.disabled_reason)
        for s in sensors.sensors
        if getattr(s, "disabled_reason", None)
    }
    meta = {
        "scene": str(scene) if isinstance(scene, (str, Path)) else "<stage>",
        "dt": float(getattr(state, "dt", 0.0) or getattr(engine, "dt", 0.0) or dt or 0.0),
        "requested_steps": steps,
        "imu_mode": imu_mode,
        "robot": robot_path,
        "ik_targets": [dataclasses.asdict(w) for w in waypoints],
        "disabled_sensors": disabled,
        "body_paths": list(body_paths),
        "dof_names": list(dof_table.names) if dof_table is not None else [],
    }
    recorder = None
    taps = [_SensorTap(s, stage) for s in sensors.sensors]
    readers = [tap.sensor.reading for tap in taps]  # bound once: no per-step lookups
    joint_slots: dict[str, int] = {}  # recorder slots of the joint and body channels
    body_slots: dict[str, int] = {}
    timings = {
        "physics": 0.0,
        "state": 0.0,
        "sensors": 0.0,
        "readings": 0.0,
        "record": 0.0,
        "ik": 0.0,
    }
    bar = Progress(steps, progress)
    done = 0
    complete = False
    reason = ""
    loop_start = _time.perf_counter()
    joint_positions = np.asarray(state.joint_positions, dtype=np.float64)
    dof_count = joint_positions.shape[0]
    step_dt = float(getattr(state, "dt", 0.0) or getattr(engine, "dt", 0.0) or dt or 1.0 / 60.0)
    perf = _time.perf_counter
    try:
        for k in range(1, steps + 1):
            if k == 1:
                bar.first_step_begins()
            t0 = perf()
            if ik is not None and ik.disabled_reason is None:
                in_contact = until_contact and any(
                    bool(getattr(s.reading(), "in_contact", False)) for s in robot_contacts
                )
                try:
                    ik.update(
                        k, float(getattr(state, "time", 0.0)), step_dt, joint_positions, in_contact
                    )
                except Exception as error:  # noqa: BLE001 - a failing IK must not stop the run
                    ik.disabled_reason = f"IK disabled at step {k}: {error!r}"
                    LOGGER.error("%s; the joint targets keep their last values", ik.disabled_reason)
            t1 = perf()
            engine.step()
            t2 = perf()
            state = engine.state(reuse=True) if reuse_state else engine.state()
            t3 = perf()
            sensors.step(state)
            t4 = perf()
            readings = [read() for read in readers]
            t5 = perf()
            if recorder is None:
                recorder = StoreWriter(store_path, meta=meta, expected_rows=steps)
                for tap in taps:
                    tap.define(recorder)
                if dof_count:
                    for name in ("positions", "velocities", "efforts"):
                        joint_slots[name] = recorder.add_channel(
                            ChannelInfo(
                                f"{robot_path}.{name}",
                                (dof_count,),
                                "float64",
                                robot_path,
                                "joint_state",
                                name,
                                "",
                                {"dof_names": meta["dof_names"]},
                            )
                        )
                    joint_slots["targets"] = recorder.add_channel(
                        ChannelInfo(
                            f"{robot_path}.targets",
                            (dof_count,),
                            "float64",
                            robot_path,
                            "command",
                            "targets",
                            "",
                            {"dof_names": meta["dof_names"]},
                        )
                    )
                if record_bodies:
                    nb = len(body_paths)
                    body_slots["positions"] = recorder.add_channel(
                        ChannelInfo(
                            "bodies.positions",
                            (nb, 3),
                            "float64",
                            "",
                            "body",
                            "positions",
                            "stage_units",
                            {"body_paths": list(body_paths)},
                        )
                    )
                    body_slots["orientations"] = recorder.add_channel(
                        ChannelInfo(
                            "bodies.orientations",
                            (nb, 4),
                            "float64",
                            "",
                            "body",
                            "orientations",
                            "wxyz",
                            {"body_paths": list(body_paths)},
                            "world",
                        )
                    )
            # the row is written in place into the recorder's buffers (one copy per channel)
            buffers, row = recorder.begin_row()
            for tap, reading in zip(taps, readings, strict=True):
                tap.write(buffers, row, reading)
            joint_positions = state.joint_positions.copy()
            if dof_count:
                buffers[joint_slots["positions"]][row] = state.joint_positions
                buffers[joint_slots["velocities"]][row] = state.joint_velocities
                buffers[joint_slots["efforts"]][row] = state.joint_efforts
                buffers[joint_slots["targets"]][row] = ik.targets if ik is not None else 0.0
            if record_bodies:
                buffers[body_slots["positions"]][row] = state.body_positions
                buffers[body_slots["orientations"]][row] = state.body_orientations
            recorder.end_row(int(getattr(state, "step", k)), float(state.time))
            t6 = perf()
            if k == 1:  # one-off costs (ray scene build, kernel cache loads): kept apart
                timings["first_step"] = t6 - t0
                bar.first_step_done()
            else:
                timings["ik"] += t1 - t0
                timings["physics"] += t2 - t1
                timings["state"] += t3 - t2
                timings["sensors"] += t4 - t3
                timings["readings"] += t5 - t4
                timings["record"] += t6 - t5
            done = k
            if on_step is not None:
                on_step(k, engine, sensors, state)
            bar.update(done)
        complete = True
    except BaseException as error:
        reason = _stop_reason(error, done)
        error.steps_done = done  # type: ignore[attr-defined]  # for the CLI's message
        raise
    finally:
        wall = _time.perf_counter() - loop_start
        if recorder is None:  # no step completed: an empty, loadable store
            recorder = StoreWriter(store_path, meta=meta, expected_rows=0)
        closing = _time.perf_counter()
        try:
            with signals_deferred():  # a stop signal now waits until the store is closed
                recorder.close(complete=complete, reason=None if complete else reason)
                if export_path is not None:  # also after an interruption: what was recorded
                    from runtime.recording import export_recording

                    exporting = _time.perf_counter()
                    export_recording(store_path, export_path)
                    timings["export"] = _time.perf_counter() - exporting
        finally:
            timings["close"] = _time.perf_counter() - closing
            bar.close(done)
            sensors.close()
    try:
        summary = summarize(open_recording(store_path))
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    timings["wall_time"] = wall
    for s in sensors.sensors:
        if getattr(s, "disabled_reason", None):
            disabled[str(getattr(s, "prim_path", ""))] = str(s.disabled_reason)
    if ik is not None:
        summary["ik"] = {
            "solves": ik.solves,
            "seeded_failures": ik.failures,
            "cold_start_ladders": ik.ladders,
            "frozen_at": ik.frozen_at,
            "disabled": ik.disabled_reason,
        }
    return RunResult(
        steps=done,
        requested_steps=steps,
        sim_time=float(summary.get("sim_time", 0.0)),
        wall_time=wall,
        out=Path(out) if out is not None else None,
        store=store_path if scratch is None else None,
        complete=complete,
        summary=summary,
        timings=timings,
        disabled=disabled,
    )
