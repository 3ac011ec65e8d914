"""Regularisers integrated along the solve as extra state (Finlay et al. 2020, "How to train your
neural ODE"): the kinetic energy and the Jacobian's Frobenius norm.

For a field ``f(t, z)`` on a batch ``z`` of shape ``(B, d)`` the solve carries two more numbers
per sample,

    dE/dt = ||f(t, z)||^2                      (kinetic energy, E(0) = 0)
    dJ/dt = ||eps^T df/dz (t, z)||^2           (Jacobian, Hutchinson: E_eps = ||df/dz||_F^2, J(0) = 0)

so that ``E(T) = int_0^T ||f||^2 dt`` and ``J(T)`` estimates ``int_0^T ||df/dz||_F^2 dt`` with the
solver's own steps (no second pass). ``eps`` is drawn once per solve (mean 0, identity covariance:
:func:`nodecourse.models._flows.sample_probes`), as in FFJORD and RNODE: a field that changed its
probe between evaluations would not be an ODE for the adaptive solver.

- :class:`RegularisedField`: the augmented field on ``[z, E, J]`` (shape ``(B, d + 2)``);
- :class:`RegularisedBlock` / :func:`regularised_block`: wraps an :class:`~nodecourse.models.ODEBlock`;
  ``forward(z0)`` returns ``z(T)`` and keeps ``kinetic`` and ``jacobian`` (shape ``(B,)``, on the graph)
  for the loss: ``loss = task + kinetic_weight * kinetic.mean() + jacobian_weight * jacobian.mean()``.

Every gradient mode of the block works (backprop, adjoint, checkpoint): the extra channels are
part of the state.
"""

from __future__ import annotations

import torch
from torch import nn

from nodecourse.models._blocks import ODEBlock
from nodecourse.models._flows import PROBE_NOISES, sample_probes
from nodecourse.solvers import odeint
from nodecourse.validation import Arg, Flag, Interval, Options, check_args

REGULARISED_ARGS = {
    "kinetic": Arg(Flag(), fix="kinetic=True integrates ||f||^2 along the solve"),
    "jacobian": Arg(Flag(), fix="jacobian=True integrates a Hutchinson estimate of ||df/dz||_F^2"),
    "n_probes": Arg(Interval(int, 1, None), fix="e.g. n_probes=1 (probes per sample for the Jacobian term)"),
    "noise": Arg(Options(PROBE_NOISES), fix="noise='rademacher' (lower variance) or 'gaussian'"),
}


