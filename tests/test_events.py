"""Terminal events (``odeint(..., event_fn=...)``, ``odeint_event``): analytic event times, gradients
through the event time against finite differences, torchdiffeq's own event cases side by side,
tuple states, reversed time, and the named refusals."""

import math

import pytest
import torch
import torchdiffeq
from torch import nn

import nodecourse as nc
from nodecourse.solvers import Status
from nodecourse.validation import SecondDerivativeError

F64 = torch.float64
G = 9.81


def fall(t, y):
    """A ball in free fall: y = (height, velocity)."""
    return torch.stack([y[1], torch.full_like(y[1], -G)])


def ground(t, y):
    return y[0]


def t01(dtype=F64):
    return torch.tensor([0.0, 1.0], dtype=dtype)


class Decay(nn.Module):
    """y' = -k y: y(t) = y0 exp(-k t) crosses the level c at t = log(y0 / c) / k."""

    def __init__(self, k=1.3):
        super().__init__()
        self.k = nn.Parameter(torch.tensor(k, dtype=F64))

    def forward(self, t, y):
        return -self.k * y


# --- analytic event times (float64, to 1e-8) -----------------------------------------------------------


@pytest.mark.parametrize("method, settings", [("dopri5", {}), ("bosh3", {}), ("rk4", {"step_size": 0.01})])
def test_falling_ball_hits_the_ground_at_sqrt_2h_over_g(method, settings):
    h = 2.0
    sol = nc.odeint(fall, torch.tensor([h, 0.0], dtype=F64), t01(), event_fn=ground, method=method, rtol=1e-10,
                    atol=1e-12, **settings)  # fmt: skip
    assert sol.status is Status.SUCCESS
    assert abs(float(sol.event_t) - math.sqrt(2 * h / G)) < 1e-8
    assert sol.ys.shape == (2, 2) and sol.ts.shape == (2,)
    assert float(sol.ts[0]) == 0.0 and float(sol.ts[1]) == float(sol.event_t)
    assert abs(float(sol.ys[-1, 0])) < 1e-8  # on the ground
    assert abs(float(sol.ys[-1, 1]) + math.sqrt(2 * G * h)) < 1e-8  # impact speed sqrt(2 g h)
    assert sol.stats["nfe"] > 0 and sol.stats["nfe_event_search"] > 0


def test_exp_decay_crossing_a_level():
    f, c = Decay(1.3), 0.3
    sol = nc.odeint(f, torch.tensor([1.0], dtype=F64), t01(), event_fn=lambda t, y: y[0] - c, rtol=1e-10, atol=1e-12)
    assert abs(float(sol.event_t) - math.log(1 / c) / 1.3) < 1e-8


def test_several_event_functions_end_at_the_first_crossing():
    f = Decay(1.0)
    levels = torch.tensor([0.2, 0.5, 0.05], dtype=F64)
    sol = nc.odeint(f, torch.tensor([1.0], dtype=F64), t01(), event_fn=lambda t, y: y - levels, rtol=1e-10, atol=1e-12)
    assert abs(float(sol.event_t) - math.log(2.0)) < 1e-8  # the 0.5 level is crossed first


def test_a_late_event_is_found_past_t1_and_the_record_is_the_solve_to_it():
    # t[1] only gives the direction: the event at t = log(1e4) ~ 9.2 lies far beyond it
    sol = nc.odeint(Decay(1.0), torch.tensor([1.0], dtype=F64), t01(), event_fn=lambda t, y: y[0] - 1e-4,
                    rtol=1e-10, atol=1e-12, record_steps=True)  # fmt: skip
    assert abs(float(sol.event_t) - math.log(1e4)) < 1e-8
    steps = sol.steps.accepted_steps()
    assert abs(steps[-1][0] + steps[-1][1] - float(sol.event_t)) < 1e-12  # the record ends at the event
    assert sol.stats["n_accepted"] == len(steps)


def test_reversed_time():
    # y' = -y backwards from t = 0: y(t) = exp(-t) reaches 2 at t = -log 2
    f = Decay(1.0)
    y0 = torch.tensor([1.0], dtype=F64)
    sol = nc.odeint(f, y0, torch.tensor([0.0, -1.0], dtype=F64), event_fn=lambda t, y: y[0] - 2.0, rtol=1e-10,
                    atol=1e-12)  # fmt: skip
    assert abs(float(sol.event_t) + math.log(2.0)) < 1e-8
    event_t, ys = nc.odeint_event(f, y0, torch.tensor(0.0, dtype=F64), event_fn=lambda t, y: y[0] - 2.0,
                                  reverse_time=True, rtol=1e-10, atol=1e-12)  # fmt: skip
    assert abs(float(event_t) + math.log(2.0)) < 1e-8 and abs(float(ys[-1, 0]) - 2.0) < 1e-8


