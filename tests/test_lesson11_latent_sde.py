"""Lesson 11's latent SDE beside a latent ODE: shapes, the KL path term, the findings' fields, a tiny run."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from snapshot_support import assert_snapshot

from nodecourse.lessons.lesson11 import latent_sde_findings as F
from nodecourse.lessons.lesson11 import latent_sde_models as M
from nodecourse.lessons.lesson11 import latent_sde_studies as S

torch.set_num_threads(1)

TINY = dataclasses.replace(S.QUICK_LATENT_SDE, n_train=32, n_test=16, seeds=(0, 1), iterations=3, batch=8, samples=20)


def _window(batch=5, k=5):
    ts = torch.linspace(0.0, 1.0, k)
    return torch.randn(batch, k, 1, generator=torch.Generator().manual_seed(0)), ts


def test_encoder_shapes():
    xs, _ = _window()
    mean, log_std, ctx = M.PathEncoder(1, 8, 3, 2)(xs)
    assert mean.shape == log_std.shape == (5, 3)
    assert ctx.shape == (5, 5, 2)  # (K, batch, context)
    assert M.PathEncoder(1, 8, 3, 0)(xs)[2] is None


@pytest.mark.parametrize("cls", [M.LatentSDE, M.LatentODE])
def test_window_predict_and_elbo_shapes(cls):
    torch.manual_seed(0)
    model = cls(1, 3, 8, 2) if cls is M.LatentSDE else cls(1, 3, 8, 6)
    xs, ts = _window()
    z0, kl0, ctx = model.start(xs)
    zs, kl_path = model.window(z0, ctx, ts, seed=0)
    assert zs.shape == (5, 5, 3) and kl_path.shape == (5,) and kl0.shape == (5,)
    assert bool((kl0 >= 0).all()) and bool((kl_path >= 0).all())
    loss, loglik, kl = model.elbo(xs, ts, seed=1)
    assert loss.dim() == 0 and torch.isfinite(loss) and kl.item() >= 0
    future = torch.tensor([1.25, 1.5])
    draws = model.predict(xs, ts, future, samples=4, seed=2)
    assert draws.shape == (4, 5, 2, 1)


def test_kl_path_term_is_zero_when_posterior_and_prior_drifts_are_equal():
    torch.manual_seed(0)
    model = M.LatentSDE(1, 3, 8, 0)  # no context: the posterior drift reads [z] as the prior's does
    model.posterior_drift.load_state_dict(model.prior_drift.state_dict())
    xs, ts = _window()
    z0, _, ctx = model.start(xs)
    assert ctx is None
    _, kl_path = model.window(z0, ctx, ts, seed=0)
    assert torch.equal(kl_path, torch.zeros(5))
    # and it is not zero once they differ (the check can fail)
    with torch.no_grad():
        model.posterior_drift[-1].bias.add_(0.5)
    assert bool((model.window(z0, ctx, ts, seed=0)[1] > 0).all())


def test_kl_path_term_is_the_integral_of_half_u_squared():
    """With constant drifts the path KL is 0.5 * |(f_post - h) / g|^2 * T exactly (g constant when a = 0)."""
    torch.manual_seed(0)
    model = M.LatentSDE(1, 2, 4, 0)
    with torch.no_grad():
        for net, value in ((model.posterior_drift, 0.3), (model.prior_drift, -0.1)):
            net[-1].weight.zero_()
            net[-1].bias.fill_(value)
    z0 = torch.zeros(3, 2)
    ts = torch.linspace(0.0, 1.0, 5)
    _, kl_path = model.window(z0, None, ts, seed=0)
    g = torch.nn.functional.softplus(torch.tensor(-1.0)) + 1e-3
    expected = 0.5 * 2 * (0.4 / g) ** 2 * 1.0
    assert torch.allclose(kl_path, expected.expand(3), rtol=1e-5)


def test_the_latent_ode_is_matched_in_parameters():
    sde = S.build(S.QUICK_LATENT_SDE, "latent SDE", 0)
    ode = S.build(S.QUICK_LATENT_SDE, "latent ODE", 0)
    n_sde, n_ode = M.n_parameters(sde), M.n_parameters(ode)
    assert abs(n_sde - n_ode) / n_sde < 0.05
    with pytest.raises(ValueError, match="model="):
        S.build(S.QUICK_LATENT_SDE, "latent GRU", 0)


def test_ou_data_has_its_stationary_spread_and_the_oracle_covers():
    cfg = dataclasses.replace(S.QUICK_LATENT_SDE, x0_range=0.0)
    data = S.ou_data(cfg, 4000, seed=3)
    assert data.observed.shape == data.states.shape == (4000, 9)
    # X(0) = 0: Var X(t) = sigma^2 (1 - exp(-2 theta t)) / (2 theta)
    t = float(data.times[-1])
    var = cfg.sigma**2 * (1 - math.exp(-2 * cfg.theta * t)) / (2 * cfg.theta)
    assert data.states[:, -1].var().item() == pytest.approx(var, rel=0.1)
    lo, hi = S.oracle_band(cfg, data)
    truth, _ = data.future()
    inside = ((truth >= lo) & (truth <= hi)).double().mean().item()
    assert inside == pytest.approx(0.9, abs=0.02)


def test_band_of_and_bad_input():
    draws = torch.arange(101.0).reshape(101, 1)
    lo, mid, hi = S.band_of(draws, 0.9)
    assert (lo.item(), mid.item(), hi.item()) == (5.0, 50.0, 95.0)
    with pytest.raises(ValueError, match="window"):
        dataclasses.replace(S.QUICK_LATENT_SDE, window=3.0)
    with pytest.raises(ValueError, match="xs must have shape"):
        M.LatentSDE().elbo(torch.zeros(3, 4), torch.zeros(4), seed=0)
    with pytest.raises(ValueError, match="future"):
        xs, ts = _window()
        M.LatentODE().predict(xs, ts, torch.tensor([0.5]), samples=2, seed=0)


def _study(**runs):
    """A study with given per-seed coverages (model -> tuple), for the findings' rules."""
    rows = tuple(
        S.CoverageRun(model, seed, 100, cov, 1.0, 0.0, 0.0, 0.0)
        for model, covs in runs.items()
        for seed, cov in enumerate(covs)
    )
    return S.LatentSDEStudy(S.QUICK_LATENT_SDE, rows, 0.9, 1.4, (0.0,), 1, (), ())


