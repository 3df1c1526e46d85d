"""Store rows written in place and the run loop's sensor taps.

The store's chunk buffers are reused between chunks, so every test here fills them with
0xFF bytes (``StoreWriter._POISON_BUFFERS``): a channel row that is left unwritten instead
of zeroed reads back as NaN / -1 / True and fails the comparison. The oracle of every tap
test is the reading itself (its fields, and its hit prim path strings).
"""

from __future__ import annotations

import io
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from runtime.recording import ChannelInfo, StoreWriter, load_recording
from runtime.run.taps import HitPathIds, SensorTap

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "panda_table.usda"


@pytest.fixture(autouse=True)
def poisoned_chunks(monkeypatch):
    monkeypatch.setattr(StoreWriter, "_POISON_BUFFERS", True)


def _channels(rec):
    return [
        rec.add_channel(ChannelInfo("a.vec", (3,), "float32")),
        rec.add_channel(ChannelInfo("a.n", (), "int64")),
        rec.add_channel(ChannelInfo("a.on", (), "bool")),
        rec.add_channel(ChannelInfo("b.pts", (4, 3), "float64")),
    ]


def test_begin_end_row_round_trip_across_chunks_and_segments(tmp_path):
    path = tmp_path / "run.zarr"
    rec = StoreWriter(path, chunk_rows=2)
    slots = _channels(rec)
    assert slots == [0, 1, 2, 3]
    for k in range(1, 8):
        buffers, row = rec.begin_row()
        buffers[slots[0]][row] = [k, 2 * k, 3 * k]
        buffers[slots[1]][row] = k * 10
        buffers[slots[2]][row] = k % 2 == 0
        buffers[slots[3]][row] = np.full((4, 3), k / 4)
        rec.end_row(k, k * 0.5)
    deadline = time.monotonic() + 30
    while rec.committed_rows < 6 and time.monotonic() < deadline:
        time.sleep(0.01)  # three full chunks are written by the writer thread
    assert load_recording(path).step.tolist() == [1, 2, 3, 4, 5, 6]  # committed so far
    rec.close()
    loaded = load_recording(path)
    ks = np.arange(1, 8)
    np.testing.assert_array_equal(loaded.step, ks)
    np.testing.assert_array_equal(loaded.time, ks * 0.5)
    np.testing.assert_array_equal(loaded.data["a.vec"], np.stack([ks, 2 * ks, 3 * ks], axis=1))
    np.testing.assert_array_equal(loaded.data["a.n"], ks * 10)
    np.testing.assert_array_equal(loaded.data["a.on"], ks % 2 == 0)
    expected = np.ones((7, 4, 3)) * (ks / 4)[:, None, None]
    np.testing.assert_array_equal(loaded.data["b.pts"], expected)


def test_a_row_that_is_not_ended_is_not_recorded(tmp_path):
    rec = StoreWriter(tmp_path / "run.zarr", chunk_rows=2)
    slots = _channels(rec)
    for k in (1, 2, 3):
        buffers, row = rec.begin_row()
        buffers[slots[0]][row] = [k, k, k]
        if k == 2:
            continue  # e.g. an error while the row was being written
        for slot in slots[1:]:
            buffers[slot][row] = 0
        rec.end_row(k, 0.0)
    rec.close()
    loaded = load_recording(tmp_path / "run.zarr")
    np.testing.assert_array_equal(loaded.step, [1, 3])
    np.testing.assert_array_equal(loaded.data["a.vec"][:, 0], [1, 3])


