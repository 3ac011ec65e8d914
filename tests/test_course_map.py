"""Lesson 0's course map and the README list exactly the lessons that exist, each a working link."""

from __future__ import annotations

import re

import nbformat
import pytest

from notebook_fixtures import REPO

LESSONS = sorted(p.name for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXERCISES = sorted(p.name for p in (REPO / "exercises").glob("*.ipynb"))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _start_here_markdown() -> str:
    nb = nbformat.read(REPO / "notebooks" / "00_start_here.ipynb", as_version=4)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize(
    "name, text, base",
    [
        ("lesson 0", _start_here_markdown(), REPO / "notebooks"),
        ("README", (REPO / "README.md").read_text(encoding="utf-8"), REPO),
    ],
)
def test_every_link_resolves_and_every_lesson_and_exercise_is_linked(name, text, base):
    targets = [t for t in LINK.findall(text) if not t.startswith(("http://", "https://"))]
    missing = [t for t in targets if not (base / t).exists()]
    assert not missing, f"{name} links to files that do not exist: {missing}"
    linked = {(base / t).resolve() for t in targets}
    for lesson in LESSONS:
        if name == "lesson 0" and lesson.startswith("00_"):
            continue
        assert (REPO / "notebooks" / lesson).resolve() in linked, f"{name} does not link {lesson}"
    for exercise in EXERCISES:
        assert (REPO / "exercises" / exercise).resolve() in linked, f"{name} does not link {exercise}"


def test_no_lesson_is_announced_that_does_not_exist():
    # A lesson number mentioned in the map as a row must have its notebook.
    numbers = {int(n) for n in re.findall(r"^\|\s*\[?(\d)\b", _start_here_markdown(), re.M)}
    existing = {int(n[:2]) for n in LESSONS}
    assert numbers <= existing, f"the map lists lessons {sorted(numbers - existing)} that have no notebook"
