"""Lesson 6's ledger rows: verdicts computed from measurements, in quick mode."""
import pytest

from nodecourse.claims import Verdict, load_rows, run_claims
from nodecourse.lessons import lesson06 as L

ROWS = ("anderson-vs-picard", "deq-iteration-growth", "jacobian-regularization", "hutchinson-unbiased")


def test_rows_are_registered_for_lesson_06():
    registry = load_rows()
    assert all(registry[r].lesson == "06" for r in ROWS)


def test_hutchinson_row_holds():
    (res,) = run_claims(["hutchinson-unbiased"], quick=True)
    assert res.verdict is Verdict.HOLDS
    assert all(row["rel_error"] <= 0.02 for row in res.details["rows"])


def test_anderson_row_holds_and_reports_each_problem():
    (res,) = run_claims(["anderson-vs-picard"], quick=True)
    problems = res.details["problems"]
    assert len(problems) == 6 and all(p["reached"] for p in problems.values())
    assert res.verdict is Verdict.HOLDS
    assert all(p["anderson"] <= 0.5 * p["picard"] for p in problems.values())


def test_findings_logic_flags_a_slow_anderson():
    from nodecourse.deq.compare import SolverRun

    study = {("linear", 0.9): [SolverRun("nodecourse", "picard", 100, True, 1e-9),
                               SolverRun("nodecourse", "anderson", 60, True, 1e-9),
                               SolverRun("torchdeq", "anderson", 50, True, 1e-9)]}
    f = L.anderson_findings(study)["linear rho=0.9"]
    assert f["half_of_picard"] is False and f["not_worse_than_torchdeq"] is False


@pytest.mark.slow
def test_training_rows_in_quick_mode():
    growth, reg = run_claims(["deq-iteration-growth", "jacobian-regularization"], quick=True)
    assert len(growth.details["growth"]) >= 2  # at least two seeds
    assert growth.verdict in (Verdict.HOLDS, Verdict.DOES_NOT_HOLD)
    assert reg.verdict in (Verdict.HOLDS, Verdict.DOES_NOT_HOLD)
    # the verdicts follow from the numbers they report
    assert (growth.verdict is Verdict.HOLDS) == all(g > 1.5 for g in growth.details["growth"].values())
    assert (reg.verdict is Verdict.HOLDS) == all(reg.details["fewer_iterations_per_seed"].values())
