"""gradient="adjoint" and gradient="checkpoint" against backprop and finite differences, for every
solver family; gradients with respect to y0, nn.Module parameters and output times; bad input."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from nodecourse import SolverError, Status, odeint
from nodecourse.solvers import BackwardSolveWarning

F64 = torch.float64
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


class Field(nn.Module):
    """A small smooth non-autonomous field on R^2 (8 parameters)."""

    def __init__(self, dtype=F64, device="cpu"):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(2, 2).to(dtype=dtype, device=device)
        self.scale = nn.Parameter(torch.tensor([0.8, -0.5], dtype=dtype, device=device))

    def forward(self, t, z):
        return torch.tanh(self.lin(z)) * self.scale + 0.3 * torch.cos(t) * z


# One representative per family; fixed-step ones get a step small enough for the continuous adjoint
# to match the discrete solve to 1e-6 (rk4: error ~ h^4).
FAMILIES = [
    ("dopri5", dict(rtol=1e-10, atol=1e-10)),
    ("bosh3", dict(rtol=1e-10, atol=1e-10)),
    ("rk4", dict(step_size=0.01)),
    ("trapezoid", dict(rtol=1e-10, atol=1e-10)),
]


def _grads(gradient, method, kw, device="cpu", dtype=F64):
    field = Field(dtype, device)
    y0 = torch.tensor([[0.5, -0.3], [0.1, 0.4]], dtype=dtype, device=device, requires_grad=True)
    t = torch.tensor([0.0, 0.4, 1.0], dtype=dtype, device=device, requires_grad=True)
    sol = odeint(field, y0, t, method=method, gradient=gradient, max_steps=200_000, **kw)
    loss = (sol.ys[1:] ** 2).sum() + sol.ys[-1, :, 0].sin().sum()
    grads = torch.autograd.grad(loss, [y0, t, field.lin.weight, field.lin.bias, field.scale])
    return sol, grads


def _rel(a, b):
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


@pytest.mark.parametrize("method,kw", FAMILIES, ids=[m for m, _ in FAMILIES])
def test_adjoint_and_checkpoint_agree_with_backprop(method, kw):
    _, g_back = _grads("backprop", method, kw)
    sol_a, g_adj = _grads("adjoint", method, kw)
    sol_c, g_ck = _grads("checkpoint", method, kw)
    names = ["y0", "t", "lin.weight", "lin.bias", "scale"]
    for name, b, a, c in zip(names, g_back, g_adj, g_ck):
        assert _rel(a, b) < 1e-6, (method, name, "adjoint", _rel(a, b))
        assert _rel(c, b) < 1e-6, (method, name, "checkpoint", _rel(c, b))
    for sol in (sol_a, sol_c):
        assert sol.stats["backward_status"] is Status.SUCCESS
        assert sol.stats["nfe_backward"] > 0


@pytest.mark.parametrize("method,kw", FAMILIES, ids=[m for m, _ in FAMILIES])
def test_backprop_agrees_with_finite_differences(method, kw):
    _, (g_y0, g_t, g_w, *_rest) = _grads("backprop", method, kw)
    eps = 1e-5

    def loss(y0, t, w):
        field = Field()
        with torch.no_grad():
            field.lin.weight.copy_(w)
            sol = odeint(field, y0, t, method=method, max_steps=200_000, **kw)
        return float((sol.ys[1:] ** 2).sum() + sol.ys[-1, :, 0].sin().sum())

    y0 = torch.tensor([[0.5, -0.3], [0.1, 0.4]], dtype=F64)
    t = torch.tensor([0.0, 0.4, 1.0], dtype=F64)
    w = Field().lin.weight.detach().clone()
    # (which argument of loss, its gradient, the entry to perturb)
    for which, grad, idx in ((0, g_y0, (1, 0)), (1, g_t, (0,)), (1, g_t, (2,)), (2, g_w, (0, 1))):
        a_up, a_down = [y0.clone(), t.clone(), w.clone()], [y0.clone(), t.clone(), w.clone()]
        a_up[which][idx] += eps
        a_down[which][idx] -= eps
        fd = (loss(*a_up) - loss(*a_down)) / (2 * eps)
        assert abs(fd - float(grad[idx])) < 1e-6 * max(1.0, abs(fd)), (method, which, idx, fd, float(grad[idx]))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_modes_on_batched_states_devices_and_dtypes(device, dtype):
    tol = 1e-6 if dtype == torch.float32 else 1e-9
    kw = dict(rtol=tol, atol=tol)
    _, g_back = _grads("backprop", "dopri5", kw, device, dtype)
    for mode in ("adjoint", "checkpoint"):
        sol, g = _grads(mode, "dopri5", kw, device, dtype)
        assert sol.ys.device.type == device and sol.ys.dtype == dtype
        for a, b in zip(g, g_back):
            assert a.device.type == device and a.dtype == dtype
            assert _rel(a, b) < (1e-3 if dtype == torch.float32 else 1e-6), (mode, _rel(a, b))


def test_implicit_euler_adjoint_matches_backprop_to_its_order():
    # first order: at rtol 1e-6 the two gradients agree to about the solver's error, not 1e-6
    _, g_back = _grads("backprop", "implicit_euler", dict(rtol=1e-6, atol=1e-6))
    _, g_adj = _grads("adjoint", "implicit_euler", dict(rtol=1e-6, atol=1e-6))
    _, g_ck = _grads("checkpoint", "implicit_euler", dict(rtol=1e-6, atol=1e-6))
    for a, b, c in zip(g_adj, g_back, g_ck):
        assert _rel(a, b) < 1e-2
        assert _rel(c, b) < 1e-6


def test_unknown_gradient_mode_lists_the_valid_ones():
    y0 = torch.ones(2)
    with pytest.raises(
        ValueError, match=r"gradient='adjiont' is not one of \['backprop', 'adjoint', 'checkpoint', 'reversible'\]"
    ):
        odeint(lambda t, y: -y, y0, torch.tensor([0.0, 1.0]), gradient="adjiont")


def test_adjoint_options_are_checked():
    y0 = torch.ones(2, requires_grad=True)
    t = torch.tensor([0.0, 1.0])
    with pytest.raises(TypeError, match=r"adjoint_options keys \['tol'\] are not understood; known keys"):
        odeint(Field(torch.float32), y0, t, gradient="adjoint", adjoint_options={"tol": 1e-3})
    with pytest.raises(ValueError, match="adjoint_options are for gradient='adjoint'"):
        odeint(Field(torch.float32), y0, t, adjoint_options={"rtol": 1e-3})


def test_plain_function_without_parameters_gives_y0_gradients():
    y0 = torch.tensor([1.0, -2.0], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 1.5], dtype=F64)
    f = lambda t, y: -0.7 * y + torch.sin(y)  # noqa: E731
    grads = {}
    for mode in ("backprop", "adjoint", "checkpoint"):
        sol = odeint(f, y0, t, gradient=mode, rtol=1e-10, atol=1e-10)
        (grads[mode],) = torch.autograd.grad(sol.ys[-1].sum(), y0)
    assert _rel(grads["adjoint"], grads["backprop"]) < 1e-7
    assert _rel(grads["checkpoint"], grads["backprop"]) < 1e-12


def test_plain_function_closing_over_a_tensor_still_gets_its_gradient():
    # A tensor captured by a plain function is found by walking func's autograd graph: no silent zero.
    k = torch.tensor(0.7, dtype=F64, requires_grad=True)
    y0 = torch.tensor([1.5], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 2.0], dtype=F64)
    for mode in ("adjoint", "checkpoint"):
        sol = odeint(lambda t, y: -k * y, y0, t, gradient=mode, rtol=1e-10, atol=1e-12)
        g_k, g_y0 = torch.autograd.grad(sol.ys[-1].sum(), [k, y0])
        exact = math.exp(-0.7 * 2.0)
        assert abs(float(g_y0) - exact) < 1e-8
        assert abs(float(g_k) - (-2.0 * 1.5 * exact)) < 1e-8, mode


def test_a_failing_backward_solve_raises_or_reports_never_silent():
    y0 = torch.tensor([1.0, 0.5], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 1.0], dtype=F64)
    field = Field()
    sol = odeint(field, y0, t, gradient="adjoint", adjoint_options={"max_steps": 2})
    with pytest.raises(SolverError, match=r"MAX_STEPS.*backward \(adjoint\) solve"):
        sol.ys[-1].sum().backward()
    assert sol.stats["backward_status"] is Status.MAX_STEPS
    sol = odeint(field, y0, t, gradient="adjoint", adjoint_options={"max_steps": 2}, throw=False)
    with pytest.warns(BackwardSolveWarning, match="MAX_STEPS"):
        (g,) = torch.autograd.grad(sol.ys[-1].sum(), y0)
    assert torch.isnan(g).all() and sol.stats["backward_status"] is Status.MAX_STEPS


def test_adjoint_backward_uses_its_own_method_and_tolerances():
    y0 = torch.tensor([1.0, 0.5], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 1.0], dtype=F64)
    loose = odeint(
        Field(), y0, t, gradient="adjoint", rtol=1e-10, atol=1e-10, adjoint_options={"rtol": 1e-4, "atol": 1e-4}
    )
    loose.ys[-1].sum().backward()
    tight = odeint(Field(), y0, t, gradient="adjoint", rtol=1e-10, atol=1e-10)
    tight.ys[-1].sum().backward()
    assert loose.stats["nfe_backward"] < tight.stats["nfe_backward"]
    fixed = odeint(Field(), y0, t, gradient="adjoint", adjoint_options={"method": "rk4", "step_size": 0.1})
    fixed.ys[-1].sum().backward()
    assert fixed.stats["backward_n_steps"] == 10


def test_gradient_table_finds_the_drift():
    from nodecourse.measure import gradient_table

    easy = gradient_table(-1.0, 1.0, rtol=1e-8, atol=1e-8)
    assert all(r.rel_error < 1e-6 for r in easy.rows), str(easy)
    hard = gradient_table(
        -10.0,
        3.0,
        rtol=1e-6,
        atol=1e-6,
        routes=("analytic", "backprop", "adjoint", "checkpoint", "torchdiffeq_adjoint"),
    )
    assert hard.row("checkpoint").rel_error < 1e-5 and hard.row("backprop").rel_error < 1e-5
    assert hard.row("adjoint").rel_error > 1.0 and hard.row("torchdiffeq_adjoint").rel_error > 1.0
    with pytest.raises(ValueError, match="valid routes"):
        gradient_table(routes=("symbolic",))


def test_reversal_counts_match_the_solver():
    from nodecourse.lessons import lesson04 as L

    n = L.steps_to_reverse("euler", -10.0)
    assert L.reverse_with_solver("euler", -10.0, step_size=1.0 / n)[1] <= 0.01
    assert L.reverse_with_solver("euler", -10.0, step_size=1.0 / (n - 1))[1] > 0.01
    assert 490_000 < L.steps_to_reverse("euler", -100.0) < 510_000  # about 50 lam^2
    for method in ("rk4", "trapezoid"):
        m = L.steps_to_reverse(method, -10.0)
        assert L.reverse_with_solver(method, -10.0, step_size=1.0 / m)[1] <= 0.01
    cases = {case.lam: case for case in L.underflow_demo()}
    assert cases[-1e4].z1 == 0.0 and cases[-1e4].recovered == 0.0


def test_adjoint_explorer_updates_headless():
    from nodecourse.widgets import AdjointExplorer

    ex = AdjointExplorer(lam=-10.0, T=0.5, tol=1e-6, render=False)
    short = ex.result.rel_error
    ex.T.value = 3.0
    assert ex.result.rel_error > 100 * short
    ex.mode.value = "checkpoint"
    assert ex.result.rel_error < 1e-5 and ex.result.nfe_backward > 0
    with pytest.raises(ValueError, match="valid"):
        AdjointExplorer(mode="symbolic", render=False)


def test_implicit_backward_solve_refuses_a_huge_dense_jacobian():
    field = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 64))

    class F(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = field

        def forward(self, t, z):
            return self.net(z)

    y0 = torch.randn(4, 64, requires_grad=True)
    with pytest.raises(ValueError, match=r"dense \(33600 x 33600\) Jacobian.*adjoint_options=\{'method': 'dopri5'\}"):
        odeint(F(), y0, torch.tensor([0.0, 1.0]), method="trapezoid", gradient="adjoint")
