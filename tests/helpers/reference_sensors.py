"""Independent NumPy references for the sensor kernels and a MuJoCo -> PhysicsState harness.

The references restate docs/sensors/contact.md#force, docs/sensors/imu.md#each-step literally (plain
loops, a shifting newest-first history list, no counting sort, no circular ring), so they share no
code with the kernels. The harness converts MuJoCo data into a ``PhysicsState`` with MuJoCo's own
API (``mj_objectVelocity`` / ``mj_objectAcceleration`` about the body inertial frame,
``mj_contactForce``), so MuJoCo sensors can serve as the oracle.
"""

from __future__ import annotations

import numpy as np

from runtime.sensors.state import PhysicsState, make_physics_state

f32 = np.float32


def quat_to_matrix(q):
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def quat_mul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def gf_round_trip(q):
    """Quaternion -> matrix -> quaternion with USD's own Gf (the sign-rule oracle)."""
    from pxr import Gf

    r = quat_to_matrix(q)
    # USD matrices are row-vector: M = R^T.
    m = Gf.Matrix4d(
        r[0, 0],
        r[1, 0],
        r[2, 0],
        0.0,
        r[0, 1],
        r[1, 1],
        r[2, 1],
        0.0,
        r[0, 2],
        r[1, 2],
        r[2, 2],
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
    )
    quat = m.ExtractRotationQuat()
    return np.array([quat.GetReal(), *quat.GetImaginary()])


def contact_reference(
    body_positions,
    body_orientations,
    sensor_body,
    sensor_offset,
    radius,
    fmin,
    fmax,
    contact_body0,
    contact_body1,
    contact_positions,
    contact_impulses,
    contact_dts,
    dt,
):
    """Spec 3.3 for one sensor; returns (value, in_contact, number_of_contacts)."""
    p_s = body_positions[sensor_body] + quat_to_matrix(body_orientations[sensor_body]) @ (
        sensor_offset
    )
    mine = [
        c
        for c in range(len(contact_body0))
        if contact_body0[c] == sensor_body or contact_body1[c] == sensor_body
    ]
    if not mine:
        return 0.0, False, 0
    total = np.zeros(3)
    dtc = dt
    for c in mine:
        if radius > 0 and np.linalg.norm(p_s - contact_positions[c]) >= radius:
            continue
        j = contact_impulses[c].copy()
        if contact_body1[c] == sensor_body and contact_body0[c] != sensor_body:
            j = -j
        total += j
        if contact_dts is not None and contact_dts[c] > 0:
            dtc = contact_dts[c]
    if np.linalg.norm(total) <= 0:
        return 0.0, False, len(mine)
    if dtc <= 0:
        dtc = dt if dt > 0 else 1.0 / 60.0
    force = float(f32(np.linalg.norm(total) / dtc))
    force = min(force, float(f32(fmax)))
    if force < float(f32(fmin)):
        return 0.0, False, len(mine)
    return force, True, len(mine)


class ImuIsaacReference:
    """Spec 4.3/4.4 for one IMU with a newest-first Python list as the history."""

    def __init__(self, widths, offset_q=(1.0, 0.0, 0.0, 0.0)):
        self.nl, self.nw, self.nq = (max(int(w), 1) for w in widths)
        self.size = max(2 * max(self.nl, self.nw, self.nq), 20)
        self.offset_q = np.asarray(offset_q, float)
        fill = (f32(0), np.zeros(3, f32), np.zeros(3, f32), np.array([1, 0, 0, 0], f32))
        self.raw = [fill] * self.size

    def step(self, t, v_world, w_world, q_body, g_up):
        q_s = quat_mul(q_body, self.offset_q)
        r = quat_to_matrix(q_s)
        v = (r.T @ v_world).astype(f32)
        w = (r.T @ w_world).astype(f32)
        g_s = (r.T @ g_up).astype(f32)
        q = gf_round_trip(q_s).astype(f32)
        self.raw = [(f32(t), v, w, q)] + self.raw[:-1]
        w_sum = np.zeros(3, f32)
        for i in range(self.nw):
            w_sum = (w_sum + self.raw[i][2]).astype(f32)
        w_out = (w_sum / f32(self.nw)).astype(f32)
        a_sum = np.zeros(3, f32)
        for i in range(self.nl):
            d_t = f32(self.raw[i][0] - self.raw[i + self.nl][0])
            if d_t > 1e-10:
                a_sum = (a_sum + ((self.raw[i][1] - self.raw[i + self.nl][1]) / d_t)).astype(f32)
        a_out = (a_sum / f32(self.nl)).astype(f32)
        q_sum = np.zeros(4, f32)
        for i in range(self.nq):
            q_sum = (q_sum + self.raw[i][3]).astype(f32)
        q_sum = (q_sum * (f32(1) / f32(self.nq))).astype(f32)
        norm = f32(np.sqrt(np.sum(q_sum * q_sum)))
        q_out = (q_sum / norm).astype(f32) if norm > 0 else self.raw[0][3]
        return a_out, w_out, q_out, g_s


