"""Seeded fuzzing of ``scenes/simple_arm.usda`` (issue 14).

Each case applies one to three random mutations to the scene (an attribute value replaced
by an extreme, non-finite, empty or wrongly typed one; a relationship retargeted to a
missing prim, the prim itself, another prim or nothing; a prim or property deleted) and
runs every command of :data:`COMMANDS` in-process on the result. Each must exit 0, or 1
with exactly one ``simrt CMD: error:`` line on stderr (``schema validate`` may instead
print its problem report ending in ``N problem(s)``); never raise (a traceback) or exit
otherwise. The seed and the count are fixed, so CI replays the same cases; a failure
names the mutations.

To fuzz another command (e.g. ``run --steps 20``), append its argv builder to
:data:`COMMANDS`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from pxr import Sdf, Usd

from runtime.cli import main

SCENE = Path(__file__).parent.parent / "scenes" / "simple_arm.usda"
SEED = 14
CASES = 48

COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "inspect": lambda scene: ["inspect", str(scene)],
    "inspect --json": lambda scene: ["inspect", "--json", str(scene)],
    "schema validate": lambda scene: ["schema", "validate", str(scene)],
    "run --steps 20": lambda scene: [
        "run",
        str(scene),
        "--steps",
        "20",
        "--no-progress",
        "--no-cache",
        "--out",
        str(scene.with_suffix(".zarr")),
    ],
}
"""Command name -> argv (without ``simrt``) for a mutated scene file."""

_FLOATS = [0.0, -1.0, 1e30, -1e30, 1e-30, math.nan, math.inf, -math.inf, 2147483647.0]
_INTS = [0, -1, 2147483647, -2147483648, 7]
_TOKENS = ["", "bogus", "Robot Arm", "WORLD", "X"]


def _bad_number(rng: random.Random, value: object) -> object:
    return rng.choice(_INTS) if isinstance(value, int) else rng.choice(_FLOATS)


def _bad_value(rng: random.Random, value: object) -> object:  # noqa: PLR0911 - one per kind
    """An extreme value of the same kind as ``value`` (or of another kind, sometimes)."""
    if rng.random() < 0.1:
        return rng.choice(["oops", 3, 1.5, True])  # wrong type: USD may refuse it
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return _bad_number(rng, value)
    if isinstance(value, str):
        return rng.choice(_TOKENS)
    if hasattr(value, "GetReal"):  # quaternion
        real = rng.choice([0.0, math.nan, 1.0, 1e30])
        return type(value)(real, type(value.GetImaginary())(0, 0, 0))
    if type(value).__module__.endswith("Vt"):  # an array
        items = list(value)
        if not items or rng.random() < 0.3:
            return type(value)()
        i = rng.randrange(len(items))
        items[i] = _bad_value(rng, items[i]) if not isinstance(items[i], str) else "bogus"
        if rng.random() < 0.3:
            items = items[: rng.randrange(len(items))]
        try:
            return type(value)(items)
        except Exception:  # noqa: BLE001 - an item of the wrong type: keep the value
            return value
    if hasattr(value, "__len__"):  # a Gf vector
        return type(value)(*[rng.choice(_FLOATS) for _ in range(len(value))])
    return value


def _mutate(stage: Usd.Stage, rng: random.Random) -> str:
    """Apply one random mutation; return what it did."""
    prims = [p for p in stage.Traverse() if p.GetPath() != Sdf.Path("/World")]
    prim = rng.choice(prims)
    kind = rng.random()
    if kind < 0.05:  # stage metadata
        key, value = rng.choice(
            [("metersPerUnit", rng.choice([0.0, -1.0, math.nan, 1e-30])), ("upAxis", "W")]
        )
        stage.SetMetadata(key, value)
        return f"stage {key} = {value!r}"
    if kind < 0.55:
        attrs = [a for a in prim.GetAuthoredAttributes() if a.Get() is not None]
        if attrs:
            attr = rng.choice(attrs)
            new = _bad_value(rng, attr.Get())
            try:
                attr.Set(new)
            except Exception:  # noqa: BLE001 - USD refused the type: nothing changed
                return f"{attr.GetPath()} = {new!r} (refused by USD)"
            return f"{attr.GetPath()} = {new!r}"
    if kind < 0.8:
        rels = prim.GetAuthoredRelationships()
        if rels:
            rel = rng.choice(rels)
            choice = rng.randrange(4)
            if choice == 0:
                targets = [prim.GetPath().AppendChild("missing")]
            elif choice == 1:
                targets = [prim.GetPath()]
            elif choice == 2:
                targets = [rng.choice(prims).GetPath()]
            else:
                targets = []
            rel.SetTargets(targets)
            return f"{rel.GetPath()} -> {[str(t) for t in targets]}"
    if rng.random() < 0.5:
        props = prim.GetAuthoredPropertyNames()
        if props:
            name = rng.choice(props)
            prim.RemoveProperty(name)
            return f"removed {prim.GetPath()}.{name}"
    stage.RemovePrim(prim.GetPath())
    return f"removed {prim.GetPath()}"


def _cases() -> list[tuple[int, int]]:
    rng = random.Random(SEED)
    return [(i, rng.randrange(2**31)) for i in range(CASES)]


@pytest.mark.parametrize(("case", "seed"), _cases(), ids=lambda v: str(v))
def test_mutated_scene_gives_exit_0_or_one_error_line(tmp_path, capfd, case, seed):
    rng = random.Random(seed)
    layer = Sdf.Layer.FindOrOpen(str(SCENE))
    stage = Usd.Stage.Open(layer.identifier)
    edit = Sdf.Layer.CreateAnonymous(".usda")
    edit.TransferContent(layer)
    mutated = Usd.Stage.Open(edit)
    done = [_mutate(mutated, rng) for _ in range(rng.randint(1, 3))]
    scene = tmp_path / f"fuzz_{case}.usda"
    edit.Export(str(scene))
    del stage, mutated
    for name, argv in COMMANDS.items():
        capfd.readouterr()
        try:
            code = main(argv(scene))
        except BaseException as exc:  # noqa: BLE001 - the failure must name the mutations
            pytest.fail(f"{name} raised {type(exc).__name__}: {exc}\nmutations: {done}")
        out, err = capfd.readouterr()
        assert "Traceback" not in err, f"{name}: {err}\nmutations: {done}"
        assert code in (0, 1), f"{name} exited {code}\nmutations: {done}"
        lines = [ln for ln in err.splitlines() if ln.startswith("simrt ")]
        if code == 1 and not (name.startswith("schema validate") and not lines):
            assert len(lines) == 1 and ": error: " in lines[0], f"{name}: {err}\nmutations: {done}"
        elif code == 1:  # validate's own report: one line per problem, then the count
            assert out.rstrip().endswith("problem(s)"), f"{name}: {out}\nmutations: {done}"
        if name.startswith("run") and code == 0:
            _assert_valid_readings_finite(scene.with_suffix(".zarr"), done)


def _assert_valid_readings_finite(store: Path, done: list[str]) -> None:
    """No row a sensor marks valid holds a NaN or an infinity (raycast misses excepted)."""
    import numpy as np

    from runtime.recording import load_recording

    rec = load_recording(store)
    for name, info in rec.channels.items():
        if info.field == "valid" or info.kind not in ("contact", "imu", "raycast"):
            continue
        valid_name = f"{info.sensor}.valid"
        if valid_name not in rec.data or rec.data[name].dtype.kind != "f":
            continue
        valid = rec.data[valid_name].astype(bool)
        values = rec.data[name][valid]
        if info.kind == "raycast":
            values = values[~np.isinf(values)]  # inf: a miss by spec; NaN never
        assert np.isfinite(values).all(), f"{name}: non-finite valid reading\nmutations: {done}"
