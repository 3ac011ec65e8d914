"""nbgrader's autograde step, done by the course's grader: ``nodecourse nbgrader autograde ASSIGNMENT``.

An nbgrader course (``nbgrader_config.py``, ``gradebook.db``, ``submitted/<student>/<assignment>/``,
filled by nbgrader's exchange: release, fetch, submit, collect) keeps everything nbgrader does
(students from the hub, formgrader's manual grading and overrides, late penalties, feedback release,
export); this module replaces only ``nbgrader autograde``. Each submitted notebook is graded by
:func:`nodecourse.course.grading.grade_notebook` (its own sandboxed kernel, task inputs from a seed
drawn for the run) and every check becomes one grade in nbgrader's gradebook:

- the assignment's notebook gets one grade cell and one solution cell per check, both named by the
  check id (nbgrader's shape of a cell that is graded and commented on); ``max_score`` is the check's
  points: ``nodecourse_points.toml`` in the course folder (``[ASSIGNMENT]`` table, ``check = points``)
  or, for a check it does not name, the task spec's ``weight``;
- a check that passes gets its points as ``auto_score``, a failing one 0, and its reason (the
  symptom, then the likely cause) as the ``auto_comment``. Only ``auto_score`` and ``auto_comment``
  are written, so a score set in formgrader (``manual_score``) stays the grade after any regrade;
- the submission's time is nbgrader's ``timestamp.txt`` beside it, and the late penalty is nbgrader's
  own :class:`~nbgrader.preprocessors.AssignLatePenalties` with the plugin ``nbgrader_config.py``
  configures (``c.AssignLatePenalties.plugin_class``, ``c.LateSubmissionPlugin.penalty_method``);
- ``autograded/<student>/<assignment>/`` gets the learner's notebook with one cell per check after
  it (:func:`write_autograded`): what formgrader's grading view and ``nbgrader generate_feedback`` read;
- a submission that cannot be graded keeps its earlier scores (none, the first time: formgrader then
  lists it as needing a grade) and says why in every comment.

:class:`CanvasExportPlugin` is an nbgrader export plugin (``nbgrader export --exporter
nodecourse.course.nbgrader_bridge.CanvasExportPlugin --to canvas.csv``): one row per student with
the columns Canvas's gradebook import reads.

Why this module is long: it is the one module that imports nbgrader, and it holds the whole of what replaces
``nbgrader autograde`` (points, grade cells, the gradebook's writes, the autograded notebook, late penalties)
and the export plugin, which an nbgrader command names by this module's dotted path
(``nodecourse.course.nbgrader_bridge.CanvasExportPlugin``).
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import secrets
import shutil
import signal
import sys
import time
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, NamedTuple, Sequence

try:
    from nbgrader.api import Comment, Grade, Gradebook, MissingEntry, SubmittedNotebook
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.plugins import ExportPlugin
    from nbgrader.preprocessors import AssignLatePenalties
    from nbgrader.utils import find_all_files
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader
except ImportError as exc:  # the optional extra of a class on a hub
    raise ImportError(
        "the nbgrader bridge needs nbgrader, which is not installed; pip install 'nodecourse[class]'"
    ) from exc

POINTS_FILE = "nodecourse_points.toml"
CONFIG_FILE = "nbgrader_config.py"
NOT_GRADED = "not graded by the latest autograde run"


class BridgeError(ValueError):
    """The course folder, the assignment, a student id or the points file cannot be used (the
    message names the argument and the fix)."""


@dataclass
class Graded:
    """One submitted notebook after an autograde run."""

    student: str
    notebook: str  # nbgrader's notebook name (the file's stem)
    points: float  # the auto scores written (0 when not graded)
    max_points: float
    seconds: float
    error: str = ""  # why it could not be graded ("" when it was)
    warnings: list[str] = field(default_factory=list)
    checks: tuple[str, ...] = ()  # the reference's check ids (its grade cells)


# ---------------------------------------------------------------------------
# The course folder, its configuration and the points
# ---------------------------------------------------------------------------


def course_config(course_dir: Path) -> Config:
    """The traitlets configuration of ``course_dir/nbgrader_config.py`` (empty without one), with
    ``CourseDirectory.root`` set to ``course_dir``."""
    config = Config()
    if (course_dir / CONFIG_FILE).is_file():
        config.merge(PyFileConfigLoader(CONFIG_FILE, path=str(course_dir)).load_config())
    config.CourseDirectory.root = str(course_dir)
    return config


@contextlib.contextmanager
def _course_on_path(course_dir: Path) -> Iterator[None]:
    """A late-submission plugin named in the config (``late.SubMarks``, as nbgrader's docs write it)
    is a module in the course folder: importable while the course is graded."""
    sys.path.insert(0, str(course_dir))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(course_dir))


def read_points(course_dir: Path, assignment: str) -> dict[str, float]:
    """``{check: points}`` of ``assignment`` from ``course_dir/nodecourse_points.toml`` (``{}`` without
    the file or its table)."""
    path = course_dir / POINTS_FILE
    if not path.is_file():
        return {}
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get(assignment, {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BridgeError(f"{path}: not valid TOML ({exc}); fix the line it names") from exc
    if not isinstance(table, dict):
        raise BridgeError(f"{path}: [{assignment}] must be a table of check = points lines")
    points = {}
    for check, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise BridgeError(f"{path}: [{assignment}] {check} = {value!r}; give a number of points >= 0")
        points[str(check)] = float(value)
    return points


def check_points(reference, configured: dict[str, float]) -> dict[str, float]:
    """``{check: points}`` of a reference exercise, in notebook order: ``configured`` where it names
    the check, else the task spec's ``weight`` (1 for a check cell not converted to a task spec)."""
    from nodecourse.course import grading, tasks
    from nodecourse.course.exercise_builder import check_id

    specs = grading.task_specs(reference)
    code_cells = [c for c in reference.cells if c.cell_type == "code"]
    points = {}
    for num, cell in enumerate(code_cells):
        check = check_id(cell)
        if check is not None:
            default = float(tasks.get_task(*specs[num]).weight) if num in specs else 1.0
            points[check] = configured.get(check, default)
    return points


def _submissions(coursedir: CourseDirectory, assignment: str) -> dict[str, list[Path]]:
    """``{student: [notebook, ...]}`` of ``submitted/<student>/<assignment>/*.ipynb``."""
    pattern = Path(coursedir.format_path(coursedir.submitted_directory, "*", assignment))
    found: dict[str, list[Path]] = {}
    for folder in sorted(pattern.parent.parent.glob(f"*/{pattern.name}")):
        if folder.is_dir():
            found[folder.parent.name] = sorted(p for p in folder.glob("*.ipynb") if p.is_file())
    return found


def _chosen(found: dict[str, list[Path]], students: Sequence[str], assignment: str) -> list[str]:
    if not students:
        return sorted(found)
    unknown = [s for s in students if s not in found]
    if unknown:
        hints = []
        for s in unknown:
            close = difflib.get_close_matches(s, list(found), n=3)
            hints.append(f"{s!r}: " + (f"did you mean {', '.join(map(repr, close))}?" if close else "no id like it"))
        raise BridgeError(
            f"--student {', '.join(unknown)}: no submission of {assignment!r} by that id ({'; '.join(hints)}); "
            f"the ids are the folders of submitted/ ({len(found)} for {assignment!r})"
        )
    return list(dict.fromkeys(students))


# ---------------------------------------------------------------------------
# Writing into nbgrader's gradebook
# ---------------------------------------------------------------------------


def _sync_cells(gb: Gradebook, assignment: str, notebook: str, points: dict[str, float]) -> None:
    """The notebook's grade and solution cells, one pair per check, with its points as max_score."""
    gb.update_or_create_notebook(notebook, assignment)
    for check, pts in points.items():
        gb.update_or_create_grade_cell(check, notebook, assignment, max_score=pts, cell_type="code")
        gb.update_or_create_solution_cell(check, notebook, assignment)


def _submitted_notebook(gb: Gradebook, notebook: str, assignment: str, student: str) -> SubmittedNotebook:
    """The student's submitted notebook, made when the assignment gained it after the submission."""
    try:
        return gb.find_submission_notebook(notebook, assignment, student)
    except MissingEntry:
        nb = SubmittedNotebook(
            notebook=gb.find_notebook(notebook, assignment), assignment=gb.find_submission(assignment, student)
        )
        gb.db.add(nb)
        gb.db.commit()
        return nb


def _grade_and_comment(gb: Gradebook, nb: SubmittedNotebook, check: str, assignment: str) -> tuple[Grade, Comment]:
    """The (grade, comment) of one check of a submitted notebook, made when the check is new."""
    cells = {
        "grade": gb.find_grade_cell(check, nb.notebook.name, assignment),
        "comment": gb.find_solution_cell(check, nb.notebook.name, assignment),
    }
    grade = next((g for g in nb.grades if g.cell_id == cells["grade"].id), None)
    comment = next((c for c in nb.comments if c.cell_id == cells["comment"].id), None)
    if grade is None:
        grade = Grade(cell_id=cells["grade"].id, notebook=nb)
        gb.db.add(grade)
    if comment is None:
        comment = Comment(cell_id=cells["comment"].id, notebook=nb)
        gb.db.add(comment)
    return grade, comment


def write_grades(
    gb: Gradebook,
    assignment: str,
    student: str,
    notebook: str,
    points: dict[str, float],
    rows: Sequence | None,
    error: str = "",
    seed: int | None = None,
) -> float:
    """Write one graded notebook into the gradebook; returns the auto points written.

    ``rows``: the grader's :class:`~nodecourse.course.grading.CheckRow` list (None with ``error``:
    the earlier scores stay, every comment says why this run gave none)."""
    nb = _submitted_notebook(gb, notebook, assignment, student)
    by_check = {r.check: r for r in rows or ()}
    total = 0.0
    for check, pts in points.items():
        grade, comment = _grade_and_comment(gb, nb, check, assignment)
        if rows is None:
            comment.auto_comment = f"{NOT_GRADED}: {error}"
            continue
        row = by_check.get(check)
        passed = row is not None and row.passed
        grade.auto_score = pts if passed else 0.0
        grade.needs_manual_grade = False
        total += grade.auto_score
        if passed:
            comment.auto_comment = "passed"
        else:
            why = row.reason if row is not None else "the check did not run"
            comment.auto_comment = why + (f" (inputs of seed {seed})" if seed is not None else "")
    gb.db.commit()
    return total


def write_autograded(
    coursedir: CourseDirectory, student: str, assignment: str, nb_path: Path, points: dict[str, float], rows
) -> Path:
    """nbgrader's ``autograded/<student>/<assignment>/<notebook>.ipynb``, what formgrader shows and
    ``nbgrader generate_feedback`` reads: the learner's cells (outputs cleared: the grader ran its own
    copy, not these; any ``nbgrader`` metadata dropped, so no cell of theirs poses as a graded one),
    then one markdown cell per check carrying nbgrader's metadata of a graded, commented cell (its
    ``grade_id`` is the check), where formgrader puts the score box and the comment."""
    import nbformat

    try:
        notebook = nbformat.read(nb_path, as_version=4)
    except Exception:  # noqa: BLE001 - an unreadable upload: its checks alone, each saying why
        notebook = nbformat.v4.new_notebook()
    for cell in notebook.cells:
        cell.metadata.pop("nbgrader", None)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    by_check = {r.check: r for r in rows or ()}
    for check, pts in points.items():
        row = by_check.get(check)
        verdict = "not graded" if rows is None else "passed" if row is not None and row.passed else "failed"
        cell = nbformat.v4.new_markdown_cell(f"**check `{check}`** ({pts:g} points): {verdict}")
        cell.metadata["nbgrader"] = {
            "grade": True,
            "solution": True,
            "task": False,
            "locked": True,
            "grade_id": check,
            "points": pts,
            "schema_version": 3,
        }
        notebook.cells.append(cell)
    out = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment)) / nb_path.name
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, out)
    # the submission's other files, timestamp.txt among them, as nbgrader's autograde copies them:
    # generate_feedback passes them on and release_feedback needs the timestamp
    for other in find_all_files(str(nb_path.parent), coursedir.ignore + ["*.ipynb"]):
        dest = out.parent / Path(other).relative_to(nb_path.parent)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(other, dest)
    return out


