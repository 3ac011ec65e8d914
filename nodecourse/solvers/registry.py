"""The solver registry: name -> :class:`SolverSpec` (kind, declared order, tableau)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Optional

from nodecourse.solvers.tableaux import BOSH3, DOPRI5, EULER, MIDPOINT, RK4, ButcherTableau

FIXED, ADAPTIVE, IMPLICIT = "fixed", "adaptive", "implicit"


@dataclass(frozen=True)
class SolverSpec:
    """One registered method.

    Attributes:
        name: the ``method=`` string.
        kind: ``"fixed"`` (needs ``step_size``), ``"adaptive"`` (embedded pair) or
            ``"implicit"`` (Newton per step; adaptive unless ``step_size`` is given).
        order: declared order of accuracy (the tests measure it).
        tableau: the Butcher tableau for explicit methods, else None.
        summary: one line for tables and error messages.
    """

    name: str
    kind: str
    order: int
    tableau: Optional[ButcherTableau]
    summary: str


class SolverRegistry(Mapping):
    """A read-only mapping whose unknown keys raise ``ValueError`` listing the valid names."""

    def __init__(self, specs: list[SolverSpec]):
        self._specs = {s.name: s for s in specs}

    def __getitem__(self, name: str) -> SolverSpec:
        try:
            return self._specs[name]
        except (KeyError, TypeError):
            raise ValueError(
                f"method={name!r} is not a registered solver; valid names: {', '.join(self._specs)}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return "SOLVERS(" + ", ".join(f"{s.name}: {s.kind}, order {s.order}" for s in self._specs.values()) + ")"


SOLVERS = SolverRegistry([
    SolverSpec("euler", FIXED, EULER.order, EULER, "forward Euler, 1 evaluation per step"),
    SolverSpec("midpoint", FIXED, MIDPOINT.order, MIDPOINT, "explicit midpoint, 2 evaluations per step"),
    SolverSpec("rk4", FIXED, RK4.order, RK4, "classic Runge-Kutta, 4 evaluations per step"),
    SolverSpec("bosh3", ADAPTIVE, BOSH3.order, BOSH3, "Bogacki-Shampine 3(2) pair, FSAL, 3 new evaluations per step"),
    SolverSpec("dopri5", ADAPTIVE, DOPRI5.order, DOPRI5, "Dormand-Prince 5(4) pair, FSAL, 6 new evaluations per step"),
    SolverSpec("implicit_euler", IMPLICIT, 1, None, "backward Euler with Newton (L-stable, for stiff problems)"),
    SolverSpec("trapezoid", IMPLICIT, 2, None, "trapezoidal rule with Newton (A-stable, for stiff problems)"),
])
