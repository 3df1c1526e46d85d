"""Converted humanoid / legged / friction robots (issue 15): joint dynamics, start clamping,
reference-pose overlaps. Oracle: MuJoCo loading the source URDF of example-robot-data
directly (its URDF parser maps ``<dynamics damping friction>`` to damping / frictionloss),
and MuJoCo's own collision detection at the start pose."""

from __future__ import annotations

import logging
import os
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

import runtime.schema  # noqa: F401
from runtime.engine.builder import build_model
from tests.helpers.reference_kinematics import ASSETS, ERD

XARM = os.path.join(ASSETS, "xarm7", "UF_ROBOT.usda")
GO2 = os.path.join(ASSETS, "go2", "go2_description.usda")
TALOS = os.path.join(ASSETS, "talos", "talos.usda")


def _urdf_without_geometry(rel: str) -> mujoco.MjModel:
    """MuJoCo model of an example-robot-data URDF, visuals/collisions removed (no meshes)."""
    root = ET.parse(os.path.join(ERD, rel)).getroot()
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for element in list(link.findall(tag)):
                link.remove(element)
    return mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))


def _no_contacts(model: mujoco.MjModel) -> None:
    model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)


def _passive_fall(model, qpos0, steps=500):
    data = mujoco.MjData(model)
    data.qpos[:] = qpos0
    for _ in range(steps):
        mujoco.mj_step(model, data)
    return np.array(data.qpos)


def test_xarm7_joint_dynamics_match_mujoco_urdf():
    """Friction (newton:friction) and damping (newton:damping, per degree) map onto MuJoCo's
    frictionloss / damping; the passive fall equals MuJoCo's own URDF import."""
    built = build_model(Usd.Stage.Open(XARM))
    ours = built.model
    ref = _urdf_without_geometry("xarm_description/urdf/xarm7.urdf")
    for m in (ours, ref):
        _no_contacts(m)
    ref.opt.timestep = ours.opt.timestep
    ref.opt.integrator = ours.opt.integrator
    by_name = {d.joint_path.rsplit("/", 1)[-1]: d for d in built.dofs}
    names = [ref.joint(i).name for i in range(ref.njnt)]
    assert sorted(names) == sorted(by_name) and len(names) == 7
    ref_dof = [int(ref.joint(n).dofadr[0]) for n in names]
    our_dof = [by_name[n].dof_adr for n in names]
    np.testing.assert_allclose(ours.dof_frictionloss[our_dof], ref.dof_frictionloss[ref_dof])
    np.testing.assert_allclose(ours.dof_damping[our_dof], ref.dof_damping[ref_dof], rtol=1e-6)
    assert ref.dof_frictionloss[ref_dof].min() > 0  # the URDF declares friction

    q_ours = _passive_fall(ours, built.initial_qpos)
    q_ref = _passive_fall(ref, ref.qpos0)
    ours_q = q_ours[[by_name[n].qpos_adr for n in names]]
    ref_q = q_ref[[int(ref.joint(n).qposadr[0]) for n in names]]
    assert np.abs(ref_q).max() > 0.5  # the arm really falls
    assert np.abs(ours_q - ref_q).max() < 1e-6

    # without the friction the two differ clearly: the comparison can fail
    ours.dof_frictionloss[:] = 0.0
    q_free = _passive_fall(ours, built.initial_qpos)[[by_name[n].qpos_adr for n in names]]
    assert np.abs(q_free - ref_q).max() > 1e-2


def test_go2_calves_clamped_into_their_limits(caplog):
    with caplog.at_level(logging.WARNING, logger="runtime.engine"):
        built = build_model(Usd.Stage.Open(GO2))
    m = built.model
    messages = [r.getMessage() for r in caplog.records if "outside their limits" in r.getMessage()]
    assert len(messages) == 1
    for leg in ("FL", "FR", "RL", "RR"):
        assert f"{leg}_calf_joint" in messages[0]
    assert "thigh_joint" not in messages[0]
    for d in built.dofs:
        lo, hi = m.jnt_range[d.mj_joint]
        assert lo - 1e-12 <= built.initial_qpos[d.qpos_adr] <= hi + 1e-12
        if "calf" in d.joint_path:
            assert built.initial_qpos[d.qpos_adr] == pytest.approx(hi)  # nearest limit to 0


