"""A field that draws random numbers (dropout in training mode): the gradient routes that replay the
solve reproduce the forward's random numbers (checkpoint, reversible), so their gradient equals
backprop's from the same seed; the adjoint, which cannot, refuses by name. CPU and the fake CUDA
device (whose generator is the CPU's; tests/fake_cuda.py)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fake_cuda import fake_cuda_device
from nodecourse.solvers import odeint
from nodecourse.solvers.field_checks import RandomFieldError


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
