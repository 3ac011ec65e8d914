"""``odeint``: check the arguments, run the chosen integrator, return a :class:`Solution`."""
from __future__ import annotations

import time

import torch

from nodecourse.solvers import observers
from nodecourse.solvers import validate as v
from nodecourse.solvers.adaptive import ADAPTIVE_OPTIONS, integrate_adaptive
from nodecourse.solvers.fixed import FIXED_OPTIONS, integrate_fixed
from nodecourse.solvers.implicit import IMPLICIT_OPTIONS, integrate_implicit
from nodecourse.solvers.per_sample import integrate_per_sample
from nodecourse.solvers.registry import ADAPTIVE, FIXED
from nodecourse.solvers.result import Solution, SolverError, Status
from nodecourse.solvers.torchdiffeq_backend import TORCHDIFFEQ_ADAPTIVE_OPTIONS, integrate_torchdiffeq


def odeint(func, y0: torch.Tensor, t: torch.Tensor, *, method: str = "dopri5", rtol: float = 1e-7,
           atol: float = 1e-9, step_size=None, max_steps: int = 10_000, gradient: str = "backprop",
           throw: bool = True, backend: str = "nodecourse", per_sample: bool = False,
           options: dict | None = None) -> Solution:
    """Solve ``dy/dt = func(t, y)``, ``y(t[0]) = y0``, and report the solver's work.

    Args:
        func: ``func(t, y) -> dy/dt`` with ``t`` a 0-d tensor (shape ``(B,)`` when
            ``per_sample=True``) and ``y`` of ``y0``'s shape; a function or ``nn.Module``.
        y0: initial state, any shape ``S``, floating dtype; sets dtype and device.
        t: output times, shape ``(T,)``, strictly increasing or strictly decreasing
            (decreasing integrates backwards), on ``y0``'s device.
        method: a name in :data:`nodecourse.SOLVERS`.
        rtol, atol: tolerances of the adaptive and implicit methods (error per step
            ``<= atol + rtol * |y|`` in the RMS norm).
        step_size: largest step of the fixed-step methods (required there); optional
            for the implicit methods (fixed steps when given); not allowed for adaptive ones.
        max_steps: budget of attempted steps (accepted + rejected).
        gradient: ``"backprop"``: gradients flow through the solver's operations (memory
            grows with steps x stages x activations of func); ``"checkpoint"`` (explicit
            methods): keep only each step's input state and recompute the step in the
            backward pass (memory steps x state size, about one more forward of work).
            ``"adjoint"`` is not available in this version.
        throw: raise :class:`SolverError` when the solve fails; with False the
            ``Solution`` comes back with its status and NaN rows for times not reached.
        backend: ``"nodecourse"`` or ``"torchdiffeq"`` (same call, same ``Solution``).
        per_sample: adaptive methods only: each batch element (first dim of ``y0``)
            gets its own step sizes and its own stats.
        options: method-specific settings (``safety``, ``ifactor``, ``dfactor``,
            ``first_step``, ``max_step``; implicit: ``newton_tol``, ``max_newton_iters``).
            Unknown keys raise ``TypeError``.

    Returns:
        :class:`Solution` with ``ys`` of shape ``(T, *S)``, ``ts``, ``stats``, ``status``.
    """
    v.check_func(func)
    per_sample = v.check_flag("per_sample", per_sample)
    throw = v.check_flag("throw", throw)
    v.check_y0(y0, per_sample)
    ts = v.check_t(t, y0)
    rtol, atol = v.check_tolerances(rtol, atol)
    spec = v.check_method(method, step_size, per_sample)
    max_steps = v.check_max_steps(max_steps)
    v.check_backend(backend)
    v.check_gradient(gradient, spec, per_sample, backend)
    checkpoint = gradient == "checkpoint"
    step = float(step_size) if step_size is not None else None
    started = time.perf_counter()
    if checkpoint:
        func = recounter = RecomputeCounter(func)

    if backend == "torchdiffeq":
        if per_sample:
            raise ValueError("per_sample=True needs backend='nodecourse' (torchdiffeq steps the whole batch together)")
        opts = v.merge_options(options, TORCHDIFFEQ_ADAPTIVE_OPTIONS if spec.kind == ADAPTIVE else {}, method)
        outputs, stats, status, message = integrate_torchdiffeq(
            func, y0, t, spec, rtol=rtol, atol=atol, step_size=step, max_steps=max_steps, options=opts)
    elif spec.kind == FIXED:
        opts = v.merge_options(options, FIXED_OPTIONS, method)
        outputs, stats, status, message = integrate_fixed(
            func, y0, ts, spec.tableau, step_size=step, max_steps=max_steps, options=opts, checkpoint=checkpoint)
    elif spec.kind == ADAPTIVE:
        opts = v.merge_options(options, ADAPTIVE_OPTIONS, method)
        if per_sample:
            outputs, stats, status, message = integrate_per_sample(
                func, y0, ts, spec.tableau, rtol=rtol, atol=atol, max_steps=max_steps, options=opts)
        else:
            outputs, stats, status, message = integrate_adaptive(
                func, y0, ts, spec.tableau, rtol=rtol, atol=atol, max_steps=max_steps, options=opts,
                checkpoint=checkpoint)
    else:
        opts = v.merge_options(options, IMPLICIT_OPTIONS, method)
        outputs, stats, status, message = integrate_implicit(
            func, y0, ts, method, rtol=rtol, atol=atol, step_size=step, max_steps=max_steps, options=opts)

    if checkpoint:
        recounter.forward_done(stats)
    ys = outputs if isinstance(outputs, torch.Tensor) else _stack(outputs, len(ts), y0)
    solution = Solution(ys=ys, ts=t, stats=stats, status=status, method=method, rtol=rtol, atol=atol,
                        message=message)
    if observers.listening():
        observers.notify({"method": method, "rtol": rtol, "atol": atol, "step_size": step, "backend": backend,
                          "per_sample": per_sample, "shape": tuple(y0.shape), "n_times": len(ts),
                          "stats": stats, "status": status, "seconds": time.perf_counter() - started})
    if status is not Status.SUCCESS and throw:
        raise SolverError(status, f"method={method!r}: {message}", solution)
    return solution


def _stack(outputs: list[torch.Tensor], n_times: int, y0: torch.Tensor) -> torch.Tensor:
    """Stack the states reached; rows for output times not reached are NaN."""
    missing = n_times - len(outputs)
    if missing > 0:
        outputs = outputs + [torch.full_like(y0, float("nan")).detach()] * missing
    return torch.stack(outputs, dim=0)


class RecomputeCounter:
    """Wraps ``func`` under ``gradient="checkpoint"``: calls after the forward solve are the
    backward pass recomputing steps, counted into ``stats["nfe_backward"]``."""

    def __init__(self, func):
        self.func = func
        self.stats = None

    def forward_done(self, stats: dict) -> None:
        stats["nfe_backward"] = 0
        self.stats = stats

    def __call__(self, t, y):
        if self.stats is not None:
            self.stats["nfe_backward"] += 1
        return self.func(t, y)
