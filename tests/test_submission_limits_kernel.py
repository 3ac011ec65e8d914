"""Limits on a submission as a whole, on a real sandboxed kernel (slow: a kernel per test).

A cell prints the kernel's user id (not root); a cell forks many processes, one allocates across
several children, one fills two of its in-memory folders, one writes files through the kernel's
connection folder (shared with the host), one burns CPU in several processes: each ends the
kernel, the cell's failure names the limit, the grader's note lists it, and the cells after it
are still graded in a fresh kernel.
The watcher itself, without a kernel, is tested in test_submission_limits.py.
"""

from __future__ import annotations

import pytest
from nbformat.v4 import new_code_cell

from nodecourse.course import grading_run, sandbox
from nodecourse.course.grading_kernel import Kernel
from nodecourse.course.submission_limits import SHARED_MB

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sandbox.probe().sandboxed, reason=f"no sandbox on this machine: {sandbox.probe().reason}"),
]

SMALL = dict(memory_mb=1024, tmp_mb=64)


def test_the_kernel_runs_as_an_unprivileged_user():
    kernel = Kernel(sandbox.probe(), limits=sandbox.Limits(**SMALL))
    try:
        res = kernel.execute("import os\nprint(os.getuid(), os.getgid(), os.geteuid())", 60)
    finally:
        kernel.close()
    assert res.ok and res.stdout.split() == [str(sandbox.KERNEL_UID)] * 3, res


# Each cell stays a while after it went over: the watcher polls, and a limit crossed as a cell ends is
# seen during the next request (its failure then says "seen while" that one ran).
FORKS = (
    "import os, time\nfor i in range(40):\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\n"
    "time.sleep(5)\n"
)
SPREAD = (
    "import os, time\nfor i in range(6):\n    if os.fork() == 0:\n"
    "        block = bytearray(150 * 2 ** 20)\n        time.sleep(60)\n        os._exit(0)\ntime.sleep(30)\n"
)
SPILL = (
    "import os\nfor where in ('/tmp', os.environ['HOME']):\n"
    "    open(os.path.join(where, 'big'), 'wb').write(b'x' * (60 * 2 ** 20))\n"
    "__import__('time').sleep(5)\n"
)
WRITES = (
    "import os\nfrom ipykernel.connect import get_connection_file\n"
    "folder = os.path.dirname(get_connection_file())\n"
    "for i in range(6):\n    open(os.path.join(folder, f'f{i}'), 'wb').write(b'x' * (30 * 2 ** 20))\n"
    "__import__('time').sleep(5)\n"
)
BURN = (
    "import os\nfor i in range(2):\n    if os.fork() == 0:\n        while True:\n            pass\n"
    "while True:\n    pass\n"
)


@pytest.mark.parametrize(
    "code, limits, named",
    [
        (FORKS, sandbox.Limits(**SMALL, processes=16), "processes (16 at once)"),
        (SPREAD, sandbox.Limits(**SMALL, total_memory_mb=600), "memory of all its processes (600 MB)"),
        (SPILL, sandbox.Limits(**SMALL, written_mb=100), "bytes written (100 MB)"),
        (
            WRITES,
            sandbox.Limits(**SMALL, written_mb=1000),
            "bytes written in the folder it shares with the grader "
            f"({SHARED_MB} MB: the connection folder holds sockets, not files)",
        ),
        (BURN, sandbox.Limits(**SMALL, cpu_s=5), "CPU time (5 s)"),
    ],
    ids=["processes", "memory", "written", "shared", "cpu"],
)
def test_a_submission_over_a_limit_is_ended_and_the_grade_names_it(code, limits, named):
    cells = [new_code_cell("x = 41"), new_code_cell(code), new_code_cell("print(x + 1)")]
    runner = grading_run.Runner(
        cells, {}, timeout_s=90, isolation=sandbox.probe(), seed=1, guard=False, needs={}, limits=limits
    )
    outcomes, notes = runner.run()
    assert outcomes[1]["reason"] == (
        f"the submission went over its limit on {named}, seen while this cell ran: every process it ran was ended"
    ), outcomes[1]
    assert outcomes[2]["outcome"] == "passed" and outcomes[2]["stdout"].strip() == "42", outcomes[2]
    assert grading_run.LIMITS_NOTE + named in notes, notes
