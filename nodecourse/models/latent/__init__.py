"""Sequence models for irregularly sampled time series (lesson 5), and their baselines.

Inputs are a :class:`~nodecourse.data.physionet.PhysioNetSet` (normalised) or its tensors:
``times`` (K,) hours on a shared grid, ``values`` and ``mask`` (B, K, D), ``static`` and
``static_mask`` (B, S). A batch is processed over the *union* of its patients'
observation times: at each such time every patient's state moves forward, and only the
patients observed there get an update (the mask decides).

Models:

- :class:`ODERNN`: the hidden state follows an ODE between observation times
  (``nodecourse.odeint``), and a GRU update with the mask at each observation.
- :class:`GRUDelta`: the discrete baseline: the same GRU update, with the time since the
  patient's previous observation as an extra input, and no ODE in between.
- :class:`GRUD`: GRU-D (Che et al. 2018), the published discrete baseline: missing inputs decay
  from the last observed value towards the training mean, and the hidden state decays, both
  with the time since each variable was last observed; the mask is an input.
- :class:`LatentODE`: an ODE-RNN encoder run backwards in time gives q(z0); an ODE decoder
  maps z0 to the whole trajectory; trained on the ELBO plus a mortality head on z0.
- :class:`SummaryLogReg`: no sequence at all: logistic regression (scikit-learn) on
  per-variable mean, min, max, last value and count, plus the descriptors.

Time is divided by the fixed 48-hour horizon (never by a batch's own maximum).
Solver work (NFE, steps) is accumulated in ``model.solver_stats``.

Sizes, solvers and the training schedule come from the arguments (the course's defaults) or from
a :class:`~nodecourse.models.physionet_settings.PhysioNetSettings` (``build_model(..., settings=)``,
``fit(..., settings=)``), e.g. the published ones. The ODE-RNN pass is written for many short
gaps (a minute grid gives ~2,000 per batch): see :class:`RecurrentEncoder` (``fast``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from nodecourse.data.physionet.records import HORIZON_HOURS  # the one definition: hours kept per stay
from nodecourse.models.physionet_settings import PhysioNetSettings
from nodecourse.solvers import observers, odeint
from nodecourse.solvers.solve_config import SolveConfig
from nodecourse.training import seeded_batches, train_epochs

MODELS = ("odernn", "latent-ode", "gru-dt", "gru-d", "summary-logreg")
ODE_MODELS = ("odernn", "latent-ode")  # the models that call a solver (and report its work)


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
    one does not (see :data:`nodecourse.models.physionet_settings.NOT_FOLLOWED`).
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


class RecurrentEncoder(nn.Module):
    """ODE-RNN (``kind="ode"``) or GRU-Δt (``kind="dt"``) over a batch's union of times.

    ``ode_layers`` and ``ode_hidden``: the vector field's depth and width; ``gru_units > 0``
    uses the published gated-MLP update (:class:`GatedMLPUpdate`) instead of a GRU cell.
    ``backend`` is passed to ``nodecourse.odeint`` ("torchdiffeq" runs the same solves there).

    ``fast=True`` (default) runs the ODE-RNN pass without per-gap overhead: the GRU's input
    half is computed for all times at once, times are Python floats, and with an Euler
    solver a gap no longer than one step is that one step, ``h + gap * f(h)``, computed in
    place of a call to ``odeint`` (the same arithmetic: a test checks it against
    ``fast=False``, the plain loop, which calls ``odeint`` for every gap).
    """

    KINDS = ("ode", "dt")

    def __init__(
        self,
        input_dim: int,
        hidden_dim: int = 64,
        kind: str = "ode",
        ode_hidden: int = 64,
        solver: SolveConfig | None = None,
        *,
        ode_layers: int = 1,
        gru_units: int = 0,
        backend: str = "nodecourse",
        fast: bool = True,
    ):
        super().__init__()
        if kind not in self.KINDS:
            raise ValueError(f"kind={kind!r} is not a recurrent encoder; use one of {self.KINDS}")
        self.kind = kind
        self.hidden_dim = hidden_dim
        extra = 1 if kind == "dt" else 0
        self.update = (
            GatedMLPUpdate(input_dim, hidden_dim, gru_units, extra_dim=extra)
            if gru_units > 0
            else MaskedGRUUpdate(input_dim, hidden_dim, extra_dim=extra)
        )
        self.func = ODEFunc(hidden_dim, ode_hidden, ode_layers) if kind == "ode" else None
        self.solver = solver or DEFAULT_SOLVER
        self.backend = backend
        self.fast = fast
        self.solver_stats = _stats_zero()

    def evolve(self, h: torch.Tensor, t0: torch.Tensor, t1: torch.Tensor) -> torch.Tensor:
        """Solve the hidden state's ODE from t0 to t1 (scaled times, 0-d tensors)."""
        sol = odeint(self.func, h, torch.stack([t0, t1]), backend=self.backend, **self.solver.odeint_kwargs())
        self.solver_stats["nfe"] += int(sol.stats["nfe"])
        self.solver_stats["n_steps"] += int(sol.stats["n_steps"])
        self.solver_stats["n_solves"] += 1
        return sol.ys[-1]

    def _one_step_ok(self) -> bool:
        """Whether a gap of at most one step may be taken as one explicit Euler step here."""
        cfg = self.solver
        # Not while someone logs solves (SolverWorkLog, the audit): each gap is then an odeint call
        # they can see and count; the states are the same either way.
        return (
            self.fast
            and self.backend == "nodecourse"
            and cfg.method == "euler"
            and cfg.step_size is not None
            and cfg.gradient == "backprop"
            and not cfg.per_sample
            and not observers.listening()
        )

    def _evolve_floats(self, h: torch.Tensor, t0: float, t1: float) -> torch.Tensor:
        """:meth:`evolve` between Python-float times; one Euler step when the gap fits in one."""
        if self._one_step_ok() and abs(t1 - t0) <= self.solver.step_size * (1 + 1e-9):
            self.solver_stats["nfe"] += 1
            self.solver_stats["n_steps"] += 1
            self.solver_stats["n_solves"] += 1
            return h + (t1 - t0) * self.func(t0, h)
        ts = torch.tensor([t0, t1], dtype=h.dtype, device=h.device)
        return self.evolve(h, ts[0], ts[1])

    def forward(
        self,
        times: torch.Tensor,
        values: torch.Tensor,
        mask: torch.Tensor,
        *,
        update_mask: torch.Tensor | None = None,
        reverse: bool = False,
        keep_states: bool = False,
    ) -> RunOutput:
        """Run over the union of observation times of ``mask`` (B, K, D).

        ``update_mask`` (default ``mask``) says which values the model may *see*; ``mask`` says
        at which times it must have a state (for interpolation, the held-out times).
        """
        if self.fast and self.kind == "ode":
            return self._forward_ode_fast(times, values, mask, update_mask, reverse, keep_states)
        return self._forward_loop(times, values, mask, update_mask, reverse, keep_states)

    def _forward_ode_fast(self, times, values, mask, update_mask, reverse, keep_states) -> RunOutput:
        b, k, _ = values.shape
        seen = mask if update_mask is None else update_mask
        union = torch.nonzero(mask.sum(dim=(0, 2)) > 0).flatten()
        if reverse:
            union = union.flip(0)
        ts = _scaled_times(times, values)  # the values' dtype, as the loop's; float64 arithmetic on the gaps
        t_union = ts[union].tolist()
        # Everything that does not depend on the state, for all union times at once.
        m_u = seen[:, union]  # (B, U, D)
        gi = self.update.project(values[:, union] * m_u, m_u)  # (B, U, G)
        observed = (m_u.sum(dim=-1, keepdim=True) > 0).to(values.dtype)  # (B, U, 1)
        # unbind, not gi[:, j]: the backward of each slice would build a zero tensor of gi's full
        # size (B, U, G), U times over (at minute quantisation, U is ~2,000 per batch of 50)
        gis, obs = gi.unbind(1), observed.unbind(1)
        h = values.new_zeros(b, self.hidden_dim)
        t_prev = float(ts[-1] if reverse else ts[0])
        states = []
        for j, t in enumerate(t_union):
            if t != t_prev:  # no solve over a zero-length gap
                h = self._evolve_floats(h, t_prev, t)
            if keep_states:
                states.append(h)
            h = torch.lerp(h, self.update.combine(h, gis[j]), obs[j])  # unobserved patients keep h
            t_prev = t
        end = float(ts[0] if reverse else ts[-1])
        if end != t_prev:
            h = self._evolve_floats(h, t_prev, end)
        h_before = dt_before = None
        if keep_states:
            h_before = values.new_zeros(b, k, self.hidden_dim)
            dt_before = values.new_zeros(b, k)
            if states:
                h_before = h_before.index_copy(1, union, torch.stack(states, dim=1))
        return RunOutput(h, h_before, dt_before)

    def _forward_loop(self, times, values, mask, update_mask, reverse, keep_states) -> RunOutput:
        """The plain loop: one ``odeint`` call per gap and the full cell at each time (GRU-Δt, and
        the reference for the fast ODE-RNN pass)."""
        b, k, _ = values.shape
        seen = mask if update_mask is None else update_mask
        ts = _scaled_times(times, values)
        union = torch.nonzero(mask.sum(dim=(0, 2)) > 0).flatten().tolist()
        order = union[::-1] if reverse else union
        h = values.new_zeros(b, self.hidden_dim)
        h_before = values.new_zeros(b, k, self.hidden_dim) if keep_states else None
        dt_before = values.new_zeros(b, k) if keep_states else None
        start = ts[-1] if reverse else ts[0]
        t_prev = start
        last_seen = start.expand(b).clone()  # per patient: time of the last update (GRU-Δt)
        states = []
        for i in order:
            t = ts[i]
            if self.kind == "ode" and bool(t != t_prev):
                h = self.evolve(h, t_prev, t)
            dt = (t - last_seen).abs().unsqueeze(-1)
            if keep_states:
                states.append((i, h, dt.squeeze(-1)))
            m_i = seen[:, i]
            h = self.update(h, values[:, i] * m_i, m_i, dt if self.kind == "dt" else None)
            if self.kind == "dt":
                observed = m_i.sum(-1) > 0
                last_seen = torch.where(observed, t.expand(b), last_seen)
            t_prev = t
        end = ts[0] if reverse else ts[-1]
        if self.kind == "ode" and bool(end != t_prev):
            h = self.evolve(h, t_prev, end)
        if keep_states and states:
            idx = torch.tensor([s[0] for s in states], device=values.device)
            h_before = h_before.index_copy(1, idx, torch.stack([s[1] for s in states], dim=1))
            dt_before = dt_before.index_copy(1, idx, torch.stack([s[2] for s in states], dim=1))
        return RunOutput(h, h_before, dt_before)


