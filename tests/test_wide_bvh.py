"""Wide BVH: structure, the binary traversal as oracle, compact leaves, plain-Python parity."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import trimesh

from runtime.rays import _scene_cast_kernels as casts
from runtime.rays import _traversal_kernels as kernels
from runtime.rays import _wide_bvh_kernels as wide_kernels
from runtime.rays._simd import LEAF_WIDTH
from runtime.rays._wide_bvh_kernels import (
    NODE_ROWS,
    NODE_ROWS_FLOAT64,
    compact_leaves,
    float64_nodes,
    leaf_blocks,
    leaf_edges,
)
from runtime.rays.backends import NumbaBvhBackend

REPO = Path(__file__).resolve().parents[1]


def _meshes(rng, float32: bool):
    """Three meshes of different sizes (one of a single triangle), optionally float32."""
    out = []
    for subdivisions, scale in ((3, 1.0), (1, 0.4)):
        m = trimesh.creation.icosphere(subdivisions=subdivisions, radius=scale)
        v = np.asarray(m.vertices) * (1.0 + rng.normal(0.0, 0.01, (len(m.vertices), 1)))
        out.append((v, np.asarray(m.faces, np.int64)))
    out.append((np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]) * 0.7, np.array([[0, 1, 2]])))
    if float32:
        out = [(v.astype(np.float32).astype(np.float64), f) for v, f in out]
    return out


def _poses(rng, count):
    q = rng.normal(size=(count, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[0] = (1.0, 0.0, 0.0, 0.0)  # an identity frame: the broad-phase shortcut
    p = rng.uniform(-0.5, 0.5, (count, 3))
    p[0] = 0.0
    return np.ascontiguousarray(p), np.ascontiguousarray(q)


def _rays(rng, count):
    """Rays from a sphere of radius 2.5 towards the groups, 20 % of them with a finite limit."""
    o = rng.normal(size=(count, 3))
    o = 2.5 * o / np.linalg.norm(o, axis=1, keepdims=True)
    d = rng.uniform(-0.8, 0.8, (count, 3)) - o
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    max_d = np.where(rng.random(count) < 0.2, rng.uniform(0.5, 3.0, count), np.inf)
    return o, d, max_d


def _binary_oracle(backend, positions, orientations, origins, directions, max_d, double_sided):
    """Closest hit over the groups by the binary traversal, ray by ray in group frames."""
    dist = np.full(len(origins), np.inf)
    face = np.full(len(origins), -1)
    stack = (np.empty(kernels.STACK_SIZE, np.int64), np.empty(kernels.STACK_SIZE, np.int64),
             np.empty(kernels.STACK_SIZE))  # fmt: skip
    for g, root in enumerate(backend.group_roots):
        if root < 0:
            continue
        w, x, y, z = orientations[g]
        r = np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
            ]
        )
        o = (origins - positions[g]) @ r
        d = directions @ r
        for i in range(len(origins)):
            best = min(dist[i], max_d[i])
            t, hit = kernels.group_closest_hit_kernel(
                backend.node_boxes, backend.node_refs, backend.triangles, backend.triangle_ids,
                root, *o[i], *d[i], best, double_sided, *stack,
            )  # fmt: skip
            if hit >= 0:
                dist[i], face[i] = t, hit
    return dist, face


@pytest.mark.parametrize("float32", [False, True])
@pytest.mark.parametrize("double_sided", [False, True])
def test_wide_traversal_matches_the_binary_traversal(float32, double_sided, monkeypatch):
    """Same hits as the binary BVH of the same build, over moving groups, both leaf layouts.

    The oracle traverses the binary BVH in plain group frames; the scene kernel traverses
    the wide BVH with its vector tests. Distances agree to 1e-12 (the frames are computed
    differently), faces exactly. (Leaves this small stay float64 unless the size above which
    they are compacted is lowered, as here.)
    """
    rng = np.random.default_rng(7)
    meshes = _meshes(rng, float32)
    small = NumbaBvhBackend(meshes, double_sided=double_sided)
    # float64 rows then the 8 int32 ids: 76 float64 values per block
    assert small.leaf_triangles.size == (9 * LEAF_WIDTH + LEAF_WIDTH // 2) * len(small.leaf_ids)
    monkeypatch.setattr(wide_kernels, "COMPACT_LEAVES_ABOVE_BYTES", 0)
    backend = NumbaBvhBackend(meshes, double_sided=double_sided)
    # float32 corners then the ids: 40 float64 values per block
    compact = backend.leaf_triangles.size == (9 * LEAF_WIDTH + LEAF_WIDTH) // 2 * len(
        backend.leaf_ids
    )
    assert compact == float32
    positions, orientations = _poses(rng, len(meshes))
    count = 3000
    o, d, max_d = _rays(rng, count)
    dist = np.empty(count)
    face = np.empty(count, np.int64)
    backend.coherent_sort_threshold = 0
    backend.cast(o, d, max_d, positions, orientations, dist, face)
    ref_dist, ref_face = _binary_oracle(backend, positions, orientations, o, d, max_d,
                                        double_sided)  # fmt: skip
    assert 0.3 < np.isfinite(ref_dist).mean() < 0.95
    np.testing.assert_array_equal(np.isfinite(dist), np.isfinite(ref_dist))
    np.testing.assert_array_equal(face, ref_face)
    hit = np.isfinite(dist)
    np.testing.assert_allclose(dist[hit], ref_dist[hit], rtol=1e-12, atol=1e-12)
    assert np.all(dist[hit] < max_d[hit])


def test_wide_nodes_hold_every_triangle_once_inside_their_boxes():
    """Every face sits in exactly one leaf lane, inside the float32 box of its wide child."""
    rng = np.random.default_rng(3)
    meshes = _meshes(rng, False)
    b = NumbaBvhBackend(meshes)
    nodes = b.wide_nodes
    assert nodes.dtype == np.float32 and nodes.shape[1:] == (NODE_ROWS, 8)
    refs = nodes.view(np.int32)[:, 6]
    counts = nodes.view(np.int32)[:, 7]
    leaves = leaf_edges(b.leaf_triangles, b.leaf_ids.shape[0])
    seen = []
    for n in range(nodes.shape[0]):
        for c in range(8):
            if counts[n, c] <= 0:
                if counts[n, c] < 0:  # an empty lane is never entered
                    assert np.all(nodes[n, :3, c] == np.inf) and np.all(nodes[n, 3:6, c] == -np.inf)
                continue
            k = refs[n, c]
            lanes = int(counts[n, c])
            ids = b.leaf_ids[k, :lanes]
            assert np.all(b.leaf_ids[k, lanes:] == -1)
            seen.extend(ids.tolist())
            v0 = leaves[k, 0:3, :lanes]
            corners = np.stack([v0, v0 + leaves[k, 3:6, :lanes], v0 + leaves[k, 6:9, :lanes]])
            lo = nodes[n, 0:3, c].astype(np.float64)[None, :, None]
            hi = nodes[n, 3:6, c].astype(np.float64)[None, :, None]
            assert np.all(corners >= lo - 1e-12) and np.all(corners <= hi + 1e-12)
    assert sorted(seen) == list(range(sum(len(f) for _, f in meshes)))
    # every node but the roots is some node's child, once
    inner = [refs[n, c] for n in range(nodes.shape[0]) for c in range(8) if counts[n, c] == 0]
    roots = [r for r in b.wide_roots if r >= 0]
    assert sorted(inner + roots) == list(range(nodes.shape[0]))


def test_compact_leaves_only_when_the_edges_come_back_to_the_bit():
    rng = np.random.default_rng(5)
    leaves = rng.normal(size=(20, 9, LEAF_WIDTH)).astype(np.float32).astype(np.float64)
    leaves[:, 3:9] -= np.concatenate([leaves[:, 0:3]] * 2, axis=1)  # edges of float32 corners
    stored = compact_leaves(leaves)
    assert stored.dtype == np.float64 and stored.size == 9 * LEAF_WIDTH // 2 * 20
    np.testing.assert_array_equal(leaf_edges(stored, 20), leaves)
    leaves[3, 4, 1] += 1e-9  # a corner that is not a float32 value
    stored = compact_leaves(leaves)
    assert stored.size == 9 * LEAF_WIDTH * 20
    np.testing.assert_array_equal(leaf_edges(stored, 20), leaves)


@pytest.mark.parametrize("double_sided", [False, True])
def test_every_leaf_layout_gives_the_same_hits(double_sided):
    """Ids inside the blocks or beside them, float64 rows or float32 corners: same hits.

    The stored blocks carry each lane's id after the triangle rows (int32), equal to
    ``leaf_ids``; blocks without ids (``compact_leaves`` alone, what callers packing their
    own blocks pass) are told apart by their size and read ``leaf_ids`` instead. The
    layout with ids is checked against the binary traversal above; here the other three
    give its distances and faces to the bit.
    """
    rng = np.random.default_rng(21)
    meshes = _meshes(rng, True)
    b = NumbaBvhBackend(meshes, double_sided=double_sided)
    count = b.leaf_ids.shape[0]
    rows = leaf_edges(b.leaf_triangles, count)
    with_ids = b.leaf_triangles.reshape(count, -1)[:, 9 * LEAF_WIDTH :]
    np.testing.assert_array_equal(with_ids.view(np.int32), b.leaf_ids)
    layouts = {
        "float64 + ids": leaf_blocks(rows, b.leaf_ids, compact=False),
        "corners + ids": leaf_blocks(rows, b.leaf_ids, compact=True),
        "float64": rows.reshape(-1).copy(),
        "corners": compact_leaves(rows),
    }
    sizes = {k: v.size // count for k, v in layouts.items()}
    assert sizes == {"float64 + ids": 76, "corners + ids": 40, "float64": 72, "corners": 36}
    assert all(v.ctypes.data % 64 == 0 for k, v in layouts.items() if "ids" in k)
    assert b.wide_nodes.ctypes.data % 64 == 0 and b.leaf_triangles.ctypes.data % 64 == 0
    positions, orientations = _poses(rng, len(meshes))
    n = 2000
    o, d, max_d = _rays(rng, n)
    b.cast(o, d, max_d, positions, orientations, np.empty(n), np.empty(n, np.int64))  # boxes
    results = {}
    for name, leaves in layouts.items():
        dist = np.empty(n)
        face = np.empty(n, np.int64)
        casts.scene_closest_hit_kernel(
            b.wide_nodes_float64, leaves, b.leaf_ids, b.wide_roots, positions, orientations,
            b._world_boxes, o, d, max_d, double_sided, dist, face,
        )  # fmt: skip
        results[name] = (dist, face)
    dist, face = results["float64"]
    assert 0.3 < np.isfinite(dist).mean() < 0.95
    for name, (other_dist, other_face) in results.items():
        np.testing.assert_array_equal(other_dist, dist, err_msg=name)
        np.testing.assert_array_equal(other_face, face, err_msg=name)


def test_float64_node_records_hold_the_float32_nodes_and_give_their_hits(tmp_path):
    """The float64 records the casts traverse: the float32 boxes, references and counts.

    Cast through both node layouts (in a subprocess: the test process keeps one compiled
    signature per kernel), over moving groups, with and without distance limits: the same
    distances and faces to the bit.
    """
    rng = np.random.default_rng(3)
    b = NumbaBvhBackend(_meshes(rng, False), double_sided=False)
    nodes, records = b.wide_nodes, b.wide_nodes_float64
    assert records.shape == (nodes.shape[0], NODE_ROWS_FLOAT64, 8)
    assert records.dtype == np.float64 and records.ctypes.data % 64 == 0
    np.testing.assert_array_equal(records[:, :6], nodes[:, :6].astype(np.float64))
    np.testing.assert_array_equal(records.view(np.int32)[:, 6, :8], nodes.view(np.int32)[:, 6])
    np.testing.assert_array_equal(records.view(np.int32)[:, 6, 8:], nodes.view(np.int32)[:, 7])
    np.testing.assert_array_equal(float64_nodes(nodes), records)
    script = tmp_path / "nodes.py"
    script.write_text(
        "import sys, numpy as np, trimesh\n"
        "from runtime.rays import _scene_cast_kernels as casts\n"
        "from runtime.rays.backends import NumbaBvhBackend\n"
        "rng = np.random.default_rng(4)\n"
        "meshes = []\n"
        "for s in (3, 1):\n"
        "    m = trimesh.creation.icosphere(subdivisions=s, radius=1.0 / s)\n"
        "    meshes.append((np.asarray(m.vertices), np.asarray(m.faces, np.int64)))\n"
        "b = NumbaBvhBackend(meshes, double_sided=False)\n"
        "n = 3000\n"
        "o = rng.normal(size=(n, 3)); o = 2.5 * o / np.linalg.norm(o, axis=1, keepdims=True)\n"
        "d = rng.uniform(-0.8, 0.8, (n, 3)) - o; d /= np.linalg.norm(d, axis=1, keepdims=True)\n"
        "m = np.where(rng.random(n) < 0.3, rng.uniform(0.5, 3.0, n), np.inf)\n"
        "p = np.array([[0.0, 0, 0], [0.3, -0.2, 0.1]])\n"
        "q = np.array([[1.0, 0, 0, 0], [0.8, 0.2, -0.3, 0.4]])\n"
        "q /= np.linalg.norm(q, axis=1)[:, None]\n"
        "b.cast(o, d, m, p, q, np.empty(n), np.empty(n, np.int64))  # the world boxes\n"
        "out = {}\n"
        "for name in ('wide_nodes', 'wide_nodes_float64'):\n"
        "    dist = np.empty(n); face = np.empty(n, np.int64)\n"
        "    casts.scene_closest_hit_kernel(getattr(b, name), b.leaf_triangles, b.leaf_ids,\n"
        "        b.wide_roots, p, q, b._world_boxes, o, d, m, False, dist, face)\n"
        "    out[name + '_dist'] = dist; out[name + '_face'] = face\n"
        "np.savez(sys.argv[1], **out)\n"
    )
    out = tmp_path / "out.npz"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, str(script), str(out)], env=env, check=True, timeout=600)
    r = np.load(out)
    assert 0.3 < np.isfinite(r["wide_nodes_dist"]).mean() < 0.95
    np.testing.assert_array_equal(r["wide_nodes_float64_dist"], r["wide_nodes_dist"])
    np.testing.assert_array_equal(r["wide_nodes_float64_face"], r["wide_nodes_face"])


def test_plain_python_wide_traversal_gives_the_compiled_hits(tmp_path):
    """``SIMRT_DISABLE_JIT=1`` runs the NumPy versions of the vector tests: same results."""
    script = tmp_path / "cast.py"
    script.write_text(
        "import sys, numpy as np, trimesh\n"
        "from runtime.rays.backends import NumbaBvhBackend\n"
        "rng = np.random.default_rng(11)\n"
        "m = trimesh.creation.icosphere(subdivisions=2)\n"
        "v = np.asarray(m.vertices); f = np.asarray(m.faces, np.int64)\n"
        "if sys.argv[3] == '1':\n"
        "    v = v.astype(np.float32).astype(np.float64)\n"
        "meshes = [(v, f), (v * 0.5, f)]\n"
        "import runtime.rays._wide_bvh_kernels as wide\n"
        "wide.COMPACT_LEAVES_ABOVE_BYTES = 0  # (small leaves stay float64 otherwise)\n"
        "b = NumbaBvhBackend(meshes, double_sided=bool(int(sys.argv[2])))\n"
        "compact = b.leaf_triangles.size < 9 * b.leaf_ids.size\n"
        "assert compact == (sys.argv[3] == '1')\n"
        "o = rng.normal(size=(300, 3)); o = 3 * o / np.linalg.norm(o, axis=1, keepdims=True)\n"
        "d = rng.uniform(-1.5, 1.5, (300, 3)) - o; d /= np.linalg.norm(d, axis=1, keepdims=True)\n"
        "p = np.array([[0.0, 0, 0], [0.2, -0.1, 0.3]])\n"
        "q = np.array([[1.0, 0, 0, 0], [0.8, 0.2, -0.3, 0.4]])\n"
        "q /= np.linalg.norm(q, axis=1)[:, None]\n"
        "dist = np.empty(300); face = np.empty(300, np.int64)\n"
        "b.cast(o, d, np.full(300, np.inf), p, q, dist, face)\n"
        "np.savez(sys.argv[1], dist=dist, face=face)\n"
    )
    for compact in ("0", "1"):
        results = []
        for disabled in ("0", "1"):
            out = tmp_path / f"out{compact}{disabled}.npz"
            env = dict(os.environ, SIMRT_DISABLE_JIT=disabled, PYTHONPATH=str(REPO))
            subprocess.run([sys.executable, str(script), str(out), compact, compact], env=env,
                           check=True, timeout=300)  # fmt: skip
            results.append(np.load(out))
        np.testing.assert_array_equal(results[0]["dist"], results[1]["dist"])
        np.testing.assert_array_equal(results[0]["face"], results[1]["face"])
        assert 0.3 < np.isfinite(results[0]["dist"]).mean() < 0.95


@pytest.mark.parametrize("moved", [False, True])
def test_one_group_matches_the_binary_traversal(moved):
    """One group (the scene casts' own loop for it), at the world frame or moved and turned."""
    rng = np.random.default_rng(12)
    meshes = _meshes(rng, False)[:1]
    backend = NumbaBvhBackend(meshes, double_sided=False)
    positions = np.array([[0.3, -0.2, 0.1] if moved else [0.0, 0.0, 0.0]])
    orientations = np.array([[0.8, 0.2, -0.3, 0.4] if moved else [1.0, 0.0, 0.0, 0.0]])
    orientations /= np.linalg.norm(orientations, axis=1, keepdims=True)
    count = 2000
    o, d, max_d = _rays(rng, count)
    dist = np.empty(count)
    face = np.empty(count, np.int64)
    backend.coherent_sort_threshold = 0
    backend.cast(o, d, max_d, positions, orientations, dist, face)
    ref_dist, ref_face = _binary_oracle(backend, positions, orientations, o, d, max_d, False)
    assert 0.2 < np.isfinite(ref_dist).mean() < 0.95
    np.testing.assert_array_equal(face, ref_face)
    hit = np.isfinite(dist)
    np.testing.assert_array_equal(hit, np.isfinite(ref_dist))
    np.testing.assert_allclose(dist[hit], ref_dist[hit], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("scale", [1e-46, 1e-30, 1e30, 1e39])
def test_scales_beyond_float32_keep_every_hit(scale):
    """Boxes that float32 cannot hold (0 or inf once rounded) still let every ray through."""
    rng = np.random.default_rng(9)
    meshes = [(v * scale, f) for v, f in _meshes(rng, False)]
    backend = NumbaBvhBackend(meshes, double_sided=True)
    assert backend.leaf_triangles.size > 9 * backend.leaf_ids.size  # not float32 values
    positions, orientations = _poses(rng, len(meshes))
    positions *= scale
    count = 500
    o = rng.normal(size=(count, 3))
    o = 2.5 * o / np.linalg.norm(o, axis=1, keepdims=True)
    d = rng.uniform(-0.8, 0.8, (count, 3)) - o
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    o *= scale  # (float32 rounds 1e-46 to 0 and 1e39 to inf: so do the node boxes)
    max_d = np.full(count, np.inf)
    dist = np.empty(count)
    face = np.empty(count, np.int64)
    backend.coherent_sort_threshold = 0
    backend.cast(o, d, max_d, positions, orientations, dist, face)
    ref_dist, ref_face = _binary_oracle(backend, positions, orientations, o, d, max_d, True)
    assert 0.3 < np.isfinite(ref_dist).mean()
    np.testing.assert_array_equal(face, ref_face)
    hit = np.isfinite(dist)
    np.testing.assert_allclose(dist[hit], ref_dist[hit], rtol=1e-12)
