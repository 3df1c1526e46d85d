"""The scene cache: a hit runs exactly like a fresh build; edits miss; bad entries rebuild."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")

from runtime.recording import load_recording  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("SIMRT_CACHE_DIR", str(folder))
    return folder


def _entries(folder: Path) -> list[Path]:
    return [p for p in folder.glob("*/*") if p.is_dir() and not p.name.startswith(".tmp")]


def _same(a: Path, b: Path) -> None:
    x, y = load_recording(a), load_recording(b)
    assert len(x) == len(y) > 0
    for name, values in x.data.items():
        np.testing.assert_array_equal(values, y.data[name], err_msg=name)


def test_cached_runs_equal_fresh_builds_bit_for_bit(tmp_path, cache_dir):
    scene = REPO / "scenes" / "panda_table.usda"
    run_scene(str(scene), steps=60, out=tmp_path / "fresh.zarr", cache=False)
    assert not cache_dir.exists()  # cache=False neither reads nor writes
    run_scene(str(scene), steps=60, out=tmp_path / "first.zarr")  # builds and stores
    (entry,) = _entries(cache_dir)
    assert {"model.mjb", "built.npz", "rayscene.npz"} <= {p.name for p in entry.iterdir()}
    run_scene(str(scene), steps=60, out=tmp_path / "hit.zarr")  # from the cache
    _same(tmp_path / "fresh.zarr", tmp_path / "first.zarr")
    _same(tmp_path / "fresh.zarr", tmp_path / "hit.zarr")


def test_an_edited_layer_misses_and_a_corrupt_entry_is_rebuilt(tmp_path, cache_dir, caplog):
    scene = tmp_path / "arm.usda"
    shutil.copyfile(REPO / "scenes" / "simple_arm.usda", scene)
    run_scene(str(scene), steps=20, out=tmp_path / "a.zarr")
    assert len(_entries(cache_dir)) == 1
    scene.write_text(scene.read_text() + "\n# an edit\n")
    run_scene(str(scene), steps=20, out=tmp_path / "b.zarr")
    assert len(_entries(cache_dir)) == 2  # the edit is another key
    newest = max(_entries(cache_dir), key=lambda p: p.stat().st_mtime)
    (newest / "model.mjb").write_bytes(b"garbage")  # corrupt: the checksum catches it
    with caplog.at_level(logging.WARNING, logger="runtime.run.scene_cache"):
        run_scene(str(scene), steps=20, out=tmp_path / "c.zarr")
    assert "model.mjb" in caplog.text or "built.npz" in caplog.text
    assert "rebuilding" in caplog.text
    _same(tmp_path / "b.zarr", tmp_path / "c.zarr")
    assert len(_entries(cache_dir)) == 2


def test_an_unsaved_edit_of_an_open_stage_misses(tmp_path, cache_dir):
    """A stage edited in memory and run without saving is keyed by its edited text, not by
    the file on disk: the run builds the edited scene (here: a weaker gravity)."""
    from pxr import Usd, UsdPhysics

    from runtime.run.scene_cache import scene_key

    scene = tmp_path / "arm.usda"
    shutil.copyfile(REPO / "scenes" / "simple_arm.usda", scene)
    stage = Usd.Stage.Open(str(scene))
    clean = scene_key(stage, dt=None)
    run_scene(stage, steps=5, out=tmp_path / "a.zarr")
    physics = next(p for p in stage.Traverse() if p.IsA(UsdPhysics.Scene))
    UsdPhysics.Scene(physics).CreateGravityMagnitudeAttr().Set(1.0)
    assert stage.GetRootLayer().dirty
    assert scene_key(stage, dt=None) != clean
    run_scene(stage, steps=5, out=tmp_path / "b.zarr")
    assert len(_entries(cache_dir)) == 2
    fresh = tmp_path / "fresh.usda"
    stage.GetRootLayer().Export(str(fresh))
    run_scene(str(fresh), steps=5, out=tmp_path / "c.zarr", cache=False)
    _same(tmp_path / "b.zarr", tmp_path / "c.zarr")  # the edited scene, built afresh
    before, after = load_recording(tmp_path / "a.zarr"), load_recording(tmp_path / "c.zarr")
    assert any(not np.array_equal(v, after.data[k]) for k, v in before.data.items())
