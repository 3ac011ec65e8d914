"""nodecourse: the support library of a measured course on neural ODEs and implicit networks.

Public surface (see docs/library.md and the lessons):

- :func:`odeint`, :func:`odeint_event` (torchdiffeq's terminal events), :data:`SOLVERS`, :class:`Solution`,
  :class:`SolverError`, :class:`Status`
- :mod:`nodecourse.models`: fields, ODE blocks, augmentation (:mod:`~nodecourse.models.augment`),
  latent ODEs (:mod:`~nodecourse.models.latent`)
- :mod:`nodecourse.measure`: solver-work logs, tolerance sweeps, memory, gradient checks, probes
- :mod:`nodecourse.data`: toy sets, digits, PhysioNet 2012
- :func:`fixed_point`, :class:`DEQ`, :func:`jacobian_regularizer` (:mod:`nodecourse.deq`): deep equilibrium models
"""

import importlib

from nodecourse.config import pick, quick_mode

# The names below are imported on first use (PEP 562), so that ``import nodecourse.course.cli``
# does not import torch: the command parses its arguments first (a usage error in well under a
# second). ``from nodecourse import odeint`` and ``nodecourse.odeint`` work as before.
_LAZY = {
    "SolveConfig": "nodecourse.solvers.solve_config",
    "SOLVERS": "nodecourse.solvers",
    "Solution": "nodecourse.solvers",
    "SolverError": "nodecourse.solvers",
    "Status": "nodecourse.solvers",
    "odeint": "nodecourse.solvers",
    "odeint_event": "nodecourse.solvers",
    "AugmentedODE": "nodecourse.models.augment",
    "DEQ": "nodecourse.deq",
    "fixed_point": "nodecourse.deq",
    "jacobian_regularizer": "nodecourse.deq",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # once: later lookups are plain attribute reads
        return value
    raise AttributeError(f"module 'nodecourse' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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
    "odeint_event",
    "pick",
    "quick_mode",
    "fixed_point",
    "jacobian_regularizer",
    "__version__",
]
