"""Sensor noise: readings that lie like real ones, seeded and reproducible.

A :class:`NoiseModel` turns exact readings into noisy ones. It is composed of parts (frozen
dataclasses), each at most once, applied per element in this fixed order:

1. :class:`ScaleFactor` -- ``x * s``, ``s`` drawn at each reset;
2. bias -- :class:`ConstantBias` + :class:`ResetBias` (drawn at each reset) + the drift of
   :class:`GaussMarkovBias` or :class:`BiasRandomWalk` (one step of it per reading);
3. white noise -- :class:`GaussianNoise` or :class:`NoiseDensity`, then
   :class:`UniformNoise` (each with an ``operation``: ``"add"``, ``"scale"`` or ``"abs"``,
   as Isaac Lab's noise cfgs);
4. :class:`RangeNoise` -- a range sensor's noise, growing with the range; a miss (a
   reading at the max range, or not finite) stays a miss;
5. :class:`Saturation` -- clipped to ``[low, high]``;
6. :class:`Quantization` -- rounded to the nearest multiple of the resolution (ties to
   even);
7. :class:`Dropout` -- the whole reading, or each element, lost with a probability; a lost
   element reads ``fill`` (NaN, 0 or a range sensor's max range);
8. :class:`Latency` -- the reading of ``k`` steps ago (until ``k`` readings exist after a
   reset, the first one after it).

Arrays are batched with the env axis first: ``exact`` and ``out`` have shape
``(num_envs, *shape)``. State lives in a :class:`NoiseState`::

    model = NoiseModel([GaussianNoise(0.01), Latency(steps=2)], dt=0.005,
                       sensor="/World/Imu", channel="angular_velocity")
    state = model.new_state(16, (3,), seed=7)
    model.apply(exact, out, state, step)      # one step of every env
    model.reset(state, env_ids=[3], seeds=[8])  # env 3 starts a new episode

**Random numbers.** Every random number is a hash (SplitMix64's finaliser) of a counter
made of the stream key of (seed, env, sensor, channel), the step and the element index: it
does not depend on how many envs are stepped together, in which order, in how many threads
or processes. The same seed and steps give the same noisy readings bit for bit, and env
``e`` of 16 reads what a single env numbered ``e`` (``first_env=e``) reads. Sensor and
channel ids are stable hashes (BLAKE2b) of the prim path and the channel name.

Configuration by parameter name (:func:`noise_parts`, used for USD attributes
``simrt:noise:<channel>:<name>`` and the batch spec's ``[noise]`` table) is documented in
``docs/guides/noise.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from runtime.sensors import _noise_kernels as K

__all__ = [
    "BiasRandomWalk",
    "ConstantBias",
    "Dropout",
    "GaussMarkovBias",
    "GaussianNoise",
    "Latency",
    "NoiseDensity",
    "NoiseModel",
    "NoiseState",
    "PARAMETERS",
    "Quantization",
    "RangeNoise",
    "ResetBias",
    "Saturation",
    "ScaleFactor",
    "UniformNoise",
    "DEFAULT_HISTORY",
    "noise_parts",
    "stable_id",
    "stream_key",
]

DEFAULT_HISTORY = 1000
"""Longest latency a model keeps history for, in steps (``history=`` raises it)."""

_OPERATIONS = {"add": 1, "scale": 2, "abs": 3}
_FILLS = ("nan", "zero", "max_range")
_MASK = (1 << 64) - 1
# the kernels run as plain Python (SIMRT_DISABLE_JIT=1): NumPy's 64-bit integer scalars then
# warn where the hash wraps around on purpose
_PLAIN_KERNELS = not hasattr(K.noise_apply_kernel, "py_func")


def _wrapping() -> Any:
    return np.errstate(over="ignore") if _PLAIN_KERNELS else contextlib.nullcontext()


def _number(owner: str, name: str, value: Any, *, low: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{owner}.{name}: expected a number, got {value!r}")
    value = float(value)
    if math.isnan(value) or (low is not None and value < low):
        bound = "" if low is None else f" >= {low:g}"
        raise ValueError(f"{owner}.{name}: expected a number{bound}, got {value!r}")
    return value


def _finite(owner: str, name: str, value: Any, *, low: float | None = None) -> float:
    number = _number(owner, name, value, low=low)
    if not math.isfinite(number):
        raise ValueError(f"{owner}.{name}: expected a finite number, got {value!r}")
    return number


def _operation(owner: str, value: Any) -> str:
    if value not in _OPERATIONS:
        raise ValueError(f"{owner}.operation: expected 'add', 'scale' or 'abs', got {value!r}")
    return str(value)


# ---------------------------------------------------------------------------- parts


@dataclass(frozen=True)
class GaussianNoise:
    """White Gaussian noise, drawn per element and step.

    Attributes:
        std: standard deviation [reading unit], >= 0.
        mean: mean [reading unit].
        operation: ``"add"`` (``x + n``), ``"scale"`` (``x * n``) or ``"abs"`` (``n``).
    """

    std: float
    mean: float = 0.0
    operation: str = "add"

    def __post_init__(self) -> None:
        object.__setattr__(self, "std", _finite("GaussianNoise", "std", self.std, low=0.0))
        object.__setattr__(self, "mean", _finite("GaussianNoise", "mean", self.mean))
        _operation("GaussianNoise", self.operation)


@dataclass(frozen=True)
class UniformNoise:
    """White uniform noise in ``[low, high)``, drawn per element and step.

    Attributes:
        low: lower bound [reading unit].
        high: upper bound [reading unit], >= low.
        operation: ``"add"``, ``"scale"`` or ``"abs"`` (see :class:`GaussianNoise`).
    """

    low: float
    high: float
    operation: str = "add"

    def __post_init__(self) -> None:
        low = _finite("UniformNoise", "low", self.low)
        high = _finite("UniformNoise", "high", self.high)
        if high < low:
            raise ValueError(f"UniformNoise.high: {high!r} is below low ({low!r})")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        _operation("UniformNoise", self.operation)


@dataclass(frozen=True)
class NoiseDensity:
    """White Gaussian noise given as a noise density (Kalibr's ``*_noise_density``).

    Sampled at step ``dt`` its standard deviation is ``density / sqrt(dt)``.

    Attributes:
        density: noise density [reading unit / sqrt(Hz)], >= 0.
    """

    density: float

    def __post_init__(self) -> None:
        value = _finite("NoiseDensity", "density", self.density, low=0.0)
        object.__setattr__(self, "density", value)


@dataclass(frozen=True)
class ConstantBias:
    """A constant bias added to every reading.

    Attributes:
        value: the bias [reading unit]: one number, or one per element of the reading.
    """

    value: float | tuple[float, ...]

    def __post_init__(self) -> None:
        if isinstance(self.value, (list, tuple, np.ndarray)):
            values = tuple(_finite("ConstantBias", "value", v) for v in self.value)
            if not values:
                raise ValueError("ConstantBias.value: expected a number or a non-empty list")
            object.__setattr__(self, "value", values)
        else:
            object.__setattr__(self, "value", _finite("ConstantBias", "value", self.value))


@dataclass(frozen=True)
class ResetBias:
    """A bias drawn at each reset: ``mean + std * n + half_range * (2 u - 1)``.

    Attributes:
        std: standard deviation of its Gaussian part [reading unit], >= 0.
        mean: its mean [reading unit].
        half_range: half-width of its uniform part [reading unit], >= 0.
        per_element: one draw per element (default); False: one for the whole reading.
    """

    std: float = 0.0
    mean: float = 0.0
    half_range: float = 0.0
    per_element: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "std", _finite("ResetBias", "std", self.std, low=0.0))
        object.__setattr__(self, "mean", _finite("ResetBias", "mean", self.mean))
        half = _finite("ResetBias", "half_range", self.half_range, low=0.0)
        object.__setattr__(self, "half_range", half)
        if not isinstance(self.per_element, (bool, np.bool_)):
            raise ValueError(
                f"ResetBias.per_element: expected True or False, got {self.per_element!r}"
            )


@dataclass(frozen=True)
class GaussMarkovBias:
    """A bias drifting as a first-order Gauss-Markov process (Gazebo's dynamic bias).

    ``b[k+1] = exp(-dt / tau) * b[k] + std * sqrt(1 - exp(-2 dt / tau)) * n``, started at
    each reset from its stationary distribution ``N(0, std^2)``.

    Attributes:
        std: stationary standard deviation [reading unit], >= 0.
        correlation_time: ``tau`` [s], > 0.
    """

    std: float
    correlation_time: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "std", _finite("GaussMarkovBias", "std", self.std, low=0.0))
        tau = _number("GaussMarkovBias", "correlation_time", self.correlation_time)
        if not tau > 0.0:
            raise ValueError(f"GaussMarkovBias.correlation_time: expected > 0 s, got {tau!r}")
        object.__setattr__(self, "correlation_time", tau)


@dataclass(frozen=True)
class BiasRandomWalk:
    """A bias drifting as a random walk (Kalibr's ``*_random_walk``), 0 at each reset.

    ``b[k+1] = b[k] + random_walk * sqrt(dt) * n``.

    Attributes:
        random_walk: bias random walk [reading unit / s / sqrt(Hz)], >= 0.
    """

    random_walk: float

    def __post_init__(self) -> None:
        value = _finite("BiasRandomWalk", "random_walk", self.random_walk, low=0.0)
        object.__setattr__(self, "random_walk", value)


@dataclass(frozen=True)
class ScaleFactor:
    """A scale factor drawn per element at each reset: ``factor + std * n``.

    Attributes:
        factor: mean factor.
        std: its standard deviation, >= 0.
    """

    factor: float = 1.0
    std: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", _finite("ScaleFactor", "factor", self.factor))
        object.__setattr__(self, "std", _finite("ScaleFactor", "std", self.std, low=0.0))


@dataclass(frozen=True)
class Quantization:
    """Readings rounded to the nearest multiple of ``resolution`` (ties to even).

    Attributes:
        resolution: [reading unit], > 0.
    """

    resolution: float

    def __post_init__(self) -> None:
        value = _finite("Quantization", "resolution", self.resolution)
        if not value > 0.0:
            raise ValueError(f"Quantization.resolution: expected > 0, got {value!r}")
        object.__setattr__(self, "resolution", value)


@dataclass(frozen=True)
class Saturation:
    """Readings clipped to ``[low, high]`` (a NaN stays NaN).

    Attributes:
        low: [reading unit] (``-inf``: none).
        high: [reading unit] (``inf``: none), >= low.
    """

    low: float = -math.inf
    high: float = math.inf

    def __post_init__(self) -> None:
        low = _number("Saturation", "low", self.low)
        high = _number("Saturation", "high", self.high)
        if high < low:
            raise ValueError(f"Saturation.high: {high!r} is below low ({low!r})")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)


@dataclass(frozen=True)
class Latency:
    """Each reading delayed by ``steps`` steps, or by ``seconds`` (rounded to steps of dt).

    Attributes:
        steps: delay [steps], >= 0.
        seconds: delay [s], >= 0 (wins over ``steps``; the model needs ``dt``).
    """

    steps: int = 0
    seconds: float | None = None

    def __post_init__(self) -> None:
        steps = self.steps
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
            raise ValueError(f"Latency.steps: expected an integer >= 0, got {steps!r}")
        object.__setattr__(self, "steps", int(steps))
        if self.seconds is not None:
            value = _finite("Latency", "seconds", self.seconds, low=0.0)
            object.__setattr__(self, "seconds", value)


@dataclass(frozen=True)
class Dropout:
    """Readings lost with a probability.

    Attributes:
        probability: chance of a loss per reading (or per element), in [0, 1].
        per_element: each element (a lidar's ray) is lost on its own; False: the whole
            reading.
        fill: what a lost element reads: ``"nan"``, ``"zero"``, ``"max_range"`` (a range
            sensor's max range; the model needs ``max_range``) or a number.
    """

    probability: float
    per_element: bool = False
    fill: float | str = "nan"

    def __post_init__(self) -> None:
        p = _number("Dropout", "probability", self.probability)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout.probability: expected a number in [0, 1], got {p!r}")
        object.__setattr__(self, "probability", p)
        if not isinstance(self.per_element, (bool, np.bool_)):
            raise ValueError(
                f"Dropout.per_element: expected True or False, got {self.per_element!r}"
            )
        if isinstance(self.fill, str):
            if self.fill not in _FILLS:
                raise ValueError(
                    f"Dropout.fill: expected one of {_FILLS} or a number, got {self.fill!r}"
                )
        else:
            object.__setattr__(self, "fill", _number("Dropout", "fill", self.fill))


@dataclass(frozen=True)
class RangeNoise:
    """A range sensor's Gaussian range noise, std ``std + proportional * range``.

    Only readings below the max range (hits) get it; a miss stays a miss.

    Attributes:
        std: constant part [stage units], >= 0.
        proportional: part per unit of range, >= 0 (e.g. 0.001: 0.1 % of the range).
    """

    std: float = 0.0
    proportional: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "std", _finite("RangeNoise", "std", self.std, low=0.0))
        value = _finite("RangeNoise", "proportional", self.proportional, low=0.0)
        object.__setattr__(self, "proportional", value)


_PART_TYPES = (
    GaussianNoise, UniformNoise, NoiseDensity, ConstantBias, ResetBias, GaussMarkovBias,
    BiasRandomWalk, ScaleFactor, Quantization, Saturation, Latency, Dropout, RangeNoise,
)  # fmt: skip
_EXCLUSIVE = ((GaussianNoise, NoiseDensity), (GaussMarkovBias, BiasRandomWalk))


# ---------------------------------------------------------------------------- ids


def _mix64(z: int) -> int:
    """SplitMix64's finaliser on Python ints (the kernels' ``_mix64``)."""
    z &= _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def stable_id(text: str) -> int:
    """A stable 64-bit id of a prim path or channel name (BLAKE2b, the same in every process)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def stream_key(seed: int, env: int, sensor_id: int, channel_id: int) -> int:
    """The 64-bit stream key of one (seed, env, sensor, channel); seeds are taken mod 2**64."""
    key = _mix64(int(seed) & _MASK)
    key = _mix64(key ^ (int(env) & _MASK))
    key = _mix64(key ^ sensor_id)
    return _mix64(key ^ channel_id)


# ---------------------------------------------------------------------------- model


@dataclass
class NoiseState:
    """The per-env state of one :class:`NoiseModel` (made by :meth:`NoiseModel.new_state`).

    Attributes:
        shape: the shape of one env's reading.
        first_env: the global index of env 0 of this state (workers holding a slice).
        seeds: each env's seed as given (Python ints, length N; used mod 2**64).
        keys: stream keys, uint64, shape (N,).
        offset: constant + reset bias per element, float64, shape (N, E).
        scale: scale factor per element, float64, shape (N, E).
        drift: bias drift per element, float64, shape (N, E).
        ring: the last ``latency + 1`` readings, float64, shape (N, latency + 1, E).
        ring_state: ``(head, filled)`` of each ring, int64, shape (N, 2).
        const_bias: the constant bias per element, float64, shape (E,).
        work: scratch of the kernel, float64, shape (E,) (a state is used by one thread at
            a time).
        bits: scratch of the kernel, uint64, shape (E,).
    """

    shape: tuple[int, ...]
    first_env: int
    seeds: list[int]
    keys: np.ndarray
    offset: np.ndarray
    scale: np.ndarray
    drift: np.ndarray
    ring: np.ndarray
    ring_state: np.ndarray
    const_bias: np.ndarray
    work: np.ndarray
    bits: np.ndarray
    _env_ids: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))

    @property
    def num_envs(self) -> int:
        """Number of envs."""
        return int(self.keys.shape[0])


class NoiseModel:
    """Noise of one channel: parts applied in the module's fixed order.

    Args:
        parts: the noise parts, each type at most once (not both :class:`GaussianNoise` and
            :class:`NoiseDensity`, nor both :class:`GaussMarkovBias` and
            :class:`BiasRandomWalk`).
        dt: the step [s], needed by :class:`NoiseDensity`, the drifts and
            ``Latency(seconds=...)``.
        sensor: the sensor's prim path (its stream id).
        channel: the channel's name (its stream id).
        max_range: a range sensor's max range [stage units]: its miss value, for
            :class:`RangeNoise` and ``Dropout(fill="max_range")``.
        history: the longest latency allowed [steps].

    Raises:
        ValueError: a bad part, a repeated part, a missing ``dt`` / ``max_range``, or a
            latency longer than ``history``.
    """

    def __init__(
        self,
        parts: Iterable[Any] = (),
        *,
        dt: float | None = None,
        sensor: str = "",
        channel: str = "",
        max_range: float | None = None,
        history: int = DEFAULT_HISTORY,
    ) -> None:
        self.parts = tuple(parts)
        self.sensor, self.channel = str(sensor), str(channel)
        self.sensor_id, self.channel_id = stable_id(self.sensor), stable_id(self.channel)
        if dt is not None:
            dt = _number("NoiseModel", "dt", dt)
            if not (dt > 0.0 and math.isfinite(dt)):
                raise ValueError(f"NoiseModel.dt: expected a finite step > 0 s, got {dt!r}")
        self.dt = dt
        if max_range is not None:
            max_range = _number("NoiseModel", "max_range", max_range, low=0.0)
        self.max_range = max_range
        by_type: dict[type, Any] = {}
        for part in self.parts:
            if not isinstance(part, _PART_TYPES):
                raise ValueError(f"NoiseModel: {part!r} is not a noise part")
            if type(part) in by_type:
                raise ValueError(f"NoiseModel: {type(part).__name__} given twice")
            by_type[type(part)] = part
        for first, second in _EXCLUSIVE:
            if first in by_type and second in by_type:
                raise ValueError(
                    f"NoiseModel: give {first.__name__} or {second.__name__}, not both"
                )
        self._by_type = by_type
        self.params = self._params(by_type)
        self.latency_steps = int(self.params[K.P_LATENCY])
        if isinstance(history, bool) or not isinstance(history, (int, np.integer)) or history < 0:
            raise ValueError(f"NoiseModel.history: expected an integer >= 0, got {history!r}")
        if self.latency_steps > history:
            raise ValueError(
                f"Latency: {self.latency_steps} steps is longer than the history kept "
                f"({history} steps)"
            )
        bias = by_type.get(ConstantBias)
        self._const_bias = 0.0 if bias is None else bias.value

    def _need_dt(self, what: str) -> float:
        if self.dt is None:
            raise ValueError(f"{what}: needs the step dt (NoiseModel(..., dt=))")
        return self.dt

    def _params(self, parts: Mapping[type, Any]) -> np.ndarray:
        p = np.zeros(K.P_COUNT, np.float64)
        p[K.P_SCALE_MEAN], p[K.P_DRIFT_PHI] = 1.0, 1.0
        p[K.P_SAT_LOW], p[K.P_SAT_HIGH], p[K.P_MAX_RANGE] = -math.inf, math.inf, math.inf
        if self.max_range is not None:
            p[K.P_MAX_RANGE] = self.max_range
        if (part := parts.get(GaussianNoise)) is not None:
            p[K.P_GAUSS_MEAN], p[K.P_GAUSS_STD] = part.mean, part.std
            p[K.P_GAUSS_OP] = _OPERATIONS[part.operation]
        if (part := parts.get(NoiseDensity)) is not None:
            p[K.P_GAUSS_STD] = part.density / math.sqrt(self._need_dt("NoiseDensity"))
            p[K.P_GAUSS_OP] = _OPERATIONS["add"]
        if (part := parts.get(UniformNoise)) is not None:
            p[K.P_UNI_LOW], p[K.P_UNI_HIGH] = part.low, part.high
            p[K.P_UNI_OP] = _OPERATIONS[part.operation]
        if (part := parts.get(RangeNoise)) is not None:
            p[K.P_RANGE_STD], p[K.P_RANGE_PROP] = part.std, part.proportional
        if (part := parts.get(GaussMarkovBias)) is not None:
            phi = math.exp(-self._need_dt("GaussMarkovBias") / part.correlation_time)
            p[K.P_DRIFT_PHI] = phi
            p[K.P_DRIFT_Q] = part.std * math.sqrt(max(0.0, 1.0 - phi * phi))
            p[K.P_DRIFT_INIT] = part.std
        if (part := parts.get(BiasRandomWalk)) is not None:
            p[K.P_DRIFT_Q] = part.random_walk * math.sqrt(self._need_dt("BiasRandomWalk"))
        if (part := parts.get(ResetBias)) is not None:
            p[K.P_BIAS_MEAN], p[K.P_BIAS_STD] = part.mean, part.std
            p[K.P_BIAS_HALF] = part.half_range
            p[K.P_BIAS_SHARED] = 0.0 if part.per_element else 1.0
        if (part := parts.get(ScaleFactor)) is not None:
            p[K.P_SCALE_MEAN], p[K.P_SCALE_STD] = part.factor, part.std
        if (part := parts.get(Saturation)) is not None:
            p[K.P_SAT_LOW], p[K.P_SAT_HIGH] = part.low, part.high
        if (part := parts.get(Quantization)) is not None:
            p[K.P_RESOLUTION] = part.resolution
        if (part := parts.get(Dropout)) is not None:
            p[K.P_DROP_P] = part.probability
            p[K.P_DROP_MODE] = 2 if part.per_element else 1
            fill = part.fill
            if fill == "max_range":
                if self.max_range is None:
                    raise ValueError("Dropout.fill: 'max_range' needs the model's max_range")
                fill = self.max_range
            p[K.P_DROP_FILL] = {"nan": math.nan, "zero": 0.0}.get(fill, fill)  # type: ignore[call-overload]
        if (part := parts.get(Latency)) is not None:
            steps = part.steps
            if part.seconds is not None:
                steps = int(round(part.seconds / self._need_dt("Latency.seconds")))
            p[K.P_LATENCY] = steps
        return p

    # ------------------------------------------------------------------ state
    def new_state(
        self,
        num_envs: int,
        shape: int | Sequence[int] = (),
        *,
        seed: int | Sequence[int] = 0,
        first_env: int = 0,
    ) -> NoiseState:
        """A state for ``num_envs`` envs of readings of ``shape``, reset with ``seed``.

        Args:
            num_envs: number of envs (N >= 1).
            shape: the shape of one env's reading.
            seed: one seed for every env, or one per env.
            first_env: the global index of the first env (a worker holding envs
                ``first_env .. first_env + N - 1`` of a larger vector env).

        Raises:
            ValueError: bad counts, or a :class:`ConstantBias` of another element count.
        """
        if (
            isinstance(num_envs, bool)
            or not isinstance(num_envs, (int, np.integer))
            or num_envs < 1
        ):
            raise ValueError(f"num_envs: expected an integer >= 1, got {num_envs!r}")
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
        if any(n < 0 for n in shape):
            raise ValueError(f"shape: expected sizes >= 0, got {shape}")
        count = int(np.prod(shape, dtype=np.int64))
        const = np.zeros(count, np.float64)
        if isinstance(self._const_bias, tuple):
            if len(self._const_bias) != count:
                raise ValueError(
                    f"ConstantBias.value: {len(self._const_bias)} values for readings of "
                    f"{count} elements"
                )
            const[:] = self._const_bias
        else:
            const[:] = self._const_bias
        n = int(num_envs)
        state = NoiseState(
            shape=shape,
            first_env=int(first_env),
            seeds=[0] * n,
            keys=np.zeros(n, np.uint64),
            offset=np.zeros((n, count)),
            scale=np.ones((n, count)),
            drift=np.zeros((n, count)),
            ring=np.zeros((n, self.latency_steps + 1, count)),
            ring_state=np.zeros((n, 2), np.int64),
            const_bias=const,
            work=np.zeros(count),
            bits=np.zeros(count, np.uint64),
            _env_ids=np.arange(n, dtype=np.int64),
        )
        self.reset(state, None, seed)
        return state

    def reset(
        self,
        state: NoiseState,
        env_ids: Sequence[int] | np.ndarray | None = None,
        seeds: int | Sequence[int] | np.ndarray = 0,
    ) -> None:
        """Start new episodes: redraw the reset biases, scale factors, drifts; clear latency.

        Args:
            state: the state.
            env_ids: local env indices (None: every env).
            seeds: one seed for all of them, or one per env of ``env_ids``.

        Raises:
            ValueError: an env index out of range, or a seed count that does not match.
        """
        ids = state._env_ids if env_ids is None else np.asarray(env_ids, np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= state.num_envs):
            raise ValueError(f"env_ids: expected indices in [0, {state.num_envs}), got {ids}")
        if isinstance(seeds, (int, np.integer)):
            values = [int(seeds)] * ids.size
        else:
            values = [int(s) for s in np.asarray(seeds).reshape(-1)]
            if len(values) != ids.size:
                raise ValueError(f"seeds: {len(values)} seeds for {ids.size} envs")
        for n, seed in zip(ids.tolist(), values, strict=True):
            state.seeds[n] = seed
            env = state.first_env + n
            state.keys[n] = stream_key(seed, env, self.sensor_id, self.channel_id)
        if state.ring.shape[1] != self.latency_steps + 1:
            raise ValueError("reset: the state was made by another model's new_state")
        with _wrapping():
            K.noise_reset_kernel(
                np.ascontiguousarray(ids), state.keys, self.params, state.const_bias,
                state.offset, state.scale, state.drift, state.ring_state,
            )  # fmt: skip

    # ------------------------------------------------------------------ apply
    def apply(
        self,
        exact: np.ndarray,
        out: np.ndarray | None,
        state: NoiseState,
        step: int | Sequence[int] | np.ndarray,
    ) -> np.ndarray:
        """One step of noisy readings for every env (advances drifts and latency).

        Args:
            exact: exact readings, float32 / float64, shape ``(N, *shape)``.
            out: where the noisy readings go, float32 / float64, same shape (may be
                ``exact``); None: a new array of ``exact``'s dtype.
            state: the state (:meth:`new_state`).
            step: the step counter of every env, or one per env (shape (N,)); each step
                number gives its own random numbers.

        Returns:
            ``out``.

        Raises:
            ValueError: shapes or dtypes that do not match the state.
        """
        n = state.num_envs
        exact3 = self._view(exact, (n, *state.shape), "exact").reshape(1, n, -1)
        if out is None:
            out = np.empty_like(exact)
        out3 = self._view(out, (n, *state.shape), "out").reshape(1, n, -1)
        steps = np.empty((1, n), np.int64)
        steps[0] = step
        with _wrapping():
            K.noise_apply_kernel(
                exact3, steps, state.keys, self.params, state.offset, state.scale,
                state.drift, state.ring, state.ring_state, state.work, state.bits, out3,
            )  # fmt: skip
        return out

    def apply_rows(
        self,
        exact: np.ndarray,
        out: np.ndarray,
        state: NoiseState,
        steps: np.ndarray,
    ) -> None:
        """Consecutive steps of one env (a recording's rows), in row order.

        Args:
            exact: exact readings, float32 / float64, shape ``(R, *shape)``.
            out: noisy readings, float32 / float64, shape ``(R, *shape)``.
            state: a state of one env.
            steps: the step counter of each row, int64, shape (R,).

        Raises:
            ValueError: shapes or dtypes that do not match the state.
        """
        if state.num_envs != 1:
            raise ValueError(f"apply_rows: expected a state of one env, got {state.num_envs}")
        rows = int(np.shape(steps)[0])
        exact3 = self._view(exact, (rows, *state.shape), "exact").reshape(rows, 1, -1)
        out3 = self._view(out, (rows, *state.shape), "out").reshape(rows, 1, -1)
        steps2 = np.ascontiguousarray(steps, np.int64).reshape(rows, 1)
        with _wrapping():
            K.noise_apply_kernel(
                exact3, steps2, state.keys, self.params, state.offset, state.scale,
                state.drift, state.ring, state.ring_state, state.work, state.bits, out3,
            )  # fmt: skip

    @staticmethod
    def _view(array: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
        if not isinstance(array, np.ndarray) or array.dtype not in (np.float32, np.float64):
            kind = getattr(array, "dtype", type(array).__name__)
            raise ValueError(f"{name}: expected a float32 or float64 array, got {kind}")
        if array.shape != shape:
            raise ValueError(f"{name}: expected shape {shape}, got {array.shape}")
        if not array.flags.c_contiguous:
            raise ValueError(f"{name}: expected a C-contiguous array")
        return array

    # ------------------------------------------------------------------ description
    def to_json(self) -> dict[str, Any]:
        """The model's parameters as JSON data (recorded with a run)."""
        parts = {}
        for part in self.parts:
            data = asdict(part)
            parts[type(part).__name__] = {
                k: (list(v) if isinstance(v, tuple) else _json_number(v)) for k, v in data.items()
            }
        return {
            "sensor": self.sensor,
            "channel": self.channel,
            "dt": self.dt,
            "max_range": self.max_range,
            "latency_steps": self.latency_steps,
            "parts": parts,
        }

    def __repr__(self) -> str:
        inner = ", ".join(repr(p) for p in self.parts)
        return (
            f"NoiseModel([{inner}], dt={self.dt}, sensor={self.sensor!r}, channel={self.channel!r})"
        )


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "inf", "-inf", "nan": JSON has no such numbers
    return value


# ---------------------------------------------------------------------------- by name

PARAMETERS: dict[str, tuple[str, str]] = {
    "gaussianStd": ("double", "white Gaussian noise std [unit], >= 0"),
    "gaussianMean": ("double", "white Gaussian noise mean [unit]"),
    "uniformLow": ("double", "white uniform noise, lower bound [unit]"),
    "uniformHigh": ("double", "white uniform noise, upper bound [unit]"),
    "noiseDensity": ("double", "white noise density [unit/sqrt(Hz)], >= 0 (Kalibr)"),
    "biasRandomWalk": ("double", "bias random walk [unit/s/sqrt(Hz)], >= 0 (Kalibr)"),
    "driftStd": ("double", "Gauss-Markov bias drift, stationary std [unit], >= 0"),
    "driftCorrelationTime": ("double", "Gauss-Markov correlation time [s], > 0"),
    "constantBias": ("double or double[]", "constant bias [unit] (one, or per element)"),
    "biasMean": ("double", "bias drawn at each reset: mean [unit]"),
    "biasStd": ("double", "bias drawn at each reset: Gaussian std [unit], >= 0"),
    "biasRange": ("double", "bias drawn at each reset: uniform half-width [unit], >= 0"),
    "scaleFactor": ("double", "scale factor (mean), default 1"),
    "scaleFactorStd": ("double", "scale factor std drawn at each reset, >= 0"),
    "resolution": ("double", "quantization step [unit], > 0"),
    "saturationMin": ("double", "lowest reading [unit]"),
    "saturationMax": ("double", "highest reading [unit]"),
    "latencySteps": ("int", "delay [steps], >= 0, <= history"),
    "latencyTime": ("double", "delay [s], >= 0 (rounded to steps; wins over latencySteps)"),
    "dropoutProbability": ("double", "probability of a lost reading / element, in [0, 1]"),
    "dropoutPerElement": ("bool", "each element (ray) lost on its own (default false)"),
    "dropoutValue": ("token", "value of a lost element: nan (default), zero, maxRange"),
    "rangeStd": ("double", "range noise std [stage units], >= 0 (misses stay misses)"),
    "rangeProportional": ("double", "range noise std per unit of range, >= 0"),
}
"""Noise parameters by name: (type, meaning). USD: ``simrt:noise:<channel>:<name>``."""

_DROP_VALUES = {"nan": "nan", "zero": "zero", "maxRange": "max_range"}


def noise_parts(params: Mapping[str, Any]) -> list[Any]:
    """Noise parts from parameters by name (:data:`PARAMETERS`).

    Args:
        params: parameter name -> value.

    Returns:
        The parts.

    Raises:
        KeyError: an unknown parameter name (the name is the error's argument).
        ValueError: a bad value, as ``"<name>: <problem>"``.
    """
    for name in params:
        if name not in PARAMETERS:
            raise KeyError(name)
    get = params.get

    def checked(names: Sequence[str], build: Any) -> Any:
        try:
            return build()
        except (ValueError, TypeError) as exc:
            message = str(exc).split(": ", 1)[-1]
            given = [n for n in names if n in params]
            raise ValueError(f"{given[0] if given else names[0]}: {message}") from None

    def _bad(name: str, problem: str) -> ValueError:
        return ValueError(f"{name}: {problem}")

    parts: list[Any] = []
    if "gaussianStd" in params or "gaussianMean" in params:
        if "gaussianStd" not in params:
            raise _bad("gaussianMean", "needs gaussianStd")
        parts.append(checked(["gaussianStd", "gaussianMean"], lambda: GaussianNoise(
            get("gaussianStd"), get("gaussianMean", 0.0))))  # fmt: skip
    if "uniformLow" in params or "uniformHigh" in params:
        if "uniformLow" not in params or "uniformHigh" not in params:
            raise _bad("uniformHigh" if "uniformLow" in params else "uniformLow", "missing")
        parts.append(checked(["uniformHigh", "uniformLow"], lambda: UniformNoise(
            get("uniformLow"), get("uniformHigh"))))  # fmt: skip
    if "noiseDensity" in params:
        parts.append(checked(["noiseDensity"], lambda: NoiseDensity(get("noiseDensity"))))
    if "biasRandomWalk" in params:
        parts.append(checked(["biasRandomWalk"], lambda: BiasRandomWalk(get("biasRandomWalk"))))
    if "driftStd" in params or "driftCorrelationTime" in params:
        if "driftStd" not in params or "driftCorrelationTime" not in params:
            raise _bad("driftCorrelationTime" if "driftStd" in params else "driftStd", "missing")
        parts.append(checked(["driftCorrelationTime", "driftStd"], lambda: GaussMarkovBias(
            get("driftStd"), get("driftCorrelationTime"))))  # fmt: skip
    if "constantBias" in params:
        parts.append(checked(["constantBias"], lambda: ConstantBias(get("constantBias"))))
    if {"biasMean", "biasStd", "biasRange"} & set(params):
        parts.append(checked(["biasStd", "biasRange", "biasMean"], lambda: ResetBias(
            get("biasStd", 0.0), get("biasMean", 0.0), get("biasRange", 0.0))))  # fmt: skip
    if "scaleFactor" in params or "scaleFactorStd" in params:
        parts.append(checked(["scaleFactorStd", "scaleFactor"], lambda: ScaleFactor(
            get("scaleFactor", 1.0), get("scaleFactorStd", 0.0))))  # fmt: skip
    if "resolution" in params:
        parts.append(checked(["resolution"], lambda: Quantization(get("resolution"))))
    if "saturationMin" in params or "saturationMax" in params:
        parts.append(checked(["saturationMax", "saturationMin"], lambda: Saturation(
            get("saturationMin", -math.inf), get("saturationMax", math.inf))))  # fmt: skip
    if "latencySteps" in params or "latencyTime" in params:
        parts.append(checked(["latencyTime", "latencySteps"], lambda: Latency(
            get("latencySteps", 0), get("latencyTime"))))  # fmt: skip
    if {"dropoutProbability", "dropoutPerElement", "dropoutValue"} & set(params):
        if "dropoutProbability" not in params:
            raise _bad("dropoutPerElement", "needs dropoutProbability")
        value = get("dropoutValue", "nan")
        if value not in _DROP_VALUES:
            raise _bad("dropoutValue", f"expected nan, zero or maxRange, got {value!r}")
        parts.append(checked(["dropoutProbability", "dropoutPerElement"], lambda: Dropout(
            get("dropoutProbability"), get("dropoutPerElement", False),
            _DROP_VALUES[value])))  # fmt: skip
    if "rangeStd" in params or "rangeProportional" in params:
        parts.append(checked(["rangeStd", "rangeProportional"], lambda: RangeNoise(
            get("rangeStd", 0.0), get("rangeProportional", 0.0))))  # fmt: skip
    return parts
