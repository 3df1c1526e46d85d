"""The writer's own chunk encoding against zarr-python's codec pipeline (the oracle)."""

from __future__ import annotations

import json

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

from runtime.recording import ChannelInfo, StoreWriter, load_recording  # noqa: E402
from runtime.recording._metadata import ArrayDocument  # noqa: E402

_CORE_DTYPES = [
    "bool",
    *(f"{kind}{bits}" for kind in ("int", "uint") for bits in (8, 16, 32, 64)),
    *("float16", "float32", "float64", "complex64", "complex128"),
]


def _zarr_compressors(level, cname="lz4"):
    from zarr.codecs import BloscCodec, Crc32cCodec

    blosc = [BloscCodec(cname=cname, clevel=level, shuffle="shuffle")] if level else []
    return [*blosc, Crc32cCodec()]


@pytest.mark.parametrize("compressor", ["lz4", "zstd"])
@pytest.mark.parametrize("level", [0, 1, 5])
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((), "float64"), ((3,), "float32"), ((4, 3), "int32"), ((7,), "bool"), ((2,), "int64")],
)
def test_chunk_files_are_byte_identical_to_zarr(tmp_path, level, shape, dtype, compressor):
    rows, chunk = 50, 16
    rng = np.random.default_rng(level)
    values = (rng.random((rows, *shape)) * 1000).astype(dtype)
    ours = tmp_path / "ours.zarr"
    writer = StoreWriter(
        ours, chunk_rows=chunk, compressor=compressor, compression_level=level, expected_rows=rows
    )
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
        chunk_key_encoding={"name": "default", "separator": "."},
        config={"write_empty_chunks": True},
        dimension_names=ours_array.metadata.dimension_names,
        attributes=dict(ours_array.attrs),
    )
    theirs[:] = values
    np.testing.assert_array_equal(ours_array[:], values)
    full = rows // chunk  # whole chunks: same bytes (the tail chunk holds stale padding rows)
    for index in range(full):
        name = f"c.{index}" + ".0" * len(shape)  # (chunk keys with "." beside zarr.json)
        mine = (ours / "v" / name).read_bytes()
        zarrs = (tmp_path / "theirs.zarr" / name).read_bytes()
        assert mine == zarrs, f"chunk {index} differs"
    # the array documents too: what zarr writes for the same array, field for field
    assert (ours / "v" / "zarr.json").read_bytes() == (
        tmp_path / "theirs.zarr" / "zarr.json"
    ).read_bytes()
    loaded = load_recording(ours)
    np.testing.assert_array_equal(loaded.data["v"], values)
    np.testing.assert_array_equal(loaded.time, np.arange(rows) * 0.5)


@pytest.mark.parametrize("name", ["/..", ".", "/", "__zarr", "a\x00b"])
def test_channel_names_that_cannot_be_arrays_are_refused(tmp_path, name):
    writer = StoreWriter(tmp_path / "r.zarr")
    with pytest.raises(ValueError, match="cannot name a Zarr array"):
        writer.add_channel(ChannelInfo(name, (), "float64"))


@pytest.mark.parametrize(("level", "compressor"), [(0, "lz4"), (3, "lz4"), (3, "zstd")])
@pytest.mark.parametrize("dtype", [*_CORE_DTYPES, ">f8", "datetime64[ns]"])
def test_array_documents_are_byte_identical_to_zarr(tmp_path, dtype, level, compressor):
    """Every Zarr v3 core dtype (written by our code) and two others (zarr's template)."""
    attributes = {"simrt": {"name": "a.b", "unit": "m/s", "nan": float("nan"), "x": [1, None]}}
    for rank, shape in enumerate([(7,), (7, 3), (7, 4, 2)]):
        chunks = (5, *shape[1:])
        names = ["row", *(f"a.{i}" for i in range(rank))]
        ours = ArrayDocument(
            tmp_path, f"ours{rank}", shape, chunks, dtype, names, attributes, level, compressor
        )
        ours.create(durable=False)
        zarr.create_array(
            tmp_path / f"theirs{rank}",
            shape=shape,
            chunks=chunks,
            dtype=dtype,
            fill_value=0,
            compressors=_zarr_compressors(level, compressor),
            zarr_format=3,
            chunk_key_encoding={"name": "default", "separator": "."},
            config={"write_empty_chunks": True},
            dimension_names=names,
            attributes=attributes,
        )
        theirs = (tmp_path / f"theirs{rank}" / "zarr.json").read_bytes()
        assert (tmp_path / f"ours{rank}" / "zarr.json").read_bytes() == theirs
        ours.update(rows=3, attributes={"simrt": {"name": "c"}})
        array = zarr.open_array(tmp_path / f"theirs{rank}", mode="r+")
        array.resize((3, *shape[1:]))
        array.attrs.put({"simrt": {"name": "c"}})
        theirs = (tmp_path / f"theirs{rank}" / "zarr.json").read_bytes()
        assert (tmp_path / f"ours{rank}" / "zarr.json").read_bytes() == theirs


