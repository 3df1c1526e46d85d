"""Articulation-root writer: cfg fields plus ``fix_root_link`` (world joint handling)."""

from __future__ import annotations

from pxr import Gf, Usd, UsdGeom, UsdPhysics

from runtime.physics._meta import PhysicsCfgError
from runtime.physics._routing import (
    LOG,
    add_schema,
    applied_schemas,
    apply_namespaced_schemas,
    cfg_fields,
    define_with_api,
    walk_subtree,
)
from runtime.physics.cfg import ArticulationRootBaseCfg

#: Break force / torque of a created world fixed joint (FLT_MAX: unbreakable).
_UNBREAKABLE = 3.40282347e38


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
        LOG.warning(
            "fix_root_link: %s has no parent prim; the articulation root stays on it",
            root.GetPath(),
        )
        return
    UsdPhysics.ArticulationRootAPI.Apply(parent)
    add_schema(parent, "PhysxArticulationAPI")
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
        LOG.warning(
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
    cfg_dict = cfg_fields(cfg)
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
    return walk_subtree(
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
    return define_with_api(
        stage,
        prim_path,
        cfg,
        UsdPhysics.ArticulationRootAPI,
        modify_articulation_root_properties,
        "define_articulation_root_properties",
    )