def test_event_fn_reading_time():
    # the event function may depend on t: y = exp(-t) meets the line 1 - t/4 where exp(-t) = 1 - t/4
    sol = nc.odeint(Decay(1.0), torch.tensor([1.0], dtype=F64), t01(), event_fn=lambda t, y: y[0] - (1 - t / 4) + 1e-3,
                    rtol=1e-11, atol=1e-13)  # fmt: skip
    tau = float(sol.event_t)
    assert abs(math.exp(-tau) - (1 - tau / 4) + 1e-3) < 1e-9


def test_tuple_state():
    h = 3.0
    y0 = (torch.tensor(h, dtype=F64), torch.tensor(0.0, dtype=F64))
    sol = nc.odeint(lambda t, y: (y[1], torch.full_like(y[1], -G)), y0, t01(), event_fn=lambda t, y: y[0],
                    rtol=1e-10, atol=1e-12)  # fmt: skip
    assert isinstance(sol.ys, tuple) and sol.ys[0].shape == (2,) and sol.ys[1].shape == (2,)
    assert abs(float(sol.event_t) - math.sqrt(2 * h / G)) < 1e-8
    assert abs(float(sol.ys[1][-1]) + math.sqrt(2 * G * h)) < 1e-8


def test_event_at_the_start_ends_at_once():
    sol = nc.odeint(fall, torch.tensor([0.0, 1.0], dtype=F64), t01(), event_fn=ground)
    assert float(sol.event_t) == 0.0 and sol.stats["nfe"] == 0
    assert torch.equal(sol.ys[0], sol.ys[1])


def test_no_event_is_a_failed_solve_with_its_status():
    never = lambda t, y: y[0] + 10.0  # noqa: E731  (y = exp(-t) > 0 > -10 always)
    y0 = torch.tensor([1.0], dtype=F64)
    sol = nc.odeint(Decay(1.0), y0, t01(), event_fn=never, throw=False, max_steps=50)
    assert sol.status is Status.MAX_STEPS and math.isnan(float(sol.event_t)) and "no event" in sol.message
    assert torch.isnan(sol.ys[-1]).all()
    with pytest.raises(nc.SolverError, match="no event"):
        nc.odeint(Decay(1.0), y0, t01(), event_fn=never, max_steps=50)


# --- gradients through the event time ---------------------------------------------------------------


def _impact_time(h, v, p, gradient):
    """Impact time of a ball thrown up at v from height h under gravity p * G."""
    f = lambda t, y: torch.stack([y[1], -p * G * torch.ones_like(y[1])])  # noqa: E731
    y0 = torch.stack([h, v])
    kw = {"adjoint_params": (p,)} if gradient == "adjoint" and p.requires_grad else {}
    sol = nc.odeint(f, y0, t01(), event_fn=ground, rtol=1e-11, atol=1e-12, gradient=gradient, **kw)
    return sol.event_t, sol.ys[-1]


@pytest.mark.parametrize("gradient", ["backprop", "adjoint", "checkpoint"])
def test_event_time_gradient_matches_finite_differences(gradient):
    h = torch.tensor(2.0, dtype=F64, requires_grad=True)
    v = torch.tensor(1.5, dtype=F64, requires_grad=True)
    p = torch.tensor(1.2, dtype=F64, requires_grad=True)
    tau, y_end = _impact_time(h, v, p, gradient)
    loss = tau + 0.3 * y_end[1]  # the event time and the impact velocity
    loss.backward()
    eps = 1e-6
    for x in (h, v, p):
        with torch.no_grad():
            x += eps
            up = sum(a * b for a, b in zip((1.0, 0.3), _pick(_impact_time(h, v, p, "backprop"))))
            x -= 2 * eps
            down = sum(a * b for a, b in zip((1.0, 0.3), _pick(_impact_time(h, v, p, "backprop"))))
            x += eps
        fd = (up - down) / (2 * eps)
        assert abs(float(x.grad) - float(fd)) < 1e-6 * max(1.0, abs(float(fd))), (gradient, float(x.grad), float(fd))
    # and the closed form of the impact time: tau = (v + sqrt(v^2 + 2 g h)) / g
    g = float(p) * G
    root = math.sqrt(1.5**2 + 2 * g * 2.0)
    assert abs(float(tau) - (1.5 + root) / g) < 1e-8


