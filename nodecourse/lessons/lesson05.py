"""Ledger row of lesson 5: PhysioNet 2012 mortality AUC, ODE-RNN beside its baselines.

- ``physionet-auc``: Rubanova et al. (2019) report ODE-RNN 0.833 ± 0.009 AUC on PhysioNet 2012
  (8,000 patients), above RNN-Δt (0.787 ± 0.014) and GRU-D (0.818 ± 0.008). We train ODE-RNN,
  GRU-Δt and the summary-statistics logistic regression on set A with an 80/20 patient split.
  The row holds when the ODE-RNN's mean AUC reaches the lower end of the published spread
  (0.833 - 0.009) *and* is ahead of both baselines' means by more than the larger seed standard
  deviation of the models compared (a margin inside the seed noise is no margin); quick mode
  (600 patients, a few epochs) and the synthetic stand-in are not measurable at this scale.

The lesson calls :func:`auc_study` for its own table; results are cached per configuration,
so the row shown in the lesson reuses the runs behind the table.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from nodecourse.claims import Measurement, Verdict, claim

PUBLISHED = {"odernn": (0.833, 0.009), "latent-ode": (0.829, 0.004), "gru-d": (0.818, 0.008),
             "rnn-dt": (0.787, 0.014)}
"""Rubanova et al. 2019, Table (PhysioNet mortality AUC, mean ± std)."""


@dataclass(frozen=True)
class AUCStudyConfig:
    """One AUC comparison (hashable, so runs are cached)."""

    models: tuple[str, ...] = ("summary-logreg", "gru-dt", "odernn", "latent-ode")
    seeds: tuple[int, ...] = (0,)
    n_patients: int | None = None  # None: the whole set
    epochs: int = 20
    test_fraction: float = 0.2
    val_fraction: float = 0.0  # > 0: that share of all patients, from the training side, picks the epoch
    quantization: float = 1.0


QUICK_STUDY = AUCStudyConfig(seeds=(0, 1), n_patients=600, epochs=3, val_fraction=0.1)
FULL_STUDY = AUCStudyConfig(seeds=(0, 1, 2), epochs=20, val_fraction=0.1)
"""Full mode: all 4,000 patients of set A, three seeds (split and initialisation), up to 20 epochs.

Each run keeps the weights of the epoch with the best AUC on a validation split (10 % of the
patients, carved from the training side of that seed's split); the test patients never choose
an epoch, a checkpoint or a setting."""


_STUDIES: dict[AUCStudyConfig, dict] = {}


def auc_study(config: AUCStudyConfig, progress: bool = False) -> dict:
    """Train every model of ``config`` for every seed; return AUCs, seconds and the data source.

    Returns ``{"source": str, "synthetic": bool, "runs": {model: [FitResult.as_dict(), ...]}}``.
    Cached per configuration (in this process), with or without progress bars.
    """
    if config not in _STUDIES:
        _STUDIES[config] = _run_study(config, progress)
    return _STUDIES[config]


def _run_study(config: AUCStudyConfig, progress: bool) -> dict:
    from nodecourse.data import physionet
    from nodecourse.latent import fit

    data = physionet.load("set-a", quantization=config.quantization, progress=progress, verbose=False)
    runs: dict[str, list[dict]] = {m: [] for m in config.models}
    for seed in config.seeds:
        subset = data.sample(config.n_patients, seed=seed) if config.n_patients else data
        parts = subset.split(test=config.test_fraction, val=config.val_fraction, seed=seed)
        norm = physionet.Normalizer.fit(parts["train"])
        train, test = norm.transform(parts["train"]), norm.transform(parts["test"])
        val = norm.transform(parts["val"]) if "val" in parts else None
        for name in config.models:
            _, result = fit(name, train, test, val=val, epochs=config.epochs, seed=seed, progress=progress)
            runs[name].append(result.as_dict())
    return {"source": data.report.source, "synthetic": data.report.source == "synthetic", "runs": runs}


def summarise(runs: dict[str, list[dict]]) -> dict[str, tuple[float, float]]:
    """model -> (mean AUC, standard deviation over seeds; 0 for one seed)."""
    out = {}
    for name, rs in runs.items():
        aucs = [r["auc"] for r in rs]
        out[name] = (statistics.fmean(aucs), statistics.stdev(aucs) if len(aucs) > 1 else 0.0)
    return out


@claim(
    id="physionet-auc",
    claim="ODE-RNN reaches 0.833 ± 0.009 mortality AUC on PhysioNet 2012, ahead of discrete baselines",
    source="Rubanova et al. 2019 (Latent ODEs for irregularly-sampled time series)",
    published="ODE-RNN 0.833 ± 0.009; GRU-D 0.818 ± 0.008; RNN-Δt 0.787 ± 0.014",
    lesson="05",
)
def measure_physionet_auc(quick: bool) -> Measurement:
    config = QUICK_STUDY if quick else FULL_STUDY
    study = auc_study(config)
    summary = summarise(study["runs"])
    measured = ", ".join(f"{m} {mean:.3f}" + (f" ± {sd:.3f}" if len(config.seeds) > 1 else "")
                         for m, (mean, sd) in summary.items())
    measured += f" (set A, {'%d patients' % config.n_patients if config.n_patients else 'all patients'}, " \
                f"{len(config.seeds)} seed(s), {config.epochs} epochs)"
    details = {"summary": summary, "source": study["source"], "config": config.__dict__,
               "seconds": {m: [r["seconds"] for r in rs] for m, rs in study["runs"].items()}}
    if study["synthetic"]:
        return Measurement("synthetic stand-in data: " + measured, Verdict.NOT_MEASURABLE, details)
    if quick:
        return Measurement(measured, Verdict.NOT_MEASURABLE, details)
    mean, _ = summary["odernn"]
    low = PUBLISHED["odernn"][0] - PUBLISHED["odernn"][1]
    baselines = [m for m in ("gru-dt", "summary-logreg") if m in summary]
    noise = max(summary[m][1] for m in ["odernn", *baselines])
    beats = all(mean - summary[m][0] > noise for m in baselines)
    verdict = Verdict.HOLDS if mean >= low and beats else Verdict.DOES_NOT_HOLD
    return Measurement(measured, verdict, details)
