"""Adapters that let the audit see a model it could not see as written.

- :class:`TorchdiffeqBlock` (an explicit option: an unmodified torchdiffeq model needs no adapter,
  the audit watches its calls): the module of a torchdiffeq model that calls ``torchdiffeq.odeint``,
  rewritten as an :class:`~nodecourse.models.ODEBlock` whose solve goes through
  ``nodecourse.odeint(..., backend="torchdiffeq")`` (the same torchdiffeq solver, its NFE counted
  and its settings visible) or, with ``backend="nodecourse"``, through the library's own solvers.
  The field (``func(t, z)``, torchdiffeq's convention) and its weights are kept as they are::

      # before:  out = torchdiffeq.odeint(self.odefunc, x, torch.tensor([0., 1.]), rtol=1e-3, atol=1e-3)[-1]
      model.block = TorchdiffeqBlock(model.block.odefunc, t1=1.0, method="dopri5", rtol=1e-3, atol=1e-3)

- :class:`SharedInputs`: a model called with inputs that are not all batch-first (a sequence
  model's shared time grid first, then per-row tensors) keeps the shared ones and takes only the
  per-row ones, so the audit can slice its rows.
"""

from __future__ import annotations

import torch
from torch import nn

from nodecourse.models import ODEBlock
from nodecourse.solvers import SolveConfig, odeint

__all__ = ["SharedInputs", "TorchdiffeqBlock"]

ODEINT_LIBRARIES = ("torchdiffeq", "nodecourse")
TORCHDIFFEQ_DEFAULTS = {"method": "dopri5", "rtol": 1e-7, "atol": 1e-9}


class TorchdiffeqBlock(ODEBlock):
    """``z(0) -> z(t1)`` through ``dz/dt = func(t, z)`` solved by ``nodecourse.odeint`` on ``backend``.

    ``backend="torchdiffeq"`` (default) runs torchdiffeq's own solver (``method`` one of its names
    that the library also has: euler, midpoint, rk4, bosh3, dopri5); gradients ``"backprop"`` (through
    torchdiffeq's operations) or ``"adjoint"`` (the library's adjoint). ``backend="nodecourse"`` uses
    the library's solvers, where ``"checkpoint"`` is available too. Every other setting is the
    :class:`~nodecourse.SolveConfig` of an :class:`~nodecourse.models.ODEBlock` (``solver=`` or keywords),
    with torchdiffeq's own defaults where not given (``rtol`` 1e-7, ``atol`` 1e-9, dopri5), so the
    adapted model solves as the original did.
    """

    def __init__(
        self,
        func: nn.Module,
        t1: float = 1.0,
        *,
        backend: str = "torchdiffeq",
        solver: SolveConfig | None = None,
        **options,
    ):
        if backend not in ODEINT_LIBRARIES:
            raise ValueError(f"backend={backend!r} is not one of {ODEINT_LIBRARIES}")
        if solver is None:  # torchdiffeq's defaults, not the library's: the same model as before adapting
            for key, value in TORCHDIFFEQ_DEFAULTS.items():
                options.setdefault(key, value)
        super().__init__(func, t1=t1, solver=solver, **options)
        self.backend = backend

    def solve(self, z0: torch.Tensor, t: torch.Tensor | None = None, **overrides):
        if t is None:
            t = torch.tensor([0.0, self.t1], dtype=z0.dtype, device=z0.device)
        sol = odeint(self.field, z0, t, backend=self.backend, **self.solver.replace(**overrides).odeint_kwargs())
        self.last_stats = sol.stats
        self.nfe_forward += int(sol.stats["nfe"])
        self.n_forward += 1
        return sol

    def extra_repr(self) -> str:
        return f"t1={self.t1:g}, backend={self.backend!r}"


class SharedInputs(nn.Module):
    """``forward(*rows) = model(*shared, *rows)``: ``shared`` tensors (a time grid) bound once.

    The shared tensors are buffers, so ``.to(...)`` and ``.double()`` move and cast them with the model.
    PhysioNet's ODE-RNN: ``SharedInputs(odernn, data.times)`` takes ``(values, mask, static, static_mask)``.
    """

    def __init__(self, model: nn.Module, *shared: torch.Tensor):
        super().__init__()
        if not all(isinstance(s, torch.Tensor) for s in shared):
            raise TypeError("shared: give tensors (e.g. the time grid every row shares)")
        self.model = model
        self.n_shared = len(shared)
        for i, s in enumerate(shared):
            self.register_buffer(f"shared_{i}", s.detach().clone())

    def forward(self, *rows):
        shared = [getattr(self, f"shared_{i}") for i in range(self.n_shared)]
        return self.model(*shared, *rows)
