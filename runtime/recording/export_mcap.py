"""Export a recording as MCAP that Foxglove renders natively, streamed chunk by chunk.

Every message is stamped with the simulation time of its row (``log_time`` and
``publish_time`` [ns], and the message's own ``timestamp`` where it has one). Topics:

- ``/bodies/tf`` (``foxglove.FrameTransforms``, one per step): the pose of every recorded
  body as the transform from ``"world"`` to a frame named by the body's USD path.
- ``/scene/geometry`` (``foxglove.SceneUpdate``, once, at the first row's time): each body's
  collision geometry (the ray scene's triangles) as a frame-locked entity in the body's
  frame, so the moving robot is visible; static colliders in ``"world"``. Skipped with a
  logged warning when the scene cannot be opened.
- ``/raycast<sensor path>`` (``foxglove.PointCloud``, one per step): the rays that hit
  (``hit`` and ``valid``), world frame, fields ``x, y, z`` and ``depth`` (float32).
- ``/joints<robot path>`` (``foxglove.JointStates``, one per step): joint positions,
  velocities and efforts by DOF name.
- ``/<kind><sensor path>`` (JSON with a JSON schema named ``simrt.<kind>``, one per step) for
  every other sensor (IMU, contact, effort, commands): one plottable field per channel;
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

from runtime.errors import SimrtError
from runtime.recording._scene_geometry import collision_geometry, open_scene
from runtime.recording.channels import json_default
from runtime.recording.export import write_atomically

__all__ = ["export_mcap"]

LOGGER = logging.getLogger("runtime.recording.export_mcap")

_JSON_MAX_VALUES = 64
"""Channels with more values per step are left out of the JSON topics (not plottable)."""


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
    topics = _plan_topics(reader)
    body_paths = next((t.body_paths for t in topics if isinstance(t, _BodyTransforms)), [])
    geometry, meters = _scene_parts(reader, stage, body_paths)
    write_atomically(
        out_path, lambda handle: _write(foxglove, reader, handle, topics, geometry, meters)
    )
    return out_path


def _write(
    foxglove: Any,
    reader: Any,
    handle: Any,
    topics: list[_Topic],
    geometry: list[Any] | None,
    meters: float | None,
) -> None:
    from foxglove.messages import Timestamp

    context = foxglove.Context()  # our own: nothing leaks into the global logging context
    writer = foxglove.open_mcap(handle, context=context)
    try:
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
            rows = first + len(log_times)
        if scene is not None:  # no rows: the geometry alone, at time 0
            _log_geometry(scene, geometry, 0)
        writer.write_metadata("simrt", _metadata(reader, rows, meters))
    finally:
        writer.close()


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
        "complete": json.dumps(bool(reader.complete) and rows == reader.rows),
        "run": json.dumps(meta, default=json_default, sort_keys=True),
        "units": "positions in stage units, time stamps are simulation time",
    }
    if meters is not None:
        info["metersPerUnit"] = repr(meters)
    return info


# ---------------------------------------------------------------------------- geometry


def _scene_parts(
    reader: Any, stage: Any, body_paths: Sequence[str]
) -> tuple[list[Any] | None, float | None]:
    """Collision geometry parts and metersPerUnit, or (None, None) with a warning."""
    explicit = stage is not None
    scene = stage if explicit else reader.meta.get("scene")
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


# ---------------------------------------------------------------------------- topics


def _topic_name(prefix: str, path: str) -> str:
    return prefix + (path if path.startswith("/") else "/" + path)


class _Topic:
    """One MCAP topic fed from some channels, one message per row."""

    topic: str
    names: list[str]

    def open(self, context: Any) -> None:
        """Create the channel in ``context``."""
        raise NotImplementedError

    def prepare(self, block: dict[str, np.ndarray]) -> None:
        """Take the rows of one block (Python lists are built once per block)."""
        raise NotImplementedError

    def log(self, row: int, log_time: int, stamp: Any) -> None:
        """Log the message of row ``row`` of the current block."""
        raise NotImplementedError


class _BodyTransforms(_Topic):
    def __init__(self, positions: str, orientations: str, body_paths: list[str]) -> None:
        self.topic = "/bodies/tf"
        self.names = [positions, orientations]
        self.body_paths = body_paths

    def open(self, context: Any) -> None:
        from foxglove.channels import FrameTransformsChannel

        self.channel = FrameTransformsChannel(self.topic, context=context)

    def prepare(self, block: dict[str, np.ndarray]) -> None:
        self.positions = block[self.names[0]].tolist()
        self.orientations = block[self.names[1]].tolist()

    def log(self, row: int, log_time: int, stamp: Any) -> None:
        from foxglove.messages import FrameTransform, FrameTransforms, Quaternion, Vector3

        transforms = [
            FrameTransform(
                timestamp=stamp,
                parent_frame_id="world",
                child_frame_id=path,
                translation=Vector3(x=p[0], y=p[1], z=p[2]),
                rotation=Quaternion(x=q[1], y=q[2], z=q[3], w=q[0]),
            )
            for path, p, q in zip(
                self.body_paths, self.positions[row], self.orientations[row], strict=True
            )
        ]
        self.channel.log(FrameTransforms(transforms=transforms), log_time=log_time)


class _RayHits(_Topic):
    def __init__(self, sensor: str, fields: dict[str, str]) -> None:
        self.topic = _topic_name("/raycast", sensor)
        self.sensor = sensor
        self.fields = fields
        self.names = list(fields.values())

    def open(self, context: Any) -> None:
        from foxglove.channels import PointCloudChannel
        from foxglove.messages import PackedElementField, PackedElementFieldNumericType

        self.channel = PointCloudChannel(
            self.topic, context=context, metadata={"sensor": self.sensor, "frame": "world"}
        )
        float32 = PackedElementFieldNumericType.Float32
        self.layout = [
            PackedElementField(name=name, offset=4 * k, type=float32)
            for k, name in enumerate(("x", "y", "z", "depth"))
        ]

    def prepare(self, block: dict[str, np.ndarray]) -> None:
        positions = block[self.fields["hit_positions"]]
        n, rays = positions.shape[:2]
        hit = np.ones((n, rays), bool)
        if "hit" in self.fields:
            hit &= block[self.fields["hit"]].astype(bool)
        if "valid" in self.fields:
            hit &= block[self.fields["valid"]].astype(bool).reshape(n, 1)
        packed = np.empty((n, rays, 4), np.float32)
        packed[:, :, :3] = positions
        if "depths" in self.fields:
            packed[:, :, 3] = block[self.fields["depths"]]
        else:
            packed[:, :, 3] = np.nan
        self.packed = packed
        self.hit = hit

    def log(self, row: int, log_time: int, stamp: Any) -> None:
        from foxglove.messages import PointCloud, Pose, Quaternion, Vector3

        data = self.packed[row][self.hit[row]].tobytes()
        message = PointCloud(
            timestamp=stamp,
            frame_id="world",
            pose=Pose(position=Vector3(), orientation=Quaternion(w=1.0)),
            point_stride=16,
            fields=self.layout,
            data=data,
        )
        self.channel.log(message, log_time=log_time)


class _Joints(_Topic):
    _FIELDS = (("positions", "position"), ("velocities", "velocity"), ("efforts", "effort"))

    def __init__(self, sensor: str, fields: dict[str, str], dof_names: list[str]) -> None:
        self.topic = _topic_name("/joints", sensor)
        self.sensor = sensor
        self.fields = {key: fields[field] for field, key in self._FIELDS if field in fields}
        self.names = list(self.fields.values())
        self.dof_names = dof_names

    def open(self, context: Any) -> None:
        from foxglove.channels import JointStatesChannel

        self.channel = JointStatesChannel(
            self.topic, context=context, metadata={"robot": self.sensor}
        )

    def prepare(self, block: dict[str, np.ndarray]) -> None:
        self.values = {key: block[name].tolist() for key, name in self.fields.items()}

    def log(self, row: int, log_time: int, stamp: Any) -> None:
        from foxglove.messages import JointState, JointStates

        columns = {key: values[row] for key, values in self.values.items()}
        joints = [
            JointState(name=name, **{key: column[j] for key, column in columns.items()})
            for j, name in enumerate(self.dof_names)
        ]
        self.channel.log(JointStates(timestamp=stamp, joints=joints), log_time=log_time)


class _JsonTopic(_Topic):
    """A plottable JSON message per row: one field per channel of a sensor."""

    def __init__(self, kind: str, sensor: str, infos: list[Any]) -> None:
        self.kind = kind
        self.sensor = sensor
        self.topic = _topic_name("/" + kind, sensor)
        self.fields = [(_field_key(info), info.name, _json_form(info)) for info in infos]
        self.names = [name for _, name, _ in self.fields]
        self.units = {_field_key(info): info.unit for info in infos if info.unit}

    def schema(self) -> dict[str, Any]:
        """The JSON schema of this topic's messages."""
        number = {"type": ["number", "null"]}
        properties: dict[str, Any] = {
            "timestamp": {
                "type": "object",
                "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}},
            }
        }
        for key, _, (form, labels, dtype) in self.fields:
            leaf = {"b": {"type": "boolean"}, "i": {"type": "integer"}, "u": {"type": "integer"}}
            item = leaf.get(dtype.kind, number)
            if form == "scalar":
                properties[key] = item
            elif form == "array":
                properties[key] = {"type": "array", "items": item}
            else:
                properties[key] = {
                    "type": "object",
                    "properties": {label: item for label in labels},
                }
        return {
            "title": f"simrt.{self.kind}",
            "type": "object",
            "properties": properties,
        }

    def open(self, context: Any) -> None:
        import foxglove

        schema = foxglove.Schema(
            name=f"simrt.{self.kind}",
            encoding="jsonschema",
            data=json.dumps(self.schema()).encode("utf-8"),
        )
        metadata = {"sensor": self.sensor, "kind": self.kind, "units": json.dumps(self.units)}
        self.channel = foxglove.Channel(
            self.topic, schema=schema, message_encoding="json", context=context,
            metadata=metadata,
        )  # fmt: skip

    def prepare(self, block: dict[str, np.ndarray]) -> None:
        self.columns = [_json_values(block[name]) for _, name, _ in self.fields]

    def log(self, row: int, log_time: int, stamp: Any) -> None:
        message: dict[str, Any] = {"timestamp": {"sec": stamp.sec, "nsec": stamp.nsec}}
        for (key, _, (form, labels, _)), column in zip(self.fields, self.columns, strict=True):
            value = column[row]
            if form == "quaternion":  # stored (w, x, y, z)
                value = {"x": value[1], "y": value[2], "z": value[3], "w": value[0]}
            elif form in ("vector", "named"):
                value = dict(zip(labels, value, strict=True))
            message[key] = value
        self.channel.log(json.dumps(message, allow_nan=False).encode("utf-8"), log_time=log_time)


