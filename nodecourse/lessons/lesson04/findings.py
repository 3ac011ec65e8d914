"""What lesson 4's studies show, judged against the thresholds of :mod:`.config`.

Each findings class is a frozen dataclass (a :class:`~nodecourse.lessons.study.Findings`): the verdicts,
the numbers a sentence quotes, and :meth:`markdown`, which the notebook displays in one line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from nodecourse.claims import ClaimVerdict, Threshold, combine, parts_text
from nodecourse.lessons.lesson04.config import (
    ADJOINT_FLAT_FACTOR,
    DERIVED_REVERSAL_STEPS,
    FIRST_ORDER,
    FULL_GRADIENT,
    GRADIENT_THRESHOLD,
    MEMORY_THRESHOLD,
    PROBE,
    QUOTED_FIGURE_SOURCE,
    REVERSAL_LAMBDA,
    REVERSAL_THRESHOLD,
    ROTATED_THRESHOLD,
    UNLOCATED_REVERSAL_STEPS,
    GradientErrorConfig,
    ProbeConfig,
)
from nodecourse.lessons.lesson04.studies import (
    UnderflowCase,
    probe_value,
    reversal_signed_error,
)
from nodecourse.lessons.study import Findings
from nodecourse.measure import MemorySweep

METHOD_NAMES = {"euler": "forward Euler", "implicit_euler": "backward Euler"}
SECOND_ORDER = ("midpoint", "trapezoid")


def _yes(ok: bool) -> ClaimVerdict:
    return ClaimVerdict.HOLDS if ok else ClaimVerdict.DOES_NOT_HOLD


# ----------------------------------------------------------------------------------------------
# Reversal


@dataclass(frozen=True)
class ReversalFindings(Findings):
    """The step counts at lam = -100 against the derived 50 lam^2, and the underflow at lam = -1e4.

    ``counts``: first-order method -> fewest steps for 1 % (None: not found); ``second_order``: the same for
    midpoint and trapezoid; ``checks``: (solver runs that confirm a count, solver runs); ``underflow``: the
    :class:`UnderflowCase` at lam = -1e4; ``parts``: part -> verdict (every part must hold).
    """

    counts: dict[str, int | None]
    second_order: dict[str, int | None]
    checks: tuple[int, int]
    underflow: UnderflowCase
    derived: float = DERIVED_REVERSAL_STEPS
    tolerance: float = REVERSAL_THRESHOLD.value
    parts: dict[str, ClaimVerdict] = field(default_factory=dict)

    @classmethod
    def from_study(cls, rows, underflow: UnderflowCase, threshold: Threshold = REVERSAL_THRESHOLD) -> ReversalFindings:
        """Judge :func:`~.studies.reversal_study`'s counts at lam = -100 and the underflow at lam = -1e4.

        A count part holds when that first-order method's count is within ``threshold.value`` (10 %) of the
        derived 50 lam^2; the solver part holds when every solver run confirms its counted entry (no run: no
        part); the underflow part when e^-1e4 is 0 and the reversal returns 0.
        """
        by = {(r.method, r.lam): r.steps for r in rows}
        counts = {m: by.get((m, REVERSAL_LAMBDA)) for m in FIRST_ORDER}
        second = {m: by[m, REVERSAL_LAMBDA] for m in SECOND_ORDER if (m, REVERSAL_LAMBDA) in by}
        checks = [r.verified for r in rows if r.verified is not None and r.how == "amplification factor"]
        parts = {}
        for m, n in counts.items():
            low, high = (1 - threshold.value) * DERIVED_REVERSAL_STEPS, (1 + threshold.value) * DERIVED_REVERSAL_STEPS
            near = n is not None and low <= n <= high
            parts[f"{METHOD_NAMES[m]} within {threshold.value * 100:g} % of 50 lam^2"] = _yes(near)
        if checks:
            parts["solver confirms the counts"] = _yes(all(checks))
        parts["e^-1e4 underflows"] = _yes(underflow.z1 == 0.0 and underflow.recovered == 0.0)
        return cls(
            counts,
            second,
            (sum(bool(c) for c in checks), len(checks)),
            underflow,
            DERIVED_REVERSAL_STEPS,
            threshold.value,
            parts,
        )

    @property
    def verdict(self) -> ClaimVerdict:
        return combine(self.parts)

    def ratio(self, method: str) -> float | None:
        """The count of ``method`` over the derived 50 lam^2."""
        n = self.counts[method]
        return None if n is None else n / self.derived

    def markdown(self) -> str:
        first = ", ".join(
            (
                f"{METHOD_NAMES.get(m, m)} needs {n:,} steps"
                if n is not None
                else f"{METHOD_NAMES.get(m, m)}'s count was not found (none up to the search's limit "
                "recovers z(0) within 1 %)"
            )
            + (
                ""
                if n is None
                else f" ({self.ratio(m):.3f} times 50 λ², error at that count "
                f"{reversal_signed_error(m, REVERSAL_LAMBDA, n):+.2%})"
            )
            for m, n in self.counts.items()
        )
        second = [n for n in self.second_order.values() if n is not None]
        band = f"{self.derived * (1 - self.tolerance):,.0f} to {self.derived * (1 + self.tolerance):,.0f}"
        at_unlocated = {m: reversal_signed_error(m, REVERSAL_LAMBDA, UNLOCATED_REVERSAL_STEPS) for m in self.counts}
        u = self.underflow
        text = [
            f"At λ = {REVERSAL_LAMBDA:g}, {first}; the derived estimate 50 λ² is {self.derived:,.0f} and the row's "
            f"band {band} (within {self.tolerance * 100:g} %).",
            (f"The second-order methods need {min(second):,} to {max(second):,}." if second else ""),
            f"The {UNLOCATED_REVERSAL_STEPS:,} steps {QUOTED_FIGURE_SOURCE}, would leave z(0) off by "
            + ", ".join(f"{v:+.1%} ({METHOD_NAMES.get(m, m)})" for m, v in at_unlocated.items())
            + ": it fits neither the 1 % target nor the derivation, so it decides nothing here.",
            f"Solver runs confirm {self.checks[0]} of {self.checks[1]} counted entries.",
            f"e^{u.lam:g} in float64 is {u.z1:g}; a reversal from it returns z(0) = "
            f"{'(not run)' if u.recovered is None else format(u.recovered, 'g')}.",
            f"Parts: {parts_text(self.parts)}. Verdict: **{self.verdict.value}**.",
        ]
        return "\n\n".join(t for t in text if t)


# ----------------------------------------------------------------------------------------------
# Memory


@dataclass(frozen=True)
class MemoryFindings(Findings):
    """Peak-memory growth per gradient mode over the sweep (``growth``: mode -> most / fewest steps) and
    the three parts of ``adjoint-memory``."""

    steps: tuple[int, ...]
    growth: dict[str, float]
    backprop_grows: bool
    adjoint_flat: bool
    checkpoint_between: bool

    @classmethod
    def from_sweep(cls, sweep: MemorySweep, threshold: Threshold = MEMORY_THRESHOLD) -> MemoryFindings:
        """backprop grows >= ``threshold.value`` x over the sweep, the adjoint stays within
        ``ADJOINT_FLAT_FACTOR`` of its smallest peak, checkpoint lies between them at every step count."""
        g = {m: sweep.growth(m) for m in sweep.config.modes}
        flat = max(sweep.peaks("adjoint")) <= ADJOINT_FLAT_FACTOR * min(sweep.peaks("adjoint"))
        between = all(
            a <= c <= b for a, c, b in zip(sweep.peaks("adjoint"), sweep.peaks("checkpoint"), sweep.peaks("backprop"))
        )
        return cls(tuple(sweep.config.steps), g, g["backprop"] >= threshold.value, flat, between)

    @property
    def parts(self) -> dict[str, ClaimVerdict]:
        return {
            "backprop grows": _yes(self.backprop_grows),
            "adjoint flat": _yes(self.adjoint_flat),
            "checkpoint between": _yes(self.checkpoint_between),
        }

    @property
    def holds(self) -> bool:
        return self.backprop_grows and self.adjoint_flat and self.checkpoint_between

    @property
    def verdict(self) -> ClaimVerdict:
        return combine(self.parts)

    def markdown(self) -> str:
        grown = ", ".join(f"{m} {g:.2f}x" for m, g in self.growth.items())
        return f"Peak growth from {self.steps[0]} to {self.steps[-1]} steps: {grown}. {parts_text(self.parts)}."


# ----------------------------------------------------------------------------------------------
# Gradient error over horizon and tolerance


def failure_text(row: dict) -> str:
    """``"failed (step-underflow)"``: a failed solve of the gradient sweep, named by the status in its note."""
    m = re.search(r"status ([A-Z_]+)", row.get("note", ""))
    return f"failed ({m.group(1).lower().replace('_', '-') if m else row.get('status', 'no status')})"


@dataclass(frozen=True)
class GradientErrorFindings(Findings):
    """One gradient-error sweep judged: the adjoint's error per (tol, T) (inf: a failed solve, named in
    ``failures``), its growth from the shortest to the longest horizon per tolerance (None where a solve
    failed), checkpoint's worst error per tolerance, and the verdict of ``GRADIENT_THRESHOLD``."""

    config: GradientErrorConfig
    atol: float | None
    angle: float
    adjoint: dict[tuple[float, float], float]
    checkpoint_worst: dict[float, float]
    failures: dict[tuple[float, float], str]
    factor: float = GRADIENT_THRESHOLD.value

    @classmethod
    def from_sweep(
        cls, rows, config: GradientErrorConfig, threshold: Threshold = GRADIENT_THRESHOLD
    ) -> GradientErrorFindings:
        """Judge a sweep (:func:`~.studies.gradient_error_study`'s rows): the adjoint's error at the longest horizon
        >= ``threshold.value`` x the shortest at every tolerance; checkpoint within ``threshold.value`` x tol."""
        adjoint, failures, worst = {}, {}, {}
        for r in rows:
            if r["route"] == "adjoint":
                adjoint[r["tol"], r["T"]] = r["rel_error"]
                if not math.isfinite(r["rel_error"]):
                    failures[r["tol"], r["T"]] = failure_text(r)
        for tol in config.tolerances:
            worst[tol] = max(r["rel_error"] for r in rows if r["route"] == "checkpoint" and r["tol"] == tol)
        first = rows[0] if rows else {}
        atol = None if first.get("atol") == first.get("tol") else first.get("atol")
        return cls(config, atol, first.get("angle", 0.0), adjoint, worst, failures, threshold.value)

    @property
    def growth(self) -> dict[float, float | None]:
        out = {}
        for tol in self.config.tolerances:
            short, long = self.adjoint[tol, min(self.config.horizons)], self.adjoint[tol, max(self.config.horizons)]
            ok = math.isfinite(short) and math.isfinite(long)
            out[tol] = (long / short if short > 0 else math.inf) if ok else None
        return out

    @property
    def adjoint_grows(self) -> dict[float, bool | None]:
        return {tol: None if g is None else g >= self.factor for tol, g in self.growth.items()}

    @property
    def failed(self) -> list[float]:
        return [tol for tol, g in self.growth.items() if g is None]

    @property
    def checkpoint_at_solver_accuracy(self) -> bool:
        return all(w <= self.factor * tol for tol, w in self.checkpoint_worst.items())

    @property
    def holds(self) -> bool:
        return all(g is True for g in self.adjoint_grows.values()) and self.checkpoint_at_solver_accuracy

    @property
    def verdict(self) -> ClaimVerdict:
        """HOLDS when every tolerance grows and checkpoint is accurate; DOES_NOT_HOLD when a tolerance does not
        grow or checkpoint is not accurate; NOT_MEASURABLE when failed solves are all that is missing."""
        if self.holds:
            return ClaimVerdict.HOLDS
        if not self.checkpoint_at_solver_accuracy or any(g is False for g in self.adjoint_grows.values()):
            return ClaimVerdict.DOES_NOT_HOLD
        return ClaimVerdict.NOT_MEASURABLE

    def failure_sentence(self, tol: float) -> str:
        """Where the adjoint's solves failed at ``tol``, counted from the results: "fails at every horizon"
        or "fails at 2 of the 3 horizons", each named with its status; the plot draws no point for them and
        its legend counts them as failed."""
        failed = [(h, t) for (tl, h), t in sorted(self.failures.items()) if tl == tol]
        n, total = len(failed), len(self.config.horizons)
        where = "every horizon" if n == total else f"{n} of the {total} horizons"
        named = ", ".join(f"T = {h:g}: {t}" for h, t in failed)
        return (
            f"the adjoint's gradient fails at {where} ({named}); no error is reported for "
            f"{'them' if n > 1 else 'it'}, and the plot's legend counts {'them' if n > 1 else 'it'} as failed."
        )

    def sweep_text(self) -> str:
        """``"adjoint 2.1e-04 -> 2.2e+07 (tol 0.0001), ...; checkpoint <= 2.2e-05"``."""
        lo, hi = min(self.config.horizons), max(self.config.horizons)
        ends = []
        for tol in self.config.tolerances:
            shown = [self.failures.get((tol, T)) or f"{self.adjoint[tol, T]:.1e}" for T in (lo, hi)]
            ends.append(f"{shown[0]} -> {shown[1]} (tol {tol:g})")
        return f"adjoint {', '.join(ends)}; checkpoint <= {max(self.checkpoint_worst.values()):.1e}"

    def markdown(self) -> str:
        c = self.config
        atol = "tol" if self.atol is None else f"{self.atol:g}"
        T = max(c.horizons)
        ok = [tol for tol in c.tolerances if tol not in self.failed]
        lines = [
            f"atol = {atol}{f', rotated {self.angle:g} rad' if self.angle else ''}, T {min(c.horizons):g} -> "
            f"{T:g}: {self.sweep_text()}."
        ]
        for tol in ok:
            g = self.growth[tol]
            worst = max(self.adjoint[tol, h] for h in c.horizons) / tol
            lines.append(
                f"- tol {tol:g}: the adjoint's error grows {g:.1e}x over the horizons "
                f"({'at least' if g >= self.factor else 'less than'} {self.factor:g}x) and reaches "
                f"{worst:.2g} times the tolerance at worst."
            )
        for tol in self.failed:
            lines.append(f"- tol {tol:g}: {self.failure_sentence(tol)}")
        lines.append(
            f"\nCheckpoint stays within {self.factor:g} x tol at every horizon: "
            f"{'yes' if self.checkpoint_at_solver_accuracy else 'no'}. Verdict of this reading: "
            f"**{self.verdict.value}**. (This sweep: {len(c.tolerances)} tolerances and {len(c.horizons)} "
            f"horizons; full mode: {len(FULL_GRADIENT.tolerances)} and {len(FULL_GRADIENT.horizons)}.)"
        )
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# The atol probe and the rotated system


