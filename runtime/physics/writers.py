"""Writers that author physics property cfgs onto USD prims (usd-core only).

Every cfg ends in one routing helper, :func:`apply_namespaced_schemas` (see
``runtime/physics/_routing.py`` for the routing rules): exception fields go to their exception
namespace and schema, every other non-None field to the ``_usd_namespace`` of the class that
declares it.

``modify_*(prim_path, cfg, stage)`` walk the subtree breadth-first and return the number of
prims modified; ``modify_*_on_prim(prim, cfg)`` handle one prim and return whether it was a
target; ``define_*(prim_path, cfg, stage)`` apply the UsdPhysics API first.

This module is the public path of every writer. Rigid-body, collision, mass and mesh-collision
writers and the strict single-prim dispatch :func:`apply_cfg_to_prim` live here; the
articulation-root, joint-drive and material writers live in ``_articulation_writer.py``,
``_drive_writer.py`` and ``_material_writer.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pxr import Usd, UsdPhysics

from runtime.physics._articulation_writer import (
    define_articulation_root_properties,
    modify_articulation_root_properties,
    modify_articulation_root_properties_on_prim,
)
from runtime.physics._drive_writer import (
    modify_joint_drive_properties,
    modify_joint_drive_properties_on_prim,
)
from runtime.physics._material_writer import (
    bind_physics_material,
    bind_physics_material_to_colliders,
    spawn_rigid_body_material,
)
from runtime.physics._meta import PhysicsCfgError, to_camel_case
from runtime.physics._routing import (
    applied_schemas,
    apply_namespaced_schemas,
    cfg_fields,
    check_cfg_values,
    define_with_api,
    modify_if_api,
    require_prim,
    walk_subtree,
)
from runtime.physics.cfg import (
    MESH_APPROXIMATION_TOKENS,
    ArticulationRootBaseCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    RigidBodyBaseCfg,
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
    return modify_if_api(prim, cfg, UsdPhysics.RigidBodyAPI)


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
    return walk_subtree(
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
    return define_with_api(
        stage,
        prim_path,
        cfg,
        UsdPhysics.RigidBodyAPI,
        modify_rigid_body_properties,
        "define_rigid_body_properties",
    )


def modify_collision_properties_on_prim(prim: Usd.Prim, cfg: CollisionBaseCfg) -> bool:
    """Author a collision cfg on one prim with ``PhysicsCollisionAPI``.

    Args:
        prim: candidate prim.
        cfg: a :class:`~runtime.physics.cfg.CollisionBaseCfg` (not a mesh cfg).

    Returns:
        True when the prim is a collider and was authored, else False.
    """
    return modify_if_api(prim, cfg, UsdPhysics.CollisionAPI)


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
    return walk_subtree(
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
    return define_with_api(
        stage,
        prim_path,
        cfg,
        UsdPhysics.CollisionAPI,
        modify_collision_properties,
        "define_collision_properties",
    )


def modify_mass_properties_on_prim(prim: Usd.Prim, cfg: MassPropertiesCfg) -> bool:
    """Author a mass cfg on one prim with ``PhysicsMassAPI``.

    Args:
        prim: candidate prim.
        cfg: mass cfg.

    Returns:
        True when authored.
    """
    return modify_if_api(prim, cfg, UsdPhysics.MassAPI)


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
    return walk_subtree(
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
    return define_with_api(
        stage, prim_path, cfg, UsdPhysics.MassAPI, modify_mass_properties, "define_mass_properties"
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
    prim = require_prim(stage, prim_path, "modify_mesh_collision_properties")
    cfg_dict = cfg_fields(cfg)
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
    check_cfg_values(prim, cfg, cfg_dict)
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
    return define_with_api(
        stage,
        prim_path,
        cfg,
        UsdPhysics.MeshCollisionAPI,
        modify_mesh_collision_properties,
        "define_mesh_collision_properties",
    )


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
