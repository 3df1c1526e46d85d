"""Numba BVH kernels: structure invariants, brute-force Möller–Trumbore oracle, Embree parity."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from runtime.rays import _bvh_build_kernels as building
from runtime.rays import _embree_kernels, _solid_kernels
from runtime.rays import _scene_cast_kernels as casts
from runtime.rays import _traversal_kernels as traversal
from runtime.rays.backends import (
    PARALLEL_MIN_RAYS,
    EmbreexBackend,
    NumbaBvhBackend,
    RayBackend,
    make_ray_backend,
    resolve_threads,
)
from tests.helpers.bvh import build  # noqa: E402, F401


def brute_force(vertices, faces, origins, directions, max_d, double_sided):
    """Plain NumPy closest hit over every triangle (independent of the kernels)."""
    tri = vertices[faces]
    v0 = tri[:, 0]
    e1 = tri[:, 1] - v0
    e2 = tri[:, 2] - v0
    dist = np.full(len(origins), np.inf)
    face = np.full(len(origins), -1)
    for i, (o, d) in enumerate(zip(origins, directions, strict=True)):
        p = np.cross(d, e2)
        det = np.einsum("ij,ij->i", e1, p)
        ok = (np.abs(det) > 1e-300) if double_sided else det > 0.0
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        s = o - v0
        u = np.einsum("ij,ij->i", s, p) * inv
        q = np.cross(s, e1)
        v = (q @ d) * inv
        t = np.einsum("ij,ij->i", e2, q) * inv
        hit = ok & (u >= 0) & (u <= 1) & (v >= 0) & (u + v <= 1) & (t >= 0) & (t < max_d[i])
        if hit.any():
            k = np.argmin(np.where(hit, t, np.inf))
            dist[i] = t[k]
            face[i] = k
    return dist, face


def random_rays(rng, count, radius=3.0):
    o = rng.normal(size=(count, 3))
    o = o / np.linalg.norm(o, axis=1, keepdims=True) * radius
    target = rng.uniform(-1.0, 1.0, (count, 3))
    d = target - o
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return np.ascontiguousarray(o), np.ascontiguousarray(d)


@pytest.mark.parametrize("face_count_target", [1, 3, 5, 200, 5000])
def test_build_invariants(face_count_target):
    rng = np.random.default_rng(face_count_target)
    f = face_count_target
    vertices = rng.normal(size=(3 * f, 3))
    faces = np.arange(3 * f).reshape(f, 3)
    boxes, refs, tris, order = build(vertices, faces)
    # every triangle appears in exactly one leaf; leaf boxes contain their triangles;
    # internal child boxes contain their children's boxes
    seen = np.zeros(f, int)
    stack = [0]
    max_leaf = 0
    while stack:
        node = stack.pop()
        for slot in (0, 1):
            ref, count = refs[node, 2 * slot], refs[node, 2 * slot + 1]
            lo, hi = boxes[node, 6 * slot : 6 * slot + 3], boxes[node, 6 * slot + 3 : 6 * slot + 6]
            if count > 0:
                max_leaf = max(max_leaf, count)
                seen[ref : ref + count] += 1
                pts = np.concatenate(
                    [tris[ref : ref + count, 0:3],
                     tris[ref : ref + count, 0:3] + tris[ref : ref + count, 3:6],
                     tris[ref : ref + count, 0:3] + tris[ref : ref + count, 6:9]]
                )  # fmt: skip
                assert np.all(pts >= lo - 1e-12) and np.all(pts <= hi + 1e-12)
            elif ref >= 0:
                for s2 in (0, 1):
                    if refs[ref, 2 * s2 + 1] > 0 or refs[ref, 2 * s2] >= 0:
                        assert np.all(boxes[ref, 6 * s2 : 6 * s2 + 3] >= lo - 1e-12)
                        assert np.all(boxes[ref, 6 * s2 + 3 : 6 * s2 + 6] <= hi + 1e-12)
                stack.append(ref)
            else:
                assert np.all(lo == np.inf) and np.all(hi == -np.inf)
    assert np.all(seen == 1)
    assert max_leaf <= building.MAX_LEAF_SIZE
    np.testing.assert_array_equal(np.sort(order), np.arange(f))
    np.testing.assert_allclose(tris[:, 0:3], vertices[faces[order, 0]])


@pytest.mark.parametrize("double_sided", [False, True])
def test_closest_hit_matches_brute_force(double_sided):
    rng = np.random.default_rng(7)
    mesh = trimesh.creation.icosphere(subdivisions=2)
    parts = [mesh]
    for _ in range(6):  # overlapping, randomly placed boxes and spheres
        b = trimesh.creation.box(extents=rng.uniform(0.2, 0.8, 3))
        b.apply_translation(rng.uniform(-1.2, 1.2, 3))
        parts.append(b)
    mesh = trimesh.util.concatenate(parts)
    v, f = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    boxes, refs, tris, order = build(v, f)
    o, d = random_rays(rng, 400)
    o[:100] *= 0.1  # rays starting inside: back faces matter
    max_d = np.full(len(o), np.inf)
    max_d[::7] = 2.0
    dist = np.empty(len(o))
    face = np.empty(len(o), np.int64)
    traversal.bvh_closest_hit_kernel(boxes, refs, tris, order, 0, o, d, max_d, double_sided, dist,
                                   face)  # fmt: skip
    ref_d, ref_f = brute_force(v, f, o, d, max_d, double_sided)
    np.testing.assert_array_equal(np.isfinite(dist), np.isfinite(ref_d))
    hit = np.isfinite(ref_d)
    np.testing.assert_allclose(dist[hit], ref_d[hit], rtol=0, atol=1e-9)
    assert np.mean(face[hit] == ref_f[hit]) > 0.99  # ties on shared edges may differ
    assert np.all(face[~hit] == -1)
    if not double_sided:
        assert hit.sum() > 100


def test_single_sided_ignores_back_faces():
    quad_v = np.array([[0, -1, -1], [0, 1, -1], [0, 1, 1], [0, -1, 1]], float)
    faces = np.array([[0, 1, 2], [0, 2, 3]])  # normal +x
    backend = NumbaBvhBackend([(quad_v, faces)])
    both = NumbaBvhBackend([(quad_v, faces)], double_sided=True)
    o = np.array([[2.0, 0, 0], [-2.0, 0, 0]])
    d = np.array([[-1.0, 0, 0], [1.0, 0, 0]])
    pose = (np.zeros((1, 3)), np.array([[1.0, 0, 0, 0]]))
    for b, expected in ((backend, [2.0, np.inf]), (both, [2.0, 2.0])):
        dist = np.empty(2)
        face = np.empty(2, np.int64)
        b.cast(o, d, np.full(2, 10.0), *pose, dist, face)
        np.testing.assert_array_equal(dist, expected)
        assert (face >= 0).tolist() == [True, np.isfinite(expected[1])]


def test_backends_follow_the_protocol_and_reject_bad_input():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    f = np.array([[0, 1, 2]])
    for name in ("numba", "embreex"):
        b = make_ray_backend(name, [(v, f)])
        assert isinstance(b, RayBackend) and b.name == name and b.face_count == 1
    with pytest.raises(ValueError, match="unknown ray backend"):
        make_ray_backend("optix", [(v, f)])
    with pytest.raises(ValueError, match="face indices"):
        NumbaBvhBackend([(v, np.array([[0, 1, 3]]))])
    b = NumbaBvhBackend([(v, f)])
    with pytest.raises(ValueError, match="origins"):
        b.cast(np.zeros((2, 3), np.float32), np.zeros((2, 3)), np.zeros(2), np.zeros((1, 3)),
               np.array([[1.0, 0, 0, 0]]), np.empty(2), np.empty(2, np.int64))  # fmt: skip


def test_moving_groups_parity_with_embree():
    rng = np.random.default_rng(3)
    meshes = []
    for k in range(4):
        m = trimesh.creation.icosphere(subdivisions=3, radius=0.5 + 0.1 * k)
        if k % 2:
            m = trimesh.creation.box(extents=(1.0, 0.4, 0.7))
        meshes.append((np.asarray(m.vertices), np.asarray(m.faces)))
    meshes.append((np.zeros((0, 3)), np.zeros((0, 3), np.int64)))  # empty group
    positions = rng.uniform(-2, 2, (5, 3))
    q = rng.normal(size=(5, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    o = rng.uniform(-4, 4, (5000, 3)).astype(np.float32).astype(np.float64)
    d = positions[rng.integers(0, 4, 5000)] + rng.normal(0.0, 0.4, (5000, 3)) - o
    d = (d / np.linalg.norm(d, axis=1, keepdims=True)).astype(np.float32).astype(np.float64)
    max_d = np.full(5000, 50.0)
    out = {}
    for double_sided in (False, True):
        for name in ("numba", "embreex"):
            b = make_ray_backend(name, meshes, double_sided)
            dist = np.empty(5000)
            face = np.empty(5000, np.int64)
            b.cast(o, d, max_d, positions, q, dist, face)
            out[name, double_sided] = (dist, face)
        (d1, f1), (d2, f2) = out["numba", double_sided], out["embreex", double_sided]
        hit = np.isfinite(d1)
        assert hit.sum() > 300
        np.testing.assert_array_equal(hit, np.isfinite(d2))
        np.testing.assert_allclose(d1[hit], d2[hit], atol=1e-4)
        assert np.mean(f1[hit] == f2[hit]) > 0.99
        # Embree (one merged scene for the moving groups) names the triangle, the distance
        # is the float64 plane distance: exact where both name the same triangle
        same = hit & (f1 == f2)
        np.testing.assert_allclose(d1[same], d2[same], rtol=0, atol=1e-9)
    # single-sided never reports more hits than double-sided
    assert np.isfinite(out["numba", False][0]).sum() < np.isfinite(out["numba", True][0]).sum()


def big_scene(rng):
    """~108k triangles: a noised icosphere plus smaller spheres (vertices float32-exact)."""
    sphere = trimesh.creation.icosphere(subdivisions=6)
    sphere.vertices = sphere.vertices * (1.0 + rng.normal(0.0, 0.002, (len(sphere.vertices), 1)))
    parts = [sphere]
    for _ in range(6):
        s = trimesh.creation.icosphere(subdivisions=4, radius=rng.uniform(0.2, 0.4))
        s.apply_translation(rng.uniform(-1.5, 1.5, 3))
        parts.append(s)
    mesh = trimesh.util.concatenate(parts)
    vertices = np.asarray(mesh.vertices).astype(np.float32).astype(np.float64)
    return vertices, np.asarray(mesh.faces, np.int64)


def test_distances_equal_embree_on_100k_rays_over_100k_triangles():
    rng = np.random.default_rng(2024)
    vertices, faces = big_scene(rng)
    assert len(faces) >= 100_000
    o, d = random_rays(rng, 100_000)
    o = o.astype(np.float32).astype(np.float64)
    d = d.astype(np.float32).astype(np.float64)
    max_d = np.full(len(o), np.inf)
    pose = (np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0, 0.0]]))
    numba_b = NumbaBvhBackend([(vertices, faces)])
    dist = np.empty(len(o))
    face = np.empty(len(o), np.int64)
    numba_b.cast(o, d, max_d, *pose, dist, face)
    # Embree directly (independent oracle): float32 scene, first hit; rays come from outside
    # every closed surface, so the first hit is a front face and sidedness does not matter.
    from embreex import rtcore_scene
    from embreex.mesh_construction import TriangleMesh

    scene = rtcore_scene.EmbreeScene()
    TriangleMesh(scene, vertices.astype(np.float32), faces.astype(np.int32))
    result = scene.run(o.astype(np.float32), d.astype(np.float32), output=1)
    prim = np.asarray(result["primID"])
    ref = np.where(prim >= 0, np.asarray(result["tfar"], np.float64), np.inf)
    hit = prim >= 0
    assert hit.mean() > 0.5
    # Embree intersects in float32: a ray grazing a triangle (|cos| < 1e-2) may be missed or
    # hit by one side only. Such rays (a handful in 100k) are checked against a float64
    # brute-force oracle instead; every other ray must equal Embree within 1e-5.
    both = np.isfinite(dist) & hit
    gap = np.abs(np.where(both, dist, 0.0) - np.where(both, ref, 0.0))
    differ = np.nonzero((np.isfinite(dist) != hit) | (gap > 1e-5))[0]
    assert len(differ) <= 5
    for i in differ:
        tri = vertices[faces[face[i] if face[i] >= 0 else prim[i]]]
        n = np.cross(tri[1] - tri[0], tri[2] - tri[0])
        assert abs(n @ d[i]) / np.linalg.norm(n) < 1e-2
        oracle, _ = brute_force(vertices, faces, o[i : i + 1], d[i : i + 1], max_d[:1], False)
        assert dist[i] == pytest.approx(oracle[0], abs=1e-9)
    agree = np.setdiff1d(np.nonzero(hit)[0], differ)
    assert len(agree) > 50_000
    np.testing.assert_allclose(dist[agree], ref[agree], rtol=0, atol=1e-5)
    assert np.mean(face[agree] == prim[agree]) > 0.999
    # the embreex backend class agrees as well
    emb = EmbreexBackend([(vertices, faces)])
    dist2 = np.empty(len(o))
    face2 = np.empty(len(o), np.int64)
    emb.cast(o, d, max_d, *pose, dist2, face2)
    np.testing.assert_allclose(dist2[agree], ref[agree], rtol=0, atol=1e-5)
    # its distances come from the float64 plane of the triangle Embree names: where that is
    # the triangle the float64 brute-force check names too, they are exact
    np.testing.assert_array_equal(face2[agree], prim[agree])
    same = agree[face2[agree] == face[agree]]
    assert len(same) > 0.999 * len(agree)
    tri = vertices[faces[face2[same]]]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    plane = np.einsum("ij,ij->i", n, tri[:, 0] - o[same]) / np.einsum("ij,ij->i", n, d[same])
    np.testing.assert_allclose(dist2[same], plane, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dist2[same], dist[same], rtol=0, atol=1e-9)


def test_kernels_run_as_plain_python_and_compile_once():
    """The kernels' Python source gives the compiled results; one signature per kernel."""
    mesh = trimesh.creation.icosphere(subdivisions=1)
    v = np.ascontiguousarray(mesh.vertices, np.float64)
    f = np.ascontiguousarray(mesh.faces, np.int64)
    outs = []
    for compiled in (True, False):
        build_fn = building.bvh_build_kernel if compiled else building.bvh_build_kernel.py_func
        hit_fn = traversal.bvh_closest_hit_kernel
        hit_fn = hit_fn if compiled else hit_fn.py_func
        n = len(f)
        boxes = np.empty((2 * n, 12))
        refs = np.empty((2 * n, 4), np.int64)
        tris = np.empty((n, 9))
        order = np.empty(n, np.int64)
        used = np.empty(1, np.int64)
        build_fn(v, f, boxes, refs, tris, order, used)
        o, d = random_rays(np.random.default_rng(0), 50)
        dist = np.empty(50)
        face = np.empty(50, np.int64)
        hit_fn(boxes, refs, tris, order, 0, o, d, np.full(50, np.inf), False, dist, face)
        outs.append((int(used[0]), dist, face))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    np.testing.assert_array_equal(outs[0][2], outs[1][2])
    for module in (building, traversal, _solid_kernels, casts, _embree_kernels):
        for name in module.__all__:
            kernel = getattr(module, name)
            if hasattr(kernel, "signatures") and kernel.signatures:
                assert len(kernel.signatures) == 1, name


