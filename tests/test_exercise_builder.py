"""The exercise builder: stubs, no outputs (the reference holds the checks' PASS lines), a
learner's answers never overwritten, clear errors, byte-for-byte determinism, and the
committed exercises equal a fresh build of the committed solutions."""

from __future__ import annotations

import copy

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output

from nodecourse.course import exercise_builder as eb
from nodecourse.course.paths import find_course_root
from notebook_fixtures import REPO, answer_cell, check_cell, run_cli, solution_notebook, write


def _cells(nb, role):
    return [c for c in nb.cells if c.metadata.get("nodecourse", {}).get(role)]


def test_solution_regions_become_stubs_at_their_indentation():
    exercise = eb.build_exercise(solution_notebook(), name="fx")
    double, square = _cells(exercise, "answer")
    assert double.source == (
        'def double(x):\n    """Twice x."""\n'
        "    raise NotImplementedError(\"task 'double': replace this line with your code\")"
    )
    assert "x * x" not in square.source and square.source.count("NotImplementedError") == 1
    assert all(c.outputs == [] and c.execution_count is None for c in _cells(exercise, "answer"))


def test_top_level_and_multiple_regions():
    src = (
        "a = 1\n### BEGIN SOLUTION\nb = 2\n### END SOLUTION\nfor i in range(2):\n"
        "        ### BEGIN SOLUTION extra words are fine\n        pass\n        ### END SOLUTION"
    )
    out = eb.strip_solutions(src, task="t", where="w")
    assert out.split("\n") == [
        "a = 1",
        eb.stub_line("", "t"),
        "for i in range(2):",
        eb.stub_line("        ", "t"),
    ]


def test_exercise_has_no_outputs_even_when_the_solution_was_saved_run():
    solution = solution_notebook()
    # a saved solution may split a line into several stream chunks and carry a warning
    solution.cells[3].outputs = [
        new_output("stream", name="stdout", text="PASS dou"),
        new_output("stream", name="stderr", text="UserWarning: noise\n"),
        new_output("stream", name="stdout", text="ble\n"),
    ]
    unrun = copy.deepcopy(solution)
    for cell in _cells(unrun, "check"):
        cell.outputs, cell.execution_count = [], None
    exercise = eb.build_exercise(solution, name="fx")
    # a learner never sees PASS under a task still raising NotImplementedError
    for cell in exercise.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell
    assert '"PASS ' not in eb.notebook_text(exercise)
    # running the solution before building changes nothing
    assert eb.notebook_text(eb.build_exercise(unrun, name="fx")) == eb.notebook_text(exercise)
    setup = exercise.cells[1]
    assert "execution" not in setup.metadata
    assert solution.cells[1].outputs, "the solution itself must not be modified"


def test_committed_exercises_ship_without_outputs():
    exercises = sorted((REPO / "exercises").glob("*.ipynb"))
    if not exercises:
        pytest.skip("no exercises built yet")
    for path in exercises:
        nb = nbformat.read(path, as_version=4)
        with_output = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.outputs]
        assert not with_output, f"{path.name}: cells {with_output} ship with outputs"


def _answer(nb, task, source):
    for cell in nb.cells:
        if cell.metadata.get("nodecourse", {}).get("answer") == task:
            cell.source = source
    return nb


