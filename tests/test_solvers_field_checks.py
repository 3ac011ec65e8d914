"""Fields that used to give a silent wrong answer or a raw traceback: an update of ``y``
in place, a field that mixes the batch rows in per-sample mode, a field whose tensors have another
dtype than ``y0``, and a field that does not depend on ``y`` in every gradient mode."""

import math

import pytest
import torch
from torch import nn

from nodecourse import odeint
from nodecourse.solvers._field_checks import (
    BatchMixingError,
    FieldMismatchError,
    InPlaceFieldError,
    replayed_rng,
    rng_state,
)

F64 = torch.float64
T = torch.linspace(0.0, 1.0, 5, dtype=F64)

MODES = [
    ("dopri5", {}),
    ("bosh3", {}),
    ("rk4", {"step_size": 0.1}),
    ("euler", {"step_size": 0.1}),
    ("implicit_euler", {}),
    ("trapezoid", {"step_size": 0.1}),
    ("dopri5", {"per_sample": True}),
    ("dopri5", {"gradient": "adjoint"}),
    ("dopri5", {"gradient": "checkpoint"}),
    ("rk4", {"step_size": 0.1, "gradient": "checkpoint"}),
]


# ---------------------------------------------------------------- in place


def _doubles_in_place(t, y):
    y.mul_(2)
    return y


def _adds_in_place(t, y):
    y += torch.cos(t)
    return -y


@pytest.mark.parametrize("field", [_doubles_in_place, _adds_in_place])
@pytest.mark.parametrize("method,kw", MODES)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_a_field_that_changes_y_in_place_is_named_and_y0_is_kept(field, method, kw, requires_grad):
    y0 = torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=F64, requires_grad=requires_grad)
    before = y0.detach().clone()
    with pytest.raises(InPlaceFieldError, match=r"changed y in place.*return 2 \* y"):
        odeint(field, y0, T, method=method, **kw)
    assert torch.equal(y0.detach(), before)  # the caller's tensor is as it was
    assert y0._version == 0


def test_an_update_in_place_on_a_later_call_is_caught_at_that_call():
    calls = []

    def later(t, y):
        calls.append(1)
        if len(calls) == 5:
            y.add_(1.0)
        return -y

    with pytest.raises(InPlaceFieldError):
        odeint(later, torch.ones(3, dtype=F64), T)
    assert len(calls) == 5


def test_in_place_work_on_the_fields_own_tensors_is_fine():
    def f(t, y):
        out = -y
        out.mul_(2.0)  # a new tensor, changed in place: allowed
        return out

    sol = odeint(f, torch.ones(2, dtype=F64), T, rtol=1e-9, atol=1e-11)
    assert torch.allclose(sol.ys[-1], torch.full((2,), math.exp(-2.0), dtype=F64), rtol=1e-7)


def test_in_place_is_caught_under_inference_mode_too():
    """Inference tensors carry no version counter: the first call compares values instead."""
    y0 = torch.ones(2)
    with torch.inference_mode():
        with pytest.raises(InPlaceFieldError):
            odeint(_doubles_in_place, y0, torch.tensor([0.0, 1.0]))
        assert odeint(lambda t, y: -y, y0, torch.tensor([0.0, 1.0])).success
    assert torch.equal(y0, torch.ones(2))


# ---------------------------------------------------------------- per_sample: rows kept apart


def _mean_field(t, y):
    return y.mean(0, keepdim=True).expand_as(y) - y


def test_per_sample_refuses_a_field_that_mixes_rows():
    y0 = torch.randn(8, 2, dtype=F64, generator=torch.Generator().manual_seed(0))
    batch = odeint(_mean_field, y0, T)  # the batch solve is fine
    assert batch.success
    with pytest.raises(BatchMixingError, match=r"per_sample=True.*mixes the rows.*per_sample=False"):
        odeint(_mean_field, y0, T, per_sample=True)


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_per_sample_probe_sees_a_mean_over_a_large_batch(dtype):
    y0 = torch.randn(512, 16, dtype=dtype, generator=torch.Generator().manual_seed(1))
    with pytest.raises(BatchMixingError):
        odeint(_mean_field, y0, T.to(dtype), per_sample=True)


