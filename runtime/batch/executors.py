"""Executors: where episodes run. One interface, two implementations.

An executor takes :class:`~runtime.batch.episode.EpisodeTask` objects (:meth:`submit`, at
most :meth:`free_slots` at a time) and hands back outcome dictionaries as episodes end
(:meth:`wait`): the report of :func:`runtime.batch.episode.execute`, or, when the process
running an episode died (SIGKILL, segfault, out of memory) or overran its timeout, a
``failed`` outcome saying so. Retries are the driver's business (the same for every
executor), so an episode is charged exactly for the attempts it made.

* :class:`LocalExecutor` (the default): worker processes on this machine (on Linux forked
  from a fork server that has loaded a run's modules and cached kernels once, elsewhere
  spawned), one per core by default, no extra dependency. Each worker runs one
  episode at a time and many episodes in its life, keeping its scene cache; a dead worker
  is replaced for the next episode.
* :class:`InlineExecutor` (``--workers 0``): in the driver's process, for debugging.
* :class:`RayExecutor`: one Ray task per episode on a Ray cluster (``pip install
  'simrt[cluster]'``). Workers write their stores straight into the dataset folder, which
  must be visible under the same path on every node (shared file system); only the small
  outcome dictionaries travel back to the driver.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Iterable
from multiprocessing.connection import Connection, wait
from typing import Any

from runtime._compile.precompile import usable_cores
from runtime.errors import SimrtError

_LOG = logging.getLogger(__name__)

__all__ = [
    "Executor",
    "InlineExecutor",
    "LocalExecutor",
    "RayExecutor",
    "make_executor",
    "start_fork_server",
]


def _died(task: Any, why: str, host: str = "", pid: int = 0) -> dict[str, Any]:
    return {
        "episode": task.episode,
        "attempt": task.attempt,
        "status": "failed",
        "steps": 0,
        "wall_time": 0.0,
        "error": why,
        "worker_host": host,
        "worker_pid": pid,
        "params": None,
        "store": None,
        "crashed": True,
    }


class Executor:
    """The executor interface (see the module docstring)."""

    name = "executor"
    workers = 1

    def free_slots(self) -> int:
        """How many more tasks :meth:`submit` accepts now."""
        raise NotImplementedError

    def submit(self, task: Any) -> None:
        """Start one episode."""
        raise NotImplementedError

    def wait(self, timeout: float | None = None) -> list[dict[str, Any]]:
        """Outcomes of episodes that ended (waits up to ``timeout`` seconds for one)."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop the workers (running episodes are abandoned)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------- local


def _worker_main(
    conn: Connection, threads: int = 0, cwd: str | None = None, forked: bool = False
) -> None:
    """A local worker: run tasks from the pipe until told to stop (None) or orphaned.

    ``threads``: Numba threads for this worker (0: Numba's default, one per core). Workers
    share the cores: each with a thread per core oversubscribes them, and the idle threads
    of Numba's OpenMP pool spin between parallel regions, taking CPU from the other workers.
    An explicit ``NUMBA_NUM_THREADS`` in the environment wins. ``cwd``: the driver's working
    folder (a worker forked from the fork server starts in the server's). ``forked``: the
    fork server is this worker's parent (see :func:`_die_with_parent`).
    """
    if forked:
        _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    if cwd is not None and os.getcwd() != cwd:
        os.chdir(cwd)
    _share_cores(threads)  # before a parallel kernel starts Numba's thread pool
    from runtime.batch.episode import execute

    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        outcome = execute(task)
        try:
            conn.send(outcome)
        except OSError:  # the driver is gone, or retired this worker
            return


def _die_with_parent() -> None:
    """Be killed with the fork server (Linux ``PR_SET_PDEATHSIG``).

    The driver learns a forked worker's exit from the fork server; when the server dies
    (killed for memory, say), every worker looks dead to the driver, which replaces them
    and runs their episodes again. A worker that outlived its server would still finish
    its episode and move its store onto the one its replacement writes.
    """
    try:
        import ctypes

        parent = os.getppid()
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux / no libc symbol: as without
        return
    if os.getppid() != parent:  # the server died before the request took effect
        os._exit(1)


