"""Learner-facing text speaks of the course, never of how the course was made.

A learner cannot place words from the course's own making ("the course plan's seed figure, source
unlocated"): they name documents and steps the learner never sees. This test reads every text a learner
meets and fails on any of :data:`PROCESS_WORDS`, naming the file, the place in it and the sentence:

- the lessons, exercises and solutions (``notebooks/``, ``exercises/``, ``solutions/``): every cell's
  source and every text output (plain, Markdown, HTML), since findings and ledger tables print there;
- the README (the course's front page; its ledger table is the ledger rows' text) and ``docs/*.md`` (the
  site renders ``docs/ledger-full.md`` as its ledger page);
- the string literals of the library (``nodecourse/``): ledger rows (claim, source, published, threshold,
  measured text), findings sentences, error messages, the site builder's fixed page text. Docstrings are
  left out: they speak to whoever reads the code, and CONTRIBUTING.md is for contributors too.

Nothing is imported or run (no torch, no kernels): the files are read as text and Python as a syntax
tree, so the test belongs to the fast tier. A stale output fails too: fixing a row's text means
re-running the lesson that prints it (``make notebooks``) and the ledger that writes the tables.
"""

from __future__ import annotations

import ast
import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: Words of the course's own making, each with why a learner cannot place it. Matched case-insensitively
#: on word boundaries. Left out on purpose: "seed" alone (random seeds are everywhere in the course),
#: "session" (a Jupyter session, a sitting), "plan" alone (the solvers' "RKPlan").
PROCESS_WORDS: dict[str, str] = {
    r"course plan": "a planning document the learner never sees",
    r"seed (figure|text|claim|list)s?": "the list of claims the course was built from",
    r"\(seed\)": "the list of claims the course was built from",
    r"(source )?unlocated": "a bookkeeping note of the course's making; say what is known of the source",
    r"referees?": "the course's reviewers; a learner meets a paper's reviewers only if the text says so",
    r"this stop": "a step of the course's making",
    r"the brief": "the instructions the course was written from",
    r"issue #?\d+": "the course's issue tracker",
    r"COURSE\.md": "a planning document outside the repository",
}
PATTERN = re.compile(r"(?<!\w)(?:" + "|".join(PROCESS_WORDS) + r")(?!\w)", re.IGNORECASE)

NOTEBOOK_DIRS = ("notebooks", "exercises", "solutions")
MARKDOWN_FILES = ("README.md", "docs/*.md")
LIBRARY = "nodecourse"


# ---------------------------------------------------------------------------------------------
# where the text is: (place, text) pairs
# ---------------------------------------------------------------------------------------------


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def notebook_texts(path: Path) -> Iterator[tuple[str, str]]:
    """Each cell's source and each text output of the notebook at ``path``, as ``("cell N ...", text)``.

    HTML outputs are reduced to their text (tags dropped, entities decoded), so a sentence reads as the
    learner sees it."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        yield f"cell {i} ({cell['cell_type']} source)", _joined(cell.get("source", ""))
        for output in cell.get("outputs", []):
            if "text" in output:
                yield f"cell {i} (output)", _joined(output["text"])
            for mime, value in output.get("data", {}).items():
                if mime == "text/html":  # a table cell ends where a "|" would in Markdown
                    cells = re.sub(r"</t[dh]>", " | ", _joined(value), flags=re.IGNORECASE)
                    yield f"cell {i} (output {mime})", html.unescape(re.sub(r"<[^>]+>", " ", cells))
                elif mime.startswith("text/"):
                    yield f"cell {i} (output {mime})", _joined(value)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """ids of the string constants that stand alone as a statement (module, class, function and
    attribute docstrings): text for the code's readers, not for learners."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def python_texts(path: Path) -> Iterator[tuple[str, str]]:
    """Every string literal of the module at ``path`` but its docstrings, as ``("line N", text)``; the
    literal parts of f-strings count (``f"the {x} course plan"`` yields "the " and " course plan")."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _docstring_nodes(tree)
    strings = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]
    for node in sorted(strings, key=lambda n: (n.lineno, n.col_offset)):
        yield f"line {node.lineno}", node.value


def markdown_texts(path: Path) -> Iterator[tuple[str, str]]:
    """The file's lines, as ``("line N", text)``."""
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        yield f"line {n}", line


def sentence_around(text: str, start: int, end: int, width: int = 160) -> str:
    """The sentence of ``text`` that holds ``text[start:end]``: from the last sentence end (". " before a
    capital, a newline, a table bar) before it to the next one after it, cut to ``width`` characters each
    side ("et al. 2018" does not end a sentence)."""
    stops = re.compile(r"(?<=[.!?])\s+(?=[A-Z])|\n|\|")
    before = [m.end() for m in stops.finditer(text, 0, start)]
    lo = max(before[-1] if before else 0, start - width)
    after = stops.search(text, end)
    hi = min(after.start() if after else len(text), end + width)
    return " ".join(text[lo:hi].split())


