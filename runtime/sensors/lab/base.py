"""What every lab sensor shares: the update clock, the history buffers, disabling.

A lab sensor reads ``N`` MuJoCo worlds of one model (a list of ``mujoco.MjData``, the env
axis first in every data array). :meth:`LabSensor.update` advances each world's clock by
``dt``; a world whose sensor is due (``update_period`` elapsed since its last update, with
Isaac Lab's tolerance of 1e-6 s, or never updated since its reset) is recomputed from its
``MjData``; between updates the data keep the last update's values. Rates and accelerations
are read from MuJoCo's state, never differenced, so a slow sensor reports exact values.

Sensors read ``MjData`` as it stands: after ``mj_step`` the kinematic quantities (``xpos``,
``cvel``, ...) and the contacts are those MuJoCo's own sensors saw during that step (the
state at the start of the step); call ``mujoco.mj_forward`` first to read the state after it.

Bad configuration disables the sensor: :attr:`LabSensor.disabled_reason` names the prim /
config field, the reason is logged once at error level, and :meth:`LabSensor.update` does
nothing (the data arrays keep zeros).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.sensors.lab._lab_kernels import history_push_kernel
from runtime.sensors.lab.bodies import BodyIndex, body_index_of

__all__ = ["LabSensor", "LabConfigError"]

LOGGER = logging.getLogger("runtime.sensors.lab")

_PERIOD_TOLERANCE = 1e-6
"""Seconds of slack in the due test (Isaac Lab's value)."""


class LabConfigError(ValueError):
    """Bad configuration of a lab sensor (the message names the prim / config field)."""


class LabSensor:
    """Base of the lab sensors: clocks, history and the disabled state.

    Args:
        source: a ``MujocoEngine`` or a ``mujoco.MjModel``.
        config: the sensor's config dataclass (``prim_path``, ``update_period``,
            ``history_length``).
        num_envs: number of worlds N passed to :meth:`update`.

    Attributes:
        config: the config.
        num_envs: N.
        model: the ``mujoco.MjModel``.
        bodies: the :class:`BodyIndex` of the model.
        disabled_reason: why bad configuration disabled the sensor, or None.
        timestamp: each world's sensor clock [s], shape (N,), float64.
        timestamp_last_update: each world's time of its last update [s], (N,), float64.
    """

    kind = "lab"
    _history_fields: tuple[str, ...] = ()

    def __init__(self, source: Any, config: Any, num_envs: int = 1) -> None:
        self.config = config
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise TypeError(f"num_envs must be an int, got {num_envs!r}")
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.num_envs = int(num_envs)
        self.model, self.bodies = body_index_of(source)
        self.bodies: BodyIndex
        self.disabled_reason: str | None = None
        self.timestamp = np.zeros(self.num_envs)
        self.timestamp_last_update = np.zeros(self.num_envs)
        self._outdated = np.ones(self.num_envs, bool)
        self._elapsed = np.zeros(self.num_envs)
        self._prefix = f"{type(self).__name__} {getattr(config, 'prim_path', '')!s}"
        period = getattr(config, "update_period", 0.0)
        history = getattr(config, "history_length", 0)
        self.update_period = 0.0
        self.history_length = 0
        try:
            self.update_period = self._check_period(period)
            self.history_length = self._check_history(history)
            self._setup()
        except LabConfigError as error:
            self.disable(str(error))
            self._setup_disabled()
        self._allocate_history()

    # ------------------------------------------------------------------ subclass hooks

    def _setup(self) -> None:
        """Resolve the config and allocate :attr:`data` (raise LabConfigError when bad)."""
        raise NotImplementedError

    def _setup_disabled(self) -> None:
        """Allocate a data object of the right type for a disabled sensor (zero-size)."""
        raise NotImplementedError

    def _update_world(self, env: int, data: Any) -> None:
        """Recompute world ``env`` from its ``MjData``."""
        raise NotImplementedError

    def _update_worlds(self, envs: Sequence[int], datas: Sequence[Any]) -> None:
        """Recompute the worlds ``envs`` (a sensor may batch them; default: one by one)."""
        for env in envs:
            self._update_world(env, datas[env])

    def _reset_world(self, env: int) -> None:
        """Clear the per-world state of ``env`` (called by :meth:`reset`)."""

    # ------------------------------------------------------------------ checks

    def fail(self, field: str, message: str) -> LabConfigError:
        """A :class:`LabConfigError` naming the sensor, its prim and the config field."""
        return LabConfigError(f"{self._prefix}: {field}: {message}")

    def _check_period(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
            raise self.fail("update_period", f"must be a number, got {value!r}")
        if not np.isfinite(value) or value < 0.0:
            raise self.fail("update_period", f"must be finite and >= 0, got {value!r}")
        return float(value)

    def _check_history(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise self.fail("history_length", f"must be an integer >= 0, got {value!r}")
        return int(value)

    def disable(self, reason: str) -> None:
        """Disable the sensor (logged once at error level); :meth:`update` then does nothing."""
        if self.disabled_reason is None:
            LOGGER.error("%s", reason)
        self.disabled_reason = reason

    @property
    def enabled(self) -> bool:
        """True unless bad configuration disabled the sensor."""
        return self.disabled_reason is None

    # ------------------------------------------------------------------ history

    def _allocate_history(self) -> None:
        self._histories: dict[str, np.ndarray] = {}
        for name in self._history_fields:
            value = getattr(self.data, name)
            length = (
                max(self.history_length, 1) if self._keeps_history_always else (self.history_length)
            )
            if length == 0:
                continue
            array = np.zeros((value.shape[0], length, *value.shape[1:]), value.dtype)
            self._histories[name] = array
            setattr(self.data, f"{name}_history", array)
        n = self.num_envs
        self._flat_histories = []
        for name, array in self._histories.items():
            value = getattr(self.data, name)
            if not value.flags.c_contiguous:  # pragma: no cover - by construction
                raise AssertionError(f"{name} must be C-contiguous to keep a history")
            flat = (value.reshape(n, -1), array.reshape(n, array.shape[1], -1))
            self._flat_histories.append(flat)

    _keeps_history_always = False
    """Isaac Lab keeps a contact sensor's history even at length 0 (as one entry)."""

    def _push_history(self, env: int) -> None:
        for values, history in self._flat_histories:
            history_push_kernel(env, values, history)

    # ------------------------------------------------------------------ clock

    def update(self, datas: Sequence[Any], dt: float, force_recompute: bool = False) -> None:
        """Advance every world's clock by ``dt`` and recompute the worlds that are due.

        Args:
            datas: N ``mujoco.MjData`` of the model, world i at index i.
            dt: time since the last call [s] (the physics step, or several).
            force_recompute: recompute every world now, due or not.

        Raises:
            ValueError: ``datas`` does not hold N worlds.
        """
        if self.disabled_reason is not None:
            return
        if len(datas) != self.num_envs:
            raise ValueError(f"{self._prefix}: expected {self.num_envs} MjData, got {len(datas)}")
        timestamp = self.timestamp
        timestamp += dt
        last = self.timestamp_last_update
        if self.update_period == 0.0 or force_recompute:
            due: Any = range(self.num_envs)  # every world, every call
            np.subtract(timestamp, last, out=self._elapsed)
            self._update_worlds(due, datas)
            if self._flat_histories:
                for env in due:
                    self._push_history(env)
            last[:] = timestamp
            self._outdated[:] = False
            return
        outdated = self._outdated
        outdated |= timestamp - last + _PERIOD_TOLERANCE >= self.update_period
        due = np.flatnonzero(outdated)
        if due.size == 0:
            return
        np.subtract(timestamp, last, out=self._elapsed)
        envs = due.tolist()
        self._update_worlds(envs, datas)
        if self._flat_histories:
            for env in envs:
                self._push_history(env)
        last[due] = timestamp[due]
        outdated[due] = False

    def reset(self, env_ids: Sequence[int] | None = None) -> None:
        """Reset the clocks, histories and per-world state of ``env_ids`` (None: all)."""
        envs = range(self.num_envs) if env_ids is None else [int(e) for e in env_ids]
        for env in envs:
            self.timestamp[env] = 0.0
            self.timestamp_last_update[env] = 0.0
            self._outdated[env] = True
            for array in self._histories.values():
                array[env] = 0
            if self.disabled_reason is None:
                self._reset_world(env)

    # ------------------------------------------------------------------ poses

    def entity_pose(self, data: Any, entity: int) -> tuple[np.ndarray, np.ndarray]:
        """World position (3,) and orientation (4,) wxyz of one entity in ``data``."""
        if self.bodies.is_static[entity]:
            return self.bodies.static_positions[entity], self.bodies.static_orientations[entity]
        body = self.bodies.body_ids[entity]
        return data.xpos[body], data.xquat[body]
