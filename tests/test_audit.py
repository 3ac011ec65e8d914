"""The five-step audit (nodecourse.audit) finds planted faults, leaves healthy models alone, says
clearly what it could not find, and writes its report as JSON, Markdown and one HTML file.

The planted faults are lesson 9's (nodecourse.lessons.lesson09): a long-horizon linear field with a
fast decaying mode rotated into every coordinate (the adjoint is wrong; checkpointing is not) and
a fast rotation classified by the side it ends on (accuracy collapses when the solve is loosened).
Each fault test has a control that differs in the one setting that plants the fault.
"""

from __future__ import annotations

import json
import math
import re

import pytest
import torch
from torch import nn

from nodecourse.audit import (
    AUDIT_VERDICTS,
    CoreNotFoundError,
    SharedInputs,
    TorchdiffeqBlock,
    audit,
    discrete_counterpart,
    find_cores,
)
from nodecourse.audit import _quality as Q
from nodecourse.audit import _step3_tolerance as step3_tolerance
from nodecourse.audit import _step4_regimes as step4_regimes
from nodecourse.audit._context import QUICK, AuditContext
from nodecourse.lessons import lesson09 as L
from nodecourse.models import MLPField, ODEBlock, count_parameters
from notebook_fixtures import run_cli

torch.set_num_threads(1)


def _context(model, train, test, *, task="classification", shift=None) -> AuditContext:
    """The context one step runs in (a step tested on its own, without the other four)."""
    model.eval()
    with torch.no_grad():
        metric = Q.metric_for(task, model(test[0][:2]))
    return AuditContext(
        model=model,
        cores=find_cores(model),
        task=task,
        metric=metric,
        train=train,
        test=test,
        shift=shift,
        baseline="auto",
        sizes=QUICK,
        epochs=2,
        lr=3e-3,
        batch_size=64,
        seed=0,
        progress=False,
    )


def _sign_classifier(seed=0, n=240):
    """A healthy model: a gently decaying linear flow, then logits (z0, -z0): class 0 where x0 > 0.
    Returns the model and train/test splits of points labelled by that rule (it is right on all)."""
    field = L.LinearField(rates=(-0.5, -0.2), angle=0.0, dtype=torch.float32)
    readout = nn.Linear(2, 2)
    with torch.no_grad():
        readout.weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        readout.bias.zero_()
    model = L.Readout(ODEBlock(field, t1=1.0, method="dopri5", rtol=1e-3, atol=1e-3), readout)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=g)
    x[:, 0] = x[:, 0].sign() * (x[:, 0].abs() + 0.3)  # a margin around the boundary
    y = (x[:, 0] < 0).long()
    half = n // 2
    return model, (x[:half], y[:half]), (x[half:], y[half:])


@pytest.fixture(scope="module")
def healthy_report():
    model, train, test = _sign_classifier()
    return audit(model, train, test, quick=True, progress=False, epochs=3, name="sign classifier")


# --- planted faults --------------------------------------------------------------------------


@pytest.mark.parametrize("gradient, expected", [("adjoint", "problem"), ("checkpoint", "ok")])
def test_a_wrong_adjoint_is_a_problem_only_for_the_model_that_trains_with_it(gradient, expected):
    model, train, test = L.long_horizon_regressor(gradient)
    report = audit(model, train, test, task="regression", quick=True, progress=False, epochs=2)
    step = report.step(5)
    used = next(r for r in step.data["routes"] if r["used"])
    others = {r["route"]: r["rel_error"] for r in step.data["routes"] if not r["used"]}
    errors = {gradient: used["rel_error"], **others}
    allowed = step.data["allowed"]
    # the fault itself: the adjoint is wrong by orders of magnitude, checkpointing is within its tolerance
    assert errors["adjoint"] > 100 * allowed and errors["checkpoint"] < allowed, errors
    assert step.data["route_used"] == gradient and used["route"] == f"as written ({gradient})"
    # the route the model trains with is judged; the others are shown beside it, never as its failure
    assert step.verdict == expected, (step.summary, step.reasons)
    assert ("adjoint" in step.summary) and (bool(step.reasons) == (expected != "ok"))


@pytest.mark.slow
def test_accuracy_that_collapses_at_a_looser_tolerance_is_a_warning_at_step_3():
    model, train, test = L.rotating_classifier()  # deployed at rtol 1e-3
    report = audit(model, train, test, quick=True, progress=False, epochs=2)
    step = report.step(3)
    assert step.verdict == "warning", step.summary
    assert step.data["breaks_at"] == 10.0
    deployed = next(p for p in step.data["points"] if p["factor"] == 1.0)["quality"]
    at_100 = next(p for p in step.data["points"] if p["factor"] == 100.0)["quality"]
    assert deployed > 0.98 and at_100 < deployed - 0.1, (deployed, at_100)


