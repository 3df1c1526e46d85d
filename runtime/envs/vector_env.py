"""``SimVectorEnv``: N worlds of a USD scene as one Gymnasium vector environment.

One :meth:`SimVectorEnv.step` is one compiled call per thread (:class:`~runtime.run.worlds.
Worlds`): every env's actions into MuJoCo, ``decimation`` physics steps each followed by
every sensor of the scene, and the observation rows; then rewards, terminations and
truncations from the user's functions over the observation arrays, and the autoreset of
finished envs. Everything is arrays with the env axis first; nothing is built per env per
step.

Randomness: ``reset(seed=s)`` seeds env ``e``'s episode ``k`` with
``SeedSequence(s, spawn_key=(e, k))``, so an env's draws do not depend on the number of
envs, the threads or the other envs' episodes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from runtime.envs.actions import ActionMap
from runtime.envs.noise import ObservationNoise
from runtime.envs.observations import ObservationLayout
from runtime.errors import SimrtError
from runtime.run.lab_set import LabSensorSet
from runtime.run.worlds import Worlds

LOGGER = logging.getLogger("runtime.envs")

__all__ = ["SimVectorEnv", "RewardFn", "TerminationFn"]

RewardFn = Callable[[Mapping[str, np.ndarray], np.ndarray], np.ndarray]
TerminationFn = Callable[[Mapping[str, np.ndarray]], np.ndarray]
_MODES = {
    "next_step": AutoresetMode.NEXT_STEP,
    "same_step": AutoresetMode.SAME_STEP,
    "disabled": AutoresetMode.DISABLED,
}


def episode_seed(seed: int, env: int, episode: int) -> int:
    """The seed of ``env``'s ``episode`` under the reset seed ``seed`` (a 63-bit integer)."""
    sequence = np.random.SeedSequence(int(seed), spawn_key=(int(env), int(episode)))
    return int(sequence.generate_state(1, np.uint64)[0] >> np.uint64(1))


