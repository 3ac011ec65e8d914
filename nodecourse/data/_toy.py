"""Generated toy data sets for lesson 3 (what a flow cannot represent).

All generators are seeded, return float tensors on the requested device and
dtype, and take their sizes as arguments:

- :func:`one_d_crossing`: the 1-D map g(-1) = 1, g(1) = -1 (two points that must swap).
- :func:`annulus`: the 2-D set of Dupont et al. (2019): g(x) = -1 for |x| <= r1,
  g(x) = +1 for r2 <= |x| <= r3 (nothing in the gap r1 < |x| < r2).
- :func:`negation`: h(x) = -x on [-1, 1].
"""

from __future__ import annotations

import math

import torch

__all__ = ["ANNULUS_RADII", "annulus", "annulus_label", "negation", "one_d_crossing"]

ANNULUS_RADII = (0.5, 1.0, 1.5)
"""(r1, r2, r3) of the annulus task: disk radius, ring inner radius, ring outer radius."""


def _check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}={value!r}: give a positive integer number of points")


def _generator(seed: int) -> torch.Generator:
    # Draw on a CPU generator and move afterwards, so the same seed gives the
    # same points on every device.
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed={seed!r}: give an integer seed")
    return torch.Generator().manual_seed(seed)


def one_d_crossing(*, dtype: torch.dtype = torch.float32, device=None):
    """The two-point 1-D task g(-1) = 1, g(1) = -1.

    Returns ``(x, y)``, both of shape ``(2, 1)``: ``x = [[-1], [1]]``, ``y = [[1], [-1]]``.
    """
    x = torch.tensor([[-1.0], [1.0]], dtype=dtype, device=device)
    return x, -x


def negation(n: int = 64, *, dtype: torch.dtype = torch.float32, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """h(x) = -x sampled on an even grid of ``n`` points in [-1, 1].

    Returns ``(x, y)`` of shape ``(n, 1)`` each, with ``y = -x``. A grid (not
    random points) so that the mean squared error is a Riemann sum of the
    integral the lesson quotes (the best order-preserving fit has MSE 1/3).
    """
    _check_count("n", n)
    if n < 2:
        raise ValueError(f"n={n!r}: need at least 2 points to span [-1, 1]")
    x = torch.linspace(-1.0, 1.0, n, dtype=dtype, device=device).unsqueeze(1)
    return x, -x


def annulus(
    n_inner: int = 200,
    n_outer: int = 400,
    *,
    radii: tuple[float, float, float] = ANNULUS_RADII,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Points of the annulus task, uniform in area, with labels.

    ``n_inner`` points uniform in the disk |x| <= r1 (label -1) and ``n_outer``
    uniform in the ring r2 <= |x| <= r3 (label +1).

    Returns ``(x, y)``: ``x`` of shape ``(n_inner + n_outer, 2)``, ``y`` of shape
    ``(n_inner + n_outer, 1)`` with values in {-1, +1}. Inner points come first.
    """
    _check_count("n_inner", n_inner)
    _check_count("n_outer", n_outer)
    r1, r2, r3 = (float(r) for r in radii)
    if not 0 < r1 < r2 < r3:
        raise ValueError(f"radii={radii!r}: need 0 < r1 < r2 < r3, e.g. {ANNULUS_RADII}")
    gen = _generator(seed)

    def ring(count: int, r_lo: float, r_hi: float) -> torch.Tensor:
        # Uniform in area: r^2 uniform between r_lo^2 and r_hi^2.
        u = torch.rand(count, generator=gen, dtype=torch.float64)
        r = torch.sqrt(r_lo**2 + u * (r_hi**2 - r_lo**2))
        theta = 2 * math.pi * torch.rand(count, generator=gen, dtype=torch.float64)
        return torch.stack([r * torch.cos(theta), r * torch.sin(theta)], dim=1)

    x = torch.cat([ring(n_inner, 0.0, r1), ring(n_outer, r2, r3)])
    y = torch.cat([-torch.ones(n_inner, 1, dtype=torch.float64), torch.ones(n_outer, 1, dtype=torch.float64)])
    return x.to(device=device, dtype=dtype), y.to(device=device, dtype=dtype)


def annulus_label(x: torch.Tensor, radii: tuple[float, float, float] = ANNULUS_RADII) -> torch.Tensor:
    """The true label of points ``x`` (shape ``(N, 2)``): -1 in the disk, +1 in the ring, 0 elsewhere.

    Returns shape ``(N,)`` on ``x``'s device and dtype. 0 marks points where the task
    says nothing (the gap and the outside).
    """
    r1, r2, r3 = radii
    r = x.norm(dim=-1)
    out = torch.zeros_like(r)
    out[r <= r1] = -1.0
    out[(r >= r2) & (r <= r3)] = 1.0
    return out