def test_morton_ordered_large_batch_returns_results_in_caller_order():
    """Large batches are cast in Morton order; results must come back per caller ray: equal
    to the unsorted cast and to the brute-force oracle on a sample of rays."""
    rng = np.random.default_rng(11)
    mesh = trimesh.creation.icosphere(subdivisions=3)
    v = np.ascontiguousarray(mesh.vertices, np.float64)
    f = np.ascontiguousarray(mesh.faces, np.int64)
    count = 3 * NumbaBvhBackend.coherent_sort_threshold
    o, d = random_rays(rng, count)
    max_d = rng.uniform(2.0, 4.0, count)
    pose = (np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0, 0.0]]))
    results = []
    for threshold in (NumbaBvhBackend.coherent_sort_threshold, 0):
        backend = NumbaBvhBackend([(v, f)])
        backend.coherent_sort_threshold = threshold
        dist = np.empty(count)
        face = np.empty(count, np.int64)
        backend.cast(o, d, max_d, *pose, dist, face)
        results.append((dist, face))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    sample = rng.choice(count, 300, replace=False)
    ref_d, ref_f = brute_force(v, f, o[sample], d[sample], max_d[sample], False)
    hit = np.isfinite(ref_d)
    assert 50 < hit.sum() < 300
    np.testing.assert_array_equal(np.isfinite(results[0][0][sample]), hit)
    np.testing.assert_allclose(results[0][0][sample][hit], ref_d[hit], atol=1e-9)


