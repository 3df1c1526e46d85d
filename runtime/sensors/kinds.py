"""Sensor kinds: how a kind is found in a stage and how it joins the compiled step.

A sensor kind is one module: its configuration reader (``bind``), its sensors' batch state
(a ``batch_type``), its kernel and its readings (:mod:`runtime.sensors.runtime` describes the
sensor protocol). Two more pieces make it a full member of every path:

* :func:`register_kind` maps a USD prim type name to the kind's factory, so
  ``SensorRuntime.discover`` (and every run of a scene) creates its sensors;
* the compiled-step protocol, which lets ``simrt run``'s fused step and step blocks
  (:mod:`runtime.run.fused`) evaluate the kind without Python per step:

  - ``batch.fused_part(fused) -> FusedPart | None``: the batch's part of the step. A kind
    that is not built in gives a :class:`FusedPart` with its part kernel (a
    :func:`runtime._compile.jit.jit` kernel with :data:`PART_SIGNATURE`'s arguments, the
    same kernel its ``update`` calls) and its two state blocks; None keeps the run on the
    general path.
  - ``sensor.fused_row(fused, tap) -> FusedFields | list[list[int]] | None``: how the
    sensor's recording row is written. A kind that is not built in gives a
    :class:`FusedFields`: which block column holds each recorded field.
  - optional ``batch.fused_leave(state, steps)``: bring the batch's bookkeeping up to date
    after ``steps`` compiled steps (before readings or the general path take over).

The general path stays the reference: whatever the kind declares must record bit for bit
what ``sensor.reading()`` gives (the fused step declines the run when a channel's type is
not the one the declaration stores).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = [
    "PART_SIGNATURE",
    "FusedFields",
    "FusedPart",
    "register_kind",
    "registered_kinds",
    "unregister_kind",
]

# the part kernel's arguments: body positions (B, 3), orientations (B, 4, wxyz), linear and
# angular velocities (B, 3) (C-ordered float64, world), time (float64), step (int64), then the
# kind's float64 and int64 blocks (C-ordered, one row per sensor); it returns nothing
PART_SIGNATURE = (
    "float64[:, ::1]",
    "float64[:, ::1]",
    "float64[:, ::1]",
    "float64[:, ::1]",
    "float64",
    "int64",
    "float64[:, ::1]",
    "int64[:, ::1]",
)

# the prim types of the built-in kinds (contact, IMU, ray-cast), discovered without a
# registration
BUILTIN_TYPE_NAMES = ("IsaacContactSensor", "IsaacImuSensor", "IsaacRaycastSensor")

_KINDS: dict[str, Callable[[str], Any]] = {}


def register_kind(usd_type_name: str, factory: Callable[[str], Any]) -> None:
    """Discover prims of ``usd_type_name`` as sensors made by ``factory(prim_path)``.

    Args:
        usd_type_name: the prim type name (exact match, as in ``def <Type> "name"``).
        factory: called with the prim path; returns an unbound sensor.

    Raises:
        ValueError: the type name is a built-in kind's or is registered already.
    """
    name = str(usd_type_name)
    if name in BUILTIN_TYPE_NAMES or name in _KINDS:
        raise ValueError(f"register_kind: sensor type {name!r} is registered already")
    _KINDS[name] = factory


def unregister_kind(usd_type_name: str) -> None:
    """Forget a kind :func:`register_kind` added (no error if it is not registered)."""
    _KINDS.pop(str(usd_type_name), None)


def registered_kinds() -> Mapping[str, Callable[[str], Any]]:
    """The registered kinds (type name -> factory), in registration order (a copy)."""
    return dict(_KINDS)


@dataclasses.dataclass(frozen=True)
class FusedPart:
    """A batch's part of the compiled step (``batch.fused_part(fused)``).

    Attributes:
        name: the kind's name (the built-in parts: ``"contact"``, ``"imu"``, ``"ray"``).
        unit: the batch.
        kernel: the part kernel (:data:`PART_SIGNATURE`); None for a built-in part.
        floats: the float64 block the kernel updates, (sensors, columns), C-ordered.
        ints: the int64 block, (sensors, columns), C-ordered.
        silent: no sensor of the batch ever evaluates in this run: nothing is stepped and
            its sensors' rows are written invalid (zeros), as the general path writes them.
        data: what a built-in part hands the fused step besides its blocks (the ray-cast
            part: its layout, windowed sensors and whether it moves with bodies).
    """

    name: str
    unit: Any
    kernel: Any = None
    floats: np.ndarray | None = None
    ints: np.ndarray | None = None
    silent: bool = False
    data: Any = None


@dataclasses.dataclass(frozen=True)
class FusedFields:
    """A sensor's recording row taken from its batch's blocks (``sensor.fused_row``).

    Attributes:
        unit: the sensor's batch (its :class:`FusedPart` gives the blocks).
        index: the sensor's row in the blocks.
        valid_column: the int-block column that is nonzero while the reading is valid
            (recorded as ``valid``; an invalid reading's row is zeros).
        fields: every other recorded reading field -> ``(block, column)``, ``block``
            ``"f"`` (float64 values) or ``"i"`` (int64 values, or bools: nonzero), as many
            values as the channel holds from ``column`` on.
    """

    unit: Any
    index: int
    valid_column: int
    fields: Mapping[str, tuple[str, int]]
