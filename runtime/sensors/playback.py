"""Kinematic playback: drive the sensor loop from a recorded joint trajectory, no engine.

:class:`KinematicPlayback` turns a log of joint positions (plus, optionally, the base pose
of a floating robot) into one :class:`~runtime.sensors.state.PhysicsState` per sample:

* link poses from the tree forward kinematics of :class:`runtime.kinematics.chain.
  KinematicChain` (``compute_link_poses``, Numba kernel, robot frame) composed with the
  base pose (default: the robot prim's USD world pose, static);
* body velocities by backward differences of the samples: the COM linear velocity from COM
  positions, the angular velocity from the relative rotation ``q_k q_{k-1}^*`` (axis-angle /
  dt). Backward differences are exact for semi-implicit Euler integrators (``x_k = x_{k-1} +
  dt v_k``) and first-order accurate otherwise. The first sample gets zero velocities;
* joint velocities by backward differences; efforts from the log when given, else zeros;
* no contacts (contact sensors read "no contact") and no accelerations (IMUs difference the
  velocities).

So IMU, joint-state and effort readings (and raycasts, which only need poses) can be
extracted from logs with no physics engine::

    playback = KinematicPlayback(stage, "/World/Robot", times, joint_positions)
    sensors = SensorRuntime(stage, playback.body_paths, dof_names=playback.joint_names)
    for state in playback.states():
        sensors.step(state)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from runtime import _quat
from runtime._quat import rotate_vectors
from runtime.errors import SimrtError
from runtime.sensors.state import PhysicsState

__all__ = ["KinematicPlayback"]


def _angular_velocity(q_prev: np.ndarray, q_next: np.ndarray, dt: np.ndarray) -> np.ndarray:
    """World angular velocity taking q_prev to q_next in dt: log(q_next q_prev^*) / dt."""
    conj = q_prev * np.array([1.0, -1.0, -1.0, -1.0])
    rel = _quat.multiply(q_next, conj)
    rel = np.where(rel[..., :1] < 0.0, -rel, rel)  # shortest rotation
    s = np.linalg.norm(rel[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, rel[..., :1])
    with np.errstate(invalid="ignore", divide="ignore"):
        axis = np.where(s > 1e-15, rel[..., 1:] / np.where(s > 0, s, 1.0), 0.0)
        # small angles: angle/s -> 2, so omega ~ 2 * imag / dt
        scale = np.where(s > 1e-15, angle, 2.0 * s)
    return axis * scale / dt[..., None]


class KinematicPlayback:
    """Replay a recorded joint trajectory as ``PhysicsState`` samples.

    Args:
        stage: the ``Usd.Stage`` of the robot (``runtime.schema`` imported before creation).
        robot_prim: robot root prim or its path.
        times: sample times, shape (N,), strictly increasing, seconds.
        joint_positions: joint positions, shape (N, D), rad or stage units, in
            ``joint_paths`` order.
        joint_paths: joint prim paths of the columns; default: the DOF-table order of the
            chain (``KinematicChain.tree_joint_paths()``).
        base_positions: floating-base positions of the robot frame, shape (N, 3), stage
            units, world; default the robot prim's USD pose.
        base_orientations: floating-base orientations, shape (N, 4), wxyz.
        joint_efforts: optional efforts, shape (N, D).
        gravity: gravity vector (3,), stage units/s^2, world; default from the stage's
            physics scene (``-g_up`` of :func:`runtime.sensors.runtime.stage_gravity_up`).

    Raises:
        SimrtError: shapes do not match or times are not strictly increasing.
        SchemaError: the robot cannot be read by the kinematics layer.
    """

    def __init__(
        self,
        stage: Any,
        robot_prim: Any,
        times: Any,
        joint_positions: Any,
        joint_paths: Sequence[str] | None = None,
        *,
        base_positions: Any = None,
        base_orientations: Any = None,
        joint_efforts: Any = None,
        gravity: Any = None,
    ) -> None:
        from pxr import Usd, UsdGeom, UsdPhysics

        from runtime.kinematics.chain import KinematicChain
        from runtime.sensors.runtime import stage_gravity_up

        if isinstance(robot_prim, str):
            robot_prim = stage.GetPrimAtPath(robot_prim)
        self.stage = stage
        self.chain = KinematicChain(stage, robot_prim)
        self.joint_paths = list(joint_paths or self.chain.tree_joint_paths())
        self.times = np.ascontiguousarray(times, dtype=np.float64).reshape(-1)
        n = self.times.shape[0]
        d = len(self.joint_paths)
        self.joint_positions = np.ascontiguousarray(joint_positions, dtype=np.float64)
        if self.joint_positions.shape != (n, d):
            raise SimrtError(
                f"KinematicPlayback: joint_positions shape {self.joint_positions.shape} != "
                f"({n}, {d}) (samples, joints {self.joint_paths})"
            )
        if n < 1 or np.any(np.diff(self.times) <= 0.0):
            raise SimrtError("KinematicPlayback: times must be non-empty, strictly increasing")
        self.joint_efforts = (
            np.zeros((n, d))
            if joint_efforts is None
            else np.ascontiguousarray(joint_efforts, dtype=np.float64).reshape(n, d)
        )
        mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
        self.meters_per_unit = mpu if np.isfinite(mpu) and mpu > 0.0 else 1.0
        self.gravity = (
            -stage_gravity_up(stage)
            if gravity is None
            else np.ascontiguousarray(gravity, dtype=np.float64).reshape(3)
        )
        self.body_paths = tuple(self.chain.link_paths)
        coms = []
        for path in self.body_paths:
            com = np.zeros(3)
            prim = stage.GetPrimAtPath(path)
            if prim.HasAPI(UsdPhysics.MassAPI):
                value = UsdPhysics.MassAPI(prim).GetCenterOfMassAttr().Get()
                if value is not None and np.all(np.isfinite(np.array(value, dtype=float))):
                    com = np.array(value, dtype=np.float64)
            coms.append(com)
        self.body_com_local = np.ascontiguousarray(coms).reshape(len(self.body_paths), 3)
        # Link poses for every sample (batched tree FK), robot frame -> world.
        pos, quat = self.chain.compute_link_poses(self.joint_positions, self.joint_paths)
        if base_positions is None or base_orientations is None:
            matrix = UsdGeom.Xformable(robot_prim).ComputeLocalToWorldTransform(
                Usd.TimeCode.Default()
            )
            rotation = matrix.ExtractRotationQuat()
            base_q = np.array([rotation.GetReal(), *rotation.GetImaginary()])
            base_p = np.array(matrix.ExtractTranslation())
            base_positions = np.tile(base_p, (n, 1))
            base_orientations = np.tile(base_q / np.linalg.norm(base_q), (n, 1))
        bp = np.asarray(base_positions, dtype=np.float64).reshape(n, 1, 3)
        bq = np.asarray(base_orientations, dtype=np.float64).reshape(n, 1, 4)
        bq = bq / np.linalg.norm(bq, axis=-1, keepdims=True)
        self.body_positions = bp + rotate_vectors(np.broadcast_to(bq, quat.shape), pos)
        self.body_orientations = _quat.multiply(np.broadcast_to(bq, quat.shape), quat)
        com_world = self.body_positions + rotate_vectors(
            self.body_orientations, np.broadcast_to(self.body_com_local, pos.shape)
        )
        dt = np.diff(self.times)
        self.body_linear_velocities = np.zeros_like(com_world)
        self.body_angular_velocities = np.zeros_like(com_world)
        self.joint_velocities = np.zeros_like(self.joint_positions)
        if n > 1:
            self.body_linear_velocities[1:] = np.diff(com_world, axis=0) / dt[:, None, None]
            self.body_angular_velocities[1:] = _angular_velocity(
                self.body_orientations[:-1],
                self.body_orientations[1:],
                np.broadcast_to(dt[:, None], (n - 1, len(self.body_paths))),
            )
            self.joint_velocities[1:] = np.diff(self.joint_positions, axis=0) / dt[:, None]

    @property
    def sample_count(self) -> int:
        """Number of samples N."""
        return int(self.times.shape[0])

    @property
    def joint_names(self) -> list[str]:
        """Joint prim names of the columns (for ``SensorRuntime(dof_names=...)``)."""
        return [p.rsplit("/", 1)[-1] for p in self.joint_paths]

    def state(self, k: int) -> PhysicsState:
        """The state of sample ``k`` (step ``k + 1``, time ``times[k]``).

        Args:
            k: sample index, 0 <= k < N.

        Returns:
            The physics state (no contacts, no accelerations).
        """
        dt = self.times[k] - self.times[k - 1] if k > 0 else self.times[0]
        if not dt > 0.0:
            dt = self.times[1] - self.times[0] if self.sample_count > 1 else 0.0
        return PhysicsState(
            body_paths=self.body_paths,
            body_positions=np.ascontiguousarray(self.body_positions[k]),
            body_orientations=np.ascontiguousarray(self.body_orientations[k]),
            body_com_local=self.body_com_local,
            body_linear_velocities=np.ascontiguousarray(self.body_linear_velocities[k]),
            body_angular_velocities=np.ascontiguousarray(self.body_angular_velocities[k]),
            joint_positions=np.ascontiguousarray(self.joint_positions[k]),
            joint_velocities=np.ascontiguousarray(self.joint_velocities[k]),
            joint_efforts=np.ascontiguousarray(self.joint_efforts[k]),
            dt=float(dt),
            time=float(self.times[k]),
            step=k + 1,
            gravity=self.gravity,
            meters_per_unit=self.meters_per_unit,
        )

    def states(self) -> Iterator[PhysicsState]:
        """Iterate the states of every sample in order.

        Yields:
            One ``PhysicsState`` per sample.
        """
        for k in range(self.sample_count):
            yield self.state(k)
