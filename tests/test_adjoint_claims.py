"""Ledger rows of lesson 4: thresholds declared with the rows, verdicts computed from what was measured
(and able to fail), the atol finding on the axis-aligned problem and the rotated problem's finding."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from nodecourse.claims import ClaimVerdict, load_rows, run_claims
from nodecourse.lessons import lesson04 as L
from nodecourse.measure import analytic_gradient, gradient_table

IDS = ("reversal-steps", "adjoint-memory", "adjoint-gradient-error", "adjoint-error-rotated")


def test_lesson04_rows_are_registered_with_declared_thresholds():
    rows = load_rows()
    for cid in IDS:
        spec = rows[cid]
        assert spec.lesson == "04"
        assert spec.threshold is not None and spec.threshold.kind == "course" and spec.threshold.why
    assert rows["reversal-steps"].threshold is L.REVERSAL_THRESHOLD
    assert rows["adjoint-error-rotated"].threshold is L.ROTATED_THRESHOLD


def test_reversal_row_says_where_the_200000_comes_from_and_judges_the_derived_count():
    spec = load_rows()["reversal-steps"]
    # the figure is quoted with ANODE's account of the reversal instability (issue 38): the row says so
    assert "200,000" in spec.source and "Gholami et al. 2019" in spec.source and "ANODE" in spec.source
    for text in (spec.source, spec.published, spec.threshold.text, spec.threshold.why):
        for word in ("unlocated", "seed figure", "course plan"):
            assert word not in text.lower(), (word, text)
    assert "500,000" in spec.threshold.text and "decides nothing" in spec.threshold.text
    assert L.DERIVED_REVERSAL_STEPS == 50 * 100**2 == L.derived_reversal_steps(-100.0)


def _e(x: float) -> str:
    """1e-06 -> "1e-6", as the threshold texts write numbers."""
    return f"{x:.0e}".replace("e-0", "e-") if x < 0.1 else f"{x:g}"


def test_rotated_threshold_names_the_probe_it_is_judged_on():
    text, p = L.ROTATED_THRESHOLD.text, L.PROBE
    for number in (
        f"rtol {_e(p.rtol)}",
        f"atol {_e(p.tight_atol)}",
        f"T = {p.T:g}",
        f"{p.angle:g} rad",
        f"lam = {p.lam:g}",
        f"> {_e(L.ROTATED_THRESHOLD.value)}",
    ):
        assert number in text, number


# --- reversal-steps: two readings of "about", and the underflow ---------------------------------


def _reversal_rows(euler, implicit, verified=True):
    return (
        L.ReversalCount("euler", -100.0, euler, "amplification factor", verified),
        L.ReversalCount("implicit_euler", -100.0, implicit, "amplification factor", None),
        L.ReversalCount("midpoint", -100.0, 7_000, "amplification factor", None),
    )


GONE = L.UnderflowCase(-1e4, 0.0, 0, 0.0)
KEPT = L.UnderflowCase(-1e4, 1e-300, 53, 1.0)
COUNT_PARTS = ("forward Euler within 10 % of 50 lam^2", "backward Euler within 10 % of 50 lam^2")


def test_reversal_holds_at_the_measured_counts():
    f = L.ReversalFindings.from_study(_reversal_rows(497_430, 502_563), GONE)
    assert f.parts == {
        COUNT_PARTS[0]: ClaimVerdict.HOLDS,
        COUNT_PARTS[1]: ClaimVerdict.HOLDS,
        "solver confirms the counts": ClaimVerdict.HOLDS,
        "e^-1e4 underflows": ClaimVerdict.HOLDS,
    }
    assert f.verdict is ClaimVerdict.HOLDS
    assert f.ratio("euler") == pytest.approx(497_430 / 500_000)


def test_reversal_does_not_hold_at_the_unlocated_seed_figure():
    """Counts of about 200,000 (the seed figure) are 60 % below the derived count: both count parts fail."""
    f = L.ReversalFindings.from_study(_reversal_rows(210_000, 200_000), GONE)
    assert [f.parts[p] for p in COUNT_PARTS] == [ClaimVerdict.DOES_NOT_HOLD] * 2
    assert f.verdict is ClaimVerdict.HOLDS_IN_PART


def test_reversal_band_edges_are_the_declared_tolerance():
    inside = L.ReversalFindings.from_study(_reversal_rows(450_000, 550_000), GONE)
    outside = L.ReversalFindings.from_study(_reversal_rows(449_000, 551_000), GONE)
    assert all(inside.parts[p] is ClaimVerdict.HOLDS for p in COUNT_PARTS)
    assert all(outside.parts[p] is ClaimVerdict.DOES_NOT_HOLD for p in COUNT_PARTS)


def test_reversal_fails_when_counts_are_far_and_nothing_underflows():
    f = L.ReversalFindings.from_study(_reversal_rows(5_000_000, None), KEPT)
    assert f.parts["e^-1e4 underflows"] is ClaimVerdict.DOES_NOT_HOLD
    assert f.parts[COUNT_PARTS[1]] is ClaimVerdict.DOES_NOT_HOLD  # no count found
    assert f.verdict is ClaimVerdict.HOLDS_IN_PART  # the solver check still holds


def test_reversal_counts_contradicted_by_the_solver_fail_their_part():
    f = L.ReversalFindings.from_study(_reversal_rows(497_430, 502_563, verified=False), GONE)
    assert f.parts["solver confirms the counts"] is ClaimVerdict.DOES_NOT_HOLD
    assert f.verdict is ClaimVerdict.HOLDS_IN_PART
    assert f.checks == (0, 1)


def test_reversal_counts_are_the_lessons_table():
    rows = L.reversal_study(L.QUICK_REVERSAL)
    by = {(r.method, r.lam): r.steps for r in rows}
    assert by["euler", -100.0] == 497_430 and by["implicit_euler", -100.0] == 502_563
    table = L.reversal_table(rows)
    assert "497430" in table and "impossible" in table


# --- adjoint-memory: three parts ------------------------------------------------------------------


def _sweep(backprop, checkpoint, adjoint):
    peaks = {"backprop": backprop, "checkpoint": checkpoint, "adjoint": adjoint}
    return SimpleNamespace(
        config=SimpleNamespace(modes=tuple(peaks), steps=(8, 16, 32)),
        peaks=lambda m: peaks[m],
        growth=lambda m: peaks[m][-1] / peaks[m][0],
    )


def test_memory_holds_on_linear_backprop_and_flat_adjoint():
    f = L.MemoryFindings.from_sweep(_sweep([10, 20, 40], [3, 4, 5], [3, 3, 3]))
    assert f.verdict is ClaimVerdict.HOLDS


def test_memory_fails_in_part_when_the_adjoint_grows():
    f = L.MemoryFindings.from_sweep(_sweep([10, 20, 40], [3, 4, 5], [3, 3.5, 4]))
    assert f.parts["adjoint flat"] is ClaimVerdict.DOES_NOT_HOLD and f.verdict is ClaimVerdict.HOLDS_IN_PART


def test_memory_fails_when_backprop_grows_less_than_the_threshold():
    f = L.MemoryFindings.from_sweep(_sweep([10, 12, 25], [3, 4, 5], [3, 3, 3]))  # 2.5x < 3x
    assert f.parts["backprop grows"] is ClaimVerdict.DOES_NOT_HOLD


# --- adjoint-gradient-error: growth, checkpoint accuracy, failed solves ---------------------------

CFG = L.GradientErrorConfig(horizons=(0.5, 3.0), tolerances=(1e-6,))


def _grad_rows(adj_short, adj_long, ck=1e-7):
    return [
        {"T": T, "tol": 1e-6, "route": route, "rel_error": e}
        for T, a in ((0.5, adj_short), (3.0, adj_long))
        for route, e in (("adjoint", a), ("checkpoint", ck))
    ]


def test_gradient_error_holds_on_growth_and_accurate_checkpoint():
    assert L.GradientErrorFindings.from_sweep(_grad_rows(1e-6, 1e2), CFG).verdict is ClaimVerdict.HOLDS


def test_gradient_error_fails_without_growth_or_with_a_wrong_checkpoint():
    assert L.GradientErrorFindings.from_sweep(_grad_rows(1e-6, 5e-5), CFG).verdict is ClaimVerdict.DOES_NOT_HOLD
    assert L.GradientErrorFindings.from_sweep(_grad_rows(1e-6, 1e2, ck=1e-3), CFG).verdict is ClaimVerdict.DOES_NOT_HOLD


def test_gradient_error_failed_solves_decide_nothing():
    f = L.GradientErrorFindings.from_sweep(_grad_rows(math.inf, math.inf), CFG)
    assert f.verdict is ClaimVerdict.NOT_MEASURABLE and f.failed == [1e-6] and f.growth[1e-6] is None


def test_axis_aligned_error_comes_from_the_absolute_tolerance():
    rows = L.atol_probe(0.0)
    p = L.PROBE
    assert L.probe_value(rows, "adjoint", p.rtol, "theta_error") > 1e3
    assert L.probe_value(rows, "adjoint", p.tight_atol, "theta_error") < 1e-3


# --- adjoint-error-rotated -------------------------------------------------------------------------


def test_rotation_keeps_the_gradient_backprop_matches_the_closed_form():
    t = gradient_table(-10.0, 1.0, rtol=1e-9, atol=1e-12, routes=("backprop",), angle=0.7)
    assert t.row("backprop").rel_error < 1e-6
    assert (
        t.settings["angle"] == 0.7
        and analytic_gradient(-10.0, 1.0, 1.0)
        == gradient_table(-10.0, 1.0, routes=("analytic",), angle=0.7).row("analytic").grad
    )


def _probe_rows(adj, ck):
    p = L.PROBE
    return [
        L.ProbeResult(p.tight_atol, p.angle, "adjoint", adj, adj, 100, 200, "success"),
        L.ProbeResult(p.tight_atol, p.angle, "checkpoint", ck, ck, 100, 100, "success"),
    ]


def test_rotated_verdicts_follow_both_parts():
    assert L.RotatedFindings.from_probe(_probe_rows(1e4, 1e-8)).verdict is ClaimVerdict.HOLDS
    assert L.RotatedFindings.from_probe(_probe_rows(1e-5, 1e-8)).verdict is ClaimVerdict.HOLDS_IN_PART
    assert L.RotatedFindings.from_probe(_probe_rows(1e-5, 1e-3)).verdict is ClaimVerdict.DOES_NOT_HOLD


def test_rotated_adjoint_stays_wrong_with_tight_atol():
    f = L.RotatedFindings.from_probe(L.atol_probe(L.PROBE.angle))
    assert f.adjoint > L.ROTATED_THRESHOLD.value and f.checkpoint <= L.PROBE.rtol


# --- the rows themselves in quick mode -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "cid,needle,verdict",
    [
        ("reversal-steps", "forward Euler 497,430", ClaimVerdict.HOLDS),
        ("adjoint-memory", "peak MiB backprop", ClaimVerdict.HOLDS),
        ("adjoint-gradient-error", "atol = 1e-20", ClaimVerdict.HOLDS_IN_PART),
        ("adjoint-error-rotated", "rotated 0.7 rad", ClaimVerdict.HOLDS),
    ],
)
def test_lesson04_rows_in_quick_mode(cid, needle, verdict):
    (res,) = run_claims([cid], quick=True)
    assert needle in res.measured, res.measured
    assert res.verdict is verdict, res.measured
