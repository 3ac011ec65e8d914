"""Quality of a model's outputs for a task, its training loss, and intervals for differences.

- ``task="classification"``: outputs ``(N, C)`` logits with ``C >= 2`` are scored by accuracy;
  one logit per row (``(N,)`` or ``(N, 1)``, labels 0/1) by ROC AUC (mortality is rare, so
  accuracy would reward predicting survival for everyone);
- ``task="regression"``: mean squared error (lower is better);
- ``task="density"``: the model returns ``log p(x)`` per row (a CNF's ``log_prob``); mean
  log-likelihood in nats (higher is better).

Two qualities are compared by the 95 % bootstrap interval of their difference (paired: the same
rows scored twice; unpaired: two sets), never by the two numbers alone. A difference counts only
when the whole interval lies beyond the metric's *practical* gap (declared below: the audit's
own thresholds, stated in every summary that uses them). The MSE's gap is a tenth of the reference's
MSE, never below :data:`MSE_FLOOR` x the targets' variance (an exact model's MSE is near zero, and a
tenth of zero would make any rounding a difference). Sentences print differences as the metric reads
(:func:`interval_text`: "a minus b" in the metric's own units and sign).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

AUDIT_TASKS = ("classification", "regression", "density")

# The audit's "practical difference", per metric: below this no one would call two models
# different, whatever the interval says. Course thresholds (nothing published): one point of
# accuracy or 0.01 of AUC is the resolution the course's lessons use (lesson 7: 1 point of
# accuracy); a tenth of the MSE; 0.05 nats per row of log-likelihood (about a 5 % change in density).
PRACTICAL = {"accuracy": 0.01, "AUC": 0.01, "MSE": 0.10, "log-likelihood": 0.05}
RELATIVE = {"MSE"}  # the gap is a fraction of the reference's value
MSE_FLOOR = 1e-6  # ... but never below a millionth of the targets' variance (an exact model's MSE is ~0)


@dataclass(frozen=True)
class Metric:
    """How a task's outputs are scored: ``name``, ``higher_better``, the practical gap."""

    name: str
    higher_better: bool

    def gap(self, reference: float) -> float:
        """The practical difference at quality ``reference``."""
        g = PRACTICAL[self.name]
        return g * abs(reference) if self.name in RELATIVE else g

    def fmt(self, value: float) -> str:
        if not math.isfinite(value):
            return "n/a"
        if self.name == "accuracy":
            return f"{100 * value:.1f} %"
        if self.name == "AUC":
            return f"{value:.3f}"
        return f"{value:.3g}"

    def fmt_gap(self, value: float) -> str:
        """A size of difference, unsigned (the practical gap)."""
        return self.fmt_diff(abs(value)).lstrip("+")

    def fmt_diff(self, value: float) -> str:
        """A difference in this metric's units (points of accuracy)."""
        if self.name == "accuracy":
            return f"{100 * value:+.1f} points"
        if self.name == "AUC":
            return f"{value:+.3f}"
        return f"{value:+.3g}"


def _gap(metric: Metric, reference: float, y) -> float:
    """The practical gap at quality ``reference``; for MSE never below :data:`MSE_FLOOR` x the
    targets' variance (a model that reproduces its targets to 1e-14 differs from one at 1e-17 by
    nothing anyone could use)."""
    if not math.isfinite(reference):
        return math.nan
    gap = metric.gap(reference)
    if metric.name == "MSE" and y is not None:
        gap = max(gap, MSE_FLOOR * float(y.detach().double().var()))
    return gap


def check_task(task) -> str:
    if task not in AUDIT_TASKS:
        raise ValueError(
            f"task={task!r} is not one of {AUDIT_TASKS}: 'classification' (logits, class or 0/1 labels), "
            "'regression' (targets, mean squared error) or 'density' (the model returns log p(x))"
        )
    return task


def metric_for(task: str, outputs: torch.Tensor) -> Metric:
    if task == "regression":
        return Metric("MSE", higher_better=False)
    if task == "density":
        return Metric("log-likelihood", higher_better=True)
    if outputs.dim() == 1 or (outputs.dim() == 2 and outputs.shape[1] == 1):
        return Metric("AUC", higher_better=True)
    return Metric("accuracy", higher_better=True)


