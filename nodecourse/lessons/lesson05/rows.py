"""Lesson 5's ledger rows, ``physionet-auc`` and ``physionet-gru-d``: thin adapters over one AUC study.

Both rows read one cached study (:func:`~.studies.auc_study`): every model, every seed, the same
patient split per seed, so the differences between models are paired per seed. Thresholds are the
published figures, declared in :mod:`.config` before anything runs. Levels are judged by 95 %
intervals over seeds; gaps against the ranges of the published gaps (:mod:`.judging`).

Each row's text says what it ran with, read from the objects the study used: the grid and epochs
of its :class:`~.config.AUCStudyConfig`, the sizes and optimiser of the settings it passed to
``fit`` (:attr:`~.config.AUCStudyConfig.training`), the patients each run trained on, validated on
and was tested on; and beside them the published settings, which differ.

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
    PUBLISHED_GAPS,
    PUBLISHED_PATIENTS,
    PUBLISHED_SELECTION,
    QUICK_STUDY,
    REFERENCE_GAPS,
    RELATIVES,
    AUCStudyConfig,
    grid_text,
)
from nodecourse.lessons.lesson05.judging import GapVerdict, judge_auc_claim, judge_grud_claim
from nodecourse.models import PHYSIONET_PUBLISHED

__all__ = ["measure_physionet_auc", "measure_physionet_gru_d"]


def interval_text(iv, fmt: str = ".3f") -> str:
    """``"0.814 (95 % 0.794 to 0.834)"``, or ``"n/a"`` without an interval."""
    return "n/a" if iv is None else f"{iv.mean:{fmt}} (95 % {iv.lo:{fmt}} to {iv.hi:{fmt}})"


def gap_text(gap: GapVerdict) -> str:
    """One paired gap with what it is judged against, e.g.
    ``"GRU-D -0.006 (95 % ...) vs published +0.015 ± 0.012 (+0.003 to +0.027)"``; a model with no
    published gap of its own is judged against 0, its published relative's gap shown as not judged."""
    measured = interval_text(gap.interval, "+.3f")
    if gap.published is not None:
        return f"{NAMES[gap.baseline]} {measured} vs published {gap.published.text()}"
    if gap.reference is not None:
        other = RELATIVES[gap.baseline]
        return (
            f"{NAMES[gap.baseline]} (the course's model) {measured} vs 0; the paper's {_published_name(other)}, "
            f"another model, trailed by {gap.reference.text()} (shown, not judged)"
        )
    return f"{NAMES[gap.baseline]} {measured} vs 0 (nothing published)"


def _published_name(key: str) -> str:
    return {"rnn-dt": "RNN-Δt"}.get(key, NAMES.get(key, key))


def _sizes(st) -> str:
    return (
        f"{st.ode_rnn_hidden}-unit recurrent states, ODE fields of {st.ode_layers + 1} hidden layers × {st.ode_units} "
        f"units, a {'-'.join(map(str, st.classifier_hidden))}-unit head (dropout {st.classifier_dropout:g})"
    )


def _optimiser(st) -> str:
    schedule = "cosine decay" if st.lr_schedule == "cosine" else f"lr × {st.lr_decay_per_iteration:g} a batch"
    wd = f", weight decay {st.weight_decay:g}" if st.weight_decay else ""
    return f"{st.optimizer.capitalize()} lr {st.lr:g} with {schedule}{wd}, batches of {st.batch_size}"


def settings_text(config: AUCStudyConfig, study: studies.AUCStudy) -> str:
    """What the study ran with, from the objects it used: grid, sizes, optimiser, epochs, patients, seeds.

    Patients are the runs' own counts (training, validation = the rest of the drawn patients, test)."""
    st = config.training
    data = "the synthetic stand-in" if study.synthetic else "set A"
    drawn = config.n_patients or study.n_set
    n_train = sorted({r.n_train for r in study.runs if r.model in config.models})
    n_test = sorted({r.n_eval for r in study.runs if r.model in config.models})
    if n_train and n_test:
        trained = "/".join(f"{n:,}" for n in n_train)
        val = "/".join(f"{drawn - a - b:,}" for a, b in zip(n_train, n_test))
        patients = (
            f"each seed trains on {trained} of {drawn:,} patients of {data} ({val} choose the epoch, "
            f"{'/'.join(f'{n:,}' for n in n_test)} are tested)"
        )
    else:
        patients = f"{drawn:,} patients of {data}"
    return (
        f"{st.name} settings: {grid_text(config.quantization)} grid; {_sizes(st)}; {_optimiser(st)}; up to "
        f"{st.epochs} epochs, the best validation epoch kept; {patients}; {len(config.seeds)} seeds"
    )


def published_settings_text() -> str:
    """The published settings the course's differ from, in one clause."""
    st = PHYSIONET_PUBLISHED
    return (
        f"published settings: {grid_text(st.quantization_hours)} grid, {st.ode_rnn_hidden}-unit states, "
        f"{st.optimizer.capitalize()} lr {st.lr:g}, {st.epochs} epochs, {st.train_patients:,} training patients; "
        f"{PUBLISHED_SELECTION}"
    )


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
    ran = settings_text(config, study)
    details = details | {"settings": config.training.as_dict(), "published_settings": PHYSIONET_PUBLISHED.as_dict()}
    if study.synthetic:
        return Measurement(
            f"synthetic stand-in data, not PhysioNet ({ran}): {core}", ClaimVerdict.NOT_MEASURABLE, details
        )
    if config.n_patients:
        return Measurement(
            f"quick mode ({ran}) does not decide a claim about 0.01 AUC; the full study does. "
            f"The same comparison at this scale: {core}",
            ClaimVerdict.UNDECIDED,
            details,
            seeds=n,
        )
    return Measurement(
        f"{core}. Ran with the {ran}; the {published_settings_text()}. {parts_text(parts)}{extra}",
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
    f"(mean ± sd over runs; trained on {PUBLISHED_PATIENTS:,} patients of set A; {PUBLISHED_SELECTION}); "
    f"gap ODE-RNN − GRU-D {PUBLISHED_GAPS['gru-d'].text()}, ODE-RNN − RNN-Δt {REFERENCE_GAPS['gru-dt'].text()} "
    "(RNN-Δt is not a model the course trains)",
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
    published=f"GRU-D 0.818 ± 0.008; ODE-RNN 0.833 ± 0.009 (mean ± sd over runs; trained on {PUBLISHED_PATIENTS:,} "
    f"patients of set A; {PUBLISHED_SELECTION}); gap {PUBLISHED_GAPS['gru-d'].text()}",
    lesson="05",
    threshold=GRUD_THRESHOLD,
)
def measure_physionet_gru_d(quick: bool) -> Measurement:
    config = QUICK_STUDY if quick else FULL_STUDY
    study = studies.auc_study(config)
    verdict, parts, judged = judge_grud_claim(study.aucs_by_model())
    core = f"GRU-D AUC {interval_text(judged['_intervals']['level'])}; ODE-RNN − {gap_text(judged['_gaps']['gru-d'])}"
    return _measurement(config, study, core, verdict, parts, study.details() | _clean(judged))
