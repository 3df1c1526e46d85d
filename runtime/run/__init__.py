"""Running scenes: configuration, the step loop, stop signals and the summary.

Public names: :func:`run_scene` (a scene's run into a recording, :mod:`runtime.run.loop`),
:class:`RunConfig` (its settings, :mod:`runtime.run.config`), :class:`RunResult` (what it
returns, :mod:`runtime.run.result`) and the stop-signal helpers of
:mod:`runtime.run.interrupts`. ``run_scene``, ``RunConfig`` and ``RunResult`` are imported
on first use, so importing a submodule (``runtime.run.config``) does not load the engine.
"""

from typing import Any

from runtime.run.interrupts import RunInterrupted, signals_deferred, stop_signals_raise

__all__ = [
    "RunConfig",
    "RunInterrupted",
    "RunResult",
    "run_scene",
    "signals_deferred",
    "stop_signals_raise",
]

_LAZY = {
    "run_scene": "runtime.run.loop",
    "RunConfig": "runtime.run.config",
    "RunResult": "runtime.run.result",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'runtime.run' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
