"""Numba kernels of the lab sensors (contact sums, IMU, ray frames).

Kernels trust their inputs: shapes, dtypes and index ranges are checked by the sensor
classes when they are built. Quaternions (w, x, y, z).
"""

from __future__ import annotations

import math

import numpy as np

from runtime._jit import jit

__all__ = ["contact_forces_kernel", "imu_kernel", "ray_hits_kernel", "ray_world_kernel"]


@jit(inline=True)
def _rotate(q: np.ndarray, v0: float, v1: float, v2: float, sign: float) -> tuple:
    """Rotate (v0, v1, v2) by q (sign 1) or by its inverse (sign -1)."""
    w = q[0]
    x = sign * q[1]
    y = sign * q[2]
    z = sign * q[3]
    t0 = 2.0 * (y * v2 - z * v1)
    t1 = 2.0 * (z * v0 - x * v2)
    t2 = 2.0 * (x * v1 - y * v0)
    return (
        v0 + w * t0 + (y * t2 - z * t1),
        v1 + w * t1 + (z * t0 - x * t2),
        v2 + w * t2 + (x * t1 - y * t0),
    )


@jit
def contact_forces_kernel(
    contact_geom: np.ndarray,
    contact_efc_address: np.ndarray,
    contact_dim: np.ndarray,
    contact_frame: np.ndarray,
    contact_friction: np.ndarray,
    contact_pos: np.ndarray,
    efc_force: np.ndarray,
    pyramidal: bool,
    geom_entity: np.ndarray,
    sensor_slot: np.ndarray,
    filter_slot: np.ndarray,
    out_net: np.ndarray,
    out_matrix: np.ndarray,
    out_friction: np.ndarray,
    out_pos_sum: np.ndarray,
    out_count: np.ndarray,
) -> None:
    """Sum MuJoCo's contact forces per (sensor body, partner) pair, normal and friction apart.

    The force of contact c (``mj_contactForce``'s decoding of ``efc_force``: elliptic cones
    read as is, pyramidal cones summed / differenced with the friction coefficients) acts
    from geom1 on geom2 in the contact frame (rows: normal, tangent 1, tangent 2); the body
    of geom2 receives it, the body of geom1 its opposite.

    Args:
        contact_geom: (C, 2) geom ids, int32.
        contact_efc_address: (C,) first constraint row or -1, int32.
        contact_dim: (C,) contact dimension (1, 3, 4, 6), int32.
        contact_frame: (C, 9) contact frame rows, world, float64.
        contact_friction: (C, 5) friction coefficients, float64.
        contact_pos: (C, 3) contact points [m], world, float64.
        efc_force: (nefc,) constraint forces, float64.
        pyramidal: the model uses pyramidal friction cones.
        geom_entity: (ngeom,) entity per geom or -1, int64.
        sensor_slot: (E,) sensor body slot per entity or -1, int64.
        filter_slot: (E,) filter partner slot per entity or -1, int64.
        out_net: (B, 3) summed normal forces [N], world (written).
        out_matrix: (B, M, 3) normal forces per filter partner [N] (written).
        out_friction: (B, M, 3) friction forces per filter partner [N] (written).
        out_pos_sum: (B, M, 3) sum of contact points per pair [m] (written).
        out_count: (B, M) contacts per pair, float64 (written).
    """
    out_net[:] = 0.0
    out_matrix[:] = 0.0
    out_friction[:] = 0.0
    out_pos_sum[:] = 0.0
    out_count[:] = 0.0
    for c in range(contact_geom.shape[0]):
        e1 = geom_entity[contact_geom[c, 0]]
        e2 = geom_entity[contact_geom[c, 1]]
        s1 = sensor_slot[e1] if e1 >= 0 else -1
        s2 = sensor_slot[e2] if e2 >= 0 else -1
        if s1 < 0 and s2 < 0:
            continue
        adr = contact_efc_address[c]
        dim = contact_dim[c]
        f0 = 0.0
        f1 = 0.0
        f2 = 0.0
        if adr >= 0:
            if pyramidal and dim > 1:
                for k in range(2 * (dim - 1)):
                    f0 += efc_force[adr + k]
                f1 = (efc_force[adr] - efc_force[adr + 1]) * contact_friction[c, 0]
                f2 = (efc_force[adr + 2] - efc_force[adr + 3]) * contact_friction[c, 1]
            else:
                f0 = efc_force[adr]
                if dim > 1:
                    f1 = efc_force[adr + 1]
                    f2 = efc_force[adr + 2]
        for side in range(2):
            slot = s2 if side == 0 else s1
            if slot < 0:
                continue
            sign = 1.0 if side == 0 else -1.0
            other = e1 if side == 0 else e2
            m = filter_slot[other] if other >= 0 else -1
            for k in range(3):
                normal = sign * f0 * contact_frame[c, k]
                out_net[slot, k] += normal
                if m >= 0:
                    out_matrix[slot, m, k] += normal
                    out_friction[slot, m, k] += sign * (
                        f1 * contact_frame[c, 3 + k] + f2 * contact_frame[c, 6 + k]
                    )
                    out_pos_sum[slot, m, k] += contact_pos[c, k]
            if m >= 0:
                out_count[slot, m] += 1.0


