"""The raycast sensor's reading (docs/sensors/raycast.md#outputs)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

LOGGER = logging.getLogger("runtime.sensors")

__all__ = ["RaycastReading"]


def _empty_rows() -> np.ndarray:
    return np.zeros((0, 3), np.float32)


@dataclass(frozen=True)
class RaycastReading:
    """One raycast reading (docs/sensors/raycast.md#outputs); arrays are float32 snapshots.

    Attributes:
        ray_count: ``numRays`` (0 when invalid).
        depths: distance from each ray origin [stage units], ``maxRange`` on a miss or when
            the ray did not fire this step, shape (N,), float32.
        hit_positions: hit points in the SENSOR or WORLD frame (per
            ``outputFrameOfReference``), zeros on a miss, shape (N, 3), float32.
        hit_normals: unit hit normals in the same frame, zeros on a miss, shape (N, 3).
        hit_prim_paths: USD path of the hit actor (rigid body, or the collider prim of a
            static collider) per ray, ``""`` on a miss; empty when ``reportHitPrimPaths``
            is false.
        ray_origins_world: ray origins, world, the sensor position for rays that did not
            fire, shape (N, 3), float32.
        ray_end_points_world: hit point, ``origin + direction * maxRange`` on a miss, the
            sensor position for rays that did not fire, shape (N, 3), float32.
        time: ``float32(t_k)`` of the producing step [s]; 0 when invalid.
        step: physics step counter of the producing step; 0 when invalid.
        is_valid: see docs/sensors/index.md#validity.
    """

    ray_count: int = 0
    depths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    hit_positions: np.ndarray = field(default_factory=_empty_rows)
    hit_normals: np.ndarray = field(default_factory=_empty_rows)
    hit_prim_paths: tuple[str, ...] = ()
    ray_origins_world: np.ndarray = field(default_factory=_empty_rows)
    ray_end_points_world: np.ndarray = field(default_factory=_empty_rows)
    time: float = 0.0
    step: int = 0
    is_valid: bool = False

    @classmethod
    def _make_valid(
        cls,
        ray_count: int,
        depths: np.ndarray,
        hit_positions: np.ndarray,
        hit_normals: np.ndarray,
        hit_prim_paths: tuple[str, ...],
        ray_origins_world: np.ndarray,
        ray_end_points_world: np.ndarray,
        time: float,
        step: int,
    ) -> RaycastReading:
        """A valid reading built without the frozen-dataclass field-by-field setattr cost."""
        reading = object.__new__(cls)
        reading.__dict__.update(
            ray_count=ray_count,
            depths=depths,
            hit_positions=hit_positions,
            hit_normals=hit_normals,
            hit_prim_paths=hit_prim_paths,
            ray_origins_world=ray_origins_world,
            ray_end_points_world=ray_end_points_world,
            time=time,
            step=step,
            is_valid=True,
        )
        return reading

    @property
    def hits(self) -> np.ndarray:
        """Rays that hit something (``depth < maxRange`` is the reference's only signal).

        Returns:
            Boolean mask, shape (N,).
        """
        if self.depths.size == 0:
            return np.zeros(0, bool)
        return np.linalg.norm(self.hit_normals, axis=1) > 0.0
