"""nodecourse: the support library of a measured course on neural ODEs and implicit networks.

Public surface (see README.md and the lessons):

- :func:`odeint`, :data:`SOLVERS`, :class:`Solution`, :class:`SolverError`, :class:`Status`
- :mod:`nodecourse.models`: fields, ODE blocks, augmentation (:mod:`~nodecourse.models.augment`),
  latent ODEs (:mod:`~nodecourse.models.latent`)
- :mod:`nodecourse.measure`: solver-work logs, tolerance sweeps, memory, gradient checks, probes
- :mod:`nodecourse.data`: toy sets, digits, PhysioNet 2012
- :func:`fixed_point`, :class:`DEQ`, :func:`jacobian_regularizer` (:mod:`nodecourse.deq`): deep equilibrium models
"""
from nodecourse.config import pick, quick_mode
from nodecourse.deq import DEQ, fixed_point, jacobian_regularizer
from nodecourse.models.augment import AugmentedODE
from nodecourse.solvers import SOLVERS, Solution, SolverError, Status, odeint
from nodecourse.solvers.solve_config import SolveConfig

__version__ = "0.1.0"

__all__ = [
    "AugmentedODE",
    "DEQ",
    "SOLVERS",
    "SolveConfig",
    "Solution",
    "SolverError",
    "Status",
    "odeint",
    "pick",
    "quick_mode",
    "fixed_point",
    "jacobian_regularizer",
    "__version__",
]
