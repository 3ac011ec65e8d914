"""The pieces shared by the Runge-Kutta integrators: the shape-checked ``func``,
one explicit step and the dense-output polynomial. (Step control lives in
:mod:`nodecourse.solvers.control`.)

Times and step sizes are Python floats (float64) on the host: the controller
needs one scalar per step anyway, and keeping ``t`` and ``h`` off the device
saves a tensor operation for every stage. ``func`` still receives ``t`` as a
0-d tensor of the state's dtype on the state's device, as in torchdiffeq.
"""
from __future__ import annotations

from typing import Callable

import torch

from nodecourse.solvers.tableaux import ButcherTableau

Func = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def time_tensor(value: float, like: torch.Tensor) -> torch.Tensor:
    """``value`` as a 0-d tensor with ``like``'s dtype and device (what ``func`` receives as ``t``)."""
    return torch.scalar_tensor(value, dtype=like.dtype, device=like.device)


def _shape_error(f, shape, dtype, device, per_sample: bool) -> Exception:
    if not isinstance(f, torch.Tensor):
        return TypeError(f"func(t, y) returned {type(f).__name__}; it must return a tensor shaped like y "
                         f"{tuple(shape)}")
    if f.shape != shape:
        hint = (" In per_sample mode t has shape (B,): broadcast it, e.g. t[:, None] for y of shape (B, D)."
                if per_sample else "")
        return ValueError(f"func(t, y) returned shape {tuple(f.shape)} for y of shape {tuple(shape)}; "
                          f"dy/dt must have y's shape.{hint}")
    return ValueError(f"func(t, y) returned dtype {f.dtype} on {f.device} for y of dtype {dtype} on "
                      f"{device}; return dy/dt in y's dtype and device (e.g. move func: func.to(y))")


def checked_slope(f, y: torch.Tensor, per_sample: bool = False) -> torch.Tensor:
    """Return ``f`` (func's output) after checking it is a tensor with ``y``'s shape, dtype and device."""
    if not isinstance(f, torch.Tensor) or f.shape != y.shape or f.dtype != y.dtype or f.device != y.device:
        raise _shape_error(f, y.shape, y.dtype, y.device, per_sample)
    return f


class CheckedFunc:
    """``func`` whose every output is checked against the state's shape and dtype (a tuple and
    an attribute compare per call; the device is checked on the first call), with the same
    named error as the first evaluation. Counts calls in :attr:`nfe`."""

    __slots__ = ("func", "shape", "dtype", "device", "per_sample", "nfe")

    def __init__(self, func, y0: torch.Tensor, per_sample: bool = False):
        self.func = func
        self.shape, self.dtype, self.device = y0.shape, y0.dtype, y0.device
        self.per_sample = per_sample
        self.nfe = 0

    def __call__(self, t, y):
        f = self.func(t, y)
        self.nfe += 1
        if type(f) is not torch.Tensor and not isinstance(f, torch.Tensor) or f.shape != self.shape \
                or f.dtype != self.dtype or (self.nfe == 1 and f.device != self.device):
            raise _shape_error(f, self.shape, self.dtype, self.device, self.per_sample)
        return f


def nonzero_rows(tab: ButcherTableau) -> list[list[tuple[int, float]]]:
    """For each stage i >= 1, the pairs ``(j, a_ij)`` with ``a_ij != 0`` (zeros cost an op otherwise)."""
    return [[(j, a) for j, a in enumerate(row) if a != 0.0] for row in tab.explicit_rows]


def combine(base: torch.Tensor | None, ks: list[torch.Tensor], coeffs: list[tuple[int, float]], h: float):
    """``base + h * sum_j coeff_j * ks[j]`` as a chain of fused ``add(alpha=...)`` ops.

    ``base=None`` means zero. Shapes: every tensor has the state's shape.
    """
    out = base
    for j, cj in coeffs:
        if out is None:
            out = ks[j] * (h * cj)
        else:
            out = torch.add(out, ks[j], alpha=h * cj)
    return out


