"""The bounds a flow cannot beat on lesson 3's 1-D tasks, computed (not published), and the judging helpers
that compare measured values with them."""

from __future__ import annotations

import numpy as np
import torch

from nodecourse.claims import ClaimVerdict
from nodecourse.data import negation

__all__ = [
    "abs_data",
    "best_monotone_mse",
    "clopper_pearson",
    "judge_bound",
    "order_preserving_floor",
    "rk4_invertible_hlip",
]


def best_monotone_mse(y, increasing: bool | None = True) -> float:
    """The smallest mean squared error of a monotone fit to targets ``y`` (ordered by their inputs).

    ``increasing=True``: non-decreasing fits (a flow's map on R); ``False``: non-increasing;
    ``None``: the better of the two (a flow followed by a linear readout of either sign).
    Pool-adjacent-violators (isotonic regression), exact on the grid. ``y``: shape ``(n,)`` or ``(n, 1)``.
    """
    y = np.asarray(y, dtype=float).reshape(-1)
    if increasing is None:
        return min(best_monotone_mse(y, True), best_monotone_mse(y, False))
    values = y if increasing else -y
    blocks: list[list[float]] = []  # [sum, count] of pooled runs
    for v in values:
        blocks.append([v, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    fitted = np.concatenate([np.full(int(c), s / c) for s, c in blocks])
    return float(np.mean((fitted - values) ** 2))


def judge_bound(
    values, bound: float, slack: float, *, error: float = 0.0, min_seeds: int = 3
) -> tuple[ClaimVerdict, str]:
    """Judge "every seed's value >= ``bound``" for a bound that holds for EVERY map of a class.

    A seed-interval (:func:`judge`) suits a claim about a typical value; a proven lower bound must
    hold on each seed, so the smallest value is compared, allowing ``slack`` for the re-solve's
    numerical error. HOLDS: min >= bound - slack; DOES_NOT_HOLD: some seed below that (the measured
    map is then not in the class: the solve was not accurate); UNDECIDED with too few seeds (more decide it);
    NOT_MEASURABLE when the measured ``error`` of the values is larger than ``slack`` (the slack would not cover it).
    """
    vals = [float(v) for v in values]
    if len(vals) < min_seeds:
        return ClaimVerdict.UNDECIDED, f"{len(vals)} seed(s): too few (need {min_seeds})"
    if error > slack:
        return ClaimVerdict.NOT_MEASURABLE, f"the values' own error {error:.2g} exceeds the slack {slack:g}"
    low = min(vals)
    if low >= bound - slack:
        return ClaimVerdict.HOLDS, f"every seed >= {bound:.4g} (lowest {low:.4g}, slack {slack:g})"
    return ClaimVerdict.DOES_NOT_HOLD, f"a seed reaches {low:.4g} < {bound:.4g} - {slack:g}"


def rk4_invertible_hlip() -> float:
    """The h * Lip(f) below which an RK4 step z -> z + h * sum(b_i k_i) is sure to be invertible.

    The step's derivative differs from the identity by at most x + x^2/2 + x^3/6 + x^4/24 with
    x = h * Lip(f) (chain the four stages); below 1 the step is a contraction-perturbed identity,
    hence invertible. Returns the root of that polynomial = 1 (about 0.70). Euler's is 1.
    """
    roots = np.roots([1 / 24, 1 / 6, 1 / 2, 1, -1])
    return float(min(r.real for r in roots if abs(r.imag) < 1e-12 and r.real > 0))


def order_preserving_floor(n_points: int) -> float:
    """The MSE of the best non-decreasing fit to h(x) = -x on the ``n_points`` grid: the constant 0,
    so the mean of x^2, (n+1)/(3(n-1)) (1/3 as n grows). Computed, not published."""
    x, y = negation(n_points, dtype=torch.float64)
    return best_monotone_mse(y[:, 0].numpy(), increasing=True)


def abs_data(n_points: int, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """h(x) = |x| on an even grid of ``n_points`` in [-1, 1]: ``(x, y)``, shape ``(n, 1)`` each."""
    x = torch.linspace(-1.0, 1.0, n_points, dtype=dtype).unsqueeze(1)
    return x, x.abs()


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The exact 95 % interval of a rate seen ``k`` times in ``n`` tries."""
    from scipy import stats

    lo = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    return lo, hi
