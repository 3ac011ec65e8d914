"""Vector fields, ODE blocks and their discrete counterparts.

The pieces every lesson trains:

- :class:`MLPField`: a small MLP vector field ``f(t, z)`` of shape ``(..., dim) -> (..., dim)``;
- :class:`ODEBlock`: maps ``z(0)`` to ``z(t1)`` by solving ``dz/dt = f(t, z)`` with
  :func:`nodecourse.odeint`, and keeps the solver's work (NFE, steps) visible;
- :class:`ResidualStack`: the discrete competitor, ``z <- z + f(z)`` repeated.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from nodecourse.solvers import odeint

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "softplus": nn.Softplus, "elu": nn.ELU}


def count_parameters(module: nn.Module) -> int:
    """Number of trainable parameters of ``module``."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _activation(name: str) -> nn.Module:
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation={name!r} is unknown; use one of {sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]()


def mlp(sizes: Sequence[int], activation: str = "tanh") -> nn.Sequential:
    """An MLP with ``activation`` between layers and a linear last layer."""
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(n_in, n_out))
        if i < len(sizes) - 2:
            layers.append(_activation(activation))
    return nn.Sequential(*layers)


class MLPField(nn.Module):
    """A vector field ``f(t, z)``: an MLP ``dim -> hidden... -> dim``.

    With ``time_dependent=True`` the time ``t`` is concatenated to the input
    (so the field is non-autonomous). Input ``z`` of shape ``(..., dim)``;
    output of the same shape.
    """

    def __init__(
        self,
        dim: int,
        hidden: Sequence[int] = (32, 32),
        activation: str = "tanh",
        time_dependent: bool = False,
    ):
        super().__init__()
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim={dim!r} must be a positive int (the state size)")
        self.dim = dim
        self.time_dependent = bool(time_dependent)
        self.net = mlp([dim + int(self.time_dependent), *hidden, dim], activation)

    def forward(self, t: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        if self.time_dependent:
            tt = torch.as_tensor(t, dtype=z.dtype, device=z.device).expand(*z.shape[:-1], 1)
            z = torch.cat([z, tt], dim=-1)
        return self.net(z)


class ODEBlock(nn.Module):
    """``z(0) -> z(t1)`` through ``dz/dt = field(t, z)``, solved by :func:`nodecourse.odeint`.

    Parameters are the solver's and are echoed on the block. After each forward,
    ``last_stats`` holds the solver's stats dict (``nfe``, ``n_steps``,
    ``n_accepted``, ``n_rejected``) and ``nfe_forward`` accumulates forward NFE
    until :meth:`reset_counters`. Input ``(batch, dim)``; output the same shape.
    """

    def __init__(
        self,
        field: nn.Module,
        t1: float = 1.0,
        method: str = "dopri5",
        rtol: float = 1e-3,
        atol: float = 1e-3,
        step_size: float | None = None,
        gradient: str = "backprop",
        max_steps: int = 10_000,
    ):
        super().__init__()
        if not t1 > 0:
            raise ValueError(f"t1={t1!r} must be positive (the integration time)")
        self.field = field
        self.t1 = float(t1)
        self.method = method
        self.rtol = rtol
        self.atol = atol
        self.step_size = step_size
        self.gradient = gradient
        self.max_steps = max_steps
        self.last_stats: dict = {}
        self.nfe_forward = 0
        self.n_forward = 0

    def reset_counters(self) -> None:
        self.nfe_forward = 0
        self.n_forward = 0

    def solve(self, z0: torch.Tensor, t: torch.Tensor | None = None, **overrides):
        """The full :class:`~nodecourse.Solution` (trajectory at ``t``; default ``[0, t1]``).

        ``overrides`` replace the block's solver settings for this call only
        (e.g. ``method="euler", step_size=0.25`` to evaluate with other steps).
        """
        if t is None:
            t = torch.tensor([0.0, self.t1], dtype=z0.dtype, device=z0.device)
        settings = dict(
            method=self.method, rtol=self.rtol, atol=self.atol, step_size=self.step_size,
            gradient=self.gradient, max_steps=self.max_steps,
        )
        unknown = set(overrides) - set(settings)
        if unknown:
            raise TypeError(f"unknown solver override(s) {sorted(unknown)}; valid: {sorted(settings)}")
        settings.update(overrides)
        sol = odeint(self.field, z0, t, **settings)
        self.last_stats = dict(sol.stats)
        self.nfe_forward += int(sol.stats["nfe"])
        self.n_forward += 1
        return sol

    def forward(self, z0: torch.Tensor) -> torch.Tensor:
        return self.solve(z0).ys[-1]


class ResidualStack(nn.Module):
    """``n_blocks`` residual updates ``z <- z + h * f_k(z)``: the discrete counterpart of :class:`ODEBlock`.

    With ``shared=True`` one field is reused at every block (an unrolled,
    weight-tied network; with ``h = t1 / n_blocks`` it is exactly Euler's
    method on that field). Input ``(batch, dim)``; output the same shape.
    """

    def __init__(
        self,
        dim: int,
        n_blocks: int = 4,
        hidden: Sequence[int] = (32, 32),
        activation: str = "tanh",
        shared: bool = False,
        step: float = 1.0,
    ):
        super().__init__()
        if not isinstance(n_blocks, int) or n_blocks < 1:
            raise ValueError(f"n_blocks={n_blocks!r} must be a positive int")
        n_fields = 1 if shared else n_blocks
        self.fields = nn.ModuleList(
            MLPField(dim, hidden, activation) for _ in range(n_fields)
        )
        self.n_blocks = n_blocks
        self.shared = shared
        self.step = float(step)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        for k in range(self.n_blocks):
            field = self.fields[0 if self.shared else k]
            z = z + self.step * field(None, z)
        return z
