"""The compat surface against a table of Isaac's signatures (tests/data/isaac_signatures.json).

The table is data taken from the specs, the seed documents and issue 34; every entry names a
compat object and Isaac's leading positional parameters (names and order) and keywords. Then
Isaac's keyword names for the sensor authoring classes, batched (N, 3) / (N, 4) poses,
wrapping existing prims with overrides, and ``register_plugin_dir`` taking a ``str``.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom

import runtime.compat.isaac  # noqa: F401  (registers the schemas and submodules)
from runtime.compat.isaac import IMU, Contact, Raycast

TABLE = json.loads((Path(__file__).parent / "data" / "isaac_signatures.json").read_text())
SCENE = Path(__file__).resolve().parents[1] / "scenes" / "simple_arm.usda"
ARM = "/World/SimpleArm"


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def _parameters(obj) -> list[inspect.Parameter]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    params = list(inspect.signature(target).parameters.values())
    if (
        params
        and params[0].name in ("self", "cls")
        and (inspect.isclass(obj) or "." in obj.__qualname__)
    ):
        params = params[1:]
    return params


@pytest.mark.parametrize("entry", TABLE["entries"], ids=[e["name"] for e in TABLE["entries"]])
def test_signature_matches_isaac(entry):
    obj = _resolve(entry["name"])
    params = _parameters(obj)
    positional = [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if entry.get("params") is not None:
        want = entry["params"]
        assert positional[: len(want)] == want, (entry["source"], positional)
        extra = [p for p in params if p.name in positional[len(want) :]]
        assert all(p.default is not inspect.Parameter.empty for p in extra), (
            "parameters after Isaac's must be optional",
            [p.name for p in extra],
        )
    names = {p.name for p in params}
    missing = [k for k in entry.get("keywords", []) if k not in names]
    assert not missing, (entry["source"], missing)


def test_table_is_not_empty_and_names_sources():
    assert len(TABLE["entries"]) >= 60
    assert all(e.get("source") for e in TABLE["entries"])


@pytest.fixture
def stage():
    st = Usd.Stage.Open(str(SCENE))
    st.SetEditTarget(st.GetSessionLayer())
    return st


def test_isaac_keywords_and_old_aliases(stage):
    imu = IMU.create(
        f"{ARM}/link2/imu_a",
        linear_acceleration_filter_size=4,
        angular_velocity_filter_size=3,
        orientation_filter_size=2,
        stage=stage,
    )
    assert imu.get_linear_acceleration_filter_size() == 4
    assert imu.prim.GetAttribute("angularVelocityFilterWidth").Get() == 3
    assert imu.get_orientation_filter_width() == 2  # old getter name
    old = IMU.create(f"{ARM}/link2/imu_b", linear_acceleration_filter_width=5, stage=stage)
    assert old.get_linear_acceleration_filter_size() == 5
    assert old.get_angular_velocity_filter_size() == 1
    with pytest.raises(ValueError, match="disagree"):
        IMU.create(
            f"{ARM}/link2/imu_c",
            linear_acceleration_filter_size=2,
            linear_acceleration_filter_width=3,
            stage=stage,
        )
    rays = dict(ray_origins=[(0, 0, 0)], ray_directions=[(1, 0, 0)], stage=stage)
    r = Raycast.create(f"{ARM}/base/r1", output_frame="WORLD", **rays)
    assert r.prim.GetAttribute("outputFrameOfReference").Get() == "WORLD"
    r2 = Raycast.create(f"{ARM}/base/r2", output_frame_of_reference="WORLD", **rays)
    assert r2.get_output_frame() == "WORLD" and r2.get_output_frame_of_reference() == "WORLD"
    with pytest.raises(ValueError, match="SENSOR or WORLD"):
        Raycast.create(f"{ARM}/base/r3", output_frame="LOCAL", **rays)


def _world(prim) -> np.ndarray:
    return np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())).T


def test_batched_poses(stage):
    paths = [f"{ARM}/link2/c", f"{ARM}/link3/c", f"{ARM}/link4/c"]
    world = np.array([[0.1, 0.2, 0.3], [0.0, -0.1, 0.4], [0.2, 0.0, 0.5]])
    half = np.sqrt(0.5)
    quats = np.array([[1, 0, 0, 0], [half, 0, 0, half], [0, 1, 0, 0]], float)
    made = Contact.create(paths, positions=world, orientations=quats, radius=0.05, stage=stage)
    assert made.prim_paths == paths and made.count == 3
    for i, prim in enumerate(made.prims):
        m = _world(prim)
        np.testing.assert_allclose(m[:3, 3], world[i], atol=1e-6)  # world position as asked
        local = UsdGeom.Xformable(prim).GetLocalTransformation(Usd.TimeCode.Default())
        q = Gf.Transform(local).GetRotation().GetQuat()
        got = np.array([q.GetReal(), *q.GetImaginary()])
        assert abs(abs(got @ quats[i]) - 1.0) < 1e-6  # local orientation as asked (+-q)
        assert prim.GetAttribute("radius").Get() == pytest.approx(0.05)
    one_row = IMU.create(
        [f"{ARM}/link2/i", f"{ARM}/link3/i"], translations=[(0.0, 0.0, 0.1)], stage=stage
    )
    for prim in one_row.prims:  # one row serves every prim
        t = UsdGeom.Xformable(prim).GetLocalTransformation(Usd.TimeCode.Default())
        np.testing.assert_allclose(t.ExtractTranslation(), [0.0, 0.0, 0.1], atol=1e-9)
    with pytest.raises(ValueError, match=r"\(3, 3\)"):
        Contact.create(paths, positions=np.zeros((2, 3)), stage=stage)


def test_wrapping_existing_prims_with_overrides(stage):
    path = f"{ARM}/link4/contact_sensor"
    before = _world(stage.GetPrimAtPath(path))
    wrapped = Contact(path, radius=0.2, min_threshold=1.5, stage=stage)
    assert wrapped.get_radius() == pytest.approx(0.2)
    assert wrapped.get_threshold()[0] == pytest.approx(1.5)
    np.testing.assert_allclose(_world(wrapped.prim), before)  # no pose given: pose kept
    Contact(path, translations=np.array([[0.0, 0.0, 0.07]]), stage=stage)
    local = UsdGeom.Xformable(wrapped.prim).GetLocalTransformation(Usd.TimeCode.Default())
    np.testing.assert_allclose(local.ExtractTranslation(), [0.0, 0.0, 0.07], atol=1e-9)
    imu = IMU(f"{ARM}/link3/imu", orientation_filter_size=6, enabled=False, stage=stage)
    assert imu.get_orientation_filter_size() == 6 and imu.get_enabled() is False
    ray = Raycast(f"{ARM}/base/range_finder", output_frame="WORLD", max_range=7.0, stage=stage)
    assert ray.get_output_frame() == "WORLD" and ray.get_max_range() == pytest.approx(7.0)
    with pytest.raises(TypeError, match="unknown keyword"):
        Contact(path, colour=(1, 0, 0, 1), stage=stage)
    with pytest.raises(ValueError, match="IsaacImuSensor"):
        Contact(f"{ARM}/link3/imu", radius=0.1, stage=stage)


def test_register_plugin_dir_accepts_str(tmp_path):
    from runtime.compat.isaac import register_plugin_dir
    from runtime.schema import register_plugin_dir as public

    assert register_plugin_dir is public
    assert register_plugin_dir(str(tmp_path)) is False  # no plugInfo.json: nothing to do
    import runtime.schema

    # an already registered plugin directory, given as a string, is left alone (no error)
    robot_schema = Path(runtime.schema.__file__).parent / "resources" / "robot_schema"
    assert (robot_schema / "plugInfo.json").is_file()
    assert register_plugin_dir(str(robot_schema)) is False
