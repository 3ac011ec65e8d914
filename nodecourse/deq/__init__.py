"""Deep equilibrium models: fixed-point solvers, the DEQ layer, and its Jacobian diagnostics.

- :func:`fixed_point` (Picard, Anderson, Broyden; batched) -> :class:`FixedPointResult`
- :class:`DEQ`: z* = f(z*, x) with implicit (or unrolled) differentiation; :class:`EquilibriumBlock`
  and :class:`DEQModel`, the block and classifier built on it, trained by :func:`fit_deq` (:class:`DEQLog`)
- :func:`jacobian_regularizer` (Hutchinson), :func:`spectral_radius` (Arnoldi),
  :func:`exact_jacobian_frobenius`
- small fixed-point problems (:class:`FixedPointProblem`): :func:`contraction`, :func:`reflection`,
  :func:`expansion`, :func:`two_equilibria`, :func:`bai_synthetic`
- the course's solvers beside torchdeq's on one problem: :func:`compare_solvers` (:class:`SolverRun`)

This file is the package's surface: import from ``nodecourse.deq``. The modules behind it are private
(``_fixed_point`` and one per method, ``_picard``, ``_anderson``, ``_broyden``; ``_result``,
``_settings``, ``_tracking``; ``_layer``, ``_models``, ``_training``, ``_regularizer``; ``_problems``
and ``_compare``).
"""

from nodecourse.deq._anderson import anderson_weights
from nodecourse.deq._compare import SolverRun, compare_solvers
from nodecourse.deq._fixed_point import METHODS, OPTIONS, FixedPointError, fixed_point
from nodecourse.deq._layer import BACKWARDS, DEQ, implicit_backward_hook
from nodecourse.deq._models import DEQModel, EquilibriumBlock
from nodecourse.deq._problems import (
    CONTRACTION_KINDS,
    FixedPointProblem,
    bai_synthetic,
    contraction,
    expansion,
    reflection,
    two_equilibria,
)
from nodecourse.deq._regularizer import exact_jacobian_frobenius, jacobian_regularizer, spectral_radius
from nodecourse.deq._result import FixedPointResult, FixedPointStatus, FixedPointWarning, ResidualTrace
from nodecourse.deq._training import DEQLog, fit_deq

__all__ = [
    "BACKWARDS",
    "CONTRACTION_KINDS",
    "DEQ",
    "DEQLog",
    "DEQModel",
    "EquilibriumBlock",
    "FixedPointError",
    "FixedPointProblem",
    "FixedPointResult",
    "FixedPointStatus",
    "FixedPointWarning",
    "METHODS",
    "OPTIONS",
    "ResidualTrace",
    "SolverRun",
    "anderson_weights",
    "bai_synthetic",
    "compare_solvers",
    "contraction",
    "exact_jacobian_frobenius",
    "expansion",
    "fit_deq",
    "fixed_point",
    "implicit_backward_hook",
    "jacobian_regularizer",
    "reflection",
    "spectral_radius",
    "two_equilibria",
]
