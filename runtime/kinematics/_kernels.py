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

The FK / Jacobian / IK kernels take the chain *packed* (fewer arguments = cheaper Numba
dispatch per call): ``model`` float64 (n, 16), row k = [type (0 revolute / 1 prismatic),
axis (3), home_t (3), home_r row-major (9)], and ``tip`` float64 (12,) = [tip_t (3), tip_r
row-major (9)]. ``chain_fk_frames_kernel`` takes the unpacked arrays above.

Tree model (``L`` links in parent-before-child order, for body-pose reporting):

* ``link_parent``   int64 (L,): parent link index, -1 for the root.
* ``link_qindex``   int64 (L,): index into the configuration vector of the joint from the
  parent to this link, -1 when that joint does not move (fixed / root / frozen).
* ``link_jtype``    int64 (L,): 0 revolute, 1 prismatic, 2 no motion (its whole offset is
  in ``pre``; ``post`` is the identity and is not applied).
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
    """out_r = r @ Rot(axis, angle) (Rodrigues), all 3x3; ``out_r`` may not alias ``r``.

    Fast path for the +Z axis (the chain builder rotates every joint frame so that its axis
    is +Z): only the first two columns mix.
    """
    c = np.cos(angle)
    s = np.sin(angle)
    if axis[0] == 0.0 and axis[1] == 0.0 and axis[2] == 1.0:
        for i in range(3):
            a0 = r[i, 0]
            a1 = r[i, 1]
            out_r[i, 0] = c * a0 + s * a1
            out_r[i, 1] = c * a1 - s * a0
            out_r[i, 2] = r[i, 2]
        return
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
    """P += r @ v (in place)."""
    p0 = r[0, 0] * v[0] + r[0, 1] * v[1] + r[0, 2] * v[2]
    p1 = r[1, 0] * v[0] + r[1, 1] * v[1] + r[1, 2] * v[2]
    p2 = r[2, 0] * v[0] + r[2, 1] * v[1] + r[2, 2] * v[2]
    p[0] += p0
    p[1] += p1
    p[2] += p2


