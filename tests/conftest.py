"""Shared test setup: the Isaac schemas registered before any test creates a stage, and the
repository root importable, so that test modules import their shared helpers from
``tests.helpers`` (a package) under ``pytest`` as under ``python -m pytest``."""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import runtime.schema  # noqa: E402, F401  (registration must precede the first Usd.Stage)