class RegularisedField(nn.Module):
    """``[z, E, J] -> [f(t, z), ||f||^2, ||eps^T df/dz||^2]`` for a field acting on ``(B, d)`` states.

    The probes ``eps`` (shape ``(n_probes, B, d)``) are set by :meth:`set_probes` before a solve
    (:class:`RegularisedBlock` does it); the Jacobian term is their mean. The field must treat
    the rows of the batch apart (as every field of a classifier does); the estimate sums the
    vector-Jacobian product over the batch and reads each row's share.
    """

    def __init__(self, field: nn.Module, *, kinetic: bool = True, jacobian: bool = True):
        super().__init__()
        check_args({"kinetic": kinetic, "jacobian": jacobian}, REGULARISED_ARGS)
        self.field = field
        self.kinetic, self.jacobian = kinetic, jacobian
        self.probes: torch.Tensor | None = None

    def set_probes(self, probes: torch.Tensor | None) -> None:
        self.probes = probes

    def forward(self, t: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        d = state.shape[1] - 2
        z = state[:, :d]
        if not self.jacobian:
            f = self.field(t, z)
            jac = torch.zeros_like(f[:, 0])
        else:
            if self.probes is None or self.probes.shape[1:] != z.shape:
                raise ValueError(
                    f"RegularisedField: probes of shape (n_probes, {z.shape[0]}, {d}) are needed for the "
                    f"Jacobian term; call set_probes(...) before the solve (RegularisedBlock does)"
                )
            create = torch.is_grad_enabled()  # a graph for training; the adjoint's forward pass needs none
            with torch.enable_grad():
                z_in = z if z.requires_grad else z.detach().requires_grad_(True)
                f = self.field(t, z_in)
                jac = torch.zeros_like(f[:, 0])
                for eps in self.probes:
                    (vjp,) = torch.autograd.grad(f, z_in, eps, create_graph=create, retain_graph=True)
                    jac = jac + vjp.pow(2).sum(dim=1)
            jac = jac / self.probes.shape[0]
            if not create:
                f, jac = f.detach(), jac.detach()
        kin = f.pow(2).sum(dim=1) if self.kinetic else torch.zeros_like(f[:, 0])
        return torch.cat([f, kin[:, None], jac[:, None]], dim=1)


class RegularisedBlock(nn.Module):
    """An :class:`~nodecourse.models.ODEBlock` whose solve also integrates the regularisers.

    ``forward(z0)`` (``z0``: ``(B, d)``) returns ``z(t1)`` and sets :attr:`kinetic` and
    :attr:`jacobian` (each ``(B,)``: ``int ||f||^2 dt`` and the Hutchinson estimate of
    ``int ||df/dz||_F^2 dt``; zeros for a term that is off). The solver settings, ``last_stats``
    and the NFE counters are the wrapped block's. ``generator`` (optional, on the CPU) makes the
    probes reproducible.
    """

    def __init__(
        self,
        block: ODEBlock,
        *,
        kinetic: bool = True,
        jacobian: bool = True,
        n_probes: int = 1,
        noise: str = "rademacher",
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        if not isinstance(block, ODEBlock):
            raise TypeError(
                f"block must be a nodecourse.models.ODEBlock, got {type(block).__name__}; wrap your "
                f"field first: ODEBlock(field, method='dopri5')"
            )
        check_args({"n_probes": n_probes, "noise": noise}, REGULARISED_ARGS)
        self.block = block
        self.field = RegularisedField(block.field, kinetic=kinetic, jacobian=jacobian)
        self.n_probes, self.noise, self.generator = n_probes, noise, generator
        self.kinetic: torch.Tensor | None = None
        self.jacobian: torch.Tensor | None = None

    @property
    def last_stats(self) -> dict:
        return self.block.last_stats

    def solve(self, z0: torch.Tensor, t: torch.Tensor | None = None, **overrides):
        """The :class:`~nodecourse.Solution` of the augmented state ``[z, E, J]`` (``(T, B, d + 2)``)."""
        if z0.dim() != 2:
            raise ValueError(f"z0 has shape {tuple(z0.shape)}; RegularisedBlock takes a batch of vectors (B, d)")
        if self.field.jacobian:
            self.field.set_probes(
                sample_probes(
                    (self.n_probes, *z0.shape),
                    noise=self.noise,
                    generator=self.generator,
                    dtype=z0.dtype,
                    device=z0.device,
                )
            )
        start = torch.cat([z0, z0.new_zeros(z0.shape[0], 2)], dim=1)
        block = self.block
        if t is None:
            t = torch.tensor([0.0, block.t1], dtype=z0.dtype, device=z0.device)
        # the probes stay set after the solve: the adjoint's backward pass evaluates the field again
        sol = odeint(self.field, start, t, **block.solver.replace(**overrides).odeint_kwargs())
        block.last_stats = sol.stats  # the block's counters count the regularised solves too
        block.nfe_forward += int(sol.stats["nfe"])
        block.n_forward += 1
        return sol

    def forward(self, z0: torch.Tensor) -> torch.Tensor:
        end = self.solve(z0).ys[-1]
        d = z0.shape[1]
        self.kinetic, self.jacobian = end[:, d], end[:, d + 1]
        return end[:, :d]


def regularised_block(block: ODEBlock, **options) -> RegularisedBlock:
    """``RegularisedBlock(block, **options)``: the documented way to add Finlay et al.'s regularisers
    to an :class:`~nodecourse.models.ODEBlock` (``kinetic``, ``jacobian``, ``n_probes``, ``noise``,
    ``generator``)."""
    return RegularisedBlock(block, **options)


__all__ = ["REGULARISED_ARGS", "RegularisedBlock", "RegularisedField", "regularised_block"]
