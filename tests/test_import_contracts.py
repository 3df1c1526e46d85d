"""The import contracts of pyproject.toml (``lint-imports``): kept by the tree, and able to fail.

The contracts state the layers of docs/ARCHITECTURE.md, forbid import circles at any depth
and imports of another package's private modules. The tree must keep them; a copy of the
package with one circle, one upward import or one private import added must break them
(otherwise a contract could not fail).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter not installed")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(root))  # the package of ``root``, not the installed
    return subprocess.run(
        [str(LINT), "--no-cache", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the package (sources only) and of pyproject.toml."""
    shutil.copytree(
        ROOT / "runtime",
        tmp_path / "runtime",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "kernel_seeds"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _append(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"\n{line}\n")


def test_the_tree_keeps_the_contracts():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


def test_the_copy_keeps_the_contracts(copy):
    # the copy is read (not the installed package): same verdict as the tree
    result = _lint(copy)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_circle_breaks_the_acyclic_contract(copy):
    # sensors.base <- sensors.runtime already; base importing the loop closes a circle
    _append(copy / "runtime/sensors/base.py", "from runtime.sensors import runtime as _loop")
    result = _lint(copy)
    assert result.returncode != 0
    assert "No import circles between the modules of any package, at any depth BROKEN" in (
        result.stdout
    )
    assert "No cycles are allowed in runtime.sensors" in result.stdout
    assert "- .base -> .runtime (1 import)" in result.stdout


def test_an_upward_import_breaks_the_layers(copy):
    _append(copy / "runtime/schema/utils.py", "import runtime.run.loop")
    result = _lint(copy)
    assert result.returncode != 0
    assert "runtime.schema is not allowed to import runtime.run" in result.stdout


def test_a_private_import_breaks_the_private_contract(copy):
    _append(copy / "runtime/batch/spec.py", "from runtime.recording import _disk")
    result = _lint(copy)
    assert result.returncode != 0
    assert "runtime.batch.spec -> runtime.recording._disk" in result.stdout
