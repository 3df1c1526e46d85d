"""``simrt plot FILE``: render a recording's IMU, contact and raycast data to a PNG.

The figure has up to five panels, each drawn only when the recording holds such data:
IMU linear acceleration and angular velocity (sensor frame) over time, contact force over
time (shaded where the sensor reports contact), joint positions over time, and a 3-D point
cloud of every raycast hit in the world frame (the ray end points of hit rays, coloured by
time). matplotlib is imported lazily with the non-interactive Agg backend.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import SimrtError

__all__ = ["add_arguments", "run", "plot_recording"]

_AXES = ("x", "y", "z")
PLOT_ROWS = 20_000
"""Most rows a plot reads; longer recordings are subsampled evenly."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``simrt plot`` arguments."""
    parser.add_argument(
        "file", help="recording written by `simrt run` (a .zarr store, .npz or .parquet)"
    )
    parser.add_argument(
        "--out", "-o", default=None, help="PNG to write (default: FILE with suffix .png)"
    )
    parser.add_argument(
        "--max-points",
        type=int,
        default=200_000,
        help="cap on plotted raycast hit points (evenly subsampled; default 200000)",
    )
    parser.add_argument("--dpi", type=int, default=110, help="PNG resolution (default 110)")


def _short(path: str) -> str:
    parts = [p for p in path.split("/") if p]
    return "/".join(parts[-2:]) if parts else path


def _field(recording: Any, sensor: str, name: str) -> np.ndarray | None:
    try:
        return np.asarray(recording.field(sensor, name))
    except KeyError:
        return None


def raycast_hit_points(recording: Any, max_points: int = 200_000) -> tuple[np.ndarray, np.ndarray]:
    """World-frame raycast hit points of a recording, with the time of each.

    Args:
        recording: a :class:`~runtime.recording.Recording`.
        max_points: subsample evenly to at most this many points.

    Returns:
        ``(points, times)``: shape (P, 3) float64 [stage units, world] and (P,) [s].
    """
    points: list[np.ndarray] = []
    times: list[np.ndarray] = []
    for sensor in recording.channels_of_kind("raycast"):
        ends = _field(recording, sensor, "ray_end_points_world")
        hit = _field(recording, sensor, "hit")
        if ends is None or hit is None:
            continue
        valid = _field(recording, sensor, "valid")
        mask = hit.astype(bool)
        if valid is not None:
            mask &= valid.astype(bool)[:, None]
        rows, _cols = np.nonzero(mask)
        points.append(ends[mask].astype(np.float64))
        times.append(recording.time[rows])
    if not points:
        return np.zeros((0, 3)), np.zeros(0)
    all_points = np.concatenate(points)
    all_times = np.concatenate(times)
    if all_points.shape[0] > max_points > 0:
        pick = np.linspace(0, all_points.shape[0] - 1, max_points).astype(np.int64)
        all_points, all_times = all_points[pick], all_times[pick]
    return all_points, all_times


