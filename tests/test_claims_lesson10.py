"""Lesson 10's ledger rows: the judging logic on fake inputs (fast), and the cheap rows at quick-mode
size: reversible Heun's gradient against backprop, memory flat in the steps, the route table."""
from __future__ import annotations

import math

import pytest

from nodecourse.claims import REGISTRY, ClaimVerdict, load_rows, run_claims
from nodecourse.lessons import lesson10 as L

ROWS = ("ode-nfe-growth", "kinetic-regularization-nfe", "seminorm-backward-nfe", "reversible-gradient-exact",
        "reversible-memory-flat")


def test_rows_are_registered_with_their_thresholds():
    load_rows()
    for cid in ROWS:
        spec = REGISTRY[cid]
        assert spec.lesson == "10" and spec.threshold.text
        assert spec.threshold.kind in ("published", "course")
    assert REGISTRY["seminorm-backward-nfe"].threshold.value == 0.40  # the published median, 40 %
    assert L.PUBLISHED_SPEEDUP == 2.8 and L.RNODE_WEIGHTS == (0.01, 0.01)


def _runs(setting, nfe_by_seed, acc=0.9, seconds=1.0):
    return [{"setting": setting, "seed": s, "nfe": nfe, "accuracy": acc, "seconds": seconds, "test_nfe": nfe[-1]}
            for s, nfe in enumerate(nfe_by_seed)]


def test_growth_verdict_turns_with_the_evidence():
    climbing = _runs("none", [[20] * 10 + [40 + k] * 90 for k in range(4)])
    flat = _runs("none", [[20 + (k % 2)] * 100 for k in range(4)])
    assert L.growth_findings(climbing)["verdict"] is ClaimVerdict.HOLDS
    assert L.growth_findings(flat)["verdict"] is ClaimVerdict.DOES_NOT_HOLD


def test_regularisation_parts_are_judged_apart():
    base = _runs("none", [[20] * 10 + [50 + k] * 90 for k in range(4)], acc=0.95, seconds=1.0)
    reg = _runs("kinetic+Jacobian", [[20] * 10 + [25 + k] * 90 for k in range(4)], acc=0.95, seconds=2.0)
    f = L.regularisation_findings(base + reg)
    assert f["parts"]["fewer NFE"] is ClaimVerdict.HOLDS
    assert f["parts"]["accuracy within 2 points"] is ClaimVerdict.HOLDS
    assert list(f["parts"].values())[2] is ClaimVerdict.DOES_NOT_HOLD  # slower, not 2.8x faster
    assert f["verdict"] is ClaimVerdict.HOLDS_IN_PART


def test_seminorm_readings_that_disagree_hold_in_part():
    rows = [{"nodecourse reduction": 0.5 + 0.01 * k, "torchdiffeq reduction": 0.0 + 0.01 * k} for k in range(4)]
    f = L.seminorm_findings(rows)
    assert f["readings"]["nodecourse"] is ClaimVerdict.HOLDS
    assert f["readings"]["torchdiffeq"] is ClaimVerdict.DOES_NOT_HOLD
    assert f["verdict"] is ClaimVerdict.HOLDS_IN_PART


def test_exact_row_holds_and_the_adjoint_beside_it_is_not_exact():
    (r,) = run_claims(["reversible-gradient-exact"], quick=True)
    assert r.verdict is ClaimVerdict.HOLDS
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
    table = {row["route"]: row for row in L.route_table(steps=50)}
    rev = table["reversible (reversible Heun)"]
    assert rev["error vs FD of its steps"] < 1e-7  # the gradient of its discretisation
    assert rev["error vs analytic"] > 1e-6  # not of the ODE: the discretisation's own error stays
    assert table["backprop (reversible Heun)"]["KiB kept for backward"] > rev["KiB kept for backward"]
    assert math.isfinite(table["adjoint + seminorm"]["error vs analytic"])


def test_stability_demo_names_the_parasitic_growth():
    rows = {r["lam"]: r for r in L.stability_demo(lams=(-5.0, 2j), h=0.1, T=10.0)}
    assert rows["-5.0"]["max |mu| per step"] > 1.0
    assert rows["2j"]["max |mu| per step"] == pytest.approx(1.0)
    assert rows["-5.0"]["reversible_heun rel. error at T=10"] in ("overflow",) or \
        float(rows["-5.0"]["reversible_heun rel. error at T=10"]) > 1.0
