"""Lab frame transformer and joint wrench sensor against MuJoCo's own sensors."""

from __future__ import annotations

import logging

import mujoco
import numpy as np
import pytest

from runtime.sensors.lab import (
    FrameTarget,
    FrameTransformer,
    FrameTransformerConfig,
    JointWrenchConfig,
    JointWrenchSensor,
    Offset,
)

FRAME_FIELDS = {
    "target_pos_source": ("N", "M", 3),
    "target_quat_source": ("N", "M", 4),
    "target_pos_w": ("N", "M", 3),
    "target_quat_w": ("N", "M", 4),
    "source_pos_w": ("N", 3),
    "source_quat_w": ("N", 4),
}

CHAIN = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body name="upper" pos="0 0 1.5">
      <joint name="j0" type="ball" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.1 0.05 -0.4" size="0.03" mass="1.3"/>
      <site name="upper_origin"/>
      <site name="src" pos="0.02 -0.01 0.03" quat="0.8 0.2 0.4 0.4"/>
      <body name="lower" pos="0.1 0.05 -0.4">
        <joint name="j1" type="hinge" axis="0.3 1 0" damping="0.02"/>
        <geom type="box" size="0.05 0.02 0.15" pos="0.02 0 -0.15" mass="0.8"/>
        <site name="lower_origin"/>
        <site name="tool" pos="0.03 0.01 -0.3" quat="0.6 0 0.8 0"/>
      </body>
    </body>
  </worldbody>
  <sensor>
    <force site="lower_origin"/><torque site="lower_origin"/>
    <force site="upper_origin"/><torque site="upper_origin"/>
    <framepos objtype="site" objname="tool" reftype="site" refname="src"/>
    <framequat objtype="site" objname="tool" reftype="site" refname="src"/>
    <framepos objtype="site" objname="tool"/>
  </sensor>
</mujoco>
"""


def test_joint_wrench_matches_mujoco_force_torque_sensors():
    m = mujoco.MjModel.from_xml_string(CHAIN)
    datas = [mujoco.MjData(m) for _ in range(2)]
    datas[0].qvel[:] = [1.0, -0.5, 0.3, 2.0]
    datas[1].qvel[:] = [-0.2, 0.8, 0.0, -1.0]
    sensor = JointWrenchSensor(m, JointWrenchConfig(prim_path="lower|upper"))
    assert sensor.body_paths == ("upper", "lower")
    sensor = JointWrenchSensor(m, JointWrenchConfig(prim_path="lower|upper"), num_envs=2)
    for _ in range(300):
        for d in datas:
            mujoco.mj_step(m, d)
        sensor.update(datas, m.opt.timestep)
        for env, d in enumerate(datas):
            s = d.sensordata
            for j, offset in ((1, 0), (0, 6)):  # lower, upper
                force, torque = s[offset : offset + 3], s[offset + 3 : offset + 6]
                scale = max(1.0, np.abs(force).max(), np.abs(torque).max())
                np.testing.assert_allclose(sensor.data.force_b[env, j], force, atol=1e-9 * scale)
                np.testing.assert_allclose(sensor.data.torque_b[env, j], torque, atol=1e-9 * scale)
    assert sensor.data.body_incoming_joint_wrench_b.shape == (2, 2, 6)


def test_joint_wrench_of_a_hanging_mass_at_rest():
    xml = """<mujoco><option timestep="0.001" gravity="0 0 -9.81"/><worldbody>
      <body name="mass" pos="0 0 1"><joint type="hinge" axis="0 1 0" damping="50"/>
        <geom type="sphere" size="0.05" pos="0 0 -0.5" mass="2"/></body>
      </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    sensor = JointWrenchSensor(m, JointWrenchConfig(prim_path="mass"))
    for _ in range(50):
        mujoco.mj_step(m, d)
        mujoco.mj_forward(m, d)  # the bare model: the post-step state
        sensor.update([d], m.opt.timestep)
    # the hinge holds the mass up (2 kg * 9.81 upwards), no torque about the hinge axis line
    np.testing.assert_allclose(sensor.data.force_b[0, 0], [0, 0, 2 * 9.81], atol=1e-9)
    np.testing.assert_allclose(sensor.data.torque_b[0, 0], [0, 0, 0], atol=1e-9)


