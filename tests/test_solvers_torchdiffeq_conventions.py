"""torchdiffeq's conventions that nodecourse follows: tuple states,
``options={"norm": callable}`` and an adjoint norm on the tuple ``(t, y, adj_y, *adj_params)``, each compared with torchdiffeq on the same problem.

The first tests are the equivalents of the subtests of torchdiffeq's own suite
(``tests/api_tests.py::TestCollectionState``, ``tests/norm_tests.py::TestNorms``) that failed
only because the state was a tuple, on torchdiffeq's ``ConstantODE`` problem
(``dy/dt = a + (y - (a t + b))**5``, exact solution ``a t + b``).
"""

import math

import pytest
import torch
import torchdiffeq
from torch import nn

from nodecourse import odeint

F64 = torch.float64
EPS = {torch.float32: 1e-5, F64: 1e-12}  # torchdiffeq's tolerances for this test
ADAPTIVE = ("dopri5", "bosh3")  # the adaptive methods both libraries have


class ConstantODE(nn.Module):
    """torchdiffeq's test problem ``dy/dt = a + (y - (a t + b))**5`` with ``y(t) = a t + b``."""

    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.tensor(0.2))
        self.b = nn.Parameter(torch.tensor(3.0))

    def forward(self, t, y):
        return self.a + (y - (self.a * t + self.b)) ** 5

    def y_exact(self, t):
        return self.a * t + self.b


def constant_problem(dtype=F64):
    f = ConstantODE().to(dtype)
    t = torch.linspace(1, 8, 10, dtype=dtype, requires_grad=True)
    sol = f.y_exact(t)
    return f, sol[0].detach().requires_grad_(True), t, sol


# ---------------------------------------------------------------- tuple states


@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("method", ADAPTIVE)
def test_tuple_state_forward_as_torchdiffeqs_collection_test(dtype, method):
    f, y0, t, sol = constant_problem(dtype)
    tuple_f = lambda t, y: (f(t, y[0]), f(t, y[1]))  # noqa: E731
    ours = odeint(tuple_f, (y0, y0), t, method=method).ys
    assert isinstance(ours, tuple) and len(ours) == 2
    for part in ours:
        assert part.shape == sol.shape and part.dtype == dtype
        assert float((sol - part).abs().max().detach()) < EPS[dtype]
    theirs = torchdiffeq.odeint(tuple_f, (y0, y0), t, method=method)
    for a, b in zip(ours, theirs):
        assert float((a - b).abs().max().detach()) < EPS[dtype]


@pytest.mark.parametrize("method", ADAPTIVE)
@pytest.mark.parametrize("part", [0, 1])
def test_tuple_state_gradcheck_as_torchdiffeqs_collection_test(method, part):
    f, y0, t, _ = constant_problem()
    tuple_f = lambda t, y: (f(t, y[0]), f(t, y[1]))  # noqa: E731
    func = lambda y0, t: odeint(tuple_f, (y0, y0), t, method=method).ys[part]  # noqa: E731
    assert torch.autograd.gradcheck(func, (y0, t))


