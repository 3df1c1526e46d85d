"""Recorder: round trip, atomic chunked flushes, interrupted writes, bad input."""

from __future__ import annotations

import importlib.util
import json
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


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is not None, reason="pyarrow present")
def test_parquet_without_pyarrow_is_a_clear_error(tmp_path):
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
