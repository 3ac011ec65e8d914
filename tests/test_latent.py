"""ODE-RNN, GRU-Δt, latent ODE and the summary-statistics baseline (nodecourse.models.latent)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from nodecourse import SolveConfig
from nodecourse.data import physionet
from nodecourse.models import latent


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A normalised synthetic set of 160 patients on a 2-hour grid, split 120/40."""
    d = tmp_path_factory.mktemp("pn")
    src = physionet.synthetic(160, seed=4, directory=d)
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        mp.setenv("NODECOURSE_CACHE", str(d / "cache"))
        data = physionet.load(path=src.directory, quantization=2.0, progress=False, verbose=False)
    parts = data.split(test=0.25, seed=0)
    norm = physionet.Normalizer.fit(parts["train"])
    return norm.transform(parts["train"]), norm.transform(parts["test"])


def test_masked_update_leaves_unobserved_patients_alone():
    torch.manual_seed(0)
    upd = latent.MaskedGRUUpdate(3, 5)
    h = torch.randn(4, 5)
    x = torch.randn(4, 3)
    m = torch.tensor([[1, 0, 0], [0, 0, 0], [1, 1, 1], [0, 0, 0]], dtype=torch.float32)
    out = upd(h, x * m, m)
    assert torch.equal(out[1], h[1]) and torch.equal(out[3], h[3])
    assert not torch.allclose(out[0], h[0]) and not torch.allclose(out[2], h[2])
    # Values behind a zero mask cannot leak in.
    x2 = x.clone()
    x2[0, 1:] = 1e6
    assert torch.allclose(upd(h, x2 * m, m), out)


def test_odernn_batch_equals_patients_one_at_a_time(small):
    """Batching over the union of times must not change any patient's state (float64)."""
    train, _ = small
    model = latent.build_model("odernn", train).double()
    torch.nn.init.normal_(model.encoder.func.net[-1].weight, std=0.3)  # a non-trivial ODE
    idx = torch.arange(6)
    v, m = train.values[idx].double(), train.mask[idx]
    m = m.double()
    together = model.encoder(train.times, v, m).h_final
    alone = torch.cat([model.encoder(train.times, v[i : i + 1], m[i : i + 1]).h_final for i in range(6)])
    torch.testing.assert_close(together, alone, rtol=1e-10, atol=1e-10)
    assert model.solver_stats["nfe"] > 0 and model.solver_stats["n_solves"] > 0


def test_gru_dt_sees_time_since_last_observation(small):
    train, _ = small
    model = latent.build_model("gru-dt", train)
    v, m = train.values[:1], train.mask[:1]
    out = model.encoder(train.times, v, m, keep_states=True)
    observed = (m[0].sum(-1) > 0).nonzero().flatten()
    dts = out.dt_before[0, observed] * latent.HORIZON_HOURS
    gaps = torch.diff(train.times[observed], prepend=train.times[:1])
    torch.testing.assert_close(dts, gaps, rtol=1e-5, atol=1e-4)
    assert model.solver_stats["nfe"] == 0  # no ODE in the discrete baseline


def test_reverse_pass_and_latent_ode_loss_backpropagates(small):
    train, _ = small
    model = latent.build_model("latent-ode", train)
    b = latent.patient_batch(train, torch.arange(8))
    loss, parts = model.loss(*b)
    loss.backward()
    assert torch.isfinite(loss) and parts["neg_elbo"] == parts["neg_elbo"]
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert model.solver_stats["nfe"] > 0


def test_summary_features_by_hand():
    class D:
        values = torch.tensor([[[1.0, 0.0], [3.0, 5.0], [2.0, 0.0]]])
        mask = torch.tensor([[[1.0, 0.0], [1.0, 1.0], [1.0, 0.0]]])
        static = torch.tensor([[60.0]])
        static_mask = torch.tensor([[1.0]])

    f = latent.summary_features(D)
    # mean, min, max, last, count for variables 0 and 1, then the descriptor
    np.testing.assert_allclose(f[0], [2.0, 5.0, 1.0, 5.0, 3.0, 5.0, 2.0, 5.0, 3.0, 1.0, 60.0])
    D.mask = torch.zeros(1, 3, 2)
    f = latent.summary_features(D)
    assert np.isnan(f[0, :8]).all() and (f[0, 8:10] == 0).all()


