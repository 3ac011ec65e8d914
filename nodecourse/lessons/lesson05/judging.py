"""How lesson 5's two claims are judged from per-seed AUCs (thresholds in :mod:`.config`).

Levels are judged by the 95 % interval over seeds (:func:`~nodecourse.claims.judge`); gaps between
models by the 95 % interval of per-seed paired differences against the range of the published gap
(:func:`judge_gap_range`; the range from the paper's ± spreads, :func:`~.config.published_gap`): an
interval wholly outside that range does not hold, however noisy the seeds. A baseline with no
published gap of its own (the course's GRU-Δt, the regression) is judged against 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from nodecourse.claims import ClaimVerdict, ConfidenceInterval, combine, judge, seed_interval
from nodecourse.lessons.lesson05.config import (
    AHEAD_MARGIN,
    AUC_THRESHOLD,
    BASELINES,
    GRUD_THRESHOLD,
    PUBLISHED,
    PUBLISHED_GAPS,
    REFERENCE_GAPS,
    PublishedGap,
)

__all__ = ["GapVerdict", "paired_gaps", "judge_gap_range", "judge_gap", "judge_auc_claim", "judge_grud_claim"]


def paired_gaps(aucs: dict[str, list[float]], a: str, b: str) -> list[float]:
    """Per-seed AUC of ``a`` minus that of ``b``: same seed, same patients, so the split's luck cancels."""
    if len(aucs[a]) != len(aucs[b]):
        raise ValueError(f"{a} has {len(aucs[a])} seeds and {b} {len(aucs[b])}: the gaps need the same seeds")
    return [x - y for x, y in zip(aucs[a], aucs[b])]


def judge_gap_range(
    differences: list[float], lo: float, hi: float, *, min_seeds: int = 3
) -> tuple[ClaimVerdict, ConfidenceInterval | None, str]:
    """Judge paired per-seed ``differences`` (signed so the claim says "positive") against a published
    gap known only to lie in ``[lo, hi]``.

    DOES_NOT_HOLD when the 95 % interval lies wholly outside the range (below it: the effect is smaller
    than published; above it: larger), however noisy the seeds; HOLDS when it overlaps the range and is
    wholly above 0; UNDECIDED when it overlaps the range and contains 0 (no gap and the published one
    both fit), or with fewer than ``min_seeds`` seeds.
    """
    if not lo <= hi:
        raise ValueError(f"judge_gap_range: lo={lo!r} > hi={hi!r}; give the published range low end first")
    vals = [float(v) for v in differences]
    if len(vals) < max(2, min_seeds):
        return ClaimVerdict.UNDECIDED, None, f"{len(vals)} seed(s): too few to judge a spread (need {min_seeds})"
    iv = seed_interval(vals)
    span = f"paired 95 % interval [{iv.lo:+.3f}, {iv.hi:+.3f}]"
    published = f"the published range [{lo:+.3f}, {hi:+.3f}]"
    if iv.hi < lo:
        return ClaimVerdict.DOES_NOT_HOLD, iv, f"the {span} lies wholly below {published}: a smaller gap"
    if iv.lo > hi:
        return ClaimVerdict.DOES_NOT_HOLD, iv, f"the {span} lies wholly above {published}: a larger gap"
    if iv.lo > 0:
        return ClaimVerdict.HOLDS, iv, f"the {span} overlaps {published} and is above 0"
    return (
        ClaimVerdict.UNDECIDED,
        iv,
        f"undecided: the {span} overlaps {published} and contains 0, at {iv.n} seeds",
    )


@dataclass(frozen=True)
class GapVerdict:
    """ODE-RNN − ``baseline``, paired per seed: the interval (None with too few seeds), the published
    gap it is judged against (None: no published figure for this model, judged against 0), the verdict
    and why; ``reference``: a published gap of another model shown beside (the paper's RNN-Δt for the
    course's GRU-Δt), never judged."""

    baseline: str
    n_seeds: int
    interval: ConfidenceInterval | None
    published: PublishedGap | None
    verdict: ClaimVerdict
    reason: str
    reference: PublishedGap | None = None

    @property
    def published_gap(self) -> float | None:
        """The published gap's central value (None where nothing published is judged)."""
        return None if self.published is None else self.published.gap

    def as_dict(self) -> dict:
        def gap(g: PublishedGap | None) -> dict | None:
            return None if g is None else {"gap": g.gap, "sd": g.sd, "lo": g.lo, "hi": g.hi, "of": [g.a, g.b]}

        return {
            "verdict": self.verdict.value,
            "interval": None if self.interval is None else asdict(self.interval),
            "published_gap": self.published_gap,
            "published_range": gap(self.published),
            "reference_not_judged": gap(self.reference),
            "reason": self.reason,
            "n_seeds": self.n_seeds,
        }


