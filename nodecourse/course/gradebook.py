"""An instructor grades a class: ``nodecourse grade submissions/*.ipynb --gradebook grades.csv``.

Each submission is graded as ``nodecourse grade`` grades one notebook (its own
sandboxed kernel, task inputs from a seed drawn for this run), several at once
up to the usable CPUs (:func:`nodecourse.config.usable_cpus`, or ``--jobs``).

The CSV has one row per student and exercise, keyed by the student id
(:func:`student_id`, or ``--roster``): a run only adds or replaces rows, never
drops one, and every row written goes to the history file beside it
(``grades.history.csv``) with the run that wrote it and why, unless it is the
same as the last one recorded for that student and exercise. Every write takes
a lock (``grades.csv.lock``, :func:`fcntl.flock`) and merges its row into the
file as it is on disk, so two runs at the same time lose no row. Of a student's
files for one exercise the newest by submission time
(:func:`~nodecourse.course.students.submitted_at`) is graded; the others are
named in the summary, and get no row. Columns (for an LMS, the one row per
student of :func:`export_per_student`):

- ``student``, ``exercise`` (the reference's file name), ``submission`` (the
  file, absolute), ``sha256``;
- one column per check, ``NN:check`` (``pass`` / ``FAIL``; empty for another
  exercise's row);
- ``points`` (the weights of the checks passed), ``max`` (all the weights),
  ``total`` (points as a percentage of max): all three empty when the
  submission could not be graded, never 0; ``override`` (points the instructor
  gives by hand: kept by every regrade, recorded in the history; a hand edit of
  ``points`` is moved here too); ``status`` (``graded`` or ``not graded``);
  ``passed``, ``checks`` (counts);
- ``review`` (answers a person should read), ``outside_answers`` (handed-out
  setup or check cells the learner edited: the grader runs them as handed out,
  and runs the cells the learner added where they sit), ``limits`` (the
  limits on the whole submission its code went over: memory of all its
  processes, bytes written, processes, CPU time), ``error`` (why
  the submission could not be graded), ``time_s``, ``isolation``, ``seed``,
  ``graded_at`` (UTC).

Every submission of a known student and exercise gets a row: a file that
cannot be graded (no reference, not a notebook, a symbolic link, a grader fault
on it) gets one with its ``error``, and the others go on; a file that matches no
exercise, or no roster entry, is named in the summary (errors) and gets no row,
and such rows of an older version are dropped when the file is read. Rows are
written as they finish, so an interrupted run loses only the submissions in
progress; the same command again skips every student whose row is there for the
same file content (SHA-256) without an error, unless ``--regrade ID`` names
them (an id that is neither in this run nor in the gradebook is refused, with
the close matches named). Every cell is safe to open in a spreadsheet
(:func:`cell_text`). The file is read with or without a byte-order mark and
written UTF-8, with a BOM when ``excel`` is given (``--excel``, so that Excel
shows accents right) or the file had one (a spreadsheet saved it): without the
option the file stays plain UTF-8, which scripts and most LMS imports read as it
is. A feedback file per student (the score, each check's points, reasons,
likely causes, the seed) is written into ``grades-feedback/`` beside the CSV
(:func:`nodecourse.course.feedback.feedback_name`: no two ids share a file).

Class mode needs isolation: given an :class:`~nodecourse.course.sandbox.Isolation`
that is not a sandbox, :func:`grade_class` refuses to start unless
``allow_unisolated`` (``--allow-unisolated``), and then the summary and every
feedback file say the grades were made without it. SIGTERM, SIGHUP and SIGINT
stop a run cleanly (:class:`GradebookStopped`): the grading workers and what
they started are ended, and the CSV holds every row finished before the signal
(each write is whole: a temporary file renamed over it).

The CSV's columns, reading, writing and locking are in :mod:`nodecourse.course._gradebook_csv`, the
grading workers and their signals in :mod:`nodecourse.course._grading_pool`; this module grades the
class and assembles each submission's row.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from nodecourse.course._gradebook_csv import (
    FIXED_AFTER,
    FIXED_BEFORE,
    GRADED,
    NOT_GRADED,
    GradebookError,
    _has_bom,
    _header,
    _merge_row,
    _read_tidied,
    _safe,
    cell_text,
    export_per_student,
    read_roster,
)
from nodecourse.course._grading_pool import GradebookStopped, check_jobs, run_graders, worker_failed
from nodecourse.course.feedback import ERROR_LIMIT, LIMITS_NOTE, cell_titles, feedback_markdown, shorten, write_feedback
from nodecourse.course.students import (
    close_matches,
    exercise_names,
    exercise_of,
    nfc,
    student_id,
    submitted_at,
)


def file_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _grade_one(job: tuple) -> dict:
    """Grade one submission (in a worker process): its rows, warnings and error as plain data.
    Any failure is this submission's ``error``, never the class's."""
    path, reference, timeout_s, seed, notebook_timeout_s, limits = job
    start = time.monotonic()
    result = {"path": path, "rows": [], "warnings": [], "error": "", "seed": seed, "isolation": ""}
    try:
        from nodecourse.course import grading, sandbox

        isolation = sandbox.probe()
        result["isolation"] = isolation.label
        rows, warnings = grading.grade_notebook(
            path,
            reference=reference,
            timeout_s=timeout_s,
            seed=seed,
            isolation=isolation,
            notebook_timeout_s=notebook_timeout_s,
            limits=limits,
        )
        result["rows"], result["warnings"] = [r.as_dict() for r in rows], list(warnings)
        result["cell_titles"] = _titles(path, reference)
    except Exception as exc:  # noqa: BLE001 - whatever it is, it is this submission's error
        from nodecourse.course.grading import GradingError

        what = str(exc) if isinstance(exc, GradingError) else f"the grader failed on it: {type(exc).__name__}: {exc}"
        result["error"] = shorten(what, ERROR_LIMIT)  # whole, but bounded: a runaway message is cut at a word
    result["time_s"] = time.monotonic() - start
    return result


def _titles(path: str, reference: str | None) -> dict[str, str]:
    """The feedback's names of the reference's code cells (:func:`~nodecourse.course.feedback.cell_titles`);
    empty when the reference cannot be read again (the feedback then says "code cell N")."""
    try:
        import nbformat

        from nodecourse.course.references import reference_for

        nb = nbformat.read(reference, as_version=4) if reference else reference_for(Path(path))[0]
        return cell_titles(nb)
    except Exception:  # noqa: BLE001 - names are a convenience; the grade stands without them
        return {}


@dataclass
class Summary:
    """What a gradebook run did, and the class's results per exercise."""

    graded: int
    skipped: int
    rows: list[dict[str, str]]
    columns: list[str]
    seconds: float
    jobs: int
    errors: list[str] = field(default_factory=list)
    unisolated: str = ""  # why there was no sandbox, when the run was allowed without one
    notes: list[str] = field(default_factory=list)  # files passed over (a student's older files)

    def lines(self) -> list[str]:
        from nodecourse.course.feedback import UNISOLATED

        out = [f"{UNISOLATED}: {self.unisolated}"] if self.unisolated else []
        out += [
            f"{self.graded} submission(s) graded, {self.skipped} skipped (unchanged since their row was "
            f"written), in {self.seconds:.0f} s with {self.jobs} at a time"
        ]
        exercises = sorted({r["exercise"] for r in self.rows if r.get("exercise")})
        for ex in exercises:
            rows = [r for r in self.rows if r["exercise"] == ex]
            graded = [r for r in rows if not r.get("error")]
            n = len(graded)
            out.append(
                f"\n{ex}: {len(rows)} student(s), {n} graded"
                + (f", {len(rows) - n} could not be (see the error column)" if len(rows) > n else "")
            )
            columns = [c for c in self.columns if any(r.get(c) for r in rows)]
            if not n or not columns:
                continue
            width = max(len("check"), *(len(c) for c in columns))
            out.append(f"  {'check'.ljust(width)}  pass rate")
            for c in columns:
                k = sum(r.get(c) == "pass" for r in graded)
                out.append(f"  {c.ljust(width)}  {k}/{n} ({k / n:.0%})")
            mean = sum(float(r["points"] or 0) for r in graded) / n
            out.append(f"  mean points {mean:.2f} of {graded[0]['max']}")
        if self.notes:
            out.append(f"\n{len(self.notes)} older file(s) passed over (a newer one of the same student was graded):")
            out += [f"  {n}" for n in self.notes]
        if self.errors:
            out.append(f"\n{len(self.errors)} submission(s) got no grade:")
            out += [f"  {e}" for e in self.errors]
        return out


