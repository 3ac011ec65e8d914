"""gradient="checkpoint": same gradients as backprop, checked by finite differences, less memory."""

from __future__ import annotations

import pytest
import torch

from nodecourse import SOLVERS, odeint
from nodecourse.measure import memory_sweep

F64 = torch.float64


class Field(torch.nn.Module):
    def __init__(self, dim=3, hidden=16):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, dim))

    def forward(self, t, y):
        return self.net(y) * torch.cos(t)


def _grads(gradient, method, **kw):
    field = Field().double()
    y0 = torch.tensor([0.5, -0.3, 0.2], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 0.7, 2.0], dtype=F64)
    sol = odeint(field, y0, t, method=method, gradient=gradient, **kw)
    loss = (sol.ys**2).sum()
    params = [y0, *field.parameters()]
    return sol, torch.autograd.grad(loss, params)


@pytest.mark.parametrize(
    "method,kw",
    [
        ("dopri5", {"rtol": 1e-5, "atol": 1e-7}),
        ("bosh3", {"rtol": 1e-5, "atol": 1e-7}),
        ("rk4", {"step_size": 0.05}),
        ("euler", {"step_size": 0.05}),
    ],
)
def test_checkpoint_gradients_equal_backprop(method, kw):
    sol_b, g_b = _grads("backprop", method, **kw)
    sol_c, g_c = _grads("checkpoint", method, **kw)
    assert torch.equal(sol_b.ys, sol_c.ys)
    # the backward pass replays each accepted step once (rejected steps fed nothing downstream), first
    # slope included: every stage of the tableau per accepted step
    spec = SOLVERS[method]
    assert sol_c.stats.pop("nfe_backward") == sol_c.stats["n_accepted"] * spec.tableau.stages
    for key in ("nfe_setup", "backward_status", "backward_message"):  # the dependency probe, the replay's status
        sol_c.stats.pop(key)
    assert sol_b.stats.pop("nfe_backward") == 0  # backprop's backward pass never calls func
    assert sol_b.stats == sol_c.stats
    for a, b in zip(g_b, g_c):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method,kw", [("rk4", {"step_size": 0.1}), ("dopri5", {"rtol": 1e-9, "atol": 1e-11})])
def test_checkpoint_gradient_matches_finite_differences(method, kw):
    w = torch.tensor([[0.0, 1.0], [-1.0, -0.2]], dtype=F64, requires_grad=True)
    y0 = torch.tensor([1.0, 0.0], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 1.5], dtype=F64)

    def final(y0, w):
        return odeint(lambda tt, y: torch.tanh(y @ w.T), y0, t, method=method, gradient="checkpoint", **kw).ys[-1]

    g_y0, g_w = torch.autograd.grad(final(y0, w).sum(), (y0, w))
    eps = 1e-6
    for i in range(2):
        for j in range(2):
            dw = torch.zeros_like(w)
            dw[i, j] = eps
            with torch.no_grad():
                fd = (final(y0, w + dw).sum() - final(y0, w - dw).sum()) / (2 * eps)
            assert abs(float(fd) - float(g_w[i, j])) < 1e-6, (i, j, float(fd), float(g_w[i, j]))
    if method == "rk4":
        assert torch.autograd.gradcheck(final, (y0, w))


@pytest.mark.slow
def test_checkpoint_memory_grows_by_one_state_per_step():
    """Peak memory of forward + backward (torch's profiler: exact bytes held by tensors). The step
    record keeps one state per accepted step outside autograd's saved tensors, so the peak is what
    must be measured: 40 more rk4 steps cost checkpoint 40 states (64 x 8 doubles each), while
    backprop keeps every stage's hidden (64 x 256) activations."""
    state_bytes = 64 * 8 * 8
    sweep = memory_sweep(
        steps=(20, 60), batch=64, dims=(8, 256, 8), modes=("backprop", "checkpoint"), method="rk4", dtype="float64"
    )
    (back20, back60), (ck20, ck60) = sweep.peaks("backprop"), sweep.peaks("checkpoint")
    assert abs((ck60 - ck20) - 40 * state_bytes) <= 4 * state_bytes, sweep.rows
    assert back60 - back20 > 40 * (64 * 256 * 8), sweep.rows  # at least one hidden layer per step
    assert ck60 * 10 < back60, sweep.rows
