"""Recorder: round trip, atomic chunked flushes, interrupted writes, bad input."""

from __future__ import annotations

import importlib.util
import json
import sys
import zipfile

import numpy as np
import pytest

from runtime.engine.recorder import ChannelInfo, Recorder, load_recording
from runtime.errors import SimrtError


def _make(path, flush_every=4):
    rec = Recorder(path, flush_every=flush_every, meta={"scene": "x.usda", "dt": 0.01})
    rec.add_channel(ChannelInfo("imu.acc", (3,), "float32", "/W/imu", "imu", "acc", "m/s^2"))
    rec.add_channel(ChannelInfo("c.force", (), "float32", "/W/c", "contact", "force"))
    rec.add_channel(ChannelInfo("c.in", (), "bool", "/W/c", "contact", "in_contact"))
    rec.add_channel(ChannelInfo("r.pts", (5, 3), "float32", "/W/r", "raycast", "pts"))
    return rec


def _row(k):
    return {
        "imu.acc": np.array([k, 2 * k, 3 * k], dtype=np.float32),
        "c.force": np.float32(0.5 * k),
        "c.in": k % 2 == 0,
        "r.pts": np.full((5, 3), k, dtype=np.float32),
    }


def test_round_trip_npz(tmp_path):
    path = tmp_path / "sub" / "run.npz"
    rec = _make(path)
    for k in range(1, 11):
        rec.append(k, k * 0.01, _row(k))
    rec.close()
    loaded = load_recording(path)
    assert len(loaded) == 10 and loaded.complete
    np.testing.assert_array_equal(loaded.step, np.arange(1, 11))
    np.testing.assert_allclose(loaded.time, np.arange(1, 11) * 0.01)
    assert loaded.data["imu.acc"].shape == (10, 3)
    assert loaded.data["imu.acc"].dtype == np.float32
    np.testing.assert_array_equal(loaded.data["imu.acc"][4], [5, 10, 15])
    np.testing.assert_array_equal(loaded.data["c.in"], [k % 2 == 0 for k in range(1, 11)])
    assert loaded.data["r.pts"].shape == (10, 5, 3)
    assert loaded.channels["imu.acc"].sensor == "/W/imu"
    assert loaded.channels["imu.acc"].unit == "m/s^2"
    assert loaded.run["scene"] == "x.usda"
    np.testing.assert_array_equal(loaded.field("/W/c", "force"), 0.5 * np.arange(1, 11))
    assert set(loaded.channels_of_kind("contact")) == {"/W/c"}
    # plain numpy can read it too, without pickles
    with np.load(path, allow_pickle=False) as npz:
        assert json.loads(str(npz["__meta__"]))["rows"] == 10


def test_chunked_flush_leaves_valid_partial_file(tmp_path):
    path = tmp_path / "run.npz"
    rec = _make(path, flush_every=4)
    for k in range(1, 10):  # 9 rows: flushes after 4 and 8
        rec.append(k, k * 0.01, _row(k))
    # without close: the file on disk holds the last flush
    partial = load_recording(path)
    assert len(partial) == 8 and not partial.complete
    np.testing.assert_array_equal(partial.step, np.arange(1, 9))
    assert rec.flush_count == 2
    # no temp files left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz"]


def test_interrupted_writer_keeps_all_done_rows(tmp_path):
    path = tmp_path / "run.npz"
    rec = _make(path, flush_every=100)
    with pytest.raises(RuntimeError):
        try:
            for k in range(1, 50):
                if k == 23:
                    raise RuntimeError("boom")
                rec.append(k, k * 0.01, _row(k))
        finally:
            rec.close(complete=False)
    loaded = load_recording(path)
    assert len(loaded) == 22 and not loaded.complete
    np.testing.assert_array_equal(loaded.data["c.force"], 0.5 * np.arange(1, 23, dtype=np.float32))


def test_missing_values_are_zero_and_wrong_shape_raises(tmp_path):
    rec = _make(tmp_path / "run.npz")
    rec.append(1, 0.01, {"c.force": 3.0})
    with pytest.raises(ValueError, match="imu.acc"):
        rec.append(2, 0.02, {"imu.acc": np.zeros(4)})
    with pytest.raises(KeyError, match="nope"):
        rec.append(2, 0.02, {"nope": 1.0})
    rec.close()
    loaded = load_recording(tmp_path / "run.npz")
    assert len(loaded) == 1
    np.testing.assert_array_equal(loaded.data["imu.acc"][0], 0)


def test_bad_suffix_and_not_a_recording(tmp_path):
    with pytest.raises(SimrtError, match="unsupported recording format"):
        Recorder(tmp_path / "run.csv")
    plain = tmp_path / "plain.npz"
    np.savez(plain, a=np.zeros(3))
    with pytest.raises(SimrtError, match="not a simrt recording"):
        load_recording(plain)
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not a zip")
    with pytest.raises(SimrtError, match="cannot read"):
        load_recording(broken)
    assert not zipfile.is_zipfile(broken)


