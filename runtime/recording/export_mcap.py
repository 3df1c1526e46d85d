"""Export a recording as MCAP that Foxglove renders natively, streamed chunk by chunk.

Every message is stamped with the simulation time of its row (``log_time`` and
``publish_time`` [ns], and the message's own ``timestamp`` where it has one). Topics:

- ``/bodies/tf`` (``foxglove.FrameTransforms``, one per step): the pose of every recorded
  body as the transform from ``"world"`` to a frame named by the body's USD path.
- ``/scene/geometry`` (``foxglove.SceneUpdate``, once, at the first row's time): each body's
  collision geometry (the ray scene's triangles) as a frame-locked entity in the body's
  frame, so the moving robot is visible; static colliders in ``"world"``. Skipped with a
  logged warning when the scene cannot be opened.
- ``/raycast<sensor path>`` (``foxglove.PointCloud``, one per step): the hit points of the
  rays that hit (``hit`` and ``valid``), world frame (``ray_end_points_world``, whatever the
  sensor's output frame), fields ``x, y, z`` and ``depth`` (float32).
- ``/lab<sensor path>/distance_to_image_plane`` (and ``/distance_to_camera``;
  ``foxglove.RawImage``, encoding ``32FC1``, one per step): an Isaac Lab-style depth
  camera's image, depths in metres (misses as recorded: ``inf``), frame the sensor path.
- ``/lab<sensor path>/ray_hits_w`` (``foxglove.PointCloud``, one per step): an Isaac
  Lab-style ray caster's hits (a height scan, a lidar), world frame, fields ``x, y, z`` and
  ``distance`` (float32), misses left out.
- ``/joints<robot path>`` (``foxglove.JointStates``, one per step): joint positions,
  velocities and efforts by DOF name.
- ``/<kind><sensor path>`` (JSON with a JSON schema named ``simrt.<kind>``, one per step) for
  every other sensor (IMU, contact, effort, commands, the small fields of lab sensors under
  ``/lab<sensor path>``): one plottable field per channel (at most 64 values);
  3-vectors as ``{x, y, z}``, quaternions as ``{x, y, z, w}``, DOF vectors keyed by DOF name,
  non-finite numbers as ``null``.

Positions keep the recording's stage units (the ``simrt`` metadata record names
``metersPerUnit`` when the scene is known). The file is written to a temporary file beside
the destination and renamed over it; an existing destination keeps its permissions.
``foxglove-sdk`` is imported lazily.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from runtime._files import atomic_write_stream
from runtime.errors import SimrtError
from runtime.recording._mcap_topics import BodyTransforms, Topic, plan_topics
from runtime.recording._scene_geometry import collision_geometry, open_scene
from runtime.recording.channels import json_default

__all__ = ["export_mcap"]

LOGGER = logging.getLogger("runtime.recording.export_mcap")


def export_mcap(reader: Any, out_path: str | os.PathLike[str], *, stage: Any = None) -> Path:
    """Write the committed rows of a recording as a Foxglove MCAP file.

    Args:
        reader: an open recording (:func:`runtime.recording.open_recording`).
        out_path: the ``.mcap`` file to write (replaced atomically).
        stage: the scene for the collision geometry: a ``Usd.Stage`` or a USD path; None
            opens the recording's ``scene`` (missing or unreadable: no geometry, a warning).

    Returns:
        The destination path.

    Raises:
        SimrtError: ``foxglove-sdk`` is missing, a simulation time cannot be a stamp, the
            recording is unreadable, or an explicitly given ``stage`` is not a USD file.
        FileNotFoundError: an explicitly given ``stage`` path does not exist.
    """
    out_path = Path(out_path)
    try:
        import foxglove
    except ImportError:
        raise SimrtError(
            f"{out_path}: exporting .mcap needs the 'foxglove-sdk' package "
            "(pip install 'simrt[export]')"
        ) from None
    topics = plan_topics(reader)
    body_paths = next((t.body_paths for t in topics if isinstance(t, BodyTransforms)), [])
    geometry, meters = _scene_parts(reader, stage, body_paths)
    atomic_write_stream(
        out_path,
        lambda handle: _write(foxglove, reader, out_path, handle, topics, geometry, meters),
    )
    return out_path


class _CheckedFile:
    """A binary file that keeps its first write error and then ignores further writes.

    The MCAP writer would print every failed write (and each message after it) and report
    only a generic error on ``close()``; the export checks :attr:`error` after each row and
    raises one clear error instead (the temp file is then deleted). After a failure the
    writer still sees a consistent file position, as it checks it.
    """

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self.error: OSError | None = None
        self._position = 0  # the position the writer expects, once writes are ignored

    def write(self, data: bytes) -> int:
        if self.error is None:
            try:
                return self._handle.write(data)
            except OSError as error:
                self.error = error
                self._position = self._handle.tell()
        self._position += len(data)
        return len(data)

    def flush(self) -> None:
        if self.error is None:
            try:
                self._handle.flush()
            except OSError as error:
                self.error = error
                self._position = self._handle.tell()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if self.error is None:
            return self._handle.seek(offset, whence)
        self._position = offset if whence == os.SEEK_SET else self._position + offset
        return self._position

    def tell(self) -> int:
        return self._handle.tell() if self.error is None else self._position


def _write(
    foxglove: Any,
    reader: Any,
    out_path: Path,
    handle: Any,
    topics: list[Topic],
    geometry: list[Any] | None,
    meters: float | None,
) -> None:
    context = foxglove.Context()  # our own: nothing leaks into the global logging context
    checked = _CheckedFile(handle)
    writer = foxglove.open_mcap(checked, context=context)
    failed = False
    try:
        rows = _write_messages(reader, context, checked, out_path, topics, geometry)
        writer.write_metadata("simrt", _metadata(reader, rows, meters))
    except BaseException:
        failed = True
        raise
    finally:
        try:
            writer.close()
        except RuntimeError as error:  # foxglove's report of a failed write
            if not failed:
                raise SimrtError(
                    f"{out_path}: writing the MCAP file failed: {checked.error or error}"
                ) from None


def _write_messages(
    reader: Any,
    context: Any,
    checked: _CheckedFile,
    out_path: Path,
    topics: list[Topic],
    geometry: list[Any] | None,
) -> int:
    """Log every row's messages (and the geometry once); returns the rows written."""
    from foxglove.messages import Timestamp

    for topic in topics:
        topic.open(context)
    scene = None
    if geometry is not None:
        from foxglove.channels import SceneUpdateChannel

        scene = SceneUpdateChannel("/scene/geometry", context=context)
    names = sorted({name for topic in topics for name in topic.names})
    rows = 0
    for first, block in reader.iter_chunks(names):
        log_times = _log_times(reader, first, block["time"])
        for topic in topics:
            topic.prepare(block)
        for i, log_time in enumerate(log_times.tolist()):
            if scene is not None:
                _log_geometry(scene, geometry, log_time)
                scene = None
            stamp = Timestamp(log_time // 1_000_000_000, log_time % 1_000_000_000)
            for topic in topics:
                topic.log(i, log_time, stamp)
            if checked.error is not None:
                raise SimrtError(
                    f"{out_path}: writing the MCAP file failed at row {first + i} of "
                    f"{reader.rows}: {checked.error}"
                )
        rows = first + len(log_times)
    if scene is not None:  # no rows: the geometry alone, at time 0
        _log_geometry(scene, geometry, 0)
    return rows


def _log_times(reader: Any, first: int, times: np.ndarray) -> np.ndarray:
    """Simulation times [s] of one block as MCAP log times [ns], int64 (checked)."""
    times = np.asarray(times, np.float64)
    bad = ~np.isfinite(times) | (times < 0.0) | (times * 1e9 >= 2.0**63)
    if np.any(bad):
        row = first + int(np.argmax(bad))
        raise SimrtError(
            f"{reader.path}: row {row}: simulation time {times[row - first]!r} s cannot stamp "
            "an MCAP message (finite, >= 0 needed)"
        )
    return np.rint(times * 1e9).astype(np.int64)


def _metadata(reader: Any, rows: int, meters: float | None) -> dict[str, str]:
    meta = dict(reader.meta)
    info = {
        "source": str(reader.path),
        "rows": str(rows),
        "complete": json.dumps(
            bool(reader.complete) and rows == reader.rows and reader.damage is None
        ),
        "run": json.dumps(meta, default=json_default, sort_keys=True),
        "units": "positions in stage units, time stamps are simulation time",
    }
    if meters is not None:
        info["metersPerUnit"] = repr(meters)
    if reader.damage is not None:  # the rows end before the damage
        info["damage"] = str(reader.damage)
    return info


# ---------------------------------------------------------------------------- geometry


def _scene_parts(
    reader: Any, stage: Any, body_paths: Sequence[str]
) -> tuple[list[Any] | None, float | None]:
    """Collision geometry parts and metersPerUnit, or (None, None) with a warning."""
    explicit = stage is not None
    scene = stage if explicit else reader.meta.get("scene")
    absolute = reader.meta.get("scene_path")
    if not explicit and absolute and os.path.isfile(str(absolute)):
        scene = absolute  # the scene as resolved when the run started
    opened, reason = open_scene(scene, Path(reader.path), explicit=explicit)
    if opened is None:
        LOGGER.warning("%s: no scene geometry in the MCAP export: %s", reader.path, reason)
        return None, None
    from pxr import UsdGeom

    meters = float(UsdGeom.GetStageMetersPerUnit(opened))
    try:
        return collision_geometry(opened, body_paths), meters
    except (SimrtError, ImportError) as error:
        if explicit:
            raise
        LOGGER.warning("%s: no scene geometry in the MCAP export: %s", reader.path, error)
        return None, meters


def _log_geometry(channel: Any, parts: Sequence[Any], log_time: int) -> None:
    from foxglove.messages import (
        Color,
        Point3,
        Pose,
        Quaternion,
        SceneEntity,
        SceneUpdate,
        Timestamp,
        TriangleListPrimitive,
        Vector3,
    )

    stamp = Timestamp(log_time // 1_000_000_000, log_time % 1_000_000_000)
    entities = []
    for part in parts:
        points = [Point3(x=x, y=y, z=z) for x, y, z in part.triangles.reshape(-1, 3).tolist()]
        unique = np.unique(part.colors, axis=0)
        color_kwargs: dict[str, Any]
        if len(unique) == 1:
            r, g, b, a = unique[0].tolist()
            color_kwargs = {"color": Color(r=r, g=g, b=b, a=a)}
        else:
            per_vertex = np.repeat(part.colors, 3, axis=0).tolist()
            color_kwargs = {"colors": [Color(r=r, g=g, b=b, a=a) for r, g, b, a in per_vertex]}
        w, x, y, z = part.orientation.tolist()
        pose = Pose(
            position=Vector3(x=float(part.position[0]), y=float(part.position[1]),
                             z=float(part.position[2])),
            orientation=Quaternion(x=x, y=y, z=z, w=w),
        )  # fmt: skip
        triangles = TriangleListPrimitive(pose=pose, points=points, **color_kwargs)
        entities.append(
            SceneEntity(
                timestamp=stamp,
                frame_id=part.frame_id,
                id=f"collision:{part.key}",
                frame_locked=True,
                triangles=[triangles],
            )
        )
    channel.log(SceneUpdate(entities=entities), log_time=log_time)
