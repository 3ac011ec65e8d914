"""Small fields with known answers, and the readout frame the planted models use.

- :class:`LinearField`: ``f(t, z) = A z`` with ``A = Q diag(rates) Q^T`` (a rotated diagonal; trainable);
- :class:`Rotation`: ``f(t, z) = ω J z``, the state turning at ``ω`` radians per unit time;
- :class:`AutonomousField`: any module ``y -> g(y)`` as a field ``f(t, y) = g(y)``;
- :class:`Readout`: ``x -> readout(block(x))``, a solve followed by a map.

Lesson 8 checks the change of variables on a linear field; lesson 9 and exercise 9 build their planted
faults (a wrong adjoint gradient, a tolerance-sensitive classifier) from these.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["AutonomousField", "LinearField", "Readout", "Rotation"]


class LinearField(nn.Module):
    """``f(t, z) = A z`` with ``A = Q diag(rates) Q^T`` (``Q`` the rotation by ``angle``), ``A`` trainable.

    ``z``: ``(..., 2)``; returns ``(..., 2)``.
    """

    def __init__(self, rates=(-10.0, -0.1), angle: float = 0.7, dtype=torch.float64):
        super().__init__()
        c, s = math.cos(angle), math.sin(angle)
        q = torch.tensor([[c, -s], [s, c]], dtype=dtype)
        self.A = nn.Parameter(q @ torch.diag(torch.tensor(rates, dtype=dtype)) @ q.T)

    def forward(self, t, z):
        return z @ self.A.T


class Rotation(nn.Module):
    """``f(t, z) = ω J z`` (``J`` the quarter turn): the state turns at ``ω`` radians per unit time.

    ``z``: ``(..., 2)``; returns ``(..., 2)``.
    """

    def __init__(self, omega: float):
        super().__init__()
        self.omega = nn.Parameter(torch.tensor(float(omega)))

    def forward(self, t, z):
        return self.omega * torch.stack([-z[..., 1], z[..., 0]], dim=-1)


class AutonomousField(nn.Module):
    """A module ``g`` (``(..., d) -> (..., d)``) as a time-independent field ``f(t, y) = g(y)``."""

    def __init__(self, module: nn.Module):
        super().__init__()
        self.module = module

    def forward(self, t, y):
        return self.module(y)


class Readout(nn.Module):
    """``x -> readout(block(x))``: a solve followed by a map (``block``'s output shape is ``readout``'s input)."""

    def __init__(self, block: nn.Module, readout: nn.Module):
        super().__init__()
        self.block = block
        self.readout = readout

    def forward(self, x):
        return self.readout(self.block(x))
