"""Closing a store rewrites its documents together: each atomically, the contents synced once
before any rename (as one durable atomic write per document, which costs a sync each)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from runtime.recording import ChannelInfo, StoreWriter, _metadata, load_recording


def _documents(tmp_path, count=3):
    paths = []
    for i in range(count):
        folder = tmp_path / f"a{i}"
        folder.mkdir()
        (folder / "zarr.json").write_bytes(b'{"old": %d}' % i)
        paths.append(folder / "zarr.json")
    return paths


def test_every_document_is_synced_before_the_first_rename(tmp_path, monkeypatch):
    paths = _documents(tmp_path)
    os.chmod(paths[1], 0o600)
    seen = []

    def sync(root, files):
        # the sync sees every new content in a temporary file and every destination still old
        seen.append((root, [f.read_bytes() for f in files], [p.read_bytes() for p in paths]))
        for f in files:
            assert f.parent in {p.parent for p in paths} and f.name.startswith(".zarr.json.")

    monkeypatch.setattr(_metadata, "make_durable", sync)
    _metadata.replace_documents(tmp_path, [(p, b'{"new": %d}' % i) for i, p in enumerate(paths)])
    assert len(seen) == 1 and seen[0][0] == tmp_path
    assert seen[0][1] == [b'{"new": 0}', b'{"new": 1}', b'{"new": 2}']
    assert seen[0][2] == [b'{"old": 0}', b'{"old": 1}', b'{"old": 2}']
    assert [p.read_bytes() for p in paths] == [b'{"new": 0}', b'{"new": 1}', b'{"new": 2}']
    assert stat.S_IMODE(paths[1].stat().st_mode) == 0o600  # (each file keeps its mode)
    assert sorted(f.name for p in paths for f in p.parent.iterdir()) == ["zarr.json"] * 3


def test_not_durable_skips_the_sync(tmp_path, monkeypatch):
    paths = _documents(tmp_path, 2)
    calls = []
    monkeypatch.setattr(_metadata, "make_durable", lambda *a: calls.append(a))
    _metadata.replace_documents(tmp_path, [(p, b"{}") for p in paths], durable=False)
    assert calls == [] and [p.read_bytes() for p in paths] == [b"{}", b"{}"]


def test_a_failed_sync_replaces_nothing_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    paths = _documents(tmp_path)

    def sync(root, files):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(_metadata, "make_durable", sync)
    with pytest.raises(OSError, match="Input/output"):
        _metadata.replace_documents(tmp_path, [(p, b"{}") for p in paths])
    assert [p.read_bytes() for p in paths] == [b'{"old": 0}', b'{"old": 1}', b'{"old": 2}']
    assert sorted(f.name for p in paths for f in p.parent.iterdir()) == ["zarr.json"] * 3


def test_a_missing_folder_fails_and_leaves_no_temporary_file(tmp_path):
    paths = _documents(tmp_path, 2)
    missing = tmp_path / "gone" / "zarr.json"
    with pytest.raises(FileNotFoundError):
        _metadata.replace_documents(tmp_path, [(paths[0], b"{}"), (missing, b"{}")])
    assert paths[0].read_bytes() == b'{"old": 0}'
    assert [f.name for f in paths[0].parent.iterdir()] == ["zarr.json"]


@pytest.mark.parametrize("durable", [True, False])
def test_close_syncs_the_documents_once_when_durable(tmp_path, monkeypatch, durable):
    """A closed store's documents are trimmed to its rows; a durable store syncs them in one
    call that names every document's new content (a store that is not durable: none). (21
    rows of 300 expected: a length narrower than the documents' growing field, so every
    document is rewritten.)"""
    calls = []
    real = _metadata.make_durable
    monkeypatch.setattr(_metadata, "make_durable", lambda root, files: calls.append(files))
    path = tmp_path / "r.zarr"
    writer = StoreWriter(path, expected_rows=300, chunk_rows=8, durable=durable)
    writer.add_channel(ChannelInfo("a", (2,), "float32"))
    writer.add_channel(ChannelInfo("b", (), "float64"))
    writer.add_derived([ChannelInfo("a.twice", (2,), "float32")], _twice)
    for k in range(21):  # (the run stops early: 21 of 300 rows)
        buffers, row = writer.begin_row()
        buffers[0][row] = (k, -k)
        buffers[1][row] = 0.5 * k
        writer.end_row(k, 0.1 * k)
    writer.close(complete=False, reason="stopped")
    monkeypatch.setattr(_metadata, "make_durable", real)
    documents = {p.parent.name: json.loads(p.read_text()) for p in path.rglob("zarr.json")}
    for key in ("a", "b", "a.twice", "step", "time"):
        assert documents[key]["shape"][0] == 21, key
    assert documents[path.name]["attributes"]["simrt"]["reason"] == "stopped"
    if durable:
        assert len(calls) == 1 and len(calls[0]) == 6  # (five arrays and the group)
    else:
        assert calls == []
    loaded = load_recording(path)
    assert len(loaded) == 21 and loaded.data["a.twice"][20].tolist() == [40.0, -40.0]


def _twice(buffers, derived, first, stop):
    derived[0][first:stop] = 2 * buffers[0][first:stop]


def _record(path, rows, *, expected, chunk=10):
    writer = StoreWriter(path, expected_rows=expected, chunk_rows=chunk, background=False)
    writer.add_channel(ChannelInfo("v", (2,), "float32"))
    writer.add_channel(ChannelInfo("s", (), "float64"))
    for k in range(rows):
        buffers, row = writer.begin_row()
        buffers[0][row] = (k, -k)
        buffers[1][row] = k
        writer.end_row(k, 0.1 * k)
    return writer


def test_the_next_chunks_files_are_made_ahead_and_filled_by_its_write(tmp_path):
    path = tmp_path / "r.zarr"
    writer = _record(path, 10, expected=30)
    # chunk 0 written: chunk 1's files exist, empty (the write then only opens them)
    assert (path / "v" / "c.1.0").stat().st_size == 0
    assert (path / "s" / "c.1").stat().st_size == 0
    for k in range(10, 15):
        buffers, row = writer.begin_row()
        buffers[0][row] = (k, -k)
        buffers[1][row] = k
        writer.end_row(k, 0.1 * k)
    writer.close(complete=False, reason="stopped")
    assert (path / "v" / "c.1.0").stat().st_size > 0
    assert load_recording(path).data["v"][14].tolist() == [14.0, -14.0]


@pytest.mark.parametrize("rows", [0, 10, 20])
def test_files_made_ahead_for_rows_that_never_came_are_removed(tmp_path, rows):
    """A run stopping at a chunk's end (or before its first row) leaves no empty chunk file
    of a chunk it never wrote."""
    path = tmp_path / "r.zarr"
    writer = _record(path, rows, expected=40)
    writer.close(complete=False, reason="stopped")
    for key, tail in (("v", ".0"), ("s", "")):
        names = sorted(p.name for p in (path / key).glob("c.*"))
        assert names == [f"c.{i}{tail}" for i in range(rows // 10)], key
    assert all(p.stat().st_size > 0 for p in path.rglob("c.*") if p.is_file())
    assert len(load_recording(path)) == rows


def test_a_document_created_growing_is_grown_in_place_and_read_by_zarr(tmp_path):
    zarr = pytest.importorskip("zarr")
    document = _metadata.ArrayDocument(
        tmp_path, "v", (0, 3), (8, 3), "float32", ["row", "v.0"], {"simrt": {"name": "v"}}, 0, "lz4"
    )
    document.create(False, growing=True)
    path = tmp_path / "v" / "zarr.json"
    inode = path.stat().st_ino
    assert json.loads(path.read_text())["shape"] == [0, 3] and document.growing
    assert zarr.open_array(tmp_path / "v", mode="r").shape == (0, 3)
    document.grow(5)
    assert path.stat().st_ino == inode  # (overwritten in place: no new file)
    assert json.loads(path.read_text())["shape"] == [5, 3]
    assert zarr.open_array(tmp_path / "v", mode="r").shape == (5, 3)


@pytest.mark.parametrize(("rows", "created_at_close"), [(30, 0), (25, 0), (15, 1), (5, 5)])
def test_closing_creates_no_file_for_a_run_of_the_expected_rows_digits(
    tmp_path, monkeypatch, rows, created_at_close
):
    """A run of 30 expected rows (chunks of 10): the array documents' growing length is two
    digits wide, so a closing length of two digits leaves them as zarr writes them; once
    chunk 1 is written the writer makes the group document's temporary file. Closing then
    creates no file (30, 25 rows); a run stopped before chunk 1 creates the group's (15),
    and one of fewer digits every document's (5). No temporary file is left."""
    created = []
    real = _metadata._temporary

    def temporary(path):
        created.append(path)
        return real(path)

    path = tmp_path / "r.zarr"
    writer = _record(path, rows, expected=30)
    monkeypatch.setattr(_metadata, "_temporary", temporary)
    writer.close(complete=rows == 30)
    assert len(created) == created_at_close  # (5: v, s, step, time and the group)
    assert not [p for p in path.rglob(".zarr.json.*")]
    assert len(load_recording(path)) == rows
    assert json.loads((path / "v" / "zarr.json").read_text())["shape"] == [rows, 2]


