"""Numba kernels for forward kinematics, Jacobians and Levenberg–Marquardt IK.

All kernels work on flat, C-contiguous float64 arrays (indices and flags int64), write into
preallocated ``out_*`` arrays passed last, and return ``None``. They trust their inputs:
validation happens in :mod:`runtime.kinematics.chain` / :mod:`runtime.kinematics.ik`.

Chain model (``n`` movable joints, chain-local frame = the chain's start prim frame):

* ``joint_types``   int64 (n,): 0 revolute, 1 prismatic.
* ``axes``          float64 (n, 3): unit motion axis in the joint's own frame (already
  negated for joints traversed child→parent).
* ``home_t``        float64 (n, 3): translation of joint i's frame relative to the frame
  after joint i-1's motion (chain start for i = 0) [stage units].
* ``home_r``        float64 (n, 3, 3): rotation matrix of the same offset.
* ``tip_t``, ``tip_r``: offset from the frame after the last joint's motion to the end prim.

FK of the chain: ``T = Π_i home_i · motion_i(q_i) · tip`` (column convention).

Tree model (``L`` links in parent-before-child order, for body-pose reporting):

* ``link_parent``   int64 (L,): parent link index, -1 for the root.
* ``link_qindex``   int64 (L,): index into the configuration vector of the joint from the
  parent to this link, -1 when that joint does not move (fixed / root / frozen).
* ``link_jtype``    int64 (L,): 0 revolute, 1 prismatic, 2 no motion.
* ``link_axis``     float64 (L, 3): unit axis in the joint frame.
* ``pre_t``, ``pre_r``: parent link frame → joint frame (root: robot frame → root link).
* ``post_t``, ``post_r``: joint frame (after motion) → this link's frame.

Jacobians are 6 x n with rows ``[ω_x, ω_y, ω_z, v_x, v_y, v_z]`` in the chain-local frame.
The *point* (geometric) Jacobian has linear rows equal to the velocity of the end-effector
point, which is consistent with :func:`runtime.kinematics.math.pose_error`.
"""

from __future__ import annotations

import numpy as np

from runtime._jit import jit

__all__ = [
    "chain_fk_batch_kernel",
    "chain_fk_jacobian_batch_kernel",
    "chain_fk_jacobian_kernel",
    "chain_fk_kernel",
    "chain_fk_frames_kernel",
    "ik_lm_batch_kernel",
    "ik_lm_kernel",
    "tree_fk_batch_kernel",
    "tree_fk_kernel",
]


# ----------------------------------------------------------------------------- helpers


@jit
def _mul_rot_axis_angle(r, axis, angle, out_r):  # pragma: no cover - trivial when jitted
    """out_r = r @ Rot(axis, angle) (Rodrigues), all 3x3; ``out_r`` may not alias ``r``."""
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    x = axis[0]
    y = axis[1]
    z = axis[2]
    m00 = t * x * x + c
    m01 = t * x * y - s * z
    m02 = t * x * z + s * y
    m10 = t * x * y + s * z
    m11 = t * y * y + c
    m12 = t * y * z - s * x
    m20 = t * x * z - s * y
    m21 = t * y * z + s * x
    m22 = t * z * z + c
    for i in range(3):
        a0 = r[i, 0]
        a1 = r[i, 1]
        a2 = r[i, 2]
        out_r[i, 0] = a0 * m00 + a1 * m10 + a2 * m20
        out_r[i, 1] = a0 * m01 + a1 * m11 + a2 * m21
        out_r[i, 2] = a0 * m02 + a1 * m12 + a2 * m22


@jit
def _mul_rot(a, b, out_r):  # pragma: no cover
    """out_r = a @ b for 3x3 matrices; ``out_r`` may not alias ``a`` or ``b``."""
    for i in range(3):
        a0 = a[i, 0]
        a1 = a[i, 1]
        a2 = a[i, 2]
        out_r[i, 0] = a0 * b[0, 0] + a1 * b[1, 0] + a2 * b[2, 0]
        out_r[i, 1] = a0 * b[0, 1] + a1 * b[1, 1] + a2 * b[2, 1]
        out_r[i, 2] = a0 * b[0, 2] + a1 * b[1, 2] + a2 * b[2, 2]


