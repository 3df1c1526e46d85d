"""Kernels compiled at package build (runtime._compile.seeds, precompile.build_seeds).

Every check runs in fresh processes with their own empty Numba cache: a seed is planted
into that cache and loaded, or refused, exactly as a first run on a fresh machine would.
"""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from runtime._compile import seeds as _seeds

REPO = Path(__file__).resolve().parents[1]
KERNEL = "runtime.sensors._imu_kernels:imu_read_kernel"

# plants the seed file SIMRT_SEED_FILE into this process's (empty) cache, then calls the
# kernel on fixed inputs and compares it with its Python source run by the interpreter
PLANT = """
import sys
import numpy as np
from runtime._compile import precompile as _precompile
from runtime._compile import seeds as _seeds
entries = [e for e in _precompile._entries({"imu"}) if e[1] == "imu_read_kernel"]
planted = _seeds.plant(entries)
kernel = _seeds.dispatcher_of("runtime.sensors._imu_kernels", "imu_read_kernel")
rng = np.random.default_rng(3)
ints = np.zeros((2, 10), dtype=np.int64)
ints[1, 3] = 2
ints[1, 7] = 1
floats = rng.normal(size=(2, 4, 14))
args = (floats.copy(), 1, np.array([0.0, 0.0, -9.81]), np.array([0.0, 0.0, 9.81]), True)
out = np.empty(11)
kernel(ints, *args, out)
expected = np.empty(11)
kernel.py_func(ints, *args, expected)
print(planted, sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))
print(np.allclose(out, expected, rtol=1e-12, atol=1e-12) and bool(np.isfinite(out).all()))
"""


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
    env.pop("SIMRT_SEEDS", None)
    env.pop("SIMRT_SEED_FILE", None)
    env.update(extra)
    return env