def test_findings_are_typed_fields():
    met = F.LatentSDEFindings.from_study(_study(**{"latent SDE": (0.89, 0.9, 0.91), "latent ODE": (0.3, 0.31, 0.29)}))
    assert met.sde_near_nominal is True and met.ode_well_below is True and met.gap_above_zero is True
    assert met.sde.mean == pytest.approx(0.9) and met.gap.lo > 0
    missed = F.LatentSDEFindings.from_study(_study(**{"latent SDE": (0.7, 0.72, 0.71), "latent ODE": (0.8, 0.85, 0.9)}))
    assert missed.sde_near_nominal is False and missed.ode_well_below is False and missed.gap_above_zero is False
    one = F.LatentSDEFindings.from_study(_study(**{"latent SDE": (0.9,), "latent ODE": (0.3,)}))
    assert one.sde is None and one.sde_near_nominal is None
    assert_snapshot("lesson11.latent-sde-met", met.markdown())
    assert_snapshot("lesson11.latent-sde-missed", missed.markdown())
    assert_snapshot("lesson11.latent-sde-one-seed", one.markdown())


def test_a_tiny_run_end_to_end():
    study = S.latent_sde_study(TINY)
    assert [r.model for r in study.runs] == list(S.MODELS) * 2
    for r in study.runs:
        assert 0.0 <= r.coverage <= 1.0 and r.width > 0 and math.isfinite(r.log_likelihood)
    assert len(study.bands) == 2 and len(study.observed) == S.FIGURE_PATHS
    assert len(study.bands[0].lo[0]) == len(study.times) - study.n_window
    findings = F.LatentSDEFindings.from_study(study)
    assert findings.seeds == 2 and findings.sde is not None
    assert study is S.latent_sde_study(TINY)  # cached
    fig = F.plot_forecast_bands(study)
    assert len(fig.data) == S.FIGURE_PATHS * 3
