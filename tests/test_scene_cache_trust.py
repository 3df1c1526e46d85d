"""The scene cache trusts nothing it reads: plain data only, private folders, entries
checked against the scene they are used for (docs/guides/integrity.md)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pathlib
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")

from runtime.recording import load_recording  # noqa: E402
from runtime.run._plain_data import PlainDataError, read_plain, write_plain  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ARM = REPO / "scenes" / "simple_arm.usda"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("SIMRT_CACHE_DIR", str(folder))
    return folder


class _Payload:
    """Unpickling this creates the marker file (what an attacker's entry would do)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def _entries(folder: Path) -> list[Path]:
    return [p for p in folder.glob("*/*") if p.is_dir() and not p.name.startswith(".tmp")]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _reseal(entry: Path, key: str | None = None) -> None:
    """Rewrite the entry's manifest so that every checksum (and the key) is consistent."""
    manifest = json.loads((entry / "manifest.json").read_text())
    if key is not None:
        manifest["key"] = key
    manifest["files"] = {p.name: _sha(p) for p in entry.iterdir() if p.name != "manifest.json"}
    (entry / "manifest.json").write_text(json.dumps(manifest))


def _same(a: Path, b: Path) -> None:
    x, y = load_recording(a), load_recording(b)
    assert len(x) == len(y) > 0
    for name, values in x.data.items():
        np.testing.assert_array_equal(values, y.data[name], err_msg=name)


def test_pickle_payloads_planted_in_an_entry_never_run(tmp_path, cache_dir, caplog):
    scene = tmp_path / "arm.usda"
    shutil.copyfile(ARM, scene)
    run_scene(str(scene), steps=10, out=tmp_path / "fresh.zarr", cache=False)
    run_scene(str(scene), steps=10, out=tmp_path / "a.zarr")
    (entry,) = _entries(cache_dir)
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Payload(marker))
    # every name the cache reads or ever read, as a raw pickle or an object array
    for name in ("built.pkl", "rayscene.pkl", "rayscene.npz"):
        (entry / name).write_bytes(payload)
    objects = np.empty(1, object)
    objects[0] = _Payload(marker)
    with open(entry / "built.npz", "wb") as handle:
        np.savez(handle, __plain__=np.frombuffer(b"{}", np.uint8), a0=objects)
    _reseal(entry)  # checksums match: only the format stands between the file and code
    with caplog.at_level(logging.WARNING, logger="runtime.run.scene_cache"):
        run_scene(str(scene), steps=10, out=tmp_path / "b.zarr")
    assert not marker.exists()
    assert "rebuilding" in caplog.text
    _same(tmp_path / "fresh.zarr", tmp_path / "b.zarr")
    with pytest.raises(PlainDataError):
        read_plain(entry.parent / "missing.npz")
    # the reader itself: a pickled member is refused, never loaded
    bad = tmp_path / "bad.npz"
    np.savez(bad, __plain__=np.frombuffer(b'{"meta":{},"value":null}', np.uint8), a0=objects)
    with pytest.raises(PlainDataError):
        read_plain(bad)
    assert not marker.exists()


def test_plain_data_round_trips_and_refuses_unlisted_classes(tmp_path):
    shared = np.arange(6.0).reshape(2, 3)
    value = {
        "t": (1, 2.5, float("inf"), None, True, "x"),
        "l": [shared, shared, np.int64(7), np.float32(0.1), np.bool_(True)],
        "n": {"inner": np.zeros(3, np.int64)},
    }
    path = tmp_path / "v.npz"
    write_plain(path, value, key="k")
    back, meta = read_plain(path)
    assert meta == {"key": "k"}
    assert back["t"] == value["t"] and type(back["t"]) is tuple
    assert back["l"][0] is back["l"][1]  # one array held twice stays one
    np.testing.assert_array_equal(back["l"][0], shared)
    assert back["l"][2] == 7 and back["l"][2].dtype == np.int64
    assert back["l"][3] == np.float32(0.1) and back["l"][4] is np.bool_(True)
    with pytest.raises(PlainDataError):
        write_plain(path, {"x": _Payload(path)})
    write_plain(path, {"x": _Payload(str(tmp_path / "m"))}, classes=(_Payload,))
    with pytest.raises(PlainDataError, match="not allowed"):
        read_plain(path)  # the reader did not list the class