def _two_part_problem():
    """A field on a state in two parts of different shapes that exchange information, with parameters."""

    class Coupled(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = nn.Parameter(torch.tensor(0.7, dtype=F64))
            self.m = nn.Parameter(torch.tensor([[0.0, 1.0], [-1.0, -0.1]], dtype=F64))

        def forward(self, t, y):
            a, b = y
            return -self.k * a + b.sum() * torch.cos(t), b @ self.m.T - 0.1 * a

    a0 = torch.tensor(1.0, dtype=F64)
    b0 = torch.tensor([[0.5, 0.5], [0.1, -0.3], [1.0, 0.0]], dtype=F64)
    return Coupled(), a0, b0, torch.linspace(0.0, 2.0, 6, dtype=F64)


def test_tuple_state_shapes_and_values_match_torchdiffeq():
    field, a0, b0, t = _two_part_problem()
    sol = odeint(field, (a0, b0), t, rtol=1e-9, atol=1e-11)
    assert isinstance(sol.ys, tuple)
    assert sol.ys[0].shape == (6,) and sol.ys[1].shape == (6, 3, 2)
    assert "ys.shape=((6,), (6, 3, 2))" in repr(sol)
    theirs = torchdiffeq.odeint(field, (a0, b0), t, rtol=1e-9, atol=1e-11)
    for a, b in zip(sol.ys, theirs):
        assert torch.allclose(a, b, atol=1e-8)


def test_tuple_state_is_the_flat_solve_split_back():
    """One rule: a tuple state is solved as the concatenation of its flattened parts (same steps)."""
    field, a0, b0, t = _two_part_problem()
    sol = odeint(field, (a0, b0), t)
    flat = odeint(
        lambda tt, y: torch.cat([p.reshape(-1) for p in field(tt, (y[0], y[1:].view(3, 2)))]),
        torch.cat([a0.reshape(-1), b0.reshape(-1)]),
        t,
    )
    assert sol.stats["nfe"] == flat.stats["nfe"]
    assert torch.equal(sol.ys[0], flat.ys[:, 0]) and torch.equal(sol.ys[1], flat.ys[:, 1:].reshape(6, 3, 2))


@pytest.mark.parametrize("gradient", ["backprop", "adjoint", "checkpoint"])
def test_tuple_state_gradients_reach_every_part_in_every_mode(gradient):
    """Gradients for both parts of y0, the parameters and the times, against torchdiffeq's backprop."""

    def grads(solve):
        field, a0, b0, t = _two_part_problem()
        a0.requires_grad_(True)
        b0.requires_grad_(True)
        t.requires_grad_(True)
        ys = solve(field, (a0, b0), t)
        loss = ys[0].pow(2).sum() + (ys[1] * torch.arange(6.0, dtype=F64)[:, None, None]).sum()
        return torch.autograd.grad(loss, (a0, b0, t, field.k, field.m))

    ours = grads(lambda f, y0, t: odeint(f, y0, t, gradient=gradient, rtol=1e-10, atol=1e-12).ys)
    theirs = grads(lambda f, y0, t: torchdiffeq.odeint(f, y0, t, rtol=1e-10, atol=1e-12))
    for name, a, b in zip(("a0", "b0", "t", "k", "m"), ours, theirs):
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-7), name


def test_tuple_state_in_per_sample_mode_flattens_each_row():
    rates = torch.tensor([0.5, 2.0, 8.0], dtype=F64)

    def field(t, y):
        a, b = y  # a: (3,), b: (3, 2, 2)
        return -rates * a, -rates[:, None, None] * b + a[:, None, None]

    a0 = torch.ones(3, dtype=F64)
    b0 = torch.ones(3, 2, 2, dtype=F64)
    t = torch.linspace(0.0, 1.0, 4, dtype=F64)
    sol = odeint(field, (a0, b0), t, per_sample=True, rtol=1e-8, atol=1e-10)
    assert sol.ys[0].shape == (4, 3) and sol.ys[1].shape == (4, 3, 2, 2)
    assert torch.allclose(sol.ys[0], torch.exp(-rates[None] * t[:, None]), atol=1e-7)
    assert sol.stats["nfe_per_sample"].shape == (3,)
    batch = odeint(field, (a0, b0), t, rtol=1e-8, atol=1e-10)
    for a, b in zip(sol.ys, batch.ys):
        assert torch.allclose(a, b, atol=1e-6)


def test_tuple_state_with_the_torchdiffeq_backend():
    field, a0, b0, t = _two_part_problem()
    ours = odeint(field, (a0, b0), t, rtol=1e-9, atol=1e-11)
    via = odeint(field, (a0, b0), t, rtol=1e-9, atol=1e-11, backend="torchdiffeq")
    for a, b in zip(ours.ys, via.ys):
        assert torch.allclose(a, b, atol=1e-8)