def test_per_sample_probe_sees_mixing_when_all_rows_are_equal():
    with pytest.raises(BatchMixingError):
        odeint(_mean_field, torch.ones(4, 3, dtype=F64), T, per_sample=True)


def test_per_sample_batchnorm_in_training_mode_is_refused_and_in_eval_mode_runs():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3)).double()
    field = lambda t, y: net(y)  # noqa: E731
    y0 = torch.randn(6, 3, dtype=F64)
    with pytest.raises(BatchMixingError):
        odeint(field, y0, T, per_sample=True)
    net.eval()
    assert odeint(field, y0, T, per_sample=True).success


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_per_sample_row_wise_field_passes_the_probe_and_it_is_counted(dtype):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 16)).to(dtype)
    calls = []

    def field(t, y):
        calls.append(1)
        return net(y) * torch.cos(t).reshape(-1, 1)  # t: (B,) per sample, 0-d for the batch solve

    y0 = torch.randn(512, 16, dtype=dtype)
    sol = odeint(field, y0, T.to(dtype), per_sample=True, rtol=1e-5, atol=1e-6)
    assert sol.stats["nfe_setup"] == 1
    assert len(calls) == sol.stats["nfe"] + sol.stats["nfe_setup"]
    whole = odeint(field, y0, T.to(dtype), rtol=1e-5, atol=1e-6)
    assert "nfe_setup" not in whole.stats


def test_per_sample_probe_replays_the_random_draws_of_a_field_with_dropout():
    """Dropout in training mode draws a new mask per call: the probe draws the first call's mask
    again, so a row-wise field with dropout passes, and a mixing one is still caught."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 16), nn.Dropout(0.5), nn.Tanh(), nn.Linear(16, 3)).double().train()
    y0 = torch.randn(5, 3, dtype=F64)
    opts = dict(per_sample=True, rtol=1e-3, atol=1e-4, throw=False)  # a random field: any status will do
    odeint(lambda t, y: net(y), y0, T, **opts)
    with pytest.raises(BatchMixingError):
        odeint(lambda t, y: net(y) + y.mean(0), y0, T, **opts)


def test_the_probe_draws_the_first_calls_numbers_and_leaves_the_random_stream_as_it_was():
    cpu = torch.device("cpu")
    torch.manual_seed(1)
    state = rng_state(cpu)
    first = torch.rand(3)  # what the first call drew
    with replayed_rng(state, cpu):
        probe = torch.rand(3)  # the probe draws the same
    after = torch.rand(3)
    torch.manual_seed(1)
    torch.rand(3)
    assert torch.equal(first, probe) and torch.equal(after, torch.rand(3))  # as if the probe drew nothing


def test_per_sample_with_one_row_needs_no_probe():
    sol = odeint(lambda t, y: -y, torch.ones(1, 2, dtype=F64), T, per_sample=True)
    assert "nfe_setup" not in sol.stats


# ---------------------------------------------------------------- dtype of the field's tensors


@pytest.mark.parametrize("gradient", ["backprop", "adjoint", "checkpoint"])
@pytest.mark.parametrize(
    "module_dtype,y0_dtype,fix",
    [
        (torch.float32, F64, r"y0\.float\(\) or func\.double\(\)"),
        (F64, torch.float32, r"y0\.double\(\) or func\.float\(\)"),
    ],
)
def test_a_module_in_another_dtype_than_y0_is_named(gradient, module_dtype, y0_dtype, fix):
    class Field(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2).to(module_dtype)

        def forward(self, t, y):
            return self.lin(y)

    y0 = torch.ones(2, dtype=y0_dtype, requires_grad=True)
    with pytest.raises(FieldMismatchError, match=rf"parameter 'lin.weight'\) has dtype {module_dtype}.*{fix}") as info:
        odeint(Field(), y0, T.to(y0_dtype), gradient=gradient)
    assert isinstance(info.value, TypeError) and isinstance(info.value, RuntimeError)  # RuntimeError: what it was


def test_a_function_that_uses_a_module_in_another_dtype_names_that_module():
    lin = nn.Linear(2, 2)  # float32

    with pytest.raises(FieldMismatchError, match=r"lin \(parameter 'weight'\) .* y0\.float\(\) or lin\.double\(\)"):
        odeint(lambda t, y: lin(y), torch.ones(2, dtype=F64), T)


def test_a_module_on_another_device_than_y0_is_named():
    lin = nn.Linear(2, 2, device="meta")  # another device, on any machine

    with pytest.raises(
        FieldMismatchError,
        match=r"lin \(parameter 'weight'\) .* on meta, but y0 .* on cpu.*"
        r"lin\.to\('cpu'\)",
    ):
        odeint(lambda t, y: lin(y), torch.ones(2), torch.tensor([0.0, 1.0]))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_the_field_checks_on_cuda():
    y0 = torch.randn(64, 4, device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    t = torch.tensor([0.0, 1.0], device="cuda")
    net = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 4)).cuda()
    assert odeint(lambda tt, y: net(y), y0, t, per_sample=True).success  # row-wise: passes the probe
    with pytest.raises(BatchMixingError):
        odeint(_mean_field, y0, t, per_sample=True)
    before = y0.clone()
    with pytest.raises(InPlaceFieldError):
        odeint(_doubles_in_place, y0, t)
    assert torch.equal(y0, before)
    with pytest.raises(FieldMismatchError, match=r"on cuda"):
        odeint(lambda tt, y: net(y), y0.cpu(), t.cpu())


def test_a_field_error_unrelated_to_dtype_stays_as_it_was():
    def broken(t, y):
        raise RuntimeError("my own bug")

    with pytest.raises(RuntimeError, match="my own bug") as info:
        odeint(broken, torch.ones(2, dtype=F64), T)
    assert not isinstance(info.value, FieldMismatchError)


# ---------------------------------------------------------------- fields that ignore y


class _CosField(nn.Module):
    """``dy/dt = w cos t`` for every entry: ``y(t) = y0 + w (sin t - sin t0)``."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(0.5, dtype=F64))

    def forward(self, t, y):
        return self.w * torch.cos(t) * torch.ones_like(y)


