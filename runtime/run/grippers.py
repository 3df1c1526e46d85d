"""Surface grippers in a run: scheduled close / open actions, and their recorded state.

Actions (``--gripper`` / scene setting ``gripperActions``), one per entry::

    GRIPPER=close@T        close the gripper once the simulation time reaches T [s]
    GRIPPER=open@T         open it at T
    GRIPPER=close@contact  close it at the first step its grip test finds an object

``GRIPPER`` is the ``IsaacSurfaceGripper`` prim path. Every step (after the physics step)
the grippers are updated (:class:`runtime.engine.surface_gripper.SurfaceGripperRuntime`) and
each gripper's state is recorded: ``<gripper>.status_code`` (int8: 0 Open, 1 Closing,
2 Closed) and ``<gripper>.gripped`` (bool per body of ``body_paths``: held by the gripper).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["GripperAction", "GripperDriver", "parse_gripper_action"]

_ACTIONS = ("close", "open")


@dataclass(frozen=True)
class GripperAction:
    """One scheduled gripper action.

    Attributes:
        gripper: the ``IsaacSurfaceGripper`` prim path.
        action: ``"close"`` or ``"open"``.
        time: simulation time at which it happens [s]; None for ``on_contact``.
        on_contact: close at the first step the grip test finds an object.
    """

    gripper: str
    action: str
    time: float | None = None
    on_contact: bool = False


def parse_gripper_action(text: str) -> GripperAction:
    """Parse ``GRIPPER=close@T``, ``GRIPPER=open@T`` or ``GRIPPER=close@contact``.

    Raises:
        ValueError: the text does not follow the syntax (the message quotes it).
    """
    syntax = "GRIPPER=close@T, GRIPPER=open@T or GRIPPER=close@contact"
    path, sep, rest = str(text).partition("=")
    action, at, when = rest.partition("@")
    path, action, when = path.strip(), action.strip().lower(), when.strip().lower()
    if not sep or not at or not path.startswith("/") or action not in _ACTIONS:
        raise ValueError(f"gripper action {text!r}: expected {syntax}")
    if when == "contact":
        if action != "close":
            raise ValueError(f"gripper action {text!r}: only close can happen @contact")
        return GripperAction(path, action, None, True)
    try:
        time = float(when)
    except ValueError:
        raise ValueError(f"gripper action {text!r}: time {when!r} is not a number") from None
    if not (math.isfinite(time) and time >= 0.0):
        raise ValueError(f"gripper action {text!r}: time must be finite and >= 0")
    return GripperAction(path, action, time, False)


class GripperDriver:
    """The run's surface grippers: actions applied and state recorded every step.

    Args:
        engine: the built MuJoCo engine.
        actions: scheduled actions (their grippers must exist on the stage).
        ray_scene: a ray scene of the engine's bodies to share (None: built on first use).

    Raises:
        SimrtError: an action names a prim that is not a surface gripper.
    """

    def __init__(self, engine: Any, actions: tuple[GripperAction, ...], ray_scene: Any = None):
        from runtime.engine.surface_gripper import SurfaceGripperRuntime
        from runtime.errors import SchemaError

        for item in actions:
            prim = engine.stage.GetPrimAtPath(item.gripper)
            if not prim or prim.GetTypeName() != "IsaacSurfaceGripper":
                raise SchemaError(item.gripper, "", "gripper action names no IsaacSurfaceGripper")
        self.runtime = SurfaceGripperRuntime(engine, ray_scene=ray_scene)
        self.actions = list(actions)
        self._pending = list(range(len(actions)))
        self.body_paths = tuple(engine.built.body_paths)
        self._body_index = {p: i for i, p in enumerate(self.body_paths)}
        self._slots: list[tuple[int, int]] = []
        self.events: list[tuple[float, str, str]] = []  # (time, gripper, what happened)

    @staticmethod
    def wanted(stage: Any, actions: tuple[GripperAction, ...]) -> bool:
        """True when the stage has surface grippers or actions name some."""
        if actions:
            return True
        return any(p.GetTypeName() == "IsaacSurfaceGripper" for p in stage.Traverse())

    def after_step(self, time: float) -> None:
        """Update the grippers for the step just taken, then apply the actions now due."""
        runtime = self.runtime
        runtime.update()
        if not self._pending:
            return
        done = []
        for index in self._pending:
            item = self.actions[index]
            if item.on_contact:
                if not runtime.probe_gripper(item.gripper):
                    continue
            elif time + 1e-12 < float(item.time or 0.0):
                continue
            if item.action == "close":
                runtime.close_gripper(item.gripper)
            else:
                runtime.open_gripper(item.gripper)
            self.events.append((time, item.gripper, item.action))
            done.append(index)
        if done:
            self._pending = [i for i in self._pending if i not in done]

    def define(self, recorder: Any) -> None:
        """Register ``status_code`` and ``gripped`` channels per gripper."""
        from runtime.recording import ChannelInfo

        attrs = {"body_paths": list(self.body_paths), "status": ["Open", "Closing", "Closed"]}
        self._slots = []
        for path in self.runtime.gripper_paths:
            status = recorder.add_channel(
                ChannelInfo(f"{path}.status_code", (), "int8", path, "gripper", "status_code")
            )
            gripped = recorder.add_channel(
                ChannelInfo(
                    f"{path}.gripped",
                    (len(self.body_paths),),
                    "bool",
                    path,
                    "gripper",
                    "gripped",
                    "",
                    attrs,
                )
            )
            self._slots.append((status, gripped))

    def write(self, buffers: list[np.ndarray], row: int) -> None:
        """Write every gripper's state after the last update into a recorder row."""
        for (status, gripped), reading in zip(self._slots, self.runtime.readings(), strict=False):
            buffers[status][row] = reading.status_code
            mask = buffers[gripped][row]
            mask[:] = False
            for body in reading.gripped_objects:
                index = self._body_index.get(body)
                if index is not None:
                    mask[index] = True

    def close(self) -> None:
        """Undo the runtime's USD edits."""
        self.runtime.close()
