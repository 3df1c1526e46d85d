"""The readers' test scene and stage.

Shared by several test modules (moved from tests/test_readers.py).
"""

from __future__ import annotations

from pathlib import Path

from pxr import Sdf, Usd

SCENE = Path(__file__).parent.parent.parent / "scenes" / "simple_arm.usda"


def _stage(body: str, header: str = "metersPerUnit = 1") -> Usd.Stage:
    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.ImportFromString(f"#usda 1.0\n(\n    {header}\n)\n{body}\n")
    return Usd.Stage.Open(layer)
