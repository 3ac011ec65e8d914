"""The audit on models written as torchdiffeq's and torchdeq's examples write them (tests/outside_models.py),
with no change to their code: the solves are found by watching a forward pass, named, and measured
through the same hook. For each model at least one number per step is recomputed here directly,
outside the audit; planted faults get their verdicts; bad arguments are refused before any training.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import outside_models as O
import pytest
import torch
import torchdiffeq

from nodecourse import odeint as nc_odeint  # bound at import, as a user's module binds it
from nodecourse.audit import _quality as Q
from nodecourse.audit import audit
from nodecourse.audit._hook import SolveHook

torch.set_num_threads(1)
SOURCE = Path(O.__file__).name


def _audit(build, **kwargs):
    model, train, test, task = build()
    report = audit(model, train, test, task=task, quick=True, progress=False, epochs=2, **kwargs)
    return model, train, test, task, report


def _line_of(text: str) -> int:
    """The line of tests/outside_models.py holding ``text`` (a solve's call site)."""
    lines = Path(O.__file__).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line)


def _count_calls(func_module, fn):
    """Evaluations of ``func_module`` while ``fn()`` runs (a forward pre-hook, outside the audit)."""
    n = [0]
    handle = func_module.register_forward_pre_hook(lambda m, a: n.__setitem__(0, n[0] + 1))
    try:
        with torch.no_grad():
            fn()
    finally:
        handle.remove()
    return n[0]


def _point(step3, factor):
    return next(p for p in step3.data["points"] if p["factor"] == factor)


def _check_step5_numbers(step5):
    """The step's median and interval recomputed from its own per-direction measurements."""
    used = next(r for r in step5.data["routes"] if r["used"])
    fd = np.array(step5.data["fd"])
    rms = math.sqrt(float(np.mean(fd**2)))
    errors = np.abs(np.array(used["directional"]) - fd) / rms
    assert len(errors) >= 8
    assert math.isclose(float(np.median(errors)), used["median"], rel_tol=1e-9)
    assert used["low"] <= used["median"] <= used["high"]
    return used


# --- the five outside models, audited as written -----------------------------------------------------


@pytest.mark.slow
def test_trajectory_on_a_grid():
    model, train, test, task, report = _audit(O.build_trajectory)
    (core,) = report.model["settings"]
    assert core["entry"] == "torchdiffeq.odeint" and core["site"] == (
        f"{SOURCE}:{_line_of('pred = odeint(self.func, y0, self.t')} (TrajectoryModel.forward)"
    )
    assert core["rtol"] == 1e-4 and core["method"] == "dopri5" and core["gradient"] == "backprop"
    assert "10 times from 0 to 2" in core["grid"]
    assert all(s.verdict != "failed" for s in report.steps), str(report)
    x, y = test
    # step 1: the model's quality is its direct evaluation
    with torch.no_grad():
        direct = Q.score(Q.Metric("MSE", False), model(x), y)
    assert math.isclose(report.step(1).data["quality"]["a"], direct, rel_tol=1e-6)
    assert report.step(1).data["seeds"] == 2 and "RK4 step" in report.step(1).data["baseline"]
    # step 2: one input's NFE, counted on the field directly
    s2 = report.step(2).data
    row = s2["rows"][0]
    assert s2["work"][0] == _count_calls(model.func, lambda: model(x[row : row + 1]))
    # step 3: the swept tolerance's quality equals a direct solve at that tolerance
    p = _point(report.step(3), 10.0)
    with torch.no_grad():
        pred = torchdiffeq.odeint(model.func, x, model.t, rtol=1e-3, atol=1e-5, method="dopri5").permute(1, 0, 2)
    assert math.isclose(p["quality"], float(((pred - y) ** 2).mean()), rel_tol=1e-6)
    # step 4: the longer horizon ran (its NFE differ from the clean solve's), its quality is not made up
    h = report.step(4).data["horizon"]
    assert h["measured"] and not h["quality_measured"] and h["work_per_pass"] != h["clean_work_per_pass"]
    with torch.no_grad():
        n_long = _count_calls(model.func, lambda: torchdiffeq.odeint(model.func, x, 2 * model.t, rtol=1e-4, atol=1e-6))
    assert h["work_per_pass"] == n_long
    assert "quality not measured" in report.step(4).summary
    _check_step5_numbers(report.step(5))


