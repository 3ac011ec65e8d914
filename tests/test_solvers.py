"""Solvers against references: exact solutions, scipy's DOP853, torchdiffeq, analytic gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

import nodecourse
from nodecourse import SOLVERS, Solution, SolverError, Status, odeint
from nodecourse.solvers._registry import ADAPTIVE, FIXED, IMPLICIT
from nodecourse.solvers._rk import RKPlan, time_tensor
from nodecourse.solvers._tableaux import ButcherTableau

F64 = torch.float64


def exp_sin(t, y):
    """y' = cos(t) y, y(0) = 1  ->  y = exp(sin t)."""
    return torch.cos(t) * y


def exp_sin_exact(t):
    return torch.exp(torch.sin(t))


def van_der_pol(t, y, mu=1.0):
    return torch.stack([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])


# ---------------------------------------------------------------- tableaux and order


def test_bad_tableau_raises_at_construction():
    with pytest.raises(ValueError, match="row sum"):
        ButcherTableau(name="bad", c=(0.0, 0.5), a=((0.4,),), b=(0.0, 1.0), order=2)
    with pytest.raises(ValueError, match="sum to"):
        ButcherTableau(name="bad", c=(0.0, 0.5), a=((0.5,),), b=(0.1, 1.0), order=2)


@pytest.mark.parametrize("name", [n for n, s in SOLVERS.items() if s.tableau is not None])
def test_registered_tableaux_are_consistent(name):
    tab = SOLVERS[name].tableau
    for i, row in enumerate(tab.matrix):
        assert math.isclose(sum(row), tab.c[i], abs_tol=1e-14)
    assert math.isclose(sum(tab.b), 1.0, abs_tol=1e-14)
    if tab.adaptive:
        assert math.isclose(sum(tab.b_low), 1.0, abs_tol=1e-14)
        assert tab.fsal or tab.implicit


def _fixed_step_errors(step, hs, t1=1.0):
    """Global error at t1 of exp_sin for each step size in hs."""
    errors = []
    for h in hs:
        errors.append(abs(step(h, t1) - math.exp(math.sin(t1))))
    return errors


def _observed_orders(hs, errors):
    return [math.log(e1 / e2) / math.log(h1 / h2) for h1, h2, e1, e2 in zip(hs, hs[1:], errors, errors[1:])]


@pytest.mark.parametrize("name", [n for n, s in SOLVERS.items() if s.kind in (FIXED, IMPLICIT)])
def test_fixed_and_implicit_methods_converge_at_declared_order(name):
    hs = [0.1, 0.05, 0.025]
    y0 = torch.ones(1, dtype=F64)

    def final(h, t1):
        sol = odeint(
            exp_sin,
            y0,
            torch.tensor([0.0, t1], dtype=F64),
            method=name,
            step_size=h,
            rtol=1e-6,
            atol=1e-8,
            options={"newton_tol": 1e-5} if SOLVERS[name].kind == IMPLICIT else None,
        )
        return float(sol.ys[-1, 0])

    orders = _observed_orders(hs, _fixed_step_errors(final, hs))
    assert abs(orders[-1] - SOLVERS[name].order) < 0.25, f"{name}: observed orders {orders}"


@pytest.mark.parametrize("name", [n for n, s in SOLVERS.items() if s.kind == ADAPTIVE])
def test_adaptive_pairs_converge_at_declared_orders(name):
    """The solver's own step, with a fixed h: the propagated and the embedded solutions."""
    tab = SOLVERS[name].tableau
    plan = RKPlan(tab)
    hs = [0.2, 0.1, 0.05]

    def final(h, t1, embedded):
        y, t = torch.ones(1, dtype=F64), 0.0
        for _ in range(round(t1 / h)):
            f = exp_sin(time_tensor(t, y), y)
            y1, ks = plan.step(exp_sin, t, h, y, f)
            y = y1 - plan.error(ks, h) if embedded else y1
            t += h
        return float(y[0])

    high = _observed_orders(hs, _fixed_step_errors(lambda h, t1: final(h, t1, False), hs))
    low = _observed_orders(hs, _fixed_step_errors(lambda h, t1: final(h, t1, True), hs))
    assert abs(high[-1] - tab.order) < 0.3, f"{name}: observed {high}"
    assert abs(low[-1] - tab.embedded_order) < 0.3, f"{name} embedded: observed {low}"


