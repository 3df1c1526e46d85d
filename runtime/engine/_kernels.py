"""Numba kernels turning MuJoCo data arrays into :class:`PhysicsState` arrays.

All inputs are C-contiguous float64 (indices int64) copies or views of ``MjModel`` /
``MjData`` arrays; outputs are preallocated and passed last. Kernels trust their inputs
(validated by :class:`runtime.engine.mujoco_engine.MujocoEngine` at construction).

:func:`state_kernel` is the one entry point the engine calls per :meth:`state` (Numba
dispatch costs ~0.07 us per array argument, so per-engine constants travel in two packed
tables and MuJoCo's buffers as raw views); it runs the part kernels on views it carves out
of those tables. The exceptions to "float64 / int64 only" are MuJoCo's own int32 buffers
(contact struct fields, ``efc_type`` / ``efc_id``), which it converts before use.
"""

from __future__ import annotations

import math

import numpy as np

from runtime._compile.jit import jit

# The engine calls only ``state_kernel`` from Python (one compiled signature). The part
# kernels below are its building blocks, called from inside it (their types are fixed by
# ``state_kernel``'s code) and directly by the tests; they are importable but not listed.
__all__ = ["state_kernel"]


@jit(nrt=False)
def body_state_kernel(
    rows: np.ndarray,
    ids: np.ndarray,
    roots: np.ndarray,
    xpos: np.ndarray,
    xquat: np.ndarray,
    xipos: np.ndarray,
    subtree_com: np.ndarray,
    cvel: np.ndarray,
    out_pos: np.ndarray,
    out_quat: np.ndarray,
    out_lin: np.ndarray,
    out_ang: np.ndarray,
) -> None:
    """Body poses and centre-of-mass velocities from MuJoCo kinematics.

    Args:
        rows: output row per listed body, shape (K,), int64.
        ids: MuJoCo body id per listed body, shape (K,), int64.
        roots: MuJoCo root body id (``body_rootid``) per listed body, shape (K,), int64.
        xpos: body frame origins, shape (nbody, 3), float64, world.
        xquat: body orientations, shape (nbody, 4), float64, wxyz.
        xipos: body centres of mass, shape (nbody, 3), float64, world.
        subtree_com: subtree centres of mass, shape (nbody, 3), float64, world.
        cvel: spatial velocities (rot, lin) at ``subtree_com[root]``, shape (nbody, 6), world.
        out_pos: (B, 3) body positions, written at ``rows``.
        out_quat: (B, 4) body orientations (wxyz), written at ``rows``.
        out_lin: (B, 3) COM linear velocities, written at ``rows``.
        out_ang: (B, 3) angular velocities [rad/s], written at ``rows``.
    """
    for k in range(rows.shape[0]):
        r = rows[k]
        i = ids[k]
        c = roots[k]
        for a in range(3):
            out_pos[r, a] = xpos[i, a]
        for a in range(4):
            out_quat[r, a] = xquat[i, a]
        wx, wy, wz = cvel[i, 0], cvel[i, 1], cvel[i, 2]
        dx = xipos[i, 0] - subtree_com[c, 0]
        dy = xipos[i, 1] - subtree_com[c, 1]
        dz = xipos[i, 2] - subtree_com[c, 2]
        out_ang[r, 0] = wx
        out_ang[r, 1] = wy
        out_ang[r, 2] = wz
        out_lin[r, 0] = cvel[i, 3] + wy * dz - wz * dy
        out_lin[r, 1] = cvel[i, 4] + wz * dx - wx * dz
        out_lin[r, 2] = cvel[i, 5] + wx * dy - wy * dx


