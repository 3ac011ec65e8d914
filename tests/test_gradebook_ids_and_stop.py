"""Class mode's feedback names, isolation refusal and stop signals (issue 41, items 5 and 6).

- No two student ids share a feedback file (accents, scripts, space against
  underscore, case on a case-insensitive filesystem).
- Without a sandbox, ``--gradebook`` grades nothing unless ``--allow-unisolated``,
  and then the summary and every feedback file say so.
- SIGTERM and SIGHUP end the run's workers and what they started, and leave the
  CSV whole with the rows finished before the signal.

All use the stand-in grading of gradebook_fakes.py: no kernel starts.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import unicodedata
from pathlib import Path

import pytest
from gradebook_fakes import EXERCISE, fake_grade, write_submission

from nodecourse.course import gradebook
from nodecourse.course.feedback import feedback_name, write_feedback
from nodecourse.course.sandbox import Isolation

TESTS = Path(__file__).resolve().parent
# Ids that the old rule (every character outside [A-Za-z0-9._-] made a "_") gave one file per group.
COLLIDING = [
    ("josé", "josè", "jose"),  # accents (and the plain spelling)
    ("张伟", "李娜"),  # CJK: nothing left of either but "_"
    ("Jane Doe", "Jane_Doe", "Jane-Doe"),  # space, underscore, hyphen
    ("alice", "Alice", "ALICE"),  # one file on a case-insensitive filesystem (macOS, Windows)
    ("rene\u0301e", "ren\u00e9e"),  # the same letters decomposed and composed: two CSV keys, two files
]
ALL_IDS = [sid for group in COLLIDING for sid in group]


def _result(exercise=EXERCISE, passed=True, unisolated=""):
    return {
        "rows": [{"exercise": exercise, "check": "euler-step", "passed": passed, "reason": ""}],
        "error": "",
        "seed": 7,
        "warnings": [],
        "unisolated": unisolated,
    }


def test_feedback_names_never_collide_even_ignoring_case():
    names = [feedback_name(s) for s in ALL_IDS]
    assert len({n.lower() for n in names}) == len(ALL_IDS), names
    for name in names:
        assert name.isascii() and name == name.lower() and name.endswith(".md"), name
    assert feedback_name("José Ruiz").startswith("jose_ruiz-")  # readable: the slug keeps the letters
    assert feedback_name("张伟").startswith("student-")
    assert feedback_name("../../etc/passwd").startswith("etc_passwd-")  # no path separators survive


def test_each_student_keeps_their_own_feedback_file(tmp_path):
    for i, sid in enumerate(ALL_IDS):
        write_feedback(tmp_path, sid, _result(passed=i % 2 == 0))
    files = sorted(tmp_path.iterdir())
    assert len(files) == len(ALL_IDS)
    for i, sid in enumerate(ALL_IDS):
        text = (tmp_path / feedback_name(sid)).read_text(encoding="utf-8")
        assert text.splitlines()[0] == f"# Feedback for {sid}"
        assert ("| euler-step | pass |" in text) == (i % 2 == 0), sid


def test_a_short_hash_collision_falls_back_to_the_full_hash(tmp_path):
    # Another id's file already holds this id's short name: it is left alone.
    (tmp_path / feedback_name("ada")).write_text("# Feedback for someone else\n", encoding="utf-8")
    path = write_feedback(tmp_path, "ada", _result())
    assert path.name == feedback_name("ada", 64)
    assert (tmp_path / feedback_name("ada")).read_text(encoding="utf-8") == "# Feedback for someone else\n"


def test_the_gradebook_writes_one_feedback_file_per_id(tmp_path):
    files = [write_submission(tmp_path / "in" / sid / EXERCISE, passed=["euler-step"]) for sid in ALL_IDS]
    book = tmp_path / "grades.csv"
    gradebook.grade_class([str(f) for f in files], book, timeout_s=10, jobs=2, seed=5, grader=fake_grade)
    ids = sorted({unicodedata.normalize("NFC", s) for s in ALL_IDS})  # renée decomposed is renée composed
    with open(book, newline="", encoding="utf-8") as fh:
        assert sorted(r["student"] for r in csv.DictReader(fh)) == ids
    folder = tmp_path / "grades-feedback"
    assert sorted(p.name for p in folder.iterdir()) == sorted(feedback_name(s) for s in ids)


NO_SANDBOX = Isolation(False, "", "", "/bin/false cannot create the sandbox here: exit code 1")


def test_class_mode_without_isolation_grades_nothing_unless_allowed(tmp_path):
    files = [str(write_submission(tmp_path / f"{s}-{EXERCISE}", passed=["euler-step"])) for s in ("hal", "ivy")]
    book = tmp_path / "grades.csv"
    with pytest.raises(gradebook.GradebookError, match="--allow-unisolated") as info:
        gradebook.grade_class(files, book, timeout_s=10, jobs=1, seed=5, grader=fake_grade, isolation=NO_SANDBOX)
    assert "/bin/false cannot create the sandbox" in str(info.value)
    assert not book.exists() and not (tmp_path / "grades-feedback").exists()

    summary = gradebook.grade_class(
        files, book, timeout_s=10, jobs=1, seed=5, grader=fake_grade, isolation=NO_SANDBOX, allow_unisolated=True
    )
    assert summary.lines()[0].startswith("graded WITHOUT isolation: /bin/false cannot create the sandbox")
    for sid in ("hal", "ivy"):
        text = (tmp_path / "grades-feedback" / feedback_name(sid)).read_text(encoding="utf-8")
        assert "- graded WITHOUT isolation: /bin/false cannot create the sandbox" in text


def test_the_cli_stops_before_grading_without_isolation(tmp_path):
    sub = write_submission(tmp_path / f"hal-{EXERCISE}", passed=["euler-step"])
    book = tmp_path / "grades.csv"
    env = dict(os.environ, NODECOURSE_BWRAP="/bin/false")
    cmd = [sys.executable, "-m", "nodecourse.course.cli", "grade", str(sub), "--gradebook", str(book)]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=TESTS.parent, timeout=100)
    assert run.returncode == 2, run.stderr
    assert "no isolation" in run.stderr and "--allow-unisolated" in run.stderr and "/bin/false" in run.stderr
    assert not book.exists()


STOPPED_RUN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from gradebook_fakes import sleepy_grade
    from nodecourse.course import gradebook
    try:
        gradebook.grade_class({files!r}, {book!r}, timeout_s=10, jobs=2, seed=5, grader=sleepy_grade)
    except gradebook.GradebookStopped as exc:
        print(exc, flush=True)
        sys.exit(3)
    """
)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_ends_every_process_of_the_run_and_keeps_the_csv_whole(tmp_path, signum):
    psutil = pytest.importorskip("psutil")
    files = [str(write_submission(tmp_path / f"ann-{EXERCISE}", passed=["euler-step"]))]
    files += [str(write_submission(tmp_path / f"{s}-{EXERCISE}", sleep=True)) for s in ("bob", "cy")]
    book = tmp_path / "grades.csv"
    script = STOPPED_RUN.format(tests=str(TESTS), files=files, book=str(book))
    run = subprocess.Popen([sys.executable, "-c", script], cwd=TESTS.parent, stdout=subprocess.PIPE, text=True)
    parent = psutil.Process(run.pid)

    def sleepers():  # the fake kernels: one per worker once both slow submissions are being graded
        procs = parent.children(recursive=True)
        return procs, [p for p in procs if "time.sleep(3600)" in " ".join(p.cmdline())]

    try:
        for _ in range(600):  # until ann's row is written and both workers wait on their child
            procs, sleeping = sleepers()
            if len(sleeping) == 2 and book.exists():
                break
            assert run.poll() is None, "the run ended before it was stopped"
            time.sleep(0.25)
        else:
            pytest.fail("the run never reached two sleeping submissions")
        procs, _ = sleepers()  # every process of the run: workers, their children, the resource tracker
        assert len(procs) >= 4
        run.send_signal(signum)
        out, _ = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 3, out
    assert f"stopped by {signal.Signals(signum).name}" in out and "1 submission(s) were written" in out
    gone, alive = psutil.wait_procs(procs, timeout=30)  # the resource tracker exits once its pipe closes
    assert not alive, [(p.pid, p.cmdline()) for p in alive]
    with open(book, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["student"], r["01:euler-step"]) for r in rows] == [("ann", "pass")]
    assert not list(tmp_path.glob("*.tmp"))
    with open(tmp_path / "grades.history.csv", newline="", encoding="utf-8") as fh:
        assert [r["student"] for r in csv.DictReader(fh)] == ["ann"]
    assert json.loads(Path(files[1]).read_text(encoding="utf-8"))["metadata"]["fake"]["sleep"] is True
