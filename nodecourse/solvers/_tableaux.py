"""Butcher tableaux as checked data.

A tableau is the whole definition of a Runge-Kutta method: nodes ``c``
(shape ``(s,)``), the matrix ``a``, weights ``b`` (shape ``(s,)``) and, for
embedded pairs, the weights ``b_low`` of the companion used for the error
estimate. ``a`` is given by rows, lower-triangular:

- explicit methods: ``s - 1`` rows, row ``i - 1`` holding ``a[i][0..i-1]`` for stage
  ``i >= 1`` (stage 0 is ``f(t0, y0)``);
- diagonally implicit methods: ``s`` rows, row ``i`` holding ``a[i][0..i]`` (the
  last entry is the diagonal, so stage ``i`` solves for itself).

Construction checks the consistency conditions (row sums ``c_i = sum_j a_ij``)
and the order conditions of the declared order, up to order 4 (the 1 + 1 + 2 + 4
conditions on ``b``, ``c`` and ``a``; for ``b_low`` those of ``embedded_order``),
so a mistyped coefficient raises here instead of silently lowering the order.
Orders above 4 are measured in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

__all__ = ["ButcherTableau"]

_TOL = 1e-12
_ORDER_TOL = 1e-10


def _order_conditions(b, c, A) -> list[tuple[int, str, float, float]]:
    """``(order, condition, value, required)`` for the conditions of orders 1 to 4."""
    s = len(b)
    Ac = [sum(A[i][j] * c[j] for j in range(s)) for i in range(s)]
    Ac2 = [sum(A[i][j] * c[j] ** 2 for j in range(s)) for i in range(s)]
    AAc = [sum(A[i][j] * Ac[j] for j in range(s)) for i in range(s)]
    dot = lambda u, v: sum(x * y for x, y in zip(u, v))  # noqa: E731
    c2 = [x * x for x in c]
    c3 = [x**3 for x in c]
    cAc = [x * y for x, y in zip(c, Ac)]
    return [
        (1, "sum(b_i)", sum(b), 1.0),
        (2, "sum(b_i c_i)", dot(b, c), 1 / 2),
        (3, "sum(b_i c_i^2)", dot(b, c2), 1 / 3),
        (3, "sum(b_i a_ij c_j)", dot(b, Ac), 1 / 6),
        (4, "sum(b_i c_i^3)", dot(b, c3), 1 / 4),
        (4, "sum(b_i c_i a_ij c_j)", dot(b, cAc), 1 / 8),
        (4, "sum(b_i a_ij c_j^2)", dot(b, Ac2), 1 / 12),
        (4, "sum(b_i a_ij a_jk c_k)", dot(b, AAc), 1 / 24),
    ]


@dataclass(frozen=True)
class ButcherTableau:
    """A Runge-Kutta method (explicit, or diagonally implicit).

    Attributes:
        name: registry name, e.g. ``"dopri5"``.
        c: nodes, length ``s``; ``c[0]`` must be 0 for explicit methods.
        a: ``s - 1`` rows (explicit) or ``s`` rows (diagonally implicit), see the module doc.
        b: weights of the propagated solution, length ``s``.
        order: order of the propagated solution (conditions up to 4 checked here,
            measured in the tests).
        b_low: weights of the embedded companion (length ``s``) or None.
        embedded_order: order of ``b_low`` (checked the same way).
        mid: weights giving ``y(t0 + h/2)`` for dense output (length ``s``) or None.

    Example, Heun's method (order 2) with Euler embedded, ready for ``odeint(method=...)``::

        heun = ButcherTableau(name="heun", c=(0.0, 1.0), a=((1.0,),), b=(0.5, 0.5),
                              order=2, b_low=(1.0, 0.0), embedded_order=1)
    """

    name: str
    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    order: int
    b_low: Optional[tuple[float, ...]] = None
    embedded_order: Optional[int] = None
    mid: Optional[tuple[float, ...]] = None

    def __post_init__(self) -> None:
        s = len(self.c)
        if s < 1:
            raise ValueError(f"tableau {self.name!r}: c={self.c} must have at least one node")
        if len(self.a) not in (s - 1, s):
            raise ValueError(
                f"tableau {self.name!r}: a has {len(self.a)} rows, expected s-1={s - 1} (explicit) "
                f"or s={s} (diagonally implicit, diagonal included)"
            )
        diagonal = len(self.a) == s and s > 0
        if not diagonal and self.c[0] != 0.0:
            raise ValueError(f"tableau {self.name!r}: c={self.c} must start with 0 (explicit method)")
        offset = 0 if diagonal else 1
        for k, row in enumerate(self.a):
            i = k + offset
            want = i + 1 if diagonal else i
            if len(row) != want:
                raise ValueError(f"tableau {self.name!r}: row a[{i}]={row} must have {want} entries")
            if abs(sum(row) - self.c[i]) > _TOL:
                raise ValueError(f"tableau {self.name!r}: row sum of a[{i}] is {sum(row)!r} but c[{i}]={self.c[i]!r}")
        if (self.b_low is None) != (self.embedded_order is None):
            raise ValueError(f"tableau {self.name!r}: give both b_low and embedded_order, or neither")
        if self.order < 1:
            raise ValueError(f"tableau {self.name!r}: order={self.order} must be >= 1")
        for label, weights, order in (("b", self.b, self.order), ("b_low", self.b_low, self.embedded_order)):
            if weights is None or order is None:  # both None or neither (checked above)
                continue
            if len(weights) != s:
                raise ValueError(f"tableau {self.name!r}: {label} has {len(weights)} entries, expected {s}")
            if abs(sum(weights) - 1.0) > _TOL:
                raise ValueError(f"tableau {self.name!r}: weights {label} sum to {sum(weights)!r}, not 1")
            for p, condition, value, required in _order_conditions(weights, self.c, self.matrix):
                if p <= order and abs(value - required) > _ORDER_TOL:
                    raise ValueError(
                        f"tableau {self.name!r}: declared {'order' if label == 'b' else 'embedded_order'}="
                        f"{order} but {condition.replace('b_i', label + '_i')} = {value!r}, not {required!r} "
                        f"(an order-{p} condition); check the coefficients or declare order {p - 1}"
                    )
        if self.mid is not None:
            if len(self.mid) != s:
                raise ValueError(f"tableau {self.name!r}: mid has {len(self.mid)} entries, expected {s}")
            if abs(sum(self.mid) - 0.5) > _TOL:
                raise ValueError(f"tableau {self.name!r}: mid weights sum to {sum(self.mid)!r}, not 1/2")

    @property
    def stages(self) -> int:
        return len(self.c)

    @property
    def matrix(self) -> list[list[float]]:
        """``a`` as a full ``s x s`` list of rows (zeros above the diagonal)."""
        s = self.stages
        full = [[0.0] * s for _ in range(s)]
        offset = 0 if len(self.a) == s else 1
        for k, row in enumerate(self.a):
            for j, value in enumerate(row):
                full[k + offset][j] = float(value)
        return full

    @property
    def implicit(self) -> bool:
        """True when some stage depends on itself (a nonzero diagonal entry)."""
        # Read from the rows, not the full matrix: every odeint call asks (SolverSpec.kind).
        if len(self.a) != self.stages:  # explicit layout: rows stop below the diagonal
            return False
        return any(row[-1] != 0.0 for row in self.a)  # diagonal layout: the last entry of each row

    @property
    def explicit_rows(self) -> tuple[tuple[float, ...], ...]:
        """Rows ``a[i][0..i-1]`` for stages ``i >= 1`` (explicit tableaux)."""
        if len(self.a) == self.stages:
            return tuple(tuple(row[:-1]) for row in self.a[1:])
        return self.a

    @property
    def adaptive(self) -> bool:
        return self.b_low is not None

    @property
    def error_order(self) -> Optional[int]:
        """q, the power of h in the embedded error estimate: ``min(order, embedded_order) + 1``
        (see :mod:`nodecourse.solvers._control`); None without ``b_low``."""
        return None if self.embedded_order is None else min(self.order, self.embedded_order) + 1

    @property
    def fsal(self) -> bool:
        """First-same-as-last: the last stage is evaluated at the new solution."""
        s = self.stages
        return (
            s > 1
            and not self.implicit
            and self.c[-1] == 1.0
            and self.b[-1] == 0.0
            and tuple(self.explicit_rows[-1]) == tuple(self.b[:-1])
        )

    @property
    def b_err(self) -> tuple[float, ...]:
        """``b - b_low``: weights of the local error estimate (divided by h)."""
        if self.b_low is None:
            raise ValueError(f"tableau {self.name!r} has no embedded pair")
        return tuple(x - y for x, y in zip(self.b, self.b_low))


DOPRI5 = ButcherTableau(
    name="dopri5",
    c=(0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0),
    a=(
        (1 / 5,),
        (3 / 40, 9 / 40),
        (44 / 45, -56 / 15, 32 / 9),
        (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
        (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
        (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
    ),
    b=(35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0),
    b_low=(5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40),
    order=5,
    embedded_order=4,
    # Shampine's midpoint weights (as in torchdiffeq), for the quartic dense output.
    mid=(
        6025192743 / 30085553152 / 2,
        0.0,
        51252292925 / 65400821598 / 2,
        -2691868925 / 45128329728 / 2,
        187940372067 / 1594534317056 / 2,
        -1776094331 / 19743644256 / 2,
        11237099 / 235043384 / 2,
    ),
)

BOSH3 = ButcherTableau(
    name="bosh3",
    c=(0.0, 1 / 2, 3 / 4, 1.0),
    a=((1 / 2,), (0.0, 3 / 4), (2 / 9, 1 / 3, 4 / 9)),
    b=(2 / 9, 1 / 3, 4 / 9, 0.0),
    b_low=(7 / 24, 1 / 4, 1 / 3, 1 / 8),
    order=3,
    embedded_order=2,
)

EULER = ButcherTableau(name="euler", c=(0.0,), a=(), b=(1.0,), order=1)

MIDPOINT = ButcherTableau(name="midpoint", c=(0.0, 0.5), a=((0.5,),), b=(0.0, 1.0), order=2)

RK4 = ButcherTableau(
    name="rk4",
    c=(0.0, 0.5, 0.5, 1.0),
    a=((0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)),
    b=(1 / 6, 1 / 3, 1 / 3, 1 / 6),
    order=4,
)

#: Kutta's 3/8 rule (order 4): torchdiffeq's "rk4". Added as the worked example of
#: "one tableau and one registry line" (see CONTRIBUTING.md).
RK38 = ButcherTableau(
    name="rk38",
    c=(0.0, 1 / 3, 2 / 3, 1.0),
    a=((1 / 3,), (-1 / 3, 1.0), (1.0, -1.0, 1.0)),
    b=(1 / 8, 3 / 8, 3 / 8, 1 / 8),
    order=4,
)

#: Backward Euler as a two-stage tableau whose first stage is f(t0, y0) (unused by b) and whose
#: second is implicit; b_low is the trapezoidal rule, so b - b_low gives the classic estimate
#: h/2 (f1 - f0) at no extra cost.
IMPLICIT_EULER = ButcherTableau(
    name="implicit_euler",
    c=(0.0, 1.0),
    a=((0.0,), (0.0, 1.0)),
    b=(0.0, 1.0),
    order=1,
    b_low=(0.5, 0.5),
    embedded_order=2,
)

#: The trapezoidal rule (Crank-Nicolson): explicit first stage, implicit second.
TRAPEZOID = ButcherTableau(
    name="trapezoid",
    c=(0.0, 1.0),
    a=((0.0,), (0.5, 0.5)),
    b=(0.5, 0.5),
    order=2,
)


def as_tensor(values: tuple[float, ...], like: torch.Tensor) -> torch.Tensor:
    """Coefficients as a tensor of ``like``'s dtype and device (shape ``(len(values),)``)."""
    return torch.tensor(values, dtype=like.dtype, device=like.device)