def _row(result: dict, student: str, digest: str) -> dict[str, str]:
    """The CSV row of one graded submission (cells not yet made spreadsheet-safe)."""
    checks = [r for r in result["rows"] if not r["check"].startswith(("cell ", "answer ", "("))]
    exercise = result.get("exercise") or (result["rows"][0]["exercise"] if result["rows"] else "")
    row = {
        "student": student,
        "exercise": exercise,
        "submission": result["path"],
        "sha256": digest,
        "error": result["error"],
        "time_s": f"{result['time_s']:.1f}",
        "isolation": result["isolation"],
        "seed": str(result["seed"]),
        "graded_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    for r in checks:
        row[f"{r['exercise'][:2]}:{r['check']}"] = "pass" if r["passed"] else "FAIL"
    points = sum(float(r.get("weight", 1.0)) for r in checks if r["passed"])
    top = sum(float(r.get("weight", 1.0)) for r in checks)
    row.update(
        points=f"{points:g}",
        max=f"{top:g}",
        total=f"{100 * points / top:.1f}" if top else "0",
        passed=str(sum(r["passed"] for r in checks)),
        checks=str(len(checks)),
    )
    row["status"] = GRADED
    if result["error"]:  # not a zero: an LMS import must not read a grader fault as a grade
        row.update(points="", max="", total="", status=NOT_GRADED)
    warnings = result.get("warnings", [])
    row["review"] = "; ".join(w[len("review: ") :] for w in warnings if w.startswith("review: "))
    row["outside_answers"] = ""
    if warnings:  # the grader's modules (and the notebook library) only when there is something to read
        from nodecourse.course.references import OUTSIDE_PREFIX

        row["outside_answers"] = "; ".join(
            w[len(OUTSIDE_PREFIX) :].strip() for w in warnings if w.startswith(OUTSIDE_PREFIX)
        )
    hit = "note: " + LIMITS_NOTE  # written by the grader's run loop, never from the kernel's words
    row["limits"] = "; ".join(w[len(hit) :] for w in warnings if w.startswith(hit))
    return row


def _why(old: dict | None, digest: str) -> str:
    """Why a submission is graded now, for the history."""
    if not old:
        return "first grade"
    if old.get("sha256") != digest:
        return "a new submission"
    return "graded again after an error" if old.get("error") else "--regrade"


def _when(path: str) -> float:
    """When ``path`` was submitted (:func:`submitted_at`); a file that cannot be read first in line."""
    try:
        return submitted_at(path)
    except OSError:
        return float("-inf")


def _refused(nb: str) -> str:
    """Why a submission is refused before grading ("" when it is not)."""
    path = Path(nb)
    if path.is_symlink():
        return f"a symbolic link (to {os.readlink(path)!r}) is refused: submit the notebook file itself"
    if not path.is_file():
        return "not a file"
    return ""


def grade_class(
    notebooks: Sequence[str],
    csv_path: str | Path,
    *,
    timeout_s: float,
    jobs: int | None = None,
    seed: int | None = None,
    reference: str | None = None,
    regrade: Sequence[str] = (),
    roster: str | Path | None = None,
    notebook_timeout_s: float | None = None,
    limits=None,
    grader=None,
    isolation=None,
    allow_unisolated: bool = False,
    excel: bool = False,
) -> Summary:
    """Grade ``notebooks`` into ``csv_path`` as the module docstring describes; returns the summary.

    ``grader``: the function a worker process calls on each submission (default: the real grading,
    ``_grade_one``; tests pass a module-level stand-in with the same result shape).
    ``isolation``: the :class:`~nodecourse.course.sandbox.Isolation` of this machine (the CLI probes
    it); without a sandbox the run is refused before anything is graded unless ``allow_unisolated``,
    and then every feedback file and the summary say so. ``excel``: write the CSV with a byte-order
    mark (``--excel``). ``regrade``: ids of this run's submissions or of the gradebook; another id is
    refused before anything is graded, with the close matches named."""
    grader = grader or _grade_one
    import secrets

    from nodecourse.config import usable_cpus

    csv_path = Path(csv_path)
    if csv_path.suffix.lower() != ".csv":
        raise GradebookError(f"--gradebook {csv_path}: give a file name ending in .csv")
    if not csv_path.parent.is_dir():
        raise GradebookError(
            f"--gradebook {csv_path}: the folder {csv_path.parent} does not exist; create it "
            "first (mkdir -p) or give a path in an existing folder"
        )
    check_jobs(jobs)
    unisolated = ""
    if isolation is not None and not isolation.sandboxed:
        if not allow_unisolated:
            raise GradebookError(
                f"no isolation for the learners' code here ({isolation.reason}); class grades need the "
                "sandbox, so nothing was graded. Install bubblewrap (apt-get install bubblewrap) where the "
                "machine allows it, or add --allow-unisolated to grade anyway (every feedback file and the "
                "summary will then say the grades were made without isolation)"
            )
        unisolated = f"{isolation.reason}; the learners' code ran with this user's rights and could reach the grader"
    names = [Path(reference).name] if reference else exercise_names(list(notebooks))
    table = read_roster(roster) if roster is not None else None
    history = csv_path.with_name(csv_path.stem + ".history.csv")
    feedback = csv_path.with_name(csv_path.stem + "-feedback")
    bom = excel or _has_bom(csv_path)
    run = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") + f"-{secrets.token_hex(3)}"
    existing = _read_tidied(csv_path, bom=bom)
    book: dict[tuple[str, str], dict[str, str]] = {(r["student"], r["exercise"]): r for r in existing}

    def put(row: dict, why: str) -> dict:
        """``row`` merged into the file as it is on disk now (:func:`_merge_row`); ``book`` follows the file."""
        row, disk = _merge_row(csv_path, history, row, run=run, why=why, bom=bom)
        book.clear()
        book.update(disk)
        return row

    todo, skipped = [], 0
    errors: list[str] = []  # this run's submissions that got no grade, "student: why"
    notes: list[str] = []  # files passed over: an older file of a student
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (student, exercise) -> [(file, refused)]
    for nb in dict.fromkeys(notebooks):
        sid = student_id(nb, names, table)
        exercise = names[0] if reference else exercise_of(nb, names)
        refused = _refused(nb)
        if not sid:
            errors.append(f"{Path(nb).name}: not in the roster {roster}; add a row file,student for it")
        elif not exercise:
            errors.append(f"{sid}: {Path(nb).name!r} matched no exercise (names: {', '.join(names) or 'none'})")
        else:
            groups.setdefault((sid, exercise), []).append((nb, refused))
    known = {sid for sid, _ in groups} | {sid for sid, _ in book}
    regrade = {nfc(r) for r in regrade}
    unknown = sorted(regrade - known)
    if unknown:
        raise GradebookError(
            "; ".join(
                f"--regrade {r!r}: no such student; close matches: {close_matches(r, sorted(known))}" for r in unknown
            )
            + ". Nothing was graded: give the id as the gradebook's student column spells it"
        )
    for (sid, exercise), files in groups.items():
        # The newest file by submission time is the student's submission; the others are passed over.
        files.sort(key=lambda f: (_when(f[0]), f[0]), reverse=True)
        nb, refused = files[0]
        for other, _ in files[1:]:
            notes.append(f"{sid}: {other} passed over for {exercise}: {nb} was submitted later")
        absolute = str(Path(nb).absolute())
        if refused:
            errors.append(f"{sid}: {refused}")
            result = {"path": absolute, "rows": [], "error": refused, "time_s": 0.0, "isolation": ""}
            put(_safe(_row({**result, "seed": "", "exercise": exercise}, sid, "")), "refused")
            continue
        digest = file_hash(Path(nb))
        old = book.get((sid, exercise))
        if old and old.get("sha256") == digest and not old.get("error") and sid not in regrade:
            skipped += 1
            continue
        todo.append((absolute, sid, digest, exercise, _why(old, digest)))
    jobs = jobs or usable_cpus()[0]
    seed = secrets.randbelow(2**31) if seed is None else int(seed)
    start = time.monotonic()

    def on_result(index: int, result) -> None:
        path, sid, digest, exercise, why = todo[index]
        if isinstance(result, BaseException):  # the worker itself died (out of memory, killed)
            error = worker_failed(result) + "; run the same command again to grade it"
            result = {"path": path, "rows": [], "warnings": [], "seed": seed, "isolation": "", "time_s": 0.0}
            result["error"] = error
        result["exercise"] = exercise  # the row's key, whatever happened
        result["unisolated"] = unisolated
        row = put(_safe(_row(result, sid, digest)), why)
        write_feedback(feedback, sid, {**result, "override": row.get("override", "")})
        if result["error"]:
            errors.append(f"{sid}: {result['error']}")

    graded = [(job[0], reference, timeout_s, seed, notebook_timeout_s, limits) for job in todo]
    run_graders(grader, graded, jobs, on_result)
    columns = [c for c in _header(list(book.values())) if c not in FIXED_BEFORE + FIXED_AFTER]
    return Summary(
        len(todo),
        skipped,
        list(book.values()),
        columns,
        time.monotonic() - start,
        jobs,
        errors,
        unisolated,
        notes,
    )


__all__ = [
    "GradebookError",
    "GradebookStopped",
    "Summary",
    "cell_text",
    "export_per_student",
    "feedback_markdown",
    "grade_class",
    "read_roster",
    "student_id",
]
