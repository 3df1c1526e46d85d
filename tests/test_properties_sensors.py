"""Property-based tests (hypothesis) of the sensor kernels against plain NumPy references.

Every test draws its inputs (including degenerate ones: zero vectors, zero impulses, huge
and tiny magnitudes, empty arrays, rays that start on a face) and compares the compiled
kernel with an independent reference: ``tests/reference_sensors.py`` (spec formulas written
out), a brute-force Möller-Trumbore over every triangle, or a loop written here from the
spec. ``derandomize=True`` makes every CI run draw the same examples; shrinking is off to
bound CI time (a failure prints the drawn example unshrunk).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from runtime._quat import cross, rotate_vectors
from runtime.rays import _solid_kernels, _traversal_kernels
from runtime.sensors import _contact_kernels, _imu_kernels, _raycast_kernels
from tests.helpers.bvh import build
from tests.helpers.reference_sensors import (
    ImuIsaacReference,
    contact_reference,
    gf_round_trip,
    quat_to_matrix,
)
from tests.helpers.sensor_kernels import _imu_buffers, _imu_call

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    phases=(Phase.explicit, Phase.generate),  # no shrinking: bounded CI time
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# magnitudes from tiny to huge, zero included
_SCALE = st.sampled_from([0.0, 1e-150, 1e-8, 1.0, 1e3, 1e150])
_UNIT = st.floats(-1.0, 1.0, allow_nan=False)


def _vectors(n_min=0, n_max=6):
    return st.integers(n_min, n_max).flatmap(
        lambda n: hnp.arrays(np.float64, (n, 3), elements=_UNIT)
    )


@st.composite
def _unit_quats(draw, n_min=1, n_max=6):
    raw = draw(hnp.arrays(np.float64, (draw(st.integers(n_min, n_max)), 4), elements=_UNIT))
    norms = np.linalg.norm(raw, axis=1)
    assume(np.all(norms > 1e-3))
    return np.ascontiguousarray(raw / norms[:, None])


# ------------------------------------------------------------------ quaternion helpers


@SETTINGS
@given(a=_vectors(), scale_a=_SCALE, scale_b=_SCALE, data=st.data())
def test_cross_matches_numpy(a, scale_a, scale_b, data):
    b = data.draw(hnp.arrays(np.float64, a.shape, elements=_UNIT))
    a, b = a * scale_a, b * scale_b
    with np.errstate(over="ignore", invalid="ignore"):
        expected = np.cross(a, b) if len(a) else np.zeros((0, 3))
    np.testing.assert_array_equal(cross(a, b), expected)


@SETTINGS
@given(q=_unit_quats(), scale=_SCALE, data=st.data())
def test_rotate_vectors_matches_rotation_matrix(q, scale, data):
    v = data.draw(hnp.arrays(np.float64, (len(q), 3), elements=_UNIT)) * scale
    expected = np.array([quat_to_matrix(q[i]) @ v[i] for i in range(len(q))])
    got = rotate_vectors(q, v)
    tol = 1e-12 * max(scale, 1e-300)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=tol)
    # rotations keep lengths (zero stays zero)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), np.linalg.norm(v, axis=1), rtol=1e-12)


@SETTINGS
@given(q=_unit_quats(1, 8), flip=st.booleans())
def test_quaternion_round_trip_follows_usd_sign_rule(q, flip):
    q = -q if flip else q
    out = np.empty_like(q)
    _imu_kernels.quat_matrix_round_trip_kernel(q, out)
    for i in range(len(q)):
        expected = gf_round_trip(q[i])
        # the rule picks q or -q; on its ties (a zero deciding component) either is right
        assert np.allclose(out[i], expected, atol=1e-9) or np.allclose(
            np.abs(out[i]), np.abs(expected), atol=1e-9
        )
        assert np.allclose(np.abs(out[i]), np.abs(q[i]), atol=0)


# ------------------------------------------------------------------ contact thresholds


@st.composite
def _contact_case(draw):
    bodies = draw(st.integers(1, 4))
    sensors = draw(st.integers(1, 5))
    contacts = draw(st.integers(0, 8))
    pos = draw(hnp.arrays(np.float64, (bodies, 3), elements=_UNIT))
    quat = draw(_unit_quats(bodies, bodies))
    sb = np.array(draw(st.lists(st.integers(0, bodies - 1), min_size=sensors, max_size=sensors)))
    off = draw(hnp.arrays(np.float64, (sensors, 3), elements=_UNIT))
    radius = np.array(
        draw(
            st.lists(
                st.sampled_from([-1.0, 0.0, 0.3, 1.0, 5.0]), min_size=sensors, max_size=sensors
            )
        )
    )
    levels = st.sampled_from([0.0, 0.01, 1.0, 30.0, 1e5])
    lo = draw(st.lists(levels, min_size=sensors, max_size=sensors))
    hi = draw(st.lists(levels, min_size=sensors, max_size=sensors))
    fmin = np.float32(np.minimum(lo, hi)).astype(np.float64)
    fmax = np.float32(np.maximum(lo, hi)).astype(np.float64)
    c0 = np.array(draw(st.lists(st.integers(0, bodies - 1), min_size=contacts, max_size=contacts)))
    c1 = np.array(draw(st.lists(st.integers(-1, bodies - 1), min_size=contacts, max_size=contacts)))
    cp = draw(hnp.arrays(np.float64, (contacts, 3), elements=st.floats(-2, 2)))
    impulse_scale = draw(_SCALE)
    ci = draw(hnp.arrays(np.float64, (contacts, 3), elements=_UNIT)) * impulse_scale
    dts = draw(
        hnp.arrays(np.float64, (contacts,), elements=st.sampled_from([0.0, 1 / 240, 1 / 60]))
    )
    use_dts = draw(st.booleans())
    return (
        pos,
        quat,
        sb.astype(np.int64),
        off,
        radius,
        fmin,
        fmax,
        c0.astype(np.int64).reshape(-1),
        c1.astype(np.int64).reshape(-1),
        np.ascontiguousarray(cp),
        np.ascontiguousarray(ci),
        dts if use_dts else np.zeros(0),
    )


@SETTINGS
@given(case=_contact_case(), dt=st.sampled_from([0.0, 1 / 120, 1 / 60]))
def test_contact_kernel_thresholds_match_reference(case, dt):
    pos, quat, sb, off, radius, fmin, fmax, c0, c1, cp, ci, dts = case
    n = len(sb)
    block_i = np.zeros((n, 6), np.int64)
    block_i[:, 0] = sb
    block_i[:, 1] = 1
    block_f = np.zeros((n, 8))
    block_f[:, 0:6] = np.column_stack([off, radius, fmin, fmax])
    _contact_kernels.contact_update_kernel(
        pos, quat, c0, c1, cp, ci, dts, dt, 0.5, 3, -1, block_f, block_i
    )
    for s in range(n):
        with np.errstate(over="ignore"):  # huge impulses: float32(inf), compared as such
            value, in_contact, count = contact_reference(
                pos, quat, sb[s], off[s], radius[s], fmin[s], fmax[s], c0, c1, cp, ci,
                dts if len(dts) else None, dt,
            )  # fmt: skip
        assert block_f[s, 6] == pytest.approx(value, rel=1e-6, abs=0)
        assert bool(block_i[s, 2]) == in_contact and block_i[s, 3] == count
        assert block_i[s, 4] == 1  # valid
        assert 0.0 <= block_f[s, 6] <= fmax[s]


# ------------------------------------------------------------------ IMU rolling averages


@SETTINGS
@given(
    widths=st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)),
    steps=st.integers(1, 25),
    speed=_SCALE.filter(lambda s: s <= 1e3),
    data=st.data(),
)
def test_imu_filters_match_reference(widths, steps, speed, data):
    effective = np.maximum(np.array(widths), 1)
    span = int(max(effective[1], effective[2], 2 * effective[0]))
    ring = int(max(2 * effective.max(), 20))
    sensors = dict(
        bodies=np.zeros(1, np.int64),
        off_p=np.zeros((1, 3)),
        off_q=data.draw(_unit_quats(1, 1)),
        widths=effective.reshape(1, 3).astype(np.int64),
        rings=np.array([span], np.int64),
    )
    buf = _imu_buffers(1, ring)
    reference = ImuIsaacReference(widths, sensors["off_q"][0])
    x = dict(
        quat=data.draw(_unit_quats(1, 1)),
        com=np.zeros((1, 3)),
        lin=np.zeros((1, 3)),
        ang=np.zeros((1, 3)),
        lacc=np.zeros((1, 3)),
        aacc=np.zeros((1, 3)),
    )
    for k in range(1, steps + 1):
        x["lin"] = np.ascontiguousarray(
            data.draw(hnp.arrays(np.float64, (1, 3), elements=_UNIT)) * speed
        )
        x["ang"] = np.ascontiguousarray(
            data.draw(hnp.arrays(np.float64, (1, 3), elements=_UNIT)) * speed
        )
        acc, gyro, quat, gs, _ = _imu_call(
            _imu_kernels.imu_update_kernel, x, sensors, buf, 0, k / 60, False
        )
        a, w, q, g = reference.step(
            np.float32(k / 60), x["lin"][0], x["ang"][0], x["quat"][0], np.array([0, 0, 9.80665])
        )
        scale = max(speed * 60, 1.0)
        np.testing.assert_allclose(acc[0], a, rtol=2e-5, atol=2e-5 * scale)
        np.testing.assert_allclose(gyro[0], w, rtol=2e-6, atol=2e-6 * max(speed, 1.0))
        np.testing.assert_allclose(quat[0], q, atol=2e-6)
        np.testing.assert_allclose(gs[0], g, atol=2e-5)


# ------------------------------------------------------------------ sweep windows


def _firing_reference(counter, dt, offsets):
    """docs/sensors/raycast.md#each-step, literally, in float32."""
    p = np.float32(offsets.max()) if len(offsets) else np.float32(0.0)
    if not p > 0:
        return list(range(len(offsets)))
    dt32 = np.float32(dt)
    e = np.float32(np.fmod(np.float32(np.float32(counter) * dt32), p))
    s = np.float32(e - dt32)
    wrapped = s < 0
    if wrapped:
        s = np.float32(s + p)
    out = []
    for i, tau in enumerate(offsets.astype(np.float32)):
        active = (tau >= s or tau < e) if wrapped else (s <= tau < e)
        if active:
            out.append(i)
    return out


