"""Lesson 6's sizes, fixed before anything runs: the solver comparison's problems and the training study.

:class:`DEQTrainConfig` is frozen (hashable), so a study is cached per configuration and the lesson's
figures, its findings and its ledger rows read one run.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "FULL_TRAIN",
    "GROWTH_READINGS",
    "PHASES",
    "QUICK_TRAIN",
    "DEQTrainConfig",
    "probe_epochs",
    "reg_variant",
    "train_config",
    "truncated_variant",
    "variants",
]

SOLVER_RHOS = (0.9, 0.95, 0.99)
"""Spectral radii of the contractions on which Anderson and Picard are compared."""
SOLVER_KINDS = ("linear", "tanh")
"""Kinds of contraction (:func:`nodecourse.deq.contraction`)."""

HUTCHINSON_DIMS = (4, 8, 16)
"""State dimensions of the three blocks on which the Hutchinson estimate is checked."""


@dataclass(frozen=True)
class DEQTrainConfig:
    """Sizes of the DEQ training study (hashable, so runs can be cached)."""

    seeds: tuple[int, ...] = tuple(range(20))
    n_train: int = 512
    n_test: int = 512
    epochs: int = 200
    lr: float = 1e-2
    state_dim: int = 16
    width: int = 50
    method: str = "anderson"
    tol: float = 1e-3
    max_iter: int = 40
    jac_weights: tuple[float, ...] = (0.1, 1.0, 3.0)
    truncated_steps: int = 5
    probe_points: int = 64  # inputs on a grid over [-2, 2] where rho(df/dz) is logged

    def describe(self) -> str:
        """One sentence of sizes: seeds, epochs, data, model, solver, weights, where rho is probed."""
        weights = ", ".join(f"{w:g}" for w in self.jac_weights)
        return (
            f"{len(self.seeds)} seeds, {self.epochs} epochs (full-batch Adam steps), {self.n_train} training "
            f"points, state {self.state_dim}, width {self.width}, Anderson to tol {self.tol:g} with at most "
            f"{self.max_iter} iterations, Jacobian weights {weights}, rho on {self.probe_points} inputs after "
            f"epochs {probe_epochs(self)}"
        )


QUICK_TRAIN = DEQTrainConfig(seeds=(0, 1), n_train=128, n_test=256, epochs=80, jac_weights=(1.0,))
"""Quick mode: 128 points, full batch, 80 Adam steps, 2 seeds (too few for an interval), one weight."""
FULL_TRAIN = DEQTrainConfig()
"""Full mode: 512 points, full batch, 200 Adam steps, 20 seeds (what the rows' budget of a few minutes
allows), weights 0.1, 1 and 3."""


def train_config(quick: bool) -> DEQTrainConfig:
    """:data:`QUICK_TRAIN` or :data:`FULL_TRAIN`."""
    return QUICK_TRAIN if quick else FULL_TRAIN


def probe_epochs(config: DEQTrainConfig) -> tuple[int, ...]:
    """Epochs after which rho(df/dz) is logged: before training (0), after 2 %, a tenth, half, all of it."""
    n = config.epochs
    return tuple(sorted({0, max(1, n // 50), max(1, n // 10), n // 2, n}))


PLAIN = "DEQ"
"""The name of the plain (unregularised) DEQ variant."""


def reg_variant(weight: float) -> str:
    """The name of the variant trained with Jacobian weight ``weight``."""
    return f"DEQ + Jacobian reg. {weight:g}"


def truncated_variant(config: DEQTrainConfig) -> str:
    """The name of the variant truncated to ``config.truncated_steps`` unrolled steps."""
    return f"truncated, {config.truncated_steps} unrolled steps"


def variants(config: DEQTrainConfig) -> list[tuple[str, float, dict]]:
    """(name, jacobian weight, DEQModel options) of each variant in the study."""
    # warn=False: solves that hit the iteration cap during training are what the growth row counts
    # (DEQLog.cap_hits), not a mistake to warn about at every step
    base = dict(method=config.method, tol=config.tol, max_iter=config.max_iter, warn=False)
    out = [(PLAIN, 0.0, base)]
    out += [(reg_variant(w), w, base) for w in config.jac_weights]
    out.append(
        (
            truncated_variant(config),
            0.0,
            dict(method="picard", backward="unrolled", tol=1e-300, max_iter=config.truncated_steps),
        )
    )
    return out


# The readings of "start of training", in the order shown; the first is the paper's figure (it decides).
GROWTH_READINGS = {
    "first tenth": "vs the first tenth (the figure's start)",
    "first 2 %": "vs the first 2 %",
    "epoch 0": "vs epoch 0 (untrained)",
}
PHASES = ("first tenth", "middle", "last tenth")


def phase_slices(n: int) -> dict[str, slice]:
    """The epochs of each phase of a run of ``n`` epochs: first tenth, the middle, last tenth (each >= 1)."""
    k = max(1, n // 10)
    return {"first tenth": slice(0, k), "middle": slice(k, max(k, n - k)), "last tenth": slice(n - k, n)}