@pytest.mark.parametrize(
    "y0,kw,exc,pattern",
    [
        ([torch.ones(2), torch.ones(3)], {}, TypeError, r"y0 is a list .* pass a tuple"),
        ((), {}, ValueError, r"empty tuple"),
        ((torch.ones(2), 1.0), {}, TypeError, r"y0\[1\] is float.*each part must be a tensor"),
        ((torch.ones(2), torch.ones(2, dtype=F64)), {}, TypeError, r"y0\[1\] has dtype torch.float64.*one floating"),
        ((torch.ones(2), torch.ones(2, dtype=torch.long)), {}, TypeError, r"y0\[1\] has dtype torch.int64"),
        ((torch.ones(3, 2), torch.ones(2, 2)), {"per_sample": True}, ValueError, r"batch first, with one batch size"),
    ],
)
def test_bad_tuple_states_are_named(y0, kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        odeint(lambda t, y: y, y0, torch.tensor([0.0, 1.0]), **kw)


@pytest.mark.parametrize(
    "returned,exc,pattern",
    [
        (lambda y: y[0], TypeError, r"returned Tensor for a tuple state of 2 parts"),
        (lambda y: (y[0],), TypeError, r"returned tuple of length 1 for a tuple state of 2 parts"),
        (
            lambda y: (y[0], y[1].reshape(3, 2)),
            ValueError,
            r"func\(t, y\)\[1\] returned shape \(3, 2\).*must have shape \(2, 3\)",
        ),
        (lambda y: (y[0], y[1].float()), ValueError, r"func\(t, y\)\[1\] returned shape \(2, 3\), dtype torch.float32"),
    ],
)
def test_a_field_returning_the_wrong_parts_is_named(returned, exc, pattern):
    """The flat size alone would let a part of the wrong shape through (3 x 2 = 2 x 3)."""
    with pytest.raises(exc, match=pattern):
        odeint(
            lambda t, y: returned(y),
            (torch.ones(4, dtype=F64), torch.ones(2, 3, dtype=F64)),
            torch.tensor([0.0, 1.0], dtype=F64),
        )


# ---------------------------------------------------------------- options={"norm": callable}


def _spy(kind):
    """A norm that records what it receives (torchdiffeq's test_norm checks the same)."""
    seen = []

    def norm(state):
        seen.append(state)
        parts = state if isinstance(state, tuple) else (state,)
        return max(p.pow(2).mean().sqrt() for p in parts) if kind == "rms" else max(p.abs().max() for p in parts)

    return norm, seen


@pytest.mark.parametrize("backend", ["nodecourse", "torchdiffeq"])
def test_norm_receives_the_state_or_the_tuple_of_parts_as_in_torchdiffeq(backend):
    f = lambda t, x: x  # noqa: E731
    t = torch.tensor([0.0, 1.0])
    norm, seen = _spy("rms")
    odeint(f, torch.tensor(1.0), t, options={"norm": norm}, backend=backend)
    assert seen and all(isinstance(s, torch.Tensor) and s.shape == () for s in seen)
    norm, seen = _spy("rms")
    odeint(f, (torch.tensor(1.0),), t, options={"norm": norm}, backend=backend)
    assert seen and all(isinstance(s, tuple) and len(s) == 1 and s[0].shape == () for s in seen)
    norm, seen = _spy("rms")
    odeint(f, (torch.tensor(1.0), torch.tensor([[0.5, 0.5], [0.1, 0.1]])), t, options={"norm": norm}, backend=backend)
    assert seen and all(isinstance(s, tuple) and [p.shape for p in s] == [(), (2, 2)] for s in seen)


@pytest.mark.parametrize("method", ADAPTIVE)
def test_norm_steers_the_steps_as_in_torchdiffeq(method):
    """The same norm in both libraries: the same calls per step, nearly the same work, close answers;
    a norm ten times larger costs more steps in both (torchdiffeq's test_large_norm)."""
    torch.manual_seed(3456789)
    field = nn.Sequential(nn.Linear(2, 10), nn.Tanh(), nn.Linear(10, 2), nn.Tanh()).double()
    f = lambda t, x: field(x) * torch.sin(20 * t)  # noqa: E731
    x0 = torch.tensor([1.0, 2.0], dtype=F64)
    t = torch.tensor([0.0, 1.0], dtype=F64)
    linf = lambda x: x.abs().max()  # noqa: E731
    large = lambda x: 10 * x.abs().max()  # noqa: E731

    def work(solve, norm):
        calls = []
        ys = solve(lambda tt, x: (calls.append(1), f(tt, x))[1], norm)
        return len(calls), ys

    ours = {n: work(lambda g, nm: odeint(g, x0, t, method=method, options={"norm": nm}).ys, n) for n in (linf, large)}
    theirs = {
        n: work(lambda g, nm: torchdiffeq.odeint(g, x0, t, method=method, options={"norm": nm}), n)
        for n in (linf, large)
    }
    assert ours[linf][0] < ours[large][0] and theirs[linf][0] < theirs[large][0]
    for n in (linf, large):
        assert torch.allclose(ours[n][1], theirs[n][1], atol=1e-5)
        assert abs(ours[n][0] - theirs[n][0]) <= 0.2 * theirs[n][0]  # dopri5's error estimators differ a little
    default = odeint(f, x0, t, method=method)
    rms = odeint(f, x0, t, method=method, options={"norm": lambda x: x.pow(2).mean().sqrt()})
    assert default.stats == rms.stats  # the default is this RMS norm (up to rounding)
    assert torch.allclose(default.ys, rms.ys, rtol=1e-12)


def test_norm_applies_to_the_implicit_methods_too():
    f = lambda t, y: -50 * y  # noqa: E731
    y0, t = torch.ones(2, dtype=F64), torch.tensor([0.0, 1.0], dtype=F64)
    loose = odeint(f, y0, t, method="trapezoid", rtol=1e-4, atol=1e-6)
    strict = odeint(f, y0, t, method="trapezoid", rtol=1e-4, atol=1e-6, options={"norm": lambda x: 100 * x.abs().max()})
    assert strict.stats["n_steps"] > loose.stats["n_steps"]


def test_norm_with_the_adjoint_measures_the_state_and_the_adjoint():
    """The forward norm is written for the state: the backward solve applies it to the state and the
    adjoint parts of [z, a, dL/dtheta] (torchdiffeq's construction) and still gets the gradient."""
    torch.manual_seed(0)
    field = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    y0 = torch.tensor([0.5, -1.0, 2.0], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 1.0], dtype=F64)
    shapes = []

    def norm(x):
        shapes.append(tuple(x.shape))
        return x.abs().max()

    def grad(**kw):
        ys = odeint(lambda tt, y: field(y), y0, t, rtol=1e-9, atol=1e-11, **kw).ys
        return torch.autograd.grad(ys[-1].sum(), (y0, *field.parameters()))

    ours = grad(gradient="adjoint", options={"norm": norm})
    assert set(shapes) == {(3,)}  # never the flat augmented vector
    for a, b in zip(ours, grad(gradient="backprop")):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-7)


