"""Lesson 11's SDE findings: the verdicts and numbers each paragraph quotes, computed from the studies' results
and rendered by ``markdown()``, and the section's figures (plotly, units in the axis titles)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from nodecourse.claims import ClaimVerdict, ConfidenceInterval, seed_interval
from nodecourse.lessons.lesson11.sde_config import (
    ADJOINT_FLAT,
    ADJOINT_GROWS,
    BACKPROP_GROWS,
    FINEST_ERROR,
    ORDER_BAND,
    STEP_FACTOR,
    STRONG_ORDERS,
)
from nodecourse.lessons.lesson11.sde_studies import AdjointRun, SDEMemoryResult, StrongOrderRun, bytes_per_step
from nodecourse.lessons.study import Findings
from nodecourse.measure import markdown_table

SCHEME_NAMES = {"euler": "Euler–Maruyama", "milstein": "Milstein"}
MIN_SEEDS = 3  # as nodecourse.claims.judge: fewer seeds give no interval worth judging

# ----------------------------------------------------------------------------------------------
# Verdict rules (the thresholds' words, in code)


def judge_order_band(lo: float, hi: float, order: float, band: float = ORDER_BAND) -> ClaimVerdict:
    """One scheme's slope interval ``[lo, hi]`` against ``order +- band``: HOLDS inside it, DOES_NOT_HOLD
    wholly outside it, UNDECIDED when it straddles an edge."""
    if not lo <= hi:
        raise ValueError(f"the interval needs lo <= hi; got lo={lo}, hi={hi}")
    if order - band <= lo and hi <= order + band:
        return ClaimVerdict.HOLDS
    if hi < order - band or lo > order + band:
        return ClaimVerdict.DOES_NOT_HOLD
    return ClaimVerdict.UNDECIDED


def judge_strong_orders(parts: dict[str, ClaimVerdict]) -> ClaimVerdict:
    """The row's verdict from each scheme's: all hold, HOLDS; any does not, DOES_NOT_HOLD; else UNDECIDED."""
    if not parts:
        raise ValueError("judge_strong_orders needs at least one scheme's verdict")
    vs = set(parts.values())
    if vs == {ClaimVerdict.HOLDS}:
        return ClaimVerdict.HOLDS
    return ClaimVerdict.DOES_NOT_HOLD if ClaimVerdict.DOES_NOT_HOLD in vs else ClaimVerdict.UNDECIDED


def judge_adjoint(
    slopes, finest_errors, tolerance: float = FINEST_ERROR
) -> tuple[ClaimVerdict, ConfidenceInterval | None, str]:
    """Per-seed slopes of log error on log step and per-seed errors at the finest step: HOLDS when the slopes'
    95 % interval lies above 0 and every finest error is ``<= tolerance``; DOES_NOT_HOLD when the interval lies
    at or below 0; UNDECIDED otherwise (or with fewer than 3 seeds)."""
    slopes, finest = [float(s) for s in slopes], [float(e) for e in finest_errors]
    if len(slopes) != len(finest):
        raise ValueError(f"slopes and finest_errors need one value per seed each; got {len(slopes)} and {len(finest)}")
    if len(slopes) < MIN_SEEDS:
        return ClaimVerdict.UNDECIDED, None, f"{len(slopes)} seed(s): too few to judge a spread (need {MIN_SEEDS})"
    iv = seed_interval(slopes)
    worst = max(finest)
    if iv.hi <= 0:
        return ClaimVerdict.DOES_NOT_HOLD, iv, f"the slope's 95 % interval [{iv.lo:.2f}, {iv.hi:.2f}] is at or below 0"
    if iv.lo > 0 and worst <= tolerance:
        return (
            ClaimVerdict.HOLDS,
            iv,
            f"the slope's interval [{iv.lo:.2f}, {iv.hi:.2f}] is above 0 and every finest error is <= {tolerance:g}",
        )
    why = "the slope's interval contains 0" if iv.lo <= 0 else f"a finest error ({worst:.1e}) exceeds {tolerance:g}"
    return ClaimVerdict.UNDECIDED, iv, f"undecided: {why} at {iv.n} seeds"


def judge_memory(adjoint_growth: float, backprop_growth: float) -> ClaimVerdict:
    """Peak at 8N steps over peak at N: HOLDS when the adjoint's is ``<= 1.5`` and backprop's ``>= 4``;
    DOES_NOT_HOLD when the adjoint's is ``>= 2``; UNDECIDED otherwise."""
    if adjoint_growth >= ADJOINT_GROWS:
        return ClaimVerdict.DOES_NOT_HOLD
    if adjoint_growth <= ADJOINT_FLAT and backprop_growth >= BACKPROP_GROWS:
        return ClaimVerdict.HOLDS
    return ClaimVerdict.UNDECIDED


