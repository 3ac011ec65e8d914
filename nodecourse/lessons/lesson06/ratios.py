"""Per-seed ratios judged over seeds: the interval is taken on the log scale (a ratio's spread is
multiplicative: 1/2 and 2 are equally far from 1) and reported back as ratios."""

from __future__ import annotations

import math
from dataclasses import dataclass

from nodecourse.claims import ClaimVerdict, judge, judge_effect


@dataclass(frozen=True)
class RatioJudgement:
    """Per-seed ratios and their verdict against a threshold.

    ``geo_mean``: the geometric mean over seeds; ``lo``/``hi``: the 95 % interval of the geometric mean
    (None with too few seeds); ``reason``: why the verdict is what it is.
    """

    values: tuple[float, ...]
    verdict: ClaimVerdict
    reason: str
    geo_mean: float
    lo: float | None = None
    hi: float | None = None

    @property
    def seeds(self) -> int:
        return len(self.values)

    def text(self, unit: str = "x") -> str:
        """``"2.61x (95 % interval 2.2-3.1x; range 1.9-3.4x, 10 seeds)"``."""
        spread = f"range {min(self.values):.2f}-{max(self.values):.2f}{unit}, {len(self.values)} seeds"
        if self.lo is None:
            return f"{self.geo_mean:.2f}{unit} ({spread})"
        return f"{self.geo_mean:.2f}{unit} (95 % interval {self.lo:.2f}-{self.hi:.2f}{unit}; {spread})"

    def as_dict(self) -> dict:
        """For a row's ``details`` (JSON): the verdict as its text."""
        return {
            "values": list(self.values),
            "verdict": self.verdict.value,
            "reason": self.reason,
            "geo_mean": self.geo_mean,
            "lo": self.lo,
            "hi": self.hi,
        }


def _checked(ratios) -> list[float]:
    values = [float(r) for r in ratios]
    if any(not (r > 0 and math.isfinite(r)) for r in values):
        raise ValueError(f"ratios must be positive and finite, got {values}")
    return values


def _geo_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(r) for r in values) / len(values))


def judge_ratio(ratios, threshold: float, *, above: bool = True) -> RatioJudgement:
    """Judge per-seed ratios against ``threshold`` with :func:`judge` on the log scale."""
    values = _checked(ratios)
    verdict, iv, reason = judge([math.log(r) for r in values], math.log(threshold), above=above)
    side = ">=" if above else "<="
    if verdict is ClaimVerdict.HOLDS:
        reason = f"the whole 95 % interval is {side} {threshold:g}"
    elif verdict is ClaimVerdict.DOES_NOT_HOLD:
        reason = f"the whole 95 % interval misses {side} {threshold:g}"
    elif iv is not None:
        reason = f"undecided: the 95 % interval contains {threshold:g} at {len(values)} seeds"
    lo, hi = (None, None) if iv is None else (math.exp(iv.lo), math.exp(iv.hi))
    return RatioJudgement(tuple(values), verdict, reason, _geo_mean(values), lo, hi)


def judge_ratio_effect(ratios, published_ratio: float) -> RatioJudgement:
    """Judge per-seed ratios ``new/old`` that the claim says are *below* 1 against a published ratio
    (< 1) as an effect size (:func:`nodecourse.claims.judge_effect` on ``-log ratio``): an interval wholly
    short of the published effect does not hold, one above no effect and reaching the published one holds."""
    if not 0 < published_ratio < 1:
        raise ValueError(f"published_ratio must be in (0, 1), got {published_ratio}")
    values = _checked(ratios)
    verdict, iv, reason = judge_effect([-math.log(r) for r in values], -math.log(published_ratio))
    # the interval on -log(ratio) back as ratios: its upper end is the smaller ratio
    lo, hi = (None, None) if iv is None else (math.exp(-iv.hi), math.exp(-iv.lo))
    return RatioJudgement(tuple(values), verdict, reason, _geo_mean(values), lo, hi)
