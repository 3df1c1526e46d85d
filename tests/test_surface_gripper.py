"""Surface-gripper scenarios T1-T12 of docs/sensors/surface-gripper.md against the MuJoCo engine.

Common scene (§7): Z-up, g = 9.81, dt = 1/60 s; gripper = 0.04 m box, gravity off, driven
along Z by a stiff prismatic drive; one attachment joint on the gripper's bottom face,
rotated 180 deg about X, forward axis Z, all DOFs locked, excluded from the articulation;
target cube 0.04 m, 0.05 kg on a static ground, directly below; maxGripDistance 0.02,
limits -1, retryInterval 0 unless stated. Positions come from MuJoCo's own body poses.
"""

from __future__ import annotations

import logging

import pytest

mujoco = pytest.importorskip("mujoco")


from runtime.engine import MujocoEngine  # noqa: E402
from runtime.engine.surface_gripper import SurfaceGripperRuntime  # noqa: E402
from tests.helpers.surface_gripper import BODY, CUBE, CUBE2, GRIPPER, HALF, make_scene  # noqa: E402, F401


class Sim:
    """Engine + gripper runtime, stepped as the spec's per-step order requires."""

    def __init__(self, stage, write_to_usd=False):
        self.stage = stage
        self.engine = MujocoEngine(stage)
        self.grippers = SurfaceGripperRuntime(self.engine, write_to_usd=write_to_usd)
        m = self.engine.model
        self.cube = m.body(CUBE).id
        self.cube2 = m.body(CUBE2).id
        self.body = m.body(BODY).id

    def step(self, n=1):
        for _ in range(n):
            self.engine.step()
            self.grippers.update()

    def lift(self, dz):
        self.engine.set_joint_targets([dz])

    def z(self, body):
        mujoco.mj_kinematics(self.engine.model, self.engine.data)
        return float(self.engine.data.xpos[body][2])

    def status(self):
        return self.grippers.get_gripper_status(GRIPPER)

    def gripped(self):
        return self.grippers.get_gripped_objects(GRIPPER)

    def push(self, body, force):
        self.engine.data.xfrc_applied[body, :3] = force


def started(stage, **kw):
    sim = Sim(stage, **kw)
    sim.step(5)  # discovery at the first update; the cube settles on the ground
    return sim


def test_t1_basic_grip_and_snap():
    sim = started(make_scene(gap=0.005, clearance=0.004))
    top_before = sim.z(sim.cube) + HALF
    assert sim.grippers.close_gripper(GRIPPER) is True
    assert sim.status() == "Closed"  # every point hit in the call
    assert sim.gripped() == []  # attach is queued until the next step
    sim.step(2)
    assert sim.gripped() == [CUBE]
    sim.step(60)
    joint_origin = sim.z(sim.body) - HALF
    top = sim.z(sim.cube) + HALF
    # ray from 1 mm above the cube (t = 0.001, c = 0.004): cube drawn 3 mm up, top at 2t
    assert top - top_before == pytest.approx(0.003, abs=5e-4)
    assert joint_origin - top == pytest.approx(0.002, abs=5e-4)
    before = sim.z(sim.cube)
    sim.lift(0.25)
    sim.step(120)
    assert sim.z(sim.cube) - before == pytest.approx(0.25, abs=0.01)
    assert sim.status() == "Closed" and sim.gripped() == [CUBE]


def test_t2_out_of_range_no_retry():
    sim = started(make_scene(gap=0.03))
    assert sim.grippers.close_gripper(GRIPPER)
    assert sim.status() == "Closing"
    sim.step()
    assert sim.status() == "Open" and sim.gripped() == []