@pytest.mark.slow
def test_build_never_overwrites_a_learners_answers_and_names_the_cells(tmp_path):
    sol_dir, ex_dir = tmp_path / "solutions", tmp_path / "exercises"
    write(solution_notebook(), sol_dir / "fx.ipynb")
    eb.build(sol_dir, ex_dir)
    # the learner solves 'double' and adds a scratch cell; then the solution changes upstream
    learner = nbformat.read(ex_dir / "fx.ipynb", as_version=4)
    _answer(learner, "double", "def double(x):\n    return x + x")
    learner.cells.insert(3, new_code_cell("print(double(21))  # trying it out"))
    write(learner, ex_dir / "fx.ipynb")
    mine = (ex_dir / "fx.ipynb").read_bytes()
    nb = nbformat.read(sol_dir / "fx.ipynb", as_version=4)
    nb.cells[0].source += " Edited."
    nbformat.write(nb, sol_dir / "fx.ipynb")

    checked = eb.build(sol_dir, ex_dir, check=True)
    assert checked.stale == [] and list(checked.kept) == [ex_dir / "fx.ipynb"]
    assert checked.kept[ex_dir / "fx.ipynb"] == ["answer 'double'", "added cell 3"]
    assert not checked.up_to_date
    report = eb.build(sol_dir, ex_dir)
    assert report.written == [] and (ex_dir / "fx.ipynb").read_bytes() == mine
    line = next(ln for ln in report.lines() if ln.startswith("ANSWERS"))
    assert "answer 'double'" in line and "NOT overwritten" in line and "fx-Copy1.ipynb" in line

    proc = run_cli("build", "--solutions", str(sol_dir), "--exercises", str(ex_dir))
    assert proc.returncode == 1 and "NOT overwritten" in proc.stdout, proc.stdout + proc.stderr
    assert (ex_dir / "fx.ipynb").read_bytes() == mine
    proc = run_cli("build", "--check", "--solutions", str(sol_dir), "--exercises", str(ex_dir))
    assert proc.returncode == 1 and "ANSWERS" in proc.stdout and "STALE" not in proc.stdout, proc.stdout

    # following the advice: move it aside (the grader's name for a copy), rebuild, nothing lost
    (ex_dir / "fx.ipynb").rename(ex_dir / "fx-Copy1.ipynb")
    again = eb.build(sol_dir, ex_dir)
    assert again.written == [ex_dir / "fx.ipynb"] and again.orphans == []
    assert (ex_dir / "fx-Copy1.ipynb").read_bytes() == mine


def test_build_never_discards_executed_outputs_and_an_unreadable_one_is_kept(tmp_path):
    """Issue 28: an exercise that was run but not edited was called STALE and overwritten, its
    executed outputs gone. It is kept now, the outputs named, a copy offered."""
    sol_dir, ex_dir = tmp_path / "solutions", tmp_path / "exercises"
    write(solution_notebook(), sol_dir / "fx.ipynb")
    eb.build(sol_dir, ex_dir)
    ran = nbformat.read(ex_dir / "fx.ipynb", as_version=4)
    ran.cells[1].outputs = [new_output("stream", name="stdout", text="setup done\n")]
    ran.cells[1].execution_count = 1
    write(ran, ex_dir / "fx.ipynb")
    mine = (ex_dir / "fx.ipynb").read_bytes()
    for check in (True, False):
        report = eb.build(sol_dir, ex_dir, check=check)
        assert report.stale == [] and report.written == [], report
        assert report.kept == {ex_dir / "fx.ipynb": ["the outputs of 1 executed cell(s): 1"]}, report.kept
        text = "\n".join(report.lines())
        assert "executed cell" in text and "fx-Copy1.ipynb" in text, text
    assert (ex_dir / "fx.ipynb").read_bytes() == mine
    ran.cells[1].outputs, ran.cells[1].execution_count = [], None  # cleared by the learner: nothing to lose
    write(ran, ex_dir / "fx.ipynb")
    report = eb.build(sol_dir, ex_dir)
    assert report.kept == {}

    (ex_dir / "fx.ipynb").write_text("{ half a notebook", encoding="utf-8")
    report = eb.build(sol_dir, ex_dir)
    assert report.kept == {ex_dir / "fx.ipynb": []} and report.written == []
    assert (ex_dir / "fx.ipynb").read_text(encoding="utf-8") == "{ half a notebook"
    assert "cannot be read as a notebook" in "\n".join(report.lines())


