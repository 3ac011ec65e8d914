"""Lesson 8's declared settings: the Hutchinson study, the two-moons flow, and the ledger row's slacks."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BIAS_Z_MAX",
    "FORMULA_SLACK",
    "FULL_FLOW",
    "FULL_TRACE",
    "FlowConfig",
    "QUICK_FLOW",
    "QUICK_TRACE",
    "SLOPE_SLACK",
    "TraceStudyConfig",
]


@dataclass(frozen=True)
class TraceStudyConfig:
    """Hutchinson's estimator at one point of a random tanh field on R^dim: ``repeats`` estimates per M."""

    dim: int = 16
    hidden: int = 64
    repeats: int = 4000
    probes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    noise: str = "rademacher"
    seed: int = 0


QUICK_TRACE = TraceStudyConfig(repeats=2000)
FULL_TRACE = TraceStudyConfig(repeats=20_000)

#: Declared before measuring: unbiased = every |bias| under BIAS_Z_MAX standard errors; variance ∝ 1/M =
#: fitted slope within SLOPE_SLACK of -1; the formula = single-probe variance within FORMULA_SLACK (relative).
BIAS_Z_MAX, SLOPE_SLACK, FORMULA_SLACK = 4.0, 0.15, 0.2


@dataclass(frozen=True)
class FlowConfig:
    """Training settings of the two-moons CNF (hashable, so runs can be cached)."""

    n_train: int = 4000
    n_test: int = 1000
    iterations: int = 1500
    batch: int = 256
    lr: float = 1e-2
    hidden: tuple[int, ...] = (64, 64)
    trace: str = "hutchinson"
    n_probes: int = 1
    method: str = "dopri5"
    tol: float = 1e-3
    gradient: str = "adjoint"
    seed: int = 0


QUICK_FLOW = FlowConfig(iterations=120, batch=128)
"""Quick mode: 120 Adam steps on batches of 128 (a rough fit: the moons show, not sharply)."""
FULL_FLOW = FlowConfig()
