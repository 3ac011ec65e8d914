"""Kinetic and Jacobian regularisers integrated as extra state (RegularisedBlock)."""

from __future__ import annotations

import pytest
import torch

from nodecourse import odeint
from nodecourse.deq._regularizer import exact_jacobian_frobenius
from nodecourse.models import MLPField, ODEBlock
from nodecourse.models._regularised import RegularisedBlock, regularised_block

F64 = torch.float64


def _field(seed=0, d=2):
    torch.manual_seed(seed)
    return MLPField(d, hidden=(16,), activation="tanh").to(F64)


def _quadrature(field, z0, integrand, n=2001):
    with torch.no_grad():
        t = torch.linspace(0.0, 1.0, n, dtype=F64)
        ys = odeint(field, z0, t, rtol=1e-10, atol=1e-10).ys
    values = torch.stack([integrand(t[i], ys[i]) for i in range(n)])
    return torch.trapezoid(values, t, dim=0)


def test_kinetic_term_equals_a_quadrature_of_the_squared_speed():
    field = _field()
    z0 = torch.randn(6, 2, dtype=F64)
    block = regularised_block(ODEBlock(field, rtol=1e-10, atol=1e-10), jacobian=False)
    z1 = block(z0)
    ref = _quadrature(field, z0, lambda t, y: field(t, y).pow(2).sum(1).detach())
    assert torch.allclose(block.kinetic, ref, rtol=1e-6)
    assert torch.allclose(
        z1, odeint(field, z0, torch.tensor([0.0, 1.0], dtype=F64), rtol=1e-10, atol=1e-10).ys[-1], atol=1e-8
    )
    assert bool((block.jacobian == 0).all())


def test_jacobian_term_is_unbiased_for_the_integrated_frobenius_norm():
    field = _field(1)
    z0 = torch.randn(3, 2, dtype=F64)

    def frob(t, y):
        y = y.detach().requires_grad_(True)
        with torch.enable_grad():
            return exact_jacobian_frobenius(field(t, y), y)

    ref = _quadrature(field, z0, frob, n=401)
    block = RegularisedBlock(
        ODEBlock(field, rtol=1e-8, atol=1e-8),
        kinetic=False,
        n_probes=400,
        noise="gaussian",
        generator=torch.Generator().manual_seed(0),
    )
    with torch.no_grad():
        block(z0)
    # 400 Gaussian probes: the relative standard error of the mean is about sqrt(2 / 400) = 7 %
    assert torch.allclose(block.jacobian, ref, rtol=0.25), (block.jacobian, ref)


@pytest.mark.parametrize("gradient", ["backprop", "adjoint", "checkpoint"])
def test_regularisers_train_through_every_gradient_mode(gradient):
    field = _field(2)
    z0 = torch.randn(4, 2, dtype=F64)
    block = regularised_block(
        ODEBlock(field, rtol=1e-7, atol=1e-7, gradient=gradient), generator=torch.Generator().manual_seed(3)
    )
    z1 = block(z0)
    (z1.sum() + block.kinetic.mean() + block.jacobian.mean()).backward()
    grads = [p.grad for p in field.parameters()]
    assert all(g is not None and bool(torch.isfinite(g).all()) for g in grads)
    assert block.last_stats["nfe"] > 0 and block.block.nfe_forward == block.last_stats["nfe"]


def test_kinetic_gradient_matches_backprop_through_the_same_probes():
    field = _field(4)
    z0 = torch.randn(4, 2, dtype=F64)
    out = {}
    for gradient in ("backprop", "checkpoint"):
        field.zero_grad(set_to_none=True)
        block = regularised_block(
            ODEBlock(field, rtol=1e-9, atol=1e-9, gradient=gradient), generator=torch.Generator().manual_seed(5)
        )
        block(z0)
        (block.kinetic.sum() + block.jacobian.sum()).backward()
        out[gradient] = torch.cat([p.grad.flatten() for p in field.parameters()])
    assert torch.allclose(out["backprop"], out["checkpoint"], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(n_probes=0), r"n_probes=0 is out of range"),
        (dict(noise="uniform"), r"noise='uniform' is not one of"),
        (dict(kinetic=1), r"kinetic=1 must be True or False"),
    ],
)
def test_bad_settings_are_named(kwargs, pattern):
    with pytest.raises((TypeError, ValueError), match=pattern):
        regularised_block(ODEBlock(_field()), **kwargs)


def test_a_field_instead_of_a_block_is_refused():
    with pytest.raises(TypeError, match="must be a nodecourse.models.ODEBlock"):
        RegularisedBlock(_field())