def findings(texts: Iterator[tuple[str, str]]) -> list[str]:
    """``"place: 'word' in: sentence"`` for each process word in ``texts``."""
    out = []
    for place, text in texts:
        for m in PATTERN.finditer(text):
            out.append(f"{place}: {m.group(0)!r} in: {sentence_around(text, m.start(), m.end())}")
    return out


def _report(path: Path, found: list[str]) -> str:
    listed = "\n  ".join(found)
    return (
        f"{path.relative_to(REPO)} uses words of the course's own making, which a learner cannot place "
        f"(say what they mean for the learner; see PROCESS_WORDS in {Path(__file__).name}):\n  {listed}"
    )


# ---------------------------------------------------------------------------------------------
# the course's text
# ---------------------------------------------------------------------------------------------

NOTEBOOKS = sorted(p for d in NOTEBOOK_DIRS for p in (REPO / d).glob("*.ipynb"))
MARKDOWN = sorted(p for pattern in MARKDOWN_FILES for p in REPO.glob(pattern))
MODULES = sorted((REPO / LIBRARY).rglob("*.py"))


def _ids(paths):
    return [str(p.relative_to(REPO)) for p in paths]


def test_the_course_has_text_to_read():
    """The globs find what they should (a moved folder must not turn the checks below into no checks)."""
    assert {p.parent.name for p in NOTEBOOKS} == set(NOTEBOOK_DIRS)
    assert REPO / "README.md" in MARKDOWN and REPO / "docs" / "ledger-full.md" in MARKDOWN
    assert REPO / LIBRARY / "course" / "site.py" in MODULES


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_has_no_process_words(path):
    found = findings(notebook_texts(path))
    assert not found, _report(path, found)


@pytest.mark.parametrize("path", MARKDOWN, ids=_ids(MARKDOWN))
def test_page_has_no_process_words(path):
    found = findings(markdown_texts(path))
    assert not found, _report(path, found)


def test_library_strings_have_no_process_words():
    """Ledger rows, findings, messages and the site builder's page text (docstrings aside)."""
    found = [f"{path.relative_to(REPO)} {hit}" for path in MODULES for hit in findings(python_texts(path))]
    assert not found, "library strings a learner reads:\n  " + "\n  ".join(found)


# ---------------------------------------------------------------------------------------------
# the reader and the matcher themselves
# ---------------------------------------------------------------------------------------------


def test_each_declared_word_is_caught_and_ordinary_words_are_not():
    caught = [
        "The course plan quotes it.",
        "the seed figure's 200,000",
        "Kelly et al. 2020, abstract; course plan (seed)",
        "200,000 (source unlocated)",
        "the unlocated 200,000",
        "A referee re-ran it.",
        "at this stop we",
        "as the brief says",
        "see issue 38",
        "read COURSE.md",
    ]
    for text in caught:
        assert PATTERN.search(text), text
    ordinary = [
        "5 seeds, seed 0 and seed 3",
        "a per-seed ratio",
        "the RKPlan of a tableau",
        "a Jupyter session",
        "the solver stops",
        "a briefer step",
    ]
    for text in ordinary:
        assert not PATTERN.search(text), text


def test_notebook_reader_finds_words_in_sources_and_outputs(tmp_path):
    """A word in a markdown cell, a plain output and an HTML output (through an entity) is reported with
    its cell and sentence; a clean notebook reports nothing."""
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["Intro.\n", "The course plan says so. Next."]},
            {
                "cell_type": "code",
                "metadata": {},
                "source": ["x = 1"],
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["all fine\n"]},
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {
                            "text/html": ["<tr><td>a claim</td><td>the seed figure&#x27;s 200,000</td></tr>"],
                            "text/plain": ["ok"],
                        },
                    },
                ],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "lesson.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    found = findings(notebook_texts(path))
    assert found == [
        "cell 0 (markdown source): 'course plan' in: The course plan says so.",
        "cell 1 (output text/html): 'seed figure' in: the seed figure's 200,000",
    ]
    nb["cells"] = nb["cells"][1:2]
    nb["cells"][0]["outputs"] = nb["cells"][0]["outputs"][:1]
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert findings(notebook_texts(path)) == []


def test_python_reader_skips_docstrings_and_reads_fstring_parts(tmp_path):
    path = tmp_path / "rows.py"
    path.write_text(
        '"""Module docstring: the course plan is for readers of the code."""\n'
        "def f(n):\n"
        '    """The seed figure, in a docstring."""\n'
        '    return f"{n:,} steps (source unlocated)"\n'
        'SOURCE = "Chen et al. 2018; " "course plan (seed)"\n',
        encoding="utf-8",
    )
    found = findings(python_texts(path))
    assert found == [
        "line 4: 'source unlocated' in: steps (source unlocated)",
        "line 5: 'course plan' in: Chen et al. 2018; course plan (seed)",
        "line 5: '(seed)' in: Chen et al. 2018; course plan (seed)",
    ]


def test_sentence_around_stops_at_sentence_ends_and_table_bars():
    text = "| id | First sentence. The course plan's figure is here. Last one. |"
    m = PATTERN.search(text)
    assert sentence_around(text, m.start(), m.end()) == "The course plan's figure is here."
