"""ODE solvers with visible work: fixed-step, adaptive embedded pairs, implicit (stiff) methods.

Public: :func:`odeint`, :data:`SOLVERS`, :class:`Solution`, :class:`SolverError`, :class:`Status`.
"""
from nodecourse.solvers.odeint import odeint
from nodecourse.solvers.registry import SOLVERS, SolverSpec
from nodecourse.solvers.result import Solution, SolverError, Status
from nodecourse.solvers.tableaux import ButcherTableau

__all__ = ["SOLVERS", "ButcherTableau", "Solution", "SolverError", "SolverSpec", "Status", "odeint"]