@jit
def _fk_core(model, tip, qs, b, jac, jb, want_jac):  # pragma: no cover
    """FK of configuration ``qs[b]`` with scalar temporaries (no array views in the loop).

    When ``want_jac`` the point Jacobian is written to ``jac[jb]`` (6, n).

    Returns:
        (r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz): end rotation and position.
    """
    r00 = 1.0
    r01 = 0.0
    r02 = 0.0
    r10 = 0.0
    r11 = 1.0
    r12 = 0.0
    r20 = 0.0
    r21 = 0.0
    r22 = 1.0
    px = 0.0
    py = 0.0
    pz = 0.0
    n = model.shape[0]
    for k in range(n):
        hx = model[k, 4]
        hy = model[k, 5]
        hz = model[k, 6]
        px += r00 * hx + r01 * hy + r02 * hz
        py += r10 * hx + r11 * hy + r12 * hz
        pz += r20 * hx + r21 * hy + r22 * hz
        h00 = model[k, 7]
        h01 = model[k, 8]
        h02 = model[k, 9]
        h10 = model[k, 10]
        h11 = model[k, 11]
        h12 = model[k, 12]
        h20 = model[k, 13]
        h21 = model[k, 14]
        h22 = model[k, 15]
        if k == 0:  # R is the identity
            t00 = h00
            t01 = h01
            t02 = h02
            t10 = h10
            t11 = h11
            t12 = h12
            t20 = h20
            t21 = h21
            t22 = h22
        else:
            t00 = r00 * h00 + r01 * h10 + r02 * h20
            t01 = r00 * h01 + r01 * h11 + r02 * h21
            t02 = r00 * h02 + r01 * h12 + r02 * h22
            t10 = r10 * h00 + r11 * h10 + r12 * h20
            t11 = r10 * h01 + r11 * h11 + r12 * h21
            t12 = r10 * h02 + r11 * h12 + r12 * h22
            t20 = r20 * h00 + r21 * h10 + r22 * h20
            t21 = r20 * h01 + r21 * h11 + r22 * h21
            t22 = r20 * h02 + r21 * h12 + r22 * h22
        ax = model[k, 1]
        ay = model[k, 2]
        az = model[k, 3]
        wx = t00 * ax + t01 * ay + t02 * az
        wy = t10 * ax + t11 * ay + t12 * az
        wz = t20 * ax + t21 * ay + t22 * az
        qk = qs[b, k]
        if model[k, 0] == 0.0:
            if want_jac:
                jac[jb, 0, k] = wx
                jac[jb, 1, k] = wy
                jac[jb, 2, k] = wz
                # joint origin kept in the linear rows until the end position is known
                jac[jb, 3, k] = px
                jac[jb, 4, k] = py
                jac[jb, 5, k] = pz
            c = np.cos(qk)
            sn = np.sin(qk)
            if ax == 0.0 and ay == 0.0 and az == 1.0:
                r00 = c * t00 + sn * t01
                r01 = c * t01 - sn * t00
                r02 = t02
                r10 = c * t10 + sn * t11
                r11 = c * t11 - sn * t10
                r12 = t12
                r20 = c * t20 + sn * t21
                r21 = c * t21 - sn * t20
                r22 = t22
            else:
                u = 1.0 - c
                m00 = u * ax * ax + c
                m01 = u * ax * ay - sn * az
                m02 = u * ax * az + sn * ay
                m10 = u * ax * ay + sn * az
                m11 = u * ay * ay + c
                m12 = u * ay * az - sn * ax
                m20 = u * ax * az - sn * ay
                m21 = u * ay * az + sn * ax
                m22 = u * az * az + c
                r00 = t00 * m00 + t01 * m10 + t02 * m20
                r01 = t00 * m01 + t01 * m11 + t02 * m21
                r02 = t00 * m02 + t01 * m12 + t02 * m22
                r10 = t10 * m00 + t11 * m10 + t12 * m20
                r11 = t10 * m01 + t11 * m11 + t12 * m21
                r12 = t10 * m02 + t11 * m12 + t12 * m22
                r20 = t20 * m00 + t21 * m10 + t22 * m20
                r21 = t20 * m01 + t21 * m11 + t22 * m21
                r22 = t20 * m02 + t21 * m12 + t22 * m22
        else:
            if want_jac:
                jac[jb, 0, k] = 0.0
                jac[jb, 1, k] = 0.0
                jac[jb, 2, k] = 0.0
                jac[jb, 3, k] = wx
                jac[jb, 4, k] = wy
                jac[jb, 5, k] = wz
            px += wx * qk
            py += wy * qk
            pz += wz * qk
            r00 = t00
            r01 = t01
            r02 = t02
            r10 = t10
            r11 = t11
            r12 = t12
            r20 = t20
            r21 = t21
            r22 = t22
    if n > 0:
        hx = tip[0]
        hy = tip[1]
        hz = tip[2]
        px += r00 * hx + r01 * hy + r02 * hz
        py += r10 * hx + r11 * hy + r12 * hz
        pz += r20 * hx + r21 * hy + r22 * hz
        t00 = r00 * tip[3] + r01 * tip[6] + r02 * tip[9]
        t01 = r00 * tip[4] + r01 * tip[7] + r02 * tip[10]
        t02 = r00 * tip[5] + r01 * tip[8] + r02 * tip[11]
        t10 = r10 * tip[3] + r11 * tip[6] + r12 * tip[9]
        t11 = r10 * tip[4] + r11 * tip[7] + r12 * tip[10]
        t12 = r10 * tip[5] + r11 * tip[8] + r12 * tip[11]
        t20 = r20 * tip[3] + r21 * tip[6] + r22 * tip[9]
        t21 = r20 * tip[4] + r21 * tip[7] + r22 * tip[10]
        t22 = r20 * tip[5] + r21 * tip[8] + r22 * tip[11]
        r00 = t00
        r01 = t01
        r02 = t02
        r10 = t10
        r11 = t11
        r12 = t12
        r20 = t20
        r21 = t21
        r22 = t22
    if want_jac:
        for k in range(n):
            if model[k, 0] == 0.0:
                dx = px - jac[jb, 3, k]
                dy = py - jac[jb, 4, k]
                dz = pz - jac[jb, 5, k]
                wx = jac[jb, 0, k]
                wy = jac[jb, 1, k]
                wz = jac[jb, 2, k]
                jac[jb, 3, k] = wy * dz - wz * dy
                jac[jb, 4, k] = wz * dx - wx * dz
                jac[jb, 5, k] = wx * dy - wy * dx
    return r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz


@jit
def _quat_scalars(r00, r01, r02, r10, r11, r12, r20, r21, r22):  # pragma: no cover
    """Unit quaternion (w, x, y, z), w >= 0, of a rotation matrix given by its entries."""
    tr = r00 + r11 + r22
    if tr > 0.0:
        s = np.sqrt(tr + 1.0) * 2.0
        inv = 1.0 / s
        w = 0.25 * s
        x = (r21 - r12) * inv
        y = (r02 - r20) * inv
        z = (r10 - r01) * inv
    elif r00 > r11 and r00 > r22:
        s = np.sqrt(1.0 + r00 - r11 - r22) * 2.0
        inv = 1.0 / s
        w = (r21 - r12) * inv
        x = 0.25 * s
        y = (r01 + r10) * inv
        z = (r02 + r20) * inv
    elif r11 > r22:
        s = np.sqrt(1.0 + r11 - r00 - r22) * 2.0
        inv = 1.0 / s
        w = (r02 - r20) * inv
        x = (r01 + r10) * inv
        y = 0.25 * s
        z = (r12 + r21) * inv
    else:
        s = np.sqrt(1.0 + r22 - r00 - r11) * 2.0
        inv = 1.0 / s
        w = (r10 - r01) * inv
        x = (r02 + r20) * inv
        y = (r12 + r21) * inv
        z = 0.25 * s
    inv = 1.0 / np.sqrt(w * w + x * x + y * y + z * z)
    if w < 0.0:
        inv = -inv
    return w * inv, x * inv, y * inv, z * inv


@jit
def _store_pose(pose, out_pos, out_quat, b):  # pragma: no cover
    """Write an ``_fk_core`` result into ``out_pos[b]`` (3,) and ``out_quat[b]`` (4,)."""
    out_pos[b, 0] = pose[9]
    out_pos[b, 1] = pose[10]
    out_pos[b, 2] = pose[11]
    w, x, y, z = _quat_scalars(
        pose[0], pose[1], pose[2], pose[3], pose[4], pose[5], pose[6], pose[7], pose[8]
    )
    out_quat[b, 0] = w
    out_quat[b, 1] = x
    out_quat[b, 2] = y
    out_quat[b, 3] = z


# ----------------------------------------------------------------------------- chain FK


@jit
def chain_fk_kernel(model, tip, q, out_pos, out_quat):
    """End pose of a serial chain for one configuration.

    Args:
        model: float64 (n, 16), packed chain (see module docstring).
        tip: float64 (12,), packed trailing offset [t (3), R row-major (9)].
        q: float64 (n,), joint values [rad or stage units].
        out_pos: float64 (3,), end position in the chain-local frame (written).
        out_quat: float64 (4,), end orientation wxyz, w >= 0 (written).
    """
    n = q.shape[0]
    dummy = np.empty((1, 6, 0))
    pose = _fk_core(model, tip, q.reshape((1, n)), 0, dummy, 0, False)
    _store_pose(pose, out_pos.reshape((1, 3)), out_quat.reshape((1, 4)), 0)


@jit
def chain_fk_batch_kernel(model, tip, qs, out_pos, out_quat):
    """End poses of a serial chain for N configurations.

    Args:
        model: float64 (n, 16), packed chain.
        tip: float64 (12,), packed trailing offset.
        qs: float64 (N, n), joint values [rad or stage units].
        out_pos: float64 (N, 3), end positions, chain-local frame (written).
        out_quat: float64 (N, 4), end orientations wxyz (written).
    """
    dummy = np.empty((1, 6, 0))
    for b in range(qs.shape[0]):
        pose = _fk_core(model, tip, qs, b, dummy, 0, False)
        _store_pose(pose, out_pos, out_quat, b)


