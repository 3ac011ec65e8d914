"""Per-seed ratios judged over seeds by their median: ratios of errors and of iteration counts are
heavy-tailed (one seed's failed solve can give 0.00x or 16x), so each is judged by the median's
distribution-free order-statistic interval (:func:`nodecourse.claims.judge_median`), never a mean.
The median and its interval are the same on the ratio scale and on the log scale (order statistics
commute with a monotone map), so 1/2 and 2 stay equally far from 1."""

from __future__ import annotations

import math
from dataclasses import dataclass

from nodecourse.claims import ClaimVerdict, judge_median, median_interval

__all__ = ["RatioJudgement", "judge_ratio", "judge_ratio_effect"]

MIN_SEEDS = 5
"""Fewest seeds for a median's interval: with five the interval is the range and covers the median with
probability 0.94 (fewer: undecided, more seeds decide it)."""


@dataclass(frozen=True)
class RatioJudgement:
    """Per-seed ratios and their verdict against a threshold.

    ``median``: the median over seeds; ``lo``/``hi``: the median's order-statistic interval (None with fewer
    than :data:`MIN_SEEDS` seeds); ``confidence``: that interval's coverage (0.94 to 0.96 by the seed count);
    ``reason``: why the verdict is what it is.
    """

    values: tuple[float, ...]
    verdict: ClaimVerdict
    reason: str
    median: float
    lo: float | None = None
    hi: float | None = None
    confidence: float | None = None

    @property
    def seeds(self) -> int:
        return len(self.values)

    def text(self, unit: str = "x") -> str:
        """``"median 2.61x (95 % interval 2.2-3.1x; range 1.9-3.4x, 10 seeds)"``."""
        spread = f"range {min(self.values):.2f}-{max(self.values):.2f}{unit}, {len(self.values)} seeds"
        if self.lo is None:
            return f"median {self.median:.2f}{unit} ({spread})"
        return (
            f"median {self.median:.2f}{unit} ({self.confidence:.0%} interval {self.lo:.2f}-{self.hi:.2f}{unit}; "
            f"{spread})"
        )

    def as_dict(self) -> dict:
        """For a row's ``details`` (JSON): the verdict as its text."""
        return {
            "values": list(self.values),
            "verdict": self.verdict.value,
            "reason": self.reason,
            "median": self.median,
            "lo": self.lo,
            "hi": self.hi,
            "confidence": self.confidence,
        }


def _checked(ratios) -> list[float]:
    values = [float(r) for r in ratios]
    if any(not (r > 0 and math.isfinite(r)) for r in values):
        raise ValueError(f"ratios must be positive and finite, got {values}")
    return values


def _judgement(values: list[float], verdict: ClaimVerdict, reason: str) -> RatioJudgement:
    mi = median_interval(values)
    if len(values) < MIN_SEEDS:
        return RatioJudgement(tuple(values), verdict, reason, mi.median)
    return RatioJudgement(tuple(values), verdict, reason, mi.median, mi.lo, mi.hi, mi.confidence)


def judge_ratio(ratios, threshold: float, *, above: bool = True, strict: bool = False) -> RatioJudgement:
    """Judge per-seed ratios against ``threshold`` by the median's order-statistic interval
    (:func:`~nodecourse.claims.judge_median`, at least :data:`MIN_SEEDS` seeds). ``strict``: the claim is
    strictly above (below) the threshold ("fewer", "worse"): an interval that ends on it is undecided."""
    values = _checked(ratios)
    verdict, _, reason = judge_median(values, threshold, above=above, min_seeds=MIN_SEEDS, strict=strict)
    return _judgement(values, verdict, reason)


def judge_ratio_effect(ratios, published_ratio: float) -> RatioJudgement:
    """Judge per-seed ratios ``new/old`` that the claim says are *below* 1 against a published ratio
    (< 1) as an effect size, on the median's order-statistic interval: an interval wholly above the
    published ratio (short of the published effect) does not hold; one wholly below 1 (an effect) that
    reaches the published ratio holds; otherwise undecided (at least :data:`MIN_SEEDS` seeds)."""
    if not 0 < published_ratio < 1:
        raise ValueError(f"published_ratio must be in (0, 1), got {published_ratio}")
    values = _checked(ratios)
    if len(values) < MIN_SEEDS:
        reason = f"{len(values)} value(s): too few for a median's interval (need {MIN_SEEDS})"
        return _judgement(values, ClaimVerdict.UNDECIDED, reason)
    mi = median_interval(values)
    span = f"median {mi.median:.3g}, {mi.confidence:.0%} interval [{mi.lo:.3g}, {mi.hi:.3g}]"
    if mi.lo > published_ratio:
        verdict, reason = ClaimVerdict.DOES_NOT_HOLD, f"the {span} excludes the published ratio {published_ratio:.3g}"
    elif mi.hi < 1:
        verdict, reason = (
            ClaimVerdict.HOLDS,
            f"the {span} is below 1 and reaches the published ratio {published_ratio:.3g}",
        )
    else:
        verdict = ClaimVerdict.UNDECIDED
        reason = f"undecided: the {span} contains both 1 and the published ratio {published_ratio:.3g}"
    return _judgement(values, verdict, reason)