def test_a_whole_store_is_what_zarr_writes(tmp_path):
    """The group documents, and every array's, against zarr writing the same nodes."""
    ours = tmp_path / "ours.zarr"
    writer = StoreWriter(ours, meta={"scene": "s.usda", "é": float("inf")}, compression_level=2)
    channels = [ChannelInfo("a.pos", (3,), "float32", unit="m"), ChannelInfo("b", (), "bool")]
    channels.append(ChannelInfo("c.hits", (2, 4), "int32", attrs={"path_table": ["/x"]}))
    for info in channels:
        writer.add_channel(info)
    for k in range(9):
        buffers, row = writer.begin_row()
        for buffer in buffers:
            buffer[row] = k
        writer.end_row(k, k * 0.25)
    channels[2].attrs["path_table"].append("/y")  # a table grown during the run
    writer.close(reason="done")
    documents = sorted((p.relative_to(ours) for p in ours.rglob("zarr.json")), key=str)
    assert [str(p.parent) for p in documents] == [
        "a.pos",
        "b",
        "c.hits",
        "simrt",
        "step",
        "time",
        ".",
    ]
    theirs = tmp_path / "theirs.zarr"
    root = json.loads((ours / "zarr.json").read_text())
    group = zarr.open_group(theirs, mode="w", zarr_format=3, attributes=root["attributes"])
    commit = json.loads((ours / "simrt" / "zarr.json").read_text())
    group.create_group("simrt", attributes=commit["attributes"])
    for key in ("a.pos", "b", "c.hits", "step", "time"):
        array = zarr.open_array(ours / key, mode="r")
        group.create_array(
            key,
            shape=array.shape,
            chunks=array.chunks,
            dtype=array.dtype,
            fill_value=0,
            compressors=array.compressors,  # (each array's chosen shuffle)
            chunk_key_encoding={"name": "default", "separator": "."},
            config={"write_empty_chunks": True},
            dimension_names=array.metadata.dimension_names,
            attributes=dict(array.attrs),
        )
    for document in documents:
        assert (ours / document).read_bytes() == (theirs / document).read_bytes(), document
    loaded = load_recording(ours)
    assert loaded.complete and len(loaded) == 9
    np.testing.assert_array_equal(loaded.data["a.pos"][:, 0], np.arange(9, dtype=np.float32))


@pytest.mark.parametrize("level", [0, 4])
@pytest.mark.parametrize("dtype", _CORE_DTYPES)
def test_stored_arrays_read_what_zarr_reads(tmp_path, dtype, level):
    """The reader's own chunk decoding against zarr reading the same files."""
    from runtime.recording._stored import StoredArray
    from runtime.recording.reader import _document

    rows, chunk, shape = 23, 5, (3, 2)
    rng = np.random.default_rng(7)
    values = (rng.standard_normal((rows, *shape)) * 50).astype(dtype)
    path = tmp_path / "r.zarr"
    writer = StoreWriter(path, chunk_rows=chunk, compression_level=level, durable=False)
    writer.add_channel(ChannelInfo("v", shape, dtype))
    for k in range(rows):
        buffers, row = writer.begin_row()
        buffers[0][row] = values[k]
        writer.end_row(k, 0.0)
    writer.close()
    ours = StoredArray.open(path / "v", _document(path / "v"))
    theirs = zarr.open_array(path / "v", mode="r")
    assert ours is not None and ours.shape == theirs.shape and ours.chunks == theirs.chunks
    for start, stop in [(0, rows), (3, 4), (4, 16), (10, 10), (20, 23), (0, 99)]:
        mine = ours[start:stop]
        assert mine.dtype == theirs.dtype
        np.testing.assert_array_equal(mine, theirs[start:stop])
    np.testing.assert_array_equal(ours[0:rows], values)
    chunk_file = path / "v" / "c.1.0.0"
    data = bytearray(chunk_file.read_bytes())
    data[0] ^= 0x01
    chunk_file.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum"):
        ours[5:6]
    with pytest.raises(ValueError, match="checksum"):  # zarr agrees
        theirs[5:6]


