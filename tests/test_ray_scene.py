"""RayScene from USD colliders: shapes, transforms, moving bodies, sidedness, solids, backends.

Oracles are analytic ray/shape intersections in NumPy (slab test for boxes, quadratic for
spheres) and Embree through the embreex backend.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.errors import SchemaError
from runtime.rays.backends import PARALLEL_MIN_RAYS
from runtime.rays.scene import RayScene


def make_stage():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.Xform.Define(stage, "/World")
    return stage


def collider(gprim):
    UsdPhysics.CollisionAPI.Apply(gprim.GetPrim())
    return gprim


def cast(scene, o, d, max_d=100.0, positions=None, orientations=None):
    o = np.ascontiguousarray(np.atleast_2d(o), dtype=np.float64)
    d = np.asarray(np.atleast_2d(d), dtype=np.float64)
    d = np.ascontiguousarray(d / np.linalg.norm(d, axis=1, keepdims=True))
    n = len(o)
    dist = np.empty(n)
    actors = np.empty(n, np.int64)
    normals = np.empty((n, 3))
    scene.cast(o, d, np.full(n, float(max_d)), positions, orientations, dist, actors, normals)
    return dist, actors, normals


def slab(o, d, lo, hi):
    """Analytic entry distance of a ray into an axis-aligned box (inf if missed)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (lo - o) / d
        t2 = (hi - o) / d
    tn = np.nanmax(np.minimum(t1, t2))
    tf = np.nanmin(np.maximum(t1, t2))
    return tn if (tn <= tf and tn >= 0) else np.inf


def test_static_boxes_match_slab_oracle_with_nested_transforms():
    stage = make_stage()
    xf = UsdGeom.Xform.Define(stage, "/World/Group")
    xf.AddTranslateOp().Set(Gf.Vec3d(1.0, -2.0, 0.5))
    xf.AddScaleOp().Set(Gf.Vec3f(2.0, 1.0, 1.0))
    cube = collider(UsdGeom.Cube.Define(stage, "/World/Group/Box"))
    cube.GetSizeAttr().Set(1.0)
    cube.AddTranslateOp().Set(Gf.Vec3d(3.0, 0.0, 0.0))
    cube.AddScaleOp().Set(Gf.Vec3f(0.5, 2.0, 3.0))
    # world box: centre (1 + 2*3, -2, 0.5) = (7, -2, 0.5); half extents (0.5, 1, 1.5)
    lo = np.array([6.5, -3.0, -1.0])
    hi = np.array([7.5, -1.0, 2.0])
    for backend in ("numba", "embreex"):
        scene = RayScene.from_stage(stage, [], backend=backend)
        assert scene.actor_paths == ("/World/Group/Box",)
        rng = np.random.default_rng(1)
        o = rng.uniform(-2, 2, (300, 3))
        d = rng.uniform(lo, hi, (300, 3)) - o
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        dist, actors, normals = cast(scene, o, d)
        expected = np.array([slab(oi, di, lo, hi) for oi, di in zip(o, d, strict=True)])
        np.testing.assert_allclose(dist, expected, atol=1e-5)
        assert np.all(actors == 0)
        # normals are axis aligned and face the ray
        assert np.all(np.einsum("ij,ij->i", normals, d) < 0)
        np.testing.assert_allclose(np.abs(normals).max(axis=1), 1.0, atol=1e-9)