class _MortalityFromFinalState(nn.Module):
    """Mortality logits (B,) from an ``encoder``'s final state and the descriptors, through a
    ``classifier`` head; both set by the subclass. ``solver_stats`` is the encoder's."""

    @property
    def solver_stats(self) -> dict:
        return self.encoder.solver_stats

    def forward(self, times, values, mask, static, static_mask) -> torch.Tensor:
        h = self.encoder(times, values, mask).h_final
        return self.classifier(torch.cat([h, static, static_mask], dim=-1)).squeeze(-1)


class RecurrentModel(_MortalityFromFinalState):
    """A recurrent encoder with two heads: mortality (from the final state and descriptors)
    and value reconstruction at each time (from the state just before that time).

    ``forward`` returns mortality logits (B,).
    """

    def __init__(
        self,
        input_dim: int,
        static_dim: int,
        hidden_dim: int = 64,
        kind: str = "ode",
        ode_hidden: int = 64,
        solver: SolveConfig | None = None,
        *,
        ode_layers: int = 1,
        gru_units: int = 0,
        head: tuple[int, ...] = (64,),
        dropout: float = 0.3,
    ):
        super().__init__()
        self.encoder = RecurrentEncoder(
            input_dim, hidden_dim, kind, ode_hidden, solver, ode_layers=ode_layers, gru_units=gru_units
        )
        self.classifier = classifier_head(hidden_dim + 2 * static_dim, head, dropout)
        self.readout = nn.Linear(hidden_dim + (1 if kind == "dt" else 0), input_dim)

    def reconstruct(self, times, values, mask, seen_mask) -> torch.Tensor:
        """Predict values (B, K, D) at every time of ``mask`` from what ``seen_mask`` lets it see."""
        out = self.encoder(times, values, mask, update_mask=seen_mask, keep_states=True)
        feats = (
            out.h_before
            if self.encoder.kind == "ode"
            else torch.cat([out.h_before, out.dt_before.unsqueeze(-1)], dim=-1)
        )
        return self.readout(feats)


