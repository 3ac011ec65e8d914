"""Exercise checks as task specs (:class:`~nodecourse.course.tasks.spec.Task`).

A converted check cell in an exercise notebook reads::

    # NBVAL_CHECK_OUTPUT
    from nodecourse.course.tasks import self_check
    self_check("01", "euler-step", globals())

In JupyterLab (or ``pytest --nbval``) that runs the whole task in the
learner's kernel on seed 0 and prints ``PASS euler-step`` or raises
``CheckFailed`` with the judge's message. The grader runs the same spec split
in three: :func:`answer_text` in the learner's isolated kernel (on a seed it
draws), :func:`reference_text` in a separate clean process, and
:func:`judge_texts` in its own process on the two plain-data replies.

Exercise keys are the two-digit prefixes of the notebooks ("01"); each has a
module ``exNN`` here with ``EXERCISE`` (the notebook's stem) and ``TASKS``.
"""
from __future__ import annotations

import importlib
import re
from typing import Mapping

from nodecourse.course.tasks import plain
from nodecourse.course.tasks.spec import Task, Verdict, make_inputs, neutral_state, unjudgeable

SELF_CHECK_SEED = 0
# The modules that hold converted exercises; an exercise not listed uses check cells run in the kernel.
CONVERTED = ("01", "02", "03", "04", "05", "06", "08", "09", "10")
_SELF_CHECK = re.compile(r"""\bself_check\(\s*(["'])(?P<ex>\d\d)\1\s*,\s*(["'])(?P<check>[^"']+)\3""")


class UnknownTask(LookupError):
    """No task spec for an exercise key and check id."""


def tasks_for(exercise: str) -> dict[str, Task]:
    """The task specs of exercise ``exercise`` ("01"), by check id."""
    if exercise not in CONVERTED:
        raise UnknownTask(f"exercise {exercise!r} has no task specs; converted exercises: {list(CONVERTED)}")
    module = importlib.import_module(f"nodecourse.course.tasks.ex{exercise}")
    return {t.check: t for t in module.TASKS}


def get_task(exercise: str, check: str) -> Task:
    """The spec of check ``check`` of exercise ``exercise``; :class:`UnknownTask` names the valid ids."""
    tasks = tasks_for(exercise)
    if check not in tasks:
        raise UnknownTask(f"exercise {exercise!r} has no check {check!r}; its checks: {sorted(tasks)}")
    return tasks[check]


def spec_call(source: str) -> tuple[str, str] | None:
    """``(exercise, check)`` when a check cell's source calls ``self_check("NN", "<check>", ...)``."""
    match = _SELF_CHECK.search(source)
    return (match["ex"], match["check"]) if match else None


def _error(exc: BaseException, task: Task) -> dict:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return {"ok": False, "type": type(exc).__name__, "message": message[:500], "hint": task.hint_for(str(exc))}


def answer_text(exercise: str, check: str, seed: int, namespace: Mapping) -> str:
    """Run the learner's code of one task on the inputs of ``seed``; the result as JSON text:
    ``{"ok": true, "value": ...}`` or ``{"ok": false, "type": ..., "message": ..., "hint": ...}``."""
    task = get_task(exercise, check)
    try:
        value = task.run(namespace, make_inputs(task, seed))
        return plain.dumps({"ok": True, "value": value})
    except plain.NotPlain as exc:
        return plain.dumps({"ok": False, "type": "NotPlain", "message": f"the answer is {exc}", "hint": ""})
    except BaseException as exc:  # the learner's code: any exception is its answer
        return plain.dumps(_error(exc, task))


def reference_text(exercise: str, checks, seed: int) -> str:
    """The references of ``checks`` on the inputs of ``seed``, as JSON text ``{check: value}``."""
    out = {}
    for check in checks:
        task = get_task(exercise, check)
        inputs = make_inputs(task, seed)
        with neutral_state():
            out[check] = task.reference(inputs)
    return plain.dumps(out)


def judge_texts(task: Task, answer: str, reference) -> Verdict:
    """The verdict on one task from the learner's reply (JSON text) and the decoded reference."""
    try:
        reply = plain.decode(answer)
    except plain.NotPlain as exc:
        return Verdict(False, f"the kernel's reply is not plain data: {exc}")
    if not isinstance(reply, dict) or reply.get("ok") not in (True, False):
        return Verdict(False, "the kernel's reply is not a task result")
    if reply["ok"] is not True:
        kind, message = str(reply.get("type", "?")), str(reply.get("message", ""))
        if kind == "NotImplementedError":
            return Verdict(False, "NotImplementedError: task not done")
        text = message if kind == "NotPlain" else f"{kind}: {message}".rstrip(": ")
        hint = str(reply.get("hint", ""))
        return Verdict(False, text + (f"; {hint}" if hint else ""))
    try:
        return task.judge(reply.get("value"), reference)
    except Exception as exc:  # noqa: BLE001 - a judge not written with @judged: still never the grader's crash
        return Verdict(False, unjudgeable(exc))


def self_check(exercise: str, check: str, namespace: Mapping, seed: int = SELF_CHECK_SEED) -> None:
    """The notebook's check: the whole task here, on ``seed``; prints ``PASS <check>`` or raises
    ``CheckFailed`` with the judge's message (an error in the learner's code is raised as it is)."""
    from nodecourse.course.checks import check as report

    task = get_task(exercise, check)
    answer = plain.dumps({"ok": True, "value": task.run(namespace, make_inputs(task, seed))})
    reference = plain.decode(reference_text(exercise, [check], seed))[check]
    verdict = judge_texts(task, answer, reference)
    report(check, verdict.passed, verdict.detail)
