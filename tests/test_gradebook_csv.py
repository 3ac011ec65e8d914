"""The CSV gradebook on one machine: a lock, the instructor's overrides, what a spreadsheet does to it, an LMS export.

- Two runs at the same time into one CSV lose no row (two processes, one lock).
- An ``override`` the instructor types, or a hand edit of ``points``, survives ``--regrade``, and
  the history records it.
- A gradebook re-saved with a byte-order mark is read; ``--excel`` writes one.
- Rows of an older version for no exercise or a second file (``(duplicate)``) are dropped.
- A submission that could not be graded has empty points and ``status`` "not graded", never 0;
  the history says which run wrote each row and why, and an unchanged row is not recorded twice.
- One row per student (:func:`gradebook.export_per_student`) for an LMS's grade import.

All use the stand-in grading of gradebook_fakes.py: no kernel starts.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import textwrap
from pathlib import Path

from gradebook_fakes import CHECKS, EXERCISE, fake_grade, write_submission

from nodecourse.course import gradebook

TESTS = Path(__file__).resolve().parent
EX02 = "02_solvers_exercises.ipynb"
BOM = b"\xef\xbb\xbf"


def _rows(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def _by_student(path):
    return {r["student"]: r for r in _rows(path)}


def _save(path, rows, bom=False):
    """Write ``rows`` back as a spreadsheet or an instructor would (every column kept)."""
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _grade(files, book, **kw):
    return gradebook.grade_class([str(f) for f in files], book, timeout_s=10, jobs=1, seed=5, grader=fake_grade, **kw)


CONCURRENT_RUN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from gradebook_fakes import fake_grade
    from nodecourse.course import gradebook
    gradebook.grade_class({files!r}, {book!r}, timeout_s=10, jobs=1, seed=5, grader=fake_grade)
    """
)


def test_two_runs_at_the_same_time_lose_no_row(tmp_path):
    book, barrier = tmp_path / "grades.csv", tmp_path / "barrier"
    runs = []
    for part in ("a", "b"):
        # The first grading of each run waits for the other run's: from then on both write rows.
        files = [
            str(write_submission(tmp_path / part / f"{part}{i}-{EXERCISE}", passed=["euler-step"], delay=0.02))
            for i in range(8)
        ]
        write_submission(Path(files[0]), passed=["euler-step"], barrier=str(barrier))
        script = CONCURRENT_RUN.format(tests=str(TESTS), files=files, book=str(book))
        runs.append(subprocess.Popen([sys.executable, "-c", script], cwd=TESTS.parent))
    try:
        assert [run.wait(timeout=120) for run in runs] == [0, 0]
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
    rows = _rows(book)
    assert sorted(r["student"] for r in rows) == sorted(f"{p}{i}" for p in "ab" for i in range(8))
    history = _rows(tmp_path / "grades.history.csv")
    assert len(history) == 16 and len({h["run"] for h in history}) == 2
    order = [h["student"][0] for h in history]
    assert order != sorted(order), f"the two runs did not write at the same time: {order}"


def test_an_override_and_a_hand_edit_survive_a_regrade_and_the_history_records_them(tmp_path):
    files = [write_submission(tmp_path / f"{s}-{EXERCISE}", passed=["euler-step"]) for s in ("ann", "bob")]
    book = tmp_path / "grades.csv"
    _grade(files, book)
    rows = _rows(book)
    rows[0]["override"] = "3.5"  # ann: the instructor's column
    rows[1]["points"] = "2"  # bob: the instructor typed over the grader's points
    _save(book, rows)
    _grade(files, book, regrade=["ann", "bob"])
    after = _by_student(book)
    assert (after["ann"]["points"], after["ann"]["override"]) == ("1", "3.5")
    assert (after["bob"]["points"], after["bob"]["override"]) == ("1", "2")
    write_submission(files[0], passed=list(CHECKS))  # ann resubmits: still the instructor's grade
    _grade(files, book)
    assert (_by_student(book)["ann"]["points"], _by_student(book)["ann"]["override"]) == ("4", "3.5")
    history = _rows(tmp_path / "grades.history.csv")
    assert [(h["student"], h["override"], h["why"]) for h in history] == [
        ("ann", "", "first grade"),
        ("bob", "", "first grade"),
        ("ann", "3.5", "--regrade"),
        ("bob", "2", "--regrade"),
        ("ann", "3.5", "a new submission"),
    ]
    out = tmp_path / "lms.csv"
    gradebook.export_per_student(book, out)
    assert {r["student"]: r[EXERCISE[:-6]] for r in _rows(out)} == {"ann": "3.5", "bob": "2"}


