"""The Jacobian of a DEQ's map at its fixed point: a Hutchinson estimate of ||df/dz||_F^2
(the training regulariser of Bai et al. 2021), its exact value for small problems, and the
spectral radius by Arnoldi iteration (whether the iteration can contract)."""

from __future__ import annotations

import torch

__all__ = ["exact_jacobian_frobenius", "jacobian_regularizer", "spectral_radius"]

NOISES = ("gaussian", "rademacher")
REDUCTIONS = ("mean", "sum", "none")


def _batch(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(t.shape[0], -1) if t.dim() >= 2 else t.reshape(1, -1)


def _check_pair(f_out: torch.Tensor, z: torch.Tensor) -> None:
    if not isinstance(f_out, torch.Tensor) or not isinstance(z, torch.Tensor):
        raise TypeError("f_out and z must be tensors (f_out = f(z, ...) computed from z)")
    if f_out.shape != z.shape:
        raise ValueError(
            f"f_out has shape {tuple(f_out.shape)} but z has {tuple(z.shape)}; pass f_out = f(z) for the same z"
        )
    if not z.requires_grad or f_out.grad_fn is None:
        raise ValueError("f_out must be computed from z with autograd on: z.requires_grad_() before f_out = f(z)")


def jacobian_regularizer(
    f_out: torch.Tensor,
    z: torch.Tensor,
    n_samples: int = 1,
    *,
    noise: str = "gaussian",
    reduction: str = "mean",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
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
    total: torch.Tensor | None = None
    for i in range(n_samples):
        if noise == "gaussian":
            eps = torch.randn(f_out.shape, dtype=f_out.dtype, device=f_out.device, generator=generator)
        else:
            eps = torch.randint(0, 2, f_out.shape, device=f_out.device, generator=generator).to(f_out.dtype) * 2 - 1
        (vjp,) = torch.autograd.grad(f_out, z, eps, create_graph=create, retain_graph=True)
        sq = _batch(vjp).pow(2).sum(dim=1)
        total = sq if total is None else total + sq
    if total is None:  # n_samples >= 1 was checked above: the loop ran
        raise ValueError(f"n_samples={n_samples!r} must be a positive int, e.g. n_samples=1")
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


def spectral_radius(
    f_out: torch.Tensor, z: torch.Tensor, n_iter: int = 30, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Spectral radius of df/dz per sample, ``(B,)`` (detached), by Arnoldi iteration on VJPs.

    Builds an orthonormal basis ``Q`` of the Krylov space span{v, J^T v, ..., (J^T)^(m-1) v},
    ``m = min(n_iter, D)`` (one VJP per step, J^T has J's eigenvalues), and returns the largest
    modulus among the eigenvalues of the projected ``m x m`` matrix ``H = Q^T J^T Q``. The power
    method (||J^T v|| of the normalised iterate) oscillates when the leading eigenvalues are a
    complex pair and can overshoot (1.96 where rho is 1.04); ``H`` carries both eigenvalues of a
    pair. With ``n_iter >= D`` the Krylov space is the whole space and the result is exact up to
    rounding (a D x D eigenvalue problem per sample); with fewer steps it is an estimate (Ritz
    values: for a strongly non-normal J they can exceed rho until ``m`` nears ``D``). Below 1:
    Picard iteration contracts locally. ``generator`` seeds the start vector.
    """
    _check_pair(f_out, z)
    if isinstance(n_iter, bool) or not isinstance(n_iter, int) or n_iter < 1:
        raise ValueError(f"n_iter={n_iter!r} must be a positive int, e.g. n_iter=30")
    shape = f_out.shape
    v = _batch(torch.randn(shape, dtype=f_out.dtype, device=f_out.device, generator=generator))
    batch, dim = v.shape
    m = min(n_iter, dim)
    tiny = torch.finfo(v.dtype).tiny
    basis = [v / v.norm(dim=1, keepdim=True).clamp_min(tiny)]
    H = torch.zeros(batch, m, m, dtype=v.dtype, device=v.device)
    for k in range(m):
        (w,) = torch.autograd.grad(f_out, z, basis[k].reshape(shape), retain_graph=True)
        w = _batch(w).detach()
        size = w.norm(dim=1)
        for _ in range(2):  # Gram-Schmidt twice: orthogonal to rounding even when w nearly lies in the span
            for j, q in enumerate(basis):
                h = (q * w).sum(dim=1)
                H[:, j, k] += h
                w = w - h[:, None] * q
        if k + 1 < m:
            beta = w.norm(dim=1)
            H[:, k + 1, k] = beta
            # an invariant subspace found (beta ~ 0): continue with zeros, which add eigenvalues 0 only
            found = beta > 16 * torch.finfo(v.dtype).eps * size
            basis.append(torch.where(found[:, None], w / beta.clamp_min(tiny)[:, None], torch.zeros_like(w)))
    return torch.linalg.eigvals(H).abs().amax(dim=1)