def test_bucket_order_is_a_stable_sort_on_the_top_morton_bits():
    """The large-batch order equals NumPy's stable argsort of the 6-D Morton codes' top 12
    bits, and the rays are moved with their distances."""
    rng = np.random.default_rng(13)
    count = 5000
    o, d = random_rays(rng, count)
    o[:100] = o[0]  # ties: equal keys keep the caller's order
    max_d = rng.uniform(1.0, 5.0, count)
    codes = np.empty(count, np.int64)
    casts.ray_morton_codes_kernel(o, d, codes)
    expected = np.argsort(codes >> (60 - casts.MORTON_BUCKET_BITS), kind="stable")
    order = np.empty(count, np.int64)
    oo, dd, mm = np.empty((count, 3)), np.empty((count, 3)), np.empty(count)
    casts.ray_bucket_order_kernel(o, d, max_d, np.empty(count, np.int64), order, oo, dd, mm)
    np.testing.assert_array_equal(order, expected)
    np.testing.assert_array_equal(oo, o[expected])
    np.testing.assert_array_equal(dd, d[expected])
    np.testing.assert_array_equal(mm, max_d[expected])
    assert len(np.unique(codes >> 48)) > 200  # the rays spread over many buckets
    # the parallel twin (rays cut into one part per thread) gives the same stable order,
    # whatever the part count (also more parts than Numba has threads here)
    for parts in (2, 3, 7):
        got = np.empty(count, np.int64)
        po, pd, pm = np.empty((count, 3)), np.empty((count, 3)), np.empty(count)
        casts.ray_bucket_order_parallel_kernel(
            o, d, max_d, np.empty(count, np.int64), got, po, pd, pm, parts
        )
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(po, o[expected])
        np.testing.assert_array_equal(pd, d[expected])
        np.testing.assert_array_equal(pm, max_d[expected])
    # non-finite rays (never hit) still get a bucket: no write outside the counts
    o[5] = np.nan
    d[7] = [np.inf, 0.0, np.nan]
    casts.ray_bucket_order_kernel(o, d, max_d, np.empty(count, np.int64), order, oo, dd, mm)
    np.testing.assert_array_equal(np.sort(order), np.arange(count))
    got = np.empty(count, np.int64)
    casts.ray_bucket_order_parallel_kernel(o, d, max_d, np.empty(count, np.int64), got,
                                           oo, dd, mm, 2)  # fmt: skip
    np.testing.assert_array_equal(got, order)


