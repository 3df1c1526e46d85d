"""Lab sensors from configs and from USD: ``make_lab_sensor``, ``discover_lab_sensors``.

A scene file carries its lab sensors as prims (any type, e.g. ``Xform`` or ``Scope``) with
simrt-namespaced attributes:

* ``simrt:lab:kind`` (token): ``contact``, ``imu``, ``ray_caster``, ``ray_caster_camera``,
  ``frame_transformer`` or ``joint_wrench``.
* ``simrt:lab:primPath`` (string): the body path expression; default the parent prim's path.
* every other config field as ``simrt:lab:<fieldInCamelCase>``: ``updatePeriod``,
  ``historyLength``, ``trackAirTime``, ``forceThreshold``, ``filterPrimPathsExpr``,
  ``gravityBias``, ``meshPrimPaths``, ``rayAlignment``, ``maxDistance``, ``driftRange``,
  ``dataTypes``, ``depthClippingBehavior`` ...; offsets as ``simrt:lab:offset:pos``
  (double3), ``simrt:lab:offset:rot`` (double4, w x y z), ``simrt:lab:offset:convention``;
  the ray pattern as ``simrt:lab:pattern`` (``grid``, ``lidar``, ``bpearl``, ``pinhole``)
  with ``simrt:lab:pattern:<field>`` (``resolution``, ``size``, ``channels``,
  ``verticalFovRange``, ``focalLength``, ``width`` ...); frame-transformer targets as
  ``simrt:lab:targets`` (string[]) and optional ``simrt:lab:targetNames`` (string[]).

A prim with a bad attribute (unknown name, wrong type) becomes a disabled sensor whose
reason names the prim and the attribute; bad values disable the sensor when it is built,
naming the prim and the config field.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from runtime.sensors.lab.base import LabSensor
from runtime.sensors.lab.camera import RayCasterCamera
from runtime.sensors.lab.config import (
    BpearlPattern,
    CameraOffset,
    ContactSensorConfig,
    FrameTarget,
    FrameTransformerConfig,
    GridPattern,
    ImuConfig,
    JointWrenchConfig,
    LidarPattern,
    Offset,
    PinholeCameraPattern,
    RayCasterCameraConfig,
    RayCasterConfig,
)
from runtime.sensors.lab.contact import ContactSensor
from runtime.sensors.lab.frame_transformer import FrameTransformer
from runtime.sensors.lab.imu import Imu
from runtime.sensors.lab.joint_wrench import JointWrenchSensor
from runtime.sensors.lab.ray_caster import RayCaster

__all__ = ["LabSensorSpec", "discover_lab_sensors", "make_lab_sensor", "make_lab_sensors"]

LOGGER = logging.getLogger("runtime.sensors.lab")

NAMESPACE = "simrt:lab:"

_KINDS: dict[str, tuple[type, type]] = {
    "contact": (ContactSensorConfig, ContactSensor),
    "imu": (ImuConfig, Imu),
    "ray_caster": (RayCasterConfig, RayCaster),
    "ray_caster_camera": (RayCasterCameraConfig, RayCasterCamera),
    "frame_transformer": (FrameTransformerConfig, FrameTransformer),
    "joint_wrench": (JointWrenchConfig, JointWrenchSensor),
}
# most specific first (a camera config is a ray caster config)
_CLASSES = sorted(_KINDS.values(), key=lambda pair: -len(pair[0].__mro__))
_NUMBERS = {
    "update_period", "history_length", "force_threshold", "max_distance", "resolution",
    "channels", "horizontal_res", "horizontal_fov", "focal_length", "horizontal_aperture",
    "vertical_aperture", "width", "height",
}  # fmt: skip
"""Fields whose USD attribute must hold a number (a string there is refused by name)."""
_PATTERNS = {
    "grid": GridPattern,
    "lidar": LidarPattern,
    "bpearl": BpearlPattern,
    "pinhole": PinholeCameraPattern,
}


def make_lab_sensor(
    source: Any, config: Any, num_envs: int = 1, ray_scene: Any | None = None
) -> LabSensor:
    """The sensor a config describes (ours or the Isaac Lab compat ``...Cfg``).

    Args:
        source: ``MujocoEngine`` or ``mujoco.MjModel``.
        config: a config of :mod:`runtime.sensors.lab.config` (or a subclass).
        num_envs: worlds per update.
        ray_scene: for ray casters: a scene to cast against (see :class:`RayCaster`).

    Raises:
        TypeError: ``config`` is not a lab sensor config.
    """
    for config_type, sensor_type in _CLASSES:
        if isinstance(config, config_type):
            if issubclass(sensor_type, RayCaster):
                return sensor_type(source, config, num_envs, ray_scene=ray_scene)
            return sensor_type(source, config, num_envs)
    raise TypeError(f"not a lab sensor config: {type(config).__name__}")


@dataclass(frozen=True)
class LabSensorSpec:
    """One sensor prim of a stage: its path and config, or why it cannot be read.

    Attributes:
        path: the sensor prim's path.
        kind: ``simrt:lab:kind``.
        config: the config, or None when ``error`` is set.
        error: why the prim's attributes could not be read, or None.
    """

    path: str
    kind: str
    config: Any
    error: str | None = None


def _camel_to_snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _plain(value: Any) -> Any:
    """USD values as Python: vectors / arrays to tuples / lists, strings as str."""
    if isinstance(value, (str, bool, int, float)):
        return value
    if hasattr(value, "GetReal"):  # a Gf.Quat
        return (value.GetReal(), *value.GetImaginary())
    try:
        items = list(value)
    except TypeError:
        return value
    if items and all(isinstance(v, str) for v in items):
        return [str(v) for v in items]
    return tuple(float(v) if isinstance(v, (int, float, np.number)) else v for v in items)


def _read_prim(prim: Any) -> tuple[str, Any]:
    path = str(prim.GetPath())
    kind = str(prim.GetAttribute(NAMESPACE + "kind").Get() or "")
    if kind not in _KINDS:
        raise ValueError(f"{path}: {NAMESPACE}kind: must be one of {sorted(_KINDS)}, got {kind!r}")
    config_type = _KINDS[kind][0]
    names = {f.name for f in fields(config_type)}
    values: dict[str, Any] = {}
    offset: dict[str, Any] = {}
    pattern: dict[str, Any] = {}
    pattern_kind = None
    targets = names_list = None
    for attribute in prim.GetAttributes():
        full = attribute.GetName()
        if not full.startswith(NAMESPACE) or full == NAMESPACE + "kind":
            continue
        value = attribute.Get()
        if value is None:
            continue
        key = full[len(NAMESPACE) :]
        try:
            value = _plain(value)
        except Exception:  # noqa: BLE001 - any unreadable value is reported by name
            raise ValueError(f"{path}: {full}: unreadable value") from None
        if isinstance(value, str) and _camel_to_snake(key.rsplit(":", 1)[-1]) in _NUMBERS:
            raise ValueError(f"{path}: {full}: must be a number, got {value!r}")
        if key.startswith("offset:"):
            offset[key.split(":", 1)[1]] = value
        elif key == "pattern":
            pattern_kind = str(value)
        elif key.startswith("pattern:"):
            pattern[_camel_to_snake(key.split(":", 1)[1])] = value
        elif key == "targets" and kind == "frame_transformer":
            targets = value
        elif key == "targetNames" and kind == "frame_transformer":
            names_list = value
        else:
            name = _camel_to_snake(key)
            if name not in names or name in ("offset", "pattern_cfg", "target_frames"):
                raise ValueError(f"{path}: {full}: not an attribute of a {kind} sensor")
            if name == "history_length":
                if isinstance(value, bool) or not float(value).is_integer():
                    raise ValueError(f"{path}: {full}: must be an integer, got {value!r}")
                value = int(value)
            values[name] = (
                list(value)
                if isinstance(value, tuple) and name.endswith(("expr", "paths", "types"))
                else value
            )
    values.setdefault("prim_path", str(prim.GetParent().GetPath()))
    if offset:
        if "offset" not in names:
            raise ValueError(f"{path}: {NAMESPACE}offset:*: a {kind} sensor has no offset")
        offset_type = CameraOffset if kind == "ray_caster_camera" else Offset
        allowed = {f.name for f in fields(offset_type)}
        unknown = set(offset) - allowed
        if unknown:
            raise ValueError(f"{path}: {NAMESPACE}offset:{sorted(unknown)[0]}: unknown field")
        values["offset"] = offset_type(**offset)
    if kind in ("ray_caster", "ray_caster_camera"):
        pattern_kind = pattern_kind or ("pinhole" if kind == "ray_caster_camera" else None)
        if pattern_kind not in _PATTERNS:
            raise ValueError(
                f"{path}: {NAMESPACE}pattern: must be one of {sorted(_PATTERNS)}, "
                f"got {pattern_kind!r}"
            )
        pattern_type = _PATTERNS[pattern_kind]
        allowed = {f.name for f in fields(pattern_type)}
        unknown = set(pattern) - allowed
        if unknown:
            raise ValueError(f"{path}: {NAMESPACE}pattern:{sorted(unknown)[0]}: unknown field")
        for key in ("channels", "width", "height"):
            if key in pattern and not isinstance(pattern[key], bool):
                if float(pattern[key]).is_integer():
                    pattern[key] = int(pattern[key])
        values["pattern_cfg"] = pattern_type(**pattern)
    if kind == "frame_transformer" and targets is not None:
        names_list = names_list or [None] * len(targets)
        if len(names_list) != len(targets):
            raise ValueError(f"{path}: {NAMESPACE}targetNames: needs one name per target")
        values["target_frames"] = [
            FrameTarget(prim_path=t, name=n or None)
            for t, n in zip(targets, names_list, strict=True)
        ]
    return kind, config_type(**values)


def discover_lab_sensors(stage: Any) -> list[LabSensorSpec]:
    """Every prim of ``stage`` with ``simrt:lab:kind``, in traversal order.

    Returns:
        One :class:`LabSensorSpec` per sensor prim; a prim whose attributes cannot be read
        has ``config`` None and ``error`` naming the prim and the attribute (also logged).
    """
    specs = []
    for prim in stage.Traverse():
        if not prim.HasAttribute(NAMESPACE + "kind"):
            continue
        path = str(prim.GetPath())
        try:
            kind, config = _read_prim(prim)
        except (TypeError, ValueError) as error:
            message = str(error)
            if not message.startswith(path):
                message = f"{path}: {message}"
            LOGGER.error("%s", message)
            specs.append(
                LabSensorSpec(path, str(prim.GetAttribute(NAMESPACE + "kind").Get()), None, message)
            )
            continue
        specs.append(LabSensorSpec(path, kind, config))
    return specs


def make_lab_sensors(engine: Any, num_envs: int = 1) -> dict[str, LabSensor | None]:
    """The lab sensors of the engine's stage, by sensor prim path.

    Args:
        engine: a ``MujocoEngine`` (its ``stage`` is read).
        num_envs: worlds per update.

    Returns:
        Sensor prim path -> sensor; a prim that could not be read maps to None (its reason
        was logged); a sensor disabled by bad values has ``disabled_reason`` starting with
        the sensor prim's path.
    """
    sensors: dict[str, LabSensor | None] = {}
    for spec in discover_lab_sensors(engine.stage):
        if spec.config is None:
            sensors[spec.path] = None
            continue
        sensor = make_lab_sensor(engine, spec.config, num_envs)
        if sensor.disabled_reason is not None:
            sensor.disabled_reason = f"{spec.path}: {sensor.disabled_reason}"
        sensors[spec.path] = sensor
    return sensors