@pytest.mark.parametrize("asked", [None, 0.003])
def test_a_forged_consistent_entry_for_another_dt_is_rebuilt(tmp_path, cache_dir, caplog, asked):
    """An entry built with dt = 4 ms, planted (key, checksums and all) under the key of the
    scene's own dt (or of 3 ms): the model's time step gives it away; it is rebuilt."""
    from pxr import Usd

    from runtime.run.scene_cache import scene_key

    scene = tmp_path / "arm.usda"
    shutil.copyfile(ARM, scene)
    run_scene(str(scene), steps=30, out=tmp_path / "fresh.zarr", cache=False, dt=asked)
    run_scene(str(scene), steps=5, out=tmp_path / "other.zarr", dt=0.004)
    (forged,) = _entries(cache_dir)
    key = scene_key(Usd.Stage.Open(str(scene)), dt=asked)
    target = cache_dir / key[:2] / key
    target.parent.mkdir(mode=0o700, exist_ok=True)
    shutil.copytree(forged, target)
    for name in ("built.npz", "rayscene.npz"):
        value, meta = read_plain(target / name, _classes())
        meta["key"] = key
        write_plain(target / name, value, _classes(), **meta)
    _reseal(target, key)
    with caplog.at_level(logging.WARNING, logger="runtime.run.scene_cache"):
        run_scene(str(scene), steps=30, out=tmp_path / "run.zarr", dt=asked)
    assert "time step 0.004 is not the scene's" in caplog.text
    _same(tmp_path / "fresh.zarr", tmp_path / "run.zarr")


def _classes():
    from runtime.engine._build_types import DofBinding
    from runtime.rays._shapes import SolidShape
    from runtime.rays.backends import NumbaBvhBackend

    return (DofBinding, SolidShape, NumbaBvhBackend)


def test_a_swapped_model_of_another_scene_is_rebuilt(tmp_path, cache_dir, caplog):
    """Another scene's model.mjb (same time step, checksums resealed): no traceback, a
    rebuild, and the run is the fresh build's."""
    import mujoco

    scene = tmp_path / "arm.usda"
    shutil.copyfile(ARM, scene)
    run_scene(str(scene), steps=10, out=tmp_path / "fresh.zarr", cache=False)
    run_scene(str(scene), steps=10, out=tmp_path / "a.zarr")
    (entry,) = _entries(cache_dir)
    other = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body><freejoint/><geom size='0.1'/></body></worldbody></mujoco>"
    )
    other.opt.timestep = float(read_plain(entry / "built.npz", _classes())[0]["dt"])
    mujoco.mj_saveModel(other, str(entry / "model.mjb"), None)
    _reseal(entry)
    with caplog.at_level(logging.WARNING, logger="runtime.run.scene_cache"):
        run_scene(str(scene), steps=10, out=tmp_path / "b.zarr")
    assert "rebuilding" in caplog.text
    _same(tmp_path / "fresh.zarr", tmp_path / "b.zarr")


def test_cache_folders_are_private_and_foreign_ones_refused(tmp_path, cache_dir, caplog):
    scene = tmp_path / "arm.usda"
    shutil.copyfile(ARM, scene)
    run_scene(str(scene), steps=5, out=tmp_path / "a.zarr")
    (entry,) = _entries(cache_dir)
    assert cache_dir.stat().st_mode & 0o777 == 0o700
    assert entry.parent.stat().st_mode & 0o777 == 0o700
    assert all(p.stat().st_mode & 0o077 == 0 for p in entry.iterdir())
    os.chmod(cache_dir, 0o777)  # shared with everyone: refused, the run builds without it
    marker_before = sorted(p.name for p in entry.iterdir())
    with caplog.at_level(logging.WARNING, logger="runtime.run.scene_cache"):
        result = run_scene(str(scene), steps=5, out=tmp_path / "b.zarr")
    assert "writable by group or others" in caplog.text and "refused" in caplog.text
    assert len(caplog.text.strip().splitlines()) >= 1
    assert sorted(p.name for p in entry.iterdir()) == marker_before  # untouched
    assert result.steps == 5
    _same(tmp_path / "a.zarr", tmp_path / "b.zarr")
    os.chmod(cache_dir, 0o700)
    if os.getuid() != 0:
        return  # (giving a file to another user needs root)
    caplog.clear()
    os.chown(entry / "built.npz", 65534, 65534)
    with caplog.at_level(logging.WARNING, logger="runtime.run.scene_cache"):
        run_scene(str(scene), steps=5, out=tmp_path / "c.zarr")
    assert "owned by uid 65534" in caplog.text
    assert (entry / "built.npz").stat().st_uid == 65534  # refused, not removed
    _same(tmp_path / "a.zarr", tmp_path / "c.zarr")
