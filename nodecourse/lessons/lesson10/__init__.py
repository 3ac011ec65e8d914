"""Lesson 10 (cheaper and exact): regularised dynamics, the seminorm adjoint, reversible Heun.

- :mod:`~nodecourse.lessons.lesson10.config`: the thresholds (declared before anything is measured) and
  the frozen study sizes, quick and full;
- :mod:`~nodecourse.lessons.lesson10.studies`: the measurements, each a cached study returning typed results;
- :mod:`~nodecourse.lessons.lesson10.findings`: what the lesson's paragraphs quote, rendered by ``markdown()``;
- :mod:`~nodecourse.lessons.lesson10.plots`: the figures;
- :mod:`~nodecourse.lessons.lesson10.rows`: the ledger rows ``ode-nfe-growth``, ``kinetic-regularization-nfe``,
  ``seminorm-backward-nfe``, ``reversible-gradient-exact``, ``reversible-memory-flat`` (registered on import).
"""
from nodecourse.lessons.lesson10 import rows  # noqa: F401  (registers the ledger rows)
from nodecourse.lessons.lesson10.config import (
    ACCURACY_DROP,
    EXACT_THRESHOLD,
    EXPLORE_REFERENCE_TOL,
    EXPLORER_ROUTES,
    EXPLORER_WEIGHTS,
    FULL_EXACT,
    FULL_SEMINORM,
    FULL_TRAIN,
    KINETIC_THRESHOLD,
    MEMORY_THRESHOLD,
    NFE_GROWTH_THRESHOLD,
    PUBLISHED_SPEEDUP,
    QUICK_EXACT,
    QUICK_SEMINORM,
    QUICK_TRAIN,
    RNODE_WEIGHTS,
    SEMINORM_THRESHOLD,
    TRAINED_STEPS,
    ExactConfig,
    MoonsTrainConfig,
    SeminormTask,
    SeminormTaskConfig,
)
from nodecourse.lessons.lesson10.findings import (
    ClosingFindings,
    ControlledSeminorm,
    ExactFindings,
    ExplorerFindings,
    GrowthFindings,
    MemoryFindings,
    RegularisationFindings,
    RegulariserCheck,
    RoundTrip,
    RouteFindings,
    SeminormFindings,
    SeminormMoonsReading,
    StabilityFindings,
    TrainedStabilityFindings,
    TrainingTable,
)
from nodecourse.lessons.lesson10.plots import (
    plot_memory,
    plot_nfe_training,
    plot_seminorm_tasks,
    plot_stability,
    plot_trained_convergence,
)
from nodecourse.lessons.lesson10.studies import (
    ExactRow,
    MoonsRun,
    Route,
    SeminormCount,
    SeminormTaskResult,
    StabilityCase,
    TrainedStability,
    exact_study,
    explore,
    explorer_grid,
    moons,
    parasitic_root,
    reversible_memory_study,
    route_table,
    seminorm_study,
    stability_study,
    train_moons,
    trained_model,
    trained_stability,
    training_study,
)
from nodecourse.solvers.reversible import REVERSIBLE_SOLVERS

__all__ = [
    "ACCURACY_DROP", "EXACT_THRESHOLD", "EXPLORE_REFERENCE_TOL", "EXPLORER_ROUTES", "EXPLORER_WEIGHTS", "FULL_EXACT",
    "FULL_SEMINORM", "FULL_TRAIN", "KINETIC_THRESHOLD", "MEMORY_THRESHOLD", "NFE_GROWTH_THRESHOLD",
    "PUBLISHED_SPEEDUP", "QUICK_EXACT", "QUICK_SEMINORM", "QUICK_TRAIN", "REVERSIBLE_SOLVERS", "RNODE_WEIGHTS",
    "SEMINORM_THRESHOLD", "TRAINED_STEPS", "ClosingFindings", "ControlledSeminorm", "ExactConfig", "ExactFindings",
    "ExactRow", "ExplorerFindings", "GrowthFindings", "MemoryFindings", "MoonsRun", "MoonsTrainConfig",
    "RegularisationFindings", "RegulariserCheck", "RoundTrip", "Route", "RouteFindings", "SeminormCount",
    "SeminormFindings", "SeminormMoonsReading", "SeminormTask", "SeminormTaskConfig", "SeminormTaskResult",
    "StabilityCase", "StabilityFindings", "TrainedStability", "TrainedStabilityFindings", "TrainingTable",
    "exact_study", "explore", "explorer_grid", "moons", "parasitic_root", "plot_memory", "plot_nfe_training",
    "plot_seminorm_tasks", "plot_stability", "plot_trained_convergence", "reversible_memory_study", "route_table",
    "seminorm_study",
    "stability_study", "train_moons", "trained_model", "trained_stability", "training_study",
]
