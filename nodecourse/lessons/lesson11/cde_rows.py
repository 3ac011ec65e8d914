"""Lesson 11's CDE ledger row, ``ncde-vs-odernn``: a thin adapter over :func:`~.cde_studies.ncde_study`.

The published comparisons are on data sets the course does not run (:data:`~.config.NCDE_PAPER_DATA`):
that part is *not measurable at this scale*, and the analogue on set A is judged beside it by the rule
declared in :mod:`.config`. As lesson 5's rows on the same study: quick mode (600 patients, 3 epochs) is
reported *undecided* (the rule's reading at that scale is shown), and on the synthetic stand-in the
analogue is not measured.
"""

from __future__ import annotations

from dataclasses import asdict

from nodecourse.claims import ClaimVerdict, Measurement, claim, combine, parts_text, unrun_scale_parts
from nodecourse.lessons.lesson11.cde_findings import NCDEFindings, interval_text
from nodecourse.lessons.lesson11.cde_studies import ncde_study
from nodecourse.lessons.lesson11.config import (
    FULL_NCDE_STUDY,
    NCDE_MARGIN,
    NCDE_PAPER_DATA,
    NCDE_THRESHOLD,
    QUICK_NCDE_STUDY,
)

__all__ = ["ANALOGUE", "measure_ncde_vs_odernn", "analogue_verdict"]

ANALOGUE = "analogue (PhysioNet 2012 set A mortality, paired gap NCDE − ODE-RNN)"


def analogue_verdict(f: NCDEFindings) -> ClaimVerdict:
    """The analogue part: the rule's verdict at full scale; undecided at quick scale; not measurable on the
    synthetic stand-in."""
    if f.study.auc.synthetic:
        return ClaimVerdict.NOT_MEASURABLE
    return ClaimVerdict.UNDECIDED if f.study.auc.config.n_patients else f.verdict


@claim(
    id="ncde-vs-odernn",
    claim="A neural CDE is at least as good as ODE-RNN-style models on irregularly sampled, partially observed "
    "time series",
    source="Kidger et al. 2020 (Neural controlled differential equations for irregular time series, NeurIPS), "
    "Tables 1-3",
    published=f"the neural CDE best or level with the best of ODE-RNN, GRU-D, GRU-Δt and GRU-ODE on {NCDE_PAPER_DATA} "
    "(test accuracy; AUC on sepsis); PhysioNet 2012 set A stands in here",
    lesson="11",
    threshold=NCDE_THRESHOLD,
    published_scale=NCDE_PAPER_DATA,
)
def measure_ncde_vs_odernn(quick: bool) -> Measurement:
    study = ncde_study(QUICK_NCDE_STUDY if quick else FULL_NCDE_STUDY)
    f = NCDEFindings.from_study(study, "quick" if quick else "full")
    parts = unrun_scale_parts(NCDE_PAPER_DATA, {ANALOGUE: analogue_verdict(f)})
    verdict = combine(parts)
    ncde, odernn = f.line("ncde"), f.line("odernn")
    measured = (
        f"{f.data_text}: neural CDE AUC {interval_text(ncde.auc)}, ODE-RNN {interval_text(odernn.auc)}; paired gap "
        f"NCDE − ODE-RNN {interval_text(f.interval, '+.3f')} against {NCDE_MARGIN:+.2f} ({f.reason}); parameters "
        f"{ncde.parameters:,} vs {odernn.parameters:,}; seconds per epoch {ncde.seconds_per_epoch:.2f} vs "
        f"{odernn.seconds_per_epoch:.2f}. The published comparisons ({NCDE_PAPER_DATA}) are not measurable at this "
        f"scale. {parts_text(parts)}"
    )
    if study.auc.config.n_patients and not study.auc.synthetic:
        measured += f" (quick mode does not decide; the rule's reading at this scale: {f.verdict.value})"
    details = {
        "aucs": study.auc.aucs_by_model(),
        "parameters": dict(study.parameters),
        "seconds_per_epoch": {x.model: x.seconds_per_epoch for x in f.lines},
        "cpu_seconds_per_epoch": {x.model: x.cpu_per_epoch for x in f.lines},
        "gap_interval": None if f.interval is None else asdict(f.interval),
        "rule_verdict": f.verdict.value,
        "source": study.auc.source,
        "parts": {k: v.value for k, v in parts.items()},
    }
    seeds = len(study.auc.config.seeds) if verdict is ClaimVerdict.UNDECIDED else None
    return Measurement(measured, verdict, details, seeds=seeds)
