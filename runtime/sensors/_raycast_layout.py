"""Packed arrays and output buffers of one set of raycast sensors evaluated together.

Built by :class:`~runtime.sensors.raycast.RaycastBatch` from its
:class:`~runtime.sensors.raycast.RaycastSensor` objects (read through their attributes;
this module does not import :mod:`runtime.sensors.raycast`, which imports it).
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import numpy as np

from runtime.sensors._raycast_reading import RaycastReading

LOGGER = logging.getLogger("runtime.sensors")

# evaluation stamps of the batch layouts, unique over all layouts: a sensor's built reading is
# current iff its layout's stamp equals the one it was built at
_GENERATIONS = itertools.count(1)

__all__ = ["_Layout"]


def _block(arrays: list[np.ndarray], width: int, dtype: type) -> tuple[np.ndarray, list[list[int]]]:
    """Stack arrays as row ranges of one 2-D block; ``[first row, rows, columns]`` of each."""
    rows: list[list[int]] = []
    first = 0
    for array in arrays:
        array = np.asarray(array)
        n = int(array.shape[0]) if array.ndim else 1
        cols = int(np.prod(array.shape[1:])) if array.ndim > 1 else 1
        if cols > width:
            raise ValueError(f"array of {cols} columns does not fit a block of width {width}")
        rows.append([first, n, cols])
        first += n
    block = np.zeros((max(first, 1), width), dtype)
    for array, (o, n, c) in zip(arrays, rows, strict=True):
        block[o : o + n, :c] = np.asarray(array, dtype).reshape(n, c)
    return block, rows


def _flat(values: int | np.ndarray, width: int, dtype: type) -> np.ndarray:
    """Block rows holding ``values`` flat, in whole rows of ``width``.

    ``values``: a count of zeros, or an array whose values go in C order.
    """
    data = np.ravel(np.asarray(values, dtype)) if np.ndim(values) else np.zeros(values, dtype)
    rows = np.zeros((-(-data.size // width), width), dtype)
    rows.reshape(-1)[: data.size] = data
    return rows


def _bounding_spheres(boxes: np.ndarray) -> np.ndarray:
    """(S, 4) sphere [centre (3), radius] around each solid's group-frame box (S, 6)."""
    half = 0.5 * (boxes[:, 3:6] - boxes[:, 0:3])
    radius = np.sqrt(half[:, 0] * half[:, 0] + half[:, 1] * half[:, 1] + half[:, 2] * half[:, 2])
    return np.column_stack([boxes[:, 0:3] + half, radius * (1.0 + 1e-12)])


def _solid_boxes(
    kinds: np.ndarray,
    positions: np.ndarray,
    orientations: np.ndarray,
    params: np.ndarray,
    bounds: np.ndarray,
) -> np.ndarray:
    """Group-frame box ``[lo(3), hi(3)]`` of each solid: exact for boxes, else its sphere.

    Returns:
        Shape (S, 6), float64, padded by ``1e-9 * (1 + max |corner|)``.
    """
    from runtime.rays.kernels import SOLID_BOX

    positions = np.asarray(positions, np.float64).reshape(-1, 3)
    bounds = np.asarray(bounds, np.float64).reshape(-1, 4)
    centers = bounds[:, :3].copy()
    extents = np.repeat(bounds[:, 3:4], 3, axis=1)
    q = np.asarray(orientations, np.float64).reshape(-1, 4)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    rotation = np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        1,
    )
    box = np.asarray(kinds) == SOLID_BOX
    half = np.asarray(params, np.float64).reshape(-1, 3)
    centers[box] = positions[box]
    extents[box] = np.einsum("nij,nj->ni", np.abs(rotation[box]), half[box])
    pad = 1e-9 * (1.0 + np.abs(centers).max(axis=1, initial=0.0) + extents.max(axis=1, initial=0.0))
    return np.concatenate([centers - extents - pad[:, None], centers + extents + pad[:, None]], 1)


