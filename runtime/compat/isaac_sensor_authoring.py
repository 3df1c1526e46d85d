"""Isaac Sim's physics-sensor authoring classes ``Contact``, ``IMU`` and ``Raycast``.

``isaacsim.sensors.experimental.physics`` authors sensor prims with ``X.create(paths, ...)``
and wraps existing ones with ``X(paths, ...)``; getters / setters read and write the schema
attributes (sensor spec §1.3-1.5, 1.7, 7). The prims are the ``IsaacContactSensor`` /
``IsaacImuSensor`` / ``IsaacRaycastSensor`` typed prims that simrt's
:class:`~runtime.sensors.SensorRuntime` discovers, so a sensor authored here reads exactly
like one authored by hand.

Batches, as in Isaac: ``paths`` is one path or a list of N paths; ``positions`` (world) /
``translations`` (parent frame) are ``(N, 3)`` arrays and ``orientations`` ``(N, 4)`` (w, x,
y, z) arrays -- one row per prim, or one row (or a flat ``(3,)`` / ``(4,)``) for all.
Wrapping existing prims (``Contact(path, radius=0.1, translations=...)``) authors the given
overrides; keywords left at None keep the authored values. Getters read the first prim;
setters write every prim.

Isaac's keyword names are the primary ones (``IMU``: ``*_filter_size``; ``Raycast``:
``output_frame``); simrt's earlier names (``*_filter_width``, ``output_frame_of_reference``)
stay accepted as aliases (giving both with different values raises ``ValueError``).

Stage: Isaac uses the application's current stage. Here every call takes ``stage=``, or the
stage given once to :func:`set_current_stage` (a ``SimulationContext`` sets it).

Rules (sensor spec §7): ``create`` always makes a new prim, numbering the name when the path
is taken (``/World/Cube/Sensor``, then ``/World/Cube/Sensor_01``, ...); a trailing slash is
stripped; a path without a parent prim raises ``RuntimeError``; ``positions`` (world) and
``translations`` (local) together raise ``ValueError``; ``Contact`` needs an enabled
rigid-body ancestor, ``IMU`` too (both ``ValueError``); ``Raycast.create`` needs origins and
directions of equal length, and time offsets (when given) of that length. Wrapping a prim of
another type raises ``ValueError``. Authored defaults are the reference's Python authoring
defaults (contact min threshold 0.0, not the schema's 0.01; table 1.7).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


def _path_text(item: Any) -> str:
    """A path string from a string, ``Sdf.Path``, ``Usd.Prim`` or authoring object."""
    if hasattr(item, "prim_path"):
        item = item.prim_path
    elif hasattr(item, "GetPath"):
        item = item.GetPath()
    text = str(item)
    return text.rstrip("/") if len(text) > 1 else text


def _path_list(paths: Any) -> list[str]:
    """One or several paths as a list of strings.

    Raises:
        ValueError: an empty list.
    """
    if isinstance(paths, (str, Sdf.Path)) or hasattr(paths, "GetPath"):
        out = [_path_text(paths)]
    elif hasattr(paths, "prim_paths"):
        out = list(paths.prim_paths)
    else:
        out = [_path_text(p) for p in paths]
    if not out:
        raise ValueError("no prim paths given")
    return out


def _rows(value: Any, width: int, count: int, name: str) -> np.ndarray | None:
    """``value`` as ``(count, width)`` float64 rows (one row is repeated), or None.

    Raises:
        ValueError: another shape, or values that are not finite.
    """
    if value is None:
        return None
    array = np.asarray(value, dtype=float)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2 or array.shape[1] != width or array.shape[0] not in (1, count):
        raise ValueError(
            f"{name}: expected ({count}, {width}) values (or ({width},)), got shape "
            f"{np.shape(value)}"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: values must be finite")
    return np.broadcast_to(array, (count, width))


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


_SIMPLE_OPS = {
    UsdGeom.XformOp.TypeTranslate,
    UsdGeom.XformOp.TypeOrient,
    UsdGeom.XformOp.TypeScale,
}


def _pose_ops(prim: Usd.Prim) -> tuple[UsdGeom.XformOp, UsdGeom.XformOp]:
    """The prim's translate and orient ops, made when missing.

    Prims whose local transform uses other ops (matrix, Euler rotations) are rewritten as
    translate + orient (+ scale) holding the same local transform.
    """
    xform = UsdGeom.Xformable(prim)
    ops = xform.GetOrderedXformOps()
    if any(op.GetOpType() not in _SIMPLE_OPS for op in ops):
        local = Gf.Transform(xform.GetLocalTransformation(Usd.TimeCode.Default()))
        xform.ClearXformOpOrder()
        xform.AddTranslateOp().Set(local.GetTranslation())
        xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(
            Gf.Quatd(local.GetRotation().GetQuat())
        )
        scale = local.GetScale()
        if not Gf.IsClose(scale, Gf.Vec3d(1.0, 1.0, 1.0), 1e-12):
            xform.AddScaleOp().Set(Gf.Vec3f(scale))
        ops = xform.GetOrderedXformOps()
    by_type = {op.GetOpType(): op for op in ops}
    translate = by_type.get(UsdGeom.XformOp.TypeTranslate)
    orient = by_type.get(UsdGeom.XformOp.TypeOrient)
    if translate is None:
        translate = xform.AddTranslateOp()
        translate.Set(Gf.Vec3d(0.0, 0.0, 0.0))
    if orient is None:
        orient = xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble)
        orient.Set(Gf.Quatd(1.0))
    order = [op for op in xform.GetOrderedXformOps()]
    rest = [op for op in order if op.GetOpType() not in _SIMPLE_OPS - {UsdGeom.XformOp.TypeScale}]
    xform.SetXformOpOrder([translate, orient, *rest])
    return translate, orient


def _set_pose(
    prim: Usd.Prim,
    position: np.ndarray | None,
    translation: np.ndarray | None,
    orientation: np.ndarray | None,
) -> None:
    """Author a world position, a local translation and / or a local orientation (w, x, y, z)."""
    if position is None and translation is None and orientation is None:
        return
    translate, orient = _pose_ops(prim)
    if position is not None:
        parent_world = np.array(
            UsdGeom.Xformable(prim.GetParent()).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
        ).T
        translation = np.linalg.solve(parent_world, np.append(position, 1.0))[:3]
    if translation is not None:
        value = Gf.Vec3d(*map(float, translation))
        if translate.GetPrecision() == UsdGeom.XformOp.PrecisionFloat:
            value = Gf.Vec3f(value)
        translate.Set(value)
    if orientation is not None:
        norm = float(np.linalg.norm(orientation))
        if norm < 1e-12:
            raise ValueError(f"{prim.GetPath()}: zero orientation quaternion")
        q = np.asarray(orientation, float) / norm
        if orient.GetPrecision() == UsdGeom.XformOp.PrecisionFloat:
            orient.Set(Gf.Quatf(float(q[0]), Gf.Vec3f(*map(float, q[1:]))))
        else:
            orient.Set(Gf.Quatd(float(q[0]), Gf.Vec3d(*map(float, q[1:]))))


def _same(new: Any, old: Any, new_name: str, old_name: str) -> Any:
    """The value of a keyword given under Isaac's name or simrt's older alias.

    Raises:
        ValueError: both given with different values.
    """
    if new is not None and old is not None and new != old:
        raise ValueError(f"{new_name}={new!r} and its alias {old_name}={old!r} disagree")
    return new if new is not None else old


class _SensorPrim:
    """Common part of the authoring classes: one or several typed sensor prims.

    Args:
        prim_paths: a path (string, ``Sdf.Path``, ``Usd.Prim``) or a list of them.
        positions: world positions to author, ``(N, 3)`` or ``(3,)`` [stage units].
        translations: parent-frame translations to author, ``(N, 3)`` or ``(3,)``.
        orientations: parent-frame orientations (w, x, y, z), ``(N, 4)`` or ``(4,)``.
        stage: the stage (default: :func:`get_current_stage`).
        **overrides: attribute values to author (the class's ``create`` keywords; None
            keeps the authored value).

    Raises:
        ValueError: no prim, a prim of another type, positions and translations both given,
            an array of the wrong shape.
        TypeError: an unknown override keyword.
    """

    type_name = ""
    _setters: tuple[tuple[str, str], ...] = (("enabled", "set_enabled"),)
    """(keyword, setter) pairs in the order overrides are authored."""

    def __init__(
        self,
        prim_paths: Any,
        *,
        positions: Any = None,
        translations: Any = None,
        orientations: Any = None,
        stage: Usd.Stage | None = None,
        **overrides: Any,
    ) -> None:
        self._stage = _stage(stage)
        self._prims = [self._typed_prim(text) for text in _path_list(prim_paths)]
        self.set_poses(positions=positions, translations=translations, orientations=orientations)
        self._apply(overrides)

    def _typed_prim(self, text: str) -> Usd.Prim:
        prim = self._stage.GetPrimAtPath(text) if Sdf.Path.IsValidPathString(text) else None
        if prim is None or not prim.IsValid():
            raise ValueError(f"{type(self).__name__}: no prim at {text!r}")
        if prim.GetTypeName() != self.type_name:
            raise ValueError(
                f"{type(self).__name__}: {text} is a {prim.GetTypeName() or 'typeless'} prim, "
                f"not {self.type_name}"
            )
        return prim

    def _apply(self, values: dict[str, Any]) -> None:
        known = dict(self._setters)
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown keyword(s) {unknown}")
        for key, setter in self._setters:
            if values.get(key) is not None:
                getattr(self, setter)(values[key])

    def set_poses(
        self, *, positions: Any = None, translations: Any = None, orientations: Any = None
    ) -> None:
        """Author world positions or parent-frame translations and / or orientations.

        Args:
            positions: ``(N, 3)`` or ``(3,)`` world positions [stage units].
            translations: ``(N, 3)`` or ``(3,)`` translations in the parent frame.
            orientations: ``(N, 4)`` or ``(4,)`` (w, x, y, z) in the parent frame.

        Raises:
            ValueError: positions and translations both given; a wrong shape.
        """
        if positions is not None and translations is not None:
            raise ValueError("give either positions (world) or translations (local), not both")
        n = len(self._prims)
        world = _rows(positions, 3, n, "positions")
        local = _rows(translations, 3, n, "translations")
        quats = _rows(orientations, 4, n, "orientations")
        for i, prim in enumerate(self._prims):
            _set_pose(
                prim,
                None if world is None else world[i],
                None if local is None else local[i],
                None if quats is None else quats[i],
            )

    @classmethod
    def _define(
        cls,
        stage: Usd.Stage | None,
        prim_paths: Any,
        positions: Any,
        translations: Any,
        orientations: Any,
        check_parent: Callable[[str, Usd.Prim], None] | None = None,
    ) -> tuple[Usd.Stage, list[str]]:
        """Define one new prim per path (placed; identity pose by default)."""
        st = _stage(stage)
        if positions is not None and translations is not None:
            raise ValueError("give either positions (world) or translations (local), not both")
        wanted = _path_list(prim_paths)
        n = len(wanted)
        world = _rows(positions, 3, n, "positions")
        local = _rows(translations, 3, n, "translations")
        quats = _rows(orientations, 4, n, "orientations")
        made = []
        for i, text in enumerate(wanted):
            parent = (
                st.GetPrimAtPath(Sdf.Path(text).GetParentPath()) if text.startswith("/") else None
            )
            if check_parent is not None and parent is not None and parent.IsValid():
                check_parent(text, parent)
            path = _free_path(st, text)
            prim = st.DefinePrim(path, cls.type_name)
            _set_pose(
                prim,
                None if world is None else world[i],
                np.zeros(3) if local is None else local[i],
                np.array([1.0, 0.0, 0.0, 0.0]) if quats is None else quats[i],
            )
            made.append(path)
        return st, made

    @property
    def prim(self) -> Usd.Prim:
        """The (first) sensor prim."""
        return self._prims[0]

    @property
    def prims(self) -> list[Usd.Prim]:
        """Every sensor prim, in order."""
        return list(self._prims)

    @property
    def prim_path(self) -> str:
        """The (first) sensor prim path."""
        return str(self._prims[0].GetPath())

    @property
    def prim_paths(self) -> list[str]:
        """Every sensor prim path, in order."""
        return [str(p.GetPath()) for p in self._prims]

    @property
    def count(self) -> int:
        """Number of prims."""
        return len(self._prims)

    def _get(self, name: str, prim: Usd.Prim | None = None) -> Any:
        return (prim or self._prims[0]).GetAttribute(name).Get()

    def _set(self, name: str, type_name: Any, value: Any, prim: Usd.Prim | None = None) -> None:
        for target in [prim] if prim is not None else self._prims:
            attr = target.GetAttribute(name)
            if not attr:
                attr = target.CreateAttribute(name, type_name)
            attr.Set(value)

    def get_enabled(self) -> bool:
        """``enabled``."""
        return bool(self._get("enabled"))

    def set_enabled(self, value: bool) -> None:
        """Author ``enabled``."""
        self._set("enabled", Sdf.ValueTypeNames.Bool, bool(value))


def _needs_rigid_body(kind: str) -> Callable[[str, Usd.Prim], None]:
    def check(path: str, parent: Usd.Prim) -> None:
        if find_parent_rigid_body_or_self(parent) is None:
            raise ValueError(
                f"{kind}.create: {path} has no enabled rigid-body ancestor (the sensor must "
                "sit below a rigid body)"
            )

    return check


class Contact(_SensorPrim):
    """``IsaacContactSensor`` authoring object.

    Overrides when wrapping: ``min_threshold``, ``max_threshold``, ``radius``, ``color``,
    ``enabled``.
    """

    type_name = "IsaacContactSensor"
    _setters = (
        ("min_threshold", "set_min_threshold"),
        ("max_threshold", "set_max_threshold"),
        ("radius", "set_radius"),
        ("color", "set_color"),
        ("enabled", "set_enabled"),
    )

    @classmethod
    def create(
        cls,
        prim_paths: Any,
        *,
        min_threshold: float = 0.0,
        max_threshold: float = 100000.0,
        radius: float = -1.0,
        color: Sequence[float] = (1.0, 1.0, 1.0, 1.0),
        enabled: bool = True,
        positions: Any = None,
        translations: Any = None,
        orientations: Any = None,
        stage: Usd.Stage | None = None,
    ) -> Contact:
        """Author contact sensor prims below rigid bodies.

        Args:
            prim_paths: requested path(s) (numbered when taken).
            min_threshold: minimum net force [mass x stage length / s^2].
            max_threshold: maximum net force.
            radius: spatial filter radius [stage units]; <= 0 disables filtering.
            color: RGBA (visualisation only).
            enabled: sensor on.
            positions: world positions, ``(N, 3)`` or ``(3,)`` [stage units].
            translations: positions in the parent frame, ``(N, 3)`` or ``(3,)``.
            orientations: orientations (w, x, y, z) in the parent frame, ``(N, 4)``.
            stage: the stage (default: :func:`get_current_stage`).

        Returns:
            The authoring object of the new prims.

        Raises:
            ValueError: no enabled rigid-body ancestor; positions and translations both
                given; an array of the wrong shape.
            RuntimeError: a path has no parent prim.
        """
        st, paths = cls._define(
            stage, prim_paths, positions, translations, orientations, _needs_rigid_body("Contact")
        )
        obj = cls(paths, stage=st)
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
        """Author the minimum of ``threshold`` (each prim's maximum is kept)."""
        for prim in self._prims:
            keep = self._get("threshold", prim)[1]
            self._set("threshold", Sdf.ValueTypeNames.Float2, Gf.Vec2f(float(value), keep), prim)

    def get_max_threshold(self) -> float:
        """Maximum of ``threshold``."""
        return self.get_threshold()[1]

    def set_max_threshold(self, value: float) -> None:
        """Author the maximum of ``threshold`` (each prim's minimum is kept)."""
        for prim in self._prims:
            keep = self._get("threshold", prim)[0]
            self._set("threshold", Sdf.ValueTypeNames.Float2, Gf.Vec2f(keep, float(value)), prim)

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

    Same rule as :func:`runtime.schema._sensor_readers.find_parent_rigid_body` (sensor spec
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


_FILTERS = (
    ("linear_acceleration", "linearAccelerationFilterWidth"),
    ("angular_velocity", "angularVelocityFilterWidth"),
    ("orientation", "orientationFilterWidth"),
)


class IMU(_SensorPrim):
    """``IsaacImuSensor`` authoring object.

    Overrides when wrapping: ``*_filter_size`` (aliases ``*_filter_width``), ``enabled``.
    """

    type_name = "IsaacImuSensor"
    _setters = (
        *((f"{name}_filter_size", f"set_{name}_filter_size") for name, _ in _FILTERS),
        *((f"{name}_filter_width", f"set_{name}_filter_size") for name, _ in _FILTERS),
        ("enabled", "set_enabled"),
    )

    @classmethod
    def create(
        cls,
        prim_paths: Any,
        *,
        linear_acceleration_filter_size: int | None = None,
        angular_velocity_filter_size: int | None = None,
        orientation_filter_size: int | None = None,
        enabled: bool = True,
        positions: Any = None,
        translations: Any = None,
        orientations: Any = None,
        stage: Usd.Stage | None = None,
        linear_acceleration_filter_width: int | None = None,
        angular_velocity_filter_width: int | None = None,
        orientation_filter_width: int | None = None,
    ) -> IMU:
        """Author IMU prims below rigid bodies (sizes clamped to >= 1, all written).

        Args:
            prim_paths: requested path(s) (numbered when taken).
            linear_acceleration_filter_size: rolling-average window [steps] (default 1).
            angular_velocity_filter_size: rolling-average window [steps] (default 1).
            orientation_filter_size: rolling-average window [steps] (default 1).
            enabled: sensor on.
            positions: world positions, ``(N, 3)`` or ``(3,)`` [stage units].
            translations: positions in the parent frame, ``(N, 3)`` or ``(3,)``.
            orientations: orientations (w, x, y, z) in the parent frame, ``(N, 4)``.
            stage: the stage (default: :func:`get_current_stage`).
            linear_acceleration_filter_width: alias of ``linear_acceleration_filter_size``.
            angular_velocity_filter_width: alias of ``angular_velocity_filter_size``.
            orientation_filter_width: alias of ``orientation_filter_size``.

        Returns:
            The authoring object of the new prims.

        Raises:
            ValueError: no enabled rigid-body ancestor; positions and translations both
                given; an array of the wrong shape; a size and its alias disagree.
            RuntimeError: a path has no parent prim.
        """
        sizes = [
            _same(
                linear_acceleration_filter_size,
                linear_acceleration_filter_width,
                "linear_acceleration_filter_size",
                "linear_acceleration_filter_width",
            ),
            _same(
                angular_velocity_filter_size,
                angular_velocity_filter_width,
                "angular_velocity_filter_size",
                "angular_velocity_filter_width",
            ),
            _same(
                orientation_filter_size,
                orientation_filter_width,
                "orientation_filter_size",
                "orientation_filter_width",
            ),
        ]
        st, paths = cls._define(
            stage, prim_paths, positions, translations, orientations, _needs_rigid_body("IMU")
        )
        obj = cls(paths, stage=st)
        for (name, _attr), size in zip(_FILTERS, sizes, strict=True):
            getattr(obj, f"set_{name}_filter_size")(1 if size is None else size)
        obj.set_enabled(enabled)
        return obj

    def _width(self, name: str) -> int:
        return int(self._get(name))

    def _set_width(self, name: str, value: int) -> None:
        self._set(name, Sdf.ValueTypeNames.Int, max(1, int(value)))

    def get_linear_acceleration_filter_size(self) -> int:
        """``linearAccelerationFilterWidth`` [steps]."""
        return self._width("linearAccelerationFilterWidth")

    def set_linear_acceleration_filter_size(self, value: int) -> None:
        """Author ``linearAccelerationFilterWidth`` (clamped to >= 1)."""
        self._set_width("linearAccelerationFilterWidth", value)

    def get_angular_velocity_filter_size(self) -> int:
        """``angularVelocityFilterWidth`` [steps]."""
        return self._width("angularVelocityFilterWidth")

    def set_angular_velocity_filter_size(self, value: int) -> None:
        """Author ``angularVelocityFilterWidth`` (clamped to >= 1)."""
        self._set_width("angularVelocityFilterWidth", value)

    def get_orientation_filter_size(self) -> int:
        """``orientationFilterWidth`` [steps]."""
        return self._width("orientationFilterWidth")

    def set_orientation_filter_size(self, value: int) -> None:
        """Author ``orientationFilterWidth`` (clamped to >= 1)."""
        self._set_width("orientationFilterWidth", value)

    # simrt's earlier names
    get_linear_acceleration_filter_width = get_linear_acceleration_filter_size
    set_linear_acceleration_filter_width = set_linear_acceleration_filter_size
    get_angular_velocity_filter_width = get_angular_velocity_filter_size
    set_angular_velocity_filter_width = set_angular_velocity_filter_size
    get_orientation_filter_width = get_orientation_filter_size
    set_orientation_filter_width = set_orientation_filter_size


_FRAMES = ("SENSOR", "WORLD")


class Raycast(_SensorPrim):
    """``IsaacRaycastSensor`` authoring object.

    Overrides when wrapping: ``ray_origins``, ``ray_directions``, ``ray_time_offsets``,
    ``min_range``, ``max_range``, ``output_frame`` (alias ``output_frame_of_reference``),
    ``report_hit_prim_paths``, ``enabled``.
    """

    type_name = "IsaacRaycastSensor"
    _setters = (
        ("ray_origins", "set_ray_origins"),
        ("ray_directions", "set_ray_directions"),
        ("ray_time_offsets", "set_ray_time_offsets"),
        ("min_range", "set_min_range"),
        ("max_range", "set_max_range"),
        ("output_frame", "set_output_frame"),
        ("output_frame_of_reference", "set_output_frame"),
        ("report_hit_prim_paths", "set_report_hit_prim_paths"),
        ("enabled", "set_enabled"),
    )

    @classmethod
    def create(
        cls,
        prim_paths: Any,
        *,
        ray_origins: Any = None,
        ray_directions: Any = None,
        ray_time_offsets: Sequence[float] | None = None,
        min_range: float = 0.4,
        max_range: float = 100.0,
        output_frame: str | None = None,
        report_hit_prim_paths: bool = False,
        enabled: bool = True,
        positions: Any = None,
        translations: Any = None,
        orientations: Any = None,
        stage: Usd.Stage | None = None,
        output_frame_of_reference: str | None = None,
    ) -> Raycast:
        """Author raycast sensors (``numRays = len(ray_origins)``; offsets only when given).

        Args:
            prim_paths: requested path(s) (numbered when taken).
            ray_origins: per-ray origins, sensor frame (R, 3) [stage units].
            ray_directions: per-ray directions, sensor frame (R, 3).
            ray_time_offsets: per-ray time offsets (R,) [s], or None.
            min_range: rays start at ``origin + direction * min_range`` [stage units].
            max_range: maximum distance [stage units].
            output_frame: ``"SENSOR"`` (default) or ``"WORLD"``.
            report_hit_prim_paths: include hit paths in readings.
            enabled: sensor on.
            positions: world positions, ``(N, 3)`` or ``(3,)`` [stage units].
            translations: positions in the parent frame, ``(N, 3)`` or ``(3,)``.
            orientations: orientations (w, x, y, z) in the parent frame, ``(N, 4)``.
            stage: the stage (default: :func:`get_current_stage`).
            output_frame_of_reference: alias of ``output_frame``.

        Returns:
            The authoring object of the new prims.

        Raises:
            ValueError: missing origins / directions, length mismatches, bad frame token,
                positions and translations both given, a frame and its alias disagree.
            RuntimeError: a path has no parent prim.
        """
        frame = _same(
            output_frame, output_frame_of_reference, "output_frame", "output_frame_of_reference"
        )
        frame = "SENSOR" if frame is None else frame
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
        if frame not in _FRAMES:
            raise ValueError(f"output_frame {frame!r}: use SENSOR or WORLD")
        st, paths = cls._define(stage, prim_paths, positions, translations, orientations)
        obj = cls(paths, stage=st)
        obj._set_rays(origins, directions)
        if ray_time_offsets is not None:
            obj.set_ray_time_offsets(ray_time_offsets)
        obj.set_min_range(min_range)
        obj.set_max_range(max_range)
        obj.set_output_frame(frame)
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
        """``rayOrigins``, float64 (R, 3), sensor frame."""
        return np.array(self._get("rayOrigins") or [], float).reshape(-1, 3)

    def set_ray_origins(self, value: Any) -> None:
        """Author ``rayOrigins`` and ``numRays``."""
        self._set_rays(_vec3_array(value, "ray_origins"), None)

    def get_ray_directions(self) -> np.ndarray:
        """``rayDirections``, float64 (R, 3), sensor frame."""
        return np.array(self._get("rayDirections") or [], float).reshape(-1, 3)

    def set_ray_directions(self, value: Any) -> None:
        """Author ``rayDirections`` and ``numRays``."""
        self._set_rays(None, _vec3_array(value, "ray_directions"))

    def get_ray_time_offsets(self) -> np.ndarray:
        """``rayTimeOffsets`` [s], float64 (R,)."""
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

    def get_output_frame(self) -> str:
        """``outputFrameOfReference`` (``SENSOR`` / ``WORLD``)."""
        return str(self._get("outputFrameOfReference"))

    def set_output_frame(self, value: str) -> None:
        """Author ``outputFrameOfReference``.

        Raises:
            ValueError: not ``SENSOR`` or ``WORLD``.
        """
        if value not in _FRAMES:
            raise ValueError(f"output_frame {value!r}: use SENSOR or WORLD")
        self._set("outputFrameOfReference", Sdf.ValueTypeNames.Token, value)

    # simrt's earlier names
    get_output_frame_of_reference = get_output_frame
    set_output_frame_of_reference = set_output_frame

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
