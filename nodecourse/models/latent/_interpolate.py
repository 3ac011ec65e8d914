"""Interpolation: predict held-out observation times from the rest (ODE-RNN and GRU-Δt).

:func:`holdout_mask` hides a seeded fraction of each patient's observation times in a ``mask``
(B, K, D); :func:`interpolation_mse` scores a model's reconstruction there and
:func:`fit_interpolation` trains for it.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from nodecourse.models.latent._build import build_model
from nodecourse.models.latent._fit import _batches
from nodecourse.solvers import SolveConfig
from nodecourse.training import seeded_batches, train_epochs

__all__ = ["fit_interpolation", "holdout_mask", "interpolation_mse"]


def holdout_mask(mask: torch.Tensor, fraction: float = 0.5, seed: int = 0) -> torch.Tensor:
    """Hide a seeded ``fraction`` of each patient's observation *times*: returns the seen mask (B, K, D)."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction={fraction!r}: give a fraction in (0, 1)")
    g = torch.Generator().manual_seed(seed)
    keep = (torch.rand(mask.shape[:2], generator=g) >= fraction).to(mask.device, mask.dtype)
    return mask * keep.unsqueeze(-1)


def interpolation_mse(model: nn.Module, data, *, fraction: float = 0.5, seed: int = 0, batch_size: int = 256) -> float:
    """Mean squared error (normalised units) on held-out observation times of ``data``."""
    model.eval()
    err, count = 0.0, 0.0
    with torch.no_grad():
        for idx in _batches(len(data), batch_size, None):
            values, mask = data.values[idx], data.mask[idx]
            seen = holdout_mask(mask, fraction, seed + int(idx[0]))
            target = mask - seen
            pred = model.reconstruct(data.times, values, mask, seen)
            err += float((((pred - values) ** 2) * target).sum())
            count += float(target.sum())
    return err / max(count, 1.0)


def fit_interpolation(
    name: str,
    train,
    *,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 3e-3,
    hidden_dim: int = 64,
    solver: SolveConfig | None = None,
    fraction: float = 0.5,
    seed: int = 0,
    progress: bool = True,
) -> tuple[nn.Module, dict]:
    """Train ``odernn`` or ``gru-dt`` to predict held-out observation times from the rest."""
    if name not in ("odernn", "gru-dt"):
        raise ValueError(f"model={name!r}: interpolation is measured for 'odernn' and 'gru-dt'")
    model = build_model(name, train, hidden_dim=hidden_dim, solver=solver, seed=seed)
    start = time.perf_counter()
    step = 0

    def loss_on_batch(idx):
        nonlocal step
        values, mask = train.values[idx], train.mask[idx]
        seen = holdout_mask(mask, fraction, seed * 100_003 + step)
        step += 1
        target = mask - seen
        pred = model.reconstruct(train.times, values, mask, seen)
        return (((pred - values) ** 2) * target).sum() / target.sum().clamp_min(1), {}

    train_epochs(
        model,
        loss_on_batch,
        seeded_batches(len(train), batch_size, seed=seed, device=train.values.device),
        epochs=epochs,
        optimizer=torch.optim.Adam(model.parameters(), lr=lr),
        clip_grad_norm=5.0,
        progress=progress,
        desc=f"{name} interpolation",
    )
    return model, {"seconds": time.perf_counter() - start, "nfe": model.solver_stats["nfe"]}