def apply_late_penalty(config: Config, db_url: str, assignment: str, student: str, notebook: str) -> None:
    """nbgrader's :class:`~nbgrader.preprocessors.AssignLatePenalties`, configured by ``config``, on
    one submitted notebook (its penalty from the submission's timestamp and the assignment's duedate)."""
    import nbformat

    resources = {"nbgrader": {"notebook": notebook, "assignment": assignment, "student": student, "db_url": db_url}}
    AssignLatePenalties(config=config).preprocess(nbformat.v4.new_notebook(), resources)


# ---------------------------------------------------------------------------
# The autograde step
# ---------------------------------------------------------------------------


def autograde(
    assignment: str,
    course_dir: str | Path = ".",
    *,
    students: Sequence[str] = (),
    timeout_s: float | None = None,
    seed: int | None = None,
    allow_unisolated: bool = False,
    jobs: int | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> list[Graded]:
    """Grade ``submitted/<student>/<assignment>/*.ipynb`` of the nbgrader course in ``course_dir`` into
    its gradebook (the module docstring says what is written); returns one :class:`Graded` per notebook.

    ``students``: only these ids (default: every submission). ``timeout_s``: per cell (default: the
    grader's). ``seed``: the task inputs' seed (default: drawn once for the run). Without a sandbox
    the run is refused unless ``allow_unisolated``. ``jobs``: submissions graded at once, by the class
    runner of ``nodecourse grade --gradebook`` (:func:`nodecourse.course._grading_pool.run_graders`;
    default: the usable CPUs); only this process writes the gradebook, one notebook after another in
    the order of the students' ids, whatever order the gradings end in. ``log``: called with a line
    per notebook."""
    from nodecourse.config import usable_cpus
    from nodecourse.course import gradebook, grading, sandbox
    from nodecourse.course._grading_pool import check_jobs

    try:
        check_jobs(jobs)
    except gradebook.GradebookError as exc:
        raise BridgeError(str(exc)) from None
    course = Path(course_dir)
    if not course.is_dir():
        raise BridgeError(f"--course-dir {course}: no such folder; give the nbgrader course folder")
    course = course.resolve()
    config = course_config(course)
    coursedir = CourseDirectory(config=config)
    if coursedir.db_url.startswith("sqlite:///") and not Path(coursedir.db_url[len("sqlite:///") :]).is_file():
        raise BridgeError(
            f"--course-dir {course}: no gradebook ({coursedir.db_url}); give the nbgrader course folder "
            "(the one with nbgrader_config.py and gradebook.db)"
        )
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        known = sorted(a.name for a in gb.assignments)
    if assignment not in known:
        raise BridgeError(
            f"ASSIGNMENT {assignment!r} is not in the gradebook {coursedir.db_url} (it has {known}); "
            f"add it first: nbgrader generate_assignment {assignment}, or nbgrader db assignment add {assignment}"
        )
    found = _submissions(coursedir, assignment)
    chosen = _chosen(found, students, assignment)
    isolation = sandbox.probe()
    if not isolation.sandboxed and not allow_unisolated:
        raise BridgeError(
            f"no isolation for the learners' code here ({isolation.reason}); nothing was graded. Grade where "
            "bubblewrap can create namespaces, or add --allow-unisolated"
        )
    configured = read_points(course, assignment)
    seed = secrets.randbelow(2**31) if seed is None else int(seed)
    timeout = grading.DEFAULT_CELL_TIMEOUT_S if timeout_s is None else timeout_s
    results: list[Graded | None] = []
    todo: list[_Submission] = []
    with _course_on_path(course):
        for student in chosen:
            path = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
            timestamp = coursedir.get_existing_timestamp(str(path))
            if not found[student]:
                log(f"warning: {student}: no notebook in {path}; nothing graded")
            for nb_path in found[student]:
                prepared = _prepare(nb_path, student, assignment, coursedir, configured, timestamp)
                results.append(prepared if isinstance(prepared, Graded) else None)
                if not isinstance(prepared, Graded):
                    todo.append(prepared._replace(index=len(results) - 1))
        _run(todo, results, config, coursedir, seed, timeout, jobs or usable_cpus()[0], log)
    done = [r for r in results if r is not None]
    unknown = sorted(set(configured) - {c for r in done for c in r.checks})
    if unknown and any(r.checks for r in done):  # a mistyped check would silently keep its default
        log(f"warning: {POINTS_FILE} [{assignment}] names checks no graded notebook has: {unknown}")
    return done


class _Submission(NamedTuple):
    """A notebook to grade: its place among the results, and what writing its grades needs."""

    index: int
    nb_path: Path
    student: str
    assignment: str
    points: dict[str, float]


def _prepare(nb_path: Path, student, assignment, coursedir, configured, timestamp) -> _Submission | Graded:
    """The notebook's reference and points, and its rows in the gradebook (the submission, the
    student, the notebook's grade cells); a :class:`Graded` with the error when it has no reference."""
    from nodecourse.course import grading
    from nodecourse.course.references import reference_for

    notebook = nb_path.stem
    try:
        reference, _, _ = reference_for(nb_path)
    except grading.GradingError as exc:
        return Graded(student, notebook, 0.0, 0.0, 0.0, error=str(exc))
    points = check_points(reference, configured)
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        _sync_cells(gb, assignment, notebook, points)
        gb.update_or_create_student(student)
        with warnings.catch_warnings():
            # nbgrader builds a new submission's rows before adding it to the session; with SQLAlchemy 2
            # that warns on every new submission, and the rows are added whole right after
            warnings.filterwarnings("ignore", message=".*not in session")  # SQLAlchemy's SAWarning
            gb.update_or_create_submission(assignment, student, **({"timestamp": timestamp} if timestamp else {}))
    return _Submission(-1, nb_path, student, assignment, points)


def _run(todo: list[_Submission], results: list, config, coursedir, seed, timeout, jobs, log) -> None:
    """Grade ``todo`` in the class runner's workers; write each into the gradebook here, in ``results``'
    order: a grading that ends early waits for the ones before it (an interruption keeps what was
    written, and two runs write the same rows in the same order)."""
    from nodecourse.course import grading
    from nodecourse.course._grading_pool import run_graders, worker_failed
    from nodecourse.course.gradebook import _grade_one

    ended: dict[int, dict | BaseException] = {}
    written = [0]  # todo's entries written so far

    def write(sub: _Submission, result) -> Graded:
        """Its grades into the gradebook; its seconds: the grading in the worker, then the writing here."""
        start = time.monotonic()
        rows, said, error = None, [], ""
        if isinstance(result, BaseException):  # the worker itself died (out of memory, killed)
            error = f"{worker_failed(result)}; grade it again with --student {sub.student}"
        elif result["error"]:
            error = result["error"]
        else:
            rows, said = [grading.CheckRow(**r) for r in result["rows"]], result["warnings"]
        notebook = sub.nb_path.stem
        with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
            got = write_grades(gb, sub.assignment, sub.student, notebook, sub.points, rows, error, seed)
        write_autograded(coursedir, sub.student, sub.assignment, sub.nb_path, sub.points, rows)
        if rows is not None:
            apply_late_penalty(config, coursedir.db_url, sub.assignment, sub.student, notebook)
        seconds = time.monotonic() - start + (0.0 if isinstance(result, BaseException) else result["time_s"])
        max_points = sum(sub.points.values())
        return Graded(sub.student, notebook, got, max_points, seconds, error, list(said), tuple(sub.points))

    def on_result(index: int, result) -> None:
        ended[index] = result
        while written[0] < len(todo) and written[0] in ended:
            sub = todo[written[0]]
            results[sub.index] = write(sub, ended.pop(written[0]))
            log(_line(results[sub.index]))
            written[0] += 1

    for r in results:  # the notebooks with no reference, said before the others
        if r is not None:
            log(_line(r))
    jobs_list = [(str(sub.nb_path), None, timeout, seed, grading.DEFAULT_NOTEBOOK_TIMEOUT_S, None) for sub in todo]
    run_graders(_grade_one, jobs_list, jobs, on_result)


def _line(g: Graded) -> str:
    if g.error:
        return f"{g.student}/{g.notebook}: not graded: {g.error}"
    return f"{g.student}/{g.notebook}: {g.points:g}/{g.max_points:g} points ({g.seconds:.1f} s)"


def main(args) -> int:
    """``nodecourse nbgrader autograde``: grade, print a line per notebook; exit 0 when all were graded."""
    from nodecourse.course.gradebook import GradebookStopped

    try:
        results = autograde(
            args.assignment,
            args.course_dir,
            students=args.student or (),
            timeout_s=args.timeout,
            allow_unisolated=args.allow_unisolated,
            jobs=args.jobs,
            log=lambda line: print(line, flush=True),
        )
    except BridgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except GradebookStopped as exc:  # what was written before the signal stays in gradebook.db
        name = signal.Signals(exc.signum).name
        print(
            f"error: stopped by {name}: the grading workers were ended; {exc.written} notebook(s) were written "
            "to nbgrader's gradebook before it; the same command again grades every submission (--student ID "
            "grades only the ones named)",
            file=sys.stderr,
        )
        return 2
    for g in results:
        for w in g.warnings:
            if not w.startswith("note: "):
                print(f"warning: {g.student}/{g.notebook}: {w}", file=sys.stderr)
    print(f"{len(results)} notebook(s) of {args.assignment!r}, {sum(not g.error for g in results)} graded")
    return 0 if all(not g.error for g in results) else 1


# ---------------------------------------------------------------------------
# Export to Canvas
# ---------------------------------------------------------------------------

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "Section"]


