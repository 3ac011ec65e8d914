"""One object for how a model solves its ODE: method, tolerances, steps, gradient mode.

Every model that wraps a solve (:class:`~nodecourse.models.ODEBlock`,
:class:`~nodecourse.augment.AugmentedODE`, the latent models) holds one
:class:`SolveConfig` and passes :meth:`SolveConfig.odeint_kwargs` to
:func:`nodecourse.odeint`, so a setting can never be dropped on one path and
kept on another. The values are validated by ``odeint`` itself on the first
solve (one set of rules, one set of messages); here only the names are.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SolveConfig:
    """Solver settings, echoed in results. ``step_size=None`` means adaptive steps.

    ``method``: a name in :data:`nodecourse.SOLVERS` (or a tableau);
    ``rtol``/``atol``: tolerances of adaptive methods; ``step_size``: the step of
    fixed-step methods; ``max_steps``: the budget before status MAX_STEPS;
    ``gradient``: ``"backprop"``, ``"adjoint"`` or ``"checkpoint"``; ``per_sample``: each
    row of the batch gets its own steps (and its own NFE in the stats).
    """

    method: Any = "dopri5"
    rtol: float = 1e-3
    atol: float = 1e-3
    step_size: float | None = None
    max_steps: int = 10_000
    gradient: str = "backprop"
    per_sample: bool = False

    @classmethod
    def of(cls, solver: "SolveConfig | None" = None, **options) -> "SolveConfig":
        """``solver`` (default: the defaults above) with ``options`` replaced; unknown names raise."""
        base = cls() if solver is None else solver
        if not isinstance(base, cls):
            raise TypeError(f"solver={solver!r}: give a nodecourse.SolveConfig or None")
        return base.replace(**options)

    def replace(self, **options) -> "SolveConfig":
        """A copy with ``options`` changed; an unknown option raises a TypeError naming the valid ones."""
        valid = [f.name for f in dataclasses.fields(self)]
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise TypeError(f"unknown solver setting(s) {unknown}; valid: {valid}")
        # No copy when nothing changes: models call this on every forward pass.
        return dataclasses.replace(self, **options) if options else self

    def odeint_kwargs(self) -> dict:
        """The keyword arguments of :func:`nodecourse.odeint` for these settings."""
        # Not dataclasses.asdict: it would turn a tableau given as ``method`` into a dict.
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
