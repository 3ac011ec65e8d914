"""What the gradient modes that do not keep the solver's graph share.

- :func:`field_parameters`: the tensors to differentiate (a module's parameters, extra ones, and
  any tensor requiring grad that the field reaches), found with one probing call;
- :class:`GradientRun`: the settings, the field and the solve function an autograd Function needs;
- :func:`forward_without_graph` and :func:`differentiable_solution`: the forward pass of those
  Functions and the :class:`Solution` they return.

Used by :mod:`~nodecourse.solvers.adjoint` and :mod:`~nodecourse.solvers.checkpoint`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import torch
from torch import nn

from nodecourse.solvers import field_checks
from nodecourse.solvers.result import Solution


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
    out = _probe_call(func, t0.detach(), y0.detach().clone())  # a copy: func never sees the caller's y0
    if isinstance(out, torch.Tensor) and out.requires_grad:
        known = {id(p) for p in params}
        for q in _graph_leaves(out):
            if id(q) not in known:
                params.append(q)
                known.add(id(q))
    return params


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

    ``solve`` is :func:`nodecourse.odeint` itself, handed in by ``odeint`` when it dispatches a
    gradient mode: the modes call the solver back (without a graph, backwards in time, one
    replayed step) without importing it, so there is no import cycle between ``odeint`` and them.
    """

    func: Any
    solve: Callable
    forward_kwargs: dict
    backward_kwargs: dict
    throw: bool
    params: list
    solution: Optional[Solution] = None


def forward_without_graph(ctx, run: GradientRun, t, y0, params, **extra) -> torch.Tensor:
    """The forward pass of the Functions below: solve with ``run.forward_kwargs`` (and ``extra``)
    without a graph, keep the :class:`Solution` in ``run.solution``, save ``(t, ys, *params)``;
    return ``ys`` (shape ``(T, *S)``)."""
    with torch.no_grad():
        run.solution = run.solve(run.func, y0, t.detach(), gradient="backprop", throw=run.throw, **extra,
                              **run.forward_kwargs)
    ctx.run = run
    ys = run.solution.ys.detach()
    ctx.save_for_backward(t, ys, *params)
    return ys


def differentiable_solution(run: GradientRun, ys: torch.Tensor, t: torch.Tensor) -> Solution:
    """``run.solution`` with the Function's output ``ys`` and the given ``t`` (both on the graph);
    ``nfe_backward`` starts at 0 and ``nfe_setup`` counts the probe of :func:`field_parameters`."""
    solution = run.solution
    solution.stats["nfe_backward"] = 0
    if torch.is_grad_enabled():
        # the dependency probe in field_parameters (plus the forward solve's own probe, per_sample)
        solution.stats["nfe_setup"] = solution.stats.get("nfe_setup", 0) + 1
    return dataclasses.replace(solution, ys=ys, ts=t)