class CanvasExportPlugin(ExportPlugin):
    """One row per student, the columns of Canvas's gradebook import: ``Student`` ("Last, First"),
    ``ID`` (Canvas's user id: nbgrader's ``lms_user_id``), ``SIS User ID`` (nbgrader's student id,
    the hub login), ``Section`` (empty: Canvas keeps the section it has), then one column per
    assignment with its points after the late penalty (empty when nothing was graded)."""

    def export(self, gradebook: Gradebook) -> None:
        dest = Path(self.to or "canvas_grades.csv")
        names = [str(a) for a in self.assignment] or sorted(a.name for a in gradebook.assignments)
        wanted = {str(s) for s in self.student}
        students = [s for s in sorted(gradebook.students, key=lambda s: s.id) if not wanted or s.id in wanted]
        with open(dest, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(CANVAS_COLUMNS + names)
            for s in students:
                name = ", ".join(p for p in (s.last_name, s.first_name) if p) or s.id
                writer.writerow([name, s.lms_user_id or "", s.id, ""] + [_points(gradebook, a, s.id) for a in names])
        self.log.info("Canvas grades of %d student(s) written to %s", len(students), dest)


def _points(gradebook: Gradebook, assignment: str, student: str) -> str:
    """The assignment's points after the late penalty; "" when no grade of it was ever given."""
    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:
        return ""
    grades = [g for nb in submission.notebooks for g in nb.grades]
    if not any(g.auto_score is not None or g.manual_score is not None for g in grades):
        return ""
    return f"{max(0.0, submission.score - (submission.late_submission_penalty or 0.0)):g}"


__all__ = [
    "BridgeError",
    "CanvasExportPlugin",
    "Graded",
    "autograde",
    "apply_late_penalty",
    "check_points",
    "course_config",
    "read_points",
    "write_autograded",
    "write_grades",
]
