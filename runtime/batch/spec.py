"""The batch spec: a TOML file describing many episodes.

A spec is a **simulation batch** (``[[scenes]]`` stepped in MuJoCo, randomized per episode)
or a **replay batch** (``[replay]``: joint-state logs through a scene's kinematics). A bad
key raises :class:`~runtime.errors.SimrtError` naming file and key (``spec.toml:
randomize.ik[1].box_min: expected 3 finite numbers, got [0.1, 0.2]``).

Simulation batch (``scenes/panda_batch.toml`` is a commented example)::

    seed = 7                  # base seed; episode seeds derive from it (SeedSequence)
    episodes = 20             # per scene (a [[scenes]] entry may override it)
    steps = 100               # optional, like dt, ik_every, ik_until_contact (else the scene's)
    imu_mode = "isaac"        # or a list, drawn per episode: ["isaac", "physical"]
    timeout = 120.0           # optional wall seconds per attempt; record_bodies = true
    [[scenes]]                # path relative to the spec; optional robot, episodes
    path = "panda_table.usda"
    [randomize.joints]        # authored q +- fraction * half the limit range, clipped
    fraction = 0.1
    [[randomize.ik]]          # IK waypoints (replace the scene's): position in the box,
    link = "panda_hand"       # robot-base frame; orientation (w, x, y, z) turned by <= cone
    time = 0.2                # degrees about a random axis
    box_min = [0.45, -0.1, 0.6]
    box_max = [0.55, 0.1, 0.7]
    orientation = [0, 1, 0, 0]
    cone_deg = 10
    [[randomize.objects]]     # free bodies: authored position + offset in the box, yaw
    path = "/World/RedBox"    # about the up axis drawn in [-yaw, yaw]
    offset_min = [-0.05, -0.05, 0]
    offset_max = [0.05, 0.05, 0]
    yaw_deg = 30
    [randomize.scales]        # [low, high] factors: every body's mass and inertia, every
    mass = [0.9, 1.1]         # geom's sliding friction, every drive's stiffness + damping
    friction = [0.8, 1.2]
    drive_gain = [0.9, 1.1]
    [noise."/World/Panda/Imu".angular_velocity]   # sensor noise per sensor path and field
    noiseDensity = 0.002      # (parameters: docs/guides/noise.md), seeded by the episode
    biasRandomWalk = 4e-5     # seed; on top of the scene's simrt:noise:* attributes

Replay batch (every ``*.csv`` / ``*.parquet`` / ``*.zarr`` log of ``logs``; optional
``robot``, ``imu_mode``, ``missing = "hold"`` (joints without a column keep their authored
positions; default: refused), ``limits = "clamp"`` (positions beyond a joint's limits
clamped and counted; default: refused))::

    [replay]
    scene = "panda_table.usda"
    logs = "logs"
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from runtime.errors import SimrtError

__all__ = [
    "BatchSpec",
    "IkDraw",
    "JointDraw",
    "ObjectDraw",
    "Randomization",
    "ReplaySpec",
    "ScaleDraw",
    "SceneEntry",
    "parse_randomization",
    "load_spec",
    "parse_spec",
]

MAX_EPISODES = 100_000
"""Episodes a batch holds at most: the driver keeps one manifest row per episode in memory
and rewrites the manifest whole (a larger batch: several datasets)."""

IMU_MODES = ("isaac", "physical")


@dataclass(frozen=True)
class JointDraw:
    """Initial joint positions: authored q +- ``fraction`` * half the range, clipped."""

    fraction: float


@dataclass(frozen=True)
class IkDraw:
    """One randomized IK waypoint (robot-base frame)."""

    link: str
    time: float
    box_min: tuple[float, float, float]
    box_max: tuple[float, float, float]
    orientation: tuple[float, float, float, float] | None = None
    cone_deg: float = 0.0


@dataclass(frozen=True)
class ObjectDraw:
    """Pose of one free body: position offset in a box, yaw about the up axis."""

    path: str
    offset_min: tuple[float, float, float] = (0.0, 0.0, 0.0)
    offset_max: tuple[float, float, float] = (0.0, 0.0, 0.0)
    yaw_deg: float = 0.0


@dataclass(frozen=True)
class ScaleDraw:
    """``[low, high]`` ranges of the physics scales (None: not randomized)."""

    mass: tuple[float, float] | None = None
    friction: tuple[float, float] | None = None
    drive_gain: tuple[float, float] | None = None


@dataclass(frozen=True)
class Randomization:
    """Everything drawn per episode."""

    joints: JointDraw | None = None
    ik: tuple[IkDraw, ...] = ()
    objects: tuple[ObjectDraw, ...] = ()
    scales: ScaleDraw = field(default_factory=ScaleDraw)
    imu_modes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SceneEntry:
    """One scene of a simulation batch."""

    path: str
    episodes: int
    robot: str | None = None


@dataclass(frozen=True)
class ReplaySpec:
    """A replay batch: every log of ``logs`` replayed through ``scene``."""

    scene: str
    logs: str
    robot: str | None = None
    imu_mode: str = "isaac"
    missing: str = "error"
    limits: str = "error"


@dataclass(frozen=True)
class BatchSpec:
    """A validated batch spec (paths absolute)."""

    source: str
    seed: int = 0
    scenes: tuple[SceneEntry, ...] = ()
    steps: int | None = None
    dt: float | None = None
    ik_every: int | None = None
    ik_until_contact: bool | None = None
    record_bodies: bool = True
    timeout: float | None = None
    randomize: Randomization = field(default_factory=Randomization)
    replay: ReplaySpec | None = None
    noise: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The spec as plain JSON data (without ``source``)."""
        data = asdict(self)
        data.pop("source")
        return data

    def fingerprint(self) -> str:
        """SHA-256 of :meth:`to_json` but ``timeout``: another spec's dataset is not resumed."""
        data = self.to_json()
        data.pop("timeout")
        if not data["noise"]:  # (specs without noise keep their fingerprint)
            data.pop("noise")
        text = json.dumps(data, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------- checks


class _Checker:
    """Typed access to one TOML table with errors naming ``file: key``."""

    def __init__(self, source: str, table: Any, prefix: str) -> None:
        self.source = source
        self.prefix = prefix
        if not isinstance(table, dict):
            raise self.error("", f"expected a table, got {table!r}")
        self.table = table
        self.used: set[str] = set()

    def error(self, key: str, problem: str) -> SimrtError:
        name = f"{self.prefix}.{key}" if self.prefix and key else (self.prefix or key)
        return SimrtError(f"{self.source}: {name}: {problem}")

    def get(self, key: str, default: Any = None) -> Any:
        self.used.add(key)
        return self.table.get(key, default)

    def integer(self, key: str, default: Any = None, *, low: int = 0) -> Any:
        value = self.get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.error(key, f"expected an integer >= {low}, got {value!r}")
        return int(value)

    def number(self, key: str, default: Any = None, *, positive: bool = False) -> Any:
        value = self.get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"expected a number, got {value!r}")
        if not math.isfinite(value) or (positive and value <= 0) or (not positive and value < 0):
            raise self.error(key, f"expected a finite number {'> 0' if positive else '>= 0'}")
        return float(value)

    def boolean(self, key: str, default: Any = None) -> Any:
        value = self.get(key, default)
        if value is not default and not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value

    def string(self, key: str, default: Any = None) -> Any:
        value = self.get(key, default)
        if value is not default and (not isinstance(value, str) or not value):
            raise self.error(key, f"expected a non-empty string, got {value!r}")
        return value

    def vector(self, key: str, size: int, default: Any = None) -> Any:
        value = self.get(key, default)
        if value is default:
            return value
        ok = isinstance(value, list) and len(value) == size
        ok = ok and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in value
        )
        if not ok:
            raise self.error(key, f"expected {size} finite numbers, got {value!r}")
        return tuple(float(v) for v in value)

    def done(self) -> None:
        unknown = sorted(set(self.table) - self.used)
        if unknown:
            raise self.error(unknown[0], "unknown key")


