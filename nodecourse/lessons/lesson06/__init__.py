"""Lesson 6 (deep equilibrium models): its sizes (:mod:`.config`), studies (:mod:`.studies`), findings
(:mod:`.findings`) and ledger rows (:mod:`.rows`, registered on import).

The lesson calls the same cached studies to draw its figures that the rows judge, so the rows it shows come
from the very runs it plots.
"""
from . import rows
from .config import (
    FULL_TRAIN,
    GROWTH_READINGS,
    PHASES,
    QUICK_TRAIN,
    DEQTrainConfig,
    probe_epochs,
    reg_variant,
    train_config,
    truncated_variant,
    variants,
)
from .findings import (
    JACREG_FIT_RATIO,
    JACREG_NFE_RATIO,
    GrowthFindings,
    PublishedComparison,
    RegularizationFindings,
    SolverComparison,
    SpectralCheckpoint,
    TruncationFindings,
    VariantSummary,
    VariantTable,
    median_checkpoint,
)
from .ratios import RatioJudgement, judge_ratio, judge_ratio_effect
from .rows import (
    ANDERSON_THRESHOLD,
    GROWTH_THRESHOLD,
    HUTCHINSON_THRESHOLD,
    JACREG_THRESHOLD,
    ROW_IDS,
    TRUNCATION_THRESHOLD,
    measure_anderson,
    measure_growth,
    measure_hutchinson,
    measure_regularization,
    measure_truncation,
)
from .studies import (
    GradientMemoryPoint,
    GradientMemoryStudy,
    HutchinsonCheck,
    SolverProblemRuns,
    TrainRun,
    final_iters,
    gradient_memory_study,
    hutchinson_study,
    solver_study,
    train_variant,
    training_study,
)

__all__ = [
    "ANDERSON_THRESHOLD", "FULL_TRAIN", "GROWTH_READINGS", "GROWTH_THRESHOLD", "HUTCHINSON_THRESHOLD",
    "JACREG_FIT_RATIO", "JACREG_NFE_RATIO", "JACREG_THRESHOLD", "PHASES", "QUICK_TRAIN", "ROW_IDS",
    "TRUNCATION_THRESHOLD", "DEQTrainConfig", "GradientMemoryPoint", "GradientMemoryStudy", "GrowthFindings",
    "HutchinsonCheck", "PublishedComparison", "RatioJudgement", "RegularizationFindings", "SolverComparison",
    "SolverProblemRuns", "SpectralCheckpoint", "TrainRun", "TruncationFindings", "VariantSummary", "VariantTable",
    "final_iters", "gradient_memory_study", "hutchinson_study", "judge_ratio", "judge_ratio_effect",
    "measure_anderson", "measure_growth", "measure_hutchinson", "measure_regularization", "measure_truncation",
    "median_checkpoint", "probe_epochs", "reg_variant", "rows", "solver_study", "train_config", "train_variant",
    "training_study", "truncated_variant", "variants",
]