@jit(nrt=False)
def body_acceleration_kernel(
    rows: np.ndarray,
    ids: np.ndarray,
    roots: np.ndarray,
    xipos: np.ndarray,
    subtree_com: np.ndarray,
    cvel: np.ndarray,
    cacc: np.ndarray,
    gravity: np.ndarray,
    out_lin_acc: np.ndarray,
    out_ang_acc: np.ndarray,
) -> None:
    """Classical COM accelerations from MuJoCo's spatial ``cacc``.

    ``a = cacc_lin + alpha x d + w x v_com + gravity`` where ``d = xipos - subtree_com[root]``
    (``cacc`` carries MuJoCo's fictitious ``-gravity`` of the world body).

    Args:
        rows: output row per listed body, shape (K,), int64.
        ids: MuJoCo body ids, shape (K,), int64.
        roots: root body ids, shape (K,), int64.
        xipos: (nbody, 3) COM positions, world.
        subtree_com: (nbody, 3) subtree COMs, world.
        cvel: (nbody, 6) spatial velocities (rot, lin), world.
        cacc: (nbody, 6) spatial accelerations (rot, lin), world.
        gravity: (3,) gravity [stage units/s^2], world.
        out_lin_acc: (B, 3) COM linear accelerations, written at ``rows``.
        out_ang_acc: (B, 3) angular accelerations [rad/s^2], written at ``rows``.
    """
    for k in range(rows.shape[0]):
        r = rows[k]
        i = ids[k]
        c = roots[k]
        dx = xipos[i, 0] - subtree_com[c, 0]
        dy = xipos[i, 1] - subtree_com[c, 1]
        dz = xipos[i, 2] - subtree_com[c, 2]
        wx, wy, wz = cvel[i, 0], cvel[i, 1], cvel[i, 2]
        vx = cvel[i, 3] + wy * dz - wz * dy
        vy = cvel[i, 4] + wz * dx - wx * dz
        vz = cvel[i, 5] + wx * dy - wy * dx
        ax, ay, az = cacc[i, 0], cacc[i, 1], cacc[i, 2]
        out_ang_acc[r, 0] = ax
        out_ang_acc[r, 1] = ay
        out_ang_acc[r, 2] = az
        out_lin_acc[r, 0] = cacc[i, 3] + ay * dz - az * dy + wy * vz - wz * vy + gravity[0]
        out_lin_acc[r, 1] = cacc[i, 4] + az * dx - ax * dz + wz * vx - wx * vz + gravity[1]
        out_lin_acc[r, 2] = cacc[i, 5] + ax * dy - ay * dx + wx * vy - wy * vx + gravity[2]