def ODERNN(
    input_dim: int,
    static_dim: int,
    hidden_dim: int = 64,
    ode_hidden: int = 64,
    solver: SolveConfig | None = None,
    **sizes,
) -> RecurrentModel:
    """ODE-RNN (Rubanova et al. 2019): ODE between observations, masked GRU update at each.
    ``sizes``: ``ode_layers``, ``gru_units``, ``head``, ``dropout`` of :class:`RecurrentModel`."""
    return RecurrentModel(input_dim, static_dim, hidden_dim, "ode", ode_hidden, solver, **sizes)


def GRUDelta(input_dim: int, static_dim: int, hidden_dim: int = 64, **sizes) -> RecurrentModel:
    """GRU-Δt: masked GRU update with Δt since the last observation as an input; no ODE."""
    return RecurrentModel(input_dim, static_dim, hidden_dim, "dt", **sizes)


# ---------------------------------------------------------------- GRU-D


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


# ---------------------------------------------------------------- non-sequential baseline


def summary_features(data) -> np.ndarray:
    """Per-variable mean, min, max, last value and count, then the descriptors: (N, 5D + S).

    Missing statistics (a variable never observed) are NaN, imputed later from the training split.
    """
    v = data.values.detach().cpu().double()
    m = data.mask.detach().cpu().bool()
    count = m.sum(1).double()
    nan = torch.tensor(float("nan"), dtype=v.dtype)
    mean = torch.where(count > 0, (v * m).sum(1) / count.clamp_min(1), nan)
    vmin = torch.where(count > 0, torch.where(m, v, torch.inf).amin(1), nan)
    vmax = torch.where(count > 0, torch.where(m, v, -torch.inf).amax(1), nan)
    k = v.shape[1]
    last_idx = torch.where(m, torch.arange(k).view(1, k, 1), -1).amax(1)  # (N, D)
    last = torch.gather(v, 1, last_idx.clamp_min(0).unsqueeze(1)).squeeze(1)
    last = torch.where(count > 0, last, nan)
    static = data.static.detach().cpu().double()
    static = torch.where(data.static_mask.cpu().bool(), static, nan)
    return torch.cat([mean, vmin, vmax, last, count, static], dim=1).numpy()


