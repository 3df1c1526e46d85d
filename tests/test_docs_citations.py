"""No docstring or comment cites a Markdown file that is not in the repository.

tools/check_doc_citations.py does the check; these tests run it on the repository and on a
small tree that cites a missing page and a missing anchor, so the check is shown to fail.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
try:
    import check_doc_citations as check
finally:
    sys.path.remove(str(ROOT / "tools"))


def test_repository_cites_only_its_own_pages():
    assert check.problems() == []


def test_a_missing_page_or_anchor_is_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(
        "# Page\n\n## Each step {#each-step}\n\n## Two words\n"
    )
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "mod.py").write_text(
        '"""Module (docs/page.md#each-step, docs/page.md#two-words).\n\n'
        'Behaviour as in sensors.md 3.3.\n"""\n\n'
        "# see docs/page.md#no-such-heading\n"
        "X = 1\n"
        '"""Attribute docstring citing docs/gone.md."""\n'
    )
    found = check.problems(tmp_path, ("runtime",))
    assert found == [
        "runtime/mod.py:3: cites sensors.md, which is not in the repository",
        "runtime/mod.py:8: cites docs/gone.md, which is not in the repository",
        "runtime/mod.py:6: docs/page.md has no heading #no-such-heading",
    ]
