"""Lesson 11's latent SDE (Li et al. 2020) and the latent ODE it is measured against, on one encoder.

Both models read a regularly sampled window of observations ``xs`` of shape ``(batch, K, D)`` (times ``ts`` of
shape ``(K,)``, ``ts[0] = 0``) through the same :class:`PathEncoder` (a GRU run backwards in time), draw a latent
start ``z0 ~ q(z0 | xs)`` of shape ``(batch, d)`` and decode each latent state linearly to ``(batch, D)``.

- :class:`LatentSDE`: on the window the latent state follows the *posterior* SDE
  ``dz = f_post(z, ctx) dt + g(z) dW`` (``ctx``: the encoder's context, shape ``(batch, c)``); beyond it, the
  *prior* SDE ``dz = h(z) dt + g(z) dW``; ``g`` (diagonal, shared) is the same in both. The ELBO is the
  log-likelihood minus ``KL(q(z0) || N(0, I))`` minus the path term ``E int_0^T 0.5 |u|^2 dt`` with
  ``u = (f_post - h) / g`` (Girsanov), integrated by augmenting the state with one channel of zero noise.
- :class:`LatentODE`: ``dz/dt = h(z)`` (lesson 5's :class:`~nodecourse.models.latent.ODEFunc`), deterministic
  given ``z0``: its predictive spread comes from ``q(z0)`` and the observation noise only.

The observation noise ``obs_std`` is given (the system's known measurement noise), not learned, so neither
model can widen its intervals by inflating it. They live with the lesson, not in ``nodecourse.models``: the
library's map has ``models`` import ``solvers`` but not ``sde``, and these two exist for this one comparison.
"""

from __future__ import annotations

import abc
import math

import torch
from torch import nn

from nodecourse.models.latent import ODEFunc
from nodecourse.sde import sdeint
from nodecourse.solvers import odeint

__all__ = ["PathEncoder", "LatentSDE", "LatentODE", "gaussian_kl", "n_parameters", "matched_ode_width"]


