"""Fixed-step explicit Runge-Kutta integration (euler, midpoint, rk4).

Each output interval ``[t_i, t_{i+1}]`` is split into ``ceil(|dt| / step_size)``
equal steps, so every output time is hit exactly (no interpolation error on
top of the method's own error, which keeps the measured order clean).
"""
from __future__ import annotations

import math

import torch

from nodecourse.solvers.result import Status
from nodecourse.solvers.rk import RKPlan, checked_slope
from nodecourse.solvers.tableaux import ButcherTableau

FIXED_OPTIONS: dict = {}


def steps_per_interval(ts: list[float], step_size: float) -> list[int]:
    """Number of equal steps for each output interval (at least one)."""
    return [max(1, math.ceil(abs(b - a) / step_size - 1e-9)) for a, b in zip(ts[:-1], ts[1:])]


def integrate_fixed(func, y0: torch.Tensor, ts: list[float], tab: ButcherTableau, *, step_size: float,
                    max_steps: int, options: dict, checkpoint: bool = False):
    """Integrate through ``ts`` with a fixed step of at most ``step_size``.

    Returns ``(outputs, stats, status, message)`` as :func:`integrate_adaptive` does.
    """
    plan = RKPlan(tab, checkpoint=checkpoint)
    outputs = [y0]
    nfe = n_steps = 0
    stats = lambda: {"nfe": nfe, "n_steps": n_steps, "n_accepted": n_steps, "n_rejected": 0}
    y = y0
    for (ta, tb), n in zip(zip(ts[:-1], ts[1:]), steps_per_interval(ts, step_size)):
        h = (tb - ta) / n
        for m in range(n):
            if n_steps >= max_steps:
                return outputs, stats(), Status.MAX_STEPS, (
                    f"max_steps={max_steps} steps of size {abs(h):.3g} used, reached t={ta + m * h:.6g}; "
                    f"the interval needs {sum(steps_per_interval(ts, step_size))} steps")
            # The first step checks func's output shape; later steps skip the wrapper.
            y = plan.step_from(func if n_steps else _ShapeChecked(func), ta + m * h, h, y)
            nfe += tab.stages
            n_steps += 1
        # One host sync per output time (not per step) to catch NaN/inf early.
        if not bool(torch.isfinite(y).all()):
            return outputs, stats(), Status.NON_FINITE, f"the state became NaN/inf between t={ta:.6g} and t={tb:.6g}"
        outputs.append(y)
    return outputs, stats(), Status.SUCCESS, ""


class _ShapeChecked:
    """``func`` with its output checked against the state's shape, dtype and device."""

    def __init__(self, func):
        self.func = func

    def __call__(self, t, y):
        return checked_slope(self.func(t, y), y)
