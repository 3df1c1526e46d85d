"""``isaaclab.sim.spawners.materials``: the rigid-body material base cfg and its spawner."""

from __future__ import annotations

from typing import Any

from runtime.compat._stage import resolve_stage
from runtime.physics.cfg import PhysicsMaterialCfg, RigidBodyMaterialBaseCfg

__all__ = ["PhysicsMaterialCfg", "RigidBodyMaterialBaseCfg", "spawn_rigid_body_material"]


def spawn_rigid_body_material(
    prim_path: str, cfg: RigidBodyMaterialBaseCfg, stage: Any = None
) -> Any:
    """Create (or reuse) a physics material at ``prim_path`` and author ``cfg``.

    Args:
        prim_path: material prim path.
        cfg: rigid-body material cfg (base, PhysX or Newton).
        stage: the stage (default: the current compat stage).

    Returns:
        The material ``Usd.Prim``.
    """
    from runtime.physics.writers import spawn_rigid_body_material as _spawn

    return _spawn(prim_path, cfg, resolve_stage(stage))
