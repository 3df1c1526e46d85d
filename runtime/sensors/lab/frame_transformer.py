"""Isaac Lab's frame transformer: poses of target frames in a source frame.

Each frame is a body frame moved by an offset (position [m] and orientation in the body
frame). Poses are read from MuJoCo's ``xpos`` / ``xquat``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime.sensors.lab._math import (
    quat_conjugate,
    quat_multiply,
    quat_rotate,
    quat_rotate_inverse,
)
from runtime.sensors.lab.base import LabSensor
from runtime.sensors.lab.imu import check_offset

__all__ = ["FrameTransformer", "FrameTransformerData"]


@dataclass
class FrameTransformerData:
    """Frame poses of N worlds and M targets (positions [m], quaternions (w, x, y, z)).

    Attributes:
        target_frame_names: the M target names.
        target_pos_source: target positions in the source frame, (N, M, 3).
        target_quat_source: target orientations in the source frame, (N, M, 4).
        target_pos_w: target positions, world, (N, M, 3).
        target_quat_w: target orientations, world, (N, M, 4).
        source_pos_w: source position, world, (N, 3).
        source_quat_w: source orientation, world, (N, 4).
    """

    target_frame_names: list[str]
    target_pos_source: np.ndarray
    target_quat_source: np.ndarray
    target_pos_w: np.ndarray
    target_quat_w: np.ndarray
    source_pos_w: np.ndarray
    source_quat_w: np.ndarray

    @classmethod
    def zeros(cls, n: int, names: list[str]) -> FrameTransformerData:
        """Arrays of N worlds and the named targets."""
        m = len(names)
        identity = np.array([1.0, 0.0, 0.0, 0.0])
        return cls(
            target_frame_names=list(names),
            target_pos_source=np.zeros((n, m, 3)),
            target_quat_source=np.tile(identity, (n, m, 1)),
            target_pos_w=np.zeros((n, m, 3)),
            target_quat_w=np.tile(identity, (n, m, 1)),
            source_pos_w=np.zeros((n, 3)),
            source_quat_w=np.tile(identity, (n, 1)),
        )


class FrameTransformer(LabSensor):
    """Target frames (``config.target_frames``) relative to the source (``config.prim_path``).

    Args:
        source: ``MujocoEngine`` or ``mujoco.MjModel``.
        config: :class:`~runtime.sensors.lab.config.FrameTransformerConfig`.
        num_envs: worlds per :meth:`update`.

    Attributes:
        data: :class:`FrameTransformerData`.
    """

    kind = "frame_transformer"
    _history_fields = ("target_pos_source", "target_quat_source")

    def _setup(self) -> None:
        cfg = self.config
        if cfg.prim_path is None:
            raise self.fail("prim_path", "is required")
        try:
            found = self.bodies.match(cfg.prim_path)
        except ValueError as error:
            raise self.fail("prim_path", str(error)) from None
        if len(found) != 1:
            raise self.fail("prim_path", f"must match exactly one body, matches {len(found)}")
        self._source_entity = found[0]
        self._source_offset = check_offset(self, cfg.source_frame_offset, "source_frame_offset")
        if not cfg.target_frames:
            raise self.fail("target_frames", "is empty")
        names: list[str] = []
        self._targets: list[tuple[int, np.ndarray, np.ndarray]] = []
        for i, frame in enumerate(cfg.target_frames):
            field = f"target_frames[{i}]"
            if frame.prim_path is None:
                raise self.fail(f"{field}.prim_path", "is required")
            try:
                matched = self.bodies.match(frame.prim_path)
            except ValueError as error:
                raise self.fail(f"{field}.prim_path", str(error)) from None
            if not matched:
                raise self.fail(f"{field}.prim_path", f"{frame.prim_path!r} matches no body")
            if frame.name is not None and len(matched) > 1:
                raise self.fail(f"{field}.name", f"names {len(matched)} bodies")
            pos, rot = check_offset(self, frame.offset, f"{field}.offset")
            for entity in matched:
                name = frame.name or self.bodies.name_of(entity)
                if name in names:
                    raise self.fail(f"{field}.name", f"duplicate target frame name {name!r}")
                names.append(name)
                self._targets.append((entity, pos, rot))
        self.data = FrameTransformerData.zeros(self.num_envs, names)
        entities = [t[0] for t in self._targets]
        self._target_ids = self.bodies.body_ids[entities]
        self._target_static = np.flatnonzero(self.bodies.is_static[entities])
        self._target_static_pos = self.bodies.static_positions[entities][self._target_static]
        self._target_static_quat = self.bodies.static_orientations[entities][self._target_static]
        self._target_pos = np.array([t[1] for t in self._targets]).reshape(-1, 3)
        self._target_rot = np.array([t[2] for t in self._targets]).reshape(-1, 4)

    def _setup_disabled(self) -> None:
        self.data = FrameTransformerData.zeros(self.num_envs, [])

    def _frame(self, data: Any, entity: int, pos: np.ndarray, rot: np.ndarray) -> tuple:
        body_pos, body_quat = self.entity_pose(data, entity)
        return body_pos + quat_rotate(body_quat, pos), quat_multiply(body_quat, rot)

    def _update_world(self, env: int, data: Any) -> None:
        d = self.data
        src_pos, src_quat = self._frame(data, self._source_entity, *self._source_offset)
        d.source_pos_w[env] = src_pos
        d.source_quat_w[env] = src_quat
        body_pos = data.xpos[self._target_ids]
        body_quat = data.xquat[self._target_ids]
        if self._target_static.size:
            body_pos[self._target_static] = self._target_static_pos
            body_quat[self._target_static] = self._target_static_quat
        t_pos = body_pos + quat_rotate(body_quat, self._target_pos)
        t_quat = quat_multiply(body_quat, self._target_rot)
        d.target_pos_w[env] = t_pos
        d.target_quat_w[env] = t_quat
        d.target_pos_source[env] = quat_rotate_inverse(src_quat, t_pos - src_pos)
        d.target_quat_source[env] = quat_multiply(quat_conjugate(src_quat), t_quat)
