"""A live explorer of solver work: pick a solver, tolerances and a device; see the trajectory,
the error against a reference, NFE, accepted and rejected steps and the wall time.

The explorer keeps its last result in :attr:`SolverExplorer.result` (a
:class:`ExplorerResult`), so its callbacks can be tested without a browser::

    ex = SolverExplorer(render=False)
    ex.method.value = "rk4"
    ex.result.nfe, ex.result.max_error
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from nodecourse.measure import PROBLEMS, Problem, reference_solution
from nodecourse.widgets._base import FigureExplorer
from nodecourse.widgets._common import assemble, check_device, device_control, show_result

__all__ = ["PROBLEMS", "ExplorerResult", "SolverExplorer", "run_solver"]


@dataclass
class ExplorerResult:
    """What one solve in the explorer produced (all host-side numbers, ready to show).

    ``ts``: ``(n,)`` output times; ``ys``: ``(n, dim)`` solution; ``reference``: ``(n, dim)``;
    ``error``: ``(n,)`` max-abs error per time (NaN where the solve did not reach).
    """

    problem: str
    method: str
    rtol: float
    atol: float
    step_size: float | None
    device: str
    dtype: str
    status: str
    nfe: int
    n_accepted: int
    n_rejected: int
    seconds: float
    max_error: float
    ts: np.ndarray = field(repr=False)
    ys: np.ndarray = field(repr=False)
    reference: np.ndarray = field(repr=False)
    error: np.ndarray = field(repr=False)

    def summary(self) -> str:
        """One line of solver work, as the explorer shows it."""
        step = "" if self.step_size is None else f", h={self.step_size:.2g}"
        return (
            f"{self.method} on {self.device} ({self.dtype}){step}: status {self.status}, NFE {self.nfe}, "
            f"accepted {self.n_accepted}, rejected {self.n_rejected}, max error {self.max_error:.2e}, "
            f"{1e3 * self.seconds:.1f} ms"
        )


def run_solver(
    problem: Problem,
    method: str,
    rtol: float,
    atol: float,
    step_size: float | None,
    device: str,
    *,
    n_out: int | None = None,
    dtype: torch.dtype = torch.float64,
) -> ExplorerResult:
    """Solve ``problem`` once with ``nodecourse.odeint`` (``throw=False``) and measure it."""
    from nodecourse import SOLVERS, odeint
    from nodecourse.config import resolve_device

    dev = resolve_device(device)
    if dev.type == "mps" and dtype == torch.float64:
        dtype = torch.float32  # MPS has no float64; the result's dtype field says so
    spec = SOLVERS[method]
    ts_np = np.linspace(0.0, problem.t1, problem.n_out if n_out is None else n_out)
    ts = torch.tensor(ts_np, dtype=dtype, device=dev)
    y0 = torch.tensor(problem.y0, dtype=dtype, device=dev)
    h = step_size if spec.kind == "fixed" else None
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    start = time.perf_counter()
    sol = odeint(
        problem.f_torch, y0, ts, method=method, rtol=rtol, atol=atol, step_size=h, max_steps=20_000, throw=False
    )
    ys = sol.ys.detach().cpu().numpy()  # the copy to host also waits for the device
    seconds = time.perf_counter() - start
    ref = reference_solution(problem, ts_np)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(ys - ref).max(axis=1)
    finite = np.isfinite(err)
    max_err = float(err[finite].max()) if finite.all() else math.inf
    return ExplorerResult(
        problem.name,
        method,
        rtol,
        atol,
        h,
        dev.type,
        str(dtype).replace("torch.", ""),
        sol.status.name,
        int(sol.stats["nfe"]),
        int(sol.stats["n_accepted"]),
        int(sol.stats["n_rejected"]),
        seconds,
        max_err,
        ts_np,
        ys,
        ref,
        err,
    )


#: The error panel's fixed axis, in decades (1e-14 .. 1e2): the same scale for every setting, so
#: tightening rtol moves the curve down instead of relabelling the axis.
ERROR_AXIS_DECADES = (-14, 2)


def error_axis() -> dict:
    """Plotly axis settings for the error panel: log scale over :data:`ERROR_AXIS_DECADES`, a tick
    every two decades written with a plain exponent (1e-8, not 10n or 0.01µ)."""
    low, high = ERROR_AXIS_DECADES
    ticks = list(range(low, high + 1, 2))
    return dict(
        type="log",
        range=[low, high],
        autorange=False,
        tickvals=[10.0**k for k in ticks],
        ticktext=[f"1e{k}" for k in ticks],
        exponentformat="e",
    )


def errors_off_axis(res: ExplorerResult) -> str:
    """A note when some of the error lies outside the fixed axis (or is not finite), else "".
    (An error of exactly 0, as at t = 0, has no place on a log axis and needs no note.)"""
    low, high = (10.0**k for k in ERROR_AXIS_DECADES)
    err = res.error[np.isfinite(res.error)]
    notes = []
    if (~np.isfinite(res.error)).any():
        notes.append("not finite at some times (the solve failed)")
    if (err > high).any():
        notes.append(f"above 1e{ERROR_AXIS_DECADES[1]} at some times")
    if ((err > 0) & (err < low)).any():
        notes.append(f"below 1e{ERROR_AXIS_DECADES[0]} at some times")
    return "error " + "; ".join(notes) + " (not drawn)" if notes else ""


def result_figure(res: ExplorerResult):
    """Plotly figure: trajectory (solid) over the reference (dashed), and the error along t on a
    fixed log axis (:func:`error_axis`). The result line is the explorer's status, not repeated here."""
    from nodecourse.plotting import course_subplots, solver_color

    fig = course_subplots(rows=1, cols=2, subplot_titles=("trajectory", "error against the reference"))
    problem = PROBLEMS[res.problem]
    dashes = ["solid", "dot"]
    for i, label in enumerate(problem.labels):
        fig.add_scatter(
            x=res.ts,
            y=res.reference[:, i],
            name=f"{label} (reference)",
            row=1,
            col=1,
            line=dict(color="#bbbbbb", width=4),
        )
        fig.add_scatter(
            x=res.ts,
            y=res.ys[:, i],
            name=f"{label} ({res.method})",
            row=1,
            col=1,
            line=dict(color=solver_color(res.method), dash=dashes[i % 2]),
        )
    err = np.where(res.error > 0, res.error, np.nan)
    fig.add_scatter(
        x=res.ts, y=err, name="max |error|", row=1, col=2, showlegend=False, line=dict(color=solver_color(res.method))
    )
    fig.update_xaxes(title="time t (problem units)")
    fig.update_yaxes(title="state y", row=1, col=1)
    fig.update_yaxes(title="max |y − y_ref|", row=1, col=2, **error_axis())
    off = errors_off_axis(res)
    if off:
        fig.add_annotation(
            text=off,
            xref="x2 domain",
            yref="y2 domain",
            x=0.5,
            y=1.0,
            yanchor="bottom",
            showarrow=False,
            font=dict(size=11),
        )
    fig.update_layout(height=340, template="plotly_white", margin=dict(l=60, r=20, t=50, b=50))
    return fig


