"""The audit on models nobody here wrote (tests/outside_models.py), for what a practitioner found wrong
in it: every solve on its own (keyed by call identity, not source line), torchdeq's convergence under
both stop modes, sentences that compare, the route the model trains with, references that are
references, noise against the task's own sensitivity, libraries refused by name and labels that say
what ran. Each check recomputes its number outside the audit where there is one to recompute.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import outside_models as O
import pytest
import torch

from nodecourse.audit import audit
from nodecourse.audit._discovery import scaled_settings
from nodecourse.audit._hook import HookError, SolveHook
from nodecourse.audit._observed import UnsupportedSolveError, observe

torch.set_num_threads(1)
SOURCE = Path(O.__file__).name


def _audit(build, **kwargs):
    model, train, test, task = build()
    report = audit(model, train, test, task=task, quick=True, progress=False, epochs=2, **kwargs)
    return model, train, test, task, report


def _line_of(text: str) -> int:
    lines = Path(O.__file__).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line)


def _calls(module, fn) -> int:
    """Evaluations of ``module`` while ``fn()`` runs (a forward pre-hook, outside the audit)."""
    n = [0]
    handle = module.register_forward_pre_hook(lambda m, a: n.__setitem__(0, n[0] + 1))
    try:
        with torch.no_grad():
            fn()
    finally:
        handle.remove()
    return n[0]


# --- every solve on its own --------------------------------------------------------------------


def test_two_solves_through_one_helper_are_two_solves_each_changed_on_its_own():
    model, _, test, _ = O.build_two_solves()
    x = test[0][:2]
    with SolveHook() as hook:
        model.eval()
        cores = observe(model, test[0], hook)
        assert [c.call.settings["rtol"] for c in cores] == [1e-3, 1e-7]
        site = f"{SOURCE}:{_line_of('return odeint(func, z')} (solve_to)"
        assert [c.path for c in cores] == [site, f"{site} #2"]
        enc, dec = _calls(model.enc, lambda: model(x)), _calls(model.dec, lambda: model(x))
        # the decoder's solve alone loosened to rtol 1e-3: the encoder's work is untouched
        with hook.overriding({cores[1].key: {"rtol": 1e-3, "atol": 1e-3}}):
            enc2, dec2 = _calls(model.enc, lambda: model(x)), _calls(model.dec, lambda: model(x))
    assert enc2 == enc and dec2 < dec
    # the same loosening done by hand, outside the audit
    import torchdiffeq

    with torch.no_grad():
        z = torchdiffeq.odeint(model.enc, x, torch.tensor([0.0, 1.0], dtype=x.dtype), rtol=1e-3, atol=1e-3)[-1]
        by_hand = _calls(
            model.dec,
            lambda: torchdiffeq.odeint(model.dec, z, torch.tensor([0.0, 0.5], dtype=x.dtype), rtol=1e-3, atol=1e-3),
        )
    assert dec2 == by_hand


def test_two_solves_in_one_helper_are_listed_apart_with_their_own_sweeps():
    model, _, test, _, report = _audit(O.build_two_solves)
    first, second = report.model["settings"]
    assert (first["rtol"], second["rtol"]) == (1e-3, 1e-7) and second["path"] == first["path"] + " #2"
    # step 3 sweeps each solve from its own deployed setting
    per = {(e["solve"], e["factor"]): e["setting"] for e in report.step(3).data["per_solve"]}
    assert per[(first["path"], 100.0)] == "rtol 1e-01" and per[(second["path"], 100.0)] == "rtol 1e-05"
    assert per[(first["path"], 0.1)] == "rtol 1e-04" and per[(second["path"], 0.1)] == "rtol 1e-08"
    # step 2 lists each solve's work on its own line, recounted on each field directly
    s2 = report.step(2).data
    x = test[0]
    enc = [_calls(model.enc, lambda r=r: model(x[r : r + 1])) for r in s2["rows"]]
    dec = [_calls(model.dec, lambda r=r: model(x[r : r + 1])) for r in s2["rows"]]
    assert s2["per_solve"][first["path"]]["median"] == float(np.median(enc))
    assert s2["per_solve"][second["path"]]["median"] == float(np.median(dec))
    assert "#2" in report.step(2).summary
    # one route in both modes: said so, and step 5 judges it in eval mode
    assert report.model["training_route"] == "the same solves in training mode as in eval mode"
    assert not report.step(5).data["training_mode"]


# --- torchdeq's convergence, both stop modes ------------------------------------------------------


def _residuals_by_hand(model, x, iterations: int):
    """torchdeq's fixed-point iteration done here: the lowest abs and rel residual per row."""
    with torch.no_grad():
        u = model.inj(x)
        f = lambda z: torch.tanh(model.W(z) + u)  # noqa: E731
        z = torch.zeros(x.shape[0], model.width)
        lowest_abs = torch.full((x.shape[0],), math.inf)
        lowest_rel = torch.full((x.shape[0],), math.inf)
        for _ in range(iterations):
            fz = f(z)
            diff = (fz - z).flatten(1).norm(dim=1)
            lowest_abs = torch.minimum(lowest_abs, diff)
            lowest_rel = torch.minimum(lowest_rel, diff / (fz.flatten(1).norm(dim=1) + 1e-8))
            z = fz
    return {"abs": lowest_abs, "rel": lowest_rel}


