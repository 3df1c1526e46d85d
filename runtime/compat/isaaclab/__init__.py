"""Isaac Lab names over simrt: ``runtime.compat.isaaclab.sim`` mirrors ``isaaclab.sim``.

Porting rule: prefix the Isaac Lab module path with ``runtime.compat.`` --
``import isaaclab.sim as sim_utils`` becomes ``import runtime.compat.isaaclab.sim as
sim_utils``; ``isaaclab_physx.sim.schemas`` and ``isaaclab_newton.sim.schemas`` become
``runtime.compat.isaaclab_physx.sim.schemas`` / ``runtime.compat.isaaclab_newton.sim.schemas``.
Everything is built on :mod:`runtime.physics` (cfg classes and writers).
``runtime.compat.isaaclab.utils.noise`` mirrors ``isaaclab.utils.noise`` (noise cfgs converted
to :mod:`runtime.sensors.noise` models).
"""
