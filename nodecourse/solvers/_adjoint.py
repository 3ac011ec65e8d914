"""The continuous adjoint: gradients of a solve that do not go through the solver's operations.

- :func:`solve_adjoint` (``odeint(..., gradient="adjoint")``): the continuous adjoint,
  written from scratch as a :class:`torch.autograd.Function`. The forward solve runs
  without a graph; the backward pass solves the augmented system

      dz/dt = f(t, z),   da/dt = -a^T df/dz,   dg/dt = -a^T df/dtheta

  backwards in time, one interval between output times at a time, starting each
  interval from the stored forward state and adding that output's incoming gradient
  to ``a``. Memory does not grow with the number of steps; the price is that ``z`` is
  *recomputed* by solving backwards, which is unstable when the forward flow contracts.

The other gradient modes live beside it: :mod:`~nodecourse.solvers._checkpoint`
(``gradient="checkpoint"``) and :mod:`~nodecourse.solvers._time_gradients` (gradients with
respect to the output times); what they share is in :mod:`~nodecourse.solvers._gradient_run`.

A backward solve that fails never returns a silent wrong gradient: it raises
:class:`SolverError` (``throw=True``) or fills the gradients with NaN, warns
(:class:`~nodecourse.solvers._result.BackwardSolveWarning`, naming the status) and sets
``stats["backward_status"]``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Callable

import torch

from nodecourse.solvers._control import rms
from nodecourse.solvers._gradient_run import (
    GradientRun,
    differentiable_solution,
    forward_solution,
    forward_without_graph,
    inspect_field,
    refuse_second_derivative,
)
from nodecourse.solvers._registry import IMPLICIT, spec_for
from nodecourse.solvers._request import SolveRequest
from nodecourse.solvers._result import Solution, SolverError, Status, warn_backward_failure
from nodecourse.solvers._transforms import refuse_transforms
from nodecourse.validation import RandomFieldError

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
        self.used = [False] * len(params)  # parameter k reached by some evaluation (else its gradient is None)

    def pack(self, z, a, g) -> torch.Tensor:
        return torch.cat([z.reshape(-1), a.reshape(-1), g])

    def unpack(self, aug: torch.Tensor):
        n = self.n
        return aug[:n].view(self.shape), aug[n : 2 * n].view(self.shape), aug[2 * n :]

    def __call__(self, t: torch.Tensor, aug: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        z, a, _ = self.unpack(aug)
        # An implicit backward solve differentiates these dynamics (its Newton Jacobian): keep the graph then.
        create = aug.requires_grad
        with torch.enable_grad():
            z_in = z if create else z.detach().requires_grad_(True)
            f = self.func(t, z_in)
            inputs = (z_in, *self.params)
            vjps: tuple[torch.Tensor | None, ...]  # None: an input f does not depend on
            if f.requires_grad:
                # retain_graph: a tensor func closes over may carry a graph built outside func, reused every call.
                vjps = torch.autograd.grad(
                    f, inputs, grad_outputs=a, allow_unused=True, create_graph=create, retain_graph=True
                )
            else:  # f depends on neither z nor a parameter (e.g. f = cos t): every vjp is zero
                vjps = (None,) * len(inputs)
        dz = f if create else f.detach()
        da = -vjps[0] if vjps[0] is not None else torch.zeros_like(a)
        for k, v in enumerate(vjps[1:]):
            self.used[k] = self.used[k] or v is not None
        dg = [
            (-v if v is not None else torch.zeros_like(p)).reshape(-1).to(aug.dtype)
            for v, p in zip(vjps[1:], self.params)
        ]
        return torch.cat([dz.reshape(-1), da.reshape(-1), *dg])


def augmented_norm_options(
    options: dict | None,
    forward_options: dict | None,
    shape: torch.Size,
    *,
    seminorm: bool = False,
    late_size: int = 0,
) -> dict | None:
    """The backward solve's ``options`` when they carry the forward solve's ``norm``: that norm is
    written for the state (shape ``S``), so the backward solve measures the augmented vector
    ``[z, a, g]`` by ``max(norm(z), norm(a), rms(g))`` (torchdiffeq's construction). Otherwise (no
    norm, or a norm given for the backward solve itself, which sees the flat ``[z, a, g]``): unchanged.

    ``seminorm=True`` (``adjoint_options={"norm": "seminorm"}``, Kidger, Chen and Lyons 2021): the
    parameter-gradient channels ``g`` are left out: the RMS over ``[z, a]`` (without a forward norm),
    or ``max(norm(z), norm(a))`` with the forward ``norm`` (torchdiffeq's construction). ``g`` is an
    integral that feeds nothing back into the dynamics, so its local error need not drive the step
    size; the steps it used to reject are saved (``stats["nfe_backward"]``).

    ``late_size``: the last entries of ``g`` belong to the parameters of a module the field reaches
    that its first evaluation did not (:attr:`~nodecourse.solvers._dependencies.Dependencies.late`:
    usually an encoder beside the dynamics, all zeros); they are left out of the default norms, so
    they neither dilute nor steer the step size. A norm given for the backward solve itself sees them.
    """
    norm = (options or {}).get("norm")
    forward_norm = (forward_options or {}).get("norm")
    if not seminorm and (norm is None or norm is not forward_norm):
        if norm is None and late_size:
            # the backward solve's own norm (RMS over every entry) with the late entries left out
            return {**(options or {}), "norm": lambda x: rms(x[: x.numel() - late_size])}
        return options
    n = math.prod(shape)
    if seminorm and forward_norm is None:
        # the backward solve's own norm (RMS over every entry) with the g entries left out
        return {**(options or {}), "norm": lambda x: rms(x[: 2 * n])}
    state_norm = forward_norm if forward_norm is not None else rms

    def augmented_norm(x: torch.Tensor) -> float:
        parts = [state_norm(x[:n].view(shape)), state_norm(x[n : 2 * n].view(shape))]
        if x.numel() - late_size > 2 * n and not seminorm:
            parts.append(rms(x[2 * n : x.numel() - late_size]))
        return max(abs(float(p)) for p in parts)

    return {**(options or {}), "norm": augmented_norm}


def tuple_norm(norm: Callable, shape: torch.Size, params: list[torch.Tensor]) -> Callable:
    """A norm written for the backward solve (``adjoint_options={"norm": callable}``, or
    ``adjoint_options["options"]["norm"]``), called as torchdiffeq calls it: on the tuple
    ``(t, y, adj_y, *adj_params)`` of the augmented state, each part in its own shape (``y`` and
    ``adj_y``: shape ``S``; ``adj_params[k]``: the shape of parameter k). ``t`` is a 0-d zero: this
    adjoint integrates no time channel (gradients with respect to ``t`` come from the slopes at the
    output times), so the entry torchdiffeq keeps for ``dL/dt`` is empty here. For a tuple state
    :mod:`~nodecourse.solvers._tuple_state` wraps ``norm`` further, so that it receives torchdiffeq's split
    tuple ``(t, y_a, y_b, ..., adj_y_a, adj_y_b, ..., *adj_params)``."""
    n = math.prod(shape)

    def on_parts(x: torch.Tensor):
        parts = [x.new_zeros(()), x[:n].view(shape), x[n : 2 * n].view(shape)]
        offset = 2 * n
        for p in params:
            parts.append(x[offset : offset + p.numel()].view(p.shape))
            offset += p.numel()
        return norm(tuple(parts))

    return on_parts


# ----------------------------------------------------------------------------------------------
# The adjoint solve


class AdjointFunction(torch.autograd.Function):
    """``(t, y0, *params) -> ys``: forward solve without a graph, adjoint solve for the gradient."""

    @staticmethod
    def forward(ctx, run: GradientRun, t, y0, *params):
        return forward_without_graph(ctx, run, t, y0, params)

    @staticmethod
    def backward(ctx, grad_ys):
        # under create_graph the augmented solve would differentiate itself (an implicit backward solve
        # re-entering this Function without end); refuse before any work
        refuse_second_derivative(
            "gradient='adjoint'",
            "Use gradient='checkpoint' or 'backprop' (both give the differentiable "
            "gradient of the discrete solve) for the solve you differentiate twice.",
        )
        run: GradientRun = ctx.run
        t, ys, _y0, *params = ctx.saved_tensors
        # stand-ins for the non-leaf closed-over tensors: every evaluation's vjp stops at them, and
        # autograd carries the total dL/dq back through q's own graph once
        live = run.deps.live(params) if run.deps is not None else contextlib.nullcontext(list(params))
        with live as stand:
            grad_t, grad_y0, grad_params = adjoint_backward(run, t, ys, grad_ys, stand, need_t=ctx.needs_input_grad[1])
        return (None, grad_t, grad_y0, *grad_params)


def adjoint_backward(run: GradientRun, t, ys, grad_ys, params, *, need_t: bool):
    """Solve the augmented system from ``t[-1]`` back to ``t[0]``; return
    ``(dL/dt or None, dL/dy0, [dL/dtheta])``. Records ``nfe_backward`` and ``backward_status``."""
    forward = forward_solution(run)
    stats = forward.stats
    backward = run.backward
    if backward is None:  # solve_adjoint sets it
        raise RuntimeError("gradient='adjoint': the run holds no backward solve's settings")
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

    if forward.status is not Status.SUCCESS:
        status = forward.status
        message = f"the forward solve ended with status {status.name}; its gradient is undefined"
    else:
        for i in range(n_times - 1, 0, -1):
            if grad_t is not None:  # need_t
                grad_t[i] = (grad_ys[i] * slope(i)).sum()
            back = run.solve(
                dataclasses.replace(backward, func=dyn, y0=dyn.pack(ys[i], a, g), t=t[[i, i - 1]].detach())
            )
            n_steps += back.stats.get("n_steps", 0)
            n_rejected += back.stats.get("n_rejected", 0)
            if back.status is not Status.SUCCESS:
                status = back.status
                message = (
                    f"the backward (adjoint) solve from t={float(t[i]):.6g} to t={float(t[i - 1]):.6g} "
                    f"ended with status {status.name}: {back.message} (its own method and tolerances go in "
                    f"adjoint_options and default to the forward's; the parameter-gradient entries start at 0, "
                    f"so with a tiny atol their rounding noise can stall it: adjoint_options={{'atol': 1e-9}} "
                    f"or {{'norm': 'seminorm'}} lets them not steer the step)"
                )
                break
            _, a, g = dyn.unpack(back.ys[-1])
            a = a + grad_ys[i - 1]
        if grad_t is not None and status is Status.SUCCESS:  # need_t
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
        warn_backward_failure(status, f"gradient='adjoint': {message}")
        nan = float("nan")
        a = torch.full_like(a, nan)
        g = torch.full_like(g, nan)
        grad_t = torch.full_like(grad_t, nan) if grad_t is not None else None
    grad_params, offset = [], 0
    for k, p in enumerate(params):
        # a parameter no evaluation reached gets None, as backprop gives it
        unused = status is Status.SUCCESS and not dyn.used[k]
        grad_params.append(None if unused else g[offset : offset + p.numel()].view_as(p).to(p.dtype))
        offset += p.numel()
    return grad_t, a, grad_params


#: An implicit backward solve factorises a dense Jacobian of the whole augmented state [z, a, g].
MAX_IMPLICIT_AUGMENTED = 5000


def _check_implicit_backward_size(method, y0: torch.Tensor, params) -> None:
    if spec_for(method).kind != IMPLICIT:
        return
    size = 2 * y0.numel() + sum(p.numel() for p in params)
    if size > MAX_IMPLICIT_AUGMENTED:
        raise ValueError(
            f"gradient='adjoint' with the implicit method {spec_for(method).name!r} for the backward solve would "
            f"factorise a dense ({size} x {size}) Jacobian of the augmented state [z, a, dL/dtheta] "
            f"(2 x {y0.numel()} state entries + {size - 2 * y0.numel()} parameters; the limit is "
            f"{MAX_IMPLICIT_AUGMENTED}). Pass adjoint_options={{'method': 'dopri5'}} for an explicit backward "
            f"solve, or use gradient='checkpoint'"
        )


def solve_adjoint(req: SolveRequest, *, solve: Callable[[SolveRequest], Solution]) -> Solution:
    """``odeint(..., gradient="adjoint")`` on its checked request ``req``: the same :class:`Solution`
    (``solve``: ``odeint`` on a request, called without a graph forwards and for the augmented
    system backwards, each with ``dataclasses.replace`` of ``req``'s settings).

    ``req.adjoint_options`` (checked by ``odeint``) sets the backward solve: ``method``, ``rtol``, ``atol``,
    ``step_size``, ``max_steps``, ``options`` (each defaulting to the forward solve's), ``params`` (extra
    tensors to differentiate besides an ``nn.Module`` func's parameters) and ``norm``
    (``"seminorm"``: see :func:`augmented_norm_options`; a callable: :func:`tuple_norm`); a norm in
    the backward ``options`` sees that solve's flat state ``[z, a, g]``; a forward ``options["norm"]``
    measures the backward solve's state and adjoint parts (:func:`augmented_norm_options`). After ``backward()``,
    ``solution.stats`` holds ``nfe_backward``, ``backward_n_steps``, ``backward_n_rejected``,
    ``backward_status`` (a :class:`Status`) and ``backward_message``.
    """
    func, y0, t = req.func, req.y0, req.t
    if req.adjoint_options is None:  # odeint's check_adjoint_options returns None only for another gradient
        raise RuntimeError("gradient='adjoint': the checked adjoint_options came back empty")
    backward = dict(req.adjoint_options)
    extra_params = backward.pop("params")
    norm = backward.pop("norm")
    refuse_transforms("gradient='adjoint'", func, y0, t)
    deps, random = inspect_field(func, y0, t[0], extra_params, route="gradient='adjoint'")
    params = deps.params
    if callable(norm):
        # adjoint_options={"norm": f}, torchdiffeq's spelling: f gets its tuple (t, y, adj_y, *adj_params).
        # A norm in the backward solve's own options ({"options": {"norm": f}}) is a norm of that solve's
        # flat state [z, a, g], as for any solve (lesson 10 and exercise 10 write one).
        backward["options"] = {**(backward.get("options") or {}), "norm": tuple_norm(norm, y0.shape, params)}
    else:
        late_size = sum(p.numel() for p in params[len(params) - deps.late :]) if deps.late else 0
        backward["options"] = augmented_norm_options(
            backward.get("options"), req.options, y0.shape, seminorm=norm == "seminorm", late_size=late_size
        )
    if random:
        raise RandomFieldError(
            "gradient='adjoint' with a field that draws random numbers (dropout or noise in training mode): "
            "the backward solve evaluates the field at other states and times than the forward solve did, so "
            "it cannot reuse the forward's random numbers, and the gradient would belong to no function that "
            "ran. Use gradient='checkpoint' (it replays the forward's random numbers) or 'backprop', or put "
            "the field in eval mode (func.eval()) for this solve"
        )
    _check_implicit_backward_size(backward["method"], y0, params)
    run = GradientRun(
        func=func,
        solve=solve,
        request=req.as_backprop(),
        # the augmented solve from one output time back to the one before (func, y0, t set per interval)
        backward=req.as_backprop(throw=False, per_sample=False, **backward),
        throw=req.throw,
        params=params,
        deps=deps,
    )
    return differentiable_solution(run, AdjointFunction.apply(run, t, y0, *params), t)
