"""Noisy channels of a run: noise configured per sensor channel, recorded beside the exact one.

Noise is configured per (sensor prim path, reading field) in two places, merged parameter by
parameter (the second wins):

1. USD attributes of the sensor prim (the robot prim for joint states and efforts):
   ``simrt:noise:<field>:<parameter>``, e.g. ``simrt:noise:linear_acceleration:noiseDensity``
   (parameters: :data:`runtime.sensors.noise.PARAMETERS`);
2. the run's :attr:`RunConfig.noise <runtime.run.config.RunConfig>` mapping ``{sensor path:
   {field: {parameter: value}}}`` (a batch spec's ``[noise]`` table).

Every channel with noise gets a twin ``<channel>.noisy`` (same shape and dtype; field
``<field>.noisy``; its description's attrs name the exact channel, ``noisy_of``, and hold
the noise parameters). The store fills it chunk by chunk from the exact channel
(:meth:`runtime.recording.StoreWriter.add_derived`), the step column giving the random
numbers' counter, whichever path recorded the rows. The run's metadata gets ``noise``:
``{"seed": ..., "channels": {noisy name: parameters}}``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from runtime.errors import SchemaError, SimrtError
from runtime.recording.channels import ChannelInfo
from runtime.sensors.noise import PARAMETERS, NoiseModel, noise_parts

__all__ = [
    "NOISE_NAMESPACE",
    "NOISY_SUFFIX",
    "ChannelNoise",
    "attach_noise",
    "check_parts",
    "read_noise",
    "read_usd_noise",
    "spec_noise",
]

LOGGER = logging.getLogger("runtime.run")

NOISE_NAMESPACE = "simrt:noise"
NOISY_SUFFIX = ".noisy"

# which parameters a model error is about (its message starts with the part's name)
_PART_PARAMETERS = {
    "Latency": ("latencyTime", "latencySteps"),
    "Dropout": ("dropoutValue", "dropoutProbability"),
    "ConstantBias": ("constantBias",),
    "NoiseDensity": ("noiseDensity",),
    "BiasRandomWalk": ("biasRandomWalk",),
    "GaussMarkovBias": ("driftCorrelationTime", "driftStd"),
    "NoiseModel: give GaussianNoise": ("noiseDensity", "gaussianStd"),
    "NoiseModel: give GaussMarkovBias": ("biasRandomWalk", "driftStd"),
}


@dataclass(frozen=True)
class ChannelNoise:
    """The noise parameters of one (sensor, field), and where each came from.

    Attributes:
        sensor: the sensor's prim path.
        field: the reading field (the channel name's part after the sensor path).
        params: parameter name -> value.
        origins: parameter name -> where it was set (``"usd"`` or the spec's ``source``).
    """

    sensor: str
    field: str
    params: Mapping[str, Any]
    origins: Mapping[str, str]

    @property
    def channel(self) -> str:
        """The recorded channel's name, ``<sensor>.<field>`` (its random stream's id)."""
        return f"{self.sensor}.{self.field}"

    def model(self, dt: float | None, *, max_range: float | None = None) -> NoiseModel:
        """The noise model of this channel (the one a recording of it uses).

        Args:
            dt: the step [s].
            max_range: a range sensor's max range (its miss value).

        Raises:
            SimrtError: parameters the step makes impossible (SchemaError naming the
                attribute, for USD ones).
        """
        try:
            return NoiseModel(
                check_parts(self),
                dt=dt,
                sensor=self.sensor,
                channel=self.channel,
                max_range=max_range,
            )
        except ValueError as exc:
            text = str(exc)
            names = next(
                (names for prefix, names in _PART_PARAMETERS.items() if text.startswith(prefix)),
                tuple(self.params),
            )
            name = next((n for n in names if n in self.params), next(iter(self.params)))
            raise self.error(name, text) from None

    def error(self, parameter: str, problem: str) -> SimrtError:
        """An error naming the prim and attribute (USD) or the spec key."""
        origin = self.origins.get(parameter, "usd")
        if origin == "usd":
            return SchemaError(self.sensor, f"{NOISE_NAMESPACE}:{self.field}:{parameter}", problem)
        return SimrtError(f'{origin}: noise."{self.sensor}".{self.field}.{parameter}: {problem}')


def _usd_value(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "__len__") and not isinstance(value, str):
        return [float(v) for v in value]
    return str(value)  # (a token)


def read_usd_noise(stage: Any) -> dict[tuple[str, str], ChannelNoise]:
    """The noise attributes of every prim of ``stage``, checked.

    Raises:
        SchemaError: an unknown parameter, a value of the wrong type, or a bad combination
            (naming the prim and the attribute).
    """
    found: dict[tuple[str, str], ChannelNoise] = {}
    for prim in stage.Traverse():
        attributes = prim.GetAuthoredPropertiesInNamespace(NOISE_NAMESPACE)
        for attribute in attributes:
            name = attribute.GetName()
            path = str(prim.GetPath())
            parts = name.split(":")
            if len(parts) != 4 or not parts[2] or not parts[3]:
                raise SchemaError(
                    path, name, "not a noise attribute", "simrt:noise:<field>:<parameter>"
                )
            field, parameter = parts[2], parts[3]
            if parameter not in PARAMETERS:
                raise SchemaError(
                    path, name, f"unknown noise parameter {parameter!r}", ", ".join(PARAMETERS)
                )
            if not hasattr(attribute, "Get") or attribute.Get() is None:
                raise SchemaError(path, name, "no value authored")
            entry = found.get((path, field)) or ChannelNoise(path, field, {}, {})
            params = {**entry.params, parameter: _usd_value(attribute.Get())}
            origins = {**entry.origins, parameter: "usd"}
            found[(path, field)] = ChannelNoise(path, field, params, origins)
    for entry in found.values():
        check_parts(entry)
    return found


def check_parts(entry: ChannelNoise) -> list[Any]:
    """The noise parts of ``entry``'s parameters.

    Raises:
        SimrtError: a bad parameter (SchemaError naming the attribute, for USD ones).
    """
    try:
        return noise_parts(entry.params)
    except KeyError as exc:
        name = str(exc.args[0])
        raise entry.error(name, f"unknown noise parameter {name!r}") from None
    except ValueError as exc:
        name, _, problem = str(exc).partition(": ")
        raise entry.error(name, problem) from None


def spec_noise(table: Any, source: str) -> dict[tuple[str, str], ChannelNoise]:
    """The ``{sensor: {field: {parameter: value}}}`` mapping of a run or batch spec, checked.

    Raises:
        SimrtError: a malformed table or a bad parameter (naming ``source`` and the key).
    """
    found: dict[tuple[str, str], ChannelNoise] = {}
    if not isinstance(table, Mapping):
        raise SimrtError(f"{source}: noise: expected a table of sensor paths")
    for sensor, fields in table.items():
        if not isinstance(sensor, str) or not sensor.startswith("/"):
            raise SimrtError(f"{source}: noise.{sensor!r}: expected a sensor prim path")
        if not isinstance(fields, Mapping):
            raise SimrtError(f'{source}: noise."{sensor}": expected a table of fields')
        for field, params in fields.items():
            if not isinstance(params, Mapping) or not params:
                raise SimrtError(
                    f'{source}: noise."{sensor}".{field}: expected a table of parameters'
                )
            entry = ChannelNoise(sensor, str(field), dict(params), dict.fromkeys(params, source))
            check_parts(entry)
            found[(sensor, str(field))] = entry
    return found


def read_noise(stage: Any, spec: Mapping[str, Any] | None, source: str = "noise") -> list:
    """The noise of a run: the stage's attributes, then ``spec`` parameter by parameter.

    Args:
        stage: the run's stage.
        spec: ``{sensor path: {field: {parameter: value}}}`` (None / empty: none).
        source: what names ``spec`` in errors.

    Returns:
        One :class:`ChannelNoise` per configured (sensor, field).

    Raises:
        SimrtError / SchemaError: a bad attribute or parameter.
    """
    merged = read_usd_noise(stage)
    for key, entry in spec_noise(spec or {}, source).items():
        old = merged.get(key)
        if old is not None:
            entry = replace(
                entry,
                params={**old.params, **entry.params},
                origins={**old.origins, **entry.origins},
            )
            check_parts(entry)
        merged[key] = entry
    return list(merged.values())


def attach_noise(recorder: Any, noise: list, dt: float, seed: int) -> dict[str, Any]:
    """Add a noisy twin of every channel with noise to ``recorder`` (before its first row).

    Args:
        recorder: the run's :class:`~runtime.recording.StoreWriter`, its channels defined.
        noise: :func:`read_noise`'s entries.
        dt: the run's step [s].
        seed: the noise seed (a run's ``noise_seed``, a batch episode's seed).

    Returns:
        The run metadata's ``noise`` entry.

    Raises:
        SimrtError / SchemaError: noise for a channel that is not recorded or not a float
            channel, or parameters the step makes impossible (naming the attribute).
    """
    channels = recorder.channels
    by_field: dict[tuple[str, str], list[tuple[int, ChannelInfo]]] = {}
    max_ranges: dict[str, float] = {}  # a range sensor's (on one of its channels)
    for slot, info in enumerate(channels.values()):
        by_field.setdefault((info.sensor, info.field), []).append((slot, info))
        value = (info.attrs or {}).get("max_range")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            max_ranges.setdefault(info.sensor, float(value))
    bound, infos, meta = [], [], {}
    for entry in noise:
        found = by_field.get((entry.sensor, entry.field))
        first = next(iter(entry.params))
        if not found:
            fields = sorted({f for s, f in by_field if s == entry.sensor})
            known = f"recorded: {', '.join(fields)}" if fields else "no channels of this prim"
            raise entry.error(first, f"no recorded channel {entry.field!r} ({known})")
        for slot, info in found:
            if np.dtype(info.dtype).kind != "f":
                raise entry.error(first, f"channel {info.name!r} holds {info.dtype}, not floats")
            model = entry.model(dt, max_range=max_ranges.get(info.sensor))
            state = model.new_state(1, info.shape, seed=seed)
            name = info.name + NOISY_SUFFIX
            description = model.to_json()
            attrs = {**dict(info.attrs or {}), "noisy_of": info.name, "noise": description}
            infos.append(replace(info, name=name, field=info.field + NOISY_SUFFIX, attrs=attrs))
            bound.append((slot, model, state))
            meta[name] = {"exact": info.name, **description}
    if not bound:
        return {}

    def fill(buffers: list[np.ndarray], derived: list[np.ndarray], first: int, stop: int) -> None:
        steps = buffers[-2][first:stop]
        for (slot, model, state), out in zip(bound, derived, strict=True):
            model.apply_rows(buffers[slot][first:stop], out[first:stop], state, steps)

    recorder.add_derived(infos, fill)
    return {"seed": int(seed), "channels": meta}
