"""Tensors a field closes over, on the gradient routes that keep no graph (checkpoint, adjoint,
reversible): each case against backprop in float64, first and second order where the route gives
second derivatives, or refused by name before the solve."""

import pytest
import torch
from torch import nn

from nodecourse import odeint
from nodecourse.solvers._dependencies import HiddenGraphError, closed_over
from nodecourse.validation import SecondDerivativeError

T = torch.linspace(0.0, 1.0, 5, dtype=torch.float64)
Y0 = torch.tensor([1.0, 2.0], dtype=torch.float64)

# (route, solver settings): adjoint is the continuous adjoint, so it is compared on a tight adaptive solve
ROUTES = [
    ("checkpoint", dict(method="rk4", step_size=0.1)),
    ("adjoint", dict(method="dopri5", rtol=1e-11, atol=1e-12)),
    ("reversible", dict(method="reversible_heun", step_size=0.05)),
]
ROUTE_IDS = [r for r, _ in ROUTES]
SECOND_ORDER = [r for r in ROUTES if r[0] != "adjoint"]


def _close(route: str):
    """Tolerance against backprop: the discrete routes to rounding, the continuous adjoint to its solve."""
    return dict(rtol=1e-6, atol=1e-8) if route == "adjoint" else dict(rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("route, settings", ROUTES, ids=ROUTE_IDS)
def test_tensor_used_only_late_in_the_solve_gets_backprops_gradient(route, settings):
    # the probe call at (t0, y0) never reaches q: it is found in the closure
    grads = {}
    for gradient in ("backprop", route):
        q = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
        sol = odeint(lambda t, y: -y if float(t) <= 0.5 else -q * y, Y0, T, gradient=gradient, **settings)
        sol.ys.sum().backward()
        grads[gradient] = q.grad
    assert grads[route] is not None
    torch.testing.assert_close(grads[route], grads["backprop"], **_close(route))


@pytest.mark.parametrize("route, settings", ROUTES, ids=ROUTE_IDS)
def test_non_leaf_closed_over_tensors_differentiate_once(route, settings):
    """q = p * p and A = B - B.T built before the solve: no "backward through the graph a second time",
    autograd.grad(L, q) works, and q's hook and retain_grad see the total once."""
    results = {}
    for gradient in ("backprop", route):
        p = torch.tensor(0.8, dtype=torch.float64, requires_grad=True)
        b = torch.tensor([[0.3, -0.4], [0.9, 0.2]], dtype=torch.float64, requires_grad=True)
        q = p * p
        a = b - b.T
        m = torch.matrix_exp(0.1 * b)
        q.retain_grad()
        seen = []
        q.register_hook(lambda g: seen.append(float(g)))
        sol = odeint(lambda t, y: a @ y - q * (m @ y), Y0, T, gradient=gradient, **settings)
        loss = sol.ys.pow(2).sum()
        (grad_q,) = torch.autograd.grad(loss, q, retain_graph=True)
        q.grad = None
        loss.backward()
        results[gradient] = dict(p=p.grad, b=b.grad, q=q.grad, grad_q=grad_q, hook_calls=len(seen))
    got, want = results[route], results["backprop"]
    assert got["hook_calls"] == want["hook_calls"] == 2  # once per backward pass, not once per step
    for key in ("p", "b", "q", "grad_q"):
        torch.testing.assert_close(got[key], want[key], **_close(route))


@pytest.mark.parametrize("route, settings", SECOND_ORDER, ids=[r for r, _ in SECOND_ORDER])
def test_hessian_with_respect_to_a_closed_over_tensor(route, settings):
    def loss(gradient):
        def of(q):
            sol = odeint(lambda t, y: -q * y * y.abs().sqrt(), Y0, T, gradient=gradient, **settings)
            return sol.ys.pow(2).sum()

        return of

    q0 = torch.tensor(0.7, dtype=torch.float64)
    got = torch.autograd.functional.hessian(loss(route), q0)
    want = torch.autograd.functional.hessian(loss("backprop"), q0)
    assert float(want) != 0.0
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_hessian_through_the_adjoint_is_refused_by_name():
    def of(q):
        return odeint(lambda t, y: -q * y, Y0, T, gradient="adjoint").ys.sum()

    with pytest.raises(SecondDerivativeError, match="gradient='adjoint'"):
        torch.autograd.functional.hessian(of, torch.tensor(0.7, dtype=torch.float64))


@pytest.mark.parametrize("route, settings", SECOND_ORDER, ids=[r for r, _ in SECOND_ORDER])
def test_second_order_with_a_leaf_used_directly_and_through_a_non_leaf(route, settings):
    # p reaches the field twice: directly, and through q = p * p (built before the solve)
    results = {}
    for gradient in ("backprop", route):
        p = torch.tensor(0.6, dtype=torch.float64, requires_grad=True)
        q = p * p
        sol = odeint(lambda t, y: -q * y + p * torch.sin(y), Y0, T, gradient=gradient, **settings)
        (g,) = torch.autograd.grad(sol.ys.pow(2).sum(), p, create_graph=True)
        (gg,) = torch.autograd.grad(g, p)
        results[gradient] = (g.detach(), gg)
    torch.testing.assert_close(results[route][0], results["backprop"][0], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(results[route][1], results["backprop"][1], rtol=1e-10, atol=1e-12)


class _Rotating(nn.Module):
    """A module holding a non-leaf tensor as a plain attribute (built from its parameter once)."""

    def __init__(self):
        super().__init__()
        self.b = nn.Parameter(torch.tensor([[0.3, -0.4], [0.9, 0.2]], dtype=torch.float64))
        self.a = self.b - self.b.T

    def forward(self, t, y):
        return self.a @ y - 0.1 * y


@pytest.mark.parametrize("route, settings", ROUTES, ids=ROUTE_IDS)
def test_module_attribute_built_from_a_parameter(route, settings):
    grads = {}
    for gradient in ("backprop", route):
        field = _Rotating()
        odeint(field, Y0, T, gradient=gradient, **settings).ys.pow(2).sum().backward()
        grads[gradient] = field.b.grad
    torch.testing.assert_close(grads[route], grads["backprop"], **_close(route))


@pytest.mark.parametrize("route, settings", ROUTES, ids=ROUTE_IDS)
def test_a_graph_the_solver_cannot_stand_in_for_is_refused_before_the_solve(route, settings):
    p = torch.tensor(0.8, dtype=torch.float64, requires_grad=True)
    held = (p * p,)  # a tuple: no stand-in can be put there
    calls = []

    def field(t, y):
        calls.append(1)
        return -held[0] * y

    with pytest.raises(HiddenGraphError, match=f"gradient='{route}'.*compute it inside func"):
        odeint(field, Y0, T, gradient=route, **settings)
    assert not calls  # refused before any evaluation


def test_the_search_finds_defaults_globals_partials_and_nested_containers():
    import functools

    p = torch.tensor(1.0, requires_grad=True)
    q = torch.tensor(2.0, requires_grad=True)
    r = torch.tensor(3.0, requires_grad=True)
    store = {"weights": [p]}

    def with_default(t, y, scale=q):
        return scale * y * store["weights"][0]

    found = {id(x) for x, _ in closed_over(functools.partial(with_default, scale=r))}
    assert {id(p), id(q), id(r)} <= found


def test_a_parameter_the_solve_never_uses_gets_no_gradient_as_with_backprop():
    used = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    unused = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    tensors = [used, unused]
    sol = odeint(lambda t, y: -tensors[0] * y, Y0, T, method="rk4", step_size=0.1, gradient="checkpoint")
    sol.ys.sum().backward()
    assert used.grad is not None and unused.grad is None


def test_on_step_drawing_random_numbers_does_not_shift_the_dropout_replay():
    class Field(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(2, 8), nn.Dropout(0.3), nn.Tanh(), nn.Linear(8, 2))

        def forward(self, t, y):
            return self.net(y)

    grads = {}
    for gradient in ("backprop", "checkpoint"):
        torch.manual_seed(0)
        field = Field().double()
        torch.manual_seed(1)
        sol = odeint(field, Y0, T, method="rk4", step_size=0.1, gradient=gradient, on_step=lambda e: torch.rand(3))
        sol.ys.sum().backward()
        grads[gradient] = field.net[0].weight.grad
    torch.testing.assert_close(grads["checkpoint"], grads["backprop"], rtol=1e-12, atol=1e-12)


class _Model(nn.Module):
    """An encoder the solve never uses beside the dynamics it does, and a layer it uses only after t = 0.5."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.encoder = nn.Linear(2, 64).double()
        self.dynamics = nn.Linear(2, 2).double()
        self.later = nn.Linear(2, 2).double()


MODEL = _Model()


@pytest.mark.parametrize("route, settings", ROUTES, ids=ROUTE_IDS)
def test_a_global_models_unused_parameters_get_no_gradient_and_leave_the_norm_alone(route, settings):
    # `MODEL` is a global the field's code names: the probe reaches only `dynamics`; the rest come last
    from nodecourse.solvers._gradient_run import inspect_field

    def field(t, y):
        return torch.tanh(MODEL.dynamics(y))

    deps, _ = inspect_field(field, Y0, T[0])
    reached = deps.params[: len(deps.params) - deps.late]
    assert {id(p) for p in reached} == {id(p) for p in MODEL.dynamics.parameters()}
    MODEL.zero_grad(set_to_none=True)
    sol = odeint(field, Y0, T, gradient=route, **settings)
    sol.ys.sum().backward()
    assert MODEL.encoder.weight.grad is None and MODEL.later.weight.grad is None
    assert MODEL.dynamics.weight.grad is not None
    # the same dynamics alone: the encoder's (zero) channels change neither the gradient nor the backward work
    alone = MODEL.dynamics
    grad_before = alone.weight.grad.clone()
    alone.zero_grad(set_to_none=True)
    sol_alone = odeint(lambda t, y: torch.tanh(alone(y)), Y0, T, gradient=route, **settings)
    sol_alone.ys.sum().backward()
    torch.testing.assert_close(alone.weight.grad, grad_before, rtol=1e-12, atol=1e-14)
    assert sol.stats["nfe_backward"] == sol_alone.stats["nfe_backward"]


@pytest.mark.parametrize("route, settings", ROUTES, ids=ROUTE_IDS)
def test_a_global_models_layer_used_only_late_gets_backprops_gradient(route, settings):
    # the probe call at t = 0 never reaches MODEL.later: it is found as a parameter of the module the code names
    def field(t, y):
        return torch.tanh(MODEL.dynamics(y)) if float(t) <= 0.5 else torch.tanh(MODEL.later(y))

    grads = {}
    for gradient in ("backprop", route):
        MODEL.zero_grad(set_to_none=True)
        odeint(field, Y0, T, gradient=gradient, **settings).ys.sum().backward()
        assert MODEL.encoder.weight.grad is None
        grads[gradient] = (MODEL.dynamics.weight.grad, MODEL.later.weight.grad)
    assert grads[route][1] is not None, "the layer used only late got no gradient"
    for got, want in zip(grads[route], grads["backprop"]):
        torch.testing.assert_close(got, want, **_close(route))


FUNCTIONALS = {
    "jacobian": lambda of, q: torch.autograd.functional.jacobian(of, q),
    "vjp": lambda of, q: torch.autograd.functional.vjp(of, q, torch.tensor(1.0, dtype=torch.float64))[1],
    "hvp": lambda of, q: torch.autograd.functional.hvp(of, q, torch.ones_like(q))[1],
}


@pytest.mark.parametrize("name", list(FUNCTIONALS))
@pytest.mark.parametrize("route, settings", ROUTES, ids=ROUTE_IDS)
def test_autograd_functional_with_respect_to_a_closed_over_tensor(route, settings, name):
    def loss(gradient):
        def of(q):
            sol = odeint(lambda t, y: -q[0] * y + q[1] * torch.sin(y), Y0, T, gradient=gradient, **settings)
            return sol.ys.pow(2).sum()

        return of

    q = torch.tensor([0.7, 0.3], dtype=torch.float64)
    if name == "hvp" and route == "adjoint":
        with pytest.raises(SecondDerivativeError, match="gradient='adjoint'"):
            FUNCTIONALS[name](loss(route), q)
        return
    got, want = FUNCTIONALS[name](loss(route), q), FUNCTIONALS[name](loss("backprop"), q)
    torch.testing.assert_close(got, want, **_close(route))


class _Squared(nn.Module):
    def forward(self, x):
        return -x * x


class _Parametrised(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(2, 2).double()
        torch.nn.utils.parametrize.register_parametrization(self.lin, "weight", _Squared())

    def forward(self, t, y):
        return self.lin(y)


@pytest.mark.parametrize("route, settings", ROUTES, ids=ROUTE_IDS)
def test_parametrisations(route, settings):
    # computed afresh at every evaluation: backprop's gradient; inside parametrize.cached(): refused by name
    grads = {}
    for gradient in ("backprop", route):
        field = _Parametrised()
        odeint(field, Y0, T, gradient=gradient, **settings).ys.pow(2).sum().backward()
        grads[gradient] = field.lin.parametrizations.weight.original.grad
    torch.testing.assert_close(grads[route], grads["backprop"], **_close(route))
    with torch.nn.utils.parametrize.cached():
        with pytest.raises(HiddenGraphError, match="parametrize.cached"):
            odeint(_Parametrised(), Y0, T, gradient=route, **settings)


class _PlainField:
    """No module and not callable: the field is its method, reading a tensor attribute only late."""

    def __init__(self, q):
        self.q = q

    def rhs(self, t, y):
        return -y if float(t) <= 0.5 else -self.q * y


@pytest.mark.parametrize("route, settings", ROUTES, ids=ROUTE_IDS)
def test_a_plain_objects_method_as_field_gets_its_attributes_gradient(route, settings):
    grads = {}
    for gradient in ("backprop", route):
        q = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
        odeint(_PlainField(q).rhs, Y0, T, gradient=gradient, **settings).ys.sum().backward()
        grads[gradient] = q.grad
    assert grads[route] is not None
    torch.testing.assert_close(grads[route], grads["backprop"], **_close(route))
