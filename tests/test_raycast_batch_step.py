"""The one-call raycast step (Numba scene) against Embree, ray for ray, on the Panda scene.

The Numba path skips work per step (rays that did not fire, groups off the firing rays'
fan, solids away from the start points) and keeps its outputs in a persistent buffer that
only changes where needed; Embree (through the same sensors, the scene's own cast) casts
every firing ray against every triangle. Both runtimes read the same MuJoCo states.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("embreex")

from pxr import Usd  # noqa: E402

from runtime.engine.mujoco_engine import MujocoEngine  # noqa: E402
from runtime.run.scene import find_robot as _find_robot  # noqa: E402
from runtime.schema.dof import build_dof_table  # noqa: E402
from runtime.sensors.raycast import create_raycast_sensor  # noqa: E402
from runtime.sensors.runtime import SensorRuntime  # noqa: E402

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "panda_table.usda"
HAND = "/World/Panda/Geometry/panda_link0/panda_link1/panda_link2/panda_link3/panda_link4/panda_link5/panda_link6/panda_link7/panda_link8/panda_hand"  # noqa: E501


def _stage_with_extra_sensors():
    stage = Usd.Stage.Open(str(SCENE))
    stage = Usd.Stage.Open(stage.Flatten())
    rng = np.random.default_rng(7)
    # a body-mounted sensor with scattered directions (no fan) and offsets, SENSOR frame
    directions = rng.normal(size=(64, 3))
    create_raycast_sensor(
        stage, f"{HAND}/Scatter", np.zeros((64, 3)), directions, min_range=0.02,
        max_range=2.0, output_frame_of_reference="SENSOR", report_hit_prim_paths=True,
        time_offsets=rng.uniform(0.0, 0.01, 64), translation=(0.0, 0.0, 0.05),
    )  # fmt: skip
    # a static sensor whose rays all start inside the table top (start-inside rule)
    create_raycast_sensor(
        stage, "/World/InTable", np.zeros((4, 3)), [(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, -1)],
        min_range=0.0, max_range=1.5, output_frame_of_reference="WORLD",
        report_hit_prim_paths=True, position=(0.5, 0.0, 0.74),
    )  # fmt: skip
    return stage


def test_numba_step_equals_embree_ray_for_ray_over_a_run():
    stage = _stage_with_extra_sensors()
    robot = _find_robot(stage, None)
    engine = MujocoEngine(stage, robot_prim=robot)
    table = build_dof_table(stage, robot)
    body_paths = engine.state().body_paths
    runtimes = {}
    for backend in ("numba", "embreex"):
        rt = SensorRuntime(stage, body_paths, table, watch_usd=False)
        rt.ray_backend = backend
        runtimes[backend] = rt
    paths = [s.prim_path for s in runtimes["numba"].of_kind("raycast")]
    assert len(paths) == 3
    rng = np.random.default_rng(3)
    home = engine.data.ctrl.copy()
    hits = inside = 0
    for step in range(240):
        if step % 40 == 0:  # sweep the arm (and the hand-mounted sensor) around
            engine.set_controls(home + rng.uniform(-0.5, 0.5, engine.model.nu))
        engine.step()
        state = engine.state()
        for rt in runtimes.values():
            rt.step(state)
        if step % 3:
            continue  # readings of skipped steps are never built: the buffer must still be right
        for path in paths:
            a = runtimes["numba"].sensor(path).reading()
            b = runtimes["embreex"].sensor(path).reading()
            assert a.is_valid and b.is_valid and a.step == b.step and a.time == b.time
            assert a.ray_count == b.ray_count
            np.testing.assert_allclose(a.depths, b.depths, atol=2e-5, err_msg=path)
            np.testing.assert_allclose(a.hit_positions, b.hit_positions, atol=2e-5, err_msg=path)
            np.testing.assert_allclose(a.hit_normals, b.hit_normals, atol=1e-5, err_msg=path)
            np.testing.assert_allclose(a.ray_origins_world, b.ray_origins_world, atol=1e-6)
            np.testing.assert_allclose(a.ray_end_points_world, b.ray_end_points_world, atol=2e-5)
            assert a.hit_prim_paths == b.hit_prim_paths, path
            hits += sum(1 for p in a.hit_prim_paths if p)
            inside += int(np.sum(a.depths == 0.0))
    assert hits > 500 and inside > 0
