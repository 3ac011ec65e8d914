"""`nodecourse nbgrader autograde`: the course's grader as nbgrader's autograde step.

An nbgrader course is built in tmp_path with nbgrader's own layout (nbgrader_config.py, gradebook.db
made by nbgrader's Gradebook, submitted/<student>/<assignment>/ with timestamp.txt), and exercise 1
is graded for real: the solution and a half-solved notebook, in the sandboxed grader.
"""

from __future__ import annotations

import copy
import csv
import datetime
import math
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbgrader")

from nbgrader.api import Gradebook  # noqa: E402

from conftest import subprocess_timeout  # noqa: E402
from nodecourse.course import cli, nbgrader_bridge  # noqa: E402
from nodecourse.course.exercise_builder import answer_id, build_exercise  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
EXERCISE = "01_resnet_as_euler_exercises"
SOLUTION = REPO / "solutions" / f"{EXERCISE}.ipynb"
ASSIGNMENT = "ex1"
DUE = datetime.datetime(2026, 12, 1, 17, 0)  # UTC
POINTS = {"euler-step": 2.0, "residual-block": 3.0}  # the instructor's points; the other checks keep weight 1
LATE_HOURS = 1.5  # alice's lateness; bob is on time
PER_HOUR = 1.0  # the late plugin's points off per started hour

# A late-submission plugin as nbgrader's docs write one: a module in the course folder, named in the config.
LATE_PLUGIN = f"""
import math
from nbgrader.plugins import LateSubmissionPlugin


class PointPerHour(LateSubmissionPlugin):
    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return {PER_HOUR} * math.ceil(total_seconds_late / 3600)
"""


def _step_only():
    """Exercise 1 with only the Euler step answered (the other answers are the unsolved stubs)."""
    solution = nbformat.read(SOLUTION, as_version=4)
    notebook = build_exercise(copy.deepcopy(solution))
    for cell, sol in zip(notebook.cells, solution.cells):
        if answer_id(cell) == "euler-step":
            cell.source = sol.source
    return notebook


def _submit(course: Path, student: str, notebook, when: datetime.datetime) -> None:
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(notebook, folder / f"{EXERCISE}.ipynb")
    (folder / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))  # as nbgrader collect writes it


def _course(root: Path) -> Path:
    course = root / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(
        'c = get_config()\nc.CourseDirectory.course_id = "neural-odes"\n'
        'c.AssignLatePenalties.plugin_class = "late.PointPerHour"\n'
    )
    (course / "late.py").write_text(LATE_PLUGIN)
    (course / "nodecourse_points.toml").write_text(
        f"[{ASSIGNMENT}]\n" + "".join(f'"{c}" = {p:g}\n' for c, p in POINTS.items())
    )
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "neural-odes") as gb:
        gb.add_assignment(ASSIGNMENT, duedate=DUE)
        gb.add_student("alice", first_name="Alice", last_name="Smith", lms_user_id="1001")
        gb.add_student("bob", first_name="Bob", last_name="Doe", lms_user_id="1002")
        gb.add_student("carol", first_name="Carol", last_name="Ruiz", lms_user_id="1003")  # submitted nothing
        gb.add_student("dave", first_name="Dave", last_name="Lee", lms_user_id="1004")
    _submit(course, "alice", nbformat.read(SOLUTION, as_version=4), DUE + datetime.timedelta(hours=LATE_HOURS))
    _submit(course, "bob", _step_only(), DUE - datetime.timedelta(hours=2))
    _submit(course, "dave", nbformat.read(SOLUTION, as_version=4), DUE)
    notebook = course / "submitted" / "dave" / ASSIGNMENT / f"{EXERCISE}.ipynb"
    notebook.write_bytes(notebook.read_bytes()[:500])  # a truncated upload: no grade, never a 0
    return course


AFTER_ONE_AT_A_TIME: dict[str, dict] = {}  # {student: _scores} right after the module's --jobs 1 run


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        # nbgrader runs `alembic` (installed beside it) to stamp a new gradebook.db: the environment's
        # bin/ on PATH, as it is for an instructor with the environment activated
        mp.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
        course = _course(tmp_path_factory.mktemp("nbgrader"))
    results = nbgrader_bridge.autograde(ASSIGNMENT, course, timeout_s=60, seed=7, jobs=1)
    for student in ("alice", "bob"):  # as --jobs 1 left them, before any test regrades or overrides
        AFTER_ONE_AT_A_TIME[student] = _scores(course, student)
    return course, results


