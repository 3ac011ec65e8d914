"""Lesson 0 sends learners to the full claims ledger (docs/ledger-full.md), in JupyterLab and on the site,
and says that the README's table is quick mode."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from nodecourse.course import site

REPO = Path(__file__).resolve().parents[1]
LESSON0 = REPO / "notebooks" / "00_start_here.ipynb"
LINK = re.compile(r"\[(?P<label>[^\]]+)\]\((?P<url>[^)\s]+)\)")


def _ledger_sentence() -> str:
    nb = nbformat.read(LESSON0, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "markdown" and "nodecourse claims" in c.source]
    assert len(cells) == 1, "lesson 0 has one markdown cell that introduces the claims ledger"
    return cells[0]


def test_lesson0_links_the_full_ledger_by_a_path_that_exists_from_the_notebook():
    links = {m["url"]: m["label"] for m in LINK.finditer(_ledger_sentence())}
    assert "../docs/ledger-full.md" in links and "full" in links["../docs/ledger-full.md"]
    assert (LESSON0.parent / "../docs/ledger-full.md").resolve().is_file()  # JupyterLab opens it beside the lesson


def test_lesson0_calls_the_readme_table_quick_and_not_the_last_full_run():
    text = " ".join(_ledger_sentence().split())
    readme = text[text.index("README's ledger table") :]
    assert "quick mode" in readme[:120]
    assert "last full run is in the [README" not in text


def test_the_site_turns_lesson0s_ledger_link_into_the_ledger_page():
    pages = site.site_pages(REPO)
    html = '<p><a href="../docs/ledger-full.md">full claims ledger</a></p>'
    out = site.rewrite_links(html, "notebooks/00_start_here.ipynb", pages, "https://example.org/repo")
    ledger = next(p for p in pages if p.rel == "docs/ledger-full.md")
    assert f'href="{ledger.out}"' in out and ledger.out == "ledger.html"
