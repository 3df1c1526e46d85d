"""Digests of every channel of short recordings of the shipped scenes.

    python tools/recording_digests.py OUT.json [REPO]

runs each scene of :data:`SCENES` for its step count with ``run_scene`` (the simrt found on
``sys.path``; ``REPO`` names the scenes' checkout) and writes SHA-256 digests of ``step``,
``time`` and every channel. ``tests/data/recording_digests.json`` was written by the
checkout of commit d7e65ae (before session 14's restructuring), as
``PYTHONPATH=<that checkout> python tools/recording_digests.py ...``;
``tests/test_recording_digests.py`` holds today's recordings to it, bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

SCENES = {
    "simple_arm.usda": 400,
    "panda_table.usda": 400,
    "go2_standing.usda": 300,
    "talos_standing.usda": 100,
}


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def scene_digests(repo: Path, name: str, steps: int) -> dict[str, str]:
    """``{"step": ..., "time": ..., channel: ...}`` of one scene's recording."""
    import runtime.schema  # noqa: F401  (the Isaac schemas, before any stage)
    from runtime.recording import load_recording
    from runtime.run.loop import run_scene

    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "run.zarr"
        run_scene(str(repo / "scenes" / name), out=store, steps=steps)
        recording = load_recording(store)
    digests = {"step": _digest(recording.step), "time": _digest(recording.time)}
    for channel, values in sorted(recording.data.items()):
        digests[channel] = _digest(values)
    return digests


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    repo = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    result = {
        name: {"steps": steps, "channels": scene_digests(repo, name, steps)}
        for name, steps in SCENES.items()
    }
    out.write_text(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:])