def imu_physical_reference(q_body, com_local, offset_p, offset_q, a_com, alpha, w, gravity):
    """Specific force and gyro of a point of a rigid body (world inputs, sensor outputs)."""
    r_b = quat_to_matrix(q_body)
    r = r_b @ (np.asarray(offset_p) - np.asarray(com_local))
    a_point = a_com + np.cross(alpha, r) + np.cross(w, np.cross(w, r))
    r_s = quat_to_matrix(quat_mul(q_body, offset_q))
    return r_s.T @ (a_point - gravity), r_s.T @ w


class MujocoHarness:
    """Build ``PhysicsState`` objects from a MuJoCo model.

    Args:
        model, data: MuJoCo model and data.
        bodies: mapping MuJoCo body name -> USD body path (state order = mapping order);
            the world body (id 0) may be mapped to a static collider path with key "world".
        dofs: joint names whose qpos/qvel/effort form the DOF arrays (hinge/slide only).
        with_accelerations: supply body accelerations (else None: finite differences).
    """

    def __init__(self, model, data, bodies, dofs=(), with_accelerations=False):
        import mujoco

        self.mj = mujoco
        self.model = model
        self.data = data
        self.paths = tuple(bodies.values())
        self.ids = [
            0 if n == "world" else mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n)
            for n in bodies
        ]
        self.index_of_body = {b: i for i, b in enumerate(self.ids)}
        self.dof_adr = []
        self.qpos_adr = []
        for name in dofs:
            j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
            self.dof_adr.append(model.jnt_dofadr[j])
            self.qpos_adr.append(model.jnt_qposadr[j])
        self.with_accelerations = with_accelerations
        self.step_count = 0

    def step(self):
        self.mj.mj_step(self.model, self.data)
        self.step_count += 1
        return self.state()

    def state(self) -> PhysicsState:
        mj, m, d = self.mj, self.model, self.data
        mj.mj_forward(m, d)
        mj.mj_rnePostConstraint(m, d)
        n = len(self.ids)
        pos = np.zeros((n, 3))
        quat = np.zeros((n, 4))
        com = np.zeros((n, 3))
        lin = np.zeros((n, 3))
        ang = np.zeros((n, 3))
        lacc = np.zeros((n, 3))
        aacc = np.zeros((n, 3))
        res = np.zeros(6)
        for i, b in enumerate(self.ids):
            pos[i] = d.xpos[b]
            quat[i] = d.xquat[b]
            com[i] = m.body_ipos[b]
            if b == 0:
                quat[i] = (1, 0, 0, 0)
                continue
            mj.mj_objectVelocity(m, d, mj.mjtObj.mjOBJ_BODY, b, res, 0)
            ang[i], lin[i] = res[:3], res[3:]
            mj.mj_objectAcceleration(m, d, mj.mjtObj.mjOBJ_BODY, b, res, 0)
            # cacc carries the -gravity offset of the world body: remove it.
            aacc[i], lacc[i] = res[:3], res[3:] + m.opt.gravity
        b0, b1, cp, cn, ci = [], [], [], [], []
        force = np.zeros(6)
        for c in range(d.ncon):
            con = d.contact[c]
            g1, g2 = m.geom_bodyid[con.geom1], m.geom_bodyid[con.geom2]
            i1 = self.index_of_body.get(int(g1), -1)
            i2 = self.index_of_body.get(int(g2), -1)
            mj.mj_contactForce(m, d, c, force)
            frame = con.frame.reshape(3, 3)
            f_on_2 = frame.T @ force[:3]  # MuJoCo: force on geom2, normal geom1 -> geom2
            normal = frame[0].copy()
            if i2 >= 0:
                b0.append(i2), b1.append(i1), cn.append(normal), ci.append(f_on_2 * m.opt.timestep)
            elif i1 >= 0:
                b0.append(i1), b1.append(-1), cn.append(-normal)
                ci.append(-f_on_2 * m.opt.timestep)
            else:
                continue
            cp.append(con.pos.copy())
        # Joint effort = drive + joint-limit forces through the DOF (contacts on the links
        # are not part of it, docs/sensors/joint-state-effort.md#effort).
        effort = d.qfrc_actuator.copy()
        limit = mj.mjtConstraint.mjCNSTR_LIMIT_JOINT
        for row in range(d.nefc):
            if d.efc_type[row] == limit:
                dof = m.jnt_dofadr[d.efc_id[row]]
                effort[dof] += d.efc_J.reshape(d.nefc, m.nv)[row, dof] * d.efc_force[row]
        return make_physics_state(
            self.paths,
            pos,
            quat,
            lin,
            ang,
            body_com_local=com,
            body_linear_accelerations=lacc if self.with_accelerations else None,
            body_angular_accelerations=aacc if self.with_accelerations else None,
            contact_body0=np.array(b0, np.int64),
            contact_body1=np.array(b1, np.int64),
            contact_positions=np.array(cp).reshape(-1, 3),
            contact_normals=np.array(cn).reshape(-1, 3),
            contact_impulses=np.array(ci).reshape(-1, 3),
            joint_positions=np.array([d.qpos[a] for a in self.qpos_adr]),
            joint_velocities=np.array([d.qvel[a] for a in self.dof_adr]),
            joint_efforts=np.array([effort[a] for a in self.dof_adr]),
            dt=m.opt.timestep,
            time=self.step_count * m.opt.timestep,
            step=self.step_count,
            gravity=m.opt.gravity.copy(),
        )