def test_sphere_capsule_cylinder_against_analytic_surfaces():
    stage = make_stage()
    s = collider(UsdGeom.Sphere.Define(stage, "/World/S"))
    s.GetRadiusAttr().Set(0.5)
    s.AddTranslateOp().Set(Gf.Vec3d(0, 5, 0))
    cap = collider(UsdGeom.Capsule.Define(stage, "/World/C"))
    cap.GetRadiusAttr().Set(0.25)
    cap.GetHeightAttr().Set(1.0)
    cap.GetAxisAttr().Set("X")
    cap.AddTranslateOp().Set(Gf.Vec3d(5, 0, 0))
    cyl = collider(UsdGeom.Cylinder.Define(stage, "/World/Y"))
    cyl.GetRadiusAttr().Set(0.3)
    cyl.GetHeightAttr().Set(2.0)
    cyl.GetAxisAttr().Set("Y")
    cyl.AddTranslateOp().Set(Gf.Vec3d(0, -5, 0))
    scene = RayScene.from_stage(stage, [])
    o = np.zeros((3, 3))
    d = np.array([[0, 1, 0], [1, 0, 0], [0, -1, 0]], float)
    dist, actors, _ = cast(scene, o, d)
    # sphere 5 - 0.5, capsule tip 5 - 0.5 - 0.25, cylinder flat cap 5 - 1
    np.testing.assert_allclose(dist, [4.5, 4.25, 4.0], atol=1e-6)
    assert [scene.actor_paths[a] for a in actors] == ["/World/S", "/World/C", "/World/Y"]
    # off-axis rays on the sphere: tessellation error well below 1 % of the radius
    rng = np.random.default_rng(0)
    targets = np.array([0, 5, 0]) + rng.normal(0, 0.2, (200, 3))
    dirs = targets / np.linalg.norm(targets, axis=1, keepdims=True)
    dist, _, _ = cast(scene, np.zeros((200, 3)), dirs)
    c = np.array([0, 5, 0])
    b = dirs @ c
    disc = b * b - (c @ c - 0.25)
    analytic = np.where(disc >= 0, b - np.sqrt(np.maximum(disc, 0)), np.inf)
    ok = np.isfinite(analytic) & (disc > 0.01)
    assert ok.sum() > 100
    np.testing.assert_allclose(dist[ok], analytic[ok], atol=0.005)


@pytest.mark.parametrize("shape", ["Cube", "Sphere", "Capsule", "Cylinder", "Hull"])
def test_ray_starting_inside_a_solid_hits_at_zero(shape):
    stage = make_stage()
    body = UsdGeom.Xform.Define(stage, "/World/Body")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    if shape == "Hull":
        mesh = UsdGeom.Mesh.Define(stage, "/World/Body/Shape")
        pts = [(-1, -1, -1), (1, -1, -1), (1, 1, -1), (-1, 1, -1), (0, 0, 1.5)]
        mesh.GetPointsAttr().Set([Gf.Vec3f(*p) for p in pts])
        mesh.GetFaceVertexCountsAttr().Set([4, 3, 3, 3, 3])
        mesh.GetFaceVertexIndicesAttr().Set([0, 3, 2, 1, 0, 1, 4, 1, 2, 4, 2, 3, 4, 3, 0, 4])
        UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("convexHull")
        collider(mesh)
    else:
        collider(getattr(UsdGeom, shape).Define(stage, "/World/Body/Shape"))
    scene = RayScene.from_stage(stage, ["/World/Body"])
    pos = np.array([[10.0, 0, 0]])
    quat = np.array([[1.0, 0, 0, 0]])
    d = np.array([[0.0, 0.6, 0.8]])
    dist, actors, normals = cast(scene, [[10.1, 0.05, -0.1]], d, 50.0, pos, quat)
    assert dist[0] == 0.0 and scene.actor_paths[actors[0]] == "/World/Body"
    np.testing.assert_allclose(normals[0], -d[0])
    # from outside the same shape is hit at a positive distance
    dist, actors, _ = cast(scene, [[10.0, 0.0, -10.0]], [[0, 0, 1.0]], 50.0, pos, quat)
    assert 7.0 < dist[0] < 10.0 and actors[0] == 0


