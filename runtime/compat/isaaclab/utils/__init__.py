"""``isaaclab.utils`` names over simrt: :mod:`.noise` (``isaaclab.utils.noise``)."""

from __future__ import annotations

from runtime.compat.isaaclab.utils import noise

__all__ = ["noise"]
