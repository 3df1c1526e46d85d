"""Ray casting: simrt's Numba BVH against Embree (embreex), in one run, on four kinds of scene.

Honest by construction:

* every backend gets the same rays in the same order. "as given" is the caller's order
  (scattered rays in random order, lidar fans column by column as a spinning lidar emits
  them, camera fans row by row, height scans scan by scan); "own order" is each backend's
  preferred order with the sort cost included (simrt: ``NumbaBvhBackend.cast``'s default, a
  coarse 6-D Morton order (the code's top 12 bits) unless a sample shows the batch coherent
  already; Embree: the full Morton sort, and simrt's coarse order (its float32 conversion
  included), each done around its call, results scattered back to the caller's order);
* Embree is called the fastest way that returns what we need: ``query="DISTANCE"``
  (distances only) and ``output=1`` (distance and triangle id, what ``NumbaBvhBackend.cast``
  returns). The summary's reference is Embree's fastest call of all four (as given, either
  query; or sorted, sort included), against simrt's faster order on one thread;
* both cast the same world-frame triangles of the scene: simrt's backend is built
  ``double_sided=True`` so that both answer the same query (Embree has no back-face
  culling); Embree gets float32 arrays prepared outside the timing;
* build times: ``RayScene.from_stage`` with the numba backend against the embreex backend
  (the same USD parsing and collider conversion on both sides, one probe cast included:
  Embree commits its scene at the first cast), and the bare BVH build on the world
  triangles against Embree's scene construction and commit;
* interleaved repeats (every candidate once per round), best of ``--repeats`` rounds, so
  that load from other processes hits every candidate alike; the load average is printed.

Scenes (``--scenes``): ``dense`` a noised icosphere of 82k triangles on a ground plane;
``terrain`` a 20 m heightfield of 130k triangles under 512 height scans of 17 x 11 rays
(Isaac Lab's grid pattern: 1.6 m x 1.0 m at 0.1 m, cast straight down from 20 m);
``room`` walls, 40 boxes, spheres and dense meshes seen by a pinhole depth camera;
``panda`` scenes/panda_table.usda; on request ``terrain_large``, a 30 m heightfield of 318k
triangles with lidar and camera fans only (its BVH outgrows the caches). Rays per scene:
``--rays`` scattered rays (origins around the scene aimed into it), as many lidar-fan rays
(8 spinning lidars of 16 rows) and a 320 x 240 pinhole camera fan; the terrain adds its
height scans. Reported per scene and ray set: Mrays/s on 1 and 2 threads (Embree through
embreex casts on one thread: it holds the GIL), the ratios to Embree and of 2 threads to 1,
distances agreement with Embree; at the end a summary table, and the sensor path on the
Panda scene (``RayScene.cast`` with the embreex backend against raw Embree on the same
world-frame triangles, per ray).

Usage::

    python benchmarks/raycast.py [--scenes dense,terrain,room,panda,terrain_large] [--rays 100000]
        [--repeats 5] [--threads 1,2] [--keep-cache] [--no-sensor-path] [--phases]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

_CAMERA = (320, 240)


def _stage(np, meshes, ground_z=None):
    """An in-memory USD stage of static triangle-mesh colliders (and a ground plane)."""
    from pxr import Usd, UsdGeom, UsdPhysics, Vt

    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.Xform.Define(stage, "/World")
    for i, (vertices, faces) in enumerate(meshes):
        mesh = UsdGeom.Mesh.Define(stage, f"/World/Mesh{i}")
        mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(vertices.astype(np.float32)))
        counts = np.full(len(faces), 3, np.int32)
        mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray.FromNumpy(counts))
        indices = np.ascontiguousarray(faces, np.int32).ravel()
        mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray.FromNumpy(indices))
        UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    if ground_z is not None:
        plane = UsdGeom.Plane.Define(stage, "/World/Ground")
        plane.AddTranslateOp().Set((0.0, 0.0, float(ground_z)))
        UsdPhysics.CollisionAPI.Apply(plane.GetPrim())
    return stage


def _noised_sphere(np, trimesh, rng, subdivisions, radius=1.0, center=(0.0, 0.0, 0.0)):
    sphere = trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius)
    noise = 1.0 + rng.normal(0.0, 0.002, (len(sphere.vertices), 1))
    return sphere.vertices * noise + np.asarray(center), np.asarray(sphere.faces, np.int64)


def _box(np, trimesh, rng, extents, center, turn=True):
    box = trimesh.creation.box(extents=extents)
    if turn:
        box.apply_transform(
            trimesh.transformations.rotation_matrix(rng.uniform(0, np.pi), [0, 0, 1])
        )
    return box.vertices + np.asarray(center), np.asarray(box.faces, np.int64)


def _scattered(np, rng, count: int, center, radius, lo, hi):
    """Origins on a sphere around the scene, aimed at uniform points of the box [lo, hi]."""
    o = rng.normal(size=(count, 3))
    o = o / np.linalg.norm(o, axis=1, keepdims=True) * radius + np.asarray(center)
    d = rng.uniform(lo, hi, (count, 3)) - o
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return o, d


def _lidar(np, count: int, positions):
    """Spinning lidars (16 rows, -15..15 deg) at ``positions``, column by column each."""
    rows = 16
    columns = max(1, count // (len(positions) * rows))
    azimuth = np.linspace(0.0, 2.0 * np.pi, columns, endpoint=False)
    elevation = np.radians(np.linspace(-15.0, 15.0, rows))
    a, el = np.meshgrid(azimuth, elevation, indexing="ij")  # column-major emission order
    local = np.stack([np.cos(el) * np.cos(a), np.cos(el) * np.sin(a), np.sin(el)], -1)
    local = local.reshape(-1, 3)
    origins = [np.broadcast_to(np.asarray(p, np.float64), local.shape) for p in positions]
    return np.concatenate(origins), np.concatenate([local] * len(positions))


def _camera(np, position, target, fov_deg=70.0):
    """A pinhole camera fan (``_CAMERA`` pixels, row by row) from ``position`` at ``target``."""
    width, height = _CAMERA
    forward = np.asarray(target, np.float64) - np.asarray(position, np.float64)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    focal = 0.5 * width / np.tan(np.radians(fov_deg) / 2.0)
    u = np.arange(width) + 0.5 - width / 2.0
    v = height / 2.0 - (np.arange(height) + 0.5)
    vv, uu = np.meshgrid(v, u, indexing="ij")
    d = focal * forward + uu[..., None] * right + vv[..., None] * up
    d = d.reshape(-1, 3)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return np.broadcast_to(np.asarray(position, np.float64), d.shape).copy(), d


def _height_scans(np, rng, scans: int, half: float):
    """Isaac Lab's height scan: a 1.6 m x 1.0 m grid at 0.1 m, down from 20 m, per robot."""
    gx, gy = np.meshgrid(np.linspace(-0.8, 0.8, 17), np.linspace(-0.5, 0.5, 11), indexing="ij")
    grid = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], -1)
    bases = rng.uniform(-half + 1.0, half - 1.0, (scans, 2))
    o = np.concatenate([grid + [bx, by, 20.0] for bx, by in bases])
    d = np.broadcast_to([0.0, 0.0, -1.0], o.shape).copy()
    return o, d


