"""``isaaclab_newton`` names over simrt (see ``runtime.compat.isaaclab`` for the porting rule)."""
