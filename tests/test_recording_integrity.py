"""Stores honest to every reader: plain Zarr readers see only written rows (also after a
SIGKILL), swapped / copied chunks and a lost commit log are found, steps must increase."""

from __future__ import annotations

import json
import logging
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

from runtime.recording import ChannelInfo, load_recording, open_recording  # noqa: E402
from runtime.recording.store import COMMIT_LOG, StoreWriter  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CHUNK = 4


def _write(path: Path, rows: int = 12, steps=None, close: bool = True, **options) -> StoreWriter:
    writer = StoreWriter(path, durable=False, chunk_rows=CHUNK, expected_rows=1000, **options)
    # (a joint-state channel: something `simrt plot` draws)
    writer.add_channel(ChannelInfo("v", (2,), "float64", "/R", "joint_state", "positions"))
    for k in range(rows):
        buffers, row = writer.begin_row()
        buffers[0][row] = [k, -k]
        writer.end_row(int(steps[k]) if steps is not None else k, 0.5 * k)
    if close:
        writer.close(complete=True)
    return writer


def test_arrays_claim_only_committed_rows_while_the_run_records(tmp_path):
    path = tmp_path / "r.zarr"
    # 2 chunks committed, 1 row held (no writer thread: the commits are done on return)
    writer = _write(path, rows=2 * CHUNK + 1, close=False, background=False)
    group = zarr.open_group(path, mode="r")
    assert group["step"].shape == (2 * CHUNK,) and group["v"].shape == (2 * CHUNK, 2)
    np.testing.assert_array_equal(group["step"][:], np.arange(2 * CHUNK))
    assert group.attrs["simrt"]["rows"] == 2 * CHUNK
    writer.close(complete=True)
    group = zarr.open_group(path, mode="r")
    assert group["v"].shape == (2 * CHUNK + 1, 2)


def test_a_swapped_or_copied_chunk_ends_the_data(tmp_path, caplog):
    swapped, copied = tmp_path / "s.zarr", tmp_path / "c.zarr"
    _write(swapped)
    _write(copied)
    # a `time` chunk in place of a `step` chunk (same size, valid checksum of its own)
    shutil.copyfile(swapped / "time" / "c.1", swapped / "step" / "c.1")
    # chunk 0 copied over chunk 1 of a channel
    shutil.copyfile(copied / "v" / "c.0.0", copied / "v" / "c.1.0")
    for path in (swapped, copied):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            recording = load_recording(path)
        assert len(recording) == CHUNK  # the rows before the replaced chunk
        np.testing.assert_array_equal(recording.step, np.arange(CHUNK))
        assert "not the chunk the commit log names" in caplog.text
        assert not recording.complete


def test_a_missing_commit_log_is_reported(tmp_path, caplog):
    path = tmp_path / "r.zarr"
    _write(path)
    (path / COMMIT_LOG).unlink()
    with caplog.at_level(logging.WARNING):
        recording = load_recording(path)
    assert "commit log" in caplog.text and "missing" in caplog.text
    assert len(recording) == 12  # the closed group's rows
    assert not recording.complete and "commit log is missing" in recording.reason


def test_steps_must_increase(tmp_path, caplog):
    path = tmp_path / "r.zarr"
    steps = [0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10]
    _write(path, steps=steps)
    with caplog.at_level(logging.WARNING):
        recording = load_recording(path)
    assert "step 5 at row 6 does not follow step 5" in caplog.text
    assert len(recording) == CHUNK  # the block with the repeated step is not kept
    reader = open_recording(path)
    assert sum(1 for _ in reader.iter_chunks(chunk_rows=2)) == 3  # rows 0-5
    assert reader.rows == 6


def test_a_rewritten_tail_chunk_killed_before_its_commit_still_loads(tmp_path):
    """A partial chunk written again (grown) is named `pending` first: its new files are
    accepted though the kill came before their commit line."""
    path = tmp_path / "r.zarr"
    writer = _write(path, rows=CHUNK + 1, close=False, background=False)
    writer._hand_over(full=False)  # the tail chunk's first row committed
    for k in range(CHUNK + 1, CHUNK + 3):  # the tail chunk grows, written partially again
        buffers, row = writer.begin_row()
        buffers[0][row] = [k, -k]
        writer.end_row(k, 0.5 * k)
        writer._hand_over(full=False)
    lines = [json.loads(x) for x in (path / COMMIT_LOG).read_text().splitlines()]
    assert any("pending" in line for line in lines)
    # the kill: the last commit line never made it (the files did)
    text = (path / COMMIT_LOG).read_text().splitlines(keepends=True)
    last = max(i for i, line in enumerate(text) if '"chunk"' in line)
    (path / COMMIT_LOG).write_text("".join(text[:last]))
    recording = load_recording(path)
    assert len(recording) == CHUNK + 2  # the rows of the last complete commit line
    np.testing.assert_array_equal(recording.step, np.arange(CHUNK + 2))
    writer._closed = True  # (the "killed" writer is not closed)


