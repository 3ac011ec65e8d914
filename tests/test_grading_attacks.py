"""Attack routes on the grader, each against the grader on exercise 1 (kernels: slow).

Every route in grading_attacks.py replaces one answer of the solution with a
wrong answer plus the attack; the grader must report exactly the checks the
untouched answers earn (``Attack.passes``). Then the routes that need more
than a verdict: planted files gone after the run and never helping a later
wrong answer, the kernel's words escaped, the JSON report out of the kernel's
reach, and a shadow package planted before a timeout absent after the restart.
The trust model in CONTRIBUTING.md names these tests.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest

from grading_attacks import ATTACKS, CHECKS, PLANTED_PTH, WRONG_STEP, attacked_notebook
from nodecourse.course import grading, sandbox
from nodecourse.course.exercise_builder import answer_id
from notebook_fixtures import REPO, SUBPROCESS_ENV, write

SOLUTION = REPO / "solutions" / "01_resnet_as_euler_exercises.ipynb"
NAME = SOLUTION.name
SEED = 20
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sandbox.probe().sandboxed, reason=f"no sandbox here: {sandbox.probe().reason}"),
]


@pytest.fixture(scope="module")
def solution():
    return nbformat.read(SOLUTION, as_version=4)


def _planted_pth() -> Path:
    return Path(sysconfig.get_paths()["purelib"]) / PLANTED_PTH


@pytest.fixture(autouse=True)
def nothing_planted_on_this_machine():
    """Whatever an attack planted where the grader could see it later is removed, and fails the test."""
    yield
    pth = _planted_pth()
    if pth.exists():
        pth.unlink()
        pytest.fail(f"an answer wrote {pth} into the environment")


def _grade(nb, tmp_path, **kw):
    path = write(nb, tmp_path / NAME)
    rows, warnings = grading.grade_notebook(path, seed=SEED, timeout_s=kw.pop("timeout_s", 60), **kw)
    return {r.check: r for r in rows}, warnings


def _cli(args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "nodecourse.course.cli", *args],
        cwd=REPO,
        capture_output=True,
        env={**SUBPROCESS_ENV, **(env or {})},
        timeout=300,
    )


@pytest.fixture(scope="module")
def graded_attack(solution, tmp_path_factory):
    """The rows of attack ``name`` graded once in this module: a test that asks more of the same grade
    than its verdict reads these rows, rather than grading the same notebook the same way again."""
    graded = {}

    def grade(name):
        if name not in graded:
            graded[name] = _grade(attacked_notebook(solution, name), tmp_path_factory.mktemp(name))[0]
        return graded[name]

    return grade


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_gets_no_check_its_answers_did_not_earn(name, graded_attack):
    rows = graded_attack(name)
    passed = tuple(c for c in CHECKS if rows[c].passed)
    assert passed == ATTACKS[name].passes, {c: (rows[c].passed, rows[c].reason) for c in CHECKS}


def test_reading_solutions_fails_because_solutions_are_not_there(graded_attack):
    rows = graded_attack("reads-solutions")
    assert "FileNotFoundError" in rows["euler-step"].reason and "solutions" in rows["euler-step"].reason


def test_nothing_planted_survives_and_a_later_wrong_answer_still_fails(solution, tmp_path):
    """Issue 20: a startup file in $IPYTHONDIR, a .pth in site-packages (the next run of a wrong
    notebook then reported every check passed). The grader runs with its own HOME and IPYTHONDIR
    here, so that what leaks is seen."""
    home = tmp_path / "home"
    ipython = home / ".ipython"
    env = {"HOME": str(home), "IPYTHONDIR": str(ipython)}
    for name in ("ipython-startup-planted", "pth-planted"):
        path = write(attacked_notebook(solution, name), tmp_path / name / NAME)
        proc = _cli(["grade", str(path), "--json", "--seed", str(SEED)], env)
        assert proc.returncode == 1, proc.stderr
    rows = {r["check"]: r for r in json.loads(proc.stdout)}
    assert "Read-only file system" in rows["euler-step"]["reason"], rows["euler-step"]
    assert not _planted_pth().exists()
    assert not list(home.rglob("*planted*")), list(home.rglob("*"))
    wrong = copy.deepcopy(solution)
    for cell in wrong.cells:
        if answer_id(cell) == "euler-step":
            cell.source = WRONG_STEP
    path = write(wrong, tmp_path / "wrong" / NAME)
    proc = _cli(["grade", str(path), "--json", "--seed", str(SEED)], env)
    rows = {r["check"]: r for r in json.loads(proc.stdout)}
    assert proc.returncode == 1 and not any(rows[c]["passed"] for c in CHECKS), rows


def test_the_kernels_words_are_escaped(solution, tmp_path):
    path = write(attacked_notebook(solution, "control-sequences"), tmp_path / NAME)
    proc = _cli(["grade", str(path), "--seed", str(SEED)])
    out = proc.stdout.decode() + proc.stderr.decode()
    assert b"\x1b" not in proc.stdout + proc.stderr, out
    assert "\\x1b[2J" in out and "FAIL" in out and "4/4 checks pass" not in out, out


def test_the_json_report_cannot_be_reached_from_the_kernel(solution, tmp_path):
    """As root, the kernel could write into the grader's stdout through /proc/<ppid>/fd/1."""
    path = write(attacked_notebook(solution, "writes-grader-stdout"), tmp_path / NAME)
    proc = _cli(["grade", str(path), "--json", "--seed", str(SEED)])
    assert b"FORGED" not in proc.stdout + proc.stderr
    rows = json.loads(proc.stdout)  # exactly one JSON document, the grader's
    assert [r["check"] for r in rows] == list(CHECKS) and not any(r["passed"] for r in rows)


def test_a_package_planted_before_a_timeout_is_gone_after_the_restart(solution, tmp_path):
    """A shadow ./nodecourse/ written by an answer that then loops: the restarted kernel starts in a
    fresh working folder; the task that needed the looping answer says so."""
    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        if answer_id(cell) == "residual-block":
            cell.source = (
                "import os\nos.makedirs('nodecourse', exist_ok=True)\n"
                "open('nodecourse/__init__.py', 'w').write('raise ImportError(\"shadow\")')\n"
                "while True:\n    pass\n"
            )
        elif answer_id(cell) == "euler-integrate":
            cell.source = "import os\nassert not os.path.exists('nodecourse'), 'the shadow survived'\n" + cell.source
    # Every cell runs under this limit, the setup cell's torch import (a few seconds on a loaded
    # machine, again when it is replayed) included: 15 s leaves it room, and the loop costs 15 s.
    rows, warnings = _grade(nb, tmp_path, timeout_s=15)
    assert rows["residual-block"].reason == (
        "not run: needs answer 'residual-block', whose cell timed out after 15 s (its code did not finish)"
    ), rows["residual-block"]
    assert rows["euler-step"].passed and rows["euler-integrate-matches"].passed and rows["euler-order"].passed, rows
    assert any("restarted the kernel" in w for w in warnings), warnings