def _share_cores(threads: int) -> None:
    """Give this worker ``threads`` Numba threads unless the user chose (0: Numba's own).

    A worker forked from the fork server has Numba imported already, with the server's
    thread count (this executor's when it started the server): the worker lowers its own
    count to ``threads`` before any parallel kernel starts the thread pool.
    """
    work = sys.modules.get("pxr.Work")  # (forked: the server ran USD serially)
    if work is not None:
        try:
            if threads > 0:
                work.SetConcurrencyLimit(threads)
            else:
                work.SetMaximumConcurrencyLimit()
        except Exception:  # noqa: BLE001 - an old USD: its limit stays
            pass
    if threads <= 0:
        return
    os.environ.setdefault("NUMBA_NUM_THREADS", str(threads))
    numba = sys.modules.get("numba")
    if numba is not None:
        try:
            # only to lower it: the call starts Numba's thread pool (and its lock)
            if threads < int(numba.config.NUMBA_NUM_THREADS):
                numba.set_num_threads(threads)
        except Exception:  # noqa: BLE001 - JIT disabled or an old Numba: its default count
            pass


# The fork server (``forkserver`` start method) is one per driver process, started by the
# first executor that uses it, with that moment's environment: the variables below are the
# ones its preloaded modules read at import. An executor whose environment differs from the
# server's in any of them spawns its workers instead (they would otherwise run with the
# server's settings).
_SERVER_ENV_PREFIXES = (
    "NUMBA_",
    "SIMRT_",
    "PYTHON",
    "OMP_",
    "OPENBLAS_",
    "MUJOCO_",
    "PXR_",
    "TF_",
)
_SERVER_THREADS = ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS")  # set for the server
_server_env: dict[str, str] | None = None


def _env_for_server() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(_SERVER_ENV_PREFIXES)}


def _start_context(start_method: str, threads: int) -> Any:
    """The multiprocessing context for ``start_method`` (``"auto"``: see LocalExecutor)."""
    global _server_env
    if start_method != "auto":
        return multiprocessing.get_context(start_method)
    # (Linux only: on macOS, forking a process that loaded system frameworks can crash)
    if not sys.platform.startswith("linux") or (
        "forkserver" not in multiprocessing.get_all_start_methods()
    ):
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    mine = {k: v for k, v in _env_for_server().items() if k not in _SERVER_THREADS}
    if _server_env is None:
        # the server imports Numba and NumPy: they take the workers' thread counts from its
        # environment (the workers of a later executor with fewer cores each lower Numba's)
        from multiprocessing import forkserver

        added = {k: str(max(1, threads)) for k in _SERVER_THREADS if k not in os.environ}
        context.set_forkserver_preload(["runtime.batch._preload"])
        os.environ.update(added)
        try:
            forkserver.ensure_running()
        finally:
            for key in added:
                os.environ.pop(key, None)
        _server_env = mine
    if mine != _server_env:
        return multiprocessing.get_context("spawn")
    return context


