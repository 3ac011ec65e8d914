"""Gradients with respect to the output times ``t``, for the modes that differentiate through the
solver (``backprop``, ``checkpoint``).

The solver treats times as numbers; :func:`attach_time_gradients` adds the dependence of ``ys``
on ``t`` by two identity nodes whose backward uses the flow: ``dL/dt_i = <dL/dy_i, f(t_i, y_i)>``
for every output and ``dL/dt_0 -= <a(t_0), f(t_0, y_0)>`` with ``a(t_0)`` the adjoint reaching ``y0``.
(The adjoint mode computes its own time gradients in :mod:`~nodecourse.solvers._adjoint`.)
"""

from __future__ import annotations

import dataclasses

import torch

from nodecourse.solvers import _field_checks as field_checks
from nodecourse.solvers._result import Solution
from nodecourse.solvers._transforms import refuse_transforms
from nodecourse.validation import RandomFieldError, SecondDerivativeError


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
            if torch.is_grad_enabled():  # create_graph=True: the slopes below are taken without a graph
                raise SecondDerivativeError(
                    "gradients with respect to the output times t cannot be differentiated again "
                    "(create_graph=True): they are taken from the field's slopes without a graph. Detach t "
                    "(t.detach()) in the solve you differentiate twice"
                )
            with torch.no_grad():
                if ctx.entry:
                    grad_t = torch.zeros_like(t)
                    grad_t[0] = -(grad_y * ctx.info.slope(t[0], y)).sum()
                else:
                    grad_t = torch.stack(
                        [(grad_y[i] * ctx.info.slope(t[i], y[i].detach())).sum() for i in range(len(t))]
                    ).to(t.dtype)
        return None, None, grad_t, grad_y


class _TimeInfo:
    def __init__(self, func, stats_holder):
        self.func, self.stats_holder = func, stats_holder

    def slope(self, ti, yi):
        stats = self.stats_holder.get("stats")
        if stats is not None:
            stats["nfe_backward"] = stats.get("nfe_backward", 0) + 1
        out, drew = field_checks.call_keeping_rng(lambda: self.func(ti.detach(), yi), yi.device)
        if drew:
            # the slope would use other random numbers than the step that reached y_i: a gradient of no
            # function that ran. (Replaying is not possible: the solve never evaluated f at (t_i, y_i)
            # with a random state of its own for every output time.)
            raise RandomFieldError(
                "the gradient with respect to the output times t needs the field's slope f(t_i, y_i) at each "
                "output time, evaluated again in the backward pass; this field draws random numbers (dropout in "
                "training mode), so those slopes would use other numbers than the solve did and the time "
                "gradient would belong to no function that ran. Detach t (t.detach()) or put the field in eval "
                "mode (model.eval()) for this solve"
            )
        return out


def attach_time_gradients(solve, func, y0: torch.Tensor, t: torch.Tensor) -> Solution:
    """Run ``solve(y0_in, t_detached) -> Solution`` so that the result is differentiable in ``t``.

    The solver itself treats times as numbers; the dependence of ``ys`` on ``t`` is added by two
    identity nodes whose backward uses the flow: ``dy(t_i)/dt_i = f(t_i, y_i)`` and
    ``dy(t_i)/dt_0 = -(dy(t_i)/dy_0) f(t_0, y_0)``. Each costs ``len(t) + 1`` evaluations of
    ``func`` in the backward pass (counted in ``stats["nfe_backward"]``).
    """
    refuse_transforms("gradients with respect to t (t.requires_grad)", func, y0, t)
    holder: dict = {}
    info = _TimeInfo(func, holder)
    y_in = _TimeNode.apply(info, True, t, y0)
    solution = solve(y_in, t.detach())
    holder["stats"] = solution.stats
    solution.stats.setdefault("nfe_backward", 0)
    ys = _TimeNode.apply(info, False, t, solution.ys)
    return dataclasses.replace(solution, ys=ys, ts=t)