def test_scatter_back_to_caller_order_on_one_and_several_parts():
    """``out[order[k]] = in[k]`` (NumPy's fancy assignment as the oracle), in one part or
    in several on the parallel twin."""
    rng = np.random.default_rng(4)
    count = 10_001
    order = rng.permutation(count).astype(np.int64)
    distances = rng.uniform(0.0, 5.0, count)
    faces = rng.integers(-1, 1000, count).astype(np.int64)
    want_d = np.empty(count)
    want_f = np.empty(count, np.int64)
    want_d[order] = distances
    want_f[order] = faces
    for parts in (None, 1, 2, 5):
        got_d = np.full(count, np.nan)
        got_f = np.full(count, -7, np.int64)
        if parts is None:
            casts.scatter_hits_kernel(order, distances, faces, got_d, got_f)
        else:
            casts.scatter_hits_parallel_kernel(order, distances, faces, got_d, got_f, parts)
        np.testing.assert_array_equal(got_d, want_d)
        np.testing.assert_array_equal(got_f, want_f)


def test_work_queue_counter_hands_out_each_block_once():
    """``fetch_add`` from several threads at once hands out every number exactly once (the
    work queue of the parallel casts); a non-atomic add would repeat or skip numbers."""
    numba = pytest.importorskip("numba")
    from runtime._compile.jit import JIT_DISABLED
    from runtime.rays._simd import fetch_add

    if JIT_DISABLED:
        pytest.skip("plain Python: no threads")

    @numba.njit(parallel=True)
    def take_all(counter, taken, per_worker, workers):
        for w in numba.prange(workers):
            for k in range(per_worker):
                taken[w * per_worker + k] = fetch_add(counter, 1)

    workers, per_worker = 4, 20_000
    counter = np.zeros(1, np.int64)
    taken = np.empty(workers * per_worker, np.int64)
    take_all(counter, taken, per_worker, workers)
    assert counter[0] == workers * per_worker
    np.testing.assert_array_equal(np.sort(taken), np.arange(workers * per_worker))


