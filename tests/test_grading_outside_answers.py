"""Code outside the answer cells (issue 43): a cell the learner added runs, where it sits, under the
answer cells' rules; a handed-out setup or check cell runs as handed out, edited or not.

It used to be that only the answer cells ran: 2 of 16 exercise-2 submissions lost points for a
correct helper in a cell of its own, while the notebook's own self-check (which runs every cell)
passed. Now the grade runs what the self-check ran, except the edits to handed-out cells, which
both the self-check and the grade name.
"""

from __future__ import annotations

import csv

import nbformat
import pytest

from nodecourse.course import grading, sandbox
from nodecourse.course.exercise_builder import answer_id, build_exercise
from nodecourse.course.references import edited_handouts, learner_cells
from notebook_fixtures import REPO, run_cli, write

EX01 = REPO / "solutions" / "01_resnet_as_euler_exercises.ipynb"
EX02 = REPO / "solutions" / "02_solvers_exercises.ipynb"

RK4_HELPER = """def rk4_increment(f, t, y, h):
    k1 = f(t, y)
    k2 = f(t + h / 2, y + h / 2 * k1)
    k3 = f(t + h / 2, y + h / 2 * k2)
    k4 = f(t + h, y + h * k3)
    return (k1 + 2 * k2 + 2 * k3 + k4) / 6
"""
RK4_USING_THE_HELPER = "def rk4_step(f, t, y, h):\n    return y + h * rk4_increment(f, t, y, h)\n"
# The library's RK4 in an added cell between the answer and its checks: what the task asks to write.
RK4_FROM_THE_LIBRARY = """from nodecourse import odeint as solve


def rk4_step(f, t, y, h):
    ts = torch.tensor([t, t + h], dtype=y.dtype)
    return solve(f, y, ts, method="rk4", step_size=h).ys[-1]
"""
# An edit of the setup cell that would break every task if it ran.
BROKEN_SETUP = "\ntorch = None  # an edit of the handed-out setup cell\n"


def _index(nb, task: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if answer_id(c) == task)


def helper_in_its_own_cell():
    """Exercise 2 solved, with the RK4 answer calling a helper defined in a cell the learner added above it."""
    nb = nbformat.read(EX02, as_version=4)
    i = _index(nb, "rk4-step")
    nb.cells[i].source = RK4_USING_THE_HELPER
    nb.cells.insert(i, nbformat.v4.new_code_cell(RK4_HELPER))
    return nb, i + 1  # the added cell's number, from 1


def library_in_an_added_cell():
    """Exercise 2 solved, with an added cell after the RK4 answer that rebinds it to the library's solver."""
    nb = nbformat.read(EX02, as_version=4)
    i = _index(nb, "rk4-step")
    nb.cells.insert(i + 1, nbformat.v4.new_code_cell(RK4_FROM_THE_LIBRARY))
    return nb, i + 2