class SimVectorEnv(gym.vector.VectorEnv):
    """N worlds of one USD scene stepped together (a ``gymnasium.vector.VectorEnv``).

    Args:
        scene: path of a USD scene (or an open stage) with a robot (``IsaacRobotAPI``).
        num_envs: number of envs (>= 1).
        action: ``"joint_position"`` (default), ``"joint_position_delta"``,
            ``"joint_effort"`` or ``"ee_pose"`` (see :mod:`runtime.envs.actions`).
        observations: observation names / channel names / patterns
            (:mod:`runtime.envs.observations`); None: joints and every sensor channel.
        bodies: bodies whose poses ``body_pos`` / ``body_quat`` observe (None: all).
        decimation: physics steps per env step (>= 1).
        threads: threads stepping the worlds (>= 1).
        actuated: the DOFs the joint actions drive (None: every driven DOF; every DOF for
            ``"joint_effort"``).
        ik_link: the end-effector link of ``"ee_pose"`` actions.
        max_delta: bound of a ``"joint_position_delta"`` action [rad or m].
        reward_fn: ``reward_fn(obs, actions) -> (N,)`` rewards (None: zeros).
        terminated_fn: ``terminated_fn(obs) -> (N,)`` bools (None: never).
        max_episode_steps: truncation after this many env steps (None: never).
        randomization: per-episode draws, a :class:`runtime.batch.spec.Randomization` or
            a mapping in the batch spec's ``[randomize]`` vocabulary (initial joints,
            free-body poses, mass / friction / drive-gain scales).
        autoreset_mode: ``"next_step"`` (default), ``"same_step"`` or ``"disabled"`` (or
            Gymnasium's ``AutoresetMode``).
        noise: sensor noise ``{sensor path: {field: {parameter: value}}}`` over the
            scene's ``simrt:noise:*`` attributes (:mod:`runtime.envs.noise`): those
            channels are observed noisy (``"<channel>.exact"``: the exact reading).
        lab_sensors: also observe the scene's Isaac Lab-style sensors (``simrt:lab:*``
            prims, :mod:`runtime.sensors.lab`), updated after every env step; their
            fields are observable as ``"<sensor prim>:<field>"``.
        record: a dataset folder: every finished episode is written as a store there,
            with the manifest of ``simrt batch`` (``runtime.batch.load_dataset`` reads it).
        compiled: use the compiled step (False: the general path; tests).
        **settings: run settings (``dt``, ``robot``, ``imu_mode``, ``record_bodies``,
            ``cache``) over the scene's.

    Attributes:
        num_envs: the number of envs.
        decimation: physics steps per env step.
        model: the compiled ``mujoco.MjModel`` the envs step (env 0's).
        worlds: the :class:`~runtime.run.worlds.Worlds` underneath.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        scene: Any,
        num_envs: int = 1,
        *,
        action: str = "joint_position",
        observations: Sequence[str] | None = None,
        bodies: Sequence[str] | None = None,
        decimation: int = 1,
        threads: int = 1,
        actuated: Sequence[str | int] | None = None,
        ik_link: str | None = None,
        max_delta: float = 0.1,
        reward_fn: RewardFn | None = None,
        terminated_fn: TerminationFn | None = None,
        max_episode_steps: int | None = None,
        randomization: Any = None,
        autoreset_mode: Any = "next_step",
        record: Any = None,
        noise: Mapping[str, Any] | None = None,
        lab_sensors: bool = True,
        compiled: bool = True,
        **settings: Any,
    ) -> None:
        mode = _MODES.get(autoreset_mode, autoreset_mode)
        if not isinstance(mode, AutoresetMode):
            raise SimrtError(f"autoreset_mode {autoreset_mode!r} not in {tuple(_MODES)}")
        if max_episode_steps is not None and int(max_episode_steps) < 1:
            raise SimrtError(f"max_episode_steps must be >= 1, got {max_episode_steps}")
        self.randomization = _randomization(randomization)
        own_models = bool(self.randomization is not None and _scales(self.randomization))
        self.worlds = worlds = Worlds(
            scene,
            num_envs,
            decimation=decimation,
            actuated=actuated,
            action_mode=ActionMap.world_mode(action),
            threads=threads,
            own_models=own_models,
            compiled=compiled,
            **settings,
        )
        try:
            self.lab = _lab_sensors(worlds) if lab_sensors else {}
            self._datas = [engine.data for engine in worlds.engines]
            # contact sensors and IMUs of every world in one compiled call
            self._lab_set = LabSensorSet(self.lab, self._datas) if self.lab else None
            # lab IMUs and joint wrenches read accelerations of the post-step state: the
            # worlds run mj_forward after each env step's last physics step (the next
            # physics step reuses it: runtime.engine.forward_reuse)
            self._forward = any(
                s.kind == "joint_wrench" or (s.kind == "imu" and not s.step_accelerations)
                for s in self.lab.values()
            )
            worlds.set_forward_after_step(self._forward)
            self._env_dt = worlds.decimation * float(worlds.engines[0].dt)
            self.actions = ActionMap(worlds, action, ik_link=ik_link, max_delta=max_delta)
            self.noise = ObservationNoise(worlds, noise, self._env_dt)
            self.layout = ObservationLayout(
                worlds, observations, bodies, self.lab, extra=self.noise.exact_names()
            )
        except BaseException:
            worlds.close()
            raise
        self.num_envs = worlds.num_envs
        self.decimation = worlds.decimation
        self.model = worlds.model
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self.autoreset_mode = mode
        self.single_observation_space = self.layout.space()
        self.observation_space = self.layout.space(self.num_envs)
        self.single_action_space = self.actions.space()
        self.action_space = self.actions.space(self.num_envs)
        self.reward_fn = reward_fn
        self.terminated_fn = terminated_fn
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        n = self.num_envs
        self.episode_steps = np.zeros(n, np.int64)
        self.episodes = np.zeros(n, np.int64)  # episodes begun per env (seeds)
        self.seed_base = 0
        self.params: list[dict[str, Any] | None] = [None] * n
        self._needs_reset = np.ones(n, bool)  # (next-step autoreset: reset at the next step)
        self._reset_once = False
        self.recorder = None
        if record is not None:
            from runtime.envs.recording import EpisodeRecorder

            self.recorder = EpisodeRecorder(self, record)
        self.closed = False

    # ------------------------------------------------------------------ resets
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset every env (or those of ``options["reset_mask"]``).

        Args:
            seed: the base seed (None: keep the last one; the first reset uses 0 or the
                seed given to an earlier reset). Env ``e``'s episodes draw from
                ``SeedSequence(seed, spawn_key=(e, episode))``.
            options: ``{"reset_mask": (N,) bool}`` resets only those envs (Gymnasium's
                convention); ``{"params": [dict | None] * N}`` applies given episode
                parameters instead of drawing them.

        Returns:
            ``(observations, infos)``; ``infos["episode_seed"]`` is each env's seed.
        """
        self._check_open()
        options = dict(options or {})
        if seed is not None:
            self.seed_base = int(seed)
            self.episodes[:] = 0
        mask = options.get("reset_mask")
        if mask is None:
            envs = np.arange(self.num_envs)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise SimrtError(f"reset_mask must be a bool array of shape ({self.num_envs},)")
            envs = np.nonzero(mask)[0]
        given = options.get("params")
        if given is not None and len(given) != self.num_envs:
            raise SimrtError(f"options['params'] must have {self.num_envs} entries")
        seeds = self._reset_envs(envs, given)
        self._reset_once = True
        infos = {"episode_seed": seeds}
        return self.observe(), infos

    def _reset_envs(self, envs: np.ndarray, given: Sequence[Any] | None = None) -> np.ndarray:
        """Reset ``envs`` with their next episode's draws; their seeds (all envs' array)."""
        from runtime.batch.randomize import apply_parameters, draw_parameters

        worlds = self.worlds
        seeds = np.zeros(self.num_envs, np.int64)
        for e in envs:
            e = int(e)
            if self.recorder is not None:
                self.recorder.episode_ends(e, complete=False)
            seeds[e] = seed = episode_seed(self.seed_base, e, self.episodes[e])
            self.episodes[e] += 1
            params = given[e] if given is not None else None
            if params is None and self.randomization is not None:
                engine = worlds.engines[e]
                params = draw_parameters(self.randomization, seed, lambda _mode, g=engine: g)
            self.params[e] = params
            setup = (
                None if params is None else (lambda engine, p=params: apply_parameters(engine, p))
            )
            worlds.reset(e, setup)
            for sensor in self.lab.values():
                sensor.reset([e])
            self.noise.reset(e, seed)
            self.episode_steps[e] = 0
            self._needs_reset[e] = False
            if self.recorder is not None:
                self.recorder.episode_begins(e, seed, params)
        if len(envs):
            self.actions.reset_seeds(np.asarray(envs, np.int64), worlds.joint_positions())
        return seeds

    # ------------------------------------------------------------------ stepping
    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step every env once (``decimation`` physics steps).

        Args:
            actions: (N, A) array (see :mod:`runtime.envs.actions`).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``; ``infos``
            holds ``"diverged"`` (bool (N,): MuJoCo diverged; the env is truncated and
            reset like a finished one) and, with same-step autoreset, ``"final_obs"`` /
            ``"final_info"`` / ``"_final_obs"``.
        """
        checked, diverged, restart = self._advance(actions)
        observations = self.observe()
        rewards, terminated, truncated = self._outcomes(observations, checked, diverged, restart)
        return self._end_step(
            observations, checked, rewards, terminated, truncated, diverged, restart
        )

    def _advance(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Check ``actions``, autoreset (next-step), step the worlds.

        Returns:
            ``(checked actions, diverged (N,), envs reset by this call or None)``.
        """
        if self.closed:
            raise SimrtError("the environment is closed")
        if not self._reset_once:
            raise SimrtError("SimVectorEnv.step before reset()")
        checked = self.actions.check(actions, self.num_envs)
        worlds = self.worlds
        restart = None
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and self._needs_reset.any():
            restart = self._needs_reset.copy()
            self._reset_envs(np.nonzero(restart)[0])
        targets = self.actions.targets(checked, worlds.joint_positions())
        # (envs reset by this call ignore their action: their observation is the reset's)
        diverged = worlds.step(targets, restart)
        if restart is not None:  # (their IK seeds: the reset pose)
            self.actions.reset_seeds(np.nonzero(restart)[0], worlds.joint_positions())
        if self._lab_set is not None:
            self._lab_set.update(self._env_dt)
        return checked, diverged, restart

    def _outcomes(
        self,
        observations: Mapping[str, np.ndarray],
        checked: np.ndarray,
        diverged: np.ndarray,
        restart: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rewards, terminations and truncations of the step (fresh arrays)."""
        n = self.num_envs
        self.episode_steps += 1
        if self.reward_fn is not None:
            rewards = np.array(self.reward_fn(observations, checked), np.float64).reshape(n)
        else:
            rewards = np.zeros(n)
        if self.terminated_fn is not None:
            terminated = np.array(self.terminated_fn(observations), bool).reshape(n)
        else:
            terminated = np.zeros(n, bool)
        truncated = diverged.copy()
        if self.max_episode_steps is not None:
            truncated |= self.episode_steps >= self.max_episode_steps
        if diverged.any():
            terminated &= ~diverged
            rewards[diverged] = 0.0
        if restart is not None:
            rewards[restart] = 0.0
            terminated[restart] = False
            truncated[restart] = False
            self.episode_steps[restart] = 0
        return rewards, terminated, truncated

    def _end_step(
        self,
        observations: dict[str, np.ndarray],
        checked: np.ndarray,
        rewards: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        diverged: np.ndarray,
        restart: np.ndarray | None,
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Record, autoreset (same-step) and the step's infos."""
        mode = self.autoreset_mode
        diverged = diverged.copy()
        infos: dict[str, Any] = {"diverged": diverged}
        done = terminated | truncated
        if self.recorder is not None:
            self.recorder.rows(checked, rewards, restart)
            for e in np.nonzero(done)[0]:
                self.recorder.episode_ends(int(e), complete=True, diverged=bool(diverged[e]))
        if mode == AutoresetMode.NEXT_STEP:
            self._needs_reset |= done
        elif mode == AutoresetMode.SAME_STEP and done.any():
            envs = np.nonzero(done)[0]
            infos["final_obs"] = {k: v.copy() for k, v in observations.items()}
            infos["_final_obs"] = done.copy()
            infos["final_info"] = {"diverged": diverged.copy()}
            infos["_final_info"] = done.copy()
            self._reset_envs(envs)
            fresh = self.observe()
            for key in observations:
                observations[key][envs] = fresh[key][envs]
        return observations, rewards, terminated, truncated, infos

    # ------------------------------------------------------------------ observations
    def observe(self) -> dict[str, np.ndarray]:
        """The observation of every env now (fresh arrays, env axis first)."""
        observations = self.layout.observe()
        if self.noise:
            self.noise.apply(observations)
        self.add_observations(observations, slice(None))
        return observations

    def add_observations(self, observations: dict[str, np.ndarray], envs: Any) -> None:
        """Add a task's own observations for ``envs`` (a slice or index) in place.

        Tasks override this (e.g. a goal drawn per episode); the default adds nothing.
        """

    # ------------------------------------------------------------------ closing
    def _check_open(self) -> None:
        if self.closed:
            raise SimrtError("the environment is closed")

    def close_extras(self, **kwargs: Any) -> None:
        """Close the worlds (thread pool, USD listeners) and the episode recorder."""
        if self.closed:
            return
        self.closed = True
        try:
            if self.recorder is not None:
                self.recorder.close()
        finally:
            self.worlds.close()


def _randomization(value: Any) -> Any:
    """A :class:`~runtime.batch.spec.Randomization` from ``value`` (None: none)."""
    if value is None:
        return None
    from runtime.batch.spec import Randomization, parse_randomization

    if isinstance(value, Randomization):
        return value
    if isinstance(value, Mapping):
        return parse_randomization(dict(value), "randomization")
    raise SimrtError(f"randomization must be a Randomization or a mapping, got {type(value)}")


def _lab_sensors(worlds: Any) -> dict[str, Any]:
    """The scene's enabled lab sensors over the worlds, by sensor prim path."""
    from runtime.sensors.lab import discover_lab_sensors, make_lab_sensors

    if not discover_lab_sensors(worlds.stage):
        return {}
    found = make_lab_sensors(worlds.engines[0], worlds.num_envs)
    for path, sensor in found.items():
        if sensor is not None and sensor.disabled_reason is not None:
            LOGGER.warning("lab sensor %s disabled: %s", path, sensor.disabled_reason)
    return {
        path: sensor
        for path, sensor in found.items()
        if sensor is not None and sensor.disabled_reason is None
    }


def _scales(randomization: Any) -> bool:
    scales = randomization.scales
    return any(getattr(scales, k) is not None for k in ("mass", "friction", "drive_gain"))