def _field_key(info: Any) -> str:
    return info.field or info.name.rsplit(".", 1)[-1]


def _json_form(info: Any) -> tuple[str, tuple[str, ...], np.dtype]:
    """How a channel becomes JSON: (form, labels, dtype)."""
    dtype = np.dtype(info.dtype)
    shape = tuple(info.shape)
    if shape == ():
        return "scalar", (), dtype
    if shape == (4,) and ("orientation" in info.field or "wxyz" in info.unit.lower()):
        return "quaternion", ("x", "y", "z", "w"), dtype
    if shape == (3,):
        return "vector", ("x", "y", "z"), dtype
    names = list(info.attrs.get("dof_names") or [])
    if len(shape) == 1 and len(names) == shape[0] and len(set(names)) == len(names):
        return "named", tuple(str(n) for n in names), dtype
    return "array", (), dtype


def _json_values(array: np.ndarray) -> list[Any]:
    """Rows of a block as Python values, non-finite floats as None."""
    if array.dtype.kind == "f":
        finite = np.isfinite(array)
        if not finite.all():
            values = array.astype(object)
            values[~finite] = None
            return values.tolist()
    return array.tolist()


def _plan_topics(reader: Any) -> list[_Topic]:
    """The topics of a recording, from its channel descriptions."""
    by_sensor: dict[tuple[str, str], dict[str, Any]] = {}
    for info in reader.channels.values():
        by_sensor.setdefault((info.kind, info.sensor), {})[_field_key(info)] = info
    topics: list[_Topic] = []
    for (kind, sensor), fields in by_sensor.items():
        names = {field: info.name for field, info in fields.items()}
        if kind == "body":
            if "positions" in fields and "orientations" in fields:
                paths = list(fields["positions"].attrs.get("body_paths") or [])
                paths = paths or list(reader.meta.get("body_paths") or [])
                if len(paths) == fields["positions"].shape[0]:
                    topics.insert(
                        0, _BodyTransforms(names["positions"], names["orientations"], paths)
                    )
                    continue
            LOGGER.warning("%s: body poses without body paths; no /bodies/tf", reader.path)
        elif kind == "raycast":
            if "hit_positions" in fields:
                keep = ("hit_positions", "hit", "depths", "valid")
                topics.append(_RayHits(sensor, {k: names[k] for k in keep if k in names}))
            else:
                LOGGER.info("%s: %s has no hit_positions; no point cloud", reader.path, sensor)
        elif kind == "joint_state":
            info = next(iter(fields.values()))
            dof = list(info.attrs.get("dof_names") or reader.meta.get("dof_names") or [])
            topic = _Joints(sensor, names, dof)
            shapes = {tuple(reader.channels[name].shape) for name in topic.names}
            if topic.names and shapes == {(len(dof),)}:
                topics.append(topic)
            else:
                LOGGER.warning("%s: %s: joint channels without DOF names", reader.path, sensor)
        else:
            small = [
                info
                for info in fields.values()
                if int(np.prod(info.shape, dtype=np.int64)) <= _JSON_MAX_VALUES
            ]
            if small:
                topics.append(_JsonTopic(kind or "channels", sensor or "unnamed", small))
    return topics
