"""Compatibility layers: Isaac-Sim-named entry points over simrt's snake_case API.

``runtime.compat.isaac`` mirrors the names of Isaac Sim's ``usd.schema.isaac.robot_schema``
(and, as other areas add them, its kinematics / poser names) so a script ports by changing
its import. Importing this package loads nothing heavy; import ``runtime.compat.isaac`` (Isaac Sim
names) or ``runtime.compat.isaaclab.sim`` / ``runtime.compat.isaaclab_physx.sim.schemas`` /
``runtime.compat.isaaclab_newton.sim.schemas`` (Isaac Lab names) itself.
``set_current_stage(stage)`` gives the compat APIs the stage Isaac would take from its
application.
"""

from runtime.compat._stage import get_current_stage, set_current_stage

__all__: list[str] = ["get_current_stage", "set_current_stage"]
