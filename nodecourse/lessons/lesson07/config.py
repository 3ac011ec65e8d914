"""Lesson 7's sizes and solver settings, fixed before anything runs (frozen: studies are cached per configuration)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DIAL_TOLERANCES",
    "FULL_CAPSTONE",
    "MODELS",
    "QUICK_CAPSTONE",
    "REDUCTION_DEPTHS",
    "WORK_UNITS",
    "CapstoneConfig",
    "capstone_config",
]

MODELS = ("ResNet", "Neural ODE", "DEQ", "Unrolled")


@dataclass(frozen=True)
class CapstoneConfig:
    """Sizes and solver settings of the comparison (hashable, so runs can be cached)."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    epochs: int = 30
    batch_size: int = 128
    lr: float = 3e-3
    width: int = 32
    blocks: int = 4
    hidden: int = 64
    ode_method: str = "dopri5"
    ode_tol: float = 1e-3
    ode_gradient: str = "adjoint"
    deq_method: str = "anderson"
    deq_tol: float = 1e-4
    deq_max_iter: int = 40
    unrolled_steps: int = 4
    memory_batch: int = 256
    mismatch_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    per_input_samples: int = 100
    n_samples: int | None = None


QUICK_CAPSTONE = CapstoneConfig(seeds=(0, 1), epochs=5)

"""Quick mode: two seeds, five epochs (accuracies are lower and noisier than in full mode)."""


FULL_CAPSTONE = CapstoneConfig()

"""Full mode: five seeds, thirty epochs."""


def capstone_config(quick: bool) -> CapstoneConfig:
    """:data:`QUICK_CAPSTONE` or :data:`FULL_CAPSTONE`."""
    return QUICK_CAPSTONE if quick else FULL_CAPSTONE


WORK_UNITS = {"ResNet": "blocks", "Neural ODE": "NFE", "DEQ": "iterations", "Unrolled": "steps"}


REDUCTION_DEPTHS = (4, 8, 16)  # the capstone's depth, twice it, and the 16 layers of Bai et al.'s Transformer-XL


DIAL_TOLERANCES = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)


TRAINED_FLOOR = 0.85  # a model below 85 % test accuracy is under-trained (quick mode), not 'different'


SAME_POINT = 100  # two solves at tolerance tol reach "the same point" when they differ by <= 100 tol (relative)
