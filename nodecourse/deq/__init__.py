"""Deep equilibrium models: fixed-point solvers, the DEQ layer, and its Jacobian diagnostics.

- :func:`fixed_point` (Picard, Anderson, Broyden; batched) -> :class:`FixedPointResult`
- :class:`DEQ`: z* = f(z*, x) with implicit (or unrolled) differentiation
- :func:`jacobian_regularizer` (Hutchinson), :func:`spectral_radius` (Arnoldi),
  :func:`exact_jacobian_frobenius`
"""

from nodecourse.deq.anderson import anderson_weights
from nodecourse.deq.fixed_point import METHODS, OPTIONS, FixedPointError, fixed_point
from nodecourse.deq.layer import BACKWARDS, DEQ, implicit_backward_hook
from nodecourse.deq.models import EquilibriumBlock
from nodecourse.deq.regularizer import exact_jacobian_frobenius, jacobian_regularizer, spectral_radius
from nodecourse.deq.result import FixedPointResult, FixedPointStatus, FixedPointWarning, ResidualTrace

__all__ = [
    "BACKWARDS",
    "DEQ",
    "EquilibriumBlock",
    "FixedPointError",
    "FixedPointResult",
    "FixedPointStatus",
    "FixedPointWarning",
    "METHODS",
    "OPTIONS",
    "ResidualTrace",
    "anderson_weights",
    "exact_jacobian_frobenius",
    "fixed_point",
    "implicit_backward_hook",
    "jacobian_regularizer",
    "spectral_radius",
    # the module of small fixed-point problems, imported by name
    "problems",
]