@pytest.mark.parametrize("name", latent.MODELS)
def test_fit_every_model_reports_auc_seconds_and_solver_work(small, name):
    train, test = small
    _, result = latent.fit_mortality(name, train, test, epochs=2, batch_size=32, progress=False)
    assert 0.0 <= result.auc <= 1.0 and result.n_train == len(train) and result.n_eval == len(test)
    assert result.seconds > 0
    if name in ("odernn", "latent-ode"):
        assert result.solver["method"] == "euler" and result.solver["train_nfe"] > 0
    if name != "summary-logreg":
        assert len(result.history) == 2 and np.isfinite(result.history[-1]["train_loss"])


def test_models_learn_the_synthetic_signal(small):
    """Deaths depend on a hidden severity; every model must do much better than chance."""
    train, test = small
    for name in ("summary-logreg", "odernn", "gru-d"):
        _, result = latent.fit_mortality(name, train, test, epochs=6, batch_size=32, progress=False)
        assert result.auc > 0.7, (name, result.auc)


def test_float64_and_a_different_solver(small):
    train, test = small
    train64 = train.to(dtype=torch.float64)
    model = latent.build_model("odernn", train64, solver=SolveConfig(method="rk4", step_size=1.0 / 48))
    assert next(model.parameters()).dtype == torch.float64
    logits = model(*latent.patient_batch(train64, torch.arange(4))[:5])
    assert logits.dtype == torch.float64 and logits.shape == (4,)
    # rk4: 4 evaluations a step, so 4x Euler's NFE on the same grid
    assert model.solver_stats["nfe"] == 4 * model.solver_stats["n_steps"]


def test_interpolation_mse_and_holdout(small):
    train, test = small
    seen = latent.holdout_mask(test.mask, 0.5, seed=1)
    assert torch.all(seen <= test.mask) and 0 < seen.sum() < test.mask.sum()
    for name in ("odernn", "gru-dt"):
        model, info = latent.fit_interpolation(name, train, epochs=1, batch_size=32, progress=False)
        mse = latent.interpolation_mse(model, test)
        assert np.isfinite(mse) and mse > 0
    with pytest.raises(ValueError, match="fraction=1.0"):
        latent.holdout_mask(test.mask, 1.0)


def test_bad_arguments_are_named(small):
    train, test = small
    with pytest.raises(ValueError, match="model='lstm'"):
        latent.fit_mortality("lstm", train, test)
    with pytest.raises(ValueError, match="epochs=-1"):
        latent.fit_mortality("odernn", train, test, epochs=-1)
    with pytest.raises(ValueError, match="kind='cnn'"):
        latent.RecurrentEncoder(3, 4, kind="cnn")
    raw = dataclasses.replace(train, normalized=False)
    with pytest.raises(ValueError, match="train is not normalised"):
        latent.fit_mortality("odernn", raw, test)


# ---------------------------------------------------------------- GRU-D


def test_time_since_observed_by_hand():
    """δ of Che et al. (eq. 2): time since the variable's last observation strictly before now;
    a variable not yet seen counts from the patient's first observation (δ = 0 there)."""
    t = torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0])
    m = torch.zeros(2, 5, 2)
    m[0, 1, 0] = m[0, 3, 1] = m[0, 4, 0] = 1
    m[1, 2, 1] = 1
    delta = latent.time_since_observed(t, m)
    assert delta.shape == (2, 5, 2)
    torch.testing.assert_close(delta[0, [1, 3, 4]], torch.tensor([[0.0, 0.0], [2.0, 2.0], [3.0, 1.0]]))
    torch.testing.assert_close(delta[1, 2], torch.zeros(2))
    v = torch.arange(20.0).view(2, 5, 2) * m
    last = latent.last_observed_values(v, m, torch.tensor([-1.0, -2.0]))
    torch.testing.assert_close(last[0, 4], torch.tensor([2.0, 7.0]))  # var 0 seen at t=1 (value 2), var 1 at t=3
    torch.testing.assert_close(last[0, 1], torch.tensor([-1.0, -2.0]))  # nothing before: the mean


def test_grud_shapes_and_means_from_the_training_split(small):
    train, test = small
    model = latent.build_model("gru-d", train)
    assert isinstance(model, latent.GRUD)
    torch.testing.assert_close(model.encoder.x_mean, latent.empirical_means(train))
    b = latent.patient_batch(test, torch.arange(5))
    assert model(*b[:5]).shape == (5,)
    assert model.encoder(test.times, b[1], b[2]).h_final.shape == (5, model.encoder.hidden_dim)
    assert model.solver_stats["nfe"] == 0  # no ODE in GRU-D