@SETTINGS
@given(
    offsets=st.lists(
        st.one_of(
            st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]),
            st.floats(-0.5, 3.0, allow_nan=False, width=32),
        ),
        min_size=1,
        max_size=24,
    ),
    dt=st.sampled_from([1 / 240, 1 / 60, 0.1, 0.25, 0.9, 2.0]),
    counter=st.integers(1, 5000),
)
def test_sweep_window_matches_spec_loop(offsets, dt, counter):
    taus = np.array(offsets, np.float32).astype(np.float64)
    order = np.argsort(taus, kind="stable").astype(np.int64)
    sorted_offsets = np.ascontiguousarray(taus[order])
    out = np.zeros(len(taus), np.int64)
    count = _raycast_kernels._append_firing_rays_kernel(
        counter,
        np.float32(dt),
        np.float32(taus.max()),
        sorted_offsets,
        order,
        0,
        len(taus),
        out,
        0,
    )
    assert list(out[:count]) == _firing_reference(counter, dt, taus)


# ------------------------------------------------------------------ BVH and ray-triangle


@st.composite
def _mesh_and_rays(draw):
    faces_n = draw(st.integers(1, 40))
    coords = st.floats(-2.0, 2.0, allow_nan=False).map(lambda x: round(x, 3))
    vertices = draw(hnp.arrays(np.float64, (faces_n * 3, 3), elements=coords))
    if draw(st.booleans()):  # degenerate triangles: a repeated vertex, a collinear one
        vertices[1] = vertices[0]
        if faces_n > 1:
            vertices[5] = 0.5 * (vertices[3] + vertices[4])
    faces = np.arange(faces_n * 3, dtype=np.int64).reshape(faces_n, 3)
    rays = draw(st.integers(1, 30))
    origins = draw(hnp.arrays(np.float64, (rays, 3), elements=st.floats(-4.0, 4.0)))
    if draw(st.booleans()):  # rays starting exactly on a vertex
        origins[0] = vertices[0]
    directions = draw(hnp.arrays(np.float64, (rays, 3), elements=_UNIT))
    norms = np.linalg.norm(directions, axis=1)
    assume(np.all(norms > 1e-3))
    directions = np.ascontiguousarray(directions / norms[:, None])
    max_d = draw(hnp.arrays(np.float64, (rays,), elements=st.sampled_from([np.inf, 0.0, 0.5, 3.0])))
    return vertices, faces, np.ascontiguousarray(origins), directions, max_d


