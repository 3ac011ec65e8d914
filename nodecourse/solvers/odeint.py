"""``odeint``: check the arguments, run the chosen integrator, return a :class:`Solution`.

Structure: :func:`odeint` validates every argument, then dispatches on ``gradient``:
``"adjoint"``, ``"checkpoint"`` and gradients with respect to ``t`` go to
:mod:`nodecourse.solvers.adjoint` (which calls ``odeint`` back without a graph or with
``t`` detached); ``"backprop"`` becomes a :class:`SolveRequest`, and :func:`solve_request`
runs one integrator on it and returns the :class:`Solution` (never raising on a
failed solve; ``odeint`` does that when ``throw=True``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from nodecourse.solvers import observers
from nodecourse.solvers import validate as v
from nodecourse.solvers.adaptive import ADAPTIVE_OPTIONS, integrate_adaptive
from nodecourse.solvers.fixed import FIXED_OPTIONS, integrate_fixed
from nodecourse.solvers.implicit import IMPLICIT_OPTIONS, integrate_implicit
from nodecourse.solvers.per_sample import integrate_per_sample
from nodecourse.solvers.record import Recorder, StepEvent
from nodecourse.solvers.registry import ADAPTIVE, FIXED, SolverSpec
from nodecourse.solvers.result import Solution, SolverError, Status
from nodecourse.solvers.rk import CheckedFunc
from nodecourse.solvers.torchdiffeq_backend import TORCHDIFFEQ_ADAPTIVE_OPTIONS, integrate_torchdiffeq


def odeint(func, y0: torch.Tensor, t: torch.Tensor, *, method="dopri5", rtol: float = 1e-7,
           atol: float = 1e-9, step_size=None, max_steps: int = 10_000, gradient: str = "backprop",
           throw: bool = True, backend: str = "nodecourse", per_sample: bool = False,
           options: dict | None = None, adjoint_options: dict | None = None,
           record_steps: bool | str = False, on_step: Optional[Callable[[StepEvent], Any]] = None) -> Solution:
    """Solve ``dy/dt = func(t, y)``, ``y(t[0]) = y0``, and report the solver's work.

    Args:
        func: ``func(t, y) -> dy/dt`` with ``t`` a 0-d tensor (shape ``(B,)`` when
            ``per_sample=True``) and ``y`` of ``y0``'s shape; a function or ``nn.Module``.
        y0: initial state, any shape ``S``, floating dtype; sets dtype and device.
        t: output times, shape ``(T,)``, strictly increasing or strictly decreasing
            (decreasing integrates backwards), on ``y0``'s device.
        method: a name in :data:`nodecourse.SOLVERS`, or a :class:`nodecourse.solvers.ButcherTableau`
            (explicit without ``b_low``: fixed steps; with ``b_low``: adaptive; diagonally
            implicit two-stage theta methods: implicit).
        rtol, atol: tolerances of the adaptive and implicit methods (error per step
            ``<= atol + rtol * |y|`` in the RMS norm).
        step_size: largest step of the fixed-step methods (required there); optional
            for the implicit methods (fixed steps when given); not allowed for adaptive ones.
        max_steps: budget of attempted steps (accepted + rejected).
        gradient: ``"backprop"``: gradients flow through the solver's operations (memory
            grows with steps x stages x activations of func); ``"checkpoint"`` (every method,
            not per_sample, backend "nodecourse"): the forward solve runs without a graph and
            keeps the state at the start of each accepted step (the step record); the backward
            pass replays each accepted step with autograd, last to first
            (:func:`nodecourse.solvers.adjoint.solve_checkpoint`; memory steps x state size,
            one more forward of work counted in ``stats["nfe_backward"]``; the exact gradient
            of the discrete solve).
            ``"adjoint"``: the continuous adjoint (:mod:`nodecourse.solvers.adjoint`): no graph is
            kept, the gradient comes from solving the augmented system backwards in time
            (constant memory in steps; ``stats`` gains ``nfe_backward`` and ``backward_status``).
            ``t`` may require grad in every mode (gradients with respect to the output times).
        throw: raise :class:`SolverError` when the solve fails; with False the
            ``Solution`` comes back with its status and NaN rows for times not reached.
        backend: ``"nodecourse"`` or ``"torchdiffeq"`` (same call, same ``Solution``).
        per_sample: adaptive methods only: each batch element (first dim of ``y0``)
            gets its own step sizes and its own stats.
        options: method-specific settings: adaptive and implicit methods take ``safety`` in
            (0, 1], ``ifactor`` >= 1, ``dfactor`` in (0, 1), ``first_step`` > 0, ``max_step`` > 0,
            ``max_nonfinite_retries`` >= 1; implicit ones add ``newton_tol`` > 0 and
            ``max_newton_iters`` >= 1. Unknown keys raise ``TypeError``, values out of range
            ``ValueError`` (naming the option, the value and the range).
        adjoint_options: ``gradient="adjoint"`` only: the backward solve's ``method``, ``rtol``,
            ``atol``, ``step_size``, ``max_steps``, ``options`` (default: the forward ones) and
            ``params`` (extra tensors to differentiate).
        record_steps: ``True``: keep every attempted step's start time, size, error ratio and
            accepted flag in ``Solution.steps`` (a :class:`~nodecourse.solvers.record.StepRecord`);
            ``"states"``: also the state at every accepted step boundary (not in per-sample mode).
        on_step: called with a :class:`~nodecourse.solvers.record.StepEvent` after every
            attempted step (live plots, logging; it must not modify the tensors).

    Returns:
        :class:`Solution` with ``ys`` of shape ``(T, *S)``, ``ts``, ``stats``, ``status``
        (``steps`` with ``record_steps``; ``status_per_sample`` with ``per_sample=True``).

    Raises:
        TypeError / ValueError: a bad argument (the message names it, its value and the fix),
            including half-precision states and tolerances below what the dtype resolves.
        SolverError: the solve failed and ``throw=True``.
    """
    v.check_func(func)
    per_sample = v.check_flag("per_sample", per_sample)
    throw = v.check_flag("throw", throw)
    v.check_y0(y0, per_sample)
    ts = v.check_t(t, y0)
    rtol, atol = v.check_tolerances(rtol, atol)
    spec = v.check_method(method, step_size, per_sample)
    v.check_precision(y0, rtol, atol, spec, step_size)
    record_steps = v.check_record(record_steps, on_step, per_sample, gradient)
    max_steps = v.check_max_steps(max_steps)
    v.check_backend(backend, per_sample, spec)
    v.check_gradient(gradient, spec, per_sample, backend)
    if adjoint_options is not None and gradient != "adjoint":
        raise ValueError(f"adjoint_options are for gradient='adjoint', got gradient={gradient!r}; drop them")
    if gradient in ("adjoint", "checkpoint") or t.requires_grad:  # handled in nodecourse.solvers.adjoint
        from nodecourse.solvers import adjoint
        settings = dict(method=method, rtol=rtol, atol=atol, step_size=step_size, max_steps=max_steps,
                        throw=throw, backend=backend, per_sample=per_sample, options=options)
        if gradient == "adjoint":
            return adjoint.solve_adjoint(func, y0, t, adjoint_options=adjoint_options, **settings)
        if gradient == "checkpoint" and not t.requires_grad:
            return adjoint.solve_checkpoint(func, y0, t, on_step=on_step, **settings)
        return adjoint.attach_time_gradients(
            lambda y_in, t_in: odeint(func, y_in, t_in, gradient=gradient, record_steps=record_steps,
                                      on_step=on_step, **settings), func, y0, t)
    opts = v.merge_options(options, _option_defaults(spec, backend), spec.name)
    request = SolveRequest(func=func, y0=y0, t=t, ts=ts, spec=spec, rtol=rtol, atol=atol,
                           step_size=float(step_size) if step_size is not None else None, max_steps=max_steps,
                           backend=backend, per_sample=per_sample, options=opts,
                           record_steps=record_steps, on_step=on_step)
    solution = solve_request(request)
    if solution.status is not Status.SUCCESS and throw:
        raise SolverError(solution.status, f"method={spec.name!r}: {solution.message}", solution)
    return solution


@dataclass
class SolveRequest:
    """A validated ``odeint`` call: everything an integrator needs (``ts``: ``t`` as floats,
    ``options``: merged with the method's defaults and range-checked)."""

    func: Callable
    y0: torch.Tensor
    t: torch.Tensor
    ts: list[float]
    spec: SolverSpec
    rtol: float
    atol: float
    step_size: Optional[float]
    max_steps: int
    backend: str
    per_sample: bool
    options: dict
    record_steps: bool | str = False
    on_step: Optional[Callable[[StepEvent], Any]] = None


def _option_defaults(spec: SolverSpec, backend: str) -> dict:
    if backend == "torchdiffeq":
        return TORCHDIFFEQ_ADAPTIVE_OPTIONS if spec.kind == ADAPTIVE else {}
    return {FIXED: FIXED_OPTIONS, ADAPTIVE: ADAPTIVE_OPTIONS}.get(spec.kind, IMPLICIT_OPTIONS)


def solve_request(req: SolveRequest) -> Solution:
    """Run the integrator ``req`` asks for, with ``gradient="backprop"`` (the other modes wrap
    this path in :mod:`nodecourse.solvers.adjoint`); never raises on a failed solve (the status
    says it)."""
    spec, y0, ts = req.spec, req.y0, req.ts
    started = time.perf_counter()
    func = req.func
    recorder = Recorder(req.record_steps, req.on_step, per_sample=req.per_sample)
    status_per_sample = None

    if req.backend == "torchdiffeq":
        outputs, stats, status, message = integrate_torchdiffeq(
            func, y0, req.t, spec, rtol=req.rtol, atol=req.atol, step_size=req.step_size,
            max_steps=req.max_steps, options=req.options, recorder=recorder)
    else:
        checked = CheckedFunc(func, y0, per_sample=req.per_sample)
        common = dict(max_steps=req.max_steps, options=req.options, recorder=recorder)
        if spec.kind == FIXED:
            outputs, stats, status, message = integrate_fixed(
                checked, y0, ts, spec.tableau, step_size=req.step_size, **common)
        elif spec.kind == ADAPTIVE and req.per_sample:
            outputs, stats, status, message = integrate_per_sample(
                checked, y0, ts, spec.tableau, rtol=req.rtol, atol=req.atol, **common)
            status_per_sample = stats["status_per_sample"]
        elif spec.kind == ADAPTIVE:
            outputs, stats, status, message = integrate_adaptive(
                checked, y0, ts, spec.tableau, rtol=req.rtol, atol=req.atol, **common)
        else:
            outputs, stats, status, message = integrate_implicit(
                checked, y0, ts, spec, rtol=req.rtol, atol=req.atol, step_size=req.step_size, **common)

    # backprop differentiates the recorded operations: its backward pass never calls func
    stats.setdefault("nfe_backward", 0)
    ys = outputs if isinstance(outputs, torch.Tensor) else _stack(outputs, len(ts), y0)
    solution = Solution(ys=ys, ts=req.t, stats=stats, status=status, method=spec.name, rtol=req.rtol,
                        atol=req.atol, message=message, steps=recorder.record,
                        status_per_sample=status_per_sample)
    if observers.listening():
        observers.notify({"method": spec.name, "rtol": req.rtol, "atol": req.atol, "step_size": req.step_size,
                          "backend": req.backend, "per_sample": req.per_sample, "shape": tuple(y0.shape),
                          "n_times": len(ts), "stats": stats, "status": status,
                          "seconds": time.perf_counter() - started})
    return solution


def _stack(outputs: list[torch.Tensor], n_times: int, y0: torch.Tensor) -> torch.Tensor:
    """Stack the states reached; rows for output times not reached are NaN."""
    missing = n_times - len(outputs)
    if missing > 0:
        outputs = outputs + [torch.full_like(y0, float("nan")).detach()] * missing
    return torch.stack(outputs, dim=0)
