"""What the gradient modes that do not keep the solver's graph share.

- :func:`inspect_field` (and :func:`field_parameters`): the tensors to differentiate (a module's
  parameters, extra ones, every tensor requiring grad the field holds, and any other one probing
  call reaches), with stand-ins for the non-leaf ones (:mod:`~nodecourse.solvers._dependencies`);
- :class:`GradientRun`: the settings, the field and the solve function an autograd Function needs;
- :func:`forward_without_graph` and :func:`differentiable_solution`: the forward pass of those
  Functions and the :class:`Solution` they return;
- :func:`backprop_replay`: the backward pass used where a route's own one cannot be right: a
  differentiable gradient (``create_graph=True``) and a field that draws random numbers. It solves
  once more with a graph, from the forward's inputs and random state, so the gradient (and its
  graph) is backprop's through the function that ran.

Used by :mod:`~nodecourse.solvers._adjoint`, :mod:`~nodecourse.solvers._checkpoint` and
:mod:`~nodecourse.solvers._reversible`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, Optional, Protocol, cast

import torch

from nodecourse.solvers import _field_checks as field_checks
from nodecourse.solvers._dependencies import Dependencies, cut, find_dependencies
from nodecourse.solvers._request import SolveRequest
from nodecourse.solvers._result import Solution, SolverError, Status, warn_backward_failure
from nodecourse.validation import SecondDerivativeError


def field_parameters(func, y0: torch.Tensor, t0: torch.Tensor, extra=()) -> list[torch.Tensor]:
    """:func:`inspect_field`'s parameters."""
    return inspect_field(func, y0, t0, extra)[0].params


def inspect_field(
    func, y0: torch.Tensor, t0: torch.Tensor, extra=(), *, route: str = "this gradient route"
) -> tuple[Dependencies, bool]:
    """``(dependencies, random)``: the tensors a gradient mode that does not keep the solver's graph
    must differentiate (:func:`~nodecourse.solvers._dependencies.find_dependencies`: an ``nn.Module``'s
    parameters, ``extra``, every tensor requiring grad the field holds (closure, defaults, globals,
    module state), and any other the graph of one evaluation ``func(t0, y0)`` reaches), with the
    stand-ins for the non-leaf ones. ``random``: the evaluation drew random numbers (dropout in
    training mode); the probe runs from the current random state and restores it afterwards, so
    the solve that follows draws what a backprop solve from the same seed draws.

    Costs one evaluation of ``func`` (only when grad mode is on; without grad nothing is
    differentiated and ``random`` is False).
    """
    drew = [False]

    def probe(f):
        # a copy: func never sees the caller's y0
        out, drew[0] = field_checks.call_keeping_rng(
            lambda: _probe_call(f, t0.detach(), y0.detach().clone()), y0.device
        )
        return out

    deps, _ = find_dependencies(func, probe, extra, route=route)
    return deps, drew[0]


def _probe_call(func, t0: torch.Tensor, y: torch.Tensor):
    """``func(t0, y)`` with a graph, with the named errors of the solver's first call: a clash of
    dtype or device between func's tensors and ``y``, and an update of ``y`` in place."""
    version = y._version if field_checks.versions_tracked() else None
    with torch.enable_grad():
        try:
            out = func(t0, y)
        except RuntimeError as err:
            named = field_checks.mismatch_error(func, y, err)
            if named is not None:
                raise named from err
            raise
    if version is not None and y._version != version:
        raise field_checks.inplace_error(version, y._version)
    return out


@dataclasses.dataclass
class GradientRun:
    """Everything the autograd Functions of the gradient modes need besides tensors.

    ``solve`` is :func:`nodecourse.odeint` on a :class:`~nodecourse.solvers._request.SolveRequest`
    (:func:`nodecourse.solvers._odeint.solve_again`), handed in by ``odeint`` when it dispatches a
    gradient mode: the modes call the solver back (without a graph, backwards in time, one
    replayed step) without importing it, so there is no import cycle between ``odeint`` and them.
    ``request``: the forward solve's settings (``gradient="backprop"``; ``y0`` and ``t`` are set
    from the Function's inputs), from which the replays are derived; ``backward``: the adjoint's
    backward solve (``func``, ``y0`` and ``t`` set per interval).
    """

    func: Any
    solve: Callable[[SolveRequest], Solution]
    request: SolveRequest
    throw: bool
    params: list
    #: the stand-ins of the non-leaf parameters (:class:`~nodecourse.solvers._dependencies.Dependencies`)
    deps: Optional[Dependencies] = None
    solution: Optional[Solution] = None
    #: the field draws random numbers (:func:`inspect_field`); ``rng`` is then the random state the
    #: forward solve started from (``field_checks.rng_state``), which :func:`backprop_replay` restores
    random: bool = False
    rng: Any = None
    backward: Optional[SolveRequest] = None
    #: checkpoint with a random field and an ``on_step``: the random numbers ``on_step`` drew, replayed
    rng_jumps: Optional[field_checks.RngJumps] = None


class SolvedRun(Protocol):
    """What :func:`forward_solution` reads: a run whose forward pass keeps its :class:`Solution`
    (:class:`GradientRun`, and the reversible method's own run)."""

    solution: Optional[Solution]


def forward_solution(run: SolvedRun) -> Solution:
    """``run.solution``, the forward solve's :class:`Solution` (a backward pass runs after the
    forward pass, which sets it)."""
    if run.solution is None:
        raise RuntimeError("the forward solve has not run: its Solution is needed before the backward pass")
    return run.solution


