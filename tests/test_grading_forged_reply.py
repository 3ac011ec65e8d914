"""Nothing in the learner's kernel can decide or carry a verdict.

The generic forged-reply cell below is the same for every exercise: placed at the
top of the first answer cell of an *unsolved* notebook, it replaces whatever the
kernel uses to reply (the old ``answer_text``, and ``pickle.loads``, through
which the grader's one call arrives) with code that computes the task's own
reference from the task specs. In the grader's sandbox the task specs are not
there, so it earns nothing; without a sandbox (self-study) the same cell does
forge the replies, which shows the test can fail and why the sandbox matters.
"""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest

from conftest import subprocess_timeout
from nodecourse.course import grading, sandbox, tasks
from nodecourse.course.exercise_builder import answer_id, build_exercise
from notebook_fixtures import REPO, write

EX01 = REPO / "solutions" / "01_resnet_as_euler_exercises.ipynb"
CHECKS = ("euler-step", "residual-block", "euler-integrate-matches", "euler-order")
NEEDS_BWRAP = pytest.mark.skipif(
    not sandbox.probe().sandboxed, reason=f"no sandbox on this machine: {sandbox.probe().reason}"
)

FORGED_REPLY = """
try:
    import pickle as _pickle, functools as _functools
    import nodecourse.course.tasks as _T
    from nodecourse.course.tasks import plain as _plain
    from nodecourse.course.tasks.spec import make_inputs as _make_inputs

    def _forged_text(ex, check, seed, ns):
        task = _T.get_task(ex, check)
        return _plain.dumps({"ok": True, "value": task.reference(_make_inputs(task, seed))})
    _T.answer_text = _forged_text

    def _task_of(run):
        for ex in _T.CONVERTED:
            for task in _T.tasks_for(ex).values():
                if (task.run.__module__, task.run.__qualname__) == (run.__module__, run.__qualname__):
                    return task

    _real_loads = _pickle.loads
    def _forged_loads(data, *args, **kwargs):
        call = _real_loads(data, *args, **kwargs)
        if isinstance(call, _functools.partial) and len(call.args) >= 2:
            task, inputs = _task_of(call.args[0]), call.args[1]
            if task is not None:
                return lambda ns: _plain.dumps({"ok": True, "value": task.reference(inputs)})
        return call
    _pickle.loads = _forged_loads
    FORGED = "installed"
except ImportError as exc:
    FORGED = f"not installed: {exc}"
"""


def forged_unsolved_notebook(solution=EX01):
    """An exercise unsolved, the forged-reply cell at the top of its first answer cell."""
    nb = build_exercise(nbformat.read(solution, as_version=4))
    first = next(c for c in nb.cells if answer_id(c))
    first.source = FORGED_REPLY + "\n" + first.source
    return nb


def test_the_learners_kernel_cannot_import_task_specs_or_grader_modules():
    """The sandbox's view of the package: nodecourse/course/ holds only what a setup cell or the
    kernel guard imports; the library itself is all there."""
    isolation = sandbox.probe()
    if not isolation.sandboxed:
        pytest.skip(f"no sandbox here: {isolation.reason}")
    probe = (
        "import importlib, json\nout = {}\n"
        "for name in ('nodecourse.course.tasks', 'nodecourse.course.tasks.ex01', 'nodecourse.course.grading',"
        " 'nodecourse.course.gradebook', 'nodecourse.course.checks', 'nodecourse.course.kernel_guard',"
        " 'nodecourse.solvers', 'nodecourse.models'):\n"
        "    try:\n        importlib.import_module(name); out[name] = 'ok'\n"
        "    except ImportError as exc:\n        out[name] = 'ImportError'\n"
        "print(json.dumps(out))\n"
    )
    argv, env = sandbox.wrap(isolation, [sys.executable, "-c", probe], {"PYTHONPATH": str(REPO)}, hide_grader=True)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=subprocess_timeout())
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen == {
        "nodecourse.course.tasks": "ImportError",
        "nodecourse.course.tasks.ex01": "ImportError",
        "nodecourse.course.grading": "ImportError",
        "nodecourse.course.gradebook": "ImportError",
        "nodecourse.course.checks": "ok",
        "nodecourse.course.kernel_guard": "ok",
        "nodecourse.solvers": "ok",
        "nodecourse.models": "ok",
    }, seen


@pytest.mark.slow
@NEEDS_BWRAP
def test_a_forged_reply_earns_nothing_in_the_sandbox(tmp_path):
    path = write(forged_unsolved_notebook(), tmp_path / EX01.name)
    rows, _ = grading.grade_notebook(path, seed=11, timeout_s=60)
    assert [r.check for r in rows] == list(CHECKS)
    assert not any(r.passed for r in rows), [(r.check, r.reason) for r in rows]
    # The first check's answer cell holds the forged code, so the grader's reading of it refuses
    # it by name (it imports the grader's own modules); the others are simply not done.
    first, *rest = rows
    assert "this task asks you to write it" in first.reason and "nodecourse.course.tasks" in first.reason, first
    assert all("NotImplementedError" in r.reason or "not run" in r.reason for r in rest), rest


@pytest.mark.slow
def test_without_a_sandbox_the_same_cell_forges_replies(tmp_path, monkeypatch):
    """Self-study grading (no sandbox) hides nothing: the same cell passes checks it never solved.
    This is the route the sandbox closes, and why such a grade says "self-study only"."""
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/nonexistent/bwrap")
    isolation = sandbox.probe()
    assert not isolation.sandboxed
    path = write(forged_unsolved_notebook(), tmp_path / EX01.name)
    rows, _ = grading.grade_notebook(path, seed=11, timeout_s=60, isolation=isolation)
    assert sum(r.passed for r in rows) >= 2, [(r.check, r.reason) for r in rows]


@pytest.mark.slow
@NEEDS_BWRAP
@pytest.mark.parametrize("exercise", [e for e in tasks.CONVERTED if e != "01"])
def test_the_same_forged_reply_earns_nothing_in_any_exercise(exercise, tmp_path):
    solution = next((REPO / "solutions").glob(f"{exercise}_*.ipynb"))
    path = write(forged_unsolved_notebook(solution), tmp_path / solution.name)
    rows, _ = grading.grade_notebook(path, seed=11, timeout_s=120)
    assert rows and not any(r.passed for r in rows), [(r.check, r.passed, r.reason) for r in rows]
