"""Verdicts from spread, not means: the 95 % interval over seeds (:func:`judge`) and the
verdict of a claim made of parts (:func:`combine`)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from nodecourse.claims.verdict import ClaimVerdict


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


def judge(values: Iterable[float], threshold: float, *, above: bool = True,
          min_seeds: int = 3) -> tuple[ClaimVerdict, ConfidenceInterval | None, str]:
    """Judge per-seed ``values`` against ``threshold`` by their 95 % interval, not their mean.

    ``above=True``: the claim is "value >= threshold". HOLDS when the whole interval is on the
    claimed side, DOES_NOT_HOLD when it is wholly on the other side, NOT_MEASURABLE when it
    contains the threshold (undecided at this many seeds) or there are fewer than ``min_seeds``.
    Returns the verdict, the interval and a short reason.
    """
    vals = [float(v) for v in values]
    if len(vals) < max(2, min_seeds):
        return (ClaimVerdict.NOT_MEASURABLE, None,
                f"{len(vals)} seed(s): too few to judge a spread (need {min_seeds})")
    iv = seed_interval(vals)
    side = ">=" if above else "<="
    if (iv.lo >= threshold) if above else (iv.hi <= threshold):
        return ClaimVerdict.HOLDS, iv, f"the whole 95 % interval is {side} {threshold:g}"
    if (iv.hi < threshold) if above else (iv.lo > threshold):
        return ClaimVerdict.DOES_NOT_HOLD, iv, f"the whole 95 % interval misses {side} {threshold:g}"
    return ClaimVerdict.NOT_MEASURABLE, iv, f"undecided: the 95 % interval contains {threshold:g} at {iv.n} seeds"


def combine(parts: dict[str, ClaimVerdict]) -> ClaimVerdict:
    """The verdict of a claim made of several parts (or readings), each judged on its own.

    All hold: HOLDS. None holds and some fails: DOES_NOT_HOLD. Some hold and others fail or
    cannot be decided: HOLDS_IN_PART. All undecidable: NOT_MEASURABLE.
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
    return ClaimVerdict.NOT_MEASURABLE


def parts_text(parts: dict[str, ClaimVerdict]) -> str:
    """``"part A: holds; part B: does not hold"``, for a row's measured text."""
    return "; ".join(f"{name}: {v.value}" for name, v in parts.items())
