"""Joint-state sensor: DOF names, types, positions, velocities, efforts.

See docs/sensors/joint-state-effort.md#joint-state.

Keyed by an articulation root path; the DOFs are the runtime's DOF list (``dof_names`` /
``DofTable`` given to :class:`~runtime.sensors.runtime.SensorRuntime`), whose order is the
``PhysicsState`` joint order. The enable flag is user-side only (2.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime.errors import SchemaError
from runtime.sensors.base import SensorBase
from runtime.sensors.state import PhysicsState

__all__ = ["JointStateReading", "JointStateSensor"]


@dataclass(frozen=True, eq=False)
class JointStateReading:
    """One joint-state reading.

    Attributes:
        time: ``float32(t_k)`` [s]; 0 when invalid.
        step: physics step counter; 0 when invalid.
        dof_names: DOF names, articulation order (empty when invalid).
        dof_types: (D,), uint8, 0 rotation, 1 translation.
        positions: (D,), float64 (float32 values), rad or stage units.
        velocities: (D,), float64 (float32 values), rad/s or stage units/s.
        efforts: (D,), float64 (float32 values), engine torque/force units.
        stage_meters_per_unit: stage mpu (1.0 if not finite/positive); 0.0 when invalid.
        is_valid: validity flag.
    """

    time: float = 0.0
    step: int = 0
    dof_names: tuple[str, ...] = ()
    dof_types: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0))
    velocities: np.ndarray = field(default_factory=lambda: np.zeros(0))
    efforts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    stage_meters_per_unit: float = 0.0
    is_valid: bool = False

    @property
    def dof_count(self) -> int:
        """Number of DOFs."""
        return len(self.dof_names)


class JointStateSensor(SensorBase):
    """Joint-state sensor of an articulation (docs/sensors/joint-state-effort.md#joint-state).

    Args:
        articulation_root: USD path of the articulation root prim (must exist).
    """

    kind = "joint_state"

    def __init__(self, articulation_root: str) -> None:
        super().__init__(articulation_root)
        self._reading = JointStateReading()

    def bind(self, runtime: Any) -> None:
        """Cache DOF names and types from the runtime.

        Args:
            runtime: the owning runtime.

        Raises:
            SchemaError: the articulation root prim is missing or there are no DOFs.
        """
        self._runtime = runtime
        prim = runtime.stage.GetPrimAtPath(self.prim_path)
        if not prim or not prim.IsValid():
            raise SchemaError(self.prim_path, "", "articulation root prim does not exist")
        if len(runtime.dof_names) == 0:
            raise SchemaError(
                self.prim_path,
                "",
                f"JointStateSensor: no DOFs found under articulation root '{self.prim_path}'",
            )
        self.dof_names = tuple(runtime.dof_names)
        self.dof_types = np.asarray(runtime.dof_types, np.uint8).copy()

    def update(self, state: PhysicsState) -> None:
        """Copy the DOF arrays of ``state`` (float32 values).

        Args:
            state: the physics state after the step.
        """
        if self.disabled_reason is not None:
            return
        count = len(self.dof_names)
        positions = state.joint_positions
        if positions is None or positions.shape[0] == 0:
            self._reading = JointStateReading()
            return
        n = min(positions.shape[0], count)
        pos = np.zeros(count)
        pos[:n] = positions[:n].astype(np.float32)
        vel = np.zeros(count)
        eff = np.zeros(count)
        if state.joint_velocities.shape[0] >= n:
            vel[:n] = state.joint_velocities[:n].astype(np.float32)
        if state.joint_efforts.shape[0] >= n:
            eff[:n] = state.joint_efforts[:n].astype(np.float32)
        self._reading = JointStateReading(
            time=float(np.float32(state.time)),
            step=int(state.step),
            dof_names=self.dof_names,
            dof_types=self.dof_types.copy(),
            positions=pos,
            velocities=vel,
            efforts=eff,
            stage_meters_per_unit=float(self._runtime.meters_per_unit),
            is_valid=True,
        )

    def reading(self) -> JointStateReading:
        """The latest reading; default invalid reading while disabled or before a step.

        Returns:
            The reading.
        """
        if not self._enabled or self.disabled_reason is not None:
            return JointStateReading()
        return self._reading

    def reset(self) -> None:
        """Invalidate the reading until the next step."""
        self._reading = JointStateReading()