@jit
def _add_rot_vec(p, r, v):  # pragma: no cover
    """p += r @ v (in place)."""
    p0 = r[0, 0] * v[0] + r[0, 1] * v[1] + r[0, 2] * v[2]
    p1 = r[1, 0] * v[0] + r[1, 1] * v[1] + r[1, 2] * v[2]
    p2 = r[2, 0] * v[0] + r[2, 1] * v[1] + r[2, 2] * v[2]
    p[0] += p0
    p[1] += p1
    p[2] += p2


@jit
def _mat_to_quat(r, out_q):  # pragma: no cover
    """Unit quaternion (wxyz, w >= 0) of rotation matrix ``r`` into ``out_q`` (4,)."""
    tr = r[0, 0] + r[1, 1] + r[2, 2]
    if tr > 0.0:
        s = np.sqrt(tr + 1.0) * 2.0
        w = 0.25 * s
        x = (r[2, 1] - r[1, 2]) / s
        y = (r[0, 2] - r[2, 0]) / s
        z = (r[1, 0] - r[0, 1]) / s
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = np.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2]) * 2.0
        w = (r[2, 1] - r[1, 2]) / s
        x = 0.25 * s
        y = (r[0, 1] + r[1, 0]) / s
        z = (r[0, 2] + r[2, 0]) / s
    elif r[1, 1] > r[2, 2]:
        s = np.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2]) * 2.0
        w = (r[0, 2] - r[2, 0]) / s
        x = (r[0, 1] + r[1, 0]) / s
        y = 0.25 * s
        z = (r[1, 2] + r[2, 1]) / s
    else:
        s = np.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1]) * 2.0
        w = (r[1, 0] - r[0, 1]) / s
        x = (r[0, 2] + r[2, 0]) / s
        y = (r[1, 2] + r[2, 1]) / s
        z = 0.25 * s
    n = np.sqrt(w * w + x * x + y * y + z * z)
    if w < 0.0:
        n = -n
    out_q[0] = w / n
    out_q[1] = x / n
    out_q[2] = y / n
    out_q[3] = z / n


@jit
def _chain_fk(joint_types, axes, home_t, home_r, tip_t, tip_r, q, r, tmp, p):  # pragma: no cover
    """FK of the chain: writes the end rotation into ``r`` (3,3) and position into ``p`` (3,).

    ``tmp`` is a (3, 3) scratch matrix.
    """
    for i in range(3):
        p[i] = 0.0
        for j in range(3):
            r[i, j] = 1.0 if i == j else 0.0
    n = joint_types.shape[0]
    for k in range(n):
        _add_rot_vec(p, r, home_t[k])
        _mul_rot(r, home_r[k], tmp)
        if joint_types[k] == 0:
            _mul_rot_axis_angle(tmp, axes[k], q[k], r)
        else:
            r[:, :] = tmp
            a0 = (r[0, 0] * axes[k, 0] + r[0, 1] * axes[k, 1] + r[0, 2] * axes[k, 2]) * q[k]
            a1 = (r[1, 0] * axes[k, 0] + r[1, 1] * axes[k, 1] + r[1, 2] * axes[k, 2]) * q[k]
            a2 = (r[2, 0] * axes[k, 0] + r[2, 1] * axes[k, 1] + r[2, 2] * axes[k, 2]) * q[k]
            p[0] += a0
            p[1] += a1
            p[2] += a2
    if n > 0:
        _add_rot_vec(p, r, tip_t)
        _mul_rot(r, tip_r, tmp)
        r[:, :] = tmp


