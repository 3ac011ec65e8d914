"""The digits loader: seeded stratified split, training-only scaling, device and dtype."""

import pytest
import torch

from nodecourse.data import load_digits


def test_shapes_and_labels():
    d = load_digits()
    assert d.x_train.shape[1] == 64 and d.x_test.shape[1] == 64
    assert d.x_train.shape[0] + d.x_test.shape[0] == 1797
    assert d.y_train.dtype == torch.int64
    assert set(d.y_train.tolist()) == set(range(10))
    assert abs(d.x_test.shape[0] / 1797 - 0.25) < 0.01


def test_split_is_seeded_and_stratified():
    a, b, c = load_digits(seed=0), load_digits(seed=0), load_digits(seed=1)
    assert torch.equal(a.x_train, b.x_train)
    assert not torch.equal(a.x_train, c.x_train)
    # Stratified: each class's share of the test set matches its share overall within one image.
    counts_test = torch.bincount(a.y_test, minlength=10).float()
    counts_all = counts_test + torch.bincount(a.y_train, minlength=10).float()
    assert (counts_test - 0.25 * counts_all).abs().max() <= 1.0


def test_scaled_with_training_statistics_only():
    d = load_digits(dtype=torch.float64)
    # Training pixels are centred exactly; test pixels only approximately (their own mean is not used).
    assert d.x_train.mean(0).abs().max() < 1e-10
    assert d.x_test.mean(0).abs().max() > 1e-6
    assert torch.isfinite(d.x_train).all() and torch.isfinite(d.x_test).all()


def test_subsample_and_dtype():
    d = load_digits(n_samples=400, dtype=torch.float64)
    assert d.x_train.shape[0] + d.x_test.shape[0] == 400
    assert d.x_train.dtype == torch.float64


@pytest.mark.parametrize("device", ["cuda", "mps"])
def test_on_accelerator(device):
    from nodecourse.config import available_devices

    if device not in available_devices():
        pytest.skip(f"{device} not available")
    d = load_digits(device=device)
    assert d.x_train.device.type == device and d.y_test.device.type == device


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="test_size=1.5"):
        load_digits(test_size=1.5)
    with pytest.raises(TypeError, match="dtype=torch.int32"):
        load_digits(dtype=torch.int32)
    with pytest.raises(ValueError, match="n_samples=5"):
        load_digits(n_samples=5)
    with pytest.raises(ValueError, match="device="):
        load_digits(device="tpu")