def _dense_scene(np, trimesh, rng, count):
    stage = _stage(np, [_noised_sphere(np, trimesh, rng, 6)], ground_z=-1.1)
    rays = {
        "scattered": _scattered(np, rng, count, (0, 0, 0), 3.0, -1.0, 1.0),
        "lidar fans": _lidar(
            np,
            count,
            [
                (2.2 * np.cos(p), 2.2 * np.sin(p), 0.2 * np.sin(3 * p))
                for p in np.linspace(0, 2 * np.pi, 8, endpoint=False)
            ],
        ),
        "camera fan": _camera(np, (2.6, -1.2, 0.6), (0.0, 0.0, -0.2)),
    }
    return stage, [], rays


def _terrain_scene(np, trimesh, rng, count):
    n, half = 256, 10.0
    x, y = np.meshgrid(np.linspace(-half, half, n), np.linspace(-half, half, n), indexing="ij")
    z = 0.4 * np.sin(0.7 * x) * np.cos(0.5 * y) + 0.15 * np.sin(2.3 * x + 1.7 * y)
    z = z + rng.normal(0.0, 0.02, z.shape)
    vertices = np.stack([x.ravel(), y.ravel(), z.ravel()], -1)
    i, j = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (i * n + j).ravel()
    faces = np.concatenate(
        [np.stack([a, a + n, a + n + 1], -1), np.stack([a, a + n + 1, a + 1], -1)]
    )
    stage = _stage(np, [(vertices, faces)])

    def height(px, py):
        return 0.4 * np.sin(0.7 * px) * np.cos(0.5 * py) + 0.15 * np.sin(2.3 * px + 1.7 * py)

    spots = rng.uniform(-half + 2.0, half - 2.0, (8, 2))
    lo, hi = (-half, -half, -0.6), (half, half, 0.6)
    rays = {
        "height scans": _height_scans(np, rng, max(1, count // 187), half),
        "scattered": _scattered(np, rng, count, (0, 0, 0), 14.0, lo, hi),
        "lidar fans": _lidar(np, count, [(px, py, height(px, py) + 0.6) for px, py in spots]),
        "camera fan": _camera(np, (-9.0, -1.0, height(-9.0, -1.0) + 1.5), (0.0, 0.0, 0.0)),
    }
    return stage, [], rays


def _large_terrain_scene(np, trimesh, rng, count):
    """A 30 m heightfield of 318k triangles (400 x 400 vertices), lidars and a camera on it.

    Not in the default set: a terrain whose BVH (about 25 MB) outgrows the L2 and the
    benchmark's other scenes, to check that a gain is not tuned to the 20 m terrain.
    """
    n, half = 400, 15.0
    x, y = np.meshgrid(np.linspace(-half, half, n), np.linspace(-half, half, n), indexing="ij")

    def height(px, py):
        return 0.6 * np.sin(0.45 * px) * np.cos(0.35 * py) + 0.2 * np.sin(1.9 * px - 1.3 * py)

    z = height(x, y) + rng.normal(0.0, 0.03, x.shape)
    vertices = np.stack([x.ravel(), y.ravel(), z.ravel()], -1)
    i, j = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (i * n + j).ravel()
    faces = np.concatenate(
        [np.stack([a, a + n + 1, a + 1], -1), np.stack([a, a + n, a + n + 1], -1)]
    )
    stage = _stage(np, [(vertices, faces)])
    spots = rng.uniform(-half + 2.0, half - 2.0, (8, 2))
    rays = {
        "lidar fans": _lidar(np, count, [(px, py, height(px, py) + 0.8) for px, py in spots]),
        "camera fan": _camera(np, (-12.0, 2.0, height(-12.0, 2.0) + 1.2), (0.0, 0.0, 0.0)),
    }
    return stage, [], rays


def _room_scene(np, trimesh, rng, count):
    sx, sy, sz = 10.0, 8.0, 3.0
    parts = [
        _box(np, trimesh, rng, (sx, sy, 0.1), (0, 0, -0.05), turn=False),
        _box(np, trimesh, rng, (sx, sy, 0.1), (0, 0, sz + 0.05), turn=False),
        _box(np, trimesh, rng, (0.1, sy, sz), (-sx / 2 - 0.05, 0, sz / 2), turn=False),
        _box(np, trimesh, rng, (0.1, sy, sz), (sx / 2 + 0.05, 0, sz / 2), turn=False),
        _box(np, trimesh, rng, (sx, 0.1, sz), (0, -sy / 2 - 0.05, sz / 2), turn=False),
        _box(np, trimesh, rng, (sx, 0.1, sz), (0, sy / 2 + 0.05, sz / 2), turn=False),
    ]
    for _ in range(40):
        e = rng.uniform(0.2, 1.0, 3)
        c = (rng.uniform(-sx / 2 + 1, sx / 2 - 1), rng.uniform(-sy / 2 + 1, sy / 2 - 1), e[2] / 2)
        parts.append(_box(np, trimesh, rng, e, c))
    for _ in range(10):
        c = (rng.uniform(-4, 4), rng.uniform(-3, 3), rng.uniform(0.3, 2.0))
        parts.append(_noised_sphere(np, trimesh, rng, 3, rng.uniform(0.15, 0.4), c))
    for _ in range(3):
        c = (rng.uniform(-3, 3), rng.uniform(-2, 2), rng.uniform(0.6, 1.5))
        parts.append(_noised_sphere(np, trimesh, rng, 5, rng.uniform(0.4, 0.6), c))
    stage = _stage(np, parts)
    inside = ((-sx / 2 + 0.2, -sy / 2 + 0.2, 0.2), (sx / 2 - 0.2, sy / 2 - 0.2, sz - 0.2))
    o = rng.uniform(*inside, (count, 3))
    d = rng.normal(size=(count, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    lidars = np.stack([rng.uniform(-4, 4, 8), rng.uniform(-3, 3, 8)], -1)
    rays = {
        "scattered": (o, d),
        "lidar fans": _lidar(np, count, [(x, y, 1.2) for x, y in lidars]),
        "camera fan": _camera(np, (-4.6, -3.6, 2.2), (1.0, 1.0, 0.5)),
    }
    return stage, [], rays


def _panda_scene(np, trimesh, rng, count):
    from pathlib import Path

    from pxr import Usd

    path = Path(__file__).resolve().parents[1] / "scenes" / "panda_table.usda"
    stage = Usd.Stage.Open(str(path))
    center = (0.4, 0.0, 0.6)
    rays = {
        "scattered": _scattered(np, rng, count, center, 2.0, (-0.2, -0.6, 0.0), (1.0, 0.6, 1.2)),
        "lidar fans": _lidar(
            np,
            count,
            [
                (0.4 + 1.2 * np.cos(p), 1.2 * np.sin(p), 0.9)
                for p in np.linspace(0, 2 * np.pi, 8, endpoint=False)
            ],
        ),
        "camera fan": _camera(np, (1.3, 0.0, 1.5), (0.35, 0.0, 0.4)),
    }
    return stage, [], rays


_SCENES = {
    "dense": _dense_scene,
    "terrain": _terrain_scene,
    "room": _room_scene,
    "panda": _panda_scene,
    "terrain_large": _large_terrain_scene,
}
_DEFAULT_SCENES = ("dense", "terrain", "room", "panda")


def _f32_exact(np, o, d):
    o = np.ascontiguousarray(o.astype(np.float32).astype(np.float64))
    d = d.astype(np.float32).astype(np.float64)
    d = np.ascontiguousarray(d / np.linalg.norm(d, axis=1, keepdims=True))
    return o, d


def _best(times):
    return min(times)


def _compile_times(np, kernels):
    """First-call times of the kernels on tiny inputs (compile or cache load)."""
    v = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    f = np.array([[0, 1, 2]], np.int64)
    out = {}
    t0 = time.perf_counter()
    i64 = np.int64
    from runtime.rays._bvh_build_kernels import bvh_build_kernel

    bvh_build_kernel(v, f, np.empty((2, 12)), np.empty((2, 4), i64), np.empty((1, 9)),
                     np.empty(1, i64), np.empty(1, i64))  # fmt: skip
    out["bvh build"] = time.perf_counter() - t0
    from runtime.rays.backends import NumbaBvhBackend

    b = NumbaBvhBackend([(v, f)], double_sided=True)
    o = np.zeros((1, 3))
    d = np.array([[0.0, 0.0, 1.0]])
    pose = (np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0, 0.0]]))
    args = (b.wide_nodes_float64, b.leaf_triangles, b.leaf_ids, b.wide_roots, *pose,
            np.zeros((1, 6)), o, d, np.ones(1), True, np.empty(1), np.empty(1, i64))  # fmt: skip
    t0 = time.perf_counter()
    kernels.scene_closest_hit_kernel(*args)
    out["cast (1 thread)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    kernels.scene_closest_hit_parallel_kernel(*args, 2)
    out["cast (parallel)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    kernels.ray_morton_codes_kernel(o, d, np.empty(1, np.int64))
    kernels.gather_rays_kernel(np.zeros(1, np.int64), o, d, np.ones(1), np.empty((1, 3)),
                               np.empty((1, 3)), np.empty(1))  # fmt: skip
    kernels.scatter_hits_kernel(np.zeros(1, np.int64), np.ones(1), np.zeros(1, np.int64),
                                np.empty(1), np.empty(1, np.int64))  # fmt: skip
    kernels.ray_bucket_order_kernel(o, d, np.ones(1), np.empty(1, i64), np.empty(1, i64),
                                    np.empty((1, 3)), np.empty((1, 3)), np.empty(1))  # fmt: skip
    out["Morton sort"] = time.perf_counter() - t0
    return out


def _build_times(np, vertices, faces, repeats: int):
    from embreex import rtcore_scene
    from embreex.mesh_construction import TriangleMesh

    from runtime.rays.backends import NumbaBvhBackend

    v32 = vertices.astype(np.float32)
    f32 = faces.astype(np.int32)
    probe_o = np.zeros((1, 3), np.float32)
    probe_d = np.array([[0.0, 0.0, 1.0]], np.float32)
    ours, embree = [], []
    backend = scene = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        backend = NumbaBvhBackend([(vertices, faces)], double_sided=True)
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        scene = rtcore_scene.EmbreeScene()
        TriangleMesh(scene, v32, f32)
        scene.run(probe_o, probe_d, query="DISTANCE")  # commits (builds) the scene
        embree.append(time.perf_counter() - t0)
    return backend, scene, _best(ours), _best(embree), backend.node_count


def _parse_build_times(np, stage, bodies, repeats: int):
    """``RayScene.from_stage`` + one probe cast: numba backend vs embreex backend (best of)."""
    from runtime.rays import RayScene

    o = np.zeros((1, 3))
    d = np.array([[0.0, 0.0, -1.0]])
    m = np.ones(1)
    out = (np.empty(1), np.empty(1, np.int64), np.empty((1, 3)))
    times = {"numba": [], "embreex": []}
    scene = None
    for _ in range(repeats):
        for backend in times:
            t0 = time.perf_counter()
            built = RayScene.from_stage(stage, bodies, backend=backend, double_sided=True)
            built.cast(o, d, m, None, None, *out)  # (Embree commits its scene here)
            times[backend].append(time.perf_counter() - t0)
            if backend == "numba":
                scene = built
    return scene, _best(times["numba"]), _best(times["embreex"])


def _world_triangles(np, scene):
    """Every group's triangles posed in the world frame, one mesh (for both sides)."""
    from runtime._quat import rotation_matrices

    positions, orientations = scene.group_poses(None, None)
    rotations = rotation_matrices(orientations)
    vertices, faces, base = [], [], 0
    for g, (_, mesh) in enumerate(scene.group_meshes()):
        v = np.asarray(mesh.vertices, np.float64) @ rotations[g].T + positions[g]
        vertices.append(v)
        faces.append(np.asarray(mesh.faces, np.int64) + base)
        base += len(v)
    v = np.concatenate(vertices).astype(np.float32).astype(np.float64)
    return np.ascontiguousarray(v), np.ascontiguousarray(np.concatenate(faces))


def _summary_row(rates, threads_list):
    """simrt's faster order on 1 thread vs Embree's fastest call; 2 threads vs 1 (same order)."""
    embree = max(v for k, v in rates.items() if isinstance(k, str) and k.startswith("embree"))
    given, own = rates["simrt 1 thr, as given"], rates["simrt 1 thr, own order (sort incl.)"]
    order = "as given" if given >= own else "own order (sort incl.)"
    ours = max(given, own)
    many = max(threads_list)
    scaling = rates.get(f"simrt {many} thr, {order}", ours) / ours
    return ours, embree, order, scaling


def _compare(np, kernels, backend, scene, o, d, repeats: int, threads_list):
    """Times of every candidate on the same rays (interleaved rounds); returns rows."""
    from runtime.rays.backends import NumbaBvhBackend

    count = len(o)
    o32 = np.ascontiguousarray(o, np.float32)
    d32 = np.ascontiguousarray(d, np.float32)
    max_d = np.full(count, np.inf)
    pose = (np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0, 0.0]]))
    dist = np.empty(count)
    face = np.empty(count, np.int64)
    codes = np.empty(count, np.int64)
    emb_out = np.empty(count, np.float32)

    def embree_sorted():
        kernels.ray_morton_codes_kernel(o, d, codes)
        order = np.argsort(codes)
        t = scene.run(o32[order], d32[order], query="DISTANCE")
        emb_out[order] = t

    keys = np.empty(count, np.int64)
    bucket_order = np.empty(count, np.int64)
    bo, bd, bm = np.empty((count, 3)), np.empty((count, 3)), np.empty(count)

    def embree_bucketed():
        # simrt's own order (top 12 Morton bits, rays moved by the same kernel)
        kernels.ray_bucket_order_kernel(o, d, max_d, keys, bucket_order, bo, bd, bm)
        t = scene.run(bo.astype(np.float32), bd.astype(np.float32), query="DISTANCE")
        emb_out[bucket_order] = t

    candidates = {
        "embree distance-only, as given": lambda: scene.run(o32, d32, query="DISTANCE"),
        "embree distance+id (output=1), as given": lambda: scene.run(o32, d32, output=1),
        "embree distance-only, Morton order (sort incl.)": embree_sorted,
        "embree distance-only, simrt's order (sort incl.)": embree_bucketed,
    }
    backends = {}
    for threads in threads_list:
        for sort in (False, True):
            b = NumbaBvhBackend.__new__(NumbaBvhBackend)
            b.__dict__.update(backend.__dict__)
            b._sort_scratch = None
            b.threads = threads
            b.coherent_sort_threshold = NumbaBvhBackend.coherent_sort_threshold if sort else 0
            order = "own order (sort incl.)" if sort else "as given"
            label = f"simrt {threads} thr, {order}"
            backends[label] = b
            candidates[label] = (
                lambda b=b: b.cast(o, d, max_d, *pose, dist, face)  # noqa: B023
            )
    for call in candidates.values():  # warm up (compile, scratch buffers)
        call()
    times = {name: [] for name in candidates}
    cpu = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, call in candidates.items():
            c0 = time.process_time()
            t0 = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    # correctness on this ray set: simrt vs Embree's full query
    result = scene.run(o32, d32, output=1)
    prim = np.asarray(result["primID"])
    tfar = np.asarray(result["tfar"], np.float64)
    next(iter(backends.values())).cast(o, d, max_d, *pose, dist, face)
    hit = prim >= 0
    both = hit & np.isfinite(dist)
    agree = np.abs(dist[both] - tfar[both]) <= 1e-5
    same_hits = float(np.mean(np.isfinite(dist) == hit))
    rates = {name: count / _best(t) / 1e6 for name, t in times.items()}
    rates.update({("cpu", name): _best(c) for name, c in cpu.items()})
    return rates, float(hit.mean()), float(agree.mean()) if agree.size else 1.0, same_hits


