"""Typed access to USD attribute values, relationship targets and transforms.

The building blocks of the readers: every helper returns checked Python or NumPy values
and raises :class:`runtime.errors.SchemaError` naming the prim path, the attribute, the bad
value and what is allowed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pxr import Gf, Usd, UsdGeom

from runtime.errors import SchemaError


def _path(prim: Usd.Prim) -> str:
    return str(prim.GetPath())


def _raw(prim: Usd.Prim, name: str) -> Any:
    """Resolved value of an attribute, or None when absent / valueless."""
    attr = prim.GetAttribute(name)
    if not attr or not attr.IsValid():
        return None
    return attr.Get()


def _tidy(value: float) -> float:
    """Shortest decimal of a float32-representable value (0.019999999552965 -> 0.02).

    USD stores ``float`` attributes in single precision; the author wrote the decimal, so
    the reader returns the closest double to that decimal rather than the widened float32.
    """
    if math.isfinite(value):
        single = np.float32(value)
        if float(single) == value:
            return float(str(single))
    return value


# results of _tidy_array by float32 bytes and shape: a sensor's ray table is read again for
# every episode of a batch, and tidying costs about a microsecond per element
_TIDY_CACHE: dict[tuple[bytes, tuple[int, ...]], np.ndarray] = {}
_TIDY_CACHE_SIZE = 64


def _tidy_array(array: np.ndarray) -> np.ndarray:
    """:func:`_tidy` applied to every element of a float32-valued float64 array (a new array)."""
    single = array.astype(np.float32)
    key = (single.tobytes(), single.shape)
    found = _TIDY_CACHE.get(key)
    if found is None:
        flat = [float(str(x)) for x in single.reshape(-1)]
        found = np.array(flat, dtype=np.float64).reshape(array.shape)
        if len(_TIDY_CACHE) >= _TIDY_CACHE_SIZE:
            _TIDY_CACHE.clear()
        _TIDY_CACHE[key] = found
    return found.copy()


def _type_label(value: Any) -> str:
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _wrong_value_type(prim: Usd.Prim, name: str, value: Any, expected: str) -> SchemaError:
    """The error for an attribute ``name`` of ``prim`` whose ``value`` has the wrong type."""
    return SchemaError(
        _path(prim), name, f"value {value!r} has type {_type_label(value)}", expected
    )


def _wrong_prim_type(prim: Usd.Prim, what: str, allowed: str) -> SchemaError:
    """The error for a prim whose type name is not ``what`` a reader expects."""
    return SchemaError(
        _path(prim), "typeName", f"prim type {str(prim.GetTypeName())!r} is not {what}", allowed
    )


def _read_float(
    prim: Usd.Prim,
    name: str,
    fallback: float,
    *,
    allow_inf: bool = False,
) -> float:
    value = _raw(prim, name)
    if value is None:
        return float(fallback)
    if not _is_number(value):
        raise _wrong_value_type(prim, name, value, "a float")
    out = float(value)
    if math.isnan(out) or (not allow_inf and math.isinf(out)):
        raise SchemaError(_path(prim), name, f"value {out!r} is not finite", "a finite float")
    return _tidy(out)


def _read_int(prim: Usd.Prim, name: str, fallback: int) -> int:
    value = _raw(prim, name)
    if value is None:
        return int(fallback)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong_value_type(prim, name, value, "an integer")
    return int(value)


def _read_bool(prim: Usd.Prim, name: str, fallback: bool | None) -> bool | None:
    value = _raw(prim, name)
    if value is None:
        return fallback
    if not isinstance(value, bool):
        raise _wrong_value_type(prim, name, value, "a bool")
    return value


def _read_string(prim: Usd.Prim, name: str, fallback: str = "") -> str:
    value = _raw(prim, name)
    if value is None:
        return fallback
    if not isinstance(value, str):
        raise _wrong_value_type(prim, name, value, "a string")
    return str(value)


def _name_override(prim: Usd.Prim) -> str:
    """First non-empty of ``isaac:nameOverride`` and ``isaac:NameOverride`` (§2.10), else ""."""
    for name in ("isaac:nameOverride", "isaac:NameOverride"):
        value = _read_string(prim, name, "")
        if value:
            return value
    return ""


def _read_token(prim: Usd.Prim, name: str, fallback: str, allowed: tuple[str, ...]) -> str:
    value = _read_string(prim, name, fallback)
    if value not in allowed:
        raise SchemaError(
            _path(prim), name, f"unknown token {value!r}", ", ".join(repr(a) for a in allowed)
        )
    return value


def _read_vec(prim: Usd.Prim, name: str, size: int, fallback: tuple[float, ...]) -> np.ndarray:
    value = _raw(prim, name)
    if value is None:
        out = np.array(fallback, dtype=np.float64)
    else:
        kind = _type_label(value)
        if size == 4 and kind.startswith("Quat"):
            numbers = [float(value.GetReal())] + [float(x) for x in value.GetImaginary()]
        elif kind.startswith(f"Vec{size}"):
            numbers = [float(v) for v in value]
        else:
            expected = "a quaternion (quatf)" if "Rot" in name else f"a float{size}"
            raise SchemaError(_path(prim), name, f"value {value!r} has type {kind}", expected)
        out = np.array([_tidy(x) for x in numbers], dtype=np.float64)
    if not np.all(np.isfinite(out)):
        raise SchemaError(
            _path(prim), name, f"value {tuple(out.tolist())} is not finite", "finite numbers"
        )
    return out


def _read_vec3_array(prim: Usd.Prim, name: str) -> np.ndarray:
    value = _raw(prim, name)
    if value is None:
        return np.zeros((0, 3), dtype=np.float64)
    kind = _type_label(value)
    if kind not in ("Vec3fArray", "Vec3dArray", "Vec3hArray"):
        raise SchemaError(
            _path(prim), name, f"value of type {kind} is not a 3-vector array", "float3[]"
        )
    out = np.ascontiguousarray(np.array(value, dtype=np.float64).reshape(-1, 3))
    if not np.all(np.isfinite(out)):
        bad = int(np.argwhere(~np.isfinite(out))[0][0])
        raise SchemaError(
            _path(prim),
            name,
            f"entry {bad} {tuple(out[bad].tolist())} is not finite",
            "finite numbers",
        )
    return _tidy_array(out) if kind != "Vec3dArray" else out


def _read_float_array(prim: Usd.Prim, name: str) -> np.ndarray | None:
    value = _raw(prim, name)
    if value is None:
        return None
    kind = _type_label(value)
    if kind not in ("FloatArray", "DoubleArray", "HalfArray", "IntArray", "UIntArray"):
        raise SchemaError(
            _path(prim), name, f"value of type {kind} is not a float array", "float[]"
        )
    out = np.ascontiguousarray(np.array(value, dtype=np.float64).reshape(-1))
    if not np.all(np.isfinite(out)):
        bad = int(np.argwhere(~np.isfinite(out))[0][0])
        raise SchemaError(
            _path(prim), name, f"entry {bad} ({float(out[bad])!r}) is not finite", "finite numbers"
        )
    return _tidy_array(out) if kind in ("FloatArray", "HalfArray") else out


def _read_string_array(
    prim: Usd.Prim, name: str, expected: str = "a string array"
) -> tuple[str, ...]:
    value = _raw(prim, name)
    if value is None:
        return ()
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise _wrong_value_type(prim, name, value, expected)
    return tuple(str(v) for v in value)


def _targets(prim: Usd.Prim, name: str, *, must_exist: bool = True) -> tuple[str, ...]:
    rel = prim.GetRelationship(name)
    if not rel or not rel.IsValid():
        return ()
    targets = rel.GetTargets()
    stage = prim.GetStage()
    if must_exist:
        for target in targets:
            target_prim = stage.GetPrimAtPath(target.GetPrimPath())
            if not target_prim or not target_prim.IsValid():
                raise SchemaError(
                    _path(prim),
                    name,
                    f"target {target} does not exist",
                    "paths of existing prims",
                )
    return tuple(str(t) for t in targets)


def _check_xform_ops(prim: Usd.Prim) -> None:
    """Raise when an xformOp of ``prim`` holds NaN/inf or collapses space (zero quat/scale)."""
    if not prim.IsA(UsdGeom.Xformable):
        return
    for op in UsdGeom.Xformable(prim).GetOrderedXformOps():
        value = op.Get()
        if value is None:
            continue
        if isinstance(value, Gf.Matrix4d | Gf.Matrix4f):
            numbers = [float(x) for row in value for x in row]
        elif _type_label(value).startswith("Quat"):
            numbers = [float(value.GetReal())] + [float(x) for x in value.GetImaginary()]
        elif hasattr(value, "__len__"):
            numbers = [float(x) for x in value]
        else:
            numbers = [float(value)]
        if not all(math.isfinite(x) for x in numbers):
            raise SchemaError(
                _path(prim),
                op.GetName(),
                f"transform value {value} is not finite",
                "finite numbers",
            )
        _check_degenerate_op(prim, op, numbers)


def _check_degenerate_op(prim: Usd.Prim, op: UsdGeom.XformOp, numbers: list[float]) -> None:
    """Raise when an xformOp collapses space: a zero orient quaternion or a zero scale."""
    kind = op.GetOpType()
    if kind == UsdGeom.XformOp.TypeOrient and sum(x * x for x in numbers) < 1e-24:
        raise SchemaError(
            _path(prim), op.GetName(), f"zero quaternion {tuple(numbers)}", "a unit quaternion"
        )
    if kind == UsdGeom.XformOp.TypeScale and any(x == 0.0 for x in numbers):
        raise SchemaError(
            _path(prim),
            op.GetName(),
            f"scale {tuple(numbers)} has a zero component (collapses the prim)",
            "non-zero scale factors",
        )
    if kind == UsdGeom.XformOp.TypeTransform:
        linear = np.array(numbers, dtype=np.float64).reshape(4, 4)[:3, :3]
        if abs(float(np.linalg.det(linear))) < 1e-300:
            raise SchemaError(
                _path(prim),
                op.GetName(),
                "matrix is singular (zero scale)",
                "an invertible transform",
            )


def _check_chain_finite(prim: Usd.Prim, stop: Usd.Prim | None = None) -> None:
    """Check the xformOps of ``prim`` and its ancestors up to (including) ``stop``.

    Raises:
        SchemaError: an op holds NaN/inf, a zero orient quaternion, a zero scale factor or
            a singular matrix (names the prim and the op).
    """
    current = prim
    while current and not current.IsPseudoRoot():
        _check_xform_ops(current)
        if stop is not None and current.GetPath() == stop.GetPath():
            break
        current = current.GetParent()


def _world_matrix(prim: Usd.Prim) -> Gf.Matrix4d:
    return UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())


def _matrix_to_pose(matrix: Gf.Matrix4d) -> tuple[np.ndarray, np.ndarray]:
    """Translation (3,) and rotation-only quaternion wxyz (4,) of a possibly scaled matrix."""
    translation = np.array(matrix.ExtractTranslation(), dtype=np.float64)
    rot = Gf.Matrix4d(matrix)
    rot.SetTranslateOnly(Gf.Vec3d(0.0, 0.0, 0.0))
    rot = rot.RemoveScaleShear() if rot.GetDeterminant() != 0.0 else Gf.Matrix4d(1.0)
    quat = rot.ExtractRotationQuat()
    wxyz = np.array([quat.GetReal(), *quat.GetImaginary()], dtype=np.float64)
    norm = float(np.linalg.norm(wxyz))
    wxyz = wxyz / norm if norm > 0.0 else np.array([1.0, 0.0, 0.0, 0.0])
    if wxyz[0] < 0.0:
        wxyz = -wxyz
    return np.ascontiguousarray(translation), np.ascontiguousarray(wxyz)


def _pose_in_body(prim: Usd.Prim, body: Usd.Prim | None) -> tuple[np.ndarray, np.ndarray]:
    """Pose of ``prim`` in ``body``'s frame (world when ``body`` is None)."""
    world = _world_matrix(prim)
    for owner, matrix in ((prim, world), (body, _world_matrix(body) if body else None)):
        if matrix is not None and matrix.ExtractRotationMatrix().GetDeterminant() == 0.0:
            raise SchemaError(
                _path(owner),
                "xformOpOrder",
                "world transform is singular (a zero scale here or on an ancestor)",
                "non-zero scale factors",
            )
    if body is not None:
        world = world * _world_matrix(body).GetInverse()
    translation, orientation = _matrix_to_pose(world)
    if not (np.all(np.isfinite(translation)) and np.all(np.isfinite(orientation))):
        raise SchemaError(_path(prim), "xformOpOrder", "transform is not finite", "finite numbers")
    return translation, orientation


