"""The topics of the MCAP export: one class per message type, fed block by block.

:func:`plan_topics` reads a recording's channel descriptions and returns one :class:`Topic`
per MCAP topic (see :mod:`runtime.recording.export_mcap` for the list). Each topic converts a
block of rows to Python values once (:meth:`Topic.prepare`) and logs one message per row
(:meth:`Topic.log`). ``foxglove-sdk`` is imported lazily.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import numpy as np

__all__ = ["BodyTransforms", "Topic", "plan_topics"]

LOGGER = logging.getLogger("runtime.recording.export_mcap")

_JSON_MAX_VALUES = 64
"""Channels with more values per step are left out of the JSON topics (not plottable)."""


def _topic_name(prefix: str, path: str) -> str:
    return prefix + (path if path.startswith("/") else "/" + path)


class Topic:
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


class BodyTransforms(Topic):
    """``/bodies/tf``: every body's pose as a ``FrameTransform`` from ``world``."""

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


class _RayHits(Topic):
    """``/raycast<sensor>``: the hit points of one step as a world-frame ``PointCloud``."""

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
        positions = block[self.fields["points"]]
        n, rays = positions.shape[:2]
        hit = block[self.fields["hit"]].astype(bool)
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


class _LabImage(Topic):
    """``/lab<sensor>/<image type>``: a lab camera's depth image as a ``RawImage`` (32FC1).

    Pixels are the recorded depths [m] as float32, row-major from the top-left pixel;
    misses keep the recording's value (``inf``, or what ``depth_clipping_behavior`` made
    them). The frame is the sensor prim's path.
    """

    def __init__(self, sensor: str, info: Any) -> None:
        self.topic = _topic_name("/lab", sensor) + "/" + info.field
        self.sensor = sensor
        self.names = [info.name]
        self.height, self.width = (int(n) for n in info.shape[:2])

    def open(self, context: Any) -> None:
        from foxglove.channels import RawImageChannel

        self.channel = RawImageChannel(
            self.topic, context=context, metadata={"sensor": self.sensor, "unit": "m"}
        )

    def prepare(self, block: dict[str, np.ndarray]) -> None:
        images = block[self.names[0]]
        self.images = np.ascontiguousarray(images.reshape(images.shape[0], -1), "<f4")

    def log(self, row: int, log_time: int, stamp: Any) -> None:
        from foxglove.messages import RawImage

        message = RawImage(
            timestamp=stamp,
            frame_id=self.sensor,
            width=self.width,
            height=self.height,
            encoding="32FC1",
            step=4 * self.width,
            data=self.images[row].tobytes(),
        )
        self.channel.log(message, log_time=log_time)


class _LabHits(Topic):
    """``/lab<sensor>/ray_hits_w``: a lab ray caster's hits as a world-frame ``PointCloud``.

    Fields ``x, y, z`` (and ``distance`` when ``ray_distances`` is recorded), float32, in ray
    order; rays that missed (non-finite hits) are left out.
    """

    def __init__(self, sensor: str, hits: str, distances: str | None) -> None:
        self.topic = _topic_name("/lab", sensor) + "/ray_hits_w"
        self.sensor = sensor
        self.names = [hits] + ([distances] if distances else [])

    def open(self, context: Any) -> None:
        from foxglove.channels import PointCloudChannel
        from foxglove.messages import PackedElementField, PackedElementFieldNumericType

        self.channel = PointCloudChannel(
            self.topic, context=context, metadata={"sensor": self.sensor, "frame": "world"}
        )
        float32 = PackedElementFieldNumericType.Float32
        labels = ("x", "y", "z", "distance")[: 2 + len(self.names)]
        self.layout = [
            PackedElementField(name=name, offset=4 * k, type=float32)
            for k, name in enumerate(labels)
        ]

    def prepare(self, block: dict[str, np.ndarray]) -> None:
        hits = block[self.names[0]]
        packed = np.empty((*hits.shape[:2], len(self.layout)), np.float32)
        packed[..., :3] = hits
        if len(self.names) > 1:
            packed[..., 3] = block[self.names[1]]
        self.packed = packed
        self.hit = np.isfinite(hits).all(axis=2)

    def log(self, row: int, log_time: int, stamp: Any) -> None:
        from foxglove.messages import PointCloud, Pose, Quaternion, Vector3

        message = PointCloud(
            timestamp=stamp,
            frame_id="world",
            pose=Pose(position=Vector3(), orientation=Quaternion(w=1.0)),
            point_stride=4 * len(self.layout),
            fields=self.layout,
            data=self.packed[row][self.hit[row]].tobytes(),
        )
        self.channel.log(message, log_time=log_time)