@jit
def _chain_fk_jac(joint_types, axes, home_t, home_r, tip_t, tip_r, q, r, tmp, p, jac):  # pragma: no cover
    """FK plus point Jacobian (6, n) into ``jac``; end pose into ``r``, ``p``."""
    for i in range(3):
        p[i] = 0.0
        for j in range(3):
            r[i, j] = 1.0 if i == j else 0.0
    n = joint_types.shape[0]
    for k in range(n):
        _add_rot_vec(p, r, home_t[k])
        _mul_rot(r, home_r[k], tmp)
        a0 = tmp[0, 0] * axes[k, 0] + tmp[0, 1] * axes[k, 1] + tmp[0, 2] * axes[k, 2]
        a1 = tmp[1, 0] * axes[k, 0] + tmp[1, 1] * axes[k, 1] + tmp[1, 2] * axes[k, 2]
        a2 = tmp[2, 0] * axes[k, 0] + tmp[2, 1] * axes[k, 1] + tmp[2, 2] * axes[k, 2]
        if joint_types[k] == 0:
            jac[0, k] = a0
            jac[1, k] = a1
            jac[2, k] = a2
            # joint origin stored temporarily in the linear rows; finished below
            jac[3, k] = p[0]
            jac[4, k] = p[1]
            jac[5, k] = p[2]
            _mul_rot_axis_angle(tmp, axes[k], q[k], r)
        else:
            jac[0, k] = 0.0
            jac[1, k] = 0.0
            jac[2, k] = 0.0
            jac[3, k] = a0
            jac[4, k] = a1
            jac[5, k] = a2
            r[:, :] = tmp
            p[0] += a0 * q[k]
            p[1] += a1 * q[k]
            p[2] += a2 * q[k]
    if n > 0:
        _add_rot_vec(p, r, tip_t)
        _mul_rot(r, tip_r, tmp)
        r[:, :] = tmp
    for k in range(n):
        if joint_types[k] == 0:
            dx = p[0] - jac[3, k]
            dy = p[1] - jac[4, k]
            dz = p[2] - jac[5, k]
            wx = jac[0, k]
            wy = jac[1, k]
            wz = jac[2, k]
            jac[3, k] = wy * dz - wz * dy
            jac[4, k] = wz * dx - wx * dz
            jac[5, k] = wx * dy - wy * dx


# ----------------------------------------------------------------------------- chain FK


@jit
def chain_fk_kernel(joint_types, axes, home_t, home_r, tip_t, tip_r, q, out_pos, out_quat):
    """End pose of a serial chain for one configuration.

    Args:
        joint_types: int64 (n,), 0 revolute / 1 prismatic.
        axes: float64 (n, 3), unit axes in joint frames.
        home_t: float64 (n, 3), joint offsets [stage units].
        home_r: float64 (n, 3, 3), joint offset rotations.
        tip_t: float64 (3,), trailing offset translation.
        tip_r: float64 (3, 3), trailing offset rotation.
        q: float64 (n,), joint values [rad or stage units].
        out_pos: float64 (3,), end position in the chain-local frame (written).
        out_quat: float64 (4,), end orientation wxyz, w >= 0 (written).
    """
    r = np.empty((3, 3))
    tmp = np.empty((3, 3))
    _chain_fk(joint_types, axes, home_t, home_r, tip_t, tip_r, q, r, tmp, out_pos)
    _mat_to_quat(r, out_quat)


@jit
def chain_fk_batch_kernel(joint_types, axes, home_t, home_r, tip_t, tip_r, qs, out_pos,
                          out_quat):
    """End poses of a serial chain for N configurations.

    Args:
        joint_types: int64 (n,).
        axes: float64 (n, 3).
        home_t: float64 (n, 3).
        home_r: float64 (n, 3, 3).
        tip_t: float64 (3,).
        tip_r: float64 (3, 3).
        qs: float64 (N, n), joint values [rad or stage units].
        out_pos: float64 (N, 3), end positions, chain-local frame (written).
        out_quat: float64 (N, 4), end orientations wxyz (written).
    """
    r = np.empty((3, 3))
    tmp = np.empty((3, 3))
    for b in range(qs.shape[0]):
        _chain_fk(joint_types, axes, home_t, home_r, tip_t, tip_r, qs[b], r, tmp, out_pos[b])
        _mat_to_quat(r, out_quat[b])


