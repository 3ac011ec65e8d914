"""Lesson 4's studies: step counts of a reversal, the underflow, memory, and gradient errors.

Each study is decorated with :func:`~nodecourse.lessons.study.cached_study`, so the notebook's figures, its
findings and the ledger rows read one run. Results are frozen dataclasses where the lesson reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from nodecourse.lessons.lesson04.config import (
    FULL_MEMORY,
    PROBE,
    QUICK_GRADIENT,
    QUICK_MEMORY,
    QUICK_REVERSAL,
    TARGET,
    GradientErrorConfig,
    ProbeConfig,
    ReversalConfig,
)
from nodecourse.lessons.study import cached_study
from nodecourse.measure import (
    MemorySweep,
    analytic_gradient,
    gradient_error_sweep,
    gradient_table,
    memory_sweep,
    theta_error,
)
from nodecourse.solvers import odeint

__all__ = [
    "ProbeResult",
    "ReversalCount",
    "UnderflowCase",
    "adaptive_steps_to_reverse",
    "atol_probe",
    "gradient_error_study",
    "memory_study",
    "nfe_table",
    "probe_value",
    "reversal_error_formula",
    "reversal_pivot",
    "reversal_signed_error",
    "reversal_study",
    "reversal_table",
    "reverse_with_solver",
    "steps_to_reverse",
    "underflow_demo",
]

# ----------------------------------------------------------------------------------------------
# Reversal: counting steps


def _log_amplification(method: str, x: float) -> float:
    """log R(x) of one step of ``method`` on z' = lam z with h lam = x (reversal: x = |lam| / n > 0).

    Explicit RK methods with p stages and order p <= 4 share the truncated Taylor series of e^x;
    backward Euler is 1 / (1 - x) and the trapezoidal rule (1 + x/2) / (1 - x/2). Returns nan where
    the implicit step is singular or flips sign (x >= 1, resp. x >= 2).
    """
    if method == "euler":
        return math.log1p(x)
    if method == "midpoint":
        return math.log1p(x + x * x / 2)
    if method == "rk4":
        return math.log1p(x + x**2 / 2 + x**3 / 6 + x**4 / 24)
    if method == "implicit_euler":
        return -math.log1p(-x) if x < 1 else math.nan
    if method == "trapezoid":
        return math.log1p(x / 2) - math.log1p(-x / 2) if x < 2 else math.nan
    raise ValueError(
        f"method={method!r}: the step count formula covers euler, midpoint, rk4, implicit_euler, trapezoid"
    )


def reversal_signed_error(method: str, lam: float, n: int) -> float:
    """z_rec(0) - 1 after ``n`` equal steps backwards from the exact z(1) = e^lam, in exact
    arithmetic: z_rec(0) = e^lam R(|lam| / n)^n, computed in logs (no underflow). Negative: the
    method under-amplifies (forward Euler, 1 + x < e^x); positive: it over-amplifies (backward
    Euler, 1 / (1 - x) > e^x). inf where the step is singular or the result overflows."""
    log_r = _log_amplification(method, -lam / n)
    if math.isnan(log_r):
        return math.inf
    exponent = n * log_r + lam
    return math.expm1(exponent) if exponent < 700 else math.inf


def reversal_error_formula(method: str, lam: float, n: int) -> float:
    """|z_rec(0) - 1| after ``n`` equal steps backwards (see :func:`reversal_signed_error`)."""
    return abs(reversal_signed_error(method, lam, n))


def steps_to_reverse(method: str, lam: float, target: float = TARGET, n_max: int = 10**13) -> int | None:
    """Fewest equal steps ``n`` with ``reversal_error_formula(method, lam, n) <= target`` (None above n_max)."""
    ok = lambda n: reversal_error_formula(method, lam, n) <= target  # noqa: E731
    hi = 1
    while not ok(hi):
        hi *= 2
        if hi > n_max:
            return None
    lo = hi // 2  # ok(lo) is False (or lo == 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def reverse_with_solver(method: str, lam: float, *, step_size=None, rtol=1e-7, atol=1e-9, max_steps=2_000_000):
    """Solve z' = lam z from t = 1 (z = e^lam, float64) back to t = 0 with odeint.

    Returns ``(z_rec(0), relative error, accepted steps, status)``; a failed solve is reported, not raised.
    """
    z1 = torch.exp(torch.tensor([lam], dtype=torch.float64))
    t = torch.tensor([1.0, 0.0], dtype=torch.float64)
    kw = dict(method=method, rtol=rtol, atol=atol, max_steps=max_steps, throw=False)
    if step_size is not None:
        kw["step_size"] = step_size
    with torch.no_grad():
        sol = odeint(lambda _t, z: lam * z, z1, t, **kw)
    z0 = float(sol.ys[-1, 0])
    return z0, abs(z0 - 1.0), sol.stats["n_accepted"], sol.status.value


def adaptive_steps_to_reverse(
    method: str, lam: float, target: float = TARGET, rtols=tuple(10.0**-k for k in range(1, 13)), atol: float = 5e-324
):
    """Loosest ``rtol`` (of ``rtols``, loose to tight) at which an adaptive solve recovers z(0)
    within ``target``; ``atol`` tiny so the control is relative (|z(1)| = e^lam is tiny).
    Returns ``(accepted steps, rtol)`` or ``(None, None)``."""
    if math.exp(lam) == 0.0:
        return None, None
    for rtol in rtols:
        _, err, steps, status = reverse_with_solver(method, lam, rtol=rtol, atol=atol)
        if status == "success" and err <= target:
            return steps, rtol
    return None, None


@dataclass(frozen=True)
class ReversalCount:
    """The fewest steps ``method`` needs to recover z(0) within 1 % at ``lam`` (``steps``; None: impossible or
    not found), ``how`` it was found ("amplification factor" or "tolerance sweep"), ``verified`` (the solver
    lands on either side of 1 % at ``steps`` and ``steps - 1``; None: not run), the sweep's ``rtol`` (adaptive
    methods) and ``float64_possible`` (e^lam > 0 in float64)."""

    method: str
    lam: float
    steps: int | None
    how: str
    verified: bool | None = None
    rtol: float | None = None
    float64_possible: bool = True


@cached_study
def reversal_study(config: ReversalConfig = QUICK_REVERSAL) -> tuple[ReversalCount, ...]:
    """One :class:`ReversalCount` per (method, lam) of ``config``.

    Fixed-step methods: ``steps`` from the step's amplification factor (exact arithmetic);
    where ``steps <= verify_up_to`` the solver is run at ``steps`` and ``steps - 1`` equal steps
    and must land on either side of 1 % (``verified``). Adaptive methods: the tolerance sweep of
    :func:`adaptive_steps_to_reverse`.
    """
    rows = []
    for lam in config.lambdas:
        representable = math.exp(lam) > 0.0
        for method in config.fixed_methods:
            n = steps_to_reverse(method, lam)
            verified = None
            if n is not None and n <= config.verify_up_to and representable:
                _, err_n, _, st = reverse_with_solver(method, lam, step_size=1.0 / n)
                ok_n = st == "success" and err_n <= TARGET
                if n > 1:
                    _, err_m, _, st_m = reverse_with_solver(method, lam, step_size=1.0 / (n - 1))
                    ok_n = ok_n and not (st_m == "success" and err_m <= TARGET)
                verified = ok_n
            rows.append(ReversalCount(method, lam, n, "amplification factor", verified, None, representable))
        for method in config.adaptive_methods:
            n, rtol = adaptive_steps_to_reverse(method, lam) if representable else (None, None)
            rows.append(
                ReversalCount(
                    f"{method} (adaptive)", lam, n, "tolerance sweep", None if n is None else True, rtol, representable
                )
            )
    return tuple(rows)


def reversal_pivot(rows) -> list[tuple[str, tuple[int | None, ...]]]:
    """Counts -> ``(method, steps at each lam in the order of the rows)`` per method (None = impossible)."""
    methods = list(dict.fromkeys(r.method for r in rows))
    return [(m, tuple(r.steps for r in rows if r.method == m)) for m in methods]


def reversal_table(rows) -> str:
    """The step counts as a fixed-width text table: one line per method, one column per lam."""
    lams = list(dict.fromkeys(r.lam for r in rows))
    lines = [f"{'method':22s}" + "".join(f"{'lam=' + format(lam, 'g'):>14s}" for lam in lams)]
    for method, counts in reversal_pivot(rows):
        lines.append(f"{method:22s}" + "".join(f"{'impossible' if n is None else n:>14}" for n in counts))
    checked = [r for r in rows if r.verified is not None and r.how == "amplification factor"]
    lines.append(
        f"\nsolver runs confirm {sum(bool(r.verified) for r in checked)} of {len(checked)} counted "
        "entries (those the mode runs the solver on)"
    )
    return "\n".join(lines)


@dataclass(frozen=True)
class UnderflowCase:
    """e^lam in float64 (``z1``), its significant bits, and the z(0) a reversal from it returns (None: not run,
    the value is a number)."""

    lam: float
    z1: float
    significant_bits: int
    recovered: float | None

    def __str__(self) -> str:
        back = "" if self.recovered is None else f", reversal returns z(0) = {self.recovered:g}"
        return (
            f"lam = {self.lam:>8g}: e^lam in float64 = {self.z1:.3g} ({self.significant_bits} significant bits){back}"
        )


@cached_study
def underflow_demo(lams: tuple[float, ...] = (-700.0, -745.0, -1000.0, -1e4)) -> tuple[UnderflowCase, ...]:
    """e^lam in float64, how many significant bits it keeps, and what a reversal from it returns.

    Where e^lam is 0 the reversal is run (rk4, 100 steps: any method gives 0 * growth = 0);
    where it is a number the row only reports its precision (the step counts are in the table above).
    """
    rows = []
    for lam in lams:
        z1 = float(torch.exp(torch.tensor(lam, dtype=torch.float64)))
        if z1 == 0.0:
            bits = 0
        elif z1 >= 2.0**-1022:  # a normal number: full precision
            bits = 53
        else:  # subnormal: only the bits above 2^-1074 remain
            bits = int(math.floor(math.log2(z1 / 2.0**-1074))) + 1
        recovered = reverse_with_solver("rk4", lam, step_size=1e-2)[0] if z1 == 0.0 else None
        rows.append(UnderflowCase(lam, z1, bits, recovered))
    return tuple(rows)


@cached_study
def memory_study(quick: bool = True, device: str = "cpu") -> MemorySweep:
    """Peak memory of forward + backward against rk4 steps, per gradient mode (quick or full sweep)."""
    return memory_sweep(QUICK_MEMORY if quick else FULL_MEMORY, device=device)


@cached_study
def gradient_error_study(
    config: GradientErrorConfig = QUICK_GRADIENT, atol: float | None = None, angle: float = 0.0
) -> tuple[dict, ...]:
    """The sweep of :func:`nodecourse.measure.gradient_error_sweep` over the config's horizons and
    tolerances (``rtol = tol``; ``atol = tol`` when ``atol`` is None), on the system rotated by ``angle``."""
    return tuple(
        gradient_error_sweep(
            lam=config.lam,
            horizons=config.horizons,
            tolerances=config.tolerances,
            method=config.method,
            routes=("adjoint", "checkpoint"),
            atol=atol,
            angle=angle,
        )
    )


@dataclass(frozen=True)
class ProbeResult:
    """One gradient route at one atol of :func:`atol_probe`: relative error of the whole gradient
    (``rel_error``) and of dL/dtheta alone (``theta_error``), forward and backward NFE, the solve's status."""

    atol: float
    angle: float
    route: str
    rel_error: float
    theta_error: float
    nfe: int | None
    nfe_backward: int | None
    status: str

    def __str__(self) -> str:
        return (
            f"atol {self.atol:<6g} {self.route:>10s}: gradient {self.rel_error:.1e}, dL/dtheta "
            f"{self.theta_error:.1e}, NFE {self.nfe} forward + {self.nfe_backward} backward"
        )


