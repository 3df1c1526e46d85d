"""Damaged, foreign and failing recordings: the data that is intact, or one clear error.

Every case asserts the exact answer: the committed rows that are readable (compared with
what was written), or a ``SimrtError`` naming the file and the problem. No library
exception type may escape ``load_recording`` / ``simrt plot`` / ``simrt export``.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("zarr")

from runtime.cli import main  # noqa: E402
from runtime.errors import SimrtError  # noqa: E402
from runtime.recording import (  # noqa: E402
    ChannelInfo,
    RecordingError,
    StoreWriter,
    export_recording,
    load_recording,
    open_recording,
)
from runtime.recording import _disk as store_module  # noqa: E402
from runtime.recording.store import COMMIT_LOG  # noqa: E402

ROWS, CHUNK = 50, 8


def _write(
    path: Path, rows: int = ROWS, close: bool = True, background: bool = True
) -> StoreWriter:
    writer = StoreWriter(path, chunk_rows=CHUNK, meta={"scene": "synthetic"}, background=background)
    writer.add_channel(ChannelInfo("/W/imu.acc", (3,), "float64", "/W/imu", "imu", "acc"))
    writer.add_channel(ChannelInfo("/W/c.on", (), "bool", "/W/c", "contact", "in_contact"))
    for k in range(rows):
        buffers, row = writer.begin_row()
        buffers[0][row] = [k, 2 * k, 3 * k]
        buffers[1][row] = k % 3 == 0
        writer.end_row(k + 1, 0.01 * (k + 1))
    if close:
        writer.close(complete=True)
    return writer


def _expect_rows(path: Path, rows: int) -> None:
    rec = load_recording(path)
    assert len(rec) == rows
    np.testing.assert_array_equal(rec.step, np.arange(1, rows + 1))
    k = np.arange(rows, dtype=np.float64)
    np.testing.assert_array_equal(rec.data["/W/imu.acc"], np.stack([k, 2 * k, 3 * k], axis=1))


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "run.zarr"
    _write(path)
    return path


def test_complete_store_loads_every_row(store):
    _expect_rows(store, ROWS)
    assert load_recording(store).complete


def test_unclosed_store_gives_its_committed_rows(tmp_path):
    path = tmp_path / "run.zarr"
    writer = _write(path, close=False)  # like a killed process: nothing closed
    writer._queue.put(None)  # stop the writer thread only once the queued chunks are on disk
    writer._thread.join()
    reader = open_recording(path)
    assert not reader.complete and reader.rows == (ROWS // CHUNK) * CHUNK
    _expect_rows(path, (ROWS // CHUNK) * CHUNK)


def test_truncated_tail_chunk_drops_only_that_chunk(store, caplog):
    chunk = store / "W.imu.acc" / f"c.{ROWS // CHUNK}.0"
    chunk.write_bytes(chunk.read_bytes()[:7])
    _expect_rows(store, (ROWS // CHUNK) * CHUNK)
    assert "unreadable" in caplog.text


def test_missing_chunk_ends_the_data_there(store):
    os.remove(store / "step" / "c.2")
    _expect_rows(store, 2 * CHUNK)


def test_bit_flip_in_a_chunk_is_caught_by_its_checksum(store):
    chunk = store / "W.imu.acc" / "c.3.0"
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0x10
    chunk.write_bytes(bytes(data))
    _expect_rows(store, 3 * CHUNK)


def test_torn_commit_line_is_ignored(tmp_path):
    path = tmp_path / "run.zarr"
    writer = _write(path, close=False)
    writer._queue.put(None)
    writer._thread.join()
    with open(path / COMMIT_LOG, "a") as log:
        log.write('{"rows": 4')  # a kill while appending a line
    _expect_rows(path, (ROWS // CHUNK) * CHUNK)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: (p / "zarr.json").write_text("{not json"), "metadata unreadable"),
        (lambda p: (p / "zarr.json").unlink(), "no zarr.json"),
        (lambda p: (p / "zarr.json").write_bytes(b""), "metadata unreadable"),
        (lambda p: shutil.rmtree(p / "W.c.on"), "'/W/c.on' missing"),
        (lambda p: _edit_attrs(p, version=99), "version 99"),
        (lambda p: _edit_attrs(p, format="other"), "not a simrt recording"),
        (lambda p: _edit_attrs(p, channels="nope"), "metadata damaged"),
        (lambda p: _edit_array(p, "W.imu.acc", shape=[-5, 3]), "invalid shape"),
        (
            lambda p: _edit_array(
                p,
                "W.imu.acc",
                chunk_grid={"name": "regular", "configuration": {"chunk_shape": [0, 3]}},
            ),
            "invalid chunk shape",
        ),
    ],
    ids=[
        "corrupt-meta",
        "missing-meta",
        "empty-meta",
        "missing-array",
        "future",
        "foreign",
        "bad",
        "negative-shape",
        "zero-chunk-rows",
    ],
)
def test_damaged_metadata_is_one_clear_error(store, damage, message):
    damage(store)
    with pytest.raises(SimrtError, match=message) as info:
        load_recording(store)
    assert str(store) in str(info.value)


def _edit_array(path: Path, key: str, **changes) -> None:
    document = path / key / "zarr.json"
    meta = json.loads(document.read_text())
    meta.update(changes)
    document.write_text(json.dumps(meta))


def _edit_attrs(path: Path, **changes) -> None:
    meta = json.loads((path / "zarr.json").read_text())
    meta["attributes"]["simrt"].update(changes)
    (path / "zarr.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("empty.npz", b"", "not an .npz"),
        ("random.npz", os.urandom(4096), "not an .npz"),
        ("random.zarr", os.urandom(512), "not a simrt recording"),
        ("random.bin", os.urandom(64), "not a simrt recording"),
        ("nothing.parquet", b"PAR1" + os.urandom(100), "not a readable Parquet"),
    ],
)
def test_foreign_files_are_one_clear_error(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(SimrtError, match=message):
        load_recording(path)
    assert main(["plot", str(path)]) == 1
    assert main(["export", str(path), "--to", str(tmp_path / "x.npz")]) == 1


def test_truncated_npz_export_is_one_clear_error(store, tmp_path):
    out = export_recording(store, tmp_path / "run.npz")
    data = out.read_bytes()
    out.write_bytes(data[: len(data) // 2])
    with pytest.raises(SimrtError, match="run.npz"):
        load_recording(out)


def test_missing_path_and_empty_folder(tmp_path):
    with pytest.raises(SimrtError, match="no such recording"):
        load_recording(tmp_path / "absent.zarr")
    (tmp_path / "empty.zarr").mkdir()
    with pytest.raises(SimrtError, match="no zarr.json"):
        load_recording(tmp_path / "empty.zarr")


def test_version_1_npz_of_simrt_0_1_still_loads(tmp_path):
    """The single-file format of simrt 0.1, written here by hand from its description."""
    meta = {
        "format": "simrt-recording",
        "version": 1,
        "complete": False,
        "rows": 4,
        "channels": {"/W/c.on": {"shape": [], "dtype": "bool", "kind": "contact"}},
        "run": {"scene": "old.usda"},
        "segments": [[0, 3], [3, 4]],
    }
    path = tmp_path / "old.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for index, (start, stop) in enumerate(meta["segments"]):
            for key, values in (
                ("step", np.arange(start + 1, stop + 1)),
                ("time", np.arange(start + 1, stop + 1) * 0.5),
                ("/W/c.on", np.arange(start, stop) % 2 == 0),
            ):
                with zf.open(f"__seg{index:06d}__/{key}.npy", "w") as member:
                    np.lib.format.write_array(member, values)
        with zf.open("__meta__.npy", "w") as member:
            np.lib.format.write_array(member, np.array(json.dumps(meta)))
    rec = load_recording(path)
    assert len(rec) == 4 and not rec.complete
    np.testing.assert_array_equal(rec.step, [1, 2, 3, 4])
    np.testing.assert_array_equal(rec.data["/W/c.on"], [True, False, True, False])


def test_exports_equal_the_store(store, tmp_path):
    original = load_recording(store)
    for suffix in (".npz", ".parquet"):
        out = tmp_path / f"run{suffix}"
        out.write_bytes(b"old")
        os.chmod(out, 0o640)
        export_recording(store, out)
        assert (os.stat(out).st_mode & 0o777) == 0o640  # the destination keeps its mode
        copy = load_recording(out)
        assert copy.complete and len(copy) == ROWS
        for name, values in original.data.items():
            np.testing.assert_array_equal(copy.data[name], values)
    with pytest.raises(SimrtError, match="unsupported export format"):
        export_recording(store, tmp_path / "run.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz", "run.parquet", "run.zarr"]


@pytest.mark.parametrize("background", [True, False], ids=["writer-thread", "inline"])
def test_disk_full_stops_with_the_rows_that_are_safe(tmp_path, monkeypatch, background):
    path = tmp_path / "run.zarr"
    real = store_module._write_in_place
    calls = []

    def fill_up(root, key, value):
        calls.append(key)
        if len(calls) > 12:  # three chunks of the four arrays fit, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", str(root / key))
        real(root, key, value)

    monkeypatch.setattr(store_module, "_write_in_place", fill_up)
    with pytest.raises(RecordingError) as info:
        _write(path, rows=10_000, background=background)
    assert info.value.safe_rows == 3 * CHUNK
    message = str(info.value)
    assert str(path) in message and "No space left on device" in message
    assert f"{3 * CHUNK} steps are safe on disk" in message
    monkeypatch.setattr(store_module, "_write_in_place", real)
    _expect_rows(path, 3 * CHUNK)


@pytest.mark.parametrize("background", [True, False], ids=["writer-thread", "inline"])
def test_a_failed_flush_to_disk_stops_with_the_rows_that_are_safe(
    tmp_path, monkeypatch, background
):
    """The file system reports an error when the chunk files are made durable (syncfs or
    fsync): the rows of that commit are not counted, the earlier ones load."""
    from runtime.recording import store as writer_module

    path = tmp_path / "run.zarr"
    real = writer_module.make_durable
    calls = []

    def failing(root, paths):
        calls.append(len(paths))
        if len(calls) > 2:
            raise OSError(errno.EIO, "Input/output error", str(root))
        real(root, paths)

    monkeypatch.setattr(writer_module, "make_durable", failing)
    with pytest.raises(RecordingError) as info:
        _write(path, rows=10_000, background=background)
    # one call per commit with all its chunk files (2 channels, step, time) and the documents
    # it grows (4 arrays, the group); the first also makes the documents written at
    # creation durable (4 arrays, the commit group)
    assert calls[:2] == [4 + 5 + 5, 4 + 5]
    assert info.value.safe_rows == 2 * CHUNK
    assert "Input/output error" in str(info.value) and str(path) in str(info.value)
    _expect_rows(path, 2 * CHUNK)


def test_durable_without_syncfs_falls_back_to_fsync_per_file(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(store_module, "_syncfs", lambda: None)
    monkeypatch.setattr(store_module.os, "fsync", lambda fd: synced.append(fd))
    _write(tmp_path / "run.zarr", rows=2 * CHUNK)
    assert len(synced) >= 2 * 4  # every chunk file of both commits
    _expect_rows(tmp_path / "run.zarr", 2 * CHUNK)


def test_durable_syncs_its_own_files_while_others_are_unwritten(tmp_path, monkeypatch):
    """Much dirty data elsewhere: a commit fsyncs its files, never syncfs (which would write
    back every other program's pages too); a whole-file-system sync still uses syncfs."""
    synced, whole = [], []
    monkeypatch.setattr(store_module, "_little_unwritten", lambda: False)
    monkeypatch.setattr(store_module.os, "fsync", lambda fd: synced.append(fd))
    monkeypatch.setattr(store_module, "_syncfs", lambda: lambda fd: whole.append(fd) or 0)
    _write(tmp_path / "run.zarr", rows=2 * CHUNK)
    assert whole == [] and len(synced) >= 2 * 4  # every chunk file of both commits
    _expect_rows(tmp_path / "run.zarr", 2 * CHUNK)
    assert store_module.sync_file_system(tmp_path) and len(whole) == 1


def test_unwritten_bytes_read_from_meminfo():
    """The check reads this machine's /proc/meminfo (a Linux one: a number, not a default)."""
    if not Path("/proc/meminfo").is_file():
        pytest.skip("no /proc/meminfo")
    dirty = next(
        int(line.split()[1]) * 1024
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("Dirty:")
    )
    if abs(dirty - store_module.UNWRITTEN_LIMIT) > 16 << 20:  # (not at the edge: it moves)
        assert store_module._little_unwritten() == (dirty <= store_module.UNWRITTEN_LIMIT)


def test_disk_full_on_a_real_small_filesystem(tmp_path):
    """A 1 MiB tmpfs the test mounts (needs root and mount rights; skipped otherwise)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        path = mount / "run.zarr"
        writer = StoreWriter(path, chunk_rows=64, compression_level=0)
        writer.add_channel(ChannelInfo("noise", (256,), "float64"))
        rng = np.random.default_rng(0)
        with pytest.raises(RecordingError, match="No space left on device") as info:
            for k in range(10_000):
                buffers, row = writer.begin_row()
                buffers[0][row] = rng.random(256)
                writer.end_row(k + 1, float(k))
        writer.close(complete=False)
        safe = info.value.safe_rows
        assert 0 < safe < 10_000
        assert len(load_recording(path)) == safe
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_output_folder_removed_mid_run_stops_the_run(tmp_path):
    path = tmp_path / "run.zarr"
    writer = StoreWriter(path, chunk_rows=CHUNK)
    writer.add_channel(ChannelInfo("x", (), "float64"))
    with pytest.raises(RecordingError, match="output folder was removed") as info:
        for k in range(100_000):
            if k == 3 * CHUNK:
                # mid-run: after the writer created the arrays (zarr's own metadata writes
                # create missing folders) and committed rows
                deadline = time.monotonic() + 30
                while writer.committed_rows == 0 and time.monotonic() < deadline:
                    time.sleep(0.01)
                while path.exists():  # the writer thread may add a file meanwhile
                    shutil.rmtree(path, ignore_errors=True)
            buffers, row = writer.begin_row()
            buffers[0][row] = k
            writer.end_row(k + 1, float(k))
    writer.close(complete=False)
    assert "no step could be kept" in str(info.value)
    assert not path.exists()  # never recreated half-way


def test_store_is_plain_zarr_that_zarr_itself_reads_without_warnings(store):
    import warnings

    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        group = zarr.open_group(store, mode="r")
        names = sorted(name for name, _ in group.arrays())
    assert names == sorted(["step", "time", "W.imu.acc", "W.c.on"])
    rec = load_recording(store)
    np.testing.assert_array_equal(group["W.imu.acc"][:], rec.data["/W/imu.acc"])
    assert group["W.imu.acc"].attrs["simrt"]["name"] == "/W/imu.acc"
    assert group["W.imu.acc"].metadata.dimension_names[0] == "row"


def test_chunk_key_encoding_that_names_no_files_gives_no_zeros(store, caplog):
    """A document edited to another chunk key encoding (zarr would then read every chunk as
    its fill value): the rows whose chunk files are missing under that encoding are not
    passed off as zeros."""
    _edit_array(
        store,
        "W.imu.acc",
        chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}},
    )
    rec = load_recording(store)
    assert len(rec) == 0
    assert "is missing" in caplog.text


def test_commit_lines_with_impossible_row_counts_are_ignored(tmp_path, caplog):
    path = tmp_path / "run.zarr"
    writer = _write(path, close=False)
    writer._queue.put(None)
    writer._thread.join()
    committed = (ROWS // CHUNK) * CHUNK
    with open(path / COMMIT_LOG, "a") as log:
        log.write('{"rows": -5}\n{"rows": "12"}\n{"rows": 1e400}\n')
    _expect_rows(path, committed)
    assert "damaged line" in caplog.text


def test_inline_writer_holds_a_stop_signal_until_the_chunk_is_written(tmp_path, monkeypatch):
    """Without a writer thread the chunk is written in the caller's thread: a SIGTERM that
    arrives meanwhile is handled once the chunk is written and committed, so no handed-over
    row is lost and the store closes with every row."""
    import signal as signal_module

    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop

    real = StoreWriter._write_rows
    sent = []

    def write_rows(self, buffers, start, rows):
        if not sent:  # the signal lands in the middle of the first chunk's write
            sent.append(1)
            os.kill(os.getpid(), signal_module.SIGTERM)
        real(self, buffers, start, rows)

    monkeypatch.setattr(StoreWriter, "_write_rows", write_rows)
    previous = signal_module.signal(signal_module.SIGTERM, handler)
    path = tmp_path / "run.zarr"
    written = 0
    try:
        writer = StoreWriter(path, chunk_rows=CHUNK, background=False)
        writer.add_channel(ChannelInfo("/W/imu.acc", (3,), "float64", "/W/imu", "imu", "acc"))
        with pytest.raises(Stop):
            for k in range(10 * CHUNK):
                buffers, row = writer.begin_row()
                buffers[0][row] = [k, 2 * k, 3 * k]
                writer.end_row(k + 1, 0.01 * (k + 1))
                written += 1
        assert writer.committed_rows == CHUNK  # the chunk was written before the handler ran
        writer.close(complete=False, reason="stopped")
    finally:
        signal_module.signal(signal_module.SIGTERM, previous)
    rec = load_recording(path)
    assert len(rec) == CHUNK and not rec.complete
    np.testing.assert_array_equal(rec.step, np.arange(1, CHUNK + 1))


def test_a_previous_store_is_set_aside_and_removed_while_the_new_run_writes(tmp_path):
    """Re-recording to the same path: the old store leaves the path at once (renamed aside,
    removed by a thread the writer joins at close); nothing of it is left, the new rows load."""
    path = tmp_path / "run.zarr"
    _write(path, rows=400)
    old_chunk = path / "W.imu.acc" / f"c.{400 // CHUNK - 1}.0"
    assert old_chunk.exists()
    writer = StoreWriter(path, chunk_rows=CHUNK, expected_rows=10)
    writer.add_channel(ChannelInfo("/W/imu.acc", (3,), "float64", "/W/imu", "imu", "acc"))
    writer.add_channel(ChannelInfo("/W/c.on", (), "bool", "/W/c", "contact", "in_contact"))
    buffers, row = writer.begin_row()  # (opens the store: the old one is moved aside)
    assert not old_chunk.exists()  # the old 400 rows are gone here
    buffers[0][row], buffers[1][row] = [0, 0, 0], True
    writer.end_row(1, 0.01)
    writer.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.zarr"]
    _expect_rows(path, 1)


def test_stores_set_aside_by_a_killed_process_are_removed_by_the_next_run(tmp_path):
    path = tmp_path / "run.zarr"
    _write(path)
    child = subprocess.Popen(["true"])  # (a pid that has exited)
    child.wait()
    left = tmp_path / f".run.zarr.replaced-{child.pid}-1"
    shutil.copytree(path, left)  # what a SIGKILL during the removal leaves
    alive = tmp_path / f".run.zarr.replaced-{os.getpid()}-2"
    shutil.copytree(path, alive)  # a live process's: its own thread removes it
    foreign = tmp_path / ".run.zarr.replaced-notapid-3"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("not ours")
    _write(path, rows=5)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(["run.zarr", alive.name, foreign.name])
    _expect_rows(path, 5)


def test_a_store_path_that_is_a_symlink_is_neither_moved_nor_removed_through(tmp_path):
    target = tmp_path / "real.zarr"
    _write(target)
    (tmp_path / "link.zarr").symlink_to(target)
    with pytest.raises(SimrtError, match="cannot create the recording store"):
        _write(tmp_path / "link.zarr", rows=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.zarr", "real.zarr"]
    _expect_rows(target, ROWS)
