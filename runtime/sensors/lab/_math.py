"""Batched quaternion helpers of the lab sensors (NumPy; quaternions wxyz, unit)."""

from __future__ import annotations

import numpy as np

__all__ = [
    "quat_conjugate",
    "quat_from_matrix",
    "quat_multiply",
    "quat_rotate",
    "quat_rotate_inverse",
    "quat_yaw",
]


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` over the last axis, (..., 4) float64 (broadcasting)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ),
        axis=-1,
    )


def quat_conjugate(q: np.ndarray) -> np.ndarray:
    """Conjugate (the inverse of a unit quaternion), (..., 4) float64."""
    out = np.array(q, np.float64, copy=True)
    out[..., 1:] *= -1.0
    return out


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v`` (..., 3) by unit quaternions ``q`` (..., 4) (broadcasting)."""
    q = np.asarray(q, np.float64)
    v = np.asarray(v, np.float64)
    w = q[..., 0:1]
    u = q[..., 1:4]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def quat_rotate_inverse(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v`` (..., 3) by the inverse of unit quaternions ``q`` (..., 4)."""
    return quat_rotate(quat_conjugate(q), v)


def quat_yaw(q: np.ndarray) -> np.ndarray:
    """The rotation about world z of ``q``'s heading: yaw only, (..., 4) float64."""
    q = np.asarray(q, np.float64)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    yaw = np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    out = np.zeros(q.shape)
    out[..., 0] = np.cos(0.5 * yaw)
    out[..., 3] = np.sin(0.5 * yaw)
    return out


def quat_from_matrix(m: np.ndarray) -> np.ndarray:
    """Unit quaternion (w >= 0) of one rotation matrix (3, 3), float64."""
    m = np.asarray(m, np.float64)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0.0:
        s = 2.0 * np.sqrt(trace + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    out = np.array(q, np.float64)
    out /= np.linalg.norm(out)
    return out if out[0] >= 0.0 else -out
