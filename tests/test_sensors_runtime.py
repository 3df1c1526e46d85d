"""The sensor loop: protocol, isolation of bad sensors, config timing, state validation."""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.errors import SchemaError, SimrtError
from runtime.sensors import (
    ContactSensor,
    ImuSensor,
    SensorRuntime,
    empty_physics_state,
    make_physics_state,
)

DT = 1.0 / 60.0


def _stage():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    for path in ("/World/A", "/World/B"):
        UsdPhysics.RigidBodyAPI.Apply(UsdGeom.Xform.Define(stage, path).GetPrim())
    return stage


def _state(k, paths=("/World/A", "/World/B"), v=0.0):
    n = len(paths)
    return make_physics_state(
        paths,
        np.zeros((n, 3)),
        np.tile([1.0, 0, 0, 0], (n, 1)),
        np.tile([v * k, 0.0, 0.0], (n, 1)),
        np.zeros((n, 3)),
        contact_body0=[0],
        contact_impulses=[[0.0, 0.0, 3.0 * DT]],
        dt=DT,
        time=k * DT,
        step=k,
    )


class RecordingSensor:
    """A plug-in sensor following the protocol (no batch_type)."""

    kind = "recording"

    def __init__(self, prim_path, fail_bind=False, fail_at_step=None):
        self.prim_path = prim_path
        self.disabled_reason = None
        self.enabled = True
        self.fail_bind = fail_bind
        self.fail_at_step = fail_at_step
        self.steps = []

    def bind(self, runtime):
        if self.fail_bind:
            raise SchemaError(self.prim_path, "numRays", "numRays (0) must be > 0")
        self.body = runtime.body_index("/World/A")

    def update(self, state):
        if state.step == self.fail_at_step:
            raise RuntimeError("boom")
        self.steps.append(state.step)

    def reading(self):
        return self.steps[-1] if self.steps else None

    def reset(self):
        self.steps.clear()


def test_bad_configuration_never_stops_the_loop(caplog):
    stage = _stage()
    good_contact = stage.DefinePrim("/World/A/Contact", "IsaacContactSensor")
    stage.DefinePrim("/World/A/GoodImu", "IsaacImuSensor")
    stage.DefinePrim("/World/NoBody", "IsaacImuSensor")  # no rigid-body ancestor
    bad_threshold = stage.DefinePrim("/World/A/BadThreshold", "IsaacContactSensor")
    bad_threshold.CreateAttribute("threshold", Sdf.ValueTypeNames.Float2).Set(Gf.Vec2f(5, 1))
    nan_xform = stage.DefinePrim("/World/B/NanImu", "IsaacImuSensor")
    UsdGeom.Xformable(nan_xform).AddTranslateOp().Set(Gf.Vec3d(float("nan"), 0, 0))
    UsdPhysics.RigidBodyAPI.Apply(UsdGeom.Xform.Define(stage, "/World/Untracked").GetPrim())
    stage.DefinePrim("/World/Untracked/Imu", "IsaacImuSensor")  # body not in the state
    with caplog.at_level(logging.ERROR, logger="runtime.sensors"):
        discovered = SensorRuntime.discover(stage)
        plugins = [
            RecordingSensor("/World/A/Plugin"),
            RecordingSensor("/World/A/BadPlugin", fail_bind=True),
            RecordingSensor("/World/A/Crashing", fail_at_step=3),
        ]
        rt = SensorRuntime(stage, ["/World/A", "/World/B"], sensors=discovered + plugins)
        for k in range(1, 11):
            rt.step(_state(k))
    by_path = {s.prim_path: s for s in rt.sensors}
    bad = [
        "/World/NoBody",
        "/World/A/BadThreshold",
        "/World/B/NanImu",
        "/World/Untracked/Imu",
        "/World/A/BadPlugin",
        "/World/A/Crashing",
    ]
    for path in bad:
        reason = by_path[path].disabled_reason
        assert reason and path in reason, (path, reason)
    assert "threshold" in by_path["/World/A/BadThreshold"].disabled_reason
    assert "boom" in by_path["/World/A/Crashing"].disabled_reason
    assert by_path["/World/A/Crashing"].steps == [1, 2]
    # Each bad sensor is logged exactly once although the loop ran 10 steps.
    messages = [r.getMessage() for r in caplog.records]
    for path in bad:
        assert sum(path in m for m in messages) == 1, path
    assert len(messages) == len(bad)
    # Good sensors kept reading every step.
    assert by_path["/World/A/Plugin"].steps == list(range(1, 11))
    contact = by_path[str(good_contact.GetPath())].reading()
    assert contact.is_valid and contact.step == 10 and contact.value == pytest.approx(3.0)
    imu = by_path["/World/A/GoodImu"].reading()
    assert imu.is_valid and imu.step == 10
    for path in bad[:4]:
        assert not by_path[path].reading().is_valid


class FlakyBatchSensor(RecordingSensor):
    """A plug-in sensor evaluated by a batch (``batch_type``) that fails at one step."""

    kind = "flaky"