@dataclass(frozen=True)
class ProbeFindings(Findings):
    """The adjoint's error on dL/dtheta at the probe's point with atol = rtol and with a tiny atol (axis-aligned
    system): does a relative-only error control remove it?"""

    config: ProbeConfig
    theta_error_loose: float
    theta_error_tight: float

    @classmethod
    def from_probe(cls, rows, config: ProbeConfig = PROBE) -> ProbeFindings:
        """Findings from :func:`~.studies.atol_probe`'s results."""
        return cls(
            config,
            probe_value(rows, "adjoint", config.rtol, "theta_error"),
            probe_value(rows, "adjoint", config.tight_atol, "theta_error"),
        )

    def markdown(self) -> str:
        p = self.config
        fell = self.theta_error_tight < self.theta_error_loose
        return (
            f"With atol {p.tight_atol:g} instead of {p.rtol:g} the adjoint's error on $dL/d\\theta$ "
            f"{'falls' if fell else 'does not fall'} from {self.theta_error_loose:.0e} to "
            f"{self.theta_error_tight:.0e} (λ = {p.lam:g}, T = {p.T:g}, {p.method} at rtol {p.rtol:g})."
        )


@dataclass(frozen=True)
class RotatedFindings(Findings):
    """The rotated probe at ``atol = tight_atol``: the adjoint's and checkpoint's relative gradient errors (and
    the adjoint's at atol = rtol, and torchdiffeq's adjoint where it was run), judged by ``ROTATED_THRESHOLD``."""

    config: ProbeConfig
    adjoint: float
    checkpoint: float
    adjoint_loose: float
    torchdiffeq: float | None = None
    threshold: float = ROTATED_THRESHOLD.value

    @classmethod
    def from_probe(
        cls,
        rows,
        config: ProbeConfig = PROBE,
        threshold: Threshold = ROTATED_THRESHOLD,
        torchdiffeq: float | None = None,
    ) -> RotatedFindings:
        """Judge :func:`~.studies.atol_probe`'s rotated results at ``atol = tight_atol``."""
        loose = next((r.rel_error for r in rows if r.route == "adjoint" and r.atol == config.rtol), math.nan)
        return cls(
            config,
            probe_value(rows, "adjoint", config.tight_atol),
            probe_value(rows, "checkpoint", config.tight_atol),
            loose,
            torchdiffeq,
            threshold.value,
        )

    @property
    def parts(self) -> dict[str, ClaimVerdict]:
        return {
            f"adjoint wrong at atol {self.config.tight_atol:g}": _yes(self.adjoint > self.threshold),
            "checkpoint at solver accuracy": _yes(self.checkpoint <= self.config.rtol),
        }

    @property
    def verdict(self) -> ClaimVerdict:
        return combine(self.parts)

    def markdown(self) -> str:
        p = self.config
        tdq = "" if self.torchdiffeq is None else f", torchdiffeq's `odeint_adjoint` gives {self.torchdiffeq:.0e}"
        return (
            f"Rotated by {p.angle:g} rad, the adjoint's error at T = {p.T:g} is {self.adjoint:.0e} with atol "
            f"{p.tight_atol:g} ({self.adjoint_loose:.0e} with atol {p.rtol:g}){tdq}, and checkpointing "
            f"{self.checkpoint:.0e}. Against the row's threshold (adjoint > {self.threshold:g}, checkpoint <= "
            f"rtol {p.rtol:g}): {parts_text(self.parts)}."
        )


__all__ = [
    "GradientErrorFindings",
    "MemoryFindings",
    "ProbeFindings",
    "ReversalFindings",
    "RotatedFindings",
    "failure_text",
]
