"""Check that docstrings and comments cite only Markdown files that are in the repository.

Every Markdown file name (``.md``, with an optional folder path and ``#anchor``) mentioned in
a docstring or a comment of a Python file under runtime/, tests/, tools/, benchmarks/ or
scenes/ must be a file of the repository, given by its path from the repository root, and an
anchor must be a heading of that page (an explicit ``{#id}`` or the heading's slug). A citation of a
document that is not in the repository (a spec kept elsewhere) fails the check.

    python tools/check_doc_citations.py          # exit 1 and one line per bad citation
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("runtime", "tests", "tools", "benchmarks", "scenes")
CITATION = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.md)(#[\w-]+)?(?![\w/-])")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.*?)\s*(?:\{#(?P<id>[\w-]+)\})?\s*$")


def _slug(title: str) -> str:
    """MkDocs' default heading id (Python-Markdown's toc slugify)."""
    text = re.sub(r"`", "", title)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The heading ids of a Markdown page (fenced code skipped)."""
    found: set[str] = set()
    in_fence = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if match:
            found.add(match.group("id") or _slug(match.group("title")))
    return found


def texts(source: str) -> list[tuple[int, str]]:
    """(line, text) of every docstring and comment of a Python source."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.append((value.lineno, value.value))
        # attribute docstrings: a string statement right after an assignment
        if isinstance(body, list):
            for before, after in zip(body, body[1:], strict=False):
                is_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                if isinstance(before, (ast.Assign, ast.AnnAssign)) and is_doc:
                    if isinstance(after.value.value, str):
                        found.append((after.value.lineno, after.value.value))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found.append((token.start[0], token.string))
    return found


def problems(root: Path = ROOT, folders: tuple[str, ...] = FOLDERS) -> list[str]:
    """One line per citation of a Markdown file (or anchor) that is not in the repository."""
    out: list[str] = []
    cache: dict[Path, set[str]] = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            rel = path.relative_to(root)
            try:
                found = texts(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, tokenize.TokenError) as exc:
                out.append(f"{rel}: cannot be read: {exc}")
                continue
            for line, text in found:
                for offset, match in _citations(text):
                    target, anchor = match.group(1), match.group(2)
                    page = root / target
                    where = f"{rel}:{line + offset}"
                    if not page.is_file():
                        out.append(f"{where}: cites {target}, which is not in the repository")
                    elif anchor:
                        ids = cache.setdefault(page, anchors(page))
                        if anchor[1:] not in ids:
                            out.append(f"{where}: {target} has no heading {anchor}")
    return out


def _citations(text: str):
    for offset, line in enumerate(text.splitlines()):
        for match in CITATION.finditer(line):
            yield offset, match


def main() -> int:
    """Print the bad citations; exit 1 if there are any."""
    found = problems()
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
