"""simrt plot: renders a recording's IMU, contact and raycast data to a PNG."""

from __future__ import annotations

import numpy as np
import pytest

from runtime.cli import main
from runtime.errors import SimrtError
from runtime.recording import ChannelInfo, StoreWriter, load_recording
from runtime.recording.plot_cli import plot_recording, raycast_hit_points


def _recording(path, steps=200):
    rec = StoreWriter(path, meta={"scene": "synthetic.usda"})
    rec.add_channel(
        ChannelInfo(
            "/W/imu.linear_acceleration", (3,), "float64", "/W/imu", "imu", "linear_acceleration"
        )
    )
    rec.add_channel(
        ChannelInfo("/W/imu.angular_velocity", (3,), "float64", "/W/imu", "imu", "angular_velocity")
    )
    rec.add_channel(ChannelInfo("/W/c.value", (), "float64", "/W/c", "contact", "value"))
    rec.add_channel(ChannelInfo("/W/c.in_contact", (), "bool", "/W/c", "contact", "in_contact"))
    rec.add_channel(
        ChannelInfo(
            "/W/r.ray_end_points_world",
            (8, 3),
            "float32",
            "/W/r",
            "raycast",
            "ray_end_points_world",
        )
    )
    rec.add_channel(ChannelInfo("/W/r.hit", (8,), "bool", "/W/r", "raycast", "hit"))
    rec.add_channel(ChannelInfo("/W/r.valid", (), "bool", "/W/r", "raycast", "valid"))
    angles = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    for k in range(1, steps + 1):
        t = 0.01 * k
        ends = np.stack([np.cos(angles + t), np.sin(angles + t), np.full(8, 0.1 * t)], axis=1)
        rec.append(
            k,
            t,
            {
                "/W/imu.linear_acceleration": [np.sin(t), np.cos(t), 9.81],
                "/W/imu.angular_velocity": [0.1, -0.2, t],
                "/W/c.value": max(0.0, t - 1.0),
                "/W/c.in_contact": t > 1.0,
                "/W/r.ray_end_points_world": ends,
                "/W/r.hit": angles < np.pi,  # half the rays hit
                "/W/r.valid": k % 2 == 1,
            },
        )
    rec.close()
    return load_recording(path)


def test_hit_points_are_the_hit_rays_of_valid_steps(tmp_path):
    recording = _recording(tmp_path / "r.zarr", steps=20)
    points, times = raycast_hit_points(recording)
    assert points.shape == (10 * 4, 3)  # 10 valid steps x 4 hit rays
    np.testing.assert_allclose(times[:4], 0.01)
    np.testing.assert_allclose(np.linalg.norm(points[:, :2], axis=1), 1.0, rtol=1e-6)


def test_plot_writes_png_with_all_panels(tmp_path):
    recording = _recording(tmp_path / "r.zarr")
    out = tmp_path / "plots" / "r.png"
    panels = plot_recording(recording, out)
    assert panels == [
        "IMU linear acceleration",
        "IMU angular velocity",
        "contact force",
        "raycast hits",
    ]
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.png"]  # no temp file left


def test_plot_cli(tmp_path, capsys):
    _recording(tmp_path / "r.zarr", steps=30)
    assert main(["plot", str(tmp_path / "r.zarr")]) == 0
    assert (tmp_path / "r.png").exists()
    assert "r.png" in capsys.readouterr().out
    assert main(["plot", str(tmp_path / "missing.npz")]) == 1


def test_nothing_to_plot(tmp_path):
    rec = StoreWriter(tmp_path / "e.zarr")
    rec.add_channel(ChannelInfo("x", (), "float64"))
    rec.append(1, 0.1, {"x": 1.0})
    rec.close()
    with pytest.raises(SimrtError, match="nothing|no IMU"):
        plot_recording(load_recording(tmp_path / "e.zarr"), tmp_path / "e.png")
