"""Tasks that ask the learner to write something themselves.

Each such task lists the library functions that would answer it (``LIBRARY_ANSWERS``
in its exercise's spec module); while the task runs, in the grader's kernel as in
the notebook's self-check, they raise "this task asks you to write it (...)". The
function object itself is changed, so a renamed import does not get around it;
it is restored afterwards (the rest of the notebook uses the library as usual).
"""

from __future__ import annotations

import pytest
import torch

from nodecourse.course import tasks
from nodecourse.course.checks import CheckFailed
from nodecourse.course.tasks import plain

LIBRARY_EULER = """
import torch
from nodecourse.solvers import odeint as solve  # a renamed import
def euler_step(f, t, y, h):
    ts = torch.tensor([t, t + h], dtype=torch.float64)
    return solve(f, y, ts, method="euler", step_size=h).ys[-1]
def euler_integrate(f, y0, t0, t1, n):
    ts = torch.tensor([t0, t1], dtype=torch.float64)
    return solve(f, y0, ts, method="euler", step_size=(t1 - t0) / n).ys[-1]
"""

LIBRARY_ANDERSON = """
from nodecourse import fixed_point
def anderson(f, z0, m=6, tol=1e-8, max_iter=3000):
    result = fixed_point(lambda z: f(z), z0, method="anderson", tol=tol, max_iter=max_iter)
    return result.z, result.n_iter
"""

LIBRARY_HEUN = """
from nodecourse.solvers._reversible import heun_step, heun_inverse
def reversible_heun_step(func, t, h, y, z, f):
    return heun_step(func, t, h, y, z, f)
def reversible_heun_inverse(func, t1, h, y1, z1, f1):
    return heun_inverse(func, t1, h, y1, z1, f1)
"""

CASES = [
    ("01", "euler-step", LIBRARY_EULER, "nodecourse.solvers:odeint"),
    ("01", "euler-integrate-matches", LIBRARY_EULER, "nodecourse.solvers:odeint"),
    ("06", "anderson", LIBRARY_ANDERSON, "fixed_point"),
    ("10", "heun-step", LIBRARY_HEUN, "nodecourse.solvers._reversible:heun_step"),
    ("10", "heun-inverse", LIBRARY_HEUN, "nodecourse.solvers._reversible:heun_inverse"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_the_librarys_own_answer_raises_while_the_task_runs(case, torch_defaults):
    exercise, check, source, named = case
    ns: dict = {}
    exec(compile(source, "<answer>", "exec"), ns)
    reply = plain.decode(tasks.answer_text(exercise, check, 3, ns))
    assert reply["ok"] is False and reply["type"] == "RuntimeError", reply
    assert reply["message"].startswith("this task asks you to write it (") and named in reply["message"], reply
    task = tasks.get_task(exercise, check)
    reference = plain.decode(tasks.reference_text(exercise, [check], 3))[check]
    verdict = tasks.judge_texts(task, tasks.answer_text(exercise, check, 3, ns), reference)
    assert not verdict.passed and "this task asks you to write it" in verdict.detail
    with pytest.raises(CheckFailed, match=f"FAIL {check}: RuntimeError: this task asks you to write it"):
        tasks.self_check(exercise, check, ns)  # the self-check says the same


def test_the_library_works_again_after_the_task(torch_defaults):
    from nodecourse import odeint

    ns: dict = {}
    exec(compile(LIBRARY_EULER, "<answer>", "exec"), ns)
    tasks.answer_text("01", "euler-step", 1, ns)
    sol = odeint(
        lambda t, y: -y,
        torch.ones(1, dtype=torch.float64),
        torch.tensor([0.0, 1.0], dtype=torch.float64),
        method="euler",
        step_size=0.5,
    )
    assert float(sol.ys[-1]) == pytest.approx(0.25)


def test_every_listed_library_answer_exists_and_can_be_disabled():
    from nodecourse.course.tasks.kernel_side import disabled

    listed = 0
    for exercise in tasks.CONVERTED:
        for task in tasks.tasks_for(exercise).values():
            if not task.library_answers:
                continue
            undo = disabled(task.library_answers)
            try:
                assert len(undo) == len(task.library_answers), (exercise, task.check, task.library_answers)
            finally:
                for fn, code in undo:
                    fn.__code__ = code
            listed += 1
    assert listed >= 8


def test_an_honest_answer_is_not_refused(torch_defaults):
    ns: dict = {}
    exec("def euler_step(f, t, y, h):\n    return y + h * f(t, y)\n", ns)
    task = tasks.get_task("01", "euler-step")
    reference = plain.decode(tasks.reference_text("01", ["euler-step"], 2))["euler-step"]
    assert tasks.judge_texts(task, tasks.answer_text("01", "euler-step", 2, ns), reference).passed


def test_routes_around_a_plain_import_are_flagged_for_review():
    """Issue 28: the review flag was bypassed by ``pkgutil.resolve_name``, ``vars(sys)["modules"]`` and
    ``runpy``; restoring a disabled function needs ``reload`` or a code object. Each is named now."""
    from nodecourse.course import grading

    assert grading.machinery_used("import pkgutil\nf = pkgutil.resolve_name('nodecourse:odeint')") == [
        "pkgutil",
        "resolve_name",
    ]
    assert grading.machinery_used("import runpy\nrunpy.run_module('nodecourse.solvers')") == ["runpy"]
    assert grading.machinery_used("import sys\nm = vars(sys)['modules']") == ["modules"]
    assert grading.machinery_used("from importlib import reload\nreload(solvers)") == ["importlib", "reload"]
    assert grading.machinery_used("import types\ng = types.FunctionType(c, {})") == ["FunctionType"]
    assert grading.machinery_used(LIBRARY_EULER) == []  # a plain library call is refused at run time instead


@pytest.mark.slow
def test_the_grader_refuses_the_librarys_euler_in_the_sandbox(tmp_path):
    import nbformat

    from nodecourse.course import grading, sandbox
    from nodecourse.course.exercise_builder import answer_id
    from notebook_fixtures import REPO, write

    if not sandbox.probe().sandboxed:
        pytest.skip(f"no sandbox here: {sandbox.probe().reason}")
    solution = REPO / "solutions" / "01_resnet_as_euler_exercises.ipynb"
    nb = nbformat.read(solution, as_version=4)
    for cell in nb.cells:
        if answer_id(cell) in ("euler-step", "euler-integrate"):
            cell.source = LIBRARY_EULER
    rows, _ = grading.grade_notebook(write(nb, tmp_path / solution.name), seed=6, timeout_s=60)
    by = {r.check: r for r in rows}
    for check in ("euler-step", "euler-integrate-matches", "euler-order"):
        assert not by[check].passed and "this task asks you to write it" in by[check].reason, by[check]