def test_grud_decays_none_at_zero_gap_and_to_the_mean_at_large_gaps():
    torch.manual_seed(0)
    enc = latent.GRUDEncoder(3, 4, x_mean=torch.tensor([0.5, -1.0, 2.0]))
    gx, gh = enc.decays(torch.zeros(2, 3))
    assert torch.equal(gx, torch.ones(2, 3)) and torch.equal(gh, torch.ones(2, 4))  # biases start at 0
    x_last = torch.tensor([[3.0, 3.0, 3.0]])
    m = torch.tensor([[1.0, 0.0, 0.0]])
    x = torch.tensor([[7.0, 123.0, 123.0]]) * m
    assert torch.equal(enc.impute(x, m, x_last, gx[:1]), torch.tensor([[7.0, 3.0, 3.0]]))  # no decay: last value
    with torch.no_grad():
        enc.input_decay_weight.fill_(1.0)
        enc.hidden_decay.weight.fill_(1.0)
    with torch.no_grad():
        gx, gh = enc.decays(torch.full((1, 3), 1e3))
    assert float(gx.max()) < 1e-12 and float(gh.max()) < 1e-12
    torch.testing.assert_close(enc.impute(x, m, x_last, gx), torch.tensor([[7.0, -1.0, 2.0]]))  # observed, mean, mean
    # Negative pre-activations are cut at 0: never a growth (γ <= 1).
    with torch.no_grad():
        enc.input_decay_bias.fill_(-5.0)
    assert torch.equal(enc.decays(torch.full((1, 3), 0.1))[0], torch.ones(1, 3))


def test_grud_hidden_state_forgotten_after_a_long_gap():
    """With γ_h -> 0 the update after a long gap is the cell's update of a zero state."""
    torch.manual_seed(1)
    enc = latent.GRUDEncoder(2, 3).double()
    with torch.no_grad():
        enc.hidden_decay.weight.fill_(1e4)
    times = torch.tensor([0.0, 1.0, 47.0, 48.0], dtype=torch.float64)
    values = torch.randn(1, 4, 2, dtype=torch.float64)
    mask = torch.tensor([[[1.0, 1.0], [0, 0], [0, 0], [1.0, 0.0]]], dtype=torch.float64)
    h = enc(times, values * mask, mask).h_final
    delta = latent.time_since_observed(times / latent.HORIZON_HOURS, mask)[:, 3]
    gx, _ = enc.decays(delta)
    x_hat = enc.impute(values[:, 3] * mask[:, 3], mask[:, 3], values[:, 0], gx)
    expected = enc.cell(torch.cat([x_hat, mask[:, 3]], -1), torch.zeros(1, 3, dtype=torch.float64))
    torch.testing.assert_close(h, expected)


def test_grud_masks_unobserved_values_and_patients(small):
    train, _ = small
    model = latent.build_model("gru-d", train).double()
    v, m = train.values[:6].double(), train.mask[:6].double()
    h = model.encoder(train.times, v, m).h_final
    leaky = v + 1e3 * (1 - m)  # values behind a zero mask must not reach the model
    torch.testing.assert_close(model.encoder(train.times, leaky, m).h_final, h)
    alone = torch.cat([model.encoder(train.times, v[i : i + 1], m[i : i + 1]).h_final for i in range(6)])
    torch.testing.assert_close(h, alone, rtol=1e-10, atol=1e-10)  # batching changes no patient's state
    empty = torch.zeros_like(m[:1])
    assert torch.equal(
        model.encoder(train.times, v[:1] * 0, empty).h_final,
        torch.zeros(1, model.encoder.hidden_dim, dtype=torch.float64),
    )


def test_grud_one_training_step_moves_the_decay_parameters(small):
    train, _ = small
    model = latent.build_model("gru-d", train)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    times, values, mask, static, smask, y = latent.patient_batch(train, torch.arange(32))
    before = {k: p.detach().clone() for k, p in model.named_parameters()}
    loss = torch.nn.functional.binary_cross_entropy_with_logits(model(times, values, mask, static, smask), y)
    loss.backward()
    for name in ("encoder.input_decay_weight", "encoder.hidden_decay.weight"):
        g = dict(model.named_parameters())[name].grad
        assert g is not None and torch.isfinite(g).all() and float(g.abs().sum()) > 0, name
    opt.step()
    assert not torch.equal(before["encoder.input_decay_weight"], model.encoder.input_decay_weight)
