"""Isaac Lab's ray-pattern cfg classes (``isaaclab.sensors.ray_caster.patterns``) over simrt.

Same class names, fields and defaults; ``func`` is simrt's pattern function, returning
``(ray_starts, ray_directions)`` as NumPy arrays (R, 3) in the sensor frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from runtime.sensors.lab.config import (
    BpearlPattern,
    GridPattern,
    LidarPattern,
    PinholeCameraPattern,
)
from runtime.sensors.lab.patterns import (
    bpearl_pattern,
    grid_pattern,
    lidar_pattern,
    pinhole_camera_pattern,
)

__all__ = [
    "BpearlPatternCfg",
    "GridPatternCfg",
    "LidarPatternCfg",
    "PinholeCameraPatternCfg",
    "bpearl_pattern",
    "grid_pattern",
    "lidar_pattern",
    "pinhole_camera_pattern",
]


@dataclass(kw_only=True)
class GridPatternCfg(GridPattern):
    """Isaac Lab's ``GridPatternCfg``: a grid of parallel rays (height scan)."""

    func: ClassVar = staticmethod(grid_pattern)


@dataclass(kw_only=True)
class LidarPatternCfg(LidarPattern):
    """Isaac Lab's ``LidarPatternCfg``: a spinning lidar."""

    func: ClassVar = staticmethod(lidar_pattern)


@dataclass(kw_only=True)
class BpearlPatternCfg(BpearlPattern):
    """Isaac Lab's ``BpearlPatternCfg``: the RS-Bpearl dome lidar."""

    func: ClassVar = staticmethod(bpearl_pattern)


@dataclass(kw_only=True)
class PinholeCameraPatternCfg(PinholeCameraPattern):
    """Isaac Lab's ``PinholeCameraPatternCfg`` (with ``from_intrinsic_matrix``)."""

    func: ClassVar = staticmethod(pinhole_camera_pattern)
