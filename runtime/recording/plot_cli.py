"""``simrt plot FILE``: render a recording's IMU, contact and raycast data to a PNG.

The figure has up to five panels, each drawn only when the recording holds such data:
IMU linear acceleration and angular velocity (sensor frame) over time, contact force over
time (shaded where the sensor reports contact), joint positions over time, and a 3-D point
cloud of every raycast hit in the world frame (the ray end points of hit rays, coloured by
time). Isaac Lab-style sensors (channels of kind ``lab``, :mod:`runtime.run.lab_channels`)
add one frame each (the last row, or ``--frame``): a depth camera's depth image
(``distance_to_image_plane``, else ``distance_to_camera``) and a grid ray caster's height
map (the hit heights ``ray_hits_w[:, 2]`` on the grid of its pattern's ``size`` and
``resolution``, in the sensor's frame). matplotlib is imported lazily with the
non-interactive Agg backend.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import SimrtError

__all__ = [
    "LabFrame",
    "add_arguments",
    "height_map",
    "lab_frame_channels",
    "plot_recording",
    "run",
]

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
    parser.add_argument(
        "--frame",
        type=int,
        default=-1,
        help="row of the depth images and height maps (negative: from the end; default -1)",
    )


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


_DEPTH_FIELDS = ("distance_to_image_plane", "distance_to_camera")


@dataclass(frozen=True)
class LabFrame:
    """One row of a lab image channel (a depth image or a height scan).

    Attributes:
        info: the channel.
        values: its values at the row, shape ``info.shape``.
        row: the recording row.
        time: the row's simulation time [s].
    """

    info: Any
    values: np.ndarray
    row: int
    time: float


def lab_frame_channels(channels: Mapping[str, Any]) -> list[Any]:
    """The lab channels drawn as one frame: per camera its depth image, per grid scan its hits.

    Args:
        channels: channel name -> :class:`~runtime.recording.ChannelInfo`.
    """
    depth: dict[str, Any] = {}
    scans = []
    for info in channels.values():
        if info.kind != "lab":
            continue
        if info.field in _DEPTH_FIELDS and len(info.shape) == 3:
            kept = depth.get(info.sensor)
            if kept is None or _DEPTH_FIELDS.index(info.field) < _DEPTH_FIELDS.index(kept.field):
                depth[info.sensor] = info
        elif info.field == "ray_hits_w" and (info.attrs.get("pattern") or {}).get("pattern") == (
            "grid"
        ):
            scans.append(info)
    return [*depth.values(), *scans]


def _frames(recording: Any, frame: int) -> list[LabFrame]:
    """The lab frames of a loaded recording at row ``frame``."""
    infos = lab_frame_channels(recording.channels)
    if not infos or not len(recording):
        return []
    row = _row(frame, len(recording))
    return [
        LabFrame(info, np.asarray(recording.data[info.name][row]), row, float(recording.time[row]))
        for info in infos
    ]


def _row(frame: int, rows: int) -> int:
    if not -rows <= frame < rows:
        raise SimrtError(f"--frame {frame} is outside the recording's {rows} rows")
    return frame % rows


def height_map(info: Any, hits: np.ndarray) -> tuple[np.ndarray, tuple[float, ...]]:
    """A grid scan's hit heights as an image: rows y, columns x (sensor frame).

    Args:
        info: the ``ray_hits_w`` channel (its ``pattern`` attribute: ``size``,
            ``resolution``, ``ordering``).
        hits: one row of it, (R, 3) [m, world].

    Returns:
        ``(heights, extent)``: (ny, nx) hit heights z (NaN for misses) and the grid's
        ``(x_min, x_max, y_min, y_max)`` [m].

    Raises:
        SimrtError: the pattern's grid does not have the channel's ray count.
    """
    pattern = info.attrs["pattern"]
    length, width = (float(v) for v in pattern["size"])
    resolution = float(pattern["resolution"])
    # the grid pattern's rows: x and y from -size / 2 to size / 2 (end included to 1e-9 m)
    nx = np.arange(-length / 2.0, length / 2.0 + 1.0e-9, resolution).size
    ny = np.arange(-width / 2.0, width / 2.0 + 1.0e-9, resolution).size
    z = np.where(np.isfinite(hits[:, 2]), hits[:, 2], np.nan)
    if z.size != nx * ny:
        raise SimrtError(
            f"{info.name}: {z.size} rays do not fill the pattern's {nx} x {ny} grid "
            f"(size {pattern['size']}, resolution {resolution})"
        )
    heights = z.reshape(ny, nx) if pattern.get("ordering", "xy") == "xy" else z.reshape(nx, ny).T
    return heights, (-length / 2.0, length / 2.0, -width / 2.0, width / 2.0)


def plot_recording(
    recording: Any,
    out_path: str | os.PathLike[str],
    *,
    max_points: int = 200_000,
    dpi: int = 110,
    frame: int = -1,
    lab_frames: list[LabFrame] | None = None,
) -> list[str]:
    """Render a recording to a PNG (written atomically).

    Args:
        recording: a :class:`~runtime.recording.Recording`.
        out_path: destination PNG.
        max_points: cap on plotted raycast points.
        dpi: resolution.
        frame: the row of the depth images and height maps (negative: from the end).
        lab_frames: those frames, read already (``simrt plot`` reads one row of each
            instead of loading the images of every row); None: taken from ``recording``.

    Returns:
        Titles of the panels drawn.

    Raises:
        SimrtError: the recording holds nothing plottable, or ``frame`` is not a row.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    t = recording.time
    imus = recording.channels_of_kind("imu")
    contacts = recording.channels_of_kind("contact")
    joints = recording.channels_of_kind("joint_state")
    points, point_times = raycast_hit_points(recording, max_points)
    frames = _frames(recording, frame) if lab_frames is None else lab_frames

    panels: list[str] = []
    if imus:
        panels += ["IMU linear acceleration", "IMU angular velocity"]
    if contacts:
        panels.append("contact force")
    if joints:
        panels.append("joint positions")
    if points.shape[0]:
        panels.append("raycast hits")
    panels += ["depth image" if f.info.field in _DEPTH_FIELDS else "height map" for f in frames]
    if not panels:
        raise SimrtError("recording holds no IMU, contact, joint or raycast data to plot")

    n_time = sum(1 for p in panels if p not in ("raycast hits", "depth image", "height map"))
    has_cloud = "raycast hits" in panels
    height = 2.6 * max(n_time, 1) + (8.0 if has_cloud else 0) + 5.0 * len(frames)
    fig = plt.figure(figsize=(12, height))
    rows = n_time + (3 if has_cloud else 0) + 2 * len(frames)
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
        row += 3
    for item in frames:
        ax = fig.add_subplot(grid[row : row + 2, 0])
        row += 2
        _draw_frame(fig, ax, item)
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


