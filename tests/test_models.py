"""Lesson-1 models: matched parameter counts, step-count evaluation, activation memory, training."""

import pytest
import torch

from nodecourse.measure import saved_activation_bytes
from nodecourse.models import (
    ODENetClassifier,
    ResidualStack,
    ResNetClassifier,
    accuracy,
    accuracy_vs_steps,
    count_parameters,
    matched_field_width,
    train_classifier,
)


def test_matched_parameter_count():
    width, blocks, hidden = 32, 4, 64
    resnet = ResNetClassifier(width=width, n_blocks=blocks, hidden=hidden)
    odenet = ODENetClassifier(width=width, hidden=matched_field_width(width, blocks, hidden))
    p_res, p_ode = count_parameters(resnet), count_parameters(odenet)
    assert abs(p_res - p_ode) / p_res < 0.01


def test_odenet_with_euler_and_one_step_per_unit_is_a_weight_tied_resnet():
    torch.manual_seed(0)
    model = ODENetClassifier(width=8, hidden=16, n_steps=3, t1=3.0).double()
    stack = ResidualStack(8, n_blocks=3, hidden=(16,), shared=True).double()
    stack.fields[0].load_state_dict(model.ode.field.state_dict())
    x = torch.randn(5, 64, dtype=torch.float64)
    expected = model.readout(stack(model.embed(x)))
    assert torch.allclose(model(x), expected, atol=1e-12)
    assert model.ode.last_stats["nfe"] == 3


def test_evaluate_with_other_step_counts_reports_work():
    torch.manual_seed(0)
    model = ODENetClassifier(width=8, hidden=16, n_steps=4)
    x, y = torch.randn(20, 64), torch.randint(0, 10, (20,))
    out = accuracy_vs_steps(model, x, y, steps=(1, 2, 8))
    assert [out[n]["nfe"] for n in (1, 2, 8)] == [1, 2, 8]
    assert all(0.0 <= v["accuracy"] <= 1.0 for v in out.values())
    # More Euler steps converge to the ODE's flow: 64 and 128 steps agree far better than 1 and 2.
    with torch.no_grad():
        d_coarse = (model(x, n_steps=1) - model(x, n_steps=2)).abs().max()
        d_fine = (model(x, n_steps=64) - model(x, n_steps=128)).abs().max()
    assert d_fine < d_coarse / 10
    with pytest.raises(ValueError, match="n_steps=0"):
        model(x, n_steps=0)
    with pytest.raises(TypeError, match="ResNetClassifier"):
        accuracy_vs_steps(ResNetClassifier(), x, y)


def test_saved_activation_bytes_grows_linearly_with_steps():
    torch.manual_seed(0)
    x = torch.randn(32, 64)
    mem = {n: saved_activation_bytes(ODENetClassifier(width=16, hidden=32, n_steps=n), x) for n in (2, 4, 8)}
    per_step = (mem[4] - mem[2]) / 2
    # Each Euler step saves the same activations: memory is affine in the step count.
    assert mem[8] - mem[2] == 6 * per_step
    # At least the tanh output of one step (32 rows x 32 hidden, float32) is saved per step.
    assert per_step >= 32 * 32 * 4


def test_training_reduces_loss_and_fits_a_separable_task():
    torch.manual_seed(0)
    x = torch.randn(200, 64)
    y = (x[:, 0] > 0).long()
    model = ResNetClassifier(width=8, n_blocks=2, hidden=8)
    losses = train_classifier(model, x, y, epochs=60, progress=False)
    assert losses[-1] < 0.5 * losses[0]
    assert accuracy(model(x), y) > 0.9
    with pytest.raises(ValueError, match="epochs=0"):
        train_classifier(model, x, y, epochs=0)
