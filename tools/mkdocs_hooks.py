"""MkDocs hooks of the documentation site (``hooks:`` in mkdocs.yml).

Two things are derived from the tree at build time, so the site cannot drift from the code:

* the API reference: one page per public package of ``runtime`` (a directory with an
  ``__init__.py`` whose name does not start with ``_``), listing the package and each of
  its public modules (names without a leading ``_``) for mkdocstrings to render from the
  docstrings; the pages are generated, never written to ``docs/``;
* the guides: a page under ``docs/guides/`` that the ``nav`` of mkdocs.yml does not name
  is appended to the "Guides" section, so a new guide is never left out of the site.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "runtime"
API_SECTION = "API reference"
GUIDES_SECTION = "Guides"


def public_packages() -> list[str]:
    """Dotted names of the public top-level packages of ``runtime``, sorted."""
    names = []
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        if not init.parent.name.startswith("_"):
            names.append(f"runtime.{init.parent.name}")
    return names


def public_modules(package: str) -> list[str]:
    """Dotted names of the public modules below ``package`` (itself excluded), sorted.

    A module is public when no part of its dotted name starts with ``_``.
    """
    base = ROOT.joinpath(*package.split("."))
    names = []
    for path in sorted(base.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if "__pycache__" in parts or any(p.startswith("_") for p in parts):
            continue
        name = ".".join(parts)
        if name != package:
            names.append(name)
    return names


def api_page(package: str) -> str:
    """Markdown of one package's API page (mkdocstrings ``:::`` blocks)."""
    lines = [
        f"# {package}",
        "",
        "Generated from the docstrings (`tools/mkdocs_hooks.py` lists the public modules).",
        "",
        f"::: {package}",
        "    options:",
        "      show_root_heading: false",
        "",
    ]
    for module in public_modules(package):
        lines += [f"## {module}", "", f"::: {module}", "    options:", "      heading_level: 3"]
        lines += ["      show_root_heading: false", ""]
    return "\n".join(lines)


def api_index(packages: list[str]) -> str:
    """Markdown of the API reference's index page."""
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings of the public packages at every build of the site.",
        "A package's own page shows its facade (what `import runtime.X` gives) and then",
        "each public module (modules whose names start with `_` are private and left out).",
        "",
    ]
    for package in packages:
        lines.append(f"- [{package}]({package}.md)")
    lines.append("")
    return "\n".join(lines)


def _nav_sources(nav) -> set[str]:
    """Every page path named anywhere in a nav tree."""
    found: set[str] = set()
    if isinstance(nav, str):
        found.add(nav)
    elif isinstance(nav, list):
        for item in nav:
            found |= _nav_sources(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            found |= _nav_sources(value)
    return found


def on_config(config):
    """Fill the API section of the nav and append guides the nav does not name yet."""
    nav = config["nav"]
    packages = public_packages()
    api = ["api/index.md"] + [{p: f"api/{p}.md"} for p in packages]
    named = _nav_sources(nav)
    docs_dir = Path(config["docs_dir"])
    extra_guides = [
        f"guides/{p.name}"
        for p in sorted((docs_dir / "guides").glob("*.md"))
        if f"guides/{p.name}" not in named
    ]
    for item in nav:
        if isinstance(item, dict) and API_SECTION in item:
            item[API_SECTION] = api
        if isinstance(item, dict) and GUIDES_SECTION in item:
            item[GUIDES_SECTION] = list(item[GUIDES_SECTION]) + extra_guides
    return config


def on_files(files, config):
    """Add the generated API pages to the site's files."""
    packages = public_packages()
    files.append(File.generated(config, "api/index.md", content=api_index(packages)))
    for package in packages:
        files.append(File.generated(config, f"api/{package}.md", content=api_page(package)))
    return files
