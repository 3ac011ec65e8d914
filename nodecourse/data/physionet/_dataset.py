"""The parsed set as tensors on a shared time grid; patient split; train-only normalisation."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from nodecourse.data.physionet._records import DESCRIPTORS, HORIZON_HOURS, VARIABLES, LoadReport, Record

__all__ = ["Normalizer", "PhysioNetSet"]


def check_quantization(quantization: float) -> float:
    q = float(quantization) if isinstance(quantization, (int, float)) and not isinstance(quantization, bool) else None
    if q is None or not (1 / 60 <= q <= HORIZON_HOURS):
        raise ValueError(
            f"quantization={quantization!r}: give the grid spacing in hours, "
            f"between 1/60 (one minute) and {HORIZON_HOURS:g}; e.g. 1.0 or 0.1"
        )
    return q


@dataclass
class PhysioNetSet:
    """Patients on one time grid (observations quantised to it; repeats in a cell averaged).

    Shapes (N patients, K grid times, D = 37 variables, S = 5 descriptors):

    - ``times``: (K,) hours since admission, ``0, q, 2q, ..., 48``
    - ``values``: (N, K, D) float32; raw units, or normalised after :meth:`Normalizer.transform`;
      0 where not observed
    - ``mask``: (N, K, D) float32, 1 where observed
    - ``static``: (N, S) float32 descriptors (:data:`DESCRIPTORS`), NaN where not recorded
      (0 after normalisation)
    - ``static_mask``: (N, S) float32, 1 where the descriptor was recorded
    - ``labels``: (N,) float32 in-hospital death (0/1)
    - ``record_ids``: (N,) int64
    """

    times: torch.Tensor
    values: torch.Tensor
    mask: torch.Tensor
    static: torch.Tensor
    labels: torch.Tensor
    record_ids: torch.Tensor
    static_mask: torch.Tensor
    report: LoadReport
    quantization: float
    normalized: bool = False

    variables = VARIABLES
    descriptors = DESCRIPTORS

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def subset(self, index) -> "PhysioNetSet":
        """The patients at ``index`` (a 1-D integer tensor, array or list)."""
        idx = torch.as_tensor(np.asarray(index), dtype=torch.long)
        return replace(
            self,
            values=self.values[idx],
            mask=self.mask[idx],
            static=self.static[idx],
            labels=self.labels[idx],
            record_ids=self.record_ids[idx],
            static_mask=self.static_mask[idx],
        )

    def sample(self, n_patients: int, seed: int = 0) -> "PhysioNetSet":
        """A seeded random subset of ``n_patients`` patients (all of them if fewer)."""
        if isinstance(n_patients, bool) or not isinstance(n_patients, int) or n_patients < 1:
            raise ValueError(f"n_patients={n_patients!r}: give a positive integer")
        if n_patients >= len(self):
            return self
        rng = np.random.default_rng(seed)
        return self.subset(np.sort(rng.choice(len(self), size=n_patients, replace=False)))

    def split(self, *, test: float = 0.2, val: float = 0.0, seed: int = 0) -> dict[str, "PhysioNetSet"]:
        """Split by patient, stratified by outcome, seeded: {'train', 'val' (if val > 0), 'test'}."""
        from sklearn.model_selection import train_test_split

        for name, frac in (("test", test), ("val", val)):
            if not 0.0 <= frac < 1.0:
                raise ValueError(f"{name}={frac!r}: give a fraction in [0, 1)")
        if test + val >= 1.0:
            raise ValueError(f"test + val = {test + val:g} leaves no training patients; keep it below 1")
        idx = np.arange(len(self))
        y = self.labels.numpy()
        out: dict[str, PhysioNetSet] = {}
        rest, test_idx = (
            train_test_split(idx, test_size=test, random_state=seed, stratify=y) if test > 0 else (idx, idx[:0])
        )
        if val > 0:
            train_idx, val_idx = train_test_split(rest, test_size=val / (1 - test), random_state=seed, stratify=y[rest])
            out["val"] = self.subset(np.sort(val_idx))
        else:
            train_idx = rest
        out["train"] = self.subset(np.sort(train_idx))
        out["test"] = self.subset(np.sort(test_idx))
        return {k: out[k] for k in ("train", "val", "test") if k in out}

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> "PhysioNetSet":
        """The same set on ``device`` and/or in floating ``dtype`` (record ids stay int64)."""
        kw = {"device": device, "dtype": dtype}
        return replace(
            self,
            times=self.times.to(**kw),
            values=self.values.to(**kw),
            mask=self.mask.to(**kw),
            static=self.static.to(**kw),
            static_mask=self.static_mask.to(**kw),
            labels=self.labels.to(**kw),
            record_ids=self.record_ids.to(device),
        )

    def observation_counts(self) -> torch.Tensor:
        """(N,) number of observed values per patient (after quantisation)."""
        return self.mask.sum(dim=(1, 2))


def densify(records: list[Record], labels: list[int], quantization: float, report: LoadReport) -> PhysioNetSet:
    """Put parsed records on the grid ``0, q, ..., 48`` h (nearest grid time; repeats averaged)."""
    q = check_quantization(quantization)
    k = int(round(HORIZON_HOURS / q)) + 1
    n, d = len(records), len(VARIABLES)
    sums = np.zeros((n, k, d), dtype=np.float64)
    counts = np.zeros((n, k, d), dtype=np.int32)
    for i, r in enumerate(records):
        cells = np.minimum(np.rint(r.times / q).astype(np.int64), k - 1)
        rows, cols = np.nonzero(r.mask)
        np.add.at(sums[i], (cells[rows], cols), r.values[rows, cols])
        np.add.at(counts[i], (cells[rows], cols), 1)
    mask = counts > 0
    values = np.where(mask, sums / np.maximum(counts, 1), 0.0)
    static = np.stack([r.static for r in records]) if records else np.zeros((0, len(DESCRIPTORS)))
    static_t = torch.from_numpy(static.astype(np.float32))
    return PhysioNetSet(
        times=torch.arange(k, dtype=torch.float32) * q,
        values=torch.from_numpy(values.astype(np.float32)),
        mask=torch.from_numpy(mask.astype(np.float32)),
        static=static_t,
        labels=torch.tensor(labels, dtype=torch.float32),
        record_ids=torch.tensor([r.record_id for r in records], dtype=torch.long),
        static_mask=(~torch.isnan(static_t)).float(),
        report=report,
        quantization=q,
    )


def _check_finite_statistics(train: PhysioNetSet, center: torch.Tensor, scale: torch.Tensor, method: str) -> None:
    """ValueError naming each variable whose statistics overflowed (scale inf would zero it silently)."""
    m = train.mask.bool()
    # Unobserved variables get placeholder statistics (scale 1 below): only observed ones count.
    bad = ~(torch.isfinite(center) & torch.isfinite(scale)) & m.any(dim=(0, 1))
    if not bad.any():
        return
    parts = []
    for j in bad.nonzero().flatten().tolist():
        observed = train.values[..., j][m[..., j]]
        parts.append(f"{VARIABLES[j]} (largest |value| {float(observed.abs().max()):.3g})")
    how = "a value near its limit, squared" if method == "zscore" else "a range wider than its limit"
    other = " or use method='minmax'" if method == "zscore" else ""
    raise ValueError(
        f"Normalizer.fit(method={method!r}): the statistics of {', '.join(parts)} overflow "
        f"{train.values.dtype} ({how}); such a value is almost surely an error in the record: "
        f"drop those patients (data.subset){other}"
    )


@dataclass
class Normalizer:
    """Per-variable statistics fitted on the training split only, applied to every split.

    ``method="zscore"``: (x - mean) / std over the observed training values.
    ``method="minmax"``: (x - min) / (max - min), the range (not the max).
    Unobserved entries stay 0; descriptors are z-scored and their NaNs set to 0.
    Statistics that overflow the values' dtype (a value near float32's limit,
    squared) raise ValueError naming the variable rather than scaling it to zeros.
    """

    method: str
    center: torch.Tensor  # (D,)
    scale: torch.Tensor  # (D,)
    static_center: torch.Tensor  # (S,)
    static_scale: torch.Tensor  # (S,)

    METHODS = ("zscore", "minmax")

    @classmethod
    def fit(cls, train: PhysioNetSet, method: str = "zscore") -> "Normalizer":
        if method not in cls.METHODS:
            raise ValueError(f"method={method!r} is not a normalisation; use one of {cls.METHODS}")
        if train.normalized:
            raise ValueError("train is already normalised; fit the Normalizer on the raw training split")
        m = train.mask.bool()
        x = train.values
        count = m.sum(dim=(0, 1)).clamp_min(1)
        if method == "zscore":
            center = (x * m).sum(dim=(0, 1)) / count
            var = (((x - center) * m) ** 2).sum(dim=(0, 1)) / count
            scale = var.sqrt()
        else:
            big = torch.finfo(x.dtype).max
            center = torch.where(m, x, big).amin(dim=(0, 1))
            scale = torch.where(m, x, -big).amax(dim=(0, 1)) - center
            center = torch.where(m.any(dim=(0, 1)), center, torch.zeros_like(center))
        _check_finite_statistics(train, center, scale, method)
        # A constant variable (MechVent is always 1) gets scale 1, not a division by zero.
        scale = torch.where(scale > 1e-8, scale, torch.ones_like(scale))
        s = train.static
        sm = train.static_mask.bool()
        s0 = torch.where(sm, s, torch.zeros_like(s))
        sc = sm.sum(0).clamp_min(1)
        s_center = s0.sum(0) / sc
        s_scale = ((((s0 - s_center) * sm) ** 2).sum(0) / sc).sqrt()
        s_scale = torch.where(s_scale > 1e-8, s_scale, torch.ones_like(s_scale))
        return cls(method, center, scale, s_center, s_scale)

    def transform(self, data: PhysioNetSet) -> PhysioNetSet:
        if data.normalized:
            raise ValueError("data is already normalised; transform the raw set")
        m = data.mask
        dev = data.values.device
        values = (data.values - self.center.to(dev)) / self.scale.to(dev) * m
        sm = data.static_mask.bool()
        static = torch.where(
            sm, (data.static - self.static_center.to(dev)) / self.static_scale.to(dev), torch.zeros_like(data.static)
        )
        return replace(data, values=values, static=static, normalized=True)

    def inverse(self, values: torch.Tensor) -> torch.Tensor:
        """Normalised (..., D) values back to raw units."""
        return values * self.scale.to(values.device) + self.center.to(values.device)
