"""Pose helpers of the USD -> MuJoCo builder (wxyz quaternions, float64, plain NumPy)."""

from __future__ import annotations

import math

import numpy as np

from runtime._quat import multiply as qmul  # (the builder's name for the product)
from runtime._quat import rotate_by_parts
from runtime.errors import SchemaError

DEG = math.pi / 180.0
AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def qconj(q: np.ndarray) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]])


def qrot(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    w, x, y, z = q
    return rotate_by_parts(w, np.array([x, y, z]), v)


def qnormalize(q: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(q))
    return q / n if n > 0.0 else np.array([1.0, 0.0, 0.0, 0.0])


def compose(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]):
    return a[0] + qrot(a[1], b[0]), qnormalize(qmul(a[1], b[1]))


def inverse(a: tuple[np.ndarray, np.ndarray]):
    qi = qconj(a[1])
    return -qrot(qi, a[0]), qi


def gf_quat(q) -> np.ndarray:
    im = q.GetImaginary()
    return np.array([q.GetReal(), im[0], im[1], im[2]], dtype=np.float64)


def vec(v) -> np.ndarray:
    return np.array([v[0], v[1], v[2]], dtype=np.float64)


def axis_quat(axis: str) -> np.ndarray:
    """Rotation taking local +Z onto the given USD axis (X, Y or Z)."""
    s = math.sqrt(0.5)
    if axis == "X":
        return np.array([s, 0.0, s, 0.0])
    if axis == "Y":
        return np.array([s, -s, 0.0, 0.0])
    return np.array([1.0, 0.0, 0.0, 0.0])


def finite_pose(path: str, attribute: str, pos: np.ndarray, quat: np.ndarray) -> None:
    if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(quat))):
        raise SchemaError(path, attribute, "non-finite (NaN/inf) transform", "finite values")
    if np.linalg.norm(quat) < 1e-12:
        raise SchemaError(path, attribute, "zero-length rotation quaternion", "unit quaternion")


def axis_letter(axis) -> str:
    text = str(axis)
    letter = text[-1]
    if letter not in AXIS_INDEX:
        raise SchemaError("", "physics:axis", f"invalid axis {text}", "X, Y, Z")
    return letter