def _flat(outputs: torch.Tensor) -> torch.Tensor:
    return outputs.reshape(outputs.shape[0], -1) if outputs.dim() > 1 else outputs


def per_row_loss(task: str, outputs: torch.Tensor, y: torch.Tensor | None) -> torch.Tensor:
    """The training loss of each row, ``(N,)`` (cross-entropy, squared error, or -log p)."""
    if task == "density":
        return -outputs.reshape(-1)
    if task == "regression":
        return (_flat(outputs) - _flat(y.to(outputs))).pow(2).reshape(outputs.shape[0], -1).mean(dim=1)
    if outputs.dim() == 1 or outputs.shape[-1] == 1:
        return nn.functional.binary_cross_entropy_with_logits(
            outputs.reshape(-1), y.to(outputs).reshape(-1), reduction="none"
        )
    return nn.functional.cross_entropy(outputs, y.long(), reduction="none")


def training_loss(task: str, outputs: torch.Tensor, y: torch.Tensor | None) -> torch.Tensor:
    return per_row_loss(task, outputs, y).mean()


def _row_stats(metric: Metric, outputs: np.ndarray, y: np.ndarray | None) -> np.ndarray | None:
    """Per-row values whose mean is the quality (accuracy, squared error, log p); None for AUC."""
    if metric.name == "accuracy":
        return (outputs.argmax(axis=1) == y.astype(np.int64)).astype(np.float64)
    if metric.name == "MSE":
        return ((outputs.reshape(len(outputs), -1) - y.reshape(len(y), -1)) ** 2).mean(axis=1)
    if metric.name == "log-likelihood":
        return outputs.reshape(-1).astype(np.float64)
    return None


def _auc(scores: np.ndarray, y: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    if len(np.unique(y)) < 2 or not np.all(np.isfinite(scores)):
        return math.nan
    return float(roc_auc_score(y, scores))


def _np(t):
    return None if t is None else t.detach().double().cpu().numpy()


def score(metric: Metric, outputs: torch.Tensor, y: torch.Tensor | None) -> float:
    """The quality of ``outputs`` (NaN when a row is NaN: a failed solve has no quality)."""
    o, t = _np(outputs), _np(y)
    if not np.all(np.isfinite(o)):
        return math.nan
    if metric.name == "AUC":
        return _auc(o.reshape(-1), t.reshape(-1))
    return float(_row_stats(metric, o, t).mean())


def _oriented(metric: Metric, value):
    return value if metric.higher_better else -value


def difference(metric: Metric, a, b, *, n_boot: int, seed: int = 0) -> dict:
    """Quality of ``a`` minus quality of ``b``, oriented so that positive means ``a`` is better.

    ``a`` and ``b`` are ``(outputs, y)`` pairs. With the same ``y`` object on both sides the rows
    are paired (one resample of rows for both); otherwise each set is resampled on its own.
    Returns ``{"a", "b", "diff", "low", "high", "gap", "n_boot"}``: the two qualities, the oriented
    difference and its 95 % bootstrap interval, and the practical gap at ``b``'s quality.
    """
    (oa, ya), (ob, yb) = a, b
    qa, qb = score(metric, oa, ya), score(metric, ob, yb)
    out = {
        "a": qa,
        "b": qb,
        "diff": _oriented(metric, qa - qb),
        "low": math.nan,
        "high": math.nan,
        "gap": _gap(metric, qb, yb),
        "n_boot": n_boot,
    }
    if not (math.isfinite(qa) and math.isfinite(qb)):
        return out
    paired = ya is yb and oa.shape[0] == ob.shape[0]
    na, ta, nb_, tb = _np(oa), _np(ya), _np(ob), _np(yb)
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, len(na), size=(n_boot, len(na)))
    ib = ia if paired else rng.integers(0, len(nb_), size=(n_boot, len(nb_)))
    if metric.name == "AUC":
        diffs = np.array(
            [
                _auc(na[i].reshape(-1), ta[i].reshape(-1)) - _auc(nb_[j].reshape(-1), tb[j].reshape(-1))
                for i, j in zip(ia, ib)
            ]
        )
        diffs = diffs[np.isfinite(diffs)]
    else:
        ra, rb = _row_stats(metric, na, ta), _row_stats(metric, nb_, tb)
        diffs = ra[ia].mean(axis=1) - rb[ib].mean(axis=1)
    if len(diffs):
        lo, hi = np.percentile(_oriented(metric, diffs), [2.5, 97.5])
        out.update(low=float(lo), high=float(hi))
    return out


