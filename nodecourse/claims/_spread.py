"""Verdicts from spread, not means.

- :func:`judge`: the 95 % t-interval of the mean over seeds against a threshold;
- :func:`judge_effect`: a paired interval against a *published effect size* (a gap the interval
  excludes does not reproduce, whatever the noise);
- :func:`judge_median`: for heavy-tailed values (ratios), the distribution-free interval of the
  median (order statistics) against a threshold, with the sign test's p-value;
- :func:`combine`: the verdict of a claim made of parts.

Too few seeds, or an interval that contains the threshold, is UNDECIDED: more seeds would decide it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from nodecourse.claims._verdict import ClaimVerdict

__all__ = [
    "ConfidenceInterval",
    "MedianInterval",
    "combine",
    "judge",
    "judge_effect",
    "judge_median",
    "median_interval",
    "parts_text",
    "seed_interval",
    "sign_test",
]


@dataclass(frozen=True)
class ConfidenceInterval:
    """A spread over seeds: ``mean`` ± ``half_width`` (Student t, 95 %), with min, max and n."""

    mean: float
    half_width: float
    lo: float
    hi: float
    minimum: float
    maximum: float
    n: int


def seed_interval(values: Iterable[float]) -> ConfidenceInterval:
    """The 95 % Student-t interval of the mean of ``values`` (one per seed; at least two)."""
    import statistics

    from scipy import stats

    vals = [float(v) for v in values]
    if len(vals) < 2:
        raise ValueError(f"seed_interval needs at least two values (one per seed), got {len(vals)}")
    mean = statistics.fmean(vals)
    half = float(stats.t.ppf(0.975, len(vals) - 1)) * statistics.stdev(vals) / math.sqrt(len(vals))
    return ConfidenceInterval(mean, half, mean - half, mean + half, min(vals), max(vals), len(vals))


def judge(
    values: Iterable[float], threshold: float, *, above: bool = True, min_seeds: int = 3
) -> tuple[ClaimVerdict, ConfidenceInterval | None, str]:
    """Judge per-seed ``values`` against ``threshold`` by their 95 % interval, not their mean.

    ``above=True``: the claim is "value >= threshold". HOLDS when the whole interval is on the
    claimed side, DOES_NOT_HOLD when it is wholly on the other side, UNDECIDED when it
    contains the threshold (at this many seeds) or there are fewer than ``min_seeds``.
    Returns the verdict, the interval and a short reason.
    """
    vals = [float(v) for v in values]
    if len(vals) < max(2, min_seeds):
        return (ClaimVerdict.UNDECIDED, None, f"{len(vals)} seed(s): too few to judge a spread (need {min_seeds})")
    iv = seed_interval(vals)
    side = ">=" if above else "<="
    if (iv.lo >= threshold) if above else (iv.hi <= threshold):
        return ClaimVerdict.HOLDS, iv, f"the whole 95 % interval is {side} {threshold:g}"
    if (iv.hi < threshold) if above else (iv.lo > threshold):
        return ClaimVerdict.DOES_NOT_HOLD, iv, f"the whole 95 % interval misses {side} {threshold:g}"
    return ClaimVerdict.UNDECIDED, iv, f"undecided: the 95 % interval contains {threshold:g} at {iv.n} seeds"


def judge_effect(
    differences: Iterable[float], published: float, *, min_seeds: int = 3
) -> tuple[ClaimVerdict, ConfidenceInterval | None, str]:
    """Judge paired per-seed ``differences`` (model minus baseline, signed so the claim says
    "positive") against the ``published`` effect size (> 0).

    DOES_NOT_HOLD when the 95 % interval lies wholly below the published gap (the effect, if any, is
    smaller than published: it does not reproduce, however noisy the rows); HOLDS when the interval
    is wholly above zero and does not exclude the published gap from below; UNDECIDED when it
    contains both zero and the published gap, or there are fewer than ``min_seeds`` seeds.
    """
    if not published > 0:
        raise ValueError(
            f"judge_effect: published={published!r} must be a positive gap (sign the differences "
            "so the claim says 'positive')"
        )
    vals = [float(v) for v in differences]
    if len(vals) < max(2, min_seeds):
        return (ClaimVerdict.UNDECIDED, None, f"{len(vals)} seed(s): too few to judge a spread (need {min_seeds})")
    iv = seed_interval(vals)
    span = f"paired 95 % interval [{iv.lo:+.3g}, {iv.hi:+.3g}]"
    if iv.hi < published:
        return ClaimVerdict.DOES_NOT_HOLD, iv, f"the {span} excludes the published gap {published:+.3g}"
    if iv.lo > 0:
        return ClaimVerdict.HOLDS, iv, f"the {span} is above 0 and reaches the published gap {published:+.3g}"
    return (
        ClaimVerdict.UNDECIDED,
        iv,
        (f"undecided: the {span} contains both 0 and the published gap {published:+.3g} at {iv.n} seeds"),
    )


@dataclass(frozen=True)
class MedianInterval:
    """The median of per-seed values with its distribution-free interval (order statistics)."""

    median: float
    lo: float
    hi: float
    confidence: float
    n: int


def median_interval(values: Iterable[float], *, confidence: float = 0.95) -> MedianInterval:
    """The median of ``values`` and the widest-needed order-statistic interval that covers the
    population median with probability at least ``confidence`` (no assumption on the tails; with
    few values the interval is the whole range and its coverage is below ``confidence``, which
    :attr:`MedianInterval.confidence` reports)."""
    import statistics

    from scipy import stats

    vals = sorted(float(v) for v in values)
    n = len(vals)
    if n < 1:
        raise ValueError("median_interval needs at least one value")
    # The largest k with P(B <= k - 1) <= (1 - confidence) / 2 for B ~ Binomial(n, 1/2): the interval
    # [x_(k), x_(n-k+1)] then covers the median with probability 1 - 2 P(B <= k - 1).
    k = 0
    while k + 1 <= n // 2 and stats.binom.cdf(k, n, 0.5) <= (1 - confidence) / 2:
        k += 1
    lo, hi = (vals[k - 1], vals[n - k]) if k else (vals[0], vals[-1])
    covered = 1 - 2 * float(stats.binom.cdf(k - 1, n, 0.5)) if k else 1.0
    return MedianInterval(statistics.median(vals), lo, hi, covered if k else 1.0 - 2 * 0.5**n, n)


def sign_test(values: Iterable[float], threshold: float, *, above: bool = True, ties: str = "drop") -> float:
    """One-sided sign test's p-value that the median is on the claimed side of ``threshold``.

    ``ties``: what a value equal to ``threshold`` counts as. ``"drop"`` (the textbook test) leaves it out;
    ``"against"`` counts it as a loss for the claim, the reading of a strict claim ("higher" means strictly
    higher: a tie is not higher).
    """
    from scipy import stats

    if ties not in ("drop", "against"):
        raise ValueError(f"sign_test: ties={ties!r}; expected 'drop' or 'against'")
    vals = [float(v) for v in values]
    if ties == "drop":
        vals = [v for v in vals if v != threshold]
    if not vals:
        return 1.0
    wins = sum((v > threshold) if above else (v < threshold) for v in vals)
    return float(stats.binomtest(wins, len(vals), 0.5, alternative="greater").pvalue)


def judge_median(
    values: Iterable[float], threshold: float, *, above: bool = True, min_seeds: int = 5, strict: bool = False
) -> tuple[ClaimVerdict, MedianInterval | None, str]:
    """Judge heavy-tailed per-seed (or per-task) ``values`` by their median's order-statistic interval.

    HOLDS when the interval is wholly on the claimed side of ``threshold``, DOES_NOT_HOLD when wholly
    on the other, UNDECIDED otherwise or with fewer than ``min_seeds`` values (with five values the
    interval is the range and covers the median with probability 0.94).

    ``strict=True`` reads the claim as strictly above (or below) ``threshold``: a tie is not on the claimed
    side. The interval must then exclude ``threshold`` (an interval whose end sits exactly on it is
    UNDECIDED, not HOLDS), an interval wholly at or beyond it on the other side does not hold, and the sign
    test counts ties against the claim.
    """
    vals = [float(v) for v in values]
    if len(vals) < min_seeds:
        return ClaimVerdict.UNDECIDED, None, f"{len(vals)} value(s): too few for a median's interval (need {min_seeds})"
    mi = median_interval(vals)
    if strict:
        side = ">" if above else "<"
        claimed = (mi.lo > threshold) if above else (mi.hi < threshold)
        against = (mi.hi <= threshold) if above else (mi.lo >= threshold)
    else:
        side = ">=" if above else "<="
        claimed = (mi.lo >= threshold) if above else (mi.hi <= threshold)
        against = (mi.hi < threshold) if above else (mi.lo > threshold)
    p = sign_test(vals, threshold, above=above, ties="against" if strict else "drop")
    span = f"median {mi.median:.3g}, {mi.confidence:.0%} interval [{mi.lo:.3g}, {mi.hi:.3g}], sign test p = {p:.2g}"
    if claimed:
        return ClaimVerdict.HOLDS, mi, f"{span}: the whole interval is {side} {threshold:g}"
    if against:
        return ClaimVerdict.DOES_NOT_HOLD, mi, f"{span}: the whole interval misses {side} {threshold:g}"
    tie = " (or ends on it: a tie is not on the claimed side)" if strict else ""
    return (
        ClaimVerdict.UNDECIDED,
        mi,
        f"{span}: undecided, the interval contains {threshold:g}{tie} at {mi.n} values",
    )


def combine(parts: dict[str, ClaimVerdict]) -> ClaimVerdict:
    """The verdict of a claim made of several parts (or readings), each judged on its own.

    All hold: HOLDS. None holds and some fails: DOES_NOT_HOLD. Some hold and others fail or
    cannot be decided: HOLDS_IN_PART. None decided: UNDECIDED if more seeds could decide some part,
    else NOT_MEASURABLE.
    """
    if not parts:
        raise ValueError("combine() needs at least one part")
    vs = set(parts.values())
    if vs == {ClaimVerdict.HOLDS}:
        return ClaimVerdict.HOLDS
    if ClaimVerdict.HOLDS in vs or ClaimVerdict.HOLDS_IN_PART in vs:
        return ClaimVerdict.HOLDS_IN_PART
    if ClaimVerdict.DOES_NOT_HOLD in vs:
        return ClaimVerdict.DOES_NOT_HOLD
    return ClaimVerdict.UNDECIDED if ClaimVerdict.UNDECIDED in vs else ClaimVerdict.NOT_MEASURABLE


def parts_text(parts: dict[str, ClaimVerdict]) -> str:
    """``"part A: holds; part B: does not hold"``, for a row's measured text."""
    return "; ".join(f"{name}: {v.value}" for name, v in parts.items())