def test_append_zeroes_every_channel_missing_from_the_row(tmp_path):
    rec = StoreWriter(tmp_path / "run.zarr", chunk_rows=3)
    _channels(rec)
    full = {"a.vec": [1, 2, 3], "a.n": 5, "a.on": True, "b.pts": np.ones((4, 3))}
    for k in range(1, 8):
        values = dict(full) if k % 2 else {"a.n": 9}
        if k == 5:
            values = {"step": 99, "a.vec": [7, 7, 7]}  # a reserved key is no channel
        rec.append(k, 0.0, values)
    rec.close()
    loaded = load_recording(tmp_path / "run.zarr")
    np.testing.assert_array_equal(loaded.step, np.arange(1, 8))
    np.testing.assert_array_equal(loaded.data["a.n"], [5, 9, 5, 9, 0, 9, 5])
    np.testing.assert_array_equal(loaded.data["a.on"], [1, 0, 1, 0, 0, 0, 1])
    np.testing.assert_array_equal(loaded.data["a.vec"][4], [7, 7, 7])
    np.testing.assert_array_equal(loaded.data["a.vec"][1], [0, 0, 0])
    assert not loaded.data["b.pts"][[1, 3, 4, 5]].any()
    assert (loaded.data["b.pts"][[0, 2, 6]] == 1).all()


def _oracle_ids(paths, hits):
    """Path table and per-ray indices, built the obvious way (first appearance order)."""
    table, ids = [], []
    for path, hit in zip(paths, hits, strict=True):
        if hit and path:
            if path not in table:
                table.append(path)
            ids.append(table.index(path))
        else:
            ids.append(-1)
    return table, ids


def test_hit_path_ids_match_the_paths_over_repeated_and_new_patterns():
    rng = random.Random(7)
    names = ["", "", "", "/W/table", "/W/box", "/W/robot/hand", "/W/ground"]
    patterns = [tuple(rng.choice(names) for _ in range(40)) for _ in range(6)]
    table: list[str] = []
    mapper = HitPathIds(table, (40,))
    all_paths, all_hits, got = [], [], []
    for step in range(60):
        paths = patterns[rng.randrange(len(patterns))]  # the same tuple objects recur
        hits = np.array([bool(p) for p in paths])
        if step % 7 == 3:  # a ray beyond max range that still names a prim: not a hit
            hits[rng.randrange(40)] = False
        if step % 11 == 5:  # paths as a list (not cacheable)
            paths = list(paths)
        ids = mapper.ids(paths, hits)
        assert ids.dtype == np.int32 and ids.shape == (40,)
        all_paths += list(paths)
        all_hits += hits.tolist()
        got += ids.tolist()
    expected_table, expected_ids = _oracle_ids(all_paths, all_hits)
    assert table == expected_table
    assert got == expected_ids


def test_hit_path_ids_from_actor_indices_match_the_paths():
    """``ids_of_actors``: the scene's actor paths join the table in actor order, once each;
    every ray's id names its actor's path (-1: no actor or an empty path)."""
    rng = np.random.default_rng(11)
    actor_paths = ("/W/table", "", "/W/box", "/W/robot/hand", "/W/box", "/W/ground")
    table: list[str] = ["/W/earlier"]  # a table that already holds a path
    mapper = HitPathIds(table, (50,))
    expected_table = ["/W/earlier", "/W/table", "/W/box", "/W/robot/hand", "/W/ground"]
    out = np.full(50, 99, np.int32)
    for step in range(30):
        actors = rng.integers(-1, len(actor_paths), 50).astype(np.int32)
        into = out if step % 2 else None
        ids = mapper.ids_of_actors(actors, actor_paths, into)
        assert ids.dtype == np.int32 and ids.shape == (50,)
        if into is not None:
            assert ids is out
        assert table == expected_table
        names = [table[i] if i >= 0 else "" for i in ids.tolist()]
        assert names == [actor_paths[a] if a >= 0 else "" for a in actors.tolist()]
    # a rebuilt scene (a new actor table): its new paths are appended, old ids stay
    rebuilt = ("/W/ground", "/W/new")
    ids = mapper.ids_of_actors(np.array([1, -1, 0] + [-1] * 47, np.int32), rebuilt)
    assert table == [*expected_table, "/W/new"]
    assert ids[:3].tolist() == [5, -1, 4]


