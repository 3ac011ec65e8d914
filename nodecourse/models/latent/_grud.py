"""GRU-D (Che et al. 2018), the published discrete baseline, and the inputs it decays.

- :func:`time_since_observed` (δ), :func:`last_observed_values` (x_{t'}) and
  :func:`empirical_means` (x̃): from ``times`` (K,), ``values`` and ``mask`` (B, K, D).
- :class:`GRUDEncoder`: the recurrence with input and hidden decay; final state (B, H).
- :class:`GRUD`: the encoder with the course's mortality head: logits (B,).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from nodecourse.models.latent._parts import RunOutput, _scaled_times, _stats_zero, classifier_head
from nodecourse.models.latent._recurrent import _MortalityFromFinalState

__all__ = ["GRUD", "GRUDEncoder", "empirical_means", "last_observed_values", "time_since_observed"]


def _last_index_before(mask: torch.Tensor) -> torch.Tensor:
    """(B, K, D) grid index of each variable's last observation strictly before each grid time; -1: none yet."""
    b, k, d = mask.shape
    steps = torch.arange(k, device=mask.device).view(1, k, 1).expand(b, k, d)
    last_upto = torch.where(mask > 0, steps, torch.full_like(steps, -1)).cummax(dim=1).values
    return torch.cat([torch.full_like(last_upto[:, :1], -1), last_upto[:, :-1]], dim=1)


