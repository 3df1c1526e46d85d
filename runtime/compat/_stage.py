"""The "current stage" the Isaac-named compat APIs use when no ``stage=`` is given.

Isaac Sim and Isaac Lab take the stage from the running application; simrt has none, so
compat functions accept ``stage=`` and otherwise use the stage given once to
:func:`set_current_stage`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_current_stage", "resolve_stage", "set_current_stage"]

_CURRENT: list[Any] = []


def set_current_stage(stage: Any) -> None:
    """Set (or clear with None) the stage used when ``stage=`` is not given."""
    _CURRENT.clear()
    if stage is not None:
        _CURRENT.append(stage)


def get_current_stage() -> Any:
    """The stage set by :func:`set_current_stage`.

    Raises:
        RuntimeError: none was set.
    """
    if not _CURRENT:
        raise RuntimeError(
            "no current stage: pass stage=... or call runtime.compat.set_current_stage(stage) first"
        )
    return _CURRENT[0]


def resolve_stage(stage: Any) -> Any:
    """``stage`` itself, or the current stage when it is None."""
    return stage if stage is not None else get_current_stage()
