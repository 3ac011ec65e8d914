"""One checked ``odeint`` call, as one object: :class:`SolveRequest`.

:func:`nodecourse.odeint` checks its arguments once and builds a :class:`SolveRequest`; every
gradient route receives that request: ``"backprop"`` runs it
(:func:`nodecourse.solvers._odeint.solve_request`), ``"adjoint"`` and ``"checkpoint"``
(:func:`~nodecourse.solvers._adjoint.solve_adjoint`, :func:`~nodecourse.solvers._checkpoint.solve_checkpoint`)
and the gradients with respect to ``t`` derive the solves they run from it with
``dataclasses.replace(req, ...)`` (without a graph, backwards in time, one replayed step) and hand
them to ``odeint`` again (:meth:`SolveRequest.keywords`), so a setting is written in one place.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from nodecourse.solvers._record import StepEvent


@dataclass
class SolveRequest:
    """A checked ``odeint`` call: the field, the state and the times it solves on, and its settings
    as ``odeint``'s keywords hold them (``method``: a name or a ``ButcherTableau``; ``options``: as
    given, the method's defaults not yet merged in; ``adjoint_options``: the complete backward-solve
    settings :func:`~nodecourse.solvers._validate.check_adjoint_options` returned, or None when
    ``gradient`` is not ``"adjoint"``).

    A request derived with ``dataclasses.replace`` is a new call: ``odeint`` checks it again
    (``odeint(req.func, req.y0, req.t, **req.keywords())``).
    """

    func: Callable
    y0: torch.Tensor
    t: torch.Tensor
    method: Any
    rtol: float
    atol: float
    step_size: Optional[float]
    max_steps: int
    gradient: str = "backprop"
    throw: bool = True
    backend: str = "nodecourse"
    per_sample: bool = False
    options: Optional[dict] = None
    adjoint_options: Optional[dict] = None
    record_steps: bool | str = False
    on_step: Optional[Callable[[StepEvent], Any]] = None

    def keywords(self) -> dict:
        """``odeint``'s keyword arguments for this request (every setting but ``func``, ``y0``, ``t``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _SOLVED_ON}

    def as_backprop(self, **changes) -> SolveRequest:
        """A solve a gradient route runs itself (its forward solve without a graph, a backward or a
        replayed solve): these settings with ``gradient="backprop"``, no ``adjoint_options``, and ``changes``."""
        return dataclasses.replace(self, gradient="backprop", adjoint_options=None, **changes)


#: The fields that are not ``odeint`` keywords: its positional arguments.
_SOLVED_ON = ("func", "y0", "t")