def _print_rates(rates, threads_list):
    # the reference: Embree's faster call (noise decides between the two on some sets)
    ref = max(rates["embree distance-only, as given"],
              rates["embree distance+id (output=1), as given"])  # fmt: skip
    ref_sorted = max(rates["embree distance-only, Morton order (sort incl.)"],
                     rates["embree distance-only, simrt's order (sort incl.)"])  # fmt: skip
    print(f"  {'candidate':<52} {'Mrays/s':>8} {'vs Embree':>10} {'vs Embree same order':>21}")
    for name, rate in rates.items():
        if isinstance(name, tuple):
            continue
        same = ref_sorted if "order (sort incl.)" in name and "embree" in name else ref
        if "own order" in name:
            same = max(ref, ref_sorted)
        print(f"  {name:<52} {rate:8.2f} {rate / ref:9.2f}x {rate / same:20.2f}x")
    one = rates.get("simrt 1 thr, as given")
    for threads in threads_list:
        if threads > 1 and one:
            label = f"simrt {threads} thr, as given"
            two = rates[label]
            cpu_ratio = rates["cpu", label] / rates["cpu", "simrt 1 thr, as given"]
            print(f"  simrt {threads} threads / 1 thread (as given): {two / one:.2f}x wall; "
                  f"process CPU time {cpu_ratio:.2f}x of one thread's (1.00 = no parallel "
                  "overhead: the wall speedup is then up to the free cores)")  # fmt: skip


