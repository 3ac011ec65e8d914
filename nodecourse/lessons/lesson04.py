"""Lesson 4 (the adjoint, its memory and its instability): studies, figures and ledger rows.

- ``reversal-steps``: dz/dt = lam z on [0, 1]: how many steps a method needs to
  recover z(0) = 1 from z(1) = e^lam to within 1 %, for lam = -1, -10, -100, -1000.
- ``adjoint-memory``: peak memory of forward + backward against the number of rk4
  steps for backprop, checkpoint and adjoint.
- ``adjoint-gradient-error``: on a problem where reconstructing the forward state
  backwards drifts, the adjoint's gradient error grows with the horizon T while
  checkpointing stays at solver accuracy.

The notebook calls the same functions; results are cached per configuration so the
ledger rows shown in the lesson reuse the runs the figures were drawn from.
"""
from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import torch

from nodecourse.claims import Measurement, Verdict, claim
from nodecourse.gradient_check import gradient_error_sweep
from nodecourse.memory import MemoryConfig, MemorySweep, memory_sweep
from nodecourse.solvers import odeint

REVERSAL_LAMBDAS = (-1.0, -10.0, -100.0, -1000.0)
PUBLISHED_REVERSAL_STEPS = 200_000  # course plan: "about 200,000 steps at lam = -100 for a low-order method"
TARGET = 0.01  # recover z(0) to within 1 %

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
        return math.log1p(x + x ** 2 / 2 + x ** 3 / 6 + x ** 4 / 24)
    if method == "implicit_euler":
        return -math.log1p(-x) if x < 1 else math.nan
    if method == "trapezoid":
        return math.log1p(x / 2) - math.log1p(-x / 2) if x < 2 else math.nan
    raise ValueError(f"method={method!r}: the step count formula covers euler, midpoint, rk4, implicit_euler, trapezoid")


def reversal_error_formula(method: str, lam: float, n: int) -> float:
    """|z_rec(0) - 1| after ``n`` equal steps backwards from the exact z(1) = e^lam, in exact
    arithmetic: z_rec(0) = e^lam R(|lam| / n)^n, computed in logs (no underflow)."""
    log_r = _log_amplification(method, -lam / n)
    if math.isnan(log_r):
        return math.inf
    exponent = n * log_r + lam
    return abs(math.expm1(exponent)) if exponent < 700 else math.inf


def steps_to_reverse(method: str, lam: float, target: float = TARGET, n_max: int = 10 ** 13) -> int | None:
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


def adaptive_steps_to_reverse(method: str, lam: float, target: float = TARGET,
                              rtols=tuple(10.0 ** -k for k in range(1, 13)), atol: float = 5e-324):
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
class ReversalConfig:
    lambdas: tuple[float, ...] = REVERSAL_LAMBDAS
    fixed_methods: tuple[str, ...] = ("euler", "midpoint", "rk4", "implicit_euler", "trapezoid")
    adaptive_methods: tuple[str, ...] = ("dopri5", "trapezoid")
    verify_up_to: int = 20_000  # run the solver on the formula's count where it is at most this many steps


QUICK_REVERSAL = ReversalConfig(adaptive_methods=("dopri5",), verify_up_to=1_000)
"""Quick mode: the adaptive implicit sweep (trapezoid) and the solver checks above 1,000 steps need full mode."""
FULL_REVERSAL = ReversalConfig(verify_up_to=600_000)


