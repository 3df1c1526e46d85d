"""HONOURED_ATTRIBUTES (physics_attrs.py) matches the attribute names the MuJoCo builder reads.

The list decides which authored attributes are reported as ignored, so a name the builder
reads but the list lacks is wrongly reported, and a stale entry hides a real omission. The
builder's names are found as string literals in its source (``builder.py``, ``_build_*.py``,
``physics_attrs.py``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from runtime.engine import physics_attrs

ENGINE = Path(physics_attrs.__file__).parent
# a whole string literal that is an attribute name of a namespace the report scans
NAME = re.compile(r"^(mjc|newton|physx[A-Za-z]*):[A-Za-z_][A-Za-z0-9_]*(:[A-Za-z0-9_]+)*$")
# assignments in physics_attrs.py that hold the lists themselves, not reads
LIST_NAMES = {"HONOURED_ATTRIBUTES", "_CFG_PREFIXES", "_IGNORED_PHYSICS"}


def _builder_sources() -> list[Path]:
    files = [ENGINE / "builder.py", ENGINE / "physics_attrs.py"]
    files += sorted(ENGINE.glob("_build_*.py"))
    assert len(files) > 3
    return files


def _literal_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id in LIST_NAMES for t in targets):
            skipped.update(id(n) for n in ast.walk(node))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skipped
        and NAME.match(node.value)
    }


def _read_by_builder() -> set[str]:
    names: set[str] = set()
    for path in _builder_sources():
        names |= _literal_names(path)
    return names


def test_every_attribute_the_builder_reads_is_honoured():
    read = {n for n in _read_by_builder() if not n.startswith("mjc:option:")}
    assert "mjc:solref" in read and "physxRigidBody:disableGravity" in read  # the scan works
    missing = sorted(read - physics_attrs.HONOURED_ATTRIBUTES)
    assert not missing, f"read by the builder but reported as ignored: {missing}"


def test_every_honoured_attribute_is_read_by_the_builder():
    stale = sorted(physics_attrs.HONOURED_ATTRIBUTES - _read_by_builder())
    assert not stale, f"listed as honoured but read nowhere in the builder: {stale}"


def test_scan_sees_the_builders_literals(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text(
        'HONOURED_ATTRIBUTES = {"mjc:listed"}\n'
        'x = attr(prim, "mjc:gear")\n'
        'y = f"{path}:drive"\n'
        'z = "newton:mimicCoef0"\n'
        'w = "mjc:solref is authored"\n'
    )
    assert _literal_names(source) == {"mjc:gear", "newton:mimicCoef0"}
