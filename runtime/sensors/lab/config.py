"""Configuration of the lab sensors (our Python API; fields and defaults as Isaac Lab's).

Every config is a keyword-only dataclass. Field names, meanings and defaults follow Isaac
Lab's ``isaaclab.sensors`` cfg classes (the ``...Cfg`` classes of
``runtime.compat.isaaclab.sensors`` are these with Isaac Lab's names). Lengths are metres,
angles of patterns degrees (as Isaac Lab's), quaternions (w, x, y, z), periods seconds.

A value left ``None`` where Isaac Lab has a required field (``prim_path``, a grid's
``resolution`` ...) disables the sensor with a reason naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BPEARL_VERTICAL_RAY_ANGLES",
    "BpearlPattern",
    "CameraOffset",
    "ContactSensorConfig",
    "FrameTarget",
    "FrameTransformerConfig",
    "GridPattern",
    "ImuConfig",
    "JointWrenchConfig",
    "LidarPattern",
    "Offset",
    "PinholeCameraPattern",
    "RayCasterCameraConfig",
    "RayCasterConfig",
    "RayListPattern",
]

BPEARL_VERTICAL_RAY_ANGLES = tuple(89.5 - 2.8125 * k for k in range(32))
"""The RS-Bpearl's 32 beam elevations [deg]: 89.5 down to 2.3125 in steps of 2.8125."""


@dataclass(kw_only=True)
class Offset:
    """A sensor frame in its body's frame: position [m] and orientation (w, x, y, z)."""

    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rot: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)


@dataclass(kw_only=True)
class CameraOffset(Offset):
    """A camera frame in its body's frame; ``rot`` is given in ``convention``.

    ``"ros"``: x right, y down, z forward; ``"opengl"``: x right, y up, z backward;
    ``"world"``: x forward, y left, z up.
    """

    convention: str = "ros"


@dataclass(kw_only=True)
class _SensorConfig:
    prim_path: str | None = None
    """Body (or bodies: regex, full match) the sensor is attached to."""
    update_period: float = 0.0
    """Seconds between updates (0: every call)."""
    history_length: int = 0
    """Past updates kept in the ``*_history`` fields (index 0 = latest)."""


@dataclass(kw_only=True)
class ContactSensorConfig(_SensorConfig):
    """Contact forces on bodies, per partner, with air / contact times."""

    track_pose: bool = False
    track_contact_points: bool = False
    track_friction_forces: bool = False
    max_contact_data_count_per_prim: int = 4
    track_air_time: bool = False
    force_threshold: float = 1.0
    filter_prim_paths_expr: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class ImuConfig(_SensorConfig):
    """Pose, body-frame velocities and accelerations of a point of a body."""

    offset: Offset = field(default_factory=Offset)
    gravity_bias: tuple[float, float, float] = (0.0, 0.0, 9.81)


@dataclass(kw_only=True)
class GridPattern:
    """A grid of parallel rays: ``size`` (length x, width y) [m] at ``resolution`` [m]."""

    resolution: float | None = None
    size: tuple[float, float] | None = None
    direction: tuple[float, float, float] = (0.0, 0.0, -1.0)
    ordering: str = "xy"


@dataclass(kw_only=True)
class LidarPattern:
    """A spinning lidar: ``channels`` rows, columns every ``horizontal_res`` degrees.

    Rows span ``vertical_fov_range``, columns ``horizontal_fov_range`` [deg].
    """

    channels: int | None = None
    vertical_fov_range: tuple[float, float] | None = None
    horizontal_fov_range: tuple[float, float] | None = None
    horizontal_res: float | None = None


@dataclass(kw_only=True)
class BpearlPattern:
    """The RS-Bpearl dome lidar."""

    horizontal_fov: float = 360.0
    horizontal_res: float = 10.0
    vertical_ray_angles: tuple[float, ...] = BPEARL_VERTICAL_RAY_ANGLES


