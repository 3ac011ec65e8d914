"""Exercise 4's flat-memory check, observed from outside the learner's kernel.

The grader runs one forward + backward per measurement in the kernel (sizes drawn
per run) and reads the kernel process's peak resident memory itself, from
``/proc/<pid>/status`` after resetting it through ``/proc/<pid>/clear_refs``; the
judge decides flatness on those numbers, whatever the kernel's reply says.
"""

from __future__ import annotations

import copy
import json

import nbformat
import pytest

from nodecourse.course import grading, sandbox, tasks
from nodecourse.course.exercise_builder import answer_id
from notebook_fixtures import REPO, write

EX04 = REPO / "solutions" / "04_adjoint_exercises.ipynb"
MIB = 2**20
NEEDS_BWRAP = pytest.mark.skipif(
    not sandbox.probe().sandboxed, reason=f"no sandbox on this machine: {sandbox.probe().reason}"
)


def _reply(own_adjoint, own_backprop, steps=(8, 32)):
    """A reply whose in-kernel numbers say flat (the learner's and the kernel's own agree)."""
    rows = []
    for adj, own in ((True, own_adjoint), (False, own_backprop)):
        for n, value in zip(steps, own):
            rows.append({"adjoint": adj, "n": n, "own": value, "yours": value})
    return {"rows": rows}


def _measured(adjoint, backprop, steps=(8, 32)):
    out = [{"key": [True, 4], "bytes": 40 * MIB}, {"key": [False, 4], "bytes": 5 * MIB}]
    for adj, values in ((True, adjoint), (False, backprop)):
        out += [{"key": [adj, n], "bytes": v} for n, v in zip(steps, values)]
    return out


def test_flatness_is_decided_on_the_graders_own_measurement():
    task = tasks.get_task("04", "flat-memory")
    flat_inside = _reply([3 * MIB, 3 * MIB], [10 * MIB, 40 * MIB])
    ref = {"steps": [8, 32]}
    assert task.judge(flat_inside, ref).passed  # the self-check: only the kernel's numbers
    grows = {**ref, "measured": _measured([3 * MIB, 30 * MIB], [10 * MIB, 40 * MIB])}
    verdict = task.judge(flat_inside, grows)
    assert not verdict.passed and "not flat" in verdict.detail, verdict
    flat = {**ref, "measured": _measured([3 * MIB, 3.2 * MIB], [10 * MIB, 40 * MIB])}
    assert task.judge(flat_inside, flat).passed
    partial = {**ref, "measured": _measured([3 * MIB, 3 * MIB], [10 * MIB, 40 * MIB])[:3]}
    verdict = task.judge(flat_inside, partial)
    assert not verdict.passed and "incomplete" in verdict.detail


@pytest.mark.slow
@NEEDS_BWRAP
def test_the_grader_measures_the_kernel_from_outside_and_a_kept_graph_fails(tmp_path):
    solution = nbformat.read(EX04, as_version=4)
    rows, _ = grading.grade_notebook(
        write(solution, tmp_path / "ok" / EX04.name), seed=7, timeout_s=120, keep_dir=tmp_path / "keep"
    )
    assert all(r.passed for r in rows), [(r.check, r.reason) for r in rows]
    cells = json.loads((tmp_path / "keep" / "outcomes.json").read_text())["cells"]
    (measured,) = [c["measured"] for c in cells.values() if c.get("measured")]
    assert [m["key"][0] for m in measured] == [True, False, True, True, False, False]
    assert all(m["bytes"] > 0 for m in measured)

    kept = copy.deepcopy(solution)  # the forward solve keeps its graph alive: memory grows with the steps
    for cell in kept.cells:
        if answer_id(cell) == "learner-adjoint":
            cell.source = cell.source.replace(
                '        with torch.no_grad():\n            z1 = odeint(func, y0, t, method="rk4", '
                "step_size=t1 / n_steps).ys[-1]\n",
                "        with torch.enable_grad():\n            kept = odeint(func, y0.detach().requires_grad_(), t, "
                'method="rk4", step_size=t1 / n_steps).ys[-1]\n        ctx.kept = kept\n        z1 = kept.detach()\n',
            )
            assert "ctx.kept" in cell.source
    rows, _ = grading.grade_notebook(write(kept, tmp_path / "kept" / EX04.name), seed=7, timeout_s=120)
    by = {r.check: r for r in rows}
    assert by["learner-adjoint"].passed, by["learner-adjoint"]  # its gradients are right
    assert not by["flat-memory"].passed and "not flat" in by["flat-memory"].reason, by["flat-memory"]