def step_note(method: str) -> str:
    """Which controls apply to ``method`` and why the others are greyed out."""
    from nodecourse import SOLVERS

    fixed = ", ".join(name for name, spec in SOLVERS.items() if spec.kind == "fixed")
    if SOLVERS[method].kind == "fixed":
        return (
            f"{method} takes fixed steps of size h: <b>fixed h</b> applies; rtol and atol are greyed out "
            "(no error control). Steps are also cut to land on each output time."
        )
    return (
        f"{method} chooses its own steps from rtol and atol, so <b>fixed h</b> is greyed out; "
        f"it applies to the fixed-step solvers ({fixed})."
    )


class SolverExplorer(FigureExplorer):
    """ipywidgets controls (problem, solver, rtol, atol, fixed step, device) and a live view.

    Every change of a control re-solves and updates :attr:`result` (and the
    figure when ``render=True``). Devices offered: those in
    :func:`nodecourse.config.available_devices` (CUDA/MPS only where present).
    Display it in a notebook with ``display(explorer.widget)`` or just ``explorer``.
    """

    def __init__(
        self,
        *,
        problem: str = "van der pol (μ=2)",
        method: str = "dopri5",
        rtol: float = 1e-6,
        atol: float = 1e-8,
        step_size: float = 0.1,
        device: str = "cpu",
        render: bool = True,
    ):
        import ipywidgets as w

        from nodecourse import SOLVERS

        check_device(device)
        self.render = render
        self.problem = self._control(
            "problem", w.Dropdown, problem, options=list(PROBLEMS), description="problem", tooltip="the ODE to solve"
        )
        self.method = self._control(
            "method", w.Dropdown, method, options=list(SOLVERS), description="solver", tooltip="the integration method"
        )
        self.rtol = self._control(
            "rtol",
            w.FloatLogSlider,
            rtol,
            base=10,
            min=-10,
            max=-1,
            step=0.5,
            description="rtol",
            readout_format=".0e",
            tooltip="relative tolerance of the adaptive and implicit solvers",
        )
        self.atol = self._control(
            "atol",
            w.FloatLogSlider,
            atol,
            base=10,
            min=-12,
            max=-1,
            step=0.5,
            description="atol",
            readout_format=".0e",
            tooltip="absolute tolerance of the adaptive and implicit solvers",
        )
        self.step_size = self._control(
            "step_size",
            w.FloatLogSlider,
            step_size,
            base=10,
            min=-4,
            max=0,
            step=0.25,
            description="fixed h",
            readout_format=".1e",
            tooltip="the step size of the fixed-step solvers; greyed out for the "
            "adaptive and implicit ones, which choose their own steps",
        )
        self.device = device_control(device)
        self.result: ExplorerResult | None = None
        self.note = w.HTML()  # which controls apply to the chosen solver, and why the others are greyed
        assemble(
            self,
            [self.problem, self.method, self.rtol, self.atol, self.step_size, self.device],
            first_row=3,
            notes=[self.note],
        )

    def _applies(self, control) -> bool:
        """``fixed h`` applies to the fixed-step solvers only, rtol and atol to the others."""
        from nodecourse import SOLVERS

        fixed = SOLVERS[self.method.value].kind == "fixed"
        if control is self.step_size:
            return fixed
        if control is self.rtol or control is self.atol:
            return not fixed
        return True

    def update(self) -> ExplorerResult:
        """Solve with the current control values (busy state meanwhile); refresh :attr:`result`,
        the status line and the figure."""
        self.note.value = f"<small>{step_note(self.method.value)}</small>"
        settings = (
            PROBLEMS[self.problem.value],
            self.method.value,
            self.rtol.value,
            self.atol.value,
            self.step_size.value,
            self.device.value,
        )
        return self._recompute(lambda: run_solver(*settings), lambda r: show_result(self, r, result_figure))