def test_a_store_rewritten_by_zarr_is_read_through_zarr(tmp_path):
    """A document the writer never writes (here gzip instead of blosc) is zarr's to read."""
    from zarr.codecs import GzipCodec

    from runtime.recording._stored import StoredArray
    from runtime.recording.reader import _document

    path = tmp_path / "r.zarr"
    writer = StoreWriter(path, durable=False)
    writer.add_channel(ChannelInfo("v", (2,), "float32"))
    for k in range(6):
        buffers, row = writer.begin_row()
        buffers[0][row] = [k, -k]
        writer.end_row(k, k * 0.1)
    writer.close()
    attrs = dict(zarr.open_array(path / "v", mode="r").attrs)
    values = np.stack([np.arange(6), -np.arange(6)], axis=1).astype(np.float32)
    rewritten = zarr.create_array(
        path / "v",
        shape=(6, 2),
        chunks=(4, 2),
        dtype="float32",
        compressors=[GzipCodec()],
        dimension_names=["row", "v.0"],
        attributes=attrs,
        overwrite=True,
    )
    rewritten[:] = values
    assert StoredArray.open(path / "v", _document(path / "v")) is None
    np.testing.assert_array_equal(load_recording(path).data["v"], values)


def test_a_bad_compressor_or_level_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="compressor must be one of"):
        StoreWriter(tmp_path / "a.zarr", compressor="gzip")
    with pytest.raises(ValueError, match="compression_level must be 0..9"):
        StoreWriter(tmp_path / "b.zarr", compression_level=12)
    assert not (tmp_path / "a.zarr").exists() and not (tmp_path / "b.zarr").exists()


def test_chunk_files_made_ahead_leave_no_stray_files(tmp_path):
    """The writer thread makes the next chunk's file ahead of its write; a run of known
    length ends with no file past its last chunk (and no folder per chunk), and an empty run
    still loads."""
    path = tmp_path / "r.zarr"
    writer = StoreWriter(path, expected_rows=40, chunk_rows=20)
    writer.add_channel(ChannelInfo("v", (2,), "float32"))
    for k in range(40):
        buffers, row = writer.begin_row()
        buffers[0][row] = (k, -k)
        writer.end_row(k, 0.1 * k)
    writer.close()
    files = sorted(p.name for p in (path / "v").iterdir())
    assert files == ["c.0.0", "c.1.0", "zarr.json"]
    assert len(load_recording(path).time) == 40
    empty = tmp_path / "empty.zarr"
    writer = StoreWriter(empty, expected_rows=10)
    writer.add_channel(ChannelInfo("v", (2,), "float32"))
    writer.begin_row()  # opened, no row ended
    writer.close()
    assert len(load_recording(empty).time) == 0
    assert zarr.open_group(empty, mode="r")["v"].shape == (0, 2)


def _blosc_shuffle(chunk: bytes) -> str:
    """The shuffle a Blosc frame was written with, from its header's flags byte."""
    flags = chunk[2]
    return "bitshuffle" if flags & 0x4 else "shuffle" if flags & 0x1 else "noshuffle"


def _check_shuffles(store):
    """Each array's shuffle, checked against every chunk's Blosc header."""
    chosen = {}
    for document_path in store.rglob("zarr.json"):
        document = json.loads(document_path.read_text())
        blosc = [c for c in document.get("codecs", []) if c["name"] == "blosc"]
        if not blosc:
            continue
        key = str(document_path.parent.relative_to(store))
        chosen[key] = blosc[0]["configuration"]["shuffle"]
        for path in sorted(document_path.parent.glob("c.*")):
            if path.is_file():
                assert _blosc_shuffle(path.read_bytes()) == chosen[key], path
    return chosen


