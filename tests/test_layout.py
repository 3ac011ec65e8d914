"""The three wings of the package and the direction imports may go (CONTRIBUTING.md, "Layout").

library (everything under nodecourse/ except course/ and lessons/)
    <- lessons (nodecourse/lessons/: the code each lesson notebook calls, its ledger rows)
    <- course  (nodecourse/course/: CLI, grader, exercise builder, environment check)

The library never imports the lessons or the course machinery; lesson code
never imports the course machinery. The ledger finds lesson rows by name at
run time (nodecourse.claims.load_rows), never by a static import.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "nodecourse"


def _wing(path: Path) -> str:
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if rel[0] in ("course", "lessons") else "library"


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


FORBIDDEN = {
    "library": ("nodecourse.course", "nodecourse.lessons"),
    "lessons": ("nodecourse.course",),
    "course": (),
}
SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_toward_the_library(path):
    bad = [m for m in _imported_modules(path)
           for prefix in FORBIDDEN[_wing(path)] if m == prefix or m.startswith(prefix + ".")]
    assert not bad, f"{path.relative_to(PACKAGE.parent)} ({_wing(path)}) imports {sorted(set(bad))}"


def test_the_check_finds_a_violation(tmp_path):
    # The rule above must be able to fail: a library module importing the grader.
    fake = tmp_path / "bad.py"
    fake.write_text("from nodecourse.course import grading\nimport nodecourse.lessons.lesson01\n")
    assert {"nodecourse.course", "nodecourse.lessons.lesson01"} <= set(_imported_modules(fake))


def test_no_module_at_the_package_root_belongs_to_another_wing():
    course_words = ("cli", "grading", "grader", "exercise_builder", "envcheck", "checks")
    at_root = {p.stem for p in PACKAGE.glob("*.py")}
    assert not at_root & set(course_words), at_root & set(course_words)
