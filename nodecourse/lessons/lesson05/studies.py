"""Lesson 5's studies: the functions that train and measure, each cached (:func:`cached_study`).

- :func:`auc_study`: every model of an :class:`~.config.AUCStudyConfig` on every seed's split of set A;
  both ledger rows and the notebook read one run of it.
- :func:`curve_study`: the learning curve of :mod:`.curve` (AUC against training patients).
- :func:`scaling_study`: pitfall 1 of the original loader measured on a training split (not cached:
  it takes a dataset, and it is cheap).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import torch

from nodecourse.lessons.lesson05.config import AUCStudyConfig
from nodecourse.lessons.study import cached_study

if TYPE_CHECKING:
    from nodecourse.lessons.lesson05.curve import CurveConfig, CurveResult

__all__ = ["ModelRun", "AUCStudy", "auc_study", "curve_study", "ScalingRow", "scaling_study", "observed_values"]


@dataclass(frozen=True)
class ModelRun:
    """One model trained on one seed's split: its test AUC and what the run cost."""

    model: str
    seed: int
    auc: float
    seconds: float
    cpu_seconds: float
    best_epoch: int
    n_train: int
    n_eval: int


@dataclass(frozen=True)
class AUCStudy:
    """Every run of an AUC study, in seed order per model; ``source`` is where set A came from
    (``"synthetic"`` for the stand-in), ``n_set`` the patients of set A as loaded."""

    config: AUCStudyConfig
    source: str
    n_set: int
    runs: tuple[ModelRun, ...]

    @property
    def synthetic(self) -> bool:
        return self.source == "synthetic"

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.model for r in self.runs))

    def aucs(self, model: str) -> tuple[float, ...]:
        """Test AUC per seed (in seed order)."""
        return tuple(float(r.auc) for r in self.runs if r.model == model)

    def aucs_by_model(self) -> dict[str, list[float]]:
        """model -> test AUC per seed (in seed order)."""
        return {m: list(self.aucs(m)) for m in self.models}

    def summary(self) -> dict[str, tuple[float, float]]:
        """model -> (mean AUC, standard deviation over seeds; 0 for one seed)."""
        return {
            m: (statistics.fmean(a), statistics.stdev(a) if len(a) > 1 else 0.0)
            for m, a in ((m, self.aucs(m)) for m in self.models)
        }

    def mean_seconds(self, model: str) -> float:
        """Wall seconds of one run of ``model``, averaged over seeds."""
        return statistics.fmean(r.seconds for r in self.runs if r.model == model)

    def merged(self, other: AUCStudy) -> AUCStudy:
        """This study's runs and ``other``'s (the same splits: same seeds, patients and data)."""
        if (other.config.seeds, other.config.n_patients, other.source) != (
            self.config.seeds,
            self.config.n_patients,
            self.source,
        ):
            raise ValueError("merged studies must share seeds, patients and data, so their splits are the same")
        return AUCStudy(self.config, self.source, self.n_set, self.runs + other.runs)

    def details(self) -> dict:
        """JSON-ready numbers for a ledger row's details."""
        per = {m: [r for r in self.runs if r.model == m] for m in self.models}
        return {
            "aucs": self.aucs_by_model(),
            "summary": self.summary(),
            "source": self.source,
            "n_set": self.n_set,
            "config": asdict(self.config),
            "seconds": {m: [r.seconds for r in rs] for m, rs in per.items()},
            "cpu_seconds": {m: [r.cpu_seconds for r in rs] for m, rs in per.items()},
            "best_epoch": {m: [r.best_epoch for r in rs] for m, rs in per.items()},
        }


@cached_study
def auc_study(config: AUCStudyConfig, progress: bool = False) -> AUCStudy:
    """Train every model of ``config`` for every seed on that seed's split of set A.

    Per seed: ``n_patients`` drawn (or all of set A), split by patient (stratified, seeded) into
    train / validation / test; normalisation fitted on the training patients; every model trained
    on the same split with ``config.training`` (sizes, optimiser, epochs), so differences between
    models are paired per seed.
    """
    return _run_study(config, progress)


def _run_study(config: AUCStudyConfig, progress: bool) -> AUCStudy:
    from nodecourse.data import physionet
    from nodecourse.models.latent import fit_mortality

    data = physionet.load("set-a", quantization=config.quantization, progress=progress, verbose=False)
    runs = []
    for seed in config.seeds:
        subset = data.sample(config.n_patients, seed=seed) if config.n_patients else data
        parts = subset.split(test=config.test_fraction, val=config.val_fraction, seed=seed)
        norm = physionet.Normalizer.fit(parts["train"])
        train, test = norm.transform(parts["train"]), norm.transform(parts["test"])
        val = norm.transform(parts["val"]) if "val" in parts else None
        for name in config.models:
            _, r = fit_mortality(name, train, test, val=val, seed=seed, progress=progress, settings=config.training)
            runs.append(
                ModelRun(
                    name,
                    seed,
                    float(r.auc),
                    float(r.seconds),
                    float(r.cpu_seconds),
                    int(r.best_epoch),
                    int(r.n_train),
                    int(r.n_eval),
                )
            )
    order = {m: i for i, m in enumerate(config.models)}
    runs.sort(key=lambda r: order[r.model])  # stable: seed order kept within a model
    return AUCStudy(config, data.report.source, len(data), tuple(runs))


@cached_study
def curve_study(config: CurveConfig, progress: bool = False) -> CurveResult:
    """The learning curve of ``config`` on set A (see :func:`nodecourse.lessons.lesson05.curve.learning_curve`)."""
    from nodecourse.lessons.lesson05.curve import learning_curve

    return learning_curve(config, progress=progress)


def observed_values(dataset, name: str) -> torch.Tensor:
    """The observed values of variable ``name`` over every patient and time of ``dataset``, shape (n_obs,)."""
    j = dataset.variables.index(name)
    return dataset.values[..., j][dataset.mask[..., j].bool()]


@dataclass(frozen=True)
class ScalingRow:
    """Pitfall 1 on one variable's training values: the range, and what each min–max scaling makes of it.

    ``upper_end_by_max``: (max − min) / max, the top of ``(x − min) / max``; ``middle_by_max`` and
    ``middle_by_range``: the width of the middle 98 % of values (1st to 99th percentile) after
    dividing by the max or by the range (max − min)."""

    variable: str
    low: float
    high: float
    upper_end_by_max: float
    middle_by_max: float
    middle_by_range: float


def scaling_study(train_raw, variables: tuple[str, ...]) -> tuple[ScalingRow, ...]:
    """:class:`ScalingRow` for each of ``variables`` on the raw (unnormalised) training split."""
    rows = []
    for name in variables:
        x = observed_values(train_raw, name)
        lo, hi = float(x.min()), float(x.max())
        q1, q99 = torch.quantile(x, torch.tensor([0.01, 0.99])).tolist()
        rows.append(ScalingRow(name, lo, hi, (hi - lo) / hi, (q99 - q1) / hi, (q99 - q1) / (hi - lo)))
    return tuple(rows)