def _hits(vertices, faces, o, d, max_d, double_sided, eps):
    """Distances of every triangle hit of one ray, barycentric bounds widened by ``eps``.

    Plain Möller-Trumbore over all triangles (independent of the kernels); ``eps > 0``
    accepts rays through an edge or a vertex, ``eps < 0`` only clear interior hits.
    """
    tri = vertices[faces]
    v0, e1, e2 = tri[:, 0], tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    p = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, p)
    ok = (np.abs(det) > 1e-12) if double_sided else det > 1e-12
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = o - v0
    u = np.einsum("ij,ij->i", s, p) * inv
    q = np.cross(s, e1)
    v = (q @ d) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    hit = ok & (u >= -eps) & (v >= -eps) & (u + v <= 1 + eps) & (t >= -eps) & (t < max_d)
    return t[hit]


@SETTINGS
@given(case=_mesh_and_rays(), double_sided=st.booleans())
def test_bvh_closest_hit_matches_brute_force(case, double_sided):
    vertices, faces, origins, directions, max_d = case
    boxes, refs, tris, order = build(vertices, faces)
    dist = np.empty(len(origins))
    face = np.empty(len(origins), np.int64)
    _traversal_kernels.bvh_closest_hit_kernel(
        boxes, refs, tris, order, 0, origins, directions, max_d, double_sided, dist, face
    )
    eps = 1e-9
    for i in range(len(origins)):
        args = (vertices, faces, origins[i], directions[i], max_d[i], double_sided)
        clear = _hits(*args, -eps)  # hits away from every edge: must be found
        loose = _hits(*args, eps)  # hits through an edge or vertex: may be found
        if np.isfinite(dist[i]):
            assert face[i] >= 0 and 0.0 <= dist[i] < max_d[i]
            # a ray that starts on the mesh (hypothesis finds origins 1e-99 from a vertex)
            # may report its start, ~1e-180 away: the oracle's determinant and barycentric
            # tests and the kernel's round differently that far below every tolerance
            assert np.any(np.abs(loose - dist[i]) <= 1e-9) or dist[i] <= 1e-100, (
                "reported hit is not on a triangle"
            )
            assert dist[i] <= (clear.min() if len(clear) else np.inf) + 1e-9, "missed closer"
        else:
            assert face[i] == -1 and len(clear) == 0, "missed a clear hit"


