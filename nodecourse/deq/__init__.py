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

from nodecourse.deq import (
    _anderson,
    _compare,
    _fixed_point,
    _layer,
    _models,
    _problems,
    _regularizer,
    _result,
    _training,
)
from nodecourse.deq._anderson import *  # noqa: F403
from nodecourse.deq._compare import *  # noqa: F403
from nodecourse.deq._fixed_point import *  # noqa: F403
from nodecourse.deq._layer import *  # noqa: F403
from nodecourse.deq._models import *  # noqa: F403
from nodecourse.deq._problems import *  # noqa: F403
from nodecourse.deq._regularizer import *  # noqa: F403
from nodecourse.deq._result import *  # noqa: F403
from nodecourse.deq._training import *  # noqa: F403

__all__ = [
    *_anderson.__all__,
    *_compare.__all__,
    *_fixed_point.__all__,
    *_layer.__all__,
    *_models.__all__,
    *_problems.__all__,
    *_regularizer.__all__,
    *_result.__all__,
    *_training.__all__,
]