@pytest.mark.parametrize("sort_threshold", [NumbaBvhBackend.coherent_sort_threshold, 0])
def test_two_threads_are_bit_identical_to_one(sort_threshold):
    """The parallel cast (blocks of rays over Numba's threads) returns exactly the
    single-threaded results, over moving groups, in caller order; and the oracle agrees."""
    rng = np.random.default_rng(21)
    meshes = []
    for k in range(3):
        m = trimesh.creation.icosphere(subdivisions=3, radius=0.6 + 0.2 * k)
        meshes.append((np.asarray(m.vertices), np.asarray(m.faces)))
    positions = rng.uniform(-1.5, 1.5, (3, 3))
    q = rng.normal(size=(3, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    count = 3 * PARALLEL_MIN_RAYS + 17  # several blocks and a partial one
    o, d = random_rays(rng, count, radius=4.0)
    max_d = rng.uniform(3.0, 8.0, count)
    results = []
    for threads in (1, 2):
        backend = NumbaBvhBackend(meshes, threads=threads)
        backend.coherent_sort_threshold = sort_threshold
        dist = np.empty(count)
        face = np.empty(count, np.int64)
        backend.cast(o, d, max_d, positions, q, dist, face)
        results.append((dist, face))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    # the parallel kernel itself (also when Numba has a single thread here)
    b = NumbaBvhBackend(meshes)
    dist = np.empty(count)
    face = np.empty(count, np.int64)
    b.cast(o, d, max_d, positions, q, np.empty(count), np.empty(count, np.int64))  # boxes
    casts.scene_closest_hit_parallel_kernel(
        b.wide_nodes_float64, b.leaf_triangles, b.leaf_ids, b.wide_roots, positions, q,
        b._world_boxes, o, d, max_d, False, dist, face, 2,
    )  # fmt: skip
    np.testing.assert_array_equal(dist, results[0][0])
    np.testing.assert_array_equal(face, results[0][1])
    assert 0.2 < np.isfinite(dist).mean() < 0.95
    # Embree as the oracle on the same moving groups
    emb = EmbreexBackend(meshes)
    ref = np.empty(count)
    emb.cast(o, d, max_d, positions, q, ref, np.empty(count, np.int64))
    hit = np.isfinite(ref)
    assert np.mean(np.isfinite(dist) == hit) > 0.999
    both = hit & np.isfinite(dist)
    assert np.mean(np.abs(dist[both] - ref[both]) < 1e-5) > 0.999


def test_parallel_cast_restores_numba_settings():
    """``run_parallel`` leaves Numba's thread count and chunk size as they were."""
    import numba

    mesh = trimesh.creation.icosphere(subdivisions=2)
    b = NumbaBvhBackend([(np.asarray(mesh.vertices), np.asarray(mesh.faces))], threads=2)
    count = 2 * PARALLEL_MIN_RAYS
    o, d = random_rays(np.random.default_rng(5), count)
    before = (numba.get_num_threads(), numba.get_parallel_chunksize())
    pose = (np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0, 0.0]]))
    b.cast(o, d, np.full(count, np.inf), *pose, np.empty(count), np.empty(count, np.int64))
    assert (numba.get_num_threads(), numba.get_parallel_chunksize()) == before