def _power(dt: float) -> str:
    """A step as a power of two (``0.0625`` -> ``"2^-4"``)."""
    return f"2^{round(math.log2(dt))}"


def _interval(lo: float, hi: float, fmt: str = "{:.2f}") -> str:
    return f"[{fmt.format(lo)}, {fmt.format(hi)}]"


# ----------------------------------------------------------------------------------------------
# 1 · Strong orders


@dataclass(frozen=True)
class StrongOrderFindings(Findings):
    """Each scheme's slope and bootstrap interval against its order, and the row's verdict."""

    runs: tuple[StrongOrderRun, ...]
    parts: tuple[tuple[str, ClaimVerdict], ...]  # per scheme
    verdict: ClaimVerdict

    @classmethod
    def from_runs(cls, runs: tuple[StrongOrderRun, ...]) -> StrongOrderFindings:
        unknown = [r.method for r in runs if r.method not in STRONG_ORDERS]
        if unknown:
            raise ValueError(f"runs of {unknown} have no declared order; runs must be of {sorted(STRONG_ORDERS)}")
        parts = tuple((r.method, judge_order_band(r.lo, r.hi, STRONG_ORDERS[r.method])) for r in runs)
        return cls(tuple(runs), parts, judge_strong_orders(dict(parts)))

    def table(self) -> str:
        """One line per scheme: order, band, slope, interval, verdict."""
        return markdown_table(
            ["scheme", "proved order", "band", "fitted slope", "bootstrap 95 % interval", "verdict"],
            [
                [
                    SCHEME_NAMES.get(r.method, r.method),
                    f"{STRONG_ORDERS[r.method]:g}",
                    _interval(STRONG_ORDERS[r.method] - ORDER_BAND, STRONG_ORDERS[r.method] + ORDER_BAND),
                    f"{r.slope:.3f}",
                    _interval(r.lo, r.hi, "{:.3f}"),
                    v.value,
                ]
                for r, (_, v) in zip(self.runs, self.parts)
            ],
        )

    def markdown(self) -> str:
        r = self.runs[0]
        halvings = len(r.dts) - 1
        errs = "; ".join(
            f"{SCHEME_NAMES.get(x.method, x.method)} {x.mean_errors[0]:.1e} → {x.mean_errors[-1]:.1e}"
            for x in self.runs
        )
        return (
            self.table() + "\n\n"
            f"Over {r.paths} paths and {halvings} halvings of the step (dt = {_power(r.dts[0])} to "
            f"{_power(r.dts[-1])}), the mean error at T = 1 went {errs}. Verdict: **{self.verdict.value}**. The "
            "orders say each halving of the step divides Euler–Maruyama's error by √2 and Milstein's by 2: Milstein's "
            "correction "
            "½ g g′ (ΔW² − Δt) is exactly the term Euler–Maruyama drops."
        )


# ----------------------------------------------------------------------------------------------
# 2 · The stochastic adjoint against backprop