def time_since_observed(times: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """GRU-D's δ (Che et al. 2018): (B, K, D) time since each variable's last observation.

    ``times`` (K,) and ``mask`` (B, K, D). At grid time ``k``, δ[b, k, d] is ``times[k]`` minus the
    time of the last observation of variable ``d`` *strictly before* ``k``; a variable not yet
    observed counts from the patient's first observation time (the paper's δ_1 = 0, which then
    accumulates), so δ is 0 at that first time. Entries before a patient's first observation are 0
    (never used: the model only updates at the patient's own observation times).
    """
    b, k, _ = mask.shape
    last_before = _last_index_before(mask)
    any_at = (mask > 0).any(dim=-1)  # (B, K)
    steps = torch.arange(k, device=mask.device).expand(b, k)
    first = torch.where(any_at, steps, torch.full_like(steps, k)).amin(dim=1)  # (B,) k: never observed
    t = times.to(device=mask.device, dtype=mask.dtype)
    first_t = t[first.clamp(max=k - 1)].view(b, 1, 1)
    since = torch.where(last_before >= 0, t[last_before.clamp_min(0)], first_t)
    return (t.view(1, k, 1) - since).clamp_min(0.0)


def last_observed_values(values: torch.Tensor, mask: torch.Tensor, fill: torch.Tensor) -> torch.Tensor:
    """(B, K, D) the last value of each variable observed strictly before each grid time
    (GRU-D's x_{t'}); ``fill`` (D,) where the variable has not been observed yet."""
    last_before = _last_index_before(mask)
    gathered = torch.gather(values, 1, last_before.clamp_min(0))
    return torch.where(last_before >= 0, gathered, fill.to(values.dtype).expand_as(values))


def empirical_means(data) -> torch.Tensor:
    """(D,) mean of each variable over the observed values of ``data`` (give it the training split):
    GRU-D's x̃, the value a missing input decays towards. 0 for a variable never observed."""
    m = data.mask
    return (data.values * m).sum(dim=(0, 1)) / m.sum(dim=(0, 1)).clamp_min(1)


class GRUDEncoder(nn.Module):
    """GRU-D's recurrence (Che et al. 2018) over a batch's union of observation times.

    At each of a patient's observation times, with δ (B, D) from :func:`time_since_observed`
    (in units of the 48-hour horizon, like every time in this module):

    - input decay (diagonal): γ_x = exp(-max(0, w_x ⊙ δ + b_x)),
      x̂ = m ⊙ x + (1 - m) ⊙ (γ_x ⊙ x_last + (1 - γ_x) ⊙ x̃), x̃ the training split's mean;
    - hidden decay: γ_h = exp(-max(0, W_h δ + b_h)), ĥ = γ_h ⊙ h;
    - GRU update on the imputed values and the mask: h = GRUCell([x̂, m], ĥ), which is the
      paper's update with the mask term (V m) folded into the input weights.

    A patient with nothing observed at a union time keeps its state: its sequence is its own
    observation times, as in the paper, whoever else is in the batch.
    """

    def __init__(self, input_dim: int, hidden_dim: int = 64, x_mean: torch.Tensor | None = None):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.cell = nn.GRUCell(2 * input_dim, hidden_dim)
        # Decay rates start non-negative: δ >= 0, so a negative rate would sit in max(0, .)'s flat
        # half (γ = 1, no gradient) for good. Biases start at 0: no decay at δ = 0.
        self.input_decay_weight = nn.Parameter(torch.rand(input_dim))
        self.input_decay_bias = nn.Parameter(torch.zeros(input_dim))
        self.hidden_decay = nn.Linear(input_dim, hidden_dim)
        with torch.no_grad():
            self.hidden_decay.weight.uniform_(0.0, 1.0 / math.sqrt(input_dim))
            self.hidden_decay.bias.zero_()
        self.register_buffer("x_mean", torch.zeros(input_dim) if x_mean is None else x_mean.detach().clone())
        self.solver_stats = _stats_zero()  # no solver: stays zero

    def decays(self, delta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """γ_x (..., D) and γ_h (..., H) for time gaps ``delta`` (..., D)."""
        gamma_x = torch.exp(-torch.relu(delta * self.input_decay_weight + self.input_decay_bias))
        gamma_h = torch.exp(-torch.relu(self.hidden_decay(delta)))
        return gamma_x, gamma_h

    def impute(
        self, values: torch.Tensor, mask: torch.Tensor, x_last: torch.Tensor, gamma_x: torch.Tensor
    ) -> torch.Tensor:
        """x̂: observed values where ``mask`` is 1, else x_last decayed towards the training mean."""
        return mask * values + (1 - mask) * (gamma_x * x_last + (1 - gamma_x) * self.x_mean)

    def forward(self, times: torch.Tensor, values: torch.Tensor, mask: torch.Tensor) -> RunOutput:
        """Final state (B, H) after each patient's last observation (``RunOutput.h_final``)."""
        b = values.shape[0]
        delta = time_since_observed(_scaled_times(times, values), mask)  # (B, K, D)
        x_last = last_observed_values(values, mask, self.x_mean)
        gamma_x, gamma_h = self.decays(delta)  # every grid time at once; the loop only runs the cell
        x_hat = self.impute(values, mask, x_last, gamma_x)
        inputs = torch.cat([x_hat, mask], dim=-1)
        observed = (mask.sum(dim=-1, keepdim=True) > 0).to(values.dtype)  # (B, K, 1)
        h = values.new_zeros(b, self.hidden_dim)
        union = torch.nonzero(mask.sum(dim=(0, 2)) > 0).flatten()
        # Select the union times once and unbind: slicing inputs[:, i] in the loop would make each
        # slice's backward build a zero tensor of the full (B, K, ·) size (K = 2,881 on a minute grid).
        steps = zip(inputs[:, union].unbind(1), gamma_h[:, union].unbind(1), observed[:, union].unbind(1))
        for x_i, g_i, o_i in steps:
            h = torch.lerp(h, self.cell(x_i, g_i * h), o_i)
        return RunOutput(h, None, None)


class GRUD(_MortalityFromFinalState):
    """GRU-D with the course's mortality head (final state and descriptors): logits (B,)."""

    def __init__(
        self,
        input_dim: int,
        static_dim: int,
        hidden_dim: int = 64,
        x_mean: torch.Tensor | None = None,
        *,
        head: tuple[int, ...] = (64,),
        dropout: float = 0.3,
    ):
        super().__init__()
        self.encoder = GRUDEncoder(input_dim, hidden_dim, x_mean)
        self.classifier = classifier_head(hidden_dim + 2 * static_dim, head, dropout)
