"""Hit prim paths of ray-cast readings as integer ids into a per-channel path table."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["HitPathIds"]

_NEVER = object()  # (compared by identity: no actor table is this object)


class HitPathIds:
    """Maps a raycast reading's hit prim paths (one string per ray) to path-table indices.

    ``ids(paths, hits)`` is an int32 array of the channel shape: for each ray that hit
    (``hits``; without it, each of the first ``len(paths)`` rays) with a non-empty path,
    the index of that path in ``table`` (paths are appended in order of first
    appearance), else -1. The sensor reuses one tuple object for a repeated hit pattern,
    so results are cached by the tuple object and the hit mask's bytes; a cached result
    is a read-only array shared between the steps that share it.

    Readings of this project's ray-cast sensors also carry each ray's actor index; through
    :meth:`ids_of_actors` the table then starts with the ray scene's actor paths, in actor
    order, and a step's ids are one lookup per ray.
    """

    CACHE_SIZE = 256

    def __init__(self, table: list[str], shape: tuple[int, ...]) -> None:
        self.table = table
        self.shape = shape
        self._index: dict[str, int] = {}
        # id(paths tuple) -> (the tuple, hit mask bytes, ids); the tuple is held so its id
        # cannot be reused by another object while the entry exists
        self._cache: dict[int, tuple[tuple[str, ...], bytes, np.ndarray]] = {}
        # actor index -> table index of the last actor table seen (last entry: actor -1)
        self._actor_table: object = None
        self._lut = np.full(1, -1, np.int32)
        # the actor table whose lookup is the identity (each actor's id is its index), so
        # a writer may copy the actor indices as they are; a private object until then
        self.identity_of: object = _NEVER

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
        self, actors: np.ndarray, actor_paths: Sequence[str], out: np.ndarray | None = None
    ) -> np.ndarray:
        """``ids`` from per-ray actor indices (into ``actor_paths``; -1: none) instead of paths.

        The kernels report what a ray hit as an index into the ray scene's actor table, and
        only for rays that hit (depth below ``maxRange``), so a step's ids are one table
        lookup per ray. The first time an actor table is seen, every path in it joins the
        path table, in actor order (an empty path maps to -1): the lookup table is then
        complete and a step needs no Python work.

        Args:
            actors: actor index per ray, -1 for none, shape ``self.shape``.
            actor_paths: the ray scene's actor path table.
            out: int32 array of ``self.shape`` to write into (default: a new array).
        """
        if self.use_actor_table(actor_paths) and actors.dtype == np.int32:
            if out is None:
                return actors.copy()
            out[...] = actors  # (the lookup would return the indices themselves)
            return out
        return self._lut.take(actors, out=out, mode="wrap")

    def use_actor_table(self, actor_paths: Sequence[str]) -> bool:
        """Map actor indices of ``actor_paths`` from now on; True when ids are the indices.

        The first time an actor table is seen, every path in it joins the path table, in
        actor order (an empty path maps to -1), and its lookup is built; a fresh path table
        of unique, non-empty actor paths then numbers the actors as they are
        (:attr:`identity_of`).
        """
        if actor_paths is not self._actor_table:
            lut = np.empty(len(actor_paths) + 1, np.int32)
            lut[-1] = -1  # (actor -1 wraps around to this last entry)
            for actor, text in enumerate(actor_paths):
                lut[actor] = self.id_of(str(text)) if text else -1
            self._actor_table, self._lut = actor_paths, lut
            identity = np.array_equal(lut[:-1], np.arange(len(actor_paths)))
            self.identity_of = actor_paths if identity else _NEVER
        return actor_paths is self.identity_of

    def ids_of_reading(
        self,
        get: Callable[..., object],
        name: str,
        hits: np.ndarray | None,
        out: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """The ids of field ``name`` of a reading (None: neither actor indices nor paths).

        Args:
            get: the reading's field lookup (``get(field)``; None when missing).
            name: the path field.
            hits: per ray, depth below ``maxRange`` (for paths without actor indices).
            out: int32 array of ``self.shape`` to write into (default: a new array or a
                shared read-only one).

        Ray-cast readings carry their rays' actor indices (``_hit_actors`` into
        ``_actor_paths``) beside the path strings; those map without touching the strings.
        """
        actors = get("_hit_actors")
        if actors.__class__ is np.ndarray and actors.shape == self.shape:
            return self.ids_of_actors(actors, get("_actor_paths"), out)
        paths = get(name)
        if not isinstance(paths, (tuple, list)):
            return None
        ids = self.ids(paths, hits)
        if out is None:
            return ids
        out[...] = ids
        return out