# ---------------------------------------------------------------- references


def test_dopri5_agrees_with_scipy_dop853():
    y0 = torch.tensor([2.0, 0.0], dtype=F64)
    t = torch.linspace(0.0, 6.0, 13, dtype=F64)
    ours = odeint(van_der_pol, y0, t, rtol=1e-7, atol=1e-9)
    ref = solve_ivp(
        lambda tt, y: [y[1], (1 - y[0] ** 2) * y[1] - y[0]],
        (0.0, 6.0),
        y0.numpy(),
        method="DOP853",
        t_eval=t.numpy(),
        rtol=1e-12,
        atol=1e-14,
    )
    assert ref.success
    err = np.abs(ours.ys.numpy() - ref.y.T).max()
    assert err < 1e-5, f"max |dopri5 - DOP853| = {err:.2e}"


@pytest.mark.parametrize("rtol", [1e-4, 1e-7])
def test_dopri5_nfe_within_25_percent_of_torchdiffeq(rtol):
    y0 = torch.tensor([2.0, 0.0], dtype=F64)
    t = torch.linspace(0.0, 6.0, 13, dtype=F64)
    ours = odeint(van_der_pol, y0, t, rtol=rtol, atol=rtol * 1e-2)
    theirs = odeint(van_der_pol, y0, t, rtol=rtol, atol=rtol * 1e-2, backend="torchdiffeq")
    assert isinstance(theirs, Solution) and theirs.success
    ratio = ours.stats["nfe"] / theirs.stats["nfe"]
    assert 0.75 <= ratio <= 1.25, f"NFE nodecourse {ours.stats['nfe']} vs torchdiffeq {theirs.stats['nfe']}"
    assert torch.allclose(ours.ys, theirs.ys, atol=1e3 * rtol)


def test_torchdiffeq_backend_counts_work():
    calls = []

    def f(t, y):
        calls.append(1)
        return -y

    sol = odeint(f, torch.ones(3, dtype=F64), torch.tensor([0.0, 1.0], dtype=F64), backend="torchdiffeq")
    assert sol.stats["nfe"] == len(calls) > 0
    assert sol.stats["n_accepted"] > 0 and sol.stats["n_steps"] == sol.stats["n_accepted"] + sol.stats["n_rejected"]
    assert torch.allclose(sol.ys[-1], torch.full((3,), math.exp(-1), dtype=F64), atol=1e-7)
    fixed = odeint(
        f,
        torch.ones(3, dtype=F64),
        torch.tensor([0.0, 1.0], dtype=F64),
        method="euler",
        step_size=0.1,
        backend="torchdiffeq",
    )
    assert fixed.stats["n_steps"] == 10 and fixed.stats["nfe"] == 10


# ---------------------------------------------------------------- stiff problems


def test_stiff_problem_needs_orders_of_magnitude_fewer_implicit_steps():
    lam = 1e4
    f = lambda t, y: -lam * (y - torch.cos(t))
    y0, t = torch.ones(1, dtype=F64), torch.tensor([0.0, 0.5], dtype=F64)
    explicit = odeint(f, y0, t, method="dopri5", rtol=1e-3, atol=1e-6, max_steps=100_000)
    implicit = odeint(f, y0, t, method="trapezoid", rtol=1e-3, atol=1e-6)
    exact = lam**2 / (lam**2 + 1) * math.cos(0.5) + lam / (lam**2 + 1) * math.sin(0.5)
    assert abs(float(implicit.ys[-1, 0]) - exact) < 1e-3
    assert abs(float(explicit.ys[-1, 0]) - exact) < 1e-3
    assert explicit.stats["n_steps"] >= 100 * implicit.stats["n_steps"], (explicit.stats, implicit.stats)
    assert implicit.stats["n_newton_iters"] >= implicit.stats["n_steps"] > 0
    assert implicit.stats["n_jacobians"] > 0


