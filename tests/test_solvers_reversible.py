"""Reversible Heun and gradient='reversible': the gradient of the discrete solve (backprop's, to
rounding; finite differences; gradcheck), memory flat in the steps, its stability region, and the
argument checks."""

from __future__ import annotations

import math

import pytest
import torch

from nodecourse import SolveConfig, odeint
from nodecourse.measure import saved_tensor_bytes
from nodecourse.models import MLPField, ODEBlock
from nodecourse.solvers import SolverError
from nodecourse.solvers._reversible import REVERSIBLE_SOLVERS, amplification, heun_inverse, heun_step

F64 = torch.float64
T01 = torch.tensor([0.0, 1.0], dtype=F64)


def _field(seed=0, d=3, dtype=F64):
    torch.manual_seed(seed)
    return MLPField(d, hidden=(16,), activation="tanh").to(dtype)


def _grads(field, y0, t, gradient, step_size=0.05):
    field.zero_grad(set_to_none=True)
    y = y0.clone().requires_grad_(True)
    sol = odeint(field, y, t, method="reversible_heun", step_size=step_size, gradient=gradient)
    (sol.ys**2).sum().backward()  # every output time enters the loss
    return torch.cat([y.grad.flatten()] + [p.grad.flatten() for p in field.parameters()]), sol


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-4)])
def test_reversible_gradient_equals_backprop_through_the_same_steps(dtype, tol):
    field = _field(dtype=dtype)
    y0 = torch.randn(4, 3, dtype=dtype)
    t = torch.tensor([0.0, 0.3, 1.0], dtype=dtype)  # an output inside the span
    g_bp, sol_bp = _grads(field, y0, t, "backprop")
    g_rev, sol_rev = _grads(field, y0, t, "reversible")
    assert torch.allclose(sol_bp.ys, sol_rev.ys, rtol=0, atol=0)  # the same forward solve, bit for bit
    rel = float((g_rev - g_bp).norm() / g_bp.norm())
    assert rel < tol, rel
    assert sol_rev.stats["nfe_backward"] == sol_rev.stats["nfe"]  # n + 1 evaluations each way
    assert sol_rev.stats["backward_status"].value == "success"


def test_reversible_gradient_matches_finite_differences():
    lam = 0.7j  # an oscillation: y' = i w y written on R^2
    w = lam.imag
    A = torch.tensor([[0.0, -w], [w, 0.0]], dtype=F64, requires_grad=True)
    y0 = torch.tensor([1.0, 0.5], dtype=F64, requires_grad=True)

    def loss(A_, y0_, gradient="reversible"):
        sol = odeint(lambda t, y: A_ @ y, y0_, T01, method="reversible_heun", step_size=0.01, gradient=gradient)
        return sol.ys[-1].pow(2).sum() + sol.ys[-1][0]

    loss(A, y0).backward()
    eps = 1e-6
    for name, x, g in (("A", A, A.grad), ("y0", y0, y0.grad)):
        fd = torch.zeros_like(x)
        for i in range(x.numel()):
            up, down = x.detach().clone(), x.detach().clone()
            up.view(-1)[i] += eps
            down.view(-1)[i] -= eps
            args_up = (up, y0.detach()) if name == "A" else (A.detach(), up)
            args_down = (down, y0.detach()) if name == "A" else (A.detach(), down)
            with torch.no_grad():
                fd.view(-1)[i] = (loss(*args_up, "backprop") - loss(*args_down, "backprop")) / (2 * eps)
        assert torch.allclose(g, fd, rtol=1e-6, atol=1e-8), (name, g, fd)


def test_gradcheck_through_the_reversible_route():
    field = _field(d=2)
    y0 = torch.randn(3, 2, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda y: odeint(field, y, T01, method="reversible_heun", step_size=0.1, gradient="reversible").ys[-1], (y0,)
    )
    # parameters: a closed-over tensor is found and differentiated too
    W = torch.randn(2, 2, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda W_: odeint(
            lambda t, y: torch.tanh(y @ W_),
            y0.detach(),
            T01,
            method="reversible_heun",
            step_size=0.1,
            gradient="reversible",
        ).ys[-1],
        (W,),
    )


def test_one_step_is_undone_exactly_by_its_inverse():
    field = _field()
    y, z = torch.randn(5, 3, dtype=F64), torch.randn(5, 3, dtype=F64)
    with torch.no_grad():
        f = field(torch.tensor(0.2, dtype=F64), z)
        y1, z1, f1 = heun_step(field, 0.2, 0.1, y, z, f)
        y0, z0, f0 = heun_inverse(field, 0.2 + 0.1, 0.1, y1, z1, f1)
    for a, b in ((y0, y), (z0, z), (f0, f)):
        assert float((a - b).abs().max()) < 1e-14


def test_saved_memory_is_flat_in_the_steps_and_backprop_grows():
    field = _field(d=8)
    y0 = torch.randn(16, 8, dtype=F64, requires_grad=True)

    def saved(gradient, h):
        return saved_tensor_bytes(
            lambda: odeint(field, y0, T01, method="reversible_heun", step_size=h, gradient=gradient).ys[-1].sum(),
            exclude=tuple(field.parameters()),
        )

    bp = [saved("backprop", h) for h in (0.1, 0.025)]
    rev = [saved("reversible", h) for h in (0.1, 0.025)]
    assert bp[1] > 3 * bp[0]
    assert rev[0] == rev[1]


