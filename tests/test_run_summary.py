"""A run's summary is streamed by the store's writer: it must equal the store read back.

The reference is :func:`summarize` over the store opened from disk after the run (the
reader's own decoding path), on scenes with contact, IMU and raycast sensors: with the
default chunks, with tiny chunks whose tail is written partially and then whole (the
commit interval), and with an observer that fails (the run falls back to reading).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")

from runtime.recording import open_recording  # noqa: E402
from runtime.run import summary as summary_module  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402
from runtime.run.summary import summarize  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _read_back(out: Path, result) -> tuple[dict, dict]:
    expected = summarize(open_recording(out))
    got = {key: value for key, value in result.summary.items() if key in expected}
    return expected, got


@pytest.mark.parametrize(
    ("scene", "steps", "options"),
    [
        ("simple_arm.usda", 400, {}),
        ("simple_arm.usda", 400, {"chunk_rows": 37, "commit_interval": 1e-4}),
        ("panda_table.usda", 300, {"chunk_rows": 64}),
    ],
)
def test_streamed_summary_equals_the_store_read_back(tmp_path, scene, steps, options):
    out = tmp_path / "run.zarr"
    result = run_scene(str(REPO / "scenes" / scene), steps=steps, out=out, store_options=options)
    expected, got = _read_back(out, result)
    assert expected["steps"] == steps
    assert any(stats.get("hits") for stats in expected["sensors"].values())
    assert got == expected


def test_partial_chunks_are_replaced_not_counted_twice(tmp_path, monkeypatch):
    seen = []
    original = summary_module.StreamingSummary.observe

    def observe(self, start, rows, buffers):
        seen.append((start, rows))
        original(self, start, rows, buffers)

    monkeypatch.setattr(summary_module.StreamingSummary, "observe", observe)
    out = tmp_path / "run.zarr"
    options = {"chunk_rows": 50, "commit_interval": 1e-4}
    result = run_scene(str(REPO / "scenes" / "simple_arm.usda"), steps=230, out=out,
                       store_options=options)  # fmt: skip
    starts = [start for start, _ in seen]
    assert len(starts) > len(set(starts))  # some chunk was observed partially, then whole
    expected, got = _read_back(out, result)
    assert got == expected and got["steps"] == 230


def test_a_failing_observer_falls_back_to_reading_the_store(tmp_path, monkeypatch, caplog):
    def observe(self, start, rows, buffers):
        raise ValueError("observer broke")

    monkeypatch.setattr(summary_module.StreamingSummary, "observe", observe)
    out = tmp_path / "run.zarr"
    with caplog.at_level(logging.WARNING):
        result = run_scene(str(REPO / "scenes" / "simple_arm.usda"), steps=120, out=out)
    assert "observer failed" in caplog.text
    assert result.complete and result.steps == 120
    expected, got = _read_back(out, result)
    assert got == expected and got["steps"] == 120
