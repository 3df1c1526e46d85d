"""Numba kernels of the sensor noise layer (:mod:`runtime.sensors.noise`).

Random numbers come from a counter-based generator: every hash is the SplitMix64 finaliser
of a 64-bit counter built from the stream key of one (seed, env, sensor, channel), the step
and the element index and purpose of the hash; each hash gives two 32-bit uniform numbers
(its high and low halves). A draw depends on nothing else, so the same seed gives the same
noise whatever the number of envs, the order of evaluation, threads or processes.

Per element and step: hash 0 gives the white Gaussian (high half) and the drift's Gaussian
(low half), hash 1 the range noise's Gaussian and the element's dropout, hash 2 the white
uniform noise; the whole reading's dropout is hash 3 of element 0. At a reset (counter of
step -1): hash 0 gives the reset bias' Gaussian and uniform parts, hash 1 the scale factor
and the drift's start.

The kernels trust their inputs (checked by :class:`runtime.sensors.noise.NoiseModel`).
"""

from __future__ import annotations

import math

import numpy as np

from runtime._compile.jit import jit

__all__ = [
    "P_COUNT",
    "noise_apply_kernel",
    "noise_reset_kernel",
]

# slots of the float64 parameter vector ``params`` (built by NoiseModel)
P_GAUSS_MEAN = 0  # white Gaussian noise: mean [unit]
P_GAUSS_STD = 1  # and standard deviation [unit]
P_GAUSS_OP = 2  # 0 off, 1 add, 2 scale, 3 abs (replace)
P_UNI_LOW = 3  # white uniform noise: bounds [unit]
P_UNI_HIGH = 4
P_UNI_OP = 5  # 0 off, 1 add, 2 scale, 3 abs
P_RANGE_STD = 6  # range noise: std = RANGE_STD + RANGE_PROP * range, below MAX_RANGE only
P_RANGE_PROP = 7
P_MAX_RANGE = 8  # a range sensor's miss value (inf: none)
P_DRIFT_PHI = 9  # bias drift: b <- PHI * b + Q * n, n ~ N(0, 1) each step
P_DRIFT_Q = 10
P_DRIFT_INIT = 11  # std of the drift drawn at reset (stationary Gauss-Markov; 0: walk)
P_BIAS_MEAN = 12  # bias drawn at reset: MEAN + STD * n + HALF * (2 u - 1)
P_BIAS_STD = 13
P_BIAS_HALF = 14
P_SCALE_MEAN = 15  # scale factor drawn at reset: MEAN + STD * n
P_SCALE_STD = 16
P_SAT_LOW = 17  # saturation bounds [unit]
P_SAT_HIGH = 18
P_RESOLUTION = 19  # quantization step [unit] (0: off)
P_DROP_P = 20  # dropout probability
P_DROP_MODE = 21  # 0 off, 1 whole reading, 2 per element
P_DROP_FILL = 22  # the value of a dropped element
P_LATENCY = 23  # delay [steps]
P_BIAS_SHARED = 24  # 1: one reset bias per reading (element 0's draws), 0: per element
P_COUNT = 25

# hash purposes (the low 3 bits of an element's counter)
_H_WHITE_DRIFT = 0  # high: white Gaussian, low: drift Gaussian
_H_RANGE_DROP = 1  # high: range Gaussian, low: element dropout
_H_UNIFORM = 2  # high: white uniform
_H_READING = 3  # (element 0) high: the whole reading's dropout
_R_BIAS = 0  # reset: high: bias Gaussian, low: bias uniform
_R_SCALE_DRIFT = 1  # reset: high: scale factor Gaussian, low: drift start Gaussian

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_S21 = np.uint64(21)
_LOW32 = np.uint64(0xFFFFFFFF)
_LOW21 = np.uint64(0x1FFFFF)
_EIGHT = np.uint64(8)
_TWO_32 = 1.0 / 4294967296.0
_TWO_21 = 1.0 / 2097152.0