def test_implicit_euler_damps_stiff_transient():
    f = lambda t, y: -1e4 * (y - torch.cos(t))
    sol = odeint(
        f, torch.zeros(1, dtype=F64), torch.tensor([0.0, 1.0], dtype=F64), method="implicit_euler", step_size=0.1
    )
    assert sol.stats["n_steps"] == 10
    assert abs(float(sol.ys[-1, 0]) - math.cos(1.0)) < 1e-2


# ---------------------------------------------------------------- per-sample mode


def test_per_sample_steps_differ_by_input_and_match_single_solves():
    rates = torch.tensor([0.5, 2.0, 8.0, 30.0], dtype=F64)
    f = lambda t, y: -rates[:, None] * y
    y0 = torch.ones(4, 2, dtype=F64)
    t = torch.linspace(0.0, 1.0, 5, dtype=F64)
    sol = odeint(f, y0, t, rtol=1e-6, atol=1e-8, per_sample=True)
    nfe = sol.stats["nfe_per_sample"]
    assert nfe.shape == (4,) and len(set(nfe.tolist())) > 1
    assert nfe[0] < nfe[-1]
    exact = torch.exp(-rates[None, :, None] * t[:, None, None]).expand(5, 4, 2)
    assert torch.allclose(sol.ys, exact, atol=1e-5)
    for b in range(4):
        single = odeint(lambda tt, y: -rates[b] * y, y0[b], t, rtol=1e-6, atol=1e-8)
        assert abs(int(sol.stats["n_accepted_per_sample"][b]) - single.stats["n_accepted"]) <= 1
    whole = odeint(f, y0, t, rtol=1e-6, atol=1e-8)
    assert whole.stats["nfe"] >= int(nfe.max()) - 2  # a shared step is paced by the hardest input


def test_per_sample_gradients_flow():
    y0 = torch.ones(3, 2, dtype=F64, requires_grad=True)
    sol = odeint(lambda t, y: -y, y0, torch.tensor([0.0, 1.0], dtype=F64), per_sample=True)
    (grad,) = torch.autograd.grad(sol.ys[-1].sum(), y0)
    assert torch.allclose(grad, torch.full_like(grad, math.exp(-1)), atol=1e-6)


# ---------------------------------------------------------------- gradients, dtypes, direction


@pytest.mark.parametrize(
    "method,kw", [("dopri5", {}), ("bosh3", {}), ("rk4", {"step_size": 0.01}), ("trapezoid", {"step_size": 0.01})]
)
def test_backprop_gradients_match_analytic(method, kw):
    y0 = torch.tensor([1.5], dtype=F64, requires_grad=True)
    k = torch.tensor(0.7, dtype=F64, requires_grad=True)
    sol = odeint(lambda t, y: -k * y, y0, torch.tensor([0.0, 2.0], dtype=F64), method=method, **kw)
    g_y0, g_k = torch.autograd.grad(sol.ys[-1].sum(), (y0, k))
    assert math.isclose(float(g_y0), math.exp(-1.4), rel_tol=1e-4)
    assert math.isclose(float(g_k), -2 * 1.5 * math.exp(-1.4), rel_tol=1e-4)


