"""`nodecourse grade --gradebook`: a class graded into one CSV keyed by student, resumable, with a summary.

Most tests here use a stand-in for the grading of one submission
(gradebook_fakes.py: what it reports is written in the file), so that the
gradebook's own rules run in seconds: rows keyed by student id, regrading,
history, feedback files, weights, warnings, spreadsheet-safe cells, symlinks,
crashes. The slow tests grade real submissions (class_fixtures.py: a solution,
an unsolved notebook, half-solved ones, attacks; and the routes that crashed a gradebook run).
The 30-submission class the README quotes is the same generator
(``python tests/class_fixtures.py build/class30``).
"""

from __future__ import annotations

import csv
import os
import shutil

import pytest
from gradebook_fakes import CHECKS as FAKE_CHECKS
from gradebook_fakes import EXERCISE, fake_grade, write_submission

from class_fixtures import make_class
from grading_attacks import CHECKS
from nodecourse.course import gradebook, sandbox
from nodecourse.course.feedback import feedback_name
from notebook_fixtures import run_cli

COLUMNS = [f"01:{c}" for c in CHECKS]


def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _by_student(path):
    return {r["student"]: r for r in _rows(path)}


def _grade(files, book, **kw):
    return gradebook.grade_class([str(f) for f in files], book, timeout_s=10, jobs=1, seed=5, grader=fake_grade, **kw)


