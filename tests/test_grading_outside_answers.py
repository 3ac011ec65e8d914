"""Code outside the answer cells: the grader runs only the answer cells, so a
solution typed into a new cell is not graded. It used to score 0 without a word; now the report
and the gradebook say which cells were left out and what to do.
"""

from __future__ import annotations

import csv

import nbformat
import pytest

from nodecourse.course import grading, sandbox
from nodecourse.course.exercise_builder import answer_id, build_exercise
from notebook_fixtures import REPO, run_cli, write

EX01 = REPO / "solutions" / "01_resnet_as_euler_exercises.ipynb"


def solution_in_a_new_cell():
    """Exercise 1 with its euler-step stub left as it is and the solution typed into a new cell below."""
    solution = nbformat.read(EX01, as_version=4)
    nb = build_exercise(solution)
    index = next(i for i, c in enumerate(nb.cells) if answer_id(c) == "euler-step")
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell("def euler_step(f, t, y, h):\n    return y + h * f(t, y)\n"))
    return nb, index + 2  # the cell's number as the warning counts (from 1)


def test_the_warning_names_the_cells_and_an_untouched_exercise_has_none():
    nb, number = solution_in_a_new_cell()
    reference = build_exercise(nbformat.read(EX01, as_version=4))
    text = grading.code_outside_answers(nb, reference)
    assert text.startswith("1 code cell(s) (cell ") and f"cell {number})" in text and "move that code" in text
    assert grading.code_outside_answers(reference, reference) == ""
    nb.cells[number - 1].source = "# only a comment\n"  # no code: nothing to warn about
    assert grading.code_outside_answers(nb, reference) == ""


@pytest.mark.slow
@pytest.mark.skipif(not sandbox.probe().sandboxed, reason=f"no sandbox here: {sandbox.probe().reason}")
def test_code_outside_answers_is_warned_in_the_report_and_the_gradebook(tmp_path):
    nb, number = solution_in_a_new_cell()
    path = write(nb, tmp_path / f"una-{EX01.name}")
    proc = run_cli("grade", str(path), "--seed", "2", "--timeout", "60", timeout=600)
    assert proc.returncode == 1  # the stub is what is graded
    assert "code outside the answer cells" in proc.stderr and f"cell {number})" in proc.stderr, proc.stderr
    book = tmp_path / "grades.csv"
    proc = run_cli("grade", str(path), "--gradebook", str(book), "--seed", "2", "--timeout", "60", timeout=600)
    with open(book, newline="", encoding="utf-8") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["student"] == "una" and f"cell {number})" in row["outside_answers"], row
    assert row["01:euler-step"] == "FAIL" and row["error"] == ""


def test_the_notebooks_self_check_warns_the_same(tmp_path, recwarn):
    """In JupyterLab the kernel knows its notebook (``__session__``): the self-check reads the saved
    copy and warns as the grader will, while the check itself still runs on what the kernel holds."""
    from nodecourse.course import tasks

    nb, number = solution_in_a_new_cell()
    path = write(nb, tmp_path / EX01.name)
    ns = {"__session__": str(path)}
    exec(compile("def euler_step(f, t, y, h):\n    return y + h * f(t, y)\n", "<extra cell>", "exec"), ns)
    tasks.self_check("01", "euler-step", ns)  # passes: the function is in the kernel
    texts = [str(w.message) for w in recwarn]
    assert any("the grader will not run this code" in t and f"cell {number})" in t for t in texts), texts
    recwarn.clear()
    write(build_exercise(nbformat.read(EX01, as_version=4)), path)  # no extra cells: no warning
    with pytest.raises(Exception, match="NotImplementedError|not done|euler_step"):
        tasks.self_check("01", "euler-step", {"__session__": str(path)})
    assert not [w for w in recwarn if "will not run" in str(w.message)]