class SummaryLogReg:
    """Logistic regression on :func:`summary_features` (impute from train, standardise, L2)."""

    def __init__(self, C: float = 0.1, seed: int = 0):
        from sklearn.impute import SimpleImputer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        self.pipeline = make_pipeline(
            SimpleImputer(strategy="mean", add_indicator=True),
            StandardScaler(),
            LogisticRegression(C=C, max_iter=5000, random_state=seed),
        )

    def fit(self, train) -> "SummaryLogReg":
        self.pipeline.fit(summary_features(train), train.labels.cpu().numpy())
        return self

    def predict_proba(self, data) -> np.ndarray:
        return self.pipeline.predict_proba(summary_features(data))[:, 1]


# ---------------------------------------------------------------- training and evaluation


@dataclass
class FitResult:
    """What one training run produced: test AUC, sizes, seconds, solver work, history."""

    model_name: str
    auc: float
    n_train: int
    n_eval: int
    seconds: float
    epochs: int
    seed: int
    solver: dict = field(default_factory=dict)  # method, step size, total NFE, NFE per forward pass
    history: list[dict] = field(default_factory=list)
    cpu_seconds: float = 0.0  # this process's CPU time: on a shared machine, wall time overstates the cost
    best_epoch: int = 0  # the epoch whose weights were kept (the last one without a validation set)

    def as_dict(self) -> dict:
        return {
            "model": self.model_name,
            "auc": self.auc,
            "n_train": self.n_train,
            "n_eval": self.n_eval,
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "epochs": self.epochs,
            "best_epoch": self.best_epoch,
            "seed": self.seed,
            "solver": self.solver,
            "history": self.history,
        }


def _batches(n: int, batch_size: int, generator: torch.Generator | None):
    order = torch.randperm(n, generator=generator) if generator is not None else torch.arange(n)
    for i in range(0, n, batch_size):
        yield order[i : i + batch_size]


def _batch(data, idx):
    return (data.times, data.values[idx], data.mask[idx], data.static[idx], data.static_mask[idx], data.labels[idx])


