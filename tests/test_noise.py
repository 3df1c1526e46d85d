"""Sensor noise (runtime.sensors.noise): statistics against their definitions, reproducibility,
the recorded noisy channels of a run, configuration (USD, spec, Isaac Lab cfgs) and errors."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from runtime.errors import SchemaError, SimrtError
from runtime.sensors.noise import (
    BiasRandomWalk,
    ConstantBias,
    Dropout,
    GaussianNoise,
    GaussMarkovBias,
    Latency,
    NoiseDensity,
    NoiseModel,
    Quantization,
    RangeNoise,
    ResetBias,
    Saturation,
    ScaleFactor,
    UniformNoise,
    noise_parts,
)

REPO = Path(__file__).resolve().parents[1]
ARM = str(REPO / "scenes" / "simple_arm.usda")
IMU = "/World/SimpleArm/link3/imu"
LIDAR = "/World/SimpleArm/base/range_finder"
ROBOT = "/World/SimpleArm"


def _series(model: NoiseModel, exact: np.ndarray, seed: int = 0) -> np.ndarray:
    """``model`` applied to consecutive rows of one env (steps 0, 1, ...)."""
    state = model.new_state(1, exact.shape[1:], seed=seed)
    out = np.empty_like(exact)
    model.apply_rows(exact, out, state, np.arange(exact.shape[0], dtype=np.int64))
    return out


def _allan_variance(x: np.ndarray, dt: float, clusters: np.ndarray) -> np.ndarray:
    """Overlapping Allan variance of rate samples ``x`` (IEEE 952), cluster sizes ``clusters``."""
    theta = np.concatenate([[0.0], np.cumsum(x) * dt])  # the integrated signal
    result = []
    for m in clusters:
        tau = m * dt
        d = theta[2 * m :] - 2.0 * theta[m:-m] + theta[: -2 * m]
        result.append(np.mean(d * d) / (2.0 * tau * tau))
    return np.asarray(result)


# ---------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_allan_variance_recovers_noise_density_and_bias_random_walk(seed):
    dt = 1.0 / 200.0
    # [unit/sqrt(Hz)], [unit/s/sqrt(Hz)]: the two meet at tau = sqrt(3) N / K = 1.7 s, so
    # 5000 s of samples hold many clusters of each
    density, walk = 0.01, 0.01
    model = NoiseModel([NoiseDensity(density), BiasRandomWalk(walk)], dt=dt, channel="gyro")
    samples = 10**6
    noisy = _series(model, np.zeros((samples, 1)), seed)[:, 0]
    clusters = np.unique(np.logspace(0, math.log10(samples // 10), 40).astype(np.int64))
    avar = _allan_variance(noisy, dt, clusters)
    tau = clusters * dt
    # AVAR = N^2 / tau + K^2 tau / 3 (white noise + rate random walk), least squares
    # weighted by each estimate's uncertainty (relative, growing as sqrt(tau / duration))
    scale = avar * np.sqrt(tau)
    design = np.stack([1.0 / tau, tau / 3.0], axis=1) / scale[:, None]
    (n2, k2), *_ = np.linalg.lstsq(design, avar / scale, rcond=None)
    assert math.sqrt(n2) == pytest.approx(density, rel=0.10)
    assert math.sqrt(k2) == pytest.approx(walk, rel=0.10)
    # the white part alone, read where it dominates (tau = 0.1 s): N = sigma(tau) sqrt(tau)
    at = np.searchsorted(tau, 0.1)
    assert math.sqrt(avar[at] * tau[at]) == pytest.approx(density, rel=0.05)


def test_gaussian_draws_are_standard_normal():
    noisy = _series(NoiseModel([GaussianNoise(1.0)]), np.zeros((1000, 1000)), 3).ravel()
    assert abs(noisy.mean()) < 5e-3
    assert noisy.std() == pytest.approx(1.0, abs=3e-3)
    assert stats.kstest(noisy[:200000], "norm").pvalue > 1e-3
    assert stats.kurtosis(noisy) == pytest.approx(0.0, abs=0.02)
    assert (np.abs(noisy) > 4.0).mean() == pytest.approx(2 * stats.norm.sf(4.0), rel=0.15)


def test_uniform_noise_bounds_and_mean():
    noisy = _series(NoiseModel([UniformNoise(-0.5, 1.5)]), np.full((1000, 1000), 2.0)).ravel()
    assert noisy.min() >= 1.5 and noisy.max() < 3.5
    assert noisy.mean() == pytest.approx(2.5, abs=3e-3)
    assert stats.kstest(noisy[:200000] - 1.5, "uniform", args=(0.0, 2.0)).pvalue > 1e-3


def test_gauss_markov_drift_is_stationary_with_its_correlation_time():
    dt, tau, std = 0.01, 0.5, 0.3
    model = NoiseModel([GaussMarkovBias(std, tau)], dt=dt)
    drift = _series(model, np.zeros((200000, 4)), 9)
    assert drift.std() == pytest.approx(std, rel=0.05)
    lag = 10  # autocorrelation exp(-lag dt / tau)
    a, b = drift[:-lag].ravel(), drift[lag:].ravel()
    assert np.corrcoef(a, b)[0, 1] == pytest.approx(math.exp(-lag * dt / tau), abs=0.03)


def test_reset_bias_scale_and_constant_bias():
    model = NoiseModel(
        [ConstantBias((1.0, 2.0, 3.0)), ResetBias(std=0.5, mean=0.1), ScaleFactor(2.0, 0.0)]
    )
    state = model.new_state(2000, (3,), seed=4)
    exact = np.ones((2000, 3))
    out = model.apply(exact, None, state, 0)
    bias = out - 2.0 - np.array([1.0, 2.0, 3.0])
    assert bias.mean() == pytest.approx(0.1, abs=0.03)
    assert bias.std() == pytest.approx(0.5, rel=0.05)
    again = model.apply(exact, None, state, 1)  # the bias holds between resets
    np.testing.assert_array_equal(again, out)
    model.reset(state, [0, 1], seeds=[99, 100])  # redrawn at reset
    assert not np.array_equal(model.apply(exact, None, state, 2)[:2], out[:2])
    np.testing.assert_array_equal(model.apply(exact, None, state, 3)[2:], out[2:])
    shared = NoiseModel([ResetBias(std=1.0, per_element=False)]).new_state(5, (3,), seed=1)
    assert np.all(shared.offset == shared.offset[:, :1])


@pytest.mark.parametrize("per_element", [False, True])
def test_dropout_rate_within_one_percent(per_element):
    p = 0.2
    model = NoiseModel([Dropout(p, per_element=per_element)])
    exact = np.ones((10**6, 1)) if not per_element else np.ones((1000, 1000))
    noisy = _series(model, exact, 5)
    lost = np.isnan(noisy)
    assert lost.mean() == pytest.approx(p, rel=0.01)
    if not per_element:  # whole readings: 10^6 draws
        assert lost.size == 10**6
    else:  # rays independent: each ray's rate, and whole rows are not lost together
        assert lost.mean(axis=0).std() < 0.05
        assert not lost.all(axis=1).any()
    assert np.all(noisy[~lost] == 1.0)


def test_ray_dropout_fills_the_max_range_and_range_noise_spares_misses():
    max_range = 10.0
    model = NoiseModel(
        [RangeNoise(std=0.01, proportional=0.01), Dropout(0.1, True, "max_range")],
        max_range=max_range,
        channel="depths",
    )
    exact = np.full((2000, 500), 5.0, np.float32)
    exact[:, 250:] = max_range  # misses
    noisy = _series(model, exact, 2)
    hits, misses = noisy[:, :250], noisy[:, 250:]
    assert np.all(misses == np.float32(max_range))  # a miss stays a miss
    dropped = hits == np.float32(max_range)
    assert dropped.mean() == pytest.approx(0.1, rel=0.05)
    assert hits[~dropped].std() == pytest.approx(0.01 + 0.01 * 5.0, rel=0.03)
    assert noisy.dtype == np.float32


@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_latency_is_exact_to_the_step(k):
    exact = np.arange(50, dtype=np.float64)[:, None] * np.array([1.0, -1.0])
    noisy = _series(NoiseModel([Latency(steps=k)]), exact)
    np.testing.assert_array_equal(noisy[k:], exact[: len(exact) - k])
    np.testing.assert_array_equal(noisy[:k], np.repeat(exact[:1], k, axis=0))  # first held
    by_time = NoiseModel([Latency(seconds=0.02)], dt=0.005)  # 4 steps
    assert by_time.latency_steps == 4


def test_quantization_and_saturation_are_exact():
    values = np.random.default_rng(0).normal(0.0, 3.0, (1000, 8))
    res = 0.05
    noisy = _series(NoiseModel([Quantization(res)]), values)
    np.testing.assert_array_equal(noisy, np.round(values / res) * res)
    clipped = _series(NoiseModel([Saturation(-2.0, 2.5), Quantization(res)]), values)
    np.testing.assert_array_equal(clipped, np.round(np.clip(values, -2.0, 2.5) / res) * res)


# ---------------------------------------------------------------------------- reproducibility


def _rich_model() -> NoiseModel:
    return NoiseModel(
        [
            GaussianNoise(0.1),
            UniformNoise(-0.01, 0.01),
            ResetBias(std=0.2),
            ScaleFactor(1.0, 0.01),
            GaussMarkovBias(0.05, 0.3),
            Quantization(1e-4),
            Dropout(0.05, per_element=True, fill="zero"),
            Latency(steps=3),
        ],
        dt=0.005,
        sensor="/World/Imu",
        channel="/World/Imu.angular_velocity",
    )


def _run_envs(model, num_envs, first_env, seeds, steps, reset_at=None):
    exact = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    state = model.new_state(num_envs, (4, 3), seed=seeds, first_env=first_env)
    rows = []
    for step in range(steps):
        if step == reset_at:  # the envs of even global index start a new episode
            ids = np.flatnonzero((first_env + np.arange(num_envs)) % 2 == 0)
            model.reset(state, ids, np.asarray(seeds)[ids] + 1000)
        batch = np.broadcast_to(exact * (1 + step), (num_envs, 4, 3)).copy()
        rows.append(model.apply(batch, None, state, step).copy())
    return np.stack(rows, axis=1)  # (N, steps, 4, 3)


def test_same_seed_same_noise_for_1_and_16_envs_and_2_workers():
    model = _rich_model()
    seeds = np.arange(100, 116)
    sixteen = _run_envs(model, 16, 0, seeds, 40, reset_at=20)
    for e in range(16):
        single = _run_envs(model, 1, e, seeds[e : e + 1], 40, reset_at=20)
        assert single[0].tobytes() == sixteen[e].tobytes()
    halves: dict[int, np.ndarray] = {}
    threads = [
        threading.Thread(
            target=lambda first: halves.__setitem__(
                first, _run_envs(_rich_model(), 8, first, seeds[first : first + 8], 40, 20)
            ),
            args=(first,),
        )
        for first in (0, 8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert np.concatenate([halves[0], halves[8]]).tobytes() == sixteen.tobytes()
    other = _run_envs(model, 16, 0, seeds + 1, 40)
    assert not np.array_equal(other, sixteen)
    # envs and channels have their own streams
    assert not np.array_equal(sixteen[0], sixteen[1])
    renamed = NoiseModel(model.parts, dt=0.005, sensor="/World/Imu", channel="other")
    assert not np.array_equal(_run_envs(renamed, 16, 0, seeds, 40), sixteen)


def test_rows_at_once_equal_steps_one_by_one():
    model = _rich_model()
    exact = np.random.default_rng(1).normal(size=(100, 4, 3))
    whole = _series(model, exact, 7)
    state = model.new_state(1, (4, 3), seed=7)
    for k in range(100):
        row = model.apply(exact[k : k + 1].copy(), None, state, k)
        assert row.tobytes() == whole[k : k + 1].tobytes()


# ---------------------------------------------------------------------------- recorded runs

RUN_NOISE = {
    IMU: {
        "linear_acceleration": {"noiseDensity": 0.01, "biasRandomWalk": 0.001},
        "angular_velocity": {"gaussianStd": 0.01, "resolution": 0.001, "latencySteps": 2},
    },
    LIDAR: {"depths": {"rangeStd": 0.01, "dropoutProbability": 0.1, "dropoutPerElement": True}},
    ROBOT: {"positions": {"gaussianStd": 0.001, "biasStd": 0.01}},
}


def _noisy_channels(path):
    from runtime.recording.reader import open_recording

    recording = open_recording(path).load()
    return {n: recording.data[n] for n in recording.channels if n.endswith(".noisy")}, recording


def test_run_records_noisy_channels_replayed_bit_for_bit(tmp_path):
    from runtime.run.loop import run_scene

    runs = []
    variants = (
        ("a", {}, {}),
        ("b", {}, {}),
        ("general", {"on_step": lambda *a: None}, {}),  # the general path, not the blocks
        ("one-thread", {}, {"background": False}),  # no writer thread: the loop's thread
    )
    for name, extra, options in variants:
        out = tmp_path / f"{name}.zarr"
        run_scene(
            ARM, out=out, steps=400, noise=RUN_NOISE, noise_seed=11, summary=False,
            store_options={"chunk_rows": 64, **options}, **extra,
        )  # fmt: skip
        runs.append(_noisy_channels(out))
    (noisy_a, rec_a), (noisy_b, _), (noisy_general, _), (noisy_one, _) = runs
    assert len(noisy_a) == 4
    for name, values in noisy_a.items():
        # replayed, and recorded by the general path instead of the compiled blocks
        assert values.tobytes() == noisy_b[name].tobytes()
        assert values.tobytes() == noisy_general[name].tobytes()
        assert values.tobytes() == noisy_one[name].tobytes()
        # the store's chunk-by-chunk fill equals the model applied to the whole exact channel
        exact = rec_a.data[name[: -len(".noisy")]]
        info = rec_a.channels[name]
        model = NoiseModel(
            noise_parts({**RUN_NOISE[info.sensor][info.field[: -len(".noisy")]]}),
            dt=info.attrs["noise"]["dt"],
            sensor=info.sensor,
            channel=info.attrs["noisy_of"],
            max_range=info.attrs["noise"]["max_range"],
        )
        # the model an env would take from the run's noise configuration is the same one
        from runtime.run.noise_channels import read_noise
        from runtime.run.scene import open_scene_stage

        entries = {e.channel: e for e in read_noise(open_scene_stage(ARM), RUN_NOISE)}
        env_model = entries[info.attrs["noisy_of"]].model(model.dt, max_range=model.max_range)
        assert env_model.params.tobytes() == model.params.tobytes()
        assert (env_model.sensor_id, env_model.channel_id) == (model.sensor_id, model.channel_id)
        state = model.new_state(1, exact.shape[1:], seed=11)
        expected = np.empty_like(exact)
        model.apply_rows(exact, expected, state, rec_a.step)
        assert values.tobytes() == expected.tobytes()
    positions = noisy_a[f"{ROBOT}.positions.noisy"] - rec_a.data[f"{ROBOT}.positions"]
    assert np.std(positions - positions.mean(axis=0)) == pytest.approx(0.001, rel=0.1)
    assert rec_a.run["noise"]["seed"] == 11
    out = tmp_path / "other.zarr"
    run_scene(ARM, out=out, steps=400, noise=RUN_NOISE, noise_seed=12, summary=False)
    other, _ = _noisy_channels(out)
    assert not np.array_equal(
        other[f"{ROBOT}.positions.noisy"], noisy_a[f"{ROBOT}.positions.noisy"]
    )


def test_run_metadata_records_the_noise(tmp_path):
    import json

    from runtime.run.loop import run_scene

    out = tmp_path / "run.zarr"
    run_scene(ARM, out=out, steps=5, noise=RUN_NOISE, noise_seed=3, summary=False)
    attrs = json.loads((out / "zarr.json").read_text())["attributes"]["simrt"]
    noise = attrs["run"]["noise"]
    assert noise["seed"] == 3
    gyro = noise["channels"][f"{IMU}.angular_velocity.noisy"]
    assert gyro["exact"] == f"{IMU}.angular_velocity"
    assert gyro["parts"]["GaussianNoise"]["std"] == 0.01
    assert gyro["latency_steps"] == 2
    assert f"{IMU}.angular_velocity.noisy" in attrs["channels"]


def _arm_stage(**attributes):
    from pxr import Sdf, Usd

    stage = Usd.Stage.Open(ARM)
    stage.SetEditTarget(Usd.EditTarget(stage.GetSessionLayer()))  # (the file stays untouched)
    for name, (path, type_name, value) in attributes.items():
        prim = stage.GetPrimAtPath(path)
        prim.CreateAttribute(name, getattr(Sdf.ValueTypeNames, type_name)).Set(value)
    return stage


def test_usd_attributes_configure_noise(tmp_path):
    from runtime.run.loop import run_scene

    stage = _arm_stage(**{
        "simrt:noise:angular_velocity:gaussianStd": (IMU, "Double", 0.02),
        "simrt:noise:angular_velocity:latencySteps": (IMU, "Int", 1),
        "simrt:noise:depths:dropoutProbability": (LIDAR, "Double", 0.5),
        "simrt:noise:depths:dropoutValue": (LIDAR, "Token", "maxRange"),
    })  # fmt: skip
    out = tmp_path / "usd.zarr"
    run_scene(stage, out=out, steps=300, summary=False)
    noisy, rec = _noisy_channels(out)
    assert set(noisy) == {f"{IMU}.angular_velocity.noisy", f"{LIDAR}.depths.noisy"}
    gyro = noisy[f"{IMU}.angular_velocity.noisy"][1:] - rec.data[f"{IMU}.angular_velocity"][:-1]
    assert gyro.std() == pytest.approx(0.02, rel=0.15)
    depths = noisy[f"{LIDAR}.depths.noisy"]
    max_range = rec.channels[f"{LIDAR}.hit"].attrs["max_range"]
    exact = rec.data[f"{LIDAR}.depths"]
    assert np.all((depths == exact) | (depths == np.float32(max_range)))
    # the spec's parameters go on top of the attributes, one by one
    out2 = tmp_path / "both.zarr"
    run_scene(
        stage, out=out2, steps=50, summary=False,
        noise={IMU: {"angular_velocity": {"gaussianStd": 0.0}}},
    )  # fmt: skip
    noisy2, rec2 = _noisy_channels(out2)
    gyro2 = noisy2[f"{IMU}.angular_velocity.noisy"]
    np.testing.assert_array_equal(gyro2[1:], rec2.data[f"{IMU}.angular_velocity"][:-1])


@pytest.mark.parametrize(
    ("attribute", "type_name", "value", "problem"),
    [
        ("simrt:noise:angular_velocity:gaussianStd", "Double", -0.1, ">= 0"),
        ("simrt:noise:angular_velocity:dropoutProbability", "Double", 1.5, "[0, 1]"),
        ("simrt:noise:angular_velocity:driftCorrelationTime", "Double", 0.0, "> 0"),
        ("simrt:noise:angular_velocity:latencySteps", "Int", 5000, "longer than the history"),
        ("simrt:noise:angular_velocity:gaussianStdev", "Double", 0.1, "unknown noise parameter"),
        ("simrt:noise:no_such_field:gaussianStd", "Double", 0.1, "no recorded channel"),
        ("simrt:noise:valid:gaussianStd", "Double", 0.1, "not floats"),
    ],
)
def test_bad_usd_parameters_name_the_prim_and_attribute(attribute, type_name, value, problem):
    from runtime.run.loop import run_scene

    extra = {}
    if "driftCorrelationTime" in attribute:
        extra = {"simrt:noise:angular_velocity:driftStd": (IMU, "Double", 0.1)}
    stage = _arm_stage(**{attribute: (IMU, type_name, value)}, **extra)
    with pytest.raises(SchemaError) as caught:
        run_scene(stage, steps=2, summary=False)
    message = str(caught.value)
    assert message.startswith(f"{IMU}.{attribute}: "), message
    assert problem in message
    assert "\n" not in message


def test_bad_spec_parameters_name_the_key():
    from runtime.run.noise_channels import spec_noise

    with pytest.raises(SimrtError, match=r'spec.toml: noise."/World/Imu".gyro.gaussianStd: .*>= 0'):
        spec_noise({"/World/Imu": {"gyro": {"gaussianStd": -1.0}}}, "spec.toml")
    with pytest.raises(SimrtError, match=r"unknown noise parameter 'sigma'"):
        spec_noise({"/World/Imu": {"gyro": {"sigma": 1.0}}}, "spec.toml")


def test_bad_python_parameters_are_refused():
    with pytest.raises(ValueError, match="GaussianNoise.std"):
        GaussianNoise(-1.0)
    with pytest.raises(ValueError, match=r"Dropout.probability.*\[0, 1\]"):
        Dropout(-0.1)
    with pytest.raises(ValueError, match="correlation_time"):
        GaussMarkovBias(0.1, 0.0)
    with pytest.raises(ValueError, match="longer than the history"):
        NoiseModel([Latency(steps=20)], history=10)
    with pytest.raises(ValueError, match="needs the step dt"):
        NoiseModel([NoiseDensity(0.1)])
    with pytest.raises(ValueError, match="not both"):
        NoiseModel([GaussMarkovBias(0.1, 1.0), BiasRandomWalk(0.1)], dt=0.01)
    with pytest.raises(ValueError, match="3 values for readings of 4 elements"):
        NoiseModel([ConstantBias((1.0, 2.0, 3.0))]).new_state(1, (4,))


# ---------------------------------------------------------------------------- Isaac Lab cfgs


def test_isaaclab_noise_cfgs_convert():
    from runtime.compat.isaaclab.utils import noise as lab

    model = lab.NoiseModelWithAdditiveBiasCfg(
        noise_cfg=lab.GaussianNoiseCfg(mean=0.0, std=0.05),
        bias_noise_cfg=lab.UniformNoiseCfg(n_min=-0.2, n_max=0.4),
    ).to_noise_model(sensor="/World/Imu", channel="gyro")
    parts = {type(p).__name__: p for p in model.parts}
    assert parts["GaussianNoise"] == GaussianNoise(0.05, 0.0, "add")
    bias = parts["ResetBias"]
    assert (bias.mean, bias.half_range, bias.std) == (pytest.approx(0.1), pytest.approx(0.3), 0)
    state = model.new_state(5000, (1,), seed=1)
    assert state.offset.min() >= -0.2 and state.offset.max() < 0.4
    assert lab.to_noise_parts(lab.ConstantNoiseCfg(bias=2.0, operation="scale")) == [
        ScaleFactor(2.0)
    ]
    assert lab.to_noise_parts(lab.ConstantNoiseCfg(bias=(1.0, 2.0))) == [ConstantBias((1.0, 2.0))]
    absolute = lab.to_noise_model(lab.UniformNoiseCfg(n_min=3.0, n_max=3.0, operation="abs"))
    assert np.all(_series(absolute, np.zeros((10, 2))) == 3.0)
    scaled = lab.to_noise_model(lab.GaussianNoiseCfg(mean=1.0, std=0.0, operation="scale"))
    np.testing.assert_array_equal(_series(scaled, np.full((3, 2), 4.0)), 4.0)
    with pytest.raises(ValueError, match="GaussianNoise.std"):
        lab.to_noise_model(lab.GaussianNoiseCfg(std=-1.0))
    with pytest.raises(ValueError, match="per-component"):
        lab.to_noise_model(lab.GaussianNoiseCfg(std=[0.1, 0.2]))


def test_plain_python_kernels_give_the_same_bits(tmp_path):
    """``SIMRT_DISABLE_JIT=1`` runs the kernels as Python: the same noisy readings."""
    import os
    import subprocess
    import sys

    script = (
        "import sys, numpy as np\n"
        "from runtime.sensors import noise as N\n"
        "m = N.NoiseModel([N.GaussianNoise(0.1), N.UniformNoise(0, 1), N.ResetBias(std=1),"
        " N.GaussMarkovBias(0.1, 1.0), N.RangeNoise(0.01), N.Dropout(0.3, True),"
        " N.Latency(steps=2), N.Quantization(1e-3)], dt=0.01, max_range=10.0)\n"
        "state = m.new_state(3, (5,), seed=2, first_env=4)\n"
        "exact = np.random.default_rng(0).uniform(0, 12, size=(20, 3, 5))\n"
        "out = np.stack([m.apply(exact[k], None, state, k) for k in range(20)])\n"
        "np.save(sys.argv[1], out)\n"
    )
    results = []
    for disabled in ("1", "0"):
        path = tmp_path / f"{disabled}.npy"
        env = dict(os.environ, SIMRT_DISABLE_JIT=disabled, PYTHONPATH=str(REPO))
        subprocess.run(
            [sys.executable, "-W", "error", "-c", script, str(path)],
            env=env, check=True, cwd=REPO, timeout=300,
        )  # fmt: skip
        results.append(np.load(path))
    assert results[0].tobytes() == results[1].tobytes()


# ---------------------------------------------------------------------------- batch


def _spec(tmp_path, noise_toml):
    spec = tmp_path / "spec.toml"
    spec.write_text(f'seed = 3\nepisodes = 2\nsteps = 60\n[[scenes]]\npath = "{ARM}"\n{noise_toml}')
    return spec


def test_batch_spec_noise_table_is_checked(tmp_path):
    from runtime.batch.spec import load_spec

    good = _spec(tmp_path, f'[noise."{IMU}".angular_velocity]\ngaussianStd = 0.01\n')
    spec = load_spec(good)
    assert spec.noise == {IMU: {"angular_velocity": {"gaussianStd": 0.01}}}
    plain = load_spec(_spec(tmp_path, ""))
    assert "noise" not in json_fingerprint_input(plain)
    bad = _spec(tmp_path, f'[noise."{IMU}".angular_velocity]\ndropoutProbability = 2.0\n')
    with pytest.raises(SimrtError) as caught:
        load_spec(bad)
    assert str(caught.value).startswith(
        f'{bad}: noise."{IMU}".angular_velocity.dropoutProbability: '
    )


def json_fingerprint_input(spec):
    data = spec.to_json()
    data.pop("timeout")
    if not data["noise"]:
        data.pop("noise")
    return data


def test_batch_episodes_record_noise_seeded_by_the_episode(tmp_path):
    from runtime.batch.dataset import load_dataset
    from runtime.batch.driver import run_batch
    from runtime.cli import main

    spec = _spec(tmp_path, f'[noise."{IMU}".angular_velocity]\ngaussianStd = 0.01\n')
    dataset, two = tmp_path / "ds", tmp_path / "ds2"
    run_batch(spec, dataset, workers=1)
    run_batch(spec, two, workers=2)
    loaded, loaded_two = load_dataset(dataset), load_dataset(two)
    name = f"{IMU}.angular_velocity.noisy"
    noisy = []
    for episode in (0, 1):
        entry = loaded[episode]
        values, recording = _noisy_channels(entry.store)
        assert recording.run["noise"]["seed"] == entry.row["seed"]
        noisy.append(values[name])
        # 1 and 2 worker processes: the same noisy readings
        assert _noisy_channels(loaded_two[episode].store)[0][name].tobytes() == noisy[-1].tobytes()
    assert not np.array_equal(noisy[0], noisy[1])
    # simrt run --episode DATASET:ID replays the episode's noisy readings bit for bit
    out = tmp_path / "again.zarr"
    assert main(["run", "--episode", f"{dataset}:1", "--out", str(out), "--no-progress"]) == 0
    again, _ = _noisy_channels(out)
    assert again[name].tobytes() == noisy[1].tobytes()


def test_simrt_run_noise_seed_and_scene_setting(tmp_path):
    from runtime.cli import main

    scene = tmp_path / "noisy_arm.usda"
    scene.write_text(
        f"#usda 1.0\n(\n    subLayers = [@{ARM}@]\n)\n"
        'over "World" {\n'
        '  over "PhysicsScene" (customData = {dictionary simrt = {int noiseSeed = 21}}) {}\n'
        '  over "SimpleArm" {\n'
        '    over "link3" {\n'
        '      over "imu" {\n'
        "        double simrt:noise:angular_velocity:gaussianStd = 0.01\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n"
    )
    seeds = []
    for name, extra in (("scene", []), ("cli", ["--noise-seed", "4"])):
        out = tmp_path / f"{name}.zarr"
        argv = ["run", str(scene), "--steps", "20", "--out", str(out), "--no-progress", *extra]
        assert main(argv) == 0
        noisy, recording = _noisy_channels(out)
        assert list(noisy) == [f"{IMU}.angular_velocity.noisy"]
        seeds.append(recording.run["noise"]["seed"])
    assert seeds == [21, 4]
