"""Limits on a submission as a whole (:mod:`nodecourse.course.submission_limits`).

The watcher is driven directly here (a command of plain Python under it, no kernel): a
submission that forks many processes, one that writes past the bytes limit, one that allocates
across several children, one that burns CPU in several; each is ended and the limit named. Then
the sandbox's part (the watcher in front of bubblewrap, an unprivileged uid inside, the total of
bytes across its in-memory folders), the grade's part on a scripted kernel (a named failure, a
note, the gradebook's ``limits`` column), the notebook's time limit over replays and
measurements, and a notebook file over the bound refused before it is parsed. The same on a real
kernel is in test_submission_limits_kernel.py (slow).

Every limit is small and every child short-lived; nothing asserts a duration beyond the
notebook's time limit itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell
from test_grading_timeouts import ISOLATION, ScriptedKernel, _task_check

from conftest import subprocess_timeout
from nodecourse.course import gradebook, grading, grading_run, sandbox, submission_limits
from nodecourse.course.grading_kernel import CellResult
from nodecourse.course.submission_limits import EXIT_CODES

NEEDS_BWRAP = pytest.mark.skipif(
    not sandbox.probe().sandboxed, reason=f"no sandbox on this machine: {sandbox.probe().reason}"
)


def _watched(code: str, **limits) -> subprocess.CompletedProcess:
    """``python -c code`` under the watcher with ``limits`` (its keyword names)."""
    host = limits.pop("host", ())
    argv = submission_limits.watcher_argv(
        memory_mb=limits.get("memory_mb"),
        written_mb=limits.get("written_mb"),
        processes=limits.get("processes"),
        cpu_s=limits.get("cpu_s"),
        shared_mb=limits.get("shared_mb"),
        host=tuple(str(h) for h in host),
    )
    return subprocess.run(
        [*argv, sys.executable, "-c", code], capture_output=True, text=True, timeout=subprocess_timeout()
    )


def _running(marker: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                found.append(pid)
        except OSError:
            pass
    return found


def _gone(marker: str) -> bool:
    for _ in range(100):
        if not _running(marker):
            return True
        time.sleep(0.05)
    return False


FORKS = """
import os, sys, time
for i in range({n}):
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "{marker}"])
time.sleep(0.5)
"""


def test_a_submission_that_forks_many_processes_is_ended_and_the_limit_named():
    marker = "424242.125"
    res = _watched(FORKS.format(n=20, marker=marker), processes=8)
    assert res.returncode == EXIT_CODES["processes"], res
    assert "over its limit on processes" in res.stderr, res.stderr
    assert _gone(marker), "a forked process outlived the watcher"
    ok = _watched(FORKS.format(n=3, marker="424242.25").replace('"sleep", ["sleep"', '"true", ["true"'), processes=8)
    assert ok.returncode == 0, ok  # the limit decides: three children are allowed


SPREAD = """
import os, time
kids = []
for i in range(6):
    pid = os.fork()
    if pid == 0:
        block = bytearray(40 * 2 ** 20)  # 40 MiB, touched: each child holds it privately
        time.sleep(0.6)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
"""


def test_memory_spread_across_several_children_counts_as_one_total():
    res = _watched(SPREAD, memory_mb=150)  # each child is far below it; the six together are not
    assert res.returncode == EXIT_CODES["memory"], res
    assert "over its limit on memory of all its processes" in res.stderr, res.stderr
    assert _watched(SPREAD, memory_mb=600).returncode == 0  # the limit decides


WRITES = """
import time
for i in range(8):
    open(f"{folder}/f{{i}}", "wb").write(b"x" * (4 * 2 ** 20))
    time.sleep(0.05)
