"""Lesson 10's thresholds and study sizes: declared here, before anything is measured."""

from __future__ import annotations

from dataclasses import dataclass

from nodecourse.claims import Threshold

__all__ = [
    "ACCURACY_DROP",
    "EXACT_THRESHOLD",
    "EXPLORE_REFERENCE_TOL",
    "EXPLORER_ROUTES",
    "EXPLORER_WEIGHTS",
    "FULL_EXACT",
    "FULL_SEMINORM",
    "FULL_TRAIN",
    "KINETIC_SCALE",
    "KINETIC_THRESHOLD",
    "MEMORY_THRESHOLD",
    "NFE_GROWTH_THRESHOLD",
    "PUBLISHED_SPEEDUP",
    "QUICK_EXACT",
    "QUICK_SEMINORM",
    "QUICK_TRAIN",
    "RNODE_WEIGHTS",
    "SEMINORM_THRESHOLD",
    "TRAINED_STEPS",
    "ExactConfig",
    "MoonsTrainConfig",
    "SeminormTask",
    "SeminormTaskConfig",
]

NFE_GROWTH_THRESHOLD = Threshold(
    "forward NFE per training step, mean over the last tenth of training over the mean over the first tenth, "
    ">= 1.2 on the whole 95 % interval over seeds (of the log ratios: a geometric mean; two moons, dopri5, "
    "rtol = atol = 1e-5)",
    kind="course",
    why="Chen et al. 2018 (Fig. 3d) and Kelly et al. 2020 report that NFE climbs as training goes on, without a "
    "number; 1.2 is one more dopri5 step (6 evaluations) on the 20 of an untrained field here, more than "
    "the solver's own granularity",
    value=1.2,
)

RNODE_WEIGHTS = (0.01, 0.01)  # kinetic, Jacobian: the weights of Finlay et al. 2020 (RNODE)
PUBLISHED_SPEEDUP = 2.8  # Finlay et al. 2020: RNODE trains about 2.8x faster than FFJORD (wall-clock, MNIST)
ACCURACY_DROP = 0.02
KINETIC_SCALE = "FFJORD on MNIST, GPU wall clock"
"""Where RNODE's published 2.8x was measured: not run here, the two-moons analogue is judged instead."""
KINETIC_THRESHOLD = Threshold(
    "the published 2.8x faster training (FFJORD on MNIST, GPU wall clock) is not measurable here. The analogue, "
    "two moons with kinetic and Jacobian weights 0.01 (RNODE's), three parts: forward NFE at the end of "
    "training (last tenth) unregularised over regularised >= 1 on the 95 % seed interval (of the log ratios); "
    "test accuracy drop <= 2 points (95 % seed interval); and faster training: wall-clock speed-up "
    "(unregularised time over regularised) > 1 by the median's order-statistic interval over seeds (timing "
    "ratios are heavy-tailed; strictly faster: an interval that reaches 1 is undecided). Verdict: the published "
    "part and the three analogue parts combined (the published part is never decided)",
    kind="course",
    why="Finlay et al. report fewer solver steps 'without loss in performance' and a 2.8x wall-clock speed-up on "
    "FFJORD/MNIST (days of GPU training we cannot run); a speed-up's size depends on the model, the data and "
    "the hardware, so, as for the NFE, the analogue asks only its direction; 2 points is the course's margin "
    "for 'without loss in performance' (2 of 96 test points in quick mode, 10 of 512 in full mode), chosen, "
    "not measured: the spread between seeds is smaller (about 0.5 points in full mode)",
    value=1.0,
)

SEMINORM_THRESHOLD = Threshold(
    "median over tasks of the backward NFE reduction 1 - NFE(seminorm) / NFE(full norm) >= 40 % on the whole "
    "order-statistic 95 % interval of the median (judge_median; each task's value is its mean over seeds). "
    "Tasks: random MLP fields of three widths at batch 512 (tol 1e-5), the middle width at tol 1e-7 and at "
    "batch 16, and the trained two-moons models with the mean loss and with the loss scaled by the batch "
    "size. Two readings, both deciding: our adjoint (full norm: RMS over [z, a, dL/dtheta]) and torchdiffeq's "
    "(its default mixed norm); both hold: holds; they disagree: holds in part",
    kind="published",
    why="",
    value=0.40,
)

EXACT_THRESHOLD = Threshold(
    "relative error of gradient='reversible' against backprop through the same reversible Heun steps "
    "<= 1e-10 in float64 on the whole 95 % interval over seeds",
    kind="course",
    why="Kidger et al. 2021 call the gradient exact 'up to floating point'; 1e-10 is about 5e5 float64 epsilons, "
    "room for rounding summed over a few hundred steps, while a solver-accuracy error (the adjoint's) is "
    "1e-6 or more at the tolerances used in training",
    value=1e-10,
)

