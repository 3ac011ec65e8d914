"""What a learner reads when a check fails: the FAIL line in a notebook (the traceback on request), whole
reasons in the grader's table and feedback, and the error-norm failure with the call it failed on.

The notebook's own messages for an error in the learner's code (a missing ``torch.enable_grad()``) are
tested beside the grader's hints, in test_grading_sandbox_and_specs.py.
"""

from __future__ import annotations

import re

import pytest
from nbformat.v4 import new_code_cell

from nodecourse.course import checks, grading, sandbox, tasks
from nodecourse.course.feedback import feedback_markdown
from nodecourse.course.grading_run import REASON_LIMIT, error_reason
from nodecourse.course.tasks import plain
from nodecourse.course.tasks.spec import make_inputs


def _failed_check() -> checks.CheckFailed:
    try:
        checks.check("euler-step", False, "max error 3.1e-02 on the draw")
    except checks.CheckFailed as exc:
        return exc
    raise AssertionError("a failing check did not raise")


def test_a_failed_check_is_shown_as_its_fail_line_and_the_traceback_on_request(monkeypatch, capsys):
    monkeypatch.delenv(checks.TRACEBACK_ENV, raising=False)
    exc = _failed_check()
    assert str(exc) == "FAIL euler-step: max error 3.1e-02 on the draw"
    shown = exc._render_traceback_()  # what IPython displays for the cell's error
    assert shown[0] == str(exc) and len(shown) == 2, shown
    assert "show_traceback()" in shown[1] and checks.TRACEBACK_ENV in shown[1], shown
    assert "Traceback" not in "\n".join(shown)
    checks.show_traceback()  # on request, afterwards: the whole traceback of that check
    printed = capsys.readouterr().out
    assert "Traceback" in printed and "_failed_check" in printed and str(exc) in printed, printed
    monkeypatch.setenv(checks.TRACEBACK_ENV, "1")  # on request, always
    whole = "\n".join(exc._render_traceback_())
    assert "Traceback" in whole and "_failed_check" in whole, whole
    monkeypatch.setenv(checks.TRACEBACK_ENV, "0")
    assert len(exc._render_traceback_()) == 2


def test_a_check_given_no_bool_fails_with_its_name():
    with pytest.raises(checks.CheckFailed, match=r"^FAIL residual-block: the check's result is a str, not a bool"):
        checks.check("residual-block", "yes")


def test_ipython_shows_the_fail_line_only(monkeypatch, capsys):
    """The display path itself: an IPython shell runs a failing check cell."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.delenv(checks.TRACEBACK_ENV, raising=False)
    shell = InteractiveShell.instance()
    try:
        capsys.readouterr()
        result = shell.run_cell(
            "from nodecourse.course.checks import check\ncheck('euler-step', False, 'max error 3.1e-02')"
        )
        out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    finally:
        InteractiveShell.clear_instance()
    assert isinstance(result.error_in_exec, checks.CheckFailed)  # the cell still errors: nbval and the grader see it
    assert "FAIL euler-step: max error 3.1e-02" in out and "Traceback" not in out and "File " not in out, out


# --- the grader's table and feedback: reasons whole ----------------------------------------------------------


LONG = (
    "case 4: error_norm(err=[1.23457e-05, -9.87654e-05, 4.5e-05, -2.1e-05], y0=[0.123457, -1.23457, 2.34568, "
    "-0.345679], y1=[0.223457, -1.13457, 2.44568, -0.245679], rtol=0.000123457, atol=1.23457e-07) should be "
    "0.812345678, got 1.07234567; likely cause: the largest component, not the RMS (every word of this reason "
    "must reach the learner, wrapped, not cut)"
)


def _words(text: str) -> list[str]:
    return text.split()


def test_a_long_reason_reaches_the_table_and_the_feedback_whole():
    assert len(LONG) > 300  # longer than the old cut of the table (300) and of an error's line (160)
    assert error_reason("CheckFailed", f"FAIL x: {LONG}") == f"FAIL x: {LONG}"
    isolation = sandbox.Isolation(False, "", "", "no bubblewrap")
    cell = new_code_cell("check(...)", metadata={"nodecourse": {"check": "error-norm"}})
    outcomes = {0: {"outcome": "failed", "reason": LONG}}
    rows = grading._rows("nb.ipynb", "02_solvers_exercises", [cell], outcomes, {}, {}, isolation, 0)
    assert [r.reason for r in rows] == [LONG]
    table = grading.format_table(rows)
    assert "..." not in table and max(len(line) for line in table.splitlines()) < len(LONG)  # wrapped
    reason_column = [line.split(" | ")[-1] for line in table.splitlines()[2:-1]]
    assert _words(" ".join(reason_column)) == _words(LONG), table
    result = {"rows": [r.as_dict() for r in rows], "seed": 0, "error": "", "warnings": []}
    assert LONG in feedback_markdown("ada", result)


def test_a_runaway_reason_is_still_bounded():
    huge = "x" * (10 * REASON_LIMIT)
    assert len(error_reason("CheckFailed", huge)) == REASON_LIMIT


# --- exercise 2's error norm: the failure shows the call ---------------------------------------------------


def test_the_error_norm_failure_shows_the_call_it_failed_on():
    task = tasks.get_task("02", "error-norm")
    inputs = make_inputs(task, 5)
    reference = plain.decode(tasks.reference_text("02", ["error-norm"], 5))["error-norm"]
    # the likely wrong answer: the largest component where the RMS is asked for
    answer = plain.dumps({"ok": True, "value": {"norms": reference["max_norms"]}})
    verdict = tasks.judge_texts(task, answer, reference)
    assert not verdict.passed
    i = int(re.match(r"case (\d+): ", verdict.detail)[1])
    err, y0, y1, rtol, atol = inputs["cases"][i]
    call = (
        f"error_norm(err=[{', '.join(f'{x:.6g}' for x in err.tolist())}], "
        f"y0=[{', '.join(f'{x:.6g}' for x in y0.tolist())}], y1=[{', '.join(f'{x:.6g}' for x in y1.tolist())}], "
        f"rtol={rtol:.6g}, atol={atol:.6g})"
    )
    assert call in verdict.detail, verdict.detail
    assert f"should be {reference['norms'][i]:.9g}, got {reference['max_norms'][i]:.9g}" in verdict.detail
    assert "likely cause: the largest component, not the RMS" in verdict.detail
    assert len(verdict.detail) < REASON_LIMIT  # so the grader's table shows it whole
