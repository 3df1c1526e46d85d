"""Joint wrench sensor: the 6-axis force / torque a joint transmits into its child body.

For each body matched by ``config.prim_path`` the wrench its parent exerts on it through
the joint(s) between them, from MuJoCo's constraint-inclusive interaction forces
``cfrc_int`` (``mj_rnePostConstraint``), expressed in the child body frame with the torque
taken about the child body's origin. It is what a MuJoCo ``force`` / ``torque`` sensor on a
site at the child's origin reads. ``cfrc_int`` is available under the same conditions as the
IMU's ``cacc`` (see :mod:`runtime.sensors.lab.imu`): computed by ``mj_step`` when the model
has an acceleration-stage sensor, else by this sensor, which then needs ``mj_forward``
after ``mj_step``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime.sensors.lab._math import quat_rotate_inverse
from runtime.sensors.lab.base import LabSensor

__all__ = ["JointWrenchData", "JointWrenchSensor"]


@dataclass
class JointWrenchData:
    """Joint wrenches of N worlds and J child bodies, child frame.

    Attributes:
        force_b: force on the child [N], (N, J, 3).
        torque_b: torque on the child about its origin [N m], (N, J, 3).
        body_incoming_joint_wrench_b: force then torque, (N, J, 6).
    """

    force_b: np.ndarray
    torque_b: np.ndarray
    body_incoming_joint_wrench_b: np.ndarray

    @classmethod
    def zeros(cls, n: int, j: int) -> JointWrenchData:
        """Arrays of N worlds and J bodies (force / torque are views of the wrench)."""
        wrench = np.zeros((n, j, 6))
        return cls(
            force_b=wrench[..., :3], torque_b=wrench[..., 3:], body_incoming_joint_wrench_b=wrench
        )


class JointWrenchSensor(LabSensor):
    """Wrenches of the joints into the bodies matched by ``config.prim_path``.

    Args:
        source: ``MujocoEngine`` or ``mujoco.MjModel``.
        config: :class:`~runtime.sensors.lab.config.JointWrenchConfig`.
        num_envs: worlds per :meth:`update`.

    Attributes:
        body_paths: the child bodies, (J,).
        data: :class:`JointWrenchData`.
    """

    kind = "joint_wrench"
    _history_fields = ("body_incoming_joint_wrench_b",)

    def _setup(self) -> None:
        cfg = self.config
        if cfg.prim_path is None:
            raise self.fail("prim_path", "is required")
        try:
            found = self.bodies.match(cfg.prim_path, moving_only=True)
        except ValueError as error:
            raise self.fail("prim_path", str(error)) from None
        if not found:
            raise self.fail("prim_path", "matches no moving body of the model")
        self.body_paths = tuple(self.bodies.paths[e] for e in found)
        self._ids = self.bodies.body_ids[found]
        self._roots = np.asarray(self.model.body_rootid, np.int64)[self._ids]
        self.data = JointWrenchData.zeros(self.num_envs, len(found))

    def _setup_disabled(self) -> None:
        self.body_paths = ()
        self.data = JointWrenchData.zeros(self.num_envs, 0)

    def _update_world(self, env: int, data: Any) -> None:
        if not data.flg_rnepost:
            import mujoco  # (the [sim] extra: the package imports without it)

            mujoco.mj_rnePostConstraint(data.model, data)  # (its own model: masses may differ)
        interaction = data.cfrc_int[self._ids]
        torque_c, force = interaction[:, :3], interaction[:, 3:]
        lever = data.subtree_com[self._roots] - data.xpos[self._ids]
        torque = torque_c + np.cross(lever, force)
        quat = data.xquat[self._ids]
        self.data.force_b[env] = quat_rotate_inverse(quat, force)
        self.data.torque_b[env] = quat_rotate_inverse(quat, torque)