# Acklam's rational approximation of the standard normal quantile (relative error < 1.2e-9)
_A1, _A2, _A3 = -3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02
_A4, _A5, _A6 = 1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00
_B1, _B2, _B3 = -5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02
_B4, _B5 = 6.680131188771972e01, -1.328068155288572e01
_C1, _C2, _C3 = -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00
_C4, _C5, _C6 = -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00
_E1, _E2 = 7.784695709041462e-03, 3.224671290700398e-01
_E3, _E4 = 2.445134137142996e00, 3.754408661907416e00
_P_LOW = 0.02425


def _quantile_table(bins: int) -> np.ndarray:
    """``Phi^-1(i / bins)`` for ``i = 0 .. bins`` (the ends infinite), to double precision.

    Acklam's approximation refined by two Newton steps on ``erfc``.
    """
    table = np.empty(bins + 1, np.float64)
    table[0], table[bins] = -math.inf, math.inf
    for i in range(1, bins):
        p = i / bins
        q = p - 0.5
        if abs(q) <= 0.5 - _P_LOW:
            r = q * q
            num = (((((_A1 * r + _A2) * r + _A3) * r + _A4) * r + _A5) * r + _A6) * q
            x = num / (((((_B1 * r + _B2) * r + _B3) * r + _B4) * r + _B5) * r + 1.0)
        else:
            t = math.sqrt(-2.0 * math.log(min(p, 1.0 - p)))
            x = (((((_C1 * t + _C2) * t + _C3) * t + _C4) * t + _C5) * t + _C6) / (
                (((_E1 * t + _E2) * t + _E3) * t + _E4) * t + 1.0
            )
            x = x if q < 0.0 else -x
        for _ in range(2):
            error = 0.5 * math.erfc(-x / math.sqrt(2.0)) - p
            x -= error * math.sqrt(2.0 * math.pi) * math.exp(0.5 * x * x)
        table[i] = x
    return table


# the standard normal quantile at 2048 equal steps of probability: a normal deviate is
# interpolated linearly between two of them, except in the outer 8 bins of each side
# (probability 0.8 %), computed by Acklam's formula; the interpolation's error is below
# 7e-4 standard deviations everywhere (1e-6 in the central 90 %)
_BINS = 2048
_EDGE = 8
_QUANTILES = _quantile_table(_BINS)


@jit(inline=True, nrt=False)
def _mix64(z: np.uint64) -> np.uint64:
    """SplitMix64's finaliser: a bijective 64-bit hash."""
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@jit(inline=True, nrt=False)
def _hash(base: np.uint64, element: int, purpose: int) -> np.uint64:
    """The hash of one element and purpose of a step's stream (two 32-bit halves)."""
    return _mix64(base + (np.uint64(element) * _EIGHT + np.uint64(purpose)) * _GOLDEN)


@jit(inline=True, nrt=False)
def _uniform(bits: np.uint64) -> float:
    """The uniform number ``(bits + 0.5) / 2**32`` in (0, 1) of 32 bits."""
    return (float(np.int64(bits)) + 0.5) * _TWO_32


@jit(inline=True, nrt=False)
def _normal(p: float) -> float:
    """The standard normal quantile of ``p`` in (0, 1) (Acklam's approximation)."""
    q = p - 0.5
    if abs(q) <= 0.5 - _P_LOW:
        r = q * q
        num = (((((_A1 * r + _A2) * r + _A3) * r + _A4) * r + _A5) * r + _A6) * q
        return num / (((((_B1 * r + _B2) * r + _B3) * r + _B4) * r + _B5) * r + 1.0)
    t = math.sqrt(-2.0 * math.log(p if q < 0.0 else 1.0 - p))
    x = (((((_C1 * t + _C2) * t + _C3) * t + _C4) * t + _C5) * t + _C6) / (
        (((_E1 * t + _E2) * t + _E3) * t + _E4) * t + 1.0
    )
    return x if q < 0.0 else -x


