"""Rigid-transform and quaternion math (NumPy, float64).

Conventions (see docs/guides/kinematics.md#conventions):

* quaternions are ``[w, x, y, z]``, Hamilton product, active rotations;
* :class:`Transform` maps child coordinates to parent coordinates,
  ``p_parent = R(q) @ p_child + t``; ``A @ B`` is "B expressed in A";
* twists and Jacobian rows are ordered ``[omega; v]``.

No function normalises quaternions after products.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime import _quat

__all__ = [
    "Transform",
    "adjoint",
    "pose_error",
    "quat_conjugate",
    "quat_from_axis_angle",
    "quat_from_matrix",
    "quat_multiply",
    "quat_rotate",
    "quat_to_matrix",
    "skew",
]


def quat_multiply(q1: Any, q2: Any) -> np.ndarray:
    """Hamilton product ``q1 ⊗ q2``.

    Args:
        q1: quaternion [w, x, y, z], shape (4,).
        q2: quaternion [w, x, y, z], shape (4,).

    Returns:
        The product, float64 shape (4,).
    """
    return _quat.multiply(q1, q2)


def quat_conjugate(q: Any) -> np.ndarray:
    """Conjugate ``[w, -x, -y, -z]`` of a quaternion, shape (4,)."""
    q = np.asarray(q, dtype=np.float64)
    return np.array([q[0], -q[1], -q[2], -q[3]])


def quat_rotate(q: Any, v: Any) -> np.ndarray:
    """Rotate vector ``v`` (shape (3,)) by quaternion ``q`` (wxyz): ``vec(q ⊗ [0, v] ⊗ q*)``.

    Evaluated as ``(w² − u·u) v + 2 (u·v) u + 2 w (u × v)``, which equals the sandwich
    product for any quaternion.
    """
    w, x, y, z = float(q[0]), float(q[1]), float(q[2]), float(q[3])
    vx, vy, vz = float(v[0]), float(v[1]), float(v[2])
    a = w * w - (x * x + y * y + z * z)
    d = 2.0 * (x * vx + y * vy + z * vz)
    w2 = 2.0 * w
    return np.array(
        [
            a * vx + d * x + w2 * (y * vz - z * vy),
            a * vy + d * y + w2 * (z * vx - x * vz),
            a * vz + d * z + w2 * (x * vy - y * vx),
        ]
    )


def quat_from_axis_angle(axis: Any, angle: float) -> np.ndarray:
    """Quaternion for a rotation of ``angle`` [rad] about ``axis`` (normalised here).

    Args:
        axis: rotation axis, shape (3,), any non-zero length.
        angle: rotation angle [rad], right-hand rule.

    Returns:
        ``[cos(θ/2), n sin(θ/2)]``, shape (4,).
    """
    a = np.asarray(axis, dtype=np.float64)
    norm = float(np.linalg.norm(a))
    if norm == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    a = a / norm
    half = 0.5 * float(angle)
    return np.array([np.cos(half), *(a * np.sin(half))])


def quat_to_matrix(q: Any) -> np.ndarray:
    """Active 3x3 rotation matrix (column-vector convention) of quaternion ``q`` (wxyz)."""
    return _quat.to_matrix(q)


def quat_from_matrix(m: Any) -> np.ndarray:
    """Unit quaternion (wxyz, ``w >= 0``) of a 3x3 rotation matrix (column convention)."""
    return _quat.from_matrix(m)


def skew(v: Any) -> np.ndarray:
    """3x3 matrix with ``skew(v) @ w == cross(v, w)``."""
    x, y, z = (float(c) for c in v)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


class Transform:
    """Rigid transform mapping child coordinates to parent coordinates.

    ``p_parent = R(q) @ p_child + t``.

    Attributes:
        t: translation [stage units], float64 shape (3,).
        q: rotation quaternion [w, x, y, z], float64 shape (4,).
    """

    __slots__ = ("t", "q")

    def __init__(
        self,
        t: Sequence[float] | np.ndarray | None = None,
        q: Sequence[float] | np.ndarray | None = None,
    ) -> None:
        """Create a transform; ``t`` defaults to zeros and ``q`` to identity (both copied)."""
        self.t = np.zeros(3) if t is None else np.array(t, dtype=np.float64).reshape(3)
        self.q = (
            np.array([1.0, 0.0, 0.0, 0.0])
            if q is None
            else np.array(q, dtype=np.float64).reshape(4)
        )

    @classmethod
    def adopt(cls, t: np.ndarray, q: np.ndarray) -> Transform:
        """A transform over ``t`` (float64 (3,)) and ``q`` (float64 (4,)), not copied.

        For callers that just made the arrays and hand them over (no other reference).
        """
        transform = cls.__new__(cls)
        transform.t = t
        transform.q = q
        return transform

    def __matmul__(self, other: Transform) -> Transform:
        """Compose: ``other`` expressed in ``self``."""
        return Transform(self.t + quat_rotate(self.q, other.t), quat_multiply(self.q, other.q))

    def inv(self) -> Transform:
        """Inverse transform ``(-R^T t, q*)``."""
        qc = quat_conjugate(self.q)
        return Transform(-quat_rotate(qc, self.t), qc)

    def matrix(self) -> np.ndarray:
        """4x4 homogeneous matrix (column-vector convention)."""
        m = np.eye(4)
        m[:3, :3] = quat_to_matrix(self.q)
        m[:3, 3] = self.t
        return m

    def rotation_matrix(self) -> np.ndarray:
        """3x3 rotation matrix of ``q``."""
        return quat_to_matrix(self.q)

    @classmethod
    def from_matrix(cls, m: Any) -> Transform:
        """Transform from a 4x4 column-convention homogeneous matrix (no scale/shear)."""
        m = np.asarray(m, dtype=np.float64)
        return cls(m[:3, 3], quat_from_matrix(m[:3, :3]))

    def copy(self) -> Transform:
        """Deep copy."""
        return Transform(self.t, self.q)

    def __repr__(self) -> str:
        """Readable representation."""
        return f"Transform(t={self.t.tolist()}, q={self.q.tolist()})"


def adjoint(T: Transform) -> np.ndarray:
    """6x6 adjoint ``[[R, 0], [skew(t) R, R]]`` for twists ordered ``[omega; v]``."""
    r = quat_to_matrix(T.q)
    out = np.zeros((6, 6))
    out[:3, :3] = r
    out[3:, 3:] = r
    out[3:, :3] = skew(T.t) @ r
    return out


def pose_error(Td: Transform, T: Transform) -> np.ndarray:
    """Pose error "desired minus actual", ``[e_rot; Td.t - T.t]``, shape (6,).

    ``qe = Td.q ⊗ T.q*`` and ``e_rot = 2 s (qe_x, qe_y, qe_z)`` with ``s = sign(qe_w)``,
    except that ``s = +1`` when ``qe_w == 0`` (the reference's ``sign(0) = 0`` loses the
    rotation error at exactly 180°; spec §4 [REC]). The magnitude of ``e_rot`` is
    ``2 sin(θ/2)`` for an error angle θ; both parts are in the frame the poses are given in.

    Args:
        Td: desired pose.
        T: actual pose.

    Returns:
        Error vector [rad-like, rad-like, rad-like, m, m, m], float64 shape (6,).
    """
    qe = quat_multiply(Td.q, quat_conjugate(T.q))
    s = -1.0 if qe[0] < 0.0 else 1.0
    out = np.empty(6)
    out[:3] = 2.0 * s * qe[1:]
    out[3:] = Td.t - T.t
    return out
