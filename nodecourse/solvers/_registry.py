"""The solver registry, the single source of what each method is: name -> :class:`SolverSpec`.

A spec is a tableau plus what the tableau cannot say (a one-line summary, the
torchdiffeq name of the same method, how it differs there). Kind, order and
error order are read from the tableau, never declared twice. ``odeint`` also
accepts a :class:`~nodecourse.solvers._tableaux.ButcherTableau` directly as
``method=``; :func:`spec_for` turns either into a spec.

Adding an explicit method is one tableau (in ``tableaux.py``) and one line here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional

from nodecourse.solvers._tableaux import (
    BOSH3,
    DOPRI5,
    EULER,
    IMPLICIT_EULER,
    MIDPOINT,
    RK4,
    RK38,
    TRAPEZOID,
    ButcherTableau,
)

__all__ = ["ADAPTIVE", "FIXED", "IMPLICIT", "SOLVERS", "SolverSpec", "spec_for"]

FIXED, ADAPTIVE, IMPLICIT = "fixed", "adaptive", "implicit"


@dataclass(frozen=True)
class SolverSpec:
    """One method.

    Attributes:
        tableau: the Butcher tableau (explicit, or diagonally implicit).
        summary: one line for tables and error messages.
        torchdiffeq: the ``method=`` name of the same method in torchdiffeq, or None.
        torchdiffeq_differs: what differs there, when something does ("" when identical).
        error_estimate: ``"embedded"`` (``b - b_low`` of the tableau) or ``"slope_history"``
            (the trapezoidal rule's divided difference of the last three slopes, q = 3).
        name: the ``method=`` string (default: the tableau's name).

    Derived from the tableau: ``kind`` (``"fixed"``: explicit without ``b_low``, needs
    ``step_size``; ``"adaptive"``: explicit embedded pair; ``"implicit"``: Newton per step,
    adaptive unless ``step_size`` is given), ``order`` and ``error_order``.
    """

    tableau: ButcherTableau
    summary: str = ""
    torchdiffeq: Optional[str] = None
    torchdiffeq_differs: str = ""
    error_estimate: str = "embedded"
    name: str = ""

    def __post_init__(self):
        if not self.name:
            object.__setattr__(self, "name", self.tableau.name)
        # derived once: every odeint call asks several times (a tableau is immutable)
        kind = IMPLICIT if self.tableau.implicit else ADAPTIVE if self.tableau.adaptive else FIXED
        object.__setattr__(self, "_kind", kind)

    @property
    def kind(self) -> str:
        # set in __post_init__ through object.__setattr__ (frozen), deliberately not a dataclass field
        return self._kind  # type: ignore[attr-defined]

    @property
    def order(self) -> int:
        return self.tableau.order

    @property
    def error_order(self) -> Optional[int]:
        """q of :mod:`nodecourse.solvers._control` (None: no error estimate, fixed steps only)."""
        if self.error_estimate == "slope_history":
            return self.order + 1
        return self.tableau.error_order


class UnknownSolverError(ValueError, KeyError):
    """``SOLVERS[name]`` for a name that is not registered.

    A ``ValueError`` (a bad ``method=`` value, as the rest of the library raises) and a
    ``KeyError`` (what a ``Mapping`` raises for a missing key, so ``get``, ``in`` and
    ``dict(SOLVERS)``-style code behave as for any mapping).
    """

    # KeyError's str() quotes its argument (it prints the key); the message reads better plain.
    __str__ = ValueError.__str__


class SolverRegistry(Mapping):
    """A read-only ``collections.abc.Mapping`` name -> :class:`SolverSpec`.

    ``get``, ``in``, iteration (registration order), ``len``, ``keys``/``values``/``items``
    behave as for a dict; indexing an unknown name raises :class:`UnknownSolverError`
    (a ``ValueError`` and a ``KeyError``) listing the valid names.
    """

    def __init__(self, specs: list[SolverSpec]):
        names = [s.name for s in specs]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:  # a second line for a name would silently replace the first
            raise ValueError(f"solver names registered twice: {duplicates}; give each SolverSpec its own name=")
        self._specs = MappingProxyType({s.name: s for s in specs})

    def __getitem__(self, name: str) -> SolverSpec:
        try:
            return self._specs[name]
        except (KeyError, TypeError):
            raise UnknownSolverError(
                f"method={name!r} is not a registered solver; valid names: {', '.join(self._specs)} "
                f"(or pass a nodecourse.solvers.ButcherTableau)"
            ) from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return "SOLVERS(" + ", ".join(f"{s.name}: {s.kind}, order {s.order}" for s in self._specs.values()) + ")"


SOLVERS = SolverRegistry(
    [
        SolverSpec(EULER, "forward Euler, 1 evaluation per step", "euler"),
        SolverSpec(MIDPOINT, "explicit midpoint, 2 evaluations per step", "midpoint"),
        SolverSpec(
            RK4,
            "classic Runge-Kutta, 4 evaluations per step",
            "rk4",
            "torchdiffeq's 'rk4' is Kutta's 3/8 rule (our 'rk38'), not the classic tableau; both order 4",
        ),
        SolverSpec(
            RK38,
            "Kutta's 3/8 rule, 4 evaluations per step",
            "rk4",
            "torchdiffeq steps on one grid from t[0] and interpolates to output times",
        ),
        SolverSpec(
            BOSH3,
            "Bogacki-Shampine 3(2) pair, FSAL, 3 new evaluations per step",
            "bosh3",
            "dense output: ours is the cubic Hermite (third order), torchdiffeq's a quartic",
        ),
        SolverSpec(
            DOPRI5,
            "Dormand-Prince 5(4) pair, FSAL, 6 new evaluations per step",
            "dopri5",
            "torchdiffeq uses another 4th-order companion for the error estimate (a few % fewer NFE); "
            "ours is Hairer's and scipy's",
        ),
        SolverSpec(IMPLICIT_EULER, "backward Euler with Newton (L-stable, for stiff problems)"),
        SolverSpec(
            TRAPEZOID, "trapezoidal rule with Newton (A-stable, for stiff problems)", error_estimate="slope_history"
        ),
    ]
)


def spec_for(method) -> SolverSpec:
    """A registered name or a :class:`ButcherTableau` -> :class:`SolverSpec` (unknown names raise
    ``ValueError`` listing the valid ones; other types ``TypeError``)."""
    if isinstance(method, ButcherTableau):
        spec = SOLVERS._specs.get(method.name)
        if spec is not None and spec.tableau == method:
            return spec
        return SolverSpec(method, f"user tableau {method.name!r}, order {method.order}")
    if isinstance(method, SolverSpec):
        return method
    if not isinstance(method, str):
        raise TypeError(
            f"method={method!r} must be a registered name ({', '.join(SOLVERS)}) or a nodecourse.solvers.ButcherTableau"
        )
    return SOLVERS[method]