def _module_field() -> nn.Module:
    class Field(nn.Module):  # a module: its parameters in their order, as torchdiffeq takes them
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 3)).double()

        def forward(self, tt, y):
            return self.net(y)

    return Field()


def test_an_adjoint_norm_receives_torchdiffeqs_tuple():
    """A norm passed as adjoint_options['norm'] gets (t, y, adj_y, *adj_params), each part in its
    shape, as torchdiffeq's odeint_adjoint passes it; the gradient is still the gradient."""
    torch.manual_seed(0)
    field = _module_field()
    y0 = torch.tensor([0.5, -1.0, 2.0], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 1.0], dtype=F64)
    params = tuple(field.parameters())

    def spy():
        seen = []

        def norm(state):
            seen.append(tuple(tuple(p.shape) for p in state) if isinstance(state, tuple) else tuple(state.shape))
            return max(p.abs().max() for p in state)

        return norm, seen

    ours, seen_ours = spy()
    ys = odeint(field, y0, t, rtol=1e-9, atol=1e-11, gradient="adjoint", adjoint_options={"norm": ours}).ys
    got = torch.autograd.grad(ys[-1].sum(), (y0, *params))
    theirs, seen_theirs = spy()
    ys = torchdiffeq.odeint_adjoint(field, y0, t, rtol=1e-9, atol=1e-11, adjoint_options={"norm": theirs})
    expected = torch.autograd.grad(ys[-1].sum(), (y0, *params))
    assert set(seen_ours) == set(seen_theirs) == {((), (3,), (3,), *(tuple(p.shape) for p in params))}
    for a, b in zip(got, expected):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-7)