def test_parquet_without_pyarrow_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    with pytest.raises(SimrtError, match="pyarrow"):
        Recorder(tmp_path / "run.parquet")


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pyarrow not installed")
def test_round_trip_parquet(tmp_path):
    path = tmp_path / "run.parquet"
    rec = _make(path)
    for k in range(1, 8):
        rec.append(k, k * 0.01, _row(k))
    rec.close()
    loaded = load_recording(path)
    assert len(loaded) == 7 and loaded.complete
    np.testing.assert_array_equal(loaded.data["r.pts"][3], np.full((5, 3), 4))


def _expected(rows):
    return {name: np.stack([np.asarray(_row(k)[name]) for k in rows]) for name in _row(1)}


def test_multi_chunk_segmented_file_loads_like_numpy_stacking(tmp_path):
    """Rows across several chunk buffers and several flushed segments load in order."""
    path = tmp_path / "run.npz"
    rec = Recorder(path, flush_every=7, meta={"scene": "x.usda"}, chunk_rows=5)
    for info in _make(None).channels.values():
        rec.add_channel(info)
    for k in range(1, 24):  # 23 rows: 5 chunks of 5 rows, flushes after 7, 14 and 21
        rec.append(k, k * 0.01, _row(k))
    assert rec.flush_count == 3
    partial = load_recording(path)
    assert len(partial) == 21 and not partial.complete
    np.testing.assert_array_equal(partial.step, np.arange(1, 22))
    for name, expected in _expected(range(1, 22)).items():
        np.testing.assert_array_equal(partial.data[name], expected.astype(partial.data[name].dtype))
    with zipfile.ZipFile(path) as zf:  # three segments, stored uncompressed, meta last
        names = zf.namelist()
        assert names[-1] == "__meta__.npy"
        assert sum(n.endswith("/step.npy") for n in names) == 3
        assert all(info.compress_type == zipfile.ZIP_STORED for info in zf.infolist())
    with np.load(path, allow_pickle=False) as npz:  # plain numpy still reads every member
        assert json.loads(str(npz["__meta__"]))["segments"] == [[0, 7], [7, 14], [14, 21]]
    rec.close()
    full = load_recording(path)
    assert len(full) == 23 and full.complete
    for name, expected in _expected(range(1, 24)).items():
        np.testing.assert_array_equal(full.data[name], expected.astype(full.data[name].dtype))
    with np.load(path, allow_pickle=False) as npz:  # the closed file is consolidated
        assert "segments" not in json.loads(str(npz["__meta__"]))
        assert npz["r.pts"].shape == (23, 5, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz"]


def test_flush_reuses_previous_bytes_unchanged(tmp_path):
    """A periodic flush copies the earlier segments' bytes instead of re-encoding them."""
    path = tmp_path / "run.npz"
    rec = _make(path, flush_every=3)
    for k in range(1, 4):
        rec.append(k, k * 0.01, _row(k))
    first = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        meta_offset = zf.getinfo("__meta__.npy").header_offset
    for k in range(4, 7):
        rec.append(k, k * 0.01, _row(k))
    assert path.read_bytes()[:meta_offset] == first[:meta_offset]
    assert len(load_recording(path)) == 6


def test_failed_append_leaves_no_stale_values(tmp_path):
    rec = _make(tmp_path / "run.npz")
    with pytest.raises(ValueError, match="r.pts"):
        rec.append(1, 0.01, {"c.force": 7.0, "r.pts": np.zeros(4)})
    rec.append(1, 0.01, {"imu.acc": [1, 2, 3]})
    rec.close()
    loaded = load_recording(tmp_path / "run.npz")
    assert len(loaded) == 1 and loaded.data["c.force"][0] == 0.0


def test_interrupted_segmented_run_then_close_writes_every_row(tmp_path):
    """Ctrl-C between flushes: close() (the run loop's finally) still writes every row."""
    path = tmp_path / "run.npz"
    rec = Recorder(path, flush_every=4, chunk_rows=3)
    for info in _make(None).channels.values():
        rec.add_channel(info)
    with pytest.raises(KeyboardInterrupt):
        try:
            for k in range(1, 100):
                if k == 11:
                    raise KeyboardInterrupt
                rec.append(k, k * 0.01, _row(k))
        finally:
            rec.close(complete=False)
    loaded = load_recording(path)
    assert len(loaded) == 10 and not loaded.complete
    np.testing.assert_array_equal(loaded.data["c.force"], 0.5 * np.arange(1, 11, dtype=np.float32))