def _lab_topics(sensor: str, fields: dict[str, Any]) -> list[Topic]:
    """A lab sensor's image and point-cloud topics (its small fields go to JSON)."""
    topics: list[Topic] = []
    for field in ("distance_to_image_plane", "distance_to_camera"):
        info = fields.get(field)
        if info is not None and len(info.shape) == 3 and info.shape[2] == 1:
            topics.append(_LabImage(sensor, info))
    hits = fields.get("ray_hits_w")
    if hits is not None and len(hits.shape) == 2 and hits.shape[1] == 3:
        distances = fields.get("ray_distances")
        same = distances is not None and tuple(distances.shape) == tuple(hits.shape[:1])
        topics.append(_LabHits(sensor, hits.name, distances.name if same else None))
    return topics


class _Joints(Topic):
    """``/joints<robot>``: positions, velocities and efforts as ``JointStates``."""

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


class _JsonTopic(Topic):
    """A plottable JSON message per row: one field per channel of a sensor."""

    def __init__(self, kind: str, sensor: str, infos: list[Any]) -> None:
        self.kind = kind
        self.sensor = sensor
        self.topic = _topic_name("/" + kind, sensor)
        self.fields = [(_field_key(info), info.name, _json_form(info)) for info in infos]
        self.names = [name for _, name, _ in self.fields]
        self.units = {_field_key(info): info.unit for info in infos if info.unit}
        self.shapes = {_field_key(info): tuple(info.shape) for info in infos}

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
            elif form == "array":  # (nested lists for arrays of several dimensions)
                for _ in self.shapes.get(key, (0,)):
                    item = {"type": "array", "items": item}
                properties[key] = item
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


def plan_topics(reader: Any) -> list[Topic]:
    """The topics of a recording, from its channel descriptions."""
    by_sensor: dict[tuple[str, str], dict[str, Any]] = {}
    for info in reader.channels.values():
        by_sensor.setdefault((info.kind, info.sensor), {})[_field_key(info)] = info
    topics: list[Topic] = []
    for (kind, sensor), fields in by_sensor.items():
        names = {field: info.name for field, info in fields.items()}
        if kind == "body":
            if "positions" in fields and "orientations" in fields:
                paths = list(fields["positions"].attrs.get("body_paths") or [])
                paths = paths or list(reader.meta.get("body_paths") or [])
                if len(paths) == fields["positions"].shape[0]:
                    topics.insert(
                        0, BodyTransforms(names["positions"], names["orientations"], paths)
                    )
                    continue
            LOGGER.warning("%s: body poses without body paths; no /bodies/tf", reader.path)
        elif kind == "raycast":
            # hit points in world: the ray end points (the hit point on a hit), else the hit
            # positions when the sensor outputs them in world (outputFrameOfReference)
            points = names.get("ray_end_points_world")
            if points is None and fields.get("hit_positions") is not None:
                if fields["hit_positions"].frame.lower() in ("world", ""):
                    points = names["hit_positions"]
            if points is not None and "hit" in names:
                keep = {k: names[k] for k in ("hit", "depths", "valid") if k in names}
                topics.append(_RayHits(sensor, {"points": points, **keep}))
            else:
                LOGGER.warning(
                    "%s: %s: no world hit points and hit flags recorded; no point cloud",
                    reader.path,
                    sensor,
                )
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
            if kind == "lab":  # (Isaac Lab-style sensors: runtime.run.lab_channels)
                topics += _lab_topics(sensor, fields)
            small = [
                info
                for info in fields.values()
                if int(np.prod(info.shape, dtype=np.int64)) <= _JSON_MAX_VALUES
            ]
            if small:
                topics.append(_JsonTopic(kind or "channels", sensor or "unnamed", small))
    return topics
