"""Every ```python block of README.md and docs/**/*.md runs as written.

The blocks of one page run in order in one namespace (a page reads as one session), from
the repository root, against the shipped scenes. A block that is not meant to run is not a
python block (use ```text for output, ```bash for shell commands). Also checked here: the
generated USD attribute reference is up to date and its simrt settings are the ones the
run reads.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[A-Za-z0-9_+-]*)[^`]*$")


def markdown_pages() -> list[Path]:
    """README.md and every Markdown page under docs/, sorted."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a Markdown text: (1-based line of the fence, dedented code)."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = FENCE_OPEN.match(lines[i])
        if not match:
            i += 1
            continue
        indent, lang = match.group("indent"), match.group("lang")
        start = i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1  # the closing fence
        if lang == "python":
            blocks.append((start + 1, textwrap.dedent("\n".join(body)) + "\n"))
    return blocks


PAGES_WITH_CODE = [p for p in markdown_pages() if python_blocks(p.read_text(encoding="utf-8"))]


def test_fence_parser_finds_blocks_and_skips_others():
    text = "a\n```python\nx = 1\n```\n```text\nnot code\n```\n  ```python\n  y = x\n  ```\n"
    assert python_blocks(text) == [(2, "x = 1\n"), (8, "y = x\n")]


@pytest.mark.parametrize(
    "page", PAGES_WITH_CODE, ids=[str(p.relative_to(ROOT)) for p in PAGES_WITH_CODE]
)
def test_python_blocks_run(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MUJOCO_GL", "disable")
    rel = page.relative_to(ROOT)
    namespace: dict = {"__name__": "__docs__"}
    for line, code in python_blocks(page.read_text(encoding="utf-8")):
        try:
            exec(compile(code, f"{rel}:{line}", "exec"), namespace)
        except Exception:
            pytest.fail(f"{rel}, block at line {line} failed:\n{traceback.format_exc()}")


REPO_PATH = re.compile(r"`((?:runtime|tests|tools|benchmarks|scenes|docs)/[\w./-]+)`")


def test_repository_paths_named_in_the_docs_exist():
    """A `runtime/...`, `tests/...` (etc.) path quoted in README or docs is a real file."""
    missing = []
    for page in markdown_pages():
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for path in REPO_PATH.findall(line):
                if not (ROOT / path.rstrip(".")).exists():
                    missing.append(f"{page.relative_to(ROOT)}:{number}: {path}")
    # the README is not part of the site (MkDocs checks the links of docs/): its links here
    for number, line in enumerate((ROOT / "README.md").read_text().splitlines(), 1):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", line):
            if not (ROOT / target).exists():
                missing.append(f"README.md:{number}: link {target}")
    assert not missing, "\n".join(missing)


DOTTED = re.compile(r"`(runtime(?:\.\w+)+)")


def _dotted_problem(name: str) -> str | None:
    """None if ``runtime.a.b[.attr]`` names a module of the tree (and a name it defines)."""
    parts = name.split(".")
    if parts[-1] == "py":  # a file name such as `runtime.py`
        return None
    for k in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:k])
        for module in (base.with_suffix(".py"), base / "__init__.py"):
            if module.is_file():
                rest = parts[k:]
                text = module.read_text(encoding="utf-8")
                if not rest or re.search(rf"\b{re.escape(rest[0])}\b", text):
                    return None
                return f"{module.relative_to(ROOT)} has no name {rest[0]}"
    return "no such module"


def test_python_names_in_the_docs_exist():
    """A quoted `runtime.x.y` names a module of the tree, and `runtime.x.y.Name` a name in it."""
    wrong = []
    for page in markdown_pages():
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for name in DOTTED.findall(line):
                problem = _dotted_problem(name)
                if problem:
                    wrong.append(f"{page.relative_to(ROOT)}:{number}: {name}: {problem}")
    assert not wrong, "\n".join(wrong)


def test_usd_attribute_reference_is_up_to_date():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "usd_attributes.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_documented_run_settings_are_the_ones_the_run_reads(caplog):
    """Each documented customData simrt key is accepted; an unknown one is reported."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import usd_attributes
    finally:
        sys.path.remove(str(ROOT / "tools"))
    from pxr import Usd, UsdPhysics

    import runtime.schema  # noqa: F401  (registers the schemas first)
    from runtime.run.config import read_scene_settings

    examples = {
        "steps": 5,
        "dt": 0.01,
        "ikTargets": ["panda_hand=0.4,0,0.5@1"],
        "ikEvery": 5,
        "ikUntilContact": True,
        "imuMode": "physical",
        "robot": "/World/Robot",
        "gripperActions": ["/World/Gripper=close@0.5"],
        "excludeReferenceOverlaps": False,
        "noiseSeed": 3,
    }
    documented = [row[0] for row in usd_attributes.SIMRT_SETTINGS]
    assert sorted(documented) == sorted(examples)
    # every key the reader knows is documented (its source names them as key == "...")
    source = (ROOT / "runtime" / "run" / "config.py").read_text(encoding="utf-8")
    known = set(re.findall(r'key == "(\w+)"', source))
    known |= set(re.findall(r'"(\w+)"', re.search(r"_BUILD_SETTINGS = (.*)", source).group(1)))
    assert known and known <= set(documented), sorted(known - set(documented))
    for key in [*documented, "notASetting"]:
        stage = Usd.Stage.CreateInMemory()
        scene = UsdPhysics.Scene.Define(stage, "/World/PhysicsScene").GetPrim()
        scene.SetCustomDataByKey("simrt", {key: examples.get(key, 1)})
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="runtime.run"):
            read_scene_settings(stage)
        unknown = [r for r in caplog.records if "not a known run setting" in r.getMessage()]
        assert bool(unknown) == (key == "notASetting"), key