def test_a_panda_run_stores_its_lidar_unshuffled(tmp_path):
    """A real run's arrays: the lidar's scan arrays (most of a row's bytes) unshuffled."""
    pytest.importorskip("mujoco")
    from pathlib import Path

    from runtime.run.loop import run_scene

    scene = Path(__file__).resolve().parents[1] / "scenes" / "panda_table.usda"
    out = tmp_path / "run.zarr"
    run_scene(str(scene), steps=120, out=out, summary=False)
    chosen = _check_shuffles(out)
    assert chosen["World.LidarMount.Lidar.hit_positions"] == "noshuffle"
    assert chosen["World.Panda.positions"] == chosen["step"] == "shuffle"
    group = zarr.open_group(out, mode="r")
    loaded = load_recording(out)
    np.testing.assert_array_equal(group["World.LidarMount.Lidar.depths"][:],
                                  loaded.data["/World/LidarMount/Lidar.depths"])  # fmt: skip


def test_each_array_keeps_the_shuffle_its_first_chunk_chose(tmp_path):
    """A scan that sees nothing (every ray at its range) is stored unshuffled, a ramp
    shuffled; every chunk's Blosc header agrees with its array's document, and zarr reads
    what was written."""
    rows, chunk = 450, 200
    scan = np.full((rows, 720), 5.0, np.float32)
    ramp = np.linspace(0.0, 1.0, rows * 16).reshape(rows, 16)
    ours = tmp_path / "ours.zarr"
    writer = StoreWriter(ours, chunk_rows=chunk, expected_rows=rows)
    writer.add_channel(ChannelInfo("scan", (720,), "float32"))
    writer.add_channel(ChannelInfo("pos", (16,), "float64"))
    for k in range(rows):
        buffers, row = writer.begin_row()
        buffers[0][row], buffers[1][row] = scan[k], ramp[k]
        writer.end_row(k + 1, k * 0.01)
    writer.close()
    chosen = _check_shuffles(ours)
    assert chosen["scan"] == "noshuffle" and chosen["pos"] == "shuffle"
    group = zarr.open_group(ours, mode="r")
    np.testing.assert_array_equal(group["scan"][:], scan)
    np.testing.assert_array_equal(group["pos"][:], ramp)


def test_a_store_written_with_slash_chunk_keys_still_loads(tmp_path):
    """Stores of earlier versions name chunks ``c/<row>/0`` (folders per row chunk): they
    load as before, checksums and all; a chunk missing there is still damage."""
    path = tmp_path / "r.zarr"
    values = np.arange(46, dtype=np.float32).reshape(23, 2)
    writer = StoreWriter(path, chunk_rows=5, durable=False)
    writer.add_channel(ChannelInfo("v", (2,), "float32"))
    for k in range(23):
        buffers, row = writer.begin_row()
        buffers[0][row] = values[k]
        writer.end_row(k, 0.1 * k)
    writer.close()
    moved = 0
    for document_path in path.rglob("zarr.json"):
        document = json.loads(document_path.read_text())
        if document.get("node_type") != "array":
            continue
        document["chunk_key_encoding"]["configuration"]["separator"] = "/"
        document_path.write_text(json.dumps(document, indent=2))
        for chunk in sorted(document_path.parent.glob("c.*")):
            target = chunk.parent / "/".join(chunk.name.split("."))
            target.parent.mkdir(parents=True, exist_ok=True)
            chunk.rename(target)
            moved += 1
    assert moved > 0 and (path / "v" / "c" / "4" / "0").is_file()
    loaded = load_recording(path)
    assert loaded.complete
    np.testing.assert_array_equal(loaded.data["v"], values)
    np.testing.assert_array_equal(zarr.open_array(path / "v", mode="r")[:], values)
    (path / "v" / "c" / "2" / "0").unlink()
    assert len(load_recording(path)) == 10  # the data ends where the missing chunk was
