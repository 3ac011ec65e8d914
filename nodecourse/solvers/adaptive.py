"""Adaptive explicit Runge-Kutta integration (embedded pairs: bosh3, dopri5).

One step: the stages, the embedded error estimate, accept if the RMS error
ratio is <= 1, then the next step size from the controller. Outputs between
steps come from the dense-output polynomial, so output times never force
extra steps (as in torchdiffeq, which keeps NFE comparable).
"""
from __future__ import annotations

import math

import torch

from nodecourse.solvers.result import Status
from nodecourse.solvers.rk import (DenseOutput, RKPlan, checked_slope, error_ratio, initial_step, step_factor,
                                  time_tensor)
from nodecourse.solvers.tableaux import ButcherTableau

ADAPTIVE_OPTIONS = {
    "safety": 0.9,  # step-size safety factor
    "ifactor": 10.0,  # largest growth of h per step
    "dfactor": 0.2,  # largest shrink of h after a rejected step
    "first_step": None,  # initial |h|; None = Hairer's estimate (one extra evaluation)
    "max_step": math.inf,  # largest |h|
    "max_nonfinite_retries": 8,  # consecutive NaN/inf steps retried with a smaller h before giving up
}


def underflows(t: float, h: float) -> bool:
    """True when ``t + h`` cannot be told apart from ``t`` (with a margin of a few ulps)."""
    return abs(h) <= 4 * math.ulp(abs(t)) or abs(h) < 1e-300


def integrate_adaptive(func, y0: torch.Tensor, ts: list[float], tab: ButcherTableau, *, rtol: float,
                       atol: float, max_steps: int, options: dict, checkpoint: bool = False):
    """Integrate ``y' = func(t, y)`` through the times ``ts`` (strictly monotone).

    Args:
        y0: initial state, any shape ``S``.
        ts: output times as floats, ``ts[0]`` is the initial time.
        checkpoint: run each step under ``torch.utils.checkpoint`` (``gradient="checkpoint"``).
    Returns:
        ``(outputs, stats, status, message)``: a list of states (shape ``S``) for the
        output times reached, the work counters, a :class:`Status` and a sentence.
    """
    plan = RKPlan(tab, checkpoint=checkpoint)
    safety, ifactor, dfactor = options["safety"], options["ifactor"], options["dfactor"]
    max_step = options["max_step"]
    direction = 1.0 if ts[-1] >= ts[0] else -1.0
    t, t_end = ts[0], ts[-1]
    y = y0
    f = checked_slope(func(time_tensor(t, y0), y0), y0)
    nfe, n_acc, n_rej = 1, 0, 0
    outputs = [y0]
    n_out = len(ts)
    stats = lambda: {"nfe": nfe, "n_steps": n_acc + n_rej, "n_accepted": n_acc, "n_rejected": n_rej}
    if n_out == 1:
        return outputs, stats(), Status.SUCCESS, ""
    if not bool(torch.isfinite(f).all()):
        return outputs, stats(), Status.NON_FINITE, f"func(t0, y0) at t0={t} is not finite"

    if options["first_step"] is not None:
        h = direction * float(options["first_step"])
    else:
        h, used = initial_step(func, t, y0, f, tab.order - 1, rtol, atol, direction)
        nfe += used
    h = direction * min(abs(h), max_step)

    next_i = 1
    nonfinite_streak = 0
    while True:
        if n_acc + n_rej >= max_steps:
            return outputs, stats(), Status.MAX_STEPS, (
                f"max_steps={max_steps} steps used, reached t={t:.6g} of [{ts[0]:.6g}, {t_end:.6g}]")
        remaining = t_end - t
        # Within 1e-10 of the end counts as reaching it: steps of exactly (t1 - t0) / n must not
        # leave a remainder of a few ulps (a pointless, underflowing extra step).
        last = abs(h) >= abs(remaining) * (1 - 1e-10)
        h_use = remaining if last else h
        if underflows(t, h_use):
            return outputs, stats(), Status.STEP_UNDERFLOW, f"step size {abs(h_use):.3g} underflowed at t={t:.6g}"
        t_new = t_end if last else t + h_use

        y1, ks = plan.step(func, t, h_use, y, f)
        nfe += plan.new_evals
        err = plan.error(ks, h_use)
        ratio = float(error_ratio(err, y, y1, rtol, atol))  # the one host sync per step

        if not math.isfinite(ratio):
            n_rej += 1
            nonfinite_streak += 1
            if nonfinite_streak > options["max_nonfinite_retries"]:
                return outputs, stats(), Status.NON_FINITE, (
                    f"func returned NaN/inf near t={t:.6g} even after shrinking the step "
                    f"{nonfinite_streak} times to |h|={abs(h_use):.3g}")
            h = h_use * dfactor
            continue
        nonfinite_streak = 0

        if ratio <= 1.0:
            n_acc += 1
            if not plan.fsal:
                f_new = func(time_tensor(t_new, y1), y1)
                nfe += 1
                ks = ks + [f_new]
            dense = None
            while next_i < n_out and direction * (ts[next_i] - t_new) <= 0:
                if ts[next_i] == t_new:
                    outputs.append(y1)
                else:
                    if dense is None:
                        dense = DenseOutput(plan, y, y1, ks, h_use)
                    outputs.append(dense((ts[next_i] - t) / h_use))
                next_i += 1
            y, f, t = y1, ks[-1], t_new
            if next_i >= n_out:
                return outputs, stats(), Status.SUCCESS, ""
        else:
            n_rej += 1
        h = h_use * step_factor(ratio, tab.order, safety, ifactor, dfactor)
        h = direction * min(abs(h), max_step)
