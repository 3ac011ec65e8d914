"""Figures of solver behaviour: convergence order, step sizes along t, the tolerance dial,
per-sample work. Each takes plain measured numbers (lists or dicts) and returns a plotly figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

import plotly.graph_objects as go
import torch

from nodecourse.plotting import course_subplots, figure, solver_color

__all__ = [
    "ConvergenceRun",
    "StepTrace",
    "plot_convergence",
    "plot_step_sizes",
    "plot_tolerance_sweep",
    "plot_work_per_input",
    "trace_steps",
]


class ConvergenceRun(Protocol):
    """What :func:`plot_convergence` reads of one method's run (lesson 2's ``ConvergenceResult`` is one;
    the library does not import lessons)."""

    method: str
    declared: int
    step_sizes: Sequence[float]
    errors: Sequence[float]
    nfe: Sequence[int]
    measured: float


def plot_convergence(results: Sequence[ConvergenceRun], *, title: str = "Convergence order") -> go.Figure:
    """Log-log global error against step size, one line per method, fitted slope in the legend.

    ``results``: one :class:`ConvergenceRun` per method, such as lesson 2's ``convergence`` returns
    (``method``, ``declared``, ``step_sizes``, ``errors``, ``measured``; ``nfe`` shown on hover).
    """
    fig = figure(title, "step size h", "global error at t = 2", log_x=True, log_y=True)
    for r in results:
        fig.add_scatter(
            x=list(r.step_sizes),
            y=list(r.errors),
            mode="lines+markers",
            name=f"{r.method}: slope {r.measured:.2f} (declared {r.declared})",
            line=dict(color=solver_color(r.method)),
            text=[f"NFE {n}" for n in r.nfe] or None,
        )
    return fig


@dataclass
class StepTrace:
    """Every step a solve attempted: start time, size, error ratio, accepted or not.

    ``t_start``, ``h``, ``error_ratio`` and ``accepted`` are lists of equal length, in the order
    the solver tried them, copied from the solver's own record (``odeint(..., record_steps=True)``).
    """

    method: str
    t_start: list[float] = field(default_factory=list)
    h: list[float] = field(default_factory=list)
    accepted: list[bool] = field(default_factory=list)
    error_ratio: list[float] = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    @classmethod
    def from_solution(cls, sol) -> "StepTrace":
        """The trace of a :class:`~nodecourse.Solution` solved with ``record_steps=True``."""
        if sol.steps is None:
            raise ValueError("this solution has no step record: solve with odeint(..., record_steps=True)")
        rec = sol.steps
        if rec.per_sample:
            raise ValueError("a per_sample=True record has one column per element; plot one trajectory")
        return cls(
            sol.method,
            list(rec.t0),
            [abs(h) for h in rec.h],
            list(rec.accepted),
            list(rec.error_ratio),
            dict(sol.stats),
        )

    @property
    def n_accepted(self) -> int:
        return sum(self.accepted)

    @property
    def n_rejected(self) -> int:
        return len(self.accepted) - self.n_accepted


def trace_steps(
    func, y0: torch.Tensor, t: torch.Tensor, *, method="dopri5", rtol: float = 1e-6, atol: float = 1e-8, **odeint_kwargs
) -> StepTrace:
    """Solve with ``record_steps=True`` and return the solver's own record of its steps as a
    :class:`StepTrace` (any method; ``method`` may be a ``ButcherTableau``)."""
    from nodecourse import odeint

    sol = odeint(func, y0, t, method=method, rtol=rtol, atol=atol, record_steps=True, **odeint_kwargs)
    return StepTrace.from_solution(sol)


def plot_step_sizes(
    traces: Sequence[StepTrace], *, title: str = "Step size along the solution", time_unit: str = "problem units"
) -> go.Figure:
    """Step size against the time each step started: accepted steps as dots joined by a line,
    rejected attempts as crosses."""
    fig = figure(title, f"time t ({time_unit})", f"step size h ({time_unit})", log_y=True)
    for tr in traces:
        color = solver_color(tr.method)
        acc = [(t, h) for t, h, a in zip(tr.t_start, tr.h, tr.accepted) if a]
        rej = [(t, h) for t, h, a in zip(tr.t_start, tr.h, tr.accepted) if not a]
        fig.add_scatter(
            x=[a[0] for a in acc],
            y=[a[1] for a in acc],
            mode="lines+markers",
            marker=dict(size=4),
            line=dict(color=color),
            name=f"{tr.method}: {tr.n_accepted} accepted",
        )
        fig.add_scatter(
            x=[r[0] for r in rej],
            y=[r[1] for r in rej],
            mode="markers",
            marker=dict(symbol="x", size=8, color=color),
            name=f"{tr.method}: {tr.n_rejected} rejected",
        )
    return fig


def _get(row, *names):
    for name in names:
        if isinstance(row, dict) and name in row:
            return row[name]
        if hasattr(row, name):
            return getattr(row, name)
    raise KeyError(f"row {row!r} has none of {names}")


def plot_tolerance_sweep(rows_by_method: dict[str, Sequence], *, title: str = "The precision/speed dial") -> go.Figure:
    """Three panels against rtol: error, NFE and wall time, one line per method.

    ``rows_by_method``: method name to rows, either :class:`nodecourse.measure.SweepRow`
    objects or dicts, with ``rtol``, ``max_error`` (or ``error``), ``nfe`` and optionally ``seconds``.
    """
    fig = course_subplots(rows=1, cols=3, subplot_titles=("error", "function evaluations", "wall time"))
    for method, rows in rows_by_method.items():
        rt = [_get(r, "rtol") for r in rows]
        color = solver_color(method)
        fig.add_scatter(
            x=rt,
            y=[_get(r, "max_error", "error") for r in rows],
            mode="lines+markers",
            name=method,
            line=dict(color=color),
            row=1,
            col=1,
        )
        fig.add_scatter(
            x=rt,
            y=[_get(r, "nfe") for r in rows],
            mode="lines+markers",
            name=method,
            line=dict(color=color),
            showlegend=False,
            row=1,
            col=2,
        )
        if all(isinstance(r, dict) and "seconds" in r or hasattr(r, "seconds") for r in rows):
            fig.add_scatter(
                x=rt,
                y=[1e3 * _get(r, "seconds") for r in rows],
                mode="lines+markers",
                name=method,
                line=dict(color=color),
                showlegend=False,
                row=1,
                col=3,
            )
    fig.update_xaxes(type="log", title="rtol")
    fig.update_yaxes(type="log", title="max |y − y_ref|", row=1, col=1)
    fig.update_yaxes(type="log", title="NFE", row=1, col=2)
    fig.update_yaxes(type="log", title="time (ms)", row=1, col=3)
    fig.update_layout(title=title, height=360, template="plotly_white", margin=dict(l=60, r=20, t=70, b=50))
    return fig


def plot_work_per_input(
    labels: Sequence[str],
    nfe_batched: Sequence[int],
    nfe_per_sample: Sequence[int],
    *,
    title: str = "Work per input: batched vs per-sample step control",
) -> go.Figure:
    """Grouped bars: the NFE each input costs when the batch shares one step size vs its own."""
    fig = figure(title, "input", "function evaluations spent on this input")
    fig.add_bar(x=list(labels), y=list(nfe_batched), name="batched (one step size for all)", marker_color="#7f7f7f")
    fig.add_bar(
        x=list(labels), y=list(nfe_per_sample), name="per sample (own step size)", marker_color=solver_color("dopri5")
    )
    fig.update_layout(barmode="group")
    return fig