def test_t3_retry_window_and_late_grip():
    sim = started(make_scene(gap=0.03, retry=1.0))
    sim.grippers.close_gripper(GRIPPER)
    statuses = []
    for _ in range(62):
        sim.step()
        statuses.append(sim.status())
    # elapsed > 1.0 s first after the 61st step of 1/60 s (60 steps give exactly ~1.0)
    first_open = statuses.index("Open")
    assert 59 <= first_open <= 61
    assert set(statuses[:first_open]) == {"Closing"}
    # variant: lowered into range at step 6 -> Closed with the cube
    sim = started(make_scene(gap=0.03, retry=1.0))
    sim.grippers.close_gripper(GRIPPER)
    sim.step(6)
    sim.lift(-0.02)
    for _ in range(40):
        sim.step()
        if sim.status() == "Closed":
            break
    assert sim.status() == "Closed"
    sim.step()
    assert sim.gripped() == [CUBE]


def _place_cube2_under_b(sim):
    m, d = sim.engine.model, sim.engine.data
    adr = m.jnt_qposadr[m.body_jntadr[sim.cube2]]
    d.qpos[adr : adr + 3] = (0.06, 0.0, HALF)
    d.qvel[m.jnt_dofadr[m.body_jntadr[sim.cube2]] : m.jnt_dofadr[m.body_jntadr[sim.cube2]] + 6] = 0
    mujoco.mj_forward(m, d)


def test_t4_partial_cover():
    sim = started(make_scene(gap=0.005, clearance=0.004, retry=1.0, two_points=True))
    sim.grippers.close_gripper(GRIPPER)
    sim.step(2)
    assert sim.status() == "Closing" and sim.gripped() == [CUBE]
    sim.step(120)  # well past the 1 s retry interval: still Closing, still testing
    assert sim.status() == "Closing" and sim.gripped() == [CUBE]
    _place_cube2_under_b(sim)
    for _ in range(20):
        sim.step()
        if sim.status() == "Closed":
            break
    sim.step()
    assert sim.status() == "Closed"
    assert sim.gripped() == sorted([CUBE, CUBE2])


def test_t5_open():
    sim = started(make_scene(gap=0.005, clearance=0.004))
    sim.grippers.close_gripper(GRIPPER)
    sim.lift(0.1)
    sim.step(60)
    z_held = sim.z(sim.cube)
    assert z_held > 0.1
    assert sim.grippers.open_gripper(GRIPPER) is True
    assert sim.status() == "Open" and sim.gripped() == []  # at once, in the call
    assert sim.grippers.open_gripper(GRIPPER) is True  # no-op
    sim.step(10)
    assert sim.z(sim.cube) < z_held - 0.01  # released at the end of the next step: falls


def test_t6_action_thresholds_and_status_ints():
    sim = started(make_scene(gap=0.005, clearance=0.004))
    g = sim.grippers
    assert g.set_gripper_action(GRIPPER, 0.3) is False and sim.status() == "Open"
    assert g.set_gripper_action(GRIPPER, 0.0) is False
    assert g.set_gripper_action(GRIPPER, float("nan")) is False
    assert g.set_gripper_action(GRIPPER, 0.31) is True and sim.status() == "Closed"
    assert g.get_gripper_status_batch([GRIPPER]) == [2]
    assert g.set_gripper_action(GRIPPER, -0.3) is False and sim.status() == "Closed"
    assert g.set_gripper_action(GRIPPER, -0.31) is True and sim.status() == "Open"
    assert g.get_gripper_status_batch([GRIPPER]) == [0]
    sim2 = started(make_scene(gap=0.03, retry=1.0))
    sim2.grippers.close_gripper(GRIPPER)
    assert sim2.grippers.get_gripper_status_batch([GRIPPER]) == [1]


def _held_sim(**kw):
    sim = started(make_scene(gap=0.005, clearance=0.004, **kw))
    sim.grippers.close_gripper(GRIPPER)
    sim.step(15)  # past the settle window
    assert sim.status() == "Closed" and sim.gripped() == [CUBE]
    return sim


def test_t7_shear_release():
    sim = _held_sim(shear=5.0)
    sim.push(sim.cube, (4.0, 0.0, 0.0))
    sim.step(30)
    assert sim.status() == "Closed"
    sim.push(sim.cube, (500.0, 0.0, 0.0))
    sim.step(3)
    assert sim.status() == "Open" and sim.gripped() == []
    # with retry: Closing first, then Open after about 1 s
    sim = _held_sim(shear=5.0, retry=1.0)
    sim.push(sim.cube, (500.0, 0.0, 0.0))
    sim.step(3)
    assert sim.status() == "Closing"
    sim.push(sim.cube, (0.0, 0.0, 0.0))
    sim.lift(0.2)  # out of reach of the fallen cube: no re-grip
    sim.step(70)
    assert sim.status() == "Open"


