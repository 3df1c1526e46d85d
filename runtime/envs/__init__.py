"""Gymnasium environments over USD scenes: ``SimEnv`` and ``SimVectorEnv``.

Importing this package registers the example tasks (:mod:`runtime.envs.tasks`):
``gymnasium.make("simrt/PandaReach-v0")``, ``gymnasium.make_vec("simrt/Go2Stand-v0",
num_envs=16)``.
"""

from __future__ import annotations

import gymnasium

from runtime.envs.actions import ACTIONS
from runtime.envs.env import SimEnv
from runtime.envs.observations import STATE_NAMES
from runtime.envs.vector_env import SimVectorEnv, episode_seed

__all__ = ["ACTIONS", "STATE_NAMES", "SimEnv", "SimVectorEnv", "episode_seed"]

for _name, _single, _vector in (
    ("simrt/PandaReach-v0", "panda_reach", "panda_reach_vector"),
    ("simrt/Go2Stand-v0", "go2_stand", "go2_stand_vector"),
):
    if _name not in gymnasium.registry:
        gymnasium.register(
            _name,
            entry_point=f"runtime.envs.tasks:{_single}",
            vector_entry_point=f"runtime.envs.tasks:{_vector}",
        )