@pytest.mark.parametrize("stop_mode", ["abs", "rel"])
@pytest.mark.parametrize("max_iter, tol", [(4, 1e-6), (200, 1e-3)])
def test_a_torchdeq_solve_is_counted_unconverged_the_way_torchdeq_stops(stop_mode, max_iter, tol):
    torch.manual_seed(0)
    model = O.StarvedDEQ(stop_mode, max_iter=max_iter, tol=tol).eval()
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(1))
    seen = []
    with SolveHook() as hook, hook.listening(seen.append), torch.no_grad():
        model(x)
    (call,) = seen
    expected = int((_residuals_by_hand(model, x, max_iter)[stop_mode] >= tol).sum())
    assert call.unconverged == expected
    assert expected == (16 if max_iter == 4 else 0)  # the starved setting fails every row, the other none
    assert call.status == ("not converged" if expected else "success")


def test_a_deq_that_fails_at_deployment_gets_sentences_that_compare():
    """Every row fails at the deployed setting (rel stop mode): steps 3 and 4 say "breaks" and
    "problem" only where a setting is worse than deployed or clean, with the counts beside."""
    model, _, test, _, report = _audit(O.build_starved_deq)
    n = test[0].shape[0]
    s2, s3, s4 = report.step(2), report.step(3), report.step(4)
    assert s2.verdict == "problem" and s2.data["failures"] == s2.data["n_inputs"]
    # recount: torchdeq's own info on the test set, outside the audit
    with torch.no_grad():
        u = model.inj(test[0])
        _, info = model.deq(lambda z: torch.tanh(model.W(z) + u), torch.zeros(n, model.width))
    assert int((info["rel_lowest"] >= model.deq.f_tol).sum()) == n
    dep = next(p for p in s3.data["points"] if p["factor"] == 1.0)
    assert dep["failed_rows"] == n and f"{n} of {n} rows failed" in s3.summary
    looser = [p for p in s3.data["points"] if p["factor"] > 1]
    assert all(p["failed_rows"] <= n for p in looser)
    assert "breaks" not in s3.summary and not any("breaks" in r for r in s3.reasons)
    assert s3.data["breaks_at"] is None
    noisy = s4.data["noise"][0]
    assert noisy["failed_rows"] == n and s4.data["regimes"][0]["failed_rows"] == n
    assert s4.verdict != "problem" and not any("fail to solve" in r for r in s4.reasons)
    assert f"({n} rows failed)" in s4.summary


# --- the route the model trains with ----------------------------------------------------------------


