"""Hit prim paths of ray-cast readings as integer ids into a per-channel path table."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["HitPathIds"]


class HitPathIds:
    """Maps a raycast reading's hit prim paths (one string per ray) to path-table indices.

    ``ids(paths, hits)`` is an int32 array of the channel shape: for each ray that hit
    (``hits``; without it, each of the first ``len(paths)`` rays) with a non-empty path,
    the index of that path in ``table`` (paths are appended in order of first
    appearance), else -1. The sensor reuses one tuple object for a repeated hit pattern,
    so results are cached by the tuple object and the hit mask's bytes; a cached result
    is a read-only array shared between the steps that share it.
    """

    CACHE_SIZE = 256

    def __init__(self, table: list[str], shape: tuple[int, ...]) -> None:
        self.table = table
        self.shape = shape
        self._index: dict[str, int] = {}
        # id(paths tuple) -> (the tuple, hit mask bytes, ids); the tuple is held so its id
        # cannot be reused by another object while the entry exists
        self._cache: dict[int, tuple[tuple[str, ...], bytes, np.ndarray]] = {}
        # actor index -> table index (-2: not seen yet; the last entry, for actor -1: -1)
        self._actor_table: object = None
        self._lut = np.full(1, -1, np.int32)
        self._actor_cache: dict[int, tuple[np.ndarray, bytes, np.ndarray]] = {}

    def id_of(self, text: str) -> int:
        """The table index of a (non-empty) path, appended to the table when new."""
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.table)
            self.table.append(text)
        return found

    def ids(self, paths: Sequence[str], hits: np.ndarray | None) -> np.ndarray:
        """The int32 indices of one reading's paths (see the class docstring)."""
        cacheable = type(paths) is tuple and hits is not None
        if cacheable:
            mask = hits.tobytes()
            entry = self._cache.get(id(paths))
            if entry is not None and entry[0] is paths and entry[1] == mask:
                return entry[2]
        ids = np.full(self.shape, -1, dtype=np.int32)
        count = min(len(paths), self.shape[0])
        rows = np.flatnonzero(hits).tolist() if hits is not None else range(count)
        for i in rows:
            text = paths[i] if i < count else ""
            if text:
                ids[i] = self.id_of(text)
        if cacheable:
            ids.flags.writeable = False
            if len(self._cache) >= self.CACHE_SIZE:
                self._cache.clear()
            self._cache[id(paths)] = (paths, mask, ids)
        return ids

    def ids_of_actors(
        self, actors: np.ndarray, actor_paths: Sequence[str], hits: np.ndarray
    ) -> np.ndarray:
        """``ids`` from per-ray actor indices (into ``actor_paths``; -1: none) instead of paths.

        The same result as ``ids`` of the paths ``actor_paths[actors[i]]``: the kernels
        report what a ray hit as an actor index, so a step's ids are one table lookup per
        ray, with Python work only for actors whose path is not in the table yet. Results
        are cached by the actor array object (readings of a repeated hit pattern share it)
        and the hit mask, and are read-only.
        """
        if actor_paths is not self._actor_table:
            self._actor_table = actor_paths
            self._lut = np.full(len(actor_paths) + 1, -2, np.int32)
            self._lut[-1] = -1
            self._actor_cache.clear()
        mask = hits.tobytes()
        entry = self._actor_cache.get(id(actors))
        if entry is not None and entry[0] is actors and entry[1] == mask:
            return entry[2]
        lut = self._lut
        rays = np.where(hits, actors, -1)
        ids = lut.take(rays)
        if (ids == -2).any():  # new actors join the table in order of first appearance by ray
            for actor in rays[ids == -2].tolist():
                if lut[actor] == -2:
                    text = str(actor_paths[actor])
                    lut[actor] = self.id_of(text) if text else -1
            ids = lut.take(rays)
        ids.flags.writeable = False
        if len(self._actor_cache) >= self.CACHE_SIZE:
            self._actor_cache.clear()
        # (the array is held, so its id is not reused while the entry exists; table entries
        # never change once set, so a cached result stays right as the table grows)
        self._actor_cache[id(actors)] = (actors, mask, ids)
        return ids

    def ids_of_reading(
        self, fields: dict[str, object], name: str, hits: np.ndarray | None
    ) -> np.ndarray | None:
        """The ids of field ``name`` of a reading's ``__dict__`` (None: not a path tuple).

        Ray-cast readings carry their rays' actor indices (``_hit_actors`` into
        ``_actor_paths``) beside the path strings; those map without touching the strings.
        """
        actors = fields.get("_hit_actors")
        if actors is not None and hits is not None and actors.shape == self.shape:
            return self.ids_of_actors(actors, fields["_actor_paths"], hits)
        paths = fields.get(name)
        if paths.__class__ is not tuple:
            return None
        return self.ids(paths, hits)