@functools.lru_cache(maxsize=4)
def reversal_study(config: ReversalConfig = QUICK_REVERSAL) -> tuple[dict, ...]:
    """One row per (method, lam): ``steps`` (fewest for 1 %), how it was found, and a solver check.

    Fixed-step methods: ``steps`` from the step's amplification factor (exact arithmetic);
    where ``steps <= verify_up_to`` the solver is run at ``steps`` and ``steps - 1`` equal steps
    and must land on either side of 1 % (``verified``). Adaptive methods: the tolerance sweep of
    :func:`adaptive_steps_to_reverse`. ``float64_possible``: e^lam > 0 in float64.
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
            rows.append({"method": method, "lam": lam, "steps": n, "how": "amplification factor",
                         "verified": verified, "rtol": None, "float64_possible": representable})
        for method in config.adaptive_methods:
            n, rtol = adaptive_steps_to_reverse(method, lam) if representable else (None, None)
            rows.append({"method": f"{method} (adaptive)", "lam": lam, "steps": n, "how": "tolerance sweep",
                         "verified": None if n is None else True, "rtol": rtol, "float64_possible": representable})
    return tuple(rows)


def reversal_pivot(rows) -> list[dict]:
    """Rows -> one dict per method with the step count for each lam (None = impossible / not found)."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    out = []
    for m in methods:
        d = {"method": m}
        for r in rows:
            if r["method"] == m:
                d[f"lam={r['lam']:g}"] = r["steps"]
        out.append(d)
    return out


def underflow_demo(lams=(-700.0, -745.0, -1000.0, -1e4)) -> list[dict]:
    """e^lam in float64, how many significant bits it keeps, and what a reversal from it returns.

    Where e^lam is 0 the reversal is run (rk4, 100 steps: any method gives 0 * growth = 0);
    where it is a number the row only reports its precision (the step counts are in the table above).
    """
    rows = []
    for lam in lams:
        z1 = float(torch.exp(torch.tensor(lam, dtype=torch.float64)))
        if z1 == 0.0:
            bits = 0
        elif z1 >= 2.0 ** -1022:  # a normal number: full precision
            bits = 53
        else:  # subnormal: only the bits above 2^-1074 remain
            bits = int(math.floor(math.log2(z1 / 2.0 ** -1074))) + 1
        recovered = reverse_with_solver("rk4", lam, step_size=1e-2)[0] if z1 == 0.0 else None
        rows.append({"lam": lam, "e^lam (float64)": z1, "significant bits": bits, "recovered z(0)": recovered})
    return rows


# ----------------------------------------------------------------------------------------------
# Memory


QUICK_MEMORY = MemoryConfig(steps=(8, 16, 32))
"""Quick mode: batch 256, 64-256-64 MLP, rk4, 8..32 steps (CPU: torch's profiler, exact tensor bytes)."""
FULL_MEMORY = MemoryConfig(steps=(20, 50, 100, 200, 400))
"""Full mode: the 20..400 steps of the ledger row."""

_MEMORY_CACHE: dict[str, MemorySweep] = {}


def memory_study(quick: bool = True, device: str = "cpu") -> MemorySweep:
    key = f"{quick}-{device}"
    if key not in _MEMORY_CACHE:
        config = QUICK_MEMORY if quick else FULL_MEMORY
        _MEMORY_CACHE[key] = memory_sweep(config, device=device)
    return _MEMORY_CACHE[key]


def memory_findings(sweep: MemorySweep) -> dict:
    """backprop grows several-fold (>= 3x), the adjoint stays within 20 %, checkpoint in between."""
    g = {m: sweep.growth(m) for m in sweep.config.modes}
    flat = max(sweep.peaks("adjoint")) <= 1.2 * min(sweep.peaks("adjoint"))
    between = all(a <= c <= b for a, c, b in zip(sweep.peaks("adjoint"), sweep.peaks("checkpoint"),
                                                   sweep.peaks("backprop")))
    return {"growth": g, "backprop_grows": g["backprop"] >= 3.0, "adjoint_flat": flat,
            "checkpoint_between": between, "holds": g["backprop"] >= 3.0 and flat and between}


