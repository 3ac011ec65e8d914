"""Lesson 5: latent ODEs on PhysioNet 2012, ODE-RNN beside its discrete baselines.

- :mod:`.config`: the published figures, thresholds (declared before anything runs) and study configs;
- :mod:`.studies`: what measures (the AUC study, the learning curve, pitfall 1), each cached;
- :mod:`.judging`: levels by 95 % seed intervals, gaps against the ranges of the published gaps;
- :mod:`.findings`: what the lesson's sentences quote, rendering its own Markdown;
- :mod:`.rows`: the ledger rows ``physionet-auc`` and ``physionet-gru-d``;
- :mod:`.curve`: the learning curve over patients of set A (``python -m nodecourse.lessons.lesson05.curve``;
  not imported here, so that ``-m`` runs it cleanly).
"""

from nodecourse.lessons.lesson05 import rows  # noqa: F401  (the ledger registers the rows by importing this package)
from nodecourse.lessons.lesson05.config import (
    AHEAD_MARGIN,
    AUC_THRESHOLD,
    BASELINES,
    FULL_STUDY,
    GAP_RULE,
    GRUD_FLOOR,
    GRUD_THRESHOLD,
    LATENT_STUDY,
    NAMES,
    ODERNN_FLOOR,
    PUBLISHED,
    PUBLISHED_GAPS,
    PUBLISHED_PATIENTS,
    PUBLISHED_PATIENTS_SOURCE,
    PUBLISHED_SELECTION,
    QUICK_LATENT_STUDY,
    QUICK_STUDY,
    REFERENCE_GAPS,
    RELATIVES,
    AUCStudyConfig,
    PublishedGap,
    grid_text,
    published_gap,
    split_sizes,
)
from nodecourse.lessons.lesson05.findings import (
    FULL_CURVE_COMMAND,
    AUCFindings,
    CurveFindings,
    DataFindings,
    ModelAUC,
    ScalingFindings,
)
from nodecourse.lessons.lesson05.judging import (
    GapVerdict,
    judge_auc_claim,
    judge_gap,
    judge_gap_range,
    judge_grud_claim,
    paired_gaps,
)
from nodecourse.lessons.lesson05.rows import measure_physionet_auc, measure_physionet_gru_d
from nodecourse.lessons.lesson05.studies import (
    AUCStudy,
    ModelRun,
    ScalingRow,
    auc_study,
    curve_study,
    observed_values,
    scaling_study,
)

# The curve's names load its module on first use (PEP 562): importing it here would make
# `python -m nodecourse.lessons.lesson05.curve` find the module already imported by its package.
_CURVE_NAMES = (
    "COURSE_CURVE",
    "FULL_CURVE",
    "LESSON_QUICK_CURVE",
    "QUICK_CURVE",
    "CurveCache",
    "CurveConfig",
    "CurveFitsFailed",
    "learning_curve",
)

__all__ = [
    *_CURVE_NAMES,
    "AHEAD_MARGIN",
    "AUC_THRESHOLD",
    "BASELINES",
    "FULL_STUDY",
    "GAP_RULE",
    "GRUD_FLOOR",
    "GRUD_THRESHOLD",
    "LATENT_STUDY",
    "NAMES",
    "ODERNN_FLOOR",
    "PUBLISHED",
    "PUBLISHED_GAPS",
    "PUBLISHED_PATIENTS",
    "PUBLISHED_PATIENTS_SOURCE",
    "PUBLISHED_SELECTION",
    "QUICK_LATENT_STUDY",
    "QUICK_STUDY",
    "REFERENCE_GAPS",
    "RELATIVES",
    "AUCStudyConfig",
    "PublishedGap",
    "grid_text",
    "published_gap",
    "split_sizes",
    "FULL_CURVE_COMMAND",
    "AUCFindings",
    "CurveFindings",
    "DataFindings",
    "ModelAUC",
    "ScalingFindings",
    "GapVerdict",
    "judge_auc_claim",
    "judge_gap",
    "judge_gap_range",
    "judge_grud_claim",
    "paired_gaps",
    "measure_physionet_auc",
    "measure_physionet_gru_d",
    "AUCStudy",
    "ModelRun",
    "ScalingRow",
    "auc_study",
    "curve_study",
    "observed_values",
    "scaling_study",
]


def __getattr__(name: str):
    if name in _CURVE_NAMES:
        from nodecourse.lessons.lesson05 import curve

        return getattr(curve, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
