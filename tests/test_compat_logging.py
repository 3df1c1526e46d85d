"""Isaac's module-level loggers see formatted messages (runtime.compat.logging_bridge).

Isaac's code logs f-strings; a test that replaces a module's ``logger`` with a mock (or
patches one of its methods) reads the final text from ``call_args``. simrt logs ``%``-style
templates; the bridge formats them before they reach the Isaac side.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

pytest.importorskip("mujoco")

from pxr import Usd  # noqa: E402

from runtime.compat import isaac  # noqa: E402
from runtime.compat.isaac import (  # noqa: E402
    GripperStatus,
    RobotPoser,
    Transform,
    acquire_surface_gripper_interface,
)

SCENES = Path(__file__).resolve().parents[1] / "scenes"


def test_mocked_poser_logger_sees_the_formatted_warning():
    sys.path.insert(0, str(SCENES))
    import build_ur_gripper_scene as S

    stage = Usd.Stage.Open(str(S.SCENE))
    poser = RobotPoser(
        stage,
        stage.GetPrimAtPath(S.ROBOT),
        stage.GetPrimAtPath(S.ROBOT + "/Geometry/base"),
        stage.GetPrimAtPath(S.TOOL_TIP),
    )
    far = Transform(np.array([5.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0]))
    with mock.patch("runtime.compat.isaac.poser.logger") as logger:
        result = poser.solve_ik(far, iters=5)
    assert not result.success
    message = logger.warning.call_args[0][0]
    assert message.startswith("solve_ik: cold-start IK failed across the seed ladder;")
    assert "%" not in message and "best pose-error was " in message
    assert re.search(r"best pose-error was \d+\.\d{4}\. Pass seed=", message)
    assert len(logger.warning.call_args[0]) == 1  # one argument: the final text


def test_patched_gripper_logger_method_sees_the_formatted_error():
    from runtime.engine import MujocoEngine
    from runtime.engine.surface_gripper import SurfaceGripperRuntime
    from tests.helpers.surface_gripper import make_scene

    gripper_module = sys.modules["runtime.compat.isaac_surface_gripper"]
    grippers = SurfaceGripperRuntime(MujocoEngine(make_scene()))
    grippers.update()
    with mock.patch.object(gripper_module.logger, "error") as error:
        assert grippers.get_gripper_status("/World/Nope") == "Open"  # simrt logs "%s"
        assert acquire_surface_gripper_interface().get_gripper_status("/World/Gone") is (
            GripperStatus.Open
        )  # compat layer, nothing running
    assert [c.args for c in error.call_args_list] == [
        ("Gripper not found: /World/Nope",),
        ("Gripper not found: /World/Gone",),
    ]


def test_handlers_on_isaac_names_get_the_final_text():
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record)

    handler = Keep()
    target = logging.getLogger("usd.schema.isaac.robot_schema.utils")
    assert isaac.logger is target  # robot_schema.utils.logger
    target.addHandler(handler)
    try:
        logging.getLogger("runtime.schema.utils").warning("joint %s has %d axes", "j1", 3)
    finally:
        target.removeHandler(handler)
    assert [(r.msg, r.args) for r in seen] == [("joint j1 has 3 axes", None)]
