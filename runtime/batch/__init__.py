"""Many episodes: randomized simulation batches and log replays, locally or on Ray.

- :mod:`~runtime.batch.spec`: the TOML batch spec (:func:`load_spec`).
- :mod:`~runtime.batch.randomize`: seeded per-episode draws and their application.
- :mod:`~runtime.batch.episode`: :func:`run_episode` (task -> store path).
- :mod:`~runtime.batch.worker`: what a worker process keeps between episodes (its stages,
  engines, ray scenes, IK chains) and where its attempts record.
- :mod:`~runtime.batch.replay`: joint-state logs replayed through a scene's kinematics.
- :mod:`~runtime.batch.executors`: local worker processes (default) and Ray tasks.
- :mod:`~runtime.batch.dataset`: one store per episode plus a Parquet manifest
  (:func:`load_dataset`).
- :mod:`~runtime.batch.driver`: :func:`run_batch` (resume, retries, progress).
- :mod:`~runtime.batch.cli`: ``simrt batch``.
"""

from runtime.batch.dataset import DatasetReader, EpisodeEntry, load_dataset
from runtime.batch.driver import BatchSummary, plan_tasks, run_batch
from runtime.batch.episode import EpisodeTask, execute, run_episode
from runtime.batch.spec import BatchSpec, load_spec, parse_spec

__all__ = [
    "BatchSpec",
    "BatchSummary",
    "DatasetReader",
    "EpisodeEntry",
    "EpisodeTask",
    "execute",
    "load_dataset",
    "load_spec",
    "parse_spec",
    "plan_tasks",
    "run_batch",
    "run_episode",
]