@dataclass(frozen=True)
class AdjointFindings(Findings):
    """Per seed: the adjoint's error against backprop over the steps and its slope; the verdict; and what
    reversible Heun's algebraic reverse gives on the same path."""

    runs: tuple[AdjointRun, ...]
    verdict: ClaimVerdict
    interval: ConfidenceInterval | None  # of the slope, over seeds
    reason: str

    @classmethod
    def from_runs(cls, runs: tuple[AdjointRun, ...]) -> AdjointFindings:
        verdict, iv, reason = judge_adjoint([r.slope for r in runs], [r.finest_error for r in runs])
        return cls(tuple(runs), verdict, iv, reason)

    @property
    def slopes(self) -> tuple[float, ...]:
        return tuple(r.slope for r in self.runs)

    @property
    def worst_finest(self) -> float:
        """The largest relative error at the finest step, over seeds."""
        return max(r.finest_error for r in self.runs)

    @property
    def worst_reversible(self) -> float:
        """The largest relative error of reversible Heun's algebraic reverse, over seeds and steps."""
        return max(max(r.reversible_errors) for r in self.runs)

    def table(self) -> str:
        """One line per step size: the adjoint's relative error (median and largest over seeds) and the
        reversible adjoint's largest."""
        rows = []
        for i, dt in enumerate(self.runs[0].dts):
            adj = sorted(r.adjoint_errors[i] for r in self.runs)
            rows.append(
                [
                    _power(dt),
                    f"{adj[len(adj) // 2]:.1e}",
                    f"{adj[-1]:.1e}",
                    f"{max(r.reversible_errors[i] for r in self.runs):.1e}",
                ]
            )
        return markdown_table(
            ["dt", "adjoint: median error", "adjoint: largest", "reversible Heun, algebraic reverse: largest"], rows
        )

    def markdown(self) -> str:
        iv = self.interval
        span = "no interval (too few seeds)" if iv is None else _interval(iv.lo, iv.hi)
        return (
            self.table() + "\n\n"
            f"Over {len(self.runs)} seeds the adjoint's relative gradient error falls with the step at slopes "
            f"{', '.join(f'{s:.2f}' for s in self.slopes)} (95 % interval {span}); at the finest step it is "
            f"{self.worst_finest:.1e} at most, against the bound {FINEST_ERROR:g}. Verdict: "
            f"**{self.verdict.value}** ({self.reason}). The adjoint solves a different equation backwards (Heun "
            "steps of the augmented SDE on the same path), so it matches backprop only as both approach the "
            "exact pathwise gradient. Reversible Heun can instead be run backwards by algebra (each step's input "
            "recovered from its output, Kidger et al. 2021): backpropagating through one reconstructed step at a "
            f"time gives backprop's gradient to {self.worst_reversible:.0e} at most, rounding, at every step size, "
            "while storing no step, as the adjoint."
        )


# ----------------------------------------------------------------------------------------------
# 3 · Peak memory


@dataclass(frozen=True)
class SDEMemoryFindings(Findings):
    """Peak memory at N and 8N steps per route, the growth factors and the verdict (adjoint vs backprop)."""

    result: SDEMemoryResult
    verdict: ClaimVerdict

    @classmethod
    def from_result(cls, result: SDEMemoryResult) -> SDEMemoryFindings:
        return cls(result, judge_memory(result.growth("adjoint"), result.growth("backprop")))

    def table(self) -> str:
        r = self.result
        n0, n1 = r.steps
        return markdown_table(
            ["route", f"peak MiB, {n0} steps", f"peak MiB, {n1} steps", "growth", "KiB per extra step"],
            [
                [
                    route,
                    f"{r.peak(route)[0] / 2**20:.2f}",
                    f"{r.peak(route)[1] / 2**20:.2f}",
                    f"{r.growth(route):.2f}x",
                    f"{bytes_per_step(r, route) / 2**10:.1f}",
                ]
                for route in r.routes
            ],
        )

    def markdown(self) -> str:
        r, c = self.result, self.result.config
        value_kib = c.batch * c.dim * (8 if c.dtype == "float64" else 4) / 2**10  # one cached value of W
        extra = (
            "The extra rows show the adjoint without a cache (every query recomputed from the tree: flat, slower) "
            "and with the default cache of 8192 values (memory for speed, until the cache is full)."
            if len(r.routes) > 2
            else "With extra_readings=True (full mode) the table adds the adjoint without a cache and with the "
            "path's default cache."
        )
        # N equal steps on [0, 1] (N a power of 2) query the N - 1 inner nodes of the path's tree
        fill = (
            f", which {r.steps[0] - 1} values at {r.steps[0]} steps do not fill"
            if r.steps[0] - 1 < c.cache_size
            else ""
        )
        return (
            self.table() + "\n\n"
            f"Batch {c.batch}, {c.dim} channels, {c.dtype}, on {c.device}. Backprop keeps every step's graph: "
            f"{r.growth('backprop'):.1f}x for {STEP_FACTOR}x the steps. The adjoint grows {r.growth('adjoint'):.2f}x. "
            f"Verdict: **{self.verdict.value}** (flat: <= {ADJOINT_FLAT:g}x with backprop >= {BACKPROP_GROWS:g}x; "
            f"grows: >= {ADJOINT_GROWS:g}x). What the adjoint adds per step "
            f"({bytes_per_step(r, 'adjoint') / 2**10:.1f} KiB) is the Brownian path's cache of increments, "
            f"{value_kib:.0f} KiB per value, up to {c.cache_size} values ({c.cache_size * value_kib:.0f} KiB): "
            f"bounded, so flat once the cache is full{fill}. {extra}"
        )


