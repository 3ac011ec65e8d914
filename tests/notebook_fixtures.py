"""Small exercise notebooks written by the tests, to test the builder and the grader.

The fixture solution has two tasks (``double`` and ``square``), each an answer
cell followed by a check cell, plus a setup cell, as CONTRIBUTING.md describes.
Check-cell outputs are what :func:`nodecourse.course.checks.check` prints on success.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

REPO = Path(__file__).resolve().parent.parent
SUBPROCESS_ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    "OMP_NUM_THREADS": "1",
}

DOUBLE_SOURCE = '''def double(x):
    """Twice x."""
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION'''

SQUARE_SOURCE = '''def square(x):
    """x squared."""
    ### BEGIN SOLUTION
    y = x * x
    return y
    ### END SOLUTION'''


def answer_cell(task: str, source: str):
    return new_code_cell(source, metadata={"nodecourse": {"answer": task}})


def check_cell(cid: str, body: str, *, passed_output: bool = True):
    cell = new_code_cell(
        f"# NBVAL_CHECK_OUTPUT\nfrom nodecourse.course.checks import check\n{body}",
        metadata={"nodecourse": {"check": cid}},
    )
    if passed_output:
        cell.outputs = [new_output("stream", name="stdout", text=f"PASS {cid}\n")]
        cell.execution_count = 7
    return cell


def solution_notebook():
    """The fixture solution notebook (as if saved after a successful run)."""
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    setup = new_code_cell("import math\nprint('setup done')")
    setup.outputs = [new_output("stream", name="stdout", text="setup done\n")]
    setup.execution_count = 1
    setup.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    nb.cells = [
        new_markdown_cell("# Fixture exercise\nTwo tasks."),
        setup,
        answer_cell("double", DOUBLE_SOURCE),
        check_cell("double", 'check("double", double(3) == 6 and double(-1.5) == -3.0, f"double(3) = {double(3)}")'),
        answer_cell("square", SQUARE_SOURCE),
        check_cell("square", 'check("square", square(4) == 16, f"square(4) = {square(4)}")'),
    ]
    return nb


def write(nb, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def run_cli(*args: str, cwd: Path | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m nodecourse.cli ARGS`` with this checkout on the path. ``timeout`` defaults to what the
    running test's own limit leaves (``conftest.subprocess_timeout``)."""
    from conftest import subprocess_timeout

    return subprocess.run(
        [sys.executable, "-m", "nodecourse.course.cli", *args],
        cwd=cwd or REPO,
        env=SUBPROCESS_ENV,
        capture_output=True,
        text=True,
        timeout=subprocess_timeout() if timeout is None else timeout,
    )