def _plant(tmp_path: Path, seed: Path, name: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PLANT],
        env=_env(tmp_path / name, SIMRT_SEED_FILE=str(seed)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.fixture(scope="module")
def seed(tmp_path_factory) -> Path:
    """A seed file with one real kernel, built as the package build does."""
    folder = tmp_path_factory.mktemp("seed")
    path = folder / "kernels.seed"
    out = subprocess.run(
        [sys.executable, "-m", "runtime._compile.precompile", "--seeds", str(path), KERNEL],
        env=_env(folder / "build-cache"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "1 of 1 kernels" in out.stderr
    return path


def _rewrite(seed: Path, target: Path, header=None, entry=None) -> Path:
    with open(seed, "rb") as handle:
        head = pickle.load(handle)
        entries = pickle.load(handle)
    ((name, offered),) = entries.items()
    if entry is not None:
        offered = [entry(*pair) for pair in offered]
    with open(target, "wb") as handle:
        pickle.dump(header(head) if header else head, handle)
        pickle.dump({name: offered}, handle)
    return target


def test_a_seed_is_planted_and_loaded_instead_of_compiled(seed, tmp_path):
    planted, hits, misses, same = _plant(tmp_path, seed, "cache")
    assert (planted, hits, misses) == ("1", "1", "0")  # loaded from the cache, no compile
    assert same == "True"
    assert (seed.stat().st_mode & 0o777) == 0o644
    # a second process finds it in its cache: nothing to plant, loaded
    assert _plant(tmp_path, seed, "cache")[:3] == ["0", "1", "0"]


LOAD = """
import numpy as np
from runtime._compile import seeds as _seeds
kernel = _seeds.dispatcher_of("runtime.sensors._imu_kernels", "imu_read_kernel")
out = np.empty(11)
kernel(np.zeros((1, 10), np.int64), np.ones((1, 3, 14)), 0, np.zeros(3), np.zeros(3), False, out)
print(sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))
"""


def test_a_kernel_missing_from_the_cache_loads_from_the_seeds_at_its_first_call(seed, tmp_path):
    """No precompile ran (the kinematics API, a kernel outside a run's list): the cache
    loader plants the seed's entry on the miss and loads it."""
    out = subprocess.run(
        [sys.executable, "-c", LOAD],
        env=_env(tmp_path / "cache", SIMRT_SEED_FILE=str(seed)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "0"]  # a cache hit, no compile
    off = subprocess.run(
        [sys.executable, "-c", LOAD],
        env=_env(tmp_path / "off", SIMRT_SEED_FILE=str(seed), SIMRT_SEEDS="0"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert off.stdout.split() == ["0", "1"], off.stderr  # switched off: compiled


def test_a_seed_built_with_another_numba_is_not_used(seed, tmp_path):
    other = _rewrite(seed, tmp_path / "other.seed", header=lambda h: {**h, "numba": "0.1"})
    planted, hits, misses, same = _plant(tmp_path, other, "cache")
    assert (planted, hits, misses, same) == ("0", "0", "1", "True")  # compiled here


def test_a_seed_for_another_cpu_is_not_used(seed, tmp_path):
    def other_cpu(key, raw):
        signature, (triple, cpu, features), code = key
        return (signature, (triple, cpu + "-other", features), code), raw

    other = _rewrite(seed, tmp_path / "cpu.seed", entry=other_cpu)
    planted, hits, misses, same = _plant(tmp_path, other, "cache")
    assert (planted, hits, misses, same) == ("0", "0", "1", "True")


def test_a_damaged_seed_is_dropped_and_the_kernel_compiles(seed, tmp_path):
    damaged = _rewrite(seed, tmp_path / "bad.seed", entry=lambda key, raw: (key, raw[:100]))
    planted, hits, misses, same = _plant(tmp_path, damaged, "cache")
    assert (planted, misses, same) == ("0", "1", "True")
    # and the cache does not keep the damaged entry: the next process loads the compiled one
    assert _plant(tmp_path, damaged, "cache")[:3] == ["0", "1", "0"]


def test_an_unreadable_seed_file_is_ignored(tmp_path):
    junk = tmp_path / "junk.seed"
    junk.write_bytes(b"not a pickle")
    assert _seeds._read.__wrapped__(str(junk)) == {}
    assert _seeds._read.__wrapped__(str(tmp_path / "absent.seed")) == {}
    # a readable pickle with the right header but not a seed table
    for table in ({"x": 1}, [1, 2], {("m", "k"): [("key", "not bytes")]}):
        odd = tmp_path / "odd.seed"
        with open(odd, "wb") as handle:
            pickle.dump(_seeds.seed_header(), handle)
            pickle.dump(table, handle)
        assert _seeds._read.__wrapped__(str(odd)) == {}


COLD_RUN = """
import sys
from runtime.run.loop import run_scene
result = run_scene(sys.argv[1], steps=60, out=sys.argv[2])
from numba.core.registry import CPUDispatcher
misses = {}
for name, module in list(sys.modules.items()):
    if name.startswith("runtime."):
        for attr, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and sum(value.stats.cache_misses.values()):
                misses[f"{name}.{attr}"] = sum(value.stats.cache_misses.values())
print(misses)
"""


@pytest.mark.parametrize("scene", ["panda_table", "go2_standing"])
def test_the_installed_seeds_serve_a_cold_run(tmp_path, scene):
    """The seeds this install built hold every kernel a run calls: with empty Numba and
    scene caches, the run compiles nothing (and announces no compile). go2 has no ray-cast
    sensor: its fused step must not compile the ray-cast kernel either."""
    assert Path(_seeds.SEED_PATH).is_file(), (
        "no kernel seeds: reinstall with `pip install -e .` (the build compiles them)"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            COLD_RUN,
            str(REPO / "scenes" / f"{scene}.usda"),
            str(tmp_path / "run.zarr"),
        ],
        env=_env(tmp_path / "numba", SIMRT_CACHE_DIR=str(tmp_path / "scenes")),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "{}", out.stdout
    assert "compiling" not in out.stderr


COLD_API = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("manifest_tool", sys.argv[1])
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)
tool._api_workload(sys.argv[2])
from numba.core.registry import CPUDispatcher
import runtime.kinematics._kernels as K
print({n: sum(d.stats.cache_misses.values()) for n, d in vars(K).items()
       if isinstance(d, CPUDispatcher) and sum(d.stats.cache_misses.values())})
"""


def test_the_installed_seeds_serve_the_kinematics_api_cold(tmp_path):
    """FK, Jacobians and IK (single and batched) from an empty Numba cache compile nothing:
    the manifest's API_KERNELS are in the seeds and load at their first call."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            COLD_API,
            str(REPO / "tools" / "kernel_manifest.py"),
            str(REPO / "scenes" / "panda_table.usda"),
        ],
        env=_env(tmp_path / "numba"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "{}", out.stdout
