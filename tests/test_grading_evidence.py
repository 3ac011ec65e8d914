"""Evidence, not testimony: what the grader measures itself decides, never what the learner's code reports.

- memory is read for every process of the sandbox (:class:`~nodecourse.course.grading_kernel.TreeMemory`),
  on a process tree spawned here: a forked decoy, memory moved into a child that exits before the
  reading, a zombie; none lowers the figure, each is counted;
- exercise 6's ``anderson`` is judged on the points where it evaluated ``f``, replayed outside the
  kernel: plain Picard iteration with the call counter wound back through ``f``'s closure (the attack
  that passed) fails, and so does a short forged trace; the solution passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from conftest import subprocess_timeout
from nodecourse.course import tasks
from nodecourse.course.grading_kernel import TreeMemory, sandbox_pids
from nodecourse.course.tasks import ex06, plain

MIB = 2**20
pytestmark = pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="no /proc/<pid>/clear_refs here")

# A process tree driven through stdin, one command per line; it answers "ok" to each.
#   fork: start a child that waits for commands on a pipe; child N: send it a command
#   alloc N: this process touches N MiB and keeps them; burst N: a child touches N MiB, exits, is reaped
#   zombie N: a child touches N MiB and exits, not reaped
TREE = r"""
import os, sys
held, kids = [], []
def touch(mib):
    block = bytearray(mib * 2**20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    return block
def serve(lines, reply):
    for line in lines:
        cmd, arg = line.split()[0], int(line.split()[1]) if len(line.split()) > 1 else 0
        if cmd == "alloc":
            held.append(touch(arg))
        elif cmd == "burst":
            pid = os.fork()
            if pid == 0:
                touch(arg); os._exit(0)
            os.waitpid(pid, 0)
        elif cmd == "zombie":
            pid = os.fork()
            if pid == 0:
                touch(arg); os._exit(0)
            kids.append(pid)
            import time; time.sleep(0.3)
        elif cmd == "fork":
            r, w = os.pipe()
            back_r, back_w = os.pipe()
            if os.fork() == 0:
                os.close(w); os.close(back_r)
                serve(os.fdopen(r), lambda: (os.write(back_w, b"ok\n")))
                os._exit(0)
            os.close(r); os.close(back_w)
            kids.append((os.fdopen(w, "w"), os.fdopen(back_r)))
        elif cmd == "child":
            w, back = kids[arg]
            w.write(line.split(None, 2)[2] + "\n"); w.flush(); back.readline()
        reply()
serve(sys.stdin, lambda: (sys.stdout.write("ok\n"), sys.stdout.flush()))
"""


@pytest.fixture
def tree():
    proc = subprocess.Popen(
        [sys.executable, "-c", TREE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )

    def send(line: str) -> None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "ok", line

    send.pid = proc.pid
    yield send
    proc.kill()
    proc.wait(timeout=subprocess_timeout())


def test_sandbox_pids_finds_every_descendant(tree):
    tree("fork")
    tree("child 0 fork")
    pids = sandbox_pids(tree.pid)
    assert pids[0] == tree.pid and len(pids) == 3, pids


def test_a_forked_decoy_cannot_stand_in_for_the_process_that_allocates(tree):
    tree("fork")  # the decoy: a fork keeps the parent's command line, the old reader measured it
    memory = TreeMemory.mark(tree.pid)
    tree("alloc 48")  # the kernel itself grows
    tree("child 0 alloc 8")  # the decoy allocates a little
    grown = memory.growth(tree.pid)
    assert grown >= 56 * MIB, grown / MIB  # both counted: the decoy only adds


def test_memory_moved_into_a_child_that_exits_is_counted(tree):
    memory = TreeMemory.mark(tree.pid)
    tree("burst 40")  # allocated and gone (reaped) before the reading
    assert memory.growth(tree.pid) >= 38 * MIB
    memory = TreeMemory.mark(tree.pid)
    tree("zombie 40")  # exited, not reaped: its own faults
    assert memory.growth(tree.pid) >= 38 * MIB


def test_a_process_that_does_nothing_measures_near_zero(tree):
    tree("alloc 32")  # held before the mark: not growth
    memory = TreeMemory.mark(tree.pid)
    time.sleep(0.05)
    assert memory.growth(tree.pid) < 4 * MIB
    assert memory.held >= 32 * MIB


def test_a_reused_pid_is_a_new_process():
    memory = TreeMemory(held=0, before={os.getpid(): ("not-my-start-time", 10**12, 10**12, 10**12)})
    assert memory.growth(os.getpid()) > 0  # counted whole, not against another process's mark


# --- exercise 6: anderson on evidence -------------------------------------------------------------


def _solution_namespace() -> dict:
    import nbformat

    from nodecourse.course.exercise_builder import answer_id

    nb = nbformat.read(Path(__file__).resolve().parent.parent / "solutions" / "06_deq_exercises.ipynb", 4)
    ns: dict = {"torch": torch}
    for cell in nb.cells:
        if cell.cell_type == "code" and answer_id(cell) in ("mixing-weights", "anderson"):
            exec(cell.source, ns)  # noqa: S102 - the course's own solution
    return ns


PICARD_WOUND_BACK = """
def anderson(f, x0, m=6, tol=1e-8, max_iter=3000):
    x = x0
    for k in range(1, 20000):
        fx = f(x)
        if (fx - x).norm() <= tol * (1 + fx.norm()):
            x = fx
            break
        x = fx
    for cell in f.__closure__ or ():  # wind the grader's counter back
        if isinstance(cell.cell_contents, list) and cell.cell_contents and isinstance(cell.cell_contents[0], int):
            cell.cell_contents[0] = 1
    return x, 1
"""

# Picard to the fixed point, then a trace that claims one step from x0 lands on it.
FORGED_TRACE = """
def anderson(f, x0, m=6, tol=1e-8, max_iter=3000):
    x = x0
    for _ in range(20000):
        x = f(x)
    for cell in f.__closure__ or ():
        value = cell.cell_contents
        if isinstance(value, list):
            del value[:]
            value.extend([x0.clone(), x.clone()])
        elif isinstance(value, dict):
            value.clear()
    return x, 2
"""


def _judge(source: str | None, seed: int):
    task = tasks.get_task("06", "anderson")
    ns = _solution_namespace() if source is None else {}
    if source is not None:
        exec("import torch\n" + source, ns)  # noqa: S102 - the attack under test
    answer = tasks.answer_text("06", "anderson", seed, ns)
    reference = plain.decode(tasks.reference_text("06", ["anderson"], seed))["anderson"]
    return tasks.judge_texts(task, answer, reference)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_solution_passes_on_its_evaluations(seed):
    verdict = _judge(None, seed)
    assert verdict.passed, verdict.detail


def test_picard_with_a_wound_back_counter_fails():
    verdict = _judge(PICARD_WOUND_BACK, 0)
    assert not verdict.passed
    assert "reported 1 evaluations but called f" in verdict.detail, verdict.detail
    honest_count = PICARD_WOUND_BACK.replace(
        "return x, 1",
        "return x, len(next(c.cell_contents for c in f.__closure__ if isinstance(c.cell_contents, list)))",
    )
    verdict = _judge(honest_count, 0)  # the count made to agree with the record: the steps still tell
    assert not verdict.passed and "evaluation 3 of f is not an Anderson step" in verdict.detail, verdict.detail


def test_a_forged_short_trace_fails():
    verdict = _judge(FORGED_TRACE, 0)
    assert not verdict.passed
    assert "not an Anderson step" in verdict.detail or "evaluations" in verdict.detail, verdict.detail


def test_the_replay_names_a_step_outside_the_span():
    """The replay on a trace built here: Anderson's own trace passes, one point moved fails at that step."""
    ns = _solution_namespace()
    answer = plain.decode(tasks.answer_text("06", "anderson", 0, ns))["value"]
    points = [p.values.copy() for p in answer["evaluated"]]
    ref = plain.decode(tasks.reference_text("06", ["anderson"], 0))["anderson"]
    A, b = ref["A"].values, ref["b"].values
    assert ex06.replay_failure(A, b, points, m=6) == ""
    points[3] = points[3] + 1e-3
    assert "evaluation 4" in ex06.replay_failure(A, b, points, m=6)


# --- exercise 4: flat is not enough ----------------------------------------------------------------


def test_memory_padded_at_the_small_size_to_look_flat_fails():
    """Plain backprop in LearnerAdjoint, padded at the small step count up to what the large one takes:
    flat, but above what backprop takes at the small size, which an adjoint never is."""
    task = tasks.get_task("04", "flat-memory")
    steps, mib = (8, 32), lambda *v: [x * MIB for x in v]
    rows = [
        {"adjoint": adj, "n": n, "own": own, "yours": own}
        for adj, values in ((True, mib(32.0, 32.2)), (False, mib(8.7, 32.0)))
        for n, own in zip(steps, values)
    ]
    measured = [{"key": [True, 4], "bytes": 40 * MIB}, {"key": [False, 4], "bytes": 5 * MIB}] + [
        {"key": [r["adjoint"], r["n"]], "bytes": r["own"]} for r in rows
    ]
    verdict = task.judge({"rows": rows}, {"steps": list(steps), "measured": measured})
    assert not verdict.passed and "holds more than backprop" in verdict.detail, verdict
    honest = [{**r, "own": 2.9 * MIB, "yours": 2.9 * MIB} if r["adjoint"] else r for r in rows]
    measured = measured[:2] + [{"key": [r["adjoint"], r["n"]], "bytes": r["own"]} for r in honest]
    assert task.judge({"rows": honest}, {"steps": list(steps), "measured": measured}).passed
