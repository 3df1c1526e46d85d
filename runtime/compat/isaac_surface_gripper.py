"""Isaac Sim's surface-gripper Python API (``isaacsim.robot.surface_gripper``, §2).

Served by :class:`~runtime.engine.surface_gripper.SurfaceGripperRuntime`
(surface-gripper.md).

The reference acquires one process-wide interface; here the interface reads from the runtime
given to :meth:`SurfaceGripperInterface.bind_runtime` (there is no global simulation)::

    grippers = SurfaceGripperRuntime(engine)
    iface = acquire_surface_gripper_interface()
    iface.bind_runtime(grippers)
    iface.close_gripper("/World/Robot/SurfaceGripper")
    iface.get_gripper_status("/World/Robot/SurfaceGripper")   # GripperStatus.Closed

Without a bound runtime every gripper is unknown (status Open with an error log, requests
False, gripped ``[]``), as before the reference's first physics step.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Sequence
from typing import Any

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
    """The ``_surface_gripper`` interface object (methods take the gripper prim path)."""

    def __init__(self) -> None:
        self._runtime: Any = None

    def bind_runtime(self, runtime: Any) -> None:
        """Serve requests from ``runtime`` (a ``SurfaceGripperRuntime``; None unbinds)."""
        self._runtime = runtime

    def open_gripper(self, path: str) -> bool:
        """Request Open; False for an unknown gripper."""
        return bool(self._runtime and self._runtime.open_gripper(str(path)))

    def close_gripper(self, path: str) -> bool:
        """Request Closed; False for an unknown gripper."""
        return bool(self._runtime and self._runtime.close_gripper(str(path)))

    def set_gripper_action(self, path: str, action: float) -> bool:
        """``< -0.3`` opens, ``> 0.3`` closes, otherwise False."""
        return bool(self._runtime and self._runtime.set_gripper_action(str(path), action))

    def get_gripper_status(self, path: str) -> GripperStatus:
        """In-memory status; unknown: error ``Gripper not found: <path>`` and Open."""
        if self._runtime is None:
            _LOG.error("Gripper not found: %s", path)
            return GripperStatus.Open
        return GripperStatus[self._runtime.get_gripper_status(str(path))]

    def get_gripped_objects(self, path: str) -> list[str]:
        """Gripped rigid-body paths; ``[]`` when unknown."""
        return [] if self._runtime is None else self._runtime.get_gripped_objects(str(path))

    def set_write_to_usd(self, flag: bool) -> bool:
        """Global USD write-back switch; True when a runtime is bound."""
        return bool(self._runtime and self._runtime.set_write_to_usd(bool(flag)))

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
        stage: the stage (default: :func:`runtime.compat.get_current_stage`).
        interface: the interface whose runtime runs the grippers (default: the acquired one).
        max_grip_distance: per-gripper values to author (lists; None leaves them).
        coaxial_force_limit: per-gripper values.
        shear_force_limit: per-gripper values.
        retry_interval: per-gripper values.

    Raises:
        ValueError: a property list whose length differs from the number of grippers.
    """

    def __init__(
        self,
        paths: str | Sequence[str],
        *,
        stage: Usd.Stage | None = None,
        interface: SurfaceGripperInterface | None = None,
        max_grip_distance: Sequence[float] | None = None,
        coaxial_force_limit: Sequence[float] | None = None,
        shear_force_limit: Sequence[float] | None = None,
        retry_interval: Sequence[float] | None = None,
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
            max_grip_distance=max_grip_distance,
            coaxial_force_limit=coaxial_force_limit,
            shear_force_limit=shear_force_limit,
            retry_interval=retry_interval,
        )

    @property
    def count(self) -> int:
        """Number of grippers."""
        return len(self.paths)

    def set_surface_gripper_properties(self, **values: Sequence[float] | None) -> None:
        """Author the given per-gripper lists and make a bound runtime re-read them.

        Raises:
            ValueError: a list whose length differs from :attr:`count`.
        """
        for key, attr_name in _PROPERTIES:
            vals = values.get(key)
            if vals is None:
                continue
            if len(vals) != self.count:
                raise ValueError(f"{key} must have one value per gripper ({self.count})")
            for path, v in zip(self.paths, vals, strict=True):
                prim = self.stage.GetPrimAtPath(path)
                attr = prim.GetAttribute(attr_name) or prim.CreateAttribute(
                    attr_name, Sdf.ValueTypeNames.Float
                )
                attr.Set(float(v))
        runtime = self.interface._runtime
        if runtime is not None:
            for path in self.paths:
                runtime.reload_config(path)

    def get_surface_gripper_properties(self) -> tuple[list, list, list, list]:
        """(max grip distances, coaxial limits, shear limits, retry intervals); None unauthored."""
        out = []
        for _key, attr_name in _PROPERTIES:
            column = []
            for path in self.paths:
                attr = self.stage.GetPrimAtPath(path).GetAttribute(attr_name)
                column.append(attr.Get() if attr and attr.HasAuthoredValue() else None)
            out.append(column)
        return tuple(out)  # type: ignore[return-value]

    def apply_gripper_action(
        self, values: Sequence[float], indices: Sequence[int] | None = None
    ) -> None:
        """Send ``values[i]`` to each selected gripper.

        Raises:
            ValueError: ``len(values)`` differs from the number of grippers.
        """
        if len(values) != self.count:
            raise ValueError("Length of values must match number of grippers")
        for i in range(self.count) if indices is None else indices:
            self.interface.set_gripper_action(self.paths[i], float(values[i]))

    def get_surface_gripper_status(self) -> list[int]:
        """Status integers (0 Open, 1 Closing, 2 Closed)."""
        return self.interface.get_gripper_status_batch(self.paths)

    def get_gripped_objects(self) -> list[list[str]]:
        """Gripped bodies per gripper."""
        return self.interface.get_gripped_objects_batch(self.paths)
