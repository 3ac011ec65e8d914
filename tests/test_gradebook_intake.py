"""Whose submission a file is, on a shared server and in LMS downloads, and which of a student's files is graded.

- Files where they sit on a shared server (``/home/<student>/<course>/exercises/01_....ipynb``) belong
  to the home folder's owner, not to ``exercises``.
- LMS download names (Canvas, Moodle, Blackboard) give one stable id per student across files,
  resubmissions and late submissions; names are compared in Unicode NFC.
- Of a student's files for one exercise the newest by submission time is graded (the LMS's timestamp
  where the name has one, else the file's modification time), whatever the names' order.
- ``--regrade`` of an id nobody has is an error naming the close matches.

All use the stand-in grading of gradebook_fakes.py: no kernel starts.
"""

from __future__ import annotations

import csv
import os
import unicodedata

import pytest
from gradebook_fakes import CHECKS, EXERCISE, fake_grade, write_submission

from nodecourse.course import gradebook
from nodecourse.course.students import lms_name, student_id, submitted_at

EX02 = "02_solvers_exercises.ipynb"
NAMES = [EXERCISE, EX02]


def _rows(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def _grade(files, book, **kw):
    return gradebook.grade_class([str(f) for f in files], book, timeout_s=10, jobs=1, seed=5, grader=fake_grade, **kw)


def _age(path, seconds_ago: float):
    when = 1_790_000_000 - seconds_ago  # a fixed clock: the order is what the test says
    os.utime(path, (when, when))
    return path


def test_files_on_a_shared_server_belong_to_the_home_folders_owner(tmp_path):
    home = tmp_path / "home"
    (home / "ann" / "nodecourse" / "notebooks").mkdir(parents=True)  # a copy of the course
    files = [
        write_submission(home / "ann" / "nodecourse" / "exercises" / EXERCISE, passed=["euler-step"]),
        write_submission(home / "bob" / "course" / "exercises" / EXERCISE, passed=[]),  # a course folder name
        write_submission(home / "cy" / "neural-odes" / "exercises" / EXERCISE, passed=list(CHECKS)),
    ]
    assert [student_id(f, NAMES) for f in files] == ["ann", "bob", "cy"]
    book = tmp_path / "grades.csv"
    summary = _grade(files, book)
    rows = _rows(book)
    assert sorted((r["student"], r["points"]) for r in rows) == [("ann", "1"), ("bob", "0"), ("cy", "4")]
    assert not summary.errors and not summary.notes
    assert not any("duplicate" in r["exercise"] for r in rows)


def test_lms_download_names_give_one_id_per_student():
    canvas = [
        f"smithalice_1001_50001_{EXERCISE}",
        f"smithalice_1001_50002_{EXERCISE[:-6]}-1.ipynb",  # Canvas renames a resubmitted file
        f"smithalice_LATE_1001_50003_{EXERCISE[:-6]}-2.ipynb",
        f"smithalice_1001_50004_{EX02}",
    ]
    assert {student_id(n, NAMES) for n in canvas} == {"smithalice"}
    assert [lms_name(n).lms for n in canvas] == ["canvas"] * 4
    assert student_id(f"Erin Davis_22223_assignsubmission_file_{EX02}", NAMES) == "Erin Davis"
    blackboard = f"Exercise 2_jdoe_attempt_2026-12-01-10-20-30_{EX02}"
    assert student_id(blackboard, NAMES) == "jdoe"
    assert lms_name(blackboard).submitted.isoformat() == "2026-12-01T10:20:30+00:00"
    assert student_id("Exercise 2_jdoe_attempt_2026-12-01-10-20-30_file.ipynb", NAMES) == "jdoe"
    assert lms_name(f"alice-{EXERCISE}") is None and student_id(f"alice-{EXERCISE}", NAMES) == "alice"


def test_a_canvas_class_is_one_row_per_student_and_exercise_with_the_newest_file_graded(tmp_path):
    files = [  # the newest file comes first by name: the name order must not decide
        _age(write_submission(tmp_path / f"smithalice_1001_50001_{EXERCISE}", passed=list(CHECKS)), 10),
        _age(write_submission(tmp_path / f"smithalice_1001_50002_{EXERCISE[:-6]}-1.ipynb", passed=[]), 300),
        _age(write_submission(tmp_path / f"smithalice_LATE_1001_50003_{EXERCISE[:-6]}-2.ipynb", passed=[]), 200),
        write_submission(tmp_path / f"doejane_1002_50010_{EXERCISE}", passed=["euler-step"]),
    ]
    book = tmp_path / "grades.csv"
    summary = _grade(files, book)
    rows = {r["student"]: r for r in _rows(book)}
    assert sorted(rows) == ["doejane", "smithalice"]
    assert rows["smithalice"]["points"] == "4" and rows["smithalice"]["submission"] == str(files[0])
    assert len(summary.notes) == 2 and all("passed over" in n for n in summary.notes)


def test_a_blackboard_timestamp_outranks_the_files_modification_time(tmp_path):
    early = f"Ex1_jdoe_attempt_2026-12-01-09-00-00_{EXERCISE}"
    late = f"Ex1_jdoe_attempt_2026-12-02-09-00-00_{EXERCISE}"
    files = [
        _age(write_submission(tmp_path / early, passed=[]), 0),  # copied last, but submitted first
        _age(write_submission(tmp_path / late, passed=["euler-step"]), 3600),
    ]
    assert submitted_at(files[1]) > submitted_at(files[0])
    book = tmp_path / "grades.csv"
    _grade(files, book)
    (row,) = _rows(book)
    assert (row["student"], row["points"], row["submission"]) == ("jdoe", "1", str(files[1]))


def test_a_decomposed_file_name_is_the_student_of_a_composed_roster(tmp_path):
    composed = unicodedata.normalize("NFC", "renée")
    decomposed = unicodedata.normalize("NFD", "renée")
    assert composed != decomposed
    nfd_file = write_submission(tmp_path / f"{decomposed}-{EXERCISE}", passed=["euler-step"])
    roster = tmp_path / "roster.csv"
    roster.write_text(f"file,student\n{composed}-{EXERCISE},s{composed}\n", encoding="utf-8")
    table = gradebook.read_roster(roster)
    assert student_id(nfd_file, NAMES, table) == f"s{composed}"
    roster.write_text(f"file,student\n{composed},s42\n", encoding="utf-8")  # by the id: any file name
    assert student_id(nfd_file, NAMES, gradebook.read_roster(roster)) == "s42"
    # Without a roster, the NFD and NFC spellings are one student: one row, the newer file graded.
    _age(nfd_file, 100)
    nfc_file = write_submission(tmp_path / "b" / f"{composed}-{EXERCISE}", passed=list(CHECKS))
    book = tmp_path / "grades.csv"
    _grade([nfd_file, nfc_file], book)
    assert [(r["student"], r["points"]) for r in _rows(book)] == [(composed, "4")]


def test_regrade_of_an_unknown_id_is_an_error_naming_the_close_matches(tmp_path, capsys):
    files = [write_submission(tmp_path / f"{s}-{EXERCISE}", passed=[]) for s in ("alice", "alicia", "bob")]
    book = tmp_path / "grades.csv"
    _grade(files, book)
    before = book.read_text(encoding="utf-8")
    with pytest.raises(gradebook.GradebookError, match="--regrade 'alcie': no such student") as info:
        _grade(files, book, regrade=["alcie"])
    assert "'alice'" in str(info.value) and "'bob'" not in str(info.value)
    assert book.read_text(encoding="utf-8") == before  # nothing graded, nothing written
    _grade(files[2:], book, regrade=["alice"])  # in the gradebook, not in this run: known
    from nodecourse.course import cli

    args = ["grade", str(files[0]), "--gradebook", str(book), "--regrade", "alcie", "--allow-unisolated"]
    assert cli.run_grade(cli.build_parser().parse_args(args)) == 2
    err = capsys.readouterr().err
    assert "no such student" in err and "'alice'" in err


def test_the_copy_suffix_rule_is_the_graders():
    from nodecourse.course import references, students

    assert students.COPY_SUFFIX.pattern == references.COPY_SUFFIX.pattern
