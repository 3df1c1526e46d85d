"""Lab sensor recordings seen through `simrt plot` and the MCAP export (short real runs).

Depth images and height scans recorded by `run_scene` (scenes/panda_lab_camera.usda,
scenes/go2_lab_sensors.usda) are drawn by the plot command and exported as Foxglove
RawImage / PointCloud messages. The PNG's panels are checked through the axes of the
figure it saved; the height map's grid against the hit points' own positions in the scan
frame (from the recorded sensor pose); the MCAP read back with the ``mcap`` reader and the
protobuf descriptors stored in the file, pixel by pixel and point by point against the store.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("matplotlib")

from runtime.cli import main  # noqa: E402
from runtime.recording import load_recording, open_recording  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CAMERA = "/World/LabSensors/DepthCamera"
SCAN = "/World/LabSensors/HeightScan"
STEPS = 25


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lab_views")
    out = {}
    for name, scene in (("panda", "panda_lab_camera.usda"), ("go2", "go2_lab_sensors.usda")):
        out[name] = folder / f"{name}.zarr"
        result = run_scene(REPO / "scenes" / scene, out=out[name], steps=STEPS, summary=False)
        assert result.complete
    return out


@pytest.fixture()
def saved_figures(monkeypatch):
    """Every figure the plot command saves: (axes titles, the axes) per figure."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    saved = []
    savefig = Figure.savefig

    def keep(self, *args, **kwargs):
        saved.append(list(self.axes))
        return savefig(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    return saved


def _titled(axes, prefix):
    found = [ax for ax in axes if ax.get_title().startswith(prefix)]
    assert len(found) == 1, [ax.get_title() for ax in axes]
    return found[0]


def test_plot_draws_the_depth_image_of_the_chosen_frame(stores, tmp_path, saved_figures):
    png = tmp_path / "panda.png"
    assert main(["plot", str(stores["panda"]), "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    recording = load_recording(stores["panda"])
    depth = recording.data[f"{CAMERA}:distance_to_image_plane"]
    assert depth.shape == (STEPS, 48, 64, 1)
    ax = _titled(saved_figures[-1], "depth image")
    assert f"row {STEPS - 1}," in ax.get_title()
    shown = np.ma.filled(ax.images[0].get_array(), np.nan)
    expected = np.where(np.isfinite(depth[-1, :, :, 0]), depth[-1, :, :, 0], np.nan)
    np.testing.assert_array_equal(shown, expected)
    assert np.isfinite(expected).mean() > 0.5  # the camera sees the robot and the table
    assert main(["plot", str(stores["panda"]), "--out", str(png), "--frame", "3"]) == 0
    ax = _titled(saved_figures[-1], "depth image")
    assert "row 3," in ax.get_title()
    shown = np.ma.filled(ax.images[0].get_array(), np.nan)
    np.testing.assert_array_equal(np.nan_to_num(shown, nan=-1.0), np.nan_to_num(
        np.where(np.isfinite(depth[3, :, :, 0]), depth[3, :, :, 0], np.nan), nan=-1.0))  # fmt: skip


def test_plot_draws_the_height_map_on_the_scan_grid(stores, tmp_path, saved_figures):
    png = tmp_path / "go2.png"
    assert main(["plot", str(stores["go2"]), "--out", str(png)]) == 0
    assert png.stat().st_size > 0
    ax = _titled(saved_figures[-1], "height map")
    titles = [a.get_title() for a in saved_figures[-1]]
    assert not any(t.startswith("depth image") for t in titles)
    recording = load_recording(stores["go2"])
    hits = recording.data[f"{SCAN}:ray_hits_w"][-1]
    pos = recording.data[f"{SCAN}:pos_w"][-1]
    quat = recording.data[f"{SCAN}:quat_w"][-1]
    # each hit's place on the grid from its own position in the yaw-aligned scan frame
    w, x, y, z = quat
    yaw = np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    c, s = np.cos(yaw), np.sin(yaw)
    dx, dy = hits[:, 0] - pos[0], hits[:, 1] - pos[1]
    local_x, local_y = c * dx + s * dy, -s * dx + c * dy
    columns = np.rint((local_x + 0.8) / 0.1).astype(int)
    rows = np.rint((local_y + 0.5) / 0.1).astype(int)
    expected = np.full((11, 17), np.nan)
    expected[rows, columns] = hits[:, 2]
    assert np.isfinite(expected).all()  # every cell hit once
    shown = np.ma.filled(ax.images[0].get_array(), np.nan)
    np.testing.assert_array_equal(shown, expected)
    np.testing.assert_allclose(ax.images[0].get_extent(), [-0.8, 0.8, -0.5, 0.5])


def test_plot_refuses_a_frame_outside_the_recording(stores, tmp_path, capsys):
    assert main(["plot", str(stores["go2"]), "--out", str(tmp_path / "x.png"), "--frame", "99"])
    assert "--frame 99 is outside the recording's 25 rows" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def _read_mcap(path: Path) -> dict[str, list]:
    """topic -> decoded messages (protobuf classes from the file's own descriptors)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from mcap.reader import make_reader

    classes, topics = {}, {}
    with open(path, "rb") as handle:
        for schema, channel, message in make_reader(handle).iter_messages():
            if channel.message_encoding != "protobuf":
                continue
            if schema.id not in classes:
                pool = descriptor_pool.DescriptorPool()
                for file in descriptor_pb2.FileDescriptorSet.FromString(schema.data).file:
                    pool.Add(file)
                descriptor = pool.FindMessageTypeByName(schema.name)
                classes[schema.id] = message_factory.GetMessageClass(descriptor)
            decoded = classes[schema.id].FromString(message.data)
            topics.setdefault(channel.topic, []).append((schema.name, decoded))
    return topics


def test_mcap_carries_depth_images_and_height_scan_points(stores, tmp_path):
    pytest.importorskip("foxglove")
    pytest.importorskip("mcap.reader")
    pytest.importorskip("google.protobuf")
    from runtime.recording.export_mcap import export_mcap

    panda = export_mcap(open_recording(stores["panda"]), tmp_path / "panda.mcap")
    images = _read_mcap(panda)[f"/lab{CAMERA}/distance_to_image_plane"]
    depth = load_recording(stores["panda"]).data[f"{CAMERA}:distance_to_image_plane"]
    assert len(images) == STEPS
    for row, (schema, image) in enumerate(images):
        assert schema == "foxglove.RawImage"
        assert (image.width, image.height, image.encoding, image.step) == (64, 48, "32FC1", 256)
        assert image.frame_id == CAMERA
        pixels = np.frombuffer(image.data, "<f4").reshape(48, 64)
        np.testing.assert_array_equal(pixels, depth[row, :, :, 0].astype(np.float32))

    go2 = export_mcap(open_recording(stores["go2"]), tmp_path / "go2.mcap")
    clouds = _read_mcap(go2)[f"/lab{SCAN}/ray_hits_w"]
    recording = load_recording(stores["go2"])
    hits = recording.data[f"{SCAN}:ray_hits_w"]
    distances = recording.data[f"{SCAN}:ray_distances"]
    assert len(clouds) == STEPS
    for row, (schema, cloud) in enumerate(clouds):
        assert schema == "foxglove.PointCloud" and cloud.frame_id == "world"
        names = [(f.name, f.offset) for f in cloud.fields]
        assert names == [("x", 0), ("y", 4), ("z", 8), ("distance", 12)]
        points = np.frombuffer(cloud.data, "<f4").reshape(-1, 4)
        hit = np.isfinite(hits[row]).all(axis=1)
        assert hit.sum() == 187
        np.testing.assert_array_equal(points[:, :3], hits[row][hit].astype(np.float32))
        np.testing.assert_array_equal(points[:, 3], distances[row][hit].astype(np.float32))