def start_fork_server(workers: int | None = None) -> None:
    """Start the local executor's fork server now (its preload runs while the caller goes on).

    ``simrt batch`` calls it first thing, so that the server's second of imports and kernel
    loads overlaps the driver's own imports and planning. The executor created later uses
    the running server (see :func:`_start_context`). Does nothing where there is no fork
    server.

    Args:
        workers: the worker count the executor will have (default: the usable cores).
    """
    count = usable_cores() if workers is None else max(1, int(workers))
    _start_context("auto", max(1, usable_cores() // count))


class _Slot:
    """A worker process and the tasks sent to it (the first is running, the rest wait)."""

    def __init__(self) -> None:
        self.process: Any = None
        self.conn: Connection | None = None
        self.tasks: deque[Any] = deque()
        self.started = 0.0  # when the first task began (for its timeout)


class LocalExecutor(Executor):
    """Episodes in worker processes on this machine.

    Each worker is sent up to ``depth`` tasks: the next one is already in its pipe when an
    episode ends, so a worker never idles while the driver records an outcome and picks the
    next task (on a machine whose cores all run workers, the driver has to wait for one).
    A task queued behind one that killed its worker is sent again to the replacement
    worker, not charged as an attempt.

    Args:
        workers: number of worker processes (default: the usable CPU count).
        start_method: ``"auto"`` (default): ``"forkserver"`` on Linux, with
            the server preloading a run's modules and cached kernels
            (:mod:`runtime.batch._preload`), so a worker starts without a second of imports
            and Numba cache loads; ``"spawn"`` on other systems, or when this process's
            environment changed since the server started. Or ``"spawn"`` /
            ``"forkserver"`` / ``"fork"`` explicitly.
        depth: tasks sent to a worker ahead of their turn, the running one included (>= 1).
    """

    name = "local"

    def __init__(
        self, workers: int | None = None, start_method: str = "auto", depth: int = 2
    ) -> None:
        if workers is None:
            workers = usable_cores()
        count = workers
        if int(count) < 1:
            raise SimrtError(f"--workers must be >= 1, got {count}")
        if int(depth) < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.workers = int(count)
        self.depth = int(depth)
        self.start_method = start_method
        self._context: Any = None  # chosen when the first worker starts
        self._slots = [_Slot() for _ in range(self.workers)]
        self.started_processes = 0

    def _start(self, slot: _Slot) -> None:
        threads = max(1, usable_cores() // self.workers)
        if self._context is None:
            self._context = _start_context(self.start_method, threads)
        try:
            self._launch(slot, threads)
        except (EOFError, OSError) as error:
            # the fork server died (e.g. killed for memory): its workers look dead to this
            # driver too (it reports their exits) and are replaced; spawn from now on
            if self._context.get_start_method() != "forkserver":
                raise
            _LOG.warning("the fork server failed (%r): workers are spawned from now on", error)
            self._context = multiprocessing.get_context("spawn")
            self._launch(slot, threads)

    def _launch(self, slot: _Slot, threads: int) -> None:
        parent, child = self._context.Pipe()
        forked = self._context.get_start_method() == "forkserver"
        process = self._context.Process(
            target=_worker_main, args=(child, threads, os.getcwd(), forked), daemon=True
        )
        try:
            process.start()
        finally:
            child.close()
        slot.process, slot.conn = process, parent
        self.started_processes += 1

    def _retire(self, slot: _Slot) -> None:
        """Stop the slot's process (its tasks stay with the slot)."""
        if slot.process is not None:
            if slot.process.is_alive():
                slot.process.kill()
            slot.process.join(5.0)
        if slot.conn is not None:
            slot.conn.close()
        slot.process = slot.conn = None

    def _restart(self, slot: _Slot) -> None:
        """A new process for the slot, sent the tasks that waited behind the dead one."""
        self._retire(slot)
        if slot.tasks:
            self._start(slot)
            for task in slot.tasks:
                slot.conn.send(task)  # type: ignore[union-attr]
            slot.started = time.monotonic()

    def free_slots(self) -> int:
        """How many more tasks the workers take now (``depth`` per worker)."""
        return sum(self.depth - len(slot.tasks) for slot in self._slots)

    def submit(self, task: Any) -> None:
        """Send a task to the least loaded worker (starting one if needed)."""
        slot = min(self._slots, key=lambda s: len(s.tasks))
        if len(slot.tasks) >= self.depth:
            raise RuntimeError("LocalExecutor.submit: every worker is full")
        if slot.process is None or not slot.process.is_alive():
            if slot.tasks:  # wait() reports the death and sends the rest to a new process
                slot.tasks.append(task)
                return
            self._retire(slot)
            self._start(slot)
        slot.conn.send(task)  # type: ignore[union-attr]
        if not slot.tasks:
            slot.started = time.monotonic()
        slot.tasks.append(task)

    def wait(self, timeout: float | None = None) -> list[dict[str, Any]]:
        """Outcomes of ended episodes; a dead worker's episode fails with its signal."""
        busy = [s for s in self._slots if s.tasks]
        if not busy:
            return []
        deadline = [s.started + s.tasks[0].timeout for s in busy if s.tasks[0].timeout]
        limit = timeout
        if deadline:
            until = max(0.0, min(deadline) - time.monotonic())
            limit = until if limit is None else min(limit, until)
        handles: list[Any] = [s.conn for s in busy] + [s.process.sentinel for s in busy]
        wait(handles, limit)
        out = []
        for slot in busy:
            while slot.tasks:  # every outcome the worker sent, in task order
                try:
                    if not slot.conn.poll():  # type: ignore[union-attr]
                        break
                    outcome = slot.conn.recv()  # type: ignore[union-attr]
                except (EOFError, OSError):
                    break
                out.append(outcome)
                slot.tasks.popleft()
                slot.started = time.monotonic()  # (the next task begins now)
            if not slot.tasks:
                continue
            task = slot.tasks[0]
            pid = slot.process.pid or 0
            if not slot.process.is_alive():
                code = slot.process.exitcode
                why = f"exit code {code}"
                if code is not None and code < 0:
                    why = f"killed by {signal.Signals(-code).name}"
                slot.tasks.popleft()
                out.append(
                    _died(task, f"worker process {pid} died ({why})", socket.gethostname(), pid)
                )
                self._restart(slot)
            elif task.timeout and time.monotonic() - slot.started > task.timeout:
                slot.tasks.popleft()
                out.append(
                    _died(
                        task,
                        f"timed out after {task.timeout:g} s (worker {pid} killed)",
                        socket.gethostname(),
                        pid,
                    )
                )
                self._restart(slot)
        return out

    def close(self) -> None:
        """Stop every worker (idle ones politely, busy ones with SIGKILL)."""
        for slot in self._slots:
            if slot.conn is not None and not slot.tasks and slot.process.is_alive():
                try:
                    slot.conn.send(None)
                    slot.process.join(5.0)
                except (OSError, ValueError):
                    pass
            slot.tasks.clear()
            self._retire(slot)


class InlineExecutor(Executor):
    """Episodes one after another in this process (``--workers 0``: debugging, profiling).

    No isolation: a crash of an episode is a crash of the batch.
    """

    name = "inline"

    def __init__(self) -> None:
        self._done: list[dict[str, Any]] = []

    def free_slots(self) -> int:
        """One task at a time."""
        return 0 if self._done else 1

    def submit(self, task: Any) -> None:
        """Run the episode now."""
        from runtime.batch.episode import execute

        self._done.append(execute(task))

    def wait(self, timeout: float | None = None) -> list[dict[str, Any]]:
        """The outcome of the episode just run."""
        done, self._done = self._done, []
        return done


# ---------------------------------------------------------------------------- Ray


def _ray_execute(task: Any) -> dict[str, Any]:
    """Ray task body: run the episode; report the node's address as the worker host."""
    import ray

    from runtime.batch.episode import execute

    outcome = execute(task)
    outcome["worker_host"] = f"{outcome['worker_host']}@{ray.util.get_node_ip_address()}"
    return outcome


class RayExecutor(Executor):
    """Episodes as Ray tasks (one task per episode, one CPU each).

    Args:
        address: the cluster (``"auto"``, ``"HOST:PORT"`` or ``"ray://..."``). For a
            cluster on loopback addresses (``127.x.y.z:PORT``) the driver joins with that
            node address (``_node_ip_address``), as Ray needs distinct loopback addresses
            per node.
        in_flight: tasks kept queued on the cluster (default: twice its CPUs).

    Raises:
        SimrtError: ray is not installed or the cluster cannot be reached.
    """

    name = "ray"

    def __init__(self, address: str = "auto", in_flight: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise SimrtError("--ray needs the ray package: pip install 'simrt[cluster]'") from None
        self._ray = ray
        kwargs: dict[str, Any] = {"address": address, "log_to_driver": False}
        host = address.rsplit(":", 1)[0] if ":" in address else ""
        if host.startswith("127."):
            kwargs["_node_ip_address"] = host
        self._owns = not ray.is_initialized()
        if self._owns:
            try:
                ray.init(**kwargs)
            except Exception as exc:  # noqa: BLE001 - connection problems of any kind
                raise SimrtError(f"cannot connect to the Ray cluster at {address}: {exc}") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, cpus)
        self._limit = int(in_flight) if in_flight else 2 * self.workers
        self._remote = ray.remote(num_cpus=1, max_retries=0)(_ray_execute)
        self._pending: dict[Any, Any] = {}

    def free_slots(self) -> int:
        """Tasks that may still be queued."""
        return max(0, self._limit - len(self._pending))

    def submit(self, task: Any) -> None:
        """Queue one episode on the cluster."""
        self._pending[self._remote.remote(task)] = task

    def wait(self, timeout: float | None = None) -> list[dict[str, Any]]:
        """Outcomes of finished tasks; a task whose worker died fails with Ray's error."""
        if not self._pending:
            return []
        ray = self._ray
        ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=timeout)
        out = []
        for ref in ready:
            task = self._pending.pop(ref)
            try:
                out.append(ray.get(ref))
            except Exception as exc:  # noqa: BLE001 - worker crash, node loss, ...
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                out.append(_died(task, f"Ray task failed: {type(exc).__name__}: {first}"))
        return out

    def close(self) -> None:
        """Cancel queued tasks; disconnect when this executor connected."""
        for ref in list(self._pending):
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001, S110 - best effort
                pass
        self._pending.clear()
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()


def make_executor(workers: int | None = None, ray: str | None = None) -> Executor:
    """The executor for ``--workers`` / ``--ray``.

    Args:
        workers: local worker processes (default: all cores).
        ray: a Ray cluster address (or ``"auto"``); None runs locally.

    Returns:
        A :class:`RayExecutor` when ``ray`` is given, an :class:`InlineExecutor` for 0
        workers, else a :class:`LocalExecutor`.
    """
    if ray:
        return RayExecutor(ray)
    if workers == 0:
        return InlineExecutor()
    return LocalExecutor(workers)


def drain(executor: Executor, tasks: Iterable[Any]) -> list[dict[str, Any]]:
    """Run tasks to their first outcome each (no retries; a helper for tests and tools)."""
    queue = list(tasks)
    outcomes = []
    running = 0
    while queue or running:
        while queue and executor.free_slots():
            executor.submit(queue.pop(0))
            running += 1
        ended = executor.wait(1.0)
        running -= len(ended)
        outcomes.extend(ended)
    return outcomes