def _default_signals() -> None:
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def test_xarray_sees_exactly_the_written_rows_after_a_sigkill(tmp_path):
    xarray = pytest.importorskip("xarray")
    out = tmp_path / "killed.zarr"
    scene = REPO / "scenes" / "simple_arm.usda"
    cmd = [sys.executable, "-m", "runtime.cli", "run", str(scene), "--steps", "20000000"]
    child = subprocess.Popen(
        [*cmd, "--out", str(out), "--no-progress"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_default_signals,
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            log = out / COMMIT_LOG
            if log.exists() and log.read_text().count('"chunk"') >= 3:
                break
            if child.poll() is not None:
                pytest.fail(f"the run ended early: {child.stderr.read()}")
            time.sleep(0.05)
        else:
            pytest.fail("no commits within the time limit")
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    committed = open_recording(out).rows
    assert committed > 0
    dataset = xarray.open_zarr(out, consolidated=False)
    rows = dataset.sizes["row"]
    chunk = json.loads((out / "zarr.json").read_text())["attributes"]["simrt"]["chunk_rows"]
    # every row a plain reader sees was written: consecutive steps, increasing time, no
    # zero-filled tail; at most the chunk whose commit line the kill cut off beyond the log
    assert committed <= rows <= committed + chunk
    steps = dataset["step"].values
    np.testing.assert_array_equal(steps, np.arange(steps[0], steps[0] + rows))
    assert np.all(np.diff(dataset["time"].values) > 0)
    assert rows < 20_000_000


def _flip_chunk(path: Path, key: str = "v", index: int = 1) -> None:
    chunk = path / key / (f"c.{index}.0" if key == "v" else f"c.{index}")
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))


def test_exports_read_up_to_the_damage_and_say_so(tmp_path, capsys):
    from runtime.cli import main

    path = tmp_path / "r.zarr"
    _write(path)
    _flip_chunk(path)
    for suffix in (".npz", ".parquet"):
        out = tmp_path / f"out{suffix}"
        assert main(["export", str(path), "--to", str(out)]) == 0
        said = capsys.readouterr().out
        assert f"{CHUNK} steps (partial: rows {CHUNK}.. of 12 unreadable" in said
        exported = load_recording(out)
        assert len(exported) == CHUNK and not exported.complete
        assert "unreadable" in exported.reason
        np.testing.assert_array_equal(exported.data["v"][:, 0], np.arange(CHUNK))
    pytest.importorskip("foxglove")
    mcap_reader = pytest.importorskip("mcap.reader")
    out = tmp_path / "out.mcap"
    _write(path)  # (again: the MCAP export reads `time` for every topic)
    _flip_chunk(path, "time")
    assert main(["export", str(path), "--to", str(out)]) == 0
    with open(out, "rb") as handle:
        metadata = {
            m.name: dict(m.metadata) for m in mcap_reader.make_reader(handle).iter_metadata()
        }
    assert metadata["simrt"]["complete"] == "false"
    assert metadata["simrt"]["rows"] == str(CHUNK)
    assert "unreadable" in metadata["simrt"]["damage"]


def test_plot_reads_up_to_the_damage(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from runtime.cli import main

    path = tmp_path / "r.zarr"
    _write(path)
    _flip_chunk(path)
    assert main(["plot", str(path), "--out", str(tmp_path / "p.png")]) == 0
    assert "partial: rows 4.. of 12 unreadable" in capsys.readouterr().out


def test_a_legacy_npz_with_a_short_time_array_is_refused_in_one_line(tmp_path, capsys):
    from runtime.cli import main

    path = tmp_path / "r.zarr"
    _write(path)
    good = tmp_path / "good.npz"
    assert main(["export", str(path), "--to", str(good)]) == 0
    with np.load(good, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    arrays["time"] = arrays["time"][:-3]
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    capsys.readouterr()
    assert main(["plot", str(bad), "--out", str(tmp_path / "p.png")]) == 1
    err = capsys.readouterr().err
    assert "array 'time' has shape (9,), not (12,)" in err and str(bad) in err
    assert len(err.strip().splitlines()) == 1