@pytest.mark.slow
def test_build_is_deterministic_and_check_mode_finds_stale_missing_orphan(tmp_path):
    sol_dir, ex_dir = tmp_path / "solutions", tmp_path / "exercises"
    write(solution_notebook(), sol_dir / "a.ipynb")
    write(solution_notebook(), sol_dir / "b.ipynb")
    first = eb.build(sol_dir, ex_dir)
    assert sorted(p.name for p in first.written) == ["a.ipynb", "b.ipynb"]
    snapshot = (ex_dir / "a.ipynb").read_bytes()
    again = eb.build(sol_dir, ex_dir)
    assert again.written == [] and len(again.unchanged) == 2
    assert (ex_dir / "a.ipynb").read_bytes() == snapshot
    assert eb.build(sol_dir, ex_dir, check=True).up_to_date

    # edit a solution's check text: the exercise is now stale; delete b's exercise; add an orphan
    nb = nbformat.read(sol_dir / "a.ipynb", as_version=4)
    nb.cells[0].source += " Edited."
    nbformat.write(nb, sol_dir / "a.ipynb")
    (ex_dir / "b.ipynb").unlink()
    write(solution_notebook(), ex_dir / "old.ipynb")
    report = eb.build(sol_dir, ex_dir, check=True)
    assert [p.name for p in report.stale] == ["a.ipynb"]
    assert [p.name for p in report.missing] == ["b.ipynb"]
    assert [p.name for p in report.orphans] == ["old.ipynb"]
    assert not report.up_to_date
    assert (ex_dir / "a.ipynb").read_bytes() == snapshot, "--check must not write"

    proc = run_cli("build", "--check", "--solutions", str(sol_dir), "--exercises", str(ex_dir))
    assert proc.returncode == 1 and "STALE" in proc.stdout and "MISSING" in proc.stdout, proc.stdout
    proc = run_cli("build", "--solutions", str(sol_dir), "--exercises", str(ex_dir))
    assert proc.returncode == 0, proc.stderr
    assert (ex_dir / "a.ipynb").read_bytes() != snapshot
    assert eb.build(sol_dir, ex_dir, check=True).orphans  # the orphan is reported, not deleted


def _with_cell(cell, index=2):
    nb = solution_notebook()
    nb.cells.insert(index, cell)
    return nb


def _replace(nb, i, cell):
    nb = copy.deepcopy(nb)
    nb.cells[i] = cell
    return nb