class _Layout:
    """Static arrays and output buffers of one set of evaluated sensors.

    ``out`` holds every ray's outputs (depths (R,), hit positions, hit normals, origins and
    end points (R, 3) each, concatenated, float32); :meth:`reading` copies a sensor's rows.
    With the Numba scene (:meth:`bind_scene`), the scene's and the sensors' arrays are packed
    into the float64 and int64 blocks of
    :func:`~runtime.sensors._raycast_kernels.raycast_batch_step_kernel` and ``out`` persists
    between steps; with another scene each step writes a fresh ``out`` from ``template``.
    """

    def __init__(self, batch: Any, sensors: list[Any]) -> None:
        self.batch = batch
        self.sensors = sensors
        counts = [len(s._origins) for s in sensors]
        r = int(sum(counts))
        self.ray_count = r
        self.ray_sensor = np.repeat(np.arange(len(sensors), dtype=np.int64), counts)
        self.origins = np.ascontiguousarray(np.concatenate([s._origins for s in sensors]))
        self.directions = np.ascontiguousarray(np.concatenate([s._directions for s in sensors]))
        self.offsets = np.ascontiguousarray(np.concatenate([s._offsets for s in sensors]))
        self.bounds = [0, *np.cumsum(counts).tolist()]
        self.index = {id(s): j for j, s in enumerate(sensors)}
        # per sensor: its rays sorted by offset (the firing window is found by bisection)
        order = np.concatenate(
            [
                a + np.argsort(self.offsets[a:b], kind="stable")
                for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True)
            ]
            or [np.zeros(0, np.int64)]
        )
        self.offset_order = np.ascontiguousarray(order, np.int64)
        self.sorted_offsets = np.ascontiguousarray(self.offsets[self.offset_order])
        self.counters = np.zeros(len(sensors), np.int64)
        self.periods = np.array([s._period for s in sensors], np.float32)
        self.bodies = np.array([s._body for s in sensors], np.int64)
        self.local_poses = np.ascontiguousarray(np.array([s._local_pose for s in sensors]))
        self.extrapolate = np.array(
            [1 if (s._has_offsets and s._body >= 0) else 0 for s in sensors], np.int64
        )
        self.ranges = np.ascontiguousarray(np.array([s._ranges for s in sensors], np.float64))
        self.frames = np.array([s._world_frame for s in sensors], np.int64)
        self.uses_bodies = bool(np.any(self.bodies >= 0))
        self.uses_velocities = bool(np.any(self.extrapolate))
        # per-ray hit actors by (sensor, hit rows) and hit-path tuples by actor array,
        # bounded to about 2**20 stored rays
        self.actor_cache: dict[tuple[int, bytes], np.ndarray] = {}
        self.path_cache: dict[int, tuple[np.ndarray, tuple[str, ...]]] = {}
        self.path_cache_size = max(16, 2**20 // max(r, 1))
        # not-firing outputs (maxRange, zero hits, sensor positions: NaN until written)
        self.template = np.zeros(13 * r, np.float32)
        self.template[:r] = np.repeat(self.ranges[:, 1], counts).astype(np.float32)
        self.template[7 * r :] = np.nan
        self.template_rows = {
            7: self.template[7 * r : 10 * r].reshape(r, 3),
            10: self.template[10 * r :].reshape(r, 3),
        }
        self.out = self.template.copy()
        self.generation = 0  # from _GENERATIONS: unique over every layout
        self.time = 0.0
        self.step = 0
        self.scene: Any = None
        self.fused = False
        self.scene_bodies = 0
        self.hits = np.zeros((r, 2), np.int64)
        self.hit_count = np.zeros(1, np.int64)
        self.unfused: dict[str, np.ndarray] = {}

    def reading(self, sensor: Any) -> RaycastReading:
        """A snapshot of ``sensor``'s rows of the latest step evaluated with this layout."""
        j = self.index[id(sensor)]
        a, b = self.bounds[j], self.bounds[j + 1]
        r = self.ray_count
        out = self.out
        if a == 0 and b == r:
            block = out.copy()
            depths = block[:r]
            hit_p, hit_n, o_w, e_w = block[r:].reshape(4, r, 3)
        else:
            depths = out[a:b].copy()
            hit_p, hit_n, o_w, e_w = out[r:].reshape(4, r, 3)[:, a:b].copy()
        if not sensor.config.report_hit_prim_paths:
            return RaycastReading._make_valid(
                b - a, depths, hit_p, hit_n, (), o_w, e_w, float(np.float32(self.time)),
                int(self.step),
            )  # fmt: skip
        paths, actors, table = self.batch._hit_paths(self, j, a, b)
        reading = RaycastReading._make_valid(
            b - a, depths, hit_p, hit_n, paths, o_w, e_w, float(np.float32(self.time)),
            int(self.step),
        )  # fmt: skip
        # what each ray hit as an index into the actor path table: a recorder maps these
        # to its own path ids without touching the strings (not fields: not compared)
        reading.__dict__.update(_hit_actors=actors, _actor_paths=table)
        return reading

    def _unfused_buffers(self) -> None:
        """Scratch arrays of the prepare / cast / outputs path (scenes other than Numba's)."""
        r, s = self.ray_count, len(self.sensors)
        self.unfused = {
            "sensor_poses": np.zeros((s, 7)),
            "fired": np.zeros(r, np.int64),
            "origins": np.zeros((r, 3)),
            "starts": np.zeros((r, 3)),
            "directions": np.zeros((r, 3)),
            "max_distances": np.zeros(r),
            "poses": np.zeros((r, 7)),
            "distances": np.zeros(r),
            "actors": np.zeros(r, np.int64),
            "normals": np.zeros((r, 3)),
            "count": np.zeros(1, np.int64),
        }

    def bind_scene(self, scene: Any) -> None:
        """Pack the scene's arrays with the sensors' for the one-call step (Numba scenes)."""
        from runtime.rays.kernels import SOLID_CONVEX
        from runtime.sensors import _raycast_kernels as k

        self.scene = scene
        self.scene_bodies = len(getattr(scene, "body_paths", ()))
        arguments = getattr(scene, "fused_arguments", None)
        fused = arguments(self.ray_count) if arguments is not None else None
        self.fused = fused is not None
        self.out = self.template.copy()
        if fused is None:
            self._unfused_buffers()
            return
        head, tail = fused
        (node_boxes, node_refs, leaf_triangles, leaf_ids, group_roots, group_local_boxes,
         group_body) = head  # fmt: skip
        (face_groups, face_actors, face_normals, _solid_groups, solid_kinds, solid_positions,
         solid_orientations, solid_params, solid_plane_ranges, planes, solid_bounds,
         solid_actors, group_solid_ranges, group_solid_boxes, double_sided, group_positions,
         group_orientations, _, _, _) = tail  # fmt: skip
        r, s, g = self.ray_count, len(self.sensors), len(group_roots)
        n_solids = len(solid_kinds)
        sensor_f = np.column_stack([self.local_poses.reshape(s, 7), self.ranges, self.periods])
        ray_f = np.column_stack([self.origins, self.directions, self.offsets, self.sorted_offsets])
        first_ray = np.asarray(self.bounds[:-1], np.int64)
        solid_boxes = _solid_boxes(
            solid_kinds, solid_positions, solid_orientations, solid_params, solid_bounds
        )
        kinds = np.asarray(solid_kinds, np.int64)
        group_flags = np.zeros((g, 4))  # (column 3: the group holds an analytic solid)
        for group, (first, count) in enumerate(np.reshape(group_solid_ranges, (g, 2))):
            group_flags[group, 3] = float((kinds[first : first + count] != SOLID_CONVEX).any())
        arrays = {
            k.L_NODE_BOXES: node_boxes,
            k.L_TRIANGLES: leaf_triangles,
            k.L_FACE_NORMALS: face_normals,
            k.L_PLANES: planes,
            k.L_GROUP_LOCAL_BOXES: np.column_stack([group_local_boxes, group_solid_boxes]),
            k.L_SOLID_POSITIONS: solid_positions,
            k.L_SOLID_ORIENTATIONS: solid_orientations,
            k.L_SOLID_PARAMS: solid_params,
            k.L_SOLID_BOXES: solid_boxes,
            k.L_SENSOR_F: sensor_f,
            k.L_RAY_F: ray_f,
            k.L_SENSOR_IO: np.full((s, 10), np.nan),
            k.L_GROUP_POSES: np.column_stack(
                [np.reshape(group_positions, (g, 3)), np.reshape(group_orientations, (g, 4))]
            ),
            k.L_GROUP_BOXES: np.zeros((g, 12)),
            k.L_GROUP_FLAGS: group_flags,
            k.L_RAYS: np.full((r, 12), np.nan),
            k.L_RAY_POSES: np.zeros((r, 7)),
            k.L_SOLID_WORLD_BOXES: np.zeros((n_solids, 6)),
            k.L_NODE_REFS: node_refs,
            k.L_TRIANGLE_IDS: leaf_ids,
            k.L_FACE_I: np.column_stack([face_groups, face_actors]),
            k.L_GROUP_I: np.column_stack([group_roots, group_body, group_solid_ranges]),
            k.L_SOLID_I: np.column_stack([solid_kinds, solid_plane_ranges, solid_actors]),
            k.L_SENSOR_I: np.column_stack([self.bodies, self.extrapolate, self.frames, first_ray]),
            k.L_RAY_I: np.column_stack([self.ray_sensor, self.offset_order]),
            k.L_FLAGS: np.array([[1 if double_sided else 0, 1 if self.scene_bodies else 0]]),
            k.L_COUNTERS: np.zeros((s, 1), np.int64),
            k.L_FIRED: np.zeros((r, 1), np.int64),
            k.L_HITS: np.zeros((r, 2), np.int64),
            k.L_COUNTS: np.zeros((2, 2), np.int64),
            k.L_CANDIDATES: np.zeros((n_solids, 1), np.int64),
            k.L_CANDIDATE_GROUPS: np.zeros((n_solids, 1), np.int64),
            k.L_SOLID_BOUNDS: _flat(_bounding_spheres(solid_boxes), k.F_WIDTH, np.float64),
            k.L_SCRATCH_F: _flat(k.SCRATCH_F_SIZE, k.F_WIDTH, np.float64),
            k.L_SOLID_KINDS: _flat(kinds, k.I_WIDTH, np.int64),
            k.L_SCRATCH_I: _flat(k.SCRATCH_I_SIZE, k.I_WIDTH, np.int64),
        }
        assert sorted(arrays) == list(range(k.LAYOUT_ROWS))
        floats = [arrays[i] for i in k.F_ARRAYS]
        ints = [np.zeros((k.LAYOUT_ROWS, 3), np.int64)] + [
            arrays[i] for i in range(k.LAYOUT_ROWS) if i not in k.F_ARRAYS
        ]
        self.block_f, rows_f = _block(floats, k.F_WIDTH, np.float64)
        self.block_i, rows_i = _block(ints, k.I_WIDTH, np.int64)
        layout = self.block_i[: k.LAYOUT_ROWS, :3]
        for key, row in zip(k.F_ARRAYS, rows_f, strict=True):
            layout[key] = row
        int_keys = [i for i in range(k.LAYOUT_ROWS) if i not in k.F_ARRAYS]
        for key, row in zip(int_keys, rows_i[1:], strict=True):
            layout[key] = row
        self.layout = layout

        def rows(key: int) -> np.ndarray:
            first, n, c = layout[key]
            block = self.block_f if key in k.F_ARRAYS else self.block_i
            return block[first : first + n, :c]

        self.counters = rows(k.L_COUNTERS)[:, 0]
        self.hits = rows(k.L_HITS)
        self.hit_count = rows(k.L_COUNTS)[0, 1:2]
        self.fast_args = (self.block_f, self.block_i, self.out)