def test_coherent_batches_skip_the_morton_sort_with_the_same_results():
    """Lidar-like batches (columns of rows from one origin) are cast as given, scattered
    ones in Morton order; both give the unsorted cast's results."""
    mesh = trimesh.creation.icosphere(subdivisions=3)
    v, f = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    rng = np.random.default_rng(8)
    columns, rows = 600, 16
    azimuth = np.repeat(np.linspace(0.0, 2.0 * np.pi, columns, endpoint=False), rows)
    elevation = np.tile(np.radians(np.linspace(-15.0, 15.0, rows)), columns)
    lidar_d = np.stack(
        [np.cos(elevation) * np.cos(azimuth), np.cos(elevation) * np.sin(azimuth),
         np.sin(elevation)], axis=1,
    )  # fmt: skip
    lidar_o = np.tile([2.5, 0.3, 0.1], (len(lidar_d), 1))
    scattered_o, scattered_d = random_rays(rng, len(lidar_d))
    pose = (np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0, 0.0]]))
    b = NumbaBvhBackend([(v, f)])
    assert b._already_coherent(lidar_o, lidar_d)
    assert not b._already_coherent(scattered_o, scattered_d)
    for o, d in ((lidar_o, lidar_d), (scattered_o, scattered_d)):
        out = []
        for threshold in (NumbaBvhBackend.coherent_sort_threshold, 0):
            b.coherent_sort_threshold = threshold
            dist = np.empty(len(o))
            face = np.empty(len(o), np.int64)
            b.cast(o, d, np.full(len(o), np.inf), *pose, dist, face)
            out.append((dist, face))
        np.testing.assert_array_equal(out[0][0], out[1][0])
        np.testing.assert_array_equal(out[0][1], out[1][1])
        assert np.isfinite(out[0][0]).sum() > 100


