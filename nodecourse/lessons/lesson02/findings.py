"""What lesson 2's stiff problem shows, from the solves themselves: steps, evaluations a step, and the
work of an implicit step that NFE does not count (Newton iterations, Jacobians)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from nodecourse.lessons.study import Findings
from nodecourse.measure import markdown_table
from nodecourse.solvers import SOLVERS

__all__ = ["StiffFindings", "StiffRun"]


@dataclass(frozen=True)
class StiffRun:
    """One solve of the stiff problem: ``method`` (a name of ``SOLVERS``), its status and counts, and its
    error at the end; ``newton_iters`` and ``jacobians`` only for implicit methods (None otherwise)."""

    label: str
    method: str
    status: str
    steps: int
    rejected: int
    nfe: int
    error: float
    newton_iters: int | None = None
    jacobians: int | None = None

    @classmethod
    def from_solution(cls, label: str, method: str, solution, error: float) -> StiffRun:
        """From an ``odeint`` result (its ``status`` and ``stats``) and the error against the exact end."""
        s = solution.stats
        return cls(
            label,
            method,
            solution.status.name,
            int(s["n_steps"]),
            int(s["n_rejected"]),
            int(s["nfe"]),
            float(error),
            int(s["n_newton_iters"]) if "n_newton_iters" in s else None,
            int(s["n_jacobians"]) if "n_jacobians" in s else None,
        )

    @property
    def kind(self) -> str:
        """ "fixed", "adaptive" or "implicit" (the solver's declared kind)."""
        return SOLVERS[self.method].kind

    @property
    def nfe_per_step(self) -> float:
        """Evaluations of f per step tried (rejected steps included: they cost evaluations too)."""
        return self.nfe / self.steps if self.steps else math.nan


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n:,} times"


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


@dataclass(frozen=True)
class StiffFindings(Findings):
    """The stiff problem's solves side by side, and what a step of each kind cost."""

    runs: tuple[StiffRun, ...]

    @classmethod
    def from_results(cls, results: dict, methods: dict[str, str]) -> StiffFindings:
        """``results``: label -> (odeint result, error at the end); ``methods``: label -> solver name."""
        return cls(
            tuple(StiffRun.from_solution(label, methods[label], sol, err) for label, (sol, err) in results.items())
        )

    def table(self) -> str:
        return markdown_table(
            ["run", "status", "steps (rejected)", "NFE", "NFE a step", "Newton iterations", "Jacobians", "error, t=1"],
            [
                [
                    r.label,
                    r.status,
                    f"{r.steps:,} ({r.rejected:,})",
                    f"{r.nfe:,}",
                    f"{r.nfe_per_step:.1f}",
                    _count(r.newton_iters),
                    _count(r.jacobians),
                    f"{r.error:.1e}",
                ]
                for r in self.runs
            ],
        )

    def cost_per_step(self) -> str:
        """A sentence comparing evaluations a step of the adaptive explicit runs and the implicit ones, and
        naming the Newton work NFE leaves out ("" when the runs lack either kind)."""
        explicit = [r for r in self.runs if r.kind == "adaptive"]
        implicit = [r for r in self.runs if r.kind == "implicit" and r.jacobians is not None]
        if not explicit or not implicit:
            return ""
        most = max(r.nfe_per_step for r in explicit)
        dearer = [r for r in implicit if r.nfe_per_step > most]
        by_nfe = (
            "so by NFE an implicit step is the cheaper one here"
            if not dearer
            else f"so by NFE {', '.join(r.method for r in dearer)} spends more a step here"
        )
        return (
            "Evaluations a step: "
            + ", ".join(f"{r.method} {r.nfe_per_step:.1f}" for r in explicit + implicit)
            + f" (an implicit step spends one per Newton iteration, plus one); {by_nfe}. NFE does not count the "
            "rest of "
            "Newton's work: the Jacobian, computed "
            + ", ".join(f"{_times(r.jacobians)} by {r.method}" for r in implicit)
            + " (reused while Newton converges in a few iterations), and a linear solve with it on every step."
        )

    def markdown(self) -> str:
        sentence = self.cost_per_step()
        return self.table() + ("\n\n" + sentence if sentence else "")