def n_parameters(model: nn.Module) -> int:
    """Trainable parameters of ``model``."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def gaussian_kl(mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """``KL(N(mean, exp(log_std)^2) || N(0, I))`` per row: inputs ``(batch, d)``, output ``(batch,)``."""
    return (0.5 * (mean**2 + torch.exp(2 * log_std) - 1) - log_std).sum(-1)


def _check_window(xs: torch.Tensor, ts: torch.Tensor) -> None:
    if xs.dim() != 3:
        raise ValueError(f"xs must have shape (batch, K, D); got {tuple(xs.shape)}")
    if ts.dim() != 1 or ts.numel() != xs.shape[1]:
        raise ValueError(f"ts must have shape (K,) with K = xs.shape[1] = {xs.shape[1]}; got {tuple(ts.shape)}")


class PathEncoder(nn.Module):
    """A GRU (``hidden`` units) run backwards over ``xs`` ``(batch, K, D)``. Its last state gives the mean and log
    standard deviation of ``q(z0)`` (each ``(batch, latent)``); its state at each observation ``k``, which has
    read ``xs[:, k:]``, gives the context there: ``(K, batch, context)`` (``None`` when ``context=0``)."""

    def __init__(self, obs_dim: int, hidden: int, latent: int, context: int = 0):
        super().__init__()
        self.latent = latent
        self.gru = nn.GRU(obs_dim, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 2 * latent)
        self.context_head = nn.Linear(hidden, context) if context > 0 else None

    def forward(self, xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        out, h = self.gru(xs.flip(1))  # the last state has seen the whole window, back to t = 0
        mean, log_std = self.head(h[-1]).chunk(2, dim=-1)
        ctx = None if self.context_head is None else self.context_head(out.flip(1)).transpose(0, 1)
        return mean, log_std.clamp(-6.0, 2.0), ctx


class _LatentModel(nn.Module, abc.ABC):
    """What both models share: the encoder, ``z0 ~ q(z0 | xs)``, the linear decoder and the likelihood."""

    def __init__(self, obs_dim: int, latent: int, hidden: int, context: int, obs_std: float, dt: float):
        super().__init__()
        if not obs_std > 0 or not dt > 0:
            raise ValueError(f"obs_std={obs_std} and dt={dt} must be > 0, e.g. obs_std=0.1, dt=0.0625")
        self.latent, self.obs_std, self.dt = latent, float(obs_std), float(dt)
        self.encoder = PathEncoder(obs_dim, hidden, latent, context)
        self.decoder = nn.Linear(latent, obs_dim)

    def start(self, xs: torch.Tensor, generator: torch.Generator | None = None):
        """``(z0, kl0, ctx)``: a draw of ``z0`` ``(batch, d)``, ``KL(q(z0) || N(0, I))`` ``(batch,)``, the
        context ``(K, batch, c)`` or None."""
        mean, log_std, ctx = self.encoder(xs)
        eps = torch.randn(mean.shape, generator=generator, dtype=mean.dtype, device=mean.device)
        return mean + log_std.exp() * eps, gaussian_kl(mean, log_std), ctx

    def log_likelihood(self, zs: torch.Tensor, xs: torch.Tensor) -> torch.Tensor:
        """``log N(xs | decoder(zs), obs_std^2)`` summed over times and channels: ``zs`` ``(K, batch, d)``,
        ``xs`` ``(batch, K, D)``, output ``(batch,)``."""
        mean = self.decoder(zs).transpose(0, 1)
        return (-0.5 * ((xs - mean) / self.obs_std) ** 2 - math.log(self.obs_std * math.sqrt(2 * math.pi))).sum((1, 2))

    def elbo(self, xs: torch.Tensor, ts: torch.Tensor, *, seed: int, kl_weight: float = 1.0):
        """``(loss, log_likelihood, kl)``: the negative weighted ELBO per observation (a scalar to minimise), and
        the batch means of the log-likelihood and of the whole KL (``z0`` and, for the SDE, the path)."""
        _check_window(xs, ts)
        gen = torch.Generator(device=xs.device).manual_seed(seed)
        z0, kl0, ctx = self.start(xs, gen)
        zs, kl_path = self.window(z0, ctx, ts, seed)
        loglik, kl = self.log_likelihood(zs, xs), kl0 + kl_path
        return -(loglik - kl_weight * kl).mean() / xs[0].numel(), loglik.mean(), kl.mean()

    @torch.no_grad()
    def predict(self, xs: torch.Tensor, ts: torch.Tensor, future: torch.Tensor, *, samples: int, seed: int):
        """Draws of the observations at ``future`` (times after ``ts[-1]``, shape ``(F,)``) given the window:
        shape ``(samples, batch, F, D)``, the observation noise included."""
        _check_window(xs, ts)
        if future.dim() != 1 or not bool((future > ts[-1]).all()):
            raise ValueError("future must be a 1-D tensor of times after the window's last time ts[-1]")
        b = xs.shape[0]
        gen = torch.Generator(device=xs.device).manual_seed(seed)
        z0, _, ctx = self.start(xs.repeat(samples, 1, 1), gen)
        zs, _ = self.window(z0, ctx, ts, seed)
        zf = self.forecast(zs[-1], torch.cat([ts[-1:], future]), seed + 1)[1:]  # (F, samples * batch, d)
        mean = self.decoder(zf).transpose(0, 1)  # (samples * batch, F, D)
        noise = torch.randn(mean.shape, generator=gen, dtype=mean.dtype, device=mean.device)
        return (mean + self.obs_std * noise).reshape(samples, b, *mean.shape[1:])

    @abc.abstractmethod
    def window(self, z0, ctx, ts, seed):
        """The latent states on the window ``(K, batch, d)`` and the path's KL ``(batch,)``."""

    @abc.abstractmethod
    def forecast(self, z, ts, seed):
        """The latent states at ``ts`` ``(T, batch, d)`` from ``z`` at ``ts[0]``, with no data."""


class _Posterior:
    """The posterior SDE on the state ``[z, l]`` ``(batch, d + 1)``: ``dz = f_post dt + g dW`` and
    ``dl = 0.5 |(f_post - h) / g|^2 dt`` (no noise), so ``l(T)`` is the path's KL. On ``[ts[k], ts[k + 1])`` the
    posterior drift reads the context of observation ``k + 1`` (what is still to come), as Li et al.'s code."""

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, model: LatentSDE, ctx: torch.Tensor | None, ts: torch.Tensor):
        self.model, self.ctx, self.ts = model, ctx, ts

    def f(self, t, y):
        z = y[..., :-1]
        if self.ctx is None:  # a model without context: the posterior drift reads z alone
            f_post = self.model.posterior_drift(z)
        else:
            k = min(int(torch.searchsorted(self.ts, t.reshape(1), right=True)), len(self.ts) - 1)
            f_post = self.model.posterior_drift(torch.cat([z, self.ctx[k]], dim=-1))
        u = (f_post - self.model.prior_drift(z)) / self.model.diffusion(z)
        return torch.cat([f_post, 0.5 * (u**2).sum(-1, keepdim=True)], dim=-1)

    def g(self, t, y):
        z = y[..., :-1]
        return torch.cat([self.model.diffusion(z), torch.zeros_like(y[..., -1:])], dim=-1)


