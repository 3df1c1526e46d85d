"""The driver: :func:`run_batch` maps :func:`~runtime.batch.episode.run_episode` over a batch.

spec -> episode tasks (:func:`plan_tasks`) -> dataset plan (resume: skip finished
episodes) -> executor (local processes or Ray) -> outcomes -> manifest rows, retrying an
episode that failed (raised, diverged, or lost its worker) up to ``retries`` times before
recording it ``failed``. The batch always runs to the end; the summary counts what
happened.
"""

from __future__ import annotations

import bisect
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TextIO, overload

from runtime.batch.dataset import Dataset
from runtime.batch.episode import EpisodeTask
from runtime.batch.executors import Executor, make_executor
from runtime.batch.randomize import episode_seed
from runtime.batch.scene_digests import check_dataset_scenes
from runtime.batch.spec import MAX_EPISODES, BatchSpec, load_spec
from runtime.batch.validate import check_against_scenes
from runtime.errors import SimrtError

__all__ = ["BatchSummary", "EpisodeTasks", "plan_tasks", "run_batch"]


@dataclass
class BatchSummary:
    """What a :func:`run_batch` call did.

    Attributes:
        dataset: the dataset folder.
        executor: ``"local"`` or ``"ray"``.
        workers: worker processes (local) or cluster CPUs (Ray).
        episodes: episodes in the batch.
        skipped: already done before this call (resumed).
        done / failed: episodes that ended done / failed in this call.
        retried: retry attempts made.
        wall_time: seconds of this call.
        episodes_per_second: (done + failed) / wall_time.
        first_failure: ``"episode N: <error>"`` of the first episode that failed in this
            call ("" when none did).
    """

    dataset: str
    executor: str
    workers: int
    episodes: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    retried: int = 0
    wall_time: float = 0.0
    episodes_per_second: float = 0.0
    first_failure: str = ""

    def to_json(self) -> dict[str, Any]:
        """The summary as a dictionary."""
        return asdict(self)


def _episode_name(episode: int) -> str:
    return f"{episode:06d}.zarr"


class EpisodeTasks(Sequence[EpisodeTask]):
    """Every episode of a spec, in id order, made when asked for (a lazy sequence).

    Args:
        spec: the batch spec.
        dataset: the dataset folder (stores go to ``episodes/`` inside it).
    """

    def __init__(self, spec: BatchSpec, dataset: str | Path) -> None:
        self.spec = spec
        self.root = Path(dataset).resolve() / "episodes"
        self.logs: list[Path] = []
        if spec.replay is not None:
            from runtime.batch.replay import find_logs

            self.logs = find_logs(spec.replay.logs)
            self.count = len(self.logs)
        else:
            self.count = sum(scene.episodes for scene in spec.scenes)
        self._firsts: list[int] = []  # first episode id of each scene
        first = 0
        for scene in spec.scenes:
            self._firsts.append(first)
            first += scene.episodes

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[EpisodeTask]:
        return (self._task(episode) for episode in range(self.count))

    @overload
    def __getitem__(self, index: int) -> EpisodeTask: ...

    @overload
    def __getitem__(self, index: slice) -> list[EpisodeTask]: ...

    def __getitem__(self, index: int | slice) -> EpisodeTask | list[EpisodeTask]:
        if isinstance(index, slice):
            return [self._task(i) for i in range(*index.indices(self.count))]
        episode = index + self.count if index < 0 else index
        if not 0 <= episode < self.count:
            raise IndexError(f"episode {index} of {self.count}")
        return self._task(episode)

    def _task(self, episode: int) -> EpisodeTask:
        spec, out = self.spec, str(self.root / _episode_name(episode))
        if spec.replay is not None:
            return EpisodeTask(
                episode=episode,
                scene=spec.replay.scene,
                seed=0,
                out=out,
                robot=spec.replay.robot,
                record_bodies=spec.record_bodies,
                log=str(self.logs[episode]),
                imu_mode=spec.replay.imu_mode,
                timeout=spec.timeout,
                log_options=(("missing", spec.replay.missing), ("limits", spec.replay.limits)),
            )
        scene = spec.scenes[bisect.bisect_right(self._firsts, episode) - 1]
        return EpisodeTask(
            episode=episode,
            scene=scene.path,
            seed=episode_seed(spec.seed, episode),
            out=out,
            steps=spec.steps,
            dt=spec.dt,
            ik_every=spec.ik_every,
            ik_until_contact=spec.ik_until_contact,
            robot=scene.robot,
            record_bodies=spec.record_bodies,
            randomize=spec.randomize,
            timeout=spec.timeout,
            noise=spec.noise,
        )


def plan_tasks(spec: BatchSpec, dataset: str | Path) -> EpisodeTasks:
    """Every episode of a spec, in id order (scenes in spec order; replays: log order).

    Args:
        spec: the batch spec.
        dataset: the dataset folder (stores go to ``episodes/`` inside it).

    Returns:
        The :class:`EpisodeTask` of each episode, as a lazy sequence.

    Raises:
        SimrtError: more episodes than a batch holds (``spec.MAX_EPISODES``).
    """
    tasks = EpisodeTasks(spec, dataset)
    if len(tasks) > MAX_EPISODES:
        raise SimrtError(
            f"{spec.source}: {len(tasks)} episodes; a batch holds at most {MAX_EPISODES:,}"
        )
    return tasks