@pytest.mark.slow
@pytest.mark.skipif(not sandbox.probe().sandboxed, reason=f"no sandbox here: {sandbox.probe().reason}")
def test_a_class_is_graded_with_the_right_totals_and_an_interrupted_run_resumes(tmp_path):
    expected = make_class(tmp_path / "class", size=6)  # one attack, then every plain kind (solved, unsolved...)
    files = sorted(str(p) for p in (tmp_path / "class").glob("*.ipynb"))
    book = tmp_path / "grades.csv"
    proc = run_cli("grade", *files, "--gradebook", str(book), "--timeout", "60", "--seed", "3", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = _rows(book)
    assert sorted(r["submission"] for r in rows) == files  # one row per submission
    assert list(rows[0]) == gradebook.FIXED_BEFORE + COLUMNS + gradebook.FIXED_AFTER
    for r in rows:
        name = r["submission"].rsplit("/", 1)[-1]
        assert int(r["passed"]) == expected[name], (name, r)
        assert float(r["points"]) == expected[name] and float(r["max"]) == 4.0, r
        assert r["isolation"] == "bubblewrap" and r["error"] == ""
        assert sum(r[c] == "pass" for c in COLUMNS) == expected[name]
    assert "euler-step" in proc.stdout and "pass rate" in proc.stdout and "mean points" in proc.stdout

    # interrupted before the last file's row: that one is graded, the others are skipped; a changed file is
    # graded again (each grade starts a kernel: one missing row proves the resume as well as four)
    with open(book, newline="", encoding="utf-8") as fh:
        lines = fh.read().splitlines(keepends=True)
    missing, kept = files[-1], files[:-1]
    book.write_text("".join(line for line in lines if missing not in line), encoding="utf-8")
    shutil.copy(missing, kept[0])  # the first kept submission changed since its row was written
    proc = run_cli("grade", *files, "--gradebook", str(book), "--timeout", "60", "--seed", "3", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"2 submission(s) graded, {len(files) - 2} skipped"), proc.stdout
    before = {r["submission"]: r for r in rows}
    again = {r["submission"]: r for r in _rows(book)}
    assert sorted(again) == files and all(again[f] == before[f] for f in kept[1:])
    assert again[missing]["passed"] == before[missing]["passed"]
    assert again[kept[0]]["passed"] == again[missing]["passed"]


def test_gradebook_errors_name_the_argument(tmp_path, capsys):
    with pytest.raises(gradebook.GradebookError, match="ending in .csv"):
        gradebook.grade_class([], tmp_path / "grades.txt", timeout_s=10)
    with pytest.raises(gradebook.GradebookError, match="does not exist; create it"):
        gradebook.grade_class([], tmp_path / "missing" / "g.csv", timeout_s=10)
    from nodecourse.course import cli

    for flags in (
        ["--jobs", "2"],
        ["--regrade", "alice"],
        ["--roster", "r.csv"],
        ["--per-student", "o.csv"],
        ["--excel"],
    ):
        assert cli.run_grade(cli.build_parser().parse_args(["grade", "x.ipynb", *flags])) == 2
        assert f"{flags[0]} applies to --gradebook" in capsys.readouterr().err
    book = tmp_path / "g.csv"
    book.write_text("submission,other\n", encoding="utf-8")
    with pytest.raises(gradebook.GradebookError, match="no \\['student', 'exercise'\\] columns"):
        _grade([], book)
    assert book.read_text(encoding="utf-8") == "submission,other\n"  # left as it is


# ---------------------------------------------------------------------------
# Student ids
# ---------------------------------------------------------------------------


def test_student_ids_come_from_lms_download_names_by_the_documented_rule(tmp_path):
    names = [EXERCISE, "02_solvers_exercises.ipynb"]
    sid = lambda name: gradebook.student_id(tmp_path / name, names)  # noqa: E731
    assert sid(f"alice-{EXERCISE}") == "alice"
    assert sid(f"alice-{EXERCISE[:-6]} (1).ipynb") == "alice"
    assert sid(f"alice-{EXERCISE[:-6]}-1.ipynb") == "alice"
    assert sid(f"alice_{EXERCISE[:-6]}-Copy2.ipynb") == "alice"
    assert sid(f"Alice Smith_12345_assignsubmission_file_{EXERCISE}") == "Alice Smith"  # Moodle: the name only
    (tmp_path / "bob").mkdir()
    assert gradebook.student_id(tmp_path / "bob" / EXERCISE, names) == "bob"  # a folder per student
    roster = tmp_path / "roster.csv"
    roster.write_text("file,student\nsubmission-7.ipynb,s1234\n", encoding="utf-8")
    table = gradebook.read_roster(roster)
    assert gradebook.student_id(tmp_path / "submission-7.ipynb", names, table) == "s1234"
    assert gradebook.student_id(tmp_path / "other.ipynb", names, table) == ""
    roster.write_text("name,id\n", encoding="utf-8")
    with pytest.raises(gradebook.GradebookError, match="needs 'file'"):
        gradebook.read_roster(roster)


def test_lms_download_names_are_graded_against_their_exercise(tmp_path):
    from nodecourse.course import grading

    for name in (f"alice-{EXERCISE[:-6]} (1).ipynb", f"alice-{EXERCISE[:-6]}-1.ipynb", f"{EXERCISE[:-6]} (2).ipynb"):
        _, ref_name, _ = grading.reference_for(tmp_path / name)
        assert ref_name == EXERCISE, name


# ---------------------------------------------------------------------------
# Rows: added or replaced, never dropped
# ---------------------------------------------------------------------------


def test_grading_one_student_keeps_every_other_row_and_regrade_replaces_only_theirs(tmp_path):
    files = [
        write_submission(tmp_path / f"{s}-{EXERCISE}", passed=list(FAKE_CHECKS[:k]))
        for k, s in enumerate(["ann", "bob", "cat", "dan"])
    ]
    book = tmp_path / "grades.csv"
    _grade(files, book)
    before = _by_student(book)
    assert sorted(before) == ["ann", "bob", "cat", "dan"]
    summary = _grade([files[1]], book)  # one student, unchanged: skipped, nothing dropped
    assert (summary.graded, summary.skipped) == (0, 1) and _by_student(book) == before
    write_submission(files[1], passed=list(FAKE_CHECKS))  # bob resubmits
    summary = _grade([files[1]], book, regrade=["cat"])
    after = _by_student(book)
    assert sorted(after) == sorted(before) and after["bob"]["points"] == "4" and before["bob"]["points"] == "1"
    assert {k: after[k] for k in ("ann", "cat", "dan")} == {k: before[k] for k in ("ann", "cat", "dan")}
    summary = _grade([files[2]], book, regrade=["cat"])  # unchanged file, graded again on request
    assert summary.graded == 1
    history = _rows(tmp_path / "grades.history.csv")
    # cat's regrade gave the same row: recorded once (the history names each change, not each run)
    assert [h["student"] for h in history] == ["ann", "bob", "cat", "dan", "bob"]
    assert [h["points"] for h in history if h["student"] == "bob"] == ["1", "4"]


def test_paths_spelled_two_ways_are_one_student(tmp_path, monkeypatch):
    path = write_submission(tmp_path / "class" / f"eve-{EXERCISE}", passed=["euler-step"])
    book = tmp_path / "grades.csv"
    _grade([path], book)
    monkeypatch.chdir(tmp_path)
    write_submission(path, passed=["euler-step", "euler-order"])
    _grade([os.path.join("class", "..", "class", path.name)], book)
    rows = _rows(book)
    assert [r["student"] for r in rows] == ["eve"] and rows[0]["points"] == "2"


def test_an_lms_second_download_replaces_the_students_row(tmp_path):
    book = tmp_path / "grades.csv"
    _grade([write_submission(tmp_path / f"fay-{EXERCISE}", passed=[])], book)
    _grade([write_submission(tmp_path / f"fay-{EXERCISE[:-6]} (1).ipynb", passed=["euler-step"])], book)
    rows = _rows(book)
    assert [(r["student"], r["points"]) for r in rows] == [("fay", "1")]


def test_two_exercises_in_one_gradebook_each_with_its_own_denominators(tmp_path):
    ex02 = "02_solvers_exercises.ipynb"
    other = {"exercise": ex02, "checks": ["rk4-step-matches", "rk4-order"]}
    files = [
        write_submission(tmp_path / f"ann-{EXERCISE}", passed=["euler-step"]),
        write_submission(tmp_path / f"bob-{EXERCISE}", passed=[]),
        write_submission(tmp_path / f"ann-{ex02}", passed=["rk4-order"], **other),
    ]
    book = tmp_path / "grades.csv"
    _grade(files[:2], book)
    summary = _grade(files[2:], book)  # one student, another exercise: added beside the others
    rows = _rows(book)
    assert [(r["student"], r["exercise"]) for r in rows] == [("ann", EXERCISE), ("bob", EXERCISE), ("ann", ex02)]
    assert rows[0]["02:rk4-order"] == "" and rows[2]["02:rk4-order"] == "pass" and rows[2]["01:euler-step"] == ""
    text = "\n".join(summary.lines())
    assert f"{EXERCISE}: 2 student(s), 2 graded" in text and f"{ex02}: 1 student(s), 1 graded" in text, text
    rates = dict(line.split()[:2] for line in text.splitlines() if line.strip().startswith(("01:", "02:")))
    assert rates["01:euler-step"] == "1/2" and rates["02:rk4-order"] == "1/1" and rates["02:rk4-step-matches"] == "0/1"


def test_weights_and_totals_are_numbers(tmp_path):
    path = write_submission(
        tmp_path / f"gus-{EXERCISE}",
        passed=["euler-step", "euler-order"],
        weights={"euler-step": 2, "euler-order": 0.5, "residual-block": 3},
    )
    book = tmp_path / "grades.csv"
    _grade([path], book)
    (row,) = _rows(book)
    assert float(row["points"]) == 2.5 and float(row["max"]) == 6.5
    assert float(row["total"]) == pytest.approx(100 * 2.5 / 6.5, abs=0.05)
    assert (row["passed"], row["checks"]) == ("2", "4")


def test_every_task_spec_has_a_numeric_weight():
    from nodecourse.course import tasks

    for exercise in tasks.CONVERTED:
        for task in tasks.tasks_for(exercise).values():
            assert isinstance(task.weight, (int, float)) and task.weight > 0, (exercise, task.check)


def test_a_feedback_file_per_student_with_reasons_and_seed(tmp_path):
    files = [write_submission(tmp_path / f"{s}-{EXERCISE}", passed=["euler-step"]) for s in ("hal", "ivy")]
    book = tmp_path / "grades.csv"
    _grade(files, book)
    folder = tmp_path / "grades-feedback"
    hal, ivy = feedback_name("hal"), feedback_name("ivy")  # a slug and a hash of the id: never shared
    assert hal.startswith("hal-") and ivy.startswith("ivy-")
    assert sorted(p.name for p in folder.iterdir()) == sorted([hal, ivy])
    text = (folder / hal).read_text(encoding="utf-8")
    assert "seed: 5" in text and "likely cause: a fake mistake" in text and "| euler-step | pass |" in text
    _grade(files[:1], book, regrade=["hal"])  # a regrade replaces its section, it does not add one
    assert (folder / hal).read_text(encoding="utf-8").count(f"## {EXERCISE}") == 1


def test_code_outside_answer_cells_and_review_flags_have_their_own_columns(tmp_path):
    path = write_submission(
        tmp_path / f"jay-{EXERCISE}",
        warnings=[
            "handed-out cells edited: cell 9 (setup) was handed out and edited; the grader runs it as handed out",
            "review: answer 'euler-step' reaches into the interpreter (gc)",
        ],
    )
    book = tmp_path / "grades.csv"
    _grade([path], book)
    (row,) = _rows(book)
    assert "cell 9" in row["outside_answers"] and "reaches into the interpreter (gc)" in row["review"]


# ---------------------------------------------------------------------------
# A gradebook one submission cannot break
# ---------------------------------------------------------------------------


def test_a_submission_whose_grading_crashes_gets_a_row_and_the_others_go_on(tmp_path):
    files = [
        write_submission(tmp_path / f"{s}-{EXERCISE}", **kw)
        for s, kw in [
            ("kim", {"raise": "OverflowError"}),
            ("lee", {"passed": ["euler-step"]}),
            ("max", {"raise": "MemoryError"}),
            ("ned", {"raise": "TypeError"}),
        ]
    ]
    (tmp_path / f"oli-{EXERCISE}").write_text("not a notebook", encoding="utf-8")
    book = tmp_path / "grades.csv"
    summary = _grade([*files, tmp_path / f"oli-{EXERCISE}"], book)
    rows = _by_student(book)
    assert sorted(rows) == ["kim", "lee", "max", "ned", "oli"]
    for sid, kind in (("kim", "OverflowError"), ("max", "MemoryError"), ("ned", "TypeError")):
        assert kind in rows[sid]["error"] and rows[sid]["points"] == "", rows[sid]  # not graded: never a 0
        assert rows[sid]["status"] == "not graded" and rows[sid]["total"] == "", rows[sid]
    assert rows["lee"]["points"] == "1" and rows["lee"]["error"] == ""
    assert rows["oli"]["error"] and len(summary.errors) == 4  # "oli" is not JSON: the stand-in fails on it
    again = _grade([*files], book)  # rows with an error are graded again on the next run
    assert again.graded == 3 and again.skipped == 1


def test_the_real_grading_of_one_submission_never_raises(tmp_path):
    bad = tmp_path / f"pat-{EXERCISE}"
    bad.write_text("{ not json", encoding="utf-8")
    result = gradebook._grade_one((str(bad), None, 10, 1, None, None))
    assert result["rows"] == [] and "cannot read the notebook" in result["error"], result


def test_a_symlinked_submission_is_refused_by_name(tmp_path):
    target = write_submission(tmp_path / "elsewhere" / EXERCISE, passed=list(FAKE_CHECKS))
    link = tmp_path / f"quinn-{EXERCISE}"
    link.symlink_to(target)
    honest = write_submission(tmp_path / f"ray-{EXERCISE}", passed=["euler-step"])
    book = tmp_path / "grades.csv"
    _grade([link, honest], book)
    rows = _by_student(book)
    assert "symbolic link" in rows["quinn"]["error"] and str(target) in rows["quinn"]["error"]
    assert rows["quinn"]["points"] == "" and rows["ray"]["points"] == "1"


def test_cells_are_safe_in_a_spreadsheet(tmp_path):
    for raw in ('=HYPERLINK("http://x")', "+1", "-1+2", "@SUM(A1)", "\tx", "\rx"):
        assert gradebook.cell_text(raw).startswith("'"), raw
    assert gradebook.cell_text("a\nb\x1b[2J") == "a\\nb\\x1b[2J"
    assert gradebook.cell_text("alice") == "alice" and gradebook.cell_text(2.5) == "2.5"
    nasty = write_submission(tmp_path / f"=HYPERLINK(1)-{EXERCISE}", passed=[])
    newline = write_submission(tmp_path / f"a\nb\x07c-{EXERCISE}", passed=[])
    book = tmp_path / "grades.csv"
    _grade([nasty, newline], book)
    text = book.read_text(encoding="utf-8")
    rows = _rows(book)
    assert {r["student"] for r in rows} == {"'=HYPERLINK(1)", "a\\nb\\x07c"}
    assert all(not v.startswith(("=", "+", "-", "@", "\t", "\r")) for r in rows for v in r.values())
    assert "\x07" not in text and len(text.splitlines()) == 3  # a header and two rows: no raw newline


@pytest.mark.slow
@pytest.mark.skipif(not sandbox.probe().sandboxed, reason=f"no sandbox here: {sandbox.probe().reason}")
def test_real_crash_routes_each_get_a_row_and_the_others_are_graded(tmp_path):
    """Issue 28: an answer returning 10**400 (OverflowError in a judge), a string where a tensor is
    expected (TypeError), a 110 kB expression (MemoryError in the static scan)."""
    import nbformat

    from class_fixtures import SOLUTION
    from nodecourse.course.exercise_builder import answer_id

    solution = nbformat.read(SOLUTION, as_version=4)
    answers = {
        "big-int": "def euler_step(f, t, y, h):\n    return 10 ** 400\n",
        "string": "def euler_step(f, t, y, h):\n    return 'a tensor'\n",
        "huge-expression": "x = " + "-" * 110_000 + "1\n",
    }
    files = []
    for name, source in answers.items():
        nb = nbformat.from_dict(solution)
        nb = nbformat.reads(nbformat.writes(nb), as_version=4)
        for cell in nb.cells:
            if answer_id(cell) == "euler-step":
                cell.source = source
        path = tmp_path / f"{name}-{EXERCISE}"
        nbformat.write(nb, path)
        files.append(path)
    shutil.copy(SOLUTION, tmp_path / f"solved-{EXERCISE}")
    files.append(tmp_path / f"solved-{EXERCISE}")
    book = tmp_path / "grades.csv"
    gradebook.grade_class([str(f) for f in files], book, timeout_s=60, jobs=2, seed=4)
    rows = _by_student(book)
    assert sorted(rows) == ["big-int", "huge-expression", "solved", "string"]
    assert rows["solved"]["points"] == "4" and rows["solved"]["error"] == ""
    for sid in ("big-int", "string", "huge-expression"):
        assert rows[sid]["error"] == "" and rows[sid]["01:euler-step"] == "FAIL", rows[sid]
