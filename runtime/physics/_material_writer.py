"""Physics material writer and physics-purpose material binding."""

from __future__ import annotations

from typing import Any

from pxr import Usd, UsdPhysics, UsdShade

from runtime.physics._meta import PhysicsCfgError
from runtime.physics._routing import apply_namespaced_schemas, cfg_fields, check_cfg_values


def spawn_rigid_body_material(prim_path: str, cfg: Any, stage: Usd.Stage) -> Usd.Prim:
    """Create (or reuse) a ``UsdShade.Material`` with ``PhysicsMaterialAPI`` and author ``cfg``.

    Base friction/restitution are always written; ``PhysxMaterialAPI`` / ``NewtonMaterialAPI``
    only when one of their fields is set.

    Args:
        prim_path: material prim path.
        cfg: a :class:`~runtime.physics.cfg.RigidBodyMaterialBaseCfg` (or subclass); read
            through its fields only, so this module does not import the cfg classes (whose
            ``func`` default is this function).
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
    cfg_dict = cfg_fields(cfg)
    cfg_dict.pop("func", None)
    check_cfg_values(prim, cfg, cfg_dict)
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
