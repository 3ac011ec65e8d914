"""Lesson 2's stiff-problem findings: the counts come from the solves, and the sentence on what a step
costs follows them (which kind spends more evaluations a step, how often the Jacobian was computed)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch
from snapshot_support import assert_snapshot

from nodecourse import odeint
from nodecourse.lessons import lesson02 as L

EXPLICIT_STATS = {"nfe": 600, "n_steps": 100, "n_accepted": 90, "n_rejected": 10}


def _solve(stats, status="SUCCESS"):
    """A stand-in for an odeint result: only ``status.name`` and ``stats`` are read."""
    return SimpleNamespace(status=SimpleNamespace(name=status), stats=stats)


def _implicit(nfe, steps, jacobians):
    return {"nfe": nfe, "n_steps": steps, "n_rejected": 0, "n_newton_iters": nfe - steps, "n_jacobians": jacobians}


def test_counts_come_from_the_solution_and_implicit_steps_read_cheaper_by_nfe():
    results = {"dopri5": (_solve(EXPLICIT_STATS), 1e-6), "trapezoid": (_solve(_implicit(300, 100, 1)), 2e-6)}
    f = L.StiffFindings.from_results(results, {"dopri5": "dopri5", "trapezoid": "trapezoid"})
    assert [r.kind for r in f.runs] == ["adaptive", "implicit"]
    dopri, trap = f.runs
    assert (dopri.status, dopri.steps, dopri.rejected, dopri.nfe, dopri.error) == ("SUCCESS", 100, 10, 600, 1e-6)
    assert dopri.nfe_per_step == 6.0 and dopri.newton_iters is None and dopri.jacobians is None
    assert (trap.status, trap.steps, trap.rejected, trap.nfe, trap.error) == ("SUCCESS", 100, 0, 300, 2e-6)
    assert trap.nfe_per_step == 3.0 and trap.newton_iters == 200 and trap.jacobians == 1
    assert trap.nfe_per_step < dopri.nfe_per_step  # the sentence calls the implicit step the cheaper one
    assert f.cost_per_step() and f.markdown() == f.table() + "\n\n" + f.cost_per_step()
    assert_snapshot("lesson02.stiff-implicit-cheaper", f.markdown())


def test_an_implicit_method_that_spends_more_a_step_is_named():
    results = {"dopri5": (_solve(EXPLICIT_STATS), 1e-6), "implicit_euler": (_solve(_implicit(900, 100, 40)), 1e-6)}
    f = L.StiffFindings.from_results(results, {"dopri5": "dopri5", "implicit_euler": "implicit_euler"})
    dopri, implicit = f.runs
    assert implicit.nfe_per_step == 9.0 > dopri.nfe_per_step and implicit.jacobians == 40
    assert "cheaper" not in f.markdown()
    assert_snapshot("lesson02.stiff-implicit-dearer", f.markdown())


def test_without_both_kinds_there_is_no_comparison():
    f = L.StiffFindings.from_results({"euler": (_solve(EXPLICIT_STATS), 1.0)}, {"euler": "euler"})
    assert f.cost_per_step() == "" and f.markdown() == f.table()


def test_real_solves_of_the_stiff_problem():
    """On lesson 2's problem: dopri5 spends its six evaluations a step, an implicit step one per Newton
    iteration plus one, and the Jacobian count is what the solver reported."""
    f_stiff = lambda t, y: -1000.0 * (y - torch.cos(t))  # noqa: E731
    y0, t = torch.zeros(1, dtype=torch.float64), torch.tensor([0.0, 1.0], dtype=torch.float64)
    methods = {"dopri5": "dopri5", "trapezoid": "trapezoid"}
    results = {}
    for label, method in methods.items():
        sol = odeint(f_stiff, y0, t, method=method, rtol=1e-4, atol=1e-6)
        results[label] = (sol, abs(sol.ys[-1].item() - math.cos(1.0)))
    runs = {r.method: r for r in L.StiffFindings.from_results(results, methods).runs}
    assert abs(runs["dopri5"].nfe_per_step - 6.0) < 0.1
    trap = runs["trapezoid"]
    assert trap.jacobians == results["trapezoid"][0].stats["n_jacobians"] >= 1
    assert trap.nfe - trap.newton_iters - trap.steps in range(0, 5)  # a few evaluations to start the solve