@pytest.mark.slow
def test_a_model_that_trains_through_a_wrong_adjoint_gets_a_step_5_problem():
    model, _, test, _, report = _audit(O.build_train_eval_switch)
    route = report.model["training_route"]
    assert "torchdiffeq.odeint_adjoint in training, torchdiffeq.odeint in eval" in route
    s5 = report.step(5)
    assert s5.data["training_mode"] and s5.data["route_used"] == "adjoint"
    assert s5.verdict == "problem" and "training mode" in s5.summary
    # recount: the training route's gradient (odeint_adjoint at the model's tolerance) against float64
    # backprop through a tight solve, by hand
    x = test[0][:4]
    t = torch.tensor([0.0, model.T], dtype=x.dtype)
    grads = {}
    for name, solve, tol in (("adjoint", O.odeint_adj, model.tol), ("backprop", O.odeint, 1e-10)):
        model.zero_grad()
        model.readout(solve(model.func, x, t, rtol=tol, atol=tol)[-1]).sum().backward()
        grads[name] = model.func.A.grad.clone()
    model.zero_grad()
    error = float((grads["adjoint"] - grads["backprop"]).norm() / grads["backprop"].norm())
    assert error > 0.1  # the training route's own error, far above the problem threshold
    used = next(r for r in s5.data["routes"] if r["used"])
    fd = np.array(s5.data["fd"])
    errors = np.abs(np.array(used["directional"]) - fd) / math.sqrt(float(np.mean(fd**2)))
    assert math.isclose(float(np.median(errors)), used["median"], rel_tol=1e-9)


# --- references that are references -----------------------------------------------------------------


@pytest.mark.slow
def test_a_torchcde_model_whose_reference_is_noisier_than_the_threshold_is_not_measured():
    pytest.importorskip("torchcde")
    _, _, _, _, report = _audit(O.build_cde)
    (core,) = report.model["settings"]
    # the solve is named at the user's cdeint call, not inside torchcde
    assert core["site"] == f"{SOURCE}:{_line_of('z_T = torchcde.cdeint(')} (NeuralCDE.forward)"
    s5 = report.step(5)
    assert s5.data["fd_noise"] > s5.data["ok_threshold"]
    assert s5.verdict == "not measured" and "not measured (reference noise" in s5.summary
    assert any("reference noise" in r for r in s5.reasons) and "errs by" not in s5.summary
    # the longer horizon runs the spline past its data, and says so
    assert "extrapolated beyond its last observation" in report.step(4).summary


# --- noise against the task's own sensitivity ------------------------------------------------------


def test_no_input_noise_warning_on_exact_dynamics():
    """The true dynamics themselves: their loss grows under input noise because the targets move
    with the initial condition, and that is not the model's fault."""
    model, train, test, _, report = _audit(O.build_exact_regression)
    s4 = report.step(4)
    assert not any("input noise" in r for r in s4.reasons)
    first = s4.data["noise"][0]
    growth = first["quality"] - s4.data["regimes"][0]["quality"]
    assert growth > 0 and growth > first["vs_test"]["gap"]  # the practical gap alone would have warned
    # the targets' own change, recomputed here: nearest training row, per squared distance in noise units
    scale = train[0].std(dim=0, keepdim=True)
    a, b = (test[0] / scale).numpy(), (train[0] / scale).numpy()
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    j = d2.argmin(axis=1)
    ratio = ((test[1].numpy() - train[1].numpy()[j]) ** 2).mean(axis=1) / d2[np.arange(len(j)), j]
    expected = float(np.median(ratio)) * first["sigma"] ** 2 * a.shape[1]
    assert math.isclose(first["target_growth"], expected, rel_tol=1e-9)
    assert growth < 2.0 * expected
    # nor a step 3 problem from rounding: an MSE of ~1e-14 is compared with a gap of a millionth of
    # the targets' variance, not a tenth of itself
    s3 = report.step(3)
    assert s3.data["deployed_vs_tightest"]["gap"] == pytest.approx(1e-6 * float(test[1].var()), rel=1e-9)
    assert s3.verdict == "ok", s3.summary


# --- refusals by name, labels that say what ran, the hook's own failures --------------------------


def test_torchsde_is_refused_by_name_with_what_the_audit_would_need():
    pytest.importorskip("torchsde")
    model, train, test, task = O.build_sde()
    with pytest.raises(UnsupportedSolveError) as err:
        audit(model, train, test, task=task, quick=True, progress=False, epochs=1)
    text = str(err.value)
    assert "torchsde" in text and f"torchsde.sdeint called at {SOURCE}:{_line_of('return torchsde.sdeint(')}" in text
    assert "deterministic" in text and "TorchdiffeqBlock would audit another model" in text


