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

Why this module is long: it holds the class run (the grading workers and their signals, :func:`grade_class`)
and the rules of the CSV it writes (rows merged under a lock, the history file, overrides, the byte-order
mark, cells safe in a spreadsheet); moving the CSV's reading and writing into a private module of its own is a
split that is pending.
"""

from __future__ import annotations

import concurrent.futures as futures
import contextlib
import csv
import datetime
import hashlib
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from nodecourse.course.feedback import ERROR_LIMIT, LIMITS_NOTE, cell_titles, feedback_markdown, shorten, write_feedback
from nodecourse.course.students import (
    RosterError,
    close_matches,
    exercise_names,
    exercise_of,
    nfc,
    student_id,
    submitted_at,
)
from nodecourse.course.students import read_roster as _read_roster

KEY = ["student", "exercise"]
FIXED_BEFORE = KEY + ["submission", "sha256"]
FIXED_AFTER = [
    "points",
    "max",
    "total",
    "override",
    "status",
    "passed",
    "checks",
    "review",
    "outside_answers",
    "limits",
    "error",
    "time_s",
    "isolation",
    "seed",
    "graded_at",
]
HISTORY = [
    "run",
    "why",
    "graded_at",
    "student",
    "exercise",
    "points",
    "max",
    "total",
    "override",
    "status",
    "error",
    "seed",
    "sha256",
    "checks",
]
# What makes a history row new: a row equal to the last one recorded on these is not appended again.
_SAME = ("points", "max", "total", "override", "status", "error", "sha256", "checks")
GRADED, NOT_GRADED = "graded", "not graded"
_BOM = b"\xef\xbb\xbf"
# OWASP's CSV-injection rule: a cell a spreadsheet would read as a formula gets a leading quote.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class GradebookError(RuntimeError):
    """The gradebook cannot be written or resumed (the message names the file and the fix)."""


class GradebookStopped(GradebookError):
    """A signal (SIGTERM, SIGHUP, SIGINT) stopped the run; its workers are ended, finished rows kept."""

    def __init__(self, signum: int, written: int):
        self.signum, self.written = signum, written
        name = signal.Signals(signum).name
        super().__init__(
            f"stopped by {name}: the grading workers were ended; {written} submission(s) were written to the "
            "gradebook before it; the same command again grades the rest"
        )


# Signals that stop a class run: the workers must not outlive it (they hold a kernel each).
_STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n))
_WORKER_GRACE_S = 10.0  # a worker's time to shut its kernel down after SIGTERM before SIGKILL


class _Stop(BaseException):
    """Raised by a stop signal's handler (a BaseException: no ``except Exception`` turns it into a row)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_IN_TASK = False  # in a worker: whether it is grading a submission now


def _worker_start() -> None:
    """Each grading worker leads its own process group (so what it starts can be ended with it); SIGTERM
    in the middle of a grading unwinds its ``finally`` blocks (the kernel shut down), then exits."""
    os.setpgrp()  # also out of the terminal's foreground group: Ctrl-C reaches the parent, which decides
    signal.signal(signal.SIGTERM, _worker_signal)


def _worker_signal(signum, frame):
    if _IN_TASK:
        raise _Stop(signum)
    os._exit(128 + signum)


def _in_worker(grader, job: tuple) -> dict:
    """Run ``grader(job)`` in a worker; a stop signal ends the worker once the grading has unwound."""
    global _IN_TASK
    _IN_TASK = True
    try:
        return grader(job)
    except _Stop as stop:
        os._exit(128 + stop.signum)
    finally:
        _IN_TASK = False


def _end_workers(pool: futures.ProcessPoolExecutor) -> None:
    """SIGTERM to every worker's process group, then SIGKILL to what is left after the grace time."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in procs:
            for kill in (os.killpg, os.kill):  # the group (what the worker started), then the worker
                try:
                    kill(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        deadline = time.monotonic() + (_WORKER_GRACE_S if sig == signal.SIGTERM else 5.0)
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        if not any(proc.is_alive() for proc in procs):
            break


def check_jobs(jobs: int | None) -> None:
    """Refuse a ``--jobs`` that is not a positive whole number (None: the default, the usable CPUs)."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise GradebookError(f"--jobs {jobs}: give a positive number of submissions to grade at once, e.g. --jobs 2")


def worker_failed(exc: BaseException) -> str:
    """What a row says when its grading worker itself died (out of memory, killed)."""
    return f"the grading worker failed ({type(exc).__name__}: {exc})"