def test_t8_coaxial_pull_off_release():
    sim = _held_sim(coaxial=1.0)
    for k in range(1, 201):  # slow lift (a jerk would exceed 1 N on its own)
        sim.lift(0.0005 * k)
        sim.step()
    sim.step(30)  # hanging cube: ~0.49 N pull-off, below the limit
    assert sim.z(sim.cube) > 0.1
    assert sim.status() == "Closed"
    sim.push(sim.cube, (0.0, 0.0, 5.0))  # pushed up into the gripper: compression
    sim.step(20)
    assert sim.status() == "Closed"
    sim.push(sim.cube, (0.0, 0.0, -5.0))  # pulled away along +d
    sim.step(3)
    assert sim.status() == "Open" and sim.gripped() == []


def test_t9_settle_window():
    sim = started(make_scene(gap=0.005, clearance=0.004, coaxial=0.1))
    sim.grippers.close_gripper(GRIPPER)  # pass 1 of the force check (counts down)
    for _ in range(9):  # passes 2..10 only count down
        sim.step()
        assert sim.status() == "Closed"
    sim.step()  # pass 11 reads the ~0.49 N hanging load and releases
    assert sim.status() == "Open"


def test_t10_self_hit_clearance():
    sim = started(make_scene(gap=0.005, joint_z=-HALF + 0.003), write_to_usd=True)
    sim.grippers.close_gripper(GRIPPER)
    sim.step(2)
    assert sim.gripped() == [CUBE]
    attr = sim.stage.GetPrimAtPath(f"{BODY}/Attach").GetAttribute("isaac:clearanceOffset")
    assert 0.003 - 1e-9 <= attr.Get() <= 0.004 + 1e-9
    # a miss caches nothing
    sim = started(make_scene(gap=0.03, joint_z=-HALF + 0.003), write_to_usd=True)
    sim.grippers.close_gripper(GRIPPER)
    sim.step(2)
    attr = sim.stage.GetPrimAtPath(f"{BODY}/Attach").GetAttribute("isaac:clearanceOffset")
    assert attr.Get() == 0.0


def test_t11_unknown_path_and_before_first_step(caplog):
    sim = Sim(make_scene())
    g = sim.grippers
    with caplog.at_level(logging.ERROR, logger="runtime.engine.surface_gripper"):
        assert g.get_gripper_status(GRIPPER) == "Open"  # before the first step: unknown
    assert f"Gripper not found: {GRIPPER}" in caplog.text
    assert g.close_gripper(GRIPPER) is False and g.open_gripper(GRIPPER) is False
    assert g.get_gripped_objects(GRIPPER) == []
    sim.step()
    assert g.close_gripper_batch([GRIPPER, "/World/Nope"]) == [True, False]
    assert g.get_gripped_objects_batch(["/World/Nope"]) == [[]]
    assert g.set_gripper_action_batch([GRIPPER], [0.5, 0.5]) == []