class _Bar:
    """tqdm bar over episodes (done / failed / retried), or nothing."""

    def __init__(self, total: int, initial: int, stream: TextIO | None) -> None:
        self.bar = None
        if stream is None:
            return
        try:
            from tqdm import tqdm
        except ImportError:  # plain text fallback: one line per episode
            self.stream = stream
            return
        self.bar = tqdm(
            total=total, initial=initial, file=stream, unit="ep", desc="episodes", smoothing=0.1
        )

    def update(self, summary: BatchSummary, finished: bool) -> None:
        if self.bar is not None:
            self.bar.set_postfix(
                done=summary.done, failed=summary.failed, retried=summary.retried, refresh=False
            )
            self.bar.update(1 if finished else 0)
        elif getattr(self, "stream", None) is not None and finished:
            self.stream.write(
                f"episodes: done {summary.done} failed {summary.failed} retried {summary.retried}\n"
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_batch(
    spec: BatchSpec | str | Path,
    out: str | Path,
    *,
    workers: int | None = None,
    ray: str | None = None,
    retries: int = 2,
    progress: TextIO | None = None,
    executor: Executor | None = None,
    allow_changed_scene: bool = False,
) -> BatchSummary:
    """Run (or resume) a batch into a dataset.

    Args:
        spec: a :class:`BatchSpec` or the path of its TOML file.
        out: the dataset folder.
        workers: local worker processes (default: all cores).
        ray: a Ray cluster address (``"auto"``, ``"HOST:PORT"``); None runs locally.
        retries: attempts after the first for an episode that fails.
        progress: stream for the progress bar (None: silent).
        executor: an executor to use instead of ``workers`` / ``ray`` (not closed here).
        allow_changed_scene: resume although a scene's files changed since the dataset was
            made (recorded in ``dataset.json``'s ``scene_changes``); otherwise refused.

    Returns:
        The :class:`BatchSummary`.

    Raises:
        SimrtError: a bad spec (also checked against its scenes: one line per problem), a
            dataset folder of another spec, or a resume whose scene files changed.
    """
    if not isinstance(spec, BatchSpec):
        spec = load_spec(spec)
    if retries < 0:
        raise ValueError(f"--retries must be >= 0, got {retries}")
    started = time.perf_counter()
    tasks = plan_tasks(spec, out)
    check_against_scenes(spec)  # (before the dataset, before any worker: one line per problem)
    dataset = Dataset(out, spec.to_json(), spec.fingerprint())
    try:
        scenes = [spec.replay.scene] if spec.replay is not None else [s.path for s in spec.scenes]
        check_dataset_scenes(dataset.path, scenes, allow_changed=allow_changed_scene)
        shutil.rmtree(dataset.path / ".attempts", ignore_errors=True)  # a dead run's leftovers
        todo = dataset.plan(tasks)
        own = executor is None
        executor = executor or make_executor(workers, ray)
    except BaseException:
        dataset.close()
        raise
    if executor.name in ("local", "inline") and dataset.sync_before_save():
        # episodes on this machine: their stores are made durable together, by one sync of
        # the file system before each manifest save, instead of one sync per episode
        todo = [replace(task, durable=False) for task in todo]
    summary = BatchSummary(
        dataset=str(out),
        executor=executor.name,
        workers=executor.workers,
        episodes=len(tasks),
        skipped=len(tasks) - len(todo),
    )
    bar = _Bar(len(tasks), summary.skipped, progress)
    by_id = {task.episode: task for task in todo}
    queue = list(reversed(todo))  # pop() from the end: lowest id first
    running = 0
    try:
        while queue or running:
            while queue and executor.free_slots():
                executor.submit(queue.pop())
                running += 1
            for outcome in executor.wait(0.5):
                running -= 1
                task = by_id[int(outcome["episode"])]
                attempt = int(outcome.get("attempt", 1))
                # (a failure the same input repeats, e.g. a bad log, is not retried)
                final = outcome["status"] == "done" or attempt > retries
                final = final or not outcome.get("retry", True)
                dataset.record(outcome, final=final)
                if outcome["status"] == "done":
                    summary.done += 1
                elif final:
                    summary.failed += 1
                    if not summary.first_failure:
                        summary.first_failure = f"episode {task.episode}: {outcome.get('error')}"
                else:
                    summary.retried += 1
                    queue.append(replace(task, attempt=attempt + 1))  # retried next
                bar.update(summary, finished=final)
    finally:
        bar.close()
        if own:
            executor.close()
        shutil.rmtree(dataset.path / ".attempts", ignore_errors=True)
        dataset.close()
    summary.wall_time = time.perf_counter() - started
    ended = summary.done + summary.failed
    summary.episodes_per_second = ended / summary.wall_time if summary.wall_time > 0 else 0.0
    return summary
