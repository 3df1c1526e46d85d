"""``isaaclab_physx.sim``: see the ``schemas`` submodule."""
