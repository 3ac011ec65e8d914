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
        raise TypeError(
            f"{name}={type(pair).__name__}: give a pair ({name}=(x, y)), x a tensor (N, ...) or a "
            f"tuple of tensors with N rows each, y a tensor with N rows"
        )
    x, y = pair
    xs = (x,) if isinstance(x, torch.Tensor) else (tuple(x) if isinstance(x, (tuple, list)) else None)
    if not xs or not all(isinstance(p, torch.Tensor) for p in xs):
        raise TypeError(
            f"{name}: x is a {type(x).__name__}; give a tensor (N, ...) or a tuple of tensors "
            f"(the model is then called as model(*x))"
        )
    n = int(xs[0].shape[0]) if xs[0].dim() > 0 else 0
    if n < 2:
        raise ValueError(f"{name}: x has {n} row(s); the audit needs at least 2 (rows are inputs)")
    bad = [i for i, p in enumerate(xs) if p.dim() == 0 or p.shape[0] != n]
    if bad:
        raise ValueError(
            f"{name}: parts {bad} of x do not have {n} rows (shapes "
            f"{[tuple(p.shape) for p in xs]}); every part of x must be batch-first. Keep a part "
            f"shared by all rows (a time grid) inside the model: nodecourse.audit.SharedInputs"
        )
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


def _rows_text(bad: torch.Tensor) -> str:
    rows = torch.nonzero(bad).flatten().tolist()
    more = f" and {len(rows) - 1} more row{'s' if len(rows) > 2 else ''}" if len(rows) > 1 else ""
    return f"row {rows[0]}{more}"


def check_finite(name: str, pair) -> None:
    """NaN or inf in ``x`` or ``y`` of split ``name``: a ``ValueError`` naming the split, the part and the row."""
    x, y = pair
    named = [(f"x[{i}]" if not isinstance(x, torch.Tensor) else "x", p) for i, p in enumerate(parts(x))]
    if y is not None:
        named.append(("y", y))
    for part, p in named:
        if not p.is_floating_point() and not p.is_complex():
            continue
        bad = ~torch.isfinite(p.reshape(p.shape[0], -1)).all(dim=1) if p.dim() > 0 else ~torch.isfinite(p)
        if bool(bad.any()):
            what = "NaN" if bool(torch.isnan(p).any()) else "inf"
            raise ValueError(
                f"{name}: {part} contains {what} at {_rows_text(bad.cpu())}; drop or impute those rows "
                f"before the audit (a non-finite input makes every solve on its row fail)"
            )


def check_against_outputs(name: str, pair, out: torch.Tensor, *, task: str) -> None:
    """The targets of split ``name`` against the model's outputs on its first rows (``out``, ``(2, ...)``):
    labels in range for classification, one target per output for regression, none for density."""
    _, y = pair
    if task == "density":
        if y is not None:
            raise ValueError(
                f"{name}: task='density' takes no targets (the model returns log p(x)); give {name}=(x, None)"
            )
        if out.reshape(out.shape[0], -1).shape[1] != 1:
            raise ValueError(
                f"{name}: task='density' needs one log p(x) per row; the model returns "
                f"{tuple(out.shape[1:])} per row: a classifier or a regressor? set task="
            )
        return
    per_row = out.reshape(out.shape[0], -1).shape[1]
    if task == "regression":
        y_row = y.reshape(y.shape[0], -1).shape[1]
        if tuple(y.shape[1:]) != tuple(out.shape[1:]) and y_row != per_row:
            hint = " (integer labels: a classifier? task='classification')" if not y.is_floating_point() else ""
            raise ValueError(
                f"{name}: task='regression' needs targets shaped like the model's output "
                f"{tuple(out.shape[1:])} per row; y has {tuple(y.shape[1:])} per row{hint}"
            )
        return
    # classification
    if y.dim() > 1 and not (y.dim() == 2 and y.shape[1] == 1):
        raise ValueError(
            f"{name}: task='classification' needs one label per row; y has shape {tuple(y.shape)} "
            "(one-hot targets: give y.argmax(1); continuous targets: task='regression')"
        )
    labels = y.reshape(-1)
    if labels.is_floating_point() and not bool((labels == labels.round()).all()):
        raise ValueError(
            f"{name}: task='classification' needs integer labels; y holds non-integer values "
            "(continuous targets: task='regression')"
        )
    n_classes = 2 if per_row == 1 else per_row
    bad = (labels < 0) | (labels >= n_classes)
    if bool(bad.any()):
        value = labels[bad][0].item()
        raise ValueError(
            f"{name}: label {value:g} at {_rows_text(bad.cpu())} is out of range: the model returns "
            f"{per_row} logit{'s' if per_row > 1 else ''} per row, so labels are 0 to {n_classes - 1}"
        )
