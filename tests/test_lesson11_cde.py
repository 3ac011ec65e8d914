"""Lesson 11's CDE half: the interpolation's causality (against torchcde too), the neural CDE's shapes and
parameter matching, and the ``ncde-vs-odernn`` rule and row on hand-made study results (no training)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from snapshot_support import assert_snapshot

from nodecourse.claims import REGISTRY, ClaimVerdict, check_unrun_scale
from nodecourse.lessons import lesson11 as L
from nodecourse.lessons.lesson05 import AUCStudy, AUCStudyConfig, ModelRun
from nodecourse.lessons.lesson11 import cde_rows
from nodecourse.models import PHYSIONET_COURSE
from nodecourse.models.latent import build_model

# ---------------------------------------------------------------- causality


def test_moving_a_future_observation_leaves_the_hermite_past_alone_and_moves_the_natural_one():
    f = L.CausalityFindings(L.causality_study(L.CAUSALITY))
    change = f.result.past_change
    assert change["hermite"] == 0.0 and change["natural"] > 1e-3
    assert f.causal_kinds == ("hermite",)
    assert "| natural cubic spline |" in f.markdown() and "| no |" in f.markdown()
    assert len(f.figure().data) == 6  # two paths x two series, the observations, the moved one


def test_torchcde_agrees_which_path_is_causal():
    torchcde = pytest.importorskip("torchcde")
    r = L.causality_study(L.CAUSALITY)
    t = torch.tensor(r.t, dtype=torch.float64)
    grid = torch.tensor(r.grid, dtype=torch.float64)
    past = grid <= r.past_end
    fns = {
        "hermite": torchcde.hermite_cubic_coefficients_with_backward_differences,
        "natural": torchcde.natural_cubic_coeffs,
    }
    for kind, fn in fns.items():
        a, b = (
            torchcde.CubicSpline(fn(torch.tensor(s, dtype=torch.float64).unsqueeze(-1), t), t).evaluate(grid)[..., 0]
            for s in (r.x, r.x_moved)
        )
        assert float((a - b)[past].abs().max()) == pytest.approx(r.past_change[kind], abs=1e-12)


def test_forward_fill_carries_the_last_observation_and_zero_before_the_first():
    values = torch.tensor([[[9.0], [2.0], [9.0], [3.0], [9.0]]])
    mask = torch.tensor([[[0.0], [1.0], [0.0], [1.0], [0.0]]])
    assert L.forward_fill(values, mask).flatten().tolist() == [0.0, 2.0, 2.0, 3.0, 3.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_physionet_path_is_causal(dtype):
    gen = torch.Generator().manual_seed(0)
    times = torch.arange(10.0)
    values = torch.randn(3, 10, 4, generator=gen).to(dtype)
    mask = (torch.rand(3, 10, 4, generator=gen) < 0.4).to(dtype)
    later_values, later_mask = values.clone(), mask.clone()
    later_values[:, 7:] += 5.0
    later_mask[:, 7:] = 1.0
    grid = torch.linspace(0, 6 / 48, 50, dtype=dtype)
    a = L.physionet_path(times, values, mask)
    b = L.physionet_path(times, later_values, later_mask)
    assert a.causal and a.evaluate(grid).shape == (3, 50, 1 + 2 * 4)
    assert torch.equal(a.evaluate(grid), b.evaluate(grid))
    assert not torch.equal(a.evaluate(torch.tensor(8 / 48, dtype=dtype)), b.evaluate(torch.tensor(8 / 48, dtype=dtype)))


# ---------------------------------------------------------------- the model


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_neural_cde_gives_one_logit_per_patient_and_trains(dtype):
    gen = torch.Generator().manual_seed(1)
    b, k, d, s = 5, 9, 3, 2
    times = torch.arange(float(k))
    values, mask = torch.randn(b, k, d, generator=gen), (torch.rand(b, k, d, generator=gen) < 0.5).float()
    static, smask = torch.randn(b, s, generator=gen), torch.ones(b, s)
    model = L.NeuralCDE(d, s, hidden=4, width=6).to(dtype)
    args = [x.to(dtype) for x in (values, mask, static, smask)]
    logits = model(times, args[0], args[1], args[2], args[3])
    assert logits.shape == (b,) and logits.dtype == dtype
    assert model.solver_stats["nfe"] == k - 1 and model.solver_stats["n_solves"] == 1  # Euler, one step an hour
    logits.sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.field.parameters())


def test_matched_width_brings_the_parameters_within_ten_percent_of_odernn():
    d, s = 37, 5
    stand_in = SimpleNamespace(values=torch.zeros(2, 3, d), static=torch.zeros(2, s))
    target = L.n_parameters(build_model("odernn", stand_in, settings=PHYSIONET_COURSE))
    head = {"head": PHYSIONET_COURSE.classifier_hidden, "dropout": PHYSIONET_COURSE.classifier_dropout}
    width = L.matched_width(target, d, s, hidden=16, **head)
    count = L.n_parameters(L.NeuralCDE(d, s, 16, width, **head))
    assert abs(count / target - 1) <= L.PARAMETER_TOLERANCE
    # the nearest width: one unit either way is no closer
    for other in (width - 1, width + 1):
        assert abs(L.n_parameters(L.NeuralCDE(d, s, 16, other, **head)) - target) >= abs(count - target)


# ---------------------------------------------------------------- the rule and the row


@pytest.mark.parametrize(
    "gaps, verdict",
    [
        ([0.010, 0.012, 0.008, 0.011], ClaimVerdict.HOLDS),  # interval above -0.02
        ([-0.050, -0.052, -0.048, -0.051], ClaimVerdict.DOES_NOT_HOLD),  # interval below -0.02
        ([-0.10, 0.08, -0.01, 0.03], ClaimVerdict.UNDECIDED),  # interval contains -0.02
        ([0.05, 0.06], ClaimVerdict.UNDECIDED),  # too few seeds for an interval
    ],
)
def test_the_rule_on_constructed_gaps(gaps, verdict):
    assert L.judge_ncde(gaps)[0] is verdict


def _study(gaps, *, n_patients=None, source="shared") -> L.NCDEStudy:
    seeds = tuple(range(len(gaps)))
    config = AUCStudyConfig(models=("summary-logreg", "odernn"), seeds=seeds, n_patients=n_patients, epochs=4)
    runs = [ModelRun("summary-logreg", i, 0.80, 0.1, 0.1, 0, 100, 20) for i in seeds]
    runs += [ModelRun("odernn", i, 0.70 + 0.01 * i, 8.0, 4.0, 3, 100, 20) for i in seeds]
    runs += [ModelRun("ncde", i, 0.70 + 0.01 * i + g, 12.0, 6.0, 4, 100, 20) for i, g in enumerate(gaps)]
    auc = AUCStudy(config, source, 4000, tuple(runs))
    return L.NCDEStudy(L.NCDEConfig(config), auc, (("summary-logreg", None), ("odernn", 1000), ("ncde", 1040)))


def test_findings_quote_parameters_cost_and_the_verdict():
    f = L.NCDEFindings.from_study(_study([0.01, 0.012, 0.008, 0.011]), "full")
    assert f.verdict is ClaimVerdict.HOLDS and f.matched and f.parameter_ratio == pytest.approx(1.04)
    assert [x.model for x in f.lines] == ["ncde", "summary-logreg", "odernn"]
    assert [f.line(m).parameters for m in ("ncde", "odernn", "summary-logreg")] == [1040, 1000, None]
    assert (f.line("ncde").seconds_per_epoch, f.line("ncde").cpu_per_epoch) == (3.0, 1.5)
    assert (f.line("odernn").seconds_per_epoch, f.line("odernn").cpu_per_epoch) == (2.0, 1.0)
    assert f.line("ncde").gap is None and f.line("odernn").gap is not None
    assert_snapshot("lesson11.ncde-holds", f.markdown())


@pytest.mark.parametrize(
    "gaps, kwargs, verdict",
    [
        ([0.01, 0.012, 0.008, 0.011], {}, ClaimVerdict.HOLDS_IN_PART),  # the published part is never decided
        ([-0.05, -0.052, -0.048, -0.051], {}, ClaimVerdict.DOES_NOT_HOLD),
        ([-0.10, 0.08, -0.01, 0.03], {}, ClaimVerdict.UNDECIDED),
        ([0.01, 0.012, 0.008, 0.011], {"n_patients": 600}, ClaimVerdict.UNDECIDED),  # quick scale
        ([0.01, 0.012, 0.008, 0.011], {"source": "synthetic"}, ClaimVerdict.NOT_MEASURABLE),
    ],
)
def test_the_row_follows_the_rule_and_the_unrun_scale_rule(monkeypatch, gaps, kwargs, verdict):
    monkeypatch.setattr(cde_rows, "ncde_study", lambda config: _study(gaps, **kwargs))
    m = cde_rows.measure_ncde_vs_odernn(quick=False)
    assert m.verdict is verdict
    check_unrun_scale(REGISTRY["ncde-vs-odernn"], m)
    # the words are the contract: the row names the published scale it cannot measure, and the counts compared
    assert "not measurable at this scale" in m.measured and "1,040 vs 1,000" in m.measured