@pytest.mark.parametrize("gradient", ["backprop", "adjoint", "checkpoint"])
@pytest.mark.parametrize("time_grad", [False, True])
@pytest.mark.parametrize("with_params", [False, True])
def test_every_gradient_mode_works_for_a_field_that_ignores_y(gradient, time_grad, with_params):
    module = _CosField()
    field = module if with_params else (lambda t, y: torch.cos(t) * torch.ones_like(y))
    w = float(module.w.detach()) if with_params else 1.0
    y0 = torch.tensor([1.0, -1.0], dtype=F64, requires_grad=True)
    t = T.clone().requires_grad_(time_grad)
    sol = odeint(field, y0, t, gradient=gradient, rtol=1e-10, atol=1e-12)
    assert torch.allclose(sol.ys, y0.detach() + w * (torch.sin(T) - math.sin(0.0))[:, None], atol=1e-9)
    sol.ys.sum().backward()
    # L = sum_i sum_k y_k(t_i): dL/dy0 = len(t) per entry, dL/dt_i = 2 w cos t_i, dL/dt_0 = -2 w (len(t)-1) cos t_0
    assert torch.allclose(y0.grad, torch.full((2,), float(len(T)), dtype=F64))
    if time_grad:
        expect = 2 * w * torch.cos(T)
        expect[0] = -2 * w * (len(T) - 1) * math.cos(0.0)
        assert torch.allclose(t.grad, expect, atol=1e-8)
    if with_params:
        assert math.isclose(float(module.w.grad), 2 * float((torch.sin(T) - math.sin(0.0)).sum()), rel_tol=1e-7)