def plot_memory(sweep: MemorySweep):
    """Peak MiB against steps, one line per gradient mode (matplotlib Figure)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for mode in sweep.config.modes:
        ax.plot(sweep.config.steps, [p / 2 ** 20 for p in sweep.peaks(mode)], "o-", label=mode)
    c = sweep.config
    ax.set_xlabel("rk4 steps on [0, 1]")
    ax.set_ylabel("peak memory of forward + backward (MiB)")
    ax.set_title(f"batch {c.batch}, MLP {'-'.join(map(str, c.dims))}, {c.device}")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    plt.close(fig)
    return fig


# ----------------------------------------------------------------------------------------------
# Gradient error over horizon and tolerance


@dataclass(frozen=True)
class GradientErrorConfig:
    lam: float = -10.0
    horizons: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
    tolerances: tuple[float, ...] = (1e-4, 1e-6, 1e-8)
    method: str = "dopri5"


QUICK_GRADIENT = GradientErrorConfig(horizons=(0.5, 1.5, 3.0), tolerances=(1e-4, 1e-8))
FULL_GRADIENT = GradientErrorConfig()


@functools.lru_cache(maxsize=4)
def gradient_error_study(config: GradientErrorConfig = QUICK_GRADIENT) -> tuple[dict, ...]:
    return tuple(gradient_error_sweep(lam=config.lam, horizons=config.horizons, tolerances=config.tolerances,
                                      method=config.method, routes=("adjoint", "checkpoint")))


def gradient_error_findings(rows, config: GradientErrorConfig) -> dict:
    """Adjoint error at the longest horizon >= 100x the shortest (every tolerance); checkpoint within
    100 x tol of the analytic gradient everywhere."""
    grows, at_accuracy = {}, True
    for tol in config.tolerances:
        adj = {r["T"]: r["rel_error"] for r in rows if r["route"] == "adjoint" and r["tol"] == tol}
        grows[tol] = adj[max(adj)] >= 100 * adj[min(adj)]
        ck = [r["rel_error"] for r in rows if r["route"] == "checkpoint" and r["tol"] == tol]
        at_accuracy = at_accuracy and max(ck) <= 100 * tol
    return {"adjoint_grows": grows, "checkpoint_at_solver_accuracy": at_accuracy,
            "holds": all(grows.values()) and at_accuracy}


def plot_gradient_error(rows, config: GradientErrorConfig):
    """Relative gradient error against T, adjoint (solid) and checkpoint (dashed), per tolerance."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for i, tol in enumerate(config.tolerances):
        color = f"C{i}"
        for route, style in (("adjoint", "o-"), ("checkpoint", "s--")):
            pts = [(r["T"], max(r["rel_error"], 1e-17)) for r in rows if r["route"] == route and r["tol"] == tol]
            ax.semilogy(*zip(*pts), style, color=color, label=f"{route}, tol {tol:g}")
    ax.set_xlabel("horizon T")
    ax.set_ylabel("relative error of dL/d(z0, lam, theta, T)")
    ax.set_title(f"dz1/dt = {config.lam:g} z1, dz2/dt = theta z1 ({config.method})")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    plt.close(fig)
    return fig


def nfe_table(rows) -> list[dict]:
    """Forward and backward NFE per route and horizon (from the gradient-error study)."""
    return [{"T": r["T"], "tol": r["tol"], "route": r["route"], "NFE forward": r["nfe"],
             "NFE backward": r["nfe_backward"]} for r in rows]


# ----------------------------------------------------------------------------------------------
# Ledger rows


@claim(
    id="reversal-steps",
    claim="Recovering z(0) from z(1) for dz/dt = lam z on [0, 1] to within 1 % takes a low-order method about "
          "200,000 steps at lam = -100; at lam = -1e4, e^lam underflows to 0 in float64 and no method can",
    source="course plan, lesson 4 (seed figure); adjoint reversal instability: Gholami et al. 2019 (ANODE)",
    published="~200,000 steps at lam = -100 (low-order method)",
    lesson="04",
)
def measure_reversal(quick: bool) -> Measurement:
    config = QUICK_REVERSAL if quick else FULL_REVERSAL
    rows = reversal_study(config)
    by = {(r["method"], r["lam"]): r for r in rows}
    euler = by["euler", -100.0]["steps"]
    others = ", ".join(f"{m} {by[m, -100.0]['steps']}" for m in ("midpoint", "rk4", "trapezoid", "dopri5 (adaptive)")
                       if (m, -100.0) in by)
    underflows = float(torch.exp(torch.tensor(-1e4, dtype=torch.float64))) == 0.0
    checks = [r["verified"] for r in rows if r["verified"] is not None and r["how"] == "amplification factor"]
    same_magnitude = euler is not None and 1e5 <= euler <= 1e6
    measured = (f"lam=-100: forward Euler {euler} steps ({euler / PUBLISHED_REVERSAL_STEPS:.1f}x the published figure); "
                f"{others}; e^-1e4 = 0 in float64: {underflows}; solver runs confirm {sum(checks)}/{len(checks)} counts")
    verdict = Verdict.HOLDS if (same_magnitude and underflows and all(checks)) else Verdict.DOES_NOT_HOLD
    return Measurement(measured, verdict, {"config": asdict(config), "rows": list(rows)})


