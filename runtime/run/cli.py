r"""``simrt run SCENE``: step a scene headless in MuJoCo and record every sensor reading.

Examples::

    simrt run scenes/panda_table.usda --steps 2000 --out out/panda.zarr
    simrt run scene.usda --steps 500 --dt 0.002 \\
        --ik-target "panda_hand=0.5,0,0.7,0,1,0,0@0" \\
        --ik-target "panda_hand=0.5,0,0.55,0,1,0,0@1.0" --ik-until-contact

Progress goes to stderr, the summary to stdout. ``--out`` is the recording store (a Zarr
directory, streamed to disk while the run steps; ``.npz`` / ``.parquet`` record into the
store beside it and export at the end). Without ``--out`` the readings go to a scratch store
that is deleted after the summary. SIGINT, SIGTERM and SIGHUP close the recording
(``complete = False``) and exit with 130 / 143 / 129. See :mod:`runtime.run.loop` for the
scene's own run settings (``customData["simrt"]`` on the PhysicsScene) and the IK waypoint syntax.
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``simrt run`` arguments."""
    parser.add_argument("scene", nargs="?", help="USD scene (.usd/.usda/.usdc)")
    parser.add_argument(
        "--episode",
        default=None,
        metavar="DATASET:ID",
        help="re-run one episode of a `simrt batch` dataset exactly (its scene, settings and "
        "drawn parameters); replaces SCENE and the run-setting options",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="physics steps to run (default: the PhysicsScene's customData simrt.steps, else 1000)",
    )
    parser.add_argument(
        "--dt",
        type=float,
        default=None,
        help="step size in seconds (default: the scene's rate, e.g. physxScene:timeStepsPerSecond)",
    )
    parser.add_argument(
        "--out",
        "-o",
        default=None,
        help="recording store to write (RUN.zarr, streamed to disk while stepping); "
        "FILE.npz / FILE.parquet record into FILE.zarr and export to FILE at the end",
    )
    parser.add_argument(
        "--ik-target",
        action="append",
        default=None,
        metavar="LINK=x,y,z[,qw,qx,qy,qz][@T]",
        help="IK waypoint for LINK in the robot-base frame, reached at time T (repeatable; "
        "replaces the scene's ikTargets). Joint targets are sent to the engine's drives.",
    )
    parser.add_argument(
        "--ik-every", type=int, default=None, help="re-solve IK every N steps (default 10)"
    )
    parser.add_argument(
        "--gripper",
        action="append",
        default=None,
        metavar="GRIPPER=close@T|open@T|close@contact",
        help="surface gripper action (repeatable; replaces the scene's gripperActions)",
    )
    parser.add_argument(
        "--ik-until-contact",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="freeze the IK targets once a robot contact sensor reports contact",
    )
    parser.add_argument(
        "--imu-mode",
        choices=("isaac", "physical"),
        default=None,
        help="IMU model: Isaac parity or physical (lever arm, rotating frame); default: the "
        "scene's simrt.imuMode, else isaac",
    )
    parser.add_argument("--robot", default=None, help="robot prim path (default: first robot)")
    parser.add_argument(
        "--flush-every",
        type=int,
        default=None,
        help=argparse.SUPPRESS,  # simrt 0.1: the store commits every chunk and every second
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="build the scene from USD even when the scene cache holds it (and do not store it)",
    )
    parser.add_argument(
        "--compressor",
        choices=("lz4", "zstd"),
        default="lz4",
        help="the store's Blosc compressor: lz4 (default: keeps up with the step loop) or zstd "
        "(about 15%% smaller, 2.3x the writer thread's time)",
    )
    parser.add_argument(
        "--noise-seed",
        type=int,
        default=None,
        help="seed of the sensor noise (channels with simrt:noise:* attributes; default: "
        "the scene's noiseSeed, else 0)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="with --out FILE.npz / .parquet / .mcap: replace FILE.zarr beside it although "
        "another run recorded it (otherwise refused)",
    )
    parser.add_argument(
        "--allow-changed-scene",
        action="store_true",
        help="with --episode: run although the scene's files changed since the dataset was "
        "made (recorded in the run's metadata; otherwise refused)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args: argparse.Namespace) -> int:
    """Run ``simrt run``; returns the exit code (130 when interrupted)."""
    from runtime.run.config import parse_ik_target
    from runtime.run.loop import run_scene
    from runtime.run.summary import format_summary

    if args.steps is not None and args.steps < 0:
        raise ValueError(f"--steps must be >= 0, got {args.steps}")
    if args.flush_every is not None and args.flush_every < 1:
        raise ValueError(f"--flush-every must be >= 1, got {args.flush_every}")
    ik_targets = None
    if args.ik_target is not None:
        ik_targets = [parse_ik_target(text) for text in args.ik_target]
    from runtime.run.interrupts import stop_signals_raise

    settings = {
        "steps": args.steps,
        "dt": args.dt,
        "ik_targets": ik_targets,
        "ik_every": args.ik_every,
        "ik_until_contact": args.ik_until_contact,
        "imu_mode": args.imu_mode,
        "robot": args.robot,
        "gripper_actions": args.gripper,
        "noise_seed": getattr(args, "noise_seed", None),
    }
    scene = args.scene
    if args.episode is not None:  # a batch episode: scene and settings from its dataset
        given = [f"--{k.replace('_', '-')}" for k, v in settings.items() if v is not None]
        if scene is not None or given:
            drop = ", ".join(given) or "SCENE"
            raise ValueError(
                f"--episode takes the scene and settings from its dataset; drop {drop}"
            )
        from runtime.batch.episode import rerun_arguments
        from runtime.batch.scene_digests import check_episode_scene

        scene, settings = rerun_arguments(args.episode)
        allow = bool(getattr(args, "allow_changed_scene", False))
        changes = check_episode_scene(args.episode.rpartition(":")[0], scene, allow_changed=allow)
        if changes:
            print(f"warning: {scene}: {'; '.join(changes)} (run anyway)", file=sys.stderr)  # noqa: T201
            settings["run_meta"] = {**(settings.get("run_meta") or {}), "scene_changed": changes}
    elif scene is None:
        raise ValueError("give a SCENE (or --episode DATASET:ID)")
    settings["cache"] = not args.no_cache
    try:
        with stop_signals_raise():
            result = run_scene(
                scene,
                out=args.out,
                progress=None if args.no_progress else sys.stderr,
                store_options={"compressor": getattr(args, "compressor", "lz4")},
                force=bool(getattr(args, "force", False)),
                **settings,
            )
    except KeyboardInterrupt as stop:
        done = getattr(stop, "steps_done", None)
        where = f"; they are in {args.out}" if args.out else ""
        if done is not None:
            print(f"interrupted after {done} steps{where}", file=sys.stderr)  # noqa: T201
        raise
    if args.json:
        payload = {
            "steps": result.steps,
            "requested_steps": result.requested_steps,
            "complete": result.complete,
            "out": str(result.out) if result.out else None,
            "timings": result.timings,
            "summary": result.summary,
            "disabled_sensors": result.disabled,
        }
        print(json.dumps(payload, indent=2))  # noqa: T201
    else:
        print(format_summary(result.summary, result.timings))  # noqa: T201
        for path, reason in result.disabled.items():
            print(f"disabled sensor {path}: {reason}")  # noqa: T201
        if result.out:
            print(f"recording: {result.out}")  # noqa: T201
    return 0
