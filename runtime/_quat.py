"""The quaternion arithmetic of Python code: products, rotations, matrices.

Pure NumPy (no ``pxr``, no Numba), so importing it keeps ``import runtime.sensors`` light.
Quaternions are (w, x, y, z), Hamilton products, active rotations (column vectors). Kernels
have their own inlined versions; this is for the Python-side boundary code (the kinematics
math, the sensors, the engine builder, playback and randomization all call it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "cross",
    "from_matrix",
    "multiply",
    "rotate_by_parts",
    "rotate_vectors",
    "rotation_matrices",
    "to_matrix",
]


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product over the last axis, same arithmetic as ``np.cross`` without its overhead.

    ``np.cross`` spends tens of microseconds per call on axis bookkeeping, which dominated
    per-step reads of small vectors.

    Args:
        a: (..., 3) float64.
        b: (..., 3) float64, broadcastable against ``a``.

    Returns:
        (..., 3) float64, ``a x b`` (bit-identical to ``np.cross``).
    """
    out = np.empty(np.broadcast_shapes(np.shape(a), np.shape(b)))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def rotate_by_parts(w: np.ndarray | float, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate ``v`` by the unit quaternion with scalar part ``w`` and vector part ``u``.

    Evaluated as ``v + w t + u x t`` with ``t = 2 u x v``. Pass ``-u`` to rotate by the
    conjugate (world to local).

    Args:
        w: scalar part, a float or (..., 1).
        u: vector part, (..., 3).
        v: vectors, (..., 3), broadcastable against ``u``.

    Returns:
        (..., 3) float64, rotated vectors.
    """
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def rotate_vectors(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v`` (..., 3) by unit quaternions ``q`` (..., 4), wxyz.

    Args:
        q: unit quaternions, (4,) or (..., 4), wxyz.
        v: vectors, (3,) or (..., 3), broadcastable against ``q[..., 1:]``.

    Returns:
        (..., 3) float64, rotated vectors.
    """
    q = np.asarray(q, dtype=np.float64)
    return rotate_by_parts(q[..., :1], q[..., 1:], np.asarray(v, dtype=np.float64))


def rotation_matrices(quaternions: np.ndarray) -> np.ndarray:
    """Rotation matrices (G, 3, 3) of unit quaternions (G, 4) given as (w, x, y, z)."""
    w, x, y, z = quaternions.T
    out = np.empty((quaternions.shape[0], 3, 3))
    out[:, 0, 0] = 1 - 2 * (y * y + z * z)
    out[:, 0, 1] = 2 * (x * y - w * z)
    out[:, 0, 2] = 2 * (x * z + w * y)
    out[:, 1, 0] = 2 * (x * y + w * z)
    out[:, 1, 1] = 1 - 2 * (x * x + z * z)
    out[:, 1, 2] = 2 * (y * z - w * x)
    out[:, 2, 0] = 2 * (x * z - w * y)
    out[:, 2, 1] = 2 * (y * z + w * x)
    out[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def multiply(a: Any, b: Any) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` of quaternions (4,), or of arrays (..., 4) broadcast.

    Args:
        a: quaternion(s), wxyz.
        b: quaternion(s), wxyz.

    Returns:
        float64 (4,) for two single quaternions, else (..., 4).
    """
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        # (Python floats: the same IEEE products and sums as NumPy scalars, several times
        # cheaper)
        w1, x1, y1, z1 = float(a[0]), float(a[1]), float(a[2]), float(a[3])
        w2, x2, y2, z2 = float(b[0]), float(b[1]), float(b[2]), float(b[3])
        return np.array(
            [
                w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
            ]
        )
    aw, ax, ay, az = np.moveaxis(np.asarray(a), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b), -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def to_matrix(q: Any) -> np.ndarray:
    """Active 3x3 rotation matrix (column-vector convention) of a unit quaternion (wxyz).

    The same arithmetic as :func:`rotation_matrices` for one quaternion.
    """
    w, x, y, z = (float(v) for v in q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def from_matrix(m: Any) -> np.ndarray:
    """Unit quaternion (wxyz, ``w >= 0``) of a 3x3 rotation matrix (column convention)."""
    m = np.asarray(m, dtype=np.float64)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0.0:
        s = np.sqrt(tr + 1.0) * 2.0
        q = np.array(
            [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
        )
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2.0
        q = np.array(
            [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
        )
    elif m[1, 1] > m[2, 2]:
        s = np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2.0
        q = np.array(
            [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
        )
    else:
        s = np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2.0
        q = np.array(
            [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
        )
    q = q / np.linalg.norm(q)
    if q[0] < 0.0:
        q = -q
    return q