class _Prior:
    """The prior SDE ``dz = h(z) dt + g(z) dW`` on ``(batch, d)``."""

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, model: LatentSDE):
        self.model = model

    def f(self, t, z):
        return self.model.prior_drift(z)

    def g(self, t, z):
        return self.model.diffusion(z)


def _drift(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, n_out))


class LatentSDE(_LatentModel):
    """A latent SDE (Li et al. 2020), solved by Euler-Maruyama (Ito) with steps ``dt``.

    Args:
        obs_dim: channels ``D`` of an observation; latent: ``d``; hidden: the GRU's and the drifts' width;
        context: ``c``, the encoder's context fed to the posterior drift; obs_std: the observation noise.

    Posterior drift ``f_post([z, ctx])`` and prior drift ``h(z)``: tanh MLPs ``-> d``; diffusion
    ``g(z)_i = softplus(a_i z_i + b_i) + 1e-3`` (``a``, ``b`` of shape ``(d,)``): channel ``i`` depends on
    ``z_i`` only, as diagonal noise requires, and never reaches 0 (``u`` divides by it).
    """

    def __init__(
        self, obs_dim: int = 1, latent: int = 4, hidden: int = 16, context: int = 4, obs_std: float = 0.1,
        dt: float = 0.0625,
    ):  # fmt: skip
        super().__init__(obs_dim, latent, hidden, context, obs_std, dt)
        self.posterior_drift = _drift(latent + context, hidden, latent)
        self.prior_drift = _drift(latent, hidden, latent)
        self.noise_scale = nn.Parameter(torch.zeros(latent))
        self.noise_shift = nn.Parameter(torch.full((latent,), -1.0))

    def diffusion(self, z: torch.Tensor) -> torch.Tensor:
        """``g(z)``, the shape of ``z``."""
        return nn.functional.softplus(self.noise_scale * z + self.noise_shift) + 1e-3

    def window(self, z0, ctx, ts, seed):
        y0 = torch.cat([z0, torch.zeros_like(z0[:, :1])], dim=-1)
        ys = sdeint(_Posterior(self, ctx, ts), y0, ts, method="euler", dt=self.dt, seed=seed).ys
        return ys[..., :-1], ys[-1, :, -1]

    def forecast(self, z, ts, seed):
        return sdeint(_Prior(self), z, ts, method="euler", dt=self.dt, seed=seed).ys


class LatentODE(_LatentModel):
    """The latent ODE baseline: the same encoder (no context) and decoder, ``dz/dt = h(z)`` with ``h``
    lesson 5's :class:`~nodecourse.models.latent.ODEFunc` of ``width`` units (two hidden layers), solved by Euler
    with steps ``dt`` as the SDE is. Its window has no path KL (the path is deterministic given ``z0``)."""

    def __init__(
        self, obs_dim: int = 1, latent: int = 4, hidden: int = 16, width: int = 16, obs_std: float = 0.1,
        dt: float = 0.0625,
    ):  # fmt: skip
        super().__init__(obs_dim, latent, hidden, 0, obs_std, dt)
        self.drift = ODEFunc(latent, width)

    def forecast(self, z, ts, seed):
        return odeint(self.drift, z, ts, method="euler", step_size=self.dt).ys

    def window(self, z0, ctx, ts, seed):
        return self.forecast(z0, ts, seed), torch.zeros_like(z0[:, 0])


def matched_ode_width(target: int, *, obs_dim: int = 1, latent: int = 4, hidden: int = 16) -> int:
    """The :class:`LatentODE` drift width whose parameter count is nearest ``target`` (a :class:`LatentSDE`'s)."""
    if target < 1:
        raise ValueError(f"target={target} must be a positive parameter count")

    # ODEFunc(d, w): d -> w -> w -> d, so the count is base + w^2 + (2d + 2) w + d
    base = n_parameters(LatentODE(obs_dim, latent, hidden, 1)) - (1 + (2 * latent + 2) + latent)
    return min(range(1, 1025), key=lambda w: abs(base + w * w + (2 * latent + 2) * w + latent - target))