def _overlapping_pairs(model: mujoco.MjModel, qpos: np.ndarray) -> set[tuple[str, str]]:
    """Body pairs (excluding the world) MuJoCo finds penetrating at ``qpos``."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    out = set()
    for con in data.contact[: data.ncon]:
        if con.dist < 0:
            a = model.body(int(model.geom_bodyid[con.geom1])).name
            b = model.body(int(model.geom_bodyid[con.geom2])).name
            if model.geom_bodyid[con.geom1] and model.geom_bodyid[con.geom2]:
                out.add(tuple(sorted((a, b))))
    return out


def test_talos_reference_overlaps_excluded_exactly(caplog):
    stage = Usd.Stage.Open(TALOS)
    plain = build_model(stage, exclude_reference_overlaps=False)
    overlapping = _overlapping_pairs(plain.model, plain.initial_qpos)
    assert len(overlapping) >= 10  # thighs vs hands, hip/ankle links, ...
    with caplog.at_level(logging.WARNING, logger="runtime.engine"):
        built = build_model(Usd.Stage.Open(TALOS))
    logged = [r.getMessage() for r in caplog.records if "reference pose excluded" in r.getMessage()]
    assert len(logged) == 1 and logged[0].startswith(f"{len(overlapping)} body pairs")
    excluded = {
        tuple(sorted((built.model.body(int(a)).name, built.model.body(int(b)).name)))
        for a, b in (divmod(int(sig), 1 << 16) for sig in built.model.exclude_signature)
    }
    assert overlapping <= excluded
    assert not _overlapping_pairs(built.model, built.initial_qpos)


def _run(model, qpos, steps):
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    for i in range(steps):
        mujoco.mj_step(model, data)
        if not np.all(np.isfinite(data.qvel)) or np.abs(data.qvel).max() > 100.0:
            return i
    return steps


def test_fixed_talos_as_converted_runs_600_steps_with_contacts():
    built = build_model(Usd.Stage.Open(TALOS))
    assert built.model.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_CONTACT) == 0
    assert _run(built.model, built.initial_qpos, 600) == 600
    # the same model keeping the overlapping pairs blows up early (what the policy fixes)
    plain = build_model(Usd.Stage.Open(TALOS), exclude_reference_overlaps=False)
    assert _run(plain.model, plain.initial_qpos, 600) < 600


def test_overlap_policy_scene_setting_off_and_bad_value():
    stage = Usd.Stage.Open(TALOS)
    scene = next(p for p in stage.Traverse() if p.IsA(UsdPhysics.Scene))
    scene.SetCustomDataByKey("simrt", {"excludeReferenceOverlaps": False})
    built = build_model(stage)
    assert not any("reference pose excluded" in w for w in built.warnings)
    assert _overlapping_pairs(built.model, built.initial_qpos)
    scene.SetCustomDataByKey("simrt", {"excludeReferenceOverlaps": "no"})
    with pytest.raises(Exception, match="excludeReferenceOverlaps"):
        build_model(stage)


def _hinge_stage(attrs: dict, start_deg: float = 0.0, limits=(-30.0, 30.0)) -> Usd.Stage:
    """A world hinge about Y carrying one body, with ``attrs`` authored on the joint."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdPhysics.Scene.Define(stage, "/World/scene")
    arm = UsdGeom.Xform.Define(stage, "/World/arm")
    arm.AddOrientOp().Set(Gf.Quatf(Gf.Rotation(Gf.Vec3d(0, 1, 0), start_deg).GetQuat()))
    UsdPhysics.RigidBodyAPI.Apply(arm.GetPrim())
    mass = UsdPhysics.MassAPI.Apply(arm.GetPrim())
    mass.CreateMassAttr(1.0)
    mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.01, 0.01))
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/World/hinge")
    joint.CreateBody1Rel().SetTargets(["/World/arm"])
    joint.CreateAxisAttr("Y")
    joint.CreateLowerLimitAttr(limits[0])
    joint.CreateUpperLimitAttr(limits[1])
    for name, value in attrs.items():
        joint.GetPrim().CreateAttribute(name, Sdf.ValueTypeNames.Float).Set(value)
    return stage


@pytest.mark.parametrize(
    "attrs, expected",
    [
        ({"newton:friction": 0.3}, (0.3, 0.0, 0.0)),
        ({"newton:friction": 0.3, "mjc:frictionloss": 0.7}, (0.7, 0.0, 0.0)),
        # newton:damping is per degree on revolute joints; mjc:damping is SI and wins
        ({"newton:damping": 0.1 * np.pi / 180.0}, (0.0, 0.1, 0.0)),
        ({"newton:damping": 1.0, "mjc:damping": 0.25}, (0.0, 0.25, 0.0)),
        ({"physxJoint:armature": 0.02}, (0.0, 0.0, 0.02)),
        ({"physxJoint:armature": 0.02, "newton:armature": 0.05}, (0.0, 0.0, 0.05)),
    ],
)
def test_joint_dynamics_attribute_precedence(attrs, expected):
    m = build_model(_hinge_stage(attrs)).model
    got = (m.dof_frictionloss[0], m.dof_damping[0], m.dof_armature[0])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-12)


def test_start_outside_limits_clamped_with_one_warning():
    built = build_model(_hinge_stage({}, start_deg=50.0))
    assert built.initial_qpos[0] == pytest.approx(np.radians(30.0), rel=1e-6)
    clamped = [w for w in built.warnings if "outside their limits" in w]
    assert len(clamped) == 1 and "/World/hinge" in clamped[0]
    inside = build_model(_hinge_stage({}, start_deg=20.0))
    assert inside.initial_qpos[0] == pytest.approx(np.radians(20.0), rel=1e-6)
    assert not any("outside their limits" in w for w in inside.warnings)
