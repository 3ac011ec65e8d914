"""Lesson 8 (continuous normalising flows): the studies the notebook draws, its findings, and its ledger row.

- :mod:`.config`: the Hutchinson study's and the two-moons flow's settings (quick and full), the row's slacks;
- :mod:`.studies`: the change of variables on fields with a known answer, Hutchinson's estimator, the
  trace's cost, the two-moons CNF;
- :mod:`.findings`: what the lesson's sentences say, chosen from the measurements;
- :mod:`.rows`: the ledger row ``cnf-hutchinson-variance``.
"""

from nodecourse.lessons.lesson08 import rows
from nodecourse.lessons.lesson08.config import (
    BIAS_Z_MAX,
    FORMULA_SLACK,
    FULL_FLOW,
    FULL_TRACE,
    QUICK_FLOW,
    QUICK_TRACE,
    SLOPE_SLACK,
    FlowConfig,
    TraceStudyConfig,
)
from nodecourse.lessons.lesson08.findings import (
    FlowFindings,
    HutchinsonFindings,
    LinearFlowFindings,
    LogdetFindings,
    ProbeNoiseFindings,
    hutchinson_findings,
)
from nodecourse.lessons.lesson08.rows import measure_hutchinson_variance
from nodecourse.lessons.lesson08.studies import (
    DensityGrid,
    FlowRun,
    LinearFlowCheck,
    LogdetCheck,
    ProbeRow,
    TraceCost,
    TraceStudy,
    adjoint_available,
    density_grid,
    gaussian_nll,
    linear_flow_check,
    resolve_gradient,
    trace_cost_study,
    trace_estimator_study,
    trace_vs_logdet,
    train_flow,
)

__all__ = [
    "BIAS_Z_MAX",
    "FORMULA_SLACK",
    "FULL_FLOW",
    "FULL_TRACE",
    "QUICK_FLOW",
    "QUICK_TRACE",
    "SLOPE_SLACK",
    "DensityGrid",
    "FlowConfig",
    "FlowFindings",
    "FlowRun",
    "HutchinsonFindings",
    "LinearFlowCheck",
    "LinearFlowFindings",
    "LogdetCheck",
    "LogdetFindings",
    "ProbeNoiseFindings",
    "ProbeRow",
    "TraceCost",
    "TraceStudy",
    "TraceStudyConfig",
    "adjoint_available",
    "density_grid",
    "gaussian_nll",
    "hutchinson_findings",
    "linear_flow_check",
    "measure_hutchinson_variance",
    "resolve_gradient",
    "rows",
    "trace_cost_study",
    "trace_estimator_study",
    "trace_vs_logdet",
    "train_flow",
]