def _checked_pose(prim: Usd.Prim, body: Usd.Prim | None) -> tuple[np.ndarray, np.ndarray]:
    """Frozen pose of ``prim`` in ``body`` (world when None), xformOps checked up to ``body``.

    Returns:
        Translation [stage units], shape (3,), and orientation wxyz, shape (4,), float64,
        both read-only.
    """
    _check_chain_finite(prim, body)
    translation, orientation = _pose_in_body(prim, body)
    return _freeze(translation), _freeze(orientation)


def _freeze(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array, dtype=np.float64)
    array.setflags(write=False)
    return array


def check_collider_transform(prim: Usd.Prim) -> None:
    """Check that a collider's world transform is finite and not degenerate.

    A collider scaled by zero on any axis (or under a zero-scaled ancestor), or rotated by
    a zero orient quaternion, has no volume and no well-defined surface; it is rejected
    rather than silently treated as unscaled.

    Args:
        prim: the collider prim (any ``UsdGeom.Xformable``).

    Raises:
        SchemaError: names the prim and the xformOp (or ``xformOpOrder``) at fault.
    """
    _check_chain_finite(prim, None)
    if not prim.IsA(UsdGeom.Xformable):
        return
    matrix = _world_matrix(prim)
    if matrix.ExtractRotationMatrix().GetDeterminant() == 0.0:
        raise SchemaError(
            _path(prim),
            "xformOpOrder",
            "world transform is singular (a zero scale here or on an ancestor)",
            "non-zero scale factors",
        )
