"""Batch specs are checked against their scenes before any worker starts (one line per
problem naming the spec key); counts are bounded; episode lists are lazy."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("mujoco")
pytest.importorskip("pyarrow")

from runtime.batch import load_dataset, load_spec, plan_tasks, run_batch  # noqa: E402
from runtime.batch.spec import MAX_EPISODES  # noqa: E402
from runtime.errors import SimrtError  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PANDA = REPO / "scenes" / "panda_table.usda"


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


def test_scenes_that_cannot_work_fail_before_any_worker_with_one_line_each(tmp_path):
    (tmp_path / "folder.usda").mkdir()
    spec = _spec(
        tmp_path,
        f"""episodes = 2
[[scenes]]
path = "missing.usda"
[[scenes]]
path = "folder.usda"
[[scenes]]
path = "/etc/passwd"
[[scenes]]
path = "{PANDA}"
[[randomize.ik]]
link = "no_such_hand"
time = 0.1
box_min = [0.4, 0.0, 0.5]
box_max = [0.5, 0.1, 0.6]
[[randomize.objects]]
path = "/World/Panda/Geometry/panda_link0/panda_link1/panda_link2/panda_link3"
[[randomize.objects]]
path = "/World/Nothing"
""",
    )
    began = time.perf_counter()
    with pytest.raises(SimrtError) as error:
        run_batch(spec, tmp_path / "ds", workers=2)
    lines = str(error.value).splitlines()
    assert all(line.startswith(f"{spec}: ") for line in lines)
    text = "\n".join(lines)
    assert "scenes[0].path: " in text and "missing.usda: no such file" in text
    assert "scenes[1].path: " in text and "folder.usda: not a file" in text
    assert "scenes[2].path: " in text and "/etc/passwd" in text
    assert "randomize.ik[0].link: 'no_such_hand' is not a link of /World/Panda" in text
    assert "randomize.objects[0].path: /World/Panda/Geometry/panda_link0/panda_link1/" in text
    assert "panda_link3: not a free body (a joint holds it)" in text
    assert "randomize.objects[1].path: /World/Nothing: no such prim" in text
    assert not (tmp_path / "ds").exists()  # nothing made, no worker started
    assert time.perf_counter() - began < 60


def test_episode_counts_are_bounded_and_tasks_lazy(tmp_path):
    spec = _spec(tmp_path, f'episodes = 1000000000\n[[scenes]]\npath = "{PANDA}"\n')
    began = time.perf_counter()
    with pytest.raises(SimrtError, match="episodes: 1000000000 episodes in all; a batch holds"):
        load_spec(spec)
    assert time.perf_counter() - began < 1.0
    ok = load_spec(_spec(tmp_path, f'episodes = 3\n[[scenes]]\npath = "{PANDA}"\n'))
    huge = dataclasses.replace(
        ok, scenes=(dataclasses.replace(ok.scenes[0], episodes=10**9),)
    )  # (built in code, not parsed)
    began = time.perf_counter()
    with pytest.raises(SimrtError, match=f"a batch holds at most {MAX_EPISODES:,}"):
        plan_tasks(huge, tmp_path / "ds")
    assert time.perf_counter() - began < 1.0
    two = dataclasses.replace(
        ok, scenes=(ok.scenes[0], dataclasses.replace(ok.scenes[0], path="other.usda"))
    )
    tasks = plan_tasks(two, tmp_path / "ds")
    assert len(tasks) == 6 and [t.episode for t in tasks] == list(range(6))
    assert tasks[4].scene == "other.usda" and tasks[2].scene == str(PANDA)
    assert tasks[-1].episode == 5 and [t.episode for t in tasks[1:3]] == [1, 2]
    with pytest.raises(IndexError):
        tasks[6]


def test_a_broken_params_row_is_named(tmp_path):
    scene = tmp_path / "arm.usda"
    shutil.copyfile(REPO / "scenes" / "simple_arm.usda", scene)
    spec = _spec(tmp_path, f'episodes = 1\nsteps = 3\n[[scenes]]\npath = "{scene}"\n')
    assert run_batch(spec, tmp_path / "ds", workers=0).done == 1
    import pyarrow.parquet as pq

    manifest = tmp_path / "ds" / "manifest.parquet"
    table = pq.read_table(manifest)
    rows = table.to_pylist()
    rows[0]["params"] = "{not json"
    pq.write_table(table.from_pylist(rows, schema=table.schema), manifest)
    entry = load_dataset(tmp_path / "ds")[0]
    with pytest.raises(SimrtError, match=r"manifest.parquet: episode 0: params is not a JSON"):
        _ = entry.params
    assert json.loads((tmp_path / "ds" / "dataset.json").read_text())["format"]


def test_a_refused_resume_lists_only_the_keys_that_changed(tmp_path):
    scene = tmp_path / "arm.usda"
    shutil.copyfile(REPO / "scenes" / "simple_arm.usda", scene)
    text = f'episodes = 1\nsteps = 3\nimu_mode = ["isaac"]\n[[scenes]]\npath = "{scene}"\n'
    assert run_batch(_spec(tmp_path, text), tmp_path / "ds", workers=0).done == 1
    with pytest.raises(SimrtError, match=r"differs in steps\)"):
        run_batch(_spec(tmp_path, text.replace("steps = 3", "steps = 4")), tmp_path / "ds")