def _path(source: Path, text: str) -> str:
    path = Path(text).expanduser()
    return str(path if path.is_absolute() else (source.parent / path).resolve())


def _imu_modes(check: _Checker) -> tuple[str, ...]:
    value = check.get("imu_mode")
    if value is None:
        return ()
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or any(v not in IMU_MODES for v in values):
        raise check.error("imu_mode", f"expected one of {IMU_MODES} or a list of them")
    return tuple(values)


def _range(check: _Checker, key: str) -> tuple[float, float] | None:
    pair = check.vector(key, 2)
    if pair is not None and not 0 < pair[0] <= pair[1]:
        raise check.error(key, f"expected [low, high] with 0 < low <= high, got {list(pair)}")
    return pair


def _randomization(source: str, table: Any, imu_modes: tuple[str, ...]) -> Randomization:
    check = _Checker(source, table, "randomize")
    joints = None
    if check.get("joints") is not None:
        sub = _Checker(source, check.table["joints"], "randomize.joints")
        fraction = sub.number("fraction", 0.0)
        if fraction > 1.0:
            raise sub.error("fraction", f"expected a number in [0, 1], got {fraction}")
        sub.done()
        joints = JointDraw(fraction)
    ik_items = check.get("ik", [])
    if not isinstance(ik_items, list):
        raise check.error("ik", "expected an array of tables ([[randomize.ik]])")
    ik = []
    for i, item in enumerate(ik_items):
        sub = _Checker(source, item, f"randomize.ik[{i}]")
        link = sub.string("link")
        if link is None:
            raise sub.error("link", "missing (the IK end link, e.g. panda_hand)")
        lo, hi = sub.vector("box_min", 3), sub.vector("box_max", 3)
        if lo is None or hi is None:
            raise sub.error("box_min" if lo is None else "box_max", "missing")
        if any(a > b for a, b in zip(lo, hi, strict=True)):
            raise sub.error("box_max", f"must be >= box_min component-wise ({hi} < {lo})")
        orientation = sub.vector("orientation", 4)
        if orientation is not None and math.fsum(v * v for v in orientation) < 1e-18:
            raise sub.error("orientation", "zero quaternion")
        cone = sub.number("cone_deg", 0.0)
        if cone > 180.0:
            raise sub.error("cone_deg", f"expected an angle in [0, 180], got {cone}")
        if cone and orientation is None:
            raise sub.error("cone_deg", "needs an orientation (the cone's centre)")
        ik.append(IkDraw(link, sub.number("time", 0.0), lo, hi, orientation, cone))
        sub.done()
    obj_items = check.get("objects", [])
    if not isinstance(obj_items, list):
        raise check.error("objects", "expected an array of tables ([[randomize.objects]])")
    objects = []
    for i, item in enumerate(obj_items):
        sub = _Checker(source, item, f"randomize.objects[{i}]")
        path = sub.string("path")
        if path is None or not path.startswith("/"):
            raise sub.error("path", f"expected the prim path of a free body, got {path!r}")
        lo = sub.vector("offset_min", 3, (0.0, 0.0, 0.0))
        hi = sub.vector("offset_max", 3, (0.0, 0.0, 0.0))
        if any(a > b for a, b in zip(lo, hi, strict=True)):
            raise sub.error("offset_max", f"must be >= offset_min component-wise ({hi} < {lo})")
        objects.append(ObjectDraw(path, lo, hi, sub.number("yaw_deg", 0.0)))
        sub.done()
    scales = ScaleDraw()
    if check.get("scales") is not None:
        sub = _Checker(source, check.table["scales"], "randomize.scales")
        scales = ScaleDraw(_range(sub, "mass"), _range(sub, "friction"), _range(sub, "drive_gain"))
        sub.done()
    check.done()
    return Randomization(joints, tuple(ik), tuple(objects), scales, imu_modes)