def run_graders(grader, jobs: Sequence[tuple], workers: int, on_result) -> int:
    """The class runner: ``grader(job)`` for each of ``jobs`` in worker processes, at most ``workers`` at
    once (each worker leads its own process group); ``on_result(index, result)`` is called in this
    process, one call at a time, as each grading ends (``result``: the grader's return value, or the
    exception when the worker itself died). Used by :func:`grade_class` and by
    :mod:`nodecourse.course.nbgrader_bridge`, so whatever they write has one writer: this process.

    A stop signal (SIGTERM, SIGHUP, SIGINT) during ``on_result`` waits for it to end; anywhere else it
    stops the run at once: the workers are ended and :class:`GradebookStopped` is raised with the
    number of ``on_result`` calls done. Returns that number."""
    stop = {"busy": False, "signum": None}

    def on_stop(signum, frame):
        stop["signum"] = signum
        if not stop["busy"]:
            raise _Stop(signum)

    written = 0
    if not jobs:
        return written
    context = multiprocessing.get_context("spawn")
    pool = futures.ProcessPoolExecutor(
        max_workers=min(workers, len(jobs)), mp_context=context, initializer=_worker_start
    )
    previous = {}
    try:
        try:
            for signum in _STOP_SIGNALS:
                previous[signum] = signal.signal(signum, on_stop)
        except ValueError:  # not the main thread: signals stay as they are
            pass
        pending = {pool.submit(_in_worker, grader, job): index for index, job in enumerate(jobs)}
        try:
            for future in futures.as_completed(pending):
                try:
                    result = future.result()
                except Exception as exc:  # noqa: BLE001 - the worker itself died (out of memory, killed)
                    result = exc
                stop["busy"] = True
                on_result(pending[future], result)
                written += 1
                stop["busy"] = False
                if stop["signum"] is not None:
                    raise _Stop(stop["signum"])
        except _Stop as exc:
            _end_workers(pool)
            raise GradebookStopped(exc.signum, written) from None
        except BaseException:
            _end_workers(pool)
            raise
        pool.shutdown(wait=True)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return written


def file_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def cell_text(value) -> str:
    """A CSV cell that is safe in a spreadsheet: control characters escaped (newlines included,
    :func:`nodecourse.course.textsafe.escape`), and a cell that starts like a formula (``=``, ``+``,
    ``-``, ``@``, tab, carriage return) prefixed with ``'``. Numbers are left as they are."""
    from nodecourse.course.textsafe import escape

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}" if isinstance(value, float) else str(value)
    text = str(value)
    if text.startswith(_FORMULA_START):
        text = "'" + text
    return escape(text, 2000)


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


def _header(rows: Sequence[dict]) -> list[str]:
    """Fixed columns, then every check column any row has (by exercise, in first-seen order)."""
    checks: list[str] = []
    for r in rows:
        checks.extend(c for c in r if c not in FIXED_BEFORE and c not in FIXED_AFTER and c not in checks)
    checks.sort(key=lambda c: c[:2])  # stable: an exercise's checks keep their notebook order
    return FIXED_BEFORE + checks + FIXED_AFTER


def _stale(row: dict) -> bool:
    """A row an older version wrote that names no submission of a student: no exercise, or a second
    file of one student (``(duplicate)``)."""
    return not row.get("exercise") or row["exercise"].endswith(" (duplicate)")


