"""The stochastic adjoint (Li et al. 2020) behind ``sdeint(..., gradient="adjoint")``.

The forward solve keeps no graph. The backward pass solves, from ``ts[-1]`` back to ``ts[0]`` on the same
Brownian path, the augmented Stratonovich SDE of the state ``y``, its adjoint ``a = dL/dy`` and the parameter
adjoint ``a_theta``:

    dy = f dt + g o dW
    da = -(a . df/dy) dt - (a . dg/dy) o dW
    da_theta = -(a . df/dtheta) dt - (a . dg/dtheta) o dW

(``o``: Stratonovich). Written as one vector field applied to an increment ``(dt, dW)``, every term of the
adjoint parts is a vector-Jacobian product of ``a`` with ``f dt + g dW``, so one autograd call per evaluation
makes them all. Backward steps are Heun's method (Stratonovich; strong order 1 for diagonal noise) with
``dt < 0`` and the increments ``W(t_k) - W(t_{k+1})`` of the forward path. At each output time the state
is reset to the forward solution there and ``dL/dys[i]`` is added to ``a``.

The gradients approximate backprop's through the same solve, with an error that vanishes as ``dt`` does;
memory does not grow with the number of steps. Parameters (:func:`sde_parameters`) are ``sde``'s own when it
is a ``torch.nn.Module`` and every tensor requiring grad that ``sde.f`` and ``sde.g`` hold (closure, globals,
attributes, modules: the search of the ODE routes, :func:`nodecourse.solvers._dependencies.closed_over`);
one that carries a graph built before the solve is refused by name. A parameter no evaluation reached gets
None, as with backprop.
"""

from __future__ import annotations

from typing import Any

import torch

from nodecourse.solvers._dependencies import closed_over


def sde_parameters(sde, error=ValueError) -> list[torch.Tensor]:
    """The tensors the adjoint differentiates: ``sde.parameters()`` for a module, then every other tensor
    requiring grad that the search finds from ``sde.f`` and ``sde.g``. Raises ``error`` for one that is
    not a leaf (its graph would be walked at every backward evaluation)."""
    params = [p for p in sde.parameters() if p.requires_grad] if isinstance(sde, torch.nn.Module) else []
    for fn in (sde.f, sde.g):
        for x, _ in closed_over(fn):
            if x.grad_fn is not None:
                raise error(
                    "sdeint(gradient='adjoint'): the SDE uses a tensor built with a graph before the solve (e.g. "
                    "q = p * p); the adjoint would walk that graph at every backward evaluation. Compute it inside "
                    "f or g, make it a leaf (an nn.Parameter), or use gradient='backprop'"
                )
            if all(x is not p for p in params):
                params.append(x)
    return params


def adjoint_solve(counted, y0, ts, params, *, method: str, dt: float, bm, integrate, step_times):
    """Solve forward without a graph; the backward pass is the adjoint solve.

    ``counted`` is the SDE with its evaluations counted and its noise product (``.sde``, ``.prod``);
    ``integrate`` and ``step_times`` are the forward loop and its grid (passed in so that this module
    needs nothing from the solver's). Returns ``(ys, steps, status, message, stats)``; ``stats``
    (``nfe_backward``, ``steps_backward``) fills in when the backward pass runs.
    """
    stats: dict[str, Any] = {"nfe_backward": 0, "steps_backward": 0}
    box: dict[str, Any] = {"integrate": integrate, "step_times": step_times}
    ys = _AdjointSolve.apply(counted, ts, method, dt, bm, stats, box, y0, *params)
    return ys, box["steps"], box["status"], box["message"], stats


class _AdjointSolve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, counted, ts, method, dt, bm, stats, box, y0, *params):
        with torch.no_grad():
            ys, steps, status, message = box["integrate"](counted, y0, ts, method, dt, bm)
        box.update(steps=steps, status=status, message=message)
        ctx.counted, ctx.dt, ctx.bm, ctx.stats, ctx.step_times = counted, dt, bm, stats, box["step_times"]
        ctx.save_for_backward(ts, ys, *params)
        return ys

    @staticmethod
    def backward(ctx, grad_ys):
        ts, ys, *params = ctx.saved_tensors
        counted, dt, bm, stats = ctx.counted, ctx.dt, ctx.bm, ctx.stats
        as_t = lambda v: torch.as_tensor(v, dtype=ys.dtype, device=ys.device)  # noqa: E731
        a = grad_ys[-1].clone()
        a_params = [torch.zeros_like(p) for p in params]
        stats["used"] = [False] * len(params)  # parameter k reached by some evaluation (else its gradient is None)
        grid = ctx.step_times(ts, dt)
        for i in range(len(ts) - 1, 0, -1):
            y = ys[i]  # reset to the forward solution at each output time
            times = [float(ts[i - 1])] + grid[i - 1]
            for k in range(len(times) - 1, 0, -1):
                t_hi, t_lo = as_t(times[k]), as_t(times[k - 1])
                dw = -bm(t_lo, t_hi)
                y, a, a_params = _heun(counted, params, t_hi, t_lo, y, a, a_params, dw, stats)
                stats["steps_backward"] += 1
            a = a + grad_ys[i - 1]
        used = stats.pop("used")
        a_params = [g if seen else None for g, seen in zip(a_params, used)]
        return (None, None, None, None, None, None, None, a, *a_params)


def _field(counted, params, t, y, a, dt, dw, stats):
    """The augmented vector field applied to the increment ``(dt, dw)``: ``(dy, da, da_params)``."""
    with torch.enable_grad():
        y = y.detach().requires_grad_(True)
        inc = counted.sde.f(t, y) * dt + counted.prod(counted.sde.g(t, y), dw)
        grads = torch.autograd.grad(inc, [y, *params], grad_outputs=a, allow_unused=True)
    stats["nfe_backward"] += 2  # one drift and one diffusion evaluation (and their vector-Jacobian product)
    stats["used"] = [seen or g is not None for seen, g in zip(stats["used"], grads[1:])]
    da = -grads[0] if grads[0] is not None else torch.zeros_like(a)
    dps = [-g if g is not None else torch.zeros_like(p) for g, p in zip(grads[1:], params)]
    return inc.detach(), da, dps


def _heun(counted, params, t0, t1, y, a, a_params, dw, stats):
    """One Heun step of the augmented SDE from ``t0`` to ``t1`` (here ``t1 < t0``)."""
    dt = t1 - t0
    dy0, da0, dp0 = _field(counted, params, t0, y, a, dt, dw, stats)
    dy1, da1, dp1 = _field(counted, params, t1, y + dy0, a + da0, dt, dw, stats)
    y = y + 0.5 * (dy0 + dy1)
    a = a + 0.5 * (da0 + da1)
    a_params = [p + 0.5 * (u + v) for p, u, v in zip(a_params, dp0, dp1)]
    return y, a, a_params
