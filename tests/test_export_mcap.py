"""MCAP export for Foxglove, read back with the ``mcap`` reader and checked against the store.

One short real run of scenes/panda_table.usda (module fixture) recorded to a store, exported
with :func:`runtime.recording.export_mcap.export_mcap`, read back with
``mcap.reader.make_reader`` and decoded independently of foxglove-sdk: protobuf messages
through the ``protobuf`` package and the FileDescriptorSet stored in each schema record,
JSON messages with ``json``. Checked: topics and schemas, one message per step on every
per-step topic, log/publish times and message stamps equal to the simulation time in ns,
every value against the store, and the exported collision geometry against USD's own
transforms of the collider points (XformCache), placed through the exported transforms.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("foxglove")
mcap_reader = pytest.importorskip("mcap.reader")
pytest.importorskip("google.protobuf")

from runtime.recording import open_recording  # noqa: E402
from runtime.recording.export_mcap import export_mcap  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCENE = REPO / "scenes" / "panda_table.usda"
STEPS = 300
HAND = (
    "/World/Panda/Geometry/panda_link0/panda_link1/panda_link2/panda_link3/panda_link4/"
    "panda_link5/panda_link6/panda_link7/panda_link8/panda_hand"
)
IMU = HAND + "/HandImu"
FINGER_CONTACTS = [HAND + f"/panda_{side}finger/FingertipContact" for side in ("left", "right")]
LIDAR = "/World/LidarMount/Lidar"
ROBOT = "/World/Panda"


def _scene_copy(directory: Path) -> Path:
    """panda_table.usda in ``directory``, its robot reference made absolute."""
    text = SCENE.read_text()
    robot = (SCENE.parent / "panda" / "panda_robot.usda").as_posix()
    assert "@panda/panda_robot.usda@" in text
    copy = directory / "panda_table.usda"
    copy.write_text(text.replace("@panda/panda_robot.usda@", f"@{robot}@"))
    return copy


def _read_mcap(path: Path) -> dict:
    """topic -> list of (log_time, publish_time, decoded message); plus the summary."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    classes = {}
    topics: dict[str, list] = {}
    with open(path, "rb") as handle:
        reader = mcap_reader.make_reader(handle)
        summary = reader.get_summary()
        metadata = {m.name: dict(m.metadata) for m in reader.iter_metadata()}
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            if channel.message_encoding == "json":
                assert schema.encoding == "jsonschema"
                decoded = json.loads(message.data)
            else:
                assert (channel.message_encoding, schema.encoding) == ("protobuf", "protobuf")
                if schema.id not in classes:
                    files = descriptor_pb2.FileDescriptorSet.FromString(schema.data)
                    pool = descriptor_pool.DescriptorPool()
                    for file in files.file:
                        pool.Add(file)
                    descriptor = pool.FindMessageTypeByName(schema.name)
                    classes[schema.id] = message_factory.GetMessageClass(descriptor)
                decoded = classes[schema.id].FromString(message.data)
            topics.setdefault(channel.topic, []).append(
                (message.log_time, message.publish_time, decoded)
            )
    return {"topics": topics, "summary": summary, "metadata": metadata}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    directory = tmp_path_factory.mktemp("mcap")
    scene = _scene_copy(directory)
    store = directory / "panda.zarr"
    run_scene(str(scene), steps=STEPS, out=store)
    reader = open_recording(store)
    out = directory / "panda.mcap"
    assert export_mcap(reader, out) == out
    return {"reader": reader, "path": out, "scene": scene, **_read_mcap(out)}


def _stamp_ns(stamp) -> int:
    """A google.protobuf.Timestamp in ns."""
    return stamp.seconds * 1_000_000_000 + stamp.nanos


