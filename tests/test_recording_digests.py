"""Recordings of the shipped scenes are bit-identical to those made before the restructuring.

``tests/data/recording_digests.json`` holds the SHA-256 of every channel of short runs of
four shipped scenes, written by the code of commit d7e65ae (before session 14 moved the ray
engine, the compile machinery and the sensor protocol; ``tools/recording_digests.py``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STORED = json.loads((REPO / "tests" / "data" / "recording_digests.json").read_text())

pytest.importorskip("mujoco")
pytest.importorskip("zarr")


def _tool():
    spec = importlib.util.spec_from_file_location(
        "recording_digests", REPO / "tools" / "recording_digests.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("scene", sorted(STORED))
def test_recording_equals_the_one_before_the_restructuring(scene):
    stored = STORED[scene]
    now = _tool().scene_digests(REPO, scene, stored["steps"])
    assert set(now) == set(stored["channels"])  # (same channels: none lost, none added)
    changed = [name for name, digest in stored["channels"].items() if now[name] != digest]
    assert changed == []
