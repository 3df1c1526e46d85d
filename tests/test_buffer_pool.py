"""Chunk buffer sets kept between store writers (``runtime.recording._buffer_pool``)."""

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
        kept.append({id(s[0]) for sets in _buffer_pool._POOL.values() for s in sets})
    assert kept[0] and kept[0] & kept[1]  # the second writer wrote into the first's sets
    # the second store holds its own rows only
    second = load_recording(tmp_path / "r1.zarr")
    assert len(second.time) == 40
    np.testing.assert_array_equal(second.data["a.x"][:, 0], 1.0)
    np.testing.assert_array_equal(second.data["a.x"][:, 1], np.arange(40.0))


def test_another_layout_or_poisoned_writers_get_new_sets():
    sets = [_buffer_pool.take(_channels(), 8)]
    _buffer_pool.give(_channels(), 8, sets)
    other = _buffer_pool.take(_channels(width=4), 8)  # another layout: a new set
    assert other[0].shape == (8, 4) and other[0] is not sets[0][0]
    poisoned = _buffer_pool.take(_channels(), 8, poison=True)  # tests' 0xFF sets: never kept
    assert poisoned[0] is not sets[0][0]
    assert np.isnan(poisoned[0]).all()  # (0xFF bytes: NaN)
    assert _buffer_pool.take(_channels(), 8)[0] is sets[0][0]


def test_runs_back_to_back_record_what_a_fresh_process_records(tmp_path):
    pytest.importorskip("mujoco")
    from runtime.run.loop import run_scene

    scene = REPO / "scenes" / "simple_arm.usda"
    run_scene(str(scene), steps=700, out=tmp_path / "first.zarr")
    kept = {id(s[0]) for sets in _buffer_pool._POOL.values() for s in sets}
    assert kept  # the first run's sets were kept
    run_scene(str(scene), steps=700, out=tmp_path / "second.zarr")  # takes them
    again = {id(s[0]) for sets in _buffer_pool._POOL.values() for s in sets}
    assert kept & again  # (the second run wrote into the first run's buffers)
    first = load_recording(tmp_path / "first.zarr")
    second = load_recording(tmp_path / "second.zarr")
    for name, values in first.data.items():
        np.testing.assert_array_equal(second.data[name], values, err_msg=name)
