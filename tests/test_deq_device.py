"""The DEQ package on a device (strict fake CUDA, see tests/fake_cuda.py): no hidden host tensors
in the solvers, the implicit backward, the regulariser, the spectral radius or training."""

import pytest
import torch

from fake_cuda import fake_cuda_device, kind


@pytest.fixture
def cuda():
    with fake_cuda_device() as device:
        yield device


@pytest.mark.parametrize("method", ["picard", "anderson", "broyden"])
def test_fixed_point_on_the_device(cuda, method):
    from nodecourse import fixed_point
    from nodecourse.deq._problems import contraction, reflection

    p = contraction("tanh", 0.9, dim=8, batch=3, device=cuda)
    r = fixed_point(p.f, p.z0, method=method, tol=1e-8, max_iter=500)
    assert r.success and kind(r.z) == "cuda" and r.final_residual() <= 1e-8
    assert len(r.residuals.worst()) == r.n_iter
    q = reflection(device=cuda)
    assert not fixed_point(q.f, q.z0, method="picard", max_iter=20, warn=False).success


def test_deq_training_step_on_the_device(cuda):
    from nodecourse.deq import spectral_radius
    from nodecourse.deq._models import DEQModel
    from nodecourse.deq._problems import bai_synthetic
    from nodecourse.deq._training import fit_deq

    x, y = bai_synthetic(32, device=cuda)
    torch.manual_seed(0)
    model = DEQModel(1, 1, state_dim=4, width=8, tol=1e-3, max_iter=20).to(cuda)
    log = fit_deq(model, x, y, epochs=2, jac_weight=0.5)
    assert len(log.forward_iters) == 2 and log.backward_iters[-1] >= 1
    assert kind(model.readout.weight) == "cuda"
    z = torch.zeros(32, 4, device=cuda).requires_grad_()
    rho = spectral_radius(model.block(z, x), z, n_iter=5)
    assert kind(rho) == "cuda" and rho.shape == (32,)
