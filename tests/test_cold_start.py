"""Cold start: the kernel manifest, the parallel compile worker, and the written-out helpers.

The raycast kernels sort and bisect with their own loops (NumPy's ``sort`` /
``searchsorted`` compile several times longer in Numba); they are checked against NumPy.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from runtime._compile import precompile as _precompile
from runtime._compile.kernel_manifest import KERNELS
from runtime.sensors._raycast_kernels import _heap_sort_kernel, _search_left_kernel

REPO = Path(__file__).resolve().parents[1]


def test_manifest_names_current_kernels():
    """Every manifest entry is a kernel of a known module with that many parameters."""
    assert KERNELS
    for module, name, seconds, signature in KERNELS:
        assert module in _precompile._MODULES, module
        kernel = _precompile._dispatcher(module, name)
        function = getattr(kernel, "py_func", kernel)
        assert len(inspect.signature(function).parameters) == len(signature), name
        assert len(_precompile._types(signature)) == len(signature)
        assert seconds >= 0.0


def test_scene_features_name_the_lab_sensors():
    """A scene with simrt:lab:* sensors warms the lab kernels (cameras, sets); others do not."""
    from pxr import Usd

    import runtime.schema  # noqa: F401

    def features(name):
        stage = Usd.Stage.Open(str(REPO / "scenes" / name))
        return _precompile.scene_features(stage, engine=True, ik=False)

    assert "lab" in features("panda_lab_camera.usda")
    assert "lab" in features("go2_lab_sensors.usda")
    assert "lab" not in features("panda_table.usda")
    lab = {m for m, (feature, _) in _precompile._MODULES.items() if feature == "lab"}
    assert "runtime.rays._view_kernels" in lab and "runtime.run._lab_set_kernels" in lab


def test_manifest_kernels_import_without_the_sim_extra():
    """The package build compiles the manifest's kernels in an environment with only Numba
    and NumPy (pyproject's build requirements): their modules must import without MuJoCo,
    zarr or matplotlib (a lab module importing mujoco at the top once left installs without
    seeds)."""
    code = (
        "import sys, importlib\n"
        "for name in ('mujoco', 'zarr', 'matplotlib', 'gymnasium', 'scipy', 'trimesh'):\n"
        "    sys.modules[name] = None\n"
        "from runtime._compile.kernel_manifest import API_KERNELS, KERNELS\n"
        "for module, *_ in KERNELS + API_KERNELS:\n"
        "    importlib.import_module(module)\n"
        "print('imported')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0 and out.stdout.strip() == "imported", out.stderr[-2000:]


def test_heap_sort_matches_numpy():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(0, 60))
        a = rng.integers(-20, 20, n + 7).astype(np.int64)
        expected = a.copy()
        expected[2 : 2 + n] = np.sort(expected[2 : 2 + n])
        _heap_sort_kernel(a, 2, 2 + n)
        np.testing.assert_array_equal(a, expected)


def test_search_left_matches_numpy():
    rng = np.random.default_rng(4)
    pool = np.array([-1.0, 0.0, 0.0, 0.5, 1.0, np.inf, np.nan], np.float64)
    for _ in range(300):
        n = int(rng.integers(0, 12))
        values = np.sort(rng.choice(pool, n + 4))  # NaN sorts last, as in NumPy
        for v in (-2.0, -1.0, 0.0, 0.25, 1.0, np.inf, np.nan):
            expected = 1 + np.searchsorted(values[1 : 1 + n], v, side="left")
            assert _search_left_kernel(values, 1, 1 + n, v) == expected


def test_worker_compiles_into_the_shared_cache(tmp_path):
    """The worker process writes the kernel to NUMBA_CACHE_DIR; a stale entry is skipped."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(REPO))
    args = [
        "runtime.sensors._raycast_kernels:_search_left_kernel:"
        "Array(float64, 1, 'C')|int64|int64|float64",
        "runtime.sensors._raycast_kernels:no_such_kernel:int64",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "runtime._compile.precompile", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert list(tmp_path.rglob("_raycast_kernels._search_left_kernel-*.nbi"))


def test_nothing_to_do_when_disabled(monkeypatch):
    monkeypatch.setenv("SIMRT_PRECOMPILE", "0")
    warmup = _precompile.start({"engine", "raycast", "imu", "contact", "ik"})
    assert warmup.workers == [] and warmup.own == []
    warmup.finish()


def test_missing_kernels_shared_longest_first(monkeypatch):
    """Build kernels stay here; step kernels go longest first to the least loaded process."""
    entries = [
        ("m", "state", 8.0, (), "build"),
        ("m", "raycast", 25.0, (), "step"),
        ("m", "ik", 10.0, (), "step"),
        ("m", "imu", 9.0, (), "step"),
        ("m", "contact", 5.0, (), "step"),
        ("m", "cached", 50.0, (), "step"),
    ]
    monkeypatch.setenv("SIMRT_PRECOMPILE", "1")
    monkeypatch.setattr(_precompile, "_entries", lambda features: entries)
    monkeypatch.setattr(_precompile, "_dispatcher", lambda module, name: name)
    monkeypatch.setattr(_precompile, "_cached", lambda name: name == "cached")
    monkeypatch.setattr(_precompile, "usable_cores", lambda: 2)
    monkeypatch.setattr(
        _precompile,
        "_spawn",
        lambda share: SimpleNamespace(names=[n for _, n, _ in share], poll=lambda: 0),
    )
    warmup = _precompile.start({"engine"})
    assert [w.names for w in warmup.workers] == [["raycast", "contact"]]
    assert [n for _, n, _ in warmup.own] == ["ik", "imu"]
    monkeypatch.setattr(_precompile, "usable_cores", lambda: 1)
    warmup = _precompile.start({"engine"})
    assert warmup.workers == []
    assert [n for _, n, _ in warmup.own] == ["raycast", "ik", "imu", "contact"]


def test_compile_lock_makes_a_second_process_wait_for_the_first(tmp_path, monkeypatch):
    """One process at a time compiles a cold cache: a second waits, then reloads the cache;
    the lock goes with its holder, also when the holder is killed."""
    import time

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))  # a lock of its own
    holder = (
        "import sys, time\n"
        "from runtime._compile import precompile as _precompile\n"
        "lock = _precompile._CompileLock.take()\n"
        "assert lock.fd is not None and not lock.waited\n"
        "print('held', flush=True)\n"
        "time.sleep(float(sys.argv[1]))\n"
        "lock.release()\n"
        "time.sleep(30)\n"
    )
    for end in ("release", "kill"):
        child = subprocess.Popen(
            [sys.executable, "-c", holder, "1.0" if end == "release" else "30"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)},
        )
        try:
            assert child.stdout.readline().strip() == "held"
            if end == "kill":
                killer = __import__("threading").Timer(1.0, child.kill)
                killer.start()
            began = time.monotonic()
            lock = _precompile._CompileLock.take(timeout=20.0)
            waited = time.monotonic() - began
            assert lock.waited and lock.fd is not None
            assert 0.5 < waited < 10.0, waited
            lock.release()
            free = _precompile._CompileLock.take(timeout=0.0)
            assert not free.waited  # released: the next taker does not wait
            free.release()
        finally:
            child.kill()
            child.wait()