@jit(nrt=False)
def contact_kernel(
    geom: np.ndarray,
    frame: np.ndarray,
    pos: np.ndarray,
    friction: np.ndarray,
    dim: np.ndarray,
    efc_address: np.ndarray,
    exclude: np.ndarray,
    efc_force: np.ndarray,
    pyramidal: bool,
    geom_body_index: np.ndarray,
    dt: float,
    out_body0: np.ndarray,
    out_body1: np.ndarray,
    out_pos: np.ndarray,
    out_normal: np.ndarray,
    out_impulse: np.ndarray,
    out_count: np.ndarray,
) -> None:
    """Contact records (impulse on body0) from MuJoCo contacts, like ``mj_contactForce``.

    The contact-frame force (normal, tangent1, tangent2) is decoded from ``efc_force``
    (pyramidal: normal = sum of the 2(dim-1) edge forces, tangent j = (f_2j - f_2j+1) mu_j;
    elliptic / frictionless: the first rows directly). It is the force of geom1 on geom2;
    body0 = body of geom2 (body1 = geom1's), normal = first frame row (geom1 -> geom2). If
    geom2 maps to no listed body the roles are swapped and normal / impulse negated.
    Inactive (excluded) contacts and contacts between two unlisted bodies are skipped.

    Args:
        geom: (C, 2) geom ids, int64.
        frame: (C, 9) contact frames (rows: normal, tangent1, tangent2), world.
        pos: (C, 3) contact positions, world.
        friction: (C, 5) contact friction coefficients.
        dim: (C,) contact dimensionality, int64.
        efc_address: (C,) first constraint row, int64 (-1 when inactive).
        exclude: (C,) MuJoCo exclusion flag, int64 (0 = active).
        efc_force: (nefc,) constraint forces.
        pyramidal: True for MuJoCo's pyramidal friction cone.
        geom_body_index: (ngeom,) ``body_paths`` index per geom (-1 = not listed), int64.
        dt: step size [s].
        out_body0: (C,) int64 body index receiving the impulse.
        out_body1: (C,) int64 other body index (-1 = not listed).
        out_pos: (C, 3) contact positions.
        out_normal: (C, 3) unit normals from body1 towards body0.
        out_impulse: (C, 3) impulses on body0 [mass x stage units / s], world.
        out_count: (1,) int64 number of records written.
    """
    n = 0
    for c in range(geom.shape[0]):
        adr = efc_address[c]
        if exclude[c] != 0 or adr < 0:
            continue
        b1 = geom_body_index[geom[c, 0]]
        b2 = geom_body_index[geom[c, 1]]
        if b1 < 0 and b2 < 0:
            continue
        d = dim[c]
        f0 = 0.0
        f1 = 0.0
        f2 = 0.0
        if d == 1:
            f0 = efc_force[adr]
        elif pyramidal:
            for j in range(2 * (d - 1)):
                f0 += efc_force[adr + j]
            if d - 1 >= 1:
                f1 = (efc_force[adr] - efc_force[adr + 1]) * friction[c, 0]
            if d - 1 >= 2:
                f2 = (efc_force[adr + 2] - efc_force[adr + 3]) * friction[c, 1]
        else:
            f0 = efc_force[adr]
            if d >= 2:
                f1 = efc_force[adr + 1]
            if d >= 3:
                f2 = efc_force[adr + 2]
        sign = 1.0
        if b2 < 0:
            sign = -1.0
            b1, b2 = b2, b1
        for a in range(3):
            world = frame[c, a] * f0 + frame[c, 3 + a] * f1 + frame[c, 6 + a] * f2
            out_impulse[n, a] = sign * world * dt
            out_normal[n, a] = sign * frame[c, a]
            out_pos[n, a] = pos[c, a]
        out_body0[n] = b2
        out_body1[n] = b1
        n += 1
    out_count[0] = n


@jit(nrt=False)
def joint_state_kernel(
    q_adr: np.ndarray,
    v_adr: np.ndarray,
    sign: np.ndarray,
    ball_axis: np.ndarray,
    qpos: np.ndarray,
    qvel: np.ndarray,
    qfrc_actuator: np.ndarray,
    qfrc_passive: np.ndarray,
    out_q: np.ndarray,
    out_v: np.ndarray,
    out_effort: np.ndarray,
) -> None:
    """DOF positions, velocities and efforts in DOF-table order.

    Hinge / slide: ``qpos[q_adr] * sign``. Ball components: the rotation vector (axis x
    angle) of the joint quaternion at ``qpos[q_adr:q_adr+4]``, component ``ball_axis``.
    Effort = ``qfrc_actuator + qfrc_passive`` of the DOF, times ``sign``.

    Args:
        q_adr: (D,) qpos address per DOF (ball: quaternion start), int64.
        v_adr: (D,) qvel address per DOF, int64.
        sign: (D,) +1 or -1 (joint used reversed in the MuJoCo tree).
        ball_axis: (D,) -1 for hinge/slide, else 0/1/2, int64.
        qpos: (nq,) positions.
        qvel: (nv,) velocities.
        qfrc_actuator: (nv,) actuator generalised forces.
        qfrc_passive: (nv,) passive generalised forces.
        out_q: (D,) positions [rad or stage units].
        out_v: (D,) velocities.
        out_effort: (D,) efforts [N m or force units].
    """
    for k in range(q_adr.shape[0]):
        s = sign[k]
        v = v_adr[k]
        out_v[k] = qvel[v] * s
        out_effort[k] = (qfrc_actuator[v] + qfrc_passive[v]) * s
        a = q_adr[k]
        axis = ball_axis[k]
        if axis < 0:
            out_q[k] = qpos[a] * s
        else:
            w = qpos[a]
            x = qpos[a + 1]
            y = qpos[a + 2]
            z = qpos[a + 3]
            norm = math.sqrt(x * x + y * y + z * z)
            if norm > 1e-12:
                angle = 2.0 * math.atan2(norm, w)
                if angle > math.pi:
                    angle -= 2.0 * math.pi
                scale = angle / norm
            else:
                scale = 2.0
            out_q[k] = qpos[a + 1 + axis] * scale * s