def test_latent_ode_with_a_gru_encoder():
    model, train, test, task, report = _audit(O.build_latent)
    (core,) = report.model["settings"]  # the GRU is discrete; the one solve is the decoder's
    assert core["entry"] == "torchdiffeq.odeint" and core["rtol"] == 1e-7 and core["atol"] == 1e-9
    assert all(s.verdict != "failed" for s in report.steps), str(report)
    x, y = test
    with torch.no_grad():
        direct = float(((model(x) - y) ** 2).mean())
    assert math.isclose(report.step(1).data["quality"]["a"], direct, rel_tol=1e-6)
    s2 = report.step(2).data
    row = s2["rows"][1]
    assert s2["work"][1] == _count_calls(model.func, lambda: model(x[row : row + 1]))
    # step 3 at 100x looser: the decoder solved at rtol 1e-5 by hand
    p = _point(report.step(3), 100.0)

    def looser(xx):
        _, hh = model.rnn(torch.flip(xx, dims=[1]))
        z0 = model.h2z(hh[-1]).chunk(2, dim=-1)[0]
        return model.dec(torchdiffeq.odeint(model.func, z0, model.samp_ts, rtol=1e-5, atol=1e-7).permute(1, 0, 2))

    with torch.no_grad():
        assert math.isclose(p["quality"], float(((looser(x) - y) ** 2).mean()), rel_tol=1e-6)
    # float32 at rtol 1e-7: the tighter point is refused by name, not run
    assert any("not resolvable" in n["why"] for n in report.step(3).data["not_measured"])
    h = report.step(4).data["horizon"]
    assert h["work_per_pass"] != h["clean_work_per_pass"]
    _check_step5_numbers(report.step(5))


def test_cnf_with_a_tuple_state_gets_no_false_baseline_problem():
    model, train, test, task, report = _audit(O.build_cnf)
    (core,) = report.model["settings"]
    assert core["state"] == [[2, 2], [2, 1]] or core["state"] == [(2, 2), (2, 1)]
    assert core["grid"] == [1.0, 0.0]
    s1 = report.step(1)
    assert s1.verdict == "not measured" and "exact log-determinant" in s1.summary  # never a false "problem"
    assert all(s.verdict != "failed" for s in report.steps), str(report)
    x, _ = test
    p = _point(report.step(3), 10.0)
    with torch.no_grad():
        z, logp = torchdiffeq.odeint(
            model.func, (x, torch.zeros(len(x), 1)), torch.tensor([1.0, 0.0]), rtol=1e-4, atol=1e-4, method="dopri5"
        )
        direct = float((-0.5 * (z[-1] ** 2).sum(-1) - math.log(2 * math.pi) - logp[-1].reshape(-1)).mean())
    assert math.isclose(p["quality"], direct, rel_tol=1e-6)
    s2 = report.step(2).data
    row = s2["rows"][0]
    assert s2["work"][0] == _count_calls(model.func, lambda: model(x[row : row + 1]))
    stiff = report.step(4).data["stiffness"]
    assert not stiff["measured"] and "tuple state" in stiff["why"]
    h = report.step(4).data["horizon"]
    with torch.no_grad():
        z, logp = torchdiffeq.odeint(
            model.func, (x, torch.zeros(len(x), 1)), torch.tensor([1.0, -1.0]), rtol=1e-5, atol=1e-5, method="dopri5"
        )
        longer = float((-0.5 * (z[-1] ** 2).sum(-1) - math.log(2 * math.pi) - logp[-1].reshape(-1)).mean())
    assert math.isclose(h["quality"], longer, rel_tol=1e-6)
    _check_step5_numbers(report.step(5))