def test_thread_count_setting_is_validated_and_clamped():
    import numba

    assert resolve_threads(None) == numba.get_num_threads()
    assert resolve_threads(1) == 1
    assert resolve_threads(10_000) == numba.config.NUMBA_NUM_THREADS
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="threads"):
            NumbaBvhBackend([(v, np.array([[0, 1, 2]]))], threads=bad)


def test_embreex_fixed_groups_in_one_world_scene_match_per_group_scenes():
    """Fixed groups merged into one world-frame Embree scene give the per-group answers
    (single- and double-sided, rays starting inside closed meshes, moving groups beside)."""
    rng = np.random.default_rng(4)
    meshes = []
    for k in range(4):
        m = trimesh.creation.icosphere(subdivisions=2, radius=0.5 + 0.1 * k)
        meshes.append((np.asarray(m.vertices), np.asarray(m.faces)))
    positions = rng.uniform(-2, 2, (4, 3))
    q = rng.normal(size=(4, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    fixed = [(positions[g], q[g]) if g % 2 == 0 else None for g in range(4)]
    o = rng.uniform(-3, 3, (3000, 3))
    o[:300] = positions[rng.integers(0, 4, 300)]  # starting inside a sphere
    d = positions[rng.integers(0, 4, 3000)] + rng.normal(0.0, 0.4, (3000, 3)) - o
    d[:300] = rng.normal(size=(300, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    max_d = np.full(3000, 20.0)
    for double_sided in (False, True):
        out = []
        for poses in (None, fixed):
            b = EmbreexBackend(meshes, double_sided, poses)
            dist = np.empty(3000)
            face = np.empty(3000, np.int64)
            b.cast(o, d, max_d, positions, q, dist, face)
            out.append((dist, face))
        hit = np.isfinite(out[0][0])
        assert hit.sum() > 500
        np.testing.assert_array_equal(hit, np.isfinite(out[1][0]))
        # float32 rays in the world vs the group frame: equal within 1e-5 but for rounding
        gap = np.abs(out[0][0][hit] - out[1][0][hit])
        assert np.mean(gap <= 1e-5) > 0.998 and gap.max() < 1e-4
        assert np.mean(out[0][1] == out[1][1]) > 0.995
        numba_b = NumbaBvhBackend(meshes, double_sided)
        ref = np.empty(3000)
        numba_b.cast(o, d, max_d, positions, q, ref, np.empty(3000, np.int64))
        np.testing.assert_array_equal(np.isfinite(ref), hit)
        gap = np.abs(ref[hit] - out[1][0][hit])
        assert np.mean(gap <= 1e-5) > 0.998 and gap.max() < 1e-4
