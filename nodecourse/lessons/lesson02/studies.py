"""Lesson 2's measurements: a solver's convergence order on a problem with a known answer, and the NFE
an adaptive solver spends as the tolerance moves (the results :mod:`nodecourse.plotting.solvers` draws)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from nodecourse.lessons.lesson02.config import T_END, order_steps

__all__ = [
    "ConvergenceResult",
    "ToleranceSolve",
    "convergence",
    "fit_slope",
    "nfe_sweep",
    "order_exact",
    "order_problem",
]


@dataclass(frozen=True)
class ConvergenceResult:
    """One solver's global error against step size on :func:`order_problem`, and the order fitted to it.

    ``step_sizes``, ``errors`` and ``nfe`` have one entry per step count, largest step first:
    ``step_sizes[i] = T_END / n_i`` (time units), ``errors[i]`` the absolute error at ``t = T_END``,
    ``nfe[i]`` the function evaluations of that solve. ``measured`` is the least-squares slope of
    log error against log step size; ``declared`` the order the tableau declares.
    """

    method: str
    declared: int
    step_sizes: tuple[float, ...]
    errors: tuple[float, ...]
    nfe: tuple[int, ...]
    measured: float


@dataclass(frozen=True)
class ToleranceSolve:
    """One adaptive solve of the Van der Pol problem at one tolerance (``atol = rtol / 100``).

    ``nfe``: function evaluations; ``n_accepted`` / ``n_rejected``: steps; ``error``: max absolute
    error of the final state against the DOP853 reference (state units).
    """

    rtol: float
    nfe: int
    n_accepted: int
    n_rejected: int
    error: float


def order_problem(t, y):
    """``dy/dt = y cos t``, ``y(0) = 1``: exact solution ``exp(sin t)`` (smooth, non-autonomous)."""
    return y * torch.cos(t)


def order_exact(t: float) -> float:
    return math.exp(math.sin(t))


def fit_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log(ys) against log(xs)."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def convergence(
    method, n_steps: Sequence[int] | None = None, *, device: str | torch.device = "cpu"
) -> ConvergenceResult:
    """Global error at ``t = 2`` of ``method`` with equal steps ``h = 2 / n`` on :func:`order_problem`, float64.

    ``method``: a registered name or a :class:`~nodecourse.solvers.ButcherTableau` (a learner's own;
    its step counts default to :func:`order_steps`: by declared order).

    Adaptive pairs are run at a fixed step by setting ``first_step = max_step = h``
    with tolerances so loose that no step is rejected (checked: ``n_rejected == 0``),
    which measures the order of the solution they propagate.
    Returns a :class:`ConvergenceResult` (one entry per step count).
    """
    from nodecourse import odeint
    from nodecourse.solvers import spec_for

    spec = spec_for(method)
    n_steps = tuple(order_steps(spec) if n_steps is None else n_steps)
    y0 = torch.ones(1, dtype=torch.float64, device=device)
    t = torch.tensor([0.0, T_END], dtype=torch.float64, device=device)
    sizes, errors, nfes = [], [], []
    for n in n_steps:
        h = T_END / n
        if spec.kind == "adaptive":
            sol = odeint(
                order_problem, y0, t, method=method, rtol=0.5, atol=1e6, options={"first_step": h, "max_step": h}
            )
            if sol.stats["n_rejected"] != 0 or sol.stats["n_accepted"] != n:
                raise RuntimeError(f"{spec.name}: expected {n} accepted fixed steps, got stats {sol.stats}")
        else:
            sol = odeint(order_problem, y0, t, method=method, step_size=h)
        sizes.append(h)
        errors.append(abs(sol.ys[-1].item() - order_exact(T_END)))
        nfes.append(int(sol.stats["nfe"]))
    return ConvergenceResult(
        method=spec.name,
        declared=spec.order,
        step_sizes=tuple(sizes),
        errors=tuple(errors),
        nfe=tuple(nfes),
        measured=fit_slope(sizes, errors),
    )


def nfe_sweep(
    rtols: Sequence[float], method: str = "dopri5", *, device: str | torch.device = "cpu"
) -> list[ToleranceSolve]:
    """NFE, steps and error of ``method`` on a Van der Pol oscillator (μ = 2, t in [0, 10]) for each rtol
    (``atol = rtol / 100``), one :class:`ToleranceSolve` per rtol in the order given. The reference is
    scipy's DOP853 at rtol 1e-12.
    """
    import numpy as np
    from scipy.integrate import solve_ivp

    from nodecourse import odeint

    mu = 2.0

    def vdp(t, y):
        return torch.stack([y[..., 1], mu * (1 - y[..., 0] ** 2) * y[..., 1] - y[..., 0]], dim=-1)

    ref = solve_ivp(
        lambda t, y: [y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]],
        (0.0, 10.0),
        [2.0, 0.0],
        method="DOP853",
        rtol=1e-12,
        atol=1e-12,
    ).y[:, -1]
    y0 = torch.tensor([2.0, 0.0], dtype=torch.float64, device=device)
    t = torch.tensor([0.0, 10.0], dtype=torch.float64, device=device)
    rows = []
    for rtol in rtols:
        sol = odeint(vdp, y0, t, method=method, rtol=rtol, atol=rtol / 100)
        err = float(np.abs(sol.ys[-1].cpu().numpy() - ref).max())
        rows.append(
            ToleranceSolve(
                rtol=rtol,
                nfe=int(sol.stats["nfe"]),
                n_accepted=int(sol.stats["n_accepted"]),
                n_rejected=int(sol.stats["n_rejected"]),
                error=err,
            )
        )
    return rows
