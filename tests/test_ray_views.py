"""PinholeView (runtime.rays.views) against RayScene.cast on a synthetic stage.

Every collider kind the view handles differently: spheres, capsules, cylinders and rotated
boxes on moving bodies (analytic solids), a moving non-convex triangle mesh, a static mesh
and a static ground box. Bodies are placed at random each update: in front of the camera,
across the image border, behind the camera (a box not in front gives the whole image), and
around the camera itself (the "starts inside a solid" rule). The oracle is one
``RayScene.cast`` of every pixel ray at the same poses; results must be equal bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics

import runtime.schema  # noqa: F401
from runtime.rays import PinholeView, RayScene, box_scene_rows

W, H = 40, 30
FX = FY = 30.0
CX, CY = W / 2.0, H / 2.0
CAMERA = np.array([-3.0, 0.0, 1.0])  # looking along +x ("world" convention, identity)
BODIES = ["/World/S", "/World/C", "/World/Y", "/World/B", "/World/M"]


def collider(gprim):
    UsdPhysics.CollisionAPI.Apply(gprim.GetPrim())
    return gprim


def body(stage, path):
    xform = UsdGeom.Xform.Define(stage, path)
    UsdPhysics.RigidBodyAPI.Apply(xform.GetPrim())
    return path


def make_scene():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.Xform.Define(stage, "/World")
    ground = collider(UsdGeom.Cube.Define(stage, "/World/Ground"))
    ground.AddTranslateOp().Set(Gf.Vec3d(0, 0, -0.5))
    ground.AddScaleOp().Set(Gf.Vec3f(20, 20, 1))
    wall = collider(UsdGeom.Mesh.Define(stage, "/World/Wall"))  # static, single-sided
    wall.GetPointsAttr().Set([(4, -3, 0), (4, 3, 0), (4, 3, 3), (4, -3, 3)])
    wall.GetFaceVertexCountsAttr().Set([4])
    wall.GetFaceVertexIndicesAttr().Set([0, 3, 2, 1])  # facing -x, towards the camera
    collider(UsdGeom.Sphere.Define(stage, body(stage, "/World/S") + "/G")).GetRadiusAttr().Set(0.3)
    capsule = collider(UsdGeom.Capsule.Define(stage, body(stage, "/World/C") + "/G"))
    capsule.GetRadiusAttr().Set(0.15)
    capsule.GetHeightAttr().Set(0.6)
    cylinder = collider(UsdGeom.Cylinder.Define(stage, body(stage, "/World/Y") + "/G"))
    cylinder.GetRadiusAttr().Set(0.2)
    cylinder.GetHeightAttr().Set(0.5)
    box = collider(UsdGeom.Cube.Define(stage, body(stage, "/World/B") + "/G"))
    box.AddRotateXYZOp().Set(Gf.Vec3f(20, 30, 40))
    box.GetSizeAttr().Set(0.4)
    mesh = collider(UsdGeom.Mesh.Define(stage, body(stage, "/World/M") + "/G"))
    # a folded sheet (non-convex, open): two quads meeting at an edge
    mesh.GetPointsAttr().Set(
        [
            (0, -0.4, -0.3),
            (0, 0.4, -0.3),
            (0.3, 0.4, 0),
            (0.3, -0.4, 0),
            (0, -0.4, 0.3),
            (0, 0.4, 0.3),
        ]  # fmt: skip
    )
    mesh.GetFaceVertexCountsAttr().Set([4, 4])
    mesh.GetFaceVertexIndicesAttr().Set([0, 3, 2, 1, 3, 4, 5, 2])
    UsdGeom.Mesh(mesh.GetPrim()).CreateDoubleSidedAttr(False)
    return RayScene.from_stage(stage, BODIES)


def pixel_rays():
    v, u = np.divmod(np.arange(W * H), W)
    d = np.stack([np.ones(u.size), -(u - CX) / FX, -(v - CY) / FY], axis=1)
    return d / np.linalg.norm(d, axis=1, keepdims=True)


def random_poses(rng, step):
    positions = np.empty((len(BODIES), 3))
    for k in range(len(BODIES)):
        kind = rng.integers(4)
        if kind == 0:  # in view, 1 to 5 m ahead
            positions[k] = CAMERA + [
                rng.uniform(1, 5),
                rng.uniform(-1.5, 1.5),
                rng.uniform(-0.8, 0.8),
            ]
        elif kind == 1:  # across the image border
            positions[k] = CAMERA + [1.5, rng.choice([-1.0, 1.0]) * 0.95, rng.uniform(-0.5, 0.5)]
        elif kind == 2:  # behind or beside the camera
            positions[k] = CAMERA + [rng.uniform(-0.4, 0.2), rng.uniform(-0.3, 0.3), 0.1]
        else:
            positions[k] = CAMERA + rng.uniform(-0.5, 4.0, 3) * [1, 0.5, 0.3]
    if step % 7 == 3:
        positions[0] = CAMERA + [0.05, 0.0, 0.0]  # the sphere around the camera
    q = rng.normal(size=(len(BODIES), 4))
    return positions, q / np.linalg.norm(q, axis=1, keepdims=True)


class ViewAndCast:
    """A two-world PinholeView of ``scene`` from CAMERA (looking along +x) with ``bodies``
    moving, and its oracle: :meth:`update` updates one world and checks its images against
    one ``RayScene.cast`` of every pixel ray at the same poses, bit for bit."""

    def __init__(self, scene, bodies, max_distance):
        self.scene = scene
        self.directions = np.ascontiguousarray(pixel_rays())
        p = W * H
        rows = np.array([bodies.index(g) if g in bodies else -1 for g in scene.group_paths])
        fixed_p, fixed_q = (a.copy() for a in scene.group_poses(None, None))
        self.outputs = (np.zeros((2, p)), np.zeros((2, p)), np.zeros((2, p, 3)),
                        np.zeros((2, p), np.int64))  # fmt: skip
        self.view = PinholeView(
            scene, CAMERA, [1.0, 0.0, 0.0, 0.0], self.directions, W, H, (FX, FY, CX, CY),
            max_distance, rows, fixed_p, fixed_q, self.directions[:, 0].copy(), *self.outputs,
            0, len(bodies),
        )  # fmt: skip
        self.origins = np.ascontiguousarray(np.tile(CAMERA, (p, 1)))
        self.max_distances = np.full(p, float(max_distance))

    def update(self, env, positions, orientations):
        """World ``env`` at these poses; returns the oracle's (distances, actors, normals)."""
        self.view.update(env, positions, orientations)
        p = W * H
        t = np.empty(p)
        actors = np.empty(p, np.int64)
        normals = np.empty((p, 3))
        self.scene.cast(self.origins, self.directions, self.max_distances, positions,
                        orientations, t, actors, normals)  # fmt: skip
        hit = np.isfinite(t)
        plane, camera, view_normals, view_actors = (out[env] for out in self.outputs)
        np.testing.assert_array_equal(camera, t)
        np.testing.assert_array_equal(plane, np.where(hit, t * self.directions[:, 0], np.inf))
        np.testing.assert_array_equal(view_actors, actors)
        np.testing.assert_array_equal(view_normals[hit], normals[hit])
        return t, actors, normals


