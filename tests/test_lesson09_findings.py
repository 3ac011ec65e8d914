"""Lesson 9's findings, built from small hand-made measurements: each sentence follows its numbers. The
tests assert the fields a sentence quotes; the words are kept whole in one snapshot per variant
(tests/snapshots/lesson09.*.md)."""

import math

import pytest
import torch
from snapshot_support import assert_snapshot

from nodecourse.audit._report import AuditReport, StepResult
from nodecourse.lessons import lesson09 as L
from nodecourse.lessons.lesson09.findings import interval_side, quality_text


def _model(synthetic: bool, unconverged: int = 0) -> L.CourseModel:
    info = {
        "synthetic": synthetic,
        "n_train": 480,
        "n_test": 120,
        "n_shift": 200,
        "shift_unit": "medical",
        "train_units": ["coronary care", "surgical"],
        "epochs": 3,
        "mortality": {"train": 0.11, "test": 0.108, "shift": 0.18},
    }
    return L.CourseModel(
        "physionet-odernn", torch.nn.Linear(1, 1), "classification", (), (), None, 3, 1e-3, 64, info, 1.2, unconverged
    )


def _step(number, verdict="ok", summary="a sentence", data=None, reasons=()):
    return StepResult(number, f"step {number}", verdict, summary, data or {}, reasons=list(reasons), seconds=1.0)


def _report(steps, metric="AUC", name="m") -> AuditReport:
    return AuditReport(
        {"name": name, "parameters": 10, "cores": ["c"], "settings": []},
        {"metric": metric, "mode": "quick", "task": "classification", "n_train": 1, "n_test": 1},
        steps,
        3.0,
    )


def test_data_findings_warn_first_on_the_stand_in():
    text = L.AuditDataFindings(_model(True)).markdown()
    assert text.startswith("**⚠ Synthetic data")  # the warning comes first, before any number
    assert_snapshot("lesson09.audit-data-synthetic", text)
    real = L.AuditDataFindings(_model(False)).markdown()
    assert "Synthetic" not in real
    assert_snapshot("lesson09.audit-data-real", real)


@pytest.mark.parametrize(
    "low, high, side",
    [(0.01, 0.1, "above"), (-0.1, -0.01, "below"), (-0.02, 0.12, "contains"), (math.nan, math.nan, "none")],
)
def test_baseline_findings_read_the_interval(low, high, side):
    step = _step(1, data={"quality": {"metric": "AUC", "diff": 0.033, "low": low, "high": high}, "time_ratio": 4 / 3})
    f = L.BaselineFindings.from_step(step)
    assert (f.metric, f.diff, f.baseline_time) == ("AUC", 0.033, pytest.approx(0.75))
    assert interval_side(f.low, f.high) == side
    assert_snapshot(f"lesson09.baseline-{side}", f.markdown())


def test_baseline_findings_speak_points_for_accuracy():
    f = L.BaselineFindings("accuracy", 0.018, -0.011, 0.049, 0.07)
    assert quality_text(f.metric, f.diff, signed=True) == "+1.8 points"
    assert quality_text(f.metric, f.low, signed=True) == "-1.1 points"
    assert_snapshot("lesson09.baseline-accuracy-points", f.markdown())


def _budget(longer=0, by_rule=48):
    return L.StepBudget(
        ideal=48, longer=longer, gaps=120, naive=48 + longer, by_rule=by_rule, step=1 / 48, horizon_hours=48.0
    )


def test_work_findings_no_extra_steps_says_why():
    f = L.WorkFindings(48, _budget(0))
    assert f.median == f.budget.ideal == 48 and (f.budget.longer, f.budget.gaps) == (0, 120)
    assert f.budget.horizon_hours * f.budget.step == pytest.approx(1.0)  # one-hour steps
    assert_snapshot("lesson09.work-no-extra-steps", f.markdown())