# ------------------------------------------------------------------ ray start inside solids


def _inside_reference(kind, params, p):
    x, y, z = p
    if kind == _solid_kernels.SOLID_BOX:
        return bool(np.all(np.abs(p) <= params[:3]))
    if kind == _solid_kernels.SOLID_SPHERE:
        return bool(np.dot(p, p) <= params[0] ** 2)
    if kind == _solid_kernels.SOLID_CAPSULE:
        closest = np.array([0.0, 0.0, np.clip(z, -params[1], params[1])])
        return bool(np.linalg.norm(p - closest) ** 2 <= params[0] ** 2)
    return bool(abs(z) <= params[1] and x * x + y * y <= params[0] ** 2)


@SETTINGS
@given(
    kind=st.sampled_from(["box", "sphere", "capsule", "cylinder"]),
    params=hnp.arrays(np.float64, (3,), elements=st.floats(0.0, 2.0)),
    point=hnp.arrays(np.float64, (3,), elements=st.floats(-3.0, 3.0)),
)
def test_inside_solid_matches_reference(kind, params, point):
    code = getattr(_solid_kernels, f"SOLID_{kind.upper()}")
    table = np.ascontiguousarray(params.reshape(1, 3))
    planes = np.zeros((0, 4))
    got = _solid_kernels.inside_solid_kernel(code, table, 0, planes, 0, 0, *point)
    assert bool(got) == _inside_reference(code, params, point)


