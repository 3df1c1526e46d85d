"""Crash semantics of `simrt run` recordings, in real subprocesses killed by real signals.

SIGINT / SIGTERM / SIGHUP close the store: every step done is kept, ``complete = False``
with the signal as the reason, exit code 128 + n. SIGKILL loses at most what was not yet
committed (the chunk being filled, about a second of steps). No temp file is left behind.
The child gets default signal dispositions (a background pytest run ignores SIGINT in its
children) and every run is bounded in steps and time.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")

from runtime.recording import load_recording, open_recording  # noqa: E402
from runtime.recording.store import COMMIT_LOG  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCENE = REPO / "scenes" / "panda_table.usda"
STEPS = 200_000  # bounds the child if a signal were lost (~3 min at most)
TEMP_PATTERNS = (".partial", ".tmp", "~")


def _default_signals() -> None:
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def _start(out: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "runtime.cli", "run", str(SCENE), "--steps", str(STEPS)]
    cmd += ["--out", str(out)]
    return subprocess.Popen(
        cmd,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,
    )


def _commit_lines(out: Path) -> list[dict]:
    try:
        text = (out / COMMIT_LOG).read_text()
    except FileNotFoundError:
        return []
    complete = text.split("\n")[:-1]  # a last line without its newline is being written
    return [json.loads(line) for line in complete if line.strip()]


def _wait_for_commits(proc: subprocess.Popen, out: Path, count: int) -> None:
    deadline = time.monotonic() + 180
    while len(_commit_lines(out)) < count:
        if proc.poll() is not None:
            raise AssertionError(proc.communicate())
        assert time.monotonic() < deadline, "the run did not commit in time"
        time.sleep(0.05)


def _temp_files(folder: Path) -> list[str]:
    return [
        str(p) for p in folder.rglob("*") if p.name.endswith(TEMP_PATTERNS) or ".partial" in p.name
    ]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_stop_signal_closes_the_store_with_every_step(tmp_path, signum):
    out = tmp_path / "run.zarr"
    proc = _start(out)
    try:
        _wait_for_commits(proc, out, 1)
        time.sleep(random.Random(signum).uniform(0.1, 1.5))  # a random moment of the run
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, stderr
    assert "Traceback" not in stderr
    done = int(re.search(r"interrupted after (\d+) steps", stderr).group(1))
    rec = load_recording(out)
    assert len(rec) == done > 0  # not one step lost
    assert not rec.complete
    assert signal.Signals(signum).name in rec.reason or "SIGINT" in rec.reason
    np.testing.assert_array_equal(rec.step, np.arange(1, done + 1))
    assert all(array.shape[0] == done for array in rec.data.values())
    assert _temp_files(tmp_path) == []


def test_sigkill_loses_at_most_the_uncommitted_tail(tmp_path):
    out = tmp_path / "run.zarr"
    proc = _start(out)
    try:
        _wait_for_commits(proc, out, 2)
        time.sleep(random.Random(7).uniform(0.2, 1.5))
        before = _commit_lines(out)[-1]["rows"]  # committed before the kill: must survive
        killed_at = time.time()
        proc.kill()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader = open_recording(out)
    assert not reader.complete
    assert reader.rows >= before
    chunk = reader.chunk_rows
    rec = reader.load()
    assert len(rec) == reader.rows
    np.testing.assert_array_equal(rec.step, np.arange(1, len(rec) + 1))
    # what a kill loses is what was not committed: rows are committed at least every
    # chunk and about every second (slack for a loaded machine), so the last commit before
    # the kill is recent and the commits before it come in steps of at most one chunk
    lines = _commit_lines(out)
    assert lines[-1]["rows"] == reader.rows
    steps = [b["rows"] - a["rows"] for a, b in zip(lines, lines[1:], strict=False)]
    assert 0 < max(steps, default=chunk) <= chunk
    gaps = [b["wall"] - a["wall"] for a, b in zip(lines, lines[1:], strict=False)]
    assert max(gaps, default=0.0) < 3.0, gaps
    assert killed_at - lines[-1]["wall"] < 3.0
    assert _temp_files(tmp_path) == []
    for name in ("World.LidarMount.Lidar.depths", "step"):  # arrays keep full capacity
        assert (out / name / "zarr.json").exists()


def test_sigterm_to_an_npz_run_exports_the_steps_done(tmp_path):
    out = tmp_path / "run.npz"
    proc = _start(out)
    try:
        _wait_for_commits(proc, tmp_path / "run.zarr", 1)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, stderr
    done = int(re.search(r"interrupted after (\d+) steps", stderr).group(1))
    exported, store = load_recording(out), load_recording(tmp_path / "run.zarr")
    assert len(exported) == len(store) == done
    assert not exported.complete and "SIGTERM" in exported.reason
    for name, values in store.data.items():
        np.testing.assert_array_equal(exported.data[name], values)
    assert _temp_files(tmp_path) == []


def test_ignored_sighup_stays_ignored(tmp_path):
    """Under nohup (SIGHUP ignored) a hang-up must not stop the run."""
    out = tmp_path / "run.zarr"

    def ignore_hup() -> None:
        _default_signals()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    cmd = [sys.executable, "-m", "runtime.cli", "run", str(SCENE), "--steps", "3000"]
    cmd += ["--out", str(out), "--no-progress"]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_hup,
    )
    try:
        _wait_for_commits(proc, out, 1)
        proc.send_signal(signal.SIGHUP)
        _, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    rec = load_recording(out)
    assert rec.complete and len(rec) == 3000
    assert os.path.exists(out / "zarr.json")
