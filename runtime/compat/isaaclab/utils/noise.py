"""``isaaclab.utils.noise`` cfg names, converted to simrt's noise models.

``from isaaclab.utils import noise`` becomes ``from runtime.compat.isaaclab.utils import
noise``. The cfg classes take Isaac Lab's field names and defaults; :func:`to_noise_model`
(or a cfg's ``to_noise_model``) turns one into a :class:`runtime.sensors.noise.NoiseModel`,
whose random numbers are seeded and counter-based (reproducible), where Isaac Lab draws from
torch's global generator.

==============================================  =============================================
Isaac Lab cfg                                   simrt part
==============================================  =============================================
``GaussianNoiseCfg(mean, std, operation)``      ``GaussianNoise(std, mean, operation)``
``UniformNoiseCfg(n_min, n_max, operation)``    ``UniformNoise(n_min, n_max, operation)``
``ConstantNoiseCfg(bias, operation="add")``     ``ConstantBias(bias)``
``ConstantNoiseCfg(bias, operation="scale")``   ``ScaleFactor(bias)``
``ConstantNoiseCfg(bias, operation="abs")``     ``GaussianNoise(0, mean=bias, operation="abs")``
``NoiseModelCfg(noise_cfg)``                    the part of ``noise_cfg``
``NoiseModelWithAdditiveBiasCfg(noise_cfg,      the part of ``noise_cfg`` + a bias redrawn at
bias_noise_cfg, sample_bias_per_component)``    each reset: ``bias_noise_cfg`` applied to 0
                                                (Gaussian: ``ResetBias(std, mean)``; uniform:
                                                ``ResetBias(half_range=...)`` about the
                                                middle; constant: ``ConstantBias``)
==============================================  =============================================

Per-component tensors of ``mean`` / ``std`` / ``n_min`` / ``n_max`` are refused (one number
each); ``bias`` may be a sequence (one per component). Isaac Lab's torch functions
(``gaussian_noise``, ...) and noise model classes are not provided: apply the converted
model (``model.apply(exact, out, state, step)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runtime.sensors.noise import (
    ConstantBias,
    GaussianNoise,
    NoiseModel,
    ResetBias,
    ScaleFactor,
    UniformNoise,
)

__all__ = [
    "ConstantNoiseCfg",
    "GaussianNoiseCfg",
    "NoiseCfg",
    "NoiseModelCfg",
    "NoiseModelWithAdditiveBiasCfg",
    "UniformNoiseCfg",
    "to_noise_model",
    "to_noise_parts",
]


def _scalar(owner: str, name: str, value: Any) -> Any:
    """One number (a 0-d array or tensor is taken as its value); checked by the part."""
    if isinstance(value, Sequence) or hasattr(value, "shape") and getattr(value, "ndim", 0):
        raise ValueError(f"{owner}.{name}: per-component values are not supported, give a number")
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


@dataclass
class NoiseCfg:
    """Base of the noise cfgs (``operation``: ``"add"``, ``"scale"`` or ``"abs"``)."""

    operation: str = "add"

    def to_parts(self) -> list[Any]:
        """The simrt noise parts of this cfg."""
        raise ValueError(f"{type(self).__name__}: a bare NoiseCfg has no noise")


@dataclass
class ConstantNoiseCfg(NoiseCfg):
    """A constant: added (``"add"``), multiplied (``"scale"``) or replacing (``"abs"``)."""

    bias: float | Sequence[float] = 0.0

    def to_parts(self) -> list[Any]:
        """See the module's table."""
        if self.operation == "add":
            return [ConstantBias(self.bias)]
        bias = _scalar("ConstantNoiseCfg", "bias", self.bias)
        if self.operation == "scale":
            return [ScaleFactor(bias)]
        return [GaussianNoise(0.0, mean=bias, operation=self.operation)]


@dataclass
class UniformNoiseCfg(NoiseCfg):
    """Uniform noise in ``[n_min, n_max)``."""

    n_min: float = -1.0
    n_max: float = 1.0

    def to_parts(self) -> list[Any]:
        """See the module's table."""
        low = _scalar("UniformNoiseCfg", "n_min", self.n_min)
        high = _scalar("UniformNoiseCfg", "n_max", self.n_max)
        return [UniformNoise(low, high, self.operation)]


