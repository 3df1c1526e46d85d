"""``isaaclab_physx.sim.spawners.materials``: the PhysX rigid-body material cfg."""

from __future__ import annotations

from runtime.physics.physx import PhysxRigidBodyMaterialCfg

__all__ = ["PhysxRigidBodyMaterialCfg"]