class FlakyBatch:
    def __init__(self, runtime, sensors):
        self.sensors = sensors
        self.calls = []

    def update(self, state):
        self.calls.append(state.step)
        if state.step == 3:
            raise RuntimeError("batch boom")
        for sensor in self.sensors:
            sensor.steps.append(state.step)


FlakyBatchSensor.batch_type = FlakyBatch


def test_a_failing_batch_disables_its_sensors_only(caplog):
    stage = _stage()
    stage.DefinePrim("/World/A/Contact", "IsaacContactSensor")
    flaky = [FlakyBatchSensor("/World/A/F1"), FlakyBatchSensor("/World/A/F2")]
    plain = RecordingSensor("/World/A/Plugin")
    with caplog.at_level(logging.ERROR, logger="runtime.sensors"):
        rt = SensorRuntime(
            stage, ["/World/A", "/World/B"], sensors=[*flaky, plain, *SensorRuntime.discover(stage)]
        )
        for k in range(1, 6):
            rt.step(_state(k))
    for sensor in flaky:
        assert "batch boom" in sensor.disabled_reason and sensor.prim_path in sensor.disabled_reason
        assert sensor.steps == [1, 2, 4, 5]  # the batch itself is still called
    assert [u for u in rt._units if isinstance(u, FlakyBatch)][0].calls == [1, 2, 3, 4, 5]
    assert plain.steps == [1, 2, 3, 4, 5] and plain.disabled_reason is None
    contact = rt.sensors[-1].reading()
    assert contact.is_valid and contact.step == 5
    assert sum("batch boom" in r.getMessage() for r in caplog.records) == 2


def test_sensor_update_alone_matches_the_batch():
    stage = _stage()
    for i in range(3):
        stage.DefinePrim(f"/World/A/C{i}", "IsaacContactSensor")
        stage.DefinePrim(f"/World/B/I{i}", "IsaacImuSensor")
    batch_rt = SensorRuntime(stage, ["/World/A", "/World/B"])
    single_rt = SensorRuntime(stage, ["/World/A", "/World/B"])
    for k in range(1, 5):
        state = _state(k, v=0.3)
        batch_rt.step(state)
        for sensor in single_rt.sensors:
            sensor.update(state)
    for a, b in zip(batch_rt.sensors, single_rt.sensors, strict=True):
        ra, rb = a.reading(), b.reading()
        if isinstance(a, ImuSensor):
            np.testing.assert_array_equal(ra.linear_acceleration, rb.linear_acceleration)
            assert ra.linear_acceleration[0] == pytest.approx(0.3 / DT, rel=1e-5)
        else:
            assert ra == rb


def test_imu_configuration_is_frozen_after_the_first_processed_step():
    stage = _stage()
    early = stage.DefinePrim("/World/A/Early", "IsaacImuSensor")
    late = stage.DefinePrim("/World/A/Late", "IsaacImuSensor")
    rt = SensorRuntime(stage, ["/World/A", "/World/B"])
    early.CreateAttribute("angularVelocityFilterWidth", Sdf.ValueTypeNames.Int).Set(4)
    w = np.array([[0.0, 0.0, 2.0], [0.0, 0.0, 0.0]])

    def state(k):
        return make_physics_state(
            ["/World/A", "/World/B"],
            np.zeros((2, 3)),
            np.tile([1.0, 0, 0, 0], (2, 1)),
            np.zeros((2, 3)),
            w,
            dt=DT,
            time=k * DT,
            step=k,
        )

    rt.step(state(1))  # the edit before the first step is picked up (width 4: w / 4)
    assert rt.sensor("/World/A/Early").reading().angular_velocity[2] == pytest.approx(0.5)
    late.CreateAttribute("angularVelocityFilterWidth", Sdf.ValueTypeNames.Int).Set(4)
    rt.step(state(2))  # frozen: width stays 1
    assert rt.sensor("/World/A/Late").reading().angular_velocity[2] == pytest.approx(2.0)
    late.CreateAttribute("enabled", Sdf.ValueTypeNames.Bool).Set(False)
    rt.step(state(3))  # frozen enabled flag too (docs/sensors/index.md#enable parity choice)
    assert rt.sensor("/World/A/Late").reading().is_valid
    rt.reset()  # stop/start re-reads the configuration
    rt.step(state(1))
    assert not rt.sensor("/World/A/Late").reading().is_valid
    assert rt.sensor("/World/A/Early").reading().angular_velocity[2] == pytest.approx(0.5)


def test_imu_user_reenable_resets_the_history():
    stage = _stage()
    prim = stage.DefinePrim("/World/A/Imu", "IsaacImuSensor")
    prim.CreateAttribute("angularVelocityFilterWidth", Sdf.ValueTypeNames.Int).Set(2)
    rt = SensorRuntime(stage, ["/World/A", "/World/B"])
    imu = rt.sensor("/World/A/Imu")
    w = np.array([[0.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    states = [
        make_physics_state(
            ["/World/A", "/World/B"],
            np.zeros((2, 3)),
            np.tile([1.0, 0, 0, 0], (2, 1)),
            np.zeros((2, 3)),
            w,
            dt=DT,
            time=k * DT,
            step=k,
        )
        for k in range(1, 6)
    ]
    rt.step(states[0])
    rt.step(states[1])
    assert imu.reading().angular_velocity[2] == pytest.approx(2.0)
    imu.enabled = False
    rt.step(states[2])
    assert not imu.reading().is_valid
    imu.enabled = True
    rt.step(states[3])
    assert imu.reading().angular_velocity[2] == pytest.approx(1.0)  # back to the zero fill
    arrays = imu._batch.arrays()
    np.testing.assert_allclose(arrays["angular_velocity"][0], imu.reading().angular_velocity)
    assert arrays["is_valid"][0] and arrays["step"][0] == 4


def test_physics_state_boundary_validation():
    with pytest.raises(SimrtError, match="body_positions"):
        make_physics_state(["/a"], np.zeros((2, 3)), [[1, 0, 0, 0]])
    with pytest.raises(SimrtError, match="body_orientations"):
        make_physics_state(["/a"], np.zeros((1, 3)), [[0, 0, 0, 0]])
    with pytest.raises(SimrtError, match="index out of range"):
        make_physics_state(["/a"], np.zeros((1, 3)), [[1, 0, 0, 0]], contact_body0=[1])
    state = make_physics_state(["/a"], [[0, 0, 0]], [[2, 0, 0, 0]], joint_positions=[1, 2])
    assert state.body_orientations[0, 0] == 1.0 and state.dof_count == 2
    assert state.joint_velocities.shape == (2,) and state.body_linear_accelerations is None
    empty = empty_physics_state(["/a", "/b"], 3)
    assert empty.body_count == 2 and empty.contact_count == 0
    empty.body_positions = np.zeros((2, 3), np.float32)
    with pytest.raises(SimrtError, match="dtype"):
        empty.validate()


def test_contact_sensor_on_an_untracked_body_is_disabled():
    stage = _stage()
    stage.DefinePrim("/World/B/Contact", "IsaacContactSensor")
    rt = SensorRuntime(stage, ["/World/A"], sensors=[ContactSensor("/World/B/Contact")])
    rt.step(_state(1, paths=("/World/A",)))
    assert "/World/B" in rt.sensors[0].disabled_reason
    assert not rt.sensors[0].reading().is_valid


def test_importing_sensors_loads_neither_pxr_nor_numba():
    code = (
        "import sys, runtime.sensors; "
        "print([m for m in ('pxr', 'numba', 'trimesh') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_imu_pose_follows_usd_edits_after_the_first_step():
    stage = _stage()
    prim = stage.DefinePrim("/World/A/Imu", "IsaacImuSensor")
    op = UsdGeom.Xformable(prim).AddOrientOp(UsdGeom.XformOp.PrecisionDouble)
    rt = SensorRuntime(stage, ["/World/A", "/World/B"])
    rt.step(_state(1))
    np.testing.assert_allclose(rt.sensors[0].reading().orientation, [1, 0, 0, 0])
    s = np.sqrt(0.5)
    op.Set(Gf.Quatd(s, 0, 0, s))  # +90 deg about Z
    rt.step(_state(2))
    np.testing.assert_allclose(rt.sensors[0].reading().orientation, [s, 0, 0, s], atol=1e-6)


def test_state_with_a_different_body_order_is_rejected():
    stage = _stage()
    stage.DefinePrim("/World/A/Contact", "IsaacContactSensor")
    rt = SensorRuntime(stage, ["/World/A", "/World/B"])
    with pytest.raises(SimrtError, match="body_paths"):
        rt.step(_state(1, paths=("/World/B", "/World/A")))
    rt.step(_state(1))
    assert rt.sensors[0].reading().is_valid


def test_usd_writes_of_body_poses_do_not_reread_sensor_configuration():
    stage = _stage()
    mount = UsdGeom.Xform.Define(stage, "/World/A/Mount")
    mount_op = mount.AddTranslateOp()
    stage.DefinePrim("/World/A/Mount/Contact", "IsaacContactSensor")
    body_op = UsdGeom.Xformable(stage.GetPrimAtPath("/World/A")).AddTranslateOp()
    rt = SensorRuntime(stage, ["/World/A", "/World/B"])
    sensor = rt.sensor("/World/A/Mount/Contact")
    calls = []
    original = sensor.on_usd_changed
    sensor.on_usd_changed = lambda: (calls.append(1), original())
    rt.step(_state(1))
    for k in range(2, 6):  # e.g. a teleport writing the body pose every step
        body_op.Set(Gf.Vec3d(0.1 * k, 0, 0))
        rt.step(_state(k))
    assert calls == []
    mount_op.Set(Gf.Vec3d(0.0, 0.5, 0.0))  # an Xform between body and sensor: re-read
    rt.step(_state(6))
    assert calls == [1]
    np.testing.assert_allclose(sensor.config.translation_in_body, [0.0, 0.5, 0.0])
    stage.RemovePrim("/World/A/Mount")  # structural change: the sensor is gone
    rt.step(_state(7))
    assert calls == [1, 1] and not sensor.reading().is_valid