def test_gradcheck_fixed_step():
    y0 = torch.tensor([0.3, -0.2], dtype=F64, requires_grad=True)
    w = torch.tensor([[0.0, 1.0], [-1.0, -0.1]], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 0.5, 1.0], dtype=F64)
    fn = lambda y, w: odeint(lambda tt, y: torch.tanh(y @ w.T), y, t, method="rk4", step_size=0.1).ys
    assert torch.autograd.gradcheck(fn, (y0, w))


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.float64, 1e-7)])
@pytest.mark.parametrize("method", ["dopri5", "bosh3", "trapezoid"])
def test_dtypes_kept_and_accurate(dtype, tol, method):
    y0 = torch.ones(2, dtype=dtype)
    t = torch.linspace(0.0, 2.0, 7, dtype=dtype)
    # float32 resolves ~1e-7 relative: ask for what it can deliver.
    rtol, atol = (1e-5, 1e-6) if dtype == torch.float32 else (1e-9, 1e-10)
    if method == "trapezoid":  # second order: tight tolerances cost thousands of Newton solves
        rtol, atol = max(rtol, 1e-5), max(atol, 1e-6)
    sol = odeint(exp_sin, y0, t, method=method, rtol=rtol, atol=atol)
    assert sol.ys.dtype == dtype and sol.ys.device == y0.device and sol.ys.shape == (7, 2)
    err = (sol.ys - exp_sin_exact(t)[:, None]).abs().max()
    assert err < (tol if method != "trapezoid" else 1e-3), f"{method} {dtype}: {err:.2e}"


def test_decreasing_t_integrates_backwards():
    t = torch.tensor([1.0, 0.5, 0.0], dtype=F64)
    for method, kw in [("dopri5", {}), ("rk4", {"step_size": 0.05}), ("trapezoid", {"step_size": 0.01})]:
        sol = odeint(lambda tt, y: -y, torch.ones(1, dtype=F64), t, method=method, **kw)
        assert math.isclose(float(sol.ys[-1, 0]), math.e, rel_tol=2e-3), method


def test_outputs_match_exact_at_every_time():
    t = torch.tensor([0.0, 0.1, 0.13, 0.9, 2.5, 3.0], dtype=F64)
    for name in ("dopri5", "bosh3"):
        sol = odeint(exp_sin, torch.ones(1, dtype=F64), t, method=name, rtol=1e-9, atol=1e-12)
        assert torch.allclose(sol.ys[:, 0], exp_sin_exact(t), atol=1e-6), name


# ---------------------------------------------------------------- failures are statuses


def test_nan_from_func_is_a_status_not_a_hang():
    sol = odeint(lambda t, y: y * float("nan"), torch.ones(2), torch.tensor([0.0, 1.0]), throw=False)
    assert sol.status is Status.NON_FINITE and not sol.success
    assert torch.isnan(sol.ys[-1]).all()
    # NaN only past t=0.5: the step shrinks a few times, then gives up with NON_FINITE.
    f = lambda t, y: torch.where(t > 0.5, torch.full_like(y, float("nan")), -y)
    sol = odeint(f, torch.ones(2, dtype=F64), torch.tensor([0.0, 1.0], dtype=F64), throw=False)
    assert sol.status in (Status.NON_FINITE, Status.STEP_UNDERFLOW)
    assert sol.stats["n_steps"] < 10_000


def test_max_steps_status_and_partial_solution():
    sol = odeint(
        lambda t, y: -y,
        torch.ones(1, dtype=F64),
        torch.linspace(0, 10, 11, dtype=F64),
        method="rk4",
        step_size=0.01,
        max_steps=250,
        throw=False,
    )
    assert sol.status is Status.MAX_STEPS and sol.stats["n_steps"] == 250
    assert torch.isfinite(sol.ys[:3]).all() and torch.isnan(sol.ys[4:]).all()
    sol = odeint(
        lambda t, y: -y, torch.ones(1, dtype=F64), torch.linspace(0, 10, 11, dtype=F64), max_steps=3, throw=False
    )
    assert sol.status is Status.MAX_STEPS and sol.stats["n_steps"] == 3


def test_failed_solve_raises_with_status_and_remedy():
    with pytest.raises(SolverError) as info:
        odeint(lambda t, y: y**2, torch.ones(1, dtype=F64), torch.tensor([0.0, 2.0], dtype=F64))
    err = info.value
    assert err.status is Status.STEP_UNDERFLOW and err.solution is not None
    assert "STEP_UNDERFLOW" in str(err) and "float64" in str(err) and "trapezoid" in str(err)
    with pytest.raises(SolverError, match="MAX_STEPS.*max_steps.*implicit_euler"):
        odeint(lambda t, y: -1e4 * y, torch.ones(1, dtype=F64), torch.tensor([0.0, 1.0], dtype=F64), max_steps=20)


