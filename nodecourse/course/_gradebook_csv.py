"""The gradebook's CSV: its columns, its reading and writing, and the per-student export.

:mod:`nodecourse.course.gradebook` (whose docstring gives the rules) grades a class and calls this
module for the file: rows read with or without a byte-order mark, written whole (a temporary file
renamed over it) under a lock (``grades.csv.lock``, :func:`fcntl.flock`), merged into the file as
it is on disk (:func:`_merge_row`, with the instructor's override kept and the history file
appended), every cell safe in a spreadsheet (:func:`cell_text`); and :func:`export_per_student`,
one row per student for an LMS.
"""

from __future__ import annotations

import contextlib
import csv
import os
from pathlib import Path
from typing import Sequence

from nodecourse.course.students import RosterError
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


def _row_count(path: Path) -> int:
    """Rows in the file, stale ones included (0 when there is none)."""
    return len(_read_csv(path, "--gradebook")[1]) if path.exists() else 0


def _safe(row: dict) -> dict[str, str]:
    return {k: cell_text(v) for k, v in row.items()}


def _read_tidied(csv_path: Path, *, bom: bool) -> list[dict[str, str]]:
    """The gradebook's rows (:func:`_read`), under its lock; the file is written again when it held
    stale rows of an older version or its byte-order mark is not the one asked for (``bom``)."""
    with _locked(csv_path):
        existing = _read(csv_path)
        if csv_path.exists() and bom != _has_bom(csv_path) or len(existing) < _row_count(csv_path):
            _write(csv_path, existing, bom=bom)  # stale rows of an older version dropped, the BOM as asked
    return existing


def _merge_row(
    csv_path: Path, history: Path, row: dict[str, str], *, run: str, why: str, bom: bool
) -> tuple[dict[str, str], dict[tuple[str, str], dict[str, str]]]:
    """Merge ``row`` into the file as it is on disk now (another run may have written since), under
    the lock; the history gets it unless it is the same as the last one recorded. Returns the row as
    written (with the instructor's override) and the file's rows by (student, exercise)."""
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
    return row, disk


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
