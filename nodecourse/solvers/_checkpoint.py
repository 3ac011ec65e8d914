"""``gradient="checkpoint"``: the exact gradient of the discrete solve, memory one state per step.

The forward solve runs without a graph and keeps the state at the start of every accepted step
(the step record); the backward pass replays each step with autograd, last to first, and chains
the vector-Jacobian products (step sizes held fixed, as backprop holds them), for every method.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable

import torch

from nodecourse.solvers import _field_checks as field_checks
from nodecourse.solvers._gradient_run import (
    GradientRun,
    backprop_replay,
    differentiable_solution,
    forward_solution,
    forward_without_graph,
    inspect_field,
)
from nodecourse.solvers._registry import ADAPTIVE, spec_for
from nodecourse.solvers._request import SolveRequest
from nodecourse.solvers._result import Solution, SolverError, Status, warn_backward_failure
from nodecourse.solvers._transforms import refuse_transforms
from nodecourse.solvers._validate import internal_times


class CheckpointFunction(torch.autograd.Function):
    """``(t, y0, *params) -> ys``: forward solve without a graph that keeps the state at the start
    of every accepted step (the step record); the backward pass replays each accepted step with
    autograd, last to first, and chains the vector-Jacobian products: the exact gradient of the
    discrete solve (step sizes held fixed, as backprop holds them), for every method."""

    @staticmethod
    def forward(ctx, run: GradientRun, t, y0, *params):
        return forward_without_graph(ctx, run, t, y0, params)

    @staticmethod
    def backward(ctx, grad_ys):
        run: GradientRun = ctx.run
        t, ys, y0, *params = ctx.saved_tensors
        if torch.is_grad_enabled() or run.random:
            # create_graph=True (the per-step replays start from detached states, so their gradient
            # would miss the states' dependence on y0 and the parameters), or a random field (a
            # replayed step cannot draw the numbers its stages drew: the first stage's evaluation
            # belongs to the previous step): replay the whole solve from the forward's random state
            replay_on_step = run.rng_jumps.replayer() if run.rng_jumps is not None else None

            def solve(y_in, t_in):
                return run.solve(
                    dataclasses.replace(
                        run.request, y0=y_in, t=t_in, throw=False, record_steps=False, on_step=replay_on_step
                    )
                )

            return (
                None,
                None,
                *backprop_replay(
                    run, solve, t, y0, grad_ys, params, need_y0=ctx.needs_input_grad[2], route="gradient='checkpoint'"
                ),
            )
        return (None, None, *checkpoint_backward(run, t, grad_ys, params))


def _replay_request(run: GradientRun, h: float, y_in: torch.Tensor, times: torch.Tensor) -> SolveRequest:
    """The forward's settings made to take exactly the recorded step of size ``|h|`` from ``y_in``
    over ``times`` (fixed-step and implicit methods get a step size a hair above it, so rounding
    cannot split the step in two)."""
    one_step = dataclasses.replace(
        run.request, y0=y_in, t=times, throw=False, max_steps=1, per_sample=False, record_steps=False, on_step=None
    )
    if spec_for(one_step.method).kind == ADAPTIVE:  # a name or a ButcherTableau
        return dataclasses.replace(one_step, options={**(one_step.options or {}), "first_step": abs(h)})
    return dataclasses.replace(one_step, step_size=abs(h) * (1 + 1e-9))


def checkpoint_backward(run: GradientRun, t, grad_ys, params):
    """Replay the accepted steps last to first; return ``[dL/dy0, *dL/dparams]``."""
    solution = forward_solution(run)
    stats = solution.stats
    if solution.status is not Status.SUCCESS:
        message = f"the forward solve ended with status {solution.status.name}; its gradient is undefined"
        stats["backward_status"], stats["backward_message"] = solution.status, message
        if run.throw:
            raise SolverError(solution.status, f"gradient='checkpoint': {message}")
        warn_backward_failure(solution.status, f"gradient='checkpoint': {message}")
        return [torch.full_like(grad_ys[0], float("nan"))] + [torch.full_like(p, float("nan")) for p in params]
    record = solution.steps
    if record is None:  # the checkpoint route's forward solve always records its steps (with states)
        raise RuntimeError("gradient='checkpoint': the forward solve kept no step record to replay")
    steps, states = record.accepted_steps(), record.states
    ts = [float(v) for v in t.detach().cpu().tolist()]
    direction = 1.0 if ts[-1] >= ts[0] else -1.0
    ends = [steps[k + 1][0] for k in range(len(steps) - 1)] + [ts[-1]] if steps else []
    # Which step each output time (after the first) belongs to: the step k with t_k < t_i <= end_k.
    inner: dict[int, list[int]] = {}
    at_end: dict[int, list[int]] = {}
    k = 0
    for i in range(1, len(ts)):
        while k < len(steps) - 1 and direction * (ts[i] - ends[k]) > 0:
            k += 1
        (at_end if ts[i] == ends[k] else inner).setdefault(k, []).append(i)
    a = torch.zeros_like(grad_ys[0])
    grad_params: list = [None] * len(params)  # None until a step uses the parameter (backprop's None)
    nfe = 0
    live = run.deps.live(params) if run.deps is not None else contextlib.nullcontext(list(params))
    with live as stand:
        a, nfe, failed = _replay_steps(run, t, grad_ys, stand, grad_params, steps, states, ts, ends, inner, at_end, a)
    if failed is not None:
        stats["nfe_backward"] = stats.get("nfe_backward", 0) + nfe
        return failed
    a = a + grad_ys[0]
    stats["nfe_backward"] = stats.get("nfe_backward", 0) + nfe
    stats["backward_status"], stats["backward_message"] = Status.SUCCESS, ""
    return [a] + grad_params


def _replay_steps(run: GradientRun, t, grad_ys, params, grad_params, steps, states, ts, ends, inner, at_end, a):
    """The loop of :func:`checkpoint_backward` (``params``: the tensors to differentiate, stand-ins
    for the non-leaf ones; ``grad_params`` is filled in place). Returns ``(a, nfe, failed)``,
    ``failed`` the NaN gradients of a replay that failed (else None)."""
    stats = forward_solution(run).stats
    nfe = 0
    for k in range(len(steps) - 1, -1, -1):
        for i in at_end.get(k, []):
            a = a + grad_ys[i]
        t0, h = steps[k]
        inside = inner.get(k, [])
        # float64 times: the recorded floats exactly (float32 rounding could split the step in two).
        times = torch.tensor([t0] + [ts[i] for i in inside] + [ends[k]], dtype=torch.float64, device=t.device)
        with torch.enable_grad():
            y_in = states[k].detach().requires_grad_(True)
            with internal_times():  # the recorded float64 times, not the caller's
                step = run.solve(_replay_request(run, h, y_in, times))
            nfe += step.stats["nfe"]
            if step.status is not Status.SUCCESS:
                message = (
                    f"replaying the accepted step at t={t0:.6g} (h={h:.3g}) ended with status "
                    f"{step.status.name}: {step.message}"
                )
                stats["backward_status"], stats["backward_message"] = step.status, message
                if run.throw:
                    stats["nfe_backward"] = stats.get("nfe_backward", 0) + nfe
                    raise SolverError(step.status, f"gradient='checkpoint': {message}")
                warn_backward_failure(step.status, f"gradient='checkpoint': {message}")
                nans = [torch.full_like(a, float("nan"))] + [torch.full_like(p, float("nan")) for p in params]
                return a, nfe, nans
            outs = [step.ys[-1]] + [step.ys[j + 1] for j in range(len(inside))]
            cotangents = [a] + [grad_ys[i] for i in inside]
            grads = torch.autograd.grad(outs, [y_in, *params], grad_outputs=cotangents, allow_unused=True)
        a = grads[0] if grads[0] is not None else torch.zeros_like(a)
        for j, g in enumerate(grads[1:]):
            if g is not None:
                grad_params[j] = g if grad_params[j] is None else grad_params[j] + g
    return a, nfe, None


def solve_checkpoint(req: SolveRequest, *, solve: Callable[[SolveRequest], Solution]) -> Solution:
    """``odeint(..., gradient="checkpoint")`` on its checked request ``req``, by the step record (see
    :class:`CheckpointFunction`); ``solve`` is ``odeint`` on a request (the forward solve without a
    graph, then one replay per step, each a ``dataclasses.replace`` of ``req``'s settings).

    ``odeint`` has validated the arguments (``validate.check_gradient`` refuses ``per_sample``
    and ``backend="torchdiffeq"`` here). Memory: one state per accepted step (not the stages'
    activations). Work: every accepted step is computed twice (``stats["nfe_backward"]`` counts
    the replays).
    """
    func, y0, t, on_step = req.func, req.y0, req.t, req.on_step
    refuse_transforms("gradient='checkpoint'", func, y0, t)
    deps, random = inspect_field(func, y0, t[0], route="gradient='checkpoint'")
    params = deps.params
    # on_step may draw from the random stream the field draws from: the replay must see the same jumps
    jumps = field_checks.RngJumps(on_step, y0.device) if random and on_step is not None else None
    run = GradientRun(
        func=func,
        solve=solve,
        # the forward solve keeps the state at the start of every accepted step
        request=req.as_backprop(record_steps="states", on_step=jumps if jumps is not None else on_step),
        throw=req.throw,
        params=params,
        deps=deps,
        random=random,
        rng_jumps=jumps,
    )
    return differentiable_solution(run, CheckpointFunction.apply(run, t, y0, *params), t)
