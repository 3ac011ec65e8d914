"""ODE solvers with visible work: fixed-step, adaptive embedded pairs, implicit (stiff) methods.

Public: :func:`odeint`, :data:`SOLVERS`, :class:`Solution`, :class:`SolverError`, :class:`Status`,
:class:`BackwardSolveWarning` (a failed backward pass under ``throw=False``),
:class:`ReversibleStabilityWarning` (reversible Heun outside its stability region),
:class:`ButcherTableau` (``odeint(method=tableau)`` runs your own), :data:`REVERSIBLE_SOLVERS`
(``method="reversible_heun"``, ``gradient="reversible"``), :class:`StepRecord` and
:class:`StepEvent` (``record_steps=True`` / ``on_step=``), :class:`SolveConfig` (the settings a model
holds for its solves), :func:`odeint_event` (torchdiffeq's terminal events).
"""

from nodecourse.solvers.odeint import odeint, odeint_event
from nodecourse.solvers.record import StepEvent, StepRecord
from nodecourse.solvers.registry import SOLVERS, SolverSpec
from nodecourse.solvers.result import BackwardSolveWarning, Solution, SolverError, Status
from nodecourse.solvers.reversible import REVERSIBLE_SOLVERS, ReversibleStabilityWarning, heun_inverse, heun_step
from nodecourse.solvers.solve_config import SolveConfig
from nodecourse.solvers.tableaux import ButcherTableau

__all__ = [
    "BackwardSolveWarning",
    "REVERSIBLE_SOLVERS",
    "ReversibleStabilityWarning",
    "SOLVERS",
    "ButcherTableau",
    "SolveConfig",
    "Solution",
    "SolverError",
    "SolverSpec",
    "Status",
    "StepEvent",
    "StepRecord",
    "heun_inverse",
    "heun_step",
    "odeint",
    "odeint_event",
]
