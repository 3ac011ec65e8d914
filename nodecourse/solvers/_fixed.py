"""Fixed-step explicit Runge-Kutta integration (euler, midpoint, rk4, rk38, or a user tableau).

Each output interval ``[t_i, t_{i+1}]`` is split into ``ceil(|dt| / step_size)``
equal steps, so every output time is hit exactly (no interpolation error on
top of the method's own error, which keeps the measured order clean).
"""

from __future__ import annotations

import math

import torch

from nodecourse.solvers._control import locate_nonfinite
from nodecourse.solvers._record import OFF, Recorder
from nodecourse.solvers._result import Status
from nodecourse.solvers._rk import CheckedFunc, RKPlan, plan_for, time_tensor
from nodecourse.solvers._tableaux import ButcherTableau

__all__ = ["equal_steps"]

FIXED_OPTIONS: dict = {}


#: Relative rounding of a time given in float32 (the coarsest dtype the solvers take).
TIME_ROUNDING = 2.0**-23


def equal_steps(t_start: float, t_end: float, step_size: float) -> int:
    """How many equal steps of at most ``step_size`` cover ``[t_start, t_end]`` (at least one).

    The one subdivision rule of the fixed-step paths (explicit, implicit, reversible). A span
    that exceeds a whole number of steps by no more than the rounding of its two ends in float32
    counts as that whole number: times ``k / 48`` given as float32 with ``step_size=1/48`` take
    one step per gap, not two (one of a few ulps). The step then exceeds ``step_size`` by at
    most that rounding, relative ~1e-7.
    """
    span = abs(t_end - t_start)
    slack = 4 * TIME_ROUNDING * max(abs(t_start), abs(t_end), step_size)
    return max(1, math.ceil((span - slack) / step_size))


def steps_per_interval(ts: list[float], step_size: float) -> list[int]:
    """Number of equal steps for each output interval (at least one)."""
    return [equal_steps(a, b, step_size) for a, b in zip(ts[:-1], ts[1:])]


def integrate_fixed(
    func: CheckedFunc,
    y0: torch.Tensor,
    ts: list[float],
    tab: ButcherTableau,
    *,
    step_size: float,
    max_steps: int,
    options: dict,
    recorder: Recorder = OFF,
):
    """Integrate through ``ts`` with a fixed step of at most ``step_size``.

    Returns ``(outputs, stats, status, message)`` as :func:`integrate_adaptive` does.
    """
    plan = plan_for(tab)
    outputs = [y0]
    n_steps = 0
    stats = lambda: {"nfe": func.nfe, "n_steps": n_steps, "n_accepted": n_steps, "n_rejected": 0}  # noqa: E731
    y = y0
    recording = recorder.enabled
    if recording:
        recorder.start(y0)
    for (ta, tb), n in zip(zip(ts[:-1], ts[1:]), steps_per_interval(ts, step_size)):
        h = (tb - ta) / n
        for m in range(n):
            if n_steps >= max_steps:
                return (
                    outputs,
                    stats(),
                    Status.MAX_STEPS,
                    (
                        f"max_steps={max_steps} steps of size {abs(h):.3g} used, reached t={ta + m * h:.6g}; "
                        f"the interval needs {sum(steps_per_interval(ts, step_size))} steps"
                    ),
                )
            y_prev = y
            y = plan.step_from(func, ta + m * h, h, y)
            n_steps += 1
            if recording:
                recorder.step(ta + m * h, h, math.nan, True, y_prev, y)
        # One host sync per output time (not per step) to catch NaN/inf early.
        if not bool(torch.isfinite(y).all()):
            done = stats()
            return outputs, done, Status.NON_FINITE, _locate(func, plan, outputs[-1], ta, h, n)
        outputs.append(y)
    return outputs, stats(), Status.SUCCESS, ""


def _locate(func, plan: RKPlan, y: torch.Tensor, ta: float, h: float, n: int) -> str:
    """Replay the failed interval without gradients, checking every stage: which time met NaN/inf."""
    with torch.no_grad():
        for m in range(n):
            t0 = ta + m * h
            y1, ks = plan.step(func, t0, h, y, func(time_tensor(t0, y), y))
            where = locate_nonfinite(ks, y1, t0, h, plan.c)
            if where is not None:
                return f"{where[1]} at t={where[0]!r} (step {m + 1} of the interval starting at t={ta:.6g})"
            y = y1
    return f"the state became NaN/inf between t={ta:.6g} and t={ta + n * h:.6g}"
