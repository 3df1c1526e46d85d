"""Property test of the store: whatever the chunk size, row count, channel shapes and the
moment the writer is abandoned, readers get exactly the committed rows as written."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("zarr")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from runtime.recording import ChannelInfo, StoreWriter, export_recording, load_recording  # noqa: E402

DTYPES = ("float64", "float32", "int64", "int8", "bool")
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=2).map(tuple)
channels = st.lists(st.tuples(shapes, st.sampled_from(DTYPES)), min_size=1, max_size=4)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    layout=channels,
    rows=st.integers(0, 70),
    chunk=st.integers(1, 17),
    close=st.booleans(),
    seed=st.integers(0, 2**16),
    background=st.booleans(),
)
def test_store_round_trip(layout, rows, chunk, close, seed, background):
    rng = np.random.default_rng(seed)
    folder = Path(tempfile.mkdtemp(prefix="simrt-prop-"))
    try:
        writer = StoreWriter(
            folder / "r.zarr", chunk_rows=chunk, durable=False, background=background
        )
        for i, (shape, dtype) in enumerate(layout):
            writer.add_channel(ChannelInfo(f"/S{i}.f", shape, dtype, f"/S{i}", "test", "f"))
        written = [[] for _ in layout]
        for k in range(rows):
            buffers, row = writer.begin_row()
            for i, (shape, dtype) in enumerate(layout):
                value = (rng.standard_normal(shape) * 100).astype(dtype)
                buffers[i][row] = value
                written[i].append(value)
            writer.end_row(k + 1, 0.5 * (k + 1))
        if close:
            writer.close(complete=True)
            expected = rows
        elif rows == 0:  # killed before the first step: no store was created yet
            assert not (folder / "r.zarr").exists()
            return
        else:  # abandoned (like a killed process): only what the writer committed counts
            if background:  # (inline, every full chunk was written when it filled)
                writer._queue.put(None)
                writer._thread.join()
            expected = (rows // chunk) * chunk
        rec = load_recording(folder / "r.zarr")
        assert len(rec) == expected and rec.complete == close
        np.testing.assert_array_equal(rec.step, np.arange(1, expected + 1))
        for i, (shape, dtype) in enumerate(layout):
            data = rec.data[f"/S{i}.f"]
            assert data.shape == (expected, *shape) and data.dtype == np.dtype(dtype)
            if expected:
                np.testing.assert_array_equal(data, np.stack(written[i][:expected]))
        if close:
            copy = load_recording(export_recording(folder / "r.zarr", folder / "r.npz"))
            for name, values in rec.data.items():
                np.testing.assert_array_equal(copy.data[name], values)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