MEMORY_THRESHOLD = Threshold(
    "backprop's peak grows >= 3x from the fewest to the most steps of the sweep (8x more steps); the reversible "
    "route's peak stays within 20 % of its smallest; both parts",
    kind="course",
    why="Kidger et al. 2021 and Zhuang et al. 2021 (MALI) state memory constant in the number of steps with no "
    "figure; the same reading as lesson 4's adjoint-memory row, whose 3x and 20 % are argued there",
    value=3.0,
)
FLAT_FACTOR = 1.2  # the "within 20 %" of MEMORY_THRESHOLD


@dataclass(frozen=True)
class MoonsTrainConfig:
    """Sizes of lesson 10's two-moons training study (frozen: a key of the study cache)."""

    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 100  # full-batch Adam steps
    n_points: int = 128  # training points (as many test points)
    hidden: int = 32
    tol: float = 1e-5  # dopri5 rtol = atol
    lr: float = 1e-2
    noise: float = 0.1
    settings: tuple[tuple[str, float, float], ...] = (
        ("none", 0.0, 0.0),
        ("kinetic", RNODE_WEIGHTS[0], 0.0),
        ("kinetic+Jacobian", *RNODE_WEIGHTS),
    )


QUICK_TRAIN = MoonsTrainConfig(
    seeds=(0, 1, 2, 3, 4), steps=120, n_points=96, settings=(("none", 0.0, 0.0), ("kinetic+Jacobian", *RNODE_WEIGHTS))
)
"""Quick mode: 5 seeds, 120 steps, 96 points, unregularised and kinetic+Jacobian."""
FULL_TRAIN = MoonsTrainConfig(seeds=tuple(range(8)), steps=400, n_points=512)
"""Full mode: 8 seeds, 400 steps, 512 points, and the kinetic term alone as a third setting."""


@dataclass(frozen=True)
class SeminormTask:
    """One task of the seminorm study: a random MLP field (``kind="mlp"``: ``dim`` channels, one tanh layer of
    ``width`` units, ``batch`` random starts, loss ``sum z(1)^2``) or the trained two-moons models
    (``kind="moons"``: loss = mean cross-entropy times ``loss_scale``), solved by dopri5 at ``tol``."""

    name: str
    kind: str  # "mlp" or "moons"
    width: int = 64
    batch: int = 512
    tol: float = 1e-5
    dim: int = 4
    loss_scale: float = 1.0  # moons: 1 (the mean) or the batch size (the sum)


@dataclass(frozen=True)
class SeminormTaskConfig:
    """The tasks of the seminorm study and the seeds each random-field task draws."""

    tasks: tuple[SeminormTask, ...]
    seeds: tuple[int, ...]
    train: MoonsTrainConfig  # the moons models (their seeds are the moons tasks' seeds)


def seminorm_tasks(train: MoonsTrainConfig) -> tuple[SeminormTask, ...]:
    """The seven tasks of :data:`SEMINORM_THRESHOLD`, the moons ones on ``train``'s models."""
    return (
        SeminormTask("MLP width 16, batch 512", "mlp", width=16),
        SeminormTask("MLP width 64, batch 512", "mlp", width=64),
        SeminormTask("MLP width 256, batch 512", "mlp", width=256),
        SeminormTask("MLP width 64, batch 512, tol 1e-7", "mlp", width=64, tol=1e-7),
        SeminormTask("MLP width 64, batch 16", "mlp", width=64, batch=16),
        SeminormTask("two moons, mean loss", "moons", tol=train.tol),
        SeminormTask("two moons, loss x batch", "moons", tol=train.tol, loss_scale=float(train.n_points)),
    )


QUICK_SEMINORM = SeminormTaskConfig(seminorm_tasks(QUICK_TRAIN), seeds=(0, 1), train=QUICK_TRAIN)
FULL_SEMINORM = SeminormTaskConfig(seminorm_tasks(FULL_TRAIN), seeds=(0, 1, 2, 3, 4), train=FULL_TRAIN)


@dataclass(frozen=True)
class ExactConfig:
    """Sizes of the exactness study: random MLP fields (float64), ``steps`` reversible Heun steps on [0, 1]."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    dim: int = 3
    batch: int = 16
    steps: int = 50
    adjoint_tol: float = 1e-6


QUICK_EXACT = ExactConfig()
FULL_EXACT = ExactConfig(seeds=tuple(range(10)), steps=400)

TRAINED_STEPS = (10, 20, 40, 80, 160)  # reversible Heun steps on the trained moons fields

EXPLORER_ROUTES = ("backprop", "adjoint", "adjoint + seminorm", "checkpoint", "reversible")
EXPLORER_WEIGHTS = (0.0, 0.01, 0.1)  # kinetic and Jacobian weight, each
EXPLORE_REFERENCE_TOL = 1e-10  # the reference gradient: backprop through dopri5 at this tolerance, float64
