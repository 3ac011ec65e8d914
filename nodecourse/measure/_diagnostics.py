"""Seeing the solver's work: a tolerance sweep and a log of every solve in a block.

from nodecourse.measure._diagnostics import SolverWorkLog, tolerance_sweep, rows_to_markdown

with SolverWorkLog() as log:
    model(x)                  # any code that calls nodecourse.odeint
print(log.summary())

rows = tolerance_sweep(f, y0, t, rtols=[1e-3, 1e-5, 1e-7])
print(rows_to_markdown(rows))
"""

from __future__ import annotations

import math
import numbers
import statistics
import time
from dataclasses import asdict, dataclass, fields
from typing import Any, Optional, Sequence

import torch

from nodecourse.measure._tables import markdown_table
from nodecourse.solvers import SOLVERS, Status, odeint, spec_for
from nodecourse.solvers import _observers as observers

__all__ = [
    "SweepRow",
    "tolerance_sweep",
    "rows_to_columns",
    "rows_to_markdown",
    "SolveRecord",
    "SolverWorkLog",
]


@dataclass
class SweepRow:
    """One tolerance of a sweep: accuracy against the reference and the work it cost."""

    rtol: float
    atol: float
    max_error: float  # max |ys - reference| over all output times and elements
    nfe: int
    n_accepted: int
    n_rejected: int
    seconds: float  # median wall time over the repeats
    status: str


def tolerance_sweep(
    func,
    y0: torch.Tensor,
    t: torch.Tensor,
    rtols: Sequence[float],
    *,
    method: str = "dopri5",
    atol: Optional[float] = None,
    reference: Optional[torch.Tensor] = None,
    backend: str = "nodecourse",
    repeats: int = 1,
) -> list[SweepRow]:
    """Solve once per ``rtol`` and report error, NFE, steps and time.

    Args:
        func, y0, t: as for :func:`nodecourse.odeint` (``y0`` shape ``S``, ``t`` shape ``(T,)``).
        rtols: relative tolerances, e.g. ``[1e-3, 1e-5, 1e-7]``.
        method: an adaptive or implicit method name.
        atol: absolute tolerance for every row; None uses ``rtol / 100`` per row.
        reference: the true ``ys``, shape ``(T, *S)``; None computes one with dopri5 at
            ``rtol = min(rtols) / 1000`` (at least 1e-12) in float64.
        backend: ``"nodecourse"`` or ``"torchdiffeq"``.
        repeats: solves per row; the time is the median.
    Returns:
        a list of :class:`SweepRow`, in the order of ``rtols``.
    """
    if isinstance(rtols, (str, bytes)) or not isinstance(rtols, Sequence) or len(rtols) == 0:
        raise ValueError(f"rtols={rtols!r} must be a non-empty list of positive numbers, e.g. [1e-3, 1e-5, 1e-7]")
    for r in rtols:
        if isinstance(r, bool) or not isinstance(r, numbers.Real) or not (r > 0 and math.isfinite(r)):
            raise ValueError(f"rtols contains {r!r}; every rtol must be a finite number > 0")
    if isinstance(repeats, bool) or not isinstance(repeats, numbers.Integral) or repeats < 1:
        raise ValueError(f"repeats={repeats!r} must be an int >= 1")
    if spec_for(method).kind == "fixed":
        raise ValueError(
            f"method={method!r} is fixed-step and ignores rtol; sweep an adaptive or implicit method "
            f"({', '.join(n for n, s in SOLVERS.items() if s.kind != 'fixed')})"
        )
    if atol is not None and (isinstance(atol, bool) or not isinstance(atol, numbers.Real) or not atol > 0):
        raise ValueError(f"atol={atol!r} must be a number > 0, or None for rtol/100 per row")
    if not isinstance(y0, torch.Tensor) or not isinstance(t, torch.Tensor):
        raise TypeError("y0 and t must be torch tensors (see nodecourse.odeint)")
    if reference is None:
        ref_rtol = max(min(rtols) / 1000, 1e-12)
        reference = odeint(
            func,
            y0.detach().double(),
            t.double(),
            method="dopri5",
            rtol=ref_rtol,
            atol=ref_rtol * 1e-2,
            max_steps=1_000_000,
        ).ys
    expected = (t.shape[0], *y0.shape)
    if not isinstance(reference, torch.Tensor) or tuple(reference.shape) != expected:
        shape = tuple(reference.shape) if isinstance(reference, torch.Tensor) else type(reference).__name__
        raise ValueError(f"reference has shape {shape}; it must be the solution at t, shape {expected}")

    rows = []
    for rtol in rtols:
        row_atol = float(atol) if atol is not None else rtol / 100
        times, sol = [], None
        for _ in range(repeats):
            start = time.perf_counter()
            sol = odeint(func, y0, t, method=method, rtol=rtol, atol=row_atol, backend=backend, throw=False)
            times.append(time.perf_counter() - start)
        err = (sol.ys.detach().to(reference.dtype) - reference.to(sol.ys.device)).abs().max()
        rows.append(
            SweepRow(
                rtol=float(rtol),
                atol=row_atol,
                max_error=float(err),
                nfe=sol.stats["nfe"],
                n_accepted=sol.stats["n_accepted"],
                n_rejected=sol.stats["n_rejected"],
                seconds=statistics.median(times),
                status=sol.status.name,
            )
        )
    return rows


