"""Which MuJoCo body (and which USD prim path) each lab sensor reads.

:class:`BodyIndex` lists the "entities" a lab sensor can name: the rigid bodies and the
static colliders of a model, each with its path. A model built by
:class:`~runtime.engine.mujoco_engine.MujocoEngine` names them by USD prim path
(``engine.built.body_paths``; static colliders sit on MuJoCo's world body but keep their own
path, so a contact filter can name ``/World/Ground``); a plain ``mujoco.MjModel`` (e.g. from
MJCF) names them by MuJoCo body name (``"world"`` for body 0).

Path expressions are Python regular expressions matched against the whole path, as Isaac
Lab's ``prim_path`` expressions are; ``{ENV_REGEX_NS}`` stands for ``/World`` or
``/World/envs/env_<i>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["BodyIndex", "ENV_REGEX_NS", "body_index_of", "compile_path_expression"]

ENV_REGEX_NS = "{ENV_REGEX_NS}"
"""Isaac Lab's placeholder for the environment namespace in path expressions."""

_ENV_NS_PATTERN = r"/World(?:/envs/env_[^/]+)?"


def compile_path_expression(expression: str) -> re.Pattern[str]:
    """Compile a prim path expression (regex, full match; ``{ENV_REGEX_NS}`` expanded).

    Args:
        expression: e.g. ``"/World/Go2/.*_foot"`` or ``"{ENV_REGEX_NS}/Robot/base"``.

    Returns:
        The compiled pattern.

    Raises:
        ValueError: the expression is empty or not a valid regular expression.
    """
    if not isinstance(expression, str) or not expression:
        raise ValueError(f"prim path expression must be a non-empty string, got {expression!r}")
    text = expression.replace(ENV_REGEX_NS, _ENV_NS_PATTERN)
    try:
        return re.compile(text)
    except re.error as error:
        raise ValueError(f"prim path expression {expression!r} is not a regex: {error}") from None


@dataclass(frozen=True)
class BodyIndex:
    """Paths and MuJoCo ids of the bodies and static colliders of one model.

    Attributes:
        paths: entity paths (USD prim paths, or MuJoCo body names), (E,).
        body_ids: MuJoCo body id per entity (static colliders: 0), shape (E,), int64.
        is_static: True for static colliders (not MuJoCo bodies of their own), (E,) bool.
        static_positions: world position of static entities [m], (E, 3) float64 (rows of
            moving bodies unused).
        static_orientations: world orientation (wxyz) of static entities, (E, 4) float64.
        geom_entity: entity index per MuJoCo geom (-1: none), shape (ngeom,), int64.
    """

    paths: tuple[str, ...]
    body_ids: np.ndarray
    is_static: np.ndarray
    static_positions: np.ndarray
    static_orientations: np.ndarray
    geom_entity: np.ndarray

    @classmethod
    def from_model(cls, model: Any) -> BodyIndex:
        """One entity per MuJoCo body, named by the body's name (``body<i>`` if unnamed)."""
        count = int(model.nbody)
        paths = tuple(model.body(i).name or f"body{i}" for i in range(count))
        return cls(
            paths=paths,
            body_ids=np.arange(count, dtype=np.int64),
            is_static=np.zeros(count, bool),
            static_positions=np.zeros((count, 3)),
            static_orientations=np.tile([1.0, 0.0, 0.0, 0.0], (count, 1)),
            geom_entity=np.asarray(model.geom_bodyid, np.int64).copy(),
        )

    @classmethod
    def from_engine(cls, engine: Any) -> BodyIndex:
        """The engine's ``body_paths`` (rigid bodies, then static colliders)."""
        built = engine.built
        return cls(
            paths=tuple(built.body_paths),
            body_ids=np.asarray(built.body_ids, np.int64).copy(),
            is_static=np.asarray(built.is_static, bool).copy(),
            static_positions=np.asarray(built.static_positions, np.float64).reshape(-1, 3),
            static_orientations=np.asarray(built.static_orientations, np.float64).reshape(-1, 4),
            geom_entity=np.asarray(built.geom_body_index, np.int64).copy(),
        )

    def match(self, expression: str, *, moving_only: bool = False) -> list[int]:
        """Entity indices whose path fully matches ``expression``, in entity order.

        Args:
            expression: prim path expression (see :func:`compile_path_expression`).
            moving_only: leave out static colliders (and MuJoCo's world body).

        Returns:
            Matching entity indices (empty when nothing matches).
        """
        pattern = compile_path_expression(expression)
        return [
            i
            for i, path in enumerate(self.paths)
            if pattern.fullmatch(path)
            and not (moving_only and (self.is_static[i] or self.body_ids[i] == 0))
        ]

    def match_all(self, expressions: Sequence[str]) -> list[int]:
        """Entities matched by any of ``expressions``, each once, in entity order."""
        patterns = [compile_path_expression(e) for e in expressions]
        return [i for i, path in enumerate(self.paths) if any(p.fullmatch(path) for p in patterns)]

    def name_of(self, entity: int) -> str:
        """Last path element of an entity (its body name)."""
        return self.paths[entity].rsplit("/", 1)[-1]


def body_index_of(source: Any) -> tuple[Any, BodyIndex]:
    """``(mujoco.MjModel, BodyIndex)`` of a ``MujocoEngine`` or a plain ``mujoco.MjModel``."""
    if hasattr(source, "built") and hasattr(source, "model"):
        return source.model, BodyIndex.from_engine(source)
    if hasattr(source, "nbody") and hasattr(source, "geom_bodyid"):
        return source, BodyIndex.from_model(source)
    raise TypeError(f"expected a MujocoEngine or a mujoco.MjModel, got {type(source).__name__}")
