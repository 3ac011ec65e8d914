"""A learner's copy of the course, as handed out (no solutions/ folder), grades with the README's command.

The reference is then the clean exercise shipped with the package (:mod:`nodecourse.course.handout`):
equal to a fresh build of each solution, and holding nothing of the solutions (stub answers only).
Where no exercise fits, the message says the real cause (no solutions/, the shipped names) and what
works.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from nodecourse.course import handout
from nodecourse.course.exercise_builder import answer_id, build_exercise
from nodecourse.course.references import GradingError, reference_for, shipped_exercises
from notebook_fixtures import REPO, run_cli, write

EX01 = "01_resnet_as_euler_exercises.ipynb"


def test_the_shipped_exercises_are_fresh_builds_of_the_solutions():
    built = shipped_exercises(REPO / "solutions")
    assert sorted(built) == sorted(handout.EXERCISES), "an exercise was added or removed"
    stale = [name for name, text in built.items() if handout.EXERCISES[name] != text]
    assert not stale, (
        f"the shipped exercises {stale} differ from a fresh build of their solutions; run "
        "`.venv/bin/python -c 'from nodecourse.course.references import write_handout; write_handout()'`"
    )


@pytest.mark.parametrize("name", sorted(handout.EXERCISES))
def test_the_shipped_exercises_hold_nothing_of_the_solutions(name):
    shipped = nbformat.reads(handout.EXERCISES[name], as_version=4)
    solution = nbformat.read(REPO / "solutions" / name, as_version=4)
    solved = {answer_id(c): c.source for c in solution.cells if answer_id(c)}
    answers = [c for c in shipped.cells if answer_id(c)]
    assert answers and "BEGIN SOLUTION" not in handout.EXERCISES[name]
    for cell in answers:
        assert "raise NotImplementedError" in cell.source and cell.source != solved[answer_id(cell)]
    assert all(not c.get("outputs") for c in shipped.cells if c.cell_type == "code")


def _handed_out(tmp_path: Path) -> Path:
    """A course folder as handed out: notebooks/, exercises/, the project file; no solutions/."""
    course = tmp_path / "course"
    (course / "notebooks").mkdir(parents=True)
    (course / "exercises").mkdir()
    shutil.copy(REPO / "pyproject.toml", course / "pyproject.toml")
    shutil.copy(REPO / "exercises" / EX01, course / "exercises" / EX01)
    return course


@pytest.mark.parametrize("learner_name", [EX01, "alice-" + EX01, EX01.replace(".ipynb", "-Copy1.ipynb")])
def test_without_solutions_the_reference_is_the_shipped_exercise(tmp_path, learner_name):
    course = _handed_out(tmp_path)
    notebook = course / "exercises" / learner_name
    if learner_name != EX01:
        shutil.copy(course / "exercises" / EX01, notebook)
    reference, name, warnings = reference_for(notebook)
    assert name == EX01 and warnings == []
    assert reference == build_exercise(nbformat.read(REPO / "solutions" / EX01, as_version=4))


def test_without_solutions_an_unknown_name_says_the_real_cause(tmp_path):
    course = _handed_out(tmp_path)
    notebook = course / "exercises" / "my_notes.ipynb"
    shutil.copy(course / "exercises" / EX01, notebook)
    with pytest.raises(GradingError) as caught:
        reference_for(notebook)
    message = str(caught.value)
    assert "this copy of the course has no solutions/ folder" in message
    assert EX01 in message and "--reference PATH" in message and "nodecourse grade exercises/" in message


@pytest.mark.slow
def test_the_readmes_grade_command_works_in_a_copy_without_solutions(tmp_path):
    course = _handed_out(tmp_path)
    solved = nbformat.read(REPO / "solutions" / EX01, as_version=4)
    notebook = write(solved, course / "exercises" / EX01)  # the learner's answers: the solution's
    out = run_cli("grade", str(notebook.relative_to(course)), "--timeout", "60", cwd=course)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-2000:])
    assert "4/4" in out.stdout.replace(" ", ""), out.stdout[-2000:]