def test_work_findings_extra_steps_are_explained_as_slivers():
    f = L.WorkFindings(60, _budget(12, by_rule=60))
    assert f.median - f.budget.ideal == 12 and f.budget.longer == 12
    assert (f.budget.naive, f.budget.by_rule) == (60, 60)
    assert_snapshot("lesson09.work-extra-steps", f.markdown())


def test_work_findings_fewer_steps_and_slivers_the_rule_absorbs():
    fewer = L.WorkFindings(44, _budget(0))
    assert fewer.median - fewer.budget.ideal == -4
    assert_snapshot("lesson09.work-fewer-steps", fewer.markdown())
    absorbed = L.WorkFindings(48, _budget(3))
    assert absorbed.median == absorbed.budget.by_rule == 48 and absorbed.budget.naive == 51
    assert_snapshot("lesson09.work-slivers-absorbed", absorbed.markdown())


def _shift_report(diff, low, high):
    step4 = _step(
        4, data={"shift": {"vs_test": {"a": 0.633 + diff, "b": 0.633, "diff": diff, "low": low, "high": high}}}
    )
    return _report([step4])


def test_shift_findings_call_a_rise_a_rise():
    f = L.ShiftFindings.from_report(_shift_report(0.063, -0.1, 0.2), "medical")
    assert (f.shift_unit, f.metric, f.test, f.diff) == ("medical", "AUC", 0.633, 0.063)
    assert f.shifted == pytest.approx(0.696) and interval_side(f.low, f.high) == "contains"
    assert "drop" not in f.markdown()
    assert_snapshot("lesson09.shift-rise-undecided", f.markdown())


def test_shift_findings_drop_decided_or_not():
    real = L.ShiftFindings.from_report(_shift_report(-0.2, -0.3, -0.05), "medical")
    assert real.diff < 0 and interval_side(real.low, real.high) == "below"
    assert_snapshot("lesson09.shift-drop-decided", real.markdown())
    # a fall is a drop of a positive size; the signed difference is named as one
    f = L.ShiftFindings.from_report(_shift_report(-0.106, -0.352, 0.109), "medical")
    assert (f.diff, f.low, f.high) == (-0.106, -0.352, 0.109) and interval_side(f.low, f.high) == "contains"
    assert "of -" not in f.markdown()
    assert_snapshot("lesson09.shift-drop-undecided", f.markdown())
    # accuracy: the size in points, unsigned
    acc = L.ShiftFindings("medical", "accuracy", 0.70, 0.75, -0.05, -0.09, -0.01)
    assert quality_text(acc.metric, acc.diff, signed=True) == "-5.0 points" and "of -" not in acc.markdown()
    assert_snapshot("lesson09.shift-drop-accuracy-points", acc.markdown())
    better = L.ShiftFindings.from_report(_shift_report(0.1, 0.02, 0.2), "medical")
    assert interval_side(better.low, better.high) == "above"
    assert_snapshot("lesson09.shift-rise-decided", better.markdown())
    none = L.ShiftFindings.from_report(_shift_report(0.0, math.nan, math.nan), "medical")
    assert none.diff == 0 and interval_side(none.low, none.high) == "none"
    assert_snapshot("lesson09.shift-no-interval", none.markdown())


def test_mdeq_findings_quote_the_published_gap_and_the_measured_one():
    f = L.MdeqFindings("accuracy", 0.018, -0.011, 0.049, 0.07)
    assert interval_side(f.low, f.high) == "contains" and f.truncation_time == 0.07
    assert_snapshot("lesson09.mdeq-neither-ahead", f.markdown())
    ahead = L.MdeqFindings("accuracy", 0.02, 0.01, 0.03, 0.1)
    assert interval_side(ahead.low, ahead.high) == "above"
    assert_snapshot("lesson09.mdeq-deq-ahead", ahead.markdown())


