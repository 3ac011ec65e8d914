"""The measurement of lesson 1: a residual stack against Euler (and a midpoint baseline) on one field."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from nodecourse.lessons.lesson01.config import ULPS
from nodecourse.lessons.study import cached_study

__all__ = ["ResnetEulerComparison", "resnet_vs_euler"]


@dataclass(frozen=True)
class ResnetEulerComparison:
    """One comparison: the largest |difference| of the stack's output (shape ``(batch, dim)``) from Euler's
    and from midpoint's final state, the tolerance (``ULPS`` ulps of the output scale), Euler's NFE."""

    max_diff_euler: float
    max_diff_midpoint: float
    tolerance: float
    nfe_euler: int
    n_blocks: int
    dtype: str

    @property
    def agrees(self) -> bool:
        """|ResNet - Euler| within the tolerance."""
        return self.max_diff_euler <= self.tolerance


@cached_study
def resnet_vs_euler(
    dim: int = 16,
    n_blocks: int = 6,
    batch: int = 64,
    dtype: torch.dtype = torch.float64,
    seed: int = 0,
    device: str = "cpu",
) -> ResnetEulerComparison:
    """Run one weight-tied residual stack ``z <- z + f(z)`` and ``odeint(f, method="euler", step_size=1)``
    over ``[0, n_blocks]`` on the same field and ``batch`` inputs of width ``dim``.

    Beside it a baseline: the midpoint method, step 1, on the same field (a different discretisation of
    the same ODE, which should *not* agree). The caller's random state is left alone.
    """
    from nodecourse import odeint
    from nodecourse.models import ResidualStack

    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # seeded weights without touching the caller's RNG state
        torch.manual_seed(seed)
        stack = ResidualStack(dim, n_blocks=n_blocks, hidden=(32,), shared=True, step=1.0).to(device, dtype)
    # Keep f small so the flow stays O(1) over n_blocks unit steps.
    with torch.no_grad():
        for p in stack.parameters():
            p.mul_(0.5)
    field = stack.fields[0]
    z0 = torch.randn(batch, dim, generator=gen, dtype=dtype).to(device)
    t = torch.tensor([0.0, float(n_blocks)], dtype=dtype, device=device)
    with torch.no_grad():
        resnet_out = stack(z0)
        euler = odeint(field, z0, t, method="euler", step_size=1.0)
        midpoint = odeint(field, z0, t, method="midpoint", step_size=1.0)
    scale = resnet_out.abs().max().item()
    return ResnetEulerComparison(
        max_diff_euler=(euler.ys[-1] - resnet_out).abs().max().item(),
        max_diff_midpoint=(midpoint.ys[-1] - resnet_out).abs().max().item(),
        tolerance=ULPS * torch.finfo(dtype).eps * max(scale, 1.0),
        nfe_euler=int(euler.stats["nfe"]),
        n_blocks=n_blocks,
        dtype=str(dtype).replace("torch.", ""),
    )
