"""The solver's cheaper bookkeeping gives the answers of the plain rules.

Each shortcut taken to cut the per-step overhead is checked against the rule it replaces:
the dense output written as weights on the slopes (one interpolant for both modes), the
per-sample controller's short paths (no NaN/inf in a step, no underflow in a step), the
reuse of ``|y1|`` in the error scale, the shared :class:`RKPlan` per tableau, the
tableau's ``implicit`` test read from its rows, and the stage sums and error estimate of a state of one
row taken as matrix products. Speed itself is measured in
``benchmarks/bench_overhead.py``, never here.
"""

from __future__ import annotations

import math

import pytest
import torch

from nodecourse import SOLVERS, Status, odeint
from nodecourse.solvers import ButcherTableau
from nodecourse.solvers._control import CONTROL_OPTIONS, BatchStepControl, StepControl, error_scale
from nodecourse.solvers._per_sample import _BatchDense
from nodecourse.solvers._rk import DenseOutput, RKPlan, dense_weights, plan_for
from nodecourse.solvers._tableaux import BOSH3, DOPRI5

F64 = torch.float64
#: Heun's method with Euler embedded: adaptive, no FSAL, no mid weights (cubic Hermite, end slope appended).
HEUN_EULER = ButcherTableau(
    name="heun_euler", c=(0.0, 1.0), a=((1.0,),), b=(0.5, 0.5), order=2, b_low=(1.0, 0.0), embedded_order=1
)


def _textbook_interpolant(tab, y0, ks, h, x):
    """The interpolant as the solver wrote it before: a polynomial through y0, y1 (, y_mid) and the
    end slopes, built from the states (quartic with ``mid``, cubic Hermite without)."""
    f0, f1 = ks[0], ks[-1]
    y1 = y0 + h * sum(b * k for b, k in zip(tab.b, ks))
    if tab.mid is None:
        c = 3 * (y1 - y0) - h * (2 * f0 + f1)
        b = 2 * (y0 - y1) + h * (f0 + f1)
        return y0 + x * h * f0 + x**2 * c + x**3 * b
    y_mid = y0 + h * sum(m * k for m, k in zip(tab.mid, ks))
    c = -11 * y0 - 5 * y1 + 16 * y_mid + h * (f1 - 4 * f0)
    b = 18 * y0 + 14 * y1 - 32 * y_mid + h * (5 * f0 - 3 * f1)
    a = -8 * (y1 + y0) + 16 * y_mid + 2 * h * (f1 - f0)
    return y0 + x * h * f0 + x**2 * c + x**3 * b + x**4 * a


