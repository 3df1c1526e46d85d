"""``isaaclab_physx.sim.spawners``: see the ``materials`` submodule."""
