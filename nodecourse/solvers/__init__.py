"""ODE solvers with visible work: fixed-step, adaptive embedded pairs, implicit (stiff) methods.

Public: :func:`odeint`, :data:`SOLVERS`, :class:`Solution`, :class:`SolverError`, :class:`Status`,
:class:`ButcherTableau` (``odeint(method=tableau)`` runs your own), :class:`StepRecord` and
:class:`StepEvent` (``record_steps=True`` / ``on_step=``).
"""
from nodecourse.solvers.odeint import odeint
from nodecourse.solvers.record import StepEvent, StepRecord
from nodecourse.solvers.registry import SOLVERS, SolverSpec
from nodecourse.solvers.result import Solution, SolverError, Status
from nodecourse.solvers.tableaux import ButcherTableau

__all__ = ["SOLVERS", "ButcherTableau", "Solution", "SolverError", "SolverSpec", "Status", "StepEvent", "StepRecord",
           "odeint"]
