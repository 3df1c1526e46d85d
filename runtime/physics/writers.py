"""Writers that author physics property cfgs onto USD prims (usd-core only).

Every cfg ends in one routing helper, :func:`apply_namespaced_schemas`:

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

``modify_*(prim_path, cfg, stage)`` walk the subtree breadth-first and return the number of
prims modified; ``modify_*_on_prim(prim, cfg)`` handle one prim and return whether it was a
target; ``define_*(prim_path, cfg, stage)`` apply the UsdPhysics API first.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import logging
import math
from collections.abc import Callable
from typing import Any

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from runtime.physics._meta import (
    PhysicsCfgError,
    UnsupportedValueError,
    check_value,
    declaring_class,
    effective_field_exceptions,
    field_kinds,
    forward_field_alias,
    to_camel_case,
)
from runtime.physics.cfg import (
    MESH_APPROXIMATION_TOKENS,
    ArticulationRootBaseCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    RigidBodyBaseCfg,
    RigidBodyMaterialBaseCfg,
)

__all__ = [
    "applied_schemas",
    "apply_cfg_to_prim",
    "apply_namespaced_schemas",
    "bind_physics_material",
    "bind_physics_material_to_colliders",
    "define_articulation_root_properties",
    "define_collision_properties",
    "define_mass_properties",
    "define_mesh_collision_properties",
    "define_rigid_body_properties",
    "modify_articulation_root_properties",
    "modify_articulation_root_properties_on_prim",
    "modify_collision_properties",
    "modify_collision_properties_on_prim",
    "modify_joint_drive_properties",
    "modify_joint_drive_properties_on_prim",
    "modify_mass_properties",
    "modify_mass_properties_on_prim",
    "modify_mesh_collision_properties",
    "modify_rigid_body_properties",
    "modify_rigid_body_properties_on_prim",
    "spawn_rigid_body_material",
]

_LOG = logging.getLogger(__name__)

#: Break force / torque of a created world fixed joint (FLT_MAX: unbreakable).
_UNBREAKABLE = 3.40282347e38


# --------------------------------------------------------------------------------------------
# Low-level helpers
# --------------------------------------------------------------------------------------------


def applied_schemas(prim: Usd.Prim) -> list[str]:
    """Applied API schema names of ``prim``, including names unregistered in usd-core.

    Args:
        prim: any prim.

    Returns:
        The names from the ``apiSchemas`` metadata as composed, e.g.
        ``["PhysicsRigidBodyAPI", "PhysxRigidBodyAPI"]``.
    """
    return [str(name) for name in prim.GetPrimTypeInfo().GetAppliedAPISchemas()]


def _add_schema(prim: Usd.Prim, name: str) -> None:
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


def _write_raw(prim: Usd.Prim, attr_name: str, field: str, kind: str, value: Any) -> None:
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


def _check_values(prim: Usd.Prim, cfg: Any, cfg_dict: dict[str, Any]) -> None:
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


def _cfg_dict(cfg: Any) -> dict[str, Any]:
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
    _check_values(prim, cfg, cfg_dict)
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
            _add_schema(prim, schema)
        for name, value in items:
            _write_raw(prim, f"{namespace}:{to_camel_case(name)}", name, kinds[name], value)
    cfg_dict.clear()


def _require_prim(stage: Usd.Stage, prim_path: str, function: str) -> Usd.Prim:
    if stage is None:
        raise ValueError(f"{function}({prim_path!r}): a Usd.Stage is required")
    prim = stage.GetPrimAtPath(str(prim_path))
    if not prim or not prim.IsValid():
        raise PhysicsCfgError(str(prim_path), "", f"{function}: prim does not exist")
    return prim


def _walk(
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
    root = _require_prim(stage, root_path, function)
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
        _LOG.warning(
            "%s: no target prim found under %s%s",
            function,
            root_path,
            f" (instance prims skipped: {instances})" if instances else "",
        )
    return modified


# --------------------------------------------------------------------------------------------
# Rigid body, collision, mass
# --------------------------------------------------------------------------------------------


def modify_rigid_body_properties_on_prim(prim: Usd.Prim, cfg: RigidBodyBaseCfg) -> bool:
    """Author a rigid-body cfg on one prim.

    Args:
        prim: candidate prim.
        cfg: a :class:`~runtime.physics.cfg.RigidBodyBaseCfg` (or subclass).

    Returns:
        True when the prim has ``PhysicsRigidBodyAPI`` and was authored, else False.
    """
    if not prim.HasAPI(UsdPhysics.RigidBodyAPI):
        return False
    apply_namespaced_schemas(prim, cfg, _cfg_dict(cfg))
    return True


def modify_rigid_body_properties(
    prim_path: str, cfg: RigidBodyBaseCfg, stage: Usd.Stage, *, nested: bool = False
) -> int:
    """Author a rigid-body cfg on every outermost rigid body under ``prim_path``.

    Args:
        prim_path: root of the walk (included).
        cfg: rigid-body cfg.
        stage: stage to author on (its current edit target).
        nested: also author rigid bodies nested below authored ones.

    Returns:
        Number of prims modified.

    Raises:
        PhysicsCfgError: the root prim does not exist, or the cfg cannot be written.
    """
    return _walk(
        stage,
        prim_path,
        cfg,
        modify_rigid_body_properties_on_prim,
        "modify_rigid_body_properties",
        nested=nested,
    )


def define_rigid_body_properties(prim_path: str, cfg: RigidBodyBaseCfg, stage: Usd.Stage) -> int:
    """Apply ``UsdPhysics.RigidBodyAPI`` to ``prim_path`` (if missing) and author ``cfg``.

    Args:
        prim_path: the prim.
        cfg: rigid-body cfg.
        stage: stage to author on.

    Returns:
        Number of prims modified (1).
    """
    prim = _require_prim(stage, prim_path, "define_rigid_body_properties")
    if not prim.HasAPI(UsdPhysics.RigidBodyAPI):
        UsdPhysics.RigidBodyAPI.Apply(prim)
    return modify_rigid_body_properties(prim_path, cfg, stage)


def modify_collision_properties_on_prim(prim: Usd.Prim, cfg: CollisionBaseCfg) -> bool:
    """Author a collision cfg on one prim with ``PhysicsCollisionAPI``.

    Args:
        prim: candidate prim.
        cfg: a :class:`~runtime.physics.cfg.CollisionBaseCfg` (not a mesh cfg).

    Returns:
        True when the prim is a collider and was authored, else False.
    """
    if not prim.HasAPI(UsdPhysics.CollisionAPI):
        return False
    apply_namespaced_schemas(prim, cfg, _cfg_dict(cfg))
    return True


def modify_collision_properties(
    prim_path: str, cfg: CollisionBaseCfg, stage: Usd.Stage, *, nested: bool = False
) -> int:
    """Author a collision cfg on every outermost collider under ``prim_path``.

    Args:
        prim_path: root of the walk.
        cfg: collision cfg.
        stage: stage to author on.
        nested: also visit prims below authored ones.

    Returns:
        Number of prims modified.
    """
    return _walk(
        stage,
        prim_path,
        cfg,
        modify_collision_properties_on_prim,
        "modify_collision_properties",
        nested=nested,
    )


def define_collision_properties(prim_path: str, cfg: CollisionBaseCfg, stage: Usd.Stage) -> int:
    """Apply ``UsdPhysics.CollisionAPI`` to ``prim_path`` (if missing) and author ``cfg``.

    Args:
        prim_path: the prim.
        cfg: collision cfg.
        stage: stage to author on.

    Returns:
        Number of prims modified.
    """
    prim = _require_prim(stage, prim_path, "define_collision_properties")
    if not prim.HasAPI(UsdPhysics.CollisionAPI):
        UsdPhysics.CollisionAPI.Apply(prim)
    return modify_collision_properties(prim_path, cfg, stage)


def modify_mass_properties_on_prim(prim: Usd.Prim, cfg: MassPropertiesCfg) -> bool:
    """Author a mass cfg on one prim with ``PhysicsMassAPI``.

    Args:
        prim: candidate prim.
        cfg: mass cfg.

    Returns:
        True when authored.
    """
    if not prim.HasAPI(UsdPhysics.MassAPI):
        return False
    apply_namespaced_schemas(prim, cfg, _cfg_dict(cfg))
    return True


def modify_mass_properties(
    prim_path: str, cfg: MassPropertiesCfg, stage: Usd.Stage, *, nested: bool = False
) -> int:
    """Author a mass cfg on every outermost ``MassAPI`` prim under ``prim_path``.

    Args:
        prim_path: root of the walk.
        cfg: mass cfg.
        stage: stage to author on.
        nested: also visit prims below authored ones.

    Returns:
        Number of prims modified.
    """
    return _walk(
        stage,
        prim_path,
        cfg,
        modify_mass_properties_on_prim,
        "modify_mass_properties",
        nested=nested,
    )


def define_mass_properties(prim_path: str, cfg: MassPropertiesCfg, stage: Usd.Stage) -> int:
    """Apply ``UsdPhysics.MassAPI`` to ``prim_path`` (if missing) and author ``cfg``.

    Args:
        prim_path: the prim.
        cfg: mass cfg.
        stage: stage to author on.

    Returns:
        Number of prims modified.
    """
    prim = _require_prim(stage, prim_path, "define_mass_properties")
    if not prim.HasAPI(UsdPhysics.MassAPI):
        UsdPhysics.MassAPI.Apply(prim)
    return modify_mass_properties(prim_path, cfg, stage)


# --------------------------------------------------------------------------------------------
# Articulation root
# --------------------------------------------------------------------------------------------


def _find_world_joint(root: Usd.Prim) -> Usd.Prim | None:
    for prim in Usd.PrimRange(root):
        if not prim.IsA(UsdPhysics.Joint):
            continue
        joint = UsdPhysics.Joint(prim)
        if not joint.GetBody0Rel().GetTargets() or not joint.GetBody1Rel().GetTargets():
            return prim
    return None


def _create_world_fixed_joint(stage: Usd.Stage, root: Usd.Prim) -> Usd.Prim:
    owner = root
    while owner.IsInstanceable() or owner.IsInstanceProxy() or owner.IsInPrototype():
        owner = owner.GetParent()
    name = "FixedJoint"
    index = 0
    while owner.GetChild(name):
        name = f"FixedJoint{index}"
        index += 1
    joint = UsdPhysics.FixedJoint.Define(stage, owner.GetPath().AppendChild(name))
    world = UsdGeom.Xformable(root).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    transform = Gf.Transform(world)
    translation = transform.GetTranslation()
    rotation = transform.GetRotation().GetQuat()
    joint.CreateBody1Rel().SetTargets([root.GetPath()])
    joint.CreateLocalPos0Attr().Set(Gf.Vec3f(translation))
    joint.CreateLocalRot0Attr().Set(Gf.Quatf(rotation))
    joint.CreateLocalPos1Attr().Set(Gf.Vec3f(0.0, 0.0, 0.0))
    joint.CreateLocalRot1Attr().Set(Gf.Quatf(1.0, 0.0, 0.0, 0.0))
    joint.CreateBreakForceAttr().Set(_UNBREAKABLE)
    joint.CreateBreakTorqueAttr().Set(_UNBREAKABLE)
    return joint.GetPrim()


def _move_articulation_root_to_parent(root: Usd.Prim) -> None:
    parent = root.GetParent()
    if not parent or parent.IsPseudoRoot():
        _LOG.warning(
            "fix_root_link: %s has no parent prim; the articulation root stays on it",
            root.GetPath(),
        )
        return
    UsdPhysics.ArticulationRootAPI.Apply(parent)
    _add_schema(parent, "PhysxArticulationAPI")
    names = list(UsdPhysics.ArticulationRootAPI.GetSchemaAttributeNames(False))
    for attr in root.GetAttributes():
        name = attr.GetName()
        if not (name in names or name.startswith("physxArticulation:")):
            continue
        if not attr.HasAuthoredValue():
            continue
        target = parent.GetAttribute(name)
        if not target:
            target = parent.CreateAttribute(name, attr.GetTypeName(), custom=False)
        target.Set(attr.Get())
    if any(a.GetName().startswith("newton:") for a in root.GetAttributes()) or (
        "NewtonArticulationRootAPI" in applied_schemas(root)
    ):
        _LOG.warning(
            "fix_root_link: newton:* articulation attributes of %s are not moved to %s",
            root.GetPath(),
            parent.GetPath(),
        )
    root.RemoveAppliedSchema("PhysxArticulationAPI")
    root.RemoveAPI(UsdPhysics.ArticulationRootAPI)


def modify_articulation_root_properties_on_prim(
    prim: Usd.Prim, cfg: ArticulationRootBaseCfg
) -> bool:
    """Author an articulation-root cfg on one prim with ``PhysicsArticulationRootAPI``.

    ``fix_root_link`` toggles the first world-attached joint of the subtree; when there is
    none and it is True, a world ``FixedJoint`` is created and the articulation root moves to
    the parent prim.

    Args:
        prim: candidate prim.
        cfg: articulation-root cfg.

    Returns:
        True when authored.

    Raises:
        NotImplementedError: ``fix_root_link=True``, no world joint and the root is no rigid
            body.
    """
    if not prim.HasAPI(UsdPhysics.ArticulationRootAPI):
        return False
    cfg_dict = _cfg_dict(cfg)
    fix_root_link = cfg_dict.pop("fix_root_link")
    if fix_root_link is not None and not isinstance(fix_root_link, bool):
        raise PhysicsCfgError(
            str(prim.GetPath()),
            "",
            f"cfg field {type(cfg).__name__}.fix_root_link: expected a bool, got {fix_root_link!r}",
            field="fix_root_link",
        )
    apply_namespaced_schemas(prim, cfg, cfg_dict)
    if fix_root_link is None:
        return True
    joint_prim = _find_world_joint(prim)
    if joint_prim is not None:
        UsdPhysics.Joint(joint_prim).CreateJointEnabledAttr().Set(fix_root_link)
        return True
    if not fix_root_link:
        return True
    if not prim.HasAPI(UsdPhysics.RigidBodyAPI):
        raise NotImplementedError(
            f"{prim.GetPath()}: cfg field {type(cfg).__name__}.fix_root_link=True needs either a "
            "world-attached joint under the articulation root or a root prim with "
            "PhysicsRigidBodyAPI to attach a world FixedJoint to"
        )
    _create_world_fixed_joint(prim.GetStage(), prim)
    _move_articulation_root_to_parent(prim)
    return True


def modify_articulation_root_properties(
    prim_path: str, cfg: ArticulationRootBaseCfg, stage: Usd.Stage, *, nested: bool = False
) -> int:
    """Author an articulation-root cfg on every outermost articulation root under a path.

    Args:
        prim_path: root of the walk.
        cfg: articulation-root cfg.
        stage: stage to author on.
        nested: also visit prims below authored ones.

    Returns:
        Number of prims modified.
    """
    return _walk(
        stage,
        prim_path,
        cfg,
        modify_articulation_root_properties_on_prim,
        "modify_articulation_root_properties",
        nested=nested,
    )


def define_articulation_root_properties(
    prim_path: str, cfg: ArticulationRootBaseCfg, stage: Usd.Stage
) -> int:
    """Apply ``UsdPhysics.ArticulationRootAPI`` (if missing) and author ``cfg``.

    Args:
        prim_path: the prim.
        cfg: articulation-root cfg.
        stage: stage to author on.

    Returns:
        Number of prims modified.
    """
    prim = _require_prim(stage, prim_path, "define_articulation_root_properties")
    if not prim.HasAPI(UsdPhysics.ArticulationRootAPI):
        UsdPhysics.ArticulationRootAPI.Apply(prim)
    return modify_articulation_root_properties(prim_path, cfg, stage)


# --------------------------------------------------------------------------------------------
# Joint drives
# --------------------------------------------------------------------------------------------

_DRIVE_FIELDS = ("drive_type", "max_force", "stiffness", "damping")


def _drive_axis(prim: Usd.Prim) -> str | None:
    if prim.IsA(UsdPhysics.RevoluteJoint):
        return "angular"
    if prim.IsA(UsdPhysics.PrismaticJoint):
        return "linear"
    return None


def modify_joint_drive_properties_on_prim(prim: Usd.Prim, cfg: JointDriveBaseCfg) -> bool:
    """Author a joint-drive cfg on one revolute or prismatic joint.

    Applies ``PhysicsDriveAPI:<axis>`` (``angular`` / ``linear``) unconditionally, converts
    angular stiffness/damping from per-radian to per-degree and the velocity limit from rad/s
    to deg/s, writes the drive fields through the typed API and routes the rest.

    Args:
        prim: candidate prim.
        cfg: joint-drive cfg.

    Returns:
        True when the prim is a revolute/prismatic joint (not a tendon axis) and was authored.
    """
    if not prim or not prim.IsValid():
        raise PhysicsCfgError(str(prim.GetPath()), "", "joint drive writer: invalid prim")
    axis = _drive_axis(prim)
    if axis is None:
        return False
    schemas = str(applied_schemas(prim))
    if "PhysxTendonAxisAPI" in schemas and "PhysxTendonAxisRootAPI" not in schemas:
        return False
    if cfg.max_velocity is not None or cfg.max_effort is not None:
        cfg = copy.copy(cfg)
        forward_field_alias(cfg, "max_velocity", "max_joint_velocity")
        forward_field_alias(cfg, "max_effort", "max_force")
    cfg_dict = _cfg_dict(cfg)
    _check_values(prim, cfg, cfg_dict)

    if not prim.HasAPI(UsdPhysics.DriveAPI, axis):
        UsdPhysics.DriveAPI.Apply(prim, axis)
    drive = UsdPhysics.DriveAPI(prim, axis)

    ensure = cfg_dict.pop("ensure_drives_exist")
    if ensure and cfg_dict["stiffness"] is None and cfg_dict["damping"] is None:
        current_k = drive.GetStiffnessAttr().Get()
        current_d = drive.GetDampingAttr().Get()
        if not current_k and not current_d:
            cfg_dict["stiffness"] = 1e-3

    if axis == "angular":
        if cfg_dict.get("max_joint_velocity") is not None:
            cfg_dict["max_joint_velocity"] = float(cfg_dict["max_joint_velocity"]) * 180.0 / math.pi
        for name in ("stiffness", "damping"):
            if cfg_dict[name] is not None:
                cfg_dict[name] = float(cfg_dict[name]) * math.pi / 180.0

    drive_values = {name: cfg_dict.pop(name) for name in _DRIVE_FIELDS}
    if drive_values["drive_type"] is not None:
        drive.CreateTypeAttr().Set(drive_values["drive_type"])
    if drive_values["max_force"] is not None:
        drive.CreateMaxForceAttr().Set(float(drive_values["max_force"]))
    if drive_values["stiffness"] is not None:
        drive.CreateStiffnessAttr().Set(float(drive_values["stiffness"]))
    if drive_values["damping"] is not None:
        drive.CreateDampingAttr().Set(float(drive_values["damping"]))
    apply_namespaced_schemas(prim, cfg, cfg_dict)
    return True


def modify_joint_drive_properties(
    prim_path: str, cfg: JointDriveBaseCfg, stage: Usd.Stage, *, nested: bool = False
) -> int:
    """Author a joint-drive cfg on every revolute/prismatic joint under ``prim_path``.

    Args:
        prim_path: root of the walk.
        cfg: joint-drive cfg.
        stage: stage to author on.
        nested: also visit prims below authored ones.

    Returns:
        Number of joints modified.
    """
    return _walk(
        stage,
        prim_path,
        cfg,
        modify_joint_drive_properties_on_prim,
        "modify_joint_drive_properties",
        nested=nested,
    )


# --------------------------------------------------------------------------------------------
# Mesh collision
# --------------------------------------------------------------------------------------------


def modify_mesh_collision_properties(
    prim_path: str, cfg: MeshCollisionBaseCfg, stage: Usd.Stage
) -> int:
    """Author a mesh-collision cfg on exactly the given prim.

    Applies ``PhysicsMeshCollisionAPI`` if missing, writes ``physics:approximation`` through the
    typed API, and routes the cooking fields (their schema is applied only if one of them is
    set). Does not apply ``PhysicsCollisionAPI``.

    Args:
        prim_path: the mesh prim.
        cfg: mesh-collision cfg.
        stage: stage to author on.

    Returns:
        1.

    Raises:
        PhysicsCfgError: unknown ``mesh_approximation_name`` (a ``ValueError``).
    """
    prim = _require_prim(stage, prim_path, "modify_mesh_collision_properties")
    cfg_dict = _cfg_dict(cfg)
    name = cfg_dict.pop("mesh_approximation_name", "none")
    if name not in MESH_APPROXIMATION_TOKENS:
        raise PhysicsCfgError(
            str(prim_path),
            "physics:approximation",
            f"cfg field {type(cfg).__name__}.mesh_approximation_name: unknown approximation "
            f"{name!r}",
            allowed=", ".join(MESH_APPROXIMATION_TOKENS),
            field="mesh_approximation_name",
        )
    _check_values(prim, cfg, cfg_dict)
    if not prim.HasAPI(UsdPhysics.MeshCollisionAPI):
        UsdPhysics.MeshCollisionAPI.Apply(prim)
    UsdPhysics.MeshCollisionAPI(prim).CreateApproximationAttr().Set(MESH_APPROXIMATION_TOKENS[name])
    apply_namespaced_schemas(prim, cfg, cfg_dict)
    return 1


def define_mesh_collision_properties(
    prim_path: str, cfg: MeshCollisionBaseCfg, stage: Usd.Stage
) -> int:
    """Apply ``UsdPhysics.MeshCollisionAPI`` and author ``cfg`` on the given prim.

    Args:
        prim_path: the mesh prim.
        cfg: mesh-collision cfg.
        stage: stage to author on.

    Returns:
        1.
    """
    prim = _require_prim(stage, prim_path, "define_mesh_collision_properties")
    if not prim.HasAPI(UsdPhysics.MeshCollisionAPI):
        UsdPhysics.MeshCollisionAPI.Apply(prim)
    return modify_mesh_collision_properties(prim_path, cfg, stage)


# --------------------------------------------------------------------------------------------
# Materials
# --------------------------------------------------------------------------------------------


def spawn_rigid_body_material(
    prim_path: str, cfg: RigidBodyMaterialBaseCfg, stage: Usd.Stage
) -> Usd.Prim:
    """Create (or reuse) a ``UsdShade.Material`` with ``PhysicsMaterialAPI`` and author ``cfg``.

    Base friction/restitution are always written; ``PhysxMaterialAPI`` / ``NewtonMaterialAPI``
    only when one of their fields is set.

    Args:
        prim_path: material prim path.
        cfg: rigid-body material cfg.
        stage: stage to author on.

    Returns:
        The material prim.

    Raises:
        PhysicsCfgError: a non-Material prim already exists at ``prim_path``.
    """
    if stage is None:
        raise ValueError(f"spawn_rigid_body_material({prim_path!r}): a Usd.Stage is required")
    prim = stage.GetPrimAtPath(str(prim_path))
    if prim and prim.IsValid():
        if not prim.IsA(UsdShade.Material):
            raise PhysicsCfgError(
                str(prim_path),
                "",
                f"cannot spawn {type(cfg).__name__}: prim exists and is a "
                f"{prim.GetTypeName() or 'typeless prim'}, not a Material",
            )
    else:
        prim = UsdShade.Material.Define(stage, str(prim_path)).GetPrim()
    cfg_dict = _cfg_dict(cfg)
    cfg_dict.pop("func", None)
    _check_values(prim, cfg, cfg_dict)
    if not prim.HasAPI(UsdPhysics.MaterialAPI):
        UsdPhysics.MaterialAPI.Apply(prim)
    apply_namespaced_schemas(prim, cfg, cfg_dict)
    return prim


def bind_physics_material(prim: Usd.Prim, material_path: str) -> None:
    """Bind a material to ``prim`` with the ``physics`` purpose.

    Uses ``weakerThanDescendants`` strength. Note that usd-core's UsdPhysics stage parser (and
    hence the MuJoCo builder) only honours bindings on the collision prims themselves, so bind
    each collider (see :func:`bind_physics_material_to_colliders`).

    Args:
        prim: the prim to bind on.
        material_path: path of a ``UsdShade.Material``.
    """
    material = UsdShade.Material(prim.GetStage().GetPrimAtPath(str(material_path)))
    binding = UsdShade.MaterialBindingAPI.Apply(prim)
    binding.Bind(material, UsdShade.Tokens.weakerThanDescendants, "physics")


def bind_physics_material_to_colliders(root: Usd.Prim, material_path: str) -> int:
    """Bind a physics material to every collider (``PhysicsCollisionAPI`` prim) under ``root``.

    Instance prims and their subtrees are skipped (instance proxies cannot be edited).

    Args:
        root: subtree root (included).
        material_path: path of a ``UsdShade.Material`` with ``PhysicsMaterialAPI``.

    Returns:
        Number of colliders bound.
    """
    count = 0
    it = iter(Usd.PrimRange(root))
    for prim in it:
        if prim.IsInstance():
            it.PruneChildren()
            continue
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            bind_physics_material(prim, material_path)
            count += 1
    return count


# --------------------------------------------------------------------------------------------
# Strict single-prim dispatch
# --------------------------------------------------------------------------------------------


def _set_fields(cfg: Any) -> list[str]:
    return [
        f.name
        for f in dataclasses.fields(cfg)
        if getattr(cfg, f.name) is not None and f.name not in ("func", "ensure_drives_exist")
    ]


def apply_cfg_to_prim(prim: Usd.Prim, cfg: Any) -> None:
    """Author any cfg on exactly ``prim``, raising when the prim is not a target of the cfg.

    Args:
        prim: the prim.
        cfg: any property cfg (rigid body, collision, mass, articulation root, joint drive,
            mesh collision).

    Raises:
        PhysicsCfgError: the prim lacks the API the cfg needs (naming the prim, the required
            API and the cfg fields), or a value cannot be written.
        TypeError: ``cfg`` is not a physics property cfg.
    """
    path = str(prim.GetPath())
    table: list[tuple[type, Callable[[Usd.Prim, Any], bool], str]] = [
        (RigidBodyBaseCfg, modify_rigid_body_properties_on_prim, "PhysicsRigidBodyAPI"),
        (MassPropertiesCfg, modify_mass_properties_on_prim, "PhysicsMassAPI"),
        (
            ArticulationRootBaseCfg,
            modify_articulation_root_properties_on_prim,
            "PhysicsArticulationRootAPI",
        ),
        (
            JointDriveBaseCfg,
            modify_joint_drive_properties_on_prim,
            "a RevoluteJoint or PrismaticJoint prim type",
        ),
    ]
    if isinstance(cfg, MeshCollisionBaseCfg):
        modify_mesh_collision_properties(path, cfg, prim.GetStage())
        return
    if isinstance(cfg, CollisionBaseCfg):
        table.append((CollisionBaseCfg, modify_collision_properties_on_prim, "PhysicsCollisionAPI"))
    for base, inner, needed in table:
        if isinstance(cfg, base):
            if not inner(prim, cfg):
                fields = _set_fields(cfg)
                raise PhysicsCfgError(
                    path,
                    ", ".join(to_camel_case(name) for name in fields),
                    f"cannot author {type(cfg).__name__} fields {fields}: the prim "
                    f"({prim.GetTypeName() or 'typeless'}) lacks {needed}",
                    field=fields[0] if fields else "",
                )
            return
    raise TypeError(f"{type(cfg).__name__} is not a physics property cfg")