def test_compile_lock_gives_up_waiting_after_its_timeout(tmp_path, monkeypatch):
    import fcntl

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    fd = os.open(_precompile._CompileLock.path(), os.O_RDWR | os.O_CREAT)
    other = os.open(_precompile._CompileLock.path(), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held through another open file: flock conflicts
        lock = _precompile._CompileLock.take(timeout=0.5)
        assert lock.waited and lock.fd is None  # gave up: compiles without the lock
    finally:
        os.close(fd)
        os.close(other)


def test_blas_probe_answered_without_scipy_and_blas_still_works():
    """After ``runtime._compile.jit``'s Numba import, Numba's arraymath imports with its BLAS probe
    answered (no SciPy linalg import); the flag is what the real probe gives, the probe is
    restored, and a kernel calling BLAS (``np.dot`` on float64 matrices) still compiles and
    matches NumPy."""
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from runtime._compile.jit import _import_numba\n"
        "numba = _import_numba()\n"
        "assert 'numba.np.arraymath' not in sys.modules  # (imported when first needed)\n"
        "import numba.np.arraymath as am, numba.np.linalg as la\n"
        "assert 'scipy.linalg' not in sys.modules\n"
        "assert am._HAVE_BLAS is True and am.ensure_blas is la.ensure_blas\n"
        "f = numba.njit(lambda a, b: np.dot(a, b))\n"
        "a = np.arange(12.0).reshape(3, 4); b = np.arange(8.0).reshape(4, 2)\n"
        "assert np.array_equal(f(a, b), a @ b)\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_cached_kernels_load_without_the_compiler_registries_and_compiling_still_works(
    tmp_path,
):
    """A process whose kernels come from the Numba cache does not import Numba's lowering
    modules (``runtime._compile.jit`` loads caches with only the runtime initialised); the loaded
    kernel gives the compiled results, allocates (NRT), and a later compile in the same
    process refreshes the registries itself."""
    code = (
        "import sys, numpy as np\n"
        "from runtime.rays import _bvh_build_kernels as k\n"
        "v = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])\n"
        "f = np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])\n"
        "boxes = np.empty((8, 12)); refs = np.empty((8, 4), np.int64)\n"
        "tris = np.empty((4, 9)); order = np.empty(4, np.int64); used = np.empty(1, np.int64)\n"
        "k.bvh_build_kernel(v, f, boxes, refs, tris, order, used)  # (allocates: NRT)\n"
        "n = int(used[0])\n"
        "print(repr((boxes[:n].tolist(), refs[:n].tolist(), tris.tolist(), order.tolist())))\n"
        "print('hits', sum(k.bvh_build_kernel.stats.cache_hits.values()))\n"
        "print('registries', 'numba.np.arraymath' in sys.modules)\n"
        "import numba\n"
        "f = numba.njit(lambda n: np.cumsum(np.arange(n) * 2.0))\n"
        "assert f(4).tolist() == [0.0, 2.0, 6.0, 12.0]\n"
        "print('registries after a compile', 'numba.np.arraymath' in sys.modules)\n"
    )
    # (SIMRT_SEEDS=0: the first process compiles instead of loading the install's seed)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), SIMRT_SEEDS="0")
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )  # fmt: skip
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    first, second = (run.stdout.splitlines() for run in runs)
    assert first[0] == second[0]  # the same rotation, compiled then loaded
    assert first[1] == "hits 0" and second[1] == "hits 1"
    assert second[2] == "registries False"
    assert second[3] == "registries after a compile True"


