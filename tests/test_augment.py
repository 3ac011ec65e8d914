"""Augmented flows, readouts and the lesson-3 models: shapes, errors, parameter matching, NFE
bookkeeping, and the 1-D theorem (a flow cannot swap two points; both repairs can)."""

import pytest
import torch

from nodecourse.config import available_devices
from nodecourse.data import annulus, one_d_crossing
from nodecourse.models import MLPField, count_parameters
from nodecourse.models._augment import (
    AugmentedODE,
    ProjectionReadout,
    augmented_node,
    fit_augmented,
    make_readout,
    matched_resnet,
    pad_zeros,
    plain_node,
    sign_accuracy,
)

FAST = dict(method="rk4", step_size=0.25)


def test_pad_zeros():
    x = torch.randn(4, 2, dtype=torch.float64)
    z = pad_zeros(x, 3)
    assert z.shape == (4, 5) and z.dtype == torch.float64
    assert torch.equal(z[:, :2], x) and (z[:, 2:] == 0).all()
    assert pad_zeros(x, 0) is x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("device", available_devices())
def test_augmented_ode_shapes_stats_and_trajectory(dtype, device):
    flow = AugmentedODE(MLPField(3), augment_dim=1, rtol=1e-3, atol=1e-3).to(device=device, dtype=dtype)
    x = torch.randn(5, 2, dtype=dtype, device=device)
    z = flow(x)
    assert z.shape == (5, 3) and z.dtype == dtype and z.device.type == device
    assert flow.last_stats["nfe"] > 0
    ts, zs = flow.trajectory(x, n_times=6)
    assert ts.shape == (6,) and zs.shape == (6, 5, 3)
    assert torch.allclose(zs[0], pad_zeros(x, 1))
    assert torch.allclose(zs[-1], z, atol=1e-2)


def test_models_record_forward_nfe_and_work_in_float64():
    x, y = annulus(10, 20, seed=0, dtype=torch.float64)
    for model in (plain_node(2, rtol=1e-3, atol=1e-3), augmented_node(2, 2, rtol=1e-3, atol=1e-3)):
        log = fit_augmented(model, x, y, epochs=2, lr=1e-2)
        assert next(model.parameters()).dtype == torch.float64
        assert model.last_nfe == model.flow.last_stats["nfe"] > 0
        assert len(log.nfe) == 2 and all(n > 0 for n in log.nfe)
        assert log.nfe_per_forward == [float(n) for n in log.nfe]  # full batch: one call per epoch


def test_readouts():
    z = torch.randn(4, 3)
    assert torch.equal(make_readout("projection", 3)(z), z[:, :1])
    assert isinstance(make_readout("projection", 3), ProjectionReadout)
    assert make_readout("linear", 3, 2)(z).shape == (4, 2)
    with pytest.raises(ValueError, match="readout='lin'"):
        make_readout("lin", 3)
    with pytest.raises(ValueError, match="out_dim=4"):
        make_readout("projection", 3, 4)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="augment_dim=-1"):
        AugmentedODE(MLPField(2), augment_dim=-1)
    with pytest.raises(ValueError, match="augment_dim=2"):
        AugmentedODE(MLPField(2), augment_dim=2)
    with pytest.raises(ValueError, match="augment_dim=0"):
        augmented_node(2, 0)
    flow = AugmentedODE(MLPField(3), augment_dim=1)
    with pytest.raises(ValueError, match="3 features"):
        flow(torch.randn(4, 3))
    x, y = one_d_crossing()
    with pytest.raises(ValueError, match="loss='l1'"):
        fit_augmented(plain_node(1), x, y, epochs=1, loss="l1")
    with pytest.raises(ValueError, match="epochs=0"):
        fit_augmented(plain_node(1), x, y, epochs=0)
    with pytest.raises(ValueError, match="batch_size=0"):
        fit_augmented(plain_node(1), x, y, epochs=1, batch_size=0)


def test_matched_resnet_parameter_count():
    target = count_parameters(plain_node(2))
    resnet = matched_resnet(2, target)
    assert abs(count_parameters(resnet) - target) / target < 0.03
    assert resnet(torch.randn(7, 2)).shape == (7, 1)


def test_one_d_flow_cannot_swap_two_points_but_both_repairs_can():
    # g(-1) = 1, g(1) = -1. A 1-D flow keeps order, so the best it can do is send both
    # points to the same value: MSE 1 (the mean of 1^2 and 1^2).
    x, y = one_d_crossing()
    mse, outputs = {}, {}
    for name, make in {
        "flow": lambda: plain_node(1, readout="projection", **FAST),
        "augmented": lambda: augmented_node(1, 1, readout="projection", **FAST),
        "flow+linear": lambda: plain_node(1, readout="linear", **FAST),
    }.items():
        torch.manual_seed(0)
        model = make()
        fit_augmented(model, x, y, epochs=60, lr=1e-2, loss="mse")
        with torch.no_grad():
            outputs[name] = model(x)[:, 0]
            mse[name] = torch.nn.functional.mse_loss(model(x), y).item()
        if name != "flow":
            assert sign_accuracy(model, x, y) == 1.0
    assert mse["flow"] >= 1.0 - 0.02, mse
    assert mse["augmented"] < 0.01 and mse["flow+linear"] < 0.01, mse
    # and the plain flow still keeps the order of the two points
    assert outputs["flow"][0] <= outputs["flow"][1]