@claim(
    id="adjoint-memory",
    claim="Peak memory of backprop through the solver grows with the number of steps; the adjoint's stays flat; "
          "checkpointing (one state per step) lies in between",
    source="Chen et al. 2018 (Neural ODEs), sec. 2: constant memory cost in depth with the adjoint",
    published="O(1) memory in the number of steps for the adjoint, O(steps) for backprop",
    lesson="04",
)
def measure_memory(quick: bool) -> Measurement:
    from nodecourse.memory import cpu_peak_supported

    if not cpu_peak_supported() and not torch.cuda.is_available():
        return Measurement("peak memory needs Linux or CUDA", Verdict.NOT_MEASURABLE, {})
    sweep = memory_study(quick, "cuda" if torch.cuda.is_available() else "cpu")
    f = memory_findings(sweep)
    c = sweep.config
    mib = {m: [round(p / 2 ** 20, 1) for p in sweep.peaks(m)] for m in c.modes}
    measured = (f"{c.steps[0]}->{c.steps[-1]} rk4 steps (batch {c.batch}, {c.device}): peak MiB backprop "
                f"{mib['backprop'][0]}->{mib['backprop'][-1]} ({f['growth']['backprop']:.1f}x), checkpoint "
                f"{mib['checkpoint'][0]}->{mib['checkpoint'][-1]}, adjoint {mib['adjoint'][0]}->{mib['adjoint'][-1]} "
                f"({f['growth']['adjoint']:.2f}x)")
    return Measurement(measured, Verdict.HOLDS if f["holds"] else Verdict.DOES_NOT_HOLD,
                       {"config": asdict(c), "rows": sweep.rows, **{k: v for k, v in f.items() if k != "growth"},
                        "growth": f["growth"]})


@claim(
    id="adjoint-gradient-error",
    claim="Where reconstructing the forward state backwards drifts (a fast decaying mode feeding a slow one), "
          "the adjoint's gradient error grows with the horizon T; checkpointing stays at solver accuracy",
    source="Gholami et al. 2019 (ANODE), sec. 3; course plan, lesson 4",
    published="adjoint gradients can be wrong (reversal unstable); checkpointing is exact for the discrete solve",
    lesson="04",
)
def measure_gradient_error(quick: bool) -> Measurement:
    config = QUICK_GRADIENT if quick else FULL_GRADIENT
    rows = gradient_error_study(config)
    f = gradient_error_findings(rows, config)
    parts = []
    for tol in config.tolerances:
        adj = {r["T"]: r["rel_error"] for r in rows if r["route"] == "adjoint" and r["tol"] == tol}
        ck = max(r["rel_error"] for r in rows if r["route"] == "checkpoint" and r["tol"] == tol)
        parts.append(f"tol {tol:g}: adjoint {adj[min(adj)]:.1e} (T={min(adj):g}) -> {adj[max(adj)]:.1e} "
                     f"(T={max(adj):g}), checkpoint <= {ck:.1e}")
    measured = f"lam={config.lam:g}, {config.method}: " + "; ".join(parts)
    return Measurement(measured, Verdict.HOLDS if f["holds"] else Verdict.DOES_NOT_HOLD,
                       {"config": asdict(config), "rows": list(rows), **f})