def _read_csv(path: Path, what: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a CSV written as UTF-8, with or without a byte-order mark."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            rows = [{k: v for k, v in r.items() if k is not None and v is not None} for r in reader]
            return list(reader.fieldnames or []), rows
    except UnicodeDecodeError as exc:
        raise GradebookError(
            f"{what} {path}: not UTF-8 ({exc.reason} at byte {exc.start}); a spreadsheet saved it in another "
            "encoding: save it again as 'CSV UTF-8', or give a new file name"
        ) from None


def _read(csv_path: Path) -> list[dict[str, str]]:
    """The rows of an existing gradebook (of this version: it has the key columns), stale rows left out."""
    if not csv_path.exists():
        return []
    header, rows = _read_csv(csv_path, "--gradebook")
    if not set(KEY) <= set(header):
        raise GradebookError(
            f"--gradebook {csv_path}: it has no {KEY} columns (written by another program or an older "
            "version); give a new file name, the file is left as it is"
        )
    return [r for r in rows if not _stale(r)]


def _has_bom(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(3) == _BOM
    except FileNotFoundError:
        return False


def _write(path: Path, rows: Sequence[dict], header: list[str] | None = None, *, bom: bool = False) -> None:
    """Write ``rows`` whole: a temporary file renamed over ``path`` (UTF-8, with a BOM when ``bom``)."""
    header = header or _header(rows)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=header, restval="", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(csv_path: Path):
    """Hold the gradebook's lock (``<name>.lock`` beside it, :func:`fcntl.flock`): one writer at a time,
    across processes. Where there is no ``fcntl`` (Windows) runs must not overlap."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(csv_path.with_name(csv_path.name + ".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _history_row(row: dict[str, str], run: str, why: str) -> dict[str, str]:
    checks = ";".join(f"{k}={v}" for k, v in row.items() if ":" in k and v)
    return {**{k: row.get(k, "") for k in HISTORY}, "run": run, "why": why, "checks": cell_text(checks)}


def _last_recorded(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    """The last history row of each (student, exercise); an older history's header is brought up to date."""
    if not path.exists():
        return {}
    header, rows = _read_csv(path, "the history")
    if header != HISTORY:  # written by an older version: the same rows under today's columns
        _write(path, rows, HISTORY, bom=_has_bom(path))
    return {(r.get("student", ""), r.get("exercise", "")): r for r in rows}


def _append_history(path: Path, entry: dict[str, str], *, bom: bool = False) -> None:
    """Add one row to the history (it only grows; columns :data:`HISTORY`; a new one starts with a
    byte-order mark when ``bom``)."""
    new = not path.exists()
    with open(path, "a", newline="", encoding="utf-8-sig" if new and bom else "utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=HISTORY, restval="", extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow(entry)


def _with_override(row: dict[str, str], old: dict[str, str] | None, last: dict[str, str] | None) -> dict[str, str]:
    """``row`` with the instructor's override of the row it replaces: its ``override`` column, or its
    ``points`` when they differ from what the grader last wrote there (a hand edit)."""
    if not old:
        return row
    override = old.get("override", "")
    if not override and last is not None and old.get("points", "") != last.get("points", ""):
        override = old.get("points", "")  # edited by hand after the grader wrote it
    return {**row, "override": override} if override else row


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


def _row_count(path: Path) -> int:
    """Rows in the file, stale ones included (0 when there is none)."""
    return len(_read_csv(path, "--gradebook")[1]) if path.exists() else 0


def _safe(row: dict) -> dict[str, str]:
    return {k: cell_text(v) for k, v in row.items()}


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
    with _locked(csv_path):
        existing = _read(csv_path)
        if csv_path.exists() and bom != _has_bom(csv_path) or len(existing) < _row_count(csv_path):
            _write(csv_path, existing, bom=bom)  # stale rows of an older version dropped, the BOM as asked
    book: dict[tuple[str, str], dict[str, str]] = {(r["student"], r["exercise"]): r for r in existing}

    def put(row: dict, why: str) -> dict:
        """Merge ``row`` into the file as it is on disk now (another run may have written since), under
        the lock; the history gets it unless it is the same as the last one recorded."""
        key = (row["student"], row["exercise"])
        with _locked(csv_path):
            disk = {(r["student"], r["exercise"]): r for r in _read(csv_path)}
            last = _last_recorded(history).get(key)
            row = _with_override(row, disk.get(key), last)
            entry = _history_row(row, run, why)
            if last is None or any(last.get(k, "") != entry[k] for k in _SAME):
                _append_history(history, entry, bom=bom)
            disk[key] = row
            _write(csv_path, list(disk.values()), bom=bom)  # on disk now: an interruption keeps it
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


def export_per_student(csv_path: str | Path, out: str | Path, *, excel: bool = False) -> int:
    """Write ``out``: one row per student of the gradebook ``csv_path``, for an LMS's grade import.

    Columns: ``student``; one per exercise (the file name without ``.ipynb``), the student's points
    (the ``override`` when the instructor gave one), empty when that exercise has no grade (not
    submitted, or not graded: never a 0 the LMS would take for a grade); ``total`` (the sum of the
    points there are); ``max`` (the sum of the exercises' maxima); ``not_graded`` (the exercises
    whose submission could not be graded). UTF-8, with a byte-order mark when ``excel``.
    Returns the number of students written."""
    csv_path, out = Path(csv_path), Path(out)
    if out.suffix.lower() != ".csv":
        raise GradebookError(f"--per-student {out}: give a file name ending in .csv")
    if out.resolve() == csv_path.resolve():
        raise GradebookError(f"--per-student {out}: that is the gradebook itself; give another file name")
    with _locked(csv_path):
        rows = _read(csv_path)
    exercises = sorted({r["exercise"] for r in rows})
    maxima = {r["exercise"]: r.get("max", "") for r in rows if r.get("max")}
    students: dict[str, dict[str, str]] = {}
    for r in rows:
        entry = students.setdefault(r["student"], {"student": r["student"], "not_graded": ""})
        points = r.get("override") or (r.get("points", "") if r.get("status", GRADED) == GRADED else "")
        entry[r["exercise"].removesuffix(".ipynb")] = points
        if not points:
            entry["not_graded"] = "; ".join(filter(None, [entry["not_graded"], r["exercise"].removesuffix(".ipynb")]))
    columns = [e.removesuffix(".ipynb") for e in exercises]
    for entry in students.values():
        given = [_number(entry[c], f"{entry['student']}'s {c}") for c in columns if entry.get(c)]
        entry["total"] = f"{sum(given):g}" if given else ""
        entry["max"] = f"{sum(float(maxima[e]) for e in exercises if e in maxima):g}"
    header = ["student", *columns, "total", "max", "not_graded"]
    _write(out, [_safe(e) for e in students.values()], header, bom=excel)
    return len(students)


def _number(text: str, what: str) -> float:
    try:
        return float(text.lstrip("'"))
    except ValueError:
        raise GradebookError(
            f"the gradebook's {what} is {text!r}, not a number; correct its override (or points) column"
        ) from None


def read_roster(path: str | Path) -> dict[str, str]:
    """:func:`nodecourse.course.students.read_roster`, its error as a :class:`GradebookError`."""
    try:
        return _read_roster(path)
    except RosterError as exc:
        raise GradebookError(str(exc)) from exc


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