def test_triangle_mesh_and_plane_are_single_sided():
    stage = make_stage()
    mesh = collider(UsdGeom.Mesh.Define(stage, "/World/Quad"))
    mesh.GetPointsAttr().Set([Gf.Vec3f(-1, -1, 0), Gf.Vec3f(1, -1, 0), Gf.Vec3f(1, 1, 0),
                              Gf.Vec3f(-1, 1, 0)])  # fmt: skip
    mesh.GetFaceVertexCountsAttr().Set([4])
    mesh.GetFaceVertexIndicesAttr().Set([0, 1, 2, 3])  # counter-clockwise from +z
    plane = collider(UsdGeom.Plane.Define(stage, "/World/Floor"))
    plane.GetAxisAttr().Set("Z")
    plane.AddTranslateOp().Set(Gf.Vec3d(0, 0, -5))
    scene = RayScene.from_stage(stage, [])
    o = np.array([[0, 0, 2.0], [0, 0, -1.0], [5, 5, 1.0], [5, 5, -7.0]])
    d = np.array([[0, 0, -1.0], [0, 0, 1.0], [0, 0, -1.0], [0, 0, 1.0]])
    dist, actors, normals = cast(scene, o, d, 1000.0)
    # quad from the front: 2; from behind: passes through, then the plane is behind too
    np.testing.assert_allclose(dist, [2.0, np.inf, 6.0, np.inf])
    assert [scene.actor_paths[a] if a >= 0 else "" for a in actors] == [
        "/World/Quad", "", "/World/Floor", ""
    ]  # fmt: skip
    np.testing.assert_allclose(normals[[0, 2]], [[0, 0, 1], [0, 0, 1]])
    # leftHanded orientation flips the front side
    mesh.GetOrientationAttr().Set("leftHanded")
    scene = RayScene.from_stage(stage, [])
    dist, _, _ = cast(scene, o[:2], d[:2], 5.0)
    np.testing.assert_allclose(dist, [np.inf, 1.0])
    # a closed static triangle mesh is not a solid: from inside, nothing is hit
    box = collider(UsdGeom.Mesh.Define(stage, "/World/Closed"))
    import trimesh

    b = trimesh.creation.box(extents=(1, 1, 1))
    box.GetPointsAttr().Set([Gf.Vec3f(*map(float, p)) for p in b.vertices])
    box.GetFaceVertexCountsAttr().Set([3] * len(b.faces))
    box.GetFaceVertexIndicesAttr().Set([int(i) for i in b.faces.reshape(-1)])
    box.AddTranslateOp().Set(Gf.Vec3d(20, 0, 0))
    scene = RayScene.from_stage(stage, [])
    dist, _, _ = cast(scene, [[20, 0, 0]], [[1, 0, 0]])
    assert dist[0] == np.inf
    dist, _, _ = cast(scene, [[18, 0, 0]], [[1, 0, 0]])
    assert dist[0] == pytest.approx(1.5)


def test_moving_bodies_use_state_poses_without_rebuild():
    stage = make_stage()
    body = UsdGeom.Xform.Define(stage, "/World/Arm")
    body.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0))
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    link = collider(UsdGeom.Cube.Define(stage, "/World/Arm/Geom/Box"))
    link.GetSizeAttr().Set(1.0)
    link.AddTranslateOp().Set(Gf.Vec3d(2, 0, 0))  # box centred 2 m along the body's x
    other = UsdGeom.Xform.Define(stage, "/World/Unlisted")
    other.AddTranslateOp().Set(Gf.Vec3d(0, 0, 10))
    UsdPhysics.RigidBodyAPI.Apply(other.GetPrim())
    collider(UsdGeom.Sphere.Define(stage, "/World/Unlisted/S"))
    off = collider(UsdGeom.Cube.Define(stage, "/World/Off"))
    off.CreatePurposeAttr()
    off.GetPrim().CreateAttribute("physics:collisionEnabled", Sdf.ValueTypeNames.Bool).Set(False)
    scene = RayScene.from_stage(stage, ["/World/Base", "/World/Arm"])
    assert scene.actor_paths == ("/World/Base", "/World/Arm", "/World/Unlisted")
    meshes = dict(scene.group_meshes())
    assert set(meshes) == {"", "/World/Arm", "/World/Unlisted"}
    assert len(meshes[""].faces) == 0  # the disabled collider is not part of the scene
    np.testing.assert_allclose(meshes["/World/Arm"].bounds, [[1.5, -0.5, -0.5], [2.5, 0.5, 0.5]])
    assert meshes["/World/Arm"].is_watertight
    positions = np.array([[0.0, 0, 0], [1.0, 0, 0]])
    h = math.radians(90) / 2
    orientations = np.array([[1.0, 0, 0, 0], [math.cos(h), 0, 0, math.sin(h)]])
    # body at (1, 0, 0) yawed 90 deg: box centre at (1, 2, 0); ray along +y from (1, -3, 0)
    dist, actors, normals = cast(scene, [[1, -3, 0]], [[0, 1, 0]], 50, positions, orientations)
    assert dist[0] == pytest.approx(4.5) and actors[0] == 1
    np.testing.assert_allclose(normals[0], [0, -1, 0], atol=1e-12)
    # the unlisted body keeps its USD pose (sphere radius 1 at z = 10)
    dist, actors, _ = cast(scene, [[0, 0, 0]], [[0, 0, 1]], 50, positions, orientations)
    assert dist[0] == pytest.approx(9.0, abs=0.02) and actors[0] == 2
    with pytest.raises(ValueError, match="bodies"):
        cast(scene, [[0, 0, 0]], [[0, 0, 1]], 50, positions[:1], orientations[:1])


