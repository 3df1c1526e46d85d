"""Build cfg objects from plain data: CLI slot specs and JSON/TOML cfg files.

CLI specs read ``[backend:]key=value,...``. No ``pxr`` here.

A cfg file maps slot names to tables; each table may name its class with ``class`` (a cfg class
name) or ``backend`` (``base``, ``physx``, ``newton``, ``mujoco``); the other keys are fields::

    [rigid_props]
    backend = "mujoco"
    gravcomp = 1.0

    [joint_drive_props]
    backend = "mujoco"
    actuatorgravcomp = true
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tomllib
from typing import Any

from runtime.physics import cfg as core
from runtime.physics import newton, physx
from runtime.physics._meta import CfgTypeError, check_value, field_kinds

__all__ = ["BACKENDS", "SLOT_NAMES", "cfg_from_mapping", "load_cfg_file", "parse_cfg_spec"]

#: slot -> backend -> class.
BACKENDS: dict[str, dict[str, type]] = {
    "rigid_props": {
        "base": core.RigidBodyBaseCfg,
        "physx": physx.PhysxRigidBodyPropertiesCfg,
        "newton": newton.NewtonRigidBodyPropertiesCfg,
        "mujoco": newton.MujocoRigidBodyPropertiesCfg,
    },
    "collision_props": {
        "base": core.CollisionBaseCfg,
        "physx": physx.PhysxCollisionPropertiesCfg,
        "newton": newton.NewtonCollisionPropertiesCfg,
    },
    "mass_props": {"base": core.MassPropertiesCfg},
    "articulation_props": {
        "base": core.ArticulationRootBaseCfg,
        "physx": physx.PhysxArticulationRootPropertiesCfg,
        "newton": newton.NewtonArticulationRootPropertiesCfg,
    },
    "joint_drive_props": {
        "base": core.JointDriveBaseCfg,
        "physx": physx.PhysxJointDrivePropertiesCfg,
        "newton": newton.NewtonJointDrivePropertiesCfg,
        "mujoco": newton.MujocoJointDrivePropertiesCfg,
    },
    "physics_material": {
        "base": core.RigidBodyMaterialBaseCfg,
        "physx": physx.PhysxRigidBodyMaterialCfg,
        "newton": newton.NewtonMaterialPropertiesCfg,
    },
}
SLOT_NAMES = tuple(BACKENDS)

_ALIASES = {"max_velocity": "max_joint_velocity", "max_effort": "max_force"}
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


class CfgInputError(ValueError):
    """Bad cfg input (unknown slot/backend/field, unparsable value, conflicting aliases)."""


def _resolve_class(slot: str, name: str | None) -> type:
    if slot not in BACKENDS:
        raise CfgInputError(f"unknown cfg slot {slot!r} (allowed: {', '.join(SLOT_NAMES)})")
    choices = BACKENDS[slot]
    if name is None:
        return choices["base"]
    if name.lower() in choices:
        return choices[name.lower()]
    for cls in choices.values():
        if cls.__name__ == name:
            return cls
    allowed = ", ".join(list(choices) + [c.__name__ for c in choices.values()])
    raise CfgInputError(f"{slot}: unknown backend or cfg class {name!r} (allowed: {allowed})")


def _public_fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.name != "func"]


def _parse_text(cls: type, name: str, kind: str, text: str) -> Any:
    raw = text.strip()
    where = f"{cls.__name__}.{name}"
    if kind == "bool":
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise CfgInputError(f"{where}: expected true/false, got {text!r}")
    if kind == "int":
        try:
            return int(raw)
        except ValueError:
            raise CfgInputError(f"{where}: expected an integer, got {text!r}") from None
    if kind == "float":
        try:
            value = float(raw)
        except ValueError:
            raise CfgInputError(f"{where}: expected a number, got {text!r}") from None
        if math.isnan(value):
            raise CfgInputError(f"{where}: NaN is not allowed")
        return value
    return raw


def cfg_from_mapping(slot: str, data: dict[str, Any], *, from_text: bool = False) -> Any:
    """Build the cfg of ``slot`` from a mapping of field values.

    Args:
        slot: one of :data:`SLOT_NAMES` (e.g. ``"rigid_props"``).
        data: field values; the optional keys ``class`` / ``backend`` select the cfg class.
        from_text: values are strings to parse by the field type (CLI specs).

    Returns:
        The cfg instance.

    Raises:
        CfgInputError: unknown slot, backend, class or field (the message lists the valid
            fields), unparsable value, or a deprecated alias given together with its canonical
            field with a different value.
        CfgTypeError: a value of the wrong type (names class and field).
    """
    data = dict(data)
    class_name = data.pop("class", None)
    backend = data.pop("backend", None)
    if class_name is not None and backend is not None:
        raise CfgInputError(f"{slot}: give either 'class' or 'backend', not both")
    cls = _resolve_class(slot, class_name or backend)
    fields = _public_fields(cls)
    kinds = field_kinds(cls)
    values: dict[str, Any] = {}
    for name, value in data.items():
        if name not in fields:
            raise CfgInputError(
                f"{slot}: {cls.__name__} has no field {name!r} (fields: {', '.join(fields)})"
            )
        if from_text and isinstance(value, str):
            value = _parse_text(cls, name, kinds[name], value)
        problem = None if value is None else check_value(kinds[name], value)
        if problem is not None:
            raise CfgTypeError(cls.__name__, name, problem)
        values[name] = value
    for old, new in _ALIASES.items():
        if values.get(old) is not None and values.get(new) is not None:
            if values[old] != values[new]:
                raise CfgInputError(
                    f"{slot}: {cls.__name__} got both {old}={values[old]!r} (deprecated alias) "
                    f"and {new}={values[new]!r}; give only {new}"
                )
    return cls(**values)


def parse_cfg_spec(slot: str, spec: str) -> Any:
    """Parse a CLI spec ``[backend_or_class:]key=value[,key=value...]`` into a cfg.

    Examples: ``mujoco:gravcomp=1.0``, ``physx:linear_damping=0.1,disable_gravity=true``,
    ``stiffness=0,damping=2``, ``mujoco:`` (no fields: the class alone).

    Args:
        slot: slot name.
        spec: the text.

    Returns:
        The cfg instance.

    Raises:
        CfgInputError: malformed spec, unknown class or field, bad value.
    """
    text = spec.strip()
    head, sep, rest = text.partition(":")
    backend = None
    if sep and "=" not in head:
        backend, text = head.strip() or None, rest
    data: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise CfgInputError(f"{slot}: expected key=value, got {item!r} in {spec!r}")
        key = key.strip()
        if key in data:
            raise CfgInputError(f"{slot}: field {key!r} given twice in {spec!r}")
        data[key] = value
    if backend is not None:
        data["backend"] = backend
    return cfg_from_mapping(slot, data, from_text=True)


def load_cfg_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load a JSON (``.json``) or TOML (any other suffix) cfg file into ``{slot: cfg}``.

    Besides the slots, the top level may hold ``root`` (asset root prim path) and
    ``physics_material_path``; they are returned unchanged.

    Args:
        path: file path.

    Returns:
        ``{slot: cfg instance, ...}`` plus the passthrough keys.

    Raises:
        CfgInputError: unreadable structure, unknown slot or field.
    """
    path = os.fspath(path)
    with open(path, "rb") as handle:
        if path.endswith(".json"):
            try:
                data = json.load(handle)
            except json.JSONDecodeError as exc:
                raise CfgInputError(f"{path}: invalid JSON: {exc}") from None
        else:
            try:
                data = tomllib.load(handle)
            except tomllib.TOMLDecodeError as exc:
                raise CfgInputError(f"{path}: invalid TOML: {exc}") from None
    if not isinstance(data, dict):
        raise CfgInputError(f"{path}: top level must be a table/object of slots")
    result: dict[str, Any] = {}
    for key, value in data.items():
        if key in ("root", "physics_material_path"):
            result[key] = value
            continue
        if key not in BACKENDS:
            raise CfgInputError(
                f"{path}: unknown slot {key!r} (allowed: {', '.join(SLOT_NAMES)}, root, "
                "physics_material_path)"
            )
        if not isinstance(value, dict):
            raise CfgInputError(f"{path}: slot {key!r} must be a table/object of fields")
        try:
            result[key] = cfg_from_mapping(key, value)
        except (CfgInputError, CfgTypeError) as exc:
            raise CfgInputError(f"{path}: {exc}") from None
    return result