def difference_over_seeds(
    metric: Metric, model_out: torch.Tensor, y, baseline_outs: list[torch.Tensor], *, n_boot: int, seed: int = 0
) -> dict:
    """The model's quality minus the baseline's mean quality over its training seeds (positive: the
    model is better), with a 95 % interval that includes training variance: each resample draws a
    seed's baseline and the test rows (paired), so the interval is as wide as both spreads make it.
    Returns the keys of :func:`difference` and ``per_seed`` (the baseline's quality per seed)."""
    qa = score(metric, model_out, y)
    per_seed = [score(metric, b, y) for b in baseline_outs]
    qb = float(np.mean(per_seed)) if all(math.isfinite(q) for q in per_seed) else math.nan
    diff = _oriented(metric, qa - qb) if math.isfinite(qa) and math.isfinite(qb) else math.nan
    out = {
        "a": qa,
        "b": qb,
        "diff": diff,
        "low": math.nan,
        "high": math.nan,
        "gap": _gap(metric, qb, y),
        "n_boot": n_boot,
        "per_seed": per_seed,
        "seeds": len(baseline_outs),
    }
    if not math.isfinite(out["diff"]):
        return out
    rng = np.random.default_rng(seed)
    na, t = _np(model_out), _np(y)
    nbs = [_np(b) for b in baseline_outs]
    idx = rng.integers(0, len(na), size=(n_boot, len(na)))
    which = rng.integers(0, len(nbs), size=n_boot)
    if metric.name == "AUC":
        diffs = np.array(
            [
                _auc(na[i].reshape(-1), t[i].reshape(-1)) - _auc(nbs[k][i].reshape(-1), t[i].reshape(-1))
                for i, k in zip(idx, which)
            ]
        )
        diffs = diffs[np.isfinite(diffs)]
    else:
        ra = _row_stats(metric, na, t)
        rbs = [_row_stats(metric, nb, t) for nb in nbs]
        diffs = np.array([ra[i].mean() - rbs[k][i].mean() for i, k in zip(idx, which)])
    if len(diffs):
        lo, hi = np.percentile(_oriented(metric, diffs), [2.5, 97.5])
        out.update(low=float(lo), high=float(hi))
    return out


def worse_beyond_gap(d: dict, factor: float = 1.0) -> bool:
    """``a`` is worse than ``b`` by more than ``factor`` practical gaps, by the whole interval."""
    return math.isfinite(d["high"]) and d["high"] < -factor * d["gap"]


def better_beyond_gap(d: dict, factor: float = 1.0) -> bool:
    return math.isfinite(d["low"]) and d["low"] > factor * d["gap"]


def interval_text(metric: Metric, d: dict) -> str:
    """``a - b`` and its interval as the metric reads (the sentences say "a minus b"): for a metric
    where lower is better (MSE) the oriented difference of :func:`difference` is turned back, so a
    model with the larger MSE shows a positive difference."""
    sign = 1.0 if metric.higher_better else -1.0
    diff, lo, hi = sign * d["diff"], sign * d["low"], sign * d["high"]
    lo, hi = min(lo, hi), max(lo, hi)
    if not math.isfinite(lo):
        return metric.fmt_diff(diff) if math.isfinite(diff) else "n/a"
    return f"{metric.fmt_diff(diff)} (95 % interval {metric.fmt_diff(lo)} to {metric.fmt_diff(hi)})"