@dataclass(kw_only=True)
class PinholeCameraPattern:
    """A pinhole camera's pixel rays (focal length and apertures in the same unit, e.g. mm)."""

    focal_length: float = 24.0
    horizontal_aperture: float = 20.955
    vertical_aperture: float | None = None
    horizontal_aperture_offset: float = 0.0
    vertical_aperture_offset: float = 0.0
    width: int | None = None
    height: int | None = None

    @classmethod
    def from_intrinsic_matrix(
        cls,
        intrinsic_matrix: Any,
        width: int,
        height: int,
        focal_length: float = 24.0,
    ) -> PinholeCameraPattern:
        """The pattern of a camera matrix ``[fx, 0, cx, 0, fy, cy, 0, 0, 1]`` (row-major).

        Args:
            intrinsic_matrix: 9 numbers, or a 3 x 3 nested sequence [pixels].
            width: image width [pixels].
            height: image height [pixels].
            focal_length: focal length to express the apertures with.
        """
        flat = [float(v) for row in intrinsic_matrix for v in (row if _is_seq(row) else [row])]
        if len(flat) != 9:
            raise ValueError(f"intrinsic_matrix must have 9 entries, got {len(flat)}")
        f_x, c_x, f_y, c_y = flat[0], flat[2], flat[4], flat[5]
        if f_x <= 0.0 or f_y <= 0.0:
            raise ValueError(f"intrinsic_matrix: focal lengths must be > 0, got {f_x}, {f_y}")
        return cls(
            focal_length=focal_length,
            horizontal_aperture=width * focal_length / f_x,
            vertical_aperture=height * focal_length / f_y,
            horizontal_aperture_offset=(c_x - width / 2) / f_x,
            vertical_aperture_offset=(c_y - height / 2) / f_y,
            width=width,
            height=height,
        )


@dataclass(kw_only=True)
class RayListPattern:
    """User-given rays: starts [m] and directions, both (R, 3) in the sensor frame."""

    ray_starts: Any = None
    ray_directions: Any = None


@dataclass(kw_only=True)
class RayCasterConfig(_SensorConfig):
    """Rays cast from a body against the collision geometry (static and moving).

    ``mesh_prim_paths``: prim path expressions of the colliders rays may hit (a collider
    counts when it or an ancestor matches); empty: every collider of the stage.
    """

    mesh_prim_paths: list[str] = field(default_factory=list)
    offset: Offset = field(default_factory=Offset)
    ray_alignment: str = "base"
    pattern_cfg: Any = None
    max_distance: float = 1e6
    drift_range: tuple[float, float] = (0.0, 0.0)
    ray_cast_drift_range: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {"x": (0.0, 0.0), "y": (0.0, 0.0), "z": (0.0, 0.0)}
    )
    seed: int = 0
    """Seed of the drift draws (ours; Isaac Lab uses torch's global generator)."""


@dataclass(kw_only=True)
class RayCasterCameraConfig(RayCasterConfig):
    """A depth camera made of rays: images of the pinhole pattern's pixels."""

    offset: CameraOffset = field(default_factory=CameraOffset)
    data_types: list[str] = field(default_factory=lambda: ["distance_to_image_plane"])
    depth_clipping_behavior: str = "none"
    pattern_cfg: Any = None


@dataclass(kw_only=True)
class FrameTarget:
    """A target frame: body path expression, name (default: the body's name), offset."""

    prim_path: str | None = None
    name: str | None = None
    offset: Offset = field(default_factory=Offset)


@dataclass(kw_only=True)
class FrameTransformerConfig(_SensorConfig):
    """Poses of target frames relative to a source frame (``prim_path`` + offset)."""

    source_frame_offset: Offset = field(default_factory=Offset)
    target_frames: list[FrameTarget] = field(default_factory=list)


@dataclass(kw_only=True)
class JointWrenchConfig(_SensorConfig):
    """6-axis force / torque of the joints into the bodies matched by ``prim_path``."""


def _is_seq(value: Any) -> bool:
    return hasattr(value, "__len__") and not isinstance(value, str)
