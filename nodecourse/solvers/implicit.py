"""Implicit one-step methods for stiff problems: backward Euler and the trapezoidal rule.

Both are theta methods: ``y1 = y0 + h * ((1 - theta) f(t0, y0) + theta f(t1, y1))``
with ``theta = 1`` (implicit_euler, order 1, L-stable) or ``theta = 1/2``
(trapezoid, order 2, A-stable). ``y1`` solves a nonlinear system, by Newton's
method with the Jacobian ``df/dy`` from autograd, factorised once per step
(simplified Newton), and reused across steps until Newton needs more than
three iterations or fails. Work is reported: ``n_newton_iters``, ``n_jacobians``,
``n_newton_failures``.

Step size: fixed when ``step_size`` is given (a step whose Newton iteration
fails is halved and retried), otherwise adaptive from a local error estimate
that costs no extra evaluations:

- implicit_euler: ``h/2 * (f1 - f0)``, the gap to the trapezoidal rule;
- trapezoid: ``h^3/12 * y'''``, with ``y'''`` from the divided difference of
  the last three slopes (the backward-Euler estimate on the first step).

The Jacobian is dense, ``(n, n)`` with ``n = y0.numel()``: meant for small
stiff systems (a few thousand unknowns at most). Gradients flow through the
Newton iterations (the Jacobian itself is treated as a constant), so at
convergence they approximate the implicit-function gradient.
"""
from __future__ import annotations

import math

import torch

from nodecourse.solvers.adaptive import underflows
from nodecourse.solvers.result import Status
from nodecourse.solvers.rk import checked_slope, initial_step, step_factor, time_tensor

IMPLICIT_OPTIONS = {
    "safety": 0.9,
    "ifactor": 5.0,
    "dfactor": 0.2,
    "first_step": None,
    "max_step": math.inf,
    "newton_tol": 1e-2,  # Newton stops when the scaled RMS update is below newton_tol (relative to rtol/atol)
    "max_newton_iters": 8,
    "max_nonfinite_retries": 8,
}

THETA = {"implicit_euler": 1.0, "trapezoid": 0.5}
ORDER = {"implicit_euler": 1, "trapezoid": 2}


def jacobian(func, t: float, y: torch.Tensor) -> torch.Tensor:
    """``df/dy`` at ``(t, y)`` as a dense ``(n, n)`` matrix, ``n = y.numel()`` (no graph kept)."""
    y_flat = y.detach().reshape(-1)
    tt = time_tensor(t, y)

    def flat_f(z):
        return func(tt, z.view_as(y)).reshape(-1)

    try:
        jac = torch.autograd.functional.jacobian(flat_f, y_flat, vectorize=True)
    except RuntimeError:  # some ops have no batching rule; fall back to one backward per row
        jac = torch.autograd.functional.jacobian(flat_f, y_flat, vectorize=False)
    return jac.detach()


class NewtonResult:
    __slots__ = ("y1", "f1", "iters", "converged")

    def __init__(self, y1, f1, iters, converged):
        self.y1, self.f1, self.iters, self.converged = y1, f1, iters, converged


def newton_solve(func, t1: float, y0, f0, h: float, theta: float, jac, *, rtol, atol, tol, max_iters):
    """Solve ``y1 - y0 - h((1-theta) f0 + theta f(t1, y1)) = 0`` by simplified Newton.

    ``jac`` is ``df/dy`` (shape ``(n, n)``); the iteration matrix ``I - h theta J``
    is factorised once per call. Returns a :class:`NewtonResult` (``f1 = func(t1, y1)``).
    """
    n = y0.numel()
    eye = torch.eye(n, dtype=jac.dtype, device=jac.device)
    lu, piv = torch.linalg.lu_factor(eye - (h * theta) * jac)
    rhs_const = torch.add(y0, f0, alpha=h * (1.0 - theta)) if theta != 1.0 else y0
    y1 = torch.add(y0, f0, alpha=h)  # explicit Euler predictor
    # Newton's stopping scale: a fraction of the error tolerance, but never below what the dtype
    # can resolve (float32 cannot move y by less than ~1e-7 |y|; asking for that would never stop).
    resolution = 8 * torch.finfo(y0.dtype).eps
    scale = y0.detach().abs() * rtol + atol
    floor = y0.detach().abs() * (resolution / tol)
    scale = torch.maximum(scale, floor)
    tt = time_tensor(t1, y0)
    for it in range(1, max_iters + 1):
        f1 = func(tt, y1)
        residual = y1 - rhs_const - (h * theta) * f1
        # The residual carries the autograd graph; the factorised matrix is a constant. Backprop
        # through the iterations then converges with them to the implicit-function gradient
        # -(I - h theta df/dy)^-1 d(residual) (exactly so when J is fresh and Newton converged).
        delta = torch.linalg.lu_solve(lu, piv, residual.reshape(-1, 1)).view_as(y0)
        y1 = y1 - delta
        size = float(torch.linalg.vector_norm(delta.detach() / scale) / math.sqrt(max(n, 1)))
        if not math.isfinite(size):
            return NewtonResult(y1, f1, it, False)
        if size <= tol:
            return NewtonResult(y1, func(tt, y1), it, True)
    return NewtonResult(y1, f1, max_iters, False)


