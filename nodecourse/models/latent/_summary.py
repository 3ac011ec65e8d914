"""The non-sequential baseline: logistic regression on per-variable summary statistics.

:func:`summary_features` turns a set's ``values`` and ``mask`` (N, K, D) and descriptors (N, S) into
(N, 5D + S); :class:`SummaryLogReg` fits scikit-learn's logistic regression on them.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["SummaryLogReg", "summary_features"]


def summary_features(data) -> np.ndarray:
    """Per-variable mean, min, max, last value and count, then the descriptors: (N, 5D + S).

    Missing statistics (a variable never observed) are NaN, imputed later from the training split.
    """
    v = data.values.detach().cpu().double()
    m = data.mask.detach().cpu().bool()
    count = m.sum(1).double()
    nan = torch.tensor(float("nan"), dtype=v.dtype)
    mean = torch.where(count > 0, (v * m).sum(1) / count.clamp_min(1), nan)
    vmin = torch.where(count > 0, torch.where(m, v, torch.inf).amin(1), nan)
    vmax = torch.where(count > 0, torch.where(m, v, -torch.inf).amax(1), nan)
    k = v.shape[1]
    last_idx = torch.where(m, torch.arange(k).view(1, k, 1), -1).amax(1)  # (N, D)
    last = torch.gather(v, 1, last_idx.clamp_min(0).unsqueeze(1)).squeeze(1)
    last = torch.where(count > 0, last, nan)
    static = data.static.detach().cpu().double()
    static = torch.where(data.static_mask.cpu().bool(), static, nan)
    return torch.cat([mean, vmin, vmax, last, count, static], dim=1).numpy()


class SummaryLogReg:
    """Logistic regression on :func:`summary_features` (impute from train, standardise, L2)."""

    def __init__(self, C: float = 0.1, seed: int = 0):
        from sklearn.impute import SimpleImputer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        self.pipeline = make_pipeline(
            SimpleImputer(strategy="mean", add_indicator=True),
            StandardScaler(),
            LogisticRegression(C=C, max_iter=5000, random_state=seed),
        )

    def fit(self, train) -> "SummaryLogReg":
        self.pipeline.fit(summary_features(train), train.labels.cpu().numpy())
        return self

    def predict_proba(self, data) -> np.ndarray:
        return self.pipeline.predict_proba(summary_features(data))[:, 1]