@jit
def chain_fk_frames_kernel(joint_types, axes, home_t, home_r, tip_t, tip_r, q, out_pos,
                           out_rot):
    """Accumulated frame after each joint's motion (last one includes the tip).

    Args:
        joint_types: int64 (n,).
        axes: float64 (n, 3).
        home_t: float64 (n, 3).
        home_r: float64 (n, 3, 3).
        tip_t: float64 (3,).
        tip_r: float64 (3, 3).
        q: float64 (n,).
        out_pos: float64 (n, 3), frame origins, chain-local (written).
        out_rot: float64 (n, 3, 3), frame rotations (written).
    """
    n = joint_types.shape[0]
    r = np.eye(3)
    tmp = np.empty((3, 3))
    p = np.zeros(3)
    for k in range(n):
        _add_rot_vec(p, r, home_t[k])
        _mul_rot(r, home_r[k], tmp)
        if joint_types[k] == 0:
            _mul_rot_axis_angle(tmp, axes[k], q[k], r)
        else:
            r[:, :] = tmp
            for i in range(3):
                p[i] += (r[i, 0] * axes[k, 0] + r[i, 1] * axes[k, 1]
                         + r[i, 2] * axes[k, 2]) * q[k]
        if k == n - 1:
            _add_rot_vec(p, r, tip_t)
            _mul_rot(r, tip_r, tmp)
            r[:, :] = tmp
        out_pos[k, :] = p
        out_rot[k, :, :] = r


@jit
def chain_fk_jacobian_kernel(joint_types, axes, home_t, home_r, tip_t, tip_r, q, out_pos,
                             out_quat, out_jac):
    """End pose and point (geometric) Jacobian for one configuration.

    Args:
        joint_types: int64 (n,).
        axes: float64 (n, 3).
        home_t: float64 (n, 3).
        home_r: float64 (n, 3, 3).
        tip_t: float64 (3,).
        tip_r: float64 (3, 3).
        q: float64 (n,).
        out_pos: float64 (3,), end position, chain-local (written).
        out_quat: float64 (4,), end orientation wxyz (written).
        out_jac: float64 (6, n), rows [ω; v of the end point], chain-local (written).
    """
    r = np.empty((3, 3))
    tmp = np.empty((3, 3))
    _chain_fk_jac(joint_types, axes, home_t, home_r, tip_t, tip_r, q, r, tmp, out_pos, out_jac)
    _mat_to_quat(r, out_quat)


@jit
def chain_fk_jacobian_batch_kernel(joint_types, axes, home_t, home_r, tip_t, tip_r, qs,
                                   out_pos, out_quat, out_jac):
    """End poses and point Jacobians for N configurations.

    Args:
        joint_types: int64 (n,).
        axes: float64 (n, 3).
        home_t: float64 (n, 3).
        home_r: float64 (n, 3, 3).
        tip_t: float64 (3,).
        tip_r: float64 (3, 3).
        qs: float64 (N, n).
        out_pos: float64 (N, 3) (written).
        out_quat: float64 (N, 4) wxyz (written).
        out_jac: float64 (N, 6, n) (written).
    """
    r = np.empty((3, 3))
    tmp = np.empty((3, 3))
    for b in range(qs.shape[0]):
        _chain_fk_jac(joint_types, axes, home_t, home_r, tip_t, tip_r, qs[b], r, tmp,
                      out_pos[b], out_jac[b])
        _mat_to_quat(r, out_quat[b])


# ----------------------------------------------------------------------------- tree FK