def test_numba_and_embreex_scenes_agree():
    stage = make_stage()
    rng = np.random.default_rng(5)
    for k in range(12):
        kind = ["Cube", "Sphere", "Capsule", "Cylinder"][k % 4]
        g = collider(getattr(UsdGeom, kind).Define(stage, f"/World/G{k}"))
        g.AddTranslateOp().Set(Gf.Vec3d(*rng.uniform(-4, 4, 3)))
        g.AddRotateXYZOp().Set(Gf.Vec3f(*rng.uniform(-90, 90, 3)))
    body = UsdGeom.Xform.Define(stage, "/World/B")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    collider(UsdGeom.Cube.Define(stage, "/World/B/C"))
    scenes = [RayScene.from_stage(stage, ["/World/B"], backend=b) for b in ("numba", "embreex")]
    o = rng.uniform(-8, 8, (3000, 3)).astype(np.float32).astype(np.float64)
    d = rng.uniform(-4, 4, (3000, 3)) - o
    pos = np.array([[0.5, 0.5, 0.5]])
    quat = np.array([[0.9, 0.1, 0.3, 0.2]]) / np.linalg.norm([0.9, 0.1, 0.3, 0.2])
    (d1, a1, n1), (d2, a2, n2) = (cast(s, o, d, 30.0, pos, quat) for s in scenes)
    hit = np.isfinite(d1)
    assert hit.sum() > 1000
    np.testing.assert_array_equal(hit, np.isfinite(d2))
    np.testing.assert_allclose(d1[hit], d2[hit], atol=1e-4)
    assert np.mean(a1 == a2) > 0.999
    assert np.mean(np.abs(np.einsum("ij,ij->i", n1[hit], n2[hit])) > 0.999) > 0.99


def test_malformed_mesh_names_the_prim():
    stage = make_stage()
    mesh = collider(UsdGeom.Mesh.Define(stage, "/World/Bad"))
    mesh.GetPointsAttr().Set([Gf.Vec3f(0, 0, 0), Gf.Vec3f(1, 0, 0), Gf.Vec3f(0, 1, 0)])
    mesh.GetFaceVertexCountsAttr().Set([3])
    mesh.GetFaceVertexIndicesAttr().Set([0, 1, 7])
    with pytest.raises(SchemaError, match="/World/Bad.faceVertexIndices"):
        RayScene.from_stage(stage, [])


