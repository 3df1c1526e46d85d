"""What every built-in sensor kind shares: :class:`SensorBase` and the IMU modes.

The sensor kinds (:mod:`~runtime.sensors.contact`, :mod:`~runtime.sensors.imu`,
:mod:`~runtime.sensors.raycast`, :mod:`~runtime.sensors.joint_state`,
:mod:`~runtime.sensors.effort`) build on this module and the loop
(:class:`~runtime.sensors.runtime.SensorRuntime`) builds on them; this module imports
neither.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["IMU_MODES", "SensorBase"]

LOGGER = logging.getLogger("runtime.sensors")

IMU_MODES = ("isaac", "physical")
"""IMU evaluation modes: Isaac parity (default) or the physical model (lever arm, rotating
frame)."""


class SensorBase:
    """Common state of the built-in sensors: prim path, flags and the disabled reason.

    Attributes:
        prim_path: USD path of the sensor prim (or of the joint / articulation root).
        disabled_reason: why the loop disabled the sensor, or None.
    """

    kind = "sensor"

    def __init__(self, prim_path: str) -> None:
        self.prim_path = str(prim_path)
        self.disabled_reason: str | None = None
        self._enabled = True
        self._runtime: Any = None  # the SensorRuntime, once bound

    @property
    def enabled(self) -> bool:
        """User-side enable flag; readings are invalid while False."""
        return self._enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        value = bool(value)
        changed = value != self._enabled
        self._enabled = value
        if changed:
            self._on_enabled_changed()

    def _on_enabled_changed(self) -> None:
        """Hook for subclasses (update batch flags)."""

    @property
    def is_bound(self) -> bool:
        """True once :meth:`bind` succeeded and the sensor is not disabled."""
        return self._runtime is not None and self.disabled_reason is None

    def disable(self, reason: str) -> None:
        """Disable the sensor because of bad configuration; logs ``reason`` once.

        Args:
            reason: human-readable reason naming the prim.
        """
        if self.disabled_reason is None:
            LOGGER.error("%s", reason)
        self.disabled_reason = reason
        self._on_enabled_changed()