@jit
def imu_kernel(
    env: int,
    body: int,
    root: int,
    offset_pos: np.ndarray,
    offset_rot: np.ndarray,
    xpos: np.ndarray,
    xquat: np.ndarray,
    cvel: np.ndarray,
    cacc: np.ndarray,
    subtree_com: np.ndarray,
    gravity: np.ndarray,
    gravity_bias: np.ndarray,
    out_pos: np.ndarray,
    out_quat: np.ndarray,
    out_gravity: np.ndarray,
    out_lin_vel: np.ndarray,
    out_ang_vel: np.ndarray,
    out_lin_acc: np.ndarray,
    out_ang_acc: np.ndarray,
) -> None:
    """One world's IMU reading from MuJoCo's body velocities and accelerations.

    ``cvel`` / ``cacc`` (MuJoCo: rotation then translation, world axes, translation taken at
    the tree's ``subtree_com``) are shifted to the sensor point; the linear acceleration is
    the classical one (``+ w x v``); MuJoCo's ``cacc`` carries ``-gravity``, which is added
    back before ``gravity_bias``.

    Args:
        env: row of the outputs to write.
        body: MuJoCo body id.
        root: the body's tree root id.
        offset_pos: (3,) sensor position in the body frame [m].
        offset_rot: (4,) sensor orientation in the body frame.
        xpos: MuJoCo's ``xpos`` (nbody, 3) [m], world.
        xquat: MuJoCo's ``xquat`` (nbody, 4).
        cvel: MuJoCo's ``cvel`` (nbody, 6).
        cacc: MuJoCo's ``cacc`` (nbody, 6).
        subtree_com: MuJoCo's ``subtree_com`` (nbody, 3) [m].
        gravity: (3,) model gravity [m/s^2], world.
        gravity_bias: (3,) added to the linear acceleration [m/s^2], world.
        out_pos: (N, 3) sensor position [m] (row ``env`` written).
        out_quat: (N, 4) sensor orientation (row ``env`` written).
        out_gravity: (N, 3) unit gravity, sensor frame (row ``env`` written).
        out_lin_vel: (N, 3) [m/s], sensor frame (row ``env`` written).
        out_ang_vel: (N, 3) [rad/s], sensor frame (row ``env`` written).
        out_lin_acc: (N, 3) [m/s^2], sensor frame (row ``env`` written).
        out_ang_acc: (N, 3) [rad/s^2], sensor frame (row ``env`` written).
    """
    q = xquat[body]
    ox, oy, oz = _rotate(q, offset_pos[0], offset_pos[1], offset_pos[2], 1.0)
    px = xpos[body, 0] + ox
    py = xpos[body, 1] + oy
    pz = xpos[body, 2] + oz
    # sensor orientation q * offset_rot
    a0, a1, a2, a3 = q[0], q[1], q[2], q[3]
    b0, b1, b2, b3 = offset_rot[0], offset_rot[1], offset_rot[2], offset_rot[3]
    s = out_quat[env]
    s[0] = a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3
    s[1] = a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2
    s[2] = a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1
    s[3] = a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0
    out_pos[env, 0] = px
    out_pos[env, 1] = py
    out_pos[env, 2] = pz
    rx = px - subtree_com[root, 0]
    ry = py - subtree_com[root, 1]
    rz = pz - subtree_com[root, 2]
    wx, wy, wz = cvel[body, 0], cvel[body, 1], cvel[body, 2]
    vx = cvel[body, 3] + (wy * rz - wz * ry)
    vy = cvel[body, 4] + (wz * rx - wx * rz)
    vz = cvel[body, 5] + (wx * ry - wy * rx)
    ax_, ay_, az_ = cacc[body, 0], cacc[body, 1], cacc[body, 2]
    lx = cacc[body, 3] + (ay_ * rz - az_ * ry) + (wy * vz - wz * vy)
    ly = cacc[body, 4] + (az_ * rx - ax_ * rz) + (wz * vx - wx * vz)
    lz = cacc[body, 5] + (ax_ * ry - ay_ * rx) + (wx * vy - wy * vx)
    lx += gravity[0] + gravity_bias[0]
    ly += gravity[1] + gravity_bias[1]
    lz += gravity[2] + gravity_bias[2]
    g = math.sqrt(gravity[0] ** 2 + gravity[1] ** 2 + gravity[2] ** 2)
    if g > 0.0:
        gx, gy, gz = gravity[0] / g, gravity[1] / g, gravity[2] / g
    else:
        gx, gy, gz = 0.0, 0.0, -1.0
    r = _rotate(s, gx, gy, gz, -1.0)
    out_gravity[env, 0], out_gravity[env, 1], out_gravity[env, 2] = r
    r = _rotate(s, vx, vy, vz, -1.0)
    out_lin_vel[env, 0], out_lin_vel[env, 1], out_lin_vel[env, 2] = r
    r = _rotate(s, wx, wy, wz, -1.0)
    out_ang_vel[env, 0], out_ang_vel[env, 1], out_ang_vel[env, 2] = r
    r = _rotate(s, lx, ly, lz, -1.0)
    out_lin_acc[env, 0], out_lin_acc[env, 1], out_lin_acc[env, 2] = r
    r = _rotate(s, ax_, ay_, az_, -1.0)
    out_ang_acc[env, 0], out_ang_acc[env, 1], out_ang_acc[env, 2] = r


