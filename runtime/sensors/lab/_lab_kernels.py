"""Numba kernels of the lab sensors (contact sums and air times, IMU, ray frames, images).

Kernels trust their inputs: shapes, dtypes and index ranges are checked by the sensor
classes when they are built. Quaternions (w, x, y, z).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runtime._compile.jit import JIT_DISABLED, jit
from runtime.rays.kernels import box_scene_hit_kernel, scene_cast_kernel

__all__ = [
    "camera_images_kernel",
    "contact_update_kernel",
    "history_push_kernel",
    "imu_kernel",
    "ray_caster_boxes_at_kernel",
    "ray_caster_boxes_kernel",
    "ray_caster_scene_kernel",
    "ray_frame_kernel",
    "ray_hits_kernel",
]


@jit(inline=True)
def _rotate(q: Any, v0: float, v1: float, v2: float, sign: float) -> tuple:
    """Rotate (v0, v1, v2) by q (array or 4-tuple; sign 1) or by its inverse (sign -1)."""
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
def contact_update_kernel(
    env: int,
    elapsed: float,
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
    threshold: float,
    track_air_time: bool,
    scratch_count: np.ndarray,
    out_net: np.ndarray,
    out_matrix: np.ndarray,
    out_friction: np.ndarray,
    out_points: np.ndarray,
    out_air_times: np.ndarray,
) -> None:
    """One world's contact reading: forces per (sensor body, partner) pair and air times.

    The force of contact c (``mj_contactForce``'s decoding of ``efc_force``: elliptic cones
    read as is, pyramidal cones summed / differenced with the friction coefficients) acts
    from geom1 on geom2 in the contact frame (rows: normal, tangent 1, tangent 2); the body
    of geom2 receives it, the body of geom1 its opposite. Normal parts go to ``out_net``
    (every partner) and ``out_matrix`` (filter partners), friction parts to
    ``out_friction``; ``out_points`` gets the mean contact point per pair (NaN without
    contact). Air times follow Isaac Lab (in contact: ``|net| > threshold``).

    Args:
        env: row of the outputs to write.
        elapsed: time since the world's last update [s].
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
        threshold: contact force threshold [N].
        track_air_time: update the air / contact times.
        scratch_count: (B, M) float64 scratch (contacts per pair).
        out_net: (N, B, 3) summed normal forces [N], world (row ``env`` written).
        out_matrix: (N, B, M, 3) normal forces per filter partner [N] (row written).
        out_friction: (N, B, M, 3) friction forces per filter partner [N] (row written).
        out_points: (N, B, M, 3) mean contact points [m] (row written).
        out_air_times: (4, N, B) last air, current air, last contact, current contact
            times [s] (column ``env`` updated when ``track_air_time``).
    """
    net = out_net[env]
    matrix = out_matrix[env]
    friction = out_friction[env]
    points = out_points[env]
    net[:] = 0.0
    matrix[:] = 0.0
    friction[:] = 0.0
    points[:] = 0.0
    scratch_count[:] = 0.0
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
                net[slot, k] += normal
                if m >= 0:
                    matrix[slot, m, k] += normal
                    friction[slot, m, k] += sign * (
                        f1 * contact_frame[c, 3 + k] + f2 * contact_frame[c, 6 + k]
                    )
                    points[slot, m, k] += contact_pos[c, k]
            if m >= 0:
                scratch_count[slot, m] += 1.0
    for b in range(scratch_count.shape[0]):
        for m in range(scratch_count.shape[1]):
            count = scratch_count[b, m]
            for k in range(3):
                points[b, m, k] = points[b, m, k] / count if count > 0.0 else math.nan
    if not track_air_time:
        return
    for b in range(net.shape[0]):
        in_contact = math.sqrt(net[b, 0] ** 2 + net[b, 1] ** 2 + net[b, 2] ** 2) > threshold
        air = out_air_times[1, env, b]
        touch = out_air_times[3, env, b]
        if in_contact:
            if air > 0.0:
                out_air_times[0, env, b] = air + elapsed
            out_air_times[1, env, b] = 0.0
            out_air_times[3, env, b] = touch + elapsed
        else:
            if touch > 0.0:
                out_air_times[2, env, b] = touch + elapsed
            out_air_times[1, env, b] = air + elapsed
            out_air_times[3, env, b] = 0.0


@jit
def history_push_kernel(env: int, values: np.ndarray, out_history: np.ndarray) -> None:
    """Shift world ``env``'s history one entry back and store its values first.

    Args:
        env: the world.
        values: (N, K) the field, flattened per world.
        out_history: (N, H, K) its history, index 0 the latest (row ``env`` updated).
    """
    history = out_history[env]
    for h in range(history.shape[0] - 1, 0, -1):
        history[h, :] = history[h - 1, :]
    history[0, :] = values[env]


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
def ray_frame_kernel(
    env: int,
    body_position: np.ndarray,
    body_orientation: np.ndarray,
    offset_pos: np.ndarray,
    offset_rot: np.ndarray,
    drift: np.ndarray,
    alignment: int,
    ray_starts: np.ndarray,
    ray_directions: np.ndarray,
    out_pos: np.ndarray,
    out_quat: np.ndarray,
    out_origins: np.ndarray,
    out_directions: np.ndarray,
) -> None:
    """A ray sensor's pose and its pattern's world rays.

    The sensor frame is the body frame moved by the offset, then by ``drift[:3]`` (world)
    and ``drift[3:5]`` (x / y in the aligned frame, applied in the world xy plane);
    ``drift[5]`` (the hits' z drift) is not read here.
    Alignment 0 base (full rotation), 1 yaw (starts turned by the heading only, directions
    kept), 2 world (starts translated only, directions kept).

    Args:
        env: row of ``out_pos`` / ``out_quat`` to write.
        body_position: (3,) body origin [m], world.
        body_orientation: (4,) body orientation, world.
        offset_pos: (3,) sensor position in the body frame [m].
        offset_rot: (4,) sensor orientation in the body frame.
        drift: (6,) world drift x y z [m], ray-start drift x y [m], hit z drift [m].
        alignment: 0, 1 or 2 as above.
        ray_starts: (R, 3) [m], sensor frame.
        ray_directions: (R, 3) unit, sensor frame.
        out_pos: (N, 3) sensor position [m], world (row ``env`` written).
        out_quat: (N, 4) sensor orientation, world (row ``env`` written).
        out_origins: (R, 3) [m], world (written).
        out_directions: (R, 3) unit, world (written).
    """
    px, py, pz, turn = _sensor_pose(
        env, body_position, body_orientation, offset_pos, offset_rot, drift, alignment,
        out_pos, out_quat,
    )  # fmt: skip
    for i in range(ray_starts.shape[0]):
        ox, oy, oz, dx, dy, dz = _pattern_ray(
            turn, px, py, pz, alignment, ray_starts, ray_directions, i
        )
        out_origins[i, 0] = ox
        out_origins[i, 1] = oy
        out_origins[i, 2] = oz
        out_directions[i, 0] = dx
        out_directions[i, 1] = dy
        out_directions[i, 2] = dz


@jit(inline=True)
def _sensor_pose(
    env, body_position, body_orientation, offset_pos, offset_rot, drift, alignment, out_pos,
    out_quat,
):  # fmt: skip
    """Sensor pose of :func:`ray_frame_kernel` (rows ``env`` written), its ray origin and turn.

    Returns:
        ``(px, py, pz, turn)``: the rays' frame origin [m], world, and the quaternion that
        turns the pattern's starts (4-tuple).
    """
    q = body_orientation
    ox, oy, oz = _rotate(q, offset_pos[0], offset_pos[1], offset_pos[2], 1.0)
    a0, a1, a2, a3 = q[0], q[1], q[2], q[3]
    b0, b1, b2, b3 = offset_rot[0], offset_rot[1], offset_rot[2], offset_rot[3]
    s = out_quat[env]
    s[0] = a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3
    s[1] = a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2
    s[2] = a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1
    s[3] = a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0
    if alignment == 0:
        turn = (s[0], s[1], s[2], s[3])
    elif alignment == 1:
        w, x, y, z = s[0], s[1], s[2], s[3]
        yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
        turn = (math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw))
    else:
        turn = (1.0, 0.0, 0.0, 0.0)
    dx, dy, _ = _rotate(turn, drift[3], drift[4], 0.0, 1.0)
    px = body_position[0] + ox + drift[0] + dx
    py = body_position[1] + oy + drift[1] + dy
    pz = body_position[2] + oz + drift[2]
    out_pos[env, 0] = px
    out_pos[env, 1] = py
    out_pos[env, 2] = pz
    return px, py, pz, turn


@jit(inline=True)
def _pattern_ray(turn, px, py, pz, alignment, ray_starts, ray_directions, i):
    """World origin and direction of pattern ray ``i`` (:func:`ray_frame_kernel`'s)."""
    r = _rotate(turn, ray_starts[i, 0], ray_starts[i, 1], ray_starts[i, 2], 1.0)
    if alignment == 0:
        d = _rotate(turn, ray_directions[i, 0], ray_directions[i, 1], ray_directions[i, 2], 1.0)
    else:
        d = (ray_directions[i, 0], ray_directions[i, 1], ray_directions[i, 2])
    return px + r[0], py + r[1], pz + r[2], d[0], d[1], d[2]


if not JIT_DISABLED:
    from numba import types as _types
    from numba.extending import intrinsic as _intrinsic

    @_intrinsic
    def _float64_at(typingctx, address):
        """The float64 pointer at ``address`` (an integer): an ``MjData`` field's row."""
        if not isinstance(address, _types.Integer):
            return None
        signature = _types.CPointer(_types.float64)(address)

        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

        return signature, codegen

else:  # the kernels run as Python: the callers gather the poses themselves

    def _float64_at(address: int) -> Any:
        raise RuntimeError("pose addresses need the compiled kernels")


@jit(nrt=False)
def ray_caster_boxes_kernel(
    envs,
    body_positions,
    body_orientations,
    offset_pos,
    offset_rot,
    drift,
    alignment,
    ray_starts,
    ray_directions,
    max_distance,
    boxes,
    box_actors,
    out_pos,
    out_quat,
    out_hits,
    out_distances,
    out_hit_ids,
):
    """A ray caster's whole update over a box scene, every due world in one call.

    Per world: the sensor pose and rays (:func:`ray_frame_kernel`), each ray's closest hit
    among the boxes (:func:`runtime.rays.kernels.box_scene_hit_kernel`: the scene cast's
    result), the hit points with the z drift (:func:`ray_hits_kernel`).

    Args:
        envs: the worlds to update, shape (K,), int64.
        body_positions: each world's body origin [m], shape (N, 3), world (rows ``envs``
            read).
        body_orientations: each world's body orientation, shape (N, 4).
        offset_pos: (3,) sensor position in the body frame [m].
        offset_rot: (4,) sensor orientation in the body frame.
        drift: (N, 6) per world: drift x y z [m], ray-start drift x y [m], hit z drift [m].
        alignment: 0 base, 1 yaw, 2 world.
        ray_starts: (R, 3) [m], sensor frame.
        ray_directions: (R, 3) unit, sensor frame.
        max_distance: largest accepted distance [m].
        boxes: the box scene's rows, shape (B, BOX_COLUMNS), float64.
        box_actors: actor of each box, shape (B,), int64.
        out_pos: (N, 3) sensor positions [m] (rows ``envs`` written).
        out_quat: (N, 4) sensor orientations (rows written).
        out_hits: (N, R, 3) hit points [m], inf for misses (rows written).
        out_distances: (N, R) distances [m] or inf (rows written).
        out_hit_ids: (N, R) hit actors or -1, int64 (rows written).
    """
    _ray_caster_boxes(
        envs, envs[:0], body_positions, body_orientations, offset_pos, offset_rot, drift,
        alignment, ray_starts, ray_directions, max_distance, boxes, box_actors, out_pos,
        out_quat, out_hits, out_distances, out_hit_ids,
    )  # fmt: skip


@jit(nrt=False)
def ray_caster_boxes_at_kernel(
    envs,
    pose_addresses,
    body_positions,
    body_orientations,
    offset_pos,
    offset_rot,
    drift,
    alignment,
    ray_starts,
    ray_directions,
    max_distance,
    boxes,
    box_actors,
    out_pos,
    out_quat,
    out_hits,
    out_distances,
    out_hit_ids,
):
    """:func:`ray_caster_boxes_kernel` reading each world's body pose at its address.

    Args:
        envs: the worlds to update, shape (K,), int64.
        pose_addresses: per world, the addresses of its body's position (3 float64) and
            orientation (4 float64) in its ``MjData`` (``xpos[body]``, ``xquat[body]``),
            shape (2 N,), int64: copied into rows ``envs`` of ``body_positions`` /
            ``body_orientations``, then as :func:`ray_caster_boxes_kernel`.
        body_positions: (N, 3) [m] (rows ``envs`` written, then read).
        body_orientations: (N, 4) (the same).
        offset_pos: the other arguments as :func:`ray_caster_boxes_kernel` documents them.
        offset_rot: (4,).
        drift: (N, 6).
        alignment: 0, 1 or 2.
        ray_starts: (R, 3).
        ray_directions: (R, 3).
        max_distance: [m].
        boxes: (B, BOX_COLUMNS).
        box_actors: (B,).
        out_pos: (N, 3).
        out_quat: (N, 4).
        out_hits: (N, R, 3).
        out_distances: (N, R).
        out_hit_ids: (N, R).
    """
    _ray_caster_boxes(
        envs, pose_addresses, body_positions, body_orientations, offset_pos, offset_rot,
        drift, alignment, ray_starts, ray_directions, max_distance, boxes, box_actors,
        out_pos, out_quat, out_hits, out_distances, out_hit_ids,
    )  # fmt: skip


@jit
def ray_caster_scene_kernel(
    envs,
    world_addresses,
    body,
    static,
    scene_rows,
    scene_ids,
    scene_positions,
    scene_orientations,
    body_positions,
    body_orientations,
    offset_pos,
    offset_rot,
    drift,
    alignment,
    ray_starts,
    ray_directions,
    max_distances,
    io_origins,
    io_directions,
    io_distances,
    io_hit_ids,
    io_normals,
    scratch_faces,
    scratch_inside,
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    group_roots,
    group_local_boxes,
    group_body,
    face_groups,
    face_actors,
    face_normals,
    solid_groups,
    solid_kinds,
    solid_positions,
    solid_orientations,
    solid_params,
    solid_plane_ranges,
    planes,
    solid_bounds,
    solid_actors,
    group_solid_ranges,
    group_solid_boxes,
    double_sided,
    io_group_positions,
    io_group_orientations,
    io_world_boxes,
    out_pos,
    out_quat,
    out_hits,
    out_distances,
    out_hit_ids,
):
    """A ray caster's whole update over any Numba ray scene, every due world in one call.

    Per world: the poses of the scene's moving bodies and of the sensor's body read at
    their addresses in the world's ``MjData``, the sensor pose and rays
    (:func:`ray_frame_kernel`), one scene cast
    (:func:`runtime.rays.kernels.scene_cast_kernel`, one thread: what
    :meth:`~runtime.rays.scene.RayScene.cast_trusted` runs) and the hit points
    (:func:`ray_hits_kernel`): the per-call path's numbers bit for bit.

    Args:
        envs: the worlds to update, shape (K,), int64.
        world_addresses: per world, the addresses of its ``MjData``'s ``xpos`` and
            ``xquat`` (row 0), shape (2 N,), int64.
        body: the sensor's MuJoCo body id.
        static: the sensor's body does not move (its pose rows are kept).
        scene_rows: rows of the scene's moving bodies in the scene pose arrays, (M,).
        scene_ids: their MuJoCo body ids, (M,).
        scene_positions: the scene's body positions, (B, 3) (rows ``scene_rows`` written).
        scene_orientations: their orientations, (B, 4) (the same).
        body_positions: (N, 3) the sensor body's position per world (rows written unless
            ``static``).
        body_orientations: (N, 4) (the same).
        offset_pos: (3,) sensor position in the body frame [m].
        offset_rot: (4,) sensor orientation in the body frame.
        drift: (N, 6) per-world drifts (:func:`ray_frame_kernel`, :func:`ray_hits_kernel`).
        alignment: 0 base, 1 yaw, 2 world.
        ray_starts: (R, 3) [m], sensor frame.
        ray_directions: (R, 3) unit, sensor frame.
        max_distances: (R,) [m].
        io_origins: (R, 3) scratch: the world rays' origins (the last world's on return).
        io_directions: (R, 3) scratch: their directions.
        io_distances: (R,) scratch: the cast's distances.
        io_hit_ids: (R,) scratch: its actors.
        io_normals: (R, 3) scratch: its normals.
        scratch_faces: (R,) int64 scratch of the cast.
        scratch_inside: (R,) int64 scratch of the cast.
        wide_nodes: the scene's arrays, as :func:`runtime.rays.kernels.scene_cast_kernel`
            documents them (through ``io_world_boxes``).
        leaf_triangles: (the same).
        leaf_ids: (the same).
        group_roots: (the same).
        group_local_boxes: (the same).
        group_body: (the same).
        face_groups: (the same).
        face_actors: (the same).
        face_normals: (the same).
        solid_groups: (the same).
        solid_kinds: (the same).
        solid_positions: (the same).
        solid_orientations: (the same).
        solid_params: (the same).
        solid_plane_ranges: (the same).
        planes: (the same).
        solid_bounds: (the same).
        solid_actors: (the same).
        group_solid_ranges: (the same).
        group_solid_boxes: (the same).
        double_sided: (the same).
        io_group_positions: (the same).
        io_group_orientations: (the same).
        io_world_boxes: (the same).
        out_pos: (N, 3) sensor positions [m] (rows ``envs`` written).
        out_quat: (N, 4) sensor orientations (rows written).
        out_hits: (N, R, 3) hit points [m], inf for misses (rows written).
        out_distances: (N, R) distances [m] or inf (rows written).
        out_hit_ids: (N, R) hit actors or -1, int64 (rows written).
    """
    for j in range(envs.shape[0]):
        env = envs[j]
        xpos = _float64_at(world_addresses[2 * env])
        xquat = _float64_at(world_addresses[2 * env + 1])
        for k in range(scene_rows.shape[0]):
            row = scene_rows[k]
            b = scene_ids[k]
            for a in range(3):
                scene_positions[row, a] = xpos[3 * b + a]
            for a in range(4):
                scene_orientations[row, a] = xquat[4 * b + a]
        if not static:
            for a in range(3):
                body_positions[env, a] = xpos[3 * body + a]
            for a in range(4):
                body_orientations[env, a] = xquat[4 * body + a]
        px, py, pz, turn = _sensor_pose(
            env, body_positions[env], body_orientations[env], offset_pos, offset_rot,
            drift[env], alignment, out_pos, out_quat,
        )  # fmt: skip
        for i in range(ray_starts.shape[0]):
            ox, oy, oz, dx, dy, dz = _pattern_ray(
                turn, px, py, pz, alignment, ray_starts, ray_directions, i
            )
            io_origins[i, 0] = ox
            io_origins[i, 1] = oy
            io_origins[i, 2] = oz
            io_directions[i, 0] = dx
            io_directions[i, 1] = dy
            io_directions[i, 2] = dz
        scene_cast_kernel(
            wide_nodes, leaf_triangles, leaf_ids, group_roots, group_local_boxes, group_body,
            scene_positions, scene_orientations, face_groups, face_actors, face_normals,
            solid_groups, solid_kinds, solid_positions, solid_orientations, solid_params,
            solid_plane_ranges, planes, solid_bounds, solid_actors, group_solid_ranges,
            group_solid_boxes, io_origins, io_directions, max_distances, double_sided,
            io_group_positions, io_group_orientations, io_world_boxes, scratch_faces,
            scratch_inside, io_distances, io_hit_ids, io_normals, 1,
        )  # fmt: skip
        ray_hits_kernel(
            env, io_origins, io_directions, io_distances, io_hit_ids, drift[env, 5], out_hits,
            out_distances, out_hit_ids,
        )  # fmt: skip


@jit(inline=True)
def _ray_caster_boxes(
    envs,
    pose_addresses,
    body_positions,
    body_orientations,
    offset_pos,
    offset_rot,
    drift,
    alignment,
    ray_starts,
    ray_directions,
    max_distance,
    boxes,
    box_actors,
    out_pos,
    out_quat,
    out_hits,
    out_distances,
    out_hit_ids,
):
    """:func:`ray_caster_boxes_kernel` (``pose_addresses`` flat (2 N,) or empty)."""
    for j in range(envs.shape[0]):
        env = envs[j]
        if pose_addresses.shape[0] > 0:
            position = _float64_at(pose_addresses[2 * env])
            orientation = _float64_at(pose_addresses[2 * env + 1])
            for a in range(3):
                body_positions[env, a] = position[a]
            for a in range(4):
                body_orientations[env, a] = orientation[a]
        px, py, pz, turn = _sensor_pose(
            env, body_positions[env], body_orientations[env], offset_pos, offset_rot,
            drift[env], alignment, out_pos, out_quat,
        )  # fmt: skip
        z_drift = drift[env, 5]
        for i in range(ray_starts.shape[0]):
            ox, oy, oz, dx, dy, dz = _pattern_ray(
                turn, px, py, pz, alignment, ray_starts, ray_directions, i
            )
            t, actor, _, _, _ = box_scene_hit_kernel(
                boxes, box_actors, ox, oy, oz, dx, dy, dz, max_distance
            )
            out_distances[env, i] = t
            out_hit_ids[env, i] = actor
            if math.isinf(t):
                out_hits[env, i, 0] = math.inf
                out_hits[env, i, 1] = math.inf
                out_hits[env, i, 2] = math.inf
            else:
                out_hits[env, i, 0] = ox + t * dx
                out_hits[env, i, 1] = oy + t * dy
                out_hits[env, i, 2] = oz + t * dz + z_drift


@jit
def ray_hits_kernel(
    env: int,
    origins: np.ndarray,
    directions: np.ndarray,
    distances: np.ndarray,
    hit_ids: np.ndarray,
    z_drift: float,
    out_hits: np.ndarray,
    out_distances: np.ndarray,
    out_hit_ids: np.ndarray,
) -> None:
    """Hit points ``origin + distance * direction`` (misses: inf), z shifted by ``z_drift``.

    Args:
        env: row of the outputs to write.
        origins: (R, 3) [m], world.
        directions: (R, 3) unit, world.
        distances: (R,) [m] or inf.
        hit_ids: (R,) hit collider ids or -1, int64.
        z_drift: added to every hit's z [m].
        out_hits: (N, R, 3) [m], world (row ``env`` written).
        out_distances: (N, R) [m] (row ``env`` written).
        out_hit_ids: (N, R) int64 (row ``env`` written).
    """
    for i in range(origins.shape[0]):
        d = distances[i]
        out_distances[env, i] = d
        out_hit_ids[env, i] = hit_ids[i]
        if math.isinf(d):
            out_hits[env, i, 0] = math.inf
            out_hits[env, i, 1] = math.inf
            out_hits[env, i, 2] = math.inf
        else:
            out_hits[env, i, 0] = origins[i, 0] + d * directions[i, 0]
            out_hits[env, i, 1] = origins[i, 1] + d * directions[i, 1]
            out_hits[env, i, 2] = origins[i, 2] + d * directions[i, 2] + z_drift


@jit
def camera_images_kernel(
    env: int,
    distances: np.ndarray,
    normals: np.ndarray,
    forward: np.ndarray,
    max_distance: float,
    clipping: int,
    out_plane: np.ndarray,
    out_camera: np.ndarray,
    out_normals: np.ndarray,
) -> None:
    """Depth images of one world from the pixel rays' distances.

    Args:
        env: row of the outputs to write.
        distances: (P,) distance along each pixel ray [m] or inf.
        normals: (P, 3) unit world normals of the hits.
        forward: (P,) each pixel ray's component along the optical axis.
        max_distance: the sensor's largest distance [m].
        clipping: 0 none (misses inf), 1 max (misses and farther: max_distance),
            2 zero (misses and farther: 0).
        out_plane: (N, P) distance to the image plane [m] (row ``env`` written).
        out_camera: (N, P) distance to the camera [m] (row ``env`` written).
        out_normals: (N, P, 3) normals, misses inf (row ``env`` written).
    """
    for i in range(distances.shape[0]):
        d = distances[i]
        if math.isinf(d):
            plane = math.inf
            for k in range(3):
                out_normals[env, i, k] = math.inf
        else:
            plane = d * forward[i]
            for k in range(3):
                out_normals[env, i, k] = normals[i, k]
        if clipping == 1:
            d = min(d, max_distance)
            plane = min(plane, max_distance)
        elif clipping == 2:
            d = 0.0 if d > max_distance else d
            plane = 0.0 if plane > max_distance else plane
        out_plane[env, i] = plane
        out_camera[env, i] = d
