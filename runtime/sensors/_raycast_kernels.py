"""Numba kernels of the raycast sensor (sensors.md §5.3), all rays of all sensors per call.

Rays of several sensors are concatenated; ``ray_sensor[i]`` names the sensor of ray ``i``.
Kernels trust their inputs (validated by :mod:`runtime.sensors.raycast`).
"""

from __future__ import annotations

import math

from runtime._jit import jit

__all__ = ["raycast_rays_kernel", "raycast_outputs_kernel", "raycast_window_active_kernel"]


@jit
def raycast_window_active_kernel(ray_sensor, ray_offsets, sensor_window, out_active):
    """Which rays fire this step (sensors.md §5.3 step 3, float32-exact comparisons).

    Args:
        ray_sensor: sensor index of each ray, shape (R,), int64.
        ray_offsets: ``rayTimeOffsets`` [s] (float32 values held in float64), shape (R,).
        sensor_window: per sensor ``[state, s, e, wrapped]`` as float64, shape (S, 4), where
            state is 0 (sensor not evaluated), 1 (evaluated, no windowing: every ray fires)
            or 2 (windowed with window start ``s``, end ``e``, ``wrapped`` 0/1; ``s``/``e``
            are float32 values).
        out_active: 1 when the ray fires, else 0, shape (R,), int64 (written).
    """
    for i in range(ray_sensor.shape[0]):
        k = ray_sensor[i]
        state = sensor_window[k, 0]
        if state == 0.0:
            out_active[i] = 0
        elif state == 1.0:
            out_active[i] = 1
        else:
            tau = ray_offsets[i]
            s = sensor_window[k, 1]
            e = sensor_window[k, 2]
            if sensor_window[k, 3] != 0.0:
                fire = tau >= s or tau < e
            else:
                fire = tau >= s and tau < e
            out_active[i] = 1 if fire else 0


@jit
def _rotate_kernel(qw, qx, qy, qz, vx, vy, vz):
    """Rotate (vx, vy, vz) by the unit quaternion (qw, qx, qy, qz)."""
    cx = qy * vz - qz * vy + qw * vx
    cy = qz * vx - qx * vz + qw * vy
    cz = qx * vy - qy * vx + qw * vz
    return (
        vx + 2.0 * (qy * cz - qz * cy),
        vy + 2.0 * (qz * cx - qx * cz),
        vz + 2.0 * (qx * cy - qy * cx),
    )