@pytest.mark.slow
def test_conv_classifier_through_odeint_adjoint_is_judged_on_the_adjoint():
    model, train, test, task, report = _audit(O.build_conv_classifier)
    (core,) = report.model["settings"]
    assert core["entry"] == "torchdiffeq.odeint_adjoint" and core["gradient"] == "adjoint"
    assert core["site"] == f"{SOURCE}:{_line_of('out = odeint_adjoint(self.odefunc')} (ODEBlock.forward)"
    assert all(s.verdict != "failed" for s in report.steps), str(report)
    x, y = test
    model.block.tol = 1e-2  # the model's own knob: the 10x looser point, evaluated directly
    try:
        with torch.no_grad():
            direct = float((model(x).argmax(1) == y).double().mean())
    finally:
        model.block.tol = 1e-3
    assert math.isclose(_point(report.step(3), 10.0)["quality"], direct)
    s2 = report.step(2).data
    row = s2["rows"][0]
    assert s2["work"][0] == _count_calls(model.block.odefunc, lambda: model(x[row : row + 1]))
    assert report.step(4).data["stiffness"]["measured"] is False  # a (B, C, H, W) state: said, not faked
    used = _check_step5_numbers(report.step(5))
    assert used["route"] == "as written (adjoint)"
    assert [r["route"] for r in report.step(5).data["routes"] if not r["used"]] == ["backprop"]


def test_torchdeq_get_deq_model():
    model, train, test, task, report = _audit(O.build_deq)
    (core,) = report.model["settings"]
    assert core["entry"] == "torchdeq DEQ" and core["tol"] == 1e-4 and core["gradient"] == "implicit (IFT)"
    assert all(s.verdict != "failed" for s in report.steps), str(report)
    assert "unrolled 5 times" in report.step(1).data["baseline"]
    x, y = test
    with torch.no_grad():
        direct = float((model(x).argmax(1) == y).double().mean())
    assert math.isclose(report.step(1).data["quality"]["a"], direct)
    # step 2: one input's iterations, read from torchdeq's own statistics
    seen = []
    handle = model.deq.register_forward_hook(lambda m, a, out: seen.append(float(out[1]["nstep"].double().mean())))
    s2 = report.step(2).data
    row = s2["rows"][0]
    try:
        with torch.no_grad():
            model(x[row : row + 1])
    finally:
        handle.remove()
    assert s2["work"][0] == seen[0]
    # step 3: 10x tighter, set on torchdeq's own attribute
    model.deq.f_tol, model.deq.eval_f_max_iter = 1e-5, 160
    try:
        with torch.no_grad():
            tight = float((model(x).argmax(1) == y).double().mean())
    finally:
        model.deq.f_tol, model.deq.eval_f_max_iter = 1e-4, 40
    assert math.isclose(_point(report.step(3), 0.1)["quality"], tight)
    st = report.step(4).data["stiffness"]
    assert st["kind"] == "deq" and st["max_rho"] < 1
    assert report.step(4).data["horizon"] == {"measured": False, "why": "a DEQ has no horizon"}
    _check_step5_numbers(report.step(5))


# --- planted faults ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_odeint_adjoints_own_wrong_gradient_is_a_step_5_problem():
    model, train, test, task, report = _audit(O.build_adjoint_fault)
    step = report.step(5)
    used = _check_step5_numbers(step)
    assert used["route"] == "as written (adjoint)" and step.verdict == "problem", step.summary
    # outside the audit: torchdiffeq's adjoint and plain backprop disagree on this model's gradient
    x = test[0][:4]
    grads = {}
    for name, solve in (("adjoint", torchdiffeq.odeint_adjoint), ("backprop", torchdiffeq.odeint)):
        model.zero_grad()
        solve(model.func, x, torch.tensor([0.0, 3.0], dtype=torch.float64), rtol=1e-6, atol=1e-6)[-1].sum().backward()
        grads[name] = model.func.A.grad.clone()
    rel = float((grads["adjoint"] - grads["backprop"]).norm() / grads["backprop"].norm())
    assert rel > 0.1, rel
    backprop = next(r for r in step.data["routes"] if r["route"] == "backprop")
    assert backprop["median"] < step.data["ok_threshold"]  # the alternative is shown, and is right


