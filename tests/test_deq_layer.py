"""The DEQ layer: implicit gradients against unrolled backprop, memory, stats, the regulariser."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nodecourse import DEQ, jacobian_regularizer
from nodecourse.deq import exact_jacobian_frobenius, spectral_radius
from nodecourse.deq._models import DEQModel, EquilibriumBlock
from nodecourse.deq._training import fit_deq
from nodecourse.measure import saved_tensor_bytes


def _block(state=8, inp=3, scale=0.5, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    return EquilibriumBlock(state, inp, width=20, init_scale=scale).to(dtype)


def _param_grads(deq, block, x):
    block.zero_grad()
    (deq(x) ** 2).mean().backward()
    return torch.cat([p.grad.flatten() for p in block.parameters()])


@pytest.mark.parametrize("method", ["anderson", "broyden", pytest.param("picard", marks=pytest.mark.slow)])
def test_implicit_gradient_matches_unrolled_backprop_float64(method):
    block = _block()
    x = torch.randn(6, 3, dtype=torch.float64)
    unrolled = DEQ(block, method="picard", backward="unrolled", tol=1e-300, max_iter=300, state=8)
    implicit = DEQ(block, method=method, tol=1e-12, backward_tol=1e-12, max_iter=300, state=8)
    g_ref = _param_grads(unrolled, block, x)
    g = _param_grads(implicit, block, x)
    assert (g - g_ref).norm() / g_ref.norm() < 1e-6
    s = implicit.stats
    assert s["forward_status"] == s["backward_status"] == "success"
    assert s["forward_iters"] > 1 and s["backward_iters"] > 1 and s["backward_residual"] <= 1e-12


@pytest.mark.slow
def test_implicit_gradient_wrt_input_matches_finite_differences():
    block = _block(state=4, inp=2)
    deq = DEQ(block, tol=1e-13, backward_tol=1e-13, max_iter=300, state=4)
    x = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: deq(x), (x,), eps=1e-6, atol=1e-6)


def test_implicit_memory_is_flat_in_forward_iterations_unrolled_grows():
    block = _block()
    x = torch.randn(16, 3, dtype=torch.float64)
    params = tuple(block.parameters())
    mem = {}
    for mode in ("implicit", "unrolled"):
        for n in (5, 20, 80):
            deq = DEQ(block, method="picard", backward=mode, tol=1e-300, max_iter=n, state=8)
            mem[mode, n] = saved_tensor_bytes(lambda: deq(x), exclude=params)
            assert deq.stats["forward_iters"] == n
    assert mem["implicit", 5] == mem["implicit", 20] == mem["implicit", 80] > 0
    assert mem["unrolled", 80] > 3 * mem["unrolled", 20] > 9 * mem["unrolled", 5] / 1.5
    assert mem["unrolled", 5] > mem["implicit", 5]


def test_backward_stats_recorded_and_reset_each_forward():
    block = _block()
    deq = DEQ(block, state=8, tol=1e-6)
    x = torch.randn(4, 3, dtype=torch.float64)
    z = deq(x)
    assert deq.stats["backward_iters"] is None
    z.sum().backward()
    assert deq.stats["backward_iters"] >= 1 and deq.backward_result is not None
    with torch.no_grad():
        deq(x)
    assert deq.stats["backward_iters"] is None and deq.forward_result.success


def test_deq_returns_the_fixed_point():
    block = _block()
    deq = DEQ(block, state=8, tol=1e-10, max_iter=200)
    x = torch.randn(4, 3, dtype=torch.float64)
    with torch.no_grad():
        z = deq(x)
    torch.testing.assert_close(block(z, x), z, rtol=1e-8, atol=1e-9)


def test_deq_errors_name_the_argument():
    block = _block()
    with pytest.raises(ValueError, match="backward='adjoint'"):
        DEQ(block, backward="adjoint")
    with pytest.raises(ValueError, match=r"method='fast' is not one of \['picard', 'anderson', 'broyden'\]"):
        DEQ(block, method="fast")
    # solver= is a SolveConfig everywhere else in the library; a DEQ's fixed-point method is method=
    with pytest.raises(TypeError, match="'solver'"):
        DEQ(block, solver="anderson")
    assert "method='broyden'" in repr(DEQ(block, method="broyden", backward_method="picard"))
    assert DEQ(block, method="broyden").backward_method == "broyden"
    with pytest.raises(ValueError, match="z0"):
        DEQ(block)(torch.randn(2, 3, dtype=torch.float64))


def test_hutchinson_mean_within_two_percent_of_exact():
    block = _block(state=6, scale=1.0)
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(1, 6, dtype=torch.float64, generator=gen)
    x = torch.randn(1, 3, dtype=torch.float64, generator=gen)
    z1 = z.clone().requires_grad_()
    exact = exact_jacobian_frobenius(block(z1, x), z1)[0]
    ref = torch.autograd.functional.jacobian(lambda v: block(v, x), z)[0, :, 0, :]
    torch.testing.assert_close(exact, ref.pow(2).sum())
    for noise in ("gaussian", "rademacher"):
        zr = z.repeat(20_000, 1).requires_grad_()
        est = jacobian_regularizer(block(zr, x.expand(20_000, -1)), zr, reduction="none", noise=noise, generator=gen)
        assert abs(float(est.detach().mean()) - float(exact)) <= 0.02 * float(exact)


def test_hutchinson_is_differentiable_and_averages_probes():
    block = _block()
    z = torch.randn(4, 8, dtype=torch.float64, requires_grad=True)
    x = torch.randn(4, 3, dtype=torch.float64)
    f_out = block(z, x)
    reg = jacobian_regularizer(f_out, z, n_samples=3)
    assert reg.dim() == 0 and reg.requires_grad
    reg.backward()
    assert block.W1.weight.grad is not None and block.W1.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="n_samples=0"):
        jacobian_regularizer(f_out, z, 0)


def test_spectral_radius_power_method_on_a_known_matrix():
    A = torch.diag(torch.tensor([0.9, -0.5, 0.2], dtype=torch.float64))
    z = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    rho = spectral_radius(z @ A.T, z, n_iter=100)
    torch.testing.assert_close(rho, torch.full((2,), 0.9, dtype=torch.float64))


@pytest.mark.slow
def test_jacobian_regulariser_in_training_reduces_the_jacobian():
    x = torch.linspace(-2, 2, 64).unsqueeze(1)
    y = torch.sin(3 * x)
    logs = {}
    for w in (0.0, 2.0):
        torch.manual_seed(0)
        model = DEQModel(1, 1, state_dim=8, width=20, tol=1e-3, max_iter=40)
        logs[w] = fit_deq(model, x, y, epochs=30, lr=1e-2, jac_weight=w)
        assert len(logs[w].forward_iters) == 30 and all(v >= 1 for v in logs[w].forward_iters)
    assert logs[2.0].jacobian[-1] < logs[0.0].jacobian[-1]


def test_truncated_block_is_a_fixed_number_of_steps():
    torch.manual_seed(0)
    model = DEQModel(1, 1, state_dim=8, method="picard", backward="unrolled", tol=1e-300, max_iter=5)
    log = fit_deq(model, torch.randn(16, 1), torch.randn(16, 1), epochs=2)
    assert log.forward_iters == [5.0, 5.0]
    with pytest.raises(ValueError, match="jac_weight"):
        fit_deq(model, torch.randn(16, 1), torch.randn(16, 1), epochs=1, jac_weight=1.0)


def test_device_and_dtype_follow_the_input():
    block = EquilibriumBlock(4, 2, width=8).to(torch.float32)
    deq = DEQ(block, state=4)
    z = deq(torch.randn(3, 2))
    assert z.dtype == torch.float32 and z.device.type == "cpu"
    assert isinstance(deq, nn.Module) and any(p is block.W2 for p in deq.parameters())