@torch.no_grad()
def predict_proba(model: nn.Module, data, batch_size: int = 256) -> np.ndarray:
    """Mortality probabilities (N,) for a normalised set."""
    model.eval()
    out = []
    for idx in _batches(len(data), batch_size, None):
        times, values, mask, static, smask, _ = _batch(data, idx)
        out.append(torch.sigmoid(model(times, values, mask, static, smask)).cpu())
    return torch.cat(out).double().numpy()


def auc(labels, scores) -> float:
    """ROC AUC (scikit-learn)."""
    from sklearn.metrics import roc_auc_score

    y = labels.cpu().numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
    return float(roc_auc_score(y, scores))


def build_model(
    name: str,
    data,
    *,
    hidden_dim: int = 64,
    solver: SolveConfig | None = None,
    seed: int = 0,
    settings: PhysioNetSettings | None = None,
):
    """One of :data:`MODELS`, sized for ``data``, on its device and dtype.

    Give it the (normalised) training split: GRU-D takes its empirical means from ``data``.
    With ``settings`` (:mod:`nodecourse.models.physionet_settings`), the sizes, the solvers and
    the head are the settings' and ``hidden_dim`` is ignored; ``solver``, if given, still sets
    the encoder's solve.
    """
    if name not in MODELS:
        raise ValueError(f"model={name!r} is not one of {MODELS}")
    if name == "summary-logreg":
        return SummaryLogReg(seed=seed)
    torch.manual_seed(seed)
    d, s = data.values.shape[-1], data.static.shape[-1]
    if settings is not None:
        model = _build_from_settings(name, d, s, settings, solver, empirical_means(data) if name == "gru-d" else None)
    elif name == "odernn":
        model = ODERNN(d, s, hidden_dim, solver=solver)
    elif name == "gru-dt":
        model = GRUDelta(d, s, hidden_dim)
    elif name == "gru-d":
        model = GRUD(d, s, hidden_dim, x_mean=empirical_means(data))
    else:
        model = LatentODE(d, s, hidden_dim=hidden_dim, solver=solver)
    return model.to(device=data.values.device, dtype=data.values.dtype)


def settings_solvers(settings: PhysioNetSettings) -> tuple[SolveConfig, SolveConfig]:
    """(encoder, decoder) solves of ``settings``: Euler at ``encoder_step_hours`` for the encoders."""
    step = settings.encoder_step_hours / HORIZON_HOURS
    encoder = SolveConfig(method="euler", step_size=step, rtol=1e-3, atol=1e-4)
    if settings.decoder_method == "euler":
        return encoder, encoder
    return encoder, SolveConfig(method=settings.decoder_method, rtol=settings.decoder_rtol, atol=settings.decoder_atol)


def _build_from_settings(name, d, s, st: PhysioNetSettings, solver, x_mean):
    # The published code sizes every recurrent model's state by --latents (run_models.py:
    # ODE_RNN and Classic_RNN get args.latents); the Latent ODE's encoder by --rec-dims.
    enc_solver, dec_solver = settings_solvers(st)
    enc_solver = solver or enc_solver
    head = {"head": st.classifier_hidden, "dropout": st.classifier_dropout}
    if name == "odernn":
        return ODERNN(
            d, s, st.ode_rnn_hidden, st.ode_units, enc_solver, ode_layers=st.ode_layers, gru_units=st.gru_units, **head
        )
    if name == "gru-dt":
        return GRUDelta(d, s, st.ode_rnn_hidden, gru_units=st.gru_units, **head)
    if name == "gru-d":
        return GRUD(d, s, st.ode_rnn_hidden, x_mean=x_mean, **head)
    return LatentODE(
        d,
        s,
        st.latent_dim,
        st.rec_dim,
        st.ode_units,
        enc_solver,
        st.obs_std,
        st.ce_weight,
        ode_layers=st.ode_layers,
        gru_units=st.gru_units,
        decoder_solver=dec_solver,
        **head,
    )


def kl_weight(settings: PhysioNetSettings | None, epoch: int) -> float:
    """The KL term's weight in ``epoch`` (0-based): 1 without a warm-up, else the published schedule
    (0 for ``kl_warmup_epochs`` epochs, then 1 - ``kl_rate`` ** (epoch - warm-up))."""
    if settings is None or settings.kl_warmup_epochs == 0:
        return 1.0
    if epoch < settings.kl_warmup_epochs:
        return 0.0
    return 1.0 - settings.kl_rate ** (epoch - settings.kl_warmup_epochs)


