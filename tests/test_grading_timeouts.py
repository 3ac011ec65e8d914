"""Timeouts and restarts in the grader's run loop, on a scripted kernel.

:class:`nodecourse.course.grading_run.Runner` is driven here by a fake kernel whose
cells pass, fail or hang as each test scripts them, so the restart logic is tested
exactly and in milliseconds. The same logic on a real kernel is in
test_grading_attacks.py (a looping answer, then a fresh working folder).
"""

from __future__ import annotations

import json

import pytest
from nbformat.v4 import new_code_cell

from nodecourse.course import grading_run, sandbox
from nodecourse.course.grading_kernel import CellResult

ISOLATION = sandbox.Isolation(False, "", "", "scripted kernel")


class ScriptedKernel:
    """Runs cells by their first line: ``# ok``, ``# hang``, ``# hang-on-replay`` (passes in the
    first kernel only), ``# name-error NAME``. Counts the kernels started."""

    started = 0

    def __init__(self, isolation, limits=None):
        type(self).started += 1
        self.number = type(self).started

    def execute(self, code, timeout_s, user_expressions=None, silent=False):
        first = code.splitlines()[0] if code else ""
        if first == "# hang" or (first == "# hang-on-replay" and self.number > 1):
            return CellResult("timeout")
        if first.startswith("# name-error"):
            return CellResult("error", ename="NameError", evalue=f"name '{first.split()[-1]}' is not defined")
        return CellResult("ok", stdout="PASS c\n" if "check(" in code else "")

    def evaluate(self, expression, timeout_s):
        return CellResult("ok", stdout=repr(json.dumps({"ok": True, "value": 1})))

    def stderr_tail(self):
        return ""

    def close(self):
        pass


@pytest.fixture
def scripted(monkeypatch):
    ScriptedKernel.started = 0
    monkeypatch.setattr(grading_run, "Kernel", ScriptedKernel)
    return ScriptedKernel


def _answer(task, first_line):
    return new_code_cell(f"{first_line}\ndef {task}():\n    pass", metadata={"nodecourse": {"answer": task}})


def _check(cid, first_line="# ok"):
    return new_code_cell(f"{first_line}\ncheck('{cid}', True)", metadata={"nodecourse": {"check": cid}})


def _task_check(cid):
    return new_code_cell(f'self_check("01", "{cid}", globals())', metadata={"nodecourse": {"check": cid}})


def test_a_replay_that_times_out_restarts_the_kernel_and_later_tasks_say_what_they_needed(scripted):
    """Issue 20: after a replay timed out, the grader went on with the stuck kernel, so every later
    task timed out too. Now the kernel is restarted again without that cell, and a task that needs it
    says so (not a NameError, not a timeout of its own)."""
    cells = [
        new_code_cell("# ok\nimport math"),
        _answer("a", "# hang-on-replay"),
        _answer("b", "# hang"),
        _task_check("euler-step"),
        _task_check("residual-block"),
    ]
    runner = grading_run.Runner(
        cells,
        {3: ("01", "euler-step"), 4: ("01", "residual-block")},
        timeout_s=5,
        isolation=ISOLATION,
        seed=1,
        guard=False,
        needs={3: ("a",), 4: ("a", "b")},
    )
    outcomes, notes = runner.run()
    assert scripted.started == 3  # the first kernel, the one lost on replay, the one that finished
    assert outcomes[2]["reason"] == "timed out after 5 s"
    assert outcomes[3] == {
        "outcome": "failed",
        "stdout": "",
        "reason": (
            "not run: needs answer 'a', whose cell passed, then timed out after 5 s (its code did not finish) "
            "when replayed after a restart"
        ),
    }
    assert outcomes[4]["reason"].startswith("not run: needs answer 'a'"), outcomes[4]
    assert len(notes) == 1 and "on replay these failed: cell 1 (timed out after 5 s)" in notes[0], notes


def test_a_task_that_needs_a_timed_out_answer_says_so(scripted):
    cells = [
        new_code_cell("# ok"),
        _answer("a", "# hang"),
        _task_check("euler-step"),
        _answer("c", "# ok"),
        _task_check("residual-block"),
    ]
    runner = grading_run.Runner(
        cells,
        {2: ("01", "euler-step"), 4: ("01", "residual-block")},
        timeout_s=7,
        isolation=ISOLATION,
        seed=1,
        guard=False,
        needs={2: ("a",), 4: ("c",)},
    )
    outcomes, _ = runner.run()
    assert outcomes[2]["reason"] == (
        "not run: needs answer 'a', whose cell timed out after 7 s (its code did not finish)"
    )
    assert outcomes[4]["outcome"] == "answered"  # the next task, on the restarted kernel, is still asked


def test_a_check_cell_whose_answer_timed_out_names_it_instead_of_a_name_error(scripted):
    """A check cell run as it is (an exercise not yet converted): the NameError for a name the
    timed-out answer defines becomes a line that names that answer."""
    cells = [new_code_cell("# ok"), _answer("a", "# hang"), _answer("b", "# ok"), _check("c", "# name-error a")]
    runner = grading_run.Runner(cells, {}, timeout_s=3, isolation=ISOLATION, seed=1, guard=False, needs={})
    outcomes, _ = runner.run()
    assert outcomes[3]["reason"] == (
        "not run: needs answer 'a' (it defines a), whose cell timed out after 3 s (its code did not finish)"
    )


def test_an_observed_task_runs_alone_in_a_fresh_kernel_and_the_main_one_goes_on(scripted, monkeypatch):
    """A check that must watch the learner's process (peak memory) gets a kernel of its own: the
    cells that passed run again there, the task is asked there, and that kernel is closed."""
    cells = [new_code_cell("# ok"), _answer("a", "# ok"), _task_check("euler-step"), _task_check("residual-block")]
    asked = []

    class Watching(ScriptedKernel):
        def evaluate(self, expression, timeout_s):
            asked.append((self.number, expression.split()[-1]))
            return super().evaluate(expression, timeout_s)

    monkeypatch.setattr(grading_run, "Kernel", Watching)
    monkeypatch.setattr(grading_run.kernel_side, "request", lambda task, inputs: f"ask {task.check!r}")
    runner = grading_run.Runner(
        cells,
        {2: ("01", "euler-step"), 3: ("01", "residual-block")},
        timeout_s=5,
        isolation=ISOLATION,
        seed=1,
        guard=False,
        needs={2: ("a",), 3: ("a",)},
        observed=frozenset({2}),
    )
    outcomes, notes = runner.run()
    assert asked == [(2, "'euler-step'"), (1, "'residual-block'")]  # kernel 2 for the observed task only
    assert outcomes[2]["outcome"] == outcomes[3]["outcome"] == "answered" and notes == []
