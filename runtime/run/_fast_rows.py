"""The fast path of a sensor tap: a valid reading's row written by straight-line code.

Every step, every sensor's reading goes into the recording row. For the common case (a
valid dataclass reading whose values all have their channel's type and shape) the work is
a lookup, a check and a copy per field; written as a loop over the tap's plan, the loop's
own bookkeeping costs more than the copies. :func:`fast_row_writer` therefore generates,
once per tap, a function with the tap's field names, slots and shapes written out as
constants (the technique ``dataclasses`` uses for ``__init__``), so a row costs about what
copying its values costs.

The generated function is ``write(buffers, row, fields) -> bool``: ``fields`` is the
reading's ``__dict__``. It looks up and checks every value before writing anything, and
returns False without writing (then the tap's general path handles the reading) when the
reading is not valid, its sensor is disabled, or a value has another type or shape.
Raycast taps also write ``hit`` (depth below ``maxRange``) and map hit paths to ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["fast_row_writer"]

FastWriter = Callable[[Sequence[np.ndarray], int, dict[str, Any]], bool]


def fast_row_writer(tap: Any, scalar_types: frozenset[type]) -> FastWriter:
    """The generated fast writer of ``tap`` (after ``tap.define``; see the module doc).

    Args:
        tap: a defined :class:`~runtime.run.taps.SensorTap`.
        scalar_types: the value types a scalar channel takes as they are.
    """
    plain = [(name, slot, shape) for name, slot, shape, ids in tap._plan if ids is None]
    paths = [(name, slot, ids) for name, slot, _, ids in tap._plan if ids is not None]
    namespace: dict[str, Any] = {
        "ndarray": np.ndarray,
        "SCALARS": scalar_types,
        "less": np.less,
        "INT32": np.dtype(np.int32),
        "sensor": tap.sensor,
        "max_range": tap._max_ranges,
    }
    lines = [
        "def write(buffers, row, fields):",
        "    get = fields.get",
        '    if get("is_valid") is not True or getattr(sensor, "disabled_reason", None):',
        "        return False",
    ]
    checks = []
    for k, (name, _, shape) in enumerate(plain):
        lines.append(f"    v{k} = get({name!r})")
        if shape:
            checks.append(f"v{k}.__class__ is not ndarray or v{k}.shape != {shape!r}")
        else:
            checks.append(f"v{k}.__class__ not in SCALARS")
    if tap._hit_slot is not None:
        lines.append('    depths = get("depths")')
        checks.append(f"depths.__class__ is not ndarray or depths.shape != {tap._ray_shape!r}")
    if checks:
        lines.append("    if (")
        lines += [f"        {check} or" for check in checks[:-1]]
        lines += [f"        {checks[-1]}", "    ):", "        return False"]
    if tap._hit_slot is not None:
        lines.append(f"    hits = less(depths, max_range, out=buffers[{tap._hit_slot}][row])")
    else:
        lines.append("    hits = None")
    for k, (name, slot, ids) in enumerate(paths):
        namespace[f"ids{k}"] = ids.ids_of_reading
        namespace[f"paths{k}"] = ids
        # actor indices that are already the ids (the path table numbers the scene's actors
        # in actor order) are copied as they are; anything else goes through the lookup
        lines += [
            '    actors = get("_hit_actors")',
            f'    if get("_actor_paths") is paths{k}.identity_of and (',
            "        actors.__class__ is ndarray and actors.dtype is INT32",
            f"        and actors.shape == {ids.shape!r}",
            "    ):",
            f"        buffers[{slot}][row] = actors",
            f"    elif ids{k}(get, {name!r}, hits, buffers[{slot}][row]) is None:",
            "        return False  # (only `hit` written yet: the general path rewrites it)",
        ]
    lines.append(f"    buffers[{tap._valid_slot}][row] = True")
    lines += [f"    buffers[{slot}][row] = v{k}" for k, (_, slot, _) in enumerate(plain)]
    lines.append("    return True")
    source = "\n".join(lines)
    code = _CODE.get(source)
    if code is None:  # (a batch defines the same taps every episode: compile once)
        code = _CODE[source] = compile(source, f"<fast row writer of {tap.path}>", "exec")
    exec(code, namespace)  # noqa: S102 - our own generated source
    return namespace["write"]


_CODE: dict[str, Any] = {}  # compiled writers by their source
