"""Run configuration: the scene's own run settings and IK waypoints.

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
``noiseSeed``       int          seed of the sensor noise (default 0; docs/guides/noise.md)
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
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime.run.grippers import GripperAction, parse_gripper_action

LOGGER = logging.getLogger("runtime.run")

__all__ = ["IkWaypoint", "RunConfig", "parse_ik_target", "read_scene_settings"]


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
        elif key == "noiseSeed":
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad(key, f"invalid value {value!r}", "an integer")
            out["noise_seed"] = int(value)
        elif key == "gripperActions":
            texts = [value] if isinstance(value, str) else list(value)
            try:
                out["gripper_actions"] = [parse_gripper_action(str(t)) for t in texts]
            except ValueError as exc:
                raise bad(key, str(exc), "strings GRIPPER=close@T|open@T|close@contact") from None
        elif key in _BUILD_SETTINGS:
            continue  # read and checked by the engine builder
        else:
            LOGGER.warning("%s: customData simrt:%s is not a known run setting; ignored", path, key)
    return out


IMU_MODES = ("isaac", "physical")
_BUILD_SETTINGS = frozenset({"excludeReferenceOverlaps"})
MAX_STEPS = 10**12


@dataclass(frozen=True)
class RunConfig:
    """Everything that decides what a run does, validated once.

    Built by :meth:`resolve` from the scene's ``customData["simrt"]`` settings overridden by
    explicit values (command line / keyword arguments); ``None`` means "not given".

    Attributes:
        steps: physics steps to take (>= 0).
        dt: step size [s] (> 0, finite), or None for the scene's own rate.
        ik_targets: IK waypoints, robot-base frame.
        ik_every: re-solve IK every this many steps (>= 1).
        ik_until_contact: freeze the IK targets at the robot's first contact.
        imu_mode: ``"isaac"`` or ``"physical"``.
        robot: robot prim path, or None for the first ``IsaacRobotAPI`` prim.
        record_bodies: record body poses every step.
        cache: use the scene cache.
        gripper_actions: scheduled surface-gripper actions (:mod:`runtime.run.grippers`).
        noise_seed: seed of the sensor noise (:mod:`runtime.run.noise_channels`).
        noise: noise parameters ``{sensor path: {field: {parameter: value}}}`` on top of the
            scene's ``simrt:noise:*`` attributes (a batch spec's ``[noise]`` table).
    """

    steps: int = 1000
    dt: float | None = None
    ik_targets: tuple[IkWaypoint, ...] = ()
    ik_every: int = 10
    ik_until_contact: bool = False
    imu_mode: str = "isaac"
    robot: str | None = None
    record_bodies: bool = True
    cache: bool = True
    gripper_actions: tuple[GripperAction, ...] = ()
    noise_seed: int = 0
    noise: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def bad(name: str, value: Any, allowed: str) -> ValueError:
            return ValueError(f"{name}: {value!r} is not allowed ({allowed})")

        steps = self.steps
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
            raise bad("steps", steps, "an integer >= 0")
        if not 0 <= int(steps) <= MAX_STEPS:
            raise bad("steps", steps, f"an integer from 0 to {MAX_STEPS}")
        if self.dt is not None:
            dt = self.dt
            if isinstance(dt, bool) or not isinstance(dt, (int, float, np.floating)):
                raise bad("dt", dt, "a finite number > 0 [s]")
            if not (math.isfinite(float(dt)) and 0.0 < float(dt) <= 1.0):
                raise bad("dt", dt, "a finite step size > 0 and <= 1 s")
        every = self.ik_every
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise bad("ik_every", every, "an integer >= 1")
        if self.imu_mode not in IMU_MODES:
            raise bad("imu_mode", self.imu_mode, " or ".join(IMU_MODES))
        for waypoint in self.ik_targets:
            if not isinstance(waypoint, IkWaypoint):
                raise bad("ik_targets", waypoint, "IkWaypoint entries")
        for action in self.gripper_actions:
            if not isinstance(action, GripperAction):
                raise bad("gripper_actions", action, "GripperAction entries")
        seed = self.noise_seed
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise bad("noise_seed", seed, "an integer")
        if not isinstance(self.noise, Mapping):
            raise bad("noise", self.noise, "a mapping {sensor: {field: {parameter: value}}}")

    @classmethod
    def resolve(cls, settings: Mapping[str, Any], **overrides: Any) -> RunConfig:
        """The scene's settings (:func:`read_scene_settings`) with ``overrides`` on top.

        Overrides that are None are not given. ``ik_targets`` may hold strings in the
        ``LINK=x,y,z[,qw,qx,qy,qz][@T]`` syntax.

        Raises:
            ValueError: a value out of range (names the setting).
            TypeError: an unknown override name.
        """
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(overrides) - known
        if unknown:
            raise TypeError(f"unknown run settings {sorted(unknown)}")
        values: dict[str, Any] = {k: v for k, v in settings.items() if k in known}
        values.update({k: v for k, v in overrides.items() if v is not None})
        targets = values.get("ik_targets", ())
        values["ik_targets"] = tuple(
            t if isinstance(t, IkWaypoint) else parse_ik_target(str(t)) for t in targets
        )
        actions = values.get("gripper_actions", ())
        values["gripper_actions"] = tuple(
            a if isinstance(a, GripperAction) else parse_gripper_action(str(a)) for a in actions
        )
        return cls(**values)
