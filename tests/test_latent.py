"""ODE-RNN, GRU-Δt, latent ODE and the summary-statistics baseline (nodecourse.latent)."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from nodecourse import SolveConfig, latent
from nodecourse.data import physionet


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
    alone = torch.cat([model.encoder(train.times, v[i:i + 1], m[i:i + 1]).h_final for i in range(6)])
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
    b = latent._batch(train, torch.arange(8))
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
    _, result = latent.fit(name, train, test, epochs=2, batch_size=32, progress=False)
    assert 0.0 <= result.auc <= 1.0 and result.n_train == len(train) and result.n_eval == len(test)
    assert result.seconds > 0
    if name in ("odernn", "latent-ode"):
        assert result.solver["method"] == "euler" and result.solver["train_nfe"] > 0
    if name != "summary-logreg":
        assert len(result.history) == 2 and np.isfinite(result.history[-1]["train_loss"])


def test_models_learn_the_synthetic_signal(small):
    """Deaths depend on a hidden severity; every model must do much better than chance."""
    train, test = small
    for name in ("summary-logreg", "odernn"):
        _, result = latent.fit(name, train, test, epochs=6, batch_size=32, progress=False)
        assert result.auc > 0.7, (name, result.auc)


def test_float64_and_a_different_solver(small):
    train, test = small
    train64 = train.to(dtype=torch.float64)
    model = latent.build_model("odernn", train64, solver=SolveConfig(method="rk4", step_size=1.0 / 48))
    assert next(model.parameters()).dtype == torch.float64
    logits = model(*latent._batch(train64, torch.arange(4))[:5])
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
        latent.fit("lstm", train, test)
    with pytest.raises(ValueError, match="epochs=-1"):
        latent.fit("odernn", train, test, epochs=-1)
    with pytest.raises(ValueError, match="kind='cnn'"):
        latent.RecurrentEncoder(3, 4, kind="cnn")
    raw = dataclasses.replace(train, normalized=False)
    with pytest.raises(ValueError, match="train is not normalised"):
        latent.fit("odernn", raw, test)
