"""Ledger rows of lesson 2 (solvers, tolerance and solver work), and the measurements the lesson plots."""
from __future__ import annotations

import math
from typing import Sequence

import torch

from nodecourse.claims import ClaimVerdict, Measurement, Threshold, claim
from nodecourse.solvers import SOLVERS

#: Step counts on [0, 2] by declared order: powers of two (so t + k*h is exact in binary) chosen so
#: the error stays well above float64 round-off and well inside the asymptotic regime.
STEPS_BY_ORDER: dict[int, tuple[int, ...]] = {
    1: (32, 64, 128, 256, 512),
    2: (32, 64, 128, 256, 512),
    3: (16, 32, 64, 128, 256),
    4: (8, 16, 32, 64, 128),
    5: (8, 16, 32, 64),
}
#: Methods still pre-asymptotic at their order's counts on this problem (measured: rk38's slope
#: over 8..128 steps is more than ORDER_TOLERANCE from 4; from 32 steps on it is 4).
STEPS_OVERRIDE: dict[str, tuple[int, ...]] = {"rk38": (32, 64, 128, 256, 512)}


def order_steps(method) -> tuple[int, ...]:
    """The step counts of :func:`convergence` for ``method`` (a registered name or a tableau):
    :data:`STEPS_OVERRIDE` where a method needs its own, else by its declared order."""
    from nodecourse.solvers.registry import spec_for

    spec = spec_for(method)
    return STEPS_OVERRIDE.get(spec.name) or STEPS_BY_ORDER[min(max(spec.order, 1), max(STEPS_BY_ORDER))]


#: Every registered method's step counts (derived: a new registry line needs no entry here).
ORDER_STEPS: dict[str, tuple[int, ...]] = {name: order_steps(name) for name in SOLVERS}
ORDER_TOLERANCE = 0.3  # |measured - declared| allowed for "holds"
T_END = 2.0


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


def convergence(method, n_steps: Sequence[int] | None = None, *, device: str | torch.device = "cpu") -> dict:
    """Global error at ``t = 2`` of ``method`` with equal steps ``h = 2 / n`` on :func:`order_problem`, float64.

    ``method``: a registered name or a :class:`~nodecourse.solvers.ButcherTableau` (a learner's own;
    its step counts default to :func:`order_steps`: by declared order).

    Adaptive pairs are run at a fixed step by setting ``first_step = max_step = h``
    with tolerances so loose that no step is rejected (checked: ``n_rejected == 0``),
    which measures the order of the solution they propagate.
    Returns ``{"method", "declared", "step_sizes", "errors", "nfe", "measured"}``.
    """
    from nodecourse import odeint
    from nodecourse.solvers.registry import spec_for

    spec = spec_for(method)
    n_steps = tuple(order_steps(spec) if n_steps is None else n_steps)
    y0 = torch.ones(1, dtype=torch.float64, device=device)
    t = torch.tensor([0.0, T_END], dtype=torch.float64, device=device)
    sizes, errors, nfes = [], [], []
    for n in n_steps:
        h = T_END / n
        if spec.kind == "adaptive":
            sol = odeint(order_problem, y0, t, method=method, rtol=0.5, atol=1e6,
                         options={"first_step": h, "max_step": h})
            if sol.stats["n_rejected"] != 0 or sol.stats["n_accepted"] != n:
                raise RuntimeError(f"{spec.name}: expected {n} accepted fixed steps, got stats {sol.stats}")
        else:
            sol = odeint(order_problem, y0, t, method=method, step_size=h)
        sizes.append(h)
        errors.append(abs(sol.ys[-1].item() - order_exact(T_END)))
        nfes.append(int(sol.stats["nfe"]))
    return {"method": spec.name, "declared": spec.order, "step_sizes": sizes, "errors": errors, "nfe": nfes,
            "measured": fit_slope(sizes, errors)}