def _url(course: Path) -> str:
    return f"sqlite:///{course / 'gradebook.db'}"


def _db(course: Path) -> Gradebook:
    return Gradebook(_url(course), "neural-odes")


def _scores(course: Path, student: str) -> dict[str, tuple]:
    """{check: (auto_score, manual_score, max_score, comment)} of the student's notebook."""
    with _db(course) as gb:
        nb = gb.find_submission_notebook(EXERCISE, ASSIGNMENT, student)
        comments = {c.cell.name: c.auto_comment for c in nb.comments}
        return {g.cell.name: (g.auto_score, g.manual_score, g.max_score, comments[g.cell.name]) for g in nb.grades}


def test_each_check_is_a_grade_with_its_points_and_a_failure_says_why(graded):
    course, results = graded
    assert [(r.student, bool(r.error)) for r in results] == [("alice", False), ("bob", False), ("dave", True)]
    checks = results[0].checks
    assert set(POINTS) < set(checks)
    points = {c: POINTS.get(c, 1.0) for c in checks}  # every check of exercise 1 has task weight 1
    alice, bob = _scores(course, "alice"), _scores(course, "bob")
    assert {c: (a, m) for c, (a, m, _, _) in alice.items()} == {c: (p, None) for c, p in points.items()}
    assert {c: mx for c, (_, _, mx, _) in alice.items()} == points
    assert bob["euler-step"][0] == points["euler-step"]
    failed = {c: v for c, v in bob.items() if c != "euler-step"}
    assert failed and all(auto == 0.0 for auto, _, _, _ in failed.values())
    assert all(comment and comment != "passed" and "seed 7" in comment for *_, comment in failed.values())
    assert results[1].points == points["euler-step"] and results[0].points == sum(points.values())
    dave = _scores(course, "dave")
    assert set(dave) == set(points) and all(auto is None for auto, *_ in dave.values())
    assert all(
        comment.startswith(nbgrader_bridge.NOT_GRADED) and "cannot read" in comment for *_, comment in dave.values()
    )


def test_formgrader_and_feedback_read_the_grades_from_the_autograded_notebook(graded):
    """nbgrader's GetGrades (what formgrader's submission view and generate_feedback run) finds each
    check's score and comment through the autograded notebook; the learner's own cells pose as none."""
    from nbgrader.preprocessors import GetGrades

    course, results = graded
    path = course / "autograded" / "bob" / ASSIGNMENT / f"{EXERCISE}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    graded_cells = [c for c in notebook.cells if "nbgrader" in c.metadata]
    assert [c.metadata.nbgrader.grade_id for c in graded_cells] == list(results[1].checks)
    resources = {"nbgrader": {"notebook": EXERCISE, "assignment": ASSIGNMENT, "student": "bob", "db_url": _url(course)}}
    notebook, resources = GetGrades().preprocess(notebook, resources)
    shown = {c.metadata.nbgrader.grade_id: c.metadata.nbgrader for c in notebook.cells if "nbgrader" in c.metadata}
    bob = _scores(course, "bob")
    assert {k: (v["score"], v["points"], v["comment"]) for k, v in shown.items()} == {
        k: (m if m is not None else a, mx, comment) for k, (a, m, mx, comment) in bob.items()
    }
    assert resources["nbgrader"]["score"] == pytest.approx(sum(v["score"] for v in shown.values()))


def test_a_formgrader_override_survives_a_regrade(graded):
    course, _ = graded
    with _db(course) as gb:  # what formgrader's grade API does on a manual score
        grade = gb.find_grade("residual-block", EXERCISE, ASSIGNMENT, "bob")
        grade.manual_score = 1.5
        gb.db.commit()
    results = nbgrader_bridge.autograde(ASSIGNMENT, course, students=["bob"], timeout_s=60, seed=8)
    assert [r.student for r in results] == ["bob"] and not results[0].error
    bob = _scores(course, "bob")
    assert bob["residual-block"][:2] == (0.0, 1.5)  # auto rewritten, the override kept
    assert "seed 8" in bob["residual-block"][3]
    with _db(course) as gb:
        assert gb.find_submission(ASSIGNMENT, "bob").score == pytest.approx(bob["euler-step"][0] + 1.5)


