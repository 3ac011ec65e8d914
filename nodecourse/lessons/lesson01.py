"""Ledger rows of lesson 1 (ResNet as Euler)."""
from __future__ import annotations

import torch

from nodecourse.claims import ClaimVerdict, Measurement, Threshold, claim


def resnet_vs_euler(dim: int = 16, n_blocks: int = 6, batch: int = 64, dtype: torch.dtype = torch.float64,
                    seed: int = 0, device: str | torch.device = "cpu") -> dict:
    """Run one weight-tied residual stack ``z <- z + f(z)`` and ``odeint(f, method="euler", step_size=1)``
    over ``[0, n_blocks]`` on the same field and inputs.

    Returns the largest absolute difference between the two outputs, the same
    for a baseline (the midpoint method, step 1, on the same field: a different
    discretisation of the same ODE, which should *not* agree), the tolerance
    (100 ulps of the output scale) and the solver's NFE.
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
    eps = torch.finfo(dtype).eps
    return {
        "max_diff_euler": (euler.ys[-1] - resnet_out).abs().max().item(),
        "max_diff_midpoint": (midpoint.ys[-1] - resnet_out).abs().max().item(),
        "tolerance": 100 * eps * max(scale, 1.0),
        "nfe_euler": int(euler.stats["nfe"]),
        "n_blocks": n_blocks,
        "dtype": str(dtype).replace("torch.", ""),
    }


@claim(
    id="resnet-euler",
    claim="A residual update z + f(z) is one Euler step with Δt = 1",
    source="Chen et al. 2018 (Neural ODEs), sec. 1; Haber & Ruthotto 2017",
    published="identical by construction",
    lesson="01",
    threshold=Threshold(
        "max |ResNet − Euler| <= 100 ulp of the output's scale, in float32 and float64, while the midpoint "
        "baseline differs by more than 1000 times that", kind="published",
        why="the published figure is exact identity; 100 ulp allows only the order of summation to differ"),
)
def measure(quick: bool) -> Measurement:
    runs = [resnet_vs_euler(dtype=dt, n_blocks=4 if quick else 8) for dt in (torch.float32, torch.float64)]
    agree = all(r["max_diff_euler"] <= r["tolerance"] for r in runs)
    # The baseline must differ by far more than the tolerance, or the comparison could not tell solvers apart.
    baseline_differs = all(r["max_diff_midpoint"] > 1e3 * r["tolerance"] for r in runs)
    if agree and baseline_differs:
        verdict = ClaimVerdict.HOLDS
    elif not baseline_differs:
        verdict = ClaimVerdict.NOT_MEASURABLE
    else:
        verdict = ClaimVerdict.DOES_NOT_HOLD
    measured = "; ".join(
        f"{r['dtype']}: |ResNet − Euler| = {r['max_diff_euler']:.1e} (midpoint baseline {r['max_diff_midpoint']:.1e})"
        for r in runs
    )
    return Measurement(measured, verdict, {"runs": runs})