def test_topics_schemas_and_one_message_per_step(exported):
    reader, topics, summary = exported["reader"], exported["topics"], exported["summary"]
    assert reader.rows == STEPS
    per_step = {
        "/bodies/tf": "foxglove.FrameTransforms",
        "/raycast" + LIDAR: "foxglove.PointCloud",
        "/joints" + ROBOT: "foxglove.JointStates",
        "/command" + ROBOT: "simrt.command",
        "/imu" + IMU: "simrt.imu",
        **{"/contact" + path: "simrt.contact" for path in FINGER_CONTACTS},
    }
    schemas = {
        channel.topic: summary.schemas[channel.schema_id].name
        for channel in summary.channels.values()
    }
    assert schemas == {**per_step, "/scene/geometry": "foxglove.SceneUpdate"}
    counts = {topic: len(messages) for topic, messages in topics.items()}
    assert counts == {**{topic: STEPS for topic in per_step}, "/scene/geometry": 1}
    by_id = summary.statistics.channel_message_counts
    assert {c.topic: by_id[i] for i, c in summary.channels.items()} == counts
    simrt = exported["metadata"]["simrt"]
    assert simrt["rows"] == str(STEPS) and simrt["complete"] == "true"
    assert json.loads(simrt["run"])["robot"] == ROBOT


def test_stamps_are_simulation_time_in_ns(exported):
    reader, topics = exported["reader"], exported["topics"]
    time = reader.read("time")
    expected = [round(t * 1e9) for t in time.tolist()]
    assert expected[0] > 0 and expected == sorted(expected)
    for topic, messages in topics.items():
        if topic == "/scene/geometry":
            assert messages[0][0] == expected[0]
            continue
        assert [m[0] for m in messages] == expected, topic
        assert [m[1] for m in messages] == expected, topic
        for log_time, _, decoded in messages[:: STEPS // 7]:
            if isinstance(decoded, dict):
                stamps = [decoded["timestamp"]["sec"] * 10**9 + decoded["timestamp"]["nsec"]]
            elif topic == "/bodies/tf":
                stamps = [_stamp_ns(t.timestamp) for t in decoded.transforms]
            else:
                stamps = [_stamp_ns(decoded.timestamp)]
            assert set(stamps) == {log_time}, topic


def test_body_transforms_equal_the_store(exported):
    reader, messages = exported["reader"], exported["topics"]["/bodies/tf"]
    positions = reader.read("bodies.positions")
    orientations = reader.read("bodies.orientations")
    paths = list(reader.channels["bodies.positions"].attrs["body_paths"])
    for row, (_, _, decoded) in enumerate(messages):
        assert [t.child_frame_id for t in decoded.transforms] == paths
        assert {t.parent_frame_id for t in decoded.transforms} == {"world"}
        got_p = [[t.translation.x, t.translation.y, t.translation.z] for t in decoded.transforms]
        got_q = [[t.rotation.w, t.rotation.x, t.rotation.y, t.rotation.z]
                 for t in decoded.transforms]  # fmt: skip
        np.testing.assert_array_equal(got_p, positions[row])
        np.testing.assert_array_equal(got_q, orientations[row])


def test_point_clouds_are_the_hits_of_each_step(exported):
    reader, messages = exported["reader"], exported["topics"]["/raycast" + LIDAR]
    hit = reader.read(LIDAR + ".hit") & reader.read(LIDAR + ".valid")[:, None]
    positions = reader.read(LIDAR + ".ray_end_points_world")  # the hit point on a hit
    assert reader.channels[LIDAR + ".hit_positions"].frame == "world"
    np.testing.assert_array_equal(positions[hit], reader.read(LIDAR + ".hit_positions")[hit])
    depths = reader.read(LIDAR + ".depths")
    total = 0
    for row, (_, _, cloud) in enumerate(messages):
        assert cloud.frame_id == "world" and cloud.point_stride == 16
        assert [(f.name, f.offset) for f in cloud.fields] == [
            ("x", 0), ("y", 4), ("z", 8), ("depth", 12)
        ]  # fmt: skip
        points = np.frombuffer(cloud.data, np.float32).reshape(-1, 4)
        np.testing.assert_array_equal(points[:, :3], positions[row][hit[row]])
        np.testing.assert_array_equal(points[:, 3], depths[row][hit[row]])
        total += len(points)
    assert total == int(hit.sum()) > 1000


def test_joint_states_equal_the_store(exported):
    reader, messages = exported["reader"], exported["topics"]["/joints" + ROBOT]
    dof = list(reader.channels[ROBOT + ".positions"].attrs["dof_names"])
    assert len(dof) == 9
    values = {
        "position": reader.read(ROBOT + ".positions"),
        "velocity": reader.read(ROBOT + ".velocities"),
        "effort": reader.read(ROBOT + ".efforts"),
    }
    for row, (_, _, decoded) in enumerate(messages):
        assert [j.name for j in decoded.joints] == dof
        for field, array in values.items():
            np.testing.assert_array_equal([getattr(j, field) for j in decoded.joints], array[row])
    targets = reader.read(ROBOT + ".targets")
    for row, (_, _, decoded) in enumerate(exported["topics"]["/command" + ROBOT]):
        got = [np.nan if decoded["targets"][n] is None else decoded["targets"][n] for n in dof]
        np.testing.assert_array_equal(got, targets[row])  # non-finite values are null


def test_imu_and_contact_messages_equal_the_store(exported):
    reader, topics = exported["reader"], exported["topics"]
    acc = reader.read(IMU + ".linear_acceleration")
    gyro = reader.read(IMU + ".angular_velocity")
    quat = reader.read(IMU + ".orientation")
    valid = reader.read(IMU + ".valid")
    for row, (_, _, m) in enumerate(topics["/imu" + IMU]):
        assert [m["linear_acceleration"][k] for k in "xyz"] == acc[row].tolist()
        assert [m["angular_velocity"][k] for k in "xyz"] == gyro[row].tolist()
        assert [m["orientation"][k] for k in "wxyz"] == quat[row].tolist()
        assert m["valid"] is bool(valid[row])
    for sensor in FINGER_CONTACTS:
        force = reader.read(sensor + ".value")
        touching = reader.read(sensor + ".in_contact")
        for row, (_, _, m) in enumerate(topics["/contact" + sensor]):
            assert m["value"] == force[row] and m["in_contact"] is bool(touching[row])


def _usd_collider_points(stage, body_path: str) -> np.ndarray:
    """World points of the body's own Mesh/Cube colliders at the USD pose (USD's transforms)."""
    from pxr import Usd, UsdGeom, UsdPhysics

    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    points = []
    predicate = Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)
    prims = iter(Usd.PrimRange(stage.GetPrimAtPath(body_path), predicate))
    for prim in prims:
        if str(prim.GetPath()) != body_path and prim.HasAPI(UsdPhysics.RigidBodyAPI):
            prims.PruneChildren()  # another body's colliders
            continue
        if not prim.HasAPI(UsdPhysics.CollisionAPI):
            continue
        if prim.IsA(UsdGeom.Mesh):
            local = np.array(UsdGeom.Mesh(prim).GetPointsAttr().Get(), np.float64)
        elif prim.IsA(UsdGeom.Cube):
            half = 0.5 * UsdGeom.Cube(prim).GetSizeAttr().Get()
            local = half * np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T
        else:
            continue
        matrix = np.array(cache.GetLocalToWorldTransform(prim), np.float64)  # row vectors
        points.append(local @ matrix[:3, :3] + matrix[3, :3])
    return np.concatenate(points)