def plot_recording(
    recording: Any, out_path: str | os.PathLike[str], *, max_points: int = 200_000, dpi: int = 110
) -> list[str]:
    """Render a recording to a PNG (written atomically).

    Args:
        recording: a :class:`~runtime.recording.Recording`.
        out_path: destination PNG.
        max_points: cap on plotted raycast points.
        dpi: resolution.

    Returns:
        Titles of the panels drawn.

    Raises:
        SimrtError: the recording holds nothing plottable.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    t = recording.time
    imus = recording.channels_of_kind("imu")
    contacts = recording.channels_of_kind("contact")
    joints = recording.channels_of_kind("joint_state")
    points, point_times = raycast_hit_points(recording, max_points)

    panels: list[str] = []
    if imus:
        panels += ["IMU linear acceleration", "IMU angular velocity"]
    if contacts:
        panels.append("contact force")
    if joints:
        panels.append("joint positions")
    if points.shape[0]:
        panels.append("raycast hits")
    if not panels:
        raise SimrtError("recording holds no IMU, contact, joint or raycast data to plot")

    n_time = sum(1 for p in panels if p != "raycast hits")
    has_cloud = "raycast hits" in panels
    fig = plt.figure(figsize=(12, 2.6 * max(n_time, 1) + (8.0 if has_cloud else 0)))
    rows = n_time + (3 if has_cloud else 0)
    grid = fig.add_gridspec(rows, 1)
    row = 0
    time_axes = []

    def next_axis(title: str, ylabel: str):
        nonlocal row
        ax = fig.add_subplot(grid[row, 0], sharex=time_axes[0] if time_axes else None)
        row += 1
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_ylabel(ylabel, fontsize=9)
        ax.grid(True, alpha=0.3)
        time_axes.append(ax)
        return ax

    if imus:
        unit = "stage units/s²"
        ax_a = next_axis("IMU linear acceleration (sensor frame)", unit)
        ax_w = next_axis("IMU angular velocity (sensor frame)", "rad/s")
        for sensor in imus:
            label = _short(sensor)
            acc = _field(recording, sensor, "linear_acceleration")
            gyro = _field(recording, sensor, "angular_velocity")
            for i, axis in enumerate(_AXES):
                if acc is not None:
                    ax_a.plot(t, acc[:, i], lw=0.9, label=f"{label} {axis}")
                if gyro is not None:
                    ax_w.plot(t, gyro[:, i], lw=0.9, label=f"{label} {axis}")
        ax_a.legend(fontsize=7, ncol=3, loc="upper right")
        ax_w.legend(fontsize=7, ncol=3, loc="upper right")
    if contacts:
        ax_c = next_axis("contact sensors: net force (shaded: in contact)", "force")
        for sensor in contacts:
            force = _field(recording, sensor, "value")
            if force is None:
                force = _field(recording, sensor, "force")
            if force is None:
                continue
            (line,) = ax_c.plot(t, force, lw=1.0, label=_short(sensor))
            in_contact = _field(recording, sensor, "in_contact")
            if in_contact is not None and in_contact.any():
                top = float(np.max(force)) if force.size else 1.0
                ax_c.fill_between(
                    t,
                    0,
                    top or 1.0,
                    where=in_contact.astype(bool),
                    color=line.get_color(),
                    alpha=0.12,
                    step="mid",
                )
        ax_c.legend(fontsize=7, loc="upper left")
    if joints:
        ax_j = next_axis("joint positions", "rad or stage units")
        for sensor in joints:
            q = _field(recording, sensor, "positions")
            if q is None:
                continue
            names = recording.channels[
                next(i.name for i in joints[sensor] if i.field == "positions")
            ].attrs.get("dof_names", [])
            for i in range(q.shape[1]):
                name = names[i] if i < len(names) else f"dof {i}"
                ax_j.plot(t, q[:, i], lw=0.9, label=name)
        ax_j.legend(fontsize=7, ncol=5, loc="upper right")
    if time_axes:
        time_axes[-1].set_xlabel("simulation time [s]")
    if has_cloud:
        ax3 = fig.add_subplot(grid[row : row + 3, 0], projection="3d")
        scatter = ax3.scatter(
            points[:, 0],
            points[:, 1],
            points[:, 2],
            c=points[:, 2],
            s=2.0,
            cmap="viridis",
            depthshade=False,
        )
        ax3.set_title(
            f"raycast hits, world frame ({points.shape[0]} points, "
            f"t = {point_times.min():.2f} .. {point_times.max():.2f} s)",
            fontsize=10,
        )
        ax3.set_xlabel("x")
        ax3.set_ylabel("y")
        ax3.set_zlabel("z")
        span = np.ptp(points, axis=0)
        ax3.set_box_aspect(tuple(float(s) if s > 1e-9 else 1e-3 for s in span), zoom=1.2)
        ax3.view_init(elev=35, azim=-115)
        fig.colorbar(scatter, ax=ax3, shrink=0.6, label="height z")
    scene = recording.run.get("scene", "")
    fig.suptitle(
        f"simrt recording {Path(str(scene)).name} — {len(recording)} steps"
        + ("" if recording.complete else " (incomplete run)")
        + (" (read up to damaged rows)" if recording.damage else ""),
        fontsize=11,
    )
    fig.tight_layout()
    from runtime._files import atomic_write_stream

    try:
        atomic_write_stream(
            Path(out_path), lambda handle: fig.savefig(handle, dpi=dpi, format="png")
        )
    finally:
        plt.close(fig)
    return panels


def run(args: argparse.Namespace) -> int:
    """Run ``simrt plot``."""
    from runtime.recording.reader import open_recording

    reader = open_recording(args.file)
    # long runs are plotted from evenly spaced rows (at most PLOT_ROWS of them)
    recording = reader.load(every=max(1, -(-reader.rows // PLOT_ROWS)))
    out = Path(args.out) if args.out else Path(str(args.file).rstrip("/")).with_suffix(".png")
    panels = plot_recording(recording, out, max_points=args.max_points, dpi=args.dpi)
    partial = f"; partial: {reader.damage}" if reader.damage is not None else ""
    print(f"wrote {out} ({', '.join(panels)}{partial})")  # noqa: T201
    return 0
