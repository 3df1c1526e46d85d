"""Sensors as robot learning uses them (Isaac Lab's ``isaaclab.sensors``) over MuJoCo.

Each sensor is built once from a ``MujocoEngine`` (or a plain ``mujoco.MjModel``) and a
config, then updated from a list of N ``mujoco.MjData`` of that model (N worlds):
``sensor.update(datas, dt)``. ``sensor.data`` holds NumPy arrays with Isaac Lab's field
names and shapes, env axis first. See docs/guides/isaaclab-sensors.md.
"""

from runtime.sensors.lab.base import LabConfigError, LabSensor
from runtime.sensors.lab.bodies import BodyIndex
from runtime.sensors.lab.camera import RayCasterCamera, RayCasterCameraData
from runtime.sensors.lab.config import (
    BpearlPattern,
    CameraOffset,
    ContactSensorConfig,
    FrameTarget,
    FrameTransformerConfig,
    GridPattern,
    ImuConfig,
    JointWrenchConfig,
    LidarPattern,
    Offset,
    PinholeCameraPattern,
    RayCasterCameraConfig,
    RayCasterConfig,
    RayListPattern,
)
from runtime.sensors.lab.contact import ContactSensor, ContactSensorData
from runtime.sensors.lab.discovery import (
    LabSensorSpec,
    discover_lab_sensors,
    make_lab_sensor,
    make_lab_sensors,
)
from runtime.sensors.lab.frame_transformer import FrameTransformer, FrameTransformerData
from runtime.sensors.lab.imu import Imu, ImuData
from runtime.sensors.lab.joint_wrench import JointWrenchData, JointWrenchSensor
from runtime.sensors.lab.ray_caster import RayCaster, RayCasterData, build_ray_scene

__all__ = [
    "BodyIndex",
    "BpearlPattern",
    "CameraOffset",
    "ContactSensor",
    "ContactSensorConfig",
    "ContactSensorData",
    "FrameTarget",
    "FrameTransformer",
    "FrameTransformerConfig",
    "FrameTransformerData",
    "GridPattern",
    "Imu",
    "ImuConfig",
    "ImuData",
    "JointWrenchConfig",
    "JointWrenchData",
    "JointWrenchSensor",
    "LabConfigError",
    "LabSensor",
    "LabSensorSpec",
    "discover_lab_sensors",
    "make_lab_sensor",
    "make_lab_sensors",
    "LidarPattern",
    "Offset",
    "PinholeCameraPattern",
    "RayCaster",
    "RayCasterCamera",
    "RayCasterCameraConfig",
    "RayCasterCameraData",
    "RayCasterData",
    "build_ray_scene",
    "RayCasterConfig",
    "RayListPattern",
]
