"""A run never destroys what the user did not name: the store beside an export file, the
previous store until the new run committed rows, scratch stores left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")

from runtime.errors import SimrtError  # noqa: E402
from runtime.recording import load_recording  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ARM = REPO / "scenes" / "simple_arm.usda"


def test_an_export_refuses_to_replace_a_store_it_did_not_record(tmp_path, capsys):
    from runtime.cli import main

    own = tmp_path / "run.zarr"
    run_scene(str(ARM), steps=7, out=own)  # the user's own store
    before = sorted(p.relative_to(own) for p in own.rglob("*"))
    code = main(
        ["run", str(ARM), "--steps", "3", "--out", str(tmp_path / "run.npz"), "--no-progress"]
    )
    err = capsys.readouterr().err
    assert code == 1 and f"{own}: exists and was not recorded for run.npz" in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.relative_to(own) for p in own.rglob("*")) == before
    assert len(load_recording(own)) == 7 and not (tmp_path / "run.npz").exists()
    # --force replaces it; then it is the export's store, replaced by the next export run
    args = ["run", str(ARM), "--steps", "3", "--out", str(tmp_path / "run.npz"), "--no-progress"]
    assert main([*args, "--force"]) == 0
    assert len(load_recording(own)) == 3
    assert main([*args[:3], "4", *args[4:]]) == 0
    assert len(load_recording(own)) == 4 and len(load_recording(tmp_path / "run.npz")) == 4


class _Failing:
    """An engine factory whose engine fails at its first step."""

    def __call__(self, stage, **options):
        from runtime.engine.mujoco_engine import MujocoEngine

        class Engine(MujocoEngine):
            def step(self, *args, **kwargs):
                raise RuntimeError("the first step failed")

        return Engine(stage, **options)


def test_the_previous_store_is_kept_until_the_new_run_commits_rows(tmp_path, caplog):
    out = tmp_path / "run.zarr"
    run_scene(str(ARM), steps=9, out=out)
    with pytest.raises(RuntimeError, match="the first step failed"):
        run_scene(str(ARM), steps=5, out=out, engine_factory=_Failing())
    assert len(load_recording(out)) == 9  # the failed run recorded nothing: kept
    assert "the previous recording there is kept" in caplog.text
    assert not list(tmp_path.glob(".run.zarr.replaced-*"))
    run_scene(str(ARM), steps=4, out=out)  # a run with rows replaces it
    assert len(load_recording(out)) == 4
    assert not list(tmp_path.glob(".run.zarr.replaced-*"))


def test_scratch_stores_are_removed_after_the_run_on_failure_and_after_a_kill(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    root = tmp_path / f"simrt-scratch-{os.getuid()}"
    cmd = [sys.executable, "-m", "runtime.cli", "run", str(ARM), "--no-progress"]
    done = subprocess.run([*cmd, "--steps", "5"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert root.is_dir() and (root.stat().st_mode & 0o777) == 0o700
    assert not list(root.iterdir())  # removed after the summary
    # a run that fails after its scratch folder was made: removed when the process exits
    failed = subprocess.run(
        [*cmd, "--steps", "5", "--robot", "/World/NoSuchRobot"], env=env, capture_output=True
    )
    assert failed.returncode != 0
    assert not list(root.iterdir())
    # a SIGKILLed run's folder (its process is gone) is removed by the next run
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = root / f"run-{dead.pid}-abc"
    (leftover / "run.zarr").mkdir(parents=True)
    done = subprocess.run([*cmd, "--steps", "2"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not leftover.exists()


def test_an_unusable_scratch_root_is_refused(tmp_path, monkeypatch):
    from runtime.run.outputs import scratch_folder

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    root = tmp_path / f"simrt-scratch-{os.getuid()}"
    root.symlink_to(tmp_path)
    with pytest.raises(SimrtError, match="not this user's own folder"):
        scratch_folder()
