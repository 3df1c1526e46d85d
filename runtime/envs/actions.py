"""How an environment's actions become what the worlds step with.

==========================  =======================================  ===========================
``action``                  one env's action                         sent to MuJoCo as
==========================  =======================================  ===========================
``"joint_position"``        drive targets [rad or m], (A,)           the drives' position targets
``"joint_position_delta"``  target change from the current joint     the drives' position targets
                            positions [rad or m], (A,)
``"joint_velocity"``        velocity targets [rad/s or m/s] of the   the velocity drives' targets
                            DOFs with a velocity drive, (A,)
``"joint_effort"``          generalized forces [N m or N], (A,)      ``qfrc_applied``
``"ee_pose"``               end-effector position [stage units] and  the drives' position targets
                            orientation (wxyz) in the robot frame,   solved by the batched LM IK
                            (7,)                                     (seeded with each env's last
                                                                     solution)
==========================  =======================================  ===========================

Checks: an action array of the wrong shape or a non-numeric dtype, and non-finite values,
are refused with an error naming the env and the DOF (or column). Position targets outside
the DOF limits are clipped to them (documented: the drives could not hold them); a delta
is clipped to ``max_delta``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime._quat import multiply as quat_multiply
from runtime.errors import SimrtError

__all__ = ["ACTIONS", "ActionMap"]

ACTIONS = ("joint_position", "joint_position_delta", "joint_velocity", "joint_effort", "ee_pose")


class ActionMap:
    """An env's action space and the translation of its actions into world inputs.

    Args:
        worlds: the :class:`~runtime.run.worlds.Worlds` (its ``action_mode`` matches).
        action: one of :data:`ACTIONS`.
        ik_link: the end-effector link (name or path) for ``"ee_pose"``.
        max_delta: bound of a ``"joint_position_delta"`` action [rad or m].
        ik_options: keyword arguments of :func:`runtime.kinematics.ik.ik_lm_batch`.
    """

    def __init__(
        self,
        worlds: Any,
        action: str,
        *,
        ik_link: str | None = None,
        max_delta: float = 0.1,
        ik_options: dict[str, Any] | None = None,
    ) -> None:
        if action not in ACTIONS:
            raise SimrtError(f"action {action!r} not in {ACTIONS}")
        self.worlds = worlds
        self.action = action
        self.max_delta = float(max_delta)
        if not (np.isfinite(self.max_delta) and self.max_delta > 0):
            raise SimrtError(f"max_delta must be finite and positive, got {max_delta!r}")
        self.lower = worlds.action_lower  # (position actions: the DOF limits)
        self.upper = worlds.action_upper
        self.names: tuple[str, ...] = tuple(worlds.action_dofs)
        self.chain = None
        if action == "ee_pose":
            self._bind_ik(ik_link, dict(ik_options or {}))
            self.names = ("x", "y", "z", "qw", "qx", "qy", "qz")
        self.size = len(self.names)

    @staticmethod
    def world_mode(action: str) -> str:
        """The :class:`~runtime.run.worlds.Worlds` action mode an action needs."""
        return {"joint_effort": "effort", "joint_velocity": "velocity"}.get(action, "position")

    # ------------------------------------------------------------------ IK
    def _bind_ik(self, ik_link: str | None, options: dict[str, Any]) -> None:
        from runtime.kinematics.ik import check_lm_kwargs
        from runtime.run.ik import end_effector_chain

        if not ik_link:
            raise SimrtError("action 'ee_pose' needs ik_link (the end-effector link)")
        worlds = self.worlds
        stage = worlds.stage
        robot = stage.GetPrimAtPath(worlds.robot_path)
        chain, start_in_robot = end_effector_chain(stage, robot, ik_link)
        paths = list(chain.joint_paths)
        table = worlds.dof_table
        dofs = np.array([table.index_of(p) for p in paths], np.int64)
        columns = {int(d): k for k, d in enumerate(worlds.action_dof_index)}
        missing = [p for p, d in zip(paths, dofs, strict=True) if int(d) not in columns]
        if missing:
            raise SimrtError(f"ee_pose: the IK chain's joints have no drive: {', '.join(missing)}")
        check_lm_kwargs(options)
        self.chain = chain
        self.ik_options = options
        self.ik_columns = np.array([columns[int(d)] for d in dofs], np.int64)
        self.ik_dofs = dofs
        # robot frame -> the chain's start frame
        self.start_rotation = start_in_robot.matrix()[:3, :3]
        self.start_translation = np.asarray(start_in_robot.t, np.float64)
        self.start_orientation = np.asarray(start_in_robot.q, np.float64)  # wxyz
        w, x, y, z = self.start_orientation
        self.start_inverse = np.array([w, -x, -y, -z])
        self.seeds = np.zeros((worlds.num_envs, len(paths)))
        self.ik_failures = np.zeros(worlds.num_envs, np.int64)

    def reset_seeds(self, envs: np.ndarray, joint_positions: np.ndarray) -> None:
        """Seed the IK of ``envs`` with their joint positions (after a reset)."""
        if self.chain is not None:
            self.seeds[envs] = joint_positions[np.ix_(envs, self.ik_dofs)]

    # ------------------------------------------------------------------ spaces
    def space(self, num_envs: int | None = None) -> Any:
        """The action space (``gymnasium.spaces.Box``; batched when ``num_envs`` is given)."""
        from gymnasium import spaces

        if self.action in ("joint_position", "joint_velocity"):
            low, high = self.lower.copy(), self.upper.copy()
        elif self.action == "joint_position_delta":
            low = np.full(self.size, -self.max_delta)
            high = np.full(self.size, self.max_delta)
        elif self.action == "joint_effort":
            low, high = np.full(self.size, -np.inf), np.full(self.size, np.inf)
        else:
            low = np.array([-np.inf] * 3 + [-1.0] * 4)
            high = np.array([np.inf] * 3 + [1.0] * 4)
        if num_envs is not None:
            low = np.broadcast_to(low, (num_envs, self.size))
            high = np.broadcast_to(high, (num_envs, self.size))
        return spaces.Box(low=low, high=high, dtype=np.float64)

    # ------------------------------------------------------------------ translation

    def check(self, actions: Any, num_envs: int) -> np.ndarray:
        """``actions`` as float64 (N, size), or an error naming the env and the column."""
        array = actions if type(actions) is np.ndarray else np.asarray(actions)
        if array.shape != (num_envs, self.size) or array.dtype.kind not in "fiu":
            if array.dtype.kind not in "fiu":
                raise SimrtError(f"actions must be numeric, got dtype {array.dtype}")
            raise SimrtError(
                f"actions must have shape ({num_envs}, {self.size}) "
                f"(envs, {'/'.join(self.names) if self.size <= 8 else 'action DOFs'}), "
                f"got {array.shape}"
            )
        if array.dtype != np.float64 or not array.flags.c_contiguous:
            array = np.ascontiguousarray(array, np.float64)
        if not np.isfinite(array).all():
            bad = ~np.isfinite(array)
            env, column = (int(v) for v in np.argwhere(bad)[0])
            raise SimrtError(
                f"env {env}: action {self.names[column]!r} is {array[env, column]} "
                f"(actions must be finite; {int(bad.sum())} bad value(s))"
            )
        return array

    def targets(self, actions: np.ndarray, joint_positions: np.ndarray) -> np.ndarray:
        """The worlds' inputs (N, A) for checked ``actions`` (:meth:`check`).

        Args:
            actions: float64 (N, size).
            joint_positions: (N, D) current DOF positions (deltas and IK seeds).
        """
        if self.action in ("joint_effort", "joint_position", "joint_velocity"):
            return actions  # (position targets: the worlds clip them to the DOF limits)
        index = self.worlds.action_dof_index
        current = joint_positions[:, index]
        if self.action == "joint_position_delta":
            delta = np.clip(actions, -self.max_delta, self.max_delta)
            return np.ascontiguousarray(np.clip(current + delta, self.lower, self.upper))
        return self._solve(actions, current)

    def _solve(self, actions: np.ndarray, current: np.ndarray) -> np.ndarray:
        from runtime.kinematics.ik import ik_lm_batch

        quats = actions[:, 3:7]
        norms = np.linalg.norm(quats, axis=1)
        if (norms < 1e-9).any():
            env = int(np.argmax(norms < 1e-9))
            raise SimrtError(f"env {env}: ee_pose orientation is a zero quaternion")
        quats = quats / norms[:, None]
        positions = (actions[:, :3] - self.start_translation) @ self.start_rotation
        orientations = quat_multiply(self.start_inverse, quats)
        q, _error, seed = ik_lm_batch(
            self.chain,
            np.ascontiguousarray(positions),
            np.ascontiguousarray(orientations),
            self.seeds,
            **self.ik_options,
        )
        self.ik_failures += seed < 0
        self.seeds[:] = q
        # DOFs outside the chain (a gripper's fingers) keep the targets last sent
        out = self.worlds.targets[:, self.worlds.action_dof_index].copy()
        out[:, self.ik_columns] = q
        return np.ascontiguousarray(np.clip(out, self.lower, self.upper))
