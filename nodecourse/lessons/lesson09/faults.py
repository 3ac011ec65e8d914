"""Two planted faults with known answers (exercise 9 and the tests use them).

- :func:`rotating_classifier`, whose accuracy collapses when the solve is loosened;
- :func:`long_horizon_regressor`, a long-horizon linear field with a fast decaying mode rotated into
  every coordinate, whose adjoint gradient is wrong (lesson 4's controlled problem as a model).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from nodecourse.models import LinearField, ODEBlock, Readout, Rotation

# the linear parts the faults are built from, re-exported for the lesson (exercise 9 builds its own)
__all__ = ["LinearField", "Readout", "Rotation", "long_horizon_regressor", "rotating_classifier"]


def long_horizon_regressor(gradient: str = "adjoint", *, T: float = 3.0, tol: float = 1e-6, seed: int = 0):
    """A planted fault: ``dz/dt = A z`` on ``[0, T]`` (rates -10 and -0.1, rotated 0.7 rad: the fast decaying
    mode sits in every coordinate), dopri5 at ``rtol = atol = tol``, then a linear readout; float64.

    Returns ``(model, (x_train, y_train), (x_test, y_test))``: targets are the model's own outputs
    plus a little noise, so the model is trained; only its gradient route differs. The adjoint must
    recover ``z(t)`` by solving backwards, where the fast mode grows by ``e^(10 T)``: its gradient is
    wrong by orders of magnitude, while ``"checkpoint"`` (the forward steps replayed) is exact.
    """
    g = torch.Generator().manual_seed(seed)
    model = Readout(
        ODEBlock(LinearField(), t1=T, method="dopri5", rtol=tol, atol=tol, gradient=gradient), nn.Linear(2, 1).double()
    )
    x = torch.randn(96, 2, generator=g, dtype=torch.float64)
    with torch.no_grad():
        y = model(x) + 0.01 * torch.randn(96, 1, generator=g, dtype=torch.float64)
    return model, (x[:64], y[:64]), (x[64:], y[64:])


def rotating_classifier(*, omega: float = 60.0, tol: float = 1e-3, n: int = 400, seed: int = 0):
    """A planted fault: points on the plane turn by ``omega`` radians (almost ten turns) under dopri5 at
    ``rtol = atol = tol``; the class is the side of a line the point ends on. The labels are the
    exact answer, so the model is right when its solve is accurate and wrong when its phase
    drifts: its accuracy collapses once the tolerance is loosened.

    Returns ``(model, (x_train, y_train), (x_test, y_test))`` (float32, two logits per row).
    """
    g = torch.Generator().manual_seed(seed)
    readout = nn.Linear(2, 2)
    with torch.no_grad():
        readout.weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        readout.bias.zero_()
    model = Readout(ODEBlock(Rotation(omega), t1=1.0, method="dopri5", rtol=tol, atol=tol), readout)
    radius = 0.5 + torch.rand(n, generator=g)
    angle = 2 * math.pi * torch.rand(n, generator=g)
    x = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    y = (torch.cos(angle + omega) < 0).long()  # the class: which side of the y-axis the point ends on
    half = n // 2
    return model, (x[:half], y[:half]), (x[half:], y[half:])