def test_spares_of_no_document_are_removed(tmp_path):
    paths = _documents(tmp_path, 2)
    spare = tmp_path / "a1" / ".zarr.json.spare.json"
    spare.write_bytes(b"")
    _metadata.replace_documents(
        tmp_path, [(paths[0], b"{}")], spares={paths[1]: str(spare)}, durable=False
    )
    assert paths[0].read_bytes() == b"{}" and paths[1].read_bytes() == b'{"old": 1}'
    assert not spare.exists()


def test_a_store_killed_with_its_spares_made_loads_its_committed_rows(tmp_path):
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "r.zarr"
    _record(path, 25, expected=30)  # (never closed, as by a kill: chunks 0 and 1 committed)
    assert len(list(path.rglob(".zarr.json.*"))) == 1  # (the group's: left, empty)
    assert len(load_recording(path)) == 20
    assert zarr.open_group(path, mode="r")["v"].shape == (20, 2)


@pytest.mark.parametrize(
    ("rows", "expected", "kept"),
    [(1000, 1000, True), (1280, 2000, True), (640, 1000, False), (1000, 0, False),
     (12, 9, False)],
)  # fmt: skip
def test_documents_left_as_they_grew_are_what_zarr_writes(
    tmp_path, monkeypatch, rows, expected, kept
):
    """The oracle: zarr writes the same arrays. A store expecting 1000 (2000) rows grows
    4-digit length fields: closing at 1000 (1280) rows leaves the documents it grew (only
    the group's is rewritten), and they are byte for byte zarr's; closing at 640 rows, or
    without expected rows, rewrites every document, to the same bytes; so does a run past
    its expected rows' digits (12 of 9: its documents' fields widened during the run)."""
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "ours.zarr"
    writer = StoreWriter(path, expected_rows=expected, chunk_rows=128, background=False)
    writer.add_channel(ChannelInfo("v", (3,), "float32"))
    writer.add_channel(ChannelInfo("s", (), "float64"))
    writer.add_derived([ChannelInfo("v.twice", (3,), "float32")], _twice)
    for k in range(rows):
        buffers, row = writer.begin_row()
        buffers[0][row] = k
        buffers[1][row] = -k
        writer.end_row(k, 0.01 * k)
    rewritten = []  # (documents replaced by a new file: at close, or widened in a commit)
    real_replace, real_atomic = _metadata.replace_documents, _metadata.atomic_write_bytes

    def replace(root, documents, **kwargs):
        rewritten.extend(p.parent.name for p, _ in documents)
        return real_replace(root, documents, **kwargs)

    def atomic(target, data, **kwargs):
        rewritten.append(Path(target).parent.name)
        return real_atomic(target, data, **kwargs)

    monkeypatch.setattr("runtime.recording.store.replace_documents", replace)
    monkeypatch.setattr(_metadata, "atomic_write_bytes", atomic)
    writer.close()
    for key in ("v", "s", "v.twice", "step", "time"):
        ours = zarr.open_array(path / key, mode="r")
        theirs = zarr.create_array(
            tmp_path / "theirs" / key,
            shape=ours.shape,
            chunks=ours.chunks,
            dtype=ours.dtype,
            fill_value=0,
            compressors=ours.compressors,
            zarr_format=3,
            chunk_key_encoding={"name": "default", "separator": "."},
            config={"write_empty_chunks": True},
            dimension_names=ours.metadata.dimension_names,
            attributes=dict(ours.attrs),
        )
        assert theirs.shape[0] == rows
        mine = (path / key / "zarr.json").read_bytes()
        assert mine == (tmp_path / "theirs" / key / "zarr.json").read_bytes(), key
    left = {key: key not in rewritten for key in ("v", "s", "v.twice")}
    assert left == dict.fromkeys(left, kept) and path.name in rewritten  # (the group: always)
    assert len(load_recording(path)) == rows


def test_the_loop_records_three_chunks_while_the_writer_still_creates_the_arrays(
    tmp_path, monkeypatch
):
    """The writer thread hands the second buffer set over before it creates the arrays: a
    loop filling chunks faster than the arrays are created does not wait (creation is held
    here until the rows are recorded; a safety timer releases it if the loop waits)."""
    import threading

    created = threading.Event()
    real = StoreWriter._create_arrays

    def create_later(self):
        created.wait(10.0)
        real(self)

    monkeypatch.setattr(StoreWriter, "_create_arrays", create_later)
    safety = threading.Timer(3.0, created.set)
    safety.start()
    path = tmp_path / "r.zarr"
    writer = StoreWriter(path, expected_rows=40, chunk_rows=10)
    writer.add_channel(ChannelInfo("v", (2,), "float32"))
    for k in range(25):  # (three chunks' buffer sets: the open's, the writer's, a new one)
        buffers, row = writer.begin_row()
        buffers[0][row] = (k, -k)
        writer.end_row(k, 0.1 * k)
    waited = writer.wait_seconds
    created.set()
    safety.cancel()
    writer.close()
    assert waited == 0.0
    assert load_recording(path).data["v"][24].tolist() == [24.0, -24.0]
