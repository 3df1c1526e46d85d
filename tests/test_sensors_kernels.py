"""Sensor kernels against the NumPy references (compiled and as plain Python)."""

from __future__ import annotations

import numpy as np
import pytest

from runtime.sensors import _contact_kernels, _imu_kernels
from tests.helpers.reference_sensors import (
    ImuIsaacReference,
    contact_reference,
    gf_round_trip,
    imu_physical_reference,
    quat_mul,
)
from tests.helpers.sensor_kernels import _imu_buffers, _imu_call  # noqa: E402, F401

VARIANTS = ["jit", "py"]


def _k(kernel, variant):
    # With SIMRT_DISABLE_JIT=1 the kernels are plain functions already.
    return kernel if variant == "jit" else getattr(kernel, "py_func", kernel)


def _random_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return np.ascontiguousarray(q / np.linalg.norm(q, axis=1)[:, None])


def _contact_case(rng, bodies=6, sensors=25, contacts=40):
    pos = rng.normal(size=(bodies, 3))
    quat = _random_quats(rng, bodies)
    sb = rng.integers(0, bodies, sensors).astype(np.int64)
    off = rng.normal(scale=0.5, size=(sensors, 3))
    radius = np.where(rng.random(sensors) < 0.5, -1.0, rng.uniform(0.2, 2.0, sensors))
    fmin = np.float32(rng.uniform(0, 5, sensors)).astype(np.float64)
    fmax = np.float32(rng.uniform(5, 200, sensors)).astype(np.float64)
    fmin[:3] = 0.0
    c0 = rng.integers(0, bodies, contacts).astype(np.int64)
    c1 = rng.integers(-1, bodies, contacts).astype(np.int64)
    cp = pos[c0] + rng.normal(scale=0.7, size=(contacts, 3))
    ci = rng.normal(scale=0.5, size=(contacts, 3))
    dts = np.where(rng.random(contacts) < 0.3, 0.0, 1 / 120)
    return pos, quat, sb, off, radius, fmin, fmax, c0, c1, cp, ci, dts


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_contact_kernel_matches_reference(variant, seed):
    rng = np.random.default_rng(seed)
    pos, quat, sb, off, radius, fmin, fmax, c0, c1, cp, ci, dts = _contact_case(rng)
    n = sb.shape[0]
    block_i = np.zeros((n, 6), np.int64)
    block_i[:, 0] = sb
    block_i[:, 1] = 1
    block_i[5, 1] = 0
    block_f = np.zeros((n, 8))
    block_f[:, 0:6] = np.column_stack([off, radius, fmin, fmax])
    out_floats = block_f[:, 6:8]
    out_ints = block_i[:, 2:6]
    for contact_dts in (dts, np.zeros(0)):
        _k(_contact_kernels.contact_update_kernel, variant)(
            pos, quat, c0, c1, cp, ci, contact_dts, 1 / 60, 0.25, 15, -1, block_f, block_i
        )
        values, times = out_floats[:, 0], out_floats[:, 1]
        in_contact, counts, valid = out_ints[:, 0], out_ints[:, 1], out_ints[:, 2]
        for s in range(n):
            if s == 5:
                assert valid[s] == 0 and values[s] == 0 and times[s] == 0
                continue
            ref = contact_reference(
                pos,
                quat,
                sb[s],
                off[s],
                radius[s],
                fmin[s],
                fmax[s],
                c0,
                c1,
                cp,
                ci,
                contact_dts if contact_dts.shape[0] else None,
                1 / 60,
            )
            assert values[s] == pytest.approx(ref[0], rel=1e-6)
            assert bool(in_contact[s]) == ref[1]
            assert counts[s] == ref[2]
            assert valid[s] == 1 and times[s] == np.float32(0.25) and out_ints[s, 3] == 15
    assert np.any(in_contact == 1) and np.any((in_contact == 0) & (counts > 0))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed", [3, 4])
