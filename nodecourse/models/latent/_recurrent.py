"""ODE-RNN and GRU-Δt: one recurrent encoder over a batch's union of observation times.

- :class:`RecurrentEncoder`: ``kind="ode"`` (ODE-RNN: the state follows an ODE between
  observation times) or ``kind="dt"`` (GRU-Δt: the time since the last observation is an input);
  ``times`` (K,), ``values`` and ``mask`` (B, K, D) -> :class:`RunOutput`.
- :class:`RecurrentModel`: the encoder with a mortality head (logits (B,)) and a value readout.
- :func:`ODERNN` and :func:`GRUDelta`: the two configurations of :class:`RecurrentModel`.
- ``_MortalityFromFinalState``: the mortality head on an encoder's final state (GRU-D shares it).
"""

from __future__ import annotations

import torch
from torch import nn

from nodecourse.models.latent._parts import (
    DEFAULT_SOLVER,
    GatedMLPUpdate,
    MaskedGRUUpdate,
    ODEFunc,
    RunOutput,
    _scaled_times,
    _stats_zero,
    classifier_head,
)
from nodecourse.solvers import SolveConfig, odeint
from nodecourse.solvers import _observers as observers

__all__ = ["ODERNN", "GRUDelta", "RecurrentEncoder", "RecurrentModel"]


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
