"""The two-moons neural ODE classifier of lesson 10, with optional kinetic and Jacobian regularisers."""

from __future__ import annotations

import torch
from torch import nn

from nodecourse.models._blocks import MLPField, ODEBlock
from nodecourse.models._regularised import regularised_block

__all__ = ["MoonsODE"]


class MoonsODE(nn.Module):
    """``x (B, 2) -> [x, 0] (B, 3) -> ODE block on R^3 over [0, 1] -> linear -> logits (B, 2)``.

    The field is an MLP with one tanh layer of ``hidden`` units, solved by dopri5 at
    ``rtol = atol = tol``. ``kinetic`` and ``jacobian`` are the weights of Finlay et al.'s
    regularisers (integrated as extra state of the same solve; 0 leaves a term out), and
    :meth:`penalty` is their weighted batch mean, to add to the loss.
    """

    def __init__(
        self,
        hidden: int,
        tol: float,
        kinetic: float = 0.0,
        jacobian: float = 0.0,
        seed: int = 0,
        gradient: str = "backprop",
    ):
        super().__init__()
        self.field = MLPField(3, hidden=(hidden,), activation="tanh")
        self.block = ODEBlock(self.field, rtol=tol, atol=tol, gradient=gradient)
        self.reg = regularised_block(
            self.block, kinetic=kinetic > 0, jacobian=jacobian > 0, generator=torch.Generator().manual_seed(seed)
        )
        self.head = nn.Linear(3, 2)
        self.weights = (kinetic, jacobian)

    def lift(self, x: torch.Tensor) -> torch.Tensor:
        """``x (B, 2) -> [x, 0] (B, 3)``: one zero dimension, as in lesson 3's augmented flows."""
        return torch.cat([x, x.new_zeros(x.shape[0], 1)], dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, 2)`` for points ``x (B, 2)``."""
        return self.head(self.reg(self.lift(x)))

    def penalty(self) -> torch.Tensor:
        """The regularisers of the last forward pass, weighted and averaged over the batch (a 0-d tensor)."""
        kinetic, jacobian = self.weights
        return kinetic * self.reg.kinetic.mean() + jacobian * self.reg.jacobian.mean()