def test_public_names_and_registry():
    # The methods the lessons name are registered; a new tableau's registry line adds to them freely.
    assert {"euler", "midpoint", "rk4", "rk38", "bosh3", "dopri5", "implicit_euler", "trapezoid"} <= set(SOLVERS)
    with pytest.raises(ValueError, match="dopri5"):
        SOLVERS["rk45"]
    assert "dopri5" in SOLVERS and "rk45" not in SOLVERS
    assert nodecourse.odeint is odeint
    sol = odeint(lambda t, y: -y, torch.ones(1), torch.tensor([0.0, 1.0]))
    assert sol.success and sol.method == "dopri5" and sol.rtol == 1e-7 and sol.atol == 1e-9
    assert {"nfe", "n_steps", "n_accepted", "n_rejected"} <= set(sol.stats)


# ---------------------------------------------------------------- devices


@pytest.mark.parametrize("device", nodecourse.config.available_devices())
@pytest.mark.parametrize(
    "method,kw", [("dopri5", {}), ("rk4", {"step_size": 0.1}), ("trapezoid", {}), ("dopri5", {"per_sample": True})]
)
def test_runs_on_every_available_device(device, method, kw):
    """Results live on y0's device; nothing assumes CPU (CUDA/MPS run where present)."""
    y0 = torch.ones(3, 2, device=device)
    t = torch.linspace(0.0, 1.0, 3, device=device)
    sol = odeint(
        lambda tt, y: -y * torch.cos(tt)[..., None] if tt.dim() else -y * torch.cos(tt),
        y0,
        t,
        method=method,
        rtol=1e-5,
        atol=1e-7,
        **kw,
    )
    assert sol.ys.device == y0.device and sol.ys.dtype == torch.float32
    exact = torch.exp(-torch.sin(t))[:, None, None].expand(3, 3, 2)
    assert torch.allclose(sol.ys, exact, atol=1e-3 if method == "trapezoid" else 1e-4)


@pytest.mark.parametrize("method", ["bosh3", "dopri5"])
@pytest.mark.parametrize("per_sample", [False, True])
def test_max_step_equal_to_interval_over_n_takes_exactly_n_steps(method, per_sample):
    """Steps of (t1 - t0) / n must not leave a remainder of a few ulps (an extra, underflowing step)."""
    for n in (3, 7, 10, 13, 100):
        for t in (torch.tensor([0.0, 2.0], dtype=F64), torch.tensor([2.0, 0.0], dtype=F64)):
            h = 2.0 / n
            sol = odeint(
                lambda tt, y: -y,
                torch.ones(2, 1, dtype=F64),
                t,
                method=method,
                rtol=0.5,
                atol=1e6,
                per_sample=per_sample,
                options={"first_step": h, "max_step": h},
            )
            assert sol.stats["n_rejected"] == 0
            if per_sample:
                assert sol.stats["n_accepted_per_sample"].tolist() == [n, n]
            else:
                assert sol.stats["n_accepted"] == n