def make_optimizer(model: nn.Module, settings: PhysioNetSettings, epochs: int):
    """(optimizer, per-epoch scheduler or None, per-iteration scheduler or None) for ``settings``."""
    cls = torch.optim.Adamax if settings.optimizer == "adamax" else torch.optim.Adam
    opt = cls(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    if settings.lr_schedule == "cosine":
        return opt, torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs)), None
    rate, floor = settings.lr_decay_per_iteration, settings.lr_floor_fraction
    # published update_learning_rate: lr <- max(lr * rate, floor * lr0) after every batch
    per_step = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: max(rate**it, floor))
    return opt, None, per_step


def fit(
    name: str,
    train,
    test,
    *,
    val=None,
    epochs: int | None = None,
    batch_size: int | None = None,
    lr: float = 3e-3,
    weight_decay: float = 1e-3,
    hidden_dim: int = 64,
    solver: SolveConfig | None = None,
    seed: int = 0,
    progress: bool = True,
    eval_every: int = 0,
    settings: PhysioNetSettings | None = None,
) -> tuple[object, FitResult]:
    """Train ``name`` on the normalised ``train`` set and score AUC on ``test``.

    With a validation set ``val`` (patients of the training split, never of ``test``), the
    weights of the epoch with the best validation AUC are kept; without one, those of the last
    epoch. The test set never chooses anything. ``eval_every > 0`` also records the test AUC
    every that many epochs in the history, for plots only.

    ``settings`` (e.g. :data:`~nodecourse.models.physionet_settings.PUBLISHED`) sets the sizes,
    solvers, optimiser, learning-rate schedule, clipping, the Latent ODE's loss weights and KL
    schedule; ``lr``, ``weight_decay`` and ``hidden_dim`` are then ignored, and ``epochs`` and
    ``batch_size`` default to the settings'. Without settings: Adam with cosine decay, 10
    epochs, batches of 64 (the course's behaviour before the settings existed).
    """
    if settings is None:
        epochs = 10 if epochs is None else epochs
        batch_size = 64 if batch_size is None else batch_size
    else:
        epochs = settings.epochs if epochs is None else epochs
        batch_size = settings.batch_size if batch_size is None else batch_size
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
        raise ValueError(f"epochs={epochs!r}: give a non-negative integer")
    for split_name, split in (("train", train), ("test", test), ("val", val)):
        if split is not None and not getattr(split, "normalized", False):
            raise ValueError(f"{split_name} is not normalised; apply Normalizer.fit(train).transform(...) first")
    start, cpu_start = time.perf_counter(), time.process_time()
    model = build_model(name, train, hidden_dim=hidden_dim, solver=solver, seed=seed, settings=settings)
    if name == "summary-logreg":
        model.fit(train)
        score = auc(test.labels, model.predict_proba(test))
        return model, FitResult(
            name,
            score,
            len(train),
            len(test),
            time.perf_counter() - start,
            0,
            seed,
            cpu_seconds=time.process_time() - cpu_start,
        )

    if settings is None:
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        per_epoch, per_step, clip = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs)), None, 5.0
    else:
        (opt, per_epoch, per_step), clip = make_optimizer(model, settings, epochs), settings.clip_grad_norm
    n_batches = math.ceil(len(train) / batch_size)
    n_forward = 0
    best = {"auc": -1.0, "state": None, "epoch": epochs}

    def loss_on_batch(idx):
        nonlocal n_forward
        times, values, mask, static, smask, y = _batch(train, idx)
        n_forward += 1
        if isinstance(model, LatentODE):
            model.kl_coef = kl_weight(settings, (n_forward - 1) // n_batches)
            return model.loss(times, values, mask, static, smask, y)[0], {}
        logits = model(times, values, mask, static, smask)
        return nn.functional.binary_cross_entropy_with_logits(logits, y), {}

    def on_epoch(row, model):
        # The validation split (patients of the training set) picks the epoch; the test set never does.
        row["train_loss"] = row["loss"]
        row["nfe"] = model.solver_stats["nfe"]
        if val is not None:
            row["val_auc"] = auc(val.labels, predict_proba(model, val))
            if row["val_auc"] > best["auc"]:
                best.update(
                    auc=row["val_auc"],
                    epoch=row["epoch"],
                    state={k: v.detach().clone() for k, v in model.state_dict().items()},
                )
        if eval_every and row["epoch"] % eval_every == 0:
            row["test_auc"] = auc(test.labels, predict_proba(model, test))

    history = train_epochs(
        model,
        loss_on_batch,
        seeded_batches(len(train), batch_size, seed=seed, device=train.values.device),
        epochs=epochs,
        optimizer=opt,
        scheduler=per_epoch,
        clip_grad_norm=clip,
        on_epoch=on_epoch,
        on_step=(lambda logs: per_step.step()) if per_step is not None else None,
        progress=progress,
        desc=f"{name} seed {seed}",
    )
    best_state, best_epoch = best["state"], best["epoch"]
    if best_state is not None:
        model.load_state_dict(best_state)
    train_nfe = model.solver_stats["nfe"]
    score = auc(test.labels, predict_proba(model, test))
    seconds = time.perf_counter() - start
    solver_info = {}
    if name in ODE_MODELS:
        cfg = model.encoder.solver
        solver_info = {
            "method": cfg.method,
            "step_size_hours": None if cfg.step_size is None else cfg.step_size * HORIZON_HOURS,
            "train_nfe": train_nfe,
            "nfe_per_training_batch": train_nfe / max(n_forward, 1),
        }
        if isinstance(model, LatentODE):  # its decoder solves apart from the encoder
            solver_info["decoder_method"] = model.solver.method
    result = FitResult(
        name,
        score,
        len(train),
        len(test),
        seconds,
        epochs,
        seed,
        solver_info,
        history,
        cpu_seconds=time.process_time() - cpu_start,
    )
    result.best_epoch = best_epoch if val is not None else epochs
    return model, result


# ---------------------------------------------------------------- interpolation


def holdout_mask(mask: torch.Tensor, fraction: float = 0.5, seed: int = 0) -> torch.Tensor:
    """Hide a seeded ``fraction`` of each patient's observation *times*: returns the seen mask (B, K, D)."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction={fraction!r}: give a fraction in (0, 1)")
    g = torch.Generator().manual_seed(seed)
    keep = (torch.rand(mask.shape[:2], generator=g) >= fraction).to(mask.device, mask.dtype)
    return mask * keep.unsqueeze(-1)


def interpolation_mse(model: nn.Module, data, *, fraction: float = 0.5, seed: int = 0, batch_size: int = 256) -> float:
    """Mean squared error (normalised units) on held-out observation times of ``data``."""
    model.eval()
    err, count = 0.0, 0.0
    with torch.no_grad():
        for idx in _batches(len(data), batch_size, None):
            values, mask = data.values[idx], data.mask[idx]
            seen = holdout_mask(mask, fraction, seed + int(idx[0]))
            target = mask - seen
            pred = model.reconstruct(data.times, values, mask, seen)
            err += float((((pred - values) ** 2) * target).sum())
            count += float(target.sum())
    return err / max(count, 1.0)


def fit_interpolation(
    name: str,
    train,
    *,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 3e-3,
    hidden_dim: int = 64,
    solver: SolveConfig | None = None,
    fraction: float = 0.5,
    seed: int = 0,
    progress: bool = True,
) -> tuple[nn.Module, dict]:
    """Train ``odernn`` or ``gru-dt`` to predict held-out observation times from the rest."""
    if name not in ("odernn", "gru-dt"):
        raise ValueError(f"model={name!r}: interpolation is measured for 'odernn' and 'gru-dt'")
    model = build_model(name, train, hidden_dim=hidden_dim, solver=solver, seed=seed)
    start = time.perf_counter()
    step = 0

    def loss_on_batch(idx):
        nonlocal step
        values, mask = train.values[idx], train.mask[idx]
        seen = holdout_mask(mask, fraction, seed * 100_003 + step)
        step += 1
        target = mask - seen
        pred = model.reconstruct(train.times, values, mask, seen)
        return (((pred - values) ** 2) * target).sum() / target.sum().clamp_min(1), {}

    train_epochs(
        model,
        loss_on_batch,
        seeded_batches(len(train), batch_size, seed=seed, device=train.values.device),
        epochs=epochs,
        optimizer=torch.optim.Adam(model.parameters(), lr=lr),
        clip_grad_norm=5.0,
        progress=progress,
        desc=f"{name} interpolation",
    )
    return model, {"seconds": time.perf_counter() - start, "nfe": model.solver_stats["nfe"]}