BROKEN = {
    "markers without an answer id": (
        _with_cell(new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")),
        "but no answer id",
    ),
    "BEGIN never closed": (_with_cell(answer_cell("t", "### BEGIN SOLUTION\nx = 1")), "never closed"),
    "END without BEGIN": (_with_cell(answer_cell("t", "x = 1\n### END SOLUTION")), "without a matching"),
    "nested BEGIN": (
        _with_cell(answer_cell("t", "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION")),
        "is not closed",
    ),
    "answer without a region": (_with_cell(answer_cell("t", "x = 1")), "would ship the solution"),
    "duplicate answer id": (
        _with_cell(answer_cell("double", "### BEGIN SOLUTION\n### END SOLUTION"), 4),
        "already used",
    ),
    "check named differently from its id": (
        _replace(solution_notebook(), 3, check_cell("double", "check('twice', True)", passed_output=False)),
        "must call check('double', ...)",
    ),
    "check that printed more than its PASS line": (
        _replace(
            solution_notebook(),
            3,
            new_code_cell(
                "# NBVAL_CHECK_OUTPUT\nprint(42)\ncheck('double', True)",
                metadata={"nodecourse": {"check": "double"}},
                outputs=[new_output("stream", name="stdout", text="42\nPASS double\n")],
            ),
        ),
        "expects exactly 'PASS double' on stdout",
    ),
    "check without the nbval marker": (
        _replace(
            solution_notebook(), 3, new_code_cell("check('double', True)", metadata={"nodecourse": {"check": "double"}})
        ),
        "must start with the line '# NBVAL_CHECK_OUTPUT'",
    ),
    "check before any answer": (_with_cell(check_cell("early", "check('early', True)"), 1), "before any answer"),
    "check that failed in the solution": (
        _replace(
            solution_notebook(),
            3,
            new_code_cell(
                "# NBVAL_CHECK_OUTPUT\ncheck('double', False)",
                metadata={"nodecourse": {"check": "double"}},
                outputs=[new_output("error", ename="CheckFailed", evalue="FAIL double", traceback=[])],
            ),
        ),
        "failed when the solution was run (CheckFailed: FAIL double)",
    ),
    "marker in markdown": (_with_cell(new_markdown_cell("### BEGIN SOLUTION")), "markdown cell contains"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_malformed_solution_gives_a_clear_error(case):
    nb, message = BROKEN[case]
    with pytest.raises(eb.ExerciseFormatError, match=r"fx\.ipynb.*") as info:
        eb.build_exercise(nb, name="fx.ipynb")
    assert message in str(info.value)


def test_committed_exercises_equal_a_fresh_build():
    """The repository's exercises/ is exactly what `nodecourse build` makes from solutions/."""
    solutions = sorted((REPO / "solutions").glob("*.ipynb"))
    if not solutions:
        pytest.skip("no solution notebooks in solutions/ yet")
    report = eb.build(REPO / "solutions", REPO / "exercises", check=True)
    assert report.up_to_date, "\n".join(report.lines())
    assert len(report.unchanged) == len(solutions)


def test_find_course_root(tmp_path):
    assert find_course_root(REPO / "nodecourse") == REPO
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "nodecourse"\n')
    (tmp_path / "deep" / "er").mkdir(parents=True)
    assert find_course_root(tmp_path / "deep" / "er") == tmp_path


def test_exercise5_task3_text_and_check_agree_about_the_final_gap():
    """The check's data has observations at the horizon, so the task must say to evolve to
    the horizon only across a positive gap (a zero-length odeint interval is an error).
    The data comes from the task spec (exercise 5 is converted), for every seed."""
    from nodecourse.course.tasks import get_task
    from nodecourse.course.tasks.spec import make_inputs

    nb = nbformat.read(REPO / "solutions" / "05_latent_odes_exercises.ipynb", as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if eb.answer_id(c) == "odernn-encode")
    text = " ".join(nb.cells[index - 1].source.split())
    assert "only if there is a positive gap" in text and "skip that solve" in text, text
    check = next(c for c in nb.cells if eb.check_id(c) == "odernn-encode-matches")
    assert 'self_check("05", "odernn-encode-matches"' in check.source
    for seed in range(20):
        mask = make_inputs(get_task("05", "odernn-encode-matches"), seed)["mask"]
        assert mask[:, -1].sum() > 0, "the check's data no longer has an observation at the horizon"
        assert mask[:, 0].sum() == 0


@pytest.mark.slow
def test_any_change_is_the_learners_work_notes_and_setup_helpers_included(tmp_path):
    """Issue 20: a note added to a markdown cell and a helper added to the setup cell were
    overwritten (only answer cells counted). Any change to a cell is now work; --check names it."""
    sol_dir, ex_dir = tmp_path / "solutions", tmp_path / "exercises"
    write(solution_notebook(), sol_dir / "fx.ipynb")
    eb.build(sol_dir, ex_dir)
    learner = nbformat.read(ex_dir / "fx.ipynb", as_version=4)
    learner.cells[0].source += "\n\nMy note: Euler is first order."
    learner.cells[1].source += "\n\ndef helper(x):\n    return x"
    learner.cells.append(new_markdown_cell(""))  # an empty new cell holds nothing to lose
    write(learner, ex_dir / "fx.ipynb")
    mine = (ex_dir / "fx.ipynb").read_bytes()
    nb = nbformat.read(sol_dir / "fx.ipynb", as_version=4)
    nb.cells[0].source += " Edited upstream."
    nbformat.write(nb, sol_dir / "fx.ipynb")

    checked = eb.build(sol_dir, ex_dir, check=True)
    assert checked.kept == {ex_dir / "fx.ipynb": ["markdown cell 0 edited", "setup cell 1 edited"]}
    assert eb.build(sol_dir, ex_dir).written == [] and (ex_dir / "fx.ipynb").read_bytes() == mine
    proc = run_cli("build", "--check", "--solutions", str(sol_dir), "--exercises", str(ex_dir))
    assert proc.returncode == 1 and "markdown cell 0 edited, setup cell 1 edited" in proc.stdout, proc.stdout

    # an exercise built before builds recorded their cells: any difference from a fresh build is work
    legacy = nbformat.read(ex_dir / "fx.ipynb", as_version=4)
    del legacy.metadata["nodecourse"]
    write(legacy, ex_dir / "fx.ipynb")
    assert eb.build(sol_dir, ex_dir, check=True).kept[ex_dir / "fx.ipynb"] == [
        "markdown cell 0 edited",
        "setup cell 1 edited",
    ]


def test_a_build_records_each_cell_so_an_untouched_older_build_is_stale():
    built = eb.build_exercise(solution_notebook(), name="fx.ipynb")
    record = built.metadata["nodecourse"]["built"]
    assert record == {c["id"]: eb.cell_digest(c) for c in built.cells}
    assert eb.learner_work(built, built) == []
