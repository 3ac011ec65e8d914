"""Sizes of lesson 1's comparison and the numbers its row is judged against (declared before anything runs)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BASELINE_FACTOR", "QUICK", "ULPS", "ResnetEulerConfig"]


@dataclass(frozen=True)
class ResnetEulerConfig:
    """One weight-tied residual stack against Euler and midpoint on the same field (hashable: cached).

    ``dim``: state width; ``n_blocks``: residual blocks = unit Euler steps over ``[0, n_blocks]``;
    ``batch``: inputs per comparison; ``seed``: weights and inputs.
    """

    dim: int = 16
    n_blocks: int = 6
    batch: int = 64
    seed: int = 0


QUICK = ResnetEulerConfig(n_blocks=4)
"""Quick mode: four blocks (full mode: eight)."""
FULL = ResnetEulerConfig(n_blocks=8)

ULPS = 100
"""|ResNet - Euler| may be at most this many ulps of the output's scale (only the order of summation differs)."""
BASELINE_FACTOR = 1e3
"""The midpoint baseline must differ by more than this many times the tolerance, or the test could not tell
solvers apart."""
