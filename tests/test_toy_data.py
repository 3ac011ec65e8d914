"""The toy data of lesson 3: shapes, labels, radii, seeding, dtype/device, argument errors."""

import math

import pytest
import torch

from nodecourse.data import ANNULUS_RADII, annulus, annulus_label, negation, one_d_crossing


def test_annulus_shapes_labels_and_radii():
    x, y = annulus(50, 80, seed=3)
    assert x.shape == (130, 2) and y.shape == (130, 1)
    r = x.norm(dim=1)
    r1, r2, r3 = ANNULUS_RADII
    assert (y[:50] == -1).all() and (y[50:] == 1).all()
    assert (r[:50] <= r1 + 1e-6).all()
    assert ((r[50:] >= r2 - 1e-6) & (r[50:] <= r3 + 1e-6)).all()
    assert torch.equal(annulus_label(x), y[:, 0])


def test_annulus_is_uniform_in_area():
    # Half the ring's area lies beyond the radius sqrt((r2^2 + r3^2) / 2).
    x, _ = annulus(1, 20_000, seed=0, dtype=torch.float64)
    r = x[1:].norm(dim=1)
    median_radius = math.sqrt((1.0**2 + 1.5**2) / 2)
    assert abs((r > median_radius).double().mean().item() - 0.5) < 0.02


def test_annulus_is_seeded():
    a, _ = annulus(10, 20, seed=7)
    b, _ = annulus(10, 20, seed=7)
    c, _ = annulus(10, 20, seed=8)
    assert torch.equal(a, b) and not torch.equal(a, c)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_and_device_follow_arguments(dtype):
    from nodecourse.config import available_devices

    for device in available_devices():
        x, y = annulus(5, 5, dtype=dtype, device=device)
        assert x.dtype == y.dtype == dtype and x.device.type == device
        xn, yn = negation(8, dtype=dtype, device=device)
        assert xn.dtype == dtype and xn.device.type == device


def test_negation_and_crossing():
    x, y = negation(5)
    assert torch.allclose(x[:, 0], torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0]))
    assert torch.equal(y, -x)
    x, y = one_d_crossing()
    assert x.tolist() == [[-1.0], [1.0]] and y.tolist() == [[1.0], [-1.0]]


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(n_inner=0), "n_inner=0"),
        (dict(n_outer=2.5), "n_outer=2.5"),
        (dict(radii=(1.0, 0.5, 1.5)), "0 < r1 < r2 < r3"),
        (dict(seed="a"), "seed='a'"),
    ],
)
def test_annulus_bad_arguments_name_themselves(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(".", r"\.")):
        annulus(**kwargs)


def test_negation_needs_two_points():
    with pytest.raises(ValueError, match="n=1"):
        negation(1)
