"""``odeint``: check the arguments, run the chosen integrator, return a :class:`Solution`.

Structure: :func:`odeint` validates every argument into one
:class:`~nodecourse.solvers._request.SolveRequest` (the backward solve's ``adjoint_options`` checked
in it), then dispatches that request on ``gradient``: ``"adjoint"`` goes to
:mod:`nodecourse.solvers._adjoint`, ``"checkpoint"`` to :mod:`nodecourse.solvers._checkpoint` and
gradients with respect to ``t`` to :mod:`nodecourse.solvers._time_gradients`; each is handed
:func:`solve_again` (``odeint`` on a request) to call back with requests it derives by
``dataclasses.replace`` (without a graph, backwards in time, or with ``t`` detached), so none
imports this module; for ``"backprop"`` :func:`solve_request` runs one integrator on the request
and returns the :class:`Solution` (never raising on a failed solve; ``odeint`` does that when
``throw=True``).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Optional, TypedDict, cast

import torch

from nodecourse.solvers import _adjoint as adjoint
from nodecourse.solvers import _checkpoint as checkpoint
from nodecourse.solvers import _events as events
from nodecourse.solvers import _observers as observers
from nodecourse.solvers import _reversible as reversible
from nodecourse.solvers import _validate as v
from nodecourse.solvers._adaptive import integrate_adaptive
from nodecourse.solvers._fixed import integrate_fixed
from nodecourse.solvers._implicit import integrate_implicit
from nodecourse.solvers._per_sample import integrate_per_sample
from nodecourse.solvers._record import Recorder, StepEvent
from nodecourse.solvers._registry import ADAPTIVE, FIXED, spec_for
from nodecourse.solvers._request import SolveRequest
from nodecourse.solvers._result import Solution, SolverError, Status
from nodecourse.solvers._rk import CheckedFunc
from nodecourse.solvers._time_gradients import attach_time_gradients
from nodecourse.solvers._torchdiffeq_backend import integrate_torchdiffeq
from nodecourse.solvers._transforms import refuse_vmap
from nodecourse.solvers._tuple_state import TupleFunc, _norm_on_parts, is_tuple_state, layout_of, solve_tuple

__all__ = ["odeint", "odeint_event"]


def odeint(
    func,
    y0: torch.Tensor,
    t: torch.Tensor,
    *,
    method="dopri5",
    rtol: float = 1e-7,
    atol: float = 1e-9,
    step_size=None,
    max_steps: int = 10_000,
    gradient: str = "backprop",
    throw: bool = True,
    backend: str = "nodecourse",
    per_sample: bool = False,
    options: dict | None = None,
    adjoint_options: dict | None = None,
    record_steps: bool | str = False,
    on_step: Optional[Callable[[StepEvent], Any]] = None,
    event_fn: Optional[Callable] = None,
    adjoint_params=None,
    **torchdiffeq_keywords,
) -> Solution:
    """Solve ``dy/dt = func(t, y)``, ``y(t[0]) = y0``, and report the solver's work.

    Args:
        func: ``func(t, y) -> dy/dt`` with ``t`` a 0-d tensor (shape ``(B,)`` when
            ``per_sample=True``) and ``y`` of ``y0``'s shape; a function or ``nn.Module``. It must
            return a new tensor, never change ``y`` in place (named: ``InPlaceFieldError``); in
            per-sample mode it must treat each row on its own (probed once: ``BatchMixingError``).
        y0: initial state, any shape ``S``, floating dtype; sets dtype and device. Or a tuple of
            tensors (one dtype and device; torchdiffeq's convention): ``func`` then takes and
            returns tuples, the solve runs on the parts flattened into one vector
            (:mod:`nodecourse.solvers._tuple_state`) and ``Solution.ys`` is a tuple.
        t: output times, shape ``(T,)``, strictly increasing or strictly decreasing
            (decreasing integrates backwards), on ``y0``'s device. ``func`` receives times in ``y0``'s
            dtype: a finer ``t`` whose values that cast would move (beyond one unit of the state's
            precision on the interval) is refused by name.
        method: a name in :data:`nodecourse.SOLVERS` or ``"reversible_heun"``
            (:data:`~nodecourse.solvers._reversible.REVERSIBLE_SOLVERS`, fixed steps), or a
            :class:`nodecourse.solvers.ButcherTableau`
            (explicit without ``b_low``: fixed steps; with ``b_low``: adaptive; diagonally
            implicit two-stage theta methods: implicit).
        rtol, atol: tolerances of the adaptive and implicit methods (error per step
            ``<= atol + rtol * |y|`` in the RMS norm); ``rtol`` in (0, 1) (at 1 or more the error
            may be as large as the state itself), ``atol`` > 0 (in the units of ``y``).
        step_size: largest step of the fixed-step methods (required there); optional
            for the implicit methods (fixed steps when given); not allowed for adaptive ones.
        max_steps: budget of attempted steps (accepted + rejected).
        gradient: ``"backprop"``: gradients flow through the solver's operations (memory
            grows with steps x stages x activations of func); ``"checkpoint"`` (every method,
            not per_sample, backend "nodecourse"): the forward solve runs without a graph and
            keeps the state at the start of each accepted step (the step record); the backward
            pass replays each accepted step with autograd, last to first
            (:func:`nodecourse.solvers._checkpoint.solve_checkpoint`; memory steps x state size,
            one more forward of work counted in ``stats["nfe_backward"]``; the exact gradient
            of the discrete solve).
            ``"adjoint"``: the continuous adjoint (:mod:`nodecourse.solvers._adjoint`): no graph is
            kept, the gradient comes from solving the augmented system backwards in time
            (constant memory in steps; ``stats`` gains ``nfe_backward`` and ``backward_status``).
            Second derivatives (``create_graph=True``): backprop, checkpoint and reversible give them
            (equal to backprop's); adjoint and gradients with respect to ``t`` refuse them by name
            (``SecondDerivativeError``). A field that draws random numbers is replayed from the
            forward's random state by checkpoint and reversible; adjoint refuses it (``RandomFieldError``).
            ``"reversible"`` (only with ``method="reversible_heun"``, :mod:`nodecourse.solvers._reversible`):
            no graph is kept; the backward pass reconstructs each step by its algebraic inverse, so the
            gradient is backprop's through the same steps up to rounding, with memory flat in the steps.
            ``t`` may require grad in every mode (gradients with respect to the output times).
        throw: raise :class:`SolverError` when the solve fails; with False the
            ``Solution`` comes back with its status and NaN rows for times not reached.
        backend: ``"nodecourse"`` or ``"torchdiffeq"`` (same call, same ``Solution``).
        per_sample: adaptive methods only: each batch element (first dim of ``y0``)
            gets its own step sizes and its own stats.
        options: method-specific settings: adaptive and implicit methods take ``safety`` in
            (0, 1], ``ifactor`` >= 1, ``dfactor`` in (0, 1), ``first_step`` > 0, ``max_step`` > 0,
            ``max_nonfinite_retries`` >= 1, ``norm`` (a callable ``norm(tensor) -> scalar`` replacing
            the RMS norm of the error and of the first-step estimate, as in torchdiffeq; it gets the
            tuple of parts for a tuple state; not with ``per_sample``); implicit ones add ``newton_tol`` > 0 and
            ``max_newton_iters`` >= 1. Unknown keys raise ``TypeError``, values out of range
            ``ValueError`` (naming the option, the value and the range).
        adjoint_options: ``gradient="adjoint"`` only: the backward solve's ``method``, ``rtol``,
            ``atol``, ``step_size``, ``max_steps``, ``options`` (default: the forward ones),
            ``params`` (extra tensors to differentiate) and ``norm`` (``"seminorm"``: the backward error
            norm leaves out the parameter-gradient channels, Kidger et al. 2021; or a callable, which
            gets torchdiffeq's tuple ``(t, y, adj_y, *adj_params)``); all checked before the forward solve.
        record_steps: ``True``: keep every attempted step's start time, size, error ratio and
            accepted flag in ``Solution.steps`` (a :class:`~nodecourse.solvers._record.StepRecord`);
            ``"states"``: also the state at every accepted step boundary (not in per-sample mode).
        on_step: called with a :class:`~nodecourse.solvers._record.StepEvent` after every
            attempted step (live plots, logging); it must not modify the tensors (a change in place
            raises ``StepEventModifiedError``; a write through ``.data`` is not seen).
        event_fn: ``event_fn(t, y) -> tensor`` (torchdiffeq's terminal event): the solve runs from
            ``t[0]`` until ``event_fn`` changes sign; ``t`` must then hold two times, ``t[1]`` giving
            only the direction. Several entries: the first to cross ends it; an entry exactly 0 at
            ``t[0]`` is an event there. The returned ``Solution`` has ``event_t`` (shape ``()``),
            ``ts = [t[0], event_t]`` and ``ys`` of shape ``(2, *S)`` (``y0`` and the state at the
            event); gradients reach ``event_t`` and the final state through the event time (implicit
            function theorem) on every gradient route, once (not ``create_graph``). The event is
            searched without a graph (``stats["nfe_event_search"]``), then the solve to ``event_t``
            runs as any solve (its status, ``stats``, ``steps``). Not with ``per_sample``. ``t[0]`` may
            require grad (a chain of events, each starting at the last one's time). See
            :mod:`nodecourse.solvers._events`.
        adjoint_params: torchdiffeq's ``odeint_adjoint`` keyword: the same as
            ``adjoint_options={"params": ...}`` (needs ``gradient="adjoint"``).
        **torchdiffeq_keywords: ``adjoint_rtol``, ``adjoint_atol``, ``adjoint_method`` (torchdiffeq's
            ``odeint_adjoint``): ``adjoint_options["rtol"]`` etc., with ``gradient="adjoint"``. Any other
            keyword is refused by name. torchdiffeq's ``options`` keys are understood too:
            ``step_size`` (fixed-step methods) and ``max_num_steps`` (= ``max_steps``) are moved to the
            keywords; ``grid_points``, ``eps``, ``step_t``, ``jump_t``, ``perturb``, ``grid_constructor``,
            ``interp``, ``min_step`` and ``dtype`` have no counterpart and are refused naming what to write
            instead. ``method=None`` is ``"dopri5"``, as in torchdiffeq.

    Returns:
        :class:`Solution` with ``ys`` of shape ``(T, *S)`` (a tuple of such for a tuple ``y0``), ``ts``,
        ``stats``, ``status`` (``steps`` with ``record_steps``; ``status_per_sample`` with ``per_sample=True``).

    Raises:
        TypeError / ValueError: a bad argument (the message names it, its value and the fix),
            including half-precision states and tolerances below what the dtype resolves.
        SolverError: the solve failed and ``throw=True``.
    """
    v.check_func(func)
    if method is None:  # torchdiffeq's spelling of its default
        method = "dopri5"
    if torchdiffeq_keywords or adjoint_params is not None:
        adjoint_options = v.torchdiffeq_keywords(
            torchdiffeq_keywords, gradient=gradient, adjoint_options=adjoint_options, adjoint_params=adjoint_params
        )
    v.check_adjoint_option_keys(adjoint_options)
    options, step_size, max_steps = v.torchdiffeq_options(options, step_size, max_steps)
    request = SolveRequest(  # the call as given; the checks below replace what they normalise
        func=func,
        y0=y0,
        t=t,
        method=method,
        rtol=rtol,
        atol=atol,
        step_size=step_size,
        max_steps=max_steps,
        gradient=gradient,
        throw=throw,
        backend=backend,
        per_sample=per_sample,
        options=options,
        adjoint_options=adjoint_options,
        record_steps=record_steps,
        on_step=on_step,
    )
    # before anything reads a number of a batched tensor on the host (torch's own error names no fix)
    refuse_vmap(f"gradient={gradient!r}", func, *(y0 if isinstance(y0, (tuple, list)) else (y0,)), t)
    if event_fn is not None:
        return _solve_event(func, y0, t, event_fn, request.keywords())
    if is_tuple_state(y0):  # a state in parts (torchdiffeq's convention): flattened, solved, split back
        # y0 is a tuple here (odeint's annotation names the common case, a tensor)
        return solve_tuple(odeint, func, cast(tuple, y0), t, **request.keywords())
    per_sample = v.check_flag("per_sample", per_sample)
    throw = v.check_flag("throw", throw)
    v.check_y0(y0, per_sample)
    ts = v.check_t(t, y0)
    rtol, atol = v.check_tolerances(rtol, atol)
    step_size = v.check_arg("step_size", step_size)
    spec = v.check_method(method, step_size, per_sample)
    v.check_precision(y0, rtol, atol, spec, step_size)
    record_steps = v.check_record(record_steps, on_step, per_sample, gradient)
    max_steps = v.check_max_steps(max_steps)
    v.check_backend(backend, per_sample, spec)
    v.check_gradient(gradient, spec, per_sample, backend)
    v.merge_options(options, v.option_defaults(spec, backend), spec.name)  # checked; solve_request merges
    request = dataclasses.replace(
        request,
        rtol=rtol,
        atol=atol,
        step_size=step_size,
        max_steps=max_steps,
        throw=throw,
        per_sample=per_sample,
        record_steps=record_steps,
    )
    # every setting of the backward solve too, before the forward solve runs
    request.adjoint_options = v.check_adjoint_options(request, backend=backend, y0=y0)
    if spec.kind == reversible.REVERSIBLE:  # reversible Heun: its own integrator and gradient mode
        v.check_reversible_record(spec, record_steps, on_step)

        def solve_reversible(y_in, t_in):
            return reversible.solve_reversible(
                func,
                y_in,
                t_in,
                ts=ts,
                gradient=gradient,
                step_size=float(step_size),
                max_steps=max_steps,
                throw=throw,
                name=spec.name,
            )

        return attach_time_gradients(solve_reversible, func, y0, t) if t.requires_grad else solve_reversible(y0, t)
    if gradient == "adjoint":
        return adjoint.solve_adjoint(request, solve=solve_again)
    if gradient == "checkpoint" and not t.requires_grad:
        return checkpoint.solve_checkpoint(request, solve=solve_again)
    if t.requires_grad:
        return attach_time_gradients(
            lambda y_in, t_in: solve_again(dataclasses.replace(request, y0=y_in, t=t_in)), func, y0, t
        )
    solution = solve_request(request)
    if solution.status is not Status.SUCCESS and throw:
        raise SolverError(solution.status, f"method={spec.name!r}: {solution.message}", solution)
    return solution


def solve_again(req: SolveRequest) -> Solution:
    """``odeint`` on a request (checked and dispatched again): what the gradient routes call back
    for the solves they derive from theirs with ``dataclasses.replace``."""
    return odeint(req.func, req.y0, req.t, **req.keywords())


v.register_defaults(odeint)


def _solve_event(func, y0, t, event_fn, settings: dict) -> Solution:
    """``odeint(..., event_fn=...)``: checks, a tuple state flattened, then
    :func:`nodecourse.solvers._events.solve_until_event` (which calls ``odeint`` back)."""
    v.check_arg("event_fn", event_fn)
    if settings["per_sample"] is not False:
        raise ValueError(
            "event_fn ends the whole solve at one time; per_sample=True is not available with it. Solve each "
            "sample on its own (a loop over the batch), or drop per_sample"
        )
    layout, flat_func, flat_y0 = None, func, y0
    if is_tuple_state(y0):  # the search and the gradient work on the flat state, event_fn sees the parts
        layout = layout_of(y0, False)
        flat_func, flat_y0 = TupleFunc(func, layout), layout.flatten(y0)
        settings["options"] = _norm_on_parts(settings["options"], layout)
    v.check_y0(flat_y0, False)
    v.check_t(t, flat_y0)
    step_size = v.check_arg("step_size", settings["step_size"])
    spec = v.check_method(settings["method"], step_size, False)
    v.check_backend(settings["backend"], False, spec)
    search = None
    if settings["backend"] == "torchdiffeq":

        def search(counted, event):
            return _torchdiffeq_event_time(counted, event, flat_y0, t, spec, settings)

    return events.solve_until_event(
        odeint,
        func,
        flat_y0,
        t,
        event_fn=event_fn,
        flat_func=flat_func,
        layout=layout,
        settings=settings,
        fixed_step=float(step_size) if spec.kind == reversible.REVERSIBLE else None,
        torchdiffeq_search=search,
    )


def _torchdiffeq_event_time(func, event, y0, t, spec, settings) -> float:
    """``backend="torchdiffeq"``: the event time from torchdiffeq's own event search."""
    import torchdiffeq

    options = dict(settings["options"] or {})
    if settings["step_size"] is not None:
        options["step_size"] = float(settings["step_size"])
    elif spec.kind == ADAPTIVE:
        options["max_num_steps"] = settings["max_steps"]
    with torch.no_grad():
        event_t, _ = torchdiffeq.odeint(
            func,
            y0.detach(),
            t.detach(),
            rtol=settings["rtol"],
            atol=settings["atol"],
            method=spec.torchdiffeq,
            options=options,
            event_fn=event,
        )
    return float(event_t)


def odeint_event(func, y0, t0, *, event_fn, reverse_time=False, odeint_interface=odeint, **kwargs):
    """torchdiffeq's ``odeint_event``: solve from ``t0`` until ``event_fn(t, y)`` crosses zero.

    Args:
        func, y0: as in :func:`odeint` (a tensor or a tuple of tensors).
        t0: the start time, a tensor of one element (a float is taken in ``y0``'s dtype).
        event_fn: ``event_fn(t, y) -> tensor``; see :func:`odeint`.
        reverse_time: solve backwards in time from ``t0``.
        odeint_interface: :func:`odeint` (the default), or torchdiffeq's ``odeint`` /
            ``odeint_adjoint`` (their ``(event_t, solution)`` result then gains the gradient through
            the event time here, as torchdiffeq's own ``odeint_event`` does).
        **kwargs: passed to ``odeint_interface`` (``method``, ``rtol``, ``gradient``, ...).

    Returns:
        ``(event_t, ys)``: the event time, shape ``()``, and the states at ``[t0, event_t]``, shape
        ``(2, *y0.shape)`` (a tuple of such for a tuple ``y0``), both carrying gradients through the
        event time (implicit function theorem). The full :class:`Solution` (status, stats) comes from
        ``odeint(func, y0, t, event_fn=...)`` with ``t = [t0, t0 + 1]``.
    """
    like = y0[0] if isinstance(y0, (tuple, list)) and y0 else y0
    if not isinstance(t0, torch.Tensor):
        t0 = torch.as_tensor(t0, dtype=like.dtype if isinstance(like, torch.Tensor) else None)
    if t0.numel() != 1:
        raise ValueError(f"odeint_event: t0 must hold one time, got shape {tuple(t0.shape)}; e.g. torch.tensor(0.0)")
    step = -1.0 if reverse_time else 1.0
    t = torch.cat([t0.reshape(-1), t0.reshape(-1).detach() + step])
    result = odeint_interface(func, y0, t, event_fn=event_fn, **kwargs)
    if isinstance(result, Solution):
        return result.event_t, result.ys
    event_t, solution = result  # torchdiffeq's form: no gradient through the event time yet
    layout = layout_of(y0, False) if is_tuple_state(y0) else None
    return events.event_time_reroute(func, event_fn, y0, t0, event_t, solution, layout)


class _Common(TypedDict):
    """The settings every integrator of :func:`solve_request` takes (splatted with ``**``)."""

    max_steps: int
    options: dict
    recorder: Recorder


def solve_request(req: SolveRequest) -> Solution:
    """Run the integrator ``req`` asks for, with ``gradient="backprop"`` (the other gradient modes
    call :func:`odeint` back, which ends here); never raises on a failed solve (the status says it).

    ``odeint`` has checked ``req``; what the integrators take is derived here: the method's
    :class:`SolverSpec`, ``t`` as floats and ``options`` merged with the method's defaults."""
    spec = spec_for(req.method)
    ts = [float(v) for v in req.t.detach().cpu().tolist()]
    options = v.merge_options(req.options, v.option_defaults(spec, req.backend), spec.name)
    step_size = float(req.step_size) if req.step_size is not None else None
    # func never sees the caller's tensor: a field that changes y in place is named on its first
    # call (CheckedFunc) and leaves y0 as it was. One copy per solve.
    y0 = req.y0.clone()
    started = time.perf_counter()
    func = req.func
    recorder = Recorder(req.record_steps, req.on_step, per_sample=req.per_sample)
    status_per_sample = None

    if req.backend == "torchdiffeq":
        outputs, stats, status, message = integrate_torchdiffeq(
            func,
            y0,
            req.t,
            spec,
            rtol=req.rtol,
            atol=req.atol,
            step_size=step_size,
            max_steps=req.max_steps,
            options=options,
            recorder=recorder,
        )
    else:
        checked = CheckedFunc(func, y0, per_sample=req.per_sample)
        common = _Common(max_steps=req.max_steps, options=options, recorder=recorder)
        if spec.kind == FIXED:
            if step_size is None:  # check_method requires step_size for a fixed-step method
                raise ValueError(f"method={spec.name!r} takes fixed steps and needs step_size, e.g. step_size=0.05")
            outputs, stats, status, message = integrate_fixed(
                checked, y0, ts, spec.tableau, step_size=step_size, **common
            )
        elif spec.kind == ADAPTIVE and req.per_sample:
            outputs, stats, status, message = integrate_per_sample(
                checked, y0, ts, spec.tableau, rtol=req.rtol, atol=req.atol, **common
            )
            status_per_sample = stats["status_per_sample"]
        elif spec.kind == ADAPTIVE:
            outputs, stats, status, message = integrate_adaptive(
                checked, y0, ts, spec.tableau, rtol=req.rtol, atol=req.atol, **common
            )
        else:
            outputs, stats, status, message = integrate_implicit(
                checked, y0, ts, spec, rtol=req.rtol, atol=req.atol, step_size=step_size, **common
            )

    # backprop differentiates the recorded operations: its backward pass never calls func
    stats.setdefault("nfe_backward", 0)
    if req.backend != "torchdiffeq" and checked.nfe_setup:
        stats["nfe_setup"] = checked.nfe_setup  # the per-sample probe (rows kept apart)
    ys = outputs if isinstance(outputs, torch.Tensor) else _stack(outputs, len(ts), y0)
    solution = Solution(
        ys=ys,
        ts=req.t,
        stats=stats,
        status=status,
        method=spec.name,
        rtol=req.rtol,
        atol=req.atol,
        message=message,
        steps=recorder.record,
        status_per_sample=status_per_sample,
    )
    if observers.listening():
        observers.notify(
            {
                "method": spec.name,
                "rtol": req.rtol,
                "atol": req.atol,
                "step_size": step_size,
                "backend": req.backend,
                "per_sample": req.per_sample,
                "shape": tuple(y0.shape),
                "n_times": len(ts),
                "stats": stats,
                "status": status,
                "seconds": time.perf_counter() - started,
            }
        )
    return solution


def _stack(outputs: list[torch.Tensor], n_times: int, y0: torch.Tensor) -> torch.Tensor:
    """Stack the states reached; rows for output times not reached are NaN."""
    missing = n_times - len(outputs)
    if missing > 0:
        outputs = outputs + [torch.full_like(y0, float("nan")).detach()] * missing
    return torch.stack(outputs, dim=0)
