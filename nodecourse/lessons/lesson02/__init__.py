"""Lesson 2 (solvers, tolerance and solver work): the measurements the lesson plots, and its ledger rows.

- :mod:`.config`: step counts by declared order, the order tolerance;
- :mod:`.studies`: :func:`convergence` (error against step size, fitted order: a :class:`ConvergenceResult`)
  and :func:`nfe_sweep` (NFE and error against rtol on Van der Pol: one :class:`ToleranceSolve` per rtol);
- :mod:`.findings`: :class:`StiffFindings` (the stiff problem's solves: steps, evaluations a step, and the
  Newton work of an implicit step that NFE does not count);
- :mod:`.rows`: the ledger rows ``convergence-order`` and ``tolerance-nfe``.
"""

from nodecourse.lessons.lesson02 import config, findings, rows, studies
from nodecourse.lessons.lesson02.config import *  # noqa: F403
from nodecourse.lessons.lesson02.findings import *  # noqa: F403
from nodecourse.lessons.lesson02.rows import *  # noqa: F403
from nodecourse.lessons.lesson02.studies import *  # noqa: F403

__all__ = [*config.__all__, *findings.__all__, *rows.__all__, *studies.__all__, "rows"]
