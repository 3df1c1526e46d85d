r"""``simrt batch SPEC --out DATASET``: many episodes, on all cores or on a Ray cluster.

Examples::

    simrt batch scenes/panda_batch.toml --out out/panda_ds
    simrt batch scenes/panda_batch.toml --out out/panda_ds --workers 2 --retries 1 --json
    simrt batch scenes/panda_batch.toml --out /shared/panda_ds --ray auto

Re-running the same command resumes: finished episodes are skipped, failed or unfinished
ones run again. One progress bar over episodes goes to stderr (done / failed / retried,
episodes per second); the summary goes to stdout. The exit code is 0 when every episode is
done, 1 when some failed after their retries (they are listed in the manifest with their
error). Re-run one episode alone with ``simrt run --episode DATASET:ID``.
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``simrt batch`` arguments."""
    parser.add_argument("spec", help="batch spec (TOML; see runtime.batch.spec)")
    parser.add_argument("--out", "-o", required=True, help="dataset folder (created / resumed)")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local worker processes (default: all cores; 0: in this process, for debugging)",
    )
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS|auto",
        help="run the episodes as tasks on this Ray cluster (pip install 'simrt[cluster]'); "
        "the dataset folder must be on a file system every node sees",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=2,
        help="attempts after the first for an episode that fails or loses its worker (default 2)",
    )
    parser.add_argument(
        "--allow-changed-scene",
        action="store_true",
        help="resume although a scene's files changed since the dataset was made (recorded "
        "in dataset.json; otherwise refused)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args: argparse.Namespace) -> int:
    """Run ``simrt batch``; returns 0 when every episode is done, else 1."""
    if args.workers is not None and args.workers < 0:
        raise ValueError(f"--workers must be >= 0, got {args.workers}")
    if args.workers is not None and args.ray:
        raise ValueError("--workers and --ray exclude each other (Ray uses the cluster's CPUs)")
    if not args.ray and args.workers != 0:
        from runtime.batch.executors import start_fork_server

        start_fork_server(args.workers)  # its preload overlaps the imports and planning below
    from runtime.batch.driver import run_batch
    from runtime.run.interrupts import stop_signals_raise

    with stop_signals_raise():  # SIGTERM / SIGHUP too: workers stopped, manifest kept
        summary = run_batch(
            args.spec,
            args.out,
            workers=args.workers,
            ray=args.ray,
            retries=args.retries,
            progress=None if args.no_progress else sys.stderr,
            allow_changed_scene=getattr(args, "allow_changed_scene", False),
        )
    if args.json:
        print(json.dumps(summary.to_json(), indent=2))  # noqa: T201
    else:
        print(  # noqa: T201
            f"{summary.episodes} episodes in {summary.dataset}: {summary.skipped} already done, "
            f"{summary.done} done, {summary.failed} failed, {summary.retried} retries; "
            f"{summary.wall_time:.1f} s, {summary.episodes_per_second:.2f} episodes/s "
            f"({summary.executor}, {summary.workers} workers)"
        )
    if summary.first_failure:  # (all of them: the manifest's error column)
        print(f"first failure: {summary.first_failure}", file=sys.stderr)  # noqa: T201
    return 0 if summary.failed == 0 else 1