@jit
def chain_fk_frames_kernel(joint_types, axes, home_t, home_r, tip_t, tip_r, q, out_pos, out_rot):
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
                p[i] += (r[i, 0] * axes[k, 0] + r[i, 1] * axes[k, 1] + r[i, 2] * axes[k, 2]) * q[k]
        if k == n - 1:
            _add_rot_vec(p, r, tip_t)
            _mul_rot(r, tip_r, tmp)
            r[:, :] = tmp
        out_pos[k, :] = p
        out_rot[k, :, :] = r


@jit
def chain_fk_jacobian_kernel(model, tip, q, out_pos, out_quat, out_jac):
    """End pose and point (geometric) Jacobian for one configuration.

    Args:
        model: float64 (n, 16), packed chain.
        tip: float64 (12,), packed trailing offset.
        q: float64 (n,).
        out_pos: float64 (3,), end position, chain-local (written).
        out_quat: float64 (4,), end orientation wxyz (written).
        out_jac: float64 (6, n), rows [ω; v of the end point], chain-local (written).
    """
    n = q.shape[0]
    pose = _fk_core(
        model,
        tip,
        q.reshape((1, n)),
        0,
        out_jac.reshape((1, 6, n)),
        0,
        True,
    )
    _store_pose(pose, out_pos.reshape((1, 3)), out_quat.reshape((1, 4)), 0)


@jit
def chain_fk_jacobian_batch_kernel(model, tip, qs, out_pos, out_quat, out_jac):
    """End poses and point Jacobians for N configurations.

    Args:
        model: float64 (n, 16), packed chain.
        tip: float64 (12,), packed trailing offset.
        qs: float64 (N, n).
        out_pos: float64 (N, 3) (written).
        out_quat: float64 (N, 4) wxyz (written).
        out_jac: float64 (N, 6, n) (written).
    """
    for b in range(qs.shape[0]):
        pose = _fk_core(model, tip, qs, b, out_jac, b, True)
        _store_pose(pose, out_pos, out_quat, b)


# ----------------------------------------------------------------------------- tree FK


