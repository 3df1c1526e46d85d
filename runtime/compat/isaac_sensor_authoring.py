"""Isaac Sim's physics-sensor authoring classes ``Contact``, ``IMU`` and ``Raycast``.

``isaacsim.sensors.experimental.physics`` authors sensor prims with ``X.create(path, ...)``
and wraps existing ones with ``X(path)``; getters / setters read and write the schema
attributes (sensors.md 1.3-1.5, 1.7, 7). The prims are the ``IsaacContactSensor`` /
``IsaacImuSensor`` / ``IsaacRaycastSensor`` typed prims that simrt's
:class:`~runtime.sensors.SensorRuntime` discovers, so a sensor authored here reads exactly
like one authored by hand.

Stage: Isaac uses the application's current stage. Here every call takes ``stage=``, or the
stage given once to :func:`set_current_stage`.

Rules (sensors.md 7): ``create`` always makes a new prim, numbering the name when the path
is taken (``/World/Cube/Sensor``, then ``/World/Cube/Sensor_01``, ...); a trailing slash is
stripped; a path without a parent prim raises ``RuntimeError``; ``positions`` (world) and
``translations`` (local) together raise ``ValueError``; ``Contact`` needs an enabled
rigid-body ancestor, ``IMU`` too (both ``ValueError``); ``Raycast.create`` needs origins and
directions of equal length, and time offsets (when given) of that length. Wrapping a prim of
another type raises ``ValueError``. Authored defaults are the reference's Python authoring
defaults (contact min threshold 0.0, not the schema's 0.01; table 1.7).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom

import runtime.schema  # noqa: F401  (registers the sensor schema before any stage exists)
from runtime.compat._stage import get_current_stage, resolve_stage, set_current_stage
from runtime.schema.readers import find_parent_rigid_body

__all__ = [
    "IMU",
    "Contact",
    "Raycast",
    "find_parent_rigid_body_or_self",
    "get_current_stage",
    "set_current_stage",
]


def _stage(stage: Usd.Stage | None) -> Usd.Stage:
    return resolve_stage(stage)


def _free_path(stage: Usd.Stage, path: str) -> str:
    """``path`` with a trailing slash stripped, numbered ``_01``, ``_02`` ... when taken."""
    text = str(path)
    if len(text) > 1:
        text = text.rstrip("/")
    if not Sdf.Path.IsValidPathString(text) or not text.startswith("/"):
        raise ValueError(f"invalid prim path {path!r}")
    sdf = Sdf.Path(text)
    parent = sdf.GetParentPath()
    if parent == Sdf.Path.absoluteRootPath or not stage.GetPrimAtPath(parent).IsValid():
        raise RuntimeError(f"cannot create a sensor at {text}: parent prim {parent} does not exist")
    candidate, n = text, 0
    while stage.GetPrimAtPath(candidate).IsValid():
        n += 1
        candidate = f"{text}_{n:02d}"
    return candidate


def _place(
    prim: Usd.Prim,
    positions: Sequence[float] | None,
    translations: Sequence[float] | None,
    orientations: Sequence[float] | None,
) -> None:
    """Author translate + orient ops; ``positions`` are world, ``translations`` local."""
    if positions is not None and translations is not None:
        raise ValueError("give either positions (world) or translations (local), not both")
    xform = UsdGeom.Xformable(prim)
    local = np.array(translations if translations is not None else (0.0, 0.0, 0.0), float)
    if positions is not None:
        parent_world = np.array(
            UsdGeom.Xformable(prim.GetParent()).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
        ).T
        world = np.append(np.asarray(positions, float).reshape(3), 1.0)
        local = np.linalg.solve(parent_world, world)[:3]
    xform.AddTranslateOp().Set(Gf.Vec3d(*map(float, local)))
    q = np.asarray(orientations if orientations is not None else (1.0, 0.0, 0.0, 0.0), float)
    q = q.reshape(4) / np.linalg.norm(q)
    xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(
        Gf.Quatd(float(q[0]), Gf.Vec3d(*map(float, q[1:])))
    )


class _SensorPrim:
    """Common part of the authoring classes: one typed sensor prim."""

    type_name = ""

    def __init__(self, prim_path: Any, *, stage: Usd.Stage | None = None) -> None:
        self._stage = _stage(stage)
        text = str(prim_path.GetPath() if hasattr(prim_path, "GetPath") else prim_path)
        if len(text) > 1:
            text = text.rstrip("/")
        prim = self._stage.GetPrimAtPath(text) if Sdf.Path.IsValidPathString(text) else None
        if prim is None or not prim.IsValid():
            raise ValueError(f"{type(self).__name__}: no prim at {text!r}")
        if prim.GetTypeName() != self.type_name:
            raise ValueError(
                f"{type(self).__name__}: {text} is a {prim.GetTypeName() or 'typeless'} prim, "
                f"not {self.type_name}"
            )
        self._prim = prim

    @classmethod
    def _define(
        cls,
        stage: Usd.Stage | None,
        prim_path: str,
        positions: Sequence[float] | None,
        translations: Sequence[float] | None,
        orientations: Sequence[float] | None,
    ) -> tuple[Usd.Stage, Usd.Prim]:
        st = _stage(stage)
        if positions is not None and translations is not None:
            raise ValueError("give either positions (world) or translations (local), not both")
        path = _free_path(st, prim_path)
        prim = st.DefinePrim(path, cls.type_name)
        _place(prim, positions, translations, orientations)
        return st, prim

    @property
    def prim(self) -> Usd.Prim:
        """The sensor prim."""
        return self._prim

    @property
    def prim_path(self) -> str:
        """The sensor prim path."""
        return str(self._prim.GetPath())

    def _get(self, name: str) -> Any:
        return self._prim.GetAttribute(name).Get()

    def _set(self, name: str, type_name: Any, value: Any) -> None:
        attr = self._prim.GetAttribute(name)
        if not attr:
            attr = self._prim.CreateAttribute(name, type_name)
        attr.Set(value)

    def get_enabled(self) -> bool:
        """``enabled``."""
        return bool(self._get("enabled"))

    def set_enabled(self, value: bool) -> None:
        """Author ``enabled``."""
        self._set("enabled", Sdf.ValueTypeNames.Bool, bool(value))


class Contact(_SensorPrim):
    """``IsaacContactSensor`` authoring object."""

    type_name = "IsaacContactSensor"

    @classmethod
    def create(
        cls,
        prim_path: str,
        *,
        min_threshold: float = 0.0,
        max_threshold: float = 100000.0,
        radius: float = -1.0,
        color: Sequence[float] = (1.0, 1.0, 1.0, 1.0),
        enabled: bool = True,
        positions: Sequence[float] | None = None,
        translations: Sequence[float] | None = None,
        orientations: Sequence[float] | None = None,
        stage: Usd.Stage | None = None,
    ) -> Contact:
        """Author a contact sensor prim below a rigid body.

        Args:
            prim_path: requested path (numbered when taken).
            min_threshold: minimum net force [mass x stage length / s^2].
            max_threshold: maximum net force.
            radius: spatial filter radius [stage units]; <= 0 disables filtering.
            color: RGBA (visualisation only).
            enabled: sensor on.
            positions: world position (3,) [stage units].
            translations: position in the parent frame (3,).
            orientations: orientation (w, x, y, z) in the parent frame.
            stage: the stage (default: :func:`get_current_stage`).

        Returns:
            The authoring object of the new prim.

        Raises:
            ValueError: no enabled rigid-body ancestor; positions and translations both given.
            RuntimeError: the path has no parent prim.
        """
        st = _stage(stage)
        parent = st.GetPrimAtPath(Sdf.Path(str(prim_path).rstrip("/") or "/").GetParentPath())
        if parent.IsValid() and find_parent_rigid_body_or_self(parent) is None:
            raise ValueError(
                f"Contact.create: {prim_path} has no enabled rigid-body ancestor (a contact "
                "sensor must sit below a rigid body)"
            )
        st, prim = cls._define(st, prim_path, positions, translations, orientations)
        obj = cls(prim.GetPath(), stage=st)
        obj.set_threshold((min_threshold, max_threshold))
        obj.set_radius(radius)
        obj.set_color(color)
        obj.set_enabled(enabled)
        return obj

    def get_threshold(self) -> tuple[float, float]:
        """``threshold`` as (min, max)."""
        value = self._get("threshold")
        return float(value[0]), float(value[1])

    def set_threshold(self, value: Sequence[float]) -> None:
        """Author ``threshold`` (min, max)."""
        self._set(
            "threshold", Sdf.ValueTypeNames.Float2, Gf.Vec2f(float(value[0]), float(value[1]))
        )

    def get_min_threshold(self) -> float:
        """Minimum of ``threshold``."""
        return self.get_threshold()[0]

    def set_min_threshold(self, value: float) -> None:
        """Author the minimum of ``threshold`` (the maximum is kept)."""
        self.set_threshold((float(value), self.get_threshold()[1]))

    def get_max_threshold(self) -> float:
        """Maximum of ``threshold``."""
        return self.get_threshold()[1]

    def set_max_threshold(self, value: float) -> None:
        """Author the maximum of ``threshold`` (the minimum is kept)."""
        self.set_threshold((self.get_threshold()[0], float(value)))

    def get_radius(self) -> float:
        """``radius`` [stage units]."""
        return float(self._get("radius"))

    def set_radius(self, value: float) -> None:
        """Author ``radius``."""
        self._set("radius", Sdf.ValueTypeNames.Float, float(value))

    def get_color(self) -> tuple[float, float, float, float]:
        """``color`` RGBA."""
        return tuple(float(c) for c in self._get("color"))  # type: ignore[return-value]

    def set_color(self, value: Sequence[float]) -> None:
        """Author ``color``."""
        self._set("color", Sdf.ValueTypeNames.Float4, Gf.Vec4f(*map(float, value)))


def find_parent_rigid_body_or_self(prim: Usd.Prim) -> Usd.Prim | None:
    """``prim`` when it is an enabled rigid body, else its rigid-body ancestor (or None).

    Same rule as :func:`runtime.schema._sensor_readers.find_parent_rigid_body` (sensors.md
    1.8), which starts at the parent of a sensor prim; here the prospective sensor's parent
    itself counts.
    """
    if _is_enabled_rigid_body(prim):
        return prim
    return find_parent_rigid_body(prim)


def _is_enabled_rigid_body(prim: Usd.Prim) -> bool:
    from pxr import UsdPhysics

    attr = prim.GetAttribute("physics:rigidBodyEnabled")
    if attr and attr.IsValid():
        return attr.Get() is True
    return bool(prim.HasAPI(UsdPhysics.RigidBodyAPI))


class IMU(_SensorPrim):
    """``IsaacImuSensor`` authoring object."""

    type_name = "IsaacImuSensor"

    @classmethod
    def create(
        cls,
        prim_path: str,
        *,
        linear_acceleration_filter_width: int = 1,
        angular_velocity_filter_width: int = 1,
        orientation_filter_width: int = 1,
        enabled: bool = True,
        positions: Sequence[float] | None = None,
        translations: Sequence[float] | None = None,
        orientations: Sequence[float] | None = None,
        stage: Usd.Stage | None = None,
    ) -> IMU:
        """Author an IMU prim below a rigid body (widths clamped to >= 1, all written).

        Args:
            prim_path: requested path (numbered when taken).
            linear_acceleration_filter_width: rolling-average window (steps).
            angular_velocity_filter_width: rolling-average window (steps).
            orientation_filter_width: rolling-average window (steps).
            enabled: sensor on.
            positions: world position (3,) [stage units].
            translations: position in the parent frame (3,).
            orientations: orientation (w, x, y, z) in the parent frame.
            stage: the stage (default: :func:`get_current_stage`).

        Returns:
            The authoring object of the new prim.

        Raises:
            ValueError: no enabled rigid-body ancestor; positions and translations both given.
            RuntimeError: the path has no parent prim.
        """
        st = _stage(stage)
        parent = st.GetPrimAtPath(Sdf.Path(str(prim_path).rstrip("/") or "/").GetParentPath())
        if parent.IsValid() and find_parent_rigid_body_or_self(parent) is None:
            raise ValueError(f"IMU.create: {prim_path} has no enabled rigid-body ancestor")
        st, prim = cls._define(st, prim_path, positions, translations, orientations)
        obj = cls(prim.GetPath(), stage=st)
        obj.set_linear_acceleration_filter_width(linear_acceleration_filter_width)
        obj.set_angular_velocity_filter_width(angular_velocity_filter_width)
        obj.set_orientation_filter_width(orientation_filter_width)
        obj.set_enabled(enabled)
        return obj

    def _width(self, name: str) -> int:
        return int(self._get(name))

    def _set_width(self, name: str, value: int) -> None:
        self._set(name, Sdf.ValueTypeNames.Int, max(1, int(value)))

    def get_linear_acceleration_filter_width(self) -> int:
        """``linearAccelerationFilterWidth``."""
        return self._width("linearAccelerationFilterWidth")

    def set_linear_acceleration_filter_width(self, value: int) -> None:
        """Author ``linearAccelerationFilterWidth`` (clamped to >= 1)."""
        self._set_width("linearAccelerationFilterWidth", value)

    def get_angular_velocity_filter_width(self) -> int:
        """``angularVelocityFilterWidth``."""
        return self._width("angularVelocityFilterWidth")

    def set_angular_velocity_filter_width(self, value: int) -> None:
        """Author ``angularVelocityFilterWidth`` (clamped to >= 1)."""
        self._set_width("angularVelocityFilterWidth", value)

    def get_orientation_filter_width(self) -> int:
        """``orientationFilterWidth``."""
        return self._width("orientationFilterWidth")

    def set_orientation_filter_width(self, value: int) -> None:
        """Author ``orientationFilterWidth`` (clamped to >= 1)."""
        self._set_width("orientationFilterWidth", value)


class Raycast(_SensorPrim):
    """``IsaacRaycastSensor`` authoring object."""

    type_name = "IsaacRaycastSensor"

    @classmethod
    def create(
        cls,
        prim_path: str,
        *,
        ray_origins: Sequence[Sequence[float]] | None = None,
        ray_directions: Sequence[Sequence[float]] | None = None,
        ray_time_offsets: Sequence[float] | None = None,
        min_range: float = 0.4,
        max_range: float = 100.0,
        output_frame_of_reference: str = "SENSOR",
        report_hit_prim_paths: bool = False,
        enabled: bool = True,
        positions: Sequence[float] | None = None,
        translations: Sequence[float] | None = None,
        orientations: Sequence[float] | None = None,
        stage: Usd.Stage | None = None,
    ) -> Raycast:
        """Author a raycast sensor (``numRays = len(ray_origins)``; offsets only when given).

        Args:
            prim_path: requested path (numbered when taken).
            ray_origins: per-ray origins, sensor frame (N, 3) [stage units].
            ray_directions: per-ray directions, sensor frame (N, 3).
            ray_time_offsets: per-ray time offsets (N,) [s], or None.
            min_range: rays start at ``origin + direction * min_range`` [stage units].
            max_range: maximum distance [stage units].
            output_frame_of_reference: ``"SENSOR"`` or ``"WORLD"``.
            report_hit_prim_paths: include hit paths in readings.
            enabled: sensor on.
            positions: world position (3,) [stage units].
            translations: position in the parent frame (3,).
            orientations: orientation (w, x, y, z) in the parent frame.
            stage: the stage (default: :func:`get_current_stage`).

        Returns:
            The authoring object of the new prim.

        Raises:
            ValueError: missing origins / directions, length mismatches, bad frame token,
                positions and translations both given.
            RuntimeError: the path has no parent prim.
        """
        if ray_origins is None or ray_directions is None:
            raise ValueError("Raycast.create needs ray_origins and ray_directions")
        origins = _vec3_array(ray_origins, "ray_origins")
        directions = _vec3_array(ray_directions, "ray_directions")
        if len(origins) != len(directions):
            raise ValueError(
                f"ray_origins has {len(origins)} rays, ray_directions {len(directions)}"
            )
        if ray_time_offsets is not None and len(ray_time_offsets) != len(origins):
            raise ValueError(
                f"ray_time_offsets has {len(ray_time_offsets)} entries for {len(origins)} rays"
            )
        if output_frame_of_reference not in ("SENSOR", "WORLD"):
            raise ValueError(
                f"output_frame_of_reference {output_frame_of_reference!r}: use SENSOR or WORLD"
            )
        st, prim = cls._define(stage, prim_path, positions, translations, orientations)
        obj = cls(prim.GetPath(), stage=st)
        obj._set_rays(origins, directions)
        if ray_time_offsets is not None:
            obj.set_ray_time_offsets(ray_time_offsets)
        obj.set_min_range(min_range)
        obj.set_max_range(max_range)
        obj.set_output_frame_of_reference(output_frame_of_reference)
        obj.set_report_hit_prim_paths(report_hit_prim_paths)
        obj.set_enabled(enabled)
        return obj

    def _set_rays(self, origins: np.ndarray | None, directions: np.ndarray | None) -> None:
        if origins is not None:
            self._set("rayOrigins", Sdf.ValueTypeNames.Float3Array, _vt3(origins))
        if directions is not None:
            self._set("rayDirections", Sdf.ValueTypeNames.Float3Array, _vt3(directions))
        count = len(origins) if origins is not None else len(directions)  # type: ignore[arg-type]
        self._set("numRays", Sdf.ValueTypeNames.UInt, int(count))

    def get_num_rays(self) -> int:
        """``numRays``."""
        return int(self._get("numRays"))

    def get_ray_origins(self) -> np.ndarray:
        """``rayOrigins``, float64 (N, 3), sensor frame."""
        return np.array(self._get("rayOrigins") or [], float).reshape(-1, 3)

    def set_ray_origins(self, value: Sequence[Sequence[float]]) -> None:
        """Author ``rayOrigins`` and ``numRays``."""
        self._set_rays(_vec3_array(value, "ray_origins"), None)

    def get_ray_directions(self) -> np.ndarray:
        """``rayDirections``, float64 (N, 3), sensor frame."""
        return np.array(self._get("rayDirections") or [], float).reshape(-1, 3)

    def set_ray_directions(self, value: Sequence[Sequence[float]]) -> None:
        """Author ``rayDirections`` and ``numRays``."""
        self._set_rays(None, _vec3_array(value, "ray_directions"))

    def get_ray_time_offsets(self) -> np.ndarray:
        """``rayTimeOffsets`` [s], float64 (N,)."""
        return np.array(self._get("rayTimeOffsets") or [], float)

    def set_ray_time_offsets(self, value: Sequence[float]) -> None:
        """Author ``rayTimeOffsets`` (length must equal ``numRays``).

        Raises:
            ValueError: length differs from the ray count.
        """
        if len(value) != self.get_num_rays():
            raise ValueError(
                f"ray_time_offsets has {len(value)} entries for {self.get_num_rays()} rays"
            )
        self._set("rayTimeOffsets", Sdf.ValueTypeNames.FloatArray, [float(v) for v in value])

    def get_min_range(self) -> float:
        """``minRange`` [stage units]."""
        return float(self._get("minRange"))

    def set_min_range(self, value: float) -> None:
        """Author ``minRange``."""
        self._set("minRange", Sdf.ValueTypeNames.Float, float(value))

    def get_max_range(self) -> float:
        """``maxRange`` [stage units]."""
        return float(self._get("maxRange"))

    def set_max_range(self, value: float) -> None:
        """Author ``maxRange``."""
        self._set("maxRange", Sdf.ValueTypeNames.Float, float(value))

    def get_output_frame_of_reference(self) -> str:
        """``outputFrameOfReference`` (``SENSOR`` / ``WORLD``)."""
        return str(self._get("outputFrameOfReference"))

    def set_output_frame_of_reference(self, value: str) -> None:
        """Author ``outputFrameOfReference``.

        Raises:
            ValueError: not ``SENSOR`` or ``WORLD``.
        """
        if value not in ("SENSOR", "WORLD"):
            raise ValueError(f"output_frame_of_reference {value!r}: use SENSOR or WORLD")
        self._set("outputFrameOfReference", Sdf.ValueTypeNames.Token, value)

    def get_report_hit_prim_paths(self) -> bool:
        """``reportHitPrimPaths``."""
        return bool(self._get("reportHitPrimPaths"))

    def set_report_hit_prim_paths(self, value: bool) -> None:
        """Author ``reportHitPrimPaths``."""
        self._set("reportHitPrimPaths", Sdf.ValueTypeNames.Bool, bool(value))


def _vec3_array(value: Any, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.ndim != 2 or array.shape[1] != 3 or not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: expected finite (N, 3) values, got shape {array.shape}")
    return array


def _vt3(array: np.ndarray) -> list:
    return [Gf.Vec3f(*map(float, row)) for row in array]
