"""How lesson 5's two claims are judged from per-seed AUCs (thresholds in :mod:`.config`).

Levels are judged by the 95 % interval over seeds (:func:`~nodecourse.claims.judge`); gaps between
models by the 95 % interval of per-seed paired differences against the published effect size
(:func:`~nodecourse.claims.judge_effect`): an interval wholly below the published gap does not
hold, however noisy the seeds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from nodecourse.claims import ClaimVerdict, ConfidenceInterval, combine, judge, judge_effect
from nodecourse.lessons.lesson05.config import (
    AHEAD_MARGIN,
    AUC_THRESHOLD,
    BASELINES,
    GRUD_THRESHOLD,
    PUBLISHED,
    PUBLISHED_GAPS,
)

__all__ = ["GapVerdict", "paired_gaps", "judge_gap", "judge_auc_claim", "judge_grud_claim"]


def paired_gaps(aucs: dict[str, list[float]], a: str, b: str) -> list[float]:
    """Per-seed AUC of ``a`` minus that of ``b``: same seed, same patients, so the split's luck cancels."""
    if len(aucs[a]) != len(aucs[b]):
        raise ValueError(f"{a} has {len(aucs[a])} seeds and {b} {len(aucs[b])}: the gaps need the same seeds")
    return [x - y for x, y in zip(aucs[a], aucs[b])]


@dataclass(frozen=True)
class GapVerdict:
    """ODE-RNN − ``baseline``, paired per seed: the interval (None with too few seeds), the published
    gap it is judged against (None: no published figure, judged against 0), the verdict and why."""

    baseline: str
    n_seeds: int
    interval: ConfidenceInterval | None
    published_gap: float | None
    verdict: ClaimVerdict
    reason: str

    def as_dict(self) -> dict:
        return {
            "verdict": self.verdict.value,
            "interval": None if self.interval is None else asdict(self.interval),
            "published_gap": self.published_gap,
            "reason": self.reason,
            "n_seeds": self.n_seeds,
        }


def judge_gap(aucs: dict[str, list[float]], baseline: str) -> GapVerdict:
    """ODE-RNN − ``baseline`` judged against its published gap (:data:`~.config.PUBLISHED_GAPS`), or
    against 0 where nothing is published."""
    gaps = paired_gaps(aucs, "odernn", baseline)
    published = PUBLISHED_GAPS.get(baseline)
    if published is None:
        verdict, iv, reason = judge(gaps, AHEAD_MARGIN)
    else:
        verdict, iv, reason = judge_effect(gaps, published)
    return GapVerdict(baseline, len(gaps), iv, published, verdict, reason)


def _level(values: list[float], floor: float) -> tuple[ClaimVerdict, ConfidenceInterval | None, dict]:
    verdict, iv, reason = judge(values, floor)
    return (
        verdict,
        iv,
        {"verdict": verdict.value, "interval": None if iv is None else asdict(iv), "reason": reason, "floor": floor},
    )


def judge_auc_claim(aucs: dict[str, list[float]]) -> tuple[ClaimVerdict, dict[str, ClaimVerdict], dict]:
    """``physionet-auc`` from per-seed AUCs: (a) ODE-RNN >= :data:`~.config.ODERNN_FLOOR`, (b) ahead of
    each baseline by its published gap.

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
    ODE-RNN by the published +0.015.

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