# ----------------------------------------------------------------------------------------------
# Figures


def plot_strong_orders(runs: tuple[StrongOrderRun, ...]):
    """Mean absolute error at T = 1 against the step (log-log), one line per scheme, with its order's slope."""
    from nodecourse.plotting import figure

    fig = figure(
        "strong error on geometric Brownian motion (same path at every step)",
        "step dt (time units)",
        "E|X_T − X_T exact| (state units)",
        log_x=True,
        log_y=True,
    )
    for i, r in enumerate(runs):
        color = ("#1f77b4", "#d62728", "#2ca02c")[i % 3]
        name = SCHEME_NAMES.get(r.method, r.method)
        fig.add_scatter(x=list(r.dts), y=list(r.mean_errors), mode="lines+markers", name=name, line=dict(color=color))
        order = STRONG_ORDERS.get(r.method)
        if order is not None:
            guide = [r.mean_errors[0] * (dt / r.dts[0]) ** order for dt in r.dts]
            fig.add_scatter(
                x=list(r.dts), y=guide, mode="lines", name=f"slope {order:g}", line=dict(color=color, dash="dot")
            )
    return fig


def plot_adjoint_errors(runs: tuple[AdjointRun, ...]):
    """Relative gradient error against backprop vs the step (log-log): the adjoint per seed, and reversible Heun's
    reversible Heun adjoint."""
    from nodecourse.plotting import figure

    fig = figure(
        "gradient against backprop through the same solve, same Brownian path",
        "step dt (time units)",
        "relative gradient error (dimensionless)",
        log_x=True,
        log_y=True,
    )
    for attr, name, color in (
        ("adjoint_errors", "stochastic adjoint", "#1f77b4"),
        ("reversible_errors", "reversible Heun, algebraic reverse", "#ff7f0e"),
    ):
        for i, r in enumerate(runs):
            fig.add_scatter(
                x=list(r.dts),
                y=[max(e, 1e-17) for e in getattr(r, attr)],  # an exact zero has no place on a log axis
                mode="lines+markers",
                name=name,
                legendgroup=name,
                showlegend=i == 0,
                line=dict(color=color, width=1),
                marker=dict(size=4),
                opacity=0.8,
            )
    fig.add_hline(y=FINEST_ERROR, line=dict(color="grey", dash="dash"), annotation_text=f"bound {FINEST_ERROR:g}")
    return fig


def plot_sde_memory(result: SDEMemoryResult):
    """Peak MiB of forward + backward at N and 8N steps, one line per route."""
    from nodecourse.plotting import figure

    fig = figure(
        f"peak memory, batch {result.config.batch}, reversible Heun",
        "solver steps on [0, 1]",
        "peak memory, forward + backward (MiB)",
    )
    for route in result.routes:
        fig.add_scatter(
            x=list(result.steps), y=[p / 2**20 for p in result.peak(route)], mode="lines+markers", name=route
        )
    return fig
