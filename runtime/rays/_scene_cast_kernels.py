"""Scene casts: one call per query over the whole ray scene, on one thread or several.

:func:`scene_cast_kernel` is a whole :meth:`~runtime.rays.scene.RayScene.cast`: group
poses, closest hits (:mod:`~runtime.rays._traversal_kernels`), solids
(:mod:`~runtime.rays._solid_kernels`) and hit attributes; :func:`scene_cast_parallel_kernel`
is the same body compiled with ``parallel=True``, whose blocks of rays go to Numba's thread
pool (results bit-identical to one thread). The backend's triangle-only casts order a large
scattered batch by the rays' 6-D Morton codes first (:func:`ray_bucket_order_kernel`) and
put the results back in caller order (:func:`scatter_hits_kernel`); both have a parallel
twin of the same body, so that a cast on several threads has no single-threaded phase.

Parallel casts hand their blocks of rays to the threads through a work queue (an atomic
counter, :func:`~runtime.rays._simd.fetch_add`): a thread takes the next block when it is
done with its last, so blocks of very different cost (sky and ground of a camera fan) and a
thread slowed by other load leave no thread idle. Numba's own ``prange`` scheduling cannot
do this: its OpenMP layer splits the iterations into one contiguous chunk per thread
whatever ``numba.set_parallel_chunksize`` says (measured: the first half of a camera fan,
mostly sky, went to one thread and the ground to the other: 1.37x on 2 threads; with the
queue 1.95x).
"""

from __future__ import annotations

import types

import numpy as np

from runtime._compile.jit import JIT_DISABLED, jit
from runtime.rays._simd import fetch_add
from runtime.rays._solid_kernels import scene_inside_solid_kernel, scene_solid_hits_kernel
from runtime.rays._traversal_kernels import (
    rotate_inverse_kernel,
    scene_closest_hit_kernel,
    store_world_box_kernel,
)

__all__ = [
    "MORTON_BUCKET_BITS",
    "PARALLEL_BLOCK",
    "PARALLEL_SMALLEST_BLOCK",
    "gather_rays_kernel",
    "parallel_block_size",
    "ray_bucket_order_kernel",
    "ray_bucket_order_parallel_kernel",
    "ray_morton_codes_kernel",
    "scatter_hits_kernel",
    "scatter_hits_parallel_kernel",
    "scene_cast_kernel",
    "scene_cast_parallel_kernel",
    "scene_cast_rays_kernel",
    "scene_closest_hit_parallel_kernel",
    "scene_group_poses_kernel",
    "scene_hit_attributes_kernel",
    "scene_shade_kernel",
]


PARALLEL_BLOCK = 1024
"""Most rays per work item of the parallel kernels (items handed out by a work queue).

Measured on 100k-ray casts with 2 threads and the queue (benchmarks/raycast.py scenes):
1024 scaled as well as or better than 128-512 (a thread keeps longer runs of neighbouring
rays, whose nodes are in its own cache); smaller batches get smaller blocks
(:func:`parallel_block_size`)."""

PARALLEL_SMALLEST_BLOCK = 128
"""Fewest rays per work item of the parallel kernels (:func:`parallel_block_size`)."""


