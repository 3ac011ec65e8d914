"""nodecourse: the support library of a measured course on neural ODEs and implicit networks.

Public surface (see docs/library.md and the lessons):

- :func:`odeint`, :func:`odeint_event` (torchdiffeq's terminal events), :data:`SOLVERS`, :class:`Solution`,
  :class:`SolverError`, :class:`Status`
- :mod:`nodecourse.models`: fields, ODE blocks, augmentation (:class:`~nodecourse.models.AugmentedODE`),
  latent ODEs (:mod:`~nodecourse.models.latent`)
- :mod:`nodecourse.measure`: solver-work logs, tolerance sweeps, memory, gradient checks, probes
- :mod:`nodecourse.data`: toy sets, digits, PhysioNet 2012
- :func:`fixed_point`, :class:`DEQ`, :func:`jacobian_regularizer` (:mod:`nodecourse.deq`): deep equilibrium models
"""

import importlib
import sys

from nodecourse.config import pick, quick_mode

# The names below are imported on first use (PEP 562), so that ``import nodecourse.course.cli``
# does not import torch: the command parses its arguments first (a usage error in well under a
# second). ``from nodecourse import odeint`` and ``nodecourse.odeint`` work as before.
_LAZY = {
    "SolveConfig": "nodecourse.solvers",
    "SOLVERS": "nodecourse.solvers",
    "Solution": "nodecourse.solvers",
    "SolverError": "nodecourse.solvers",
    "Status": "nodecourse.solvers",
    "odeint": "nodecourse.solvers",
    "odeint_event": "nodecourse.solvers",
    "AugmentedODE": "nodecourse.models",
    "DEQ": "nodecourse.deq",
    "fixed_point": "nodecourse.deq",
    "jacobian_regularizer": "nodecourse.deq",
}


def _lazy(package: str, table: dict[str, str], whole: tuple[str, ...] = ()):
    """PEP 562's ``__getattr__`` and ``__dir__`` for ``package``: each name of ``table`` (``{name: module}``,
    a module relative to ``package`` where it starts with a dot) is imported from its module on first use,
    the module itself for a name in ``whole``, and kept in the package's namespace, so that later reads
    are plain attribute reads. Shared by this package and the subpackages that load their names lazily."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str):
        if name in table:
            module = importlib.import_module(table[name], package)
            value = module if name in whole else getattr(module, name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__


__getattr__, __dir__ = _lazy(__name__, _LAZY)


__version__ = "0.1.0"

__all__ = [*_LAZY, "pick", "quick_mode", "__version__"]