def test_the_same_rotation_deployed_well_away_from_its_cliff_is_ok_at_step_3():
    model, train, test = L.rotating_classifier(tol=1e-5)
    step = step3_tolerance.run_step(_context(model, train, test))
    assert step.verdict == "ok", (step.summary, step.reasons)
    assert step.data["breaks_at"] != 10.0


def test_a_shifted_split_shows_its_drop_at_step_4():
    model, train, test = _sign_classifier()
    xs, _ = test
    shifted = (xs, (xs[:, 0] < 1.0).long())  # the boundary moved: the rows between 0 and 1 change class
    step = step4_regimes.run_step(_context(model, train, test, shift=shifted))
    d = step.data["shift"]["vs_test"]
    expected = float(((xs[:, 0] > 0) & (xs[:, 0] < 1.0)).double().mean())
    assert math.isclose(-d["diff"], expected, abs_tol=1e-9), (d, expected)
    assert d["high"] < 0
    assert step.verdict == "warning" and any("shift" in r for r in step.reasons), step.reasons
    assert "shifted set" in step.summary


def test_no_shift_no_drop():
    model, train, test = _sign_classifier()
    step = step4_regimes.run_step(_context(model, train, test, shift=test))
    d = step.data["shift"]["vs_test"]
    assert d["diff"] == 0 and not any("shift" in r for r in step.reasons)


def test_a_healthy_model_gets_no_problem(healthy_report):
    assert "problem" not in healthy_report.verdicts.values(), str(healthy_report)
    assert healthy_report.step(2).data["failures"] == 0
    assert healthy_report.step(5).verdict == "ok", healthy_report.step(5).summary


# --- what is found, and what is not ----------------------------------------------------------


def test_a_model_without_a_core_is_refused_naming_what_was_looked_for():
    mlp = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2))
    x = torch.randn(10, 2)
    with pytest.raises(CoreNotFoundError) as err:
        audit(mlp, (x, torch.zeros(10, dtype=torch.long)), (x, torch.zeros(10, dtype=torch.long)), quick=True)
    text = str(err.value)
    for name in (
        "torchdiffeq.odeint_adjoint",
        "nodecourse.odeint",
        "torchdeq",
        "ODEBlock",
        "RecurrentEncoder",
        "LatentODE",
        "CNF",
        "DEQ",
        "TorchdiffeqBlock",
    ):
        assert name in text, name


class _TorchdiffeqNet(nn.Module):
    """A model as a torchdiffeq user writes it."""

    def __init__(self):
        super().__init__()
        self.odefunc = MLPField(3, hidden=(8,))
        self.readout = nn.Linear(3, 2)

    def forward(self, x):
        from torchdiffeq import odeint

        return self.readout(odeint(self.odefunc, x, torch.tensor([0.0, 1.0]), rtol=1e-5, atol=1e-5)[-1])


class _Adapted(nn.Module):
    def __init__(self, raw: _TorchdiffeqNet, backend: str):
        super().__init__()
        self.block = TorchdiffeqBlock(raw.odefunc, t1=1.0, method="dopri5", rtol=1e-5, atol=1e-5, backend=backend)
        self.readout = raw.readout

    def forward(self, x):
        return self.readout(self.block(x))


def test_a_torchdiffeq_model_is_audited_through_the_adapter_with_the_same_outputs():
    torch.manual_seed(0)
    raw = _TorchdiffeqNet()
    with pytest.raises(CoreNotFoundError, match="torchdiffeq"):
        find_cores(raw)
    x = torch.randn(16, 3)
    for backend in ("torchdiffeq", "nodecourse"):
        adapted = _Adapted(raw, backend)
        (core,) = find_cores(adapted)
        assert core.label == "TorchdiffeqBlock" and core.settings()["backend"] == backend
        with torch.no_grad():
            assert torch.allclose(adapted(x), raw(x), atol=1e-4), backend
        assert adapted.block.last_stats["nfe"] > 0
    with pytest.raises(ValueError, match="backend"):
        TorchdiffeqBlock(raw.odefunc, backend="scipy")


def test_cores_are_found_inside_the_course_models():
    from nodecourse.deq._models import DEQModel
    from nodecourse.models.latent import ODERNN, LatentODE

    assert [c.label for c in find_cores(DEQModel(1, 1))] == ["DEQ"]
    rnn = SharedInputs(ODERNN(3, 2, hidden_dim=4, ode_hidden=4), torch.arange(5.0))
    assert [(c.label, c.path) for c in find_cores(rnn)] == [("ODE-RNN encoder", "model.encoder")]
    assert [c.label for c in find_cores(LatentODE(3, 2, latent_dim=2, hidden_dim=4))] == [
        "latent ODE decoder",
        "latent ODE encoder",
    ]


