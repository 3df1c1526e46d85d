"""The local executor's fork server: what it preloads, workers forked from it, its death."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")
pytest.importorskip("pyarrow")

from runtime.batch import load_dataset, run_batch  # noqa: E402
from tests.helpers.batch import EPISODES, SCENE, SPEC, _same_recordings  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_fork_server_preload_loads_a_run_and_starts_no_thread() -> None:
    """What the fork server imports before forking workers: the run's modules and cached
    kernels, and not one thread besides the main one (a fork copies only the caller)."""
    code = (
        "import os, sys\n"
        "import runtime.batch._preload\n"
        "import runtime.engine._kernels as k\n"
        "print(len(os.listdir('/proc/self/task')), 'runtime.run.loop' in sys.modules,"
        " 'runtime.schema' in sys.modules, len(k.state_kernel.overloads))\n"
    )
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    subprocess.run(  # the Numba cache holds the state kernel after one run
        [sys.executable, "-m", "runtime.cli", "run", str(SCENE), "--steps", "2", "--no-progress"],
        cwd=REPO,
        env=env,
        capture_output=True,
        check=True,
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "True", "True", "1"]


def test_forked_workers_equal_spawned_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default executor forks its workers from the fork server, in the driver's working
    folder (a relative dataset path); their recordings equal spawned workers' bit for bit."""
    from runtime.batch.executors import LocalExecutor

    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace(f"episodes = {EPISODES}", "episodes = 3"))
    monkeypatch.chdir(tmp_path)
    stores = {}
    for method in ("auto", "spawn"):
        executor = LocalExecutor(2, start_method=method)
        try:
            summary = run_batch(spec, f"ds_{method}", executor=executor, retries=0)
        finally:
            executor.close()
        assert summary.done == 3
        if method == "auto" and sys.platform.startswith("linux"):
            assert executor._context.get_start_method() == "forkserver"
        rows = load_dataset(tmp_path / f"ds_{method}").manifest.to_pylist()
        stores[method] = {r["episode"]: tmp_path / f"ds_{method}" / r["store"] for r in rows}
    assert set(stores["auto"]) == {0, 1, 2} == set(stores["spawn"])
    for episode, path in stores["auto"].items():
        _same_recordings(path, stores["spawn"][episode])


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (Linux)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux's")
def test_batch_survives_its_fork_server_being_killed(tmp_path: Path) -> None:
    """SIGKILL of the fork server mid-batch: its workers die with it (none left running
    an episode its replacement also runs), the driver starts new ones (from a new server,
    or spawned when that fails) and re-runs their episodes, and the batch completes with
    every recording equal to a spawned batch's."""
    from multiprocessing import forkserver

    from runtime.batch.executors import LocalExecutor

    class KillsServer(LocalExecutor):
        killed: list[int] = []

        def wait(self, timeout=None):  # noqa: ANN001, ANN202
            outcomes = super().wait(timeout)
            if outcomes and not self.killed:
                pid = forkserver._forkserver._forkserver_pid  # noqa: SLF001
                workers = [s.process.pid for s in self._slots if s.process]
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)
                time.sleep(0.5)  # (the driver has not yet looked at its workers)
                self.survivors = [w for w in workers if _running(w)]
            return outcomes

    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace(f"episodes = {EPISODES}", "episodes = 8"))
    executor = KillsServer(2)
    try:
        summary = run_batch(spec, tmp_path / "ds", executor=executor, retries=2)
    finally:
        executor.close()
    assert executor.killed and summary.done == 8 and summary.failed == 0
    assert executor.survivors == []  # the server's workers died with it
    reference = LocalExecutor(2, start_method="spawn")
    try:
        run_batch(spec, tmp_path / "ref", executor=reference, retries=0)
    finally:
        reference.close()
    for row in load_dataset(tmp_path / "ds").manifest.to_pylist():
        _same_recordings(tmp_path / "ds" / row["store"], tmp_path / "ref" / row["store"])
