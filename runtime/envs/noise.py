"""Noisy observations: the scene's sensor noise applied to an env's observations.

Noise is configured as for ``simrt run`` (:mod:`runtime.run.noise_channels`): USD attributes
``simrt:noise:<field>:<parameter>`` on the sensor prims, then the env's ``noise=`` mapping
``{sensor path: {field: {parameter: value}}}`` on top (the batch spec's ``[noise]``
vocabulary). The observation of a channel with noise is the noisy reading; the exact one is
observable as ``"<channel>.exact"``.

A reading is one env step: drifts and correlation times use the env step
(``decimation`` physics steps), latencies count env steps, and the random numbers of env
``e``'s episode come from its episode seed, ``e`` and the channel, counted by its physics
step -- the same for any number of envs or threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["ObservationNoise"]

EXACT_SUFFIX = ".exact"


class ObservationNoise:
    """The noise models of an env's observed channels and their per-env state.

    Args:
        worlds: the :class:`~runtime.run.worlds.Worlds`.
        spec: ``{sensor path: {field: {parameter: value}}}`` over the USD attributes.
        dt: one reading's step [s] (the env step).
    """

    def __init__(self, worlds: Any, spec: Mapping[str, Any] | None, dt: float) -> None:
        from runtime.run.noise_channels import read_noise

        self.worlds = worlds
        self.models: dict[str, tuple[Any, Any]] = {}  # channel -> (model, state)
        by_field = {(info.sensor, info.field): info for info in worlds.channels.values()}
        max_ranges: dict[str, float] = {}
        for info in worlds.channels.values():
            value = (info.attrs or {}).get("max_range")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                max_ranges.setdefault(info.sensor, float(value))
        for entry in read_noise(worlds.stage, spec, "noise"):
            info = by_field.get((entry.sensor, entry.field))
            first = next(iter(entry.params))
            if info is None:
                raise entry.error(first, f"no observable channel {entry.field!r}")
            if np.dtype(info.dtype).kind != "f":
                raise entry.error(first, f"channel {info.name!r} holds {info.dtype}, not floats")
            model = entry.model(dt, max_range=max_ranges.get(info.sensor))
            state = model.new_state(worlds.num_envs, info.shape, seed=0)
            self.models[info.name] = (model, state)

    def exact_names(self) -> dict[str, str]:
        """``"<channel>.exact"`` -> ``"<channel>"`` for every noisy channel."""
        return {name + EXACT_SUFFIX: name for name in self.models}

    def __bool__(self) -> bool:
        return bool(self.models)

    def describe(self) -> dict[str, Any]:
        """The noise parameters of every noisy channel (JSON data)."""
        return {name: model.to_json() for name, (model, _) in self.models.items()}

    def reset(self, env: int, seed: int) -> None:
        """Env ``env`` begins an episode seeded ``seed`` (biases redrawn, history cleared)."""
        for model, state in self.models.values():
            model.reset(state, [env], [seed])

    def apply(self, observations: dict[str, np.ndarray], single: bool = False) -> None:
        """Make the observed noisy channels noisy, in place (their exact twins stay exact).

        Args:
            observations: the env's fresh observation arrays (env axis first, or without it
                for ``single``, a one-env observation).
            single: the arrays have no env axis.
        """
        steps = self.worlds.step_count
        for name, (model, state) in self.models.items():
            values = observations.get(name)
            if values is None:  # (not observed: its state does not advance)
                continue
            batch = values.reshape(1, *values.shape) if single else values
            model.apply(batch, batch, state, steps)
