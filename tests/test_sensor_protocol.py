"""The sensor-kind protocol: a kind defined in this file runs on the compiled path.

The toy kind is a "height above ground" sensor on a rigid body: configuration from its
prim's ``offset`` attribute, a batch holding two state blocks, a part kernel compiled with
the runtime's ``jit``, a reading dataclass and its fields declared for the compiled row
(:mod:`runtime.sensors.kinds`). A scene with one such prim (and the built-in contact, IMU
and ray-cast sensors) is run compiled (fused step, then blocks of steps) and on the general
path: every channel must be bit for bit the same, and the toy's values match the recorded
body poses (computed here with NumPy).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")

from runtime._compile.jit import JIT_DISABLED, jit  # noqa: E402
from runtime.recording import load_recording  # noqa: E402
from runtime.run.blocks import StepBlocks  # noqa: E402
from runtime.run.fused import FusedStep  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402
from runtime.sensors import kinds  # noqa: E402
from runtime.sensors.base import SensorBase  # noqa: E402
from tests.helpers.run_compare import _assert_identical  # noqa: E402

pytestmark = pytest.mark.skipif(JIT_DISABLED, reason="the compiled step needs the JIT")

REPO = Path(__file__).resolve().parents[1]
TYPE_NAME = "TestHeightSensor"
SENSOR = "/World/SimpleArm/link4/height"
ABOVE = 0.3  # the height above which ``above`` is True

# the blocks' columns: floats offset, time, height, velocity (3); ints body, valid, step, above
F_OFFSET, F_TIME, F_HEIGHT, F_VELOCITY = 0, 1, 2, 3
I_BODY, I_VALID, I_STEP, I_ABOVE = 0, 1, 2, 3


@jit(nrt=False)
def height_part(positions, orientations, lin_vel, ang_vel, time, step, floats, ints):
    """Height of a point ``offset`` along the body's z axis, and the body's velocity."""
    for i in range(floats.shape[0]):
        b = ints[i, I_BODY]
        x = orientations[b, 1]
        y = orientations[b, 2]
        height = positions[b, 2] + floats[i, F_OFFSET] * (1.0 - 2.0 * (x * x + y * y))
        floats[i, F_TIME] = time
        floats[i, F_HEIGHT] = height
        for a in range(3):
            floats[i, F_VELOCITY + a] = lin_vel[b, a]
        ints[i, I_VALID] = 1
        ints[i, I_STEP] = step
        ints[i, I_ABOVE] = 1 if height > ABOVE else 0


@dataclasses.dataclass
class HeightReading:
    is_valid: bool = False
    time: float = 0.0
    step: int = 0
    height: float = 0.0
    above: bool = False
    velocity: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))


class HeightBatch:
    def __init__(self, runtime, sensors):
        self.sensors = sensors
        self.floats = np.zeros((len(sensors), 6))
        self.ints = np.zeros((len(sensors), 4), np.int64)
        for i, sensor in enumerate(sensors):
            sensor._batch, sensor._index = self, i
            self.floats[i, F_OFFSET] = sensor.offset
            self.ints[i, I_BODY] = sensor.body

    def update(self, state):
        c = np.ascontiguousarray
        height_part(
            c(state.body_positions), c(state.body_orientations),
            c(state.body_linear_velocities), c(state.body_angular_velocities),
            float(state.time), int(state.step), self.floats, self.ints,
        )  # fmt: skip

    def fused_part(self, fused):
        return kinds.FusedPart("height", self, height_part, self.floats, self.ints)


class HeightSensor(SensorBase):
    kind = "height"
    batch_type = HeightBatch

    def __init__(self, prim_path):
        super().__init__(prim_path)
        self._batch = None
        self._index = -1
        self.offset = 0.0
        self.body = -1

    def bind(self, runtime):
        prim = runtime.stage.GetPrimAtPath(self.prim_path)
        self.offset = float(prim.GetAttribute("offset").Get())
        parent = prim.GetParent()
        while str(parent.GetPath()) not in runtime.body_paths:
            parent = parent.GetParent()
        self.body = runtime.body_index(str(parent.GetPath()))

    def update(self, state):
        self._batch.update(state)

    def reading(self):
        f, i = self._batch.floats[self._index], self._batch.ints[self._index]
        if not i[I_VALID]:
            return HeightReading()
        return HeightReading(
            True, float(f[F_TIME]), int(i[I_STEP]), float(f[F_HEIGHT]), bool(i[I_ABOVE]),
            f[F_VELOCITY : F_VELOCITY + 3].copy(),
        )  # fmt: skip

    def reset(self):
        self._batch.ints[self._index, I_VALID] = 0

    def fused_row(self, fused, tap):
        fields = {
            "time": ("f", F_TIME), "step": ("i", I_STEP), "height": ("f", F_HEIGHT),
            "above": ("i", I_ABOVE), "velocity": ("f", F_VELOCITY),
        }  # fmt: skip
        return kinds.FusedFields(self._batch, self._index, I_VALID, fields)


@pytest.fixture
def height_scene(tmp_path, monkeypatch):
    """simple_arm.usda with a toy sensor under link4 (the kind registered for the test)."""
    text = (REPO / "scenes" / "simple_arm.usda").read_text()
    anchor = '            def IsaacContactSensor "contact_sensor"'
    assert anchor in text
    prim = (
        f'            def {TYPE_NAME} "height"\n'
        "            {\n                double offset = 0.05\n            }\n\n"
    )
    scene = tmp_path / "height_arm.usda"
    scene.write_text(text.replace(anchor, prim + anchor, 1))
    kinds.register_kind(TYPE_NAME, HeightSensor)
    yield scene
    kinds.unregister_kind(TYPE_NAME)


def _run(scene, out, monkeypatch, fused, blocks):
    monkeypatch.setattr(FusedStep, "ENABLED", fused)
    monkeypatch.setattr(StepBlocks, "ENABLED", blocks)
    parts = []
    add_part = FusedStep.add_part

    def recorded(self, part):
        parts.append(part.name)
        return add_part(self, part)

    monkeypatch.setattr(FusedStep, "add_part", recorded)
    result = run_scene(str(scene), out=out, steps=300)
    return result, load_recording(out), parts


def test_toy_kind_runs_compiled_and_records_like_the_general_path(
    height_scene, tmp_path, monkeypatch
):
    blocks, blocks_store, parts = _run(height_scene, tmp_path / "b.zarr", monkeypatch, True, True)
    assert blocks.timings["compiled"] > 0.0 and blocks.timings["state"] == 0.0
    assert "height" in parts and {"contact", "imu", "ray"} <= set(parts)
    fused, fused_store, parts = _run(height_scene, tmp_path / "f.zarr", monkeypatch, True, False)
    assert fused.timings["fused"] > 0.0 and fused.timings["state"] == 0.0
    assert "height" in parts
    general, general_store, parts = _run(
        height_scene, tmp_path / "g.zarr", monkeypatch, False, False
    )
    assert general.timings["fused"] == general.timings["compiled"] == 0.0 and not parts
    _assert_identical(fused_store, general_store)
    _assert_identical(blocks_store, general_store)

    data = general_store.data
    valid = data[f"{SENSOR}.valid"]
    assert valid.all() and valid.shape == (300,)
    assert data[f"{SENSOR}.height"].dtype == np.float64
    assert data[f"{SENSOR}.above"].dtype == np.bool_
    assert data[f"{SENSOR}.velocity"].shape == (300, 3)
    # the toy's numbers against the recorded body poses (NumPy, not the kernel)
    body = list(general_store.channels["bodies.positions"].attrs["body_paths"]).index(
        "/World/SimpleArm/link4"
    )
    position = data["bodies.positions"][:, body]
    w, x, y, z = data["bodies.orientations"][:, body].T
    expected = position[:, 2] + 0.05 * (1.0 - 2.0 * (x * x + y * y))
    np.testing.assert_allclose(data[f"{SENSOR}.height"], expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(data[f"{SENSOR}.above"], data[f"{SENSOR}.height"] > ABOVE)
    np.testing.assert_array_equal(data[f"{SENSOR}.step"], np.arange(1, 301))
    assert np.abs(data[f"{SENSOR}.velocity"]).max() > 0.0  # the arm moved


def test_fused_plan_names_no_sensor_class():
    source = (REPO / "runtime" / "run" / "_fused_plan.py").read_text()
    names = re.findall(r"\b(\w*(?:Sensor|Batch))\b", source)
    assert names == []
    for kind in ("contact", "imu", "ray"):
        assert f'"{kind}"' not in source


def _worlds_rollout(scene, compiled):
    from runtime.run.worlds import Worlds

    worlds = Worlds(str(scene), 2, decimation=2, compiled=compiled)
    try:
        base = worlds.initial_targets()
        rows = []
        for k in range(8):
            worlds.step(np.ascontiguousarray(base + 0.05 * np.sin(0.4 * k + np.arange(2))[:, None]))
            rows.append({name: v.copy() for name, v in worlds.buffers.items()})
        used = worlds._table[:, 18].copy()  # (W_ACTIVE: worlds on the compiled path)
    finally:
        worlds.close()
    return rows, used


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_toy_kind_in_vector_worlds(height_scene):
    """The vector worlds step the toy in their compiled call, as the general path does."""
    general, used = _worlds_rollout(height_scene, False)
    assert not used.any()
    compiled, used = _worlds_rollout(height_scene, True)
    assert used.all()
    assert f"{SENSOR}.height" in general[0] and general[-1][f"{SENSOR}.valid"].all()
    for k, (a, b) in enumerate(zip(general, compiled, strict=True)):
        assert a.keys() == b.keys()
        for name in a:
            assert a[name].dtype == b[name].dtype
            assert np.array_equal(a[name], b[name], equal_nan=True), f"step {k}: {name}"
    heights = np.array([row[f"{SENSOR}.height"] for row in compiled])
    assert np.unique(heights).size > 2  # the toy's values moved with the arm


def test_register_kind_refuses_builtin_and_duplicate_names(height_scene):
    from pxr import Usd

    import runtime.schema  # noqa: F401  (the Isaac schemas registered)
    from runtime.sensors.runtime import SensorRuntime

    with pytest.raises(ValueError, match="IsaacImuSensor"):
        kinds.register_kind("IsaacImuSensor", HeightSensor)
    with pytest.raises(ValueError, match=TYPE_NAME):
        kinds.register_kind(TYPE_NAME, HeightSensor)
    stage = Usd.Stage.Open(str(height_scene))
    found = [type(s).__name__ for s in SensorRuntime.discover(stage)]
    assert found.count("HeightSensor") == 1 and "ImuSensor" in found
    kinds.unregister_kind(TYPE_NAME)
    assert "HeightSensor" not in [type(s).__name__ for s in SensorRuntime.discover(stage)]