def test_view_equals_the_scene_cast_for_every_collider_kind():
    scene = make_scene()
    assert box_scene_rows(scene, *scene.group_poses(None, None)) is None  # (not boxes only)
    check = ViewAndCast(scene, BODIES, 8.0)
    rng = np.random.default_rng(4)
    seen = {"moving": 0, "inside": 0, "mesh": 0, "solid": 0}
    mesh_actor = scene.actor_paths.index("/World/M")
    for step in range(60):
        for env in range(2):
            t, actors, _ = check.update(env, *random_poses(rng, step + env))
            moving = np.isin(actors, [scene.actor_paths.index(b) for b in BODIES])
            seen["moving"] += bool(moving.any())
            seen["inside"] += bool(np.all(t == 0.0))
            seen["mesh"] += bool(np.any(actors == mesh_actor))
            seen["solid"] += bool(np.any(moving & (actors != mesh_actor)))
    assert seen["moving"] > 100 and seen["inside"] >= 10 and seen["mesh"] > 10
    assert seen["solid"] > 50


def test_view_rejects_other_backends_and_shapes():
    scene = make_scene()
    directions = pixel_rays()
    outputs = (np.zeros((1, 5)), np.zeros((1, W * H)), np.zeros((1, W * H, 3)),
               np.zeros((1, W * H), np.int64))  # fmt: skip
    rows = np.full(scene.group_count, -1)
    poses = scene.group_poses(None, None)
    with pytest.raises(ValueError, match="out_plane"):
        PinholeView(scene, CAMERA, [1.0, 0, 0, 0], directions, W, H, (FX, FY, CX, CY), 8.0,
                    rows, *poses, directions[:, 0].copy(), *outputs)  # fmt: skip


def plate(stage, path, x, half, depth=0.02):
    """A box mesh (x to x + depth, y and z within +-half): a convex hull of its own."""
    mesh = collider(UsdGeom.Mesh.Define(stage, path))
    mesh.GetPointsAttr().Set(
        [(x + dx, sy * half, sz * half) for dx in (0.0, depth) for sy in (-1, 1) for sz in (-1, 1)]
    )
    mesh.GetFaceVertexCountsAttr().Set([4] * 6)
    mesh.GetFaceVertexIndicesAttr().Set(
        [0, 1, 3, 2, 4, 6, 7, 5, 0, 4, 5, 1, 2, 3, 7, 6, 0, 2, 6, 4, 1, 5, 7, 3]
    )