def test_float32_at_torchdiffeq_defaults_with_a_captured_float32_tensor_gives_a_full_report(tmp_path):
    out = tmp_path / "f32.html"
    model, train, test, task, report = _audit(O.build_float32, out=out)
    assert [s.step for s in report.steps] == [1, 2, 3, 4, 5]
    assert all(s.verdict != "failed" for s in report.steps), str(report)
    assert report.step(5).data["dtype"] == "float32" and "a float64 cast fails" in report.step(5).data["precision"]
    assert any(n["factor"] == 0.1 for n in report.step(3).data["not_measured"])
    for suffix in (".html", ".json", ".md"):
        assert out.with_suffix(suffix).stat().st_size > 0


def test_a_failing_step_is_named_and_the_report_is_still_written(tmp_path, monkeypatch):
    from nodecourse.audit import _step2_work as step2_work

    def broken(ctx):
        raise RuntimeError("planted failure")

    monkeypatch.setattr(step2_work, "run_step", broken)
    out = tmp_path / "r.json"
    model, train, test, task, report = _audit(O.build_float32, out=out)
    s2 = report.step(2)
    assert s2.verdict == "failed" and "RuntimeError: planted failure" in s2.summary
    assert [s.verdict != "failed" for s in report.steps] == [True, False, True, True, True]
    assert out.exists() and out.with_suffix(".md").exists() and out.with_suffix(".html").exists()


def test_the_model_and_the_global_random_state_are_left_as_found():
    model, train, test, task = O.build_float32()
    model.train()
    model.func.lin.weight.requires_grad_(False)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(1234)
    rng = torch.get_rng_state()
    audit(model, train, test, task=task, quick=True, progress=False, epochs=1)
    assert torch.equal(torch.get_rng_state(), rng)
    assert model.training and all(m.training for m in model.modules())
    assert not model.func.lin.weight.requires_grad and model.func.lin.bias.requires_grad
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    # and the names the hook replaced are the originals again
    original, original_adjoint = _originals()
    assert O.odeint is original and O.odeint_adj is original_adjoint and torchdiffeq.odeint is original


def test_a_name_bound_at_import_is_seen_and_restored_after_an_error():
    model, _, test, _ = O.build_conv_classifier(n=8, steps=0)
    calls = []
    with pytest.raises(ZeroDivisionError):
        with SolveHook() as hook, hook.listening(calls.append):
            assert O.odeint_adjoint is not _originals()[1]  # replaced while active
            with torch.no_grad():
                model(test[0][:2])
            1 / 0
    assert [c.entry for c in calls] == ["torchdiffeq.odeint_adjoint"] and calls[0].nfe > 0
    assert O.odeint_adjoint is _originals()[1]


def _originals():
    """torchdiffeq's own functions, from the modules that define them."""
    return sys.modules["torchdiffeq._impl.odeint"].odeint, sys.modules["torchdiffeq._impl.adjoint"].odeint_adjoint


