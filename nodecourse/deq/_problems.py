"""Test problems for fixed-point solvers: contractions with a chosen rate, and maps with
no fixed point, two fixed points, or an iteration that runs away.

All are seeded and device/dtype-agnostic; batched maps act on ``(B, dim)`` sample by sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

__all__ = [
    "CONTRACTION_KINDS",
    "FixedPointProblem",
    "contraction",
    "reflection",
    "expansion",
    "two_equilibria",
    "bai_synthetic",
]

CONTRACTION_KINDS = ("linear", "tanh")


@dataclass
class FixedPointProblem:
    """A map ``f`` on ``(B, dim)`` with a start ``z0`` and, where known, the fixed point ``z_star``."""

    name: str
    f: Callable[[torch.Tensor], torch.Tensor]
    z0: torch.Tensor
    rho: float
    z_star: torch.Tensor | None = None


def contraction(
    kind: str = "linear",
    rho: float = 0.95,
    *,
    dim: int = 50,
    batch: int = 4,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> FixedPointProblem:
    """A contraction of ``(B, dim)`` with Lipschitz constant ``rho`` (2-norm), seeded.

    - ``"linear"``: f(z) = A z + b with A symmetric, eigenvalues spread over [-rho, rho]
      (both ends included), so the spectral radius is exactly ``rho``; the fixed point
      (I - A)^{-1} b is returned as ``z_star``.
    - ``"tanh"``: f(z) = tanh(A z + b) with the same kind of A and a small bias (0.1 N(0, 1)), so
      tanh stays near its linear range: Lipschitz ``rho``, spectral radius at the fixed point
      a little below ``rho`` (tanh' < 1 there).
    """
    if kind not in CONTRACTION_KINDS:
        raise ValueError(f"kind={kind!r} is unknown; use one of {CONTRACTION_KINDS}")
    if not 0 < rho < 1:
        raise ValueError(f"rho={rho!r} must be in (0, 1) for a contraction")
    gen = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(dim, dim, generator=gen, dtype=torch.float64))
    b = torch.randn(batch, dim, generator=gen, dtype=torch.float64)
    z0 = torch.zeros(batch, dim, dtype=dtype, device=device)
    eig = torch.linspace(-rho, rho, dim, dtype=torch.float64)
    eig = eig[torch.randperm(dim, generator=gen)]
    A = q @ torch.diag(eig) @ q.T
    if kind == "linear":
        z_star = torch.linalg.solve(torch.eye(dim, dtype=torch.float64) - A, b.T).T
        A_, b_ = A.to(dtype=dtype, device=device), b.to(dtype=dtype, device=device)
        return FixedPointProblem(
            f"linear, spectral radius {rho:g}", lambda z: z @ A_.T + b_, z0, rho, z_star.to(dtype=dtype, device=device)
        )
    A_, b_ = A.to(dtype=dtype, device=device), (0.1 * b).to(dtype=dtype, device=device)
    return FixedPointProblem(f"tanh, Lipschitz {rho:g}", lambda z: torch.tanh(z @ A_.T + b_), z0, rho)


def reflection(dtype=torch.float64, device=None) -> FixedPointProblem:
    """z -> 1 - z: one fixed point (1/2), but Picard iteration cycles between z0 and 1 - z0."""
    return FixedPointProblem(
        "z -> 1 - z",
        lambda z: 1 - z,
        torch.full((1, 1), 0.2, dtype=dtype, device=device),
        1.0,
        torch.full((1, 1), 0.5, dtype=dtype, device=device),
    )


def expansion(dtype=torch.float64, device=None) -> FixedPointProblem:
    """z -> 2 z + 1: one fixed point (-1), repelling: Picard iteration runs away from it."""
    return FixedPointProblem(
        "z -> 2z + 1",
        lambda z: 2 * z + 1,
        torch.zeros(1, 1, dtype=dtype, device=device),
        2.0,
        torch.full((1, 1), -1.0, dtype=dtype, device=device),
    )


def two_equilibria(dtype=torch.float64, device=None) -> FixedPointProblem:
    """z -> tanh(2 z): three fixed points, 0 (repelling) and ±z* with z* ≈ 0.9575 (attracting).

    Which one an iteration finds depends on the start: a batch of starts spread over
    [-1.5, 1.5] lands on both stable equilibria.
    """
    z0 = torch.linspace(-1.5, 1.5, 8, dtype=dtype, device=device)[:, None]
    return FixedPointProblem("z -> tanh(2z)", lambda z: torch.tanh(2 * z), z0, 2.0)


def bai_synthetic(
    n: int, *, seed: int = 0, noise: float = 0.1, dtype: torch.dtype = torch.float32, device=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The synthetic regression task of Bai et al. (2021): y = 1.5x³ + x² − 5x + 2 sin x − 3 + noise,
    x uniform on [-2, 2]; returns ``x`` ``(n, 1)``, ``y`` ``(n, 1)``."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 1, generator=gen, dtype=torch.float64) * 4 - 2
    y = 1.5 * x**3 + x**2 - 5 * x + 2 * torch.sin(x) - 3 + noise * torch.randn(n, 1, generator=gen, dtype=torch.float64)
    return x.to(dtype=dtype, device=device), y.to(dtype=dtype, device=device)
