"""Lesson 5's ledger rows, ``physionet-auc`` and ``physionet-gru-d``: thin adapters over one AUC study.

Both rows read one cached study (:func:`~.studies.auc_study`): every model, every seed, the same
patient split per seed, so the differences between models are paired per seed. Thresholds are the
published figures, declared in :mod:`.config` before anything runs. Levels are judged by 95 %
intervals over seeds; gaps against the published effect sizes (:mod:`.judging`).

Quick mode (600 patients, 3 epochs, 3 seeds) is reported *undecided*: the same comparison at a scale
that cannot resolve 0.01 AUC, decided by the full study. On the synthetic stand-in (set A absent)
the benchmark is not measured at all.
"""

from __future__ import annotations

from nodecourse.claims import ClaimVerdict, Measurement, claim, parts_text
from nodecourse.lessons.lesson05 import studies
from nodecourse.lessons.lesson05.config import (
    AUC_THRESHOLD,
    BASELINES,
    FULL_STUDY,
    GRUD_THRESHOLD,
    NAMES,
    PUBLISHED_PATIENTS,
    QUICK_STUDY,
    AUCStudyConfig,
)
from nodecourse.lessons.lesson05.judging import GapVerdict, judge_auc_claim, judge_grud_claim

__all__ = ["measure_physionet_auc", "measure_physionet_gru_d", "interval_text", "gap_text"]


def interval_text(iv, fmt: str = ".3f") -> str:
    """``"0.814 (95 % 0.794 to 0.834)"``, or ``"n/a"`` without an interval."""
    return "n/a" if iv is None else f"{iv.mean:{fmt}} (95 % {iv.lo:{fmt}} to {iv.hi:{fmt}})"


def gap_text(gap: GapVerdict) -> str:
    """One paired gap with what it is judged against: ``"GRU-D -0.006 (95 % ...) vs published +0.015"``."""
    against = "0 (nothing published)" if gap.published_gap is None else f"published {gap.published_gap:+.3f}"
    return f"{NAMES[gap.baseline]} {interval_text(gap.interval, '+.3f')} vs {against}"


def scale_text(config: AUCStudyConfig, n_set: int | None = None) -> str:
    """Patients, seeds and epochs of a study; ``n_set`` is the size of set A as loaded."""
    if config.n_patients:
        patients = f"{config.n_patients} patients of set A"
    else:
        loaded = f"{n_set:,} patients" if n_set else "all patients"
        patients = (
            f"set A ({loaded}) split 80/20 as published (published: {PUBLISHED_PATIENTS:,} training patients of set A)"
        )
    return f"{patients}, {len(config.seeds)} seeds, up to {config.epochs} epochs"


def _measurement(
    config: AUCStudyConfig,
    study: studies.AUCStudy,
    core: str,
    verdict: ClaimVerdict,
    parts: dict[str, ClaimVerdict],
    details: dict,
    extra: str = "",
) -> Measurement:
    """The row's Measurement: judged at full scale; undecided in quick mode; not measured on the stand-in."""
    n = len(config.seeds)
    scale = scale_text(config, study.n_set)
    if study.synthetic:
        return Measurement(
            f"synthetic stand-in data, not PhysioNet ({scale}): {core}", ClaimVerdict.NOT_MEASURABLE, details
        )
    if config.n_patients:
        return Measurement(
            f"quick mode ({scale}) does not decide a claim about 0.01 AUC; the full study does. "
            f"The same comparison at this scale: {core}",
            ClaimVerdict.UNDECIDED,
            details,
            seeds=n,
        )
    return Measurement(
        f"{core}; {scale}. {parts_text(parts)}{extra}",
        verdict,
        details,
        seeds=n if verdict is ClaimVerdict.UNDECIDED else None,
    )


def _clean(details: dict) -> dict:
    return {k: v for k, v in details.items() if not k.startswith("_")}


@claim(
    id="physionet-auc",
    claim="ODE-RNN reaches 0.833 ± 0.009 mortality AUC on PhysioNet 2012, ahead of the discrete baselines",
    source="Rubanova et al. 2019 (Latent ODEs for irregularly-sampled time series), PhysioNet mortality-AUC table; "
    "training set: YuliaRubanova/latent_ode lib/parse_datasets.py (set A, split 80/20)",
    published="ODE-RNN 0.833 ± 0.009; latent ODE 0.829 ± 0.004; GRU-D 0.818 ± 0.008; RNN-Δt 0.787 ± 0.014 "
    "(trained on 3,200 patients of set A; gaps ODE-RNN − GRU-D +0.015, ODE-RNN − RNN-Δt +0.046)",
    lesson="05",
    threshold=AUC_THRESHOLD,
)
def measure_physionet_auc(quick: bool) -> Measurement:
    config = QUICK_STUDY if quick else FULL_STUDY
    study = studies.auc_study(config)
    verdict, parts, judged = judge_auc_claim(study.aucs_by_model())
    gaps = "; ".join(gap_text(judged["_gaps"][b]) for b in BASELINES if b in judged["_gaps"])
    core = f"ODE-RNN AUC {interval_text(judged['_intervals']['level'])}; paired gap ODE-RNN − baseline: {gaps}"
    strict = judged["strict_reading"]["verdict"]
    return _measurement(
        config,
        study,
        core,
        verdict,
        parts,
        study.details() | _clean(judged),
        f" (stricter reading, ODE-RNN >= 0.833 itself: {strict})",
    )


@claim(
    id="physionet-gru-d",
    claim="GRU-D, the published discrete baseline, reaches 0.818 ± 0.008 mortality AUC on PhysioNet 2012, "
    "behind ODE-RNN (0.833)",
    source="Rubanova et al. 2019, PhysioNet mortality-AUC table; GRU-D: Che et al. 2018 "
    "(Recurrent neural networks for multivariate time series with missing values); training set: "
    "YuliaRubanova/latent_ode lib/parse_datasets.py (set A, split 80/20)",
    published="GRU-D 0.818 ± 0.008; ODE-RNN 0.833 ± 0.009 (trained on 3,200 patients of set A; gap +0.015)",
    lesson="05",
    threshold=GRUD_THRESHOLD,
)
def measure_physionet_gru_d(quick: bool) -> Measurement:
    config = QUICK_STUDY if quick else FULL_STUDY
    study = studies.auc_study(config)
    verdict, parts, judged = judge_grud_claim(study.aucs_by_model())
    core = f"GRU-D AUC {interval_text(judged['_intervals']['level'])}; ODE-RNN − {gap_text(judged['_gaps']['gru-d'])}"
    return _measurement(config, study, core, verdict, parts, study.details() | _clean(judged))