@jit
def _tree_fk(link_parent, link_qindex, link_jtype, link_axis, pre_t, pre_r, post_t, post_r,
             q, rots, tmp, tmp2, out_pos, out_quat):  # pragma: no cover
    n_links = link_parent.shape[0]
    for lk in range(n_links):
        par = link_parent[lk]
        if par < 0:
            for i in range(3):
                out_pos[lk, i] = pre_t[lk, i]
            tmp[:, :] = pre_r[lk]
        else:
            for i in range(3):
                out_pos[lk, i] = out_pos[par, i]
            _add_rot_vec(out_pos[lk], rots[par], pre_t[lk])
            _mul_rot(rots[par], pre_r[lk], tmp)
        qi = link_qindex[lk]
        if qi >= 0 and link_jtype[lk] == 0:
            _mul_rot_axis_angle(tmp, link_axis[lk], q[qi], tmp2)
            tmp[:, :] = tmp2
        elif qi >= 0 and link_jtype[lk] == 1:
            for i in range(3):
                out_pos[lk, i] += (tmp[i, 0] * link_axis[lk, 0] + tmp[i, 1] * link_axis[lk, 1]
                                   + tmp[i, 2] * link_axis[lk, 2]) * q[qi]
        _add_rot_vec(out_pos[lk], tmp, post_t[lk])
        _mul_rot(tmp, post_r[lk], rots[lk])
        _mat_to_quat(rots[lk], out_quat[lk])


@jit
def tree_fk_kernel(link_parent, link_qindex, link_jtype, link_axis, pre_t, pre_r, post_t,
                   post_r, q, out_pos, out_quat):
    """Poses of every link of a kinematic tree for one configuration.

    Args:
        link_parent: int64 (L,), parent index (-1 root); parents precede children.
        link_qindex: int64 (L,), configuration index of the joint to the parent, or -1.
        link_jtype: int64 (L,), 0 revolute / 1 prismatic / 2 no motion.
        link_axis: float64 (L, 3), unit joint axes in joint frames.
        pre_t: float64 (L, 3), parent link frame → joint frame translation.
        pre_r: float64 (L, 3, 3), parent link frame → joint frame rotation.
        post_t: float64 (L, 3), joint frame → link frame translation.
        post_r: float64 (L, 3, 3), joint frame → link frame rotation.
        q: float64 (D,), configuration [rad or stage units].
        out_pos: float64 (L, 3), link origins in the robot frame (written).
        out_quat: float64 (L, 4), link orientations wxyz in the robot frame (written).
    """
    n_links = link_parent.shape[0]
    rots = np.empty((n_links, 3, 3))
    tmp = np.empty((3, 3))
    tmp2 = np.empty((3, 3))
    _tree_fk(link_parent, link_qindex, link_jtype, link_axis, pre_t, pre_r, post_t, post_r,
             q, rots, tmp, tmp2, out_pos, out_quat)


@jit
def tree_fk_batch_kernel(link_parent, link_qindex, link_jtype, link_axis, pre_t, pre_r,
                         post_t, post_r, qs, out_pos, out_quat):
    """Poses of every link for N configurations.

    Args:
        link_parent: int64 (L,).
        link_qindex: int64 (L,).
        link_jtype: int64 (L,).
        link_axis: float64 (L, 3).
        pre_t: float64 (L, 3).
        pre_r: float64 (L, 3, 3).
        post_t: float64 (L, 3).
        post_r: float64 (L, 3, 3).
        qs: float64 (N, D).
        out_pos: float64 (N, L, 3), robot frame (written).
        out_quat: float64 (N, L, 4), wxyz (written).
    """
    n_links = link_parent.shape[0]
    rots = np.empty((n_links, 3, 3))
    tmp = np.empty((3, 3))
    tmp2 = np.empty((3, 3))
    for b in range(qs.shape[0]):
        _tree_fk(link_parent, link_qindex, link_jtype, link_axis, pre_t, pre_r, post_t,
                 post_r, qs[b], rots, tmp, tmp2, out_pos[b], out_quat[b])


# ----------------------------------------------------------------------------- IK

