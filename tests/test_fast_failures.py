"""Failures that end at once and say why: a failed forward solve is not replayed by the backward
pass, a rejection storm from a noisy error estimate is named as such, and reversible Heun outside
its stability region warns."""

import math
import warnings

import pytest
import torch
from torch import nn

from nodecourse import odeint
from nodecourse.solvers._result import BackwardSolveWarning, Status
from nodecourse.solvers._reversible import WARN_GROWTH, ReversibleStabilityWarning

T = torch.tensor([0.0, 1.0], dtype=torch.float64)


class DropoutField(nn.Module):
    """A field that draws random numbers (dropout in training mode): a random field for the routes."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(2, 16), nn.Dropout(0.3), nn.Tanh(), nn.Linear(16, 2)).double()

    def forward(self, t, y):
        return self.net(y)


@pytest.mark.parametrize(
    "settings",
    [
        dict(gradient="checkpoint", method="rk4", step_size=0.01, max_steps=5),
        dict(gradient="checkpoint", method="dopri5", max_steps=5),
        dict(gradient="reversible", method="reversible_heun", step_size=0.01, max_steps=5),
    ],
    ids=["checkpoint-rk4", "checkpoint-dopri5", "reversible"],
)
def test_failed_forward_with_a_random_field_returns_nan_without_a_replay(settings):
    field = DropoutField()
    y0 = torch.tensor([[0.5, -0.3]], dtype=torch.float64, requires_grad=True)
    sol = odeint(field, y0, T, throw=False, **settings)
    assert sol.status is Status.MAX_STEPS
    with pytest.warns(BackwardSolveWarning, match="MAX_STEPS"):
        sol.ys[-1].sum().backward()
    assert sol.stats["nfe_backward"] == 0  # the failed solve was not replayed
    assert sol.stats["backward_status"] is Status.MAX_STEPS
    assert torch.isnan(y0.grad).all()
    assert all(torch.isnan(p.grad).all() for p in field.parameters())


@pytest.mark.parametrize("method", ["implicit_euler", "dopri5"])
def test_a_rejection_storm_from_a_random_field_names_the_noise_not_stiffness(method):
    field = DropoutField()
    sol = odeint(field, torch.randn(4, 2, dtype=torch.float64), T, method=method, throw=False, max_steps=120)
    assert sol.status is Status.MAX_STEPS
    assert sol.stats["n_rejected"] > 0
    assert "rejections are not stiffness" in sol.message and "func.eval()" in sol.message


def test_a_stiff_field_running_out_of_steps_is_not_called_noise():
    sol = odeint(
        lambda t, y: -1e4 * y, torch.ones(2, dtype=torch.float64), T, method="dopri5", throw=False, max_steps=60
    )
    assert sol.status is Status.MAX_STEPS
    assert "not stiffness" not in sol.message


def test_reversible_heun_outside_its_stability_region_warns_with_the_lessons_growth():
    # y' = -50 y, h = 0.1 on [0, 2]: per step |mu_-| = exp(asinh(5)), 20 steps (lesson 10, section 5)
    t = torch.tensor([0.0, 2.0], dtype=torch.float64)
    with pytest.warns(ReversibleStabilityWarning, match="stability region") as record:
        sol = odeint(
            lambda t, y: -50.0 * y, torch.ones(1, dtype=torch.float64), t, method="reversible_heun", step_size=0.1
        )
    growth = 20 * math.asinh(5.0)
    assert f"exp({growth:.3g})" in str(record[0].message)
    assert abs(float(sol.ys[-1])) > 1e10  # what the warning is about: the parasitic mode dominates


@pytest.mark.parametrize("lam", [-1.0, 2.0])
def test_reversible_heun_inside_its_comfort_zone_stays_quiet(lam):
    # modest contraction over T = 1 (growth e^{asinh(0.1) 10} ~ 2.7 < WARN_GROWTH) and a growing mode
    assert math.exp(10 * math.asinh(0.1)) < WARN_GROWTH
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReversibleStabilityWarning)
        odeint(lambda t, y: lam * y, torch.ones(1, dtype=torch.float64), T, method="reversible_heun", step_size=0.1)


def test_reversible_gradient_route_warns_too():
    t = torch.tensor([0.0, 2.0], dtype=torch.float64)
    y0 = torch.ones(1, dtype=torch.float64, requires_grad=True)
    with pytest.warns(ReversibleStabilityWarning):
        odeint(lambda t, y: -50.0 * y, y0, t, method="reversible_heun", step_size=0.1, gradient="reversible")
