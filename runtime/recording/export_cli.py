"""``simrt export RUN --to FILE``: a recording as ``.npz``, ``.parquet`` or ``.mcap``.

Streams the recording chunk by chunk (a run of any length exports in flat memory); the
output is written to a temp file beside ``FILE`` and renamed over it. ``.mcap`` opens in
Foxglove (robot geometry, body frames, lidar points, IMU / contact / joint plots).
"""

from __future__ import annotations

import argparse
import time

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``simrt export`` arguments."""
    parser.add_argument("run", help="recording (a .zarr store written by `simrt run`, or .npz)")
    parser.add_argument(
        "--to", required=True, metavar="FILE", help="output: FILE.npz, FILE.parquet or FILE.mcap"
    )


def run(args: argparse.Namespace) -> int:
    """Run ``simrt export``."""
    from runtime.recording import check_export_path, export_recording, open_recording

    check_export_path(args.to)  # before reading anything
    reader = open_recording(args.run)
    began = time.perf_counter()
    out = export_recording(reader, args.to)
    state = "complete" if reader.complete else "incomplete run"
    if reader.damage is not None:  # (read up to the damage: never called complete)
        state = f"partial: {reader.damage}"
    print(  # noqa: T201
        f"wrote {out}: {reader.rows} steps ({state}) in {time.perf_counter() - began:.2f} s"
    )
    return 0
