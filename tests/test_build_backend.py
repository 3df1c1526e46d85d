"""simrt's build backend (tools/build_backend/simrt_build.py): the seed compile step.

A successful compile is what every install of the test environment runs (and
test_seeds.py checks its result); here the ways it must not fail an install.
"""

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def backend():
    spec = importlib.util.spec_from_file_location(
        "simrt_build_under_test", REPO / "tools" / "build_backend" / "simrt_build.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def source(tmp_path, monkeypatch):
    """A copy of the package to build from (the compile writes into the source tree)."""
    shutil.copytree(
        REPO / "runtime", tmp_path / "runtime", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.rmtree(tmp_path / "runtime" / "_compile" / "kernel_seeds", ignore_errors=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_compile_over_its_time_limit_is_stopped_and_the_build_goes_on(
    backend, source, monkeypatch, capsys
):
    monkeypatch.setenv("SIMRT_SEED_TIMEOUT", "1")
    backend._compile_seeds()  # returns: the install goes on without seeds
    assert "kernels not compiled at build time (over 1 s)" in capsys.readouterr().err
    assert not (source / "runtime" / "_compile" / "kernel_seeds" / "kernels.seed").exists()


def test_a_failing_compile_does_not_fail_the_build(backend, source, monkeypatch, capsys):
    monkeypatch.setattr(sys, "executable", str(source / "no-such-python"))
    backend._compile_seeds()
    assert "kernels not compiled at build time" in capsys.readouterr().err
    assert not (source / "runtime" / "_compile" / "kernel_seeds").exists()


def test_switched_off_and_outside_a_source_tree_nothing_runs(
    backend, source, monkeypatch, tmp_path, capsys
):
    monkeypatch.setenv("SIMRT_BUILD_SEEDS", "0")
    backend._compile_seeds()
    monkeypatch.delenv("SIMRT_BUILD_SEEDS")
    monkeypatch.chdir(tmp_path / "runtime")  # no runtime/_compile/precompile.py below it
    backend._compile_seeds()
    assert capsys.readouterr().err == ""


def test_an_editable_build_compiles_the_bytecode_even_where_writing_it_is_off(
    backend, source, monkeypatch
):
    """A process with PYTHONDONTWRITEBYTECODE then still finds every module compiled."""
    import importlib.util as util

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    backend._compile_bytecode()
    modules = sorted((source / "runtime").rglob("*.py"))
    assert len(modules) > 50
    for module in modules:
        assert Path(util.cache_from_source(str(module))).is_file(), module