def edited_setup():
    """Exercise 2 solved, with its handed-out setup cell (the first code cell) edited."""
    nb = nbformat.read(EX02, as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells[i].source += BROKEN_SETUP
    return nb, i + 1


def reference(path=EX02):
    return build_exercise(nbformat.read(path, as_version=4))


def test_added_cells_are_told_from_edited_handed_out_cells():
    ref = reference()
    assert learner_cells(ref, ref).added == () and learner_cells(ref, ref).edited == ()
    nb, number = helper_in_its_own_cell()
    cells = learner_cells(nb, ref)
    assert cells.added == ((number - 1, number - 2),) and cells.edited == ()  # after the markdown above it
    nb, number = edited_setup()
    cells = learner_cells(nb, ref)
    assert cells.added == () and cells.edited == ((number - 1, "setup"),)
    assert f"cell {number} (setup) was handed out and edited" in edited_handouts(nb, ref)
    # A notebook saved without cell ids: a cell whose code is a handed-out cell's is that cell.
    for cell in nb.cells:
        cell.pop("id", None)
    nb.cells[number - 1].source = ref.cells[number - 1].source
    assert learner_cells(nb, ref) == learner_cells(ref, ref)
    # An empty or comment-only cell is nothing to run.
    nb.cells.append(nbformat.v4.new_code_cell("# a note\n\n"))
    assert learner_cells(nb, ref).added == ()


def test_an_added_cell_runs_where_it_sits_as_an_answer_cell_does():
    nb, number = helper_in_its_own_cell()
    assembled, warnings = grading.assemble(nb, reference())
    ids = [answer_id(c) for c in assembled.cells]
    at = ids.index(f"added cell {number}")
    assert ids[at + 1] == "rk4-step" and assembled.cells[at].source == RK4_HELPER
    assert warnings == []


def test_an_added_cell_that_uses_what_a_task_asks_for_is_refused_by_name():
    nb, number = library_in_an_added_cell()
    assembled, warnings = grading.assemble(nb, reference())
    (warning,) = warnings
    assert warning.startswith(f"review: added cell {number} uses what a task after it asks"), warning
    assert "nodecourse.odeint" in warning and "a classical Runge-Kutta step" in warning, warning
    cell = next(c for c in assembled.cells if answer_id(c) == f"added cell {number}")
    assert cell.source.startswith(RK4_FROM_THE_LIBRARY) and "rk4_step = _GraderRefused()" in cell.source
    # After every check it can reach no task: nothing there is refused (it runs, and changes no grade).
    nb, _ = library_in_an_added_cell()
    nb.cells.append(nb.cells.pop(number - 1))
    _, warnings = grading.assemble(nb, reference())
    assert warnings == []


def test_an_edited_setup_cell_runs_as_handed_out():
    nb, number = edited_setup()
    ref = reference()
    assembled, warnings = grading.assemble(nb, ref)
    assert len(assembled.cells) == len(ref.cells)
    setup = [(a.source, r.source) for a, r in zip(assembled.cells, ref.cells) if answer_id(r) is None]
    assert all(got == handed_out for got, handed_out in setup)
    (warning,) = warnings
    assert warning.startswith(grading.OUTSIDE_PREFIX) and f"cell {number} (setup)" in warning, warning


def test_the_notebooks_self_check_warns_of_edits_the_grade_does_not_run(tmp_path, recwarn):
    """In JupyterLab the kernel knows its notebook (``__session__``): the self-check reads the saved
    copy and warns of handed-out cells edited, as the grader will; a cell the learner added is what
    the kernel ran and what the grader runs, so it is no warning."""
    from nodecourse.course import tasks

    nb, _ = helper_in_its_own_cell()
    path = write(nb, tmp_path / EX02.name)
    ns = {"__session__": str(path)}
    exec(compile("import torch\n" + RK4_HELPER + RK4_USING_THE_HELPER, "<cells>", "exec"), ns)
    tasks.self_check("02", "rk4-step-matches", ns)  # passes, as the grade does
    assert not [w for w in recwarn if "will not run" in str(w.message)]
    nb, number = edited_setup()
    write(nb, path)
    tasks.self_check("02", "rk4-step-matches", ns)
    texts = [str(w.message) for w in recwarn]
    assert any("the grader will not run your edits" in t and f"cell {number} (setup)" in t for t in texts), texts


@pytest.mark.slow
@pytest.mark.skipif(not sandbox.probe().sandboxed, reason=f"no sandbox here: {sandbox.probe().reason}")
def test_the_grade_runs_added_cells_and_handed_out_setup(tmp_path):
    """Graded in the sandbox: the helper in its own cell gets full marks; the library's RK4 in an added
    cell fails the RK4 checks, saying why; an edited setup cell runs as handed out (full marks), and
    the gradebook's column names it."""
    helper, _ = helper_in_its_own_cell()
    rows, warnings = grading.grade_notebook(write(helper, tmp_path / "a" / EX02.name), seed=3, timeout_s=60)
    assert [r.check for r in rows if not r.passed] == [] and len(rows) == 5, grading.format_table(rows)
    assert [w for w in warnings if not w.startswith("note: ")] == []
    library, number = library_in_an_added_cell()
    rows, warnings = grading.grade_notebook(write(library, tmp_path / "b" / EX02.name), seed=3, timeout_s=60)
    by = {r.check: r for r in rows}
    for check in ("rk4-step-matches", "rk4-order"):
        assert not by[check].passed and "this task asks you to write it" in by[check].reason, by[check]
    assert by["adaptive-loop"].passed and any(f"added cell {number} uses" in w for w in warnings), warnings
    setup, number = edited_setup()
    path = write(setup, tmp_path / f"una-{EX02.name}")
    book = tmp_path / "grades.csv"
    proc = run_cli("grade", str(path), "--gradebook", str(book), "--seed", "3", "--timeout", "60", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli("grade", str(path), "--seed", "3", "--timeout", "60", timeout=600)
    assert proc.returncode == 0 and "5/5 checks pass" in proc.stdout, proc.stdout + proc.stderr
    assert f"cell {number} (setup) was handed out and edited" in proc.stderr, proc.stderr
    with open(book, newline="", encoding="utf-8-sig") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["student"] == "una" and f"cell {number} (setup)" in row["outside_answers"], row
    assert row["passed"] == row["checks"] == "5" and row["error"] == "", row


def test_exercise_one_with_its_solution_in_a_new_cell_is_graded_on_the_new_cell():
    """The case the old warning was written for: the stub left as it is and the solution typed into a
    new cell below it. The new cell now runs after the stub, so the stub's definition is replaced."""
    nb = build_exercise(nbformat.read(EX01, as_version=4))
    index = _index(nb, "euler-step")
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell("def euler_step(f, t, y, h):\n    return y + h * f(t, y)\n"))
    assembled, warnings = grading.assemble(nb, reference(EX01))
    ids = [answer_id(c) for c in assembled.cells]
    assert ids[ids.index("euler-step") + 1] == f"added cell {index + 2}" and warnings == []
