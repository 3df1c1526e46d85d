"""Chunk buffer memory kept between store writers (``runtime.recording._buffer_pool``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from runtime.recording import ChannelInfo, StoreWriter, _buffer_pool, load_recording

REPO = Path(__file__).resolve().parents[1]


def _channels(width=3):
    return [
        ChannelInfo("a.x", (width,), "float64", "a", "test", "x", ""),
        ChannelInfo("a.ok", (), "bool", "a", "test", "ok", ""),
    ]


def test_a_closed_writers_sets_serve_the_next_writer_of_the_same_layout(tmp_path):
    kept: list[set[int]] = []
    for run in range(2):
        writer = StoreWriter(tmp_path / f"r{run}.zarr", expected_rows=50, chunk_rows=20)
        for info in _channels():
            writer.add_channel(info)
        for k in range(50 - 10 * run):  # (the second run writes fewer rows)
            buffers, row = writer.begin_row()
            buffers[0][row] = (run, k, -k)
            buffers[1][row] = k % 2 == 0
            writer.end_row(k, 0.01 * k)
        writer.close()
        kept.append({id(block) for block in _buffer_pool._BLOCKS})
    assert kept[0] and kept[0] & kept[1]  # the second writer wrote into the first's blocks
    # the second store holds its own rows only
    second = load_recording(tmp_path / "r1.zarr")
    assert len(second.time) == 40
    np.testing.assert_array_equal(second.data["a.x"][:, 0], 1.0)
    np.testing.assert_array_equal(second.data["a.x"][:, 1], np.arange(40.0))


def test_a_kept_block_serves_any_layout_it_holds_and_poisoned_sets_are_new():
    _buffer_pool._BLOCKS.clear()
    wide = _buffer_pool.take(_channels(width=4), 8)
    block = wide[-1].base
    assert block is not None and all(b.base is block for b in wide)
    _buffer_pool.give([wide])
    narrow = _buffer_pool.take(_channels(width=3), 8)  # a smaller layout: the same memory
    assert narrow[-1].base is block and narrow[0].shape == (8, 3)
    for buffer in narrow:  # carved C-ordered, aligned, not overlapping
        assert buffer.flags.c_contiguous and buffer.flags.aligned
        assert buffer.ctypes.data % 64 == 0
    spans = sorted((b.ctypes.data, b.ctypes.data + b.nbytes) for b in narrow)
    assert all(end <= begin for (_, end), (begin, _) in zip(spans, spans[1:], strict=False))
    _buffer_pool.give([narrow])
    larger = _buffer_pool.take(_channels(width=3), 64)  # does not fit: a new block
    assert larger[-1].base is not block
    poisoned = _buffer_pool.take(_channels(), 8, poison=True)  # tests' 0xFF sets: never kept
    assert poisoned[-1].base is not block
    assert np.isnan(poisoned[0]).all()  # (0xFF bytes: NaN)
    assert _buffer_pool.take(_channels(), 8)[-1].base is block


def test_kept_memory_stays_under_the_limit(monkeypatch):
    _buffer_pool._BLOCKS.clear()
    monkeypatch.setattr(_buffer_pool, "LIMIT", 3 * _buffer_pool.nbytes(_channels(), 100))
    sets = [_buffer_pool.take(_channels(), 100) for _ in range(5)]
    _buffer_pool.give(sets)
    _buffer_pool.give(sets[-1:])  # (given twice: kept once)
    assert [id(b) for b in _buffer_pool._BLOCKS] == [id(s[-1].base) for s in sets[2:]]


def test_runs_back_to_back_record_what_a_fresh_process_records(tmp_path):
    pytest.importorskip("mujoco")
    from runtime.run.loop import run_scene

    scene = REPO / "scenes" / "simple_arm.usda"
    run_scene(str(scene), steps=700, out=tmp_path / "first.zarr")
    kept = {id(block) for block in _buffer_pool._BLOCKS}
    assert kept  # the first run's blocks were kept
    run_scene(str(scene), steps=700, out=tmp_path / "second.zarr")  # takes them
    again = {id(block) for block in _buffer_pool._BLOCKS}
    assert kept & again  # (the second run wrote into the first run's buffers)
    first = load_recording(tmp_path / "first.zarr")
    second = load_recording(tmp_path / "second.zarr")
    for name, values in first.data.items():
        np.testing.assert_array_equal(second.data[name], values, err_msg=name)


def _record(path, expected, rows, chunk_rows):
    import time

    writer = StoreWriter(path, expected_rows=expected, chunk_rows=chunk_rows)
    for info in _channels():
        writer.add_channel(info)
    for k in range(rows):
        buffers, row = writer.begin_row()
        buffers[0][row] = (k, 2 * k, 3 * k)
        buffers[1][row] = True
        writer.end_row(k, 0.5 * k)
        if k == 0 and expected > chunk_rows:  # (a loop slower than the writer's start)
            deadline = time.monotonic() + 30.0
            while writer._free.empty() and time.monotonic() < deadline:
                time.sleep(0.001)
    writer.close()
    return load_recording(path)


def test_the_writer_thread_prepares_the_second_set_and_a_finished_run_takes_no_more(
    tmp_path, monkeypatch
):
    import threading

    taken: list[str] = []
    original = _buffer_pool.take

    def take(*args, **kwargs):
        taken.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(_buffer_pool, "take", take)
    recording = _record(tmp_path / "two.zarr", 60, 60, 20)
    # the first set for the loop, the second prepared beside it; later chunks reuse them
    assert taken[:2] == ["MainThread", "simrt-store"] and len(taken) <= 3
    np.testing.assert_array_equal(recording.data["a.x"][:, 2], 3.0 * np.arange(60))
    taken.clear()
    recording = _record(tmp_path / "one.zarr", 20, 20, 20)
    assert taken == ["MainThread"]  # one chunk: no second set, none after the last row
    np.testing.assert_array_equal(recording.step, np.arange(20))


def test_an_empty_channel_is_numpys_own_empty_array():
    """A ray-cast sensor disabled with no rays records (rows, 0, 3) channels: no bytes, and
    strides of 0, as numpy gives them (a stride of one row would send writers past it)."""
    empty = ChannelInfo("r.hits", (0, 3), "float32", "r", "test", "hits", "")
    buffers = _buffer_pool.take([empty, *_channels()], 6)
    assert buffers[0].shape == (6, 0, 3) and buffers[0].nbytes == 0
    assert buffers[0].strides == np.empty((6, 0, 3), np.float32).strides
    assert buffers[1].shape == (6, 3) and buffers[-1].base is not None


def test_a_small_set_with_a_waste_bound_leaves_large_blocks_alone(monkeypatch):
    monkeypatch.setattr(_buffer_pool, "_BLOCKS", [])
    small = _channels(3)
    large = _buffer_pool.take(_channels(3000), 100)
    _buffer_pool.give([large])
    big = _buffer_pool._BLOCKS[0]
    first = _buffer_pool.take(small, 10, waste=2)  # (only a block 100x its size: a new one)
    assert _buffer_pool._BLOCKS == [big] and first[0].base is not big
    _buffer_pool.give([first])
    again = _buffer_pool.take(small, 10, waste=2)  # (its own block, kept)
    assert again[0].base is first[0].base and _buffer_pool._BLOCKS == [big]
    assert _buffer_pool.take(small, 10)[0].base is big  # (unbounded: the smallest that fits)


def test_noisy_twins_buffers_come_back_to_the_pool_and_serve_the_next_run(tmp_path, monkeypatch):
    monkeypatch.setattr(_buffer_pool, "_BLOCKS", [])

    def fill(buffers, derived, first, stop):
        derived[0][first:stop] = 2 * buffers[0][first:stop]

    blocks = []
    for run in range(2):
        writer = StoreWriter(tmp_path / f"r{run}.zarr", expected_rows=50, chunk_rows=20)
        for info in _channels():
            writer.add_channel(info)
        writer.add_derived([ChannelInfo("a.x.twice", (3,), "float64")], fill)
        for k in range(50):
            buffers, row = writer.begin_row()
            buffers[0][row] = (run, k, -k)
            buffers[1][row] = True
            writer.end_row(k, 0.01 * k)
        writer.close()
        blocks.append({id(block) for block in _buffer_pool._BLOCKS})
        twice = load_recording(tmp_path / f"r{run}.zarr").data["a.x.twice"]
        np.testing.assert_array_equal(twice[:, 1], 2.0 * np.arange(50))
    assert blocks[0] == blocks[1]  # (the twins' block among them: reused, no new one)
    twins = _buffer_pool.nbytes([ChannelInfo("a.x.twice", (3,), "float64")], 20)
    assert twins in {block.nbytes for block in _buffer_pool._BLOCKS}