def test_the_discrete_counterparts_match_the_core_in_parameters():
    from nodecourse.lessons import lesson07
    from nodecourse.models.latent import ODERNN

    config = lesson07.QUICK_CAPSTONE
    x = torch.randn(4, 64)
    for name in ("Neural ODE", "DEQ"):
        torch.manual_seed(0)
        model = lesson07.build_model(name, config)
        baseline, how = discrete_counterpart(model, x)
        assert find_cores(model)  # the model itself is untouched
        with pytest.raises(CoreNotFoundError):
            find_cores(baseline)
        assert abs(count_parameters(baseline) - count_parameters(model)) <= 0.01 * count_parameters(model), how
        assert baseline(x).shape == model(x).shape
        changed = [not torch.equal(a, b) for a, b in zip(baseline.embed.parameters(), model.embed.parameters())]
        assert all(changed), "the baseline starts from fresh weights, not the trained model's"
    rnn = SharedInputs(ODERNN(3, 2, hidden_dim=4, ode_hidden=4), torch.arange(5.0))
    xs = (torch.randn(4, 5, 3), torch.ones(4, 5, 3), torch.randn(4, 2), torch.ones(4, 2))
    baseline, how = discrete_counterpart(rnn, xs)
    assert baseline.model.encoder.solver.method == "euler" and baseline.model.encoder.solver.step_size == 1.0
    assert count_parameters(baseline) == count_parameters(rnn)


def test_the_audit_runs_on_a_device_without_hidden_host_tensors():
    # tests/fake_cuda.py: a pretend CUDA device that raises where real CUDA would (a host tensor mixed in)
    from fake_cuda import fake_cuda_device

    with fake_cuda_device() as device:
        model, (xa, ya), (xb, yb) = _sign_classifier()
        model.to(device)
        report = audit(
            model,
            (xa.to(device), ya.to(device)),
            (xb.to(device), yb.to(device)),
            shift=(xb.to(device), yb.to(device)),
            quick=True,
            progress=False,
            epochs=1,
        )
        assert next(model.parameters()).device.type == "cuda"
    assert [s.step for s in report.steps] == [1, 2, 3, 4, 5]


class _LogProb(nn.Module):
    """A CNF as a model of ``task="density"``: ``log p(x)`` per row."""

    def __init__(self, cnf):
        super().__init__()
        self.cnf = cnf

    def forward(self, x):
        return self.cnf.log_prob(x)


def test_a_density_model_is_audited_and_its_missing_baseline_is_said():
    from nodecourse.models._flows import CNF, two_moons

    torch.manual_seed(0)
    model = _LogProb(CNF(2, hidden=(8, 8), rtol=1e-3, atol=1e-3))
    x = two_moons(80)
    report = audit(model, (x[:40], None), (x[40:], None), task="density", quick=True, progress=False, epochs=1)
    assert report.setup["metric"] == "log-likelihood"
    # no fair baseline is built for a density: said, never a false "problem"
    assert report.step(1).verdict == "not measured" and "baseline=" in report.step(1).summary
    assert [c.label for c in find_cores(model)] == ["CNF"]
    assert report.step(5).data["routes"][0]["rel_error"] < report.step(5).data["allowed"]


# --- arguments -------------------------------------------------------------------------------


def test_bad_arguments_name_the_argument_and_the_fix():
    model, train, test = _sign_classifier()
    with pytest.raises(ValueError, match=r"task='classify'.*'classification'"):
        audit(model, train, test, task="classify")
    with pytest.raises(TypeError, match=r"train=.*\(x, y\)"):
        audit(model, train[0], test)
    with pytest.raises(ValueError, match=r"test: y has shape \(3,\).*120 rows"):
        audit(model, train, (test[0], test[1][:3]))
    with pytest.raises(ValueError, match=r"baseline='none'.*'auto'"):
        audit(model, train, test, baseline="none")
    with pytest.raises(ValueError, match=r"epochs=-1"):
        audit(model, train, test, epochs=-1)


def test_the_audit_leaves_the_model_as_it_found_it(healthy_report):
    model, train, test = _sign_classifier()
    before = (model.block.solver, model.block.t1, {k: v.clone() for k, v in model.state_dict().items()})
    model.train()
    audit(model, train, test, quick=True, progress=False, epochs=1)
    assert model.training
    assert model.block.solver == before[0] and model.block.t1 == before[1]
    assert all(torch.equal(v, before[2][k]) for k, v in model.state_dict().items())