@jit(nrt=False)
def joint_constraint_force_kernel(
    efc_type: np.ndarray,
    efc_id: np.ndarray,
    efc_force: np.ndarray,
    limit_type: int,
    friction_type: int,
    jnt_type: np.ndarray,
    scalar_joint_a: int,
    scalar_joint_b: int,
    jnt_range: np.ndarray,
    jnt_qposadr: np.ndarray,
    jnt_dofadr: np.ndarray,
    qpos: np.ndarray,
    dof_v_adr: np.ndarray,
    dof_sign: np.ndarray,
    dof_ball_axis: np.ndarray,
    out_dof_force: np.ndarray,
    out_effort: np.ndarray,
) -> None:
    """Add joint-limit and DOF-friction constraint forces to hinge / slide DOF efforts.

    MuJoCo limit rows have Jacobian +1 at a lower limit and -1 at an upper limit (the side
    is the one nearer to the current position); friction-loss rows have Jacobian +1. Limits
    of joints other than hinge / slide (ball) are skipped.

    Args:
        efc_type: (nefc,) constraint types, int64.
        efc_id: (nefc,) joint id (limit rows) / DOF id (friction rows), int64.
        efc_force: (nefc,) constraint forces.
        limit_type: ``mjCNSTR_LIMIT_JOINT``.
        friction_type: ``mjCNSTR_FRICTION_DOF``.
        jnt_type: (njnt,) joint types, int64.
        scalar_joint_a: ``mjJNT_SLIDE``.
        scalar_joint_b: ``mjJNT_HINGE``.
        jnt_range: (njnt, 2) joint ranges.
        jnt_qposadr: (njnt,) qpos addresses, int64.
        jnt_dofadr: (njnt,) DOF addresses, int64.
        qpos: (nq,) positions.
        dof_v_adr: (D,) qvel address per reported DOF, int64.
        dof_sign: (D,) +1 / -1 per reported DOF.
        dof_ball_axis: (D,) -1 for hinge / slide DOFs (only those receive the forces), int64.
        out_dof_force: (nv,) scratch: generalised constraint forces per MuJoCo DOF.
        out_effort: (D,) efforts, incremented in place.
    """
    for k in range(out_dof_force.shape[0]):
        out_dof_force[k] = 0.0
    for r in range(efc_type.shape[0]):
        t = efc_type[r]
        if t == friction_type:
            out_dof_force[efc_id[r]] += efc_force[r]
        elif t == limit_type:
            j = efc_id[r]
            if jnt_type[j] != scalar_joint_a and jnt_type[j] != scalar_joint_b:
                continue
            mid = 0.5 * (jnt_range[j, 0] + jnt_range[j, 1])
            if qpos[jnt_qposadr[j]] < mid:
                out_dof_force[jnt_dofadr[j]] += efc_force[r]
            else:
                out_dof_force[jnt_dofadr[j]] -= efc_force[r]
    for k in range(dof_v_adr.shape[0]):
        if dof_ball_axis[k] < 0:
            out_effort[k] += out_dof_force[dof_v_adr[k]] * dof_sign[k]


# ------------------------------------------------------------------ whole-state kernel
#
# ``state_kernel`` produces a complete PhysicsState in one compiled call (each extra array
# argument of a Numba call costs ~0.07 us of dispatch, so the per-engine constants travel
# packed in two tables). Header slots of ``tab_i`` (int64):

