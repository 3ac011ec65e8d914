"""Lesson 8's findings: the verdicts and the numbers its sentences quote, computed from the studies."""

from __future__ import annotations

from dataclasses import dataclass

from nodecourse.lessons.lesson08.config import BIAS_Z_MAX, FORMULA_SLACK, SLOPE_SLACK
from nodecourse.lessons.lesson08.studies import FlowRun, LinearFlowCheck, LogdetCheck, TraceStudy
from nodecourse.lessons.study import Findings

__all__ = [
    "FlowFindings",
    "HutchinsonFindings",
    "LinearFlowFindings",
    "LogdetFindings",
    "ProbeNoiseFindings",
]

#: "to solver accuracy" on the linear field: dopri5 at rtol 1e-9 leaves errors far below this (nats).
SOLVER_ACCURACY = 1e-5
#: "visibly wrong": dropping the volume term moves log p by more than this (nats).
VISIBLY_WRONG = 0.1
#: the integrated trace equals log|det J| when they differ by less than this, relative to |log det J| (>= 1).
LOGDET_MATCH = 1e-6


@dataclass(frozen=True)
class LinearFlowFindings(Findings):
    """The CNF against the closed form on a linear field, and the baseline without the volume term."""

    check: LinearFlowCheck

    @property
    def matches(self) -> bool:
        return self.check.max_error < SOLVER_ACCURACY

    @property
    def dropping_is_wrong(self) -> bool:
        return self.check.max_error_without_volume_term > VISIBLY_WRONG

    def markdown(self) -> str:
        c = self.check
        first = (
            f"On $f(z) = Az$ with $\\operatorname{{tr}} A = {c.trace_A:.3f}$ (dopri5 at rtol {c.rtol:g}, "
            f"{c.nfe} evaluations), the CNF's $\\log p$ differs from the closed form by at most "
            f"{c.max_error:.1e} nats: "
        )
        first += (
            "the integrated $-\\operatorname{tr}$ matches it to solver accuracy."
            if self.matches
            else f"more than the {SOLVER_ACCURACY:g} nats the solver's tolerance allows; the CNF is wrong here."
        )
        second = f" Dropping the volume term errs by up to {c.max_error_without_volume_term:.2f} nats" + (
            ", visibly wrong." if self.dropping_is_wrong else ", too little to tell apart on this field."
        )
        return first + second


@dataclass(frozen=True)
class LogdetFindings(Findings):
    """``∫ tr`` against ``log|det J|`` of the solved map on a nonlinear field."""

    check: LogdetCheck

    @property
    def agree(self) -> bool:
        return self.check.max_diff < LOGDET_MATCH * max(1.0, self.check.mean_abs_logdet)

    def markdown(self) -> str:
        c = self.check
        verdict = (
            "they agree to the solver's tolerance."
            if self.agree
            else "they disagree by more than the solver's tolerance allows."
        )
        return (
            f"On a random tanh field in $d = {c.dim}$ ({c.nfe} evaluations for the CNF solve): "
            f"$\\max |\\Delta\\log p + \\log|\\det J|| = {c.max_diff:.1e}$ against a typical "
            f"$|\\log\\det J|$ of {c.mean_abs_logdet:.2f}: {verdict}"
        )


