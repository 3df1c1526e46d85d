"""The hostile-input tests' scene variants and one-line CLI error checks.

Shared by several test modules (moved from tests/test_hostile_usd.py).
"""

from __future__ import annotations

from pathlib import Path

from runtime.cli import main

ROOT = Path(__file__).parent.parent.parent


SCENE = ROOT / "scenes" / "simple_arm.usda"


def variant(tmp_path: Path, *edits: tuple[str, str], name: str = "arm.usda") -> Path:
    """simple_arm.usda with each ``(old, new)`` text replaced exactly once."""
    text = SCENE.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text)
    return path


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def one_error_line(err: str, command: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("simrt ")]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"simrt {command}: error: "), lines[0]
    return lines[0]
