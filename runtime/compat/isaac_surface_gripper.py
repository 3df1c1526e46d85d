"""Isaac Sim's surface-gripper Python API (``isaacsim.robot.surface_gripper``, §2).

Served by :class:`~runtime.engine.surface_gripper.SurfaceGripperRuntime`
(surface-gripper spec §).

The reference acquires one process-wide interface; here the interface serves the running
simulation of the current stage's
:class:`~runtime.compat.simulation_context.SimulationContext`, or a runtime given to
:meth:`SurfaceGripperInterface.bind_runtime`::

    sim = SimulationContext(stage=stage)
    iface = acquire_surface_gripper_interface()
    sim.play()
    sim.step(render=False)                                     # grippers start here
    iface.close_gripper("/World/Robot/SurfaceGripper")
    iface.get_gripper_status("/World/Robot/SurfaceGripper")   # GripperStatus.Closed

With nothing running every gripper is unknown (status Open with an error log, requests
False, gripped ``[]``), as before the reference's first physics step.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from pxr import Sdf, Usd

__all__ = [
    "GripperStatus",
    "GripperView",
    "SurfaceGripperInterface",
    "acquire_surface_gripper_interface",
    "create_surface_gripper",
]

_LOG = logging.getLogger("runtime.engine.surface_gripper")


class GripperStatus(enum.IntEnum):
    """Gripper status (declaration order: Open 0, Closing 1, Closed 2)."""

    Open = 0
    Closing = 1
    Closed = 2


class SurfaceGripperInterface:
    """The ``_surface_gripper`` interface object (methods take the gripper prim path).

    Requests go to the runtime given to :meth:`bind_runtime`, else to the running
    simulation of the current stage's
    :class:`~runtime.compat.simulation_context.SimulationContext`. With neither, every
    gripper is unknown (as before the reference's first physics step).
    """

    def __init__(self) -> None:
        self._runtime: Any = None

    def bind_runtime(self, runtime: Any) -> None:
        """Serve requests from ``runtime`` (a ``SurfaceGripperRuntime``; None: the context's)."""
        self._runtime = runtime

    @property
    def runtime(self) -> Any:
        """The bound runtime, else the simulation context's (None when nothing runs)."""
        if self._runtime is not None:
            return self._runtime
        from runtime.compat.simulation_context import current_context

        ctx = current_context()
        return None if ctx is None else ctx.gripper_runtime

    def open_gripper(self, path: str) -> bool:
        """Request Open; False for an unknown gripper."""
        runtime = self.runtime
        return bool(runtime and runtime.open_gripper(str(path)))

    def close_gripper(self, path: str) -> bool:
        """Request Closed; False for an unknown gripper."""
        runtime = self.runtime
        return bool(runtime and runtime.close_gripper(str(path)))

    def set_gripper_action(self, path: str, action: float) -> bool:
        """``< -0.3`` opens, ``> 0.3`` closes, otherwise False."""
        runtime = self.runtime
        return bool(runtime and runtime.set_gripper_action(str(path), action))

    def get_gripper_status(self, path: str) -> GripperStatus:
        """In-memory status; unknown: error ``Gripper not found: <path>`` and Open."""
        runtime = self.runtime
        if runtime is None:
            _LOG.error(f"Gripper not found: {path}")
            return GripperStatus.Open
        return GripperStatus[runtime.get_gripper_status(str(path))]

    def get_gripped_objects(self, path: str) -> list[str]:
        """Gripped rigid-body paths; ``[]`` when unknown."""
        runtime = self.runtime
        return [] if runtime is None else runtime.get_gripped_objects(str(path))

    def set_write_to_usd(self, flag: bool) -> bool:
        """Global USD write-back switch; True when a runtime is running."""
        runtime = self.runtime
        return bool(runtime and runtime.set_write_to_usd(bool(flag)))

    def open_gripper_batch(self, paths: Sequence[str]) -> list[bool]:
        """``open_gripper`` per path."""
        return [self.open_gripper(p) for p in paths]

    def close_gripper_batch(self, paths: Sequence[str]) -> list[bool]:
        """``close_gripper`` per path."""
        return [self.close_gripper(p) for p in paths]

    def set_gripper_action_batch(
        self, paths: Sequence[str], actions: Sequence[float]
    ) -> list[bool]:
        """``set_gripper_action`` per path; mismatched lengths give ``[]``."""
        if len(paths) != len(actions):
            return []
        return [self.set_gripper_action(p, a) for p, a in zip(paths, actions, strict=True)]

    def get_gripper_status_batch(self, paths: Sequence[str]) -> list[int]:
        """Status integers per path."""
        return [int(self.get_gripper_status(p)) for p in paths]

    def get_gripped_objects_batch(self, paths: Sequence[str]) -> list[list[str]]:
        """``get_gripped_objects`` per path."""
        return [self.get_gripped_objects(p) for p in paths]


_INTERFACE = SurfaceGripperInterface()


def acquire_surface_gripper_interface() -> SurfaceGripperInterface:
    """The process-wide surface-gripper interface."""
    return _INTERFACE


def create_surface_gripper(stage: Usd.Stage, parent_path: str) -> Usd.Prim:
    """Define a gripper at the first free path ``<parent>/SurfaceGripper``, ``..._01``, ...

    Args:
        stage: the stage.
        parent_path: parent prim path.

    Returns:
        The new ``IsaacSurfaceGripper`` prim.
    """
    from runtime.schema.authoring import create_surface_gripper as _create

    base = f"{str(parent_path).rstrip('/')}/SurfaceGripper"
    path, n = base, 0
    while stage.GetPrimAtPath(path).IsValid():
        n += 1
        path = f"{base}_{n:02d}"
    return _create(stage, path)


_PROPERTIES = (
    ("max_grip_distance", "isaac:maxGripDistance"),
    ("coaxial_force_limit", "isaac:coaxialForceLimit"),
    ("shear_force_limit", "isaac:shearForceLimit"),
    ("retry_interval", "isaac:retryInterval"),
)


class GripperView:
    """Several grippers by path regex (the reference's ``GripperView`` helper).

    Args:
        paths: a regular expression matched (fully) against the paths of the stage's
            ``IsaacSurfaceGripper`` prims, or a list of paths.
        max_grip_distance: per-gripper values to author (one per gripper; None leaves them).
        coaxial_force_limit: per-gripper values.
        shear_force_limit: per-gripper values.
        retry_interval: per-gripper values.
        stage: the stage (default: :func:`runtime.compat.get_current_stage`).
        interface: the interface whose runtime runs the grippers (default: the acquired one,
            which serves the simulation context's running grippers).

    Raises:
        ValueError: a property list whose length differs from the number of grippers.
    """

    def __init__(
        self,
        paths: str | Sequence[str],
        max_grip_distance: Sequence[float] | None = None,
        coaxial_force_limit: Sequence[float] | None = None,
        shear_force_limit: Sequence[float] | None = None,
        retry_interval: Sequence[float] | None = None,
        *,
        stage: Usd.Stage | None = None,
        interface: SurfaceGripperInterface | None = None,
    ) -> None:
        from runtime.compat._stage import resolve_stage

        self.stage = resolve_stage(stage)
        self.interface = interface or _INTERFACE
        if isinstance(paths, str):
            pattern = re.compile(paths)
            self.paths = [
                str(p.GetPath())
                for p in self.stage.Traverse()
                if p.GetTypeName() == "IsaacSurfaceGripper" and pattern.fullmatch(str(p.GetPath()))
            ]
        else:
            self.paths = [str(p) for p in paths]
        self.set_surface_gripper_properties(
            max_grip_distance, coaxial_force_limit, shear_force_limit, retry_interval
        )

    @property
    def count(self) -> int:
        """Number of grippers."""
        return len(self.paths)

    def _selected(self, indices: Sequence[int] | None) -> list[int]:
        """The gripper indices ``indices`` names (all when None).

        Raises:
            IndexError: an index outside ``0 .. count - 1``.
        """
        if indices is None:
            return list(range(self.count))
        chosen = [int(i) for i in np.asarray(indices).reshape(-1)]
        for i in chosen:
            if not 0 <= i < self.count:
                raise IndexError(f"GripperView: index {i} outside 0..{self.count - 1}")
        return chosen

    def set_surface_gripper_properties(
        self,
        max_grip_distance: Sequence[float] | None = None,
        coaxial_force_limit: Sequence[float] | None = None,
        shear_force_limit: Sequence[float] | None = None,
        retry_interval: Sequence[float] | None = None,
        indices: Sequence[int] | None = None,
    ) -> None:
        """Author per-gripper values and make a running gripper runtime re-read them.

        Args:
            max_grip_distance: values, one per selected gripper (None leaves them).
            coaxial_force_limit: values, one per selected gripper.
            shear_force_limit: values, one per selected gripper.
            retry_interval: values, one per selected gripper.
            indices: the grippers to set (default: all, in order).

        Raises:
            ValueError: a list whose length differs from the number of selected grippers.
        """
        chosen = self._selected(indices)
        given = {
            "max_grip_distance": max_grip_distance,
            "coaxial_force_limit": coaxial_force_limit,
            "shear_force_limit": shear_force_limit,
            "retry_interval": retry_interval,
        }
        for key, attr_name in _PROPERTIES:
            vals = given[key]
            if vals is None:
                continue
            vals = list(np.asarray(vals, dtype=float).reshape(-1))
            if len(vals) != len(chosen):
                raise ValueError(f"{key} must have one value per gripper ({len(chosen)})")
            for i, v in zip(chosen, vals, strict=True):
                prim = self.stage.GetPrimAtPath(self.paths[i])
                attr = prim.GetAttribute(attr_name) or prim.CreateAttribute(
                    attr_name, Sdf.ValueTypeNames.Float
                )
                attr.Set(float(v))
        runtime = self.interface.runtime
        if runtime is not None and any(v is not None for v in given.values()):
            for i in chosen:
                runtime.reload_config(self.paths[i])

    def get_surface_gripper_properties(
        self, indices: Sequence[int] | None = None
    ) -> tuple[list, list, list, list]:
        """(max grip distances, coaxial limits, shear limits, retry intervals); None unauthored."""
        chosen = self._selected(indices)
        out = []
        for _key, attr_name in _PROPERTIES:
            column = []
            for i in chosen:
                attr = self.stage.GetPrimAtPath(self.paths[i]).GetAttribute(attr_name)
                column.append(attr.Get() if attr and attr.HasAuthoredValue() else None)
            out.append(column)
        return tuple(out)  # type: ignore[return-value]

    def apply_gripper_action(
        self, values: Sequence[float], indices: Sequence[int] | None = None
    ) -> None:
        """Send ``values[i]`` to each selected gripper ``i``.

        Raises:
            ValueError: ``len(values)`` differs from the number of grippers.
        """
        if len(values) != self.count:
            raise ValueError("Length of values must match number of grippers")
        for i in self._selected(indices):
            self.interface.set_gripper_action(self.paths[i], float(values[i]))

    def get_surface_gripper_status(self, indices: Sequence[int] | None = None) -> list[int]:
        """Status integers (0 Open, 1 Closing, 2 Closed) of the selected grippers."""
        return self.interface.get_gripper_status_batch(
            [self.paths[i] for i in self._selected(indices)]
        )

    def get_gripped_objects(self, indices: Sequence[int] | None = None) -> list[list[str]]:
        """Gripped bodies per selected gripper."""
        return self.interface.get_gripped_objects_batch(
            [self.paths[i] for i in self._selected(indices)]
        )