def test_contact_kernel_scan_and_sorted_paths_are_bit_identical(variant, seed):
    # 25 sensors x 40 contacts take the sorted path; one sensor at a time (``only``) scans
    # the 40 contacts itself. Both must give the very same numbers, for NaN/inf positions,
    # self contacts (body0 == body1), per-contact dts and integer / NumPy scalars too.
    rng = np.random.default_rng(seed)
    pos, quat, sb, off, radius, fmin, fmax, c0, c1, cp, ci, dts = _contact_case(rng)
    c1[:4] = c0[:4]
    cp[4] = np.nan
    cp[5] = [np.inf, 0.0, 0.0]
    cp[6] = [1e200, 1e200, 0.0]
    n = sb.shape[0]
    assert n * c0.shape[0] > _contact_kernels.DIRECT_PAIRS_MAX >= c0.shape[0]
    kernel = _k(_contact_kernels.contact_update_kernel, variant)
    for contact_dts, dt, t, k in ((dts, 1 / 60, 0.25, 15), (np.zeros(0), 0.0, np.float64(1.5), 7)):
        blocks = []
        for sensors in ([-1], range(n)):
            block_i = np.zeros((n, 6), np.int64)
            block_i[:, 0] = sb
            block_i[:, 1] = 1
            block_i[7, 1] = 0
            block_f = np.zeros((n, 8))
            block_f[:, 0:6] = np.column_stack([off, radius, fmin, fmax])
            with np.errstate(over="ignore", invalid="ignore"):  # plain-Python variant
                for only in sensors:
                    kernel(pos, quat, c0, c1, cp, ci, contact_dts, dt, t, k, only, block_f, block_i)
            blocks.append((block_f, block_i))
        (f_sorted, i_sorted), (f_scan, i_scan) = blocks
        np.testing.assert_array_equal(f_scan, f_sorted)
        np.testing.assert_array_equal(i_scan, i_sorted)
        assert np.any(i_sorted[:, 2] == 1) and i_sorted[7, 4] == 0
        assert np.all(f_sorted[:, 7][i_sorted[:, 1] == 1] == np.float32(t))


def _imu_inputs(rng, bodies):
    return dict(
        pos=rng.normal(size=(bodies, 3)),
        quat=_random_quats(rng, bodies),
        com=rng.normal(scale=0.2, size=(bodies, 3)),
        lin=rng.normal(size=(bodies, 3)),
        ang=rng.normal(size=(bodies, 3)),
        lacc=rng.normal(size=(bodies, 3)),
        aacc=rng.normal(size=(bodies, 3)),
    )


def _imu_sensors(rng, n, bodies):
    widths = rng.integers(1, 6, size=(n, 3)).astype(np.int64)
    widths[0] = (15, 5, 5)
    rings = np.array([max(2 * w.max(), 20) for w in widths], np.int64)
    spans = np.array([max(w[1], w[2], 2 * w[0]) for w in widths], np.int64)
    return dict(
        bodies=rng.integers(0, bodies, n).astype(np.int64),
        off_p=rng.normal(size=(n, 3)),
        off_q=_random_quats(rng, n),
        widths=widths,
        rings=spans,
    ), int(rings.max())