class ReplayRun(SolvedRun, Protocol):
    """What :func:`backprop_replay` reads (:class:`GradientRun`, and the reversible method's own run)."""

    throw: bool
    rng: Any
    deps: Optional[Dependencies]


def forward_without_graph(ctx, run: GradientRun, t, y0, params) -> torch.Tensor:
    """The forward pass of the Functions below: solve ``run.request`` from ``y0`` over ``t``
    without a graph, keep the :class:`Solution` in ``run.solution``, save ``(t, ys, *params)``;
    return ``ys`` (shape ``(T, *S)``)."""
    if run.random:
        run.rng = field_checks.rng_state(y0.device)
    with torch.no_grad():
        solution = run.solve(dataclasses.replace(run.request, y0=y0, t=t.detach()))
    run.solution = solution
    ctx.run = run
    ys = cast(torch.Tensor, solution.ys).detach()  # one tensor: the routes solve a flat state
    ctx.save_for_backward(t, ys, y0, *params)
    return ys


def differentiable_solution(run: SolvedRun, ys: torch.Tensor, t: torch.Tensor) -> Solution:
    """``run.solution`` with the Function's output ``ys`` and the given ``t`` (both on the graph);
    ``nfe_backward`` starts at 0 and ``nfe_setup`` counts the probe of :func:`field_parameters`."""
    solution = forward_solution(run)
    solution.stats["nfe_backward"] = 0
    if torch.is_grad_enabled():
        # the dependency probe in field_parameters (plus the forward solve's own probe, per_sample)
        solution.stats["nfe_setup"] = solution.stats.get("nfe_setup", 0) + 1
    return dataclasses.replace(solution, ys=ys, ts=t)


def refuse_second_derivative(route: str, fix: str) -> None:
    """Raise :class:`~nodecourse.validation.SecondDerivativeError` when a backward pass runs with
    ``create_graph=True`` (autograd enables grad mode inside ``backward`` exactly then)."""
    if torch.is_grad_enabled():
        raise SecondDerivativeError(
            f"{route} cannot give a differentiable gradient (create_graph=True: a gradient penalty, a "
            f"Hessian-vector product): its backward pass is not made of differentiable operations, and a "
            f"gradient without its graph would silently drop the second-order terms. {fix}"
        )


def backprop_replay(
    run: ReplayRun,
    solve: Callable,
    t: torch.Tensor,
    y0: torch.Tensor,
    grad_ys: torch.Tensor,
    params,
    *,
    need_y0: bool,
    route: str,
) -> list:
    """``[dL/dy0 or None, *dL/dparams]`` by solving once more with a graph (``solve(y0, t) ->
    Solution``, gradient="backprop", the forward's settings) from the forward's random state, and
    differentiating that solve. Under ``create_graph=True`` the gradient keeps its graph: ``y0`` and
    ``params`` are the Function's saved inputs, so the graph reaches whatever they came from.

    The solver is deterministic, so the replay takes the forward's steps and, with the random state
    restored, draws its random numbers: the gradient is backprop's through the function that ran.
    Memory: backprop's (the whole solve's graph). ``grad_ys``: shape ``(T, *S)``.
    """
    create = torch.is_grad_enabled()
    forward = forward_solution(run)
    stats = forward.stats
    nan = lambda: [torch.full_like(y0, float("nan"))] + [torch.full_like(p, float("nan")) for p in params]  # noqa: E731
    if forward.status is not Status.SUCCESS:  # no replay: the failed solve's gradient is undefined
        message = f"the forward solve ended with status {forward.status.name}; its gradient is undefined"
        stats["backward_status"], stats["backward_message"] = forward.status, message
        if run.throw:
            raise SolverError(forward.status, f"{route}: {message}")
        warn_backward_failure(forward.status, f"{route}: {message}")
        return nan()
    replay = field_checks.replayed_rng(run.rng, y0.device) if run.rng is not None else contextlib.nullcontext()
    live = run.deps.live(params, create=create) if run.deps is not None else contextlib.nullcontext(list(params))
    with torch.enable_grad(), replay, live as stand:
        # first order: a fresh leaf (no graph to keep); second order: the saved input itself
        y_in = y0 if (create and y0.requires_grad) else y0.detach().requires_grad_(need_y0)
        solution = solve(y_in, t.detach())
        stats["nfe_backward"] = stats.get("nfe_backward", 0) + solution.stats.get("nfe", 0)
        if solution.status is not Status.SUCCESS:
            message = f"the backward replay of the solve ended with status {solution.status.name}: {solution.message}"
            stats["backward_status"], stats["backward_message"] = solution.status, message
            if run.throw:
                raise SolverError(solution.status, f"{route}: {message}")
            warn_backward_failure(solution.status, f"{route}: {message}")
            return nan()
        wanted = [s for s in stand if s.requires_grad]
        inputs = ([y_in] if y_in.requires_grad else []) + wanted
        with cut():  # stop at the stand-ins: autograd carries dL/dq back past them once, afterwards
            got = (
                list(
                    torch.autograd.grad(
                        solution.ys, inputs, grad_outputs=grad_ys, allow_unused=True, create_graph=create
                    )
                )
                if inputs and solution.ys.requires_grad
                else [None] * len(inputs)
            )
    grad_y0 = got.pop(0) if y_in.requires_grad else None
    if need_y0 and grad_y0 is None:
        grad_y0 = torch.zeros_like(y0)
    found = iter(got)
    # a parameter the solve never used gets None, as backprop gives it
    grads = [next(found) if s.requires_grad else None for s in stand]
    stats["backward_status"], stats["backward_message"] = Status.SUCCESS, ""
    return [grad_y0] + grads
