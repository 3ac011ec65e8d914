"""Lesson 2 (solvers, tolerance and solver work): the measurements the lesson plots, and its ledger rows.

- :mod:`.config`: step counts by declared order, the order tolerance;
- :mod:`.studies`: :func:`convergence` (error against step size, fitted order: a :class:`ConvergenceResult`)
  and :func:`nfe_sweep` (NFE and error against rtol on Van der Pol: one :class:`ToleranceSolve` per rtol);
- :mod:`.findings`: :class:`StiffFindings` (the stiff problem's solves: steps, evaluations a step, and the
  Newton work of an implicit step that NFE does not count);
- :mod:`.rows`: the ledger rows ``convergence-order`` and ``tolerance-nfe``.
"""

from nodecourse.lessons.lesson02 import rows
from nodecourse.lessons.lesson02.config import (
    ORDER_STEPS,
    ORDER_TOLERANCE,
    STEPS_BY_ORDER,
    STEPS_OVERRIDE,
    T_END,
    order_steps,
)
from nodecourse.lessons.lesson02.findings import StiffFindings, StiffRun
from nodecourse.lessons.lesson02.rows import measure_orders, measure_tolerance_nfe
from nodecourse.lessons.lesson02.studies import (
    ConvergenceResult,
    ToleranceSolve,
    convergence,
    fit_slope,
    nfe_sweep,
    order_exact,
    order_problem,
)

__all__ = [
    "ORDER_STEPS",
    "ORDER_TOLERANCE",
    "STEPS_BY_ORDER",
    "STEPS_OVERRIDE",
    "T_END",
    "StiffFindings",
    "StiffRun",
    "ConvergenceResult",
    "ToleranceSolve",
    "convergence",
    "fit_slope",
    "measure_orders",
    "measure_tolerance_nfe",
    "nfe_sweep",
    "order_exact",
    "order_problem",
    "order_steps",
    "rows",
]
