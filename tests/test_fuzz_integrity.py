"""Fuzzers (hypothesis) of the integrity checks: damaged stores, replay logs, batch specs.

The properties: a damaged store either fails with one SimrtError line or loads a prefix of
the rows written, exactly (never a changed value, never a step out of order, never called
complete when rows are missing; without a commit log to check chunks against, it says so
and is never complete); a replay log either reads and checks into
finite increasing times and positions within the joints' limits, or fails with one
LogError line naming the file; a batch spec either parses or fails with one SimrtError line
naming the file.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("zarr")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from runtime.errors import SimrtError  # noqa: E402
from runtime.recording import ChannelInfo, load_recording  # noqa: E402
from runtime.recording.store import COMMIT_LOG, StoreWriter  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ROWS, CHUNK = 14, 4
FUZZ = settings(
    max_examples=int(os.environ.get("SIMRT_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A closed store: channels v, w (2 float64 each, w = -v) and step / time."""
    path = tmp_path_factory.mktemp("fuzz") / "t.zarr"
    writer = StoreWriter(path, durable=False, chunk_rows=CHUNK)
    writer.add_channel(ChannelInfo("v", (2,), "float64"))
    writer.add_channel(ChannelInfo("w", (2,), "float64"))
    for k in range(ROWS):
        buffers, row = writer.begin_row()
        buffers[0][row] = [k + 0.5, 2 * k]
        buffers[1][row] = [-(k + 0.5), -2 * k]
        writer.end_row(10 + k, 0.01 * k)
    writer.close(complete=True)
    return path, load_recording(path)


_DAMAGE = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("swap"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("copy"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("delete"), st.integers(0, 10**6), st.just(0)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("garbage_log_line"), st.integers(0, 10**6), st.just(0)),
)


def _damage(root: Path, operations: list[tuple[str, int, int]]) -> None:
    for kind, a, b in operations:
        files = sorted(p for p in root.rglob("*") if p.is_file())
        if not files:
            return
        first, second = files[a % len(files)], files[b % len(files)]
        if kind == "flip":
            data = bytearray(first.read_bytes())
            if data:
                data[b % len(data)] ^= 0x5A
                first.write_bytes(bytes(data))
        elif kind == "swap":
            x, y = first.read_bytes(), second.read_bytes()
            first.write_bytes(y)
            second.write_bytes(x)
        elif kind == "copy":
            shutil.copyfile(first, second) if first != second else None
        elif kind == "delete":
            first.unlink()
        elif kind == "truncate":
            data = first.read_bytes()
            first.write_bytes(data[: b % (len(data) + 1)])
        elif kind == "garbage_log_line":
            log = root / COMMIT_LOG
            if log.exists():
                lines = log.read_bytes().splitlines(keepends=True)
                if lines:
                    lines[a % len(lines)] = b'{"rows": 3, "chunk": 1, "crc": "zz"}\n'
                    log.write_bytes(b"".join(lines))


@FUZZ
@given(operations=st.lists(_DAMAGE, min_size=1, max_size=3))
def test_a_damaged_store_loads_an_exact_prefix_or_fails_in_one_line(
    tmp_path_factory, template, operations
):
    source, original = template
    root = tmp_path_factory.mktemp("case") / "t.zarr"
    shutil.copytree(source, root)
    _damage(root, operations)
    try:
        loaded = load_recording(root)
    except SimrtError as error:
        assert "\n" not in str(error)
        return
    n = len(loaded)
    assert n <= ROWS
    if "not checked against it" in str(loaded.reason):  # (no commit log to check with)
        assert not loaded.complete
        return
    np.testing.assert_array_equal(loaded.step, original.step[:n])
    np.testing.assert_array_equal(loaded.time, original.time[:n])
    for name in ("v", "w"):
        np.testing.assert_array_equal(loaded.data[name], original.data[name][:n])
    if n < ROWS:
        assert not loaded.complete


# ---------------------------------------------------------------------------- replay logs

JOINTS = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_slide")
_VALUE = st.one_of(
    st.floats(-4.0, 4.0),
    st.floats(-0.05, 0.05),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e300, 0.0]),
)


@pytest.fixture(scope="module")
def arm():
    pytest.importorskip("mujoco")
    from runtime.kinematics.chain import KinematicChain
    from runtime.run.scene import find_robot
    from runtime.schema import open_stage
    from runtime.schema.dof import build_dof_table

    stage = open_stage(str(REPO / "scenes" / "simple_arm.usda"))
    prim = find_robot(stage, None)
    return KinematicChain(stage, prim), build_dof_table(stage, prim)


@FUZZ
@given(
    columns=st.lists(st.sampled_from(JOINTS + ("elbow", "nope")), min_size=1, max_size=5),
    times=st.lists(
        st.one_of(st.floats(0.0, 1.0), st.sampled_from([math.nan, math.inf])),
        min_size=1,
        max_size=6,
    ),
    data=st.data(),
    options=st.sampled_from([{}, {"missing": "hold"}, {"limits": "clamp"}]),
)
def test_a_replay_log_checks_or_fails_in_one_line(
    tmp_path_factory, arm, columns, times, data, options
):
    from runtime.batch.replay import LogError, _joint_paths, check_log, read_log

    chain, table = arm
    rows = [[t, *data.draw(st.lists(_VALUE, min_size=len(columns), max_size=len(columns)))]
            for t in times]  # fmt: skip
    path = tmp_path_factory.mktemp("log") / "log.csv"
    lines = [",".join(["time", *columns])] + [",".join(repr(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    try:
        log = read_log(path)
        check_log(log, _joint_paths(chain, log.names, path), table, **options)
    except LogError as error:
        assert str(error).startswith(f"{path}: ") and "\n" not in str(error)
        return
    assert np.all(np.isfinite(log.times)) and np.all(np.diff(log.times) > 0)
    assert np.all(np.isfinite(log.positions))
    limits = {e.name: (e.usd_lower, e.usd_upper) if e.joint_type == "prismatic" else
              (e.lower, e.upper) for e in table.entries}  # fmt: skip
    for column, name in enumerate(log.names):
        low, high = limits[name]
        assert np.all(log.positions[:, column] >= low - 1e-6)
        assert np.all(log.positions[:, column] <= high + 1e-6)
    if "missing" not in options:
        assert sorted(log.names) == sorted(JOINTS)


# ---------------------------------------------------------------------------- batch specs

_SPEC_VALUE = st.one_of(
    st.integers(-5, 10**10),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.booleans(),
    st.lists(st.integers(-2, 2), max_size=4),
    st.dictionaries(st.sampled_from(["path", "episodes", "link", "robot"]), st.integers(0, 3)),
)
_KEYS = st.sampled_from(
    ["seed", "episodes", "steps", "dt", "ik_every", "timeout", "imu_mode", "record_bodies",
     "scenes", "replay", "randomize", "noise", "bogus"]
)  # fmt: skip


@FUZZ
@given(table=st.dictionaries(_KEYS, _SPEC_VALUE, max_size=6))
def test_a_batch_spec_parses_or_fails_in_one_line(tmp_path_factory, table):
    from runtime.batch import parse_spec

    source = tmp_path_factory.mktemp("spec") / "spec.toml"
    table.setdefault("scenes", [{"path": "scene.usda", "episodes": 1}])
    try:
        spec = parse_spec(table, source)
    except SimrtError as error:
        assert str(source) in str(error) and "\n" not in str(error)
        return
    total = sum(scene.episodes for scene in spec.scenes)
    assert 1 <= total <= 100_000
