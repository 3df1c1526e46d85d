"""Datasets know their scenes' content: a resume or an ``--episode`` whose scene files
changed is refused naming the file, or run on an explicit flag and recorded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")
pytest.importorskip("pyarrow")

from runtime.batch import run_batch  # noqa: E402
from runtime.errors import SimrtError  # noqa: E402
from runtime.recording import open_recording  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _small_dataset(tmp_path: Path) -> tuple[Path, Path, Path]:
    scene = tmp_path / "arm.usda"
    shutil.copyfile(REPO / "scenes" / "simple_arm.usda", scene)
    spec = tmp_path / "spec.toml"
    spec.write_text(f'seed = 3\nepisodes = 2\nsteps = 5\n[[scenes]]\npath = "{scene}"\n')
    summary = run_batch(spec, tmp_path / "ds", workers=0, retries=0)
    assert summary.done == 2
    return scene, spec, tmp_path / "ds"


def test_a_changed_scene_refuses_resume_and_episode_unless_allowed(tmp_path, capsys):
    from runtime.cli import main

    scene, spec, ds = _small_dataset(tmp_path)
    recorded = json.loads((ds / "dataset.json").read_text())["scenes"]
    assert str(scene) in recorded[str(scene)]  # the layer file's digest, by path
    # unchanged: resume and --episode run
    assert run_batch(spec, ds, workers=0).skipped == 2
    out = tmp_path / "again.zarr"
    assert main(["run", "--episode", f"{ds}:1", "--out", str(out), "--no-progress"]) == 0
    # the scene's content changes (its path does not)
    scene.write_text(scene.read_text().replace("0.5", "0.55", 1))
    with pytest.raises(SimrtError, match=f"{scene} changed since the dataset was made"):
        run_batch(spec, ds, workers=0)
    capsys.readouterr()
    code = main(["run", "--episode", f"{ds}:1", "--out", str(tmp_path / "x.zarr"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and f"{scene} changed" in err and "--allow-changed-scene" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.zarr").exists()
    # allowed: runs, and says so where it is kept
    summary = run_batch(spec, ds, workers=0, allow_changed_scene=True)
    assert summary.skipped == 2
    changes = json.loads((ds / "dataset.json").read_text())["scene_changes"]
    assert changes[-1]["changes"] == [f"{scene}: {scene} changed"]
    # the dataset now holds the new content: an --episode of an old episode is refused
    # no more by the dataset, but the record of the change stays
    scene.write_text(scene.read_text() + "\n# another edit\n")
    code = main(
        [
            "run",
            "--episode",
            f"{ds}:1",
            "--out",
            str(tmp_path / "y.zarr"),
            "--no-progress",
            "--allow-changed-scene",
        ]
    )
    assert code == 0
    run = open_recording(tmp_path / "y.zarr").run
    assert run["scene_changed"] == [f"{scene} changed"]


def test_a_new_sublayer_is_a_change(tmp_path):
    scene, spec, ds = _small_dataset(tmp_path)
    extra = tmp_path / "extra.usda"
    extra.write_text("#usda 1.0\n")
    text = scene.read_text()
    head, _, rest = text.partition("(\n")
    if not rest:
        pytest.skip("scene without a layer metadata block")
    scene.write_text(f"{head}(\n    subLayers = [@./extra.usda@]\n{rest}")
    with pytest.raises(SimrtError, match="changed since the dataset was made"):
        run_batch(spec, ds, workers=0)
