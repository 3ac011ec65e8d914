"""The middles of lesson 7's four ways to spend depth, in one frame (:class:`DepthClassifier`): the input-injected
block shared by the DEQ and the unrolled network, the neural ODE core, the DEQ core and the unrolled core."""

from __future__ import annotations

import torch
from torch import nn

from nodecourse.deq import DEQ
from nodecourse.models._blocks import MLPField, ODEBlock
from nodecourse.solvers import SolveConfig

__all__ = ["DEQCore", "DepthClassifier", "InjectedBlock", "ODECore", "UnrolledCore"]


class InjectedBlock(nn.Module):
    """``g(z) + x``: one tanh MLP ``width -> hidden -> width`` on the state plus the injected input.

    Its last layer starts at half the default scale, so the map ``z -> g(z) + x`` starts contractive
    (a DEQ needs a fixed point to find). ``(batch, width), (batch, width) -> (batch, width)``.
    """

    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.g = MLPField(width, (hidden,), activation="tanh")
        with torch.no_grad():
            self.g.net[-1].weight.mul_(0.5)

    def forward(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return self.g(None, z) + x


class ODECore(ODEBlock):
    """``z(0) -> z(1)`` under ``dz/dt = g(z)``: an :class:`ODEBlock` (``last_stats`` after each solve).

    The gradient mode applies when a gradient is wanted; evaluation (no grad) solves
    plainly, and with ``per_sample = True`` every input gets its own steps and its own NFE.
    """

    def __init__(self, width: int, hidden: int, *, method: str, tol: float, gradient: str):
        super().__init__(
            MLPField(width, (hidden,), activation="tanh"),
            solver=SolveConfig(method=method, rtol=tol, atol=tol, gradient=gradient),
        )
        self.per_sample = False

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            return self.solve(z, gradient="backprop", per_sample=self.per_sample).ys[-1]
        return self.solve(z).ys[-1]


class DEQCore(nn.Module):
    """``z* = g(z*) + x`` (:class:`InjectedBlock`) solved by :class:`nodecourse.deq.DEQ`, implicit backward."""

    def __init__(self, width: int, hidden: int, *, method: str, tol: float, max_iter: int):
        super().__init__()
        self.block = InjectedBlock(width, hidden)
        # warn=False: the capstone trains at a fixed iteration budget, as MDEQ's truncated solves do, so
        # some training steps end at max_iter by design; the lesson measures how many iterations the
        # solves take and which inputs converge (section "DEQ iterations at inference"), and the
        # MDEQ-truncation row of the ledger is about exactly this regime.
        self.deq = DEQ(self.block, method=method, tol=tol, max_iter=max_iter, state=width, warn=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deq(x)


class UnrolledCore(nn.Module):
    """The same block as the DEQ iterated ``steps`` times from ``z = 0`` (weight-tied, backprop through all)."""

    def __init__(self, width: int, hidden: int, steps: int):
        super().__init__()
        self.block = InjectedBlock(width, hidden)
        self.steps = steps

    def forward(self, x: torch.Tensor, steps: int | None = None) -> torch.Tensor:
        z = torch.zeros_like(x)
        for _ in range(self.steps if steps is None else steps):
            z = self.block(z, x)
        return z


class DepthClassifier(nn.Module):
    """``Linear(64, width) -> core -> Linear(width, 10)``: logits ``(batch, 10)`` from pixels ``(batch, 64)``."""

    def __init__(self, core: nn.Module, width: int, n_in: int = 64, n_classes: int = 10):
        super().__init__()
        self.embed = nn.Linear(n_in, width)
        self.core = core
        self.readout = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.core(self.embed(x)))
