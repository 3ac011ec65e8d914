"""``backend="torchdiffeq"``: the same call run through torchdiffeq, its work counted.

NFE is counted by wrapping ``func``; accepted and rejected steps come from
torchdiffeq's step callbacks. Differences worth knowing when comparing: its
``rk4`` is the 3/8-rule variant, and its fixed-step methods step on one grid
from ``t[0]`` and interpolate linearly to the output times.
"""
from __future__ import annotations

import math

import torch

from nodecourse.solvers.registry import ADAPTIVE, IMPLICIT
from nodecourse.solvers.result import Status

# Our option names that torchdiffeq understands (same meaning).
TORCHDIFFEQ_ADAPTIVE_OPTIONS = {"safety": 0.9, "ifactor": 10.0, "dfactor": 0.2, "first_step": None,
                                "max_step": math.inf}


class CountingFunc:
    """``func`` wrapped to count evaluations."""

    def __init__(self, func):
        self.func = func
        self.nfe = 0
        self.n_accepted = 0
        self.n_rejected = 0
        self.n_fixed_steps = 0

    def __call__(self, t, y):
        self.nfe += 1
        return self.func(t, y)


class CountingFixedFunc(CountingFunc):
    """Also counts the steps of torchdiffeq's fixed-grid solvers (their one callback)."""

    def callback_step(self, t0, y0, dt):
        self.n_fixed_steps += 1


class CountingAdaptiveFunc(CountingFunc):
    """Also counts accepted and rejected steps of torchdiffeq's adaptive solvers."""

    def callback_accept_step(self, t0, y0, dt):
        self.n_accepted += 1

    def callback_reject_step(self, t0, y0, dt):
        self.n_rejected += 1


def _status_from_error(exc: Exception) -> Status | None:
    text = str(exc)
    if "max_num_steps" in text:
        return Status.MAX_STEPS
    if "underflow" in text:
        return Status.STEP_UNDERFLOW
    if "non-finite" in text or "nan" in text.lower() or "inf" in text.lower():
        return Status.NON_FINITE
    return None


def integrate_torchdiffeq(func, y0: torch.Tensor, t: torch.Tensor, spec, *, rtol: float, atol: float,
                          step_size, max_steps: int, options: dict):
    """Run torchdiffeq's ``odeint``; returns ``(outputs, stats, status, message)`` (outputs stacked or [y0])."""
    import torchdiffeq

    if spec.kind == IMPLICIT:
        raise ValueError(f"method={spec.name!r} has no torchdiffeq counterpart; use backend='nodecourse' "
                         f"or an explicit method (euler, midpoint, rk4, bosh3, dopri5)")
    counted = CountingAdaptiveFunc(func) if spec.kind == ADAPTIVE else CountingFixedFunc(func)
    if spec.kind == ADAPTIVE:
        td_options = {k: v for k, v in options.items() if v is not None and not (k == "max_step" and v == math.inf)}
        td_options["max_num_steps"] = max_steps
    else:
        td_options = {"step_size": step_size}
    try:
        ys = torchdiffeq.odeint(counted, y0, t, rtol=rtol, atol=atol, method=spec.name, options=td_options)
    except AssertionError as exc:
        status = _status_from_error(exc)
        if status is None:
            raise
        stats = _stats(counted, spec)
        return [y0], stats, status, f"torchdiffeq stopped: {exc}"
    stats = _stats(counted, spec)
    if not bool(torch.isfinite(ys).all()):
        return list(ys.unbind(0)), stats, Status.NON_FINITE, "torchdiffeq returned NaN/inf values"
    if spec.kind != ADAPTIVE and stats["n_steps"] > max_steps:
        return list(ys.unbind(0)), stats, Status.MAX_STEPS, (
            f"torchdiffeq took {stats['n_steps']} fixed steps, more than max_steps={max_steps}")
    return list(ys.unbind(0)), stats, Status.SUCCESS, ""


def _stats(counted: CountingFunc, spec) -> dict:
    if spec.kind == ADAPTIVE:
        acc, rej = counted.n_accepted, counted.n_rejected
    else:
        acc, rej = counted.n_fixed_steps, 0
    return {"nfe": counted.nfe, "n_steps": acc + rej, "n_accepted": acc, "n_rejected": rej}