def _pick(pair):
    tau, y_end = pair
    return float(tau), float(y_end[1])


def test_event_time_gradient_wrt_a_module_parameter_on_the_adjoint():
    f, c = Decay(1.3), 0.3
    y0 = torch.tensor([1.0], dtype=F64, requires_grad=True)
    sol = nc.odeint(f, y0, t01(), event_fn=lambda t, y: y[0] - c, gradient="adjoint", rtol=1e-10, atol=1e-12)
    sol.event_t.backward()
    # tau = log(y0 / c) / k: d tau/dk = -tau / k, d tau/dy0 = 1 / (k y0)
    tau = math.log(1 / c) / 1.3
    assert abs(float(f.k.grad) + tau / 1.3) < 1e-7
    assert abs(float(y0.grad) - 1 / 1.3) < 1e-7


def test_tuple_state_gradient():
    h = torch.tensor(2.0, dtype=F64, requires_grad=True)
    y0 = (h, torch.tensor(0.0, dtype=F64))
    sol = nc.odeint(lambda t, y: (y[1], torch.full_like(y[1], -G)), y0, t01(), event_fn=lambda t, y: y[0],
                    rtol=1e-10, atol=1e-12)  # fmt: skip
    sol.event_t.backward()
    assert abs(float(h.grad) - 1 / math.sqrt(2 * 2.0 * G)) < 1e-8  # d sqrt(2h/g)/dh


def test_create_graph_through_an_event_is_refused_by_name():
    h = torch.tensor(2.0, dtype=F64, requires_grad=True)
    sol = nc.odeint(fall, torch.stack([h, torch.zeros((), dtype=F64)]), t01(), event_fn=ground)
    with pytest.raises(SecondDerivativeError, match="create_graph"):
        torch.autograd.grad(sol.event_t, h, create_graph=True)


# --- torchdiffeq's event cases, through odeint_event, side by side with torchdiffeq ---------------------


class ConstantODE(nn.Module):
    """torchdiffeq's tests/problems.py ConstantODE: y = a t + b."""

    def __init__(self, dtype):
        super().__init__()
        self.a = nn.Parameter(torch.tensor(0.2, dtype=dtype))
        self.b = nn.Parameter(torch.tensor(3.0, dtype=dtype))

    def forward(self, t, y):
        return self.a + (y - (self.a * t + self.b)) ** 5

    def y_exact(self, t):
        return self.a * t + self.b


class SineODE(nn.Module):
    """torchdiffeq's tests/problems.py SineODE."""

    def forward(self, t, y):
        return 2 * y / t + t**4 * torch.sin(2 * t) - t**2 + 4 * t**3

    def y_exact(self, t):
        return (
            -0.5 * t**4 * torch.cos(2 * t)
            + 0.5 * t**3 * torch.sin(2 * t)
            + 0.25 * t**2 * torch.cos(2 * t)
            - t**3
            + 2 * t**4
            + (math.pi - 0.25) * t**2
        )


def _problem(ode, dtype, reverse):
    """torchdiffeq's construct_problem (10 points on [1, 8]), the event at the third point."""
    f = (ConstantODE(dtype) if ode == "constant" else SineODE()).to(dtype)
    t_points = torch.linspace(1, 8, 10, dtype=dtype)
    with torch.no_grad():
        sol = f.y_exact(t_points)
    if reverse:
        t_points, sol = t_points.flip(0), sol.flip(0)
    return f, sol[0].clone(), t_points, sol


def rel_error(true, estimate):
    return float(((true - estimate) / true).abs().max())


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("ode", ["constant", "sine"])
@pytest.mark.parametrize("method", ["dopri5", "bosh3", "rk4", "euler"])
def test_torchdiffeq_event_cases(reverse, dtype, ode, method):
    """torchdiffeq's tests/event_tests.py test_odeint: the same problem, event and tolerances, through
    the course's odeint_event; torchdiffeq's own answer is computed here too and must agree."""
    tol = 5e-3 if method == "euler" else 1e-4
    f, y0, t_points, sol = _problem(ode, dtype, reverse)

    def event_fn(t, y):
        return torch.sum(y - sol[2])

    settings = {"step_size": 0.01} if method in ("rk4", "euler") else {}
    options = {"step_size": 0.01, "interp": "cubic"} if settings else {}
    t_ev, ys = nc.odeint_event(f, y0, t_points[0], event_fn=event_fn, reverse_time=reverse, method=method, **settings)
    assert rel_error(sol[2], ys[-1]) < tol
    assert rel_error(t_points[2], t_ev) < tol
    t_td, y_td = torchdiffeq.odeint(f, y0, t_points[0:2], event_fn=event_fn, method=method, options=options)
    assert rel_error(t_td, t_ev) < 2 * tol and rel_error(y_td[-1], ys[-1]) < 2 * tol