@cached_study
def atol_probe(angle: float = 0.0, config: ProbeConfig = PROBE) -> tuple[ProbeResult, ...]:
    """Adjoint and checkpoint at ``config``'s point, for ``atol = rtol`` and ``atol = tight_atol``, on the
    system rotated by ``angle``: one :class:`ProbeResult` per (atol, route)."""
    ref = analytic_gradient(config.lam, 1.0, config.T)
    out = []
    for atol in (config.rtol, config.tight_atol):
        table = gradient_table(
            config.lam,
            config.T,
            method=config.method,
            rtol=config.rtol,
            atol=atol,
            routes=("adjoint", "checkpoint"),
            angle=angle,
        )
        for r in table.rows:
            out.append(
                ProbeResult(
                    atol, angle, r.route, r.rel_error, theta_error(r.grad, ref), r.nfe, r.nfe_backward, r.status
                )
            )
    return tuple(out)


def probe_value(rows, route: str, atol: float, key: str = "rel_error") -> float:
    """The field ``key`` of ``route`` at ``atol`` among :func:`atol_probe`'s results."""
    return next(getattr(r, key) for r in rows if r.route == route and r.atol == atol)


def nfe_table(rows, tol: float) -> str:
    """Forward and backward NFE per horizon and route at tolerance ``tol`` (from the gradient-error study),
    as a fixed-width text table."""
    lines = [f"tolerance {tol:g}:", f"{'T':>5s} {'route':>11s} {'NFE forward':>12s} {'NFE backward':>13s}"]
    lines += [f"{r['T']:5g} {r['route']:>11s} {r['nfe']:12d} {r['nfe_backward']:13d}" for r in rows if r["tol"] == tol]
    return "\n".join(lines)