def test_hit_path_ids_of_a_fresh_table_are_the_actor_indices():
    """A fresh table of unique, non-empty actor paths numbers them as the actors: the ids
    are the actor indices copied (the writers' shortcut), and still name the right paths;
    a table that does not start empty takes the lookup."""
    rng = np.random.default_rng(5)
    actor_paths = ("/W/table", "/W/box", "/W/robot/hand", "/W/ground")
    table: list[str] = []
    mapper = HitPathIds(table, (64,))
    for _ in range(5):
        actors = rng.integers(-1, len(actor_paths), 64).astype(np.int32)
        ids = mapper.ids_of_actors(actors, actor_paths, np.empty(64, np.int32))
        assert mapper.identity_of is actor_paths
        names = [table[i] if i >= 0 else "" for i in ids.tolist()]
        assert names == [actor_paths[a] if a >= 0 else "" for a in actors.tolist()]
    shifted = HitPathIds(["/W/earlier"], (64,))
    ids = shifted.ids_of_actors(actors, actor_paths)
    assert shifted.identity_of is not actor_paths
    assert ids.tolist() == [a + 1 if a >= 0 else -1 for a in actors.tolist()]


def test_hit_path_ids_without_hits_cover_the_given_paths_only():
    table: list[str] = []
    ids = HitPathIds(table, (5,)).ids(("/a", "", "/b"), None)
    assert table == ["/a", "/b"] and ids.tolist() == [0, -1, 1, -1, -1]


class _Sensor:
    kind = "contact"
    prim_path = "/W/hand/Contact"
    disabled_reason = None

    def __init__(self, readings):
        self.readings = list(readings)

    def reading(self):
        return self.readings[0]


@dataclass(frozen=True)
class _Reading:
    time: float = 0.0
    step: int = 0
    value: float = 0.0
    in_contact: bool = False
    force: np.ndarray = field(default_factory=lambda: np.zeros(3))
    is_valid: bool = False


class _AttrReading:
    """A non-dataclass reading read by attribute."""

    def __init__(self, valid, value):
        self.valid = valid
        self.value = value

    @property
    def step(self):
        return 3


def test_tap_rows_equal_the_readings_for_valid_invalid_and_partial_readings(tmp_path):
    valid = [
        _Reading(0.5 * k, k, 1.5 * k, k % 2 == 0, np.array([k, -k, 0.25]), True)
        for k in range(1, 6)
    ]
    sequence = [
        valid[0],
        _Reading(),  # invalid: every field zero
        valid[1],
        {"is_valid": True, "time": 9.0, "value": 2.5, "force": [1, 2]},  # wrong force size
        valid[2],
        _AttrReading(True, 4.0),
        {"valid": False, "value": 3.0},
        valid[3],
        _Reading(7.0, 7, 9.0, True, np.zeros(2), True),  # a valid dataclass, force mis-sized
        _Reading(8.0, 8, None, True, np.ones(3), True),  # a valid dataclass, value missing
        valid[4],
    ]
    sensor = _Sensor([valid[0]])
    for mode in ("write", "row"):
        rec = StoreWriter(tmp_path / f"{mode}.zarr", chunk_rows=3)
        tap = SensorTap(sensor, stage=None)
        tap.define(rec)
        for k, reading in enumerate(sequence, start=1):
            if mode == "write":
                buffers, row = rec.begin_row()
                tap.write(buffers, row, reading)
                rec.end_row(k, 0.0)
            else:
                out: dict = {}
                tap.row(out, reading)
                rec.append(k, 0.0, out)
        rec.close()
        data = load_recording(tmp_path / f"{mode}.zarr").data
        p = sensor.prim_path
        assert rec.channels[f"{p}.force"].shape == (3,)
        assert rec.channels[f"{p}.in_contact"].dtype == "bool"
        np.testing.assert_array_equal(data[f"{p}.valid"], [1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1])
        np.testing.assert_array_equal(
            data[f"{p}.value"], [1.5, 0.0, 3.0, 2.5, 4.5, 4.0, 0.0, 6.0, 9.0, 0.0, 7.5]
        )
        np.testing.assert_array_equal(
            data[f"{p}.time"], [0.5, 0, 1.0, 9.0, 1.5, 0, 0, 2.0, 7.0, 8.0, 2.5]
        )
        np.testing.assert_array_equal(data[f"{p}.step"], [1, 0, 2, 0, 3, 3, 0, 4, 7, 8, 5])
        np.testing.assert_array_equal(data[f"{p}.in_contact"], [0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0])
        force = data[f"{p}.force"]
        for i, reading in enumerate(sequence):
            usable = isinstance(reading, _Reading) and reading.force.shape == (3,)
            expected = reading.force if usable else np.zeros(3)
            np.testing.assert_array_equal(force[i], expected)