"""


def test_bytes_written_in_a_shared_folder_are_limited_in_total_not_per_file(tmp_path):
    res = _watched(WRITES.format(folder=tmp_path), written_mb=16, host=[tmp_path])
    assert res.returncode == EXIT_CODES["written"], res  # every file is 4 MiB; eight are 32
    assert "over its limit on bytes written" in res.stderr
    written = sum(f.stat().st_size for f in tmp_path.iterdir())
    assert written < 32 * 2**20, written  # stopped before it wrote them all
    other = tmp_path / "other"
    other.mkdir()
    assert _watched(WRITES.format(folder=other), written_mb=64, host=[other]).returncode == 0


def test_a_folder_shared_with_the_host_holds_little_whatever_the_total_allows(tmp_path):
    res = _watched(WRITES.format(folder=tmp_path), written_mb=1000, shared_mb=8, host=[tmp_path])
    assert res.returncode == EXIT_CODES["shared"], res
    assert "over its limit on bytes written in the folder it shares with the grader" in res.stderr


BURN = """
import os
for i in range(2):
    if os.fork() == 0:
        while True:
            pass
while True:
    pass
"""


def test_cpu_time_of_all_the_processes_together_is_limited():
    res = _watched(BURN, cpu_s=1)
    assert res.returncode == EXIT_CODES["cpu"], res
    assert "over its limit on CPU time" in res.stderr


def test_the_commands_own_exit_code_passes_and_cannot_pose_as_a_limit():
    assert _watched("import sys; sys.exit(3)", processes=8).returncode == 3
    assert _watched(f"import sys; sys.exit({EXIT_CODES['memory']})", processes=8).returncode == 1
    assert submission_limits.limit_of_exit(EXIT_CODES["cpu"]) == "cpu"
    assert submission_limits.limit_of_exit(1) is None and submission_limits.limit_of_exit(None) is None


def test_limits_refuse_values_that_cannot_be_limits():
    with pytest.raises(ValueError, match="processes=2"):
        sandbox.Limits(processes=2)
    with pytest.raises(ValueError, match="cpu_s=0"):
        sandbox.Limits(cpu_s=0)
    with pytest.raises(ValueError, match="written_mb=4"):
        sandbox.Limits(written_mb=4)
    with pytest.raises(ValueError, match="total_memory_mb=1.5"):
        sandbox.Limits(total_memory_mb=1.5)
    limits = sandbox.Limits(memory_mb=512, tmp_mb=64)  # the totals default from the per-process values
    assert limits.describe("memory") == "memory of all its processes (512 MB)"
    assert limits.describe("written") == "bytes written (128 MB)"  # one folder filled is an ordinary error


def test_the_sandbox_runs_under_the_watcher_with_a_user_namespace_of_its_own(tmp_path):
    limits = sandbox.Limits(processes=9, cpu_s=7, total_memory_mb=300, written_mb=40)
    argv = sandbox.sandbox_argv(["true"], {}, shared_dirs=[tmp_path], program="bwrap", limits=limits)
    bwrap = argv.index("bwrap")
    watcher = argv[:bwrap]
    assert watcher[3] == submission_limits.__file__ and watcher[-1] == "--"
    for flag, value in (("--processes", "9"), ("--cpu-s", "7"), ("--memory-mb", "300"), ("--written-mb", "40")):
        assert watcher[watcher.index(flag) + 1] == value
    assert watcher[watcher.index("--host") + 1] == str(tmp_path)  # the shared folder's bytes count
    assert watcher[watcher.index("--shared-mb") + 1] == str(submission_limits.SHARED_MB)
    inside = [watcher[i + 1] for i, a in enumerate(watcher) if a == "--inside"]
    assert inside == ["/tmp", "/dev/shm", sandbox.HOME]
    user = argv.index("--unshare-user")
    assert argv[user : user + 5] == [
        "--unshare-user",
        "--uid",
        str(sandbox.KERNEL_UID),
        "--gid",
        str(sandbox.KERNEL_UID),
    ]
    plain = sandbox.sandbox_argv(["true"], {}, program="bwrap", unprivileged=False)
    assert "--unshare-user" not in plain


def _inside(code: str, limits: sandbox.Limits) -> subprocess.CompletedProcess:
    argv, env = sandbox.wrap(sandbox.probe(), [sys.executable, "-c", code], {}, limits=limits)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=subprocess_timeout())


@NEEDS_BWRAP
def test_the_learners_code_runs_as_an_unprivileged_user_inside_the_sandbox():
    res = _inside("import os; print(os.getuid(), os.getgid())", sandbox.Limits())
    assert sandbox.probe().unprivileged, sandbox.probe()
    assert res.stdout.split() == [str(sandbox.KERNEL_UID)] * 2, res


@NEEDS_BWRAP
def test_bytes_written_across_the_sandboxs_folders_count_as_one_total():
    code = (
        "import os, time\n"
        "for where in ('/tmp', '/dev/shm', os.environ['HOME']):\n"
        "    open(os.path.join(where, 'big'), 'wb').write(b'x' * (20 * 2 ** 20))\n"
        "    time.sleep(0.2)\n"
        "print('all written')\n"
    )
    res = _inside(code, sandbox.Limits(tmp_mb=32, written_mb=48))  # each 20 MiB fits its folder; 60 do not
    assert res.returncode == EXIT_CODES["written"], res
    assert "all written" not in res.stdout
    assert _inside(code, sandbox.Limits(tmp_mb=32, written_mb=64)).stdout.strip() == "all written"


# --- the grade: a named failure, a note, a gradebook column (scripted kernel) ------------------------


class LimitedKernel(ScriptedKernel):
    """``# over processes`` (or another limit's name): the watcher ended the kernel for that limit."""

    def execute(self, code, timeout_s, user_expressions=None, silent=False):
        first = code.splitlines()[0] if code else ""
        if first.startswith("# over "):
            return CellResult("dead", exit_code=EXIT_CODES[first.split()[-1]])
        if first == "# died":
            return CellResult("dead", exit_code=-9)
        return super().execute(code, timeout_s, user_expressions, silent)


