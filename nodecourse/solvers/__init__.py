"""ODE solvers with visible work: fixed-step, adaptive embedded pairs, implicit (stiff) methods.

Public: :func:`odeint`, :data:`SOLVERS`, :class:`Solution`, :class:`SolverError`, :class:`Status`,
:class:`BackwardSolveWarning` (a failed backward pass under ``throw=False``),
:class:`ReversibleStabilityWarning` (reversible Heun outside its stability region),
:class:`ButcherTableau` (``odeint(method=tableau)`` runs your own), :data:`REVERSIBLE_SOLVERS`
(``method="reversible_heun"``, ``gradient="reversible"``), :func:`heun_step`, :func:`heun_inverse`
and :func:`amplification` (reversible Heun's step, its inverse and its growth per step),
:class:`StepRecord` and :class:`StepEvent` (``record_steps=True`` / ``on_step=``), :class:`SolveConfig`
(the settings a model holds for its solves), :func:`odeint_event` (torchdiffeq's terminal events),
:func:`spec_for` (a method's :class:`SolverSpec`, whose ``kind`` is :data:`FIXED`, :data:`ADAPTIVE` or
:data:`IMPLICIT`), :func:`equal_steps` (how many equal steps the fixed-step paths take).

This file is the package's surface: import from ``nodecourse.solvers``. The modules behind it are
private (``_odeint``, the integrators ``_fixed``, ``_adaptive``, ``_implicit`` and ``_reversible``, the
gradient routes ``_adjoint``, ``_checkpoint`` and ``_time_gradients`` sharing ``_gradient_run``, and
their helpers), as in torchdiffeq's ``_impl``.
"""

from nodecourse.solvers import _fixed, _odeint, _record, _registry, _result, _reversible, _solve_config, _tableaux
from nodecourse.solvers._fixed import *  # noqa: F403
from nodecourse.solvers._odeint import *  # noqa: F403
from nodecourse.solvers._record import *  # noqa: F403
from nodecourse.solvers._registry import *  # noqa: F403
from nodecourse.solvers._result import *  # noqa: F403
from nodecourse.solvers._reversible import *  # noqa: F403
from nodecourse.solvers._solve_config import *  # noqa: F403
from nodecourse.solvers._tableaux import *  # noqa: F403

__all__ = [
    *_fixed.__all__,
    *_odeint.__all__,
    *_record.__all__,
    *_registry.__all__,
    *_result.__all__,
    *_reversible.__all__,
    *_solve_config.__all__,
    *_tableaux.__all__,
]