def test_step_summaries_carry_reasons_and_the_unconverged_note():
    report = _report([_step(1), _step(4, "problem", "noise hurts", reasons=["14 of 450 rows fail"])], name="DEQ")
    f = L.StepSummaries.from_report(report, (1, 4), model=_model(False, unconverged=7))
    assert f.name == "DEQ" and [(s.step, s.verdict) for s in f.steps] == [(1, "ok"), (4, "problem")]
    assert f.steps[1].reasons == ["14 of 450 rows fail"] and "7 backward passes" in f.note
    assert_snapshot("lesson09.step-summaries-unconverged", f.markdown())
    converged = L.StepSummaries.from_report(report, (1,), model=_model(False))
    assert converged.note == "" and "backward passes" not in converged.markdown()
    assert_snapshot("lesson09.step-summaries", converged.markdown())


def test_route_findings_say_why_a_route_did_not_run():
    step = _step(
        5,
        "problem",
        data={
            "ok_threshold": 1e-4,
            "route_used": "adjoint",
            "routes": [
                {"route": "as written (adjoint)", "used": True, "median": 1e4, "high": 2e4},
                {"route": "backprop", "used": False, "median": 3e-7, "high": 5e-7},
                {"route": "checkpoint", "used": False, "median": None, "failed": "ValueError: not for this solve"},
            ],
        },
    )
    f = L.RouteFindings.from_step(step)
    assert (f.verdict, f.route_used) == ("problem", "adjoint")
    assert f.routes == (
        ("as written (adjoint)", True, False, ""),
        ("backprop", False, True, ""),
        ("checkpoint", False, None, "ValueError: not for this solve"),
    )
    # the words are the contract: a route that did not run says why, in the solver's own words
    assert "checkpoint (an alternative): not run: ValueError: not for this solve" in f.markdown()
    assert_snapshot("lesson09.routes", f.markdown())


def test_verdict_table_has_a_column_per_model():
    a, b = _report([_step(1), _step(2, "warning")]), _report([_step(1, "problem"), _step(2)])
    f = L.VerdictTable.from_reports({"first": a, "second": b})
    assert [name for name, _ in f.reports] == ["first", "second"]
    assert [[r.step(n).verdict for n in (1, 2)] for _, r in f.reports] == [["ok", "warning"], ["problem", "ok"]]
    assert_snapshot("lesson09.verdict-table", f.markdown())


def test_found_solve_names_the_call():
    report = _report([_step(1)])
    report.model["settings"] = [
        {
            "entry": "torchdiffeq.odeint_adjoint",
            "state": [96, 2],
            "dtype": "float64",
            "grid": [0.0, 3.0],
            "rtol": 1e-6,
            "atol": 1e-6,
            "method": "dopri5",
            "gradient": "adjoint",
        }
    ]
    f = L.FoundSolve.from_report(report)
    assert (f.entry, f.state, f.gradient) == ("torchdiffeq.odeint_adjoint", (2,), "adjoint")
    assert (f.dtype, f.grid, f.rtol, f.atol, f.method) == ("float64", [0.0, 3.0], 1e-6, 1e-6, "dopri5")
    assert_snapshot("lesson09.found-solve", f.markdown())


def test_a_step_displays_itself_in_one_line():
    step = _step(3, "warning", "looser solves lose accuracy", reasons=["breaks at 10x"])
    assert_snapshot("lesson09.step-display", step._repr_markdown_())
    assert step._repr_markdown_().count("\n") == 1  # the step's line, then its one reason


def test_step_budget_of_an_hourly_grid():
    """An untrained ODE-RNN on a grid of whole hours: 48 one-hour steps by the library's rule, whatever
    float32 does to the gaps (a naive ceil count pays one more step per gap that rounds long)."""
    from nodecourse.audit import SharedInputs
    from nodecourse.models.latent import ODERNN

    torch.manual_seed(0)
    model = SharedInputs(ODERNN(3, 2, hidden_dim=4, ode_hidden=4), torch.arange(49, dtype=torch.float32))
    budget = L.step_budget(L.CourseModel("m", model, "classification", (), (), None, 1, 1e-3, 8))
    assert (budget.ideal, budget.gaps, budget.by_rule) == (48, 48, 48)
    assert budget.naive == 48 + budget.longer
    assert L.WorkFindings(48, budget).markdown().count("no extra steps") == 1