@pytest.mark.parametrize("variant", VARIANTS)
def test_imu_isaac_kernel_matches_reference(variant):
    rng = np.random.default_rng(7)
    n, bodies = 6, 3
    sensors, ring = _imu_sensors(rng, n, bodies)
    assert ring == 30  # widths (15, 5, 5) -> ring size 30 (I15)
    buf = _imu_buffers(n, ring)
    refs = [ImuIsaacReference(sensors["widths"][s], sensors["off_q"][s]) for s in range(n)]
    kernel = _k(_imu_kernels.imu_update_kernel, variant)
    x = _imu_inputs(rng, bodies)
    for k in range(1, 41):
        x["lin"] = x["lin"] + rng.normal(scale=0.1, size=(bodies, 3))
        x["ang"] = x["ang"] + rng.normal(scale=0.1, size=(bodies, 3))
        x["quat"] = _random_quats(rng, bodies) if k % 7 == 0 else x["quat"]
        acc, gyro, quat, gs, times = _imu_call(kernel, x, sensors, buf, 0, k / 60, False)
        for s in range(n):
            b = sensors["bodies"][s]
            a, w, q, g = refs[s].step(
                np.float32(k / 60),
                x["lin"][b],
                x["ang"][b],
                x["quat"][b],
                np.array([0, 0, 9.80665]),
            )
            np.testing.assert_allclose(acc[s], a, rtol=2e-6, atol=2e-5)
            np.testing.assert_allclose(gyro[s], w, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(quat[s], q, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(gs[s], g, rtol=1e-6, atol=1e-6)
            assert times[s] == np.float32(k / 60)


@pytest.mark.parametrize("variant", VARIANTS)
def test_imu_physical_kernel_matches_reference(variant):
    rng = np.random.default_rng(11)
    n, bodies = 5, 2
    sensors, ring = _imu_sensors(rng, n, bodies)
    sensors["widths"][:] = 1
    buf = _imu_buffers(n, ring)
    x = _imu_inputs(rng, bodies)
    acc, gyro, quat, gs, _ = _imu_call(
        _k(_imu_kernels.imu_update_kernel, variant), x, sensors, buf, 1, 0.5, True
    )
    for s in range(n):
        b = sensors["bodies"][s]
        a, w = imu_physical_reference(
            x["quat"][b],
            x["com"][b],
            sensors["off_p"][s],
            sensors["off_q"][s],
            x["lacc"][b],
            x["aacc"][b],
            x["ang"][b],
            np.array([0.0, 0.0, -9.81]),
        )
        np.testing.assert_allclose(acc[s] + gs[s], a, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gyro[s], w, rtol=1e-12, atol=1e-12)
        q_expected = gf_round_trip(quat_mul(x["quat"][b], sensors["off_q"][s]))
        np.testing.assert_allclose(quat[s], q_expected, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_quaternion_round_trip_uses_usd_sign_rule(variant):
    rng = np.random.default_rng(3)
    quats = _random_quats(rng, 200)
    # Edge cases: identity, 180 deg turns, -90 deg about Y (spec 4.5 example).
    s = np.sqrt(0.5)
    quats[:5] = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [s, 0, -s, 0]]
    out = np.zeros_like(quats)
    _k(_imu_kernels.quat_matrix_round_trip_kernel, variant)(quats, out)
    for q, got in zip(quats, out, strict=True):
        np.testing.assert_allclose(got, gf_round_trip(q), atol=1e-12)
    np.testing.assert_allclose(out[4], [-s, 0, s, 0], atol=1e-12)


def test_each_kernel_has_one_compiled_signature():
    from pxr import Usd, UsdGeom, UsdPhysics

    from runtime.sensors import SensorRuntime, make_physics_state

    stage = Usd.Stage.CreateInMemory()
    UsdPhysics.RigidBodyAPI.Apply(UsdGeom.Xform.Define(stage, "/B").GetPrim())
    stage.DefinePrim("/B/C", "IsaacContactSensor")
    stage.DefinePrim("/B/I", "IsaacImuSensor")
    stage.DefinePrim("/B/P", "IsaacImuSensor")
    rt = SensorRuntime(stage, ["/B"])
    for k, acc in ((1, None), (2, np.zeros((1, 3)))):
        rt.step(
            make_physics_state(
                ["/B"],
                [[0, 0, 0]],
                [[1, 0, 0, 0]],
                body_linear_accelerations=acc,
                body_angular_accelerations=acc,
                contact_body0=[0],
                contact_impulses=[[0, 0, 1]],
                contact_dts=[0.01] if k == 1 else None,
                dt=0.01,
                time=0.01 * k,
                step=k,
            )
        )
    _imu_kernels.quat_matrix_round_trip_kernel(np.array([[1.0, 0, 0, 0]]), np.zeros((1, 4)))
    kernels = [
        _contact_kernels.contact_update_kernel,
        _imu_kernels.imu_update_kernel,
        _imu_kernels.quat_matrix_round_trip_kernel,
    ]
    for kernel in kernels:
        if not hasattr(kernel, "signatures"):
            pytest.skip("JIT disabled")
        assert len(kernel.signatures) == 1, kernel


@pytest.mark.parametrize("variant", VARIANTS)
def test_imu_physical_kernel_rolling_averages_and_finite_differences(variant):
    rng = np.random.default_rng(5)
    n, bodies = 4, 2
    sensors, ring = _imu_sensors(rng, n, bodies)
    sensors["widths"][:] = [(3, 2, 4), (1, 1, 1), (2, 5, 1), (4, 4, 4)]
    sensors["rings"][:] = [max(w[1], w[2], 2 * w[0]) for w in sensors["widths"]]
    buf = _imu_buffers(n, int(sensors["rings"].max()))
    kernel = _k(_imu_kernels.imu_update_kernel, variant)
    x = _imu_inputs(rng, bodies)
    history = {s: [] for s in range(n)}
    prev = {"lin": np.zeros((bodies, 3)), "ang": np.zeros((bodies, 3)), "t": 0.0}
    dt = 0.01
    for k in range(1, 12):
        x["lin"] = x["lin"] + rng.normal(scale=0.2, size=(bodies, 3))
        x["ang"] = x["ang"] + rng.normal(scale=0.2, size=(bodies, 3))
        x["quat"] = _random_quats(rng, bodies)
        acc, gyro, quat, gs, _ = _imu_call(kernel, x, sensors, buf, 1, k * dt, False)
        lacc = (x["lin"] - prev["lin"]) / dt  # backward differences (no engine accelerations)
        aacc = (x["ang"] - prev["ang"]) / dt
        prev = {"lin": x["lin"].copy(), "ang": x["ang"].copy(), "t": k * dt}
        for s in range(n):
            b = sensors["bodies"][s]
            a, w = imu_physical_reference(
                x["quat"][b],
                x["com"][b],
                sensors["off_p"][s],
                sensors["off_q"][s],
                lacc[b],
                aacc[b],
                x["ang"][b],
                np.zeros(3),
            )
            q = gf_round_trip(quat_mul(x["quat"][b], sensors["off_q"][s]))
            history[s].insert(0, (a, w, q))
            nl, nw, nq = sensors["widths"][s]
            fill = (np.zeros(3), np.zeros(3), np.array([1.0, 0, 0, 0]))
            padded = history[s] + [fill] * 10
            np.testing.assert_allclose(
                acc[s], np.mean([h[0] for h in padded[:nl]], axis=0), rtol=1e-9, atol=1e-9
            )
            np.testing.assert_allclose(
                gyro[s], np.mean([h[1] for h in padded[:nw]], axis=0), rtol=1e-12, atol=1e-12
            )
            q_mean = np.mean([h[2] for h in padded[:nq]], axis=0)
            np.testing.assert_allclose(quat[s], q_mean / np.linalg.norm(q_mean), atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("bodies", [3, 16])
def test_imu_isaac_width1_shared_bodies_match_reference(variant, bodies):
    # Width-1 isaac sensors take a compact branch; with more sensors than bodies the
    # identity-mounted ones share one sample per body. Mix them with rotated mounts and a
    # wider sensor on the same bodies.
    rng = np.random.default_rng(21)
    n = 12
    sensors, _ = _imu_sensors(rng, n, bodies)
    sensors["widths"][:] = 1
    sensors["widths"][5] = (2, 3, 2)
    sensors["bodies"][:] = np.arange(n) % bodies
    sensors["off_q"][: n // 2] = [1.0, 0.0, 0.0, 0.0]
    sensors["rings"][:] = [max(w[1], w[2], 2 * w[0]) for w in sensors["widths"]]
    buf = _imu_buffers(n, int(sensors["rings"].max()))
    refs = [ImuIsaacReference(sensors["widths"][s], sensors["off_q"][s]) for s in range(n)]
    kernel = _k(_imu_kernels.imu_update_kernel, variant)
    x = _imu_inputs(rng, bodies)
    for k in range(1, 9):
        x["lin"] = x["lin"] + rng.normal(scale=0.1, size=(bodies, 3))
        x["ang"] = x["ang"] + rng.normal(scale=0.1, size=(bodies, 3))
        x["quat"] = _random_quats(rng, bodies)
        t = k / 60 if k != 4 else 3 / 60  # a repeated time: zero finite-difference interval
        acc, gyro, quat, gs, times = _imu_call(kernel, x, sensors, buf, 0, t, False)
        for s in range(n):
            b = sensors["bodies"][s]
            a, w, q, g = refs[s].step(
                np.float32(t), x["lin"][b], x["ang"][b], x["quat"][b], np.array([0, 0, 9.80665])
            )
            np.testing.assert_allclose(acc[s], a, rtol=2e-6, atol=2e-5)
            np.testing.assert_allclose(gyro[s], w, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(quat[s], q, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(gs[s], g, rtol=1e-6, atol=1e-6)
            assert times[s] == np.float32(t)
            assert buf["status"][s, 0] == 1 and buf["status"][s, 1] == 7


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("mode", [0, 1])
def test_imu_kernel_one_sensor_at_a_time_is_bit_identical(variant, mode):
    # ``only`` = s evaluates sensor s alone (no per-body sharing: one sensor is never more
    # than the bodies); -1 evaluates all twelve on three bodies (sharing on in isaac mode).
    rng = np.random.default_rng(33)
    n, bodies = 12, 3
    sensors, _ = _imu_sensors(rng, n, bodies)
    sensors["widths"][:] = 1
    sensors["widths"][5] = (2, 3, 2)
    sensors["off_q"][: n // 2] = [1.0, 0.0, 0.0, 0.0]
    sensors["rings"][:] = [max(w[1], w[2], 2 * w[0]) for w in sensors["widths"]]
    ring = int(sensors["rings"].max())
    kernel = _k(_imu_kernels.imu_update_kernel, variant)
    bufs = [_imu_buffers(n, ring), _imu_buffers(n, ring)]
    x = _imu_inputs(rng, bodies)
    for k in range(1, 7):
        x["lin"] = x["lin"] + rng.normal(scale=0.1, size=(bodies, 3))
        x["ang"] = x["ang"] + rng.normal(scale=0.1, size=(bodies, 3))
        x["quat"] = _random_quats(rng, bodies)
        use_acc = k % 2 == 0
        _imu_call(kernel, x, sensors, bufs[0], mode, k / 60, use_acc)
        for s in range(n):  # NumPy scalars for time and step: same numbers
            _imu_call(
                kernel, x, sensors, bufs[1], mode, np.float64(k / 60), use_acc, s, np.int64(7)
            )
        np.testing.assert_array_equal(bufs[1]["floats"], bufs[0]["floats"])
        np.testing.assert_array_equal(bufs[1]["ints"], bufs[0]["ints"])
    assert np.all(bufs[0]["status"] == [1, 7])
