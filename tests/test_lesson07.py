"""Lesson 7 (capstone): the four models, their measurements, and verdicts that can fail."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from nodecourse.claims import Verdict
from nodecourse.lessons import lesson07 as L
from nodecourse.models import count_parameters

SMALL = dataclasses.replace(L.QUICK_CAPSTONE, seeds=(0,), epochs=1, n_samples=300, per_input_samples=5,
                            memory_batch=32)


def test_parameter_counts_match_within_one_percent():
    counts = {}
    for name in L.MODELS:
        torch.manual_seed(0)
        counts[name] = count_parameters(L.build_model(name, L.QUICK_CAPSTONE))
    assert max(counts.values()) <= 1.01 * min(counts.values()), counts


def test_unknown_model_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="ResNet"):
        L.build_model("Transformer", SMALL)


@pytest.mark.parametrize("name", L.MODELS)
def test_each_model_trains_and_reports_its_work(name):
    run = L.train_capstone_model(name, 0, SMALL)
    assert 0.0 <= run.accuracy <= 1.0 and run.train_seconds > 0 and run.saved_bytes > 0
    assert len(run.work_per_epoch) == SMALL.epochs and all(w >= 1 for w in run.work_per_epoch)
    assert len(run.work_per_input) == SMALL.per_input_samples and min(run.work_per_input) >= 1
    if name in ("Neural ODE", "DEQ"):
        assert run.backward_work is not None and run.backward_work > 0
    logits = run.model(torch.zeros(3, 64))
    assert logits.shape == (3, 10)


def test_memory_is_constant_for_adjoint_and_deq_and_linear_for_the_others():
    found = L.memory_findings(L.memory_vs_depth(SMALL))
    assert all(found[n]["work_grows"] for n in L.MODELS), found
    assert all(found[n]["ok"] for n in L.MODELS), found


def test_memory_findings_fail_when_memory_grows_where_it_should_not():
    fake = {n: [{"depth": str(i), "saved_bytes": 1000 * (i + 1), "work": i + 1} for i in range(3)] for n in L.MODELS}
    found = L.memory_findings(fake)
    assert found["ResNet"]["ok"] and not found["Neural ODE"]["ok"] and not found["DEQ"]["ok"]


def test_accuracy_findings():
    rows = [{"model": n, "accuracy_mean": a, "accuracy_sd": 0.005} for n, a in zip(L.MODELS, (0.96, 0.95, 0.95, 0.955))]
    assert L.accuracy_findings(rows)["holds"]
    rows[2]["accuracy_mean"] = 0.90
    assert not L.accuracy_findings(rows)["holds"]
    rows[2]["accuracy_mean"] = 0.50
    assert not L.accuracy_findings(rows)["trained"]


def test_mismatch_findings():
    cfg = L.QUICK_CAPSTONE
    mm = {"unrolled": {k: [0.95 if k == cfg.unrolled_steps else 0.85] for k in cfg.mismatch_steps},
          "deq": {"as trained": [0.93], "tol / 100, 4x iterations": [0.93]}}
    assert L.mismatch_findings(mm, cfg)["holds"]
    mm["deq"]["tol / 100, 4x iterations"] = [0.80]
    assert not L.mismatch_findings(mm, cfg)["holds"]


def test_unrolled_step_count_changes_the_function():
    torch.manual_seed(0)
    model = L.build_model("Unrolled", SMALL)
    x = torch.randn(4, 64)
    with torch.no_grad():
        a = model(x)
        model.core.steps = 8
        b = model(x)
    assert (a - b).abs().max() > 1e-4


def test_summary_table_and_markdown():
    runs = L.capstone_study(SMALL)
    rows = L.summary_table(runs)
    assert [r["model"] for r in rows] == list(L.MODELS)
    text = L.format_summary(rows, {"ResNet": "yes"})
    assert text.count("\n") == len(L.MODELS) + 1 and "| yes |" in text and "not measured" in text


def test_accuracy_row_is_not_measurable_with_two_seeds(monkeypatch):
    monkeypatch.setattr(L, "QUICK_CAPSTONE", dataclasses.replace(SMALL, seeds=(0, 1)))
    m = L.measure_accuracy_parity(True)
    assert m.verdict is Verdict.NOT_MEASURABLE and "seeds" in m.measured
