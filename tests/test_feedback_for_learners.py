"""The feedback file as a learner reads it: the score first, cells by their heading, errors whole, nothing stale.

- The score and each check's points come before the table of reasons.
- A cell is named by the markdown heading it sits under (a check also by its task's heading), not
  by an index to count.
- A long reason or error is given whole, folded in ``<details>``; the part shown ends at a word.
- A new grade replaces the exercise's section whole: no "could not be graded" of an earlier run
  stays above it.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from gradebook_fakes import EXERCISE, fake_grade, write_submission
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from nodecourse.course import gradebook
from nodecourse.course.feedback import cell_titles, feedback_markdown, feedback_name, shorten, write_feedback
from nodecourse.course.grading_run import REASON_LIMIT, error_reason

ROOT = Path(__file__).resolve().parent.parent
WORDS = " ".join(f"word{i}" for i in range(400))  # a long message of whole words


def _row(check, passed, weight=1.0, reason=""):
    return {"exercise": EXERCISE, "check": check, "passed": passed, "reason": reason, "weight": weight}


def _result(rows, error="", **extra):
    return {"rows": rows, "error": error, "seed": 7, "warnings": [], "exercise": EXERCISE, **extra}


def test_the_score_and_each_checks_points_come_first():
    rows = [_row("euler-step", True, 2), _row("residual-block", False, 1, "differs"), _row("euler-order", True, 0.5)]
    text = feedback_markdown("ann", _result(rows))
    assert "**Score: 2.5 / 3.5 points (71%)**" in text
    assert "- euler-step: 2 / 2" in text and "- residual-block: 0 / 1" in text and "- euler-order: 0.5 / 0.5" in text
    assert text.index("Score:") < text.index("- euler-step: 2 / 2") < text.index("| check | result | why |")
    override = feedback_markdown("ann", _result(rows, override="3"))
    assert "Your instructor set this exercise's points to **3**" in override
    failed = feedback_markdown("ann", _result([], error="the grader failed on it: OSError"))
    assert "**Score: not graded**" in failed and "points" not in failed.split("\n")[2]


def test_cells_are_named_by_their_heading_not_an_index():
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Exercises"),
            new_code_cell("import torch"),
            new_markdown_cell("Some text.\n\n## Task 1: one Euler step\n\nMore text."),
            new_code_cell("def euler_step(): ..."),
            new_code_cell("check()", metadata={"nodecourse": {"check": "euler-step"}}),
            new_markdown_cell("No heading here."),
            new_code_cell("plot()"),
        ]
    )
    titles = cell_titles(nb)
    assert titles == {
        "0": "Exercises",
        "1": "Task 1: one Euler step",
        "2": "Task 1: one Euler step",
        "euler-step": "Task 1: one Euler step",
        "3": "Task 1: one Euler step",
    }
    rows = [_row("euler-step", False, 1, "differs"), _row("cell 3", False, 1, "NameError: name 'plot'")]
    text = feedback_markdown("ann", _result(rows, cell_titles=titles))
    assert "- euler-step (Task 1: one Euler step): 0 / 1" in text
    assert "| a code cell under “Task 1: one Euler step” | FAIL | NameError" in text
    assert not re.search(r"\bcell 3\b", text)
    assert "| code cell 4 |" in feedback_markdown("ann", _result(rows[1:]))  # no titles: counted from 1


def test_the_real_exercise_names_its_checks_by_their_task():
    nb = nbformat.read(ROOT / "exercises" / EXERCISE, as_version=4)
    titles = cell_titles(nb)
    assert titles["euler-step"] == "Task 1: one Euler step"
    assert titles["0"] == "Lesson 1 exercises: ResNet as Euler"
    # as a grading worker reads them (the reference given, or found): none when it cannot be read
    assert gradebook._titles(f"ann-{EXERCISE}", str(ROOT / "exercises" / EXERCISE)) == titles
    assert gradebook._titles(f"ann-{EXERCISE}", str(ROOT / "no-such.ipynb")) == {}


def test_a_long_error_is_given_whole_folded_and_never_cut_inside_a_word():
    text = feedback_markdown("ann", _result([_row("euler-step", False, 1, WORDS)], error=f"OSError: {WORDS}"))
    assert text.count(WORDS) == 2  # the reason and the error, each whole
    summaries = re.findall(r"<details><summary>(.*?)</summary>(.*?)</details>", text)
    assert len(summaries) == 2
    for shown, whole in summaries:
        assert shown.endswith("…") and whole.startswith(shown[:-1]) and shown[:-1].split()[-1] in whole.split()
    assert shorten("alpha beta gamma", 12) == "alpha beta…" and shorten("alpha", 12) == "alpha"
    cut = error_reason("CheckFailed", WORDS * 3)
    assert len(cut) <= REASON_LIMIT and cut.endswith("…") and cut[:-1].split()[-1] in WORDS.split()


def test_a_new_grade_replaces_the_could_not_be_graded_section(tmp_path):
    write_feedback(tmp_path, "ann", _result([], error="the grading worker failed"))
    (tmp_path / feedback_name("ann")).write_text(  # and a section of an older version, with no exercise
        (tmp_path / feedback_name("ann")).read_text(encoding="utf-8")
        + "\n\n<!-- exercise -->\n## (no exercise)\n\n- could not be graded: old\n",
        encoding="utf-8",
    )
    path = write_feedback(tmp_path, "ann", _result([_row("euler-step", True)]))
    text = path.read_text(encoding="utf-8")
    assert "could not be graded" not in text and text.count(f"## {EXERCISE}") == 1
    assert "**Score: 1 / 1 points (100%)**" in text


def test_the_gradebook_writes_fresh_feedback_after_a_failed_run(tmp_path):
    sub = write_submission(tmp_path / f"ann-{EXERCISE}", **{"raise": "OSError"})
    book = tmp_path / "grades.csv"
    run = dict(timeout_s=10, jobs=1, seed=5, grader=fake_grade)
    gradebook.grade_class([str(sub)], book, **run)
    feedback = tmp_path / "grades-feedback" / feedback_name("ann")
    assert "**Score: not graded**" in feedback.read_text(encoding="utf-8")
    write_submission(sub, passed=["euler-step"])
    gradebook.grade_class([str(sub)], book, **run)
    text = feedback.read_text(encoding="utf-8")
    assert "could not be graded" not in text and "**Score: 1 / 4 points (25%)**" in text
