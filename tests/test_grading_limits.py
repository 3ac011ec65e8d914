"""Resource limits of a grading run: what a learner's code can take, and what the
grader keeps of what it sends.

- the kernel's memory limit and its size-limited /tmp (a sandboxed process, no kernel needed);
- printed output kept as head and tail, with the cut said;
- a message over the grader's bound is never read into its memory;
- the connection folder (shared with the sandbox) keeps sockets only;
- no process the learner's code starts outlives the kernel;
- the notebook's wall-clock limit, and a hanging answer that costs one timeout, not one per check
  (on the scripted kernel of test_grading_timeouts.py: exact and in milliseconds).

Sizes are small and timeouts short; nothing asserts a duration.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell
from test_grading_timeouts import ISOLATION, ScriptedKernel, _answer, _task_check

from conftest import subprocess_timeout
from nodecourse.course import grading_kernel, grading_run, sandbox
from nodecourse.course.grading_kernel import CellResult, HeadTail, Kernel

NEEDS_BWRAP = pytest.mark.skipif(
    not sandbox.probe().sandboxed, reason=f"no sandbox on this machine: {sandbox.probe().reason}"
)


def _inside(code: str, limits: sandbox.Limits) -> subprocess.CompletedProcess:
    argv, env = sandbox.wrap(sandbox.probe(), [sys.executable, "-c", code], {}, limits=limits)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=subprocess_timeout())


@NEEDS_BWRAP
def test_a_sandboxed_process_cannot_allocate_past_its_memory_limit():
    code = (
        "try:\n    b = bytearray(600 * 2 ** 20)\n    print('allocated')\n"
        "except MemoryError:\n    print('MemoryError')\n"
    )
    assert _inside(code, sandbox.Limits(memory_mb=256)).stdout.strip() == "MemoryError"
    assert _inside(code, sandbox.Limits(memory_mb=2048)).stdout.strip() == "allocated"  # the limit decides


@NEEDS_BWRAP
def test_the_sandboxs_tmp_and_home_are_size_limited():
    code = (
        "import os\nfor where in ('/tmp', os.environ['HOME']):\n"
        "    try:\n        open(os.path.join(where, 'big'), 'wb').write(b'x' * (48 * 2 ** 20))\n"
        "        print(where, 'written')\n"
        "    except OSError as exc:\n        print(where, exc.errno)\n"
    )
    out = _inside(code, sandbox.Limits(tmp_mb=32)).stdout.split("\n")
    assert all(line.endswith(("28", "27")) for line in out if line), out  # ENOSPC or EFBIG
    out = _inside(code, sandbox.Limits(tmp_mb=128)).stdout
    assert out.count("written") == 2, out


def test_limits_refuse_a_value_that_is_not_megabytes():
    with pytest.raises(ValueError, match="memory_mb=0.5"):
        sandbox.Limits(memory_mb=0.5)
    with pytest.raises(ValueError, match="tmp_mb=8"):
        sandbox.Limits(tmp_mb=8)


def test_printed_output_keeps_its_head_and_tail_and_says_what_was_cut():
    kept = HeadTail(keep=10)
    for chunk in ("0123456789", "abcdefghij" * 100, "PASS done"):
        kept.add(chunk)
    text = kept.text()
    assert text.startswith("0123456789") and text.endswith("\njPASS done")
    assert "[... 999 characters of output cut by the grader ...]" in text
    small = HeadTail(keep=10)
    small.add("short")
    assert small.text() == "short"


@pytest.fixture
def kernel():
    k = Kernel(sandbox.probe(), limits=sandbox.Limits(memory_mb=1024, tmp_mb=64))
    yield k
    k.close()


@pytest.mark.slow
@NEEDS_BWRAP
def test_an_output_bomb_is_cut_and_a_reply_over_the_bound_is_not_read(kernel, monkeypatch):
    res = kernel.execute("for _ in range(300):\n    print('y' * 100_000)\nprint('END')", 60)
    assert res.ok and res.stdout.rstrip().endswith("END") and "cut by the grader" in res.stdout, res.status
    assert len(res.stdout) < 3 * grading_kernel.STDOUT_KEEP_CHARS
    monkeypatch.setattr(grading_kernel, "MAX_MESSAGE_BYTES", 2**20)
    small = Kernel(sandbox.probe())  # its sockets refuse messages over 1 MiB
    try:
        assert small.evaluate("'x' * 1000", 30).ok
        big = small.evaluate("'x' * (4 * 2 ** 20)", 5)  # a 4 MiB reply: dropped by zmq, never read
        assert big.status == "timeout", big
    finally:
        small.close()


@pytest.mark.slow
@NEEDS_BWRAP
def test_the_connection_folder_keeps_sockets_only_and_no_process_outlives_the_kernel(kernel):
    marker = "987654.321"
    res = kernel.execute(
        "import os, subprocess\nfrom ipykernel.connect import get_connection_file\n"
        "folder = os.path.dirname(get_connection_file())\n"
        "open(os.path.join(folder, 'planted.bin'), 'wb').write(b'x' * 1000)\n"
        "os.mkdir(os.path.join(folder, 'planted-dir'))\n"
        f"subprocess.Popen(['sleep', '{marker}'], start_new_session=True)\n",
        60,
    )
    assert res.ok, res
    assert sorted(kernel.swept) == ["planted-dir", "planted.bin"]
    kept = {e.name for e in os.scandir(kernel._conn)}
    assert "planted.bin" not in kept and any(name.startswith("k-") for name in kept), kept
    assert _running(marker), "the detached process did not start"
    kernel.close()
    for _ in range(300):  # the sandbox's PID namespace is torn down when its init goes: wait for it
        if not _running(marker):
            break
        time.sleep(0.1)
    assert _running(marker) == []


def _running(marker: str) -> list[str]:
    """The pids whose command line holds ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                found.append(pid)
        except OSError:
            pass
    return found


