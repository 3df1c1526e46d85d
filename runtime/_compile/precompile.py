"""Compile a cold run's kernels in parallel processes (the Numba cache is shared).

A run with an empty Numba cache compiles its kernels one after the other when it first
calls them (about a minute on two cores). :func:`start` (called once the stage is open)
looks up the kernels the run will need in :mod:`runtime._compile.kernel_manifest` (their argument
types, written by ``tools/kernel_manifest.py``); when some are not in the cache it starts
worker processes (``python -m runtime._compile.precompile``, one per core beyond the first) that
compile kernels the run first calls in its step loop (the sensors', IK) into the cache,
while this process goes on building the scene and compiling the kernels it calls before the
loop (the engine's state kernel). :meth:`Warmup.finish`, just before the first step,
compiles this process's share of the step-loop kernels and waits for the workers; the step
loop then loads their kernels from the cache.

Nothing depends on the manifest being current: a kernel missing from it, or called with
other types, is compiled when first called, as without warm-up. A worker that fails only
costs the time it ran (its kernels are then compiled here). ``SIMRT_PRECOMPILE=0`` turns
the workers off.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from typing import Any, TextIO

from runtime._compile import numba_compat as compat
from runtime._compile import seeds

__all__ = ["Warmup", "load_cached_kernels", "start", "scene_features"]

_LOG = logging.getLogger(__name__)

# kernel module -> (feature, phase). ``build`` kernels are first called before the step loop
# (this process compiles them when it calls them); ``step`` kernels in the loop.
_MODULES = {
    "runtime.engine._kernels": ("engine", "build"),
    "runtime.rays._bvh_build_kernels": ("raycast", "step"),
    "runtime.rays._traversal_kernels": ("raycast", "step"),
    "runtime.rays._solid_kernels": ("raycast", "step"),
    "runtime.rays._scene_cast_kernels": ("raycast", "step"),
    "runtime.kinematics._kernels": ("ik", "step"),
    "runtime.sensors._contact_kernels": ("contact", "step"),
    "runtime.sensors._imu_kernels": ("imu", "step"),
    "runtime.sensors._raycast_kernels": ("raycast", "step"),
    "runtime.rays._wide_bvh_kernels": ("raycast", "step"),
    "runtime.run._fused_kernels": ("engine", "step"),
    "runtime.sensors.lab._lab_kernels": ("lab", "step"),
    "runtime.rays._view_kernels": ("lab", "step"),
    "runtime.rays._box_kernels": ("lab", "step"),
    "runtime.run._lab_set_kernels": ("lab", "step"),
}
_FEATURES = {feature for feature, _ in _MODULES.values()}
_SENSOR_FEATURES = {
    "IsaacContactSensor": "contact",
    "IsaacImuSensor": "imu",
    "IsaacRaycastSensor": "raycast",
}


def scene_features(stage: Any, *, engine: bool, ik: bool) -> set[str]:
    """The kernel families a run of ``stage`` calls (``engine``, ``ik`` and its sensors')."""
    from runtime.schema.readers import discover_sensor_prims

    found = {_SENSOR_FEATURES.get(str(p.GetTypeName()), "") for p in discover_sensor_prims(stage)}
    # Isaac Lab-style sensors (runtime.sensors.lab): prims with simrt:lab:kind
    if any(prim.HasAttribute("simrt:lab:kind") for prim in stage.Traverse()):
        found.add("lab")
    if engine:
        found.add("engine")
    if ik:
        found.add("ik")
    return found


def _entries(features: set[str]) -> list[tuple[str, str, float, tuple[str, ...], str]]:
    from runtime._compile.kernel_manifest import KERNELS

    out = []
    for module, name, seconds, signature in KERNELS:
        feature, phase = _MODULES.get(module, ("", ""))
        if feature in features:
            out.append((module, name, float(seconds), tuple(signature), phase))
    return out


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; the CPU count elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


_dispatcher = seeds.dispatcher_of
_types = seeds.numba_types


def _cached(dispatcher: Any) -> bool:
    """Whether the Numba cache holds a current index for ``dispatcher`` (any signature).

    An index whose source stamp no longer matches (a kernel source changed since: see
    ``runtime._compile.jit``) counts as missing, so that an update's recompile is shared between
    processes and announced like a first run's, not done one kernel after the other at
    its first call.
    """
    try:
        cache = compat.cache_of(dispatcher)
    except AttributeError:  # JIT disabled, or other Numba internals: assume cached
        return True
    try:
        return bool(compat.cache_index(cache))  # ({} when missing, stale or another version)
    except Exception:  # noqa: BLE001 - an unreadable index: compile (Numba rewrites it)
        return False


def _compile(module: str, name: str, signature: tuple[str, ...]) -> bool:
    """Compile (or load from the cache) one kernel for one signature; errors are logged."""
    try:
        _dispatcher(module, name).compile(_types(signature))
        return True
    except Exception as error:  # noqa: BLE001 - a stale manifest entry: compiled on first call
        _LOG.debug("precompile %s.%s%s skipped: %s", module, name, signature, error)
        return False


def _in_cache(dispatcher: Any, types: tuple[Any, ...]) -> bool:
    """Whether the Numba cache holds ``dispatcher`` compiled for exactly ``types``."""
    try:
        cache = compat.cache_of(dispatcher)
        key = compat.entry_key(cache, types, dispatcher.targetctx)
        return key in compat.cache_index(cache)
    except Exception:  # noqa: BLE001 - JIT disabled, or other Numba internals: unknown
        return False


def load_cached_kernels(features: set[str] | None = None) -> int:
    """Load the manifest's kernels that the Numba cache holds (never compiles one).

    For a process that forks workers (the batch executor's fork server): the workers start
    with the kernels loaded instead of each loading them. A kernel the cache lacks (cold
    cache, other types) is left to be compiled where it is first called.

    Args:
        features: kernel families (:func:`scene_features`); None: every family.

    Returns:
        How many kernels were loaded.
    """
    from runtime._compile.jit import JIT_DISABLED

    if JIT_DISABLED:
        return 0
    try:
        entries = _entries(_FEATURES if features is None else features)
    except Exception as error:  # noqa: BLE001 - no manifest or a stale one
        _LOG.debug("kernel preload skipped: %s", error)
        return 0
    seeds.plant([e for e in entries if not _cached(_dispatcher(e[0], e[1]))])
    return _load_cached(entries)


def _load_cached(entries: list[tuple[str, str, float, tuple[str, ...], str]]) -> int:
    """Load those of manifest ``entries`` the Numba cache holds (BVH builders last).

    Returns:
        How many kernels were loaded.
    """
    loaded = 0
    for module, name, _, signature, _ in sorted(entries, key=lambda e: "bvh_" in e[1]):
        try:
            cached = _in_cache(_dispatcher(module, name), _types(signature))
        except Exception as error:  # noqa: BLE001 - a stale entry: compiled on first call
            _LOG.debug("preload %s.%s skipped: %s", module, name, error)
            continue
        if cached:
            _compile(module, name, signature)  # a load: the cache holds this signature
            loaded += 1
    return loaded


def _preload(entries: list[tuple[str, str, float, tuple[str, ...], str]]) -> threading.Thread:
    """Load the run's cached kernels in a thread while this one builds the scene.

    Loading a kernel is mostly LLVM linking its machine code (0.01-0.02 s each, 0.1 s for
    a run's eight plus the runtime's initialisation), and LLVM runs without the GIL: the
    scene's build goes on meanwhile. A kernel this thread is loading when the build calls
    it is waited for (Numba's compile lock), never loaded twice, and the step loop starts
    without waiting for the others. The kernels that build a ray scene's BVH come last (a
    scene cache entry holds the BVH). :meth:`Warmup.close` joins the thread after the run.
    """
    thread = threading.Thread(
        target=_load_cached, args=(entries,), name="simrt-kernel-load", daemon=True
    )
    thread.start()
    return thread


class Warmup:
    """A started warm-up: the worker processes (if any) and this process's share."""

    def __init__(
        self,
        workers: list[subprocess.Popen],
        own: list,
        started: float,
        preload: threading.Thread | None = None,
    ) -> None:
        self.workers = workers
        self.own = own
        self.started = started
        self.preload = preload  # loading the cached kernels meanwhile (a warm cache)
        self.lock: _CompileLock | None = None  # held until finish() (see _CompileLock)
        for worker in workers:  # a run that fails before its first step stops them
            weakref.finalize(self, _stop, worker)

    def close(self) -> None:
        """Wait for the preload thread (a warm cache's): no kernel load outlives the run."""
        if self.preload is not None:
            self.preload.join()
            self.preload = None

    def finish(self) -> None:
        """Compile this process's share, then wait for the workers (before the first step).

        A warm cache's preload thread goes on meanwhile (a kernel the step calls while it
        is loading is waited for); :meth:`close` joins it.
        """
        try:
            for module, name, signature in self.own:
                _compile(module, name, signature)
            _LOG.debug("own kernels compiled after %.1f s", time.perf_counter() - self.started)
            self.own = []
            for worker in self.workers:
                worker.wait()
        except BaseException:  # Ctrl-C, SIGTERM: no compile outlives the run
            for worker in self.workers:
                _stop(worker)
            raise
        finally:
            if self.lock is not None:
                self.lock.release()
                self.lock = None
        workers, self.workers = self.workers, []
        for worker in workers:
            log = worker.log  # type: ignore[attr-defined]
            log.seek(0)
            text = log.read().decode(errors="replace").strip()
            log.close()
            if worker.returncode != 0:
                last = text.splitlines()[-1:]
                _LOG.warning(
                    "kernel compile worker failed (exit %s; its kernels compile here): %s",
                    worker.returncode,
                    last[0] if last else "",
                )
            _LOG.debug("worker: %s", text)
        if workers:
            _LOG.info("kernels compiled in %.1f s", time.perf_counter() - self.started)


def start(features: set[str], stream: TextIO | None = None) -> Warmup:
    """Start compiling the kernels of ``features`` missing from the Numba cache.

    Args:
        features: kernel families the run calls (:func:`scene_features`).
        stream: where to announce the compile (None: the log only).

    Returns:
        The :class:`Warmup`; call :meth:`Warmup.finish` before the first step.
    """
    began = time.perf_counter()
    from runtime._compile.jit import JIT_DISABLED

    if JIT_DISABLED or os.environ.get("SIMRT_PRECOMPILE", "1") == "0":
        return Warmup([], [], began)
    try:
        entries = _entries(features)
        missing = [e for e in entries if not _cached(_dispatcher(e[0], e[1]))]
    except Exception as error:  # noqa: BLE001 - no manifest or a stale one: compile lazily
        _LOG.debug("kernel warm-up skipped: %s", error)
        return Warmup([], [], began)
    if not missing:
        return Warmup([], [], began, _preload(entries))
    lock = _CompileLock.take(stream)
    if lock.waited:  # another process compiled them meanwhile: load them from the cache
        missing = [e for e in missing if not _cached(_dispatcher(e[0], e[1]))]
    if missing and seeds.plant(missing):  # compiled when the package was built
        missing = [e for e in missing if not _cached(_dispatcher(e[0], e[1]))]
    if not missing:
        lock.release()
        return Warmup([], [], began)
    _LOG.debug("missing kernels: %s", [e[1] for e in missing])
    # this process compiles the build-phase kernels as it calls them; the step-phase ones go,
    # longest first, to whichever process (this one or a worker, one per other core) has
    # the least work so far
    loads = [sum(e[2] for e in missing if e[4] == "build")] + [0.0] * (usable_cores() - 1)
    shares = _share([e for e in missing if e[4] == "step"], loads)
    workers = [share for share in shares[1:] if share]
    text = (
        f"compiling {len(missing)} kernels (first run only; cached for later runs)"
        + (f" in {1 + len(workers)} processes" if workers else "")
        + " ..."
    )
    _LOG.info(text)
    if stream is not None:
        stream.write(text + "\n")
        stream.flush()
    warmup = Warmup([_spawn(share) for share in workers], shares[0], began)
    warmup.lock = lock
    return warmup


def _share(
    entries: list[tuple[str, str, float, tuple[str, ...], str]], loads: list[float]
) -> list[list[tuple[str, str, tuple[str, ...]]]]:
    """``entries`` shared between processes: longest first, each to the least loaded.

    ``loads`` (seconds of work each process has already) is updated.
    """
    shares: list[list[tuple[str, str, tuple[str, ...]]]] = [[] for _ in loads]
    for module, name, seconds, signature, _ in sorted(entries, key=lambda e: -e[2]):
        least = loads.index(min(loads))
        shares[least].append((module, name, signature))
        loads[least] += seconds
    return shares


class _CompileLock:
    """One process at a time compiles a cold cache (batch workers, parallel runs).

    Processes that share a Numba cache and start together with it empty would each compile
    every kernel. The first takes this lock (``flock`` on a file named after the cache
    location, released by the kernel when its holder exits, also when killed) and compiles;
    the others wait for it and then load the kernels from the cache. A holder that hangs
    costs a waiter at most ``TIMEOUT`` seconds; then it compiles itself.
    """

    TIMEOUT = 900.0
    _held: weakref.WeakSet[_CompileLock] = weakref.WeakSet()  # this process's holders

    def __init__(self, fd: int | None, waited: bool) -> None:
        self.fd = fd
        self.waited = waited
        # a run that fails before its first step drops its Warmup: the lock goes with it
        self._close = weakref.finalize(self, os.close, fd) if fd is not None else None
        if fd is not None:
            self._held.add(self)

    @classmethod
    def path(cls) -> str:
        import hashlib

        import runtime

        where = f"{runtime.__file__}|{os.environ.get('NUMBA_CACHE_DIR', '')}"
        digest = hashlib.sha1(where.encode()).hexdigest()[:16]
        return os.path.join(tempfile.gettempdir(), f"simrt-compile-{digest}.lock")

    @classmethod
    def take(cls, stream: TextIO | None = None, timeout: float | None = None) -> _CompileLock:
        """Take the lock, waiting while another process holds it (no lock: no waiting).

        A process that holds it already (a run that failed before its first step and
        still has its warm-up) does not wait for itself.
        """
        if any(lock.fd is not None for lock in cls._held):
            return cls(None, False)
        try:
            import fcntl

            fd = os.open(cls.path(), os.O_RDWR | os.O_CREAT, 0o666)
        except (ImportError, OSError):  # no flock (Windows) or no writable temp folder
            return cls(None, False)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return cls(fd, False)
        except OSError:
            pass
        text = "another process is compiling the kernels; waiting for it ..."
        _LOG.info(text)
        if stream is not None:
            stream.write(text + "\n")
            stream.flush()
        deadline = time.monotonic() + (cls.TIMEOUT if timeout is None else timeout)
        while time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return cls(fd, True)
            except OSError:
                continue
        _LOG.warning("the other compile did not end in time; compiling here")
        os.close(fd)
        return cls(None, True)

    def release(self) -> None:
        """Release the lock (closing the file releases the ``flock``)."""
        if self._close is not None:
            self._close()  # (a finalizer runs once)
            self.fd = None


def _spawn(share: list[tuple[str, str, tuple[str, ...]]]) -> subprocess.Popen:
    args = [f"{m}:{n}:{'|'.join(s)}" for m, n, s in share]
    log = tempfile.TemporaryFile()  # not a pipe: a chatty worker must never block
    worker = subprocess.Popen(
        [sys.executable, "-m", "runtime._compile.precompile", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    worker.log = log  # type: ignore[attr-defined]
    return worker


def _stop(worker: subprocess.Popen) -> None:
    if worker.poll() is None:
        worker.kill()
        worker.wait()


def build_seeds(out: str, only: set[str] | None = None) -> int:
    """Compile the manifest's kernels into an empty cache; write their entries to ``out``.

    Every kernel of ``KERNELS`` and ``API_KERNELS``.

    Run as ``python -m runtime._compile.precompile --seeds OUT [MODULE:KERNEL ...]`` with
    ``NUMBA_CACHE_DIR`` set to an empty folder (the package build does: see
    :mod:`runtime._compile.seeds`). The kernels compile in worker processes, one per core.

    Args:
        out: the seed file to write (atomically).
        only: ``module:kernel`` names to compile (None: the whole manifest).

    Returns:
        How many kernels the seed file holds.
    """
    import pickle

    from runtime._files import atomic_write

    began = time.perf_counter()
    from runtime._compile.kernel_manifest import API_KERNELS

    api = [(m, n, float(sec), tuple(sig), "api") for m, n, sec, sig in API_KERNELS]
    every = _entries(set(_FEATURES)) + api
    entries = [e for e in every if only is None or f"{e[0]}:{e[1]}" in only]
    shares = _share(entries, [0.0] * usable_cores())
    failed = sum(worker.wait() != 0 for worker in [_spawn(s) for s in shares if s])
    found: dict[tuple[str, str], list[tuple[Any, bytes]]] = {}
    for module, name, _, signature, _ in entries:
        dispatcher = _dispatcher(module, name)
        key = seeds.index_key(dispatcher, signature)
        cache = compat.cache_of(dispatcher)
        if key not in compat.cache_index(cache):  # its worker failed: compile it here
            _compile(module, name, signature)
        raw = compat.cache_entry_bytes(cache, key)
        if raw is None:
            sys.stderr.write(f"seeds: {module}.{name} did not compile\n")
            continue
        found.setdefault((module, name), []).append((key, raw))

    def write(path: str) -> None:
        with open(path, "wb") as stream:
            pickle.dump(seeds.seed_header(), stream, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(found, stream, protocol=pickle.HIGHEST_PROTOCOL)

    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    atomic_write(out, write)
    count = sum(len(v) for v in found.values())
    sys.stderr.write(
        f"seeds: {count} of {len(entries)} kernels in {time.perf_counter() - began:.1f} s"
        f" ({failed} workers failed) -> {out}\n"
    )
    return count


def _worker(args: list[str]) -> int:
    began = time.perf_counter()
    for arg in args:
        module, name, signature = arg.split(":", 2)
        _compile(module, name, tuple(signature.split("|")) if signature else ())
        sys.stderr.write(f"{name} compiled after {time.perf_counter() - began:.1f} s\n")
    return 0


def _main(argv: list[str]) -> int:
    if argv[:1] != ["--seeds"]:
        return _worker(argv)
    if len(argv) < 2 or not os.environ.get("NUMBA_CACHE_DIR"):  # never the user's cache
        sys.stderr.write(
            "usage: NUMBA_CACHE_DIR=EMPTY python -m runtime._compile.precompile --seeds OUT"
            " [MODULE:KERNEL ...]\n"
        )
        return 2
    return 0 if build_seeds(argv[1], set(argv[2:]) or None) else 1


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