def nfe_sweep(rtols: Sequence[float], method: str = "dopri5", *, device: str | torch.device = "cpu") -> list[dict]:
    """NFE, steps and error of ``method`` on a Van der Pol oscillator (μ = 2, t in [0, 10]) for each rtol
    (``atol = rtol / 100``). The reference is scipy's DOP853 at rtol 1e-12.
    """
    import numpy as np
    from scipy.integrate import solve_ivp

    from nodecourse import odeint

    mu = 2.0

    def vdp(t, y):
        return torch.stack([y[..., 1], mu * (1 - y[..., 0] ** 2) * y[..., 1] - y[..., 0]], dim=-1)

    ref = solve_ivp(lambda t, y: [y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]], (0.0, 10.0), [2.0, 0.0],
                    method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]
    y0 = torch.tensor([2.0, 0.0], dtype=torch.float64, device=device)
    t = torch.tensor([0.0, 10.0], dtype=torch.float64, device=device)
    rows = []
    for rtol in rtols:
        sol = odeint(vdp, y0, t, method=method, rtol=rtol, atol=rtol / 100)
        err = float(np.abs(sol.ys[-1].cpu().numpy() - ref).max())
        rows.append({"rtol": rtol, "nfe": int(sol.stats["nfe"]), "n_accepted": int(sol.stats["n_accepted"]),
                     "n_rejected": int(sol.stats["n_rejected"]), "error": err})
    return rows


@claim(
    id="convergence-order",
    claim="Each solver converges at its declared order (error ∝ h^p)",
    source="Hairer, Nørsett & Wanner, Solving ODEs I; Butcher tableaux",
    published="euler 1, midpoint 2, bosh3 3, rk4 4, dopri5 5; implicit_euler 1, trapezoid 2",
    lesson="02",
    threshold=Threshold(
        f"fitted slope of log error against log h within ±{ORDER_TOLERANCE} of the declared order, for every solver",
        kind="course", value=ORDER_TOLERANCE,
        why="the declared order is exact only as h -> 0; a slope fitted over finite steps carries "
            "higher-order terms (dopri5's local extrapolation gives about 5.2)"),
)
def measure_orders(quick: bool) -> Measurement:
    methods = ("euler", "midpoint", "rk4") if quick else tuple(ORDER_STEPS)
    methods = methods + (("bosh3", "dopri5") if quick else ())
    results = [convergence(m) for m in methods]
    off = [r for r in results if abs(r["measured"] - r["declared"]) > ORDER_TOLERANCE]
    verdict = ClaimVerdict.HOLDS if not off else ClaimVerdict.DOES_NOT_HOLD
    measured = ", ".join(f"{r['method']} {r['measured']:.2f}" for r in results)
    return Measurement(measured, verdict, {"results": results, "tolerance": ORDER_TOLERANCE})


@claim(
    id="tolerance-nfe",
    claim="Loosening rtol never costs more function evaluations (the precision/speed dial)",
    source="Chen et al. 2018 (Neural ODEs), sec. 3 & fig. 3",
    published="NFE falls as tolerance loosens; error rises",
    lesson="02",
    threshold=Threshold("NFE never rises from one rtol to the next looser one, and the final error at the "
                        "loosest rtol exceeds the tightest's", kind="published",
                        why="the published statement is qualitative: monotone NFE, rising error"),
)
def measure_tolerance_nfe(quick: bool) -> Measurement:
    rtols = [10.0 ** -k for k in (range(10, 1, -2) if quick else range(10, 1, -1))]
    rows = nfe_sweep(rtols)
    nfes = [r["nfe"] for r in rows]  # ordered from tightest to loosest rtol
    monotone = all(a >= b for a, b in zip(nfes, nfes[1:]))
    # Baseline: the error must move the other way, or the dial would not be trading anything.
    errors_rise = rows[-1]["error"] > rows[0]["error"]
    verdict = ClaimVerdict.HOLDS if monotone and errors_rise else ClaimVerdict.DOES_NOT_HOLD
    measured = (f"dopri5 on Van der Pol: NFE {nfes[0]} → {nfes[-1]} as rtol {rtols[0]:.0e} → {rtols[-1]:.0e} "
                f"(monotone: {'yes' if monotone else 'no'}); error {rows[0]['error']:.1e} → {rows[-1]['error']:.1e}")
    return Measurement(measured, verdict, {"rows": rows})
