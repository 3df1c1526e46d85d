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

from runtime._compile.jit import JIT_DISABLED, jit

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


# ----------------------------------------------------------------------------- 3-D helpers
#
# Inside the kernels a rotation is a 9-tuple of floats, row-major (``r[3 * i + j]`` is
# R_ij), and a vector a 3-tuple: scalar temporaries, no array views in the per-joint loops.
# Each helper is small enough for LLVM to inline it. Do not merge them into one per-joint
# step function: that one is not inlined, and the calls made batched FK ~35 % slower.


@jit
def _identity():  # pragma: no cover
    """The identity rotation as a 9-tuple."""
    return (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


@jit
def _mat_at(a, k, o):  # pragma: no cover
    """The 3x3 matrix stored row-major in ``a[k, o:o + 9]``, as a 9-tuple."""
    return (
        a[k, o],
        a[k, o + 1],
        a[k, o + 2],
        a[k, o + 3],
        a[k, o + 4],
        a[k, o + 5],
        a[k, o + 6],
        a[k, o + 7],
        a[k, o + 8],
    )


@jit
def _set_mat(a, k, r):  # pragma: no cover
    """``a[k, :9] = r`` for a rotation 9-tuple ``r``."""
    a[k, 0] = r[0]
    a[k, 1] = r[1]
    a[k, 2] = r[2]
    a[k, 3] = r[3]
    a[k, 4] = r[4]
    a[k, 5] = r[5]
    a[k, 6] = r[6]
    a[k, 7] = r[7]
    a[k, 8] = r[8]


@jit
def _vec_at(a, k, o):  # pragma: no cover
    """The vector ``a[k, o:o + 3]`` as a 3-tuple."""
    return (a[k, o], a[k, o + 1], a[k, o + 2])


@jit
def _set_vec(a, k, v):  # pragma: no cover
    """``a[k, :3] = v`` for a 3-tuple ``v``."""
    a[k, 0] = v[0]
    a[k, 1] = v[1]
    a[k, 2] = v[2]


@jit
def _rot_mul(a, b):  # pragma: no cover
    """``A @ B`` for rotations given as row-major 9-tuples."""
    return (
        a[0] * b[0] + a[1] * b[3] + a[2] * b[6],
        a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
        a[0] * b[2] + a[1] * b[5] + a[2] * b[8],
        a[3] * b[0] + a[4] * b[3] + a[5] * b[6],
        a[3] * b[1] + a[4] * b[4] + a[5] * b[7],
        a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
        a[6] * b[0] + a[7] * b[3] + a[8] * b[6],
        a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
        a[6] * b[2] + a[7] * b[5] + a[8] * b[8],
    )


@jit
def _rot_vec(r, v):  # pragma: no cover
    """``R @ v`` for a row-major 9-tuple ``r`` and a 3-tuple ``v``."""
    return (
        r[0] * v[0] + r[1] * v[1] + r[2] * v[2],
        r[3] * v[0] + r[4] * v[1] + r[5] * v[2],
        r[6] * v[0] + r[7] * v[1] + r[8] * v[2],
    )


@jit
def _add(p, v):  # pragma: no cover
    """``p + v`` for 3-tuples."""
    return (p[0] + v[0], p[1] + v[1], p[2] + v[2])


@jit
def _add_scaled(p, v, s):  # pragma: no cover
    """``p + v * s`` for 3-tuples ``p``, ``v`` and a scalar ``s``."""
    return (p[0] + v[0] * s, p[1] + v[1] * s, p[2] + v[2] * s)


@jit
def _is_z(axis):  # pragma: no cover
    """True when the 3-tuple ``axis`` is exactly +Z."""
    return axis[0] == 0.0 and axis[1] == 0.0 and axis[2] == 1.0


@jit
def _rot_z(t, c, s):  # pragma: no cover
    """``T @ Rz(angle)`` for a rotation 9-tuple ``t``, given the angle's cosine and sine.

    Only the first two columns mix. This is the fast path of every joint: the chain and tree
    builders rotate each joint frame so that its axis is +Z.
    """
    return (
        c * t[0] + s * t[1],
        c * t[1] - s * t[0],
        t[2],
        c * t[3] + s * t[4],
        c * t[4] - s * t[3],
        t[5],
        c * t[6] + s * t[7],
        c * t[7] - s * t[6],
        t[8],
    )


@jit
def _rodrigues(axis, c, s):  # pragma: no cover
    """Rotation 9-tuple about the unit 3-tuple ``axis`` by the angle of cosine ``c``, sine ``s``."""
    x = axis[0]
    y = axis[1]
    z = axis[2]
    u = 1.0 - c
    return (
        u * x * x + c,
        u * x * y - s * z,
        u * x * z + s * y,
        u * x * y + s * z,
        u * y * y + c,
        u * y * z - s * x,
        u * x * z - s * y,
        u * y * z + s * x,
        u * z * z + c,
    )


@jit
def _quat_of(r):  # pragma: no cover
    """Unit quaternion (w, x, y, z), w >= 0, of a rotation 9-tuple."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = r
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


# Element access for one configuration's arrays or row ``b`` of a batch's: the single-call
# kernels pass their (n,) / (3,) / (6, n) arrays as they are (a reshape to a batch of one
# calls Numba's reshape helper: 4 of them were 7 % of a native chain.fk call).


def _at(a, b, index):  # pragma: no cover
    """``a[index]`` of one configuration's array, ``a[(b, *index)]`` of a batch's.

    A batch's array has one more, leading, dimension; ``index`` is a tuple.
    """
    return a[index] if a.ndim == len(index) else a[(b, *index)]


def _put(a, b, index, value):  # pragma: no cover
    """``a[index] = value`` (one configuration) or ``a[(b, *index)] = value`` (a batch)."""
    if a.ndim == len(index):
        a[index] = value
    else:
        a[(b, *index)] = value


if not JIT_DISABLED:  # the compiled forms, chosen by the arrays' dimensions at compile time
    from numba.extending import overload

    @overload(_at)
    def _at_typed(a, b, index):
        if a.ndim == len(index):
            return lambda a, b, index: a[index]
        return lambda a, b, index: a[(b,) + index]

    @overload(_put)
    def _put_typed(a, b, index, value):
        if a.ndim == len(index):

            def put_one(a, b, index, value):
                a[index] = value

            return put_one

        def put_batch(a, b, index, value):
            a[(b,) + index] = value

        return put_batch


@jit
def _store_pose(r, p, out_pos, out_quat, b):  # pragma: no cover
    """Write rotation ``r`` / position ``p`` into ``out_pos[b]`` (3,), ``out_quat[b]`` (4,).

    The arrays themselves when 1-D (one configuration).
    """
    _put(out_pos, b, (0,), p[0])
    _put(out_pos, b, (1,), p[1])
    _put(out_pos, b, (2,), p[2])
    w, x, y, z = _quat_of(r)
    _put(out_quat, b, (0,), w)
    _put(out_quat, b, (1,), x)
    _put(out_quat, b, (2,), y)
    _put(out_quat, b, (3,), z)


# ----------------------------------------------------------------------------- chain FK


@jit
def _set_jac_column(jac, jb, k, top, bottom):  # pragma: no cover
    """``jac[jb, :3, k] = top`` and ``jac[jb, 3:, k] = bottom`` (3-tuples).

    ``jac[...]`` itself for one (6, n) Jacobian.
    """
    _put(jac, jb, (0, k), top[0])
    _put(jac, jb, (1, k), top[1])
    _put(jac, jb, (2, k), top[2])
    _put(jac, jb, (3, k), bottom[0])
    _put(jac, jb, (4, k), bottom[1])
    _put(jac, jb, (5, k), bottom[2])


@jit
def _fk_core(model, tip, qs, b, jac, jb, want_jac):  # pragma: no cover
    """FK of configuration ``qs[b]`` of a packed chain (``qs`` itself when 1-D).

    When ``want_jac`` the point Jacobian is written to ``jac[jb]`` (6, n) (``jac`` itself
    when 2-D).

    Returns:
        ``(r, p)``: end rotation 9-tuple and position 3-tuple, chain-local.
    """
    r = _identity()
    p = (0.0, 0.0, 0.0)
    n = model.shape[0]
    for k in range(n):
        revolute = model[k, 0] == 0.0
        axis = _vec_at(model, k, 1)
        # joint frame: (r, p) · home
        origin = _add(p, _rot_vec(r, _vec_at(model, k, 4)))
        # (r is the identity at k == 0: skip that product, a measurable share of batched FK)
        t = _mat_at(model, k, 7) if k == 0 else _rot_mul(r, _mat_at(model, k, 7))
        w = _rot_vec(t, axis)
        # motion
        qk = _at(qs, b, (k,))
        if revolute:
            c = np.cos(qk)
            s = np.sin(qk)
            r = _rot_z(t, c, s) if _is_z(axis) else _rot_mul(t, _rodrigues(axis, c, s))
            p = origin
        else:
            r = t
            p = _add_scaled(origin, w, qk)
        if want_jac and revolute:
            # joint origin kept in the linear rows until the end position is known
            _set_jac_column(jac, jb, k, w, origin)
        elif want_jac:
            _set_jac_column(jac, jb, k, (0.0, 0.0, 0.0), w)
    if n > 0:
        p = _add(p, _rot_vec(r, (tip[0], tip[1], tip[2])))
        r = _rot_mul(r, (tip[3], tip[4], tip[5], tip[6], tip[7], tip[8], tip[9], tip[10], tip[11]))
    if want_jac:
        for k in range(n):
            if model[k, 0] == 0.0:
                dx = p[0] - _at(jac, jb, (3, k))
                dy = p[1] - _at(jac, jb, (4, k))
                dz = p[2] - _at(jac, jb, (5, k))
                wx = _at(jac, jb, (0, k))
                wy = _at(jac, jb, (1, k))
                wz = _at(jac, jb, (2, k))
                _put(jac, jb, (3, k), wy * dz - wz * dy)
                _put(jac, jb, (4, k), wz * dx - wx * dz)
                _put(jac, jb, (5, k), wx * dy - wy * dx)
    return r, p


@jit(nrt=False)
def chain_fk_kernel(model, tip, q, out_pos, out_quat):
    """End pose of a serial chain for one configuration.

    Args:
        model: float64 (n, 16), packed chain (see module docstring).
        tip: float64 (12,), packed trailing offset [t (3), R row-major (9)].
        q: float64 (n,), joint values [rad or stage units].
        out_pos: float64 (3,), end position in the chain-local frame (written).
        out_quat: float64 (4,), end orientation wxyz, w >= 0 (written).
    """
    # (no Jacobian: a 2-D array stands in for it, untouched; an allocated one cost a tenth
    # of the call)
    r, p = _fk_core(model, tip, q, 0, model, 0, False)
    _store_pose(r, p, out_pos, out_quat, 0)


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
        r, p = _fk_core(model, tip, qs, b, dummy, 0, False)
        _store_pose(r, p, out_pos, out_quat, b)


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
    home_r9 = home_r.reshape((n, 9))
    out_rot9 = out_rot.reshape((n, 9))
    r = _identity()
    p = (0.0, 0.0, 0.0)
    for k in range(n):
        p = _add(p, _rot_vec(r, _vec_at(home_t, k, 0)))
        r = _rot_mul(r, _mat_at(home_r9, k, 0))
        axis = _vec_at(axes, k, 0)
        if joint_types[k] == 0:
            c = np.cos(q[k])
            s = np.sin(q[k])
            r = _rot_z(r, c, s) if _is_z(axis) else _rot_mul(r, _rodrigues(axis, c, s))
        else:
            p = _add_scaled(p, _rot_vec(r, axis), q[k])
        if k == n - 1:
            p = _add(p, _rot_vec(r, (tip_t[0], tip_t[1], tip_t[2])))
            r = _rot_mul(r, _mat_at(tip_r.reshape((1, 9)), 0, 0))
        _set_vec(out_pos, k, p)
        _set_mat(out_rot9, k, r)


@jit(nrt=False)
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
    r, p = _fk_core(model, tip, q, 0, out_jac, 0, True)
    _store_pose(r, p, out_pos, out_quat, 0)


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
        r, p = _fk_core(model, tip, qs, b, out_jac, b, True)
        _store_pose(r, p, out_pos, out_quat, b)


# ----------------------------------------------------------------------------- tree FK


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
    """Poses of every link of a kinematic tree for N configurations.

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
        qs: float64 (N, D), configurations [rad or stage units].
        out_pos: float64 (N, L, 3), link origins in the robot frame (written).
        out_quat: float64 (N, L, 4), link orientations wxyz in the robot frame (written).
    """
    n_links = link_parent.shape[0]
    pre_r9 = pre_r.reshape((n_links, 9))
    post_r9 = post_r.reshape((n_links, 9))
    rots = np.empty((n_links, 9))  # link rotations; parents are read back from it
    for b in range(qs.shape[0]):
        for lk in range(n_links):
            par = link_parent[lk]
            # X_parent · pre · motion
            if par < 0:
                p = _vec_at(pre_t, lk, 0)
                r = _mat_at(pre_r9, lk, 0)
            else:
                r = _mat_at(rots, par, 0)
                p = (out_pos[b, par, 0], out_pos[b, par, 1], out_pos[b, par, 2])
                p = _add(p, _rot_vec(r, _vec_at(pre_t, lk, 0)))
                r = _rot_mul(r, _mat_at(pre_r9, lk, 0))
            qi = link_qindex[lk]
            if qi >= 0 and link_jtype[lk] == 0:
                axis = _vec_at(link_axis, lk, 0)
                c = np.cos(qs[b, qi])
                s = np.sin(qs[b, qi])
                r = _rot_z(r, c, s) if _is_z(axis) else _rot_mul(r, _rodrigues(axis, c, s))
            elif qi >= 0 and link_jtype[lk] == 1:
                p = _add_scaled(p, _rot_vec(r, _vec_at(link_axis, lk, 0)), qs[b, qi])
            if link_jtype[lk] != 2:  # no motion: the offset is folded into pre (post = I)
                p = _add(p, _rot_vec(r, _vec_at(post_t, lk, 0)))
                r = _rot_mul(r, _mat_at(post_r9, lk, 0))
            _set_mat(rots, lk, r)
            out_pos[b, lk, 0] = p[0]
            out_pos[b, lk, 1] = p[1]
            out_pos[b, lk, 2] = p[2]
            w, x, y, z = _quat_of(r)
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
        link_parent: int64 (L,).
        link_qindex: int64 (L,).
        link_jtype: int64 (L,).
        link_axis: float64 (L, 3).
        pre_t: float64 (L, 3).
        pre_r: float64 (L, 3, 3).
        post_t: float64 (L, 3).
        post_r: float64 (L, 3, 3).
        q: float64 (D,), configuration [rad or stage units].
        out_pos: float64 (L, 3), robot frame (written).
        out_quat: float64 (L, 4), wxyz (written).

    See :func:`tree_fk_batch_kernel` for the meaning of the tree arrays.
    """
    n_links = link_parent.shape[0]
    tree_fk_batch_kernel(
        link_parent,
        link_qindex,
        link_jtype,
        link_axis,
        pre_t,
        pre_r,
        post_t,
        post_r,
        q.reshape((1, q.shape[0])),
        out_pos.reshape((1, n_links, 3)),
        out_quat.reshape((1, n_links, 4)),
    )


# ----------------------------------------------------------------------------- IK

#: Weighted pose-error norm below which the null-space midpoint pull is switched off, so the
#: last iterations are pure damped Gauss–Newton steps (the pull's second-order drift would
#: otherwise keep redundant arms ~1e-3 away from the target; see ``ik.py``).
BIAS_CUTOFF = 1e-2


@jit
def _eval(model, tip, qrow, target, weights, fixed, jac, e, ew):  # pragma: no cover
    """FK, point Jacobian, pose error and weighted cost at ``qrow[0]``.

    Fixed columns of ``jac[0]`` are zeroed; ``e = [2 s vec(tgt_q ⊗ quat*); tgt_t - p]`` with
    s = +1 when w == 0 (spec §4 REC), ``target = [tgt_t (3), tgt_q wxyz (4)]``; ``ew`` is the
    weighted error; returns the weighted cost.
    """
    r, p = _fk_core(model, tip, qrow, 0, jac, 0, True)
    w2, x2, y2, z2 = _quat_of(r)
    n = qrow.shape[1]
    for k in range(n):
        if fixed[k] != 0:
            for i in range(6):
                jac[0, i, k] = 0.0
    w1 = target[3]
    x1 = target[4]
    y1 = target[5]
    z1 = target[6]
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
    for i in range(3):
        e[3 + i] = target[i] - p[i]
    cost = 0.0
    for i in range(6):
        ew[i] = weights[i] * e[i]
        cost += ew[i] * ew[i]
    return cost


@jit
def _normal_equations(jac, weights, ew, blocked, lam, out_a, out_rhs):  # pragma: no cover
    """Damped normal equations ``A = Jwᵀ Jw + lam I``, ``rhs = Jwᵀ ew`` of an LM step.

    ``Jw`` is ``jac[0]`` (6, n) with rows scaled by ``weights`` (6,); the rows and columns
    of joints with ``blocked`` (n,) set are zero (their diagonal is ``lam``).
    """
    n = out_rhs.shape[0]
    for a in range(n):
        g = 0.0
        if blocked[a] == 0:
            for i in range(6):
                g += weights[i] * jac[0, i, a] * ew[i]
        out_rhs[a] = g
        for b in range(a, n):
            s = 0.0
            if blocked[a] == 0 and blocked[b] == 0:
                for i in range(6):
                    wi = weights[i]
                    s += wi * wi * jac[0, i, a] * jac[0, i, b]
            out_a[a, b] = s
            out_a[b, a] = s
        out_a[a, a] += lam


@jit
def _cholesky(a):  # pragma: no cover
    """Cholesky factor of the SPD ``a`` (n, n) in place (lower triangle); False if not SPD."""
    n = a.shape[0]
    for j in range(n):
        s = a[j, j]
        for k in range(j):
            s -= a[j, k] * a[j, k]
        if s <= 0.0:
            return False
        d = np.sqrt(s)
        a[j, j] = d
        for i in range(j + 1, n):
            s2 = a[i, j]
            for k in range(j):
                s2 -= a[i, k] * a[j, k]
            a[i, j] = s2 / d
    return True


@jit
def _cholesky_solve(factor, rhs, out_x):  # pragma: no cover
    """Solve ``L Lᵀ x = rhs`` with the lower-triangular ``factor`` L (n, n) into ``out_x``."""
    n = rhs.shape[0]
    for i in range(n):
        s = rhs[i]
        for k in range(i):
            s -= factor[i, k] * out_x[k]
        out_x[i] = s / factor[i, i]
    for i in range(n - 1, -1, -1):
        s = out_x[i]
        for k in range(i + 1, n):
            s -= factor[k, i] * out_x[k]
        out_x[i] = s / factor[i, i]


@jit
def _lm_workspace(n):  # pragma: no cover
    """Scratch arrays of one LM solve for ``n`` joints: (A (n, n), rhs, dq, q_center (n,))."""
    return np.empty((n, n)), np.empty(n), np.empty(n), np.empty(n)


@jit
def _lm_solve(model, tip, limits, fixed, q0, target, params, out_q, ws):  # pragma: no cover
    """LM solve from ``q0`` into ``out_q``; returns the unweighted squared pose error.

    ``limits``, ``fixed``, ``target`` and ``params`` are as in :func:`ik_lm_kernel`; ``ws``
    is an :func:`_lm_workspace`.
    """
    n = q0.shape[0]
    lower = limits[0]
    upper = limits[1]
    lam0 = params[0]
    iters = int(params[1])
    tol = params[2]
    w_rot = params[3]
    w_pos = params[4]
    max_step = params[5]
    null_space_bias = params[6]
    ws_a, ws_rhs, ws_dq, ws_qc = ws
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
    cost = _eval(model, tip, qcur, target, weights, fixed, jac, e, ew)
    tol2 = tol * tol
    use_bias = bias_active
    blocked = np.zeros(n, dtype=np.int64)
    any_blocked = False
    bias_cutoff2 = BIAS_CUTOFF * BIAS_CUTOFF
    for _ in range(iters):
        if cost < tol2:
            break
        _normal_equations(jac, weights, ew, blocked, lam, ws_a, ws_rhs)
        if not _cholesky(ws_a):  # SPD in exact arithmetic since lam > 0
            lam = min(lam * 2.0, 1e2)
            continue
        if use_bias and cost > bias_cutoff2:
            for a in range(n):
                ws_rhs[a] += lam * null_space_bias * (ws_qc[a] - qcur[0, a])
        _cholesky_solve(ws_a, ws_rhs, ws_dq)
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
        cost_new = _eval(model, tip, qnew, target, weights, fixed, jac_new, e_new, ew_new)
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
    err2 = _lm_solve(
        model, tip, limits, fixed, q0, target, params, out_q, _lm_workspace(q0.shape[0])
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
    ws = _lm_workspace(n)
    q_try = np.empty(n)
    accept2 = params[7] * params[7]
    for b in range(seeds.shape[0]):
        best = np.inf
        best_s = 0
        done = False
        for s in range(n_seeds):
            err2 = _lm_solve(model, tip, limits, fixed, seeds[b, s], targets[b], params, q_try, ws)
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