def test_disabled_sensor_rows_are_invalid_and_zero(tmp_path):
    sensor = _Sensor([_Reading(1.0, 1, 2.0, True, np.ones(3), True)])
    rec = StoreWriter(tmp_path / "run.zarr")
    tap = SensorTap(sensor, stage=None)
    tap.define(rec)
    sensor.disabled_reason = "deleted prim"
    buffers, row = rec.begin_row()
    tap.write(buffers, row, sensor.reading())
    rec.end_row(1, 0.0)
    rec.close()
    snap = load_recording(tmp_path / "run.zarr")
    assert not snap.data[f"{sensor.prim_path}.valid"][0]
    for name in ("time", "step", "value", "in_contact", "force"):
        assert not snap.data[f"{sensor.prim_path}.{name}"][0].any(), name


def test_panda_run_records_every_reading_as_read(tmp_path):
    """The run loop's in-place rows equal each step's sensor readings, field by field."""
    pytest.importorskip("mujoco")
    from runtime.run.loop import run_scene

    seen = []

    def on_step(k, engine, sensors, state):
        seen.append({s.prim_path: s.reading() for s in sensors.sensors})

    out = tmp_path / "panda.zarr"
    run_scene(str(SCENE), steps=120, out=out, on_step=on_step, progress=io.StringIO())
    rec = load_recording(out)
    assert len(rec) == len(seen) == 120
    raycast = 0
    for path, infos in rec.channels_of_kind("raycast").items():
        raycast += 1
        fields = {info.field: rec.data[info.name] for info in infos}
        table = next(i for i in infos if i.field == "hit_prim_paths").attrs["path_table"]
        max_range = np.float32(next(i for i in infos if i.field == "hit").attrs["max_range"])
        for k, readings in enumerate(seen):
            r = readings[path]
            assert fields["valid"][k] == r.is_valid
            if not r.is_valid:
                assert not fields["hit"][k].any() and not fields["depths"][k].any()
                continue
            for name in ("depths", "hit_positions", "hit_normals", "ray_end_points_world"):
                np.testing.assert_array_equal(fields[name][k], getattr(r, name))
            hit = r.depths < max_range
            np.testing.assert_array_equal(fields["hit"][k], hit)
            names = [table[i] if i >= 0 else "" for i in fields["hit_prim_paths"][k]]
            assert names == [p if h else "" for p, h in zip(r.hit_prim_paths, hit, strict=True)]
            assert fields["time"][k] == r.time and fields["step"][k] == r.step
    assert raycast == 1
    for kind, names in (
        ("contact", ("value", "in_contact", "number_of_contacts", "time", "step")),
        ("imu", ("linear_acceleration", "angular_velocity", "orientation", "time", "step")),
    ):
        grouped = rec.channels_of_kind(kind)
        assert grouped, kind
        for path, infos in grouped.items():
            fields = {info.field: rec.data[info.name] for info in infos}
            for k, readings in enumerate(seen):
                r = readings[path]
                assert fields["valid"][k] == r.is_valid
                for name in names:
                    np.testing.assert_array_equal(fields[name][k], getattr(r, name))
