"""Readers of the Isaac sensor prims: contact, IMU and raycast.

See docs/sensors/index.md#schema-attributes.

Raycast sensors are special: the reference runtime does not reject a misconfigured raycast
sensor at load time but disables it with a logged reason (docs/sensors/raycast.md#validation). The
reader therefore only rejects malformed values (wrong type, NaN, unknown token) and
:func:`validate_raycast` returns the reason string for the five configuration checks.

Part of :mod:`runtime.schema.readers` (the public import path).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pxr import Usd, UsdPhysics

from runtime.errors import SchemaError
from runtime.schema._schema_tables import (
    CONTACT_FALLBACKS,
    IMU_FALLBACKS,
    OUTPUT_FRAME_TOKENS,
    RAYCAST_FALLBACKS,
    SENSOR_TYPE_NAMES,
)
from runtime.schema._values import (
    _checked_pose,
    _freeze,
    _path,
    _read_bool,
    _read_float,
    _read_float_array,
    _read_int,
    _read_token,
    _read_vec,
    _read_vec3_array,
    _wrong_prim_type,
)

_RIGID_BODY_ENABLED = "physics:rigidBodyEnabled"

IMU_FILTER_WIDTH_MAX = 100_000
"""Largest IMU filter width accepted [steps] (the ring buffer holds 2x the widest)."""

RAY_COUNT_MAX = 1 << 24
"""Largest ``numRays`` of one raycast sensor (16.7 M rays; about 1 GiB of per-ray state)."""

RAY_TIME_OFFSET_MAX = 3600.0
"""Largest ray time offset [s]; the sweep period is the largest offset."""

RAY_DIRECTION_MIN_NORM = 1e-8
"""Ray directions not longer than this are rejected (the reference casts them along +X)."""


def find_parent_rigid_body(prim: Usd.Prim) -> Usd.Prim | None:
    """Parent rigid body of a sensor (docs/sensors/index.md#parent-body).

    Walks the ancestors of ``prim`` (its parent first, the prim itself excluded, stopping
    before the pseudo-root). The first ancestor qualifies when its
    ``physics:rigidBodyEnabled`` attribute exists and is true, or when it has
    ``UsdPhysics.RigidBodyAPI`` and no such attribute. Ancestors whose attribute is false
    are skipped.

    Args:
        prim: the sensor prim.

    Returns:
        The parent rigid-body prim, or None.
    """
    current = prim.GetParent()
    while current and current.IsValid() and not current.IsPseudoRoot():
        attr = current.GetAttribute(_RIGID_BODY_ENABLED)
        if attr and attr.IsValid():
            if attr.Get() is True:
                return current
        elif current.HasAPI(UsdPhysics.RigidBodyAPI):
            return current
        current = current.GetParent()
    return None


def _sensor_common(prim: Usd.Prim, type_name: str) -> tuple[str, bool]:
    path = _path(prim)
    if str(prim.GetTypeName()) != type_name:
        raise _wrong_prim_type(prim, type_name, type_name)
    enabled = _read_bool(prim, "enabled", True)
    return path, bool(enabled)


def _required_body(prim: Usd.Prim, kind: str) -> Usd.Prim:
    body = find_parent_rigid_body(prim)
    if body is None:
        raise SchemaError(
            _path(prim),
            "physics:rigidBodyEnabled",
            f"{kind} has no ancestor with an enabled rigid body",
            "the sensor must be below a prim with UsdPhysics.RigidBodyAPI "
            "(physics:rigidBodyEnabled true)",
        )
    return body


@dataclass(frozen=True, eq=False)
class ContactSensorConfig:
    """Configuration of an ``IsaacContactSensor``.

    Attributes:
        path: USD path of the sensor prim.
        enabled: ``enabled``.
        parent_body: path of the parent rigid body (docs/sensors/index.md#parent-body).
        threshold_min: minimum net force [mass * stage length / s^2].
        threshold_max: maximum net force [mass * stage length / s^2].
        radius: spatial filter radius [stage units]; <= 0 disables filtering.
        color: RGBA, visualisation only.
        sensor_period: deprecated ``sensorPeriod`` [s], ignored by the runtime.
        translation_in_body: sensor origin in the parent body frame [stage units], (3,).
        orientation_in_body: sensor orientation in the parent body frame, wxyz, (4,).
    """

    path: str
    enabled: bool
    parent_body: str
    threshold_min: float
    threshold_max: float
    radius: float
    color: tuple[float, float, float, float]
    sensor_period: float
    translation_in_body: np.ndarray = field(repr=False)
    orientation_in_body: np.ndarray = field(repr=False)

    type_name = "IsaacContactSensor"


def read_contact_sensor(prim: Usd.Prim) -> ContactSensorConfig:
    """Read and validate an ``IsaacContactSensor``.

    Args:
        prim: the sensor prim.

    Returns:
        The contact sensor configuration.

    Raises:
        SchemaError: wrong type name, no parent rigid body, wrong value type, NaN/inf,
            ``threshold`` min > max or a negative threshold.
    """
    path, enabled = _sensor_common(prim, "IsaacContactSensor")
    body = _required_body(prim, "contact sensor")
    fb = CONTACT_FALLBACKS
    threshold = _read_vec(prim, "threshold", 2, fb["threshold"])
    if threshold[0] > threshold[1]:
        raise SchemaError(
            path, "threshold", f"min {threshold[0]} > max {threshold[1]}", "(min, max), min <= max"
        )
    if threshold[1] < 0.0 or threshold[0] < 0.0:
        raise SchemaError(
            path,
            "threshold",
            f"negative force threshold ({threshold[0]:g}, {threshold[1]:g})",
            "(min, max) with 0 <= min <= max",
        )
    color = _read_vec(prim, "color", 4, fb["color"])
    translation, orientation = _checked_pose(prim, body)
    return ContactSensorConfig(
        path=path,
        enabled=enabled,
        parent_body=_path(body),
        threshold_min=float(threshold[0]),
        threshold_max=float(threshold[1]),
        radius=_read_float(prim, "radius", fb["radius"]),
        color=(float(color[0]), float(color[1]), float(color[2]), float(color[3])),
        sensor_period=_read_float(prim, "sensorPeriod", fb["sensorPeriod"]),
        translation_in_body=translation,
        orientation_in_body=orientation,
    )


@dataclass(frozen=True, eq=False)
class ImuSensorConfig:
    """Configuration of an ``IsaacImuSensor``.

    Attributes:
        path: USD path of the sensor prim.
        enabled: ``enabled``.
        parent_body: path of the parent rigid body.
        linear_acceleration_filter_width: authored width (>= 0).
        angular_velocity_filter_width: authored width (>= 0).
        orientation_filter_width: authored width (>= 0).
        sensor_period: deprecated ``sensorPeriod`` [s], ignored.
        translation_in_body: sensor origin in the parent body frame [stage units], (3,).
        orientation_in_body: sensor orientation in the parent body frame, wxyz, (4,).
    """

    path: str
    enabled: bool
    parent_body: str
    linear_acceleration_filter_width: int
    angular_velocity_filter_width: int
    orientation_filter_width: int
    sensor_period: float
    translation_in_body: np.ndarray = field(repr=False)
    orientation_in_body: np.ndarray = field(repr=False)

    type_name = "IsaacImuSensor"

    @property
    def effective_widths(self) -> tuple[int, int, int]:
        """(Nl, Nw, Nq) = each width clamped to >= 1 (docs/sensors/imu.md#configuration)."""
        return (
            max(self.linear_acceleration_filter_width, 1),
            max(self.angular_velocity_filter_width, 1),
            max(self.orientation_filter_width, 1),
        )


def read_imu_sensor(prim: Usd.Prim) -> ImuSensorConfig:
    """Read and validate an ``IsaacImuSensor``.

    Args:
        prim: the sensor prim.

    Returns:
        The IMU configuration.

    Raises:
        SchemaError: wrong type name, no parent rigid body, wrong value type, NaN transform,
            or a filter width < 0 or > :data:`IMU_FILTER_WIDTH_MAX`.
    """
    path, enabled = _sensor_common(prim, "IsaacImuSensor")
    body = _required_body(prim, "IMU sensor")
    widths = []
    for name in (
        "linearAccelerationFilterWidth",
        "angularVelocityFilterWidth",
        "orientationFilterWidth",
    ):
        width = _read_int(prim, name, IMU_FALLBACKS[name])
        if width < 0:
            raise SchemaError(path, name, f"negative filter width {width}", "an integer >= 0")
        if width > IMU_FILTER_WIDTH_MAX:
            raise SchemaError(
                path,
                name,
                f"filter width {width} is too large",
                f"an integer in 0 .. {IMU_FILTER_WIDTH_MAX}",
            )
        widths.append(width)
    translation, orientation = _checked_pose(prim, body)
    return ImuSensorConfig(
        path=path,
        enabled=enabled,
        parent_body=_path(body),
        linear_acceleration_filter_width=widths[0],
        angular_velocity_filter_width=widths[1],
        orientation_filter_width=widths[2],
        sensor_period=_read_float(prim, "sensorPeriod", IMU_FALLBACKS["sensorPeriod"]),
        translation_in_body=translation,
        orientation_in_body=orientation,
    )


@dataclass(frozen=True, eq=False)
class RaycastSensorConfig:
    """Configuration of an ``IsaacRaycastSensor`` (not yet checked by :func:`validate_raycast`).

    Attributes:
        path: USD path of the sensor prim.
        enabled: ``enabled``.
        parent_body: path of the parent rigid body, ``""`` for a static sensor.
        num_rays: ``numRays`` (authoritative ray count).
        min_range: ``minRange`` [stage units].
        max_range: ``maxRange`` [stage units].
        ray_origins: per-ray origins in the sensor frame [stage units], shape (M, 3), float64.
        ray_directions: per-ray directions in the sensor frame (not normalised), (K, 3).
        ray_time_offsets: per-ray time offsets [s], shape (T,); empty = all zero.
        output_frame_of_reference: ``"SENSOR"`` or ``"WORLD"``.
        report_hit_prim_paths: ``reportHitPrimPaths``.
        translation_in_body: sensor origin in the parent body frame (world frame for a static
            sensor) [stage units], (3,).
        orientation_in_body: sensor orientation in the parent body (or world) frame, wxyz, (4,).
    """

    path: str
    enabled: bool
    parent_body: str
    num_rays: int
    min_range: float
    max_range: float
    ray_origins: np.ndarray = field(repr=False)
    ray_directions: np.ndarray = field(repr=False)
    ray_time_offsets: np.ndarray = field(repr=False)
    output_frame_of_reference: str
    report_hit_prim_paths: bool
    translation_in_body: np.ndarray = field(repr=False)
    orientation_in_body: np.ndarray = field(repr=False)

    type_name = "IsaacRaycastSensor"


def read_raycast_sensor(prim: Usd.Prim) -> RaycastSensorConfig:
    """Read an ``IsaacRaycastSensor``.

    Only malformed values are rejected here; call :func:`validate_raycast` for the five
    configuration checks that disable the sensor at run time.

    Args:
        prim: the sensor prim.

    Returns:
        The raycast configuration.

    Raises:
        SchemaError: wrong type name, wrong value type, NaN/inf, negative ``numRays``, or an
            unknown ``outputFrameOfReference`` token (the reference would silently treat it as
            ``SENSOR``; we reject it so that no silently wrong frame is reported).
    """
    path, enabled = _sensor_common(prim, "IsaacRaycastSensor")
    fb = RAYCAST_FALLBACKS
    num_rays = _read_int(prim, "numRays", fb["numRays"])
    if num_rays < 0:
        raise SchemaError(path, "numRays", f"negative ray count {num_rays}", "an integer > 0")
    offsets = _read_float_array(prim, "rayTimeOffsets")
    body = find_parent_rigid_body(prim)
    translation, orientation = _checked_pose(prim, body)
    return RaycastSensorConfig(
        path=path,
        enabled=enabled,
        parent_body=_path(body) if body is not None else "",
        num_rays=num_rays,
        min_range=_read_float(prim, "minRange", fb["minRange"]),
        max_range=_read_float(prim, "maxRange", fb["maxRange"]),
        ray_origins=_freeze(_read_vec3_array(prim, "rayOrigins")),
        ray_directions=_freeze(_read_vec3_array(prim, "rayDirections")),
        ray_time_offsets=_freeze(offsets if offsets is not None else np.zeros(0)),
        output_frame_of_reference=_read_token(
            prim, "outputFrameOfReference", fb["outputFrameOfReference"], OUTPUT_FRAME_TOKENS
        ),
        report_hit_prim_paths=bool(
            _read_bool(prim, "reportHitPrimPaths", fb["reportHitPrimPaths"])
        ),
        translation_in_body=translation,
        orientation_in_body=orientation,
    )


def _fmt(value: float) -> str:
    return f"{value:g}"


def _degenerate_raycast(config: RaycastSensorConfig) -> str | None:
    """The checks simrt adds after the reference's five (see :func:`validate_raycast`)."""
    if config.min_range < 0.0:
        return f"minRange ({_fmt(config.min_range)}) must be >= 0"
    norms = np.linalg.norm(np.asarray(config.ray_directions, np.float64), axis=1)
    zero = np.flatnonzero(norms <= RAY_DIRECTION_MIN_NORM)
    if zero.size:
        i = int(zero[0])
        d = tuple(float(x) for x in config.ray_directions[i])
        return f"rayDirections entry {i} {d} has zero length"
    offsets = np.asarray(config.ray_time_offsets, np.float64)
    if offsets.size:
        too_large = np.flatnonzero(offsets > RAY_TIME_OFFSET_MAX)
        if too_large.size:
            i = int(too_large[0])
            return (
                f"rayTimeOffsets entry {i} ({_fmt(float(offsets[i]))}) exceeds "
                f"{_fmt(RAY_TIME_OFFSET_MAX)} s"
            )
        negative = np.flatnonzero(offsets < 0.0)
        if negative.size and float(offsets.max()) > 0.0:
            i = int(negative[0])
            return (
                f"rayTimeOffsets entry {i} ({_fmt(float(offsets[i]))}) is negative while "
                "others are positive"
            )
    return None


def validate_raycast(config: RaycastSensorConfig) -> str | None:
    """Check a raycast configuration: the five checks, then simrt's.

    See docs/sensors/raycast.md#validation.

    The reference's checks, in its order: ``numRays`` 0, ``minRange >= maxRange``, and the
    lengths of ``rayOrigins`` / ``rayDirections`` / ``rayTimeOffsets``. simrt adds (a sensor
    that would silently report wrong or no readings is disabled instead):

    * ``numRays`` above :data:`RAY_COUNT_MAX` (checked second, before any buffer is sized);
    * ``minRange`` < 0 (the reference accepts it and starts rays behind their origin);
    * a ray direction of length <= :data:`RAY_DIRECTION_MIN_NORM` (the reference silently
      casts it along +X);
    * a time offset > :data:`RAY_TIME_OFFSET_MAX` (the sweep period ``max(offsets)`` is
      so long that rays fire once and never again), or < 0 while other offsets are > 0
      (such a ray fires only in the step where the sweep wraps, cast backwards in time).
      All offsets <= 0 stay legal (docs/sensors/raycast.md#sweep: no windowing, pose extrapolated
      backwards).

    Args:
        config: a configuration from :func:`read_raycast_sensor`.

    Returns:
        None when valid, else the reason, e.g.
        ``"IsaacRaycastSensor '/World/R': numRays (0) must be > 0. Sensor disabled."``.
    """
    n = config.num_rays
    problem: str | None
    if n == 0:
        problem = f"numRays ({n}) must be > 0"
    elif n > RAY_COUNT_MAX:
        problem = f"numRays ({n}) exceeds the limit of {RAY_COUNT_MAX} rays per sensor"
    elif config.min_range >= config.max_range:
        problem = f"minRange ({_fmt(config.min_range)}) >= maxRange ({_fmt(config.max_range)})"
    else:
        lengths = (
            ("rayOrigins", len(config.ray_origins)),
            ("rayDirections", len(config.ray_directions)),
            ("rayTimeOffsets", len(config.ray_time_offsets)),  # empty = all zero, allowed
        )
        bad = [(a, k) for a, k in lengths if k != n and (k or a != "rayTimeOffsets")]
        if bad:
            problem = f"{bad[0][0]} length ({bad[0][1]}) != numRays ({n})"
        else:
            problem = _degenerate_raycast(config)
            if problem is None:
                return None
    return f"IsaacRaycastSensor '{config.path}': {problem}. Sensor disabled."


SensorConfig = ContactSensorConfig | ImuSensorConfig | RaycastSensorConfig
"""Any sensor configuration returned by :func:`read_sensor`."""

_SENSOR_READERS = {
    "IsaacContactSensor": read_contact_sensor,
    "IsaacImuSensor": read_imu_sensor,
    "IsaacRaycastSensor": read_raycast_sensor,
}


def read_sensor(prim: Usd.Prim) -> SensorConfig:
    """Read any supported sensor prim by its exact type name.

    Args:
        prim: a contact, IMU or raycast sensor prim.

    Returns:
        The matching configuration dataclass.

    Raises:
        SchemaError: the type name is not a supported sensor, or the reader rejects it.
    """
    reader = _SENSOR_READERS.get(str(prim.GetTypeName()))
    if reader is None:
        raise _wrong_prim_type(prim, "a sensor", ", ".join(SENSOR_TYPE_NAMES))
    return reader(prim)


def discover_sensor_prims(
    stage: Usd.Stage, type_names: tuple[str, ...] = SENSOR_TYPE_NAMES
) -> list[Usd.Prim]:
    """Sensor prims of the stage in traversal order (docs/sensors/index.md#parent-body).

    Uses USD's default predicate (active, loaded, defined, non-abstract; no instance
    proxies) and an exact type-name match (no derived types).

    Args:
        stage: the stage.
        type_names: the type names to collect.

    Returns:
        The sensor prims.
    """
    wanted = set(type_names)
    return [prim for prim in stage.Traverse() if str(prim.GetTypeName()) in wanted]


def discover_sensors(
    stage: Usd.Stage, type_names: tuple[str, ...] = SENSOR_TYPE_NAMES
) -> list[SensorConfig]:
    """Discover and read every sensor of the stage.

    Args:
        stage: the stage.
        type_names: the sensor type names to collect (exact match).

    Returns:
        One configuration per sensor prim, in traversal order.

    Raises:
        SchemaError: the first sensor that fails validation (e.g. a contact sensor without a
            parent rigid body). Use :func:`discover_sensor_prims` plus :func:`read_sensor` to
            handle sensors one by one.
    """
    return [read_sensor(prim) for prim in discover_sensor_prims(stage, type_names)]