@jit(inline=True)
def parallel_block_size(ray_count, threads):
    """Rays per work item: all rays for one thread, else about 8 items per thread.

    Clamped to :data:`PARALLEL_SMALLEST_BLOCK` .. :data:`PARALLEL_BLOCK`: the smallest
    parallel batch (4096 rays on 2 threads) gets 16 items of 256 rays, so that the queue can
    balance it; large batches get blocks of :data:`PARALLEL_BLOCK`.
    """
    if threads <= 1:
        return max(ray_count, 1)
    return min(PARALLEL_BLOCK, max(PARALLEL_SMALLEST_BLOCK, ray_count // (8 * threads)))


def _jit_parallel(function):
    """Like :func:`runtime._compile.jit.jit`, with ``parallel=True`` (``prange`` over ray blocks).

    Each block runs the sequential kernel on its slice of the rays, so results are
    bit-identical to the sequential kernel whatever the thread count.
    """
    if JIT_DISABLED:
        return function
    import numba

    return numba.njit(cache=True, nogil=True, parallel=True)(function)


_prange = range


if not JIT_DISABLED:
    import numba as _numba

    _prange = _numba.prange


@jit
def scene_group_poses_kernel(
    group_body,
    body_positions,
    body_orientations,
    group_local_boxes,
    group_roots,
    io_group_positions,
    io_group_orientations,
    out_world_boxes,
):
    """Current group frames and world broad-phase boxes of every group.

    Args:
        group_body: body row of each group in the pose arrays, -1 for a fixed group, shape
            (G,), int64.
        body_positions: body origins [stage units], shape (B, 3), float64, world (B may be 0
            when every group is fixed).
        body_orientations: body orientations (w, x, y, z), shape (B, 4), float64, world.
        group_local_boxes: group-frame box of each group's triangles ``[lo(3), hi(3)]``,
            shape (G, 6), float64 [stage units].
        group_roots: BVH root of each group, -1 for an empty group, shape (G,), int64.
        io_group_positions: group frame origins, shape (G, 3), float64, world (moving rows
            written, fixed rows read).
        io_group_orientations: group orientations (w, x, y, z), shape (G, 4), float64 (moving
            rows written, fixed rows read).
        out_world_boxes: world box enclosing each group's triangles at its pose, padded by
            ``1e-9 * (1 + max |corner|)`` (:func:`world_box_kernel`), shape (G, 6), float64
            (written).
    """
    for g in range(group_body.shape[0]):
        b = group_body[g]
        if b >= 0 and b < body_positions.shape[0]:
            for a in range(3):
                io_group_positions[g, a] = body_positions[b, a]
            for a in range(4):
                io_group_orientations[g, a] = body_orientations[b, a]
        if group_roots[g] < 0:
            for a in range(6):
                out_world_boxes[g, a] = 0.0
            continue
        store_world_box_kernel(
            io_group_orientations[g, 0], io_group_orientations[g, 1],
            io_group_orientations[g, 2], io_group_orientations[g, 3],
            io_group_positions[g, 0], io_group_positions[g, 1], io_group_positions[g, 2],
            group_local_boxes, g, 0, out_world_boxes, g, 0,
        )  # fmt: skip


@jit
def scene_hit_attributes_kernel(
    faces,
    face_groups,
    face_actors,
    face_normals,
    group_orientations,
    directions,
    double_sided,
    out_actors,
    out_normals,
):
    """Actor index and world normal of each hit face.

    Args:
        faces: global face id per ray, -1 on a miss, shape (R,), int64.
        face_groups: group of each global face, shape (F,), int64.
        face_actors: actor index of each global face, shape (F,), int64.
        face_normals: unit front-face normal of each face in its group frame, shape (F, 3),
            float64.
        group_orientations: group orientations (w, x, y, z), shape (G, 4), float64, world.
        directions: unit ray directions, shape (R, 3), float64, world.
        double_sided: when True a normal facing away from the ray is flipped towards it.
        out_actors: actor index or -1, shape (R,), int64 (written).
        out_normals: unit hit normal or zeros, shape (R, 3), float64, world (written).
    """
    for i in range(faces.shape[0]):
        f = faces[i]
        if f < 0:
            out_actors[i] = -1
            out_normals[i, 0] = 0.0
            out_normals[i, 1] = 0.0
            out_normals[i, 2] = 0.0
            continue
        g = face_groups[f]
        # rotate the local normal to world: inverse of the inverse rotation
        nx, ny, nz = rotate_inverse_kernel(
            group_orientations[g, 0],
            -group_orientations[g, 1],
            -group_orientations[g, 2],
            -group_orientations[g, 3],
            face_normals[f, 0],
            face_normals[f, 1],
            face_normals[f, 2],
        )
        facing = nx * directions[i, 0] + ny * directions[i, 1] + nz * directions[i, 2]
        if double_sided and facing > 0.0:
            nx = -nx
            ny = -ny
            nz = -nz
        out_actors[i] = face_actors[f]
        out_normals[i, 0] = nx
        out_normals[i, 1] = ny
        out_normals[i, 2] = nz


@jit
def scene_shade_kernel(
    faces,
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
    origins,
    directions,
    max_distances,
    double_sided,
    group_positions,
    group_orientations,
    out_inside,
    io_distances,
    out_actors,
    out_normals,
):
    """Everything after the closest triangle hit, in one call (any backend's hits).

    Hit attributes of the triangle hits (:func:`scene_hit_attributes_kernel`), exact
    entries into analytic solids (:func:`scene_solid_hits_kernel`) and the "starts inside
    a solid" rule (distance 0, normal ``-direction``); arguments as
    :func:`scene_cast_kernel` documents them, with ``faces`` the global face per ray (-1
    on a miss), ``io_distances`` its distance (``inf`` on a miss; updated) and
    ``out_inside`` scratch of shape (R,).
    """
    scene_hit_attributes_kernel(
        faces,
        face_groups,
        face_actors,
        face_normals,
        group_orientations,
        directions,
        double_sided,
        out_actors,
        out_normals,
    )
    if solid_groups.shape[0] == 0:
        return
    scene_solid_hits_kernel(
        solid_kinds, solid_positions, solid_orientations, solid_params, solid_bounds,
        solid_actors, group_solid_ranges, group_solid_boxes, group_positions,
        group_orientations, origins, directions, max_distances, io_distances, out_actors,
        out_normals,
    )  # fmt: skip
    scene_inside_solid_kernel(
        solid_groups,
        solid_kinds,
        solid_positions,
        solid_orientations,
        solid_params,
        solid_plane_ranges,
        planes,
        solid_bounds,
        group_solid_ranges,
        group_solid_boxes,
        group_positions,
        group_orientations,
        origins,
        out_inside,
    )
    for i in range(origins.shape[0]):
        s = out_inside[i]
        if s >= 0:
            io_distances[i] = 0.0
            out_actors[i] = solid_actors[s]
            out_normals[i, 0] = -directions[i, 0]
            out_normals[i, 1] = -directions[i, 1]
            out_normals[i, 2] = -directions[i, 2]


@jit
def scene_cast_rays_kernel(
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    group_roots,
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
    origins,
    directions,
    max_distances,
    double_sided,
    group_positions,
    group_orientations,
    world_boxes,
    out_faces,
    out_inside,
    out_distances,
    out_actors,
    out_normals,
):
    """The per-ray part of :func:`scene_cast_kernel` with the group poses already set.

    Closest triangle hit, hit attributes, exact entries into analytic solids (boxes,
    spheres, capsules, cylinders: :func:`scene_solid_hits_kernel`) and the "starts inside
    a solid" rule of every given ray;
    arguments as :func:`scene_cast_kernel` documents them (``group_positions``,
    ``group_orientations`` and ``world_boxes`` are read).
    """
    scene_closest_hit_kernel(
        wide_nodes,
        leaf_triangles,
        leaf_ids,
        group_roots,
        group_positions,
        group_orientations,
        world_boxes,
        origins,
        directions,
        max_distances,
        double_sided,
        out_distances,
        out_faces,
    )
    scene_shade_kernel(
        out_faces, face_groups, face_actors, face_normals, solid_groups, solid_kinds,
        solid_positions, solid_orientations, solid_params, solid_plane_ranges, planes,
        solid_bounds, solid_actors, group_solid_ranges, group_solid_boxes, origins,
        directions, max_distances, double_sided, group_positions, group_orientations,
        out_inside, out_distances, out_actors, out_normals,
    )  # fmt: skip


def _scene_cast(
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    group_roots,
    group_local_boxes,
    group_body,
    body_positions,
    body_orientations,
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
    origins,
    directions,
    max_distances,
    double_sided,
    io_group_positions,
    io_group_orientations,
    out_world_boxes,
    out_faces,
    out_inside,
    out_distances,
    out_actors,
    out_normals,
    threads,
):
    """One full ray-scene query in a single call, its rays in blocks on ``threads`` threads.

    The body of :func:`scene_cast_kernel` (compiled for one thread) and of
    :func:`scene_cast_parallel_kernel` (compiled with ``parallel=True``: ``threads`` workers
    on Numba's thread pool, whose size the caller sets with
    :func:`runtime.rays.backends.run_parallel`, take blocks of
    :func:`parallel_block_size` rays from a work queue). Group poses are set once, then every
    ray is cast by :func:`scene_cast_rays_kernel` on its block, so the results are
    bit-identical whatever the thread count (``threads`` 1: one block of all rays).

    Group poses, closest hit, hit attributes and the "ray starts inside a solid" rule
    (distance 0, normal ``-direction``), as :func:`scene_group_poses_kernel`,
    :func:`scene_closest_hit_kernel`, :func:`scene_hit_attributes_kernel` and
    :func:`scene_inside_solid_kernel` document their arguments.

    Args:
        wide_nodes: wide BVH nodes, shape (M, 8, 8), float32
            (:mod:`~runtime.rays._wide_bvh_kernels` layout).
        leaf_triangles: leaf blocks, flat float64
            (:mod:`~runtime.rays._wide_bvh_kernels` layout), group frames.
        leaf_ids: global face id per leaf lane, shape (L, 8), int64.
        group_roots: wide BVH root per group (-1 empty), shape (G,), int64.
        group_local_boxes: group-frame triangle box ``[lo, hi]``, shape (G, 6), float64.
        group_body: body row per group (-1 fixed), shape (G,), int64.
        body_positions: body origins, shape (B, 3), float64, world (B may be 0).
        body_orientations: body orientations (w, x, y, z), shape (B, 4), float64.
        face_groups: group per global face, shape (F,), int64.
        face_actors: actor per global face, shape (F,), int64.
        face_normals: unit front normal per face, group frame, shape (F, 3), float64.
        solid_groups: group per solid (non-decreasing), shape (S,), int64.
        solid_kinds: ``SOLID_*`` code per solid, shape (S,), int64.
        solid_positions: solid origin in its group frame, shape (S, 3), float64.
        solid_orientations: solid orientation in its group frame, shape (S, 4), float64.
        solid_params: half extents or (radius, half height, 0), shape (S, 3), float64.
        solid_plane_ranges: (first plane, count) per solid, shape (S, 2), int64.
        planes: convex half-spaces ``[n, d]``, shape (P, 4), float64.
        solid_bounds: bounding sphere per solid ``[c, r]``, shape (S, 4), float64.
        solid_actors: actor index of each solid, shape (S,), int64.
        group_solid_ranges: (first solid, count) per group, shape (G, 2), int64.
        group_solid_boxes: group-frame box around the group's solids, shape (G, 6), float64.
        origins: ray start points [stage units], shape (R, 3), float64, world.
        directions: unit ray directions, shape (R, 3), float64, world.
        max_distances: largest accepted hit distance [stage units], shape (R,), float64.
        double_sided: hit back faces of triangles too.
        io_group_positions: group origins, shape (G, 3), float64 (moving rows written).
        io_group_orientations: group orientations, shape (G, 4), float64 (moving rows
            written).
        out_world_boxes: scratch, shape (G, 6), float64 (written).
        out_faces: scratch, global face of the closest hit or -1, shape (R,), int64.
        out_inside: scratch, containing solid or -1, shape (R,), int64.
        out_distances: hit distance or ``inf``, shape (R,), float64 (written).
        out_actors: actor index or -1, shape (R,), int64 (written).
        out_normals: unit world hit normal or zeros, shape (R, 3), float64 (written).
        threads: 1 for one block of all rays, else that many workers taking blocks of
            :func:`parallel_block_size` rays from a work queue.
    """
    scene_group_poses_kernel(
        group_body,
        body_positions,
        body_orientations,
        group_local_boxes,
        group_roots,
        io_group_positions,
        io_group_orientations,
        out_world_boxes,
    )
    ray_count = origins.shape[0]
    size = parallel_block_size(ray_count, threads)
    blocks = (ray_count + size - 1) // size
    queue = np.zeros(1, np.int64)  # the next block to cast
    for _worker in _prange(max(threads, 1)):
        while True:
            b = fetch_add(queue, 1)
            if b >= blocks:
                break
            s = b * size
            e = min(ray_count, s + size)
            scene_cast_rays_kernel(
                wide_nodes, leaf_triangles, leaf_ids, group_roots, face_groups,
                face_actors, face_normals, solid_groups, solid_kinds, solid_positions,
                solid_orientations, solid_params, solid_plane_ranges, planes, solid_bounds,
                solid_actors, group_solid_ranges, group_solid_boxes, origins[s:e],
                directions[s:e], max_distances[s:e], double_sided, io_group_positions,
                io_group_orientations, out_world_boxes, out_faces[s:e], out_inside[s:e],
                out_distances[s:e], out_actors[s:e], out_normals[s:e],
            )  # fmt: skip


def _named(function, name):
    """``function`` again under ``name``: one body, two compilations, two cache entries.

    Numba names a cache entry after the function's qualified name and does not key it by the
    ``parallel`` option, so the one-thread and the parallel compilation of one body need a
    function object each.
    """
    twin = types.FunctionType(
        function.__code__, function.__globals__, name, function.__defaults__, function.__closure__
    )
    twin.__qualname__ = name
    twin.__doc__ = function.__doc__
    twin.__module__ = function.__module__
    return twin


scene_cast_kernel = jit(_named(_scene_cast, "scene_cast_kernel"))
"""A whole ray-scene query on the calling thread (:func:`_scene_cast`)."""

scene_cast_parallel_kernel = _jit_parallel(_named(_scene_cast, "scene_cast_parallel_kernel"))
"""A whole ray-scene query, its blocks of rays on Numba's thread pool (:func:`_scene_cast`)."""


@_jit_parallel
def scene_closest_hit_parallel_kernel(
    wide_nodes,
    leaf_triangles,
    leaf_ids,
    group_roots,
    group_positions,
    group_orientations,
    group_world_boxes,
    origins,
    directions,
    max_distances,
    double_sided,
    out_distances,
    out_triangle_ids,
    threads,
):
    """:func:`scene_closest_hit_kernel` over blocks of rays, in parallel.

    Same arguments plus ``threads``, and bit-identical results (every ray is cast by the
    sequential kernel): 1 casts all rays as one block; more starts that many workers on
    Numba's thread pool (whose size the caller sets: :func:`runtime.rays.backends.run_parallel`),
    each taking the next block of :func:`parallel_block_size` rays from a work queue when
    done with its last, so that a thread slowed by other load or by costly rays takes fewer.
    """
    ray_count = origins.shape[0]
    size = parallel_block_size(ray_count, threads)
    blocks = (ray_count + size - 1) // size
    queue = np.zeros(1, np.int64)  # the next block to cast
    for _worker in _prange(max(threads, 1)):
        while True:
            b = fetch_add(queue, 1)
            if b >= blocks:
                break
            s = b * size
            e = min(ray_count, s + size)
            scene_closest_hit_kernel(
                wide_nodes, leaf_triangles, leaf_ids, group_roots, group_positions,
                group_orientations, group_world_boxes, origins[s:e], directions[s:e],
                max_distances[s:e], double_sided, out_distances[s:e], out_triangle_ids[s:e],
            )  # fmt: skip


@jit
def ray_morton_codes_kernel(origins, directions, out_codes):
    """6-D Morton code of each ray, to order large batches for coherent traversal.

    Origins are quantised in the batch's bounding box, directions in [-1, 1]^3, 10 bits per
    coordinate (a NaN coordinate as 0).

    Args:
        origins: ray origins [stage units], shape (R, 3), float64.
        directions: unit ray directions, shape (R, 3), float64.
        out_codes: interleaved code per ray, shape (R,), int64 (written, < 2**60).
    """
    ray_count = origins.shape[0]
    lo0 = np.inf
    lo1 = np.inf
    lo2 = np.inf
    hi0 = -np.inf
    hi1 = -np.inf
    hi2 = -np.inf
    for i in range(ray_count):
        lo0 = min(lo0, origins[i, 0])
        lo1 = min(lo1, origins[i, 1])
        lo2 = min(lo2, origins[i, 2])
        hi0 = max(hi0, origins[i, 0])
        hi1 = max(hi1, origins[i, 1])
        hi2 = max(hi2, origins[i, 2])
    s0 = 1023.0 / max(hi0 - lo0, 1e-300)
    s1 = 1023.0 / max(hi1 - lo1, 1e-300)
    s2 = 1023.0 / max(hi2 - lo2, 1e-300)
    # the 10 bits of q spread six apart, tabulated
    spread = np.zeros(1024, np.int64)
    for q in range(1024):
        for bit in range(10):
            spread[q] |= ((q >> bit) & 1) << (6 * bit)
    for i in range(ray_count):
        q0 = _quantise_kernel((origins[i, 0] - lo0) * s0)
        q1 = _quantise_kernel((origins[i, 1] - lo1) * s1)
        q2 = _quantise_kernel((origins[i, 2] - lo2) * s2)
        q3 = _quantise_kernel((directions[i, 0] + 1.0) * 511.5)
        q4 = _quantise_kernel((directions[i, 1] + 1.0) * 511.5)
        q5 = _quantise_kernel((directions[i, 2] + 1.0) * 511.5)
        out_codes[i] = (
            (spread[q0] << 5)
            | (spread[q1] << 4)
            | (spread[q2] << 3)
            | (spread[q3] << 2)
            | (spread[q4] << 1)
            | spread[q5]
        )


MORTON_BUCKET_BITS = 12
"""Bits of the 6-D Morton code that order a large batch (2 per coordinate: 4096 buckets)."""


@jit
def _quantise_kernel(x):
    """``int(x)`` clamped to 0 .. 1023, NaN to 0 (a bucket index that is always valid)."""
    if not x > 0.0:
        return 0
    if x >= 1023.0:
        return 1023
    return int(x)


@jit(inline=True)
def _bucket_key_kernel(origins, directions, i, lo0, lo1, lo2, s0, s1, s2):
    """The top :data:`MORTON_BUCKET_BITS` bits of ray ``i``'s 6-D Morton code.

    The quantisation of :func:`ray_morton_codes_kernel` (NaN to 0), bits 9 and 8 of each
    quantised coordinate, interleaved as there.
    """
    q0 = _quantise_kernel((origins[i, 0] - lo0) * s0) >> 8
    q1 = _quantise_kernel((origins[i, 1] - lo1) * s1) >> 8
    q2 = _quantise_kernel((origins[i, 2] - lo2) * s2) >> 8
    q3 = _quantise_kernel((directions[i, 0] + 1.0) * 511.5) >> 8
    q4 = _quantise_kernel((directions[i, 1] + 1.0) * 511.5) >> 8
    q5 = _quantise_kernel((directions[i, 2] + 1.0) * 511.5) >> 8
    high = (q0 >> 1) << 5 | (q1 >> 1) << 4 | (q2 >> 1) << 3 | (q3 >> 1) << 2 | (q4 >> 1) << 1
    low = (q0 & 1) << 5 | (q1 & 1) << 4 | (q2 & 1) << 3 | (q3 & 1) << 2 | (q4 & 1) << 1
    return (high | (q5 >> 1)) << 6 | low | (q5 & 1)


def _ray_bucket_order(
    origins,
    directions,
    max_distances,
    scratch_keys,
    out_order,
    out_origins,
    out_directions,
    out_max_distances,
    threads=1,
):
    """Rays in coarse 6-D Morton order: a stable counting sort on the code's top 12 bits.

    The key of a ray is ``code >> 48`` for its :func:`ray_morton_codes_kernel` code (the two
    top bits of each quantised coordinate, interleaved), so the order equals
    ``np.argsort(codes >> 48, kind="stable")``. One pass counts the 4096 buckets and a
    second moves the rays into place (sequential reads), which costs a fraction of a full
    sort and a gather; casts gain about as much as from the full 60-bit order, since rays of a
    bucket already share the upper levels of the BVH.

    The body of :func:`ray_bucket_order_kernel` (one thread) and of
    :func:`ray_bucket_order_parallel_kernel` (``parallel=True``): the rays are cut into
    ``threads`` contiguous parts, each part's bounds and bucket counts are taken on its own
    thread, the parts' slots in each bucket follow in part order, and each part moves its
    rays on its own thread; so the order is the same stable sort whatever ``threads``.

    Args:
        origins: ray origins [stage units], shape (R, 3), float64.
        directions: unit ray directions, shape (R, 3), float64.
        max_distances: largest accepted distances, shape (R,), float64.
        scratch_keys: shape (R,), int64 (overwritten).
        out_order: caller index of each ordered ray, shape (R,), int64 (written).
        out_origins: ordered origins, shape (R, 3), float64 (written).
        out_directions: ordered directions, shape (R, 3), float64 (written).
        out_max_distances: ordered distances, shape (R,), float64 (written).
        threads: parts of the rays (1: one part; the parallel kernel runs one per thread).
    """
    ray_count = origins.shape[0]
    parts = max(1, min(threads, ray_count))
    part = (ray_count + parts - 1) // parts
    part_bounds = np.empty((parts, 6))
    for p in _prange(parts):
        lo0 = np.inf
        lo1 = np.inf
        lo2 = np.inf
        hi0 = -np.inf
        hi1 = -np.inf
        hi2 = -np.inf
        for i in range(p * part, min(ray_count, (p + 1) * part)):
            lo0 = min(lo0, origins[i, 0])
            lo1 = min(lo1, origins[i, 1])
            lo2 = min(lo2, origins[i, 2])
            hi0 = max(hi0, origins[i, 0])
            hi1 = max(hi1, origins[i, 1])
            hi2 = max(hi2, origins[i, 2])
        part_bounds[p, 0] = lo0
        part_bounds[p, 1] = lo1
        part_bounds[p, 2] = lo2
        part_bounds[p, 3] = hi0
        part_bounds[p, 4] = hi1
        part_bounds[p, 5] = hi2
    # (min and max skip NaN here as in ray_morton_codes_kernel: the same bounds)
    lo0 = np.inf
    lo1 = np.inf
    lo2 = np.inf
    hi0 = -np.inf
    hi1 = -np.inf
    hi2 = -np.inf
    for p in range(parts):
        lo0 = min(lo0, part_bounds[p, 0])
        lo1 = min(lo1, part_bounds[p, 1])
        lo2 = min(lo2, part_bounds[p, 2])
        hi0 = max(hi0, part_bounds[p, 3])
        hi1 = max(hi1, part_bounds[p, 4])
        hi2 = max(hi2, part_bounds[p, 5])
    s0 = 1023.0 / max(hi0 - lo0, 1e-300)
    s1 = 1023.0 / max(hi1 - lo1, 1e-300)
    s2 = 1023.0 / max(hi2 - lo2, 1e-300)
    buckets = 1 << MORTON_BUCKET_BITS
    start = np.zeros((parts, buckets), np.int64)
    for p in _prange(parts):
        for i in range(p * part, min(ray_count, (p + 1) * part)):
            key = _bucket_key_kernel(origins, directions, i, lo0, lo1, lo2, s0, s1, s2)
            scratch_keys[i] = key
            start[p, key] += 1
    total = 0
    for b in range(buckets):
        for p in range(parts):
            count = start[p, b]
            start[p, b] = total
            total += count
    for p in _prange(parts):
        for i in range(p * part, min(ray_count, (p + 1) * part)):
            key = scratch_keys[i]
            k = start[p, key]
            start[p, key] = k + 1
            out_order[k] = i
            for a in range(3):
                out_origins[k, a] = origins[i, a]
                out_directions[k, a] = directions[i, a]
            out_max_distances[k] = max_distances[i]


ray_bucket_order_kernel = jit(_named(_ray_bucket_order, "ray_bucket_order_kernel"))
"""The coarse Morton order of a batch on the calling thread (:func:`_ray_bucket_order`)."""

ray_bucket_order_parallel_kernel = _jit_parallel(
    _named(_ray_bucket_order, "ray_bucket_order_parallel_kernel")
)
"""The coarse Morton order of a batch, one part of the rays per thread (:func:`_ray_bucket_order`;
the caller sets the thread count: :func:`runtime.rays.backends.run_parallel`)."""


@jit
def gather_rays_kernel(
    order, origins, directions, max_distances, out_origins, out_directions, out_max_distances
):
    """Rays in the given order: ``out[k] = in[order[k]]`` for the three ray arrays.

    Args:
        order: ray index per output row, shape (R,), int64.
        origins: ray origins, shape (R, 3), float64.
        directions: ray directions, shape (R, 3), float64.
        max_distances: largest accepted distances, shape (R,), float64.
        out_origins: reordered origins, shape (R, 3), float64 (written).
        out_directions: reordered directions, shape (R, 3), float64 (written).
        out_max_distances: reordered distances, shape (R,), float64 (written).
    """
    for k in range(order.shape[0]):
        i = order[k]
        for a in range(3):
            out_origins[k, a] = origins[i, a]
            out_directions[k, a] = directions[i, a]
        out_max_distances[k] = max_distances[i]


def _scatter_hits(order, distances, faces, out_distances, out_faces, threads=1):
    """Results back in caller order: ``out[order[k]] = in[k]``.

    The body of :func:`scatter_hits_kernel` (one thread) and of
    :func:`scatter_hits_parallel_kernel` (``parallel=True``, ``threads`` contiguous parts of
    the rows, one per thread; ``order`` is a permutation, so no two rows write one slot).

    Args:
        order: ray index of each row, shape (R,), int64.
        distances: hit distance per row, shape (R,), float64.
        faces: hit face per row, shape (R,), int64.
        out_distances: hit distance per caller ray, shape (R,), float64 (written).
        out_faces: hit face per caller ray, shape (R,), int64 (written).
        threads: parts of the rows (1: one part).
    """
    count = order.shape[0]
    parts = max(1, min(threads, count))
    part = (count + parts - 1) // parts
    for p in _prange(parts):
        for k in range(p * part, min(count, (p + 1) * part)):
            out_distances[order[k]] = distances[k]
            out_faces[order[k]] = faces[k]


scatter_hits_kernel = jit(_named(_scatter_hits, "scatter_hits_kernel"))
"""Results back in caller order on the calling thread (:func:`_scatter_hits`)."""

scatter_hits_parallel_kernel = _jit_parallel(_named(_scatter_hits, "scatter_hits_parallel_kernel"))
"""Results back in caller order, one part of the rows per thread (:func:`_scatter_hits`)."""