def test_a_gradebook_saved_with_a_byte_order_mark_is_read_and_excel_writes_one(tmp_path):
    files = [write_submission(tmp_path / f"{s}-{EXERCISE}", passed=["euler-step"]) for s in ("José", "ann")]
    book = tmp_path / "grades.csv"
    _grade(files[:1], book)
    assert not book.read_bytes().startswith(BOM)  # plain UTF-8 unless asked
    _save(book, _rows(book), bom=True)  # a spreadsheet saved it as "CSV UTF-8"
    _grade(files, book)
    assert book.read_bytes().startswith(BOM) and sorted(_by_student(book)) == ["José", "ann"]
    fresh = tmp_path / "excel.csv"
    _grade(files, fresh, excel=True)
    assert fresh.read_bytes().startswith(BOM) and "José".encode() in fresh.read_bytes()
    out = tmp_path / "lms.csv"
    gradebook.export_per_student(fresh, out, excel=True)
    assert out.read_bytes().startswith(BOM)
    book.write_bytes("student,exercise\nJos\xe9,x\n".encode("latin-1"))
    try:
        _grade(files, book)
    except gradebook.GradebookError as exc:
        assert "not UTF-8" in str(exc) and "CSV UTF-8" in str(exc)
    else:
        raise AssertionError("a gradebook in another encoding was read")


def test_stale_rows_of_an_older_version_are_dropped_and_a_second_file_gets_no_row(tmp_path):
    ann = write_submission(tmp_path / f"ann-{EXERCISE}", passed=["euler-step"])
    book = tmp_path / "grades.csv"
    _grade([ann], book)
    rows = _rows(book)
    rows.append({**rows[0], "exercise": f"{EXERCISE} (duplicate)", "error": "a second submission"})
    rows.append({**rows[0], "student": "notes", "exercise": "", "error": "matched no exercise"})
    _save(book, rows)
    summary = _grade([ann], book)  # nothing to grade: the stale rows go all the same
    assert summary.skipped == 1 and [(r["student"], r["exercise"]) for r in _rows(book)] == [("ann", EXERCISE)]
    stray = write_submission(tmp_path / "notes.ipynb", passed=[])
    copy = write_submission(tmp_path / "a2" / f"ann-{EXERCISE}", passed=list(CHECKS))
    summary = _grade([ann, stray, copy], book)
    assert [(r["student"], r["exercise"]) for r in _rows(book)] == [("ann", EXERCISE)]
    assert any("matched no exercise" in e for e in summary.errors)
    assert any("passed over" in n for n in summary.notes)


def test_error_rows_are_not_graded_rather_than_zero_and_recorded_once(tmp_path):
    files = [
        write_submission(tmp_path / f"kim-{EXERCISE}", error="cannot read the notebook: truncated"),
        write_submission(tmp_path / f"lee-{EXERCISE}", passed=[]),
    ]
    book = tmp_path / "grades.csv"
    _grade(files, book)
    _grade(files, book)  # kim's row is graded again, to the same error
    rows = _by_student(book)
    assert (rows["kim"]["points"], rows["kim"]["max"], rows["kim"]["total"]) == ("", "", "")
    assert rows["kim"]["status"] == "not graded" and "truncated" in rows["kim"]["error"]
    assert (rows["lee"]["points"], rows["lee"]["status"]) == ("0", "graded")  # a real zero stays a zero
    history = _rows(tmp_path / "grades.history.csv")
    assert [h["student"] for h in history] == ["kim", "lee"] and all(h["run"] for h in history)
    write_submission(files[0], passed=["euler-step"])  # fixed: graded, recorded
    _grade(files, book)
    history = _rows(tmp_path / "grades.history.csv")
    assert [(h["student"], h["points"], h["why"]) for h in history][-1] == ("kim", "1", "a new submission")
    assert len({h["run"] for h in history}) == 2
    out = tmp_path / "lms.csv"
    write_submission(files[0], error="the grader failed on it")
    _grade(files, book)
    gradebook.export_per_student(book, out)
    export = {r["student"]: r for r in _rows(out)}
    assert export["kim"][EXERCISE[:-6]] == "" and export["kim"]["not_graded"] == EXERCISE[:-6]


def test_one_row_per_student_for_an_lms_import(tmp_path):
    other = {"exercise": EX02, "checks": ["rk4-step-matches", "rk4-order"]}
    files = [
        write_submission(tmp_path / f"ann-{EXERCISE}", passed=["euler-step", "euler-order"]),
        write_submission(tmp_path / f"ann-{EX02}", passed=["rk4-order"], weights={"rk4-order": 2}, **other),
        write_submission(tmp_path / f"=bob-{EXERCISE}", passed=[]),
    ]
    book = tmp_path / "grades.csv"
    _grade(files, book)
    out = tmp_path / "lms.csv"
    assert gradebook.export_per_student(book, out) == 2
    with open(out, newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert header == ["student", EXERCISE[:-6], EX02[:-6], "total", "max", "not_graded"]
    rows = {r["student"]: r for r in _rows(out)}
    assert (rows["ann"][EXERCISE[:-6]], rows["ann"][EX02[:-6]], rows["ann"]["total"]) == ("2", "2", "4")
    assert rows["ann"]["max"] == "7"  # 4 checks of weight 1, then 1 + 2
    assert (rows["'=bob"][EXERCISE[:-6]], rows["'=bob"][EX02[:-6]], rows["'=bob"]["total"]) == ("0", "", "0")
    try:
        gradebook.export_per_student(book, book)
    except gradebook.GradebookError as exc:
        assert "the gradebook itself" in str(exc)
    else:
        raise AssertionError("the export wrote over the gradebook")
