"""Lesson 8's ledger row: Hutchinson's estimator is unbiased with variance ∝ 1/M, as its formula says."""

from __future__ import annotations

from dataclasses import asdict

from nodecourse.claims import ClaimVerdict, Measurement, Threshold, claim
from nodecourse.lessons.lesson08.config import BIAS_Z_MAX, FORMULA_SLACK, FULL_TRACE, QUICK_TRACE, SLOPE_SLACK
from nodecourse.lessons.lesson08.findings import HutchinsonFindings
from nodecourse.lessons.lesson08.studies import trace_estimator_study

__all__ = ["measure_hutchinson_variance"]


@claim(
    id="cnf-hutchinson-variance",
    claim="Hutchinson's trace estimator (as in a CNF's divergence) is unbiased and its variance falls as 1/M "
    "with M probes, as its formula predicts",
    source="Hutchinson 1989; Grathwohl et al. 2019 (FFJORD), sec. 3.1",
    published="E[εᵀAε] = tr(A); Var = 2(‖S‖_F² − Σ A_ii²)/M for Rademacher probes, S = (A+Aᵀ)/2",
    lesson="08",
    threshold=Threshold(
        f"|mean − tr(A)| < {BIAS_Z_MAX:g} standard errors at every M; slope of log variance against log M "
        f"within ±{SLOPE_SLACK:g} of −1; single-probe variance within {FORMULA_SLACK:.0%} of the formula",
        kind="course",
        why="the published statements are exact (unbiased, 1/M, a closed-form variance); the slacks "
        "allow only the sampling error of a finite number of estimates",
    ),
)
def measure_hutchinson_variance(quick: bool) -> Measurement:
    config = QUICK_TRACE if quick else FULL_TRACE
    study = trace_estimator_study(config)
    f = HutchinsonFindings.from_study(study)
    measured = (
        f"d={config.dim}, {config.repeats} estimates per M: largest bias {f.worst_bias_z:.1f} standard "
        f"errors; log-variance vs log-M slope {study.slope:.2f}; single-probe variance / formula "
        f"{f.formula_ratio:.2f}"
    )
    return Measurement(
        measured,
        ClaimVerdict.HOLDS if f.holds else ClaimVerdict.DOES_NOT_HOLD,
        {
            "exact_trace": study.exact,
            "rows": [asdict(r) for r in study.rows],
            "unbiased": f.unbiased,
            "slope_ok": f.slope_ok,
            "formula_ratio": f.formula_ratio,
            "formula_ok": f.formula_ok,
            "holds": f.holds,
        },
    )
