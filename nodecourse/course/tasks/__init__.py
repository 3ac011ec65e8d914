"""Exercise checks as task specs (:class:`~nodecourse.course.tasks.spec.Task`).

A converted check cell in an exercise notebook reads::

    # NBVAL_CHECK_OUTPUT
    from nodecourse.course.tasks import self_check
    self_check("01", "euler-step", globals())

In JupyterLab (or ``pytest --nbval``) that runs the whole task in the
learner's kernel on seed 0 and prints ``PASS euler-step`` or raises
``CheckFailed`` with the judge's message (an error the learner's code raised is
reported as the grader reports it, with its likely cause, and chained as the
cause). The grader runs the same spec split
in three: the inputs drawn from its seed in its own process, and only the call
of the learner's function on them in the learner's isolated kernel
(:mod:`~nodecourse.course.tasks.kernel_side`, which this package is not visible
from); :func:`reference_text` in a separate clean process; :func:`judge_texts`
in its own process on the two plain-data replies.

Exercise keys are the two-digit prefixes of the notebooks ("01"); each has a
module ``exNN`` here with ``EXERCISE`` (the notebook's stem) and ``TASKS``.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from typing import Mapping

from nodecourse.course.tasks import plain
from nodecourse.course.tasks.spec import Task, Verdict, make_inputs, neutral_state, paired_inputs, unjudgeable

SELF_CHECK_SEED = 0
# The modules that hold converted exercises; an exercise not listed uses check cells run in the kernel.
CONVERTED = ("01", "02", "03", "04", "05", "06", "08", "09", "10", "11")
_SELF_CHECK = re.compile(r"""\bself_check\(\s*(["'])(?P<ex>\d\d)\1\s*,\s*(["'])(?P<check>[^"']+)\3""")


class UnknownTask(LookupError):
    """No task spec for an exercise key and check id."""


def tasks_for(exercise: str) -> dict[str, Task]:
    """The task specs of exercise ``exercise`` ("01"), by check id."""
    if exercise not in CONVERTED:
        raise UnknownTask(f"exercise {exercise!r} has no task specs; converted exercises: {list(CONVERTED)}")
    module = importlib.import_module(f"nodecourse.course.tasks.ex{exercise}")
    # An exercise module may list, by check, the library functions that would answer a task
    # ("write it yourself"): they become that task's ``library_answers``.
    listed = getattr(module, "LIBRARY_ANSWERS", {})
    unknown = set(listed) - {t.check for t in module.TASKS}
    if unknown:
        raise UnknownTask(f"exercise {exercise!r}: LIBRARY_ANSWERS names checks {sorted(unknown)} it does not have")
    return {
        t.check: dataclasses.replace(t, library_answers=tuple(listed[t.check])) if t.check in listed else t
        for t in module.TASKS
    }


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


def answer_text(
    exercise: str, check: str, seed: int, namespace: Mapping, *, scan: bool = True, inputs: dict | None = None
) -> str:
    """The learner's reply to one task on the inputs of ``seed``, in this process, through the same
    function the grader's kernel runs (:func:`nodecourse.course.tasks.kernel_side.answer`): JSON text
    ``{"ok": true, "value": ...}`` or ``{"ok": false, "type": ..., "message": ...}``. ``scan``: as in
    :func:`nodecourse.course.tasks.kernel_side.disabled`. ``inputs``: the draw of ``seed`` when the
    caller already made it (:func:`make_inputs`); drawn here otherwise."""
    from nodecourse.course.tasks import kernel_side

    task = get_task(exercise, check)
    drawn = make_inputs(task, seed) if inputs is None else inputs
    return kernel_side.answer(task.run, drawn, task.library_answers, namespace, scan=scan)


def reference_value(task: Task, inputs: dict):
    """``task``'s reference on ``inputs`` (one draw of :func:`make_inputs`), computed in
    :func:`~nodecourse.course.tasks.spec.neutral_state` as the reference process computes it."""
    with neutral_state():
        return task.reference(inputs)


def reference_text(exercise: str, checks, seed: int) -> str:
    """The references of ``checks`` on the inputs of ``seed``, as JSON text ``{check: value}``."""
    out = {}
    for check in checks:
        task = get_task(exercise, check)
        out[check] = reference_value(task, make_inputs(task, seed))
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
        hint = task.hint_for(message)  # the likely cause is named here, outside the kernel
        return Verdict(False, text + (f"; {hint}" if hint else ""))
    try:
        return task.judge(reply.get("value"), reference)
    except Exception as exc:  # noqa: BLE001 - a judge not written with @judged: still never the grader's crash
        return Verdict(False, unjudgeable(exc))


def self_check(exercise: str, check: str, namespace: Mapping, seed: int = SELF_CHECK_SEED) -> None:
    """The notebook's check: the whole task here, on ``seed``; prints ``PASS <check>`` or raises
    ``CheckFailed`` with the judge's message. An error in the learner's code fails the check with the
    grader's words for it (``FAIL <check>: RuntimeError: ...; likely cause: ...``), the error itself
    chained as the cause (its traceback: ``nodecourse.course.checks.show_traceback()``)."""
    from nodecourse.course.checks import CheckFailed
    from nodecourse.course.checks import check as report
    from nodecourse.course.tasks.kernel_side import disabled, failure_text

    task = get_task(exercise, check)
    edited = edited_handouts_here(namespace)
    if edited:  # the grader runs handed-out cells as handed out: say so here, before it says so in a grade
        import warnings

        warnings.warn(f"the grader will not run your edits: {edited}", stacklevel=2)
    # Drawn, and the reference computed on its own copy, before the library's answers are disabled:
    # a draw and the reference may use the library's own solver.
    inputs, theirs = paired_inputs(task, seed)
    reference = plain.decode(plain.dumps(reference_value(task, theirs)))
    undo = disabled(task.library_answers)  # the grader disables them too: the self-check says the same
    failure: Exception | None = None
    try:
        answer = plain.dumps({"ok": True, "value": task.run(namespace, inputs)})
    except Exception as exc:  # the learner's code (or an answer that is not plain data): its reply, as graded
        failure, answer = exc, failure_text(exc)
    finally:
        for fn, code in undo:
            fn.__code__ = code
    verdict = judge_texts(task, answer, reference)
    try:
        report(check, verdict.passed, verdict.detail)
    except CheckFailed as exc:
        if failure is None:
            raise
        raise exc from failure


def edited_handouts_here(namespace: Mapping) -> str:
    """What the grader would say about handed-out cells edited in the notebook this kernel runs
    (JupyterLab names it in ``__session__``; read from its saved copy on disk): the grader runs those
    as handed out, and the cells the learner added where they sit, as this kernel did. "" when there
    are none or the notebook cannot be found (nbval, a plain Python session)."""
    import os
    from pathlib import Path

    session = namespace.get("__session__") or os.environ.get("JPY_SESSION_NAME", "")
    path = Path(str(session)) if session else None
    if path is not None and not path.is_file():
        path = Path.cwd() / path.name  # a server-relative name: the kernel runs in the notebook's folder
    if path is None or path.suffix != ".ipynb" or not path.is_file():
        return ""
    try:
        import nbformat

        from nodecourse.course.references import edited_handouts, reference_for

        reference, _, _ = reference_for(path)
        return edited_handouts(nbformat.read(path, as_version=4), reference)
    except Exception:  # noqa: BLE001 - a self-check never fails because this hint could not be made
        return ""


__all__ = [
    "CONVERTED",
    "SELF_CHECK_SEED",
    "Task",
    "UnknownTask",
    "Verdict",
    "answer_text",
    "edited_handouts_here",
    "get_task",
    "judge_texts",
    "reference_text",
    "reference_value",
    "self_check",
    "spec_call",
    "tasks_for",
]