def _phases(np, kernels, backend, o, d, repeats: int, threads_list):
    """Milliseconds of each phase of a sorted cast (sort, cast, scatter) and of the cast as
    given, on each thread count (best of interleaved rounds; the kernels called directly)."""
    from runtime.rays.backends import run_parallel

    count = len(o)
    max_d = np.full(count, np.inf)
    pose = (np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0, 0.0]]))
    keys, order = np.empty(count, np.int64), np.empty(count, np.int64)
    so, sd, sm = np.empty((count, 3)), np.empty((count, 3)), np.empty(count)
    dist, face = np.empty(count), np.empty(count, np.int64)
    out_d, out_f = np.empty(count), np.empty(count, np.int64)
    bvh = (backend.wide_nodes_float64, backend.leaf_triangles, backend.leaf_ids,
           backend.wide_roots)  # fmt: skip
    boxes = np.zeros((1, 6))

    def call(one, parallel, args, threads):
        if threads > 1:
            return lambda: run_parallel(parallel, args, threads)
        return lambda: one(*args)

    calls = {}
    for t in threads_list:
        calls["sort", t] = call(kernels.ray_bucket_order_kernel,
                                kernels.ray_bucket_order_parallel_kernel,
                                (o, d, max_d, keys, order, so, sd, sm), t)  # fmt: skip
        for what, rays in (("cast", (so, sd, sm)), ("as given", (o, d, max_d))):
            args = (*bvh, *pose, boxes, *rays, True, dist, face)
            calls[what, t] = call(kernels.scene_closest_hit_kernel,
                                  kernels.scene_closest_hit_parallel_kernel, args, t)  # fmt: skip
        calls["scatter", t] = call(kernels.scatter_hits_kernel,
                                   kernels.scatter_hits_parallel_kernel,
                                   (order, dist, face, out_d, out_f), t)  # fmt: skip
    for f in calls.values():
        f()
    times = {k: [] for k in calls}
    for _ in range(repeats):
        for k, f in calls.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    best = {k: _best(v) * 1e3 for k, v in times.items()}
    cells = []
    for t in threads_list:
        total = best["sort", t] + best["cast", t] + best["scatter", t]
        cells.append(f"{t} thr: sort {best['sort', t]:.2f} + cast {best['cast', t]:.2f} + "
                     f"scatter {best['scatter', t]:.2f} = {total:.2f}, as given "
                     f"{best['as given', t]:.2f}")  # fmt: skip
    one, many = min(threads_list), max(threads_list)
    if many > one:
        ratio = {k: best[k, one] / best[k, many] for k in ("sort", "cast", "scatter", "as given")}
        cells.append(f"{many}/{one} thr: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratio.items()))
    print("  phases [ms]: " + "; ".join(cells))


def _trimesh_rate(np, trimesh, vertices, faces, o, d, count: int):
    from trimesh.ray.ray_triangle import RayMeshIntersector

    mesh = trimesh.Trimesh(vertices=vertices, faces=faces, process=False)
    intersector = RayMeshIntersector(mesh)
    intersector.intersects_first(o[:2], d[:2])  # builds its r-tree
    t0 = time.perf_counter()
    intersector.intersects_first(o[:count], d[:count])
    return count / (time.perf_counter() - t0) / 1e6


class _TimedScene:
    """An Embree scene whose ``run`` calls add their duration to ``spent[0]``."""

    def __init__(self, scene, spent):
        self.scene = scene
        self.spent = spent

    def run(self, *args, **kwargs):
        t0 = time.perf_counter()
        result = self.scene.run(*args, **kwargs)
        self.spent[0] += time.perf_counter() - t0
        return result


def _inside_embree_share(np, scene, call, rounds: int = 20):
    """Total time of ``call`` over the time spent inside Embree's ``run`` (overhead factor)."""
    backend = scene.backend
    spent = [0.0]
    saved = (backend._static, backend._merged, list(backend._scenes))
    if backend._static is not None:
        backend._static = _TimedScene(backend._static, spent)
    if backend._merged is not None:
        backend._merged = _TimedScene(backend._merged, spent)
    backend._scenes = [s if s is None else _TimedScene(s, spent) for s in backend._scenes]
    t0 = time.perf_counter()
    for _ in range(rounds):
        call()
    total = time.perf_counter() - t0
    backend._static, backend._merged, backend._scenes = saved
    return total / max(spent[0], 1e-12)


def _sensor_path(np, repeats: int):
    """RayScene.cast (embreex and numba backends) against raw Embree, Panda scene."""
    from pathlib import Path

    from embreex import rtcore_scene
    from embreex.mesh_construction import TriangleMesh
    from pxr import Usd, UsdPhysics

    import runtime.schema  # noqa: F401 - registers the Isaac schemas before the first stage
    from runtime.rays.scene import RayScene

    path = Path(__file__).resolve().parents[1] / "scenes" / "panda_table.usda"
    if not path.exists():
        print("sensor path: scenes/panda_table.usda missing, skipped")
        return
    stage = Usd.Stage.Open(str(path))
    bodies = [str(p.GetPath()) for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)]
    # fixed: every group at its USD pose and known fixed; moving: the robot's links follow
    # body poses (here their USD poses) every cast
    scenes = {
        (b, moving): RayScene.from_stage(stage, bodies if moving else [], backend=b)
        for b in ("numba", "embreex")
        for moving in (False, True)
    }
    # raw Embree on the same triangles, posed in the world frame, one scene
    reference = scenes["numba", False]
    vertices, faces = [], []
    base = 0
    positions, orientations = reference.group_poses(None, None)
    from runtime._quat import rotation_matrices

    rotations = rotation_matrices(orientations)
    for g, (_, mesh) in enumerate(reference.group_meshes()):
        v = np.asarray(mesh.vertices) @ rotations[g].T + positions[g]
        vertices.append(v)
        faces.append(np.asarray(mesh.faces) + base)
        base += len(v)
    raw = rtcore_scene.EmbreeScene()
    TriangleMesh(raw, np.concatenate(vertices).astype(np.float32),
                 np.concatenate(faces).astype(np.int32))  # fmt: skip
    rng = np.random.default_rng(5)
    print(f"sensor path, Panda scene ({reference.face_count} triangles, "
          f"{reference.group_count} groups, {len(bodies)} bodies), RayScene.cast per ray [us] "
          "(rays from one point above the table):")  # fmt: skip
    print(f"  {'rays':>6} {'raw Embree':>11} {'embreex fixed':>14} {'ratio':>6} "
          f"{'embreex moving':>15} {'ratio':>6} {'numba fixed':>12} "
          f"{'numba moving':>13}")  # fmt: skip
    for count in (720, 10_000):
        # lidar-like rays from above the table
        o = np.tile([0.4, 0.0, 1.4], (count, 1))
        d = rng.normal(size=(count, 3))
        d[:, 2] = -np.abs(d[:, 2]) - 0.3
        o, d = _f32_exact(np, o, d)
        o32, d32 = o.astype(np.float32), d.astype(np.float32)
        max_d = np.full(count, 5.0)
        dist = np.empty(count)
        actors = np.empty(count, np.int64)
        normals = np.empty((count, 3))
        calls = {
            "raw": lambda: raw.run(o32, d32, output=1),  # noqa: B023
            **{
                name: (
                    lambda s=s: s.cast(o, d, max_d, None, None, dist, actors, normals)  # noqa: B023
                )
                for name, s in scenes.items()
            },
        }
        times = {k: [] for k in calls}
        for call in calls.values():
            call()
        for _ in range(max(repeats, 20)):
            for name, call in calls.items():
                t0 = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - t0)
        per = {k: _best(t) / count * 1e6 for k, t in times.items()}
        overhead = {
            moving: _inside_embree_share(np, scenes["embreex", moving], calls["embreex", moving])
            for moving in (False, True)
        }
        ef, em = per["embreex", False], per["embreex", True]
        print(f"  {count:6d} {per['raw']:11.3f} {ef:14.3f} {ef / per['raw']:5.2f}x {em:15.3f} "
              f"{em / per['raw']:5.2f}x {per['numba', False]:12.3f} "
              f"{per['numba', True]:13.3f}")  # fmt: skip
        print(f"  {'':6} embreex backend total / time inside its Embree calls: fixed "
              f"{overhead[False]:.2f}x, moving {overhead[True]:.2f}x")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenes",
        default=",".join(_DEFAULT_SCENES),
        help="comma list of " + ", ".join(_SCENES) + " (default: all but terrain_large)",
    )
    parser.add_argument("--rays", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", default="1,2", help="comma list of thread counts")
    parser.add_argument("--trimesh-rays", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--keep-cache", action="store_true", help="reuse Numba's disk cache")
    parser.add_argument("--no-sensor-path", action="store_true")
    parser.add_argument(
        "--phases",
        action="store_true",
        help="also time the phases of a sorted cast (sort, cast, scatter) per thread count",
    )
    args = parser.parse_args()
    if not args.keep_cache:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="simrt-bench-")

    import numba
    import numpy as np
    import trimesh

    import runtime.schema  # noqa: F401 - registers the Isaac schemas before the first stage
    from runtime.rays import _scene_cast_kernels as kernels

    threads_list = [min(int(t), numba.config.NUMBA_NUM_THREADS) for t in args.threads.split(",")]
    threads_list = sorted(set(threads_list))
    compile_times = _compile_times(np, kernels)
    print(f"machine: {os.cpu_count()} CPUs, Numba threads {numba.config.NUMBA_NUM_THREADS} "
          f"(layer {numba.threading_layer()}), load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("first-call compile (or cache load): " + ", ".join(
        f"{k} {v:.2f} s" for k, v in compile_times.items()))  # fmt: skip
    summary = []
    for name in filter(None, args.scenes.split(",")):
        rng = np.random.default_rng(args.seed)
        stage, bodies, ray_sets = _SCENES[name](np, trimesh, rng, args.rays)
        scene, parse_ours, parse_embree = _parse_build_times(np, stage, bodies, 3)
        vertices, faces = _world_triangles(np, scene)
        backend, embree, ours, raw_embree, nodes = _build_times(np, vertices, faces, 3)
        print(f"\n== scene {name}: {len(faces)} triangles in {scene.group_count} groups, "
              f"load average {os.getloadavg()[0]:.1f}\n"
              f"   build from USD (same parsing): simrt {parse_ours * 1e3:.1f} ms, embreex "
              f"{parse_embree * 1e3:.1f} ms: {parse_ours / parse_embree:.2f}x Embree's time\n"
              f"   bare build on the triangles: simrt {ours * 1e3:.1f} ms ({nodes} nodes), "
              f"Embree {raw_embree * 1e3:.1f} ms (construct + commit): "
              f"{ours / raw_embree:.2f}x")  # fmt: skip
        for label, (o, d) in ray_sets.items():
            o, d = _f32_exact(np, o, d)
            rates, hit_rate, agree, same = _compare(
                np, kernels, backend, embree, o, d, args.repeats, threads_list
            )
            print(f"-- {label}: {len(o)} rays, hit rate {hit_rate:.2f}; distances equal "
                  f"Embree's within 1e-5 on {agree * 100:.3f} % of common hits, same hit/miss "
                  f"on {same * 100:.3f} % of rays")  # fmt: skip
            _print_rates(rates, threads_list)
            if args.phases:
                _phases(np, kernels, backend, o, d, args.repeats, threads_list)
            summary.append((name, label, len(o), *_summary_row(rates, threads_list),
                            parse_ours / parse_embree))  # fmt: skip
            if args.trimesh_rays > 0 and label == "scattered" and name == "dense":
                rate = _trimesh_rate(np, trimesh, vertices, faces, o, d, args.trimesh_rays)
                print(f"  trimesh (rtree + NumPy, {args.trimesh_rays} rays): "
                      f"{rate * 1e3:.3f} krays/s")  # fmt: skip
    many = max(threads_list)
    print(f"\nsummary: simrt's faster order on 1 thread against Embree's fastest call (any "
          f"query, any order, sort included); {many} threads / 1 thread in simrt's order; build "
          "from USD with the same parsing")  # fmt: skip
    print(f"  {'scene':<13} {'rays':<13} {'count':>7} {'simrt':>7} {'Embree':>7} {'ratio':>6} "
          f"{'simrt order':<23} {f'{many} thr/1':>8} {'build':>6}")  # fmt: skip
    for name, label, count, ours, ref, order, scaling, build in summary:
        print(f"  {name:<13} {label:<13} {count:7d} {ours:7.2f} {ref:7.2f} {ours / ref:5.2f}x "
              f"{order:<23} {scaling:7.2f}x {build:5.2f}x")  # fmt: skip
    print("  (Mrays/s; acceptance of issue 32: scattered >= 0.7x, fans >= 1.0x, build <= 2x, "
          f"{many} threads >= 1.8x one)")  # fmt: skip
    if not args.no_sensor_path:
        print()
        _sensor_path(np, args.repeats)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
