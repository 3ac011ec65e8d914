"""Ledger rows of lessons 1 and 2: they hold on the real solvers, and their verdicts can fail."""

import math

import pytest

import nodecourse
from nodecourse.claims import ClaimVerdict, run_claims
from nodecourse.lessons import lesson01, lesson02
from nodecourse.solvers import ButcherTableau


@pytest.mark.parametrize("cid", ["resnet-euler", "convergence-order", "tolerance-nfe"])
def test_rows_hold_in_quick_mode(cid):
    (res,) = run_claims([cid], quick=True)
    assert res.verdict is ClaimVerdict.HOLDS, res.measured
    assert res.measured and res.published and res.source


def test_resnet_euler_agrees_to_float_precision_and_baseline_differs():
    import torch

    for dtype in (torch.float32, torch.float64):
        r = lesson01.resnet_vs_euler(dtype=dtype)
        assert r.max_diff_euler <= r.tolerance
        assert r.max_diff_midpoint > 1e3 * r.tolerance
        assert r.nfe_euler == r.n_blocks


def test_fit_slope_recovers_a_power_law():
    hs = [0.1, 0.05, 0.025]
    assert lesson02.fit_slope(hs, [3 * h**4 for h in hs]) == pytest.approx(4.0)


def test_order_steps_derive_from_the_registry():
    """A registry line needs no entry in lesson02: every method's step counts come from its
    declared order (or an override measured for it); a learner's tableau gets them too."""
    assert set(lesson02.ORDER_STEPS) == set(nodecourse.SOLVERS)
    assert set(lesson02.STEPS_OVERRIDE) <= set(nodecourse.SOLVERS)
    for name, spec in nodecourse.SOLVERS.items():
        expected = lesson02.STEPS_OVERRIDE.get(name) or lesson02.STEPS_BY_ORDER[min(spec.order, 5)]
        assert lesson02.ORDER_STEPS[name] == expected
    ralston = ButcherTableau(name="ralston", c=(0, 2 / 3), a=((2 / 3,),), b=(1 / 4, 3 / 4), order=2)
    assert lesson02.order_steps(ralston) == lesson02.STEPS_BY_ORDER[2]


@pytest.mark.parametrize("method", list(nodecourse.SOLVERS))
def test_each_solver_order_is_measured_near_declared(method):
    r = lesson02.convergence(method)
    assert abs(r.measured - r.declared) <= lesson02.ORDER_TOLERANCE
    assert all(e > 0 and math.isfinite(e) for e in r.errors)


def test_tolerance_sweep_rows_report_work():
    rows = lesson02.nfe_sweep([1e-8, 1e-4])
    assert rows[0].nfe > rows[1].nfe and rows[0].error < rows[1].error
    assert all(r.nfe >= r.n_accepted + r.n_rejected for r in rows)


# --- the verdicts are computed: a broken solver turns them into "does not hold" ---------------


def _wrap_odeint(monkeypatch, transform):
    real = nodecourse.odeint

    def fake(func, y0, t, **kw):
        return transform(real(func, y0, t, **kw), kw)

    monkeypatch.setattr(nodecourse, "odeint", fake)


def test_resnet_euler_fails_when_euler_is_not_euler(monkeypatch):
    real = nodecourse.odeint

    def midpoint_instead(func, y0, t, **kw):
        if kw.get("method") == "euler":
            kw["method"] = "midpoint"
        return real(func, y0, t, **kw)

    monkeypatch.setattr(nodecourse, "odeint", midpoint_instead)
    lesson01.resnet_vs_euler.clear()  # the study is cached: measure again with the patched solver
    assert lesson01.measure(True).verdict is not ClaimVerdict.HOLDS
    lesson01.resnet_vs_euler.clear()


def test_convergence_order_fails_for_a_first_order_error(monkeypatch):
    def add_first_order_error(sol, kw):
        if kw.get("method") == "rk4":
            sol.ys = sol.ys + kw["step_size"]  # an O(h) error on a "fourth-order" method
        return sol

    _wrap_odeint(monkeypatch, add_first_order_error)
    m = lesson02.measure_orders(True)
    assert m.verdict is ClaimVerdict.DOES_NOT_HOLD
    assert "rk4 1.0" in m.measured


def test_tolerance_nfe_fails_when_nfe_rises_with_rtol(monkeypatch):
    def nfe_grows_with_rtol(sol, kw):
        sol.stats = dict(sol.stats, nfe=int(1000 * kw["rtol"] ** 0.1))
        return sol

    _wrap_odeint(monkeypatch, nfe_grows_with_rtol)
    assert lesson02.measure_tolerance_nfe(True).verdict is ClaimVerdict.DOES_NOT_HOLD


def test_rows_leave_the_callers_random_state_alone():
    import torch

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    lesson01.resnet_vs_euler.clear()  # run the study, not its cached result
    lesson01.resnet_vs_euler()
    assert torch.equal(torch.rand(3), expected)