@pytest.mark.slow
@NEEDS_BWRAP
def test_a_write_past_the_file_size_limit_fails_in_the_kernel(kernel):
    res = kernel.execute("open('/tmp/big', 'wb').write(b'x' * (80 * 2 ** 20))", 60)
    assert res.status == "error" and res.ename in ("OSError", "IOError"), res


# --- the run loop (scripted kernel) -------------------------------------------------------------------


class HangingTasks(ScriptedKernel):
    """A kernel whose every task call hangs (the learner's function never returns)."""

    asked = 0

    def evaluate(self, expression, timeout_s):
        type(self).asked += 1
        return CellResult("timeout")


def test_a_hanging_answer_costs_one_timeout_not_one_per_check(monkeypatch):
    HangingTasks.asked = 0
    monkeypatch.setattr(grading_run, "Kernel", HangingTasks)
    monkeypatch.setattr(grading_run.kernel_side, "request", lambda task, inputs: f"ask {task.check}")
    cells = [
        new_code_cell("# ok"),
        _answer("euler-step", "# ok"),
        _task_check("euler-step"),
        _answer("euler-integrate", "# ok"),
        _task_check("euler-integrate-matches"),
        _task_check("euler-order"),
    ]
    specs = {2: ("01", "euler-step"), 4: ("01", "euler-integrate-matches"), 5: ("01", "euler-order")}
    needs = {2: ("euler-step",), 4: ("euler-step", "euler-integrate"), 5: ("euler-step", "euler-integrate")}
    runner = grading_run.Runner(cells, specs, timeout_s=3, isolation=ISOLATION, seed=1, guard=False, needs=needs)
    outcomes, _ = runner.run()
    assert HangingTasks.asked == 1  # euler-step hung; the two tasks that call it too are not asked
    assert outcomes[2]["reason"].startswith("the task timed out after 3 s")
    for num in (4, 5):
        assert "costs one timeout, not one per check" in outcomes[num]["reason"], outcomes[num]


class SlowCells(ScriptedKernel):
    def execute(self, code, timeout_s, user_expressions=None, silent=False):
        if code.startswith("# slow"):
            time.sleep(0.2)
        return super().execute(code, timeout_s, user_expressions, silent)


def test_the_notebooks_time_limit_stops_the_run_and_says_so(monkeypatch):
    monkeypatch.setattr(grading_run, "Kernel", SlowCells)
    cells = [new_code_cell("# slow"), new_code_cell("# ok"), new_code_cell("# ok")]
    runner = grading_run.Runner(
        cells, {}, timeout_s=30, isolation=ISOLATION, seed=1, guard=False, needs={}, notebook_timeout_s=0.1
    )
    outcomes, _ = runner.run()
    assert outcomes[0]["outcome"] == "passed"  # it started in time
    for num in (1, 2):
        assert outcomes[num]["reason"] == "not run: the notebook's time limit (0.1 s) was reached"