@dataclass
class GaussianNoiseCfg(NoiseCfg):
    """Gaussian noise of ``mean`` and ``std``."""

    mean: float = 0.0
    std: float = 1.0

    def to_parts(self) -> list[Any]:
        """See the module's table."""
        mean = _scalar("GaussianNoiseCfg", "mean", self.mean)
        std = _scalar("GaussianNoiseCfg", "std", self.std)
        return [GaussianNoise(std, mean, self.operation)]


@dataclass
class NoiseModelCfg:
    """A noise model applying ``noise_cfg`` at every step."""

    noise_cfg: NoiseCfg | None = None

    def to_parts(self) -> list[Any]:
        """The simrt noise parts."""
        if self.noise_cfg is None:
            raise ValueError(f"{type(self).__name__}.noise_cfg: missing")
        return self.noise_cfg.to_parts()

    def to_noise_model(self, **options: Any) -> NoiseModel:
        """:func:`to_noise_model` of this cfg."""
        return to_noise_model(self, **options)


@dataclass
class NoiseModelWithAdditiveBiasCfg(NoiseModelCfg):
    """``noise_cfg`` at every step plus a bias drawn from ``bias_noise_cfg`` at each reset."""

    bias_noise_cfg: NoiseCfg | None = None
    sample_bias_per_component: bool = True

    def to_parts(self) -> list[Any]:
        """The simrt noise parts (the bias: ``bias_noise_cfg`` applied to zeros)."""
        parts = super().to_parts()
        cfg = self.bias_noise_cfg
        if cfg is None:
            raise ValueError("NoiseModelWithAdditiveBiasCfg.bias_noise_cfg: missing")
        per = bool(self.sample_bias_per_component)
        if isinstance(cfg, GaussianNoiseCfg):
            mean = _scalar("GaussianNoiseCfg", "mean", cfg.mean)
            std = _scalar("GaussianNoiseCfg", "std", cfg.std)
            if cfg.operation == "scale":  # (0 * n)
                return parts
            return [*parts, ResetBias(std=std, mean=mean, per_element=per)]
        if isinstance(cfg, UniformNoiseCfg):
            low = _scalar("UniformNoiseCfg", "n_min", cfg.n_min)
            high = _scalar("UniformNoiseCfg", "n_max", cfg.n_max)
            if high < low:
                raise ValueError(f"UniformNoiseCfg.n_max: {high!r} is below n_min ({low!r})")
            if cfg.operation == "scale":
                return parts
            bias = ResetBias(mean=(low + high) / 2, half_range=(high - low) / 2, per_element=per)
            return [*parts, bias]
        if isinstance(cfg, ConstantNoiseCfg):
            return parts if cfg.operation == "scale" else [*parts, ConstantBias(cfg.bias)]
        raise ValueError(f"bias_noise_cfg: {type(cfg).__name__} is not a noise cfg")


def to_noise_parts(cfg: NoiseCfg | NoiseModelCfg) -> list[Any]:
    """The simrt noise parts of an Isaac Lab noise cfg or noise model cfg.

    Raises:
        ValueError: a bad value (naming the cfg and field).
    """
    if not isinstance(cfg, (NoiseCfg, NoiseModelCfg)):
        raise ValueError(f"{cfg!r} is not an Isaac Lab noise cfg")
    return cfg.to_parts()


def to_noise_model(
    cfg: NoiseCfg | NoiseModelCfg,
    *,
    dt: float | None = None,
    sensor: str = "",
    channel: str = "",
) -> NoiseModel:
    """A :class:`~runtime.sensors.noise.NoiseModel` from an Isaac Lab noise (model) cfg.

    Args:
        cfg: a noise cfg or a noise model cfg.
        dt: the step [s].
        sensor: the sensor's prim path (its random stream).
        channel: the channel's name (its random stream).

    Raises:
        ValueError: a bad value (naming the cfg and field).
    """
    return NoiseModel(to_noise_parts(cfg), dt=dt, sensor=sensor, channel=channel)