class RKPlan:
    """A tableau turned into the lists the inner loop needs (built once per solve)."""

    def __init__(self, tab: ButcherTableau):
        self.tab = tab
        self.rows = nonzero_rows(tab)
        self.c = list(tab.c)
        self.fsal = tab.fsal
        self.b = [(j, w) for j, w in enumerate(tab.b) if w != 0.0]
        self.err = [(j, w) for j, w in enumerate(tab.b_err) if w != 0.0] if tab.adaptive else None
        self.mid = [(j, w) for j, w in enumerate(tab.mid) if w != 0.0] if tab.mid is not None else None
        # Evaluations per step beyond the reused first stage.
        self.new_evals = tab.stages - 1

    def step(self, func: Func, t0: float, h: float, y0: torch.Tensor, f0: torch.Tensor):
        """One explicit RK step from ``(t0, y0)`` with slope ``f0 = func(t0, y0)``.

        Returns ``(y1, ks)``: the new state (shape of ``y0``) and the stage slopes
        (``ks[0] is f0``; for FSAL tableaux ``ks[-1] = func(t0 + h, y1)``).
        """
        ks = [f0]
        yi = y0
        t1 = t0 + h
        for i, row in enumerate(self.rows, start=1):
            yi = combine(y0, ks, row, h)
            ci = self.c[i]
            ti = t1 if ci == 1.0 else t0 + ci * h
            ks.append(func(time_tensor(ti, y0), yi))
        y1 = yi if self.fsal else combine(y0, ks, self.b, h)
        return y1, ks

    def step_from(self, func: Func, t0: float, h: float, y0: torch.Tensor) -> torch.Tensor:
        """A whole step including the first slope (fixed-step methods); returns ``y1``."""
        return self.step(func, t0, h, y0, func(time_tensor(t0, y0), y0))[0]

    def error(self, ks: list[torch.Tensor], h: float) -> torch.Tensor:
        """Local error estimate ``h * sum_j (b_j - b_low_j) k_j`` (shape of the state, no graph:
        it only steers the step size)."""
        with torch.no_grad():
            return combine(None, ks, self.err, h)


class DenseOutput:
    """Interpolant on one accepted step, evaluated at ``x = (t - t0) / h`` in ``[0, 1]``.

    With the tableau's ``mid`` weights (dopri5): the quartic through ``y0, y1``,
    the slopes at both ends and ``y(t0 + h/2)`` (as torchdiffeq does). Without
    (bosh3): the cubic Hermite through ``y0, y1`` and the end slopes, which is
    third order, where torchdiffeq's quartic with bosh3's crude midpoint is not.
    """

    def __init__(self, plan: RKPlan, y0, y1, ks, h: float):
        f0, f1 = ks[0], ks[-1]
        self.e = y0
        self.d = f0 * h
        if plan.mid is None:  # cubic Hermite through (y0, f0) and (y1, f1): third order
            self.c = torch.add(3 * (y1 - y0), torch.add(f1, f0, alpha=2.0), alpha=-h)
            self.b = torch.add(2 * (y0 - y1), f0 + f1, alpha=h)
            self.a = None
            return
        y_mid = combine(y0, ks, plan.mid, h)
        self.c = torch.add(-11 * y0 - 5 * y1 + 16 * y_mid, torch.add(f1, f0, alpha=-4.0), alpha=h)
        self.b = torch.add(18 * y0 + 14 * y1 - 32 * y_mid, torch.add(f0 * 5, f1, alpha=-3.0), alpha=h)
        self.a = torch.add(-8 * (y1 + y0) + 16 * y_mid, f1 - f0, alpha=2 * h)

    def __call__(self, x: float) -> torch.Tensor:
        out = torch.add(self.e, self.d, alpha=x)
        out = torch.add(out, self.c, alpha=x * x)
        out = torch.add(out, self.b, alpha=x ** 3)
        return out if self.a is None else torch.add(out, self.a, alpha=x ** 4)