H_NBODY = 0  # MuJoCo nbody
H_B = 1  # number of reported bodies B (rows of body_paths)
H_K = 2  # number of dynamic (MuJoCo-simulated) reported bodies K
H_D = 3  # number of reported DOFs D
H_NJNT = 4  # MuJoCo njnt
H_NV = 5  # MuJoCo nv
H_NQ = 6  # MuJoCo nq
H_NGEOM = 7  # MuJoCo ngeom
H_BODY_MAP = 8  # offset of rows[K], ids[K], roots[K]
H_GEOM_BODY = 9  # offset of geom_body_index[ngeom]
H_DOF_MAP = 10  # offset of q_adr[D], v_adr[D], ball_axis[D]
H_JNT_MAP = 11  # offset of jnt_type[njnt], jnt_qposadr[njnt], jnt_dofadr[njnt]
H_XPOS = 12  # offsets (float64 units) into the MjData buffer view ``mj``
H_XQUAT = 13
H_XIPOS = 14
H_SUBTREE_COM = 15
H_CVEL = 16
H_CACC = 17
H_QPOS = 18
H_QVEL = 19
H_QFRC_ACTUATOR = 20
H_QFRC_PASSIVE = 21
H_CON_POS = 22  # float64 columns of mjContact fields in ``con_f``
H_CON_FRAME = 23
H_CON_FRICTION = 24
H_CON_GEOM = 25  # int32 columns of mjContact fields in ``con_i``
H_CON_DIM = 26
H_CON_EFC_ADDRESS = 27
H_CON_EXCLUDE = 28
H_LIMIT_TYPE = 29  # mjCNSTR_LIMIT_JOINT
H_FRICTION_TYPE = 30  # mjCNSTR_FRICTION_DOF
H_SLIDE = 31  # mjJNT_SLIDE
H_HINGE = 32  # mjJNT_HINGE
H_PYRAMIDAL = 33  # 1 for the pyramidal friction cone
H_SCALAR_DOFS = 34  # number of hinge / slide DOFs among the reported ones
H_SIZE = 35

# ``tab_f`` (float64): static_positions[B*3], static_orientations[B*4], gravity[3],
# dof sign[D], dt -- at offsets 0, 3B, 7B, 7B+3, 7B+3+D.


