"""Isaac Lab's IMU over MuJoCo's body velocities and accelerations.

The sensor frame is a body frame moved by ``config.offset``. Velocities come from MuJoCo's
``cvel``, accelerations from its ``cacc`` (``mj_rnePostConstraint``), never from
differences, so a sensor with ``update_period`` > dt reads exact values at its updates.

Which state is read: when the model has an acceleration-stage sensor of its own
(accelerometer, force, torque, framelinacc, frameangacc), MuJoCo fills ``cacc`` during
``mj_step`` and the IMU reads exactly what MuJoCo's sensors read (the state at the start of
the step). Otherwise the IMU calls ``mj_rnePostConstraint`` itself, which is consistent
only when positions, velocities and ``qacc`` agree: call ``mujoco.mj_forward`` after
``mj_step`` (the post-step state, as Isaac Lab reads it) before :meth:`Imu.update`. After a
bare ``mj_step`` ``qvel`` is already integrated while ``cvel`` is not, and the acceleration
would mix the two (about 1 % off in the tests). :attr:`Imu.step_accelerations` says which
case applies. (In ``simrt run`` and the vector environments, which recompute the post-step
positions and velocities before the lab sensors update, an IMU in the first case reads the
step's accelerations with the post-step pose and velocities: the last step's acceleration,
as a physics engine reports it after its step, not MuJoCo's accelerometer of either state.)
``lin_acc_b`` is the acceleration of the sensor point plus ``gravity_bias`` (default
``(0, 0, 9.81)``: an IMU at rest reads +9.81 along world up), in the sensor frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime.sensors.lab._lab_kernels import imu_kernel
from runtime.sensors.lab.base import LabSensor

_ACC_STAGE_SENSORS = ("ACCELEROMETER", "FORCE", "TORQUE", "FRAMELINACC", "FRAMEANGACC")
"""MuJoCo sensor types that make ``mj_step`` / ``mj_forward`` compute ``cacc`` itself."""

__all__ = ["Imu", "ImuData"]


@dataclass
class ImuData:
    """IMU readings of N worlds (sensor frame "b", world "w").

    Attributes:
        pos_w: sensor position [m], (N, 3).
        quat_w: sensor orientation (w, x, y, z), (N, 4).
        projected_gravity_b: unit gravity direction in the sensor frame, (N, 3).
        lin_vel_b: velocity of the sensor point [m/s], (N, 3).
        ang_vel_b: angular velocity [rad/s], (N, 3).
        lin_acc_b: acceleration of the sensor point + gravity_bias [m/s^2], (N, 3).
        ang_acc_b: angular acceleration [rad/s^2], (N, 3).
    """

    pos_w: np.ndarray
    quat_w: np.ndarray
    projected_gravity_b: np.ndarray
    lin_vel_b: np.ndarray
    ang_vel_b: np.ndarray
    lin_acc_b: np.ndarray
    ang_acc_b: np.ndarray

    @classmethod
    def zeros(cls, n: int) -> ImuData:
        """Arrays of N worlds."""
        return cls(
            pos_w=np.zeros((n, 3)),
            quat_w=np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)),
            projected_gravity_b=np.tile([0.0, 0.0, -1.0], (n, 1)),
            lin_vel_b=np.zeros((n, 3)),
            ang_vel_b=np.zeros((n, 3)),
            lin_acc_b=np.zeros((n, 3)),
            ang_acc_b=np.zeros((n, 3)),
        )


def check_offset(sensor: LabSensor, offset: Any, name: str = "offset") -> tuple:
    """(pos (3,), unit rot (4,)) of an offset config, or a LabConfigError naming ``name``."""
    try:
        pos = np.asarray(offset.pos, np.float64).reshape(3)
        rot = np.asarray(offset.rot, np.float64).reshape(4)
    except (AttributeError, TypeError, ValueError):
        raise sensor.fail(
            name, f"needs pos (3 numbers) and rot (4 numbers), got {offset!r}"
        ) from None
    norm = float(np.linalg.norm(rot))
    if not np.all(np.isfinite(pos)) or not np.isfinite(norm) or norm < 1e-9:
        raise sensor.fail(name, f"pos must be finite and rot a non-zero quaternion: {offset!r}")
    return np.ascontiguousarray(pos), np.ascontiguousarray(rot / norm)


class Imu(LabSensor):
    """An IMU on the one body matched by ``config.prim_path``.

    Args:
        source: ``MujocoEngine`` or ``mujoco.MjModel``.
        config: :class:`~runtime.sensors.lab.config.ImuConfig`.
        num_envs: worlds per :meth:`update`.

    Attributes:
        body_path: path of the body.
        step_accelerations: the model computes ``cacc`` during ``mj_step`` (it has an
            acceleration-stage sensor); else call ``mj_forward`` before :meth:`update`.
        data: :class:`ImuData`.
    """

    kind = "imu"
    _history_fields = ("lin_vel_b", "ang_vel_b", "lin_acc_b", "ang_acc_b", "projected_gravity_b")

    def _setup(self) -> None:
        cfg = self.config
        if cfg.prim_path is None:
            raise self.fail("prim_path", "is required")
        try:
            found = self.bodies.match(cfg.prim_path, moving_only=True)
        except ValueError as error:
            raise self.fail("prim_path", str(error)) from None
        if len(found) != 1:
            raise self.fail(
                "prim_path", f"must match exactly one moving body, matches {len(found)}"
            )
        self.body_path = self.bodies.paths[found[0]]
        self._body = int(self.bodies.body_ids[found[0]])
        self._root = int(self.model.body_rootid[self._body])
        self._offset_pos, self._offset_rot = check_offset(self, cfg.offset)
        bias = np.asarray(cfg.gravity_bias, np.float64).reshape(-1)
        if bias.shape != (3,) or not np.all(np.isfinite(bias)):
            raise self.fail("gravity_bias", f"must be 3 finite numbers, got {cfg.gravity_bias!r}")
        self._bias = np.ascontiguousarray(bias)
        import mujoco  # (the [sim] extra: the package imports without it)

        types = {int(getattr(mujoco.mjtSensor, f"mjSENS_{n}")) for n in _ACC_STAGE_SENSORS}
        self.step_accelerations = any(int(t) in types for t in self.model.sensor_type)
        self._gravity = np.ascontiguousarray(self.model.opt.gravity, np.float64).copy()
        self.data = ImuData.zeros(self.num_envs)

    def _setup_disabled(self) -> None:
        self.step_accelerations = False
        self.body_path = ""
        self.data = ImuData.zeros(self.num_envs)

    def _update_world(self, env: int, data: Any) -> None:
        if not data.flg_rnepost:
            import mujoco  # (the [sim] extra: the package imports without it)

            mujoco.mj_rnePostConstraint(data.model, data)  # (its own model: masses may differ)
        d = self.data
        imu_kernel(
            env, self._body, self._root, self._offset_pos, self._offset_rot, data.xpos,
            data.xquat, data.cvel, data.cacc, data.subtree_com, self._gravity, self._bias,
            d.pos_w, d.quat_w, d.projected_gravity_b, d.lin_vel_b, d.ang_vel_b, d.lin_acc_b,
            d.ang_acc_b,
        )  # fmt: skip

    def _reset_world(self, env: int) -> None:
        for name in ("lin_vel_b", "ang_vel_b", "lin_acc_b", "ang_acc_b"):
            getattr(self.data, name)[env] = 0.0
