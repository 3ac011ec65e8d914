"""Gradients of a solve that do not go through the solver's operations.

- :func:`solve_adjoint` (``odeint(..., gradient="adjoint")``): the continuous adjoint,
  written from scratch as a :class:`torch.autograd.Function`. The forward solve runs
  without a graph; the backward pass solves the augmented system

      dz/dt = f(t, z),   da/dt = -a^T df/dz,   dg/dt = -a^T df/dtheta

  backwards in time, one interval between output times at a time, starting each
  interval from the stored forward state and adding that output's incoming gradient
  to ``a``. Memory does not grow with the number of steps; the price is that ``z`` is
  *recomputed* by solving backwards, which is unstable when the forward flow contracts.
- :func:`solve_checkpoint` (``odeint(..., gradient="checkpoint")``): the forward solve runs
  without a graph and keeps the state at the start of every accepted step; the backward pass
  replays each step with autograd, last to first (memory: one state per step).
- :func:`attach_time_gradients`: gradients with respect to the output times ``t`` for
  the modes that differentiate through the solver (``backprop``, ``checkpoint``):
  ``dL/dt_i = <dL/dy_i, f(t_i, y_i)>`` for every output and
  ``dL/dt_0 -= <a(t_0), f(t_0, y_0)>`` with ``a(t_0)`` the adjoint reaching ``y0``.

A backward solve that fails never returns a silent wrong gradient: it raises
:class:`SolverError` (``throw=True``) or fills the gradients with NaN and sets
``stats["backward_status"]``.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Optional

import torch
from torch import nn

from nodecourse.solvers.result import Solution, SolverError, Status

ADJOINT_OPTION_KEYS = ("method", "rtol", "atol", "step_size", "max_steps", "options", "params")


# ----------------------------------------------------------------------------------------------
# Which tensors the field depends on


def _graph_leaves(out: torch.Tensor) -> list[torch.Tensor]:
    """The leaf tensors (requiring grad) that ``out``'s autograd graph reaches."""
    leaves, seen, stack = [], set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # AccumulateGrad nodes hold their leaf
        if isinstance(variable, torch.Tensor):
            leaves.append(variable)
        stack.extend(fn for fn, _ in node.next_functions)
    return leaves


def field_parameters(func, y0: torch.Tensor, t0: torch.Tensor, extra=()) -> list[torch.Tensor]:
    """The tensors a gradient mode that does not keep the solver's graph must differentiate:
    the trainable parameters of an ``nn.Module`` ``func``, then ``extra``, then any other tensor
    that requires grad and that ``func(t0, y0)`` reaches (e.g. a tensor a plain function closes
    over), found by walking the autograd graph of one evaluation. Without that walk such a
    tensor would silently get no gradient.

    Costs one evaluation of ``func`` (only when grad mode is on).
    """
    params = [p for p in func.parameters() if p.requires_grad] if isinstance(func, nn.Module) else []
    for p in extra:
        if not isinstance(p, torch.Tensor) or not p.requires_grad:
            raise TypeError(f"adjoint_options['params'] must hold tensors that require grad; got "
                            f"{type(p).__name__}")
        if all(p is not q for q in params):
            params.append(p)
    if not torch.is_grad_enabled():
        return params
    with torch.enable_grad():
        out = func(t0.detach(), y0.detach())
    if isinstance(out, torch.Tensor) and out.requires_grad:
        known = {id(p) for p in params}
        for q in _graph_leaves(out):
            if id(q) not in known:
                params.append(q)
                known.add(id(q))
    return params


# ----------------------------------------------------------------------------------------------
# The augmented dynamics


