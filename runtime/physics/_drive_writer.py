"""Joint-drive writer: ``PhysicsDriveAPI`` on revolute / prismatic joints, plus routed fields."""

from __future__ import annotations

import copy
import math

from pxr import Usd, UsdPhysics

from runtime.physics._meta import PhysicsCfgError, forward_field_alias
from runtime.physics._routing import (
    applied_schemas,
    apply_namespaced_schemas,
    cfg_fields,
    check_cfg_values,
    walk_subtree,
)
from runtime.physics.cfg import JointDriveBaseCfg

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
    cfg_dict = cfg_fields(cfg)
    check_cfg_values(prim, cfg, cfg_dict)

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
    return walk_subtree(
        stage,
        prim_path,
        cfg,
        modify_joint_drive_properties_on_prim,
        "modify_joint_drive_properties",
        nested=nested,
    )