@jit(nrt=False)
def state_kernel(
    mj: np.ndarray,
    con_f: np.ndarray,
    con_i: np.ndarray,
    efc_force: np.ndarray,
    efc_type: np.ndarray,
    efc_id: np.ndarray,
    jnt_range: np.ndarray,
    tab_i: np.ndarray,
    tab_f: np.ndarray,
    work_i: np.ndarray,
    work_f: np.ndarray,
    accelerations: bool,
    out_vec: np.ndarray,
    out_quat: np.ndarray,
    out_joint: np.ndarray,
    out_ids: np.ndarray,
) -> None:
    """Every :class:`PhysicsState` array of one step in one call.

    Unpacks the tables into views and runs :func:`body_state_kernel`,
    :func:`body_acceleration_kernel`, :func:`contact_kernel` (after gathering the MuJoCo
    contact structs into contiguous arrays), :func:`joint_state_kernel` and
    :func:`joint_constraint_force_kernel`.

    Args:
        mj: float64 view of the ``MjData`` buffer region holding ``xpos`` ... ``qfrc_passive``
            (offsets in the ``tab_i`` header).
        con_f: (cap, sizeof(mjContact)/8) float64 view of MuJoCo's contact array; rows
            ``[0, C)`` are the current contacts, C = ``out_ids.shape[1]``.
        con_i: (cap, sizeof(mjContact)/4) int32 view of the same memory.
        efc_force: (nefc,) constraint forces.
        efc_type: (nefc,) int32 constraint types.
        efc_id: (nefc,) int32 constraint object ids.
        jnt_range: (njnt, 2) joint ranges (``MjModel.jnt_range``).
        tab_i: int64 static table (header ``H_*`` then index tables).
        tab_f: float64 static table (static poses, gravity, DOF signs, dt).
        work_i: int64 scratch, at least ``1 + 5 C + 2 nefc`` long; ``work_i[0]`` receives
            the number of contact records written.
        work_f: float64 scratch, at least ``nv + 17 C`` long.
        accelerations: also fill the acceleration rows.
        out_vec: (R, 3) rows: positions [B], COM linear velocities [B], angular velocities
            [B], (accelerations: linear [B], angular [B]), contact positions [C], normals [C],
            impulses [C], gravity [1]; R = 3B (+2B) + 3C + 1. World frame, stage units.
        out_quat: (B, 4) body orientations, wxyz.
        out_joint: (3, D) DOF positions, velocities, efforts.
        out_ids: (2, C) int64 contact body0 / body1 indices.
    """
    nbody = tab_i[H_NBODY]
    b = tab_i[H_B]
    k = tab_i[H_K]
    nd = tab_i[H_D]
    njnt = tab_i[H_NJNT]
    nv = tab_i[H_NV]
    nq = tab_i[H_NQ]
    nc = out_ids.shape[1]
    o = tab_i[H_BODY_MAP]
    rows = tab_i[o : o + k]
    ids = tab_i[o + k : o + 2 * k]
    roots = tab_i[o + 2 * k : o + 3 * k]
    gravity = tab_f[7 * b : 7 * b + 3]
    sign = tab_f[7 * b + 3 : 7 * b + 3 + nd]
    dt = tab_f[7 * b + 3 + nd]
    xpos = mj[tab_i[H_XPOS] : tab_i[H_XPOS] + 3 * nbody].reshape(nbody, 3)
    xquat = mj[tab_i[H_XQUAT] : tab_i[H_XQUAT] + 4 * nbody].reshape(nbody, 4)
    xipos = mj[tab_i[H_XIPOS] : tab_i[H_XIPOS] + 3 * nbody].reshape(nbody, 3)
    subtree_com = mj[tab_i[H_SUBTREE_COM] : tab_i[H_SUBTREE_COM] + 3 * nbody].reshape(nbody, 3)
    cvel = mj[tab_i[H_CVEL] : tab_i[H_CVEL] + 6 * nbody].reshape(nbody, 6)
    qpos = mj[tab_i[H_QPOS] : tab_i[H_QPOS] + nq]
    qvel = mj[tab_i[H_QVEL] : tab_i[H_QVEL] + nv]
    qfrc_actuator = mj[tab_i[H_QFRC_ACTUATOR] : tab_i[H_QFRC_ACTUATOR] + nv]
    qfrc_passive = mj[tab_i[H_QFRC_PASSIVE] : tab_i[H_QFRC_PASSIVE] + nv]

    # bodies: static rows keep their authored pose and rest
    out_pos = out_vec[0:b]
    out_lin = out_vec[b : 2 * b]
    out_ang = out_vec[2 * b : 3 * b]
    for r in range(b):
        for a in range(3):
            out_pos[r, a] = tab_f[3 * r + a]
            out_lin[r, a] = 0.0
            out_ang[r, a] = 0.0
        for a in range(4):
            out_quat[r, a] = tab_f[3 * b + 4 * r + a]
    body_state_kernel(
        rows, ids, roots, xpos, xquat, xipos, subtree_com, cvel, out_pos, out_quat, out_lin, out_ang
    )
    row = 3 * b
    if accelerations:
        cacc = mj[tab_i[H_CACC] : tab_i[H_CACC] + 6 * nbody].reshape(nbody, 6)
        out_lin_acc = out_vec[row : row + b]
        out_ang_acc = out_vec[row + b : row + 2 * b]
        for r in range(b):
            for a in range(3):
                out_lin_acc[r, a] = 0.0
                out_ang_acc[r, a] = 0.0
        body_acceleration_kernel(
            rows, ids, roots, xipos, subtree_com, cvel, cacc, gravity, out_lin_acc, out_ang_acc
        )
        row += 2 * b
    for a in range(3):
        out_vec[out_vec.shape[0] - 1, a] = gravity[a]

    # contacts: gather the mjContact fields into contiguous arrays
    nefc = efc_force.shape[0]
    geom = work_i[1 : 1 + 2 * nc].reshape(nc, 2)
    dim = work_i[1 + 2 * nc : 1 + 3 * nc]
    efc_address = work_i[1 + 3 * nc : 1 + 4 * nc]
    exclude = work_i[1 + 4 * nc : 1 + 5 * nc]
    frame = work_f[nv : nv + 9 * nc].reshape(nc, 9)
    pos = work_f[nv + 9 * nc : nv + 12 * nc].reshape(nc, 3)
    friction = work_f[nv + 12 * nc : nv + 17 * nc].reshape(nc, 5)
    c_pos = tab_i[H_CON_POS]
    c_frame = tab_i[H_CON_FRAME]
    c_friction = tab_i[H_CON_FRICTION]
    c_geom = tab_i[H_CON_GEOM]
    c_dim = tab_i[H_CON_DIM]
    c_adr = tab_i[H_CON_EFC_ADDRESS]
    c_exclude = tab_i[H_CON_EXCLUDE]
    for c in range(nc):
        geom[c, 0] = con_i[c, c_geom]
        geom[c, 1] = con_i[c, c_geom + 1]
        dim[c] = con_i[c, c_dim]
        efc_address[c] = con_i[c, c_adr]
        exclude[c] = con_i[c, c_exclude]
        for a in range(9):
            frame[c, a] = con_f[c, c_frame + a]
        for a in range(3):
            pos[c, a] = con_f[c, c_pos + a]
        for a in range(5):
            friction[c, a] = con_f[c, c_friction + a]
    og = tab_i[H_GEOM_BODY]
    geom_body_index = tab_i[og : og + tab_i[H_NGEOM]]
    contact_kernel(
        geom,
        frame,
        pos,
        friction,
        dim,
        efc_address,
        exclude,
        efc_force,
        tab_i[H_PYRAMIDAL] != 0,
        geom_body_index,
        dt,
        out_ids[0],
        out_ids[1],
        out_vec[row : row + nc],
        out_vec[row + nc : row + 2 * nc],
        out_vec[row + 2 * nc : row + 3 * nc],
        work_i[0:1],
    )

    # joints
    od = tab_i[H_DOF_MAP]
    q_adr = tab_i[od : od + nd]
    v_adr = tab_i[od + nd : od + 2 * nd]
    ball_axis = tab_i[od + 2 * nd : od + 3 * nd]
    joint_state_kernel(
        q_adr,
        v_adr,
        sign,
        ball_axis,
        qpos,
        qvel,
        qfrc_actuator,
        qfrc_passive,
        out_joint[0],
        out_joint[1],
        out_joint[2],
    )
    if nefc > 0 and tab_i[H_SCALAR_DOFS] > 0:
        types = work_i[1 + 5 * nc : 1 + 5 * nc + nefc]
        objects = work_i[1 + 5 * nc + nefc : 1 + 5 * nc + 2 * nefc]
        for r in range(nefc):
            types[r] = efc_type[r]
            objects[r] = efc_id[r]
        oj = tab_i[H_JNT_MAP]
        joint_constraint_force_kernel(
            types,
            objects,
            efc_force,
            tab_i[H_LIMIT_TYPE],
            tab_i[H_FRICTION_TYPE],
            tab_i[oj : oj + njnt],
            tab_i[H_SLIDE],
            tab_i[H_HINGE],
            jnt_range,
            tab_i[oj + njnt : oj + 2 * njnt],
            tab_i[oj + 2 * njnt : oj + 3 * njnt],
            qpos,
            v_adr,
            sign,
            ball_axis,
            work_f[0:nv],
            out_joint[2],
        )