class AugmentedDynamics:
    """``[z, a, g] -> [f, -a^T df/dz, -a^T df/dtheta]`` on one flat vector.

    Shapes: the flat state has ``2 * n + p`` entries, ``n = prod(S)`` (the state ``z`` and the
    adjoint ``a``, both of shape ``S``) and ``p`` the total number of parameter entries (``g``,
    the running ``dL/dtheta``). ``calls`` counts evaluations of ``func``.
    """

    def __init__(self, func, shape: torch.Size, params: list[torch.Tensor]):
        self.func, self.shape, self.params = func, shape, params
        self.n = math.prod(shape)
        self.calls = 0

    def pack(self, z, a, g) -> torch.Tensor:
        return torch.cat([z.reshape(-1), a.reshape(-1), g])

    def unpack(self, aug: torch.Tensor):
        n = self.n
        return aug[:n].view(self.shape), aug[n:2 * n].view(self.shape), aug[2 * n:]

    def __call__(self, t: torch.Tensor, aug: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        z, a, _ = self.unpack(aug)
        # An implicit backward solve differentiates these dynamics (its Newton Jacobian): keep the graph then.
        create = aug.requires_grad
        with torch.enable_grad():
            z_in = z if create else z.detach().requires_grad_(True)
            f = self.func(t, z_in)
            inputs = (z_in, *self.params)
            # retain_graph: a tensor func closes over may carry a graph built outside func, reused every call.
            vjps = torch.autograd.grad(f, inputs, grad_outputs=a, allow_unused=True, create_graph=create,
                                       retain_graph=True)
        dz = f if create else f.detach()
        da = -vjps[0] if vjps[0] is not None else torch.zeros_like(a)
        dg = [(-v if v is not None else torch.zeros_like(p)).reshape(-1).to(aug.dtype)
              for v, p in zip(vjps[1:], self.params)]
        return torch.cat([dz.reshape(-1), da.reshape(-1), *dg])


# ----------------------------------------------------------------------------------------------
# The adjoint solve


@dataclasses.dataclass
class _AdjointRun:
    """Everything the autograd Function needs besides tensors (settings, stats, the field)."""

    func: Any
    forward_kwargs: dict
    backward_kwargs: dict
    throw: bool
    params: list
    solution: Optional[Solution] = None


def _forward_without_graph(ctx, run: _AdjointRun, t, y0, params, **extra) -> torch.Tensor:
    """The forward pass of the Functions below: solve with ``run.forward_kwargs`` (and ``extra``)
    without a graph, keep the :class:`Solution` in ``run.solution``, save ``(t, ys, *params)``;
    return ``ys`` (shape ``(T, *S)``)."""
    from nodecourse.solvers.odeint import odeint

    with torch.no_grad():
        run.solution = odeint(run.func, y0, t.detach(), gradient="backprop", throw=run.throw, **extra,
                              **run.forward_kwargs)
    ctx.run = run
    ys = run.solution.ys.detach()
    ctx.save_for_backward(t, ys, *params)
    return ys


def _differentiable_solution(run: _AdjointRun, ys: torch.Tensor, t: torch.Tensor) -> Solution:
    """``run.solution`` with the Function's output ``ys`` and the given ``t`` (both on the graph);
    ``nfe_backward`` starts at 0 and ``nfe_setup`` counts the probe of :func:`field_parameters`."""
    solution = run.solution
    solution.stats["nfe_backward"] = 0
    if torch.is_grad_enabled():
        solution.stats["nfe_setup"] = 1  # the dependency probe in field_parameters
    return dataclasses.replace(solution, ys=ys, ts=t)


class AdjointFunction(torch.autograd.Function):
    """``(t, y0, *params) -> ys``: forward solve without a graph, adjoint solve for the gradient."""

    @staticmethod
    def forward(ctx, run: _AdjointRun, t, y0, *params):
        return _forward_without_graph(ctx, run, t, y0, params)

    @staticmethod
    def backward(ctx, grad_ys):
        run: _AdjointRun = ctx.run
        t, ys, *params = ctx.saved_tensors
        grad_t, grad_y0, grad_params = adjoint_backward(run, t, ys, grad_ys, params,
                                                        need_t=ctx.needs_input_grad[1])
        return (None, grad_t, grad_y0, *grad_params)


def adjoint_backward(run: _AdjointRun, t, ys, grad_ys, params, *, need_t: bool):
    """Solve the augmented system from ``t[-1]`` back to ``t[0]``; return
    ``(dL/dt or None, dL/dy0, [dL/dtheta])``. Records ``nfe_backward`` and ``backward_status``."""
    from nodecourse.solvers.odeint import odeint

    stats = run.solution.stats
    dyn = AugmentedDynamics(run.func, ys.shape[1:], params)
    n_times = ys.shape[0]
    a = grad_ys[-1].clone()
    g = torch.zeros(sum(p.numel() for p in params), dtype=ys.dtype, device=ys.device)
    grad_t = torch.zeros_like(t) if need_t else None
    status, message, n_steps, n_rejected = Status.SUCCESS, "", 0, 0

    def slope(i):
        dyn.calls += 1
        with torch.no_grad():
            return run.func(t[i].detach(), ys[i])

    if run.solution.status is not Status.SUCCESS:
        status = run.solution.status
        message = f"the forward solve ended with status {status.name}; its gradient is undefined"
    else:
        for i in range(n_times - 1, 0, -1):
            if need_t:
                grad_t[i] = (grad_ys[i] * slope(i)).sum()
            back = odeint(dyn, dyn.pack(ys[i], a, g), t[[i, i - 1]].detach(), gradient="backprop", throw=False,
                          **run.backward_kwargs)
            n_steps += back.stats.get("n_steps", 0)
            n_rejected += back.stats.get("n_rejected", 0)
            if back.status is not Status.SUCCESS:
                status = back.status
                message = (f"the backward (adjoint) solve from t={float(t[i]):.6g} to t={float(t[i - 1]):.6g} "
                           f"ended with status {status.name}: {back.message}")
                break
            _, a, g = dyn.unpack(back.ys[-1])
            a = a + grad_ys[i - 1]
        if need_t and status is Status.SUCCESS:
            # ys[0] is y0 itself (it does not move with t0): only the adjoint from later outputs counts.
            grad_t[0] = -((a - grad_ys[0]) * slope(0)).sum()

    stats["nfe_backward"] = stats.get("nfe_backward", 0) + dyn.calls
    stats["backward_n_steps"] = stats.get("backward_n_steps", 0) + n_steps
    stats["backward_n_rejected"] = stats.get("backward_n_rejected", 0) + n_rejected
    stats["backward_status"] = status
    stats["backward_message"] = message
    if status is not Status.SUCCESS:
        if run.throw:
            raise SolverError(status, f"gradient='adjoint': {message}")
        nan = float("nan")
        a = torch.full_like(a, nan)
        g = torch.full_like(g, nan)
        grad_t = torch.full_like(grad_t, nan) if grad_t is not None else None
    grad_params, offset = [], 0
    for p in params:
        grad_params.append(g[offset:offset + p.numel()].view_as(p).to(p.dtype))
        offset += p.numel()
    return grad_t, a, grad_params


#: An implicit backward solve factorises a dense Jacobian of the whole augmented state [z, a, g].
MAX_IMPLICIT_AUGMENTED = 5000


def _check_implicit_backward_size(method, y0: torch.Tensor, params) -> None:
    from nodecourse.solvers.registry import IMPLICIT, spec_for

    if spec_for(method).kind != IMPLICIT:
        return
    size = 2 * y0.numel() + sum(p.numel() for p in params)
    if size > MAX_IMPLICIT_AUGMENTED:
        raise ValueError(
            f"gradient='adjoint' with the implicit method {spec_for(method).name!r} for the backward solve would "
            f"factorise a dense ({size} x {size}) Jacobian of the augmented state [z, a, dL/dtheta] "
            f"(2 x {y0.numel()} state entries + {size - 2 * y0.numel()} parameters; the limit is "
            f"{MAX_IMPLICIT_AUGMENTED}). Pass adjoint_options={{'method': 'dopri5'}} for an explicit backward "
            f"solve, or use gradient='checkpoint'")


def check_adjoint_options(adjoint_options) -> dict:
    """Validate ``adjoint_options`` (a dict with keys from :data:`ADJOINT_OPTION_KEYS`)."""
    if adjoint_options is None:
        return {}
    if not isinstance(adjoint_options, dict):
        raise TypeError(f"adjoint_options={adjoint_options!r} must be a dict with keys from "
                        f"{list(ADJOINT_OPTION_KEYS)}, or None")
    unknown = sorted(set(adjoint_options) - set(ADJOINT_OPTION_KEYS))
    if unknown:
        raise TypeError(f"adjoint_options keys {unknown} are not understood; known keys: {list(ADJOINT_OPTION_KEYS)}")
    return dict(adjoint_options)


def solve_adjoint(func, y0: torch.Tensor, t: torch.Tensor, *, method: str, rtol: float, atol: float,
                  step_size=None, max_steps: int, throw: bool = True, backend: str = "nodecourse",
                  per_sample: bool = False, options: dict | None = None,
                  adjoint_options: dict | None = None) -> Solution:
    """``odeint(..., gradient="adjoint")``: same arguments, same :class:`Solution`.

    ``adjoint_options`` sets the backward solve: ``method``, ``rtol``, ``atol``, ``step_size``,
    ``max_steps``, ``options`` (each defaulting to the forward solve's), and ``params`` (extra
    tensors to differentiate besides an ``nn.Module`` func's parameters). After ``backward()``,
    ``solution.stats`` holds ``nfe_backward``, ``backward_n_steps``, ``backward_n_rejected``,
    ``backward_status`` (a :class:`Status`) and ``backward_message``.
    """
    adj = check_adjoint_options(adjoint_options)
    forward_kwargs = dict(method=method, rtol=rtol, atol=atol, step_size=step_size, max_steps=max_steps,
                          backend=backend, per_sample=per_sample, options=options)
    b_method = adj.get("method", method)
    same = b_method == method
    backward_kwargs = dict(method=b_method, rtol=adj.get("rtol", rtol), atol=adj.get("atol", atol),
                           step_size=adj.get("step_size", step_size if same else None),
                           max_steps=adj.get("max_steps", max_steps),
                           options=adj.get("options", options if same else None), backend=backend)
    for name in ("rtol", "atol"):
        value = backward_kwargs[name]
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
            raise ValueError(f"adjoint_options['{name}']={value!r} must be a number > 0")
    params = field_parameters(func, y0, t[0], adj.get("params", ()))
    _check_implicit_backward_size(b_method, y0, params)
    run = _AdjointRun(func=func, forward_kwargs=forward_kwargs, backward_kwargs=backward_kwargs, throw=throw,
                      params=params)
    return _differentiable_solution(run, AdjointFunction.apply(run, t, y0, *params), t)


# ----------------------------------------------------------------------------------------------
# Output-time gradients for the modes that differentiate through the solver


class _TimeNode(torch.autograd.Function):
    """Identity on ``y``; its backward adds the dependence on the output times through the flow.

    ``entry=True`` (on ``y0``): the adjoint reaching ``y0`` gives ``dL/dt0 = -<dL/dy0, f(t0, y0)>``.
    ``entry=False`` (on ``ys``, shape ``(T, *S)``): ``dL/dt_i = <dL/dy_i, f(t_i, y_i)>``.
    """

    @staticmethod
    def forward(ctx, info, entry: bool, t, y):
        ctx.info, ctx.entry = info, entry
        ctx.save_for_backward(t, y)
        return y.view_as(y)

    @staticmethod
    def backward(ctx, grad_y):
        t, y = ctx.saved_tensors
        grad_t = None
        if ctx.needs_input_grad[2]:
            with torch.no_grad():
                if ctx.entry:
                    grad_t = torch.zeros_like(t)
                    grad_t[0] = -(grad_y * ctx.info.slope(t[0], y)).sum()
                else:
                    grad_t = torch.stack([(grad_y[i] * ctx.info.slope(t[i], y[i].detach())).sum()
                                          for i in range(len(t))]).to(t.dtype)
        return None, None, grad_t, grad_y


class _TimeInfo:
    def __init__(self, func, stats_holder):
        self.func, self.stats_holder = func, stats_holder

    def slope(self, ti, yi):
        stats = self.stats_holder.get("stats")
        if stats is not None:
            stats["nfe_backward"] = stats.get("nfe_backward", 0) + 1
        return self.func(ti.detach(), yi)


def attach_time_gradients(solve, func, y0: torch.Tensor, t: torch.Tensor) -> Solution:
    """Run ``solve(y0_in, t_detached) -> Solution`` so that the result is differentiable in ``t``.

    The solver itself treats times as numbers; the dependence of ``ys`` on ``t`` is added by two
    identity nodes whose backward uses the flow: ``dy(t_i)/dt_i = f(t_i, y_i)`` and
    ``dy(t_i)/dt_0 = -(dy(t_i)/dy_0) f(t_0, y_0)``. Each costs ``len(t) + 1`` evaluations of
    ``func`` in the backward pass (counted in ``stats["nfe_backward"]``).
    """
    holder: dict = {}
    info = _TimeInfo(func, holder)
    y_in = _TimeNode.apply(info, True, t, y0)
    solution = solve(y_in, t.detach())
    holder["stats"] = solution.stats
    solution.stats.setdefault("nfe_backward", 0)
    ys = _TimeNode.apply(info, False, t, solution.ys)
    return dataclasses.replace(solution, ys=ys, ts=t)


# ----------------------------------------------------------------------------------------------
# Checkpointing on the step record


class CheckpointFunction(torch.autograd.Function):
    """``(t, y0, *params) -> ys``: forward solve without a graph that keeps the state at the start
    of every accepted step (the step record); the backward pass replays each accepted step with
    autograd, last to first, and chains the vector-Jacobian products: the exact gradient of the
    discrete solve (step sizes held fixed, as backprop holds them), for every method."""

    @staticmethod
    def forward(ctx, run: _AdjointRun, t, y0, *params):
        return _forward_without_graph(ctx, run, t, y0, params, record_steps="states",
                                      on_step=run.backward_kwargs.get("on_step"))

    @staticmethod
    def backward(ctx, grad_ys):
        run: _AdjointRun = ctx.run
        t, ys, *params = ctx.saved_tensors
        return (None, None, *checkpoint_backward(run, t, grad_ys, params))


def _replay_kwargs(run: _AdjointRun, h: float) -> dict:
    """Settings that make ``odeint`` take exactly the recorded step of size ``|h|`` (fixed-step and
    implicit methods get a step size a hair above it, so rounding cannot split the step in two)."""
    from nodecourse.solvers.registry import ADAPTIVE, spec_for

    kw = dict(run.forward_kwargs)
    kw["max_steps"] = 1
    kw["per_sample"] = False
    if spec_for(kw["method"]).kind == ADAPTIVE:  # a name or a ButcherTableau
        kw["options"] = {**(kw.get("options") or {}), "first_step": abs(h)}
    else:
        kw["step_size"] = abs(h) * (1 + 1e-9)
    return kw


def checkpoint_backward(run: _AdjointRun, t, grad_ys, params):
    """Replay the accepted steps last to first; return ``[dL/dy0, *dL/dparams]``."""
    from nodecourse.solvers.odeint import odeint

    solution = run.solution
    stats = solution.stats
    if solution.status is not Status.SUCCESS:
        message = f"the forward solve ended with status {solution.status.name}; its gradient is undefined"
        stats["backward_status"], stats["backward_message"] = solution.status, message
        if run.throw:
            raise SolverError(solution.status, f"gradient='checkpoint': {message}")
        return [torch.full_like(grad_ys[0], float("nan"))] + [torch.full_like(p, float("nan")) for p in params]
    record = solution.steps
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
    grad_params = [torch.zeros_like(p) for p in params]
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
            step = odeint(run.func, y_in, times, gradient="backprop", throw=False, **_replay_kwargs(run, h))
            nfe += step.stats["nfe"]
            if step.status is not Status.SUCCESS:
                message = (f"replaying the accepted step at t={t0:.6g} (h={h:.3g}) ended with status "
                           f"{step.status.name}: {step.message}")
                stats["backward_status"], stats["backward_message"] = step.status, message
                stats["nfe_backward"] = stats.get("nfe_backward", 0) + nfe
                if run.throw:
                    raise SolverError(step.status, f"gradient='checkpoint': {message}")
                return [torch.full_like(a, float("nan"))] + [torch.full_like(p, float("nan")) for p in params]
            outs = [step.ys[-1]] + [step.ys[j + 1] for j in range(len(inside))]
            cotangents = [a] + [grad_ys[i] for i in inside]
            grads = torch.autograd.grad(outs, [y_in, *params], grad_outputs=cotangents, allow_unused=True)
        a = grads[0] if grads[0] is not None else torch.zeros_like(a)
        for j, g in enumerate(grads[1:]):
            if g is not None:
                grad_params[j] = grad_params[j] + g
    a = a + grad_ys[0]
    stats["nfe_backward"] = stats.get("nfe_backward", 0) + nfe
    stats["backward_status"], stats["backward_message"] = Status.SUCCESS, ""
    return [a] + grad_params


def solve_checkpoint(func, y0: torch.Tensor, t: torch.Tensor, *, method: str, rtol: float, atol: float,
                     step_size=None, max_steps: int, throw: bool = True, backend: str = "nodecourse",
                     per_sample: bool = False, options: dict | None = None, on_step=None) -> Solution:
    """``odeint(..., gradient="checkpoint")`` on the step record (see :class:`CheckpointFunction`).

    ``odeint`` has validated the arguments (``validate.check_gradient`` refuses ``per_sample``
    and ``backend="torchdiffeq"`` here). Memory: one state per accepted step (not the stages'
    activations). Work: every accepted step is computed twice (``stats["nfe_backward"]`` counts
    the replays).
    """
    forward_kwargs = dict(method=method, rtol=rtol, atol=atol, step_size=step_size, max_steps=max_steps,
                          backend=backend, per_sample=per_sample, options=options)
    params = field_parameters(func, y0, t[0])
    run = _AdjointRun(func=func, forward_kwargs=forward_kwargs, backward_kwargs={"on_step": on_step}, throw=throw,
                      params=params)
    return _differentiable_solution(run, CheckpointFunction.apply(run, t, y0, *params), t)