def test_a_limit_hit_is_a_named_failure_a_note_and_a_gradebook_column(monkeypatch):
    monkeypatch.setattr(grading_run, "Kernel", LimitedKernel)
    cells = [new_code_cell("# ok"), new_code_cell("# over processes"), new_code_cell("# ok"), new_code_cell("# died")]
    limits = sandbox.Limits(processes=12)
    runner = grading_run.Runner(
        cells, {}, timeout_s=5, isolation=ISOLATION, seed=1, guard=False, needs={}, limits=limits
    )
    outcomes, notes = runner.run()
    assert outcomes[1]["reason"] == (
        "the submission went over its limit on processes (12 at once), seen while this cell ran: "
        "every process it ran was ended"
    )
    assert outcomes[1]["limit"] == "processes" and outcomes[2]["outcome"] == "passed"  # replayed, graded on
    assert "the kernel died (exit code -9)" in outcomes[3]["reason"] and "limit" not in outcomes[3]
    assert notes[-1] == grading_run.LIMITS_NOTE + "processes (12 at once)"
    result = {"path": "a.ipynb", "rows": [], "error": "", "time_s": 1.0, "isolation": "", "seed": 1}
    result["warnings"] = [f"note: {n}" for n in notes] + [
        "note: the kernel's last words on stderr: limits hit: forged"  # the kernel's words are not a limit
    ]
    row = gradebook._row(result, "ann", "0" * 64)
    assert row["limits"] == "processes (12 at once)"
    assert "limits" in gradebook.FIXED_AFTER


# --- the notebook's time limit bounds replays and measurements -------------------------------------