def walled_stage():
    """A z-up stage with a static wall 5 m ahead of the origin, across the whole view."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.Xform.Define(stage, "/World")
    wall = collider(UsdGeom.Cube.Define(stage, "/World/Wall"))
    wall.AddTranslateOp().Set(Gf.Vec3d(5, 0, 0))
    wall.AddScaleOp().Set(Gf.Vec3f(0.1, 20, 20))
    return stage


def make_layered_scene():
    """A wall, and one moving body of two plates 0.5 m apart (the nearer one smaller) beside
    a moving sphere."""
    stage = walled_stage()
    plates = body(stage, "/World/M")
    plate(stage, plates + "/Near", 0.0, 0.2)
    plate(stage, plates + "/Far", 0.5, 0.6)
    collider(UsdGeom.Sphere.Define(stage, body(stage, "/World/S") + "/G")).GetRadiusAttr().Set(0.2)
    return RayScene.from_stage(stage, ["/World/M", "/World/S"])


def test_view_over_small_motions_equals_the_scene_cast():
    """Bodies moving a little per update (each pixel first cast up to a little beyond its
    last hit): the edges of the nearer quad cross pixels, whose hits jump to the farther
    quad (nothing within the short range: the whole range is cast), turns and pauses."""
    scene = make_layered_scene()
    check = ViewAndCast(scene, ["/World/M", "/World/S"], 20.0)
    plates = scene.actor_paths.index("/World/M")
    previous = [None, None]
    kept = jumped = 0
    for step in range(80):
        for env in range(2):
            s = step * (1.0 if env == 0 else -0.7)
            positions = CAMERA + np.array(
                [
                    [2.0 + 0.3 * math.sin(0.05 * s), 0.015 * s - 0.6, 0.2 * math.sin(0.1 * s)],
                    [3.0, 0.5 - 0.01 * s, -0.3],
                ]  # fmt: skip
            )
            if step % 20 == 10:
                positions = positions.copy()  # a pause: the same poses again
            angle = 0.0005 * s
            orientations = np.array(
                [[math.cos(angle), 0.0, math.sin(angle), 0.0], [1.0, 0.0, 0.0, 0.0]]
            )
            t, actors, _ = check.update(env, positions, orientations)
            if previous[env] is not None:
                t0, a0 = previous[env]
                both = (a0 == plates) & (actors == plates)
                kept += int(np.count_nonzero(both & (np.abs(t - t0) < 0.05)))
                jumped += int(np.count_nonzero(both & (t - t0 > 0.4)))  # near -> far plate
            previous[env] = (t.copy(), actors.copy())
    assert kept > 1000 and jumped > 20


def make_tumbling_scene(double_sided):
    """A wall and two moving boxes, a thin plate and a cube (convex hulls of 12 triangles in
    two leaf blocks of the group: the cube's opposite faces lie in different blocks)."""
    stage = walled_stage()
    plate(stage, body(stage, "/World/P") + "/G", -0.01, 0.5)
    plate(stage, body(stage, "/World/Q") + "/G", -0.2, 0.2, depth=0.4)
    return RayScene.from_stage(stage, ["/World/P", "/World/Q"], double_sided=double_sided)


@pytest.mark.parametrize("double_sided", [False, True])
def test_view_of_tumbling_convex_hulls_equals_the_scene_cast(double_sided):
    """Groups that are one convex hull first try the leaf block of each pixel's last hit (a
    hit on a face turned towards the camera is the group's closest): a plate and a cube
    tumbling fast, so that a pixel's last block often holds only faces turned away (the
    cube's near face turned into the other block; double-sided, that block's nearest hit is
    then a face turned away). Oracle: RayScene.cast, bit for bit."""
    scene = make_tumbling_scene(double_sided)
    bodies = ["/World/P", "/World/Q"]
    check = ViewAndCast(scene, bodies, 20.0)
    assert sorted(scene.group_paths[g] for g in check.view.convex_groups) == bodies
    actors = [scene.actor_paths.index(b) for b in bodies]
    rng = np.random.default_rng(7)
    spin = rng.normal(size=(2, 2, 3))
    previous = [None, None]
    kept = turned = 0
    for step in range(120):
        for env in range(2):
            s = step * (1.0 if env == 0 else -0.6)
            positions = CAMERA + np.array([[1.6, 0.1 * math.sin(0.05 * s), 0.0],
                                           [1.2, -0.25, 0.1 * math.cos(0.07 * s)]])  # fmt: skip
            orientations = np.empty((2, 4))
            for b in range(2):
                axis = spin[env, b] / np.linalg.norm(spin[env, b])
                angle = 0.15 * s  # (a quarter turn in about ten updates)
                orientations[b] = [math.cos(angle), *(math.sin(angle) * axis)]
            _, hit_actors, normals = check.update(env, positions, orientations)
            if previous[env] is not None:
                n0, a0 = previous[env]
                same = np.isin(hit_actors, actors) & (hit_actors == a0)
                kept += int(np.count_nonzero(same))
                # the plate's face under the pixel changed (another face of the same hull)
                turned += int(np.count_nonzero(same & (np.abs(normals - n0).max(axis=1) > 0.1)))
            previous[env] = (normals.copy(), hit_actors.copy())
    assert kept > 2000 and turned > 100