@jit
def ray_world_kernel(
    position: np.ndarray,
    orientation: np.ndarray,
    alignment: int,
    ray_starts: np.ndarray,
    ray_directions: np.ndarray,
    out_origins: np.ndarray,
    out_directions: np.ndarray,
) -> None:
    """World rays of a pattern in one of three alignments.

    0 base (full rotation), 1 yaw (starts turned by the heading only, directions kept),
    2 world (starts translated only, directions kept).

    Args:
        position: (3,) sensor position [m], world.
        orientation: (4,) sensor orientation, world.
        alignment: 0, 1 or 2 as above.
        ray_starts: (R, 3) [m], sensor frame.
        ray_directions: (R, 3) unit, sensor frame.
        out_origins: (R, 3) [m], world (written).
        out_directions: (R, 3) unit, world (written).
    """
    q = np.empty(4)
    if alignment == 0:
        q[:] = orientation
    elif alignment == 1:
        w, x, y, z = orientation[0], orientation[1], orientation[2], orientation[3]
        yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
        q[0] = math.cos(0.5 * yaw)
        q[1] = 0.0
        q[2] = 0.0
        q[3] = math.sin(0.5 * yaw)
    else:
        q[0] = 1.0
        q[1] = 0.0
        q[2] = 0.0
        q[3] = 0.0
    for i in range(ray_starts.shape[0]):
        r = _rotate(q, ray_starts[i, 0], ray_starts[i, 1], ray_starts[i, 2], 1.0)
        out_origins[i, 0] = position[0] + r[0]
        out_origins[i, 1] = position[1] + r[1]
        out_origins[i, 2] = position[2] + r[2]
        if alignment == 0:
            r = _rotate(q, ray_directions[i, 0], ray_directions[i, 1], ray_directions[i, 2], 1.0)
            out_directions[i, 0], out_directions[i, 1], out_directions[i, 2] = r
        else:
            out_directions[i, 0] = ray_directions[i, 0]
            out_directions[i, 1] = ray_directions[i, 1]
            out_directions[i, 2] = ray_directions[i, 2]


@jit
def ray_hits_kernel(
    env: int,
    origins: np.ndarray,
    directions: np.ndarray,
    distances: np.ndarray,
    z_drift: float,
    out_hits: np.ndarray,
) -> None:
    """Hit points ``origin + distance * direction`` (misses: inf), z shifted by ``z_drift``.

    Args:
        env: row of ``out_hits`` to write.
        origins: (R, 3) [m], world.
        directions: (R, 3) unit, world.
        distances: (R,) [m] or inf.
        z_drift: added to every hit's z [m].
        out_hits: (N, R, 3) [m], world (row ``env`` written).
    """
    for i in range(origins.shape[0]):
        d = distances[i]
        if math.isinf(d):
            out_hits[env, i, 0] = math.inf
            out_hits[env, i, 1] = math.inf
            out_hits[env, i, 2] = math.inf
        else:
            out_hits[env, i, 0] = origins[i, 0] + d * directions[i, 0]
            out_hits[env, i, 1] = origins[i, 1] + d * directions[i, 1]
            out_hits[env, i, 2] = origins[i, 2] + d * directions[i, 2] + z_drift
