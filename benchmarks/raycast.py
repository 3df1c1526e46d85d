"""Ray casting: simrt's Numba BVH against Embree (embreex) and trimesh, in one run.

Honest by construction:

* every backend gets the same rays in the same order. "as given" is the caller's order
  (scattered rays in random order, lidar fans column by column as a spinning lidar emits
  them); "own order" is each backend's preferred order with the sort cost included (simrt:
  ``NumbaBvhBackend.cast``'s default, a coarse 6-D Morton order (the code's top 12 bits)
  unless a sample shows the batch coherent already; Embree: the full Morton sort, and
  simrt's coarse order (its float32 conversion included), each done around its call,
  results scattered back to the caller's order);
* Embree is called the fastest way that returns what we need: ``query="DISTANCE"``
  (distances only) and ``output=1`` (distance and triangle id, what ``NumbaBvhBackend.cast``
  returns); "vs Embree" is against the faster of the two as given, "same order" against
  Embree in the same order (simrt's own-order rows: the faster of Embree's two orders);
* simrt's backend is built ``double_sided=True`` here so that both answer the same query
  (Embree has no back-face culling); Embree gets float32 arrays prepared outside the timing;
* interleaved repeats (every candidate once per round), best of ``--repeats`` rounds, so
  that load from other processes hits every candidate alike.

Scenes: a noised icosphere plus six small spheres and a floor quad, at ~10k, ~100k and
(``--sizes 10k,100k,1m``) ~1.3M triangles. Rays: ``--rays`` scattered rays (origins on a
sphere of radius 3 aimed into [-1, 1]^3) and as many lidar-fan rays (8 spinning lidars of
16 rows around the scene). Reported: BVH build time against Embree's (scene construction
and commit), first-call compile times of the kernels apart (fresh Numba cache per process
unless ``--keep-cache``), Mrays/s on 1 and 2 threads (Embree through embreex casts on one
thread: it holds the GIL), distances agreement with Embree, trimesh on a subset, and the
sensor path on the Panda scene (``RayScene.cast`` with the embreex backend against raw
Embree on the same world-frame triangles, per ray).

Usage::

    python benchmarks/raycast.py [--sizes 10k,100k] [--rays 100000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

_SUBDIVISIONS = {"10k": (4, 3), "100k": (6, 4), "1m": (8, 5)}


def _scene(np, trimesh, size: str, seed: int):
    rng = np.random.default_rng(seed)
    big, small = _SUBDIVISIONS[size]
    sphere = trimesh.creation.icosphere(subdivisions=big)
    sphere.vertices = sphere.vertices * (1.0 + rng.normal(0.0, 0.002, (len(sphere.vertices), 1)))
    parts = [sphere]
    for _ in range(6):
        s = trimesh.creation.icosphere(subdivisions=small, radius=rng.uniform(0.2, 0.4))
        s.apply_translation(rng.uniform(-1.5, 1.5, 3))
        parts.append(s)
    e = 10.0
    floor = trimesh.Trimesh(
        [[-e, -e, -1.6], [e, -e, -1.6], [e, e, -1.6], [-e, e, -1.6]], [[0, 1, 2], [0, 2, 3]]
    )
    parts.append(floor)
    mesh = trimesh.util.concatenate(parts)
    vertices = np.asarray(mesh.vertices).astype(np.float32).astype(np.float64)
    return np.ascontiguousarray(vertices), np.ascontiguousarray(mesh.faces, np.int64), rng


def _scattered(np, rng, count: int):
    o = rng.normal(size=(count, 3))
    o = o / np.linalg.norm(o, axis=1, keepdims=True) * 3.0
    d = rng.uniform(-1.0, 1.0, (count, 3)) - o
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return o, d


def _lidar(np, rng, count: int):
    """8 spinning lidars (16 rows, -15..15 deg) around the scene, column by column."""
    sensors, rows = 8, 16
    columns = max(1, count // (sensors * rows))
    azimuth = np.linspace(0.0, 2.0 * np.pi, columns, endpoint=False)
    elevation = np.radians(np.linspace(-15.0, 15.0, rows))
    a, el = np.meshgrid(azimuth, elevation, indexing="ij")  # column-major emission order
    local = np.stack([np.cos(el) * np.cos(a), np.cos(el) * np.sin(a), np.sin(el)], -1)
    local = local.reshape(-1, 3)
    origins, directions = [], []
    for k in range(sensors):
        phi = 2.0 * np.pi * k / sensors
        position = np.array([2.2 * np.cos(phi), 2.2 * np.sin(phi), rng.uniform(-0.5, 0.5)])
        origins.append(np.broadcast_to(position, local.shape))
        directions.append(local)
    return np.concatenate(origins), np.concatenate(directions)


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
    args = (b.wide_nodes, b.leaf_triangles, b.leaf_ids, b.wide_roots, *pose,
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
    parser.add_argument("--sizes", default="10k,100k", help="comma list of 10k, 100k, 1m")
    parser.add_argument("--rays", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", default="1,2", help="comma list of thread counts")
    parser.add_argument("--trimesh-rays", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--keep-cache", action="store_true", help="reuse Numba's disk cache")
    parser.add_argument("--no-sensor-path", action="store_true")
    args = parser.parse_args()
    if not args.keep_cache:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="simrt-bench-")

    import numba
    import numpy as np
    import trimesh

    from runtime.rays import _scene_cast_kernels as kernels

    threads_list = [min(int(t), numba.config.NUMBA_NUM_THREADS) for t in args.threads.split(",")]
    threads_list = sorted(set(threads_list))
    compile_times = _compile_times(np, kernels)
    print(f"machine: {os.cpu_count()} CPUs, Numba threads {numba.config.NUMBA_NUM_THREADS} "
          f"(layer {numba.threading_layer()}), load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("first-call compile (or cache load): " + ", ".join(
        f"{k} {v:.2f} s" for k, v in compile_times.items()))  # fmt: skip
    for size in filter(None, args.sizes.split(",")):
        vertices, faces, rng = _scene(np, trimesh, size, args.seed)
        backend, scene, ours, embree, nodes = _build_times(np, vertices, faces, 3)
        print(f"\n== scene {size}: {len(faces)} triangles; build simrt {ours * 1e3:.1f} ms "
              f"({nodes} nodes), Embree {embree * 1e3:.1f} ms (construct + commit): "
              f"{ours / embree:.2f}x Embree's time")  # fmt: skip
        for label, make in (("scattered", _scattered), ("lidar fans", _lidar)):
            o, d = _f32_exact(np, *make(np, rng, args.rays))
            rates, hit_rate, agree, same = _compare(
                np, kernels, backend, scene, o, d, args.repeats, threads_list
            )
            print(f"-- {label}: {len(o)} rays, hit rate {hit_rate:.2f}; distances equal "
                  f"Embree's within 1e-5 on {agree * 100:.3f} % of common hits, same hit/miss "
                  f"on {same * 100:.3f} % of rays")  # fmt: skip
            _print_rates(rates, threads_list)
            if args.trimesh_rays > 0 and label == "scattered" and len(faces) > 200_000:
                print("  trimesh: skipped above 200k triangles (its ray queries need many GB)")
            elif args.trimesh_rays > 0 and label == "scattered":
                rate = _trimesh_rate(np, trimesh, vertices, faces, o, d, args.trimesh_rays)
                print(f"  trimesh (rtree + NumPy, {args.trimesh_rays} rays): "
                      f"{rate * 1e3:.3f} krays/s")  # fmt: skip
    if not args.no_sensor_path:
        print()
        _sensor_path(np, args.repeats)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
