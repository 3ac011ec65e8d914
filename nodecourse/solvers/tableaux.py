"""Butcher tableaux as checked data.

A tableau is the whole definition of an explicit Runge-Kutta method: nodes
``c`` (shape ``(s,)``), the strictly lower-triangular matrix ``a`` (row ``i``
has ``i`` entries), weights ``b`` (shape ``(s,)``) and, for embedded pairs,
the weights ``b_low`` of the lower-order companion. Construction checks the
consistency conditions (row sums ``c_i = sum_j a_ij``, ``sum b = 1``), so a
mistyped coefficient raises here instead of silently lowering the order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

_TOL = 1e-12


@dataclass(frozen=True)
class ButcherTableau:
    """An explicit Runge-Kutta method.

    Attributes:
        name: registry name, e.g. ``"dopri5"``.
        c: nodes, length ``s``; ``c[0]`` must be 0.
        a: ``s - 1`` rows; row ``i - 1`` holds ``a[i][0..i-1]`` for stage ``i``.
        b: weights of the propagated solution, length ``s``.
        order: order of the propagated solution (measured in the tests).
        b_low: weights of the embedded lower-order solution (length ``s``) or None.
        embedded_order: order of ``b_low``.
        mid: weights giving ``y(t0 + h/2)`` for dense output (length ``s``) or None.
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
        if s < 1 or self.c[0] != 0.0:
            raise ValueError(f"tableau {self.name!r}: c={self.c} must start with 0 (explicit method)")
        if len(self.a) != s - 1:
            raise ValueError(f"tableau {self.name!r}: a has {len(self.a)} rows, expected s-1={s - 1}")
        for i, row in enumerate(self.a, start=1):
            if len(row) != i:
                raise ValueError(f"tableau {self.name!r}: row a[{i}]={row} must have {i} entries")
            if abs(sum(row) - self.c[i]) > _TOL:
                raise ValueError(
                    f"tableau {self.name!r}: row sum of a[{i}] is {sum(row)!r} but c[{i}]={self.c[i]!r}"
                )
        for label, weights in (("b", self.b), ("b_low", self.b_low)):
            if weights is None:
                continue
            if len(weights) != s:
                raise ValueError(f"tableau {self.name!r}: {label} has {len(weights)} entries, expected {s}")
            if abs(sum(weights) - 1.0) > _TOL:
                raise ValueError(f"tableau {self.name!r}: weights {label} sum to {sum(weights)!r}, not 1")
        if self.mid is not None:
            if len(self.mid) != s:
                raise ValueError(f"tableau {self.name!r}: mid has {len(self.mid)} entries, expected {s}")
            if abs(sum(self.mid) - 0.5) > _TOL:
                raise ValueError(f"tableau {self.name!r}: mid weights sum to {sum(self.mid)!r}, not 1/2")
        if (self.b_low is None) != (self.embedded_order is None):
            raise ValueError(f"tableau {self.name!r}: give both b_low and embedded_order, or neither")
        if self.order < 1:
            raise ValueError(f"tableau {self.name!r}: order={self.order} must be >= 1")

    @property
    def stages(self) -> int:
        return len(self.c)

    @property
    def adaptive(self) -> bool:
        return self.b_low is not None

    @property
    def fsal(self) -> bool:
        """First-same-as-last: the last stage is evaluated at the new solution."""
        s = self.stages
        return (
            s > 1
            and self.c[-1] == 1.0
            and self.b[-1] == 0.0
            and tuple(self.a[-1]) == tuple(self.b[:-1])
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


def as_tensor(values: tuple[float, ...], like: torch.Tensor) -> torch.Tensor:
    """Coefficients as a tensor of ``like``'s dtype and device (shape ``(len(values),)``)."""
    return torch.tensor(values, dtype=like.dtype, device=like.device)
