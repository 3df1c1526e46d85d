"""``SimEnv``: one world of a USD scene as a Gymnasium environment.

A :class:`~runtime.envs.vector_env.SimVectorEnv` of one env without its env axis: the
same observations, actions, decimation, randomization and reward / termination functions
(which receive arrays with an env axis of length 1 and return one value each).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from runtime.envs.vector_env import SimVectorEnv
from runtime.errors import SimrtError

__all__ = ["SimEnv"]


class SimEnv(gym.Env):
    """One world of a USD scene (a ``gymnasium.Env``).

    Args:
        scene: path of a USD scene (or an open stage) with a robot.
        vector: instead of ``scene`` and options, a one-env vector env to expose (its
            autoreset mode should be ``"disabled"``).
        **options: :class:`~runtime.envs.vector_env.SimVectorEnv` arguments (``action``,
            ``observations``, ``decimation``, ``reward_fn``, ``terminated_fn``,
            ``max_episode_steps``, ``randomization``, ``record``, run settings, ...), but
            ``num_envs``, ``threads`` and ``autoreset_mode`` (a single env does not reset
            itself: call :meth:`reset` after an episode ends).

    Attributes:
        vector: the one-env :class:`SimVectorEnv` underneath.
        model: the compiled ``mujoco.MjModel``.
    """

    metadata = {"render_modes": []}

    def __init__(self, scene: Any = None, *, vector: SimVectorEnv | None = None, **options: Any):
        if vector is not None:  # (a task's one-env vector env)
            if scene is not None or options or vector.num_envs != 1:
                raise SimrtError("SimEnv(vector=...) takes a one-env vector env and no options")
        else:
            for name in ("num_envs", "threads", "autoreset_mode"):
                if name in options:
                    raise SimrtError(f"SimEnv takes no {name!r} (use SimVectorEnv)")
            vector = SimVectorEnv(scene, 1, autoreset_mode="disabled", **options)
        self.vector = vector
        self.observation_space = self.vector.single_observation_space
        self.action_space = self.vector.single_action_space
        self.model = self.vector.model
        self.decimation = self.vector.decimation
        self._actions = np.zeros((1, self.vector.actions.size))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the env.

        Args:
            seed: as :meth:`SimVectorEnv.reset`.
            options: ``{"params": dict}``: the episode's parameters instead of draws.
        """
        super().reset(seed=seed)
        options = dict(options or {})
        if "params" in options:
            options["params"] = [options["params"]]
        observations, infos = self.vector.reset(seed=seed, options=options)
        return _single(observations), _single_info(infos)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        """One env step (``decimation`` physics steps).

        Returns:
            ``(observation, reward, terminated, truncated, info)``; ``info["diverged"]``:
            MuJoCo diverged (the episode is truncated; :meth:`reset` before stepping on).
        """
        vector = self.vector
        array = action if type(action) is np.ndarray else np.asarray(action)
        if array.shape != (vector.actions.size,):
            raise SimrtError(f"action must have shape ({vector.actions.size},), got {array.shape}")
        checked, diverged, restart = vector._advance(array.reshape(1, -1))
        observations = vector.layout.observe_first()
        if vector.noise:
            vector.noise.apply(observations, single=True)
        vector.add_observations(observations, 0)
        if (
            vector.reward_fn is None
            and vector.terminated_fn is None
            and vector.recorder is None
            and not diverged[0]
        ):  # (the lean path: no array per outcome)
            steps = int(vector.episode_steps[0]) + 1
            vector.episode_steps[0] = steps
            limit = vector.max_episode_steps
            return observations, 0.0, False, limit is not None and steps >= limit, _NO_INFO.copy()
        batched = {name: values[None] for name, values in observations.items()}
        outcomes = vector._outcomes(batched, checked, diverged, restart)
        _, rewards, terminated, truncated, infos = vector._end_step(
            batched, checked, *outcomes, diverged, restart
        )
        info = _single_info(infos)
        return observations, float(rewards[0]), bool(terminated[0]), bool(truncated[0]), info

    def close(self) -> None:
        """Close the world."""
        self.vector.close()


_NO_INFO = {"diverged": False}


def _single(observations: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: values[0, ...] for name, values in observations.items()}  # (arrays, also 0-d)


def _single_info(infos: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in infos.items():
        out[key] = value[0] if isinstance(value, np.ndarray) and value.ndim else value
    return out