def test_torchdiffeq_adjoint_event_case():
    """torchdiffeq's test_adjoint: the event at the last point, gradient='adjoint', backward runs, and the
    gradients agree with torchdiffeq's odeint_event through its odeint_adjoint."""
    f, y0, t_points, sol = _problem("constant", F64, False)
    y0.requires_grad_(True)

    def event_fn(t, y):
        return torch.sum(y - sol[-1])

    t, y = nc.odeint_event(f, y0, t_points[0], event_fn=event_fn, gradient="adjoint")
    assert rel_error(sol[-1], y[-1]) < 1e-4 and rel_error(t_points[-1], t) < 1e-4
    ours = torch.autograd.grad(t + y[-1].sum(), (y0, f.a, f.b))
    t2, y2 = torchdiffeq.odeint_event(
        f, y0, t_points[0], event_fn=event_fn, odeint_interface=torchdiffeq.odeint_adjoint
    )
    theirs = torch.autograd.grad(t2 + y2[-1].sum(), (y0, f.a, f.b))
    for a, b in zip(ours, theirs):
        assert abs(float(a) - float(b)) < 1e-4 * max(1.0, abs(float(b)))


@pytest.mark.parametrize("interface", ["odeint", "odeint_adjoint"])
def test_odeint_event_with_torchdiffeqs_odeint_interface(interface):
    # torchdiffeq's odeint as the interface: the (event_t, solution) pair gains the event-time gradient here
    h = torch.tensor(2.0, dtype=F64, requires_grad=True)
    y0 = torch.stack([h, torch.zeros((), dtype=F64)])
    kwargs = {"adjoint_params": ()} if interface == "odeint_adjoint" else {}
    interface = getattr(torchdiffeq, interface)
    t0 = torch.tensor(0.0, dtype=F64)
    t_ev, ys = nc.odeint_event(
        fall, y0, t0, event_fn=ground, odeint_interface=interface, rtol=1e-10, atol=1e-12, **kwargs
    )
    (grad,) = torch.autograd.grad(t_ev, h)
    assert abs(float(t_ev) - math.sqrt(2 * 2.0 / G)) < 1e-7
    assert abs(float(grad) - 1 / math.sqrt(2 * 2.0 * G)) < 1e-6


def test_backend_torchdiffeq_uses_its_event_search():
    h = torch.tensor(2.0, dtype=F64, requires_grad=True)
    y0 = torch.stack([h, torch.zeros((), dtype=F64)])
    sol = nc.odeint(fall, y0, t01(), event_fn=ground, backend="torchdiffeq", rtol=1e-10, atol=1e-12)
    assert sol.status is Status.SUCCESS and sol.stats["nfe_event_search"] > 0
    assert abs(float(sol.event_t) - math.sqrt(2 * 2.0 / G)) < 1e-7
    sol.event_t.backward()
    assert abs(float(h.grad) - 1 / math.sqrt(2 * 2.0 * G)) < 1e-6


# --- refusals by name ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event_fn, match",
    [
        (lambda t, y: float(y[0]), "event_fn.*returned float"),
        (lambda t, y: y[:0], "event_fn.*at least one entry"),
        (lambda t, y: y[0] if float(y[0]) > 1.9 else y, "event_fn.*one shape"),
        (lambda t, y: y[0] > 0, "event_fn.*floating"),
        (lambda t, y: y[0] / 0.0 * 0.0, "event_fn.*not finite"),
        ("ground", "event_fn"),
    ],
)
def test_bad_event_fn_is_refused_by_name(event_fn, match):
    with pytest.raises((TypeError, ValueError), match=match):
        nc.odeint(fall, torch.tensor([2.0, 0.0], dtype=F64), t01(), event_fn=event_fn)


def test_bad_t_and_modes_with_events_are_refused_by_name():
    y0 = torch.tensor([2.0, 0.0], dtype=F64)
    with pytest.raises(ValueError, match="with event_fn, t must hold two times"):
        nc.odeint(fall, y0, torch.tensor([0.0, 1.0, 2.0], dtype=F64), event_fn=ground)
    with pytest.raises(ValueError, match="per_sample=True is not available"):
        nc.odeint(fall, y0[None], t01(), event_fn=ground, per_sample=True)