@jit
def raycast_rays_kernel(
    ray_sensor,
    ray_origins_local,
    ray_directions_local,
    ray_offsets,
    active,
    sensor_positions,
    sensor_orientations,
    sensor_linear_velocities,
    sensor_angular_velocities,
    sensor_ranges,
    out_origins,
    out_directions,
    out_starts,
    out_max_distances,
    out_ray_positions,
    out_ray_orientations,
):
    """World rays of every firing ray, with the pose extrapolation of sensors.md §5.3.

    Args:
        ray_sensor: sensor index of each ray, shape (R,), int64.
        ray_origins_local: ``rayOrigins`` [stage units], shape (R, 3), float64, sensor frame.
        ray_directions_local: unit ray directions, shape (R, 3), float64, sensor frame.
        ray_offsets: time offsets [s], shape (R,), float64 (0 when unauthored).
        active: 1 for firing rays, shape (R,), int64.
        sensor_positions: sensor world position p [stage units], shape (S, 3), float64.
        sensor_orientations: sensor world orientation q (w, x, y, z), shape (S, 4), float64.
        sensor_linear_velocities: v used for extrapolation [stage units/s], shape (S, 3),
            float64, world (zeros when not extrapolating).
        sensor_angular_velocities: w [rad/s], shape (S, 3), float64, world.
        sensor_ranges: ``[minRange, maxRange]`` [stage units], shape (S, 2), float64.
        out_origins: ray origin o [stage units], shape (R, 3), float64, world (written; the
            sensor position for rays that do not fire).
        out_directions: unit direction d, shape (R, 3), float64, world (written; (1, 0, 0)
            for rays that do not fire).
        out_starts: cast start ``o + d * minRange``, shape (R, 3), float64, world (written).
        out_max_distances: cast length ``maxRange - minRange`` (0 for rays that do not
            fire), shape (R,), float64 (written).
        out_ray_positions: extrapolated sensor position p', shape (R, 3), float64 (written).
        out_ray_orientations: extrapolated sensor orientation q' (w, x, y, z), shape (R, 4),
            float64 (written).
    """
    for i in range(ray_sensor.shape[0]):
        k = ray_sensor[i]
        px = sensor_positions[k, 0]
        py = sensor_positions[k, 1]
        pz = sensor_positions[k, 2]
        qw = sensor_orientations[k, 0]
        qx = sensor_orientations[k, 1]
        qy = sensor_orientations[k, 2]
        qz = sensor_orientations[k, 3]
        if active[i] == 0:
            out_origins[i, 0] = px
            out_origins[i, 1] = py
            out_origins[i, 2] = pz
            out_starts[i, 0] = px
            out_starts[i, 1] = py
            out_starts[i, 2] = pz
            out_directions[i, 0] = 1.0
            out_directions[i, 1] = 0.0
            out_directions[i, 2] = 0.0
            out_max_distances[i] = 0.0
            out_ray_positions[i, 0] = px
            out_ray_positions[i, 1] = py
            out_ray_positions[i, 2] = pz
            out_ray_orientations[i, 0] = qw
            out_ray_orientations[i, 1] = qx
            out_ray_orientations[i, 2] = qy
            out_ray_orientations[i, 3] = qz
            continue
        tau = ray_offsets[i]
        vx = sensor_linear_velocities[k, 0]
        vy = sensor_linear_velocities[k, 1]
        vz = sensor_linear_velocities[k, 2]
        wx = sensor_angular_velocities[k, 0]
        wy = sensor_angular_velocities[k, 1]
        wz = sensor_angular_velocities[k, 2]
        v_norm = math.sqrt(vx * vx + vy * vy + vz * vz)
        w_norm = math.sqrt(wx * wx + wy * wy + wz * wz)
        if abs(tau) > 1e-8 and (v_norm > 1e-10 or w_norm > 1e-10):
            px = px + vx * tau
            py = py + vy * tau
            pz = pz + vz * tau
            hx = wx * tau * 0.5
            hy = wy * tau * 0.5
            hz = wz * tau * 0.5
            nw = qw - hx * qx - hy * qy - hz * qz
            nx = qx + hx * qw + hy * qz - hz * qy
            ny = qy - hx * qz + hy * qw + hz * qx
            nz = qz + hx * qy - hy * qx + hz * qw
            norm = math.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
            if norm > 1e-10:
                nw /= norm
                nx /= norm
                ny /= norm
                nz /= norm
            qw = nw
            qx = nx
            qy = ny
            qz = nz
        ox, oy, oz = _rotate_kernel(
            qw,
            qx,
            qy,
            qz,
            ray_origins_local[i, 0],
            ray_origins_local[i, 1],
            ray_origins_local[i, 2],
        )
        ox += px
        oy += py
        oz += pz
        dx, dy, dz = _rotate_kernel(
            qw,
            qx,
            qy,
            qz,
            ray_directions_local[i, 0],
            ray_directions_local[i, 1],
            ray_directions_local[i, 2],
        )
        d_norm = math.sqrt(dx * dx + dy * dy + dz * dz)
        if d_norm > 1e-10:
            dx /= d_norm
            dy /= d_norm
            dz /= d_norm
        min_range = sensor_ranges[k, 0]
        out_origins[i, 0] = ox
        out_origins[i, 1] = oy
        out_origins[i, 2] = oz
        out_directions[i, 0] = dx
        out_directions[i, 1] = dy
        out_directions[i, 2] = dz
        out_starts[i, 0] = ox + dx * min_range
        out_starts[i, 1] = oy + dy * min_range
        out_starts[i, 2] = oz + dz * min_range
        out_max_distances[i] = sensor_ranges[k, 1] - min_range
        out_ray_positions[i, 0] = px
        out_ray_positions[i, 1] = py
        out_ray_positions[i, 2] = pz
        out_ray_orientations[i, 0] = qw
        out_ray_orientations[i, 1] = qx
        out_ray_orientations[i, 2] = qy
        out_ray_orientations[i, 3] = qz


