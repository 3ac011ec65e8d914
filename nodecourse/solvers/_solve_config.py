"""One object for how a model solves its ODE: method, tolerances, steps, gradient mode.

Every model that wraps a solve (:class:`~nodecourse.models.ODEBlock`,
:class:`~nodecourse.models.AugmentedODE`, the latent models) holds one
:class:`SolveConfig` and passes :meth:`SolveConfig.odeint_kwargs` to
:func:`nodecourse.odeint`, so a setting can never be dropped on one path and
kept on another. The values are checked when the config is built, through the
constraints ``odeint`` declares (:mod:`nodecourse.solvers._validate`: one set of rules,
one set of messages), so a bad setting fails where it is written, not on the first
solve. What needs the state itself (half precision, tolerances below the dtype's
resolution) is checked by ``odeint`` on each solve.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterator

from nodecourse.solvers import _validate as v
from nodecourse.validation import UnknownNameError

__all__ = ["SolveConfig"]


class ReadOnlyOptions(Mapping):
    """A read-only, hashable copy of an options dict (nested dicts too; lists become tuples),
    so that a frozen :class:`SolveConfig` holding ``options`` stays hashable and cannot change
    after it was checked. :meth:`to_dict` gives plain dicts back for ``odeint``."""

    __slots__ = ("_data",)

    def __init__(self, options: Mapping):
        self._data = {key: _freeze(value) for key, value in options.items()}

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(tuple(self._data.items()))

    def __repr__(self) -> str:
        return repr(self._data)

    def to_dict(self) -> dict:
        return {key: _thaw(value) for key, value in self._data.items()}


def _freeze(value):
    if isinstance(value, Mapping):
        return ReadOnlyOptions(value)
    if isinstance(value, list):
        return tuple(value)
    return value


def _thaw(value):
    return value.to_dict() if isinstance(value, ReadOnlyOptions) else value


@dataclass(frozen=True)
class SolveConfig:
    """Solver settings, echoed in results. ``step_size=None`` means adaptive steps.

    ``method``: a name in :data:`nodecourse.SOLVERS` (or a tableau);
    ``rtol``/``atol``: tolerances of adaptive methods; ``step_size``: the step of
    fixed-step methods; ``max_steps``: the budget before status MAX_STEPS;
    ``gradient``: ``"backprop"``, ``"adjoint"`` or ``"checkpoint"``; ``per_sample``: each
    row of the batch gets its own steps (and its own NFE in the stats); ``options`` and
    ``adjoint_options``: as in :func:`nodecourse.odeint` (kept as read-only mappings).
    Every value is checked at construction (and by :meth:`replace`) with ``odeint``'s
    constraints and messages; a bad one raises ``TypeError``/``ValueError`` naming it.

    Why the default tolerances are ``rtol = atol = 1e-3`` where ``odeint``'s are 1e-7/1e-9:
    a SolveConfig configures the solves *inside a model that is being trained* (ODEBlock,
    AugmentedODE, the latent models, CNF), where the model's own error (a field fitted to
    data, to a loss of 1e-2 or so) dominates the solver's long before 1e-3, and every
    forward and backward pass pays for tighter tolerances in NFE. 1e-3 is also the setting
    of the papers the lessons reproduce (Chen et al. 2018; Dupont et al. 2019 for lesson 3's
    annulus: dopri5, tol 1e-3). ``odeint`` called directly is asked for *the* solution of an
    ODE, where the solver's error is the whole error: hence its tight defaults.
    """

    method: Any = "dopri5"
    rtol: float = 1e-3
    atol: float = 1e-3
    step_size: float | None = None
    max_steps: int = 10_000
    gradient: str = "backprop"
    per_sample: bool = False
    options: Mapping | None = None
    adjoint_options: Mapping | None = None

    def __post_init__(self):
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        checked = {
            name: v.check_arg(name, getattr(self, name), defaults)
            for name in (
                "rtol",
                "atol",
                "step_size",
                "max_steps",
                "gradient",
                "per_sample",
                "options",
                "adjoint_options",
            )
        }
        spec = v.check_method(self.method, checked["step_size"], checked["per_sample"])
        v.check_gradient(checked["gradient"], spec, checked["per_sample"], "nodecourse")
        v.merge_options(self.options, v.option_defaults(spec, "nodecourse"), spec.name)
        for name, value in checked.items():  # canonical values (np.float32 -> float); frozen: set directly
            object.__setattr__(self, name, value)
        v.check_adjoint_options(self)  # the backward solve's settings against the forward ones just set
        for name in ("options", "adjoint_options"):
            if checked[name] is not None:
                object.__setattr__(self, name, ReadOnlyOptions(checked[name]))

    @classmethod
    def of(cls, solver: "SolveConfig | None" = None, **options) -> "SolveConfig":
        """``solver`` (default: the defaults above) with ``options`` replaced; unknown names raise."""
        base = cls() if solver is None else solver
        if not isinstance(base, cls):
            raise TypeError(f"solver={solver!r}: give a nodecourse.SolveConfig or None")
        return base.replace(**options)

    def replace(self, **options) -> "SolveConfig":
        """A copy with ``options`` changed (checked as at construction); an unknown option raises a
        TypeError naming the valid ones."""
        valid = [f.name for f in dataclasses.fields(self)]
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise UnknownNameError(f"unknown solver setting(s) {unknown}; valid: {valid}")
        # No copy when nothing changes: models call this on every forward pass.
        return dataclasses.replace(self, **options) if options else self

    def odeint_kwargs(self) -> dict:
        """The keyword arguments of :func:`nodecourse.odeint` for these settings (plain dicts)."""
        # Not dataclasses.asdict: it would turn a tableau given as ``method`` into a dict.
        return {f.name: _thaw(getattr(self, f.name)) for f in dataclasses.fields(self)}