# --- the report ------------------------------------------------------------------------------


def test_the_report_has_five_steps_with_verdicts_sentences_data_figures_and_times(healthy_report):
    steps = healthy_report.steps
    assert [s.step for s in steps] == [1, 2, 3, 4, 5]
    assert len({s.name for s in steps}) == 5
    for s in steps:
        assert s.verdict in AUDIT_VERDICTS
        assert re.search(r"\d", s.summary) and s.summary.endswith(".")
        assert s.data and s.seconds > 0
        assert s.figures and all(f.png.startswith(b"\x89PNG") for f in s.figures)
        assert (s.verdict == "ok") == (not s.reasons)


def test_the_report_serialises_to_json_markdown_and_one_self_contained_html(healthy_report, tmp_path):
    doc = json.loads(healthy_report.to_json())
    assert [s["step"] for s in doc["steps"]] == [1, 2, 3, 4, 5]
    assert set(doc["verdicts"].values()) <= set(AUDIT_VERDICTS)
    assert all(isinstance(s["seconds"], float) for s in doc["steps"])
    assert "png_base64" not in json.dumps(doc) and "png_base64" in healthy_report.to_json(figures=True)
    md = healthy_report.to_markdown()
    assert "| step | name | verdict | summary | seconds |" in md
    assert all(f"## {s.step}. {s.name}" in md for s in healthy_report.steps)
    page = healthy_report.save(tmp_path / "audit.html").read_text(encoding="utf-8")
    n_figures = sum(len(s.figures) for s in healthy_report.steps)
    assert page.count("src='data:image/png;base64,") == n_figures
    assert "<script" not in page and "http" not in page  # nothing to fetch: it opens offline
    assert healthy_report._repr_html_().count("<details") == 5
    assert json.loads((healthy_report.save(tmp_path / "a.json")).read_text())["steps"][0]["figures"][0]["png_base64"]
    with pytest.raises(ValueError, match=r"\.html, \.md or \.json"):
        healthy_report.save(tmp_path / "audit.txt")


def test_non_finite_numbers_become_null_in_json():
    from nodecourse.audit._report import AuditReport, StepResult

    step = StepResult(1, "x", "ok", "1.", {"value": float("nan"), "t": torch.tensor([1.0, float("inf")])})
    report = AuditReport({"name": "m", "parameters": 1, "cores": []}, {}, [step], 1.0)
    assert json.loads(report.to_json())["steps"][0]["data"] == {"value": None, "t": [1.0, None]}
    with pytest.raises(ValueError, match="verdict"):
        StepResult(1, "x", "fine", "1.")


@pytest.mark.slow
def test_cli_prints_one_json_document_with_five_steps(tmp_path):
    out = tmp_path / "audit.html"
    proc = run_cli(
        "audit", "--model", "digits-ode", "--quick", "--json", "--no-progress", "--out", str(out), timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)  # the whole of stdout is one document
    assert [s["step"] for s in doc["steps"]] == [1, 2, 3, 4, 5]
    assert all(s["verdict"] in AUDIT_VERDICTS and s["summary"] for s in doc["steps"])
    assert doc["setup"]["mode"] == "quick" and doc["model"]["name"] == "digits-ode"
    assert out.read_text(encoding="utf-8").count("data:image/png;base64,") >= 5


@pytest.mark.slow
def test_cli_refuses_an_unknown_model_and_a_bad_output_name():
    proc = run_cli("audit", "--model", "resnet")
    assert proc.returncode == 2 and "digits-ode" in proc.stderr and "file.py:build" in proc.stderr
    proc = run_cli("audit", "--model", "digits-ode", "--out", "report.pdf")
    assert proc.returncode == 2 and ".html" in proc.stderr


def test_a_report_and_a_step_show_their_markdown_as_plain_text():
    """text/plain of a report or a step is what it reads as, not the dataclass repr of every field."""
    from IPython.core.formatters import DisplayFormatter

    from nodecourse.audit import AuditReport, StepResult

    def shown(obj):
        return DisplayFormatter().format(obj)[0]

    step = StepResult(step=2, name="Solver work per input", verdict="ok", summary="48 NFE", data={"work": [48.0] * 500})
    assert shown(step)["text/plain"] == shown(step)["text/markdown"] == step.markdown()
    setup = {"mode": "quick", "task": "regression", "n_train": 8, "n_test": 4}
    report = AuditReport(
        model={"name": "m", "parameters": 10, "cores": ["one"]}, setup=setup, steps=[step], seconds=1.0
    )
    assert shown(report)["text/plain"] == report.to_markdown() and "<div" in shown(report)["text/html"]
