"""Lesson 9's findings, built from small hand-made measurements: each sentence follows its numbers."""

import math

import pytest
import torch

from nodecourse.audit.report import AuditReport, StepResult
from nodecourse.lessons import lesson09 as L


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
    assert text.startswith("**⚠ Synthetic data") and "480 patients" in text and "18.0 %" in text
    assert "Synthetic" not in L.AuditDataFindings(_model(False)).markdown()


@pytest.mark.parametrize(
    "low, high, words",
    [
        (0.01, 0.1, "model is better"),
        (-0.1, -0.01, "counterpart is better"),
        (-0.02, 0.12, "cannot tell"),
        (math.nan, math.nan, "too few"),
    ],
)
def test_baseline_findings_read_the_interval(low, high, words):
    step = _step(1, data={"quality": {"metric": "AUC", "diff": 0.033, "low": low, "high": high}, "time_ratio": 4 / 3})
    text = L.BaselineFindings.from_step(step).markdown()
    assert words in text and "+0.033" in text and "0.75x" in text


def test_baseline_findings_speak_points_for_accuracy():
    f = L.BaselineFindings("accuracy", 0.018, -0.011, 0.049, 0.07)
    assert "+1.8 points" in f.markdown() and "-1.1 points" in f.markdown()


def _budget(longer=0, by_rule=48):
    return L.StepBudget(
        ideal=48, longer=longer, gaps=120, naive=48 + longer, by_rule=by_rule, step=1 / 48, horizon_hours=48.0
    )


def test_work_findings_no_extra_steps_says_why():
    text = L.WorkFindings(48, _budget(0)).markdown()
    assert "Median 48 NFE" in text and "48 one-hour steps" in text and "no extra steps" in text
    assert "0 of the grid's 120 gaps" in text and "sliver" in text and "more." not in text


def test_work_findings_extra_steps_are_explained_as_slivers():
    text = L.WorkFindings(60, _budget(12, by_rule=60)).markdown()
    assert "12 more" in text and "12 of the grid's 120 gaps" in text and "sliver-sized one" in text
    assert "gives 60 steps, the library's rule 60" in text and "no extra steps" not in text


def test_work_findings_fewer_steps_and_slivers_the_rule_absorbs():
    assert "4 fewer" in L.WorkFindings(44, _budget(0)).markdown()
    text = L.WorkFindings(48, _budget(3)).markdown()
    assert "no extra steps" in text and "would take 51" in text and "(48 steps)" in text


def _shift_report(diff, low, high):
    step4 = _step(
        4, data={"shift": {"vs_test": {"a": 0.633 + diff, "b": 0.633, "diff": diff, "low": low, "high": high}}}
    )
    return _report([step4])


def test_shift_findings_call_a_rise_a_rise():
    text = L.ShiftFindings.from_report(_shift_report(0.063, -0.1, 0.2), "medical").markdown()
    assert "a rise of 0.063 (shifted minus held-out: +0.063," in text and "drop" not in text and "not decided" in text
    assert text.startswith("Medical-ICU patients: AUC 0.696 against 0.633")


def test_shift_findings_drop_decided_or_not():
    assert (
        "The whole interval is below zero: the drop is real"
        in L.ShiftFindings.from_report(_shift_report(-0.2, -0.3, -0.05), "medical").markdown()
    )
    # a fall is a drop of a positive size; the signed difference is named as one
    text = L.ShiftFindings.from_report(_shift_report(-0.106, -0.352, 0.109), "medical").markdown()
    assert "a drop of 0.106 (shifted minus held-out: -0.106, 95 % bootstrap interval -0.352 to +0.109" in text
    assert "of -" not in text
    # accuracy: the size in points, unsigned
    acc = L.ShiftFindings("medical", "accuracy", 0.70, 0.75, -0.05, -0.09, -0.01).markdown()
    assert "a drop of 5.0 points (shifted minus held-out: -5.0 points" in acc
    assert "scored better" in L.ShiftFindings.from_report(_shift_report(0.1, 0.02, 0.2), "medical").markdown()
    assert (
        "nothing is decided"
        in L.ShiftFindings.from_report(_shift_report(0.0, math.nan, math.nan), "medical").markdown()
    )


def test_mdeq_findings_quote_the_published_gap_and_the_measured_one():
    text = L.MdeqFindings("accuracy", 0.018, -0.011, 0.049, 0.07).markdown()
    assert "1.6 points" in text and "77.5 % against 75.9 %" in text and "+1.8 points" in text
    assert "neither is ahead" in text and "0.07x" in text
    assert "as in MDEQ" in L.MdeqFindings("accuracy", 0.02, 0.01, 0.03, 0.1).markdown()


def test_step_summaries_carry_reasons_and_the_unconverged_note():
    report = _report([_step(1), _step(4, "problem", "noise hurts", reasons=["14 of 450 rows fail"])], name="DEQ")
    text = L.StepSummaries.from_report(report, (1, 4), model=_model(False, unconverged=7)).markdown()
    assert "**DEQ, step 4 (problem).** noise hurts\n- 14 of 450 rows fail" in text
    assert "7 backward passes" in text
    assert "backward passes" not in L.StepSummaries.from_report(report, (1,), model=_model(False)).markdown()


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
    text = L.RouteFindings.from_step(step).markdown()
    assert "step 5: problem; trains with adjoint" in text
    assert "as written (adjoint) (judged): not within the ok threshold" in text
    assert "backprop (an alternative): within the ok threshold" in text
    assert "checkpoint (an alternative): not run: ValueError: not for this solve" in text


def test_verdict_table_has_a_column_per_model():
    a, b = _report([_step(1), _step(2, "warning")]), _report([_step(1, "problem"), _step(2)])
    text = L.VerdictTable.from_reports({"first": a, "second": b}).markdown()
    assert "| step | first | second |" in text and "| 2. step 2 | **warning** (1 s) | **ok** (1 s) |" in text
    assert "| whole audit | 3 s | 3 s |" in text


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
    text = L.FoundSolve.from_report(report).markdown()
    assert "`torchdiffeq.odeint_adjoint`" in text and "state (2,)" in text and "**adjoint**" in text


def test_a_step_displays_itself_in_one_line():
    step = _step(3, "warning", "looser solves lose accuracy", reasons=["breaks at 10x"])
    assert step._repr_markdown_() == "**Step 3. step 3: warning.** looser solves lose accuracy\n- breaks at 10x"


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