#: Weighted pose-error norm below which the null-space midpoint pull is switched off, so the
#: last iterations are pure damped Gauss–Newton steps (the pull's second-order drift would
#: otherwise keep redundant arms ~1e-3 away from the target; see ``ik.py``).
BIAS_CUTOFF = 1e-2


@jit
def _pose_error(tgt_t, tgt_q, p, quat, e):  # pragma: no cover
    """e = [2 s vec(tgt_q ⊗ quat*); tgt_t - p], s = +1 when w == 0 (spec §4 REC)."""
    w1 = tgt_q[0]
    x1 = tgt_q[1]
    y1 = tgt_q[2]
    z1 = tgt_q[3]
    w2 = quat[0]
    x2 = -quat[1]
    y2 = -quat[2]
    z2 = -quat[3]
    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    s = -2.0 if w < 0.0 else 2.0
    e[0] = s * x
    e[1] = s * y
    e[2] = s * z
    e[3] = tgt_t[0] - p[0]
    e[4] = tgt_t[1] - p[1]
    e[5] = tgt_t[2] - p[2]


@jit
def _eval(joint_types, axes, home_t, home_r, tip_t, tip_r, q, tgt_t, tgt_q, weights, fixed,
          r, tmp, p, quat, jac, e, ew):  # pragma: no cover
    """FK + point Jacobian (fixed columns zeroed), error and weighted cost at ``q``."""
    _chain_fk_jac(joint_types, axes, home_t, home_r, tip_t, tip_r, q, r, tmp, p, jac)
    _mat_to_quat(r, quat)
    n = q.shape[0]
    for k in range(n):
        if fixed[k] != 0:
            for i in range(6):
                jac[i, k] = 0.0
    _pose_error(tgt_t, tgt_q, p, quat, e)
    cost = 0.0
    for i in range(6):
        ew[i] = weights[i] * e[i]
        cost += ew[i] * ew[i]
    return cost


