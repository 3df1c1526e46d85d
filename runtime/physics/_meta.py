"""Cfg-class metadata helpers: field declaring classes, value kinds, name conversion, validation.

Nothing here imports ``pxr``; the helpers work on the cfg classes alone.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import types
import typing
import warnings
from collections.abc import Callable
from typing import Any, Literal

from runtime.errors import SchemaError

__all__ = [
    "CfgTypeError",
    "PhysicsCfgError",
    "UnsupportedValueError",
    "check_value",
    "FieldKind",
    "declaring_class",
    "effective_field_exceptions",
    "field_kinds",
    "forward_field_alias",
    "to_camel_case",
    "validate_cfg_values",
]

#: Value kinds a cfg field can have (derived from its annotation).
FieldKind = Literal["bool", "int", "float", "str", "token", "callable", "other"]


class CfgTypeError(TypeError):
    """A cfg field holds a value of the wrong type (raised at construction).

    Attributes:
        cfg_class: name of the cfg class.
        field: name of the offending field.
    """

    def __init__(self, cfg_class: str, field: str, problem: str) -> None:
        self.cfg_class = cfg_class
        self.field = field
        super().__init__(f"{cfg_class}.{field}: {problem}")


def to_camel_case(name: str) -> str:
    """Convert a snake_case cfg field name to the camelCase USD attribute base name.

    The whole name is lower-cased and split on ``_``; the first piece is kept and every other
    piece is appended with :meth:`str.title` semantics (so a letter right after a digit is
    upper-cased too). Single-token names are returned unchanged.

    Args:
        name: snake_case field name, e.g. ``"max_hull_vertices"``.

    Returns:
        The camelCase name, e.g. ``"maxHullVertices"``; ``"abc_2d"`` gives ``"abc2D"``.
    """
    pieces = name.lower().split("_")
    return pieces[0] + "".join(piece.title() for piece in pieces[1:])


def _own_annotations(cls: type) -> dict[str, Any]:
    return vars(cls).get("__annotations__", {})


def declaring_class(cls: type, field_name: str) -> type | None:
    """Return the most-base class in ``cls``'s MRO whose own annotations declare ``field_name``.

    A subclass that re-declares a field only to change its default does not become the
    declaring class.

    Args:
        cls: a cfg class.
        field_name: dataclass field name.

    Returns:
        The declaring class, or None when no class in the MRO annotates the name.
    """
    for klass in reversed(cls.__mro__):
        if field_name in _own_annotations(klass):
            return klass
    return None


def effective_field_exceptions(cls: type) -> dict[str, tuple[str, list[str]]]:
    """Union of ``_usd_field_exceptions`` over the MRO of ``cls`` (base entries first).

    This is the documented behaviour (spec §4.8 DECISION): an exception field declared on a
    base class is routed identically whatever subclass carries it; a subclass entry with the
    same schema key extends that key's field list.

    Args:
        cls: a cfg class.

    Returns:
        ``{applied_schema: (namespace, [field, ...])}`` in insertion order.
    """
    merged: dict[str, tuple[str, list[str]]] = {}
    for klass in reversed(cls.__mro__):
        own = vars(klass).get("_usd_field_exceptions")
        if not own:
            continue
        for schema, (namespace, names) in own.items():
            if schema in merged:
                _ns, existing = merged[schema]
                existing.extend(name for name in names if name not in existing)
            else:
                merged[schema] = (namespace, list(names))
    return merged


def _kind_of(annotation: Any) -> FieldKind:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        kinds = {_kind_of(arg) for arg in args}
        return kinds.pop() if len(kinds) == 1 else "other"
    if origin is Literal:
        return "token"
    if annotation is bool:
        return "bool"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    if annotation is str:
        return "str"
    if annotation is Callable or origin is Callable:
        return "callable"
    return "other"


@functools.cache
def field_kinds(cls: type) -> dict[str, FieldKind]:
    """Value kind of every dataclass field of ``cls`` (from the resolved annotations).

    Args:
        cls: a cfg dataclass.

    Returns:
        ``{field_name: kind}`` in field order.
    """
    hints = typing.get_type_hints(cls)
    return {f.name: _kind_of(hints.get(f.name)) for f in dataclasses.fields(cls)}


def check_value(kind: FieldKind, value: Any) -> str | None:
    """Return a problem description when ``value`` does not fit ``kind``, else None.

    Args:
        kind: the field's value kind.
        value: a non-None value.

    Returns:
        None when valid, else a short description of the problem.
    """
    if kind == "bool":
        if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):
            return None
        return f"expected a bool, got {type(value).__name__} {value!r}"
    if kind == "int":
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return None
        return f"expected an int, got {type(value).__name__} {value!r}"
    if kind == "float":
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            if math.isnan(float(value)):
                return "expected a number, got NaN"
            return None
        return f"expected a float, got {type(value).__name__} {value!r}"
    if kind in ("str", "token"):
        if isinstance(value, str):
            return None
        return f"expected a string, got {type(value).__name__} {value!r}"
    return None


def validate_cfg_values(cfg: Any) -> None:
    """Check every non-None field value of ``cfg`` against its annotation.

    Args:
        cfg: a cfg dataclass instance.

    Raises:
        CfgTypeError: naming the class and the field when a value has the wrong type.
    """
    cls = type(cfg)
    for name, kind in field_kinds(cls).items():
        value = getattr(cfg, name)
        if value is None:
            continue
        problem = check_value(kind, value)
        if problem is not None:
            raise CfgTypeError(cls.__name__, name, problem)


def forward_field_alias(cfg: Any, old: str, new: str, removal: str = "4.0") -> None:
    """Forward a deprecated field alias to its canonical field (spec §6.1).

    When ``old`` is set: warn (``DeprecationWarning`` naming both fields and the removal
    version), copy the value into ``new`` if that is None (the canonical field wins when both
    are set), then set ``old`` to None. ``0.0`` counts as set.

    Args:
        cfg: the cfg instance (modified in place).
        old: deprecated field name.
        new: canonical field name.
        removal: version in which the alias is removed.
    """
    value = getattr(cfg, old)
    if value is None:
        return
    canonical = getattr(cfg, new)
    note = "" if canonical is None else f" Both were given; {new}={canonical!r} wins."
    warnings.warn(
        f"{type(cfg).__name__}.{old} is deprecated and will be removed in {removal}; "
        f"use {new} instead.{note}",
        DeprecationWarning,
        stacklevel=4,
    )
    if canonical is None:
        setattr(cfg, new, value)
    setattr(cfg, old, None)


class PhysicsCfgError(SchemaError):
    """A cfg cannot be authored on a prim (names the prim, the attribute and the cfg field).

    Attributes:
        field: the cfg field concerned ("" when not field-specific).
    """

    def __init__(
        self,
        prim_path: str,
        attribute: str,
        problem: str,
        allowed: str | None = None,
        field: str = "",
    ) -> None:
        self.field = field
        super().__init__(prim_path, attribute, problem, allowed)


class UnsupportedValueError(PhysicsCfgError, NotImplementedError):
    """A raw value whose USD type cannot be inferred (spec: ``NotImplementedError``)."""
