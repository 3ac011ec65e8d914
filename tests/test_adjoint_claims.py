"""Ledger rows of lesson 4: thresholds declared with the rows, verdicts computed from what was measured
(and able to fail), the atol finding on the axis-aligned problem and the rotated problem's finding."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from nodecourse.claims import ClaimVerdict, load_rows, run_claims
from nodecourse.lessons import lesson04 as L
from nodecourse.measure.gradient_check import analytic_gradient, gradient_table

IDS = ("reversal-steps", "adjoint-memory", "adjoint-gradient-error", "adjoint-error-rotated")


def test_lesson04_rows_are_registered_with_declared_thresholds():
    rows = load_rows()
    for cid in IDS:
        spec = rows[cid]
        assert spec.lesson == "04"
        assert spec.threshold is not None and spec.threshold.kind == "course" and spec.threshold.why
    assert rows["reversal-steps"].threshold is L.REVERSAL_THRESHOLD
    assert rows["adjoint-error-rotated"].threshold is L.ROTATED_THRESHOLD


def test_reversal_row_says_its_source_passage_was_not_located():
    spec = load_rows()["reversal-steps"]
    assert "was not located" in spec.source


def _e(x: float) -> str:
    """1e-06 -> "1e-6", as the threshold texts write numbers."""
    return f"{x:.0e}".replace("e-0", "e-") if x < 0.1 else f"{x:g}"


def test_rotated_threshold_names_the_probe_it_is_judged_on():
    text, p = L.ROTATED_THRESHOLD.text, L.PROBE
    for number in (f"rtol {_e(p.rtol)}", f"atol {_e(p.tight_atol)}", f"T = {p.T:g}", f"{p.angle:g} rad",
                   f"lam = {p.lam:g}", f"> {_e(L.ROTATED_THRESHOLD.value)}"):
        assert number in text, number


# --- reversal-steps: two readings of "about", and the underflow ---------------------------------

def _reversal_rows(euler, implicit, verified=True):
    rows = [{"method": "euler", "lam": -100.0, "steps": euler, "how": "amplification factor", "verified": verified},
            {"method": "implicit_euler", "lam": -100.0, "steps": implicit, "how": "amplification factor",
             "verified": None}]
    return rows


GONE = {"e^lam (float64)": 0.0, "recovered z(0)": 0.0}
KEPT = {"e^lam (float64)": 1e-300, "recovered z(0)": 1.0}


def test_reversal_readings_disagree_at_the_measured_counts():
    f = L.reversal_findings(_reversal_rows(497_430, 502_563), GONE)
    assert f["parts"] == {"within 2x": ClaimVerdict.DOES_NOT_HOLD, "within an order of magnitude": ClaimVerdict.HOLDS,
                          "e^-1e4 underflows": ClaimVerdict.HOLDS}
    assert f["verdict"] is ClaimVerdict.HOLDS_IN_PART


def test_reversal_holds_when_a_first_order_count_is_about_200000():
    assert L.reversal_findings(_reversal_rows(210_000, 500_000), GONE)["verdict"] is ClaimVerdict.HOLDS


def test_reversal_fails_when_counts_are_far_and_nothing_underflows():
    f = L.reversal_findings(_reversal_rows(5_000_000, 5_000_000), KEPT)
    assert set(f["parts"].values()) == {ClaimVerdict.DOES_NOT_HOLD} and f["verdict"] is ClaimVerdict.DOES_NOT_HOLD


def test_reversal_counts_contradicted_by_the_solver_decide_nothing():
    f = L.reversal_findings(_reversal_rows(210_000, 210_000, verified=False), GONE)
    assert f["parts"]["within 2x"] is ClaimVerdict.NOT_MEASURABLE
    assert f["verdict"] is ClaimVerdict.HOLDS_IN_PART  # only the underflow part is decided


def test_reversal_counts_are_the_lessons_table():
    rows = L.reversal_study(L.QUICK_REVERSAL)
    by = {(r["method"], r["lam"]): r["steps"] for r in rows}
    assert by["euler", -100.0] == 497_430 and by["implicit_euler", -100.0] == 502_563
    # no method of the table is within 2x of 200,000 at lam = -100
    assert not any(r["steps"] and 100_000 <= r["steps"] <= 400_000 for r in rows if r["lam"] == -100.0)


# --- adjoint-memory: three parts ------------------------------------------------------------------

def _sweep(backprop, checkpoint, adjoint):
    peaks = {"backprop": backprop, "checkpoint": checkpoint, "adjoint": adjoint}
    return SimpleNamespace(config=SimpleNamespace(modes=tuple(peaks)), peaks=lambda m: peaks[m],
                           growth=lambda m: peaks[m][-1] / peaks[m][0])


def test_memory_holds_on_linear_backprop_and_flat_adjoint():
    f = L.memory_findings(_sweep([10, 20, 40], [3, 4, 5], [3, 3, 3]))
    assert f["verdict"] is ClaimVerdict.HOLDS


def test_memory_fails_in_part_when_the_adjoint_grows():
    f = L.memory_findings(_sweep([10, 20, 40], [3, 4, 5], [3, 3.5, 4]))
    assert f["parts"]["adjoint flat"] is ClaimVerdict.DOES_NOT_HOLD and f["verdict"] is ClaimVerdict.HOLDS_IN_PART


def test_memory_fails_when_backprop_grows_less_than_the_threshold():
    f = L.memory_findings(_sweep([10, 12, 25], [3, 4, 5], [3, 3, 3]))  # 2.5x < 3x
    assert f["parts"]["backprop grows"] is ClaimVerdict.DOES_NOT_HOLD


# --- adjoint-gradient-error: growth, checkpoint accuracy, failed solves ---------------------------

CFG = L.GradientErrorConfig(horizons=(0.5, 3.0), tolerances=(1e-6,))


def _grad_rows(adj_short, adj_long, ck=1e-7):
    return [{"T": T, "tol": 1e-6, "route": route, "rel_error": e}
            for T, a in ((0.5, adj_short), (3.0, adj_long)) for route, e in (("adjoint", a), ("checkpoint", ck))]


def test_gradient_error_holds_on_growth_and_accurate_checkpoint():
    assert L.gradient_error_findings(_grad_rows(1e-6, 1e2), CFG)["verdict"] is ClaimVerdict.HOLDS


def test_gradient_error_fails_without_growth_or_with_a_wrong_checkpoint():
    assert L.gradient_error_findings(_grad_rows(1e-6, 5e-5), CFG)["verdict"] is ClaimVerdict.DOES_NOT_HOLD
    assert L.gradient_error_findings(_grad_rows(1e-6, 1e2, ck=1e-3), CFG)["verdict"] is ClaimVerdict.DOES_NOT_HOLD


def test_gradient_error_failed_solves_decide_nothing():
    f = L.gradient_error_findings(_grad_rows(math.inf, math.inf), CFG)
    assert f["verdict"] is ClaimVerdict.NOT_MEASURABLE and f["failed"] == [1e-6] and f["growth"][1e-6] is None


def test_axis_aligned_error_comes_from_the_absolute_tolerance():
    rows = L.atol_probe(0.0)
    p = L.PROBE
    assert L.probe_value(rows, "adjoint", p.rtol, "theta_error") > 1e3
    assert L.probe_value(rows, "adjoint", p.tight_atol, "theta_error") < 1e-3


# --- adjoint-error-rotated -------------------------------------------------------------------------

def test_rotation_keeps_the_gradient_backprop_matches_the_closed_form():
    t = gradient_table(-10.0, 1.0, rtol=1e-9, atol=1e-12, routes=("backprop",), angle=0.7)
    assert t.row("backprop").rel_error < 1e-6
    assert t.settings["angle"] == 0.7 and analytic_gradient(-10.0, 1.0, 1.0) == gradient_table(
        -10.0, 1.0, routes=("analytic",), angle=0.7).row("analytic").grad


def _probe_rows(adj, ck):
    p = L.PROBE
    return [{"atol": p.tight_atol, "route": "adjoint", "rel_error": adj},
            {"atol": p.tight_atol, "route": "checkpoint", "rel_error": ck}]


def test_rotated_verdicts_follow_both_parts():
    assert L.rotated_findings(_probe_rows(1e4, 1e-8))["verdict"] is ClaimVerdict.HOLDS
    assert L.rotated_findings(_probe_rows(1e-5, 1e-8))["verdict"] is ClaimVerdict.HOLDS_IN_PART
    assert L.rotated_findings(_probe_rows(1e-5, 1e-3))["verdict"] is ClaimVerdict.DOES_NOT_HOLD


def test_rotated_adjoint_stays_wrong_with_tight_atol():
    f = L.rotated_findings(L.atol_probe(L.PROBE.angle))
    assert f["adjoint"] > L.ROTATED_THRESHOLD.value and f["checkpoint"] <= L.PROBE.rtol


# --- the rows themselves in quick mode -------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("cid,needle,verdict", [
    ("reversal-steps", "forward Euler 497,430", ClaimVerdict.HOLDS_IN_PART),
    ("adjoint-memory", "peak MiB backprop", ClaimVerdict.HOLDS),
    ("adjoint-gradient-error", "atol = 1e-20", ClaimVerdict.HOLDS_IN_PART),
    ("adjoint-error-rotated", "rotated 0.7 rad", ClaimVerdict.HOLDS),
])
def test_lesson04_rows_in_quick_mode(cid, needle, verdict):
    (res,) = run_claims([cid], quick=True)
    assert needle in res.measured, res.measured
    assert res.verdict is verdict, res.measured