def test_import_runtime_loads_neither_trimesh_nor_pxr():
    import subprocess
    import sys

    code = (
        "import sys, runtime, runtime.rays, runtime.rays.backends; "
        "assert 'trimesh' not in sys.modules and 'numba' not in sys.modules; "
        "assert 'pxr' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_colliders_inside_instanceable_prims_are_found():
    stage = make_stage()
    stage.CreateClassPrim("/Prototypes")  # abstract: not traversed itself
    proto = UsdGeom.Xform.Define(stage, "/Prototypes/Wheel")
    cube = collider(UsdGeom.Cube.Define(stage, "/Prototypes/Wheel/Collider"))
    cube.GetSizeAttr().Set(1.0)
    body = UsdGeom.Xform.Define(stage, "/World/Car")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    inst = UsdGeom.Xform.Define(stage, "/World/Car/Wheel")
    inst.GetPrim().GetReferences().AddInternalReference(proto.GetPath())
    inst.GetPrim().SetInstanceable(True)
    inst.AddTranslateOp().Set(Gf.Vec3d(3, 0, 0))
    assert stage.GetPrimAtPath("/World/Car/Wheel/Collider").IsInstanceProxy()
    scene = RayScene.from_stage(stage, ["/World/Car"])
    dist, actors, _ = cast(scene, [[0, 0, 0]], [[1, 0, 0]], 10.0, np.zeros((1, 3)),
                           np.array([[1.0, 0, 0, 0]]))  # fmt: skip
    assert dist[0] == pytest.approx(2.5) and scene.actor_paths[actors[0]] == "/World/Car"


def test_parallel_scene_query_is_bit_identical():
    """A large query on two threads (closest hit, normals, inside-solid rule) returns
    exactly the single-threaded results."""
    stage = make_stage()
    rng = np.random.default_rng(8)
    for k in range(8):
        kind = ["Cube", "Sphere", "Capsule", "Cylinder"][k % 4]
        g = collider(getattr(UsdGeom, kind).Define(stage, f"/World/G{k}"))
        g.AddTranslateOp().Set(Gf.Vec3d(*rng.uniform(-3, 3, 3)))
    body = UsdGeom.Xform.Define(stage, "/World/B")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    collider(UsdGeom.Cube.Define(stage, "/World/B/C"))
    n = 3 * PARALLEL_MIN_RAYS + 5
    o = rng.uniform(-4, 4, (n, 3))
    d = rng.uniform(-4, 4, (n, 3)) - o
    pos = np.array([[0.5, 0.5, 0.5]])
    quat = np.array([[0.9, 0.1, 0.3, 0.2]]) / np.linalg.norm([0.9, 0.1, 0.3, 0.2])
    out = [
        cast(RayScene.from_stage(stage, ["/World/B"], threads=t), o, d, 30.0, pos, quat)
        for t in (1, 2)
    ]
    for a, b in zip(out[0], out[1], strict=True):
        np.testing.assert_array_equal(a, b)
    assert np.sum(out[0][0] == 0.0) > 50  # rays starting inside solids
    assert np.isfinite(out[0][0]).sum() > n // 4
    # the one-call query (scene_cast_kernel on one thread, its parallel twin on two): the
    # same results as the general cast
    o = np.ascontiguousarray(o)
    d = np.ascontiguousarray(d / np.linalg.norm(d, axis=1, keepdims=True))
    for t in (1, 2):
        scene = RayScene.from_stage(stage, ["/World/B"], threads=t)
        got = (np.empty(n), np.empty(n, np.int64), np.empty((n, 3)))
        scene.cast_trusted(o, d, np.full(n, 30.0), pos, quat, *got)
        for a, b in zip(out[0], got, strict=True):
            np.testing.assert_array_equal(a, b)


def test_one_thread_and_parallel_scene_casts_are_one_body():
    """The one-thread and the parallel scene cast are one function compiled twice, each
    under its own name (its own Numba cache entry)."""
    from runtime.rays import _scene_cast_kernels as kernels

    one = getattr(kernels.scene_cast_kernel, "py_func", kernels.scene_cast_kernel)
    many = getattr(
        kernels.scene_cast_parallel_kernel, "py_func", kernels.scene_cast_parallel_kernel
    )
    assert one.__code__ is many.__code__
    assert (one.__qualname__, many.__qualname__) == (
        "scene_cast_kernel",
        "scene_cast_parallel_kernel",
    )


def _sdf(kind, p, size):
    """Signed distance of points p (N, 3) in the shape frame (closed forms, NumPy)."""
    if kind == "sphere":
        return np.linalg.norm(p, axis=1) - size[0]
    if kind == "capsule":  # axis z, radius size[0], half height size[1]
        z = np.clip(p[:, 2], -size[1], size[1])
        return np.linalg.norm(p - np.stack([0 * z, 0 * z, z], 1), axis=1) - size[0]
    if kind == "cylinder":
        radial = np.hypot(p[:, 0], p[:, 1]) - size[0]
        axial = np.abs(p[:, 2]) - size[1]
        outside = np.hypot(np.maximum(radial, 0.0), np.maximum(axial, 0.0))
        return outside + np.minimum(np.maximum(radial, axial), 0.0)
    q = np.abs(p) - np.asarray(size)  # box, half extents
    return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)


