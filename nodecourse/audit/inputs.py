"""The data an audit is given: ``(x, y)`` pairs, sliced by rows, cast, and perturbed.

``x`` is one tensor ``(N, ...)`` (the model is called as ``model(x)``) or a tuple of tensors that
all have ``N`` rows (called as ``model(*x)``; a sequence model whose time grid is shared by every
row keeps the grid itself: see :class:`nodecourse.audit.SharedInputs`). ``y`` has ``N`` rows
(class indices, 0/1 labels or regression targets); for ``task="density"`` it may be ``None``.
"""
from __future__ import annotations

from typing import Union

import torch

Inputs = Union[torch.Tensor, tuple]


def parts(x: Inputs) -> tuple[torch.Tensor, ...]:
    """``x`` as a tuple of tensors."""
    return (x,) if isinstance(x, torch.Tensor) else tuple(x)


def rebuild(x: Inputs, new_parts) -> Inputs:
    """``new_parts`` in ``x``'s structure (one tensor or a tuple)."""
    new_parts = tuple(new_parts)
    return new_parts[0] if isinstance(x, torch.Tensor) else new_parts


def n_rows(x: Inputs) -> int:
    return int(parts(x)[0].shape[0])


def take(x: Inputs, rows) -> Inputs:
    """The rows ``rows`` (a slice, or a 1-D index tensor) of every part of ``x``."""
    return rebuild(x, (p[rows] for p in parts(x)))


def call(model, x: Inputs):
    return model(x) if isinstance(x, torch.Tensor) else model(*x)


def cast(x: Inputs, dtype: torch.dtype) -> Inputs:
    """Floating parts of ``x`` in ``dtype`` (masks and indices as they are, if not floating)."""
    return rebuild(x, (p.to(dtype) if p.is_floating_point() else p for p in parts(x)))


def dtype_of(x: Inputs) -> torch.dtype:
    floating = [p for p in parts(x) if p.is_floating_point()]
    return floating[0].dtype if floating else torch.get_default_dtype()


def check_pair(name: str, pair, *, task: str) -> tuple[Inputs, torch.Tensor | None]:
    """``pair`` = ``(x, y)`` checked: tensors, one row count. Errors name the argument and the fix."""
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise TypeError(f"{name}={type(pair).__name__}: give a pair ({name}=(x, y)), x a tensor (N, ...) or a "
                        f"tuple of tensors with N rows each, y a tensor with N rows")
    x, y = pair
    xs = (x,) if isinstance(x, torch.Tensor) else (tuple(x) if isinstance(x, (tuple, list)) else None)
    if not xs or not all(isinstance(p, torch.Tensor) for p in xs):
        raise TypeError(f"{name}: x is a {type(x).__name__}; give a tensor (N, ...) or a tuple of tensors "
                        f"(the model is then called as model(*x))")
    n = int(xs[0].shape[0]) if xs[0].dim() > 0 else 0
    if n < 2:
        raise ValueError(f"{name}: x has {n} row(s); the audit needs at least 2 (rows are inputs)")
    bad = [i for i, p in enumerate(xs) if p.dim() == 0 or p.shape[0] != n]
    if bad:
        raise ValueError(f"{name}: parts {bad} of x do not have {n} rows (shapes "
                         f"{[tuple(p.shape) for p in xs]}); every part of x must be batch-first. Keep a part "
                         f"shared by all rows (a time grid) inside the model: nodecourse.audit.SharedInputs")
    if y is None:
        if task != "density":
            raise ValueError(f"{name}: y is None; task={task!r} needs targets (y with {n} rows)")
    elif not isinstance(y, torch.Tensor) or y.dim() == 0 or y.shape[0] != n:
        shape = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        raise ValueError(f"{name}: y has shape {shape}; give a tensor with {n} rows, one target per row of x")
    return (x if isinstance(x, torch.Tensor) else tuple(xs)), y


def feature_scale(x: Inputs) -> torch.Tensor:
    """Per-feature standard deviation over the rows of the first floating part of ``x`` (the scale of noise)."""
    first = next(p for p in parts(x) if p.is_floating_point())
    return first.detach().std(dim=0, keepdim=True).clamp_min(1e-12)


def add_noise(x: Inputs, sigma: float, scale: torch.Tensor, generator: torch.Generator) -> Inputs:
    """``x`` with Gaussian noise of ``sigma`` x ``scale`` (per feature) added to its first floating part."""
    out, done = [], False
    for p in parts(x):
        if not done and p.is_floating_point():
            noise = torch.randn(p.shape, generator=generator, dtype=p.dtype).to(p.device)
            p = p + sigma * scale.to(p) * noise
            done = True
        out.append(p)
    return rebuild(x, out)
