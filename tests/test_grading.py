"""The grader on fixture exercises: solutions pass, and nothing a learner's file
contains besides correct answer code can make a check pass.

Every case runs the real grader (nbval in a subprocess with a kernel), so the
cases are marked slow.
"""
from __future__ import annotations

import copy
import json
import re

import nbformat
import pytest
from nbformat.v4 import new_output

from nodecourse.course import grading
from nodecourse.course.exercise_builder import build_exercise, check_id
from notebook_fixtures import answer_cell, run_cli, solution_notebook, write

CHECKS = ["double", "square"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A fixture solution and the exercise built from it."""
    root = tmp_path_factory.mktemp("course")
    solution = solution_notebook()
    exercise = build_exercise(solution, name="fx.ipynb")
    return {
        "solution": solution,
        "exercise": exercise,
        "reference": write(exercise, root / "exercises" / "fx.ipynb"),
        "dir": root,
    }


def _grade(course, nb, name, **kw):
    path = write(nb, course["dir"] / "learner" / name)
    rows, warnings = grading.grade_notebook(path, reference=course["reference"], **kw)
    return {r.check: r for r in rows}, warnings


def _replace_answer(nb, task, source):
    for cell in nb.cells:
        if cell.metadata.get("nodecourse", {}).get("answer") == task:
            cell.source = source


@pytest.mark.slow
def test_solution_passes_every_check(course):
    rows, warnings = _grade(course, course["solution"], "fx.ipynb")
    assert sorted(rows) == CHECKS
    assert all(r.passed and r.check_cell_passed and r.reason == "" for r in rows.values()), rows
    assert warnings == []


def _unsolved_run_and_saved(course):
    """The exercise as a learner saves it after running it: forged PASS outputs everywhere."""
    nb = copy.deepcopy(course["exercise"])
    for n, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.execution_count = n + 1
            cell.outputs = [new_output("stream", name="stdout", text=f"PASS {check_id(cell) or 'x'}\n")]
    return nb


def _check_cells_deleted(course):
    nb = copy.deepcopy(course["exercise"])
    nb.cells = [c for c in nb.cells if check_id(c) is None]
    return nb


def _check_cells_edited(course):
    nb = _unsolved_run_and_saved(course)
    for cell in nb.cells:
        if check_id(cell):
            cell.source = f'# NBVAL_CHECK_OUTPUT\nprint("PASS {check_id(cell)}")'
    return nb


def _answer_cells_deleted(course):
    nb = copy.deepcopy(course["solution"])
    nb.cells = [c for c in nb.cells if "answer" not in c.metadata.get("nodecourse", {})]
    return nb


def _nbval_markers_in_answers(course):
    """Markers that would make nbval skip a cell or accept its error are not honoured."""
    nb = copy.deepcopy(course["exercise"])
    _replace_answer(nb, "double", "# NBVAL_SKIP\ndef double(x):\n    raise NotImplementedError\n")
    _replace_answer(nb, "square", "# NBVAL_RAISES_EXCEPTION\nraise NotImplementedError\n")
    return nb


TAMPERED = {
    "unsolved-run-and-saved-with-forged-PASS": _unsolved_run_and_saved,
    "check-cells-deleted": _check_cells_deleted,
    "check-cells-edited-to-print-PASS": _check_cells_edited,
    "answer-cells-deleted": _answer_cells_deleted,
    "nbval-markers-in-answers": _nbval_markers_in_answers,
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(TAMPERED))
def test_tampered_or_unsolved_notebook_fails_every_check(course, case):
    rows, warnings = _grade(course, TAMPERED[case](course), f"{case}.ipynb")
    assert sorted(r for r in rows if not r.startswith("cell ")) == CHECKS, rows
    for cid in CHECKS:
        assert not rows[cid].passed, (case, rows[cid])
        assert not rows[cid].check_cell_passed, (case, rows[cid])
        assert "NotImplementedError" in rows[cid].reason, (case, rows[cid])
    if case == "answer-cells-deleted":
        assert any("not found in the notebook" in w for w in warnings), warnings


@pytest.mark.slow
def test_solved_answers_pass_even_with_check_cells_deleted(course):
    """Deleting check cells changes nothing: the reference's checks run anyway."""
    nb = copy.deepcopy(course["solution"])
    nb.cells = [c for c in nb.cells if check_id(c) is None]
    rows, _ = _grade(course, nb, "solved-no-checks.ipynb")
    assert sorted(rows) == CHECKS and all(r.passed for r in rows.values()), rows


@pytest.mark.slow
def test_infinite_loop_times_out_with_a_clear_message(course):
    nb = copy.deepcopy(course["solution"])
    _replace_answer(nb, "double", "while True:\n    pass")
    # The limit applies to every cell, and the check cells import torch (through
    # nodecourse), which takes seconds on a loaded machine: hence not 1 s.
    rows, _ = _grade(course, nb, "loop.ipynb", timeout_s=30)
    assert not rows["double"].passed
    assert rows["double"].reason == "answer 'double': timed out after 30 s", rows["double"]
    # the kernel was interrupted, not killed: the next task is still graded
    assert rows["square"].passed, rows["square"]


@pytest.mark.slow
def test_cli_grade_reports_a_wrong_answer_and_exits_nonzero(course):
    """Through the command line: one task right, one wrong; JSON rows carry the check's detail."""
    nb = copy.deepcopy(course["solution"])
    _replace_answer(nb, "square", answer_cell("square", "def square(x):\n    return x + x").source)
    path = write(nb, course["dir"] / "learner" / "half.ipynb")
    proc = run_cli("grade", str(path), "--reference", str(course["reference"]), "--json")
    assert proc.returncode == 1, proc.stderr
    rows = {r["check"]: r for r in json.loads(proc.stdout)}
    assert rows["double"]["passed"] is True
    assert rows["square"]["passed"] is False
    assert rows["square"]["reason"] == "FAIL square: square(4) = 8"

    table = run_cli("grade", str(course["dir"] / "learner" / "half.ipynb"),
                    "--reference", str(course["reference"]))
    assert table.returncode == 1
    assert re.search(r"square\s*\|\s*FAIL", table.stdout), table.stdout
    assert "1/2 checks pass" in table.stdout, table.stdout


def test_assemble_takes_only_answer_sources(course):
    """No kernel needed: the assembled notebook is the reference plus the learner's answers."""
    learner = _check_cells_edited(course)
    _replace_answer(learner, "double", "def double(x):\n    return 2 * x")
    learner.cells.append(nbformat.v4.new_code_cell("print('PASS double')"))
    assembled, warnings = grading.assemble(learner, course["exercise"])
    ref_cells = course["exercise"].cells
    assert len(assembled.cells) == len(ref_cells)
    for got, ref in zip(assembled.cells, ref_cells):
        if got.metadata.get("nodecourse", {}).get("answer") == "double":
            assert got.source == "def double(x):\n    return 2 * x"
            assert got.outputs == []
        else:
            assert got.source == ref.source
            assert got.get("outputs") == ref.get("outputs")
    assert warnings == []


def test_grade_errors_name_the_problem(tmp_path, course):
    with pytest.raises(grading.GradingError, match="does not exist"):
        grading.grade_notebook(tmp_path / "nope.ipynb", reference=course["reference"])
    lonely = write(course["exercise"], tmp_path / "lonely" / "zz_unknown.ipynb")
    with pytest.raises(grading.GradingError, match="no reference exercise|cannot find the course root"):
        grading.grade_notebook(lonely)
    with pytest.raises(grading.GradingError, match="timeout=0"):
        grading.grade_notebook(lonely, reference=course["reference"], timeout_s=0)


@pytest.mark.slow
def test_learner_working_inside_exercises_cannot_tamper_with_the_reference(tmp_path):
    """The usual workflow: the learner edits exercises/fx.ipynb in place and grades it.
    The reference is rebuilt from solutions/, so deleted or edited checks there do not count."""
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "nodecourse"\n')
    solution = solution_notebook()
    write(solution, root / "solutions" / "fx.ipynb")
    learner = build_exercise(solution, name="fx.ipynb")
    # task 'double' done; 'square' left as the stub but its check cell edited, the other deleted
    _replace_answer(learner, "double", "def double(x):\n    return 2 * x")
    learner.cells = [c for c in learner.cells if check_id(c) != "double"]
    for cell in learner.cells:
        if check_id(cell) == "square":
            cell.source = '# NBVAL_CHECK_OUTPUT\nprint("PASS square")'
    path = write(learner, root / "exercises" / "fx.ipynb")
    rows, warnings = grading.grade_notebook(path)
    rows = {r.check: r for r in rows}
    assert rows["double"].passed, rows
    assert not rows["square"].passed and "NotImplementedError" in rows["square"].reason, rows
    assert warnings == []
