"""The published and course settings for lesson 5 (nodecourse.models._physionet_settings), the models
they build, the fast ODE-RNN pass, and `nodecourse physionet --settings published`."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest
import torch
from physionet_fixtures import needs_set_a, synthetic_set

from nodecourse.course import physionet_cmd
from nodecourse.data import physionet
from nodecourse.models import _physionet_settings as ps
from nodecourse.models import latent


def run(argv):
    parser = argparse.ArgumentParser()
    physionet_cmd.add_arguments(parser)
    return physionet_cmd.main(parser.parse_args(argv))


@pytest.fixture(scope="module")
def hourly(tmp_path_factory):
    """A normalised synthetic set of 60 patients on a 1-hour grid."""
    data = synthetic_set(tmp_path_factory.mktemp("pn_settings"), 60, seed=3, quantization=1.0)
    return physionet.Normalizer.fit(data).transform(data)


# ------------------------------------------------------------------ the config


@pytest.mark.parametrize("settings", [ps.PHYSIONET_PUBLISHED, ps.PHYSIONET_COURSE], ids=["published", "course"])
def test_every_value_carries_a_source(settings):
    for name in ps.PhysioNetSettings.field_names():
        assert settings.source(name).strip(), name
    assert [row["setting"] for row in settings.table()] == list(ps.PhysioNetSettings.field_names())


def test_published_sources_name_the_authors_code_and_the_values_match_it():
    p = ps.PHYSIONET_PUBLISHED
    for name in ps.PhysioNetSettings.field_names():
        if name != "name":
            assert ps.LATENT_ODE_REPO in p.source(name), name
    assert (p.latent_dim, p.rec_dim, p.ode_units, p.ode_layers, p.gru_units) == (20, 20 * 2, 50, 3, 50)
    assert (p.optimizer, p.lr, p.lr_decay_per_iteration, p.batch_size, p.epochs) == ("adamax", 1e-2, 0.999, 50, 100)
    assert p.quantization_hours == pytest.approx(1 / 60) and p.classifier_hidden == (300, 300)
    assert "0.016" in p.source("quantization_hours") and "3,200" in p.source("train_patients")


def test_what_the_course_does_not_follow_is_written_down():
    missing = ps.PHYSIONET_PUBLISHED.not_followed
    assert {"set B", "normalisation", "time scale", "compute"} <= set(missing)
    assert "set A only" in missing["set B"] and ps.PHYSIONET_COURSE.not_followed == {}


def test_bad_names_and_fields_are_refused_with_the_choices():
    with pytest.raises(ValueError, match=r"settings='paper': use one of \('course', 'published'\)"):
        ps.physionet_settings("paper")
    with pytest.raises(KeyError, match="'lr_max' is not a field"):
        ps.PHYSIONET_PUBLISHED.source("lr_max")
    with pytest.raises(ValueError, match="optimizer='sgd'"):
        dataclasses.replace(ps.PHYSIONET_PUBLISHED, optimizer="sgd")


def test_markdown_lists_every_value_and_what_is_not_followed():
    text = ps.PHYSIONET_PUBLISHED.to_markdown()
    assert text.count("\n| `") == len(ps.PhysioNetSettings.field_names())
    assert "| `quantization_hours` | 0.01667 |" in text and "*set B*" in text
    assert "Not followed" not in ps.PHYSIONET_COURSE.to_markdown()


def test_quick_keeps_everything_but_the_epochs():
    q = ps.PHYSIONET_PUBLISHED.quick(epochs=2)
    assert q.epochs == 2 and dataclasses.replace(q, epochs=100) == ps.PHYSIONET_PUBLISHED


# ------------------------------------------------------------------ models and schedule built from it


def test_published_models_have_the_published_shapes(hourly):
    ode = latent.build_model("odernn", hourly, settings=ps.PHYSIONET_PUBLISHED)
    enc = ode.encoder
    assert enc.hidden_dim == 20 and isinstance(enc.update, latent.GatedMLPUpdate) and enc.update.units == 50
    linears = [m for m in enc.func.net if isinstance(m, torch.nn.Linear)]
    assert [m.out_features for m in linears] == [50, 50, 50, 50, 20]  # create_net(n_layers=3, n_units=50)
    assert [m.out_features for m in ode.classifier if isinstance(m, torch.nn.Linear)] == [300, 300, 1]
    assert not any(isinstance(m, torch.nn.Dropout) for m in ode.classifier)
    assert enc.solver.method == "euler" and enc.solver.step_size == pytest.approx(1 / 50)
    lat = latent.build_model("latent-ode", hourly, settings=ps.PHYSIONET_PUBLISHED)
    assert lat.encoder.hidden_dim == 40 and lat.to_q.out_features == 2 * 20
    assert (lat.solver.method, lat.solver.rtol, lat.solver.atol) == ("dopri5", 1e-3, 1e-4)
    assert lat.encoder.solver.method == "euler"
    assert (lat.obs_std, lat.ce_weight) == (0.01, 100.0)
    assert latent.build_model("gru-d", hourly, settings=ps.PHYSIONET_PUBLISHED).encoder.hidden_dim == 20


def test_adamax_decays_per_batch_to_a_tenth(hourly):
    model = latent.build_model("gru-dt", hourly, settings=ps.PHYSIONET_PUBLISHED)
    opt, per_epoch, per_step = latent.make_optimizer(model, ps.PHYSIONET_PUBLISHED, epochs=3)
    assert isinstance(opt, torch.optim.Adamax) and per_epoch is None
    for _ in range(10):
        opt.step()
        per_step.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-2 * 0.999**10)
    for _ in range(5000):
        per_step.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-3)


def test_kl_weight_follows_the_published_warm_up():
    assert latent.kl_weight(None, 0) == 1.0 and latent.kl_weight(ps.PHYSIONET_COURSE, 0) == 1.0
    assert latent.kl_weight(ps.PHYSIONET_PUBLISHED, 49) == 0.0
    assert latent.kl_weight(ps.PHYSIONET_PUBLISHED, 60) == pytest.approx(1 - 0.993**10)


# ------------------------------------------------------------------ the fast pass is the same computation


@pytest.mark.parametrize("settings", [ps.PHYSIONET_PUBLISHED, ps.PHYSIONET_COURSE], ids=["published", "course"])
@pytest.mark.parametrize("reverse", [False, True])
def test_fast_pass_equals_the_solver_loop_with_its_gradients(hourly, settings, reverse):
    model = latent.build_model("odernn", hourly, settings=settings).double()
    enc = model.encoder
    # a non-trivial field, so that the solves matter
    torch.nn.init.normal_(enc.func.net[-1].weight, std=0.3)
    v, m = hourly.values[:12].double(), hourly.mask[:12].double()
    results = []
    for fast in (True, False):
        enc.fast = fast
        enc.zero_grad()
        enc.solver_stats = latent._stats_zero()
        out = enc(hourly.times, v, m, reverse=reverse, keep_states=True)
        (out.h_final.sum() + out.h_before.pow(2).sum()).backward()
        results.append(
            (out.h_final.detach(), out.h_before.detach(), enc.func.net[0].weight.grad.clone(), dict(enc.solver_stats))
        )
    (h1, s1, g1, st1), (h2, s2, g2, st2) = results
    torch.testing.assert_close(h1, h2, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(s1, s2, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g1, g2, rtol=1e-10, atol=1e-12)
    assert st1["nfe"] == st2["nfe"] > 0


def test_latent_decoder_outputs_at_the_union_only(hourly):
    model = latent.build_model("latent-ode", hourly, settings=ps.PHYSIONET_COURSE).double()
    torch.nn.init.normal_(model.decoder_func.net[-1].weight, std=0.3)
    z0 = torch.randn(5, 20, dtype=torch.float64)
    m = hourly.mask[:5].double().clone()
    m[:, 5:10] = 0.0  # five hours nobody in the batch was observed
    full = model.decode(z0, hourly.times)
    part = model.decode(z0, hourly.times, m)
    seen = m.sum(dim=(0, 2)) > 0
    # the course's Euler steps are one hour, on the grid: the same arithmetic either way
    torch.testing.assert_close(part[:, seen], full[:, seen], rtol=1e-12, atol=1e-12)
    assert (part[:, 5:10] == 0).all() and not seen[5:10].any()


# ------------------------------------------------------------------ the CLI


def test_cli_published_quick_reports_the_config(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NODECOURSE_CACHE", str(tmp_path / "cache"))
    src = physionet.synthetic(40, seed=5, directory=tmp_path / "data")
    rc = run(
        [
            "--data",
            str(src.directory),
            "--model",
            "odernn",
            "--settings",
            "published",
            "--quick",
            "--quantization",
            "1.0",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["mode"] == "quick" and out["epochs"] == physionet_cmd.QUICK_PUBLISHED_EPOCHS
    reported = out["settings"]
    expected = ps.PHYSIONET_PUBLISHED.as_dict()
    for key in ("epochs", "quantization_hours"):  # quick mode's epochs; the grid asked for
        expected.pop(key)
    assert {k: reported[k] for k in expected} == expected
    assert reported["quantization_hours"] == 1.0 and reported["batch_size"] == 50
    assert out["solver"]["method"] == "euler" and out["solver"]["step_size_hours"] == pytest.approx(0.96)


def test_cli_default_settings_are_the_course(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NODECOURSE_CACHE", str(tmp_path / "cache"))
    src = physionet.synthetic(40, seed=5, directory=tmp_path / "data")
    rc = run(["--data", str(src.directory), "--model", "gru-dt", "--epochs", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["settings"]["name"] == "course" and out["settings"]["quantization_hours"] == 1.0
    assert out["settings"]["batch_size"] == 64


def test_cli_unknown_settings_are_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as info:
        run(["--model", "odernn", "--settings", "paper"])
    assert info.value.code == 2 and "--settings: invalid choice: 'paper'" in capsys.readouterr().err


@needs_set_a
@pytest.mark.slow
def test_cli_published_quick_on_real_set_a(capsys):
    rc = run(["--model", "odernn", "--settings", "published", "--quick", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["data_source"] == "shared" and not out["synthetic"]
    assert out["settings"]["quantization_hours"] == pytest.approx(1 / 60)
    assert out["n_train"] + out["n_eval"] == physionet_cmd.QUICK_PUBLISHED_PATIENTS
    assert out["solver"]["nfe_per_training_batch"] > 48  # many more short solves than the hourly grid's


def test_a_solver_work_log_sees_every_gap_as_a_solve(hourly):
    from nodecourse.measure import SolverWorkLog

    enc = latent.build_model("odernn", hourly, settings=ps.PHYSIONET_COURSE).encoder
    v, m = hourly.values[:6], hourly.mask[:6]
    enc.solver_stats = latent._stats_zero()
    unlogged = enc(hourly.times, v, m).h_final
    solves = enc.solver_stats["n_solves"]
    with SolverWorkLog() as log:
        logged = enc(hourly.times, v, m).h_final
    assert log.n_solves == solves > 0  # the fast path steps aside while solves are being logged
    torch.testing.assert_close(logged, unlogged)
