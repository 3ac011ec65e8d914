"""A pytest plugin that records each nbval cell's outcome as one JSON line.

The grader (:mod:`nodecourse.course.grading`) copies this file next to the notebook
it assembles, as ``conftest.py``, and runs nbval there with
``NODECOURSE_GRADE_REPORT`` naming the output file. It is a standalone file
on purpose: loading it must not import the ``nodecourse`` package (and torch)
into the pytest process.

Each line: ``{"cell": N, "outcome": "passed"|"failed"|"skipped",
"message": str, "detail": str, "timed_out": bool, "after_timeout": bool,
"stdout": str}``
where ``N`` counts code cells from 0, as nbval does.
"""
import json
import os

import pytest

REPORT_ENV = "NODECOURSE_GRADE_REPORT"


def _record(item, report, excinfo):
    path = os.environ.get(REPORT_ENV)
    cell_num = getattr(item, "cell_num", None)
    if not path or cell_num is None:
        return
    exc = excinfo.value if excinfo is not None else None
    outcome = report.outcome
    after_timeout = hasattr(report, "wasxfail")  # nbval xfails every cell after a timeout
    if after_timeout:
        outcome = "failed" if report.skipped else "passed"
    message = str(exc) if exc is not None else ""
    rec = {
        "cell": cell_num,
        "outcome": outcome,
        "message": message,
        # nbval's NbCellError carries the kernel's traceback here
        "detail": str(getattr(exc, "inner_traceback", "") or ""),
        "timed_out": "Timeout of" in message,
        "after_timeout": after_timeout,
        # what the cell printed, so the grader can tell noise (a warning on
        # stderr, a progress bar) from a missing PASS line
        "stdout": "".join(
            o.get("text", "") for o in (getattr(item, "test_outputs", None) or [])
            if o.get("output_type") == "stream" and o.get("name") == "stdout"
        )[-10_000:],
    }
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    # the call phase, or a setup phase that failed (then there is no call phase)
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _record(item, report, call.excinfo)
