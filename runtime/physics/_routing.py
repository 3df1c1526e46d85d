"""Field routing shared by the physics cfg writers (usd-core only).

:func:`apply_namespaced_schemas` is where every cfg ends:

1. *Exception fields* (the effective ``_usd_field_exceptions`` of the cfg, i.e. the union
   over its MRO) are written under their exception namespace and schema.
2. Every other non-None field is written under the ``_usd_namespace`` of the class that
   *declares* it (the most-base class of the MRO annotating it), adding that class's
   ``_usd_applied_schema``. A field declared on a class without a namespace is an error.

Field names become attribute names by :func:`~runtime.physics._meta.to_camel_case`. Values are
coerced by the field annotation (``float`` -> Float, ``int`` -> Int, ``bool`` -> Bool, ``Literal``
-> Token, ``str`` -> String). Applied schemas are checked with the *unfiltered* list
``prim.GetPrimTypeInfo().GetAppliedAPISchemas()`` because usd-core drops unregistered names
(``PhysxRigidBodyAPI``, ``MjcJointAPI``, ...) from ``GetAppliedSchemas()``.

Also here: the subtree walk of the ``modify_*`` writers and the apply-then-modify of the
``define_*`` writers.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from pxr import Sdf, Usd

from runtime.physics._meta import (
    PhysicsCfgError,
    UnsupportedValueError,
    check_value,
    declaring_class,
    effective_field_exceptions,
    field_kinds,
    to_camel_case,
)

# the writers' one logger (the public module's name, so callers filter on it)
LOG = logging.getLogger("runtime.physics.writers")


def applied_schemas(prim: Usd.Prim) -> list[str]:
    """Applied API schema names of ``prim``, including names unregistered in usd-core.

    Args:
        prim: any prim.

    Returns:
        The names from the ``apiSchemas`` metadata as composed, e.g.
        ``["PhysicsRigidBodyAPI", "PhysxRigidBodyAPI"]``.
    """
    return [str(name) for name in prim.GetPrimTypeInfo().GetAppliedAPISchemas()]


def add_schema(prim: Usd.Prim, name: str) -> None:
    if name not in applied_schemas(prim):
        prim.AddAppliedSchema(name)


def _sdf_type_for(prim: Usd.Prim, attr_name: str, field: str, kind: str, value: Any) -> Any:
    if kind == "bool":
        return Sdf.ValueTypeNames.Bool
    if kind == "int":
        return Sdf.ValueTypeNames.Int
    if kind == "float":
        return Sdf.ValueTypeNames.Float
    if kind == "token":
        return Sdf.ValueTypeNames.Token
    if kind == "str":
        return Sdf.ValueTypeNames.String
    # Unannotated value: infer from the Python value (spec §4.5).
    if isinstance(value, bool):
        return Sdf.ValueTypeNames.Bool
    if isinstance(value, int):
        return Sdf.ValueTypeNames.Int
    if isinstance(value, float):
        return Sdf.ValueTypeNames.Float
    if isinstance(value, str):
        return Sdf.ValueTypeNames.String
    if isinstance(value, (list, tuple)) and any(isinstance(v, float) for v in value):
        if len(value) == 3:
            return Sdf.ValueTypeNames.Float3
        if len(value) == 2:
            return Sdf.ValueTypeNames.Float2
    raise UnsupportedValueError(
        str(prim.GetPath()),
        attr_name,
        f"cfg field {field!r}: cannot infer a USD type for {type(value).__name__} {value!r}",
        field=field,
    )


def _coerce(kind: str, value: Any) -> Any:
    if kind == "float":
        return float(value)
    if kind == "int":
        return int(value)
    if kind == "bool":
        return bool(value)
    return value


def write_raw(prim: Usd.Prim, attr_name: str, field: str, kind: str, value: Any) -> None:
    """Set ``attr_name`` (creating a non-custom attribute typed by the field kind if absent)."""
    value = _coerce(kind, value)
    attr = prim.GetAttribute(attr_name)
    if not attr:
        type_name = _sdf_type_for(prim, attr_name, field, kind, value)
        attr = prim.CreateAttribute(attr_name, type_name, custom=False)
    elif kind == "other":
        _sdf_type_for(prim, attr_name, field, kind, value)  # reject unsupported values
    try:
        ok = attr.Set(value)
    except Exception as exc:  # pxr raises Tf errors on type mismatch
        raise PhysicsCfgError(
            str(prim.GetPath()),
            attr_name,
            f"cfg field {field!r}: cannot set {value!r} on an attribute of type "
            f"{attr.GetTypeName()}: {exc}",
            field=field,
        ) from exc
    if not ok:
        raise PhysicsCfgError(
            str(prim.GetPath()),
            attr_name,
            f"cfg field {field!r}: USD refused value {value!r} (type {attr.GetTypeName()})",
            field=field,
        )


def check_cfg_values(prim: Usd.Prim, cfg: Any, cfg_dict: dict[str, Any]) -> None:
    kinds = field_kinds(type(cfg))
    for name, value in cfg_dict.items():
        if value is None or name not in kinds:
            continue
        problem = check_value(kinds[name], value)
        if problem is not None:
            raise PhysicsCfgError(
                str(prim.GetPath()),
                to_camel_case(name),
                f"cfg field {type(cfg).__name__}.{name}: {problem}",
                field=name,
            )


def cfg_fields(cfg: Any) -> dict[str, Any]:
    return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}


def apply_namespaced_schemas(prim: Usd.Prim, cfg: Any, cfg_dict: dict[str, Any]) -> None:
    """Route cfg fields to USD attributes and applied schemas (the shared writer helper).

    Values and namespaces are checked before anything is written, so a bad cfg leaves the
    prim untouched.

    Args:
        prim: the prim to author on.
        cfg: the cfg instance (its class supplies the routing metadata).
        cfg_dict: ``{field: value}`` still to write (fields already consumed by the calling
            writer removed). Modified in place (consumed entries are popped).

    Raises:
        PhysicsCfgError: a value has the wrong type, or a non-None field is declared on a class
            without ``_usd_namespace`` and is no exception field (a ``ValueError``).
        UnsupportedValueError: a raw value whose USD type cannot be inferred.
    """
    check_cfg_values(prim, cfg, cfg_dict)
    cls = type(cfg)
    kinds = field_kinds(cls)
    prim_path = str(prim.GetPath())

    # Pass 1: exception fields (popped even when None so pass 2 never sees them).
    exception_writes: list[tuple[str, str, list[tuple[str, Any]]]] = []
    for schema, (namespace, names) in effective_field_exceptions(cls).items():
        present = [(name, cfg_dict.pop(name)) for name in names if name in cfg_dict]
        kept = [(name, value) for name, value in present if value is not None]
        if kept:
            exception_writes.append((schema, namespace, kept))

    # Pass 2: group the remaining fields by declaring class (first-seen order).
    groups: dict[type, list[tuple[str, Any]]] = {}
    for name, value in cfg_dict.items():
        if value is None:
            continue
        owner = declaring_class(cls, name)
        if owner is None:
            continue
        groups.setdefault(owner, []).append((name, value))
    class_writes: list[tuple[str | None, str, list[tuple[str, Any]]]] = []
    for owner, items in groups.items():
        namespace = vars(owner).get("_usd_namespace")
        if namespace is None:
            names = ", ".join(to_camel_case(name) for name, _ in items)
            raise PhysicsCfgError(
                prim_path,
                names,
                f"cfg {cls.__name__}: fields [{names}] are declared on {owner.__name__}, which "
                "has no _usd_namespace; add a namespace to that class or an entry in its "
                "_usd_field_exceptions (mesh cfgs go through the mesh collision writer only)",
                field=items[0][0],
            )
        class_writes.append((vars(owner).get("_usd_applied_schema"), namespace, items))

    for schema, namespace, items in exception_writes + class_writes:
        if schema:
            add_schema(prim, schema)
        for name, value in items:
            write_raw(prim, f"{namespace}:{to_camel_case(name)}", name, kinds[name], value)
    cfg_dict.clear()


def require_prim(stage: Usd.Stage, prim_path: str, function: str) -> Usd.Prim:
    if stage is None:
        raise ValueError(f"{function}({prim_path!r}): a Usd.Stage is required")
    prim = stage.GetPrimAtPath(str(prim_path))
    if not prim or not prim.IsValid():
        raise PhysicsCfgError(str(prim_path), "", f"{function}: prim does not exist")
    return prim


def walk_subtree(
    stage: Usd.Stage,
    root_path: str,
    cfg: Any,
    inner: Callable[[Usd.Prim, Any], bool],
    function: str,
    nested: bool = False,
) -> int:
    """Breadth-first walk from the root: call ``inner``; descend only where it returned False.

    With ``nested`` the walk also descends below modified prims (nested rigid bodies of a
    link hierarchy are separate bodies in UsdPhysics). Instance prims (and their subtrees) are
    skipped. Returns the number of prims modified; when zero, logs a warning naming the
    function, the root and the instance prims met.
    """
    root = require_prim(stage, root_path, function)
    queue = collections.deque([root])
    modified = 0
    instances: list[str] = []
    while queue:
        prim = queue.popleft()
        if prim.IsInstance():
            instances.append(str(prim.GetPath()))
            continue
        if inner(prim, cfg):
            modified += 1
            if not nested:
                continue
        queue.extend(prim.GetChildren())
    if modified == 0:
        LOG.warning(
            "%s: no target prim found under %s%s",
            function,
            root_path,
            f" (instance prims skipped: {instances})" if instances else "",
        )
    return modified


def define_with_api(
    stage: Usd.Stage,
    prim_path: str,
    cfg: Any,
    api: Any,
    modify: Callable[[str, Any, Usd.Stage], int],
    function: str,
) -> int:
    """Apply the UsdPhysics ``api`` to ``prim_path`` if missing, then ``modify`` it with ``cfg``.

    Args:
        stage: stage to author on.
        prim_path: the prim.
        cfg: the cfg to author.
        api: the single-apply UsdPhysics API class (``UsdPhysics.RigidBodyAPI``, ...).
        modify: the ``modify_*(prim_path, cfg, stage)`` writer of the cfg.
        function: public function name for error messages.

    Returns:
        What ``modify`` returns (number of prims modified).
    """
    prim = require_prim(stage, prim_path, function)
    if not prim.HasAPI(api):
        api.Apply(prim)
    return modify(prim_path, cfg, stage)


def modify_if_api(prim: Usd.Prim, cfg: Any, api: Any) -> bool:
    """Route all fields of ``cfg`` onto ``prim`` when it has ``api``; False when it has not."""
    if not prim.HasAPI(api):
        return False
    apply_namespaced_schemas(prim, cfg, cfg_fields(cfg))
    return True
