"""End to end: USD stage -> MujocoEngine -> PhysicsState -> SensorRuntime (docs/sensors/index.md).

The sensor scenarios C1 / C2 and the effort scenario E1 authored in USD and simulated by the
engine built from that USD (no hand-written MuJoCo model), checked against the spec's
closed-form expectations.
"""

from __future__ import annotations

import math

import pytest
from pxr import Gf, Sdf, UsdPhysics

from runtime.engine import MujocoEngine
from runtime.sensors import SensorRuntime
from tests.helpers.engine_stages import body, ground, new_stage, pendulum


def _contact(stage, path, threshold=(0.0, 100.0), radius=-1.0):
    prim = stage.DefinePrim(path, "IsaacContactSensor")
    prim.CreateAttribute("threshold", Sdf.ValueTypeNames.Float2).Set(Gf.Vec2f(*threshold))
    prim.CreateAttribute("radius", Sdf.ValueTypeNames.Float).Set(radius)
    return prim


def test_c1_c2_stacked_cubes_from_usd():
    stage = new_stage(gravity=10.0)
    ground(stage)
    body(stage, "/World/Bottom", pos=(0, 0, 0.25), mass=1.0, inertia=(1 / 24,) * 3, size=0.5)
    body(stage, "/World/Top", pos=(0, 0, 0.75), mass=1.0, inertia=(1 / 24,) * 3, size=0.5)
    _contact(stage, "/World/Bottom/Contact")
    _contact(stage, "/World/Top/Contact")
    engine = MujocoEngine(stage)  # 60 Hz default
    sensors = SensorRuntime(stage, engine.body_paths)
    for _ in range(30):
        engine.step()
        sensors.step(engine.state())
    bottom = sensors.sensor("/World/Bottom/Contact").reading()
    top = sensors.sensor("/World/Top/Contact").reading()
    assert bottom.is_valid and bottom.in_contact and top.in_contact
    assert bottom.number_of_contacts > 1 and top.number_of_contacts >= 1
    # net-vector aggregation: ground pushes 20 N up, the top cube 10 N down -> 10 N
    assert bottom.value == pytest.approx(10.0, rel=0.05)
    assert top.value == pytest.approx(10.0, rel=0.05)


def test_e1_effort_sensor_static_equilibrium():
    from runtime.sensors.effort import EffortSensor

    stage = new_stage()
    pendulum(stage, drive={"Stiffness": 0.5, "Damping": 0.02, "TargetPosition": 30.0})
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath("/World"))
    engine = MujocoEngine(stage, dt=0.002)
    sensor = EffortSensor("/World/hinge")
    sensors = SensorRuntime(stage, engine.body_paths, engine.dof_names, sensors=[sensor])
    engine.step(6000)  # 12 s: settled
    sensors.step(engine.state())
    reading = sensor.reading()
    theta = engine.state().joint_positions[0]
    # equals minus the gravitational moment of the child subtree about the axis
    assert reading.is_valid
    assert reading.value == pytest.approx(-2.0 * 9.81 * 0.5 * math.cos(theta), rel=1e-3)
