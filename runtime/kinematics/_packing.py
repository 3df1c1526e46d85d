"""Flat arrays for the Numba kernels, built from the chain joints and the link tree.

Layouts are described in :mod:`runtime.kinematics._kernels`. Both builders rotate every
joint frame so that its axis is +Z (the kernels' fast path) without changing any link or
end pose.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from runtime.kinematics._tree import NO_MOTION, LinkNode
from runtime.kinematics.math import Transform, quat_to_matrix

__all__ = ["canonical_z", "pack_chain", "rotation_z_to", "tree_kernel_arrays"]


def rotation_z_to(axis: np.ndarray) -> np.ndarray:
    """A rotation matrix ``A`` with ``A @ [0, 0, 1] == axis`` (unit ``axis``)."""
    z = np.array([0.0, 0.0, 1.0])
    a = np.asarray(axis, dtype=np.float64)
    if np.allclose(a, z):
        return np.eye(3)
    if np.allclose(a, -z):
        return np.diag([1.0, -1.0, -1.0])
    v = np.cross(z, a)
    s = float(np.linalg.norm(v))
    c = float(a[2])
    k = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]]) / s
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)


def pack_chain(types, axes, home_t, home_r, tip_t, tip_r) -> tuple[np.ndarray, np.ndarray]:
    """Packed ``(model (n, 16), tip (12,))`` for the chain kernels (see ``_kernels``)."""
    n = types.shape[0]
    model = np.empty((n, 16))
    model[:, 0] = types
    model[:, 1:4] = axes
    model[:, 4:7] = home_t
    model[:, 7:16] = home_r.reshape(n, 9)
    tip = np.concatenate([tip_t, tip_r.reshape(9)])
    return np.ascontiguousarray(model), np.ascontiguousarray(tip)


def canonical_z(types, axes, home_t, home_r, tip_t, tip_r) -> tuple[np.ndarray, ...]:
    """Rewrite a chain so every joint moves along/about +Z, without changing the end pose.

    With ``A_k @ z = axis_k``: ``home_k' = A_{k-1}^T home_k A_k`` (translation rotated by
    ``A_{k-1}^T``) and ``tip' = A_last^T tip``, since ``Rot(a, q) A = A Rz(q)``.
    """
    n = types.shape[0]
    new_t = np.empty_like(home_t)
    new_r = np.empty_like(home_r)
    prev = np.eye(3)
    for k in range(n):
        a_k = rotation_z_to(axes[k])
        new_t[k] = prev.T @ home_t[k]
        new_r[k] = prev.T @ home_r[k] @ a_k
        prev = a_k
    z_axes = np.zeros((n, 3))
    z_axes[:, 2] = 1.0
    return (
        types,
        z_axes,
        np.ascontiguousarray(new_t),
        np.ascontiguousarray(new_r),
        np.ascontiguousarray(prev.T @ tip_t),
        np.ascontiguousarray(prev.T @ tip_r),
    )


def tree_kernel_arrays(
    nodes: Sequence[LinkNode], root_in_robot: Transform, joint_paths: Sequence[str]
) -> tuple[np.ndarray, ...]:
    """Arrays for ``tree_fk_kernel`` with link poses in the robot frame.

    Args:
        nodes: tree nodes, parents before children.
        root_in_robot: pose of the root link in the robot frame.
        joint_paths: configuration order; joints not listed do not move.

    Returns:
        (link_parent, link_qindex, link_jtype, link_axis, pre_t, pre_r, post_t, post_r).
    """
    qindex = {p: i for i, p in enumerate(joint_paths)}
    nl = len(nodes)
    parent = np.array([n.parent for n in nodes], dtype=np.int64)
    qi = np.array(
        [qindex.get(n.joint_path, -1) if n.jtype != NO_MOTION else -1 for n in nodes],
        dtype=np.int64,
    )
    jtype = np.array([n.jtype for n in nodes], dtype=np.int64)
    axis = np.ascontiguousarray([n.axis for n in nodes], dtype=np.float64).reshape(nl, 3)
    pres = [root_in_robot if n.parent < 0 else n.pre for n in nodes]
    pre_t = np.ascontiguousarray([p.t for p in pres]).reshape(nl, 3)
    pre_r = np.ascontiguousarray([quat_to_matrix(p.q) for p in pres]).reshape(nl, 3, 3)
    post_t = np.ascontiguousarray([n.post.t for n in nodes]).reshape(nl, 3)
    post_r = np.ascontiguousarray([quat_to_matrix(n.post.q) for n in nodes]).reshape(nl, 3, 3)
    # rotate each joint frame so its axis is +Z (kernel fast path): pre·A, Aᵀ·post;
    # links without motion get their whole offset in pre (post = identity)
    for i, n in enumerate(nodes):
        if n.jtype == NO_MOTION or qi[i] < 0:
            jtype[i] = NO_MOTION
            pre_t[i] = pre_t[i] + pre_r[i] @ post_t[i]
            pre_r[i] = pre_r[i] @ post_r[i]
            post_t[i] = 0.0
            post_r[i] = np.eye(3)
            continue
        a = rotation_z_to(n.axis)
        pre_r[i] = pre_r[i] @ a
        post_t[i] = a.T @ post_t[i]
        post_r[i] = a.T @ post_r[i]
        axis[i] = (0.0, 0.0, 1.0)
    return parent, qi, jtype, axis, pre_t, pre_r, post_t, post_r