@jit
def _tree_fk(
    link_parent,
    link_qindex,
    link_jtype,
    link_axis,
    pre_t,
    pre_r,
    post_t,
    post_r,
    qs,
    b,
    rots,
    out_pos,
    out_quat,
):  # pragma: no cover
    """Link poses for configuration ``qs[b]`` into ``out_pos[b]``, ``out_quat[b]``.

    ``rots`` (L, 3, 3) receives the link rotation matrices (parents are read back from it).
    Scalar temporaries, no array views in the loop.
    """
    n_links = link_parent.shape[0]
    for lk in range(n_links):
        par = link_parent[lk]
        # T = X_parent · pre (rotation t**, position p*)
        if par < 0:
            px = pre_t[lk, 0]
            py = pre_t[lk, 1]
            pz = pre_t[lk, 2]
            t00 = pre_r[lk, 0, 0]
            t01 = pre_r[lk, 0, 1]
            t02 = pre_r[lk, 0, 2]
            t10 = pre_r[lk, 1, 0]
            t11 = pre_r[lk, 1, 1]
            t12 = pre_r[lk, 1, 2]
            t20 = pre_r[lk, 2, 0]
            t21 = pre_r[lk, 2, 1]
            t22 = pre_r[lk, 2, 2]
        else:
            r00 = rots[par, 0, 0]
            r01 = rots[par, 0, 1]
            r02 = rots[par, 0, 2]
            r10 = rots[par, 1, 0]
            r11 = rots[par, 1, 1]
            r12 = rots[par, 1, 2]
            r20 = rots[par, 2, 0]
            r21 = rots[par, 2, 1]
            r22 = rots[par, 2, 2]
            hx = pre_t[lk, 0]
            hy = pre_t[lk, 1]
            hz = pre_t[lk, 2]
            px = out_pos[b, par, 0] + r00 * hx + r01 * hy + r02 * hz
            py = out_pos[b, par, 1] + r10 * hx + r11 * hy + r12 * hz
            pz = out_pos[b, par, 2] + r20 * hx + r21 * hy + r22 * hz
            h00 = pre_r[lk, 0, 0]
            h01 = pre_r[lk, 0, 1]
            h02 = pre_r[lk, 0, 2]
            h10 = pre_r[lk, 1, 0]
            h11 = pre_r[lk, 1, 1]
            h12 = pre_r[lk, 1, 2]
            h20 = pre_r[lk, 2, 0]
            h21 = pre_r[lk, 2, 1]
            h22 = pre_r[lk, 2, 2]
            t00 = r00 * h00 + r01 * h10 + r02 * h20
            t01 = r00 * h01 + r01 * h11 + r02 * h21
            t02 = r00 * h02 + r01 * h12 + r02 * h22
            t10 = r10 * h00 + r11 * h10 + r12 * h20
            t11 = r10 * h01 + r11 * h11 + r12 * h21
            t12 = r10 * h02 + r11 * h12 + r12 * h22
            t20 = r20 * h00 + r21 * h10 + r22 * h20
            t21 = r20 * h01 + r21 * h11 + r22 * h21
            t22 = r20 * h02 + r21 * h12 + r22 * h22
        qi = link_qindex[lk]
        if qi >= 0 and link_jtype[lk] == 0:
            ax = link_axis[lk, 0]
            ay = link_axis[lk, 1]
            az = link_axis[lk, 2]
            c = np.cos(qs[b, qi])
            sn = np.sin(qs[b, qi])
            if ax == 0.0 and ay == 0.0 and az == 1.0:
                a00 = c * t00 + sn * t01
                a10 = c * t10 + sn * t11
                a20 = c * t20 + sn * t21
                t01 = c * t01 - sn * t00
                t11 = c * t11 - sn * t10
                t21 = c * t21 - sn * t20
                t00 = a00
                t10 = a10
                t20 = a20
            else:
                u = 1.0 - c
                m00 = u * ax * ax + c
                m01 = u * ax * ay - sn * az
                m02 = u * ax * az + sn * ay
                m10 = u * ax * ay + sn * az
                m11 = u * ay * ay + c
                m12 = u * ay * az - sn * ax
                m20 = u * ax * az - sn * ay
                m21 = u * ay * az + sn * ax
                m22 = u * az * az + c
                a00 = t00 * m00 + t01 * m10 + t02 * m20
                a01 = t00 * m01 + t01 * m11 + t02 * m21
                a02 = t00 * m02 + t01 * m12 + t02 * m22
                a10 = t10 * m00 + t11 * m10 + t12 * m20
                a11 = t10 * m01 + t11 * m11 + t12 * m21
                a12 = t10 * m02 + t11 * m12 + t12 * m22
                a20 = t20 * m00 + t21 * m10 + t22 * m20
                a21 = t20 * m01 + t21 * m11 + t22 * m21
                a22 = t20 * m02 + t21 * m12 + t22 * m22
                t00 = a00
                t01 = a01
                t02 = a02
                t10 = a10
                t11 = a11
                t12 = a12
                t20 = a20
                t21 = a21
                t22 = a22
        elif qi >= 0 and link_jtype[lk] == 1:
            v = qs[b, qi]
            ax = link_axis[lk, 0] * v
            ay = link_axis[lk, 1] * v
            az = link_axis[lk, 2] * v
            px += t00 * ax + t01 * ay + t02 * az
            py += t10 * ax + t11 * ay + t12 * az
            pz += t20 * ax + t21 * ay + t22 * az
        if link_jtype[lk] == 2:  # no motion: the offset is folded into pre (post = I)
            out_pos[b, lk, 0] = px
            out_pos[b, lk, 1] = py
            out_pos[b, lk, 2] = pz
            rots[lk, 0, 0] = t00
            rots[lk, 0, 1] = t01
            rots[lk, 0, 2] = t02
            rots[lk, 1, 0] = t10
            rots[lk, 1, 1] = t11
            rots[lk, 1, 2] = t12
            rots[lk, 2, 0] = t20
            rots[lk, 2, 1] = t21
            rots[lk, 2, 2] = t22
            w, x, y, z = _quat_scalars(t00, t01, t02, t10, t11, t12, t20, t21, t22)
            out_quat[b, lk, 0] = w
            out_quat[b, lk, 1] = x
            out_quat[b, lk, 2] = y
            out_quat[b, lk, 3] = z
            continue
        # X_link = T · post
        hx = post_t[lk, 0]
        hy = post_t[lk, 1]
        hz = post_t[lk, 2]
        out_pos[b, lk, 0] = px + t00 * hx + t01 * hy + t02 * hz
        out_pos[b, lk, 1] = py + t10 * hx + t11 * hy + t12 * hz
        out_pos[b, lk, 2] = pz + t20 * hx + t21 * hy + t22 * hz
        for i in range(3):
            if i == 0:
                a0 = t00
                a1 = t01
                a2 = t02
            elif i == 1:
                a0 = t10
                a1 = t11
                a2 = t12
            else:
                a0 = t20
                a1 = t21
                a2 = t22
            for j in range(3):
                rots[lk, i, j] = (
                    a0 * post_r[lk, 0, j] + a1 * post_r[lk, 1, j] + a2 * post_r[lk, 2, j]
                )
        w, x, y, z = _quat_scalars(
            rots[lk, 0, 0],
            rots[lk, 0, 1],
            rots[lk, 0, 2],
            rots[lk, 1, 0],
            rots[lk, 1, 1],
            rots[lk, 1, 2],
            rots[lk, 2, 0],
            rots[lk, 2, 1],
            rots[lk, 2, 2],
        )
        out_quat[b, lk, 0] = w
        out_quat[b, lk, 1] = x
        out_quat[b, lk, 2] = y
        out_quat[b, lk, 3] = z