def test_a_norm_in_the_backward_solves_own_options_sees_its_flat_state():
    """adjoint_options={"options": {"norm": f}} sets the backward solve's norm as for any solve: f gets
    that solve's flat state [z, a, g] (3 + 3 + the parameters' entries), the convention exercise 10 uses."""
    torch.manual_seed(0)
    field = _module_field()
    y0 = torch.tensor([0.5, -1.0, 2.0], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 1.0], dtype=F64)
    seen = set()

    def norm(x):
        seen.add(tuple(x.shape))
        return x.pow(2).mean().sqrt()

    ys = odeint(field, y0, t, rtol=1e-9, atol=1e-11, gradient="adjoint", adjoint_options={"options": {"norm": norm}}).ys
    ys[-1].sum().backward()
    n_params = sum(p.numel() for p in field.parameters())
    assert seen == {(3 + 3 + n_params,)}


def test_an_adjoint_norm_and_a_backward_options_norm_together_are_refused():
    with pytest.raises(ValueError, match="both set the backward error norm"):
        odeint(
            lambda t, y: -y,
            torch.ones(2, requires_grad=True),
            torch.tensor([0.0, 1.0]),
            gradient="adjoint",
            adjoint_options={"norm": lambda s: s[1].abs().max(), "options": {"norm": lambda x: x.abs().max()}},
        )


@pytest.mark.parametrize(
    "options,kw,exc,pattern",
    [
        ({"norm": "rms"}, {}, TypeError, r"options\['norm'\]='rms' must be a callable"),
        ({"norm": lambda x: x.abs()}, {}, TypeError, r"options\['norm'\] returned \(2,\).*one number"),
        ({"norm": lambda x: x.abs().max()}, {"per_sample": True}, ValueError, r"not available with per_sample=True"),
        ({"norm": lambda x: x.abs().max()}, {"method": "rk4", "step_size": 0.1}, TypeError, r"norm"),
    ],
)
def test_bad_norms_are_named(options, kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        odeint(
            lambda t, y: -y,
            torch.ones(3, 2) if kw.get("per_sample") else torch.ones(2),
            torch.tensor([0.0, 1.0]),
            options=options,
            **kw,
        )


def test_norm_keeps_the_default_error_when_it_is_the_rms():
    sol = odeint(
        lambda t, y: -y,
        torch.ones(2, dtype=F64),
        torch.tensor([0.0, 1.0], dtype=F64),
        options={"norm": lambda x: x.pow(2).mean().sqrt()},
        rtol=1e-9,
        atol=1e-11,
    )
    assert math.isclose(float(sol.ys[-1, 0]), math.exp(-1.0), rel_tol=1e-8)


@pytest.mark.parametrize(
    "method,kw",
    [
        ("rk4", {"step_size": 0.1}),
        ("euler", {"step_size": 0.1}),
        ("midpoint", {"step_size": 0.1}),
        ("dopri5", {}),
        ("bosh3", {}),
    ],
)
def test_the_torchdiffeq_backend_leaks_no_warning(method, kw):
    """torchdiffeq warns "does not support callbacks" when a fixed-step solver is given the
    accept/reject callbacks; the backend gives those only to the adaptive solvers."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        odeint(lambda t, y: -y, torch.ones(2), torch.tensor([0.0, 1.0]), method=method, backend="torchdiffeq", **kw)