def _slopes(tab, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = tab.stages if tab.fsal else tab.stages + 1  # the end slope appended without FSAL
    return [torch.randn(shape, dtype=F64, generator=g) for _ in range(n)]


# ---------------------------------------------------------------- one dense interpolant


@pytest.mark.parametrize("tab", [DOPRI5, BOSH3, HEUN_EULER], ids=lambda t: t.name)
def test_dense_output_on_the_slopes_is_the_textbook_polynomial(tab):
    y0, h = torch.randn(3, 4, dtype=F64), 0.37
    ks = _slopes(tab, (3, 4))
    dense = DenseOutput(plan_for(tab), y0, ks, h)
    for x in (0.0, 0.1, 0.5, 0.77, 1.0):
        assert torch.allclose(dense(x), _textbook_interpolant(tab, y0, ks, h, x), rtol=0, atol=1e-13), x


@pytest.mark.parametrize("tab", [DOPRI5, BOSH3, HEUN_EULER], ids=lambda t: t.name)
def test_dense_weights_end_at_b_and_pass_through_mid(tab):
    plan = plan_for(tab)
    padded = lambda w: list(w) + [0.0] * (tab.stages + 1 - len(w))  # noqa: E731
    at = lambda x: [dict(dense_weights(plan.dense, x)).get(j, 0.0) for j in range(tab.stages + 1)]  # noqa: E731
    assert at(1.0) == pytest.approx(padded(tab.b), abs=1e-14)
    assert at(0.0) == [0.0] * (tab.stages + 1)
    if tab.mid is not None:
        assert at(0.5) == pytest.approx(padded(tab.mid), abs=1e-14)


@pytest.mark.parametrize("tab", [DOPRI5, BOSH3, HEUN_EULER], ids=lambda t: t.name)
def test_per_sample_dense_output_is_the_scalar_one_row_by_row(tab):
    y0 = torch.randn(5, 2, 3, dtype=F64)
    ks = _slopes(tab, (5, 2, 3), seed=1)
    h = torch.tensor([0.1, -0.3, 0.7, 0.0, 2.0], dtype=F64)
    x = torch.tensor([0.0, 0.25, 0.5, 0.9, 1.0], dtype=F64)
    batch = _BatchDense(plan_for(tab), F64, y0.device)(y0, ks, h.view(5, 1, 1), x)
    for row in range(5):
        one = DenseOutput(plan_for(tab), y0[row], [k[row] for k in ks], float(h[row]))(float(x[row]))
        assert torch.allclose(batch[row], one, rtol=0, atol=1e-14), row


# ---------------------------------------------------------------- per-sample controller, short paths


def _batch_control(B=6, **opts):
    return BatchStepControl(
        rtol=1e-6,
        atol=1e-8,
        error_order=5,
        options={**CONTROL_OPTIONS, **opts},
        t_start=0.0,
        t_end=1.0,
        max_steps=100,
        batch=B,
        device=torch.device("cpu"),
        t_dtype=F64,
    )


def test_batch_factor_is_the_scalar_factor_elementwise():
    ratios = [0.0, 1e-320, 1e-300, 1e-8, 0.3, 1.0, 1.0 + 1e-12, 7.0, 1e300, math.inf, math.nan]
    scalar = StepControl(
        rtol=1e-6, atol=1e-8, error_order=5, options=CONTROL_OPTIONS, t_start=0.0, t_end=1.0, max_steps=100
    )
    batch = _batch_control(len(ratios))
    got = batch.factor(torch.tensor(ratios, dtype=F64)).tolist()
    assert got == pytest.approx([scalar.factor(r) for r in ratios], rel=1e-12)


def test_judge_without_nonfinite_steps_is_the_general_rule():
    active = torch.tensor([True, True, True, False, True, True])
    ratio = torch.tensor([0.5, 2.0, 0.0, 0.7, 1.0, 30.0], dtype=F64)
    h_use = torch.tensor([0.1, 0.2, 0.05, 0.0, -0.3, 0.4], dtype=F64)
    short, general = _batch_control(), _batch_control()
    for ctl in (short, general):  # some history: a streak of NaN steps on elements 1 and 4
        ctl.streak = torch.tensor([0, 2, 0, 0, 1, 0])
        ctl.nonfinite_seen = torch.tensor([False, True, False, False, True, False])
    got = short.judge(active, ratio, None, h_use, h_use)
    want = general.judge(active, ratio, torch.zeros(6, dtype=torch.bool), h_use, h_use)
    assert torch.equal(got[0], want[0]) and torch.allclose(got[1], want[1], rtol=1e-15, atol=0)
    for name in ("n_accepted", "n_rejected", "streak", "nonfinite_seen", "nonfinite_t", "code", "done"):
        assert torch.equal(getattr(short, name), getattr(general, name)) or name == "nonfinite_t", name
    assert torch.equal(short.nonfinite_t.isnan(), general.nonfinite_t.isnan())


def test_one_element_blowing_up_ends_alone_with_the_scalar_status():
    """The underflow bookkeeping runs after the step (one host sync for the rare cases): an element
    whose solution blows up in finite time ends as its scalar solve does, the others succeed."""
    y0 = torch.tensor([[1.0], [0.2], [-0.5]], dtype=F64)
    t = torch.tensor([0.0, 0.5, 2.0], dtype=F64)
    field = lambda tt, y: y * y  # noqa: E731  (y(t) = y0 / (1 - y0 t): blows up at t = 1 for y0 = 1)
    batch = odeint(field, y0, t, per_sample=True, throw=False, max_steps=5000)
    for row in range(3):
        one = odeint(field, y0[row], t, throw=False, max_steps=5000)
        assert batch.sample_statuses()[row] is one.status, row
        if one.success:
            assert torch.allclose(batch.ys[:, row], one.ys, rtol=1e-6, atol=1e-9)
    assert batch.sample_statuses()[0] is not Status.SUCCESS
    assert float(batch.stats["t_reached_per_sample"][0]) == pytest.approx(1.0, abs=1e-3)
    assert torch.isnan(batch.ys[2, 0]).all() and not torch.isnan(batch.ys[:, 1:]).any()


def test_per_sample_nfe_per_element_counts_the_steps_it_took_part_in():
    rates = torch.tensor([[0.5], [3.0], [40.0]], dtype=F64)
    for method, evals in (("dopri5", 6), ("bosh3", 3)):
        sol = odeint(
            lambda tt, y: -rates * y,
            torch.ones(3, 1, dtype=F64),
            torch.linspace(0, 1, 4, dtype=F64),
            method=method,
            per_sample=True,
            record_steps=True,
        )
        took_part = torch.stack(sol.steps.active).long().sum(0)
        assert torch.equal(sol.stats["n_steps_per_sample"], took_part)
        assert torch.equal(sol.stats["nfe_per_sample"], 2 + evals * took_part)  # f(t0, y0), the first-step probe
        assert int(sol.stats["nfe_per_sample"].max()) <= sol.stats["nfe"]


def test_per_sample_gradients_through_dense_outputs_match_the_scalar_solves():
    w = torch.tensor([[-0.5, 1.0], [-1.0, -0.3]], dtype=F64, requires_grad=True)
    y0 = torch.tensor([[1.0, 0.0], [0.2, -0.4]], dtype=F64)
    t = torch.linspace(0.0, 2.0, 7, dtype=F64)  # output times inside steps: the interpolant carries the graph
    field = lambda tt, y: torch.tanh(y @ w.T)  # noqa: E731
    batch = odeint(field, y0, t, per_sample=True, rtol=1e-10, atol=1e-12)
    (g_batch,) = torch.autograd.grad(batch.ys.square().sum(), w)
    g_rows = sum(
        torch.autograd.grad(odeint(field, y0[r], t, rtol=1e-10, atol=1e-12).ys.square().sum(), w)[0] for r in range(2)
    )
    assert torch.allclose(g_batch, g_rows, rtol=1e-6, atol=1e-9)


# ---------------------------------------------------------------- scalar controller and plans


def test_error_ratio_reusing_abs_y1_equals_the_plain_formula():
    ctl = StepControl(
        rtol=1e-5, atol=1e-7, error_order=5, options=CONTROL_OPTIONS, t_start=0.0, t_end=1.0, max_steps=100
    )
    g = torch.Generator().manual_seed(3)
    y = torch.randn(4, dtype=F64, generator=g)
    for accepted in (True, False, False, True, True):
        y1, err = torch.randn(4, dtype=F64, generator=g), 1e-6 * torch.randn(4, dtype=F64, generator=g)
        plain = float(torch.sqrt(((err / error_scale(y, y1, 1e-5, 1e-7)) ** 2).mean()))
        assert ctl.error_ratio(err, y, y1) == pytest.approx(plain, rel=1e-12)
        if accepted:
            y = y1  # the next step starts where this one ended: its |y0| is reused
        else:
            y = y.clone()  # same values, another tensor: computed afresh


def test_plans_are_built_once_per_tableau():
    assert plan_for(DOPRI5) is plan_for(DOPRI5)
    twin = ButcherTableau(
        name=BOSH3.name,
        c=BOSH3.c,
        a=BOSH3.a,
        b=BOSH3.b,
        order=BOSH3.order,
        b_low=BOSH3.b_low,
        embedded_order=BOSH3.embedded_order,
    )
    assert plan_for(twin) is plan_for(BOSH3)
    assert isinstance(plan_for(HEUN_EULER), RKPlan) and plan_for(HEUN_EULER).tab == HEUN_EULER


def test_implicit_read_from_the_rows_agrees_with_the_full_matrix():
    diagonal_layout_explicit = ButcherTableau(
        name="euler_diag", c=(0.0, 1.0), a=((0.0,), (1.0, 0.0)), b=(0.5, 0.5), order=2
    )
    tableaux = [s.tableau for s in SOLVERS.values()] + [HEUN_EULER, diagonal_layout_explicit]
    for tab in tableaux:
        full = tab.matrix
        assert tab.implicit == any(full[i][i] != 0.0 for i in range(tab.stages)), tab.name
    assert not diagonal_layout_explicit.implicit and SOLVERS["trapezoid"].tableau.implicit


# ---------------------------------------------------------------- fused stage combinations


def _textbook_step(tab, func, t0, h, y0):
    """One explicit step as the Butcher tableau reads: ``y_i = y0 + h sum_j a_ij k_j``, one term at a time."""
    ks = [func(torch.tensor(t0, dtype=y0.dtype), y0)]
    for i, row in enumerate(tab.explicit_rows, start=1):
        yi = y0 + h * sum(a * k for a, k in zip(row, ks))
        ks.append(func(torch.tensor(t0 + tab.c[i] * h, dtype=y0.dtype), yi))
    y1 = y0 + h * sum(b * k for b, k in zip(tab.b, ks))
    err = h * sum(e * k for e, k in zip(tab.b_err, ks)) if tab.adaptive else None
    return y1, ks, err


@pytest.mark.parametrize("shape", [(1, 5), (1, 1), (), (3, 4), (2, 1, 3)], ids=str)
@pytest.mark.parametrize("tab", [DOPRI5, BOSH3, HEUN_EULER, SOLVERS["rk4"].tableau], ids=lambda t: t.name)
def test_fused_stages_and_error_are_the_tableau_sums(tab, shape):
    """A state of one row takes one ``addmm`` per stage and one product for the error estimate, other
    shapes the chain of adds: both give the stage states, slopes, new state and error of the tableau's
    sums term by term (float64 round-off)."""
    w = torch.randn(3, 3, dtype=F64, generator=torch.Generator().manual_seed(1))
    func = lambda t, y: torch.sin(y * (1 + t)) + y.reshape(-1)[0] * w[0, 0]  # noqa: E731 (couples all entries)
    y0 = torch.randn(shape, dtype=F64, generator=torch.Generator().manual_seed(2))
    plan = plan_for(tab)
    y1, ks = plan.step(func, 0.3, 0.05, y0, func(torch.tensor(0.3, dtype=F64), y0))
    want_y1, want_ks, want_err = _textbook_step(tab, func, 0.3, 0.05, y0)
    assert y1.shape == y0.shape and len(ks) == len(want_ks)
    for k, want in zip(ks, want_ks):
        assert torch.allclose(k, want, rtol=1e-13, atol=1e-15)
    assert torch.allclose(y1, want_y1, rtol=1e-13, atol=1e-15)
    if tab.adaptive:
        err = plan.error(ks[: tab.stages], 0.05)
        assert err.shape == y0.shape and not err.requires_grad
        assert torch.allclose(err, want_err, rtol=1e-10, atol=1e-17)


def test_fused_and_chained_stages_give_the_same_solve(monkeypatch):
    """The chain of adds (rows longer than ``FUSED_MAX_NUMEL``) and the fused products take the same
    steps and reach the same answer on one problem; gradients through either agree."""
    from nodecourse.solvers import _rk as rk

    w = torch.randn(6, 6, dtype=F64, generator=torch.Generator().manual_seed(4)).requires_grad_()
    field = lambda t, y: torch.tanh(y @ w)  # noqa: E731
    y0 = torch.randn(1, 6, dtype=F64, generator=torch.Generator().manual_seed(5))
    t = torch.linspace(0.0, 2.0, 5, dtype=F64)
    fused = odeint(field, y0, t, rtol=1e-8, atol=1e-10)
    (g_fused,) = torch.autograd.grad(fused.ys.square().sum(), w)
    monkeypatch.setattr(rk, "FUSED_MAX_NUMEL", 0)
    chained = odeint(field, y0, t, rtol=1e-8, atol=1e-10)
    (g_chained,) = torch.autograd.grad(chained.ys.square().sum(), w)
    assert fused.stats == chained.stats
    assert torch.allclose(fused.ys, chained.ys, rtol=1e-12, atol=1e-14)
    assert torch.allclose(g_fused, g_chained, rtol=1e-10, atol=1e-12)
