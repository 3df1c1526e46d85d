"""The brief's file-size rules, checked so that CI catches a file that outgrows them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_file_in_runtime_run_is_over_400_lines():
    long = {str(p.relative_to(REPO)): _lines(p) for p in (REPO / "runtime" / "run").glob("*.py")}
    assert {name: n for name, n in long.items() if n > 400} == {}


def test_no_file_outside_the_kernel_files_is_over_600_lines():
    files = [
        p
        for folder in ("runtime", "tests", "benchmarks", "scenes", "tools")
        for p in (REPO / folder).rglob("*.py")
        if not p.name.endswith("kernels.py")
    ]
    assert files
    assert {str(p.relative_to(REPO)): _lines(p) for p in files if _lines(p) > 600} == {}
