"""Lesson 4 (the adjoint, its memory and its instability): studies, findings, figures and ledger rows.

Notebooks and tests use ``from nodecourse.lessons import lesson04 as L``; importing the package registers the
rows (``rows``) with :mod:`nodecourse.claims`. Modules: ``config`` (configurations and thresholds, declared
before anything runs), ``studies`` (cached measurements), ``findings`` (judged results with ``markdown()``),
``figures`` and ``rows``.
"""
from nodecourse.lessons.lesson04 import rows
from nodecourse.lessons.lesson04.config import (
    ADJOINT_FLAT_FACTOR,
    DERIVED_REVERSAL_STEPS,
    FIRST_ORDER,
    FULL_GRADIENT,
    FULL_MEMORY,
    FULL_REVERSAL,
    GRADIENT_THRESHOLD,
    MEMORY_THRESHOLD,
    PROBE,
    QUICK_GRADIENT,
    QUICK_MEMORY,
    QUICK_REVERSAL,
    REVERSAL_LAMBDA,
    REVERSAL_LAMBDAS,
    REVERSAL_THRESHOLD,
    ROTATED_THRESHOLD,
    TARGET,
    TIGHT_ATOL,
    UNDERFLOW_LAMBDA,
    UNLOCATED_REVERSAL_STEPS,
    GradientErrorConfig,
    ProbeConfig,
    ReversalConfig,
    derived_reversal_steps,
)
from nodecourse.lessons.lesson04.figures import plot_gradient_error, plot_memory
from nodecourse.lessons.lesson04.findings import (
    GradientErrorFindings,
    MemoryFindings,
    ProbeFindings,
    ReversalFindings,
    RotatedFindings,
    failure_text,
    gradient_error_findings,
    memory_findings,
    probe_findings,
    reversal_findings,
    rotated_findings,
)
from nodecourse.lessons.lesson04.studies import (
    ProbeResult,
    ReversalCount,
    UnderflowCase,
    adaptive_steps_to_reverse,
    atol_probe,
    gradient_error_study,
    memory_study,
    nfe_table,
    probe_value,
    reversal_error_formula,
    reversal_pivot,
    reversal_signed_error,
    reversal_study,
    reversal_table,
    reverse_with_solver,
    steps_to_reverse,
    underflow_demo,
)

measure_reversal = rows.measure_reversal
measure_memory = rows.measure_memory
measure_gradient_error = rows.measure_gradient_error
measure_rotated = rows.measure_rotated

__all__ = [
    "ADJOINT_FLAT_FACTOR", "DERIVED_REVERSAL_STEPS", "FIRST_ORDER", "FULL_GRADIENT", "FULL_MEMORY", "FULL_REVERSAL",
    "GRADIENT_THRESHOLD", "MEMORY_THRESHOLD", "PROBE", "QUICK_GRADIENT", "QUICK_MEMORY", "QUICK_REVERSAL",
    "REVERSAL_LAMBDA", "REVERSAL_LAMBDAS", "REVERSAL_THRESHOLD", "ROTATED_THRESHOLD", "TARGET", "TIGHT_ATOL",
    "UNDERFLOW_LAMBDA", "UNLOCATED_REVERSAL_STEPS", "GradientErrorConfig", "ProbeConfig", "ReversalConfig",
    "derived_reversal_steps", "plot_gradient_error", "plot_memory", "GradientErrorFindings", "MemoryFindings",
    "ProbeFindings", "ReversalFindings", "RotatedFindings", "failure_text", "gradient_error_findings",
    "memory_findings", "probe_findings", "reversal_findings", "rotated_findings", "ProbeResult", "ReversalCount",
    "UnderflowCase", "adaptive_steps_to_reverse", "atol_probe", "gradient_error_study", "memory_study", "nfe_table",
    "probe_value", "reversal_error_formula", "reversal_pivot", "reversal_signed_error", "reversal_study",
    "reversal_table", "reverse_with_solver", "steps_to_reverse", "underflow_demo", "measure_reversal",
    "measure_memory", "measure_gradient_error", "measure_rotated", "rows",
]
