"""A field that draws random numbers (dropout in training mode): the gradient routes that replay the
solve reproduce the forward's random numbers (checkpoint, reversible), so their gradient equals
backprop's from the same seed; the routes that cannot (the adjoint, gradients with respect to t, a
DEQ's implicit backward) refuse by name. CPU and the fake CUDA device (whose generator is the CPU's;
tests/fake_cuda.py)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fake_cuda import fake_cuda_device
from nodecourse.deq import DEQ, fixed_point
from nodecourse.deq._fixed_point import FixedPointBatchMixingError
from nodecourse.solvers import odeint
from nodecourse.validation import RandomFieldError


class DropoutField(nn.Module):
    def __init__(self, width: int = 4, p: float = 0.3):
        super().__init__()
        torch.manual_seed(1)
        self.lin = nn.Linear(width, width, dtype=torch.float64)
        self.drop = nn.Dropout(p)

    def forward(self, t, y):
        return torch.tanh(self.drop(self.lin(y)))


SETTINGS = {
    "checkpoint-rk4": dict(method="rk4", step_size=0.1, gradient="checkpoint"),
    "checkpoint-dopri5": dict(method="dopri5", rtol=1e-3, atol=1e-4, gradient="checkpoint"),
    "reversible": dict(method="reversible_heun", step_size=0.05, gradient="reversible"),
}


def run(kw, device, seed=0):
    f = DropoutField().to(device)
    y0 = torch.linspace(-1, 1, 8, dtype=torch.float64, device=device).reshape(2, 4).requires_grad_(True)
    t = torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64, device=device)
    torch.manual_seed(seed)
    ys = odeint(f, y0, t, **kw).ys
    (ys[1:] ** 2).sum().backward()
    after = torch.rand(3)  # the caller's random stream after forward and backward
    grads = [y0.grad] + [p.grad for p in f.parameters()]
    return ys.detach().cpu(), [g.detach().cpu() for g in grads], after


@pytest.mark.parametrize("name", list(SETTINGS))
def test_dropout_field_gradient_equals_backprops_with_the_same_seed(name):
    kw = SETTINGS[name]
    ys, grads, after = run(kw, torch.device("cpu"))
    ys_ref, grads_ref, after_ref = run(dict(kw, gradient="backprop"), torch.device("cpu"))
    assert torch.equal(ys, ys_ref)  # the same random numbers in the forward solve
    for g, g_ref in zip(grads, grads_ref):
        assert torch.allclose(g, g_ref, rtol=1e-10, atol=1e-12)
    assert torch.equal(after, after_ref)  # and the caller's stream moved as backprop's did
    # a different seed draws other masks: the comparison above is not vacuous
    assert not torch.allclose(run(kw, torch.device("cpu"), seed=5)[1][1], grads[1])


@pytest.mark.parametrize("name", ["checkpoint-rk4", "reversible"])
def test_dropout_field_on_the_fake_cuda_device(name):
    kw = SETTINGS[name]
    with fake_cuda_device() as cuda:
        _, grads, _ = run(kw, cuda)
        _, grads_ref, _ = run(dict(kw, gradient="backprop"), cuda)
    for g, g_ref in zip(grads, grads_ref):
        assert torch.allclose(g, g_ref, rtol=1e-10, atol=1e-12)


def test_adjoint_refuses_a_random_field_by_name():
    f = DropoutField()
    y0 = torch.ones(2, 4, dtype=torch.float64)
    with pytest.raises(RandomFieldError, match="gradient='checkpoint'.*eval"):
        odeint(f, y0, torch.tensor([0.0, 1.0], dtype=torch.float64), gradient="adjoint")
    f.eval()  # no random numbers: the adjoint runs
    odeint(f, y0, torch.tensor([0.0, 1.0], dtype=torch.float64), gradient="adjoint")


@pytest.mark.parametrize("gradient", ["backprop", "checkpoint"])
def test_time_gradients_refuse_a_random_field_by_name(gradient):
    # dL/dt_i needs f(t_i, y_i) again in the backward pass: with dropout, another mask than the solve's
    f = DropoutField()
    y0 = torch.ones(2, 4, dtype=torch.float64)
    t = torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64, requires_grad=True)
    loss = odeint(f, y0, t, method="rk4", step_size=0.1, gradient=gradient).ys.sum()
    with pytest.raises(RandomFieldError, match=r"output times t.*t\.detach\(\).*eval"):
        loss.backward()
    f.eval()  # no random numbers: the time gradient is taken
    odeint(f, y0, t, method="rk4", step_size=0.1, gradient=gradient).ys.sum().backward()
    assert t.grad is not None and torch.isfinite(t.grad).all()


class DropoutMap(nn.Module):
    """``f(z, x) = 0.5 tanh(dropout(W z)) + x``: a fresh mask at every call (``variational=False``) or
    one mask per forward pass, drawn at its first call (``variational=True``, as torchdeq's
    ``VariationalDropout``; ``reset()`` before each forward)."""

    def __init__(self, variational: bool = False, p: float = 0.3):
        super().__init__()
        torch.manual_seed(3)
        self.lin = nn.Linear(4, 4)
        self.p, self.variational, self.mask = p, variational, None

    def reset(self):
        self.mask = None

    def forward(self, z, x):
        h = self.lin(z)
        if not self.variational:
            h = nn.functional.dropout(h, self.p, self.training)
        elif self.training:
            if self.mask is None:
                self.mask = torch.bernoulli(torch.full_like(h, 1 - self.p)) / (1 - self.p)
            h = h * self.mask
        return 0.5 * torch.tanh(h) + x


@pytest.mark.parametrize("batch", [1, 3])
def test_deq_implicit_refuses_a_random_field_by_name(batch):
    deq = DEQ(DropoutMap(), backward="implicit", state=4, max_iter=30, warn=False)
    with pytest.raises(RandomFieldError, match="implicit.*VariationalDropout.*eval.*unrolled"):
        deq(torch.randn(batch, 4))
    with torch.no_grad():  # no gradient asked for: the forward solve runs
        deq(torch.randn(batch, 4))
    deq.f.eval()
    deq(torch.randn(batch, 4)).sum().backward()


def test_deq_implicit_takes_a_mask_drawn_once_per_forward():
    f = DropoutMap(variational=True)
    deq = DEQ(f, backward="implicit", state=4, max_iter=60, tol=1e-6)
    x = torch.randn(3, 4)
    torch.manual_seed(0)
    f.reset()
    deq(x).sum().backward()
    assert deq.stats["forward_status"] == "success" and deq.stats["backward_status"] == "success"
    assert f.lin.weight.grad is not None and torch.isfinite(f.lin.weight.grad).all()


def test_deq_unrolled_random_field_passes_the_batch_probe():
    # the probe replays the first call's random numbers: per-entry dropout is not taken for batch mixing
    deq = DEQ(DropoutMap(), backward="unrolled", state=4, max_iter=10, warn=False)
    deq(torch.randn(3, 4)).sum().backward()
    assert deq.f.lin.weight.grad is not None


def test_fixed_point_batch_probe_does_not_shift_the_random_stream():
    f = DropoutMap()
    x = torch.randn(3, 4)
    runs = []
    for check in (True, False):
        torch.manual_seed(7)
        z = fixed_point(
            lambda z: f(z, x), torch.zeros(3, 4), method="picard", max_iter=12, check_batch=check, warn=False
        ).z
        runs.append((z, torch.rand(3)))
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])


def test_a_random_map_that_mixes_the_batch_is_still_caught():
    f = DropoutMap()
    x = torch.randn(3, 4)
    with pytest.raises(FixedPointBatchMixingError):
        fixed_point(lambda z: f(z, x) + 0.3 * z.mean(0), torch.zeros(3, 4), method="picard", max_iter=12)