@jit
def tree_fk_kernel(
    link_parent,
    link_qindex,
    link_jtype,
    link_axis,
    pre_t,
    pre_r,
    post_t,
    post_r,
    q,
    out_pos,
    out_quat,
):
    """Poses of every link of a kinematic tree for one configuration.

    Args:
        link_parent: int64 (L,), parent index (-1 root); parents precede children.
        link_qindex: int64 (L,), configuration index of the joint to the parent, or -1.
        link_jtype: int64 (L,), 0 revolute / 1 prismatic / 2 no motion (then ``post`` must
            be the identity: the whole offset is in ``pre``).
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
    _tree_fk(
        link_parent,
        link_qindex,
        link_jtype,
        link_axis,
        pre_t,
        pre_r,
        post_t,
        post_r,
        q.reshape((1, q.shape[0])),
        0,
        rots,
        out_pos.reshape((1, n_links, 3)),
        out_quat.reshape((1, n_links, 4)),
    )


@jit
def tree_fk_batch_kernel(
    link_parent,
    link_qindex,
    link_jtype,
    link_axis,
    pre_t,
    pre_r,
    post_t,
    post_r,
    qs,
    out_pos,
    out_quat,
):
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
    for b in range(qs.shape[0]):
        _tree_fk(
            link_parent,
            link_qindex,
            link_jtype,
            link_axis,
            pre_t,
            pre_r,
            post_t,
            post_r,
            qs,
            b,
            rots,
            out_pos,
            out_quat,
        )


# ----------------------------------------------------------------------------- IK

#: Weighted pose-error norm below which the null-space midpoint pull is switched off, so the
#: last iterations are pure damped Gauss–Newton steps (the pull's second-order drift would
#: otherwise keep redundant arms ~1e-3 away from the target; see ``ik.py``).
BIAS_CUTOFF = 1e-2


@jit
def _eval(model, tip, qrow, tgt_t, tgt_q, weights, fixed, jac, e, ew):  # pragma: no cover
    """FK, point Jacobian, pose error and weighted cost at ``qrow[0]``.

    Fixed columns of ``jac[0]`` are zeroed; ``e = [2 s vec(tgt_q ⊗ quat*); tgt_t - p]`` with
    s = +1 when w == 0 (spec §4 REC); ``ew`` is the weighted error; returns the weighted cost.
    """
    pose = _fk_core(model, tip, qrow, 0, jac, 0, True)
    w2, x2, y2, z2 = _quat_scalars(
        pose[0], pose[1], pose[2], pose[3], pose[4], pose[5], pose[6], pose[7], pose[8]
    )
    n = qrow.shape[1]
    for k in range(n):
        if fixed[k] != 0:
            for i in range(6):
                jac[0, i, k] = 0.0
    w1 = tgt_q[0]
    x1 = tgt_q[1]
    y1 = tgt_q[2]
    z1 = tgt_q[3]
    x2 = -x2
    y2 = -y2
    z2 = -z2
    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    sg = -2.0 if w < 0.0 else 2.0
    e[0] = sg * x
    e[1] = sg * y
    e[2] = sg * z
    e[3] = tgt_t[0] - pose[9]
    e[4] = tgt_t[1] - pose[10]
    e[5] = tgt_t[2] - pose[11]
    cost = 0.0
    for i in range(6):
        ew[i] = weights[i] * e[i]
        cost += ew[i] * ew[i]
    return cost


@jit
def _lm_solve(
    model,
    tip,
    lower,
    upper,
    fixed,
    q0,
    tgt_t,
    tgt_q,
    lam0,
    iters,
    tol,
    w_rot,
    w_pos,
    max_step,
    null_space_bias,
    out_q,
    ws_a,
    ws_rhs,
    ws_dq,
    ws_qc,
):  # pragma: no cover
    """LM solve from ``q0`` into ``out_q``; returns the unweighted squared pose error."""
    n = q0.shape[0]
    weights = np.empty(6)
    weights[0] = w_rot
    weights[1] = w_rot
    weights[2] = w_rot
    weights[3] = w_pos
    weights[4] = w_pos
    weights[5] = w_pos
    qcur = np.empty((1, n))
    qnew = np.empty((1, n))
    jac = np.empty((1, 6, n))
    jac_new = np.empty((1, 6, n))
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
        qcur[0, k] = v
        if np.isfinite(lower[k]) and np.isfinite(upper[k]):
            ws_qc[k] = 0.5 * (lower[k] + upper[k])
            bias_active = True
        else:
            ws_qc[k] = 0.0
    if null_space_bias <= 0.0:
        bias_active = False
    lam = lam0
    cost = _eval(
        model,
        tip,
        qcur,
        tgt_t,
        tgt_q,
        weights,
        fixed,
        jac,
        e,
        ew,
    )
    tol2 = tol * tol
    use_bias = bias_active
    blocked = np.zeros(n, dtype=np.int64)
    any_blocked = False
    bias_cutoff2 = BIAS_CUTOFF * BIAS_CUTOFF
    for _ in range(iters):
        if cost < tol2:
            break
        # A = Jw^T Jw + lam I ; rhs = Jw^T ew (+ bias)
        for a in range(n):
            g = 0.0
            if blocked[a] == 0:
                for i in range(6):
                    g += weights[i] * jac[0, i, a] * ew[i]
            ws_rhs[a] = g
            for b in range(a, n):
                s = 0.0
                if blocked[a] == 0 and blocked[b] == 0:
                    for i in range(6):
                        wi = weights[i]
                        s += wi * wi * jac[0, i, a] * jac[0, i, b]
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
                ws_rhs[a] += lam * null_space_bias * (ws_qc[a] - qcur[0, a])
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
            if fixed[k] != 0 or blocked[k] != 0:
                ws_dq[k] = 0.0
            norm2 += ws_dq[k] * ws_dq[k]
        norm = np.sqrt(norm2)
        scale = 1.0
        if norm > max_step:
            scale = max_step / norm
        clipped = False
        for k in range(n):
            v = qcur[0, k] + scale * ws_dq[k]
            if v < lower[k]:
                v = lower[k]
                clipped = True
            if v > upper[k]:
                v = upper[k]
                clipped = True
            qnew[0, k] = v
        cost_new = _eval(
            model,
            tip,
            qnew,
            tgt_t,
            tgt_q,
            weights,
            fixed,
            jac_new,
            e_new,
            ew_new,
        )
        if cost_new >= cost and use_bias and cost > bias_cutoff2:
            # The midpoint pull leaks into the task space when the damping is large; a
            # rejected biased step is retried once without the pull before raising the
            # damping (otherwise the damping ratchets up and the solve stalls short of
            # the target on redundant arms).
            use_bias = False
            continue
        if cost_new >= cost and clipped and not any_blocked:
            # A step cut by a joint limit was rejected: retry once with the joints that hit
            # their limits held (active set), instead of only raising the damping, which
            # stalls solutions that lie close to a limit.
            for k in range(n):
                v = qcur[0, k] + scale * ws_dq[k]
                if v < lower[k] or v > upper[k]:
                    blocked[k] = 1
                    any_blocked = True
            if any_blocked:
                continue
        if any_blocked:
            for k in range(n):
                blocked[k] = 0
            any_blocked = False
        use_bias = bias_active
        if cost_new < cost:
            qcur, qnew = qnew, qcur
            jac, jac_new = jac_new, jac
            for i in range(6):
                e[i] = e_new[i]
                ew[i] = ew_new[i]
            cost = cost_new
            lam = max(lam * 0.5, 1e-6)
        else:
            lam = min(lam * 2.0, 1e2)
    for k in range(n):
        out_q[k] = qcur[0, k]
    err2 = 0.0
    for i in range(6):
        err2 += e[i] * e[i]
    return err2


@jit
def ik_lm_kernel(model, tip, limits, fixed, q0, target, params, out_q, out_err):
    """Levenberg–Marquardt IK with null-space centering for one target (spec §5.3).

    Uses the point Jacobian, consistent with the pose error.

    Args:
        model: float64 (n, 16), packed chain.
        tip: float64 (12,), packed trailing offset.
        limits: float64 (2, n), lower / upper limits (may be ∓inf) [rad or stage units].
        fixed: int64 (n,), non-zero = joint locked at its (clipped) seed value.
        q0: float64 (n,), seed.
        target: float64 (7,), target position (3) and orientation wxyz (4), chain-local.
        params: float64 (8,), [lam, iters, tol, w_rot, w_pos, max_step, null_space_bias, 0].
        out_q: float64 (n,), solution (written).
        out_err: float64 (1,), unweighted pose-error norm at the solution (written).
    """
    n = q0.shape[0]
    ws_a = np.empty((n, n))
    ws_rhs = np.empty(n)
    ws_dq = np.empty(n)
    ws_qc = np.empty(n)
    err2 = _lm_solve(
        model,
        tip,
        limits[0],
        limits[1],
        fixed,
        q0,
        target[:3],
        target[3:],
        params[0],
        int(params[1]),
        params[2],
        params[3],
        params[4],
        params[5],
        params[6],
        out_q,
        ws_a,
        ws_rhs,
        ws_dq,
        ws_qc,
    )
    out_err[0] = np.sqrt(err2)


@jit
def ik_lm_batch_kernel(
    model, tip, limits, fixed, seeds, targets, params, out_q, out_err, out_seed_index
):
    """LM IK for N targets, each tried from an ordered list of S seeds.

    For every target the seeds are tried in order and the first one whose unweighted
    pose-error norm is below ``params[7]`` wins (priority selection, as the poser's seed
    ladder); if none converges the lowest-error attempt is kept (ties → earlier seed) and
    its index is reported negated minus one (``-1 - s``).

    Args:
        model: float64 (n, 16), packed chain.
        tip: float64 (12,), packed trailing offset.
        limits: float64 (2, n), lower / upper limits.
        fixed: int64 (n,).
        seeds: float64 (N, S, n), seeds per target in priority order.
        targets: float64 (N, 7), target positions (3) and orientations wxyz (4),
            chain-local.
        params: float64 (8,), [lam, iters, tol, w_rot, w_pos, max_step, null_space_bias,
            accept_tolerance].
        out_q: float64 (N, n) (written).
        out_err: float64 (N,), pose-error norm of the returned solution (written).
        out_seed_index: int64 (N,), winning seed index, or ``-1 - s`` when none converged.
    """
    n = seeds.shape[2]
    n_seeds = seeds.shape[1]
    ws_a = np.empty((n, n))
    ws_rhs = np.empty(n)
    ws_dq = np.empty(n)
    ws_qc = np.empty(n)
    q_try = np.empty(n)
    accept2 = params[7] * params[7]
    lower = limits[0]
    upper = limits[1]
    for b in range(seeds.shape[0]):
        best = np.inf
        best_s = 0
        done = False
        for s in range(n_seeds):
            err2 = _lm_solve(
                model,
                tip,
                lower,
                upper,
                fixed,
                seeds[b, s],
                targets[b, :3],
                targets[b, 3:],
                params[0],
                int(params[1]),
                params[2],
                params[3],
                params[4],
                params[5],
                params[6],
                q_try,
                ws_a,
                ws_rhs,
                ws_dq,
                ws_qc,
            )
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
