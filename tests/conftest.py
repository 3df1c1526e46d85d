"""Shared test setup: the Isaac schemas registered before any test creates a stage, and the
repository root importable, so that test modules import their shared helpers from
``tests.helpers`` (a package) under ``pytest`` as under ``python -m pytest``."""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import pytest  # noqa: E402

import runtime.schema  # noqa: E402, F401  (registration must precede the first Usd.Stage)


@pytest.fixture(autouse=True)
def _layers_as_on_disk():
    """After each test, layers it edited in memory are read back from their files.

    USD shares a file's layer between every stage of the process that opens it: a test (or
    a docs snippet) that authors on a shipped scene's stage would otherwise change that
    scene for every later test (seen: noise attributes on simple_arm's IMU reaching the
    envs' autoreset comparison).
    """
    yield
    from pxr import Sdf

    for layer in Sdf.Layer.GetLoadedLayers():
        if layer.dirty and not layer.anonymous and Path(layer.realPath or "").is_file():
            layer.Reload(force=True)