@jit
def raycast_outputs_kernel(
    ray_sensor,
    active,
    origins,
    directions,
    starts,
    ray_positions,
    ray_orientations,
    hit_distances,
    hit_normals,
    sensor_ranges,
    sensor_world_frame,
    out_depths,
    out_hit_positions,
    out_hit_normals,
    out_origins_world,
    out_end_points_world,
    out_hit,
):
    """Per-ray outputs of sensors.md §5.3 step 4 and §5.5.

    Args:
        ray_sensor: sensor index of each ray, shape (R,), int64.
        active: 1 for firing rays, shape (R,), int64.
        origins: ray origins o [stage units], shape (R, 3), float64, world.
        directions: unit directions d as cast, shape (R, 3), float64, world.
        starts: cast start points as cast, shape (R, 3), float64, world.
        ray_positions: extrapolated sensor positions p', shape (R, 3), float64, world.
        ray_orientations: extrapolated sensor orientations q' (w, x, y, z), shape (R, 4).
        hit_distances: cast hit distance from the start, ``inf`` on a miss, shape (R,),
            float64 [stage units].
        hit_normals: unit hit normals, shape (R, 3), float64, world.
        sensor_ranges: ``[minRange, maxRange]`` per sensor, shape (S, 2), float64.
        sensor_world_frame: 1 for ``WORLD`` output, 0 for ``SENSOR``, shape (S,), int64.
        out_depths: depth from the ray origin (``maxRange`` on miss / not firing), shape
            (R,), float32 [stage units] (written).
        out_hit_positions: hit point in the output frame, zeros on miss, shape (R, 3),
            float32 (written).
        out_hit_normals: hit normal in the output frame, zeros on miss, shape (R, 3),
            float32 (written).
        out_origins_world: ray origin (sensor position when not firing), shape (R, 3),
            float32, world (written).
        out_end_points_world: hit point, ``o + d * maxRange`` on a miss, sensor position when
            not firing, shape (R, 3), float32, world (written).
        out_hit: 1 for a hit, else 0, shape (R,), int64 (written).
    """
    for i in range(ray_sensor.shape[0]):
        k = ray_sensor[i]
        max_range = sensor_ranges[k, 1]
        for a in range(3):
            out_origins_world[i, a] = origins[i, a]
            out_hit_positions[i, a] = 0.0
            out_hit_normals[i, a] = 0.0
        out_depths[i] = max_range
        out_hit[i] = 0
        if active[i] == 0:
            for a in range(3):
                out_end_points_world[i, a] = origins[i, a]
            continue
        h = hit_distances[i]
        if not (h < math.inf):
            for a in range(3):
                out_end_points_world[i, a] = origins[i, a] + directions[i, a] * max_range
            continue
        out_hit[i] = 1
        out_depths[i] = h + sensor_ranges[k, 0]
        x0 = starts[i, 0] + directions[i, 0] * h
        x1 = starts[i, 1] + directions[i, 1] * h
        x2 = starts[i, 2] + directions[i, 2] * h
        out_end_points_world[i, 0] = x0
        out_end_points_world[i, 1] = x1
        out_end_points_world[i, 2] = x2
        n0 = hit_normals[i, 0]
        n1 = hit_normals[i, 1]
        n2 = hit_normals[i, 2]
        if sensor_world_frame[k] == 0:
            qw = ray_orientations[i, 0]
            qx = -ray_orientations[i, 1]
            qy = -ray_orientations[i, 2]
            qz = -ray_orientations[i, 3]
            x0, x1, x2 = _rotate_kernel(
                qw,
                qx,
                qy,
                qz,
                x0 - ray_positions[i, 0],
                x1 - ray_positions[i, 1],
                x2 - ray_positions[i, 2],
            )
            n0, n1, n2 = _rotate_kernel(qw, qx, qy, qz, n0, n1, n2)
        out_hit_positions[i, 0] = x0
        out_hit_positions[i, 1] = x1
        out_hit_positions[i, 2] = x2
        out_hit_normals[i, 0] = n0
        out_hit_normals[i, 1] = n1
        out_hit_normals[i, 2] = n2