def test_t12_usd_write_back():
    stage = make_scene(gap=0.005, clearance=0.004)
    root_before = stage.GetRootLayer().ExportToString()
    sim = started(stage, write_to_usd=True)
    g = sim.grippers
    g.close_gripper(GRIPPER)
    sim.step(2)
    layer = g._usd.layer
    assert layer is not None and layer.identifier in stage.GetSessionLayer().subLayerPaths
    gripper = stage.GetPrimAtPath(GRIPPER)
    assert gripper.GetAttribute("isaac:status").Get() == "Closed"
    assert [str(t) for t in gripper.GetRelationship("isaac:grippedObjects").GetTargets()] == [CUBE]
    pairs = stage.GetPrimAtPath(BODY).GetRelationship("physics:filteredPairs").GetTargets()
    assert [str(t) for t in pairs] == [CUBE]
    assert layer.GetPrimAtPath(GRIPPER) is not None
    g.open_gripper(GRIPPER)
    sim.step()
    assert gripper.GetAttribute("isaac:status").Get() == "Open"
    assert gripper.GetRelationship("isaac:grippedObjects").GetTargets() == []
    assert not stage.GetPrimAtPath(BODY).GetRelationship("physics:filteredPairs").GetTargets()
    g.close()  # "stop": no runtime opinions remain
    assert layer.identifier not in stage.GetSessionLayer().subLayerPaths
    assert stage.GetRootLayer().ExportToString() == root_before
    # write-back off: the stage is never modified
    stage = make_scene(gap=0.005, clearance=0.004)
    before = stage.GetRootLayer().ExportToString()
    sim = started(stage)
    sim.grippers.close_gripper(GRIPPER)
    sim.step(3)
    assert stage.GetRootLayer().ExportToString() == before
    assert not stage.GetSessionLayer().subLayerPaths


def test_readings_report_status_and_gripped_objects():
    sim = started(make_scene(gap=0.005, clearance=0.004))
    (r,) = sim.grippers.readings()
    assert (r.path, r.status, r.status_code, r.gripped_objects) == (GRIPPER, "Open", 0, ())
    sim.grippers.close_gripper(GRIPPER)
    sim.step()
    (r,) = sim.grippers.readings()
    assert (r.status, r.status_code, r.gripped_objects, r.step) == ("Closed", 2, (CUBE,), 6)


def test_isaac_named_interface_and_view():
    from runtime.compat.isaac import (
        GripperStatus,
        GripperView,
        acquire_surface_gripper_interface,
        create_surface_gripper,
    )

    sim = started(make_scene(gap=0.005, clearance=0.004))
    iface = acquire_surface_gripper_interface()
    assert iface.close_gripper(GRIPPER) is False  # unbound: unknown
    iface.bind_runtime(sim.grippers)
    try:
        assert iface.close_gripper(GRIPPER) is True
        assert iface.get_gripper_status(GRIPPER) is GripperStatus.Closed
        sim.step()
        assert iface.get_gripped_objects(GRIPPER) == [CUBE]
        view = GripperView("/World/Surface.*", stage=sim.stage, shear_force_limit=[5.0])
        assert view.paths == [GRIPPER]
        mgd, coax, shear, retry = view.get_surface_gripper_properties()
        assert mgd == [pytest.approx(0.02)] and shear == [5.0] and coax == [-1.0]
        assert sim.grippers._grippers[GRIPPER].shear_limit == 5.0  # re-read by the runtime
        with pytest.raises(ValueError, match="one value per gripper"):
            view.set_surface_gripper_properties(retry_interval=[1.0, 2.0])
        with pytest.raises(ValueError, match="Length of values must match"):
            view.apply_gripper_action([0.5, 0.5])
        view.apply_gripper_action([-1.0])
        assert view.get_surface_gripper_status() == [0]
        assert view.get_gripped_objects() == [[]]
    finally:
        iface.bind_runtime(None)
    first = create_surface_gripper(sim.stage, "/World")
    second = create_surface_gripper(sim.stage, "/World")
    # the scene already holds /World/SurfaceGripper: numbered names follow
    assert str(first.GetPath()) == "/World/SurfaceGripper_01"
    assert str(second.GetPath()) == "/World/SurfaceGripper_02"
    assert first.GetTypeName() == "IsaacSurfaceGripper"


def test_probe_reports_reachable_bodies_without_changing_state():
    sim = started(make_scene(gap=0.03, clearance=0.004))
    assert sim.grippers.probe_gripper(GRIPPER) == []  # 3 cm gap: out of reach
    sim.lift(-0.02)
    sim.step(60)
    assert sim.grippers.probe_gripper(GRIPPER) == [CUBE]
    assert sim.status() == "Open" and sim.gripped() == []  # probing grips nothing
    assert sim.grippers.probe_gripper("/World/Nope") == []
