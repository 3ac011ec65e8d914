"""The pieces the sequence models share: updates, vector field, head, time scale, run output.

- :class:`MaskedGRUUpdate` and :class:`GatedMLPUpdate`: the update at one observation time, ``h``
  (B, H) from the values ``x`` and mask ``m`` (B, D); unobserved patients keep ``h``.
- :func:`classifier_head`: mortality logit from a state and the descriptors.
- :class:`ODEFunc`: the hidden state's vector field, (B, H) -> (B, H).
- :data:`DEFAULT_SOLVER`: Euler with one-hour steps, in units of the 48-hour horizon.
- :class:`RunOutput`: what a recurrent pass returns (final state, states before each update).

Times are hours on the batch's grid, divided by the fixed horizon ``HORIZON_HOURS`` before a
solve (``_scaled_times``); solver work is counted in dicts made by ``_stats_zero``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from nodecourse.data.physionet import HORIZON_HOURS  # the one definition: hours kept per stay
from nodecourse.solvers import SolveConfig

__all__ = ["DEFAULT_SOLVER", "GatedMLPUpdate", "MaskedGRUUpdate", "ODEFunc", "RunOutput", "classifier_head"]


def _stats_zero() -> dict:
    return {"nfe": 0, "n_steps": 0, "n_solves": 0}


class MaskedGRUUpdate(nn.Module):
    """The update at one observation time: a GRU cell fed the observed values and the mask.

    ``h`` (B, H); ``x`` and ``m`` (B, D) with ``x`` zero where ``m`` is 0; ``extra`` (B, E) or None.
    Patients with no observation at this time (``m`` all zero) keep ``h`` unchanged.

    :meth:`project` and :meth:`combine` split the cell in two so that a recurrent pass can
    compute the input half for every time of a batch in one matrix product (``project`` on
    (B, K, ·)) and run only the hidden half in its loop; ``forward`` is the two together.
    """

    def __init__(self, input_dim: int, hidden_dim: int, extra_dim: int = 0):
        super().__init__()
        self.cell = nn.GRUCell(2 * input_dim + extra_dim, hidden_dim)

    def project(self, x: torch.Tensor, m: torch.Tensor, extra: torch.Tensor | None = None) -> torch.Tensor:
        """The input half (..., 3H) of the cell for inputs (..., D)."""
        inputs = torch.cat([x * m, m] + ([extra] if extra is not None else []), dim=-1)
        return nn.functional.linear(inputs, self.cell.weight_ih, self.cell.bias_ih)

    def combine(self, h: torch.Tensor, gi: torch.Tensor) -> torch.Tensor:
        """The GRU cell's output (B, H) from the state ``h`` and a projected input ``gi`` (B, 3H)."""
        gh = nn.functional.linear(h, self.cell.weight_hh, self.cell.bias_hh)
        i_r, i_z, i_n = gi.chunk(3, dim=-1)
        h_r, h_z, h_n = gh.chunk(3, dim=-1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h

    def forward(
        self, h: torch.Tensor, x: torch.Tensor, m: torch.Tensor, extra: torch.Tensor | None = None
    ) -> torch.Tensor:
        inputs = [x * m, m] + ([extra] if extra is not None else [])
        h_new = self.cell(torch.cat(inputs, dim=-1), h)
        observed = (m.sum(dim=-1, keepdim=True) > 0).to(h.dtype)
        return observed * h_new + (1.0 - observed) * h


class GatedMLPUpdate(MaskedGRUUpdate):
    """The published ODE-RNN's update (``GRU_unit`` in Rubanova et al.'s code), mean state only.

    Update and reset gates and the candidate state are each a one-hidden-layer tanh MLP of
    ``units`` on ``[h, x * m, m]``; h_new = (1 - u) * candidate(r * h, x) + u * h. ``h`` (B, H),
    ``x`` and ``m`` (B, D). The published unit also carries a standard-deviation state; this
    one does not (see :data:`nodecourse.models._physionet_settings.PHYSIONET_NOT_FOLLOWED`).
    """

    def __init__(self, input_dim: int, hidden_dim: int, units: int, extra_dim: int = 0):
        nn.Module.__init__(self)
        in_x = 2 * input_dim + extra_dim
        self.hidden_dim, self.units = hidden_dim, units
        # First layers of the three networks, split into the state part and the input part:
        # the input part is computed for all times at once by ``project``.
        self.first_h = nn.Linear(hidden_dim, 2 * units, bias=False)
        self.first_x = nn.Linear(in_x, 3 * units)
        self.gates_out = nn.Linear(units, 2 * hidden_dim)
        self.new_out = nn.Linear(units, hidden_dim)
        self.first_r = nn.Linear(hidden_dim, units, bias=False)  # the candidate sees r * h, not h

    def project(self, x, m, extra=None):
        return self.first_x(torch.cat([x * m, m] + ([extra] if extra is not None else []), dim=-1))

    def combine(self, h, gi):
        u_units = self.units
        gx_gates, gx_new = gi[..., : 2 * u_units], gi[..., 2 * u_units :]
        hidden = torch.tanh(gx_gates + self.first_h(h))
        u_pre, r_pre = hidden.chunk(2, dim=-1)
        w_u, w_r = self.gates_out.weight.chunk(2, dim=0)
        b_u, b_r = self.gates_out.bias.chunk(2, dim=0)
        update = torch.sigmoid(nn.functional.linear(u_pre, w_u, b_u))
        reset = torch.sigmoid(nn.functional.linear(r_pre, w_r, b_r))
        candidate = self.new_out(torch.tanh(gx_new + self.first_r(reset * h)))
        return (1 - update) * candidate + update * h

    def forward(self, h, x, m, extra=None):
        h_new = self.combine(h, self.project(x, m, extra))
        observed = (m.sum(dim=-1, keepdim=True) > 0).to(h.dtype)
        return observed * h_new + (1.0 - observed) * h


def classifier_head(in_dim: int, hidden: int | tuple[int, ...] = 64, dropout: float = 0.3) -> nn.Sequential:
    """Mortality logit from a state and the descriptors: ReLU layers of widths ``hidden``.

    The course's default (64, dropout 0.3) because 4,000 patients overfit fast; the published
    head is (300, 300) without dropout."""
    widths = (hidden,) if isinstance(hidden, int) else tuple(hidden)
    layers: list[nn.Module] = []
    for w in widths:
        layers += (
            [nn.Dropout(dropout), nn.Linear(in_dim, w), nn.ReLU()] if dropout > 0 else [nn.Linear(in_dim, w), nn.ReLU()]
        )
        in_dim = w
    layers += ([nn.Dropout(dropout)] if dropout > 0 else []) + [nn.Linear(in_dim, 1)]
    return nn.Sequential(*layers)


class ODEFunc(nn.Module):
    """The hidden state's vector field f(t, h): an autonomous tanh MLP, (B, H) -> (B, H)."""

    def __init__(self, dim: int, hidden: int = 64, layers: int = 1):
        super().__init__()
        # ``layers`` hidden-to-hidden layers, as the published create_net(n_layers=layers)
        mid: list[nn.Module] = []
        for _ in range(layers):
            mid += [nn.Tanh(), nn.Linear(hidden, hidden)]
        self.net = nn.Sequential(nn.Linear(dim, hidden), *mid, nn.Tanh(), nn.Linear(hidden, dim))
        # Start close to the zero field, so the untrained model is a GRU with a small drift.
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.net(h)


# How the ODE parts are solved by default: Euler with one-hour steps (in units of
# the 48-hour horizon), as the published ODE-RNN's encoder (Euler on a grid of
# about 1/50 of the horizon). It is affordable to train on two CPU cores;
# ``SolveConfig(method="rk4", step_size=0.5 / 48)`` or ``SolveConfig(method="dopri5",
# rtol=1e-3, atol=1e-4)`` cost several times more NFE (the lesson measures it).
DEFAULT_SOLVER = SolveConfig(method="euler", step_size=1.0 / HORIZON_HOURS, rtol=1e-3, atol=1e-4)


def _scaled_times(times: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return (times / HORIZON_HOURS).to(device=like.device, dtype=like.dtype)


@dataclass
class RunOutput:
    """What a recurrent pass returns: ``h_final`` (B, H) at the end of the horizon (or at
    t = 0 for a backwards pass), and ``h_before`` (B, K, H) the state at each grid time just
    before that time's update (zeros at grid times outside the batch's union)."""

    h_final: torch.Tensor
    h_before: torch.Tensor | None
    dt_before: torch.Tensor | None  # (B, K) time since the patient's last update (GRU-Δt only)
