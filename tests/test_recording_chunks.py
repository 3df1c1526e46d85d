"""The writer's own chunk encoding against zarr-python's codec pipeline (the oracle)."""

from __future__ import annotations

import json

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

from runtime.recording import ChannelInfo, StoreWriter, load_recording  # noqa: E402


@pytest.mark.parametrize("level", [0, 1, 5])
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((), "float64"), ((3,), "float32"), ((4, 3), "int32"), ((7,), "bool"), ((2,), "int64")],
)
def test_chunk_files_are_byte_identical_to_zarr(tmp_path, level, shape, dtype):
    rows, chunk = 50, 16
    rng = np.random.default_rng(level)
    values = (rng.random((rows, *shape)) * 1000).astype(dtype)
    ours = tmp_path / "ours.zarr"
    writer = StoreWriter(ours, chunk_rows=chunk, compression_level=level, expected_rows=rows)
    writer.add_channel(ChannelInfo("v", shape, dtype))
    for k in range(rows):
        buffers, row = writer.begin_row()
        buffers[0][row] = values[k]
        writer.end_row(k + 1, k * 0.5)
    writer.close()
    ours_array = zarr.open_group(ours, mode="r")["v"]
    # the oracle: zarr writes the same array, with the same metadata, through its own codecs
    theirs = zarr.create_array(
        tmp_path / "theirs.zarr",
        shape=(rows, *shape),
        chunks=ours_array.chunks,
        dtype=dtype,
        fill_value=0,
        compressors=ours_array.compressors,
        zarr_format=3,
        config={"write_empty_chunks": True},
        dimension_names=ours_array.metadata.dimension_names,
        attributes=dict(ours_array.attrs),
    )
    theirs[:] = values
    np.testing.assert_array_equal(ours_array[:], values)
    full = rows // chunk  # whole chunks: same bytes (the tail chunk holds stale padding rows)
    for index in range(full):
        tail = "/0" * len(shape)
        mine = (ours / "v" / "c" / f"{index}{tail}").read_bytes()
        zarrs = (tmp_path / "theirs.zarr" / "c" / f"{index}{tail}").read_bytes()
        assert mine == zarrs, f"chunk {index} differs"
    # the array documents too: what zarr writes for the same array, field for field
    mine_doc = json.loads((ours / "v" / "zarr.json").read_text())
    zarr_doc = json.loads((tmp_path / "theirs.zarr" / "zarr.json").read_text())
    assert mine_doc == zarr_doc
    loaded = load_recording(ours)
    np.testing.assert_array_equal(loaded.data["v"], values)
    np.testing.assert_array_equal(loaded.time, np.arange(rows) * 0.5)


@pytest.mark.parametrize("name", ["/..", ".", "/", "__zarr", "a\x00b"])
def test_channel_names_that_cannot_be_arrays_are_refused(tmp_path, name):
    writer = StoreWriter(tmp_path / "r.zarr")
    with pytest.raises(ValueError, match="cannot name a Zarr array"):
        writer.add_channel(ChannelInfo(name, (), "float64"))
