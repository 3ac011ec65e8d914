"""The Jacobian of a DEQ's map at its fixed point: a Hutchinson estimate of ||df/dz||_F^2
(the training regulariser of Bai et al. 2021), its exact value for small problems, and a
power-method estimate of the spectral radius (whether the iteration can contract)."""
from __future__ import annotations

import torch

NOISES = ("gaussian", "rademacher")
REDUCTIONS = ("mean", "sum", "none")


def _batch(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(t.shape[0], -1) if t.dim() >= 2 else t.reshape(1, -1)


def _check_pair(f_out: torch.Tensor, z: torch.Tensor) -> None:
    if not isinstance(f_out, torch.Tensor) or not isinstance(z, torch.Tensor):
        raise TypeError("f_out and z must be tensors (f_out = f(z, ...) computed from z)")
    if f_out.shape != z.shape:
        raise ValueError(f"f_out has shape {tuple(f_out.shape)} but z has {tuple(z.shape)}; "
                         "pass f_out = f(z) for the same z")
    if not z.requires_grad or f_out.grad_fn is None:
        raise ValueError("f_out must be computed from z with autograd on: z.requires_grad_() before f_out = f(z)")


def jacobian_regularizer(f_out: torch.Tensor, z: torch.Tensor, n_samples: int = 1, *, noise: str = "gaussian",
                         reduction: str = "mean", generator: torch.Generator | None = None) -> torch.Tensor:
    """Hutchinson estimate of ||df/dz||_F^2 per sample: mean over ``n_samples`` probes of ||eps^T J||^2.

    With E[eps eps^T] = I (Gaussian or Rademacher probes), E||eps^T J||^2 = tr(J J^T) = ||J||_F^2,
    so the estimate is unbiased; its variance falls as 1/n_samples. It is differentiable
    (built with ``create_graph=True`` when grad mode is on), so it can be added to a loss.

    Args:
        f_out: ``f(z)``, shape of ``z``; with ``z.dim() >= 2`` the first dimension is a batch and
            f must act on each sample separately (then J is block diagonal, one block per sample).
        z: the point (requires grad), shape ``(B, ...)`` or one unbatched problem.
        n_samples: probes per sample.
        noise: ``"gaussian"`` (as in Bai et al.) or ``"rademacher"`` (lower variance).
        reduction: ``"mean"`` over the batch (default), ``"sum"``, or ``"none"`` for ``(B,)``.
        generator: a ``torch.Generator`` on z's device, for reproducible probes.

    Returns:
        a scalar (or ``(B,)`` with ``reduction="none"``).
    """
    _check_pair(f_out, z)
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples={n_samples!r} must be a positive int, e.g. n_samples=1")
    if noise not in NOISES:
        raise ValueError(f"noise={noise!r} is unknown; use one of {NOISES}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction={reduction!r} is unknown; use one of {REDUCTIONS}")
    create = torch.is_grad_enabled()
    total = None
    for i in range(n_samples):
        if noise == "gaussian":
            eps = torch.randn(f_out.shape, dtype=f_out.dtype, device=f_out.device, generator=generator)
        else:
            eps = torch.randint(0, 2, f_out.shape, device=f_out.device, generator=generator).to(f_out.dtype) * 2 - 1
        (vjp,) = torch.autograd.grad(f_out, z, eps, create_graph=create, retain_graph=True)
        sq = _batch(vjp).pow(2).sum(dim=1)
        total = sq if total is None else total + sq
    per_sample = total / n_samples
    if reduction == "none":
        return per_sample
    return per_sample.mean() if reduction == "mean" else per_sample.sum()


def exact_jacobian_frobenius(f_out: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Exact ||df/dz||_F^2 per sample, ``(B,)``, by one VJP per state dimension (small problems only)."""
    _check_pair(f_out, z)
    flat = _batch(f_out)
    total = torch.zeros(flat.shape[0], dtype=f_out.dtype, device=f_out.device)
    for j in range(flat.shape[1]):
        e = torch.zeros_like(flat)
        e[:, j] = 1
        (row,) = torch.autograd.grad(f_out, z, e.reshape(f_out.shape), retain_graph=True)
        total = total + _batch(row).pow(2).sum(dim=1)
    return total.detach()


def spectral_radius(f_out: torch.Tensor, z: torch.Tensor, n_iter: int = 30, *,
                    generator: torch.Generator | None = None) -> torch.Tensor:
    """Power-method estimate of the spectral radius of df/dz per sample, ``(B,)`` (detached).

    Iterates v <- J^T v / ||J^T v|| (J^T has J's eigenvalues) and returns ||J^T v||. It
    converges to |lambda_max| when one eigenvalue dominates in modulus; for a complex pair
    or slow convergence it is an estimate. Below 1: Picard iteration contracts locally.
    """
    _check_pair(f_out, z)
    v = torch.randn(f_out.shape, dtype=f_out.dtype, device=f_out.device, generator=generator)
    v = v / _batch(v).norm(dim=1).clamp_min(torch.finfo(v.dtype).tiny).reshape(-1, *[1] * (v.dim() - 1)) \
        if v.dim() >= 2 else v / v.norm()
    est = torch.zeros(_batch(v).shape[0], dtype=f_out.dtype, device=f_out.device)
    for _ in range(n_iter):
        (w,) = torch.autograd.grad(f_out, z, v, retain_graph=True)
        est = _batch(w).norm(dim=1)
        scale = est.clamp_min(torch.finfo(w.dtype).tiny)
        v = (_batch(w) / scale[:, None]).reshape(w.shape)
    return est.detach()