def test_torchdyn_is_refused_by_name():
    torchdyn = pytest.importorskip("torchdyn.core")  # needs pytorch_lightning; skipped where absent
    field = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    model = torchdyn.NeuralODE(field, solver="dopri5")
    x = torch.randn(8, 2)
    with pytest.raises(UnsupportedSolveError, match="torchdyn"):
        audit(model, (x, x), (x, x), task="regression", quick=True, progress=False, epochs=1)


def test_labels_say_the_capped_rtol_and_the_fixed_step_that_ran():
    class Loose(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.func = O.Decay(2).float()

        def forward(self, x):
            return O.odeint(self.func, x, torch.tensor([0.0, 1.0]), rtol=0.1, atol=1e-3)[-1]

    x = torch.randn(4, 2)
    with SolveHook() as hook:
        (loose,) = observe(Loose().eval(), x, hook)
        (fixed,) = observe(O.FixedStepRK4().eval(), torch.randn(4, 3), hook)
    changes, label = scaled_settings(loose, 10.0)
    assert changes["rtol"] == 0.5 and label == "rtol 5e-01 (capped at 0.5; 10x deployed would be 1e+00)"
    changes, label = scaled_settings(loose, 100.0)
    assert changes["rtol"] == 0.5 and "100x deployed would be 1e+01" in label
    assert scaled_settings(loose, 0.1)[1] == "rtol 1e-02"
    s = fixed.settings()
    assert s["step_size"] == 0.25 and "rtol" not in s and "fixed step 0.25" in fixed.describe()
    assert scaled_settings(fixed, 10.0) == ({"step_size": 2.5}, "step 2.5")


class EventModel(torch.nn.Module):
    """torchdiffeq's event solve: ``odeint(..., event_fn=...)`` returns ``(event_t, solution)``."""

    def __init__(self):
        super().__init__()
        self.func = O.Decay(2).float()

    def forward(self, x):
        event = lambda t, z: t - 1.0  # noqa: E731 (the event: t reaches 1)
        _, sol = O.odeint(self.func, x, torch.tensor([0.0, 5.0]), event_fn=event, rtol=1e-3, atol=1e-3)
        return sol[-1]


def test_a_failure_inside_the_hook_is_the_hooks_with_the_solve_named_not_a_data_error():
    model = EventModel().eval()
    x = torch.randn(6, 2)
    try:
        with torch.no_grad():
            model(x)  # the model runs as written, outside the audit
    except Exception as exc:  # noqa: BLE001 (this torchdiffeq cannot run the event solve: nothing to test)
        pytest.skip(f"torchdiffeq's event solve does not run here: {exc}")
    with pytest.raises(HookError) as err:
        audit(model, (x, x), (x, x), task="regression", quick=True, progress=False, epochs=1)
    text = str(err.value)
    assert "torchdiffeq.odeint at test_audit_v3.py" in text and "(EventModel.forward)" in text and "hook" in text
    assert "width" not in text and "first two rows" not in text


def test_a_build_may_return_the_baselines_training_settings(tmp_path):
    from nodecourse.course.audit_cmd import load_build

    path = tmp_path / "mine.py"
    path.write_text(
        "import torch\n"
        "def build():\n"
        "    x = torch.randn(8, 2)\n"
        "    return torch.nn.Linear(2, 2), {'train': (x, x), 'test': (x, x)}, 'regression', "
        "{'epochs': 7, 'lr': 0.01, 'batch_size': 4}\n"
        "def bad():\n"
        "    x = torch.randn(8, 2)\n"
        "    return torch.nn.Linear(2, 2), (x, x), (x, x), 'regression', {'epoch': 7}\n"
    )
    _, kwargs = load_build(f"{path}:build")
    assert (kwargs["epochs"], kwargs["lr"], kwargs["batch_size"]) == (7, 0.01, 4)
    with pytest.raises(ValueError, match="'epoch'.*epochs, lr, batch_size"):
        load_build(f"{path}:bad")
