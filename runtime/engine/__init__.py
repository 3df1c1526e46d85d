"""USD physics -> MuJoCo engine.

Public names (imported lazily so ``import runtime.engine`` loads neither pxr nor mujoco):

* :class:`MujocoEngine` -- build from a stage, ``step()``, ``state()``, joint targets.
* :func:`build_model` -- the USD -> ``MjSpec`` builder (returns :class:`BuiltModel`).
* :class:`ModelSnapshot` -- the model arrays randomization edits, saved to restore them.
* :func:`check_warnings` -- raise for an instability warning of the last step (steps run
  outside :meth:`MujocoEngine.step`, e.g. a run's blocks, check through it too).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BuiltModel",
    "DofBinding",
    "ModelSnapshot",
    "MujocoEngine",
    "build_model",
    "check_warnings",
]

_LAZY = {
    "MujocoEngine": "runtime.engine.mujoco_engine",
    "BuiltModel": "runtime.engine._build_types",
    "DofBinding": "runtime.engine._build_types",
    "build_model": "runtime.engine.builder",
    "check_warnings": "runtime.engine._divergence",
    "ModelSnapshot": "runtime.engine.snapshot",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'runtime.engine' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
