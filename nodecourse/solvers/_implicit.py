"""Implicit one-step methods for stiff problems: backward Euler and the trapezoidal rule.

Both are theta methods: ``y1 = y0 + h * ((1 - theta) f(t0, y0) + theta f(t1, y1))``
with ``theta = 1`` (implicit_euler, order 1, L-stable) or ``theta = 1/2``
(trapezoid, order 2, A-stable), written as two-stage tableaux (explicit first
stage, implicit second; see :mod:`nodecourse.solvers._tableaux`), and ``theta``
is read from the tableau (:func:`theta_of`), so any theta can be plugged in. ``y1`` solves a nonlinear system,
by Newton's method with the Jacobian ``df/dy`` from autograd, factorised once per step
(simplified Newton), and reused across steps until Newton needs more than
three iterations or fails. Work is reported: ``n_newton_iters``, ``n_jacobians``,
``n_newton_failures``.

Step size: fixed when ``step_size`` is given (a step whose Newton iteration
fails is shrunk to a quarter and retried), otherwise adaptive, steered by the
shared :class:`~nodecourse.solvers._control.StepControl`, from a local error
estimate that costs no extra evaluations:

- implicit_euler: ``h/2 * (f1 - f0)``, the gap to the trapezoidal rule (its
  tableau's ``b - b_low``);
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

from nodecourse.solvers._control import CONTROL_OPTIONS, StepControl
from nodecourse.solvers._fixed import equal_steps
from nodecourse.solvers._record import OFF, Recorder
from nodecourse.solvers._result import Status
from nodecourse.solvers._rk import time_tensor
from nodecourse.solvers._tableaux import ButcherTableau

IMPLICIT_OPTIONS = {
    **CONTROL_OPTIONS,
    "ifactor": 5.0,
    "newton_tol": 1e-2,  # Newton stops when the scaled RMS update is below newton_tol (relative to rtol/atol)
    "max_newton_iters": 8,
}


def theta_of(tab: ButcherTableau) -> float:
    """``theta`` of a two-stage theta-method tableau (explicit first stage ``f(t0, y0)``, implicit
    second stage at ``t0 + h``, ``b`` equal to the last row): the only implicit form this
    integrator runs. Raises ``ValueError`` naming what differs."""
    A = tab.matrix
    ok = (
        tab.stages == 2
        and tuple(tab.c) == (0.0, 1.0)
        and A[0][0] == 0.0
        and tuple(tab.b) == tuple(A[1])
        and A[1][1] != 0.0
    )
    if not ok:
        raise ValueError(
            f"tableau {tab.name!r}: the implicit integrator runs two-stage theta methods "
            f"c=(0, 1), a=((0,), (1 - theta, theta)), b=(1 - theta, theta); got c={tab.c}, "
            f"a={tab.a}, b={tab.b}"
        )
    return A[1][1]


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


def integrate_implicit(
    func,
    y0: torch.Tensor,
    ts: list[float],
    spec,
    *,
    rtol: float,
    atol: float,
    step_size,
    max_steps: int,
    options: dict,
    recorder: Recorder = OFF,
):
    """Integrate through ``ts`` with a theta method (``spec.tableau``, see :func:`theta_of`).

    ``func`` is the shape-checked, counting :class:`~nodecourse.solvers._rk.CheckedFunc`.
    Returns ``(outputs, stats, status, message)`` as :func:`integrate_adaptive` does.
    Output times are hit exactly (steps are clipped to them).
    """
    tab = spec.tableau
    theta = theta_of(tab)
    adaptive = step_size is None
    ctl = StepControl(
        rtol=rtol,
        atol=atol,
        error_order=spec.error_order or tab.order + 1,
        options=options,
        t_start=ts[0],
        t_end=ts[-1],
        max_steps=max_steps,
    )
    err_weights = tab.b_err if (adaptive and spec.error_estimate == "embedded") else None
    t, y = ts[0], y0
    f = func(time_tensor(t, y0), y0)
    c = {"newton": 0, "jac": 0, "newton_fail": 0}
    outputs = [y0]

    def stats():
        return {
            "nfe": func.nfe,
            "n_steps": ctl.n_accepted + ctl.n_rejected,
            "n_accepted": ctl.n_accepted,
            "n_rejected": ctl.n_rejected,
            "n_newton_iters": c["newton"],
            "n_jacobians": c["jac"],
            "n_newton_failures": c["newton_fail"],
        }

    recording = recorder.enabled
    if recording:
        recorder.start(y0)
    if len(ts) == 1:
        return outputs, stats(), Status.SUCCESS, ""
    if not bool(torch.isfinite(f).all()):
        return outputs, stats(), Status.NON_FINITE, f"func(t0, y0) at t0={t} is not finite"
    if not adaptive:
        h = ctl.direction * float(step_size)
    else:
        h, _ = ctl.initial_step(func, t, y0, f)
    f_prev, h_prev = None, None  # slope and size of the previous accepted step (trapezoid estimate)
    jac = None  # df/dy, kept across steps while Newton converges quickly (refreshed when it slows)
    for next_i in range(1, len(ts)):
        target = ts[next_i]
        if not adaptive:  # equal steps of at most step_size that land on the output time
            n_sub = equal_steps(t, target, float(step_size))
            h_fixed = (target - t) / n_sub
            h = h_fixed
        while t != target:
            if ctl.out_of_steps():
                return (outputs, stats(), *ctl.max_steps_failure(t, func, y))
            h_use, t_new = ctl.propose(t, h, target)
            if ctl.underflows(t, h_use):
                status, message = ctl.underflow_failure(t, h_use)
                if status is Status.STEP_UNDERFLOW:
                    message += (
                        f" after {c['newton_fail']} Newton failures (options newton_tol="
                        f"{options['newton_tol']:g}, max_newton_iters={options['max_newton_iters']}; "
                        f"Newton's tolerance scales with rtol/atol)"
                    )
                return outputs, stats(), status, message
            if jac is None:
                jac = jacobian(func, t, y)
                c["jac"] += 1
            res = newton_solve(
                func,
                t_new,
                y,
                f,
                h_use,
                theta,
                jac,
                rtol=rtol,
                atol=atol,
                tol=options["newton_tol"],
                max_iters=options["max_newton_iters"],
            )
            c["newton"] += res.iters
            if not res.converged or res.iters > 3:
                jac = None  # slow or failed Newton: the Jacobian is stale, refresh it next attempt
            if not res.converged:
                c["newton_fail"] += 1
                if not bool(torch.isfinite(res.y1).all()):
                    what = (
                        "func returned NaN/inf"
                        if not bool(torch.isfinite(res.f1).all())
                        else "Newton's iterate became NaN/inf"
                    )
                    h = ctl.reject_nonfinite(t_new, h_use, what)
                    if recording:
                        recorder.step(t, h_use, math.inf, False, y, res.y1)
                    if ctl.gave_up():
                        return (outputs, stats(), *ctl.nonfinite_failure(h_use))
                else:
                    h = ctl.reject(h_use, 0.25)  # Newton failed: a smaller step makes the predictor better
                    if recording:
                        recorder.step(t, h_use, math.nan, False, y, res.y1)
                continue
            ratio = math.nan
            if adaptive:
                if err_weights is not None:
                    err = (res.f1.detach() * err_weights[1] + f.detach() * err_weights[0]) * h_use
                else:
                    err = local_error(f, res.f1, h_use, f_prev, h_prev)
                ratio = ctl.error_ratio(err, y, res.y1)
                if not math.isfinite(ratio):
                    ratio = math.inf  # values are finite (checked above): only the ratio overflowed
                accept, h = ctl.judge(ratio, h_use)
            else:
                accept, _ = ctl.judge(0.0, h_use)
                h = h_fixed
            if recording:
                recorder.step(t, h_use, ratio, accept, y, res.y1)
            if accept:
                f_prev, h_prev = f, h_use
                t, y, f = t_new, res.y1, res.f1
        outputs.append(y)
    return outputs, stats(), Status.SUCCESS, ""


def local_error(f0, f1, h: float, f_prev, h_prev) -> torch.Tensor:
    """The trapezoidal rule's local error estimate (``error_estimate="slope_history"``, no extra
    evaluations; shape of the state). On the first step, the gap to backward Euler."""
    f0, f1 = f0.detach(), f1.detach()
    if f_prev is None:
        return (f1 - f0) * (0.5 * h)
    # y''' ~ 2 * f[t_prev, t0, t1] (second divided difference of the slopes)
    dd = ((f1 - f0) / h - (f0 - f_prev.detach()) / h_prev) / (h + h_prev)
    return dd * (abs(h) ** 3 / 6.0)