# ------------------------------------------------------------------ ray against a box solid


def _slab_or_inside(o, d, half):
    """Distance from ``o`` along ``d`` into the box ``|x| <= half`` (box frame): 0 from
    inside (a solid), else the slab entry distance, ``inf`` when missed."""
    if np.all(np.abs(o) <= half):
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (-half - o) / d
        t2 = (half - o) / d
    near = np.nanmax(np.minimum(t1, t2))
    far = np.nanmin(np.maximum(t1, t2))
    return near if (near <= far and near >= 0) else np.inf


@SETTINGS
@given(
    half=hnp.arrays(np.float64, (3,), elements=st.sampled_from([1e-3, 0.05, 0.5, 2.0, 300.0])),
    body_q=_unit_quats(1, 1),
    body_p=hnp.arrays(np.float64, (3,), elements=st.floats(-5.0, 5.0)),
    rays=st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            hnp.arrays(np.float64, (n, 3), elements=st.floats(-8.0, 8.0)),
            hnp.arrays(np.float64, (n, 3), elements=_UNIT),
        )
    ),
)
def test_ray_against_box_solid_matches_slab_reference(half, body_q, body_p, rays):
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

    from runtime.rays.scene import RayScene

    stage = Usd.Stage.CreateInMemory()
    UsdGeom.Xform.Define(stage, "/World")
    body = UsdGeom.Xform.Define(stage, "/World/Body")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    cube = UsdGeom.Cube.Define(stage, "/World/Body/box")
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    cube.GetSizeAttr().Set(2.0)
    cube.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*half.tolist()))
    scene = RayScene.from_stage(stage, ["/World/Body"])
    origins, raw = rays
    norms = np.linalg.norm(raw, axis=1)
    assume(np.all(norms > 1e-3))
    directions = np.ascontiguousarray(raw / norms[:, None])
    n = len(origins)
    dist, actors, normals = np.empty(n), np.empty(n, np.int64), np.empty((n, 3))
    scene.cast(
        np.ascontiguousarray(origins), directions, np.full(n, 1e4),
        body_p.reshape(1, 3), body_q.copy(), dist, actors, normals,
    )  # fmt: skip
    rot = quat_to_matrix(body_q[0])
    for i in range(n):
        local_o = rot.T @ (origins[i] - body_p)
        local_d = rot.T @ directions[i]
        expected = _slab_or_inside(local_o, local_d, half)
        if np.isfinite(expected):
            assert dist[i] == pytest.approx(expected, rel=1e-9, abs=1e-9 * max(1.0, half.max()))
            assert actors[i] == 0
            assert np.linalg.norm(normals[i]) == pytest.approx(1.0, abs=1e-9)
            assert normals[i] @ directions[i] <= 1e-9
        else:
            assert not np.isfinite(dist[i]) and actors[i] == -1


@SETTINGS
@given(
    case=_mesh_and_rays(),
    bad=st.sampled_from([np.nan, np.inf, -np.inf, 0.0]),
    where=st.sampled_from(["origin", "direction", "zero direction"]),
)
def test_bvh_non_finite_or_zero_rays_never_hit(case, bad, where):
    """Kernels trust their inputs, but a NaN / inf / zero ray must not invent a hit."""
    vertices, faces, origins, directions, max_d = case
    boxes, refs, tris, order = build(vertices, faces)
    origins, directions = origins.copy(), directions.copy()
    if where == "origin":
        assume(bad != 0.0)
        origins[:, 1] = bad
    elif where == "direction":
        assume(bad != 0.0)
        directions[:, 0] = bad
    else:
        directions[:] = 0.0
    dist = np.empty(len(origins))
    face = np.empty(len(origins), np.int64)
    _traversal_kernels.bvh_closest_hit_kernel(
        boxes, refs, tris, order, 0, origins, directions, max_d, True, dist, face
    )
    assert np.all(np.isinf(dist)) and np.all(face == -1)
