"""`nodecourse grade --gradebook`: a class graded into one CSV, resumable, with a summary.

The slow test grades a small generated class of exercise 1 (class_fixtures.py:
a solution, an unsolved notebook, half-solved ones, attacks) and checks every
row's total against what its answers earn. The 30-submission class the README
quotes is the same generator (``python tests/class_fixtures.py build/class30``).
"""
from __future__ import annotations

import csv
import shutil

import pytest

from class_fixtures import make_class
from grading_attacks import CHECKS
from nodecourse.course import gradebook, sandbox
from notebook_fixtures import run_cli


def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
@pytest.mark.skipif(not sandbox.probe().sandboxed, reason=f"no sandbox here: {sandbox.probe().reason}")
def test_a_class_is_graded_with_the_right_totals_and_an_interrupted_run_resumes(tmp_path):
    expected = make_class(tmp_path / "class", size=6)  # one attack, then every plain kind (solved, unsolved...)
    files = sorted(str(p) for p in (tmp_path / "class").glob("*.ipynb"))
    book = tmp_path / "grades.csv"
    proc = run_cli("grade", *files, "--gradebook", str(book), "--timeout", "60", "--seed", "3", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = _rows(book)
    assert [r["submission"] for r in rows] == files  # one row per submission, in the order given
    assert list(rows[0]) == gradebook.FIXED_BEFORE + list(CHECKS) + gradebook.FIXED_AFTER
    for r in rows:
        name = r["submission"].rsplit("/", 1)[-1]
        assert int(r["passed"]) == expected[name], (name, r)
        assert r["total"] == f"{expected[name]}/4" and r["isolation"] == "bubblewrap" and r["error"] == ""
        assert sum(r[c] == "pass" for c in CHECKS) == expected[name]
    assert "euler-step" in proc.stdout and "pass rate" in proc.stdout and "mean total" in proc.stdout

    # interrupted after two rows: the rest is graded, the two are skipped; a changed file is graded again
    with open(book, newline="", encoding="utf-8") as fh:
        lines = fh.read().splitlines(keepends=True)
    book.write_text("".join(lines[:3]), encoding="utf-8")
    shutil.copy(files[-1], files[0])  # the first submission changed since its row was written
    proc = run_cli("grade", *files, "--gradebook", str(book), "--timeout", "60", "--seed", "3", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"{len(files) - 1} submission(s) graded, 1 skipped"), proc.stdout
    again = _rows(book)
    assert [r["submission"] for r in again] == files
    assert again[0]["passed"] == again[-1]["passed"] and again[1] == rows[1]


def test_gradebook_errors_name_the_argument(tmp_path):
    with pytest.raises(gradebook.GradebookError, match="ending in .csv"):
        gradebook.grade_class([], tmp_path / "grades.txt", timeout_s=10)
    with pytest.raises(gradebook.GradebookError, match="do not exist"):
        gradebook.grade_class([str(tmp_path / "nope.ipynb")], tmp_path / "g.csv", timeout_s=10)
    proc = run_cli("grade", "x.ipynb", "--jobs", "2")
    assert proc.returncode == 2 and "--jobs applies to --gradebook" in proc.stderr
    book = tmp_path / "g.csv"
    book.write_text("submission,other\n", encoding="utf-8")
    with pytest.raises(gradebook.GradebookError, match="columns"):
        gradebook._read_existing(book, gradebook.FIXED_BEFORE + ["a"] + gradebook.FIXED_AFTER)
