"""Ray patterns of Isaac Lab's ray casters: rays in the sensor frame.

Every function returns ``(ray_starts, ray_directions)``, both (R, 3) float64 in the sensor
frame (starts [m], unit directions), or raises ``ValueError`` naming the bad field. Angles
of the configs are degrees. The camera frame of :func:`pinhole_camera_pattern` is Isaac Lab's
"world" convention (x forward, y left, z up).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runtime.sensors.lab.config import (
    BpearlPattern,
    GridPattern,
    LidarPattern,
    PinholeCameraPattern,
    RayListPattern,
)

__all__ = [
    "bpearl_pattern",
    "grid_pattern",
    "intrinsic_matrix",
    "lidar_pattern",
    "pattern_rays",
    "pinhole_camera_pattern",
    "ray_list_pattern",
]


def _number(cfg: Any, name: str, positive: bool = True) -> float:
    value = getattr(cfg, name)
    if value is None:
        raise ValueError(f"{name}: is required")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name}: must be a number, got {value!r}")
    if not math.isfinite(value) or (positive and value <= 0.0):
        raise ValueError(f"{name}: must be finite{' and > 0' if positive else ''}, got {value!r}")
    return float(value)


def _pair(cfg: Any, name: str) -> tuple[float, float]:
    value = getattr(cfg, name)
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: must be two numbers, got {value!r}") from None
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"{name}: must be finite, got {value!r}")
    return a, b


def _unit(vectors: np.ndarray, name: str) -> np.ndarray:
    length = np.linalg.norm(vectors, axis=-1, keepdims=True)
    if not np.all(np.isfinite(length)) or np.any(length <= 0.0):
        raise ValueError(f"{name}: directions must be finite and non-zero")
    return vectors / length


def grid_pattern(cfg: GridPattern) -> tuple[np.ndarray, np.ndarray]:
    """Parallel rays from a grid in the sensor's xy plane (Isaac Lab's height scan).

    x runs over ``[-size[0] / 2, size[0] / 2]`` and y over ``[-size[1] / 2, size[1] / 2]`` in
    steps of ``resolution`` (the end included up to 1e-9 m); ``ordering`` ``"xy"``: x varies
    fastest, ``"yx"``: y fastest. Every ray points along ``direction``.
    """
    resolution = _number(cfg, "resolution")
    if cfg.size is None:
        raise ValueError("size: is required")
    length, width = _pair(cfg, "size")
    if length < 0.0 or width < 0.0:
        raise ValueError(f"size: must be >= 0, got {cfg.size!r}")
    if cfg.ordering not in ("xy", "yx"):
        raise ValueError(f"ordering: must be 'xy' or 'yx', got {cfg.ordering!r}")
    x = np.arange(-length / 2.0, length / 2.0 + 1.0e-9, resolution)
    y = np.arange(-width / 2.0, width / 2.0 + 1.0e-9, resolution)
    grid_x, grid_y = np.meshgrid(x, y, indexing="xy" if cfg.ordering == "xy" else "ij")
    starts = np.zeros((grid_x.size, 3))
    starts[:, 0] = grid_x.ravel()
    starts[:, 1] = grid_y.ravel()
    direction = _unit(np.asarray(cfg.direction, np.float64).reshape(1, 3), "direction")
    return starts, np.repeat(direction, grid_x.size, axis=0)


def lidar_pattern(cfg: LidarPattern) -> tuple[np.ndarray, np.ndarray]:
    """A spinning lidar's rays from the sensor origin (rows: channels, columns: azimuths).

    ``channels`` elevations evenly over ``vertical_fov_range``; ``ceil(horizontal span /
    horizontal_res) + 1`` azimuths evenly over ``horizontal_fov_range``, the last dropped
    when the span is 360 degrees (it would repeat the first).
    """
    channels = cfg.channels
    if isinstance(channels, bool) or not isinstance(channels, (int, np.integer)):
        raise ValueError(f"channels: must be an integer, got {channels!r}")
    if channels < 1:
        raise ValueError(f"channels: must be >= 1, got {channels}")
    if cfg.vertical_fov_range is None:
        raise ValueError("vertical_fov_range: is required")
    if cfg.horizontal_fov_range is None:
        raise ValueError("horizontal_fov_range: is required")
    v_min, v_max = _pair(cfg, "vertical_fov_range")
    h_min, h_max = _pair(cfg, "horizontal_fov_range")
    resolution = _number(cfg, "horizontal_res")
    vertical = np.linspace(v_min, v_max, int(channels))
    count = math.ceil((h_max - h_min) / resolution) + 1
    if count < 1:
        raise ValueError(f"horizontal_fov_range: {cfg.horizontal_fov_range!r} gives no rays")
    horizontal = np.linspace(h_min, h_max, count)
    if abs(abs(h_max - h_min) - 360.0) < 1e-6:
        horizontal = horizontal[:-1]
    v, h = np.meshgrid(np.radians(vertical), np.radians(horizontal), indexing="ij")
    directions = np.stack(
        (np.cos(v) * np.cos(h), np.cos(v) * np.sin(h), np.sin(v)), axis=-1
    ).reshape(-1, 3)
    return np.zeros_like(directions), directions


def bpearl_pattern(cfg: BpearlPattern) -> tuple[np.ndarray, np.ndarray]:
    """The RS-Bpearl's rays from the sensor origin.

    Azimuths every ``horizontal_res`` over ``horizontal_fov`` (from ``-fov / 2``, end
    excluded) for each of ``vertical_ray_angles`` (degrees from the sensor's -z axis),
    azimuth varying fastest; directions point downwards-outwards.
    """
    fov = _number(cfg, "horizontal_fov")
    resolution = _number(cfg, "horizontal_res")
    angles = np.asarray(cfg.vertical_ray_angles, np.float64).reshape(-1)
    if angles.size == 0 or not np.all(np.isfinite(angles)):
        raise ValueError("vertical_ray_angles: must be a non-empty list of finite numbers")
    azimuth = np.arange(-fov / 2.0, fov / 2.0, resolution)
    pitch, yaw = np.meshgrid(angles, azimuth, indexing="xy")
    pitch = np.radians(pitch.ravel()) + np.pi / 2.0
    yaw = np.radians(yaw.ravel())
    directions = -np.stack(
        (np.sin(pitch) * np.cos(yaw), np.sin(pitch) * np.sin(yaw), np.cos(pitch)), axis=-1
    )
    return np.zeros_like(directions), directions


def intrinsic_matrix(cfg: PinholeCameraPattern) -> np.ndarray:
    """The camera matrix ``[[fx, 0, cx], [0, fy, cy], [0, 0, 1]]`` [pixels], (3, 3) float64."""
    width, height = _image_size(cfg)
    focal = _number(cfg, "focal_length")
    horizontal = _number(cfg, "horizontal_aperture")
    vertical = (
        horizontal * height / width
        if cfg.vertical_aperture is None
        else _number(cfg, "vertical_aperture")
    )
    f_x = width * focal / horizontal
    f_y = height * focal / vertical
    c_x = _number(cfg, "horizontal_aperture_offset", positive=False) * f_x + width / 2.0
    c_y = _number(cfg, "vertical_aperture_offset", positive=False) * f_y + height / 2.0
    return np.array([[f_x, 0.0, c_x], [0.0, f_y, c_y], [0.0, 0.0, 1.0]])


def _image_size(cfg: PinholeCameraPattern) -> tuple[int, int]:
    for name in ("width", "height"):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}: must be a positive integer, got {value!r}")
    return int(cfg.width), int(cfg.height)


def pinhole_camera_pattern(
    cfg: PinholeCameraPattern, matrix: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One ray per pixel through the pixel's corner (u, v) = (column, row), row-major.

    The pixel (u, v, 1) goes through the inverse camera matrix into the optical frame
    (x right, y down, z forward) and is turned into the "world" convention
    (x forward, y left, z up): ``(z, -x, -y)``.

    Args:
        cfg: the pattern.
        matrix: a camera matrix (3, 3) to use instead of the pattern's.
    """
    width, height = _image_size(cfg)
    k = intrinsic_matrix(cfg) if matrix is None else np.asarray(matrix, np.float64)
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    pixels = np.stack((u.ravel(), v.ravel(), np.ones(u.size)), axis=0)
    optical = np.linalg.solve(k, pixels)
    directions = np.stack((optical[2], -optical[0], -optical[1]), axis=-1)
    directions = _unit(directions, "pinhole")
    return np.zeros_like(directions), directions


def ray_list_pattern(cfg: RayListPattern) -> tuple[np.ndarray, np.ndarray]:
    """User-given rays (directions normalised)."""
    try:
        starts = np.asarray(cfg.ray_starts, np.float64).reshape(-1, 3)
        directions = np.asarray(cfg.ray_directions, np.float64).reshape(-1, 3)
    except (TypeError, ValueError):
        raise ValueError("ray_starts / ray_directions: must be (R, 3) arrays") from None
    if starts.shape != directions.shape:
        raise ValueError(f"ray_starts: shape {starts.shape} != ray_directions {directions.shape}")
    if not np.all(np.isfinite(starts)):
        raise ValueError("ray_starts: must be finite")
    return starts, _unit(directions, "ray_directions")


_PATTERNS = {
    GridPattern: grid_pattern,
    LidarPattern: lidar_pattern,
    BpearlPattern: bpearl_pattern,
    PinholeCameraPattern: pinhole_camera_pattern,
    RayListPattern: ray_list_pattern,
}


def pattern_rays(cfg: Any) -> tuple[np.ndarray, np.ndarray]:
    """Rays of any pattern config (subclasses included).

    Raises:
        ValueError: unknown pattern type, a bad field, or no ray at all.
    """
    for kind, function in _PATTERNS.items():
        if isinstance(cfg, kind):
            starts, directions = function(cfg)
            break
    else:
        raise ValueError(f"unknown pattern {type(cfg).__name__}")
    if starts.shape[0] == 0:
        raise ValueError(f"{type(cfg).__name__} has no rays")
    return np.ascontiguousarray(starts), np.ascontiguousarray(directions)