@pytest.mark.parametrize("backend", ["numba", "embreex"])
def test_primitives_are_hit_on_their_exact_surfaces(backend):
    """Spheres, capsules, cylinders and boxes are intersected exactly: every hit lies on
    the closed-form surface within 1e-9 (relative), nothing is crossed before it, the
    normal is the surface's; and rays that clearly miss or hit do so."""
    stage = make_stage()
    parent = UsdGeom.Xform.Define(stage, "/World/P")
    parent.AddTranslateOp().Set(Gf.Vec3d(0.3, -0.2, 0.1))
    parent.AddRotateXYZOp().Set(Gf.Vec3f(20.0, -35.0, 50.0))
    parent.AddScaleOp().Set(Gf.Vec3f(1.5, 1.5, 1.5))
    shapes = {}
    for name, kind, centre, axis, size in (
        ("S", "Sphere", (0, 3, 0), "Z", (0.5,)),
        ("C", "Capsule", (3, 0, 0), "X", (0.25, 1.0)),
        ("Y", "Cylinder", (0, -3, 0), "Y", (0.3, 2.0)),
        ("B", "Cube", (-3, 0, 0), None, (0.8,)),
    ):
        g = collider(getattr(UsdGeom, kind).Define(stage, f"/World/P/{name}"))
        g.AddTranslateOp().Set(Gf.Vec3d(*centre))
        g.AddRotateXYZOp().Set(Gf.Vec3f(10.0, 25.0, -15.0))
        if kind == "Cube":
            g.GetSizeAttr().Set(size[0])
        else:
            g.GetRadiusAttr().Set(size[0])
            if len(size) > 1:
                g.GetHeightAttr().Set(size[1])
            if axis is not None and kind != "Sphere":
                g.GetAxisAttr().Set(axis)
        shapes[name] = g
    scene = RayScene.from_stage(stage, [], backend=backend)
    rng = np.random.default_rng(12)
    cache = UsdGeom.XformCache()
    checked = 0
    for name, g in shapes.items():
        world = np.array(cache.GetLocalToWorldTransform(g.GetPrim()), np.float64).T
        scale = np.linalg.norm(world[:3, :3], axis=0)
        rotation = world[:3, :3] / scale
        kind = g.GetPrim().GetTypeName().lower()
        if kind == "cube":
            kind, size = "box", np.full(3, 0.5 * g.GetSizeAttr().Get() * scale[0])
        elif kind == "sphere":
            size = (g.GetRadiusAttr().Get() * scale[0],)
        else:
            size = (g.GetRadiusAttr().Get() * scale[0], 0.5 * g.GetHeightAttr().Get() * scale[0])
            axis = str(g.GetAxisAttr().Get())
            if axis == "X":  # shape frame with the axis along z
                rotation = rotation @ np.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]]).T
            elif axis == "Y":
                rotation = rotation @ np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]).T
        centre = world[:3, 3]
        n = 400
        o = centre + rng.normal(size=(n, 3)) * 4.0
        o = centre + (o - centre) * (2.5 / np.linalg.norm(o - centre, axis=1, keepdims=True))
        target = centre + rng.uniform(-1.2, 1.2, (n, 3)) * max(size)
        # within 4 of the start no other shape is reachable (they are >= 6.4 apart)
        dist, actors, normals = cast(scene, o, target - o, 4.0)
        d = target - o
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        local_o = (o - centre) @ rotation
        local_d = d @ rotation
        hit = np.isfinite(dist)
        assert 40 < hit.sum() < n
        assert all(scene.actor_paths[a] == f"/World/P/{name}" for a in actors[hit])
        p = local_o[hit] + dist[hit, None] * local_d[hit]
        scale_len = max(size)
        np.testing.assert_allclose(_sdf(kind, p, size), 0.0, atol=1e-9 * scale_len)
        # nothing crossed before the hit; the normal is the surface gradient, facing the ray
        samples = np.linspace(0.0, 1.0 - 1e-7, 400)
        for k in np.nonzero(hit)[0][:60]:
            along = local_o[k] + np.outer(samples * dist[k], local_d[k])
            assert _sdf(kind, along, size).min() > -1e-9 * scale_len
        eps = 1e-7 * scale_len
        grad = np.stack(
            [(_sdf(kind, p + eps * e, size) - _sdf(kind, p - eps * e, size)) / (2 * eps)
             for e in np.eye(3)], 1,
        )  # fmt: skip
        local_n = normals[hit] @ rotation
        smooth = np.linalg.norm(grad, axis=1) > 0.999  # away from box edges / cylinder rims
        np.testing.assert_allclose(local_n[smooth], grad[smooth], atol=1e-5)
        assert np.all(np.einsum("ij,ij->i", normals[hit], d[hit]) < 0.0)
        # clear misses stay misses
        t = np.linspace(0.0, 4.0, 4000)
        for k in np.nonzero(~hit)[0][:60]:
            along = local_o[k] + np.outer(t, local_d[k])
            assert _sdf(kind, along, size).min() > -1e-3 * scale_len
        checked += hit.sum()
    assert checked > 300