def parse_spec(data: dict[str, Any], source: str | Path) -> BatchSpec:
    """Validate parsed TOML data (``source``: the spec file; paths resolve against its folder).

    Raises:
        SimrtError: a missing, unknown or malformed key (named).
    """
    source_path = Path(source).resolve()
    name = str(source)
    top = _Checker(name, data, "")
    seed = top.integer("seed", 0)
    if seed >= 2**63:
        raise top.error("seed", "expected an integer < 2**63")
    episodes = top.integer("episodes", None, low=1)
    imu_modes = _imu_modes(top)
    replay = None
    scenes: list[SceneEntry] = []
    if top.get("replay") is not None:
        sub = _Checker(name, top.table["replay"], "replay")
        scene, logs = sub.string("scene"), sub.string("logs")
        if scene is None or logs is None:
            raise sub.error("scene" if scene is None else "logs", "missing")
        mode = sub.string("imu_mode", "isaac")
        if mode not in IMU_MODES:
            raise sub.error("imu_mode", f"expected one of {IMU_MODES}, got {mode!r}")
        options = {}
        for key, allowed in (("missing", ("error", "hold")), ("limits", ("error", "clamp"))):
            options[key] = sub.string(key, "error")
            if options[key] not in allowed:
                raise sub.error(key, f"expected one of {allowed}, got {options[key]!r}")
        replay = ReplaySpec(
            _path(source_path, scene), _path(source_path, logs), sub.string("robot"), mode,
            **options,
        )  # fmt: skip
        sub.done()
    items = top.get("scenes", [])
    if not isinstance(items, list):
        raise top.error("scenes", "expected an array of tables ([[scenes]])")
    for i, item in enumerate(items):
        sub = _Checker(name, item, f"scenes[{i}]")
        path = sub.string("path")
        if path is None:
            raise sub.error("path", "missing (a USD scene, relative to the spec)")
        count = sub.integer("episodes", episodes, low=1)
        if count is None:
            raise sub.error("episodes", "missing (here or at the top level)")
        scenes.append(SceneEntry(_path(source_path, path), count, sub.string("robot")))
        sub.done()
    if replay is None and not scenes:
        raise top.error("scenes", "missing: give [[scenes]] (simulation) or [replay] (logs)")
    total = sum(entry.episodes for entry in scenes)
    if total > MAX_EPISODES:
        key = "episodes" if episodes is not None and episodes > MAX_EPISODES else "scenes"
        raise top.error(
            key,
            f"{total} episodes in all; a batch holds at most {MAX_EPISODES:,} (one manifest "
            "row each): split it into several datasets",
        )
    if replay is not None and scenes:
        raise top.error("replay", "a spec has either [[scenes]] or [replay], not both")
    randomize = _randomization(name, top.get("randomize", {}), imu_modes)
    noise = top.get("noise", {})
    if "noise" in top.table:
        from runtime.run.noise_channels import spec_noise

        spec_noise(noise, name)  # (raises naming the file and key)
    spec = BatchSpec(
        source=str(source_path),
        seed=seed,
        scenes=tuple(scenes),
        steps=top.integer("steps", None),
        dt=top.number("dt", None, positive=True),
        ik_every=top.integer("ik_every", None, low=1),
        ik_until_contact=top.boolean("ik_until_contact", None),
        record_bodies=top.boolean("record_bodies", True),
        timeout=top.number("timeout", None, positive=True),
        randomize=randomize,
        replay=replay,
        noise=noise,
    )
    top.done()
    return spec


def load_spec(path: str | Path) -> BatchSpec:
    """Read and validate a TOML batch spec file.

    Raises:
        SimrtError: unreadable file, TOML syntax error or a bad key (named).
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise SimrtError(f"{path}: cannot read the batch spec: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SimrtError(f"{path}: not valid TOML: {exc}") from None
    return parse_spec(data, path)


def parse_randomization(table: Mapping[str, Any], source: str = "randomization") -> Randomization:
    """A :class:`Randomization` from a mapping in the spec's ``[randomize]`` vocabulary.

    For callers outside a batch spec (the vector environments): the same keys and checks as
    a spec's ``[randomize]`` table, without ``imu_mode`` (a whole run's setting there).

    Raises:
        SimrtError: an unknown key or a bad value, named ``source: randomize.KEY``.
    """
    return _randomization(source, dict(table), ())