@dataclass(frozen=True)
class HutchinsonFindings(Findings):
    """Unbiased (every |bias| < ``bias_z_max`` standard errors), variance ∝ 1/M (slope within
    ``slope_slack`` of -1), single-probe variance within ``formula_slack`` (relative) of the formula."""

    study: TraceStudy
    bias_z_max: float = BIAS_Z_MAX
    slope_slack: float = SLOPE_SLACK
    formula_slack: float = FORMULA_SLACK

    @classmethod
    def from_study(
        cls,
        study: TraceStudy,
        bias_z_max: float = BIAS_Z_MAX,
        slope_slack: float = SLOPE_SLACK,
        formula_slack: float = FORMULA_SLACK,
    ) -> HutchinsonFindings:
        """:class:`HutchinsonFindings` of ``study`` at the declared slacks (or others, to see what moves)."""
        return cls(study, bias_z_max, slope_slack, formula_slack)

    @property
    def worst_bias_z(self) -> float:
        return max(abs(r.bias_z) for r in self.study.rows)

    @property
    def unbiased(self) -> bool:
        return self.worst_bias_z < self.bias_z_max

    @property
    def slope_ok(self) -> bool:
        return abs(self.study.slope + 1.0) <= self.slope_slack

    @property
    def formula_ratio(self) -> float:
        first = self.study.rows[0]
        return first.variance * first.M / self.study.predicted_single_variance

    @property
    def formula_ok(self) -> bool:
        return abs(self.formula_ratio - 1.0) <= self.formula_slack

    @property
    def holds(self) -> bool:
        return self.unbiased and self.slope_ok and self.formula_ok

    def table(self) -> str:
        """Markdown table: one row per M."""
        lines = ["| M | mean ± s.e. | bias (s.e.) | variance | formula / M |", "|---|---|---|---|---|"]
        lines += [
            f"| {r.M} | {r.mean:+.4f} ± {r.se:.4f} | {r.bias_z:+.1f} | {r.variance:.4f} | {r.predicted_variance:.4f} |"
            for r in self.study.rows
        ]
        return "\n".join(lines)

    def markdown(self) -> str:
        s = self.study
        head = (
            f"Exact trace {s.exact:.4f}; {s.config.repeats} estimates per M ({s.config.noise} probes).\n\n"
            + self.table()
            + "\n\n"
        )
        parts = [
            (
                f"**{'Unbiased' if self.unbiased else 'Biased'}**: the largest bias is {self.worst_bias_z:.1f} "
                f"standard errors ({'under' if self.unbiased else 'not under'} {self.bias_z_max:g})."
            ),
            (
                f"**Variance {'falls' if self.slope_ok else 'does not fall'} as 1/M**: fitted slope {s.slope:.2f} "
                f"(within ±{self.slope_slack:g} of −1: {'yes' if self.slope_ok else 'no'})."
            ),
            (
                f"**The formula {'predicts' if self.formula_ok else 'misses'} the single-probe variance**: measured "
                f"/ formula = {self.formula_ratio:.2f} (within {100 * self.formula_slack:g} %: "
                f"{'yes' if self.formula_ok else 'no'})."
            ),
        ]
        return head + " ".join(parts)


@dataclass(frozen=True)
class ProbeNoiseFindings(Findings):
    """Rademacher against Gaussian probes: the single-probe variance, measured and by the formula."""

    rademacher: TraceStudy
    gaussian: TraceStudy

    @property
    def rademacher_lower(self) -> bool:
        return self.rademacher.rows[0].variance <= self.gaussian.rows[0].variance

    def markdown(self) -> str:
        r, g = self.rademacher, self.gaussian
        return (
            f"Single-probe variance: Rademacher {r.rows[0].variance:.3f} (formula "
            f"{r.predicted_single_variance:.3f}), Gaussian {g.rows[0].variance:.3f} (formula "
            f"{g.predicted_single_variance:.3f}): "
            + (
                "Rademacher probes are the less noisy here, as the formula says they must be."
                if self.rademacher_lower
                else "here the measured Rademacher variance is the larger one (sampling noise: compare the formulas)."
            )
        )


@dataclass(frozen=True)
class FlowFindings(Findings):
    """The trained two-moons CNF against the best Gaussian, and its solver work."""

    run: FlowRun

    @property
    def beats_gaussian(self) -> bool:
        return self.run.test_nll < self.run.gaussian_test_nll

    @property
    def work_logged(self) -> bool:
        return len(self.run.nfe_forward) == self.run.config.iterations and min(self.run.nfe_forward, default=0) > 0

    def markdown(self) -> str:
        r, c = self.run, self.run.config
        nfe_first, nfe_last = (r.nfe_forward[0], r.nfe_forward[-1]) if r.nfe_forward else (0, 0)
        return (
            f"{c.iterations} Adam steps, batch {c.batch}, gradient `{r.gradient}`, {r.seconds:.0f} s. "
            f"Test NLL: CNF {r.test_nll:.3f} nats (exact trace, {r.test_nfe} evaluations) against "
            f"{r.gaussian_test_nll:.3f} nats for the best Gaussian: the CNF "
            + (
                "**beats** the Gaussian on held-out data."
                if self.beats_gaussian
                else "**does not beat** the Gaussian on held-out data (too few steps to fold the density)."
            )
            + f" Forward NFE per iteration went from {nfe_first} to {nfe_last}."
        )
