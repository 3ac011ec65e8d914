"""Issue 38: the adjoint's backward solve at lesson 4's setting (rtol 1e-4, atol 1e-20), the first-step
guess it used to stop on, the warning a failed backward pass gives under throw=False, and the remedy
texts, each checked on a case where the direction it names is measured to help."""

from __future__ import annotations

import math

import pytest
import torch

from nodecourse import SolverError, Status, odeint
from nodecourse.measure import DecayFeed, analytic_gradient
from nodecourse.solvers import BackwardSolveWarning
from nodecourse.solvers._control import FIRST_STEP_ULPS

F64 = torch.float64


def _decay_adjoint(T, rtol=1e-4, atol=1e-20, throw=True, **kw):
    field = DecayFeed(-10.0)
    z0 = torch.tensor([1.0, 0.0], dtype=F64, requires_grad=True)
    sol = odeint(
        field, z0, torch.tensor([0.0, T], dtype=F64), rtol=rtol, atol=atol, gradient="adjoint", throw=throw, **kw
    )
    sol.ys[-1][1].backward()
    grad = [float(z0.grad[0]), float(z0.grad[1]), float(field.lam.grad), float(field.theta.grad)]
    return sol, grad


@pytest.mark.parametrize("T", [0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
def test_adjoint_succeeds_at_lesson_4s_setting_with_the_right_gradient(T):
    # rtol 1e-4, atol 1e-20: the backward solve ended STEP_UNDERFLOW at every horizon before the fix
    sol, grad = _decay_adjoint(T)
    assert sol.stats["backward_status"] is Status.SUCCESS
    exact = analytic_gradient(-10.0, 1.0, T)[:4]
    assert grad[1] == pytest.approx(1.0, abs=1e-12)
    # dL/dz10 and dL/dtheta are int_0^T e^{lam t} dt: the adjoint recomputes z1 backwards, within 1e-2
    # (lesson 4's subject is how this error grows; here only that a gradient comes back near the truth)
    for got, want in zip(grad, exact):
        assert got == pytest.approx(want, rel=1e-2)


def test_the_first_step_guess_is_raised_to_what_the_times_resolve():
    # A solve that starts at t0 != 0 with an entry at 0 and atol 1e-20: Hairer's guess is ~1e-18, under
    # 4 ulp(1) = 8.9e-16; it used to end STEP_UNDERFLOW before trying a step, forwards as well as in the adjoint.
    field = DecayFeed(-10.0)
    y0 = torch.tensor([1.0, 0.0], dtype=F64)
    for t in ([1.0, 1.5], [1.0, 0.5]):
        sol = odeint(field, y0, torch.tensor(t, dtype=F64), rtol=1e-4, atol=1e-20, record_steps=True)
        assert sol.success
        assert abs(sol.steps.h[0]) >= FIRST_STEP_ULPS * math.ulp(1.0)
        exact = (1 - math.exp(-10 * (t[1] - t[0]))) / 10
        assert float(sol.ys[-1][1].detach()) == pytest.approx(exact, rel=1e-3)
        batch = odeint(field, y0.repeat(3, 1), torch.tensor(t, dtype=F64), rtol=1e-4, atol=1e-20, per_sample=True)
        assert batch.success
    # at t0 = 0 any positive step resolves: the guess is left as it is
    sol = odeint(field, y0, torch.tensor([0.0, 0.5], dtype=F64), rtol=1e-4, atol=1e-20, record_steps=True)
    assert abs(sol.steps.h[0]) < 1e-15


def test_a_failed_backward_solve_under_throw_false_warns_and_says_so_in_stats():
    field = DecayFeed(-10.0)
    z0 = torch.tensor([1.0, 0.0], dtype=F64, requires_grad=True)
    sol = odeint(
        field,
        z0,
        torch.tensor([0.0, 1.0], dtype=F64),
        gradient="adjoint",
        adjoint_options={"max_steps": 2},
        throw=False,
    )
    with pytest.warns(BackwardSolveWarning, match="MAX_STEPS") as record:
        sol.ys[-1][1].backward()
    assert record[0].message.status is Status.MAX_STEPS
    assert "adjoint_options" in str(record[0].message)
    assert sol.stats["backward_status"] is Status.MAX_STEPS and "MAX_STEPS" in sol.stats["backward_message"]
    assert torch.isnan(z0.grad).all() and torch.isnan(field.theta.grad)
    # throw=True raises instead, and a successful backward pass warns nothing
    sol = odeint(field, z0, torch.tensor([0.0, 1.0], dtype=F64), gradient="adjoint", adjoint_options={"max_steps": 2})
    with pytest.raises(SolverError, match="MAX_STEPS"):
        sol.ys[-1][1].backward()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", BackwardSolveWarning)
        _decay_adjoint(0.5, throw=False)


def test_checkpoint_backward_failure_warns_too():
    field = DecayFeed(-10.0)
    z0 = torch.tensor([1.0, 0.0], dtype=F64, requires_grad=True)
    sol = odeint(field, z0, torch.tensor([0.0, 1.0], dtype=F64), gradient="checkpoint", max_steps=3, throw=False)
    with pytest.warns(BackwardSolveWarning, match="MAX_STEPS"):
        sol.ys[-1][1].backward()
    assert sol.stats["backward_status"] is Status.MAX_STEPS


# ---------------------------------------------------------------- the remedy texts name what helps


def _noisy_zero(t, y):
    """y1' = -y1; y2' = sin^2 + cos^2 - 1: zero in exact arithmetic, rounding noise in float64."""
    return torch.stack([-y[0], torch.sin(3 * t + y[0]) ** 2 + torch.cos(3 * t + y[0]) ** 2 - 1])


def _noisy(**kw):
    y0 = torch.tensor([1.0, 0.0], dtype=F64)
    return odeint(_noisy_zero, y0, torch.tensor([0.3, 5.0], dtype=F64), throw=False, **kw)


def test_step_underflow_remedy_names_a_larger_atol_and_that_helps():
    failed = _noisy(rtol=1e-4, atol=1e-200)
    assert failed.status is Status.STEP_UNDERFLOW
    text = Status.STEP_UNDERFLOW.remedy()
    assert "raise atol" in text and "loosen rtol/atol" not in text
    assert _noisy(rtol=1e-4, atol=1e-12).success  # what the text says: atol raised
    assert _noisy(rtol=1e-8, atol=1e-200).status is Status.STEP_UNDERFLOW  # a tighter rtol does not cure it


def test_step_underflow_remedy_for_a_blow_up_is_to_end_before_it():
    blow_up = lambda t, y: y**2  # noqa: E731  (y = 1 / (1 - t): infinite at t = 1)
    y0 = torch.ones(1, dtype=F64)
    text = Status.STEP_UNDERFLOW.remedy()
    assert "end the solve before" in text
    for kw in ({}, {"rtol": 1e-3, "atol": 1e-3}, {"method": "trapezoid"}):
        assert odeint(blow_up, y0, torch.tensor([0.0, 2.0], dtype=F64), throw=False, **kw).status is (
            Status.STEP_UNDERFLOW
        )
    assert odeint(blow_up, y0, torch.tensor([0.0, 0.99], dtype=F64)).success


def test_max_steps_remedy_names_a_larger_atol_for_entries_at_zero_and_that_helps():
    failed = _noisy(rtol=1e-4, atol=1e-30)
    assert failed.status is Status.MAX_STEPS
    text = Status.MAX_STEPS.remedy()
    assert "raise max_steps" in text and "raise atol" in text and "implicit_euler" in text
    assert _noisy(rtol=1e-4, atol=1e-12).success
    with pytest.raises(SolverError, match="What to try: raise max_steps"):
        odeint(_noisy_zero, torch.tensor([1.0, 0.0], dtype=F64), torch.tensor([0.3, 5.0], dtype=F64), atol=1e-30)