def test_per_sample_failure_is_per_element():
    """One element whose slope is NaN fails alone; the others finish and keep their values."""

    def f(t, y):
        out = -y
        return torch.cat([out[:1] * float("nan"), out[1:]])

    sol = odeint(f, torch.ones(3, 2, dtype=F64), torch.tensor([0.0, 1.0], dtype=F64), per_sample=True, throw=False)
    assert sol.status is Status.NON_FINITE
    assert sol.sample_statuses() == [Status.NON_FINITE, Status.SUCCESS, Status.SUCCESS]
    assert sol.status_per_sample.tolist() == [Status.NON_FINITE.code, 0, 0]
    assert torch.isnan(sol.ys[-1, 0]).all()
    assert torch.allclose(sol.ys[-1, 1:], torch.full((2, 2), math.exp(-1), dtype=F64), atol=1e-7)
    stiff = odeint(
        lambda t, y: -torch.tensor([[1.0], [1e4]], dtype=F64) * y,
        torch.ones(2, 1, dtype=F64),
        torch.tensor([0.0, 1.0], dtype=F64),
        per_sample=True,
        max_steps=50,
        throw=False,
    )
    assert stiff.sample_statuses() == [Status.SUCCESS, Status.MAX_STEPS]
    assert stiff.status is Status.MAX_STEPS


def test_implicit_nan_is_a_status():
    f = lambda t, y: torch.where(t > 0.3, torch.full_like(y, float("nan")), -y)
    sol = odeint(
        f,
        torch.ones(2, dtype=F64),
        torch.tensor([0.0, 1.0], dtype=F64),
        method="trapezoid",
        throw=False,
        options={"max_nonfinite_retries": 2},
    )
    assert sol.status is Status.NON_FINITE and sol.stats["n_newton_failures"] >= 3 and "NaN" in sol.message
    assert torch.isfinite(sol.ys[0]).all() and torch.isnan(sol.ys[-1]).all()


def test_solvers_is_a_read_only_mapping():
    from collections.abc import Mapping

    from nodecourse.solvers._registry import SolverRegistry, SolverSpec, UnknownSolverError

    assert isinstance(SOLVERS, Mapping)
    assert SOLVERS.get("nope") is None and SOLVERS.get("nope", "x") == "x" and SOLVERS.get(["unhashable"]) is None
    assert SOLVERS.get("dopri5") is SOLVERS["dopri5"]
    assert "dopri5" in SOLVERS and "nope" not in SOLVERS and 5 not in SOLVERS
    assert len(SOLVERS) == len(list(SOLVERS)) == len(SOLVERS.items()) == len(set(SOLVERS.keys()))
    assert all(spec.name == name for name, spec in SOLVERS.items())
    assert list(SOLVERS.values()) == [SOLVERS[n] for n in SOLVERS]
    assert dict(SOLVERS) == {n: SOLVERS[n] for n in SOLVERS}
    with pytest.raises(UnknownSolverError) as info:  # a ValueError (the library's bad value) and a KeyError
        SOLVERS["rk45"]
    assert isinstance(info.value, ValueError) and isinstance(info.value, KeyError)
    assert str(info.value) == (
        "method='rk45' is not a registered solver; valid names: "
        + ", ".join(SOLVERS)
        + " (or pass a nodecourse.solvers.ButcherTableau)"
    )
    with pytest.raises(TypeError):  # read-only
        SOLVERS["mine"] = SOLVERS["rk4"]
    with pytest.raises(TypeError):
        SOLVERS._specs["mine"] = SOLVERS["rk4"]
    with pytest.raises(ValueError, match=r"registered twice: \['rk4'\]"):
        SolverRegistry([SOLVERS["rk4"], SolverSpec(SOLVERS["rk4"].tableau)])


@pytest.mark.parametrize("method", ["euler", "rk4", "implicit_euler"])
def test_float32_grid_times_take_one_step_per_gap(method):
    """Times k/48 given in float32 with step_size=1/48 (the PhysioNet grid) are one step per gap:
    the float32 rounding of a gap must not add a step of a few ulps (it did for 22 of 48 gaps)."""
    t = torch.arange(49, dtype=torch.float32) / 48
    sol = odeint(lambda tt, y: -y, torch.ones(3, 2), t, method=method, step_size=1 / 48)
    assert sol.stats["n_steps"] == 48
    # and a gap of 1.5 steps still takes two
    sol = odeint(lambda tt, y: -y, torch.ones(3, 2), torch.tensor([0.0, 1.5 / 48]), method=method, step_size=1 / 48)
    assert sol.stats["n_steps"] == 2
