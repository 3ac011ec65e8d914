"""What every step of an audit reads: the model, its cores, the data, the task and the sizes."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from nodecourse.audit import _inputs as I
from nodecourse.audit._discovery import Core
from nodecourse.audit._evaluate import Run, run
from nodecourse.audit._quality import Metric


@dataclass(frozen=True)
class Sizes:
    """How much each step measures: quick mode for a look in minutes, full mode for the report."""

    per_input: int  # test inputs solved one at a time (step 2)
    noise_levels: tuple[float, ...]  # input noise, in units of each feature's spread (step 4)
    stiffness_inputs: int  # test inputs whose trajectories are probed for stiffness (step 4)
    stiffness_states: int  # states (rows of the field's calls) whose Jacobian is computed (step 4)
    grad_batch: int  # rows of the batch the gradient routes are compared on (step 5)
    directions: int  # random directions of finite differences (step 5; at least 8 for an interval)
    n_boot: int  # bootstrap resamples of every interval
    seeds: int  # baselines trained per audit (step 1): the interval includes training variance
    shift_inputs: int  # inputs of the test and the shifted set solved one at a time (step 4)
    sweep: tuple[float, ...]  # test-time settings x deployed (step 3; > 1 looser)
    horizon_factor: float = 2.0  # the longer horizon (step 4)
    chunk: int = 256  # rows per forward pass when a whole set is evaluated


QUICK = Sizes(
    per_input=60,
    noise_levels=(0.1, 0.3),
    stiffness_inputs=8,
    stiffness_states=32,
    grad_batch=4,
    directions=8,
    n_boot=200,
    seeds=2,
    shift_inputs=30,
    sweep=(100.0, 10.0, 1.0, 0.1),
)
FULL = Sizes(
    per_input=1000,
    noise_levels=(0.05, 0.1, 0.3),
    stiffness_inputs=32,
    stiffness_states=128,
    grad_batch=16,
    directions=16,
    n_boot=1000,
    seeds=3,
    shift_inputs=200,
    sweep=(100.0, 10.0, 1.0, 0.1, 0.01),
)


@dataclass
class AuditContext:
    model: nn.Module
    cores: list[Core]
    task: str
    metric: Metric
    train: tuple
    test: tuple
    shift: tuple | None
    baseline: object  # "auto" or an nn.Module
    sizes: Sizes
    epochs: int
    lr: float
    batch_size: int
    seed: int
    progress: bool
    train_cores: list[Core] | None = None  # the training pass's solves, where they differ from the eval pass's
    training_route: dict = field(default_factory=dict)  # the comparison (nodecourse.audit._observed.training_route)
    _runs: dict = field(default_factory=dict)

    @property
    def x_test(self):
        return self.test[0]

    @property
    def y_test(self):
        return self.test[1]

    def test_run(self) -> Run:
        """The model on the whole test set at its deployed settings (computed once, shared by the steps)."""
        if "test" not in self._runs:
            self._runs["test"] = run(self.model, self.cores, self.x_test, chunk=self.sizes.chunk)
        return self._runs["test"]

    def generator(self, offset: int = 0) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed * 1_000_003 + offset)

    def sample_rows(self, n_wanted: int, offset: int = 0) -> list[int]:
        """A seeded sample of ``n_wanted`` test rows (all of them when fewer), sorted."""
        n = I.n_rows(self.x_test)
        if n_wanted >= n:
            return list(range(n))
        return sorted(torch.randperm(n, generator=self.generator(offset))[:n_wanted].tolist())