class CostlyKernel(ScriptedKernel):
    """``# cost S``: a cell that takes S seconds (a timeout when its limit is shorter); records every
    limit it was given, and measures memory as the grader does (a mark and a peak)."""

    limits_given: list[float] = []

    def execute(self, code, timeout_s, user_expressions=None, silent=False):
        type(self).limits_given.append(timeout_s)
        first = code.splitlines()[0] if code else ""
        if first.startswith("# cost "):
            cost = float(first.split()[-1])
            time.sleep(min(cost, timeout_s))
            if cost > timeout_s:
                return CellResult("timeout")
        return super().execute(code, timeout_s, user_expressions, silent)

    def evaluate(self, expression, timeout_s):
        type(self).limits_given.append(timeout_s)
        time.sleep(min(0.15, timeout_s))  # a task or a measurement that takes its time
        if timeout_s < 0.15:
            return CellResult("timeout")
        return super().evaluate(expression, timeout_s)

    def memory_mark(self):
        return 0

    def memory_peak(self):
        return 1


def test_the_notebooks_time_limit_bounds_the_fresh_process_replay_of_an_observed_task(monkeypatch):
    """Before, the replay in a fresh process (and each measurement) got the whole per-cell limit:
    with ``--timeout 10 --notebook-timeout 40`` a notebook ran 74 s."""
    monkeypatch.setattr(grading_run, "Kernel", CostlyKernel)
    CostlyKernel.limits_given = []
    cells = [new_code_cell("# cost 0.3"), new_code_cell("# cost 0.3"), new_code_cell("# cost 0.3")]
    cells.append(_task_check("euler-step"))
    runner = grading_run.Runner(
        cells,
        {3: ("01", "euler-step")},
        timeout_s=5,
        isolation=ISOLATION,
        seed=1,
        guard=False,
        needs={3: ()},
        observed=frozenset({3}),
        notebook_timeout_s=1.2,
    )
    start = time.monotonic()
    outcomes, _ = runner.run()
    took = time.monotonic() - start
    assert took < 1.2 + 0.25, took  # 0.9 s of cells, then the replay had what was left, not 3 x 5 s
    assert "notebook's" in outcomes[3]["reason"], outcomes[3]
    assert max(CostlyKernel.limits_given[3:]) < 0.35, CostlyKernel.limits_given  # each call: what was left


def test_the_notebooks_time_limit_bounds_the_measurements(monkeypatch):
    monkeypatch.setattr(grading_run, "Kernel", CostlyKernel)
    CostlyKernel.limits_given = []
    monkeypatch.setattr(grading_run.kernel_side, "request", lambda task, inputs, *how: "ask")
    cells = [new_code_cell("# cost 0.2"), _task_check("flat-memory")]
    runner = grading_run.Runner(
        cells,
        {1: ("04", "flat-memory")},
        timeout_s=5,
        isolation=ISOLATION,
        seed=1,
        guard=False,
        needs={1: ()},
        notebook_timeout_s=0.8,
    )
    start = time.monotonic()
    outcomes, _ = runner.run()
    took = time.monotonic() - start
    assert took < 0.8 + 0.25, took  # the measurements (two runs per key, several keys) stopped at the limit
    assert outcomes[1]["outcome"] == "failed" and "notebook's 0.8 s time limit" in outcomes[1]["reason"], outcomes
    assert all(t <= 0.8 for t in CostlyKernel.limits_given), CostlyKernel.limits_given


# --- a notebook file over the bound ----------------------------------------------------------------


def test_a_notebook_file_over_the_bound_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(submission_limits, "MAX_NOTEBOOK_BYTES", 4096)
    big = tmp_path / "01-euler.ipynb"
    big.write_text("{" + " " * 8000)  # not even JSON: parsing it would fail with another message
    with pytest.raises(grading.GradingError, match="is 8001 bytes, over the grader's 4096 bytes bound") as err:
        grading.grade_notebook(big, reference=big)
    assert "clear its outputs" in str(err.value)
    small = tmp_path / "small.ipynb"
    small.write_text("{" + " " * 4000)  # under the bound: parsed, and refused for what it is
    with pytest.raises(grading.GradingError, match="cannot read the notebook"):
        grading.grade_notebook(small, reference=small)