def judge_gap(aucs: dict[str, list[float]], baseline: str) -> GapVerdict:
    """ODE-RNN − ``baseline`` judged against the range of its published gap (:data:`~.config.PUBLISHED_GAPS`),
    or against 0 where the paper has no gap for this model (its relative's, if any, is kept as ``reference``)."""
    gaps = paired_gaps(aucs, "odernn", baseline)
    published = PUBLISHED_GAPS.get(baseline)
    if published is None:
        verdict, iv, reason = judge(gaps, AHEAD_MARGIN)
    else:
        verdict, iv, reason = judge_gap_range(gaps, published.lo, published.hi)
    return GapVerdict(baseline, len(gaps), iv, published, verdict, reason, REFERENCE_GAPS.get(baseline))


def _level(values: list[float], floor: float) -> tuple[ClaimVerdict, ConfidenceInterval | None, dict]:
    verdict, iv, reason = judge(values, floor)
    return (
        verdict,
        iv,
        {"verdict": verdict.value, "interval": None if iv is None else asdict(iv), "reason": reason, "floor": floor},
    )


def judge_auc_claim(aucs: dict[str, list[float]]) -> tuple[ClaimVerdict, dict[str, ClaimVerdict], dict]:
    """``physionet-auc`` from per-seed AUCs: (a) ODE-RNN >= :data:`~.config.ODERNN_FLOOR`, (b) ahead of
    each baseline: GRU-D by its published gap's range, the others by more than 0.

    Returns the verdict, the two parts' verdicts and the numbers behind them (JSON-ready, except
    ``"_intervals"`` and ``"_gaps"``: the interval and :class:`GapVerdict` objects, for the measured text).
    """
    level, level_iv, level_info = _level(aucs["odernn"], AUC_THRESHOLD.value)
    strict, strict_iv, _ = judge(aucs["odernn"], PUBLISHED["odernn"][0])
    gaps = {base: judge_gap(aucs, base) for base in BASELINES if base in aucs}
    ahead = combine({b: g.verdict for b, g in gaps.items()}) if gaps else ClaimVerdict.NOT_MEASURABLE
    parts = {"(a) reaches the published AUC": level, "(b) ahead of the discrete baselines": ahead}
    details = {
        "level": level_info,
        "strict_reading": {
            "verdict": strict.value,
            "threshold": PUBLISHED["odernn"][0],
            "note": "at least the published mean itself; shown, not judged",
        },
        "ahead": {b: g.as_dict() for b, g in gaps.items()},
        "parts": {k: v.value for k, v in parts.items()},
        "_intervals": {"level": level_iv, "strict": strict_iv},
        "_gaps": gaps,
    }
    return combine(parts), parts, details


def judge_grud_claim(aucs: dict[str, list[float]]) -> tuple[ClaimVerdict, dict[str, ClaimVerdict], dict]:
    """``physionet-gru-d`` from per-seed AUCs: (a) GRU-D >= :data:`~.config.GRUD_FLOOR`, (b) behind
    ODE-RNN by the published gap (+0.015, its range from the published spreads).

    Returns what :func:`judge_auc_claim` returns, for this row.
    """
    level, level_iv, level_info = _level(aucs["gru-d"], GRUD_THRESHOLD.value)
    gap = judge_gap(aucs, "gru-d")
    parts = {"(a) reaches the published AUC": level, "(b) behind ODE-RNN": gap.verdict}
    details = {
        "level": level_info,
        "gap": gap.as_dict(),
        "parts": {k: v.value for k, v in parts.items()},
        "_intervals": {"level": level_iv, "gap": gap.interval},
        "_gaps": {"gru-d": gap},
    }
    return combine(parts), parts, details
