"""Compatibility layers: Isaac-Sim-named entry points over simrt's snake_case API.

``runtime.compat.isaac`` mirrors the names of Isaac Sim's ``usd.schema.isaac.robot_schema``
(and, as other areas add them, its kinematics / poser names) so a script ports by changing
its import. Importing this package loads nothing; import ``runtime.compat.isaac`` itself.
"""

__all__: list[str] = []