@pytest.mark.slow
def test_two_solves_in_one_model_are_audited_per_solve():
    class TwoSolves(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.f = O.ODEFunc()
            self.g = O.LinearFunc().float()
            self.head = torch.nn.Linear(2, 2)

        def forward(self, x):
            a = O.odeint(self.f, x, torch.tensor([0.0, 1.0]), rtol=1e-4, atol=1e-6)[-1]
            b = O.odeint_adj(self.g, a, torch.tensor([0.0, 0.5]), rtol=1e-5, atol=1e-7)[-1]
            return self.head(b)

    torch.manual_seed(0)
    model = TwoSolves()
    x = torch.randn(40, 2)
    y = (x[:, 0] > 0).long()
    report = audit(model, (x[:20], y[:20]), (x[20:], y[20:]), quick=True, progress=False, epochs=1)
    entries = [c["entry"] for c in report.model["settings"]]
    assert entries == ["torchdiffeq.odeint", "torchdiffeq.odeint_adjoint"]
    assert len(report.step(4).data["stiffness_per_solve"]) == 2
    assert len(report.step(2).data["per_solve"]) == 2  # each solve's work per input on its own
    alone = report.step(3).data["per_solve"]
    assert [e["factor"] for e in alone] == [100.0, 0.1, 100.0, 0.1] and len({e["solve"] for e in alone}) == 2
    # the first solve alone at 100x looser, the second as deployed: evaluated here by hand
    x_test, y_test = x[20:], y[20:]
    with torch.no_grad():
        a = O.odeint(model.f, x_test, torch.tensor([0.0, 1.0]), rtol=1e-2, atol=1e-4)[-1]
        b = O.odeint(model.g, a, torch.tensor([0.0, 0.5]), rtol=1e-5, atol=1e-7)[-1]
        direct = float((model.head(b).argmax(1) == y_test).double().mean())
    assert math.isclose(alone[0]["quality"], direct)
    assert report.step(5).data["route_used"] == "adjoint, backprop"


# --- bad arguments: named, before any training ----------------------------------------------------------


def _bad_cases():
    model, train, test, _ = O.build_float32()
    (xa, ya), (xb, yb) = train, test
    nan_x = xb.clone()
    nan_x[3, 1] = float("nan")
    return model, [
        (
            "classifier as regression",
            dict(train=train, test=test, task="regression"),
            r"task='regression' needs targets shaped like the model's output \(2,\)",
        ),
        (
            "label out of range",
            dict(train=(xa, ya), test=(xb, torch.where(yb == 1, 7, yb)), task="classification"),
            r"test: label 7 at row \d+.*labels are 0 to 1",
        ),
        (
            "shift of the wrong width",
            dict(train=train, test=test, shift=(torch.randn(10, 5), yb[:10])),
            r"shift: the model fails on the first two rows of shift's x \(shapes \[\(10, 5\)\]\)",
        ),
        ("targets for a density", dict(train=train, test=test, task="density"), r"task='density' takes no targets"),
        ("NaN in the test inputs", dict(train=train, test=(nan_x, yb)), r"test: x contains NaN at row 3"),
        (
            "missing output folder",
            dict(train=train, test=test, out="/nonexistent-folder/a.html"),
            r"out='/nonexistent-folder/a.html': the folder '/nonexistent-folder' does not exist",
        ),
        ("seed out of range", dict(train=train, test=test, seed=-1), r"seed"),
        ("seed too large", dict(train=train, test=test, seed=2**40), r"seed"),
    ]


@pytest.mark.parametrize("case", range(8))
def test_every_bad_argument_is_named_before_any_training(case, monkeypatch):
    from nodecourse.audit import _baseline as baseline

    trained = []
    monkeypatch.setattr(baseline, "train_epochs", lambda *a, **k: trained.append(1))
    model, cases = _bad_cases()
    label, kwargs, pattern = cases[case]
    kwargs = {"task": "classification", **kwargs}
    start = time.perf_counter()
    with pytest.raises((ValueError, TypeError), match=pattern):
        audit(model, kwargs.pop("train"), kwargs.pop("test"), quick=True, progress=False, **kwargs)
    seconds = time.perf_counter() - start
    assert not trained, f"{label}: training started before the refusal ({seconds:.2f} s)"


def test_regression_targets_of_another_shape_and_inf_are_named():
    model, train, test, _ = O.build_trajectory(n=8, steps=0)
    x, y = test
    with pytest.raises(
        ValueError,
        match=r"test: task='regression' needs targets shaped like the model's output "
        r"\(10, 2\) per row; y has \(10, 3\)",
    ):
        audit(model, train, (x, torch.zeros(len(x), 10, 3)), task="regression", progress=False)
    bad = y.clone()
    bad[2, 0, 0] = float("inf")
    with pytest.raises(ValueError, match=r"test: y contains inf at row 2"):
        audit(model, train, (x, bad), task="regression", progress=False)


if __name__ == "__main__":  # measured figures: quick audit time per fixture and step 5's share
    # python tests/test_audit_observed.py [threads]   (default 2: the course's two cores)
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
    print(f"torch threads: {torch.get_num_threads()}")
    for name in ("trajectory", "latent", "cnf", "conv_classifier", "deq", "adjoint_fault", "float32"):
        _, _, _, _, r = _audit(getattr(O, f"build_{name}"))
        print(
            f"{name:16s} audit {r.seconds:6.1f} s, step 5 {r.step(5).seconds:5.1f} s "
            f"({100 * r.step(5).seconds / r.seconds:.0f} %), verdicts {[s.verdict for s in r.steps]}",
            file=sys.stdout,
            flush=True,
        )


@pytest.mark.slow
def test_cli_audits_your_own_file_and_refuses_bad_arguments_before_work(tmp_path):
    from notebook_fixtures import run_cli

    out = tmp_path / "mine.md"
    spec = f"{O.__file__}:build_float32"
    proc = run_cli("audit", "--model", spec, "--quick", "--json", "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json

    doc = json.loads(proc.stdout)
    assert [s["step"] for s in doc["steps"]] == [1, 2, 3, 4, 5]
    assert doc["model"]["settings"][0]["entry"] == "torchdiffeq.odeint"
    lines = [line for line in proc.stderr.splitlines() if line.startswith("audit: step ")]
    assert [line.split()[2] for line in lines] == ["1/5", "2/5", "3/5", "4/5", "5/5"], proc.stderr[-1000:]
    assert out.exists() and out.with_suffix(".html").exists() and out.with_suffix(".json").exists()
    missing_folder = str(tmp_path / "none" / "a.html")
    for bad, words in (
        (["--seed", "-1"], "out of range"),
        (["--out", missing_folder], "does not exist"),
        (["--model", "nofile.py:build"], "no file"),
    ):
        args = ["audit", "--model", spec, *bad] if bad[0] != "--model" else ["audit", *bad]
        proc = run_cli(*args)
        assert proc.returncode == 2 and words in proc.stderr, (bad, proc.stderr[-500:])


@pytest.mark.slow
def test_a_library_deq_whose_field_is_a_plain_closure_gets_a_full_report():
    from nodecourse import DEQ

    class ClosureDEQ(torch.nn.Module):
        """A DEQ whose f is a lambda made at construction: a deep copy would still use these weights."""

        def __init__(self):
            super().__init__()
            self.W, self.U, self.head = torch.nn.Linear(6, 6), torch.nn.Linear(3, 6), torch.nn.Linear(6, 2)
            self.deq = DEQ(lambda z, x: torch.tanh(0.5 * self.W(z) + self.U(x)), state=6)

        def forward(self, x):
            return self.head(self.deq(x))

    torch.manual_seed(0)
    model = ClosureDEQ()
    x = torch.randn(40, 3)
    y = (x[:, 0] > 0).long()
    report = audit(model, (x[:20], y[:20]), (x[20:], y[20:]), quick=True, progress=False, epochs=1)
    assert all(s.verdict != "failed" for s in report.steps), str(report)
    assert report.step(1).verdict == "not measured" and "closure" in report.step(1).summary
    s5 = report.step(5)
    # the check ran on the model's own weights (all 80 of them receive a gradient), in float64
    assert s5.data["n_parameters"] == sum(p.numel() for p in model.parameters()) and s5.data["dtype"] == "float64"
    assert s5.data["fd_noise"] > 0 and _check_step5_numbers(s5)["median"] < s5.data["ok_threshold"]
    assert all(p.dtype == torch.float32 for p in model.parameters())  # cast back


@pytest.mark.slow
def test_a_direct_nodecourse_odeint_call_is_found_and_swept_on_its_call():
    class Direct(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.func = O.ODEFunc()
            self.head = torch.nn.Linear(2, 2)

        def forward(self, x):
            return self.head(nc_odeint(self.func, x, torch.tensor([0.0, 1.0]), rtol=1e-4, atol=1e-6).ys[-1])

    torch.manual_seed(0)
    model = Direct()
    x = torch.randn(40, 2)
    y = (x[:, 0] > 0).long()
    report = audit(model, (x[:20], y[:20]), (x[20:], y[20:]), quick=True, progress=False, epochs=1)
    (core,) = report.model["settings"]
    assert core["entry"] == "nodecourse.odeint" and core["rtol"] == 1e-4 and core["gradient"] == "backprop"
    with torch.no_grad():
        loose = nc_odeint(model.func, x[20:], torch.tensor([0.0, 1.0]), rtol=1e-2, atol=1e-4)
        direct = float((model.head(loose.ys[-1]).argmax(1) == y[20:]).double().mean())
    p = _point(report.step(3), 100.0)
    assert math.isclose(p["quality"], direct) and p["work_per_pass"] == loose.stats["nfe"]
    assert {r["route"] for r in report.step(5).data["routes"]} == {"as written (backprop)", "checkpoint", "adjoint"}
