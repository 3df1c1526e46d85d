"""Effort sensor: the effort of one DOF, keyed by its joint path.

See docs/sensors/joint-state-effort.md#effort.

The DOF index is resolved from the runtime's DOF list: with a ``DofTable`` by joint path,
otherwise by matching the joint prim's reported name (name override, else prim name) to
``dof_names``. Unresolved joints disable the sensor with a reason (the reference does not
create it). ``update_dof_name`` re-targets to a sibling joint and re-resolves.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime.errors import SchemaError
from runtime.sensors.base import SensorBase
from runtime.sensors.state import PhysicsState

__all__ = ["EffortReading", "EffortSensor"]


@dataclass(frozen=True)
class EffortReading:
    """One effort reading.

    Attributes:
        time: ``float32(t_k)`` [s]; 0 when invalid.
        step: physics step counter; 0 when invalid.
        value: DOF effort (float32 value), engine torque/force units, sign of the joint axis.
        is_valid: validity flag.
    """

    time: float = 0.0
    step: int = 0
    value: float = 0.0
    is_valid: bool = False


class EffortSensor(SensorBase):
    """Effort of the DOF of one joint (docs/sensors/joint-state-effort.md#effort).

    Args:
        joint_path: USD path of the joint prim.
        buffer_size: length of the reading history kept by :meth:`reading` (newest first).
    """

    kind = "effort"

    def __init__(self, joint_path: str, buffer_size: int = 10) -> None:
        super().__init__(joint_path)
        self.dof_index = -1
        self._reading = EffortReading()
        self.history: deque[EffortReading] = deque(
            [EffortReading() for _ in range(buffer_size)], maxlen=buffer_size
        )
        self._original_path = str(joint_path)

    def bind(self, runtime: Any) -> None:
        """Resolve the DOF index of the joint.

        Args:
            runtime: the owning runtime.

        Raises:
            SchemaError: the joint prim is missing or its DOF cannot be resolved.
        """
        from runtime.schema.readers import reported_name

        self._runtime = runtime
        self.dof_index = -1
        self._reading = EffortReading()
        prim = runtime.stage.GetPrimAtPath(self.prim_path)
        if not prim or not prim.IsValid():
            raise SchemaError(self.prim_path, "", "joint prim does not exist")
        index = -1
        if runtime.dof_joint_paths is not None:
            if self.prim_path in runtime.dof_joint_paths:
                index = runtime.dof_joint_paths.index(self.prim_path)
        else:
            name = reported_name(prim)
            for candidate in (name, prim.GetName()):
                if candidate in runtime.dof_names:
                    index = runtime.dof_names.index(candidate)
                    break
        if index < 0:
            raise SchemaError(
                self.prim_path,
                "",
                f"EffortSensor: could not resolve DOF index for joint '{self.prim_path}'",
            )
        self.dof_index = index

    def update(self, state: PhysicsState) -> None:
        """Read the DOF effort of ``state``.

        Args:
            state: the physics state after the step.
        """
        if self.dof_index < 0 or self.disabled_reason is not None:
            return
        efforts = state.joint_efforts
        if efforts is None or efforts.shape[0] <= self.dof_index:
            self._reading = EffortReading()
            return
        self._reading = EffortReading(
            time=float(np.float32(state.time)),
            step=int(state.step),
            value=float(np.float32(efforts[self.dof_index])),
            is_valid=True,
        )

    def reading(self) -> EffortReading:
        """The latest reading (appended to :attr:`history` when valid).

        Returns:
            The reading; default invalid reading while disabled or unresolved.
        """
        if not self._enabled or self.disabled_reason is not None or self.dof_index < 0:
            return EffortReading()
        if self._reading.is_valid:
            self.history.appendleft(self._reading)
        return self._reading

    def change_buffer_size(self, size: int) -> None:
        """Truncate or pad (with default readings) the history to ``size`` entries.

        Args:
            size: new history length (>= 1).
        """
        items = list(self.history)[:size]
        items += [EffortReading() for _ in range(size - len(items))]
        self.history = deque(items, maxlen=size)

    def update_dof_name(self, name: str) -> None:
        """Re-target to ``<parent of the original joint path>/<name>`` and re-resolve.

        An unresolved name leaves the sensor disabled with a reason (readings invalid);
        re-targeting back to a valid joint re-enables it.

        Args:
            name: the joint prim name.
        """
        parent = self._original_path.rsplit("/", 1)[0]
        self.prim_path = f"{parent}/{name}"
        self.disabled_reason = None
        if self._runtime is not None:
            try:
                self.bind(self._runtime)
            except SchemaError as error:
                self.disable(f"EffortSensor disabled: {error}")

    def reset(self) -> None:
        """Invalidate the reading until the next step."""
        self._reading = EffortReading()
