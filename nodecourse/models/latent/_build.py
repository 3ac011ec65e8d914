"""The model names and how each is built: :data:`MODELS`, :func:`build_model`.

:func:`build_model` sizes one of :data:`MODELS` for a (normalised) set, from the course's defaults
or from a :class:`~nodecourse.models._physionet_settings.PhysioNetSettings`;
:func:`settings_solvers` gives the settings' encoder and decoder solves.
"""

from __future__ import annotations

import torch

from nodecourse.data.physionet import HORIZON_HOURS
from nodecourse.models._physionet_settings import PhysioNetSettings
from nodecourse.models.latent._grud import GRUD, empirical_means
from nodecourse.models.latent._latent_ode import LatentODE
from nodecourse.models.latent._recurrent import ODERNN, GRUDelta
from nodecourse.models.latent._summary import SummaryLogReg
from nodecourse.solvers import SolveConfig

__all__ = ["MODELS", "ODE_MODELS", "build_model", "settings_solvers"]

MODELS = ("odernn", "latent-ode", "gru-dt", "gru-d", "summary-logreg")
ODE_MODELS = ("odernn", "latent-ode")  # the models that call a solver (and report its work)


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
    With ``settings`` (:mod:`nodecourse.models._physionet_settings`), the sizes, the solvers and
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
