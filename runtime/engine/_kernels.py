"""Numba kernels turning MuJoCo data arrays into :class:`PhysicsState` arrays.

All inputs are C-contiguous float64 (indices int64) copies or views of ``MjModel`` /
``MjData`` arrays; outputs are preallocated and passed last. Kernels trust their inputs
(validated by :class:`runtime.engine.mujoco_engine.MujocoEngine` at construction).
"""

from __future__ import annotations

import math

import numpy as np

from runtime._jit import jit

__all__ = [
    "body_acceleration_kernel",
    "body_state_kernel",
    "contact_kernel",
    "joint_constraint_force_kernel",
    "joint_state_kernel",
]


@jit
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


@jit
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


@jit
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
    f = np.zeros(3)
    for c in range(geom.shape[0]):
        adr = efc_address[c]
        if exclude[c] != 0 or adr < 0:
            continue
        b1 = geom_body_index[geom[c, 0]]
        b2 = geom_body_index[geom[c, 1]]
        if b1 < 0 and b2 < 0:
            continue
        d = dim[c]
        f[0] = 0.0
        f[1] = 0.0
        f[2] = 0.0
        if d == 1:
            f[0] = efc_force[adr]
        elif pyramidal:
            for j in range(2 * (d - 1)):
                f[0] += efc_force[adr + j]
            for j in range(min(d - 1, 2)):
                f[j + 1] = (efc_force[adr + 2 * j] - efc_force[adr + 2 * j + 1]) * friction[c, j]
        else:
            for j in range(min(d, 3)):
                f[j] = efc_force[adr + j]
        sign = 1.0
        if b2 < 0:
            sign = -1.0
            b1, b2 = b2, b1
        for a in range(3):
            world = frame[c, a] * f[0] + frame[c, 3 + a] * f[1] + frame[c, 6 + a] * f[2]
            out_impulse[n, a] = sign * world * dt
            out_normal[n, a] = sign * frame[c, a]
            out_pos[n, a] = pos[c, a]
        out_body0[n] = b2
        out_body1[n] = b1
        n += 1
    out_count[0] = n


@jit
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


@jit
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
