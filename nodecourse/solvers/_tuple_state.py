"""Tuple states, torchdiffeq's convention: ``odeint(func, (y0_a, y0_b), t)`` with
``func(t, (y_a, y_b))`` returning a tuple of slopes shaped like the components.

As torchdiffeq does, the components are flattened into one state vector (``torch.cat`` of their
flattened entries), the flat problem is solved by the ordinary path (every method, every gradient
mode, both backends), and the solution is split back: ``Solution.ys`` is then a tuple of tensors,
component ``i`` of shape ``(T, *y0[i].shape)``. Gradients reach each component through the
concatenation. The error norm is the RMS over all entries of all components (the same as for
the flat state), unless ``options["norm"]`` is given: it then receives the tuple of components,
as in torchdiffeq. ``Solution.steps`` (``record_steps``) and ``on_step`` events hold the flat state.

Per-sample mode flattens each row: every component has the batch first, shape ``(B, ...)``, and the
flat state has shape ``(B, N)``.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn


class TupleLayout:
    """Where each component lives in the flat state.

    ``shapes``: the components' shapes; ``rows``: ``()``, or ``(B,)`` in per-sample mode (the flat
    state is then ``(B, N)``); ``dtype``: the components' common dtype; ``bounds``: ``(start, stop)``
    of each component along the flat state's last dimension.
    """

    def __init__(self, shapes: tuple[torch.Size, ...], rows: tuple[int, ...], dtype: torch.dtype):
        self.shapes, self.rows, self.dtype = shapes, rows, dtype
        sizes = [math.prod(shape[len(rows) :]) for shape in shapes]
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        self.bounds = [(a, a + n) for a, n in zip(starts, sizes)]

    def flatten(self, parts) -> torch.Tensor:
        """Components -> flat state, shape ``(*rows, N)``."""
        return torch.cat([p.reshape((*self.rows, -1)) for p in parts], dim=-1)

    def split(self, flat: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Flat state(s) of shape ``(*lead, *rows, N)`` -> components of shape ``(*lead, *shape_i)``
        (``lead`` is ``()`` for a state, ``(T,)`` for a trajectory)."""
        lead = flat.shape[: flat.dim() - 1 - len(self.rows)]
        return tuple(flat[..., a:b].reshape((*lead, *shape)) for (a, b), shape in zip(self.bounds, self.shapes))


def is_tuple_state(y0) -> bool:
    """A tuple (a state in parts), or a list of tensors (refused by :func:`layout_of` with its fix)."""
    return isinstance(y0, tuple) or (
        isinstance(y0, list) and len(y0) > 0 and all(isinstance(part, torch.Tensor) for part in y0)
    )


def layout_of(y0, per_sample: bool) -> TupleLayout:
    """Check a tuple ``y0`` and return its layout. Errors name the component, its value and the fix."""
    if isinstance(y0, list):
        raise TypeError(
            f"y0 is a list of {len(y0)} items; pass a tuple of tensors (torchdiffeq's convention for "
            f"a state in several parts: y0=tuple(y0)) or one tensor"
        )
    if len(y0) == 0:
        raise ValueError("y0=() is an empty tuple; give at least one tensor")
    first = y0[0]
    for i, part in enumerate(y0):
        if not isinstance(part, torch.Tensor):
            raise TypeError(
                f"y0[{i}] is {type(part).__name__}; a tuple y0 is a state in parts (torchdiffeq's "
                f"convention) and each part must be a tensor. For one state vector pass a tensor: "
                f"torch.tensor(y0, dtype=torch.float32)"
            )
        if not torch.is_floating_point(part) or part.dtype != first.dtype:
            raise TypeError(
                f"y0[{i}] has dtype {part.dtype} and y0[0] has {first.dtype}; the parts of a tuple "
                f"state are solved as one vector and need one floating dtype (e.g. .to({first.dtype}))"
            )
        if part.device != first.device:
            raise ValueError(
                f"y0[{i}] is on {part.device} and y0[0] on {first.device}; put every part on one "
                f"device (e.g. y0[{i}].to({str(first.device)!r}))"
            )
    rows: tuple[int, ...] = ()
    if per_sample:
        if any(part.dim() == 0 or part.shape[0] != first.shape[0] for part in y0):
            raise ValueError(
                f"per_sample=True with a tuple state needs every part to have the batch first, with "
                f"one batch size; got shapes {[tuple(p.shape) for p in y0]}"
            )
        rows = (first.shape[0],)
    return TupleLayout(tuple(part.shape for part in y0), rows, first.dtype)