def test_time_gradients_agree_with_backprop():
    field = _field()
    y0 = torch.randn(2, 3, dtype=F64)
    out = {}
    for gradient in ("backprop", "reversible"):
        t = torch.tensor([0.0, 0.5, 1.0], dtype=F64, requires_grad=True)
        sol = odeint(field, y0, t, method="reversible_heun", step_size=0.05, gradient=gradient)
        sol.ys.pow(2).sum().backward()
        out[gradient] = t.grad
    assert torch.allclose(out["backprop"], out["reversible"], rtol=1e-10, atol=1e-12)


def test_order_two_on_an_oscillation():
    # y'' = -y: the error at T = 1 falls 4x when the step halves
    A = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=F64)
    y0 = torch.tensor([1.0, 0.0], dtype=F64)
    exact = torch.tensor([math.cos(1.0), -math.sin(1.0)], dtype=F64)
    errs = [
        float((odeint(lambda t, y: A @ y, y0, T01, method="reversible_heun", step_size=h).ys[-1] - exact).norm())
        for h in (0.02, 0.01)
    ]
    assert 3.5 < errs[0] / errs[1] < 4.5


def test_stability_region_is_the_imaginary_segment():
    assert amplification(0.9j) == pytest.approx(1.0, abs=1e-12)
    assert amplification(-0.05) > 1.04  # a decaying mode: the parasitic root -1 + x grows in modulus
    assert amplification(0.05) > 1.04
    assert amplification(1.2j) > 1.5
    # measured: y' = -y over T = 40 with h = 0.1 blows up (the exact solution decays to e^-40)
    sol = odeint(
        lambda t, y: -y,
        torch.ones(1, dtype=F64),
        torch.tensor([0.0, 40.0], dtype=F64),
        method="reversible_heun",
        step_size=0.1,
        throw=False,
    )
    assert not bool(torch.isfinite(sol.ys[-1]).all()) or float(sol.ys[-1].abs()) > 1.0
    assert "stable only" in REVERSIBLE_SOLVERS["reversible_heun"].stability


def test_block_and_config_take_the_reversible_route():
    config = SolveConfig(method="reversible_heun", step_size=0.1, gradient="reversible")
    block = ODEBlock(_field(), solver=config)
    out = block(torch.randn(4, 3, dtype=F64))
    out.sum().backward()
    assert block.last_stats["nfe_backward"] == block.last_stats["nfe"] == 11


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(method="dopri5", gradient="reversible"), r"gradient='reversible' undoes the steps .* method='dopri5'"),
        (dict(method="rk4", step_size=0.1, gradient="reversible"), r"method='reversible_heun'"),
        (
            dict(method="reversible_heun", gradient="reversible"),
            r"method='reversible_heun' takes fixed steps and needs step_size",
        ),
        (dict(method="reversible_heun", step_size=0.1, gradient="adjoint"), r"not gradient='adjoint'"),
        (dict(method="reversible_heun", step_size=0.1, gradient="checkpoint"), r"not gradient='checkpoint'"),
        (dict(method="reversible_heun", step_size=0.1, backend="torchdiffeq"), r"no torchdiffeq counterpart"),
        (dict(method="reversible_heun", step_size=0.1, record_steps=True), r"record_steps/on_step are not available"),
        (dict(method="reversible_heun", step_size=0.1, per_sample=True), r"per_sample=True"),
        (dict(method="reversible_heun", step_size=0.1, options={"safety": 0.9}), r"not understood"),
    ],
)
def test_reversible_combinations_are_checked(kwargs, pattern):
    with pytest.raises((TypeError, ValueError), match=pattern):
        odeint(lambda t, y: -y, torch.ones(2, dtype=F64), T01, **kwargs)


def test_solve_config_refuses_the_reversible_route_for_other_methods():
    with pytest.raises(ValueError, match="gradient='reversible'"):
        SolveConfig(gradient="reversible")
    with pytest.raises(ValueError, match="needs step_size"):
        SolveConfig(method="reversible_heun", gradient="reversible")


def test_failed_forward_solve_is_named_and_gives_no_silent_gradient():
    y0 = torch.ones(1, dtype=F64, requires_grad=True)
    with pytest.raises(SolverError, match="NON_FINITE|non_finite|NaN"):
        odeint(
            lambda t, y: -50 * y,
            y0,
            torch.tensor([0.0, 100.0], dtype=F64),
            method="reversible_heun",
            step_size=0.1,
            gradient="reversible",
        )
    sol = odeint(
        lambda t, y: -y,
        y0,
        T01,
        method="reversible_heun",
        step_size=0.1,
        max_steps=3,
        gradient="reversible",
        throw=False,
    )
    sol.ys[-1].sum().backward()
    assert sol.stats["backward_status"].value == "max_steps"
    assert bool(torch.isnan(y0.grad).all())