@jit(inline=True, nrt=False)
def _gauss(bits: np.uint64) -> float:
    """The standard normal deviate of the uniform number of 32 ``bits`` (|z| < 6.3).

    The high 11 bits pick the quantile table's bin, the low 21 the point inside it.
    """
    i = np.int64(bits >> _S21)
    if i < _EDGE or i >= _BINS - _EDGE:
        return _normal(_uniform(bits))
    low = _QUANTILES[i]
    return low + (float(np.int64(bits & _LOW21)) + 0.5) * _TWO_21 * (_QUANTILES[i + 1] - low)


@jit(nrt=False)
def noise_reset_kernel(
    env_ids: np.ndarray,
    keys: np.ndarray,
    params: np.ndarray,
    const_bias: np.ndarray,
    offset: np.ndarray,
    scale: np.ndarray,
    drift: np.ndarray,
    ring_state: np.ndarray,
) -> None:
    """Draw the per-reset values of the envs ``env_ids`` and empty their latency history.

    Args:
        env_ids: local env indices, int64, shape (K,).
        keys: stream key of each env, uint64, shape (N,).
        params: the model's parameter vector (``P_*`` slots), float64, shape (P_COUNT,).
        const_bias: constant bias per element [unit], float64, shape (E,).
        offset: out: constant + reset bias per env and element, float64, shape (N, E).
        scale: out: scale factor per env and element, float64, shape (N, E).
        drift: out: the drift state at reset, float64, shape (N, E).
        ring_state: out: (head, filled) of each env's latency ring, int64, shape (N, 2).
    """
    count = offset.shape[1]
    bias_mean, bias_std, bias_half = params[P_BIAS_MEAN], params[P_BIAS_STD], params[P_BIAS_HALF]
    scale_mean, scale_std = params[P_SCALE_MEAN], params[P_SCALE_STD]
    drift_init = params[P_DRIFT_INIT]
    shared = params[P_BIAS_SHARED] != 0.0
    for i in range(env_ids.shape[0]):
        n = env_ids[i]
        base = _mix64(keys[n] - _GOLDEN)  # (the counter of step -1)
        for e in range(count):
            h = _hash(base, 0 if shared else e, _R_BIAS)
            value = const_bias[e] + bias_mean
            if bias_std > 0.0:
                value += bias_std * _gauss(h >> _S32)
            if bias_half > 0.0:
                value += bias_half * (2.0 * _uniform(h & _LOW32) - 1.0)
            offset[n, e] = value
            h = _hash(base, e, _R_SCALE_DRIFT)
            factor = scale_mean
            if scale_std > 0.0:
                factor += scale_std * _gauss(h >> _S32)
            scale[n, e] = factor
            start = 0.0
            if drift_init > 0.0:
                start = drift_init * _gauss(h & _LOW32)
            drift[n, e] = start
        ring_state[n, 0] = 0
        ring_state[n, 1] = 0