def test_frame_transformer_matches_mujoco_frame_sensors():
    m = mujoco.MjModel.from_xml_string(CHAIN)
    d = mujoco.MjData(m)
    d.qvel[:] = [1.0, -0.5, 0.3, 2.0]
    cfg = FrameTransformerConfig(
        prim_path="upper",
        source_frame_offset=Offset(pos=tuple(m.site_pos[1]), rot=tuple(m.site_quat[1])),
        target_frames=[
            FrameTarget(
                prim_path="lower",
                name="tool",
                offset=Offset(pos=tuple(m.site_pos[3]), rot=tuple(m.site_quat[3])),
            ),
            FrameTarget(prim_path="upper|lower"),
        ],
    )
    sensor = FrameTransformer(m, cfg)
    assert sensor.data.target_frame_names == ["tool", "upper", "lower"]
    for name, spec in FRAME_FIELDS.items():
        shape = tuple({"N": 1, "M": 3}.get(s, s) for s in spec)
        assert getattr(sensor.data, name).shape == shape
    for _ in range(100):
        mujoco.mj_step(m, d)
        sensor.update([d], m.opt.timestep)
        s = d.sensordata
        np.testing.assert_allclose(sensor.data.target_pos_source[0, 0], s[12:15], atol=1e-12)
        q = sensor.data.target_quat_source[0, 0]
        assert min(np.abs(q - s[15:19]).max(), np.abs(q + s[15:19]).max()) < 1e-12
        np.testing.assert_allclose(sensor.data.target_pos_w[0, 0], s[19:22], atol=1e-12)
        np.testing.assert_allclose(sensor.data.target_pos_w[0, 2], d.xpos[2], atol=1e-12)
        np.testing.assert_allclose(sensor.data.source_pos_w[0], d.site_xpos[1], atol=1e-12)


@pytest.mark.parametrize(
    ("cfg", "needle"),
    [
        (FrameTransformerConfig(prim_path="upper"), "target_frames: is empty"),
        (
            FrameTransformerConfig(
                prim_path="upper", target_frames=[FrameTarget(prim_path="nope")]
            ),
            "target_frames[0].prim_path",
        ),
        (
            FrameTransformerConfig(
                prim_path="upper", target_frames=[FrameTarget(prim_path="upper|lower", name="x")]
            ),
            "target_frames[0].name",
        ),
    ],
)
def test_frame_transformer_bad_configs_disable(cfg, needle, caplog):
    m = mujoco.MjModel.from_xml_string(CHAIN)
    with caplog.at_level(logging.ERROR, logger="runtime.sensors.lab"):
        sensor = FrameTransformer(m, cfg)
    assert needle in sensor.disabled_reason and needle in caplog.text


def test_joint_wrench_worlds_with_their_own_models():
    """Randomised worlds (own MjModel copies, other masses) match their own force sensors."""
    bare_xml = CHAIN[: CHAIN.index("<sensor>")] + "</mujoco>"
    bare = [mujoco.MjModel.from_xml_string(bare_xml) for _ in range(2)]
    oracle = [mujoco.MjModel.from_xml_string(CHAIN) for _ in range(2)]
    for models in (bare, oracle):
        models[1].body_mass[2] *= 3.0  # world 1's lower link is heavier
        models[1].body_inertia[2] *= 3.0
    datas = [mujoco.MjData(m) for m in bare]
    sensor = JointWrenchSensor(bare[0], JointWrenchConfig(prim_path="lower"), num_envs=2)
    for d in datas:
        d.qvel[:] = [1.0, -0.5, 0.3, 2.0]
    for _ in range(30):
        for m, d in zip(bare, datas, strict=True):
            mujoco.mj_step(m, d)
            mujoco.mj_forward(m, d)  # the bare model: the post-step state
        sensor.update(datas, bare[0].opt.timestep)
    for env in range(2):
        ref = mujoco.MjData(oracle[env])
        ref.qpos[:], ref.qvel[:] = datas[env].qpos, datas[env].qvel
        ref.qacc_warmstart[:] = datas[env].qacc_warmstart
        mujoco.mj_forward(oracle[env], ref)
        force, torque = ref.sensordata[0:3], ref.sensordata[3:6]
        scale = max(1.0, np.abs(force).max())
        np.testing.assert_allclose(sensor.data.force_b[env, 0], force, atol=1e-9 * scale)
        np.testing.assert_allclose(sensor.data.torque_b[env, 0], torque, atol=1e-9 * scale)