def _rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate points v (N, 3) by the unit quaternion q (w, x, y, z)."""
    w, u = q[0], q[1:]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def test_geometry_follows_the_body_frames(exported):
    """Exported triangles, placed by the first /bodies/tf message, sit on USD's collider points.

    The oracle is USD's own composition (XformCache) of each collider's points at the
    authored pose; after one 2 ms step the bodies have moved far less than 1 mm.
    """
    from pxr import Usd

    update = exported["topics"]["/scene/geometry"][0][2]
    tf = exported["topics"]["/bodies/tf"][0][2]
    frames = {
        t.child_frame_id: (
            np.array([t.translation.x, t.translation.y, t.translation.z]),
            np.array([t.rotation.w, t.rotation.x, t.rotation.y, t.rotation.z]),
        )
        for t in tf.transforms
    }
    entities = {e.frame_id: e for e in update.entities if e.frame_id != "world"}
    links = [p for p in frames if p.startswith(ROBOT + "/")]
    assert len(links) == 11 and set(links) <= set(entities)
    assert "/World/RedBox" in entities and any(e.frame_id == "world" for e in update.entities)
    stage = Usd.Stage.Open(str(exported["scene"]))
    for body in [*links, "/World/RedBox"]:
        entity = entities[body]
        assert entity.frame_locked
        (triangles,) = entity.triangles
        local = np.array([[p.x, p.y, p.z] for p in triangles.points])
        assert len(local) % 3 == 0 and len(local) >= 36
        pose_q = np.array([triangles.pose.orientation.w, triangles.pose.orientation.x,
                           triangles.pose.orientation.y, triangles.pose.orientation.z])  # fmt: skip
        pose_p = np.array([triangles.pose.position.x, triangles.pose.position.y,
                           triangles.pose.position.z])  # fmt: skip
        position, orientation = frames[body]
        world = _rotate(orientation, _rotate(pose_q, local) + pose_p) + position
        oracle = _usd_collider_points(stage, body)
        nearest = np.min(np.linalg.norm(world[:, None, :] - oracle[None, :, :], axis=2), axis=1)
        assert nearest.max() < 1e-3, body
    red = entities["/World/RedBox"].triangles[0].color
    assert (round(red.r, 2), round(red.g, 2), round(red.b, 2), red.a) == (0.85, 0.1, 0.1, 1.0)
    # static colliders (ground, table top, legs) keep their own displayColor per triangle
    (static,) = [e for e in update.entities if e.frame_id == "world"]
    colors = {(round(c.r, 2), round(c.g, 2), round(c.b, 2)) for c in static.triangles[0].colors}
    assert colors == {(0.5, 0.5, 0.5), (0.6, 0.45, 0.3), (0.5, 0.35, 0.2)}
    assert len(static.triangles[0].colors) == len(static.triangles[0].points) == 6 * 12 * 3


def test_missing_scene_skips_geometry_with_a_warning(exported, tmp_path, caplog):
    scene = exported["scene"]
    hidden = scene.with_suffix(".hidden")
    out = tmp_path / "no_scene.mcap"
    os.replace(scene, hidden)
    try:
        with caplog.at_level(logging.WARNING, logger="runtime.recording.export_mcap"):
            export_mcap(exported["reader"], out)
        with pytest.raises(FileNotFoundError, match="no such scene file"):
            export_mcap(exported["reader"], tmp_path / "explicit.mcap", stage=str(scene))
    finally:
        os.replace(hidden, scene)
    assert any("no scene geometry" in r.getMessage() and str(scene) in r.getMessage()
               for r in caplog.records)  # fmt: skip
    topics = _read_mcap(out)["topics"]
    assert "/scene/geometry" not in topics and len(topics["/bodies/tf"]) == STEPS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["no_scene.mcap"]


def test_atomic_write_keeps_mode_and_old_file_on_failure(exported, tmp_path):
    out = tmp_path / "run.mcap"
    shutil.copy(exported["path"], out)
    os.chmod(out, 0o640)
    export_mcap(exported["reader"], out, stage=str(exported["scene"]))
    assert os.stat(out).st_mode & 0o777 == 0o640
    before = out.read_bytes()

    class Failing:
        """The real reader, failing after its first chunk (a disk error mid-export)."""

        def __init__(self, reader):
            self._reader = reader

        def __getattr__(self, name):
            return getattr(self._reader, name)

        def iter_chunks(self, names=None):
            yield next(self._reader.iter_chunks(names))
            raise OSError("injected read failure")

    with pytest.raises(OSError, match="injected"):
        export_mcap(Failing(exported["reader"]), out, stage=str(exported["scene"]))
    assert out.read_bytes() == before
    assert os.stat(out).st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["run.mcap"]


_FSIZE_SCRIPT = """
import resource, signal, sys
from runtime.errors import SimrtError
from runtime.recording import open_recording
from runtime.recording.export_mcap import export_mcap
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
try:
    export_mcap(open_recording(sys.argv[1]), sys.argv[2])
except SimrtError as error:
    print(error)
    sys.exit(1)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE is POSIX")
def test_write_failure_is_one_clear_error_and_leaves_no_file(exported, tmp_path):
    """The kernel refuses to grow the file past 100 kB (RLIMIT_FSIZE) mid-export."""
    import subprocess
    import sys

    out = tmp_path / "big.mcap"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", _FSIZE_SCRIPT, str(exported["reader"].path), str(out)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(f"{out}: writing the MCAP file failed at row ")
    assert "File too large" in done.stdout
    assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []
