"""IMU ``physical`` mode against MuJoCo's accelerometer and gyro on an offset site."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from runtime.sensors import ImuSensor, SensorRuntime
from tests.helpers.reference_sensors import MujocoHarness

SITE_POS = (0.3, -0.1, 0.25)
SITE_QUAT = (0.8775825618903728, 0.0, 0.479425538604203, 0.0)  # 1 rad about Y (wxyz)

MJCF = """
<mujoco>
  <option timestep="{dt}" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="pend" pos="0 0 2" euler="0.3 0 0">
      <joint name="hinge" type="hinge" axis="0.2 1 0.1" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.8 0 -0.2" size="0.05" mass="1.3"/>
      <geom type="sphere" pos="0.8 0 -0.2" size="0.1" mass="0.7"/>
      <site name="imu" pos="{sp}" quat="{sq}"/>
    </body>
    <body name="spin" pos="2 0 1">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.05" pos="0.05 0.02 0" mass="1"/>
      <site name="imu2" pos="{sp}" quat="{sq}"/>
    </body>
  </worldbody>
  <sensor>
    <accelerometer name="acc" site="imu"/>
    <gyro name="gyro" site="imu"/>
    <accelerometer name="acc2" site="imu2"/>
    <gyro name="gyro2" site="imu2"/>
  </sensor>
</mujoco>
"""


def _stage():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    for body in ("pend", "spin"):
        prim = UsdGeom.Xform.Define(stage, f"/World/{body}").GetPrim()
        UsdPhysics.RigidBodyAPI.Apply(prim)
        imu = UsdGeom.Xform(stage.DefinePrim(f"/World/{body}/Imu", "IsaacImuSensor"))
        imu.AddTranslateOp().Set(Gf.Vec3d(*SITE_POS))
        imu.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(SITE_QUAT[0], *SITE_QUAT[1:]))
    return stage


def _run(dt, steps, with_accelerations):
    xml = MJCF.format(dt=dt, sp=" ".join(map(str, SITE_POS)), sq=" ".join(map(str, SITE_QUAT)))
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qvel[0] = 0.0
    # The free body starts at rest; a world-frame torque and force make it tumble.
    harness = MujocoHarness(
        model,
        data,
        {"pend": "/World/pend", "spin": "/World/spin"},
        with_accelerations=with_accelerations,
    )
    spin = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "spin")
    stage = _stage()
    rt = SensorRuntime(stage, harness.paths, imu_mode="physical")
    assert all(s.disabled_reason is None for s in rt.sensors)
    errors_acc, errors_gyro, scale = [], [], []
    for k in range(steps):
        data.xfrc_applied[spin] = [
            2.0 * np.cos(0.05 * k),
            1.0,
            0.5,
            0.02,
            -0.01 + 0.00005 * k,
            0.015,
        ]
        state = harness.step()
        rt.step(state)
        for s_index, (acc_name, gyro_name) in enumerate((("acc", "gyro"), ("acc2", "gyro2"))):
            reading = rt.sensors[s_index].reading()
            assert reading.is_valid
            acc_mj = data.sensor(acc_name).data
            gyro_mj = data.sensor(gyro_name).data
            errors_acc.append(np.linalg.norm(reading.linear_acceleration - acc_mj))
            scale.append(np.linalg.norm(acc_mj))
            errors_gyro.append(np.linalg.norm(reading.angular_velocity - gyro_mj))
    return np.array(errors_acc), np.array(scale), np.array(errors_gyro)


def test_physical_imu_with_engine_accelerations_matches_mujoco():
    err, scale, gyro_err = _run(0.002, 400, with_accelerations=True)
    assert scale.min() > 0.01 and scale.max() > 10.0  # non-trivial signal
    assert np.max(err / scale) < 1e-6
    assert np.max(gyro_err) < 1e-9


@pytest.mark.parametrize("dt", [0.002])
def test_physical_imu_finite_differences_converge_with_step_size(dt):
    duration = 0.6
    err_coarse, scale_coarse, gyro_coarse = _run(dt, int(duration / dt), False)
    err_fine, scale_fine, gyro_fine = _run(dt / 2, int(duration / (dt / 2)), False)
    # Skip the first step of each run (zero-fill start, like the parity mode).
    coarse = np.max(err_coarse[2:] / scale_coarse[2:])
    fine = np.max(err_fine[2:] / scale_fine[2:])
    assert coarse < 0.05
    ratio = coarse / fine
    assert 1.6 < ratio < 2.5, (coarse, fine)
    assert np.max(gyro_coarse) < 1e-9 and np.max(gyro_fine) < 1e-9


def test_isaac_mode_is_the_default_and_lacks_the_lever_arm():
    stage = _stage()
    rt = SensorRuntime(stage, ["/World/pend", "/World/spin"])
    assert all(isinstance(s, ImuSensor) and s.mode == "isaac" for s in rt.sensors)
