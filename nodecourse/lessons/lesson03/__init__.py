"""Lesson 3 (what a flow cannot represent): studies, findings and ledger rows.

Notebooks and tests use ``from nodecourse.lessons import lesson03 as L``; importing the package registers the
rows (``rows``) with :mod:`nodecourse.claims`. Modules: ``config`` (configurations and thresholds, declared
before anything runs), ``bounds`` (computed bounds and the helpers that judge against them), ``studies``
(cached training runs), ``findings`` (judged results with ``markdown()``) and ``rows``.
"""
from nodecourse.lessons.lesson03 import rows
from nodecourse.lessons.lesson03.bounds import (
    abs_data,
    best_monotone_mse,
    clopper_pearson,
    judge_bound,
    order_preserving_floor,
    rk4_invertible_hlip,
)
from nodecourse.lessons.lesson03.config import (
    ABS_FIT_MSE,
    ABS_MODELS,
    ABS_MONOTONE_BOUND,
    ANNULUS_MARGIN,
    ANNULUS_MODELS,
    ANNULUS_NFE_RATIO,
    ANNULUS_THRESHOLD,
    DISK_PROBE_RADII,
    FLOW_READOUT_THRESHOLD,
    FULL_ABS,
    FULL_ANNULUS,
    FULL_NEGATION,
    NEGATION_FIT_MSE,
    NEGATION_MODELS,
    NEGATION_THRESHOLD,
    PROBE_RADIUS,
    QUICK_ABS,
    QUICK_ANNULUS,
    QUICK_NEGATION,
    RESOLVE_CHECK_TOL,
    RESOLVE_SLACK,
    RESOLVE_TOL,
    AbsConfig,
    AnnulusConfig,
    NegationConfig,
)
from nodecourse.lessons.lesson03.findings import (
    AbsFindings,
    AnnulusFindings,
    JudgedParts,
    NegationFindings,
    abs_findings,
    abs_parts,
    annulus_findings,
    annulus_parts,
    annulus_values,
    negation_findings,
    negation_parts,
)
from nodecourse.lessons.lesson03.studies import (
    AnnulusRun,
    FlowFit,
    abs_study,
    annulus_study,
    build_abs_model,
    build_annulus_model,
    build_negation_model,
    fit_flow,
    negation_study,
    one_step_diagnostics,
    resolve_accurately,
    train_annulus_model,
)

measure_annulus = rows.measure_annulus
measure_negation = rows.measure_negation
measure_flow_readout = rows.measure_flow_readout

__all__ = [
    "abs_data", "best_monotone_mse", "clopper_pearson", "judge_bound", "order_preserving_floor", "rk4_invertible_hlip",
    "ABS_FIT_MSE", "ABS_MODELS", "ABS_MONOTONE_BOUND", "ANNULUS_MARGIN", "ANNULUS_MODELS", "ANNULUS_NFE_RATIO",
    "ANNULUS_THRESHOLD", "DISK_PROBE_RADII", "FLOW_READOUT_THRESHOLD", "FULL_ABS", "FULL_ANNULUS", "FULL_NEGATION",
    "NEGATION_FIT_MSE", "NEGATION_MODELS", "NEGATION_THRESHOLD", "PROBE_RADIUS", "QUICK_ABS", "QUICK_ANNULUS",
    "QUICK_NEGATION", "RESOLVE_CHECK_TOL", "RESOLVE_SLACK", "RESOLVE_TOL", "AbsConfig", "AnnulusConfig",
    "NegationConfig", "AbsFindings", "AnnulusFindings", "JudgedParts", "NegationFindings", "abs_findings", "abs_parts",
    "annulus_findings", "annulus_parts", "annulus_values", "negation_findings", "negation_parts", "AnnulusRun",
    "FlowFit", "abs_study", "annulus_study", "build_abs_model", "build_annulus_model", "build_negation_model",
    "fit_flow", "negation_study", "one_step_diagnostics", "resolve_accurately", "train_annulus_model",
    "measure_annulus", "measure_negation", "measure_flow_readout", "rows",
]
