"""The latent ODE (Rubanova et al. 2019): ODE-RNN encoder -> q(z0) -> ODE decoder.

:class:`LatentODE` takes ``times`` (K,), ``values`` and ``mask`` (B, K, D), ``static`` and
``static_mask`` (B, S); ``forward`` gives mortality logits (B,) and :meth:`LatentODE.loss` the
negative ELBO plus the weighted classification loss.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from nodecourse.models.latent._parts import DEFAULT_SOLVER, ODEFunc, _scaled_times, _stats_zero, classifier_head
from nodecourse.models.latent._recurrent import RecurrentEncoder
from nodecourse.solvers import SolveConfig, odeint

__all__ = ["LatentODE"]


class LatentODE(nn.Module):
    """Latent ODE: ODE-RNN encoder (backwards in time) -> q(z0) -> ODE decoder -> values.

    ``forward`` returns mortality logits (B,) from the mean of q(z0); :meth:`loss` returns the
    negative ELBO (per observed value) plus the weighted classification loss.

    ``solver`` is the encoder's; ``decoder_solver`` (default: the same) the decoder's, one solve
    per batch with outputs at the batch's union of observation times only. ``self.solver`` is the
    decoder's (the audit tunes it there) and ``self.encoder.solver`` the encoder's. ``kl_coef`` weighs
    the KL term (the published schedule sets it per epoch; 1 by default).
    """

    def __init__(
        self,
        input_dim: int,
        static_dim: int,
        latent_dim: int = 20,
        hidden_dim: int = 64,
        ode_hidden: int = 64,
        solver: SolveConfig | None = None,
        obs_std: float = 0.5,
        ce_weight: float = 10.0,
        *,
        ode_layers: int = 1,
        gru_units: int = 0,
        head: tuple[int, ...] = (64,),
        dropout: float = 0.3,
        decoder_solver: SolveConfig | None = None,
    ):
        super().__init__()
        self.encoder = RecurrentEncoder(
            input_dim, hidden_dim, "ode", ode_hidden, solver, ode_layers=ode_layers, gru_units=gru_units
        )
        self.to_q = nn.Linear(hidden_dim, 2 * latent_dim)
        self.decoder_func = ODEFunc(latent_dim, ode_hidden, ode_layers)
        self.decoder_out = nn.Linear(latent_dim, input_dim)
        self.classifier = classifier_head(latent_dim + 2 * static_dim, head, dropout)
        self.solver = decoder_solver or solver or DEFAULT_SOLVER
        self.obs_std = obs_std
        self.ce_weight = ce_weight
        self.kl_coef = 1.0
        self.decoder_stats = _stats_zero()

    @property
    def solver_stats(self) -> dict:
        e, d = self.encoder.solver_stats, self.decoder_stats
        return {k: e[k] + d[k] for k in e}

    def posterior(self, times, values, mask):
        """Mean and log-variance of q(z0 | x), each (B, L)."""
        h0 = self.encoder(times, values, mask, reverse=True).h_final
        mean, logvar = self.to_q(h0).chunk(2, dim=-1)
        return mean, logvar.clamp(-10, 5)

    def decode(self, z0: torch.Tensor, times: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """z0 (B, L) -> predicted values (B, K, D) at the grid times.

        With ``mask`` (B, K, D), one solve outputs only at t = 0 and the union of the batch's
        observation times (at minute quantisation a few hundred of 2,881 grid times); the
        other grid times get zeros (nothing is observed there, so no loss reads them).
        """
        k = times.shape[0]
        idx = None
        if mask is not None:
            idx = torch.nonzero(mask.sum(dim=(0, 2)) > 0).flatten()
            idx = torch.unique(torch.cat([idx.new_zeros(1), idx]))  # the solve starts at t = 0
        grid = _scaled_times(times if idx is None else times[idx], z0)
        sol = odeint(self.decoder_func, z0, grid, **self.solver.odeint_kwargs())
        self.decoder_stats["nfe"] += int(sol.stats["nfe"])
        self.decoder_stats["n_steps"] += int(sol.stats["n_steps"])
        self.decoder_stats["n_solves"] += 1
        out = self.decoder_out(sol.ys).transpose(0, 1)  # (B, len(grid), D)
        if idx is None:
            return out
        return out.new_zeros(out.shape[0], k, out.shape[-1]).index_copy(1, idx, out)

    def forward(self, times, values, mask, static, static_mask) -> torch.Tensor:
        mean, _ = self.posterior(times, values, mask)
        return self.classifier(torch.cat([mean, static, static_mask], dim=-1)).squeeze(-1)

    def loss(self, times, values, mask, static, static_mask, labels) -> tuple[torch.Tensor, dict]:
        mean, logvar = self.posterior(times, values, mask)
        z0 = mean + torch.randn_like(mean) * (0.5 * logvar).exp()
        pred = self.decode(z0, times, mask)
        n_obs = mask.sum(dim=(1, 2)).clamp_min(1)
        nll = ((pred - values) ** 2 * mask).sum(dim=(1, 2)) / (2 * self.obs_std**2) + 0.5 * math.log(
            2 * math.pi * self.obs_std**2
        ) * mask.sum(dim=(1, 2))
        kl = 0.5 * (mean**2 + logvar.exp() - 1 - logvar).sum(-1)
        neg_elbo = ((nll + self.kl_coef * kl) / n_obs).mean()
        logits = self.classifier(torch.cat([mean, static, static_mask], dim=-1)).squeeze(-1)
        ce = nn.functional.binary_cross_entropy_with_logits(logits, labels)
        return neg_elbo + self.ce_weight * ce, {"neg_elbo": float(neg_elbo.detach()), "ce": float(ce.detach())}

    def reconstruct(self, times, values, mask, seen_mask) -> torch.Tensor:
        mean, _ = self.posterior(times, values * seen_mask, seen_mask)
        return self.decode(mean, times, mask)
