"""Example tasks on the shipped scenes, registered with Gymnasium by ``import runtime.envs``.

* ``simrt/PandaReach-v0``: the Panda at its table moves its hand to a goal drawn per
  episode in a box above the table; actions are hand poses (``"ee_pose"``: position and
  orientation in the robot frame, solved by the batched IK); the observation adds the goal;
  reward ``-|hand - goal|`` [m]; 100 env steps of 20 ms.
* ``simrt/Go2Stand-v0``: the Unitree Go2 holds its standing pose from randomized initial
  joints; actions are joint position targets of its 12 drives; observations are the joints,
  the four foot contact sensors and the trunk IMU (Isaac Sim's schemas), and the Isaac
  Lab-style foot contacts with air times and the yaw-aligned height scan of
  ``scenes/go2_lab_sensors.usda``; reward: trunk height near 0.3 m,
  upright, small joint velocities; terminated when the trunk falls below 0.15 m; 250 env
  steps of 4 ms.

Each is a function returning the env; pass ``scene=`` for a copy of the scene elsewhere and
any :class:`~runtime.envs.vector_env.SimVectorEnv` argument to override.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from runtime.envs.env import SimEnv
from runtime.envs.vector_env import SimVectorEnv

__all__ = ["PandaReachVectorEnv", "go2_stand", "go2_stand_vector", "panda_reach", "scene_path"]

SCENES = Path(__file__).resolve().parents[2] / "scenes"


def scene_path(name: str) -> str:
    """The path of a shipped scene (``scenes/NAME`` of the source tree)."""
    return str(SCENES / name)


class PandaReachVectorEnv(SimVectorEnv):
    """Panda reach: hand-pose actions, a goal per episode (see the module docstring)."""

    GOAL_LOW = np.array([0.35, -0.25, 0.55])
    GOAL_HIGH = np.array([0.65, 0.25, 0.85])
    HAND = "panda_hand"

    def __init__(self, num_envs: int = 1, **options: Any) -> None:
        from gymnasium import spaces

        settings = {
            "scene": scene_path("panda_table.usda"),
            "action": "ee_pose",
            "ik_link": self.HAND,
            "decimation": 10,
            "observations": ["joint_pos", "joint_vel", "body_pos"],
            "bodies": [self.HAND],
            "max_episode_steps": 100,
            "reward_fn": self._reward,
        }
        settings.update(options)
        scene = settings.pop("scene")
        super().__init__(scene, num_envs, **settings)
        self.goals = np.zeros((self.num_envs, 3))
        goal = spaces.Box(self.GOAL_LOW, self.GOAL_HIGH, dtype=np.float64)
        self.single_observation_space = spaces.Dict(
            {**self.single_observation_space.spaces, "goal": goal}
        )
        batched = spaces.Box(
            np.tile(self.GOAL_LOW, (self.num_envs, 1)),
            np.tile(self.GOAL_HIGH, (self.num_envs, 1)),
            dtype=np.float64,
        )
        self.observation_space = spaces.Dict({**self.observation_space.spaces, "goal": batched})

    def _reset_envs(self, envs: np.ndarray, given: Any = None) -> np.ndarray:
        seeds = super()._reset_envs(envs, given)
        for e in envs:
            rng = np.random.default_rng(int(seeds[e]))
            self.goals[e] = rng.uniform(self.GOAL_LOW, self.GOAL_HIGH)
        return seeds

    def _reward(self, observations: dict[str, np.ndarray], actions: np.ndarray) -> np.ndarray:
        hand = observations["body_pos"][:, 0]
        return -np.linalg.norm(hand - self.goals, axis=1)

    def add_observations(self, observations: dict[str, np.ndarray], envs: Any) -> None:
        """Each env's goal [m], robot frame."""
        observations["goal"] = np.array(self.goals[envs])


def panda_reach(**options: Any) -> SimEnv:
    """``simrt/PandaReach-v0`` as one env."""
    return SimEnv(vector=PandaReachVectorEnv(1, autoreset_mode="disabled", **options))


def panda_reach_vector(num_envs: int = 1, **options: Any) -> PandaReachVectorEnv:
    """``simrt/PandaReach-v0`` as a vector env."""
    return PandaReachVectorEnv(num_envs, **options)


_GO2_FEET = "*FootContact.*"


def _go2_settings(options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    settings: dict[str, Any] = {
        "scene": scene_path("go2_lab_sensors.usda"),
        "action": "joint_position",
        "decimation": 4,
        "observations": ["joint_pos", "joint_vel", "*FootContact.in_contact",
                         "*FootContact.value", "*TrunkImu.*", "*/FootContacts:*air_time",
                         "*/FootContacts:net_forces_w", "*/HeightScan:ray_hits_w"],
        "bodies": ["base"],
        "max_episode_steps": 250,
        "reward_fn": _go2_reward,
        "terminated_fn": _go2_fallen,
        "randomization": {"joints": {"fraction": 0.1}},
    }  # fmt: skip
    settings["observations"] = [*settings["observations"], "body_pos", "body_quat"]
    settings.update(options)
    return settings.pop("scene"), settings


def _go2_reward(observations: dict[str, np.ndarray], actions: np.ndarray) -> np.ndarray:
    height = observations["body_pos"][:, 0, 2]
    quat = observations["body_quat"][:, 0]
    upright = 1.0 - 2.0 * (quat[:, 1] ** 2 + quat[:, 2] ** 2)  # body z . world z
    still = np.square(observations["joint_vel"]).sum(axis=1)
    return -np.abs(height - 0.3) + 0.5 * upright - 1e-3 * still


def _go2_fallen(observations: dict[str, np.ndarray]) -> np.ndarray:
    return observations["body_pos"][:, 0, 2] < 0.15


def go2_stand(**options: Any) -> SimEnv:
    """``simrt/Go2Stand-v0`` as one env."""
    scene, settings = _go2_settings(options)
    return SimEnv(scene, **settings)


def go2_stand_vector(num_envs: int = 1, **options: Any) -> SimVectorEnv:
    """``simrt/Go2Stand-v0`` as a vector env."""
    scene, settings = _go2_settings(options)
    return SimVectorEnv(scene, num_envs, **settings)
