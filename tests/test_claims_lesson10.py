"""Lesson 10's ledger rows: the judging logic on fake inputs (fast), and the cheap rows at quick-mode
size: reversible Heun's gradient against backprop, memory flat in the steps, the route table."""

from __future__ import annotations

import math

import pytest

from nodecourse.claims import REGISTRY, ClaimVerdict, load_rows, run_claims
from nodecourse.lessons import lesson10 as L

ROWS = (
    "ode-nfe-growth",
    "kinetic-regularization-nfe",
    "seminorm-backward-nfe",
    "reversible-gradient-exact",
    "reversible-memory-flat",
)


def test_rows_are_registered_with_their_thresholds():
    load_rows()
    for cid in ROWS:
        spec = REGISTRY[cid]
        assert spec.lesson == "10" and spec.threshold.text
        assert spec.threshold.kind in ("published", "course")
    assert REGISTRY["seminorm-backward-nfe"].threshold.value == 0.40  # the published median, 40 %
    assert L.PUBLISHED_SPEEDUP == 2.8 and L.RNODE_WEIGHTS == (0.01, 0.01)


def _runs(setting, nfe_by_seed, acc=0.9, seconds=1.0):
    return tuple(
        L.MoonsRun(setting, 0.0, 0.0, s, tuple(nfe), acc, nfe[-1], seconds) for s, nfe in enumerate(nfe_by_seed)
    )


def test_growth_verdict_turns_with_the_evidence():
    climbing = _runs("none", [[20] * 10 + [40 + k] * 90 for k in range(4)])
    flat = _runs("none", [[20 + (k % 2)] * 100 for k in range(4)])
    assert L.NFEGrowthFindings.from_runs(climbing).verdict is ClaimVerdict.HOLDS
    assert L.NFEGrowthFindings.from_runs(flat).verdict is ClaimVerdict.DOES_NOT_HOLD


def test_regularisation_parts_are_judged_apart():
    base = _runs("none", [[20] * 10 + [50 + k] * 90 for k in range(5)], acc=0.95, seconds=1.0)
    reg = _runs("kinetic+Jacobian", [[20] * 10 + [25 + k] * 90 for k in range(5)], acc=0.95, seconds=2.0)
    f = L.RegularisationFindings.from_runs(base + reg)
    parts = dict(f.parts)
    assert f.parts[0] == ("published figure (FFJORD on MNIST, GPU wall clock)", ClaimVerdict.NOT_MEASURABLE)
    assert parts["analogue: fewer NFE"] is ClaimVerdict.HOLDS
    assert parts["analogue: accuracy within 2 points"] is ClaimVerdict.HOLDS
    assert parts[L.FASTER_PART] is ClaimVerdict.DOES_NOT_HOLD  # slower on every seed: not faster at all
    assert f.verdict is ClaimVerdict.HOLDS_IN_PART


def _task(name, ours, torchdiffeq):
    """A seminorm task whose per-seed savings are ``ours`` and ``torchdiffeq`` (backward NFE out of 100)."""
    counts = tuple(
        L.SeminormCount(s, 100, round(100 * (1 - a)), 100, round(100 * (1 - b)))
        for s, (a, b) in enumerate(zip(ours, torchdiffeq))
    )
    return L.SeminormTaskResult(L.SeminormTask(name, "mlp"), counts)


def test_seminorm_readings_that_disagree_hold_in_part():
    results = tuple(_task(f"t{k}", [0.5 + 0.01 * k] * 2, [0.01 * k] * 2) for k in range(5))
    f = L.SeminormFindings.from_results(results)
    assert dict(f.readings)["nodecourse"] is ClaimVerdict.HOLDS
    assert dict(f.readings)["torchdiffeq"] is ClaimVerdict.DOES_NOT_HOLD
    assert f.verdict is ClaimVerdict.HOLDS_IN_PART


def test_seminorm_is_judged_by_the_median_over_tasks():
    # one task far below the threshold does not sink a median that is above it on every other task...
    mostly = tuple(_task(f"t{k}", [0.45 + 0.01 * k], [0.45 + 0.01 * k]) for k in range(6)) + (
        _task("outlier", [-0.5], [-0.5]),
    )
    f = L.SeminormFindings.from_results(mostly)
    assert f.medians[0].median == pytest.approx(0.47)
    # ...but with seven values the median's interval is their range, which contains 0.40: undecided
    assert f.verdict is ClaimVerdict.UNDECIDED
    # too few tasks for a median's interval: undecided, whatever the values
    assert L.SeminormFindings.from_results(mostly[:3]).verdict is ClaimVerdict.UNDECIDED


def test_seminorm_threshold_names_its_tasks_and_the_deciding_readings():
    text = L.SEMINORM_THRESHOLD.text
    assert "median over tasks" in text and "judge_median" in text and "both deciding" in text
    assert len(L.QUICK_SEMINORM.tasks) == len(L.FULL_SEMINORM.tasks) == 7


def test_exact_row_holds_and_the_adjoint_beside_it_is_not_exact():
    (r,) = run_claims(["reversible-gradient-exact"], quick=True)
    assert r.verdict is ClaimVerdict.HOLDS and r.seeds == len(L.QUICK_EXACT.seeds)
    rows = r.details["rows"]
    assert max(x["reversible_error"] for x in rows) < 1e-12
    assert min(x["adjoint_error"] for x in rows) > 1e-10


@pytest.mark.slow
def test_memory_row_holds_at_quick_size():
    (r,) = run_claims(["reversible-memory-flat"], quick=True)
    assert r.verdict in (ClaimVerdict.HOLDS, ClaimVerdict.NOT_MEASURABLE)
    if r.verdict is ClaimVerdict.HOLDS:
        assert r.details["growth"]["backprop"] >= 3.0 and r.details["growth"]["reversible"] <= 1.2


def test_route_table_reversible_matches_its_own_finite_differences():
    table = {route.name: route for route in L.route_table(steps=50)}
    rev = table["reversible (reversible Heun)"]
    assert rev.error_vs_own_fd < 1e-7  # the gradient of its discretisation
    assert rev.error_vs_closed_form > 1e-6  # not of the ODE: the discretisation's own error stays
    assert table["backprop (reversible Heun)"].kib_kept > rev.kib_kept
    assert math.isfinite(table["adjoint + seminorm"].error_vs_closed_form)


def test_stability_names_the_parasitic_growth_of_decaying_modes_only():
    cases = {(c.label, c.h): c for c in L.stability_study(lams=(-5.0, -1.0, 1.0, 2j), hs=(0.1,), T=10.0)}
    assert cases["-5", 0.1].max_root > 1.0
    assert cases["2i", 0.1].max_root == pytest.approx(1.0)
    assert cases["-5", 0.1].heun_error > 1.0  # overflow is inf, also > 1
    # a decaying mode's parasitic root grows like exp(|lam| T); a growing mode's decays
    assert cases["-1", 0.1].parasitic_growth == pytest.approx((0.1 + math.sqrt(1.01)) ** 100)  # about e^10
    assert cases["1", 0.1].parasitic_growth == pytest.approx((math.sqrt(1.01) - 0.1) ** 100)  # about e^-10
    assert cases["1", 0.1].heun_error < 0.1 < cases["-1", 0.1].heun_error
