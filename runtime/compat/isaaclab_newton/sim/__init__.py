"""``isaaclab_newton.sim``: see the ``schemas`` submodule."""
