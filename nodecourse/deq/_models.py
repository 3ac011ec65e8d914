"""Small DEQ models: the equilibrium block of Bai et al. (2021), f(z, x) = W2^T ReLU(W1 z + U x + b),
and a regressor / classifier that reads the fixed point out with one linear layer."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from nodecourse.deq._layer import DEQ, DEQInputError
from nodecourse.deq._settings import DEQ_MODEL_ARGS
from nodecourse.validation import check_args

__all__ = ["DEQModel", "EquilibriumBlock"]


class EquilibriumBlock(nn.Module):
    """f(z, x) = W2^T ReLU(W1 z + U x + b) for z ``(B, state_dim)``, x ``(B, input_dim)``; hidden ``width``.

    W1 and W2 (both ``(width, state_dim)``) start small (scale ``init_scale``), so the block
    starts as a contraction and the first forward solves are cheap.
    """

    def __init__(self, state_dim: int, input_dim: int, width: int = 50, init_scale: float = 0.5):
        super().__init__()
        c = check_args(
            {"state_dim": state_dim, "input_dim": input_dim, "width": width, "init_scale": init_scale}, DEQ_MODEL_ARGS
        )
        state_dim, input_dim, width, init_scale = c["state_dim"], c["input_dim"], c["width"], c["init_scale"]
        self.W1 = nn.Linear(state_dim, width, bias=False)
        self.U = nn.Linear(input_dim, width)
        self.W2 = nn.Parameter(torch.empty(width, state_dim))
        nn.init.normal_(self.W2, std=1.0 / width**0.5)
        with torch.no_grad():
            self.W1.weight.mul_(init_scale)
            self.W2.mul_(init_scale)

    def forward(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        # two int comparisons per call: a wrong width gets its expected shape instead of a matmul error
        if z.shape[-1] != self.W1.in_features or x.shape[-1] != self.U.in_features:
            raise DEQInputError(
                f"EquilibriumBlock(state_dim={self.W1.in_features}, input_dim={self.U.in_features}) got z of shape "
                f"{tuple(z.shape)} and x of shape {tuple(x.shape)}; it takes z (B, {self.W1.in_features}) and x "
                f"(B, {self.U.in_features})"
            )
        return torch.relu(self.W1(z) + self.U(x)) @ self.W2


class DEQModel(nn.Module):
    """x ``(B, input_dim)`` -> readout(z*) ``(B, output_dim)``, z* the fixed point of an :class:`EquilibriumBlock`.

    ``deq_options`` go to :class:`DEQ` (method, tol, max_iter, backward, ...). With
    ``backward="unrolled", method="picard", max_iter=k`` it is the same block truncated to k
    weight-tied steps.
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        *,
        state_dim: int = 16,
        width: int = 50,
        init_scale: float = 0.5,
        **deq_options: Any,
    ):
        super().__init__()
        check_args({"input_dim": input_dim, "output_dim": output_dim}, DEQ_MODEL_ARGS)  # the block checks the rest
        self.block = EquilibriumBlock(state_dim, input_dim, width, init_scale)
        self.deq = DEQ(self.block, state=state_dim, **deq_options)
        self.readout = nn.Linear(state_dim, output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.deq(x))