def _draw_frame(fig: Any, ax: Any, item: LabFrame) -> None:
    """A depth image or a height map on ``ax``."""
    info, where = item.info, f"row {item.row}, t = {item.time:.3f} s"
    if info.field in _DEPTH_FIELDS:
        image = np.asarray(item.values, np.float64)[..., 0]
        image = np.where(np.isfinite(image), image, np.nan)  # (misses: inf)
        shown = ax.imshow(image, cmap="viridis", interpolation="nearest")
        ax.set_title(f"depth image {_short(info.sensor)}: {info.field} ({where})", fontsize=10)
        ax.set_xlabel("pixel column")
        ax.set_ylabel("pixel row")
        fig.colorbar(shown, ax=ax, shrink=0.8, label=f"depth [{info.unit or 'm'}]")
        return
    heights, extent = height_map(info, np.asarray(item.values, np.float64))
    shown = ax.imshow(heights, origin="lower", extent=extent, cmap="terrain")
    finite = heights[np.isfinite(heights)]
    if finite.size and np.ptp(finite) < 1.0e-3:  # flat ground: no colour scale of noise
        middle = float(np.mean(finite))
        shown.set_clim(middle - 0.05, middle + 0.05)
    ax.set_title(f"height map {_short(info.sensor)}: hit height z ({where})", fontsize=10)
    ax.set_xlabel("x [m] (scan frame)")
    ax.set_ylabel("y [m] (scan frame)")
    fig.colorbar(shown, ax=ax, shrink=0.8, label=f"height z [{info.unit or 'm'}]")


def run(args: argparse.Namespace) -> int:
    """Run ``simrt plot``."""
    from runtime.recording.reader import open_recording

    reader = open_recording(args.file)
    # lab images and scans: one row read (not every row loaded); the rest as time series
    framed = lab_frame_channels(reader.channels)
    skipped = {info.name for info in framed}
    names = [name for name in reader.channels if name not in skipped]
    frames = []
    if framed and reader.rows:
        row = _row(args.frame, reader.rows)
        time = float(reader.read("time", row, row + 1)[0])
        frames = [LabFrame(i, reader.read(i.name, row, row + 1)[0], row, time) for i in framed]
    # long runs are plotted from evenly spaced rows (at most PLOT_ROWS of them)
    recording = reader.load(names, every=max(1, -(-reader.rows // PLOT_ROWS)))
    out = Path(args.out) if args.out else Path(str(args.file).rstrip("/")).with_suffix(".png")
    panels = plot_recording(
        recording, out, max_points=args.max_points, dpi=args.dpi, lab_frames=frames
    )
    partial = f"; partial: {reader.damage}" if reader.damage is not None else ""
    print(f"wrote {out} ({', '.join(panels)}{partial})")  # noqa: T201
    return 0