def test_a_change_in_another_kernel_file_invalidates_cached_kernels(tmp_path):
    """A kernel's cache entry is stale when any kernel source changed, not only its own
    file: kernels bake in constants from other kernel modules (``runtime._compile.jit``).

    A copy of the package compiles a kernel of ``_bvh_build_kernels.py``; a second process loads
    it from the cache; after a comment is added to ``_simd.py`` only, a third process
    compiles it again instead of loading machine code built with the old constants, and
    the cold-start precompile counts it as missing."""
    import shutil

    copy = tmp_path / "pkg"
    shutil.copytree(
        REPO / "runtime", copy / "runtime", ignore=shutil.ignore_patterns("__pycache__")
    )
    code = (
        "import numpy as np\n"
        "from runtime._compile import precompile as _precompile\n"
        "from runtime.rays import _bvh_build_kernels as k\n"
        "print(_precompile._cached(k._half_area_kernel))\n"
        "print(k._half_area_kernel(0.0, 0.0, 0.0, 1.0, 2.0, 3.0))\n"
        "print(sum(k._half_area_kernel.stats.cache_hits.values()))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(copy))
    env.pop("NUMBA_CACHE_DIR", None)  # the copy's own in-tree cache

    def run() -> list[str]:
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert run() == ["False", "11.0", "0"]  # compiled
    assert run() == ["True", "11.0", "1"]  # loaded from the cache
    simd = copy / "runtime" / "rays" / "_simd.py"
    simd.write_text(simd.read_text() + "\n# changed\n")
    # compiled again, and a run's precompile sees it missing (shared, announced)
    assert run() == ["False", "11.0", "0"]


_FULL_DISK_SCRIPT = """
import logging, resource, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
import numpy as np
from runtime.sensors._raycast_kernels import _same_float_kernel
resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))  # a cache entry is larger
print(_same_float_kernel(np.float32(1.5), np.float32(1.5)), _same_float_kernel(1.0, 2.0))
"""


def test_a_kernel_whose_cache_entry_cannot_be_written_still_runs(tmp_path):
    """A file-size limit (as a full disk) while Numba saves a kernel: one warning, no crash."""
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
        "SIMRT_SEEDS": "0",  # (compiled here, so that it is saved here)
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_SCRIPT],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
    warnings = [line for line in done.stderr.splitlines() if "cache not written" in line]
    assert len(warnings) == 1 and "_same_float_kernel" in warnings[0], done.stderr
