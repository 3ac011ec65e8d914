"""create_graph=True through every gradient route: the closed form, or a named refusal at the first
backward call (never a hang, never a gradient whose graph is silently missing).

The problem: dy/dt = -theta * y, y(0) = y0, so y(T) = y0 exp(-theta T),
dy(T)/dtheta = -T y(T) and d2y(T)/dtheta2 = T^2 y(T).
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from nodecourse.deq import DEQ
from nodecourse.solvers import odeint
from nodecourse.validation import SecondDerivativeError

T, THETA, Y0 = 1.0, 0.7, 1.3


class Decay(nn.Module):
    def __init__(self):
        super().__init__()
        self.theta = nn.Parameter(torch.tensor(THETA, dtype=torch.float64))

    def forward(self, t, y):
        return -self.theta * y


def closed_form():
    yT = Y0 * math.exp(-THETA * T)
    return yT, -T * yT, T * T * yT


ROUTES = {
    "backprop": dict(method="dopri5", rtol=1e-10, atol=1e-12, gradient="backprop"),
    "checkpoint": dict(method="dopri5", rtol=1e-10, atol=1e-12, gradient="checkpoint"),
    "checkpoint-rk4": dict(method="rk4", step_size=0.01, gradient="checkpoint"),
    "reversible": dict(method="reversible_heun", step_size=1e-3, gradient="reversible"),
}


def first_and_second(kw, y0_requires_grad=False):
    f = Decay()
    y0 = torch.tensor([Y0], dtype=torch.float64, requires_grad=y0_requires_grad)
    t = torch.tensor([0.0, T], dtype=torch.float64)
    yT = odeint(f, y0, t, **kw).ys[-1].sum()
    (g,) = torch.autograd.grad(yT, f.theta, create_graph=True)
    (h,) = torch.autograd.grad(g, f.theta)
    return float(g.detach()), float(h)


@pytest.mark.parametrize("route", list(ROUTES))
def test_second_derivative_equals_the_closed_form(route):
    _, dy, d2y = closed_form()
    g, h = first_and_second(ROUTES[route])
    tol = 1e-5 if route == "reversible" else 1e-7  # reversible Heun: second order in h = 1e-3
    assert g == pytest.approx(dy, rel=tol)
    assert h == pytest.approx(d2y, rel=tol)


@pytest.mark.parametrize("route", ["checkpoint", "checkpoint-rk4", "reversible"])
def test_second_derivative_equals_backprops_through_the_same_steps(route):
    kw = dict(ROUTES[route], gradient="backprop")
    assert first_and_second(ROUTES[route]) == pytest.approx(first_and_second(kw), rel=1e-9)


@pytest.mark.parametrize("route", ["checkpoint", "reversible"])
def test_a_gradient_penalty_adds_its_share(route):
    # loss = y(T) + (dy(T)/dtheta)^2: dloss/dtheta = dy + 2 dy d2y (the penalty must not add nothing)
    _, dy, d2y = closed_form()
    f = Decay()
    y0 = torch.tensor([Y0], dtype=torch.float64)
    yT = odeint(f, y0, torch.tensor([0.0, T], dtype=torch.float64), **ROUTES[route]).ys[-1].sum()
    (g,) = torch.autograd.grad(yT, f.theta, create_graph=True)
    (yT + g**2).backward()
    assert float(f.theta.grad) == pytest.approx(dy + 2 * dy * d2y, rel=1e-5)


def test_hessian_with_respect_to_y0_through_checkpoint():
    # dy/dt = -y^2: y(T) = y0 / (1 + y0 T), d2y(T)/dy0^2 = -2T / (1 + y0 T)^3
    y0 = torch.tensor([0.5], dtype=torch.float64, requires_grad=True)
    yT = (
        odeint(
            lambda t, y: -y * y,
            y0,
            torch.tensor([0.0, T], dtype=torch.float64),
            rtol=1e-10,
            atol=1e-12,
            gradient="checkpoint",
        )
        .ys[-1]
        .sum()
    )
    (g,) = torch.autograd.grad(yT, y0, create_graph=True)
    (h,) = torch.autograd.grad(g, y0)
    assert float(g.detach()) == pytest.approx(1 / (1 + 0.5 * T) ** 2, rel=1e-7)
    assert float(h) == pytest.approx(-2 * T / (1 + 0.5 * T) ** 3, rel=1e-7)


def test_adjoint_refuses_create_graph_by_name_and_keeps_first_order():
    f = Decay()
    y0 = torch.tensor([Y0], dtype=torch.float64)
    t = torch.tensor([0.0, T], dtype=torch.float64)
    yT = odeint(f, y0, t, rtol=1e-10, atol=1e-12, gradient="adjoint").ys[-1].sum()
    with pytest.raises(SecondDerivativeError, match="gradient='adjoint'.*checkpoint"):
        torch.autograd.grad(yT, f.theta, create_graph=True)
    yT = odeint(f, y0, t, rtol=1e-10, atol=1e-12, gradient="adjoint").ys[-1].sum()
    (g,) = torch.autograd.grad(yT, f.theta)
    assert float(g) == pytest.approx(closed_form()[1], rel=1e-6)


def test_time_gradients_refuse_create_graph_by_name():
    t = torch.tensor([0.0, T], dtype=torch.float64, requires_grad=True)
    yT = odeint(Decay(), torch.tensor([Y0], dtype=torch.float64), t).ys[-1].sum()
    with pytest.raises(SecondDerivativeError, match="output times t"):
        torch.autograd.grad(yT, t, create_graph=True)


class Affine(nn.Module):
    """f(z, x) = a z + x: the fixed point z* = x / (1 - a), d2z*/da2 = 2 x / (1 - a)^3."""

    def __init__(self, a=0.4):
        super().__init__()
        self.a = nn.Parameter(torch.tensor(a, dtype=torch.float64))

    def forward(self, z, x):
        return self.a * z + x


def test_deq_implicit_refuses_create_graph_by_name():
    f = Affine()
    deq = DEQ(f, method="picard", tol=1e-12, max_iter=500, state=1)
    z = deq(torch.ones(1, 1, dtype=torch.float64)).sum()
    with pytest.raises(SecondDerivativeError, match="backward='unrolled'"):
        torch.autograd.grad(z, f.a, create_graph=True)


def test_deq_unrolled_second_derivative_equals_the_closed_form():
    f, a, x = Affine(), 0.4, 1.0
    deq = DEQ(f, method="picard", tol=1e-12, max_iter=500, state=1, backward="unrolled")
    z = deq(torch.full((1, 1), x, dtype=torch.float64)).sum()
    (g,) = torch.autograd.grad(z, f.a, create_graph=True)
    (h,) = torch.autograd.grad(g, f.a)
    assert float(g.detach()) == pytest.approx(x / (1 - a) ** 2, rel=1e-8)
    assert float(h) == pytest.approx(2 * x / (1 - a) ** 3, rel=1e-8)