def rows_to_columns(rows: Sequence[Any]) -> dict[str, list]:
    """A list of dataclass rows as ``{column: [values]}`` (plotly- and table-friendly, no pandas)."""
    if not rows:
        return {}
    names = [f.name for f in fields(rows[0])]
    return {name: [getattr(r, name) for r in rows] for name in names}


def rows_to_markdown(rows: Sequence[Any]) -> str:
    """A list of dataclass rows as a markdown table, numbers in short scientific form."""
    columns = rows_to_columns(rows)
    if not columns:
        return "(no rows)"
    cells = [[f"{v:.3g}" if isinstance(v, float) else str(v) for v in values] for values in zip(*columns.values())]
    return markdown_table(list(columns), cells)


@dataclass
class SolveRecord:
    """One call of :func:`nodecourse.odeint` seen by a :class:`SolverWorkLog`."""

    method: str
    rtol: float
    atol: float
    step_size: Optional[float]
    backend: str
    per_sample: bool
    shape: tuple
    n_times: int
    nfe: int
    n_steps: int
    n_accepted: int
    n_rejected: int
    status: str
    seconds: float


class SolverWorkLog:
    """Context manager that records every ``odeint`` call made inside it (nesting allowed).

    Attributes:
        records: a list of :class:`SolveRecord`, in call order.
    """

    def __init__(self):
        self.records: list[SolveRecord] = []
        self._active = False
        self._listener = self._listen  # one bound-method object, so it can be removed by identity

    def _listen(self, info: dict) -> None:
        stats = info["stats"]
        self.records.append(
            SolveRecord(
                method=info["method"],
                rtol=info["rtol"],
                atol=info["atol"],
                step_size=info["step_size"],
                backend=info["backend"],
                per_sample=info["per_sample"],
                shape=info["shape"],
                n_times=info["n_times"],
                nfe=int(stats["nfe"]),
                n_steps=int(stats["n_steps"]),
                n_accepted=int(stats["n_accepted"]),
                n_rejected=int(stats["n_rejected"]),
                status=info["status"].name,
                seconds=info["seconds"],
            )
        )

    def __enter__(self) -> "SolverWorkLog":
        if self._active:
            raise RuntimeError("this SolverWorkLog is already active; make a new one to nest logs")
        self._active = True
        observers.add_listener(self._listener)
        return self

    def __exit__(self, *exc) -> None:
        observers.remove_listener(self._listener)
        self._active = False

    @property
    def n_solves(self) -> int:
        return len(self.records)

    @property
    def total_nfe(self) -> int:
        return sum(r.nfe for r in self.records)

    @property
    def failures(self) -> list[SolveRecord]:
        return [r for r in self.records if r.status != Status.SUCCESS.name]

    def totals(self) -> dict[str, Any]:
        """Sums over all recorded solves: solves, nfe, steps, accepted, rejected, failures, seconds."""
        return {
            "solves": self.n_solves,
            "nfe": self.total_nfe,
            "n_steps": sum(r.n_steps for r in self.records),
            "n_accepted": sum(r.n_accepted for r in self.records),
            "n_rejected": sum(r.n_rejected for r in self.records),
            "failures": len(self.failures),
            "seconds": sum(r.seconds for r in self.records),
        }

    def summary(self) -> str:
        """A few lines: totals, then one line per (method, rtol, atol) group."""
        if not self.records:
            return "SolverWorkLog: no odeint calls recorded"
        tot = self.totals()
        lines = [
            f"SolverWorkLog: {tot['solves']} solves, NFE {tot['nfe']}, steps {tot['n_steps']} "
            f"({tot['n_rejected']} rejected), {tot['failures']} failed, {tot['seconds']:.3f} s"
        ]
        groups: dict[tuple, list[SolveRecord]] = {}
        for r in self.records:
            groups.setdefault((r.method, r.rtol, r.atol, r.step_size, r.backend), []).append(r)
        for (method, rtol, atol, step, backend), recs in groups.items():
            setting = f"step_size={step:g}" if step is not None else f"rtol={rtol:g} atol={atol:g}"
            nfe = [r.nfe for r in recs]
            lines.append(
                f"  {method} [{backend}] {setting}: {len(recs)} solves, NFE mean "
                f"{statistics.fmean(nfe):.1f} (min {min(nfe)}, max {max(nfe)}), "
                f"rejected {sum(r.n_rejected for r in recs)}"
            )
        return "\n".join(lines)

    def table(self) -> str:
        """Every recorded solve as a markdown table."""
        return rows_to_markdown(self.records)

    def as_dicts(self) -> list[dict]:
        return [asdict(r) for r in self.records]