def test_canvas_export_one_row_per_student_with_the_late_penalty(graded, tmp_path):
    course, results = graded
    out = tmp_path / "canvas.csv"
    with _db(course) as gb:
        nbgrader_bridge.CanvasExportPlugin(to=str(out), assignment=[ASSIGNMENT]).export(gb)
        bob_score = gb.find_submission(ASSIGNMENT, "bob").score  # with any override the other test made
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["Student", "ID", "SIS User ID", "Section", ASSIGNMENT]
    by_id = {r[2]: r for r in rows[1:]}
    assert len(rows) == 5 and sorted(by_id) == ["alice", "bob", "carol", "dave"]
    assert by_id["alice"][:2] == ["Smith, Alice", "1001"]
    penalty = PER_HOUR * math.ceil(LATE_HOURS)
    assert float(by_id["alice"][4]) == pytest.approx(results[0].points - penalty)
    assert float(by_id["bob"][4]) == pytest.approx(bob_score)  # on time: no penalty
    assert by_id["carol"][4] == by_id["dave"][4] == ""  # no submission, or not gradable: empty, never a 0


def test_nbgrader_export_loads_the_plugin(graded, tmp_path):
    course, _ = graded
    out = tmp_path / "via-nbgrader.csv"
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", "export", "--exporter", f"{nbgrader_bridge.__name__}.CanvasExportPlugin"]
        + ["--to", str(out)],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=subprocess_timeout(),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.read_text(encoding="utf-8").splitlines()[0] == "Student,ID,SIS User ID,Section,ex1"


def test_wrong_arguments_are_named(graded, tmp_path, capsys):
    course, _ = graded
    with pytest.raises(nbgrader_bridge.BridgeError, match="--course-dir"):
        nbgrader_bridge.autograde(ASSIGNMENT, tmp_path / "nowhere")
    with pytest.raises(nbgrader_bridge.BridgeError, match="--course-dir .*no gradebook"):
        nbgrader_bridge.autograde(ASSIGNMENT, tmp_path)
    with pytest.raises(nbgrader_bridge.BridgeError, match=r"--student alcie.*did you mean 'alice'"):
        nbgrader_bridge.autograde(ASSIGNMENT, course, students=["alcie"])
    assert cli.main(["nbgrader", "autograde", "ex9", "--course-dir", str(course)]) == 2
    err = capsys.readouterr().err
    assert "ASSIGNMENT 'ex9' is not in the gradebook" in err and "'ex1'" in err
    (tmp_path / "nodecourse_points.toml").write_text('[ex1]\neuler-step = "two"\n')
    with pytest.raises(nbgrader_bridge.BridgeError, match="euler-step"):
        nbgrader_bridge.read_points(tmp_path, "ex1")


def test_two_at_once_write_the_same_gradebook_and_name_the_broken_submission(graded, tmp_path):
    """--jobs 2: the class runner of `nodecourse grade --gradebook` grades two at once, the parent alone
    writes gradebook.db; every score and comment is the one --jobs 1 wrote, and dave's truncated
    upload is named by his id while alice and bob are graded."""
    _, results_1 = graded
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
        course_2 = _course(tmp_path)
    results_2 = nbgrader_bridge.autograde(ASSIGNMENT, course_2, timeout_s=60, seed=7, jobs=2)
    assert [(r.student, r.points, r.max_points, bool(r.error)) for r in results_2] == [
        (r.student, r.points, r.max_points, bool(r.error)) for r in results_1
    ]
    assert [r.student for r in results_2] == ["alice", "bob", "dave"]  # the ids' order, not the order they ended
    for student in ("alice", "bob"):
        assert _scores(course_2, student) == AFTER_ONE_AT_A_TIME[student]
    dave = results_2[-1]
    assert dave.error and dave.points == 0 and "dave" not in {r.student for r in results_2 if not r.error}
    with _db(course_2) as gb:
        comments = [c.auto_comment for c in gb.find_submission_notebook(EXERCISE, ASSIGNMENT, "dave").comments]
    assert comments and all(c.startswith(nbgrader_bridge.NOT_GRADED) for c in comments)


@pytest.mark.parametrize("jobs", [0, -2])
def test_jobs_below_one_are_refused_naming_the_flag(graded, jobs, capsys):
    course, _ = graded
    with pytest.raises(nbgrader_bridge.BridgeError, match=rf"--jobs {jobs}: give a positive number.*--jobs 2"):
        nbgrader_bridge.autograde(ASSIGNMENT, course, jobs=jobs)
    with pytest.raises(SystemExit) as stop:
        cli.main(["nbgrader", "autograde", ASSIGNMENT, "--course-dir", str(course), f"--jobs={jobs}"])
    assert stop.value.code == 2
    assert "argument --jobs" in capsys.readouterr().err
