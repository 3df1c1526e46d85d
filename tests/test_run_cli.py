"""`simrt run` command line on the Panda scene: JSON summary, overrides, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from runtime.cli import main  # noqa: E402
from runtime.engine.recorder import load_recording  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCENE = str(REPO / "scenes" / "panda_table.usda")


def test_cli_run_json_summary_and_overrides(tmp_path, capsys):
    out = tmp_path / "r.npz"
    code = main(["run", SCENE, "--steps", "60", "--dt", "0.004", "--out", str(out), "--json",
                 "--imu-mode", "isaac", "--ik-target", "panda_hand=0.5,0,0.7,0,1,0,0@0.1",
                 "--ik-every", "5", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    payload = json.loads(captured.out)
    assert payload["steps"] == 60 and payload["complete"] and payload["out"] == str(out)
    assert payload["summary"]["ik"]["solves"] == 12  # every 5 steps
    sensors = payload["summary"]["sensors"]
    kinds = sorted(stats["kind"] for stats in sensors.values())
    assert kinds == ["contact", "contact", "imu", "raycast"]
    rec = load_recording(out)
    assert len(rec) == 60 and rec.run["imu_mode"] == "isaac"
    np.testing.assert_allclose(rec.time, 0.004 * np.arange(1, 61), rtol=1e-9)
    assert rec.run["ik_targets"][0]["position"] == [0.5, 0.0, 0.7]
    # IK targets of the 7 arm joints were sent; the fingers keep their authored targets
    targets = rec.data[f"{rec.run['robot']}.targets"]
    assert np.isfinite(targets[-1, :7]).all() and np.isnan(targets[-1, 7:]).all()


def test_cli_run_bad_ik_link_is_one_line_error(tmp_path, capsys):
    code = main(["run", SCENE, "--steps", "5", "--ik-target", "no_such_link=0.5,0,0.7",
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert "no_such_link" in err and "/World/Panda" in err and "Traceback" not in err


def test_cli_run_parquet_without_pyarrow(tmp_path, capsys):
    pytest.importorskip("mujoco")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        code = main(["run", SCENE, "--steps", "5", "--out", str(tmp_path / "r.parquet")])
        assert code == 1
        assert "pyarrow" in capsys.readouterr().err
    else:
        pytest.skip("pyarrow installed")
