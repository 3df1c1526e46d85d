"""Python's cyclic garbage collector paused while ``simrt run`` starts.

Importing Numba, USD and MuJoCo allocates hundreds of thousands of objects, and the
collections they set off (each walking every object made so far) cost 0.05-0.1 s of a
warm run's start. :func:`pause` (the ``simrt`` program, before anything is imported) turns
the collector off; :func:`resume` (``run_scene``, just before its first step) first freezes
everything made so far (modules, the scene, the engine, the sensors: alive for the whole
run, so the step loop's collections need not walk them), then turns it back on. A module
of its own, so that ``python -m runtime.cli`` (``__main__``) and the run share one state.
"""

from __future__ import annotations

import gc

__all__ = ["pause", "resume"]

_PAUSED: list[bool] = []


def pause() -> None:
    """Turn the collector off until :func:`resume` (nothing if it is off already)."""
    if gc.isenabled() and not _PAUSED:
        gc.disable()
        _PAUSED.append(True)


def resume() -> None:
    """Freeze what exists and turn the collector back on, if :func:`pause` turned it off."""
    if _PAUSED:
        _PAUSED.clear()
        gc.freeze()
        gc.enable()
