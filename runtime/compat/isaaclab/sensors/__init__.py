"""Isaac Lab's sensor cfg classes over simrt: ``runtime.compat.isaaclab.sensors``.

Porting rule: ``from isaaclab.sensors import ContactSensorCfg, ImuCfg, RayCasterCfg,
RayCasterCameraCfg, FrameTransformerCfg, patterns`` becomes
``from runtime.compat.isaaclab.sensors import ...``. The cfg classes have Isaac Lab's names,
fields and defaults (``OffsetCfg`` / ``FrameCfg`` nested as in Isaac Lab); a cfg becomes a
sensor with ``cfg.class_type(engine, cfg, num_envs)`` or
``runtime.sensors.lab.make_lab_sensor`` (simrt's sensors need the MuJoCo model, which Isaac
Lab's scene supplies implicitly). The data classes are simrt's, with Isaac Lab's field
names and shapes (NumPy arrays, env axis first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from runtime.compat.isaaclab.sensors import patterns
from runtime.sensors.lab import (
    CameraOffset,
    ContactSensor,
    ContactSensorConfig,
    ContactSensorData,
    FrameTarget,
    FrameTransformer,
    FrameTransformerConfig,
    FrameTransformerData,
    Imu,
    ImuConfig,
    ImuData,
    Offset,
    RayCaster,
    RayCasterCamera,
    RayCasterCameraConfig,
    RayCasterCameraData,
    RayCasterConfig,
    RayCasterData,
)

__all__ = [
    "ContactSensor",
    "ContactSensorCfg",
    "ContactSensorData",
    "FrameTransformer",
    "FrameTransformerCfg",
    "FrameTransformerData",
    "Imu",
    "ImuCfg",
    "ImuData",
    "OffsetCfg",
    "RayCaster",
    "RayCasterCamera",
    "RayCasterCameraCfg",
    "RayCasterCameraData",
    "RayCasterCfg",
    "RayCasterData",
    "patterns",
]

OffsetCfg = Offset


@dataclass(kw_only=True)
class ContactSensorCfg(ContactSensorConfig):
    """Isaac Lab's ``ContactSensorCfg``."""

    debug_vis: bool = False
    visualizer_cfg: Any = None
    class_type: ClassVar = ContactSensor


@dataclass(kw_only=True)
class ImuCfg(ImuConfig):
    """Isaac Lab's ``ImuCfg`` (``ImuCfg.OffsetCfg``: pos, rot)."""

    OffsetCfg: ClassVar = Offset
    debug_vis: bool = False
    visualizer_cfg: Any = None
    class_type: ClassVar = Imu


@dataclass(kw_only=True)
class RayCasterCfg(RayCasterConfig):
    """Isaac Lab's ``RayCasterCfg`` (``RayCasterCfg.OffsetCfg``: pos, rot)."""

    OffsetCfg: ClassVar = Offset
    attach_yaw_only: bool | None = None
    debug_vis: bool = False
    visualizer_cfg: Any = None
    class_type: ClassVar = RayCaster

    def __post_init__(self) -> None:
        if self.attach_yaw_only is not None:  # Isaac Lab's deprecated switch
            self.ray_alignment = "yaw" if self.attach_yaw_only else "base"


@dataclass(kw_only=True)
class RayCasterCameraCfg(RayCasterCameraConfig):
    """Isaac Lab's ``RayCasterCameraCfg`` (``OffsetCfg``: pos, rot, convention)."""

    OffsetCfg: ClassVar = CameraOffset
    debug_vis: bool = False
    visualizer_cfg: Any = None
    class_type: ClassVar = RayCasterCamera


@dataclass(kw_only=True)
class FrameTransformerCfg(FrameTransformerConfig):
    """Isaac Lab's ``FrameTransformerCfg`` (``OffsetCfg``; ``FrameCfg``: prim_path, name)."""

    OffsetCfg: ClassVar = Offset
    FrameCfg: ClassVar = FrameTarget
    debug_vis: bool = False
    visualizer_cfg: Any = None
    class_type: ClassVar = FrameTransformer