def test_event_time_gradient_on_the_reversible_route_equals_backprop():
    grads = {}
    for gradient in ("backprop", "reversible"):
        h = torch.tensor(2.0, dtype=F64, requires_grad=True)
        y0 = torch.stack([h, torch.zeros((), dtype=F64)])
        sol = nc.odeint(fall, y0, t01(), event_fn=ground, method="reversible_heun", step_size=0.01, gradient=gradient)
        (grads[gradient],) = torch.autograd.grad(sol.event_t + sol.ys[-1, 1], h)
    assert abs(float(grads["reversible"] - grads["backprop"])) < 1e-10
    assert abs(float(grads["backprop"]) - (1 / math.sqrt(2 * 2.0 * G) - G / math.sqrt(2 * G * 2.0))) < 1e-6


def test_start_time_gradient_and_a_chain_of_bounces():
    # autonomous field: the event time moves with the start time, d tau / d t0 = 1
    t0 = torch.tensor(0.3, dtype=F64, requires_grad=True)
    tau, _ = nc.odeint_event(fall, torch.tensor([2.0, 0.0], dtype=F64), t0, event_fn=ground, rtol=1e-10, atol=1e-12)
    (d_t0,) = torch.autograd.grad(tau, t0)
    assert abs(float(d_t0) - 1.0) < 1e-8

    # three bounces with restitution e: each flight starts at the last impact; the last impact time's
    # gradient with respect to e against finite differences (and the closed form without drag)
    def last_impact(e):
        y, t = torch.stack([torch.tensor(2.0, dtype=F64), torch.tensor(0.0, dtype=F64)]), torch.tensor(0.0, dtype=F64)
        for _ in range(3):
            t, ys = nc.odeint_event(fall, y, t, event_fn=ground, rtol=1e-11, atol=1e-13)
            y = torch.stack([ys[-1, 0] + 1e-9, -e * ys[-1, 1]])  # lifted 1 nm: no event at the start
        return t

    e = torch.tensor(0.8, dtype=F64, requires_grad=True)
    t3 = last_impact(e)
    (grad,) = torch.autograd.grad(t3, e)
    with torch.no_grad():
        fd = (last_impact(e + 1e-6) - last_impact(e - 1e-6)) / 2e-6
    assert abs(float(grad - fd)) < 1e-5
    v = math.sqrt(2 * G * 2.0)  # t3 = sqrt(2h/g) + 2 e v / g + 2 e^2 v / g, so dt3/de = 2 v (1 + 2e) / g
    assert abs(float(grad) - 2 * v * (1 + 2 * 0.8) / G) < 1e-5


@pytest.mark.parametrize("interface", [nc.odeint, torchdiffeq.odeint], ids=["nodecourse", "torchdiffeq"])
def test_reversed_time_gradient(interface):
    # y = y0 exp(-t) backwards from 0 reaches 2 at tau = -log(2 / y0): d tau / d y0 = 1 / y0
    y0 = torch.tensor([1.0], dtype=F64, requires_grad=True)
    t0 = torch.tensor(0.0, dtype=F64)
    tau, _ = nc.odeint_event(decay_field, y0, t0, event_fn=lambda t, y: y[0] - 2.0, reverse_time=True,
                             odeint_interface=interface, rtol=1e-10, atol=1e-12)  # fmt: skip
    (grad,) = torch.autograd.grad(tau, y0)
    assert abs(float(tau.detach()) + math.log(2.0)) < 1e-8 and abs(float(grad) - 1.0) < 1e-8


def decay_field(t, y):
    return -y


def test_tuple_state_through_torchdiffeqs_odeint_interface():
    h = torch.tensor(2.0, dtype=F64, requires_grad=True)
    y0 = (h, torch.tensor(0.0, dtype=F64))
    tau, ys = nc.odeint_event(lambda t, y: (y[1], torch.full_like(y[1], -G)), y0, torch.tensor(0.0, dtype=F64),
                              event_fn=lambda t, y: y[0], odeint_interface=torchdiffeq.odeint, rtol=1e-10,
                              atol=1e-12)  # fmt: skip
    assert isinstance(ys, tuple) and ys[0].shape == (2,)
    (grad,) = torch.autograd.grad(tau, h)
    assert abs(float(tau.detach()) - math.sqrt(2 * 2.0 / G)) < 1e-8
    assert abs(float(grad) - 1 / math.sqrt(2 * 2.0 * G)) < 1e-8
