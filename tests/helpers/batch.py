"""The batch tests' spec (a 20-episode Panda batch) and recording comparison.

Shared by several test modules (moved from tests/test_batch.py).
"""

from __future__ import annotations

from pathlib import Path

from runtime.recording import load_recording  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


SCENE = REPO / "scenes" / "panda_table.usda"


EPISODES = 20


STEPS = 30


SPEC = f"""
seed = 11
episodes = {EPISODES}
steps = {STEPS}
imu_mode = ["isaac", "physical"]
timeout = 300

[[scenes]]
path = "{SCENE}"

[randomize.joints]
fraction = 0.2

[[randomize.ik]]
link = "panda_hand"
time = 0.04
box_min = [0.4, -0.15, 0.55]
box_max = [0.6, 0.15, 0.75]
orientation = [0, 1, 0, 0]
cone_deg = 15

[[randomize.objects]]
path = "/World/RedBox"
offset_min = [-0.05, -0.05, 0.0]
offset_max = [0.05, 0.05, 0.0]
yaw_deg = 45

[randomize.scales]
mass = [0.8, 1.2]
friction = [0.7, 1.3]
drive_gain = [0.8, 1.2]
"""


def _same_recordings(a_path: Path, b_path: Path) -> None:
    a, b = load_recording(a_path), load_recording(b_path)
    assert a.complete and b.complete
    assert list(a.data) == list(b.data)
    assert a.step.tobytes() == b.step.tobytes() and a.time.tobytes() == b.time.tobytes()
    for name in a.data:
        assert a.data[name].dtype == b.data[name].dtype, name
        assert a.data[name].tobytes() == b.data[name].tobytes(), name
