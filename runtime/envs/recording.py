"""Rollouts into a dataset: every finished episode of a vector env as a recording store.

``SimVectorEnv(..., record=DIR)`` writes a dataset in the format of ``simrt batch``
(:mod:`runtime.batch.dataset`: ``dataset.json``, ``manifest.parquet``, ``episodes/
NNNNNN.zarr``), so :func:`runtime.batch.load_dataset` reads rollouts and teleoperation data
as it reads batch data. An episode's store has one row per env step: every channel of the
env's world (the row after its last physics step), the action (``action``, as given), the
targets sent and the reward (``reward``). Episode ids count the episodes in the order they
begin (env order within one reset); the manifest row carries the env's episode seed and
its drawn parameters. An episode that ends by termination or truncation is ``done``; one
cut short by a reset or by closing the env keeps its rows but is ``failed`` with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np

from runtime.batch.dataset import Dataset
from runtime.errors import SimrtError

__all__ = ["EpisodeRecorder"]


class EpisodeRecorder:
    """Writes a vector env's episodes into a dataset folder (see the module docstring).

    Args:
        env: the :class:`~runtime.envs.vector_env.SimVectorEnv`.
        path: the dataset folder (created; an existing dataset of the same env settings is
            appended to, one of other settings refused).
    """

    CHUNK_ROWS = 256  # rows per chunk (one store per env is open at a time)
    SAVE_INTERVAL = 1.0  # the manifest is rewritten at most once per second (and at close)

    def __init__(self, env: Any, path: str | Path) -> None:
        worlds = env.worlds
        self.env = env
        self.path = Path(path)
        spec = {
            "kind": "envs",
            "scene": _scene_name(worlds.stage),
            "num_envs": int(worlds.num_envs),
            "decimation": int(worlds.decimation),
            "action": env.actions.action,
            "action_names": list(env.actions.names),
            "dt": float(worlds.engines[0].dt),
        }
        self.scene = spec["scene"]
        text = json.dumps(spec, sort_keys=True)
        self.dataset = Dataset(self.path, spec, hashlib.sha256(text.encode()).hexdigest())
        self.next_id = 1 + max(self.dataset.rows, default=-1)
        self.open: dict[int, dict[str, Any]] = {}  # env -> its episode's writer and row
        self.channels = list(worlds.channels.values())
        self.arrays = [worlds.buffers[info.name] for info in self.channels]
        self.unsaved = False
        self.saved_at = -float("inf")
        (self.path / "episodes").mkdir(exist_ok=True)
        (self.path / ".attempts").mkdir(exist_ok=True)

    def episode_begins(self, env: int, seed: int, params: dict[str, Any] | None) -> None:
        """Open the store of ``env``'s new episode."""
        from runtime.recording import ChannelInfo, StoreWriter

        episode = self.next_id
        self.next_id += 1
        store = self.path / ".attempts" / f"{episode:06d}.zarr"
        meta = {
            "scene": self.scene,
            "episode": {"id": episode, "env": env, "seed": int(seed), "params": params},
        }
        writer = StoreWriter(store, meta=meta, chunk_rows=self.CHUNK_ROWS, background=False)
        slots = [writer.add_channel(info) for info in self.channels]
        size = self.env.actions.size
        action_slot = writer.add_channel(
            ChannelInfo("action", (size,), "float64", "", "command", "action", "",
                        {"names": list(self.env.actions.names)})
        )  # fmt: skip
        reward_slot = writer.add_channel(ChannelInfo("reward", (), "float64", "", "reward"))
        self.dataset.rows[episode] = {
            "episode": episode, "scene": self.scene, "log": "",
            "seed": int(seed), "params": json.dumps(params) if params else "",
            "status": "pending", "attempts": 1, "steps": 0, "wall_time": 0.0,
            "cpu_time": 0.0, "error": "", "worker_host": socket.gethostname(),
            "worker_pid": os.getpid(), "startup": 0.0, "reused": False, "store": "",
            "finished_at": "",
        }  # fmt: skip
        self.open[env] = {
            "episode": episode,
            "writer": writer,
            "store": store,
            "slots": slots,
            "action": action_slot,
            "reward": reward_slot,
            "steps": 0,
            "began": time.perf_counter(),
        }

    def rows(self, actions: np.ndarray, rewards: np.ndarray, skip: np.ndarray | None) -> None:
        """One row per open episode: its world's row, action and reward."""
        worlds = self.env.worlds
        for env, item in self.open.items():
            if skip is not None and skip[env]:
                continue  # (a reset by this step: its episode has not stepped yet)
            writer = item["writer"]
            buffers, row = writer.begin_row()
            for slot, array in zip(item["slots"], self.arrays, strict=True):
                buffers[slot][row] = array[env]
            buffers[item["action"]][row] = actions[env]
            buffers[item["reward"]][row] = rewards[env]
            writer.end_row(int(worlds.step_count[env]), float(worlds.time[env]))
            item["steps"] += 1

    def episode_ends(self, env: int, *, complete: bool, diverged: bool = False) -> None:
        """Close ``env``'s episode store and name it in the manifest."""
        item = self.open.pop(env, None)
        if item is None:
            return
        reason = None
        if diverged:
            reason = "MuJoCo diverged (the episode was truncated)"
        elif not complete:
            reason = "cut short by a reset or close before the episode ended"
        item["writer"].close(complete=complete and not diverged, reason=reason)
        episode = item["episode"]
        row = self.dataset.rows[episode]
        done = complete and not diverged
        store = item["store"]
        if done:
            final = self.path / "episodes" / store.name
            if final.exists():
                raise SimrtError(f"{final}: an episode store is already there")
            os.replace(store, final)
            row["store"] = str(final.relative_to(self.path))
        row.update(
            status="done" if done else "failed",
            steps=item["steps"],
            wall_time=time.perf_counter() - item["began"],
            error=reason or "",
            finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        if not done:  # (its rows stay readable where it was written)
            failed = self.path / "failed"
            failed.mkdir(exist_ok=True)
            os.replace(store, failed / store.name)
            row["store"] = ""
        self.unsaved = True
        if time.monotonic() - self.saved_at >= self.SAVE_INTERVAL:
            self.save()

    def save(self) -> None:
        """Write the manifest (atomically)."""
        self.dataset.save()
        self.unsaved = False
        self.saved_at = time.monotonic()

    def close(self) -> None:
        """Close every open episode (cut short) and write the manifest."""
        try:
            for env in list(self.open):
                self.episode_ends(env, complete=False)
            if self.unsaved:
                self.save()
        finally:
            self.dataset.close()


def _scene_name(stage: Any) -> str:
    layer = stage.GetRootLayer()
    return str(layer.realPath or layer.identifier)
