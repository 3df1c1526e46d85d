"""The ``simrt`` command line.

Each subcommand lives in its own module, imported only when that subcommand runs, so
``simrt --help`` stays fast. A command module provides ``add_arguments(parser)`` and
``run(args) -> int``. Errors of the user's input (:class:`~runtime.errors.SimrtError`,
``OSError``) are printed as one line on stderr with a non-zero exit code, no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from runtime._compile import gc_pause as _gc_pause

__all__ = ["COMMANDS", "entry", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "inspect": (
        "runtime.schema.inspect_cli",
        "show robots, links, joints/DOFs and sensors of a USD scene",
    ),
    "schema": ("runtime.schema.schema_cli", "apply or validate the Isaac robot schema on an asset"),
    "run": ("runtime.run.cli", "step a scene headless in MuJoCo and record sensor readings"),
    "batch": (
        "runtime.batch.cli",
        "run many randomized episodes or log replays into a dataset (all cores or Ray)",
    ),
    "plot": (
        "runtime.recording.plot_cli",
        "render a recording's IMU, contact and raycast data to PNG",
    ),
    "export": (
        "runtime.recording.export_cli",
        "export a recording to .npz, .parquet or Foxglove .mcap (streamed)",
    ),
    "physics": (
        "runtime.physics.cli",
        "author physics property cfgs onto an asset in a separate layer",
    ),
}


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simrt",
        description="Headless sensor and kinematics runtime for robots described in OpenUSD.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``simrt`` command line.

    Args:
        argv: arguments without the program name; ``sys.argv[1:]`` when None.

    Returns:
        The process exit code.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0] not in COMMANDS:
        parser = _top_parser()
        top = parser.parse_args(args_list)
        if top.version:
            from runtime import __version__

            print(__version__)
            return 0
        parser.print_help()
        return 0 if not args_list else 2
    name = args_list[0]
    module_name, help_text = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            print(f"simrt {name}: not available in this build", file=sys.stderr)
            return 2
        print(f"simrt {name}: missing dependency {exc.name!r}: {exc}", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog=f"simrt {name}", description=help_text)
    module.add_arguments(parser)
    args = parser.parse_args(args_list[1:])
    from runtime.errors import SimrtError

    try:
        return int(module.run(args) or 0)
    except (SimrtError, OSError, ValueError) as exc:
        print(f"simrt {name}: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        if type(exc).__name__ != "ErrorException" or not type(exc).__module__.startswith("pxr"):
            raise
        from runtime.schema import tf_error_line  # USD content that USD itself refused

        print(f"simrt {name}: error: USD: {tf_error_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print(f"simrt {name}: {exc or 'interrupted'}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 130))


def entry() -> NoReturn:
    """The ``simrt`` program: :func:`main`, then exit.

    ``simrt run`` and a local ``simrt batch`` end with ``os._exit`` once their output is
    flushed: the run has closed its recording and files (the batch its workers, stores and
    manifest), and the interpreter's teardown (finalizing Numba / LLVM, USD and MuJoCo
    modules) would add about 0.3-0.5 s. Under a profiler or a tracer (coverage) they exit
    normally, so that those can write their data; a batch on Ray exits normally (Ray's
    own exit handlers disconnect the driver).

    Neither renders: unless ``MUJOCO_GL`` is set, it is set to ``disable`` so that importing
    MuJoCo skips loading its OpenGL (GLFW) bindings (about 0.05 s). Nor do they need
    OpenBLAS's thread pool, whose idle threads spin on the cores the run uses:
    ``OPENBLAS_NUM_THREADS`` defaults to 1.

    ``simrt run`` starts with Python's cyclic garbage collector paused until just before
    its first step (:mod:`runtime._compile.gc_pause`).
    """
    fast = sys.argv[1:2] == ["run"] or (sys.argv[1:2] == ["batch"] and "--ray" not in sys.argv)
    if fast:
        os.environ.setdefault("MUJOCO_GL", "disable")
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if sys.argv[1:2] == ["run"]:
        _gc_pause.pause()
    try:
        code = main()
    finally:
        _gc_pause.resume()
    # not under a profiler or a tracer (coverage): they write their data at exit
    if fast and sys.getprofile() is None and sys.gettrace() is None:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            logging.shutdown()
            outputs = sys.modules.get("runtime.run.outputs")  # (atexit does not run)
            if outputs is not None:
                outputs.remove_scratch_folders()  # a failed run's scratch store
        finally:
            os._exit(code)
    raise SystemExit(code)


if __name__ == "__main__":
    entry()
