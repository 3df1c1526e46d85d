"""NumPy quaternion rotation of vectors, shared by the sensors and the engine builder.

Pure NumPy (no ``pxr``, no Numba), so importing it keeps ``import runtime.sensors`` light.
Quaternions are (w, x, y, z). Kernels have their own inlined versions; this is for the
Python-side boundary code.
"""

from __future__ import annotations

import numpy as np

__all__ = ["cross", "rotate_by_parts", "rotate_vectors", "rotation_matrices"]


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
