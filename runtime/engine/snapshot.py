"""The model arrays per-episode randomization edits, saved to restore an engine's model.

Batch workers that reuse an engine across episodes and the vector environments' worlds
(each with its own model) restore them at every reset; MuJoCo's ``mj_resetData`` restores
the data, never the model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MODEL_FIELDS", "ModelSnapshot"]

MODEL_FIELDS = (
    "body_mass",
    "body_inertia",
    "geom_friction",
    "actuator_gainprm",
    "actuator_biasprm",
)
"""``MjModel`` arrays the randomization scales (mass, friction, drive gains)."""


class ModelSnapshot:
    """Copies of :data:`MODEL_FIELDS` of a model in its authored state.

    Args:
        model: the ``mujoco.MjModel`` in its authored state.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.saved = {name: np.array(getattr(model, name), copy=True) for name in MODEL_FIELDS}

    def restore(self) -> None:
        """Write the saved arrays back (in place)."""
        for name, values in self.saved.items():
            getattr(self.model, name)[...] = values
