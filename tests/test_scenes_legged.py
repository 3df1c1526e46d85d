"""The legged scenes (``scenes/go2_standing.usda``, ``scenes/talos_standing.usda``) stand.

Each runs 1 s (1000 steps at 1 kHz) through :class:`MujocoEngine` + :class:`SensorRuntime`:
no divergence, joint speeds below 10 rad/s after 0.5 s, trunk height within 3 cm of its
start, every foot contact sensor in contact for >= 90 % of the steps, the feet carrying the
robot's weight (mean of the summed sensor forces over the last 0.2 s within 5 % of
m g; m and g from the MuJoCo model), and the trunk / torso IMU agreeing with MuJoCo's body
orientation. The 10 s numbers are in the scene READMEs (CHANGELOG)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pxr import Usd

import runtime.schema  # noqa: F401
from runtime.engine.mujoco_engine import MujocoEngine
from runtime.sensors.contact import ContactSensor
from runtime.sensors.imu import ImuSensor
from runtime.sensors.runtime import SensorRuntime

SCENES = Path(__file__).resolve().parents[1] / "scenes"

CASES = {
    "go2": ("go2_standing.usda", "/World/Go2/Geometry/base", "/World/Go2/Geometry/base", 4),
    "talos": (
        "talos_standing.usda",
        "/World/Talos/Geometry/base_link",
        "/World/Talos/Geometry/base_link/torso_1_link/torso_2_link",
        2,
    ),
}


def _quat_angle(a: np.ndarray, b: np.ndarray) -> float:
    return 2.0 * float(np.arccos(min(1.0, abs(float(np.dot(a, b))))))


@pytest.mark.parametrize("name", sorted(CASES))
def test_legged_scene_stands(name):
    scene, base, imu_body, feet = CASES[name]
    stage = Usd.Stage.Open(str(SCENES / scene))
    engine = MujocoEngine(stage)
    m, d = engine.model, engine.data
    assert m.opt.timestep == pytest.approx(1e-3)
    sensors = SensorRuntime(stage, engine.body_paths, engine.dof_names)
    contacts = [s for s in sensors.sensors if isinstance(s, ContactSensor)]
    imus = [s for s in sensors.sensors if isinstance(s, ImuSensor)]
    assert len(contacts) == feet and len(imus) == 1
    base_id = m.body(base).id
    imu_id = m.body(imu_body).id
    root = int(m.body_rootid[base_id])
    assert root == base_id and m.jnt_type[m.body_jntadr[base_id]] == 0  # free joint
    weight = float(m.body_subtreemass[root]) * float(np.linalg.norm(m.opt.gravity))
    z0 = float(d.xpos[base_id][2])
    steps = 1000
    in_contact = np.zeros(feet)
    total = np.zeros(steps)
    fastest = 0.0
    worst_imu = 0.0
    for k in range(steps):
        engine.step()
        sensors.step(engine.state())
        assert np.all(np.isfinite(d.qvel)), f"diverged at step {k}"
        readings = [c.reading() for c in contacts]
        in_contact += [r.in_contact for r in readings]
        total[k] = sum(r.value for r in readings)
        if (k + 1) * m.opt.timestep > 0.5:
            fastest = max(fastest, float(np.abs(d.qvel[6:]).max()))
        imu = imus[0].reading()
        worst_imu = max(worst_imu, _quat_angle(imu.orientation, np.array(d.xquat[imu_id])))
    assert fastest < 10.0
    assert abs(float(d.xpos[base_id][2]) - z0) < 0.03
    assert np.all(in_contact / steps >= 0.9), in_contact / steps
    assert np.mean(total[-200:]) == pytest.approx(weight, rel=0.05)
    assert worst_imu < 1e-5
    # the IMU at rest reads the gravity reaction (+g up), magnitude g
    accel = imus[0].reading().linear_acceleration
    assert np.linalg.norm(accel) == pytest.approx(9.81, rel=0.05)
