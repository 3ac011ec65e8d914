"""Iterations to a tolerance, side by side: this package's solvers and, when installed,
torchdeq's (a reference implementation; never a dependency of the library)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from nodecourse.deq._fixed_point import fixed_point
from nodecourse.deq._problems import FixedPointProblem

__all__ = ["SolverRun", "compare_solvers"]

TORCHDEQ_NAMES = {"picard": "fixed_point_iter", "anderson": "anderson", "broyden": "broyden"}


@dataclass
class SolverRun:
    """One solver on one problem: evaluations of f until every sample met ``tol`` (None if never)."""

    source: str  # "nodecourse" or "torchdeq"
    method: str
    n_evals: int
    reached: bool
    final_rel_residual: float

    @property
    def label(self) -> str:
        return f"{self.source}:{self.method}"


def torchdeq_available() -> bool:
    import importlib

    try:
        importlib.import_module("torchdeq.solver")
    except Exception:  # any import failure (missing, or broken against this torch) means "not available"
        return False
    return True


def run_nodecourse(problem: FixedPointProblem, method: str, *, tol: float, max_iter: int, **options) -> SolverRun:
    calls = [0]

    def f(z):
        calls[0] += 1
        return problem.f(z)

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the problems act per sample by construction, and the count is the method's evaluations (as
        # torchdeq's is): no batch probe
        r = fixed_point(f, problem.z0, method=method, tol=tol, max_iter=max_iter, check_batch=False, **options)
    return SolverRun("nodecourse", method, calls[0], r.success, r.final_residual("rel"))


def run_torchdeq(problem: FixedPointProblem, method: str, *, tol: float, max_iter: int, **options) -> SolverRun:
    """torchdeq's solver (its defaults unless ``options``), stop_mode "rel", f calls counted."""
    from torchdeq.solver import get_solver

    calls = [0]

    def f(z):
        calls[0] += 1
        return problem.f(z)

    with torch.no_grad():
        z, _, info = get_solver(TORCHDEQ_NAMES[method])(
            f, problem.z0, max_iter=max_iter, tol=tol, stop_mode="rel", **options
        )
        fz = problem.f(z)
        rel = ((fz - z).flatten(1).norm(dim=1) / fz.flatten(1).norm(dim=1)).max()
    rel = float(rel.detach().cpu())
    return SolverRun("torchdeq", method, calls[0], rel <= tol * (1 + 1e-6), rel)


def compare_solvers(
    problem: FixedPointProblem,
    *,
    tol: float = 1e-8,
    max_iter: int = 5000,
    methods: tuple[str, ...] = ("picard", "anderson", "broyden"),
    torchdeq: bool = True,
    torchdeq_budget: float | None = None,
) -> list[SolverRun]:
    """Run each method of this package (and of torchdeq, if ``torchdeq`` and it imports) on ``problem``.

    ``torchdeq_budget``: if set, each torchdeq method gets at most this many times the evaluations
    our same method needed (a run that has not reached ``tol`` by then is reported as not reached,
    which is all a "no more iterations than" comparison needs, and saves time).
    """
    runs = [run_nodecourse(problem, m, tol=tol, max_iter=max_iter) for m in methods]
    if torchdeq and torchdeq_available():
        for ours in list(runs):
            budget = max_iter if torchdeq_budget is None else max(3, int(torchdeq_budget * ours.n_evals))
            runs.append(run_torchdeq(problem, ours.method, tol=tol, max_iter=min(max_iter, budget)))
    return runs
