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