@jit
def _lm_solve(joint_types, axes, home_t, home_r, tip_t, tip_r, lower, upper, fixed, q0,
              tgt_t, tgt_q, lam0, iters, tol, w_rot, w_pos, max_step, null_space_bias,
              out_q, ws_jac, ws_jac_new, ws_a, ws_rhs, ws_dq, ws_qn, ws_qc):  # pragma: no cover
    """LM solve from ``q0`` into ``out_q``; returns the unweighted squared pose error."""
    n = q0.shape[0]
    weights = np.empty(6)
    weights[0] = w_rot
    weights[1] = w_rot
    weights[2] = w_rot
    weights[3] = w_pos
    weights[4] = w_pos
    weights[5] = w_pos
    r = np.empty((3, 3))
    tmp = np.empty((3, 3))
    p = np.empty(3)
    quat = np.empty(4)
    e = np.empty(6)
    ew = np.empty(6)
    e_new = np.empty(6)
    ew_new = np.empty(6)
    bias_active = False
    for k in range(n):
        v = q0[k]
        if v < lower[k]:
            v = lower[k]
        if v > upper[k]:
            v = upper[k]
        out_q[k] = v
        if np.isfinite(lower[k]) and np.isfinite(upper[k]):
            ws_qc[k] = 0.5 * (lower[k] + upper[k])
            bias_active = True
        else:
            ws_qc[k] = 0.0
    if null_space_bias <= 0.0:
        bias_active = False
    lam = lam0
    cost = _eval(joint_types, axes, home_t, home_r, tip_t, tip_r, out_q, tgt_t, tgt_q,
                 weights, fixed, r, tmp, p, quat, ws_jac, e, ew)
    tol2 = tol * tol
    use_bias = bias_active
    bias_cutoff2 = BIAS_CUTOFF * BIAS_CUTOFF
    for _ in range(iters):
        if cost < tol2:
            break
        # A = Jw^T Jw + lam I ; rhs = Jw^T ew (+ bias)
        for a in range(n):
            g = 0.0
            for i in range(6):
                g += weights[i] * ws_jac[i, a] * ew[i]
            ws_rhs[a] = g
            for b in range(a, n):
                s = 0.0
                for i in range(6):
                    wi = weights[i]
                    s += wi * wi * ws_jac[i, a] * ws_jac[i, b]
                ws_a[a, b] = s
                ws_a[b, a] = s
            ws_a[a, a] += lam
        # Cholesky (in place, lower triangle), A is SPD since lam > 0
        ok = True
        for j in range(n):
            s = ws_a[j, j]
            for k in range(j):
                s -= ws_a[j, k] * ws_a[j, k]
            if s <= 0.0:
                ok = False
                break
            d = np.sqrt(s)
            ws_a[j, j] = d
            for i in range(j + 1, n):
                s2 = ws_a[i, j]
                for k in range(j):
                    s2 -= ws_a[i, k] * ws_a[j, k]
                ws_a[i, j] = s2 / d
        if not ok:
            lam = min(lam * 2.0, 1e2)
            continue
        if use_bias and cost > bias_cutoff2:
            for a in range(n):
                ws_rhs[a] += lam * null_space_bias * (ws_qc[a] - out_q[a])
        for i in range(n):
            s = ws_rhs[i]
            for k in range(i):
                s -= ws_a[i, k] * ws_dq[k]
            ws_dq[i] = s / ws_a[i, i]
        for i in range(n - 1, -1, -1):
            s = ws_dq[i]
            for k in range(i + 1, n):
                s -= ws_a[k, i] * ws_dq[k]
            ws_dq[i] = s / ws_a[i, i]
        norm2 = 0.0
        for k in range(n):
            if fixed[k] != 0:
                ws_dq[k] = 0.0
            norm2 += ws_dq[k] * ws_dq[k]
        norm = np.sqrt(norm2)
        scale = 1.0
        if norm > max_step:
            scale = max_step / norm
        for k in range(n):
            v = out_q[k] + scale * ws_dq[k]
            if v < lower[k]:
                v = lower[k]
            if v > upper[k]:
                v = upper[k]
            ws_qn[k] = v
        cost_new = _eval(joint_types, axes, home_t, home_r, tip_t, tip_r, ws_qn, tgt_t,
                         tgt_q, weights, fixed, r, tmp, p, quat, ws_jac_new, e_new, ew_new)
        if cost_new >= cost and use_bias and cost > bias_cutoff2:
            # The midpoint pull leaks into the task space when the damping is large; a
            # rejected biased step is retried once without the pull before raising the
            # damping (otherwise the damping ratchets up and the solve stalls short of
            # the target on redundant arms).
            use_bias = False
            continue
        use_bias = bias_active
        if cost_new < cost:
            for k in range(n):
                out_q[k] = ws_qn[k]
            ws_jac[:, :] = ws_jac_new
            for i in range(6):
                e[i] = e_new[i]
                ew[i] = ew_new[i]
            cost = cost_new
            lam = max(lam * 0.5, 1e-6)
        else:
            lam = min(lam * 2.0, 1e2)
    err2 = 0.0
    for i in range(6):
        err2 += e[i] * e[i]
    return err2


