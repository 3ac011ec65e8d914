"""Lesson 7 (capstone): four ways to spend depth on one task, measured side by side.

One task (scikit-learn's digits), one frame: embed the 64 pixels into a ``width``-dimensional state, transform
the state, read out 10 logits. Only the middle differs (:mod:`nodecourse.models.depth`):

- ``ResNet``: ``blocks`` explicit residual blocks ``z <- z + g_k(z)``, each its own MLP;
- ``Neural ODE``: one field ``dz/dt = g(z)`` on ``[0, 1]``, dopri5, trained with the adjoint;
- ``DEQ``: one block, ``z* = g(z*) + x`` solved by Anderson acceleration, implicit backward;
- ``Unrolled``: the same block iterated a fixed ``k`` times from ``z = 0``, backprop through all.

The three single-block models have one MLP whose hidden width matches the ResNet's parameter count
(:func:`nodecourse.models.matched_field_width`). The package: sizes (:mod:`.config`), thresholds
(:mod:`.thresholds`), cached studies (:mod:`.studies`: :func:`capstone_study` trains every model on every seed;
the measurements after training reuse the trained models), findings (:mod:`.findings`) and the ledger rows
(:mod:`.rows`, registered on import; :data:`ROW_IDS`).
"""

from nodecourse.models.depth import DepthClassifier, DEQCore, InjectedBlock, ODECore, UnrolledCore

from . import rows
from .config import (
    DIAL_TOLERANCES,
    FULL_CAPSTONE,
    MODELS,
    QUICK_CAPSTONE,
    REDUCTION_DEPTHS,
    WORK_UNITS,
    CapstoneConfig,
    capstone_config,
)
from .findings import (
    AdaptiveWork,
    CapstoneTable,
    PeakOrder,
    PeerMemoryTable,
    PerInputWork,
    TimeRatios,
    ToleranceTable,
    adaptive_findings,
    annulus_row,
    cost_findings,
    cost_ratios,
    dial_findings,
    format_summary,
    memory_findings,
    mismatch_findings,
    parity_findings,
    reduction_findings,
    summary_table,
)
from .rows import (
    ROW_IDS,
    measure_accuracy_parity,
    measure_adaptive_compute,
    measure_deq_cost,
    measure_deq_memory,
    measure_step_mismatch,
    measure_tolerance_dial,
    measure_training_memory,
)
from .studies import (
    CapstoneRun,
    DepthMemory,
    DialSolve,
    PeerBytes,
    Timings,
    build_model,
    capstone_study,
    forward_work,
    matched_resnet_config,
    memory_vs_depth,
    ode_tolerance_sweep,
    per_input_work,
    reduction_peers,
    single_block_hidden,
    step_mismatch,
    step_mismatch_study,
    timing_study,
    train_capstone_model,
)
from .thresholds import (
    ADAPTIVE,
    DEQ_COST,
    DEQ_INFER_COST,
    DEQ_TRAIN_COST,
    DIAL,
    MEMORY_GROWTH,
    MEMORY_REDUCTION,
    MISMATCH,
    PARITY,
    PARITY_IMAGES,
    TEST_IMAGES,
)

__all__ = [
    "DepthMemory",
    "DialSolve",
    "PeerBytes",
    "ADAPTIVE",
    "DEQ_COST",
    "DEQ_INFER_COST",
    "DEQ_TRAIN_COST",
    "DIAL",
    "MEMORY_GROWTH",
    "MEMORY_REDUCTION",
    "MISMATCH",
    "DIAL_TOLERANCES",
    "FULL_CAPSTONE",
    "MODELS",
    "PARITY",
    "PARITY_IMAGES",
    "QUICK_CAPSTONE",
    "REDUCTION_DEPTHS",
    "ROW_IDS",
    "TEST_IMAGES",
    "WORK_UNITS",
    "AdaptiveWork",
    "CapstoneConfig",
    "CapstoneRun",
    "CapstoneTable",
    "DEQCore",
    "DepthClassifier",
    "InjectedBlock",
    "ODECore",
    "PeakOrder",
    "PeerMemoryTable",
    "PerInputWork",
    "TimeRatios",
    "Timings",
    "ToleranceTable",
    "UnrolledCore",
    "adaptive_findings",
    "annulus_row",
    "build_model",
    "capstone_config",
    "capstone_study",
    "cost_findings",
    "cost_ratios",
    "dial_findings",
    "format_summary",
    "forward_work",
    "matched_resnet_config",
    "measure_accuracy_parity",
    "measure_adaptive_compute",
    "measure_deq_cost",
    "measure_deq_memory",
    "measure_step_mismatch",
    "measure_tolerance_dial",
    "measure_training_memory",
    "memory_findings",
    "memory_vs_depth",
    "mismatch_findings",
    "ode_tolerance_sweep",
    "parity_findings",
    "per_input_work",
    "reduction_findings",
    "reduction_peers",
    "rows",
    "single_block_hidden",
    "step_mismatch",
    "step_mismatch_study",
    "summary_table",
    "timing_study",
    "train_capstone_model",
]