@jit(nrt=False)
def noise_apply_kernel(
    exact: np.ndarray,
    steps: np.ndarray,
    keys: np.ndarray,
    params: np.ndarray,
    offset: np.ndarray,
    scale: np.ndarray,
    drift: np.ndarray,
    ring: np.ndarray,
    ring_state: np.ndarray,
    work: np.ndarray,
    bits: np.ndarray,
    out: np.ndarray,
) -> None:
    """Noisy readings from exact ones, row after row (each row one step of every env).

    Per element, in this order: scale factor, bias (constant + reset + drift), white
    Gaussian noise, white uniform noise, range noise, saturation, quantization, dropout,
    latency; then the drift advances one step. Each stage is one loop over the reading's
    elements (the loops without random numbers vectorise).

    Args:
        exact: exact readings, float32 or float64, shape (R, N, E).
        steps: the step counter of each row and env, int64, shape (R, N).
        keys: stream key of each env, uint64, shape (N,).
        params: the model's parameter vector, float64, shape (P_COUNT,).
        offset: constant + reset bias, float64, shape (N, E).
        scale: scale factors, float64, shape (N, E).
        drift: in/out: drift state, float64, shape (N, E).
        ring: in/out: the last readings of each env (latency), float64, shape (N, H, E).
        ring_state: in/out: (head, filled) of each ring, int64, shape (N, 2).
        work: scratch: one reading, float64, shape (E,).
        bits: scratch: one hash per element, uint64, shape (E,).
        out: out: noisy readings, float32 or float64, shape (R, N, E).
    """
    rows, envs, count = exact.shape
    g_mean, g_std, g_op = params[P_GAUSS_MEAN], params[P_GAUSS_STD], int(params[P_GAUSS_OP])
    u_low, u_high, u_op = params[P_UNI_LOW], params[P_UNI_HIGH], int(params[P_UNI_OP])
    r_std, r_prop, max_range = params[P_RANGE_STD], params[P_RANGE_PROP], params[P_MAX_RANGE]
    ranged = r_std > 0.0 or r_prop > 0.0
    phi, q = params[P_DRIFT_PHI], params[P_DRIFT_Q]
    drifting = q > 0.0 or phi != 1.0
    low, high, resolution = params[P_SAT_LOW], params[P_SAT_HIGH], params[P_RESOLUTION]
    drop_p, drop_mode, fill = params[P_DROP_P], int(params[P_DROP_MODE]), params[P_DROP_FILL]
    latency = int(params[P_LATENCY])
    depth = ring.shape[1]
    u_width = u_high - u_low
    clipping = low > -math.inf or high < math.inf
    for r in range(rows):
        for n in range(envs):
            base = _mix64(keys[n] + np.uint64(steps[r, n]) * _GOLDEN)
            lost = drop_mode == 1 and _uniform(_hash(base, 0, _H_READING) >> _S32) < drop_p
            for e in range(count):
                work[e] = float(exact[r, n, e]) * scale[n, e] + offset[n, e] + drift[n, e]
            if g_op == 1 and not drifting:
                for e in range(count):
                    work[e] += g_mean + g_std * _gauss(_hash(base, e, _H_WHITE_DRIFT) >> _S32)
            elif g_op != 0 or drifting:
                for e in range(count):
                    ha = _hash(base, e, _H_WHITE_DRIFT)
                    if g_op != 0:
                        g = g_mean + g_std * _gauss(ha >> _S32)
                        if g_op == 1:
                            work[e] += g
                        elif g_op == 2:
                            work[e] *= g
                        else:
                            work[e] = g
                    if drifting:
                        drift[n, e] = phi * drift[n, e] + q * _gauss(ha & _LOW32)
            if u_op != 0:
                for e in range(count):
                    w = u_low + u_width * _uniform(_hash(base, e, _H_UNIFORM) >> _S32)
                    if u_op == 1:
                        work[e] += w
                    elif u_op == 2:
                        work[e] *= w
                    else:
                        work[e] = w
            if ranged or drop_mode == 2:
                for e in range(count):
                    hb = _hash(base, e, _H_RANGE_DROP)
                    bits[e] = hb
                    if ranged:
                        x = float(exact[r, n, e])
                        if x < max_range and math.isfinite(x):
                            work[e] += (r_std + r_prop * abs(x)) * _gauss(hb >> _S32)
            if clipping:
                for e in range(count):
                    work[e] = min(max(work[e], low), high) if not math.isnan(work[e]) else work[e]
            if resolution > 0.0:
                for e in range(count):
                    work[e] = np.rint(work[e] / resolution) * resolution
            if lost:
                for e in range(count):
                    work[e] = fill
            elif drop_mode == 2:
                for e in range(count):
                    if _uniform(bits[e] & _LOW32) < drop_p:
                        work[e] = fill
            if latency > 0:
                head = ring_state[n, 0]
                filled = min(ring_state[n, 1] + 1, depth)
                oldest = (head - filled + 1) % depth
                for e in range(count):
                    ring[n, head, e] = work[e]
                    out[r, n, e] = ring[n, oldest, e]
                ring_state[n, 0] = (head + 1) % depth
                ring_state[n, 1] = filled
            else:
                for e in range(count):
                    out[r, n, e] = work[e]