@jit
def ik_lm_kernel(joint_types, axes, home_t, home_r, tip_t, tip_r, lower, upper, fixed, q0,
                 tgt_t, tgt_q, params, out_q, out_err):
    """Levenberg–Marquardt IK with null-space centering for one target (spec §5.3).

    Uses the point Jacobian, consistent with the pose error.

    Args:
        joint_types: int64 (n,).
        axes: float64 (n, 3).
        home_t: float64 (n, 3).
        home_r: float64 (n, 3, 3).
        tip_t: float64 (3,).
        tip_r: float64 (3, 3).
        lower: float64 (n,), lower limits (may be -inf) [rad or stage units].
        upper: float64 (n,), upper limits (may be +inf).
        fixed: int64 (n,), non-zero = joint locked at its (clipped) seed value.
        q0: float64 (n,), seed.
        tgt_t: float64 (3,), target position, chain-local frame.
        tgt_q: float64 (4,), target orientation wxyz, chain-local frame.
        params: float64 (8,), [lam, iters, tol, w_rot, w_pos, max_step, null_space_bias, 0].
        out_q: float64 (n,), solution (written).
        out_err: float64 (1,), unweighted pose-error norm at the solution (written).
    """
    n = q0.shape[0]
    ws_jac = np.empty((6, n))
    ws_jac_new = np.empty((6, n))
    ws_a = np.empty((n, n))
    ws_rhs = np.empty(n)
    ws_dq = np.empty(n)
    ws_qn = np.empty(n)
    ws_qc = np.empty(n)
    err2 = _lm_solve(joint_types, axes, home_t, home_r, tip_t, tip_r, lower, upper, fixed, q0,
                     tgt_t, tgt_q, params[0], int(params[1]), params[2], params[3], params[4],
                     params[5], params[6], out_q, ws_jac, ws_jac_new, ws_a, ws_rhs, ws_dq,
                     ws_qn, ws_qc)
    out_err[0] = np.sqrt(err2)


@jit
def ik_lm_batch_kernel(joint_types, axes, home_t, home_r, tip_t, tip_r, lower, upper, fixed,
                       seeds, tgt_t, tgt_q, params, out_q, out_err, out_seed_index):
    """LM IK for N targets, each tried from an ordered list of S seeds.

    For every target the seeds are tried in order and the first one whose unweighted
    pose-error norm is below ``params[7]`` wins (priority selection, as the poser's seed
    ladder); if none converges the lowest-error attempt is kept (ties → earlier seed) and
    its index is reported negated minus one (``-1 - s``).

    Args:
        joint_types: int64 (n,).
        axes: float64 (n, 3).
        home_t: float64 (n, 3).
        home_r: float64 (n, 3, 3).
        tip_t: float64 (3,).
        tip_r: float64 (3, 3).
        lower: float64 (n,).
        upper: float64 (n,).
        fixed: int64 (n,).
        seeds: float64 (N, S, n), seeds per target in priority order.
        tgt_t: float64 (N, 3), target positions, chain-local.
        tgt_q: float64 (N, 4), target orientations wxyz, chain-local.
        params: float64 (8,), [lam, iters, tol, w_rot, w_pos, max_step, null_space_bias,
            accept_tolerance].
        out_q: float64 (N, n) (written).
        out_err: float64 (N,), pose-error norm of the returned solution (written).
        out_seed_index: int64 (N,), winning seed index, or ``-1 - s`` when none converged.
    """
    n = seeds.shape[2]
    n_seeds = seeds.shape[1]
    ws_jac = np.empty((6, n))
    ws_jac_new = np.empty((6, n))
    ws_a = np.empty((n, n))
    ws_rhs = np.empty(n)
    ws_dq = np.empty(n)
    ws_qn = np.empty(n)
    ws_qc = np.empty(n)
    q_try = np.empty(n)
    accept2 = params[7] * params[7]
    for b in range(seeds.shape[0]):
        best = np.inf
        best_s = 0
        done = False
        for s in range(n_seeds):
            err2 = _lm_solve(joint_types, axes, home_t, home_r, tip_t, tip_r, lower, upper,
                             fixed, seeds[b, s], tgt_t[b], tgt_q[b], params[0], int(params[1]),
                             params[2], params[3], params[4], params[5], params[6], q_try,
                             ws_jac, ws_jac_new, ws_a, ws_rhs, ws_dq, ws_qn, ws_qc)
            if err2 < accept2:
                out_q[b, :] = q_try
                out_err[b] = np.sqrt(err2)
                out_seed_index[b] = s
                done = True
                break
            if err2 < best:
                best = err2
                best_s = s
                out_q[b, :] = q_try
        if not done:
            out_err[b] = np.sqrt(best)
            out_seed_index[b] = -1 - best_s