def integrate_implicit(func, y0: torch.Tensor, ts: list[float], method: str, *, rtol: float, atol: float,
                       step_size, max_steps: int, options: dict):
    """Integrate through ``ts`` with backward Euler or the trapezoidal rule.

    Returns ``(outputs, stats, status, message)`` as :func:`integrate_adaptive` does.
    Output times are hit exactly (steps are clipped to them).
    """
    theta, order = THETA[method], ORDER[method]
    adaptive = step_size is None
    direction = 1.0 if ts[-1] >= ts[0] else -1.0
    t, y = ts[0], y0
    f = checked_slope(func(time_tensor(t, y0), y0), y0)
    c = {"nfe": 1, "n_acc": 0, "n_rej": 0, "newton": 0, "jac": 0, "newton_fail": 0}
    outputs = [y0]

    def stats():
        return {"nfe": c["nfe"], "n_steps": c["n_acc"] + c["n_rej"], "n_accepted": c["n_acc"],
                "n_rejected": c["n_rej"], "n_newton_iters": c["newton"], "n_jacobians": c["jac"],
                "n_newton_failures": c["newton_fail"]}

    if len(ts) == 1:
        return outputs, stats(), Status.SUCCESS, ""
    if not bool(torch.isfinite(f).all()):
        return outputs, stats(), Status.NON_FINITE, f"func(t0, y0) at t0={t} is not finite"
    if not adaptive:
        h = direction * float(step_size)
    elif options["first_step"] is not None:
        h = direction * float(options["first_step"])
    else:
        h, used = initial_step(func, t, y0, f, order, rtol, atol, direction)
        c["nfe"] += used
    h = direction * min(abs(h), options["max_step"])
    f_prev, h_prev = None, None  # slope and size of the previous accepted step (trapezoid estimate)
    nonfinite_streak = 0
    jac = None  # df/dy, kept across steps while Newton converges quickly (refreshed when it slows)
    for next_i in range(1, len(ts)):
        target = ts[next_i]
        if not adaptive:  # equal steps of at most step_size that land on the output time
            n_sub = max(1, math.ceil(abs(target - t) / float(step_size) - 1e-9))
            h_fixed = (target - t) / n_sub
            h = h_fixed
        while t != target:
            if c["n_acc"] + c["n_rej"] >= max_steps:
                return outputs, stats(), Status.MAX_STEPS, (
                    f"max_steps={max_steps} steps used, reached t={t:.6g} of [{ts[0]:.6g}, {ts[-1]:.6g}]")
            remaining = target - t
            last = abs(h) >= abs(remaining) * (1 - 1e-10)  # see adaptive.py
            h_use = remaining if last else h
            if underflows(t, h_use):
                return outputs, stats(), Status.STEP_UNDERFLOW, (
                    f"step size {abs(h_use):.3g} underflowed at t={t:.6g} after {c['newton_fail']} Newton "
                    f"failures (options newton_tol={options['newton_tol']:g}, "
                    f"max_newton_iters={options['max_newton_iters']}; Newton's tolerance scales with rtol/atol)")
            t_new = target if last else t + h_use
            if jac is None:
                jac = jacobian(func, t, y)
                c["jac"] += 1
                c["nfe"] += 1
            res = newton_solve(func, t_new, y, f, h_use, theta, jac, rtol=rtol, atol=atol,
                               tol=options["newton_tol"], max_iters=options["max_newton_iters"])
            c["newton"] += res.iters
            c["nfe"] += res.iters + (1 if res.converged else 0)
            if not res.converged or res.iters > 3:
                jac = None  # slow or failed Newton: the Jacobian is stale, refresh it next attempt
            if not res.converged:
                c["n_rej"] += 1
                c["newton_fail"] += 1
                finite = bool(torch.isfinite(res.y1).all())
                nonfinite_streak = nonfinite_streak + 1 if not finite else 0
                if nonfinite_streak > options["max_nonfinite_retries"]:
                    return outputs, stats(), Status.NON_FINITE, (
                        f"func returned NaN/inf near t={t:.6g} even with |h|={abs(h_use):.3g}")
                h = h_use * 0.25  # Newton failed: a smaller step makes the predictor better
                continue
            nonfinite_streak = 0
            accept, ratio = True, 0.0
            if adaptive:
                err = local_error(method, f, res.f1, h_use, f_prev, h_prev)
                scale = torch.maximum(y.detach().abs(), res.y1.detach().abs()) * rtol + atol
                ratio = float(torch.linalg.vector_norm(err / scale) / math.sqrt(max(err.numel(), 1)))
                accept = math.isfinite(ratio) and ratio <= 1.0
            if accept:
                c["n_acc"] += 1
                f_prev, h_prev = f, h_use
                t, y, f = t_new, res.y1, res.f1
            else:
                c["n_rej"] += 1
            if adaptive:
                factor = step_factor(ratio, order + 1, options["safety"], options["ifactor"],
                                     options["dfactor"]) if math.isfinite(ratio) else options["dfactor"]
                h = direction * min(abs(h_use * factor), options["max_step"])
            elif accept:
                h = h_fixed
        outputs.append(y)
    return outputs, stats(), Status.SUCCESS, ""


def local_error(method: str, f0, f1, h: float, f_prev, h_prev) -> torch.Tensor:
    """Local error estimate of a candidate step (no extra evaluations); shape of the state."""
    f0, f1 = f0.detach(), f1.detach()
    if method == "implicit_euler" or f_prev is None:
        return (f1 - f0) * (0.5 * h)
    # y''' ~ 2 * f[t_prev, t0, t1] (second divided difference of the slopes)
    dd = ((f1 - f0) / h - (f0 - f_prev.detach()) / h_prev) / (h + h_prev)
    return dd * (abs(h) ** 3 / 6.0)