class TupleFunc(nn.Module):
    """``func`` on tuples as a function of the flat state (an ``nn.Module``, so that an ``nn.Module``
    ``func``'s parameters are found by the adjoint). Each call checks the returned parts: a tuple of
    ``len(shapes)`` tensors with the components' shapes and dtype (the flat shape alone would let
    a part of the wrong shape through when the sizes add up)."""

    def __init__(self, func, layout: TupleLayout):
        super().__init__()
        self.base_func = func
        self.layout = layout

    @property
    def __wrapped__(self):  # the field's own tensors, for the dtype/device diagnosis
        return self.base_func

    def forward(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        parts = self.base_func(t, self.layout.split(y))
        shapes, dtype = self.layout.shapes, self.layout.dtype
        if not isinstance(parts, (tuple, list)) or len(parts) != len(shapes):
            raise TypeError(
                f"func(t, y) returned {type(parts).__name__}"
                f"{f' of length {len(parts)}' if isinstance(parts, (tuple, list)) else ''} for a tuple "
                f"state of {len(shapes)} parts; return a tuple of {len(shapes)} slopes shaped "
                f"{[tuple(s) for s in shapes]}"
            )
        for i, (part, shape) in enumerate(zip(parts, shapes)):
            if not isinstance(part, torch.Tensor) or part.shape != shape or part.dtype != dtype:
                got = (
                    f"shape {tuple(part.shape)}, dtype {part.dtype}"
                    if isinstance(part, torch.Tensor)
                    else type(part).__name__
                )
                raise ValueError(
                    f"func(t, y)[{i}] returned {got}; the slope of part {i} must have shape "
                    f"{tuple(shape)} and dtype {dtype}, as y[{i}]"
                )
        return self.layout.flatten(parts)


def _norm_on_parts(options, layout: TupleLayout):
    """``options`` with a callable ``norm`` wrapped to receive the tuple of components (torchdiffeq's
    convention); anything else comes back unchanged (odeint checks it)."""
    if not isinstance(options, dict) or not callable(options.get("norm")):
        return options
    norm = options["norm"]
    return {**options, "norm": lambda flat: norm(layout.split(flat))}


def _adjoint_norm_on_parts(adjoint_options, layout: TupleLayout):
    """``adjoint_options`` with a callable ``norm`` wrapped as torchdiffeq wraps it for a tuple state: the
    backward solve calls it on ``(t, y, adj_y, *adj_params)`` of the flat state, and it receives
    ``(t, y_a, y_b, ..., adj_y_a, adj_y_b, ..., *adj_params)``, each part in its component's shape.
    Anything else (no norm, ``"seminorm"``, a norm in the backward ``options``) comes back unchanged."""
    if not isinstance(adjoint_options, dict) or not callable(adjoint_options.get("norm")):
        return adjoint_options
    norm = adjoint_options["norm"]

    def on_parts(parts):
        t, y, adj_y, *adj_params = parts
        return norm((t, *layout.split(y), *layout.split(adj_y), *adj_params))

    return {**adjoint_options, "norm": on_parts}


def solve_tuple(solve, func, y0: tuple, t: torch.Tensor, **settings):
    """``odeint`` for a tuple ``y0``: flatten, ``solve(func_flat, y0_flat, t, **settings)`` (the
    ordinary ``odeint``, injected), split ``ys`` back into a tuple (component ``i``: shape
    ``(T, *y0[i].shape)``)."""
    layout = layout_of(y0, settings.get("per_sample", False) is True)
    settings["options"] = _norm_on_parts(settings.get("options"), layout)
    settings["adjoint_options"] = _adjoint_norm_on_parts(settings.get("adjoint_options"), layout)
    solution = solve(TupleFunc(func, layout), layout.flatten(y0), t, **settings)
    return dataclasses.replace(solution, ys=layout.split(solution.ys))
