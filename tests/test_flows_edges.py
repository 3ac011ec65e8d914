"""Continuous normalising flows at their edges: fields that mix the batch, 1-D states,
and data in another dtype than the model. Each ends in a named error or the right answer."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from nodecourse.models import MLPField
from nodecourse.models import _flows as flows
from nodecourse.models._flows import (
    CNF,
    FlowBatchMixingError,
    FlowDtypeError,
    FlowInputError,
    divergence_exact,
    divergence_hutchinson,
    standard_normal_log_prob,
)

F64 = torch.float64


class MixingField(nn.Module):
    """``f(t, z) = W z + (sum over the batch of z)``: row b's output depends on every row."""

    def __init__(self, dim: int = 2):
        super().__init__()
        self.linear = nn.Linear(dim, dim)

    def forward(self, t, z):
        return self.linear(z) + z.sum(dim=0, keepdim=True)


# --- case 8: a field that mixes the batch -------------------------------------------------------------


def test_divergence_of_a_batch_mixing_field_is_refused():
    z = torch.randn(3, 2, dtype=F64, requires_grad=True)
    f_out = z + z.sum(dim=0, keepdim=True)  # per-sample Jacobian block 2 I: per-sample trace 4
    with pytest.raises(FlowBatchMixingError, match="mixes the rows.*cross terms"):
        divergence_exact(f_out, z)
    # what the check prevents: the column sums add every row's cross terms (2 + 1 + 1 per dimension)
    unchecked = divergence_exact(f_out, z, check_batch=False)
    torch.testing.assert_close(unchecked, torch.full((3,), 8.0, dtype=F64))


@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("batch", [1, 2, 64])
def test_a_per_sample_field_passes_the_check_with_the_exact_trace(dtype, batch):
    torch.manual_seed(0)
    field = MLPField(4, (16,), activation="tanh").to(dtype)
    z = torch.randn(batch, 4, dtype=dtype, requires_grad=True)
    f_out = field(None, z)
    div = divergence_exact(f_out, z)
    jac = torch.stack(
        [torch.autograd.functional.jacobian(lambda v: field(None, v[None])[0], z[b].detach()) for b in range(batch)]
    )
    torch.testing.assert_close(div, torch.diagonal(jac, dim1=1, dim2=2).sum(-1))


def test_the_check_sees_mixing_whose_row_sum_cancels():
    # row 0's outputs read row 1 with opposite signs: a probe of ones on row 0 would see 0 there
    z = torch.randn(2, 2, dtype=F64, requires_grad=True)
    f_out = z + torch.stack([z[1] * torch.tensor([1.0, -1.0], dtype=F64), torch.zeros(2, dtype=F64)])
    with pytest.raises(FlowBatchMixingError):
        flows.check_rows_independent(f_out, z)


@pytest.mark.parametrize("trace", ["exact", "hutchinson"])
def test_a_cnf_with_a_mixing_field_is_refused(trace):
    cnf = CNF(2, field=MixingField(), trace=trace)
    with pytest.raises(FlowBatchMixingError):
        cnf.log_prob(torch.randn(5, 2))


def test_the_cnf_checks_once_per_solve(monkeypatch):
    calls = []
    real = flows.check_rows_independent
    monkeypatch.setattr(flows, "check_rows_independent", lambda f_out, z: calls.append(1) or real(f_out, z))
    torch.manual_seed(0)
    cnf = CNF(2, (8,))
    cnf.log_prob(torch.randn(5, 2))
    assert len(calls) == 1 and cnf.dynamics.n_evals > 5
    cnf.sample(4)
    assert len(calls) == 2


def test_hutchinson_is_unchanged_for_a_per_sample_field():
    torch.manual_seed(0)
    field = MLPField(3, (8,), activation="tanh").double()
    z = torch.randn(4, 3, dtype=F64, requires_grad=True)
    probes = flows.sample_probes((2, 4, 3), generator=torch.Generator().manual_seed(1), dtype=F64)
    f_out = field(None, z)
    expected = sum(((torch.autograd.grad(f_out, z, e, retain_graph=True)[0]) * e).sum(1) for e in probes) / 2
    torch.testing.assert_close(divergence_hutchinson(f_out, z, probes), expected)


# --- case 9: standard_normal_log_prob on a 1-D input --------------------------------------------------


def test_a_1d_state_is_refused_with_both_readings():
    with pytest.raises(FlowInputError, match=r"shape \(5,\).*z\[None\] for one sample of dimension 5.*z\[:, None\]"):
        standard_normal_log_prob(torch.randn(5))
    assert isinstance(FlowInputError("x"), ValueError)


def test_log_prob_per_row_and_with_trailing_dimensions():
    z = torch.randn(4, 3, dtype=F64)
    expected = torch.distributions.Normal(0.0, 1.0).log_prob(z).sum(1)
    torch.testing.assert_close(standard_normal_log_prob(z), expected)
    zz = torch.randn(4, 2, 3, dtype=F64)  # one sample per row of the first dimension
    torch.testing.assert_close(standard_normal_log_prob(zz), standard_normal_log_prob(zz.reshape(4, 6)))
    assert standard_normal_log_prob(zz).shape == (4,)
    one = standard_normal_log_prob(torch.zeros(1, 7, dtype=F64))
    torch.testing.assert_close(one, torch.tensor([-3.5 * math.log(2 * math.pi)], dtype=F64))


def test_cnf_log_prob_of_a_1d_input_says_x_none():
    with pytest.raises(FlowInputError, match=r"x has shape \(2,\).*x\[None\]"):
        CNF(2, (8,)).log_prob(torch.randn(2))


# --- case 6 (CNF): data in another dtype than the model -----------------------------------------------


@pytest.mark.parametrize(
    "model_dtype, data_dtype, fixes",
    [
        (torch.float32, F64, ("x.float()", "cnf.double()")),
        (F64, torch.float32, ("x.double()", "cnf.float()")),
    ],
)
def test_data_in_another_dtype_is_named(model_dtype, data_dtype, fixes):
    cnf = CNF(2, (8,)).to(model_dtype)
    with pytest.raises(FlowDtypeError, match=rf"x has dtype {data_dtype}.*parameters are {model_dtype}") as info:
        cnf.log_prob(torch.randn(4, 2, dtype=data_dtype))
    assert all(fix in str(info.value) for fix in fixes)
    assert isinstance(info.value, TypeError) and isinstance(info.value, RuntimeError)
    assert cnf.log_prob(torch.randn(4, 2, dtype=model_dtype)).dtype == model_dtype


def test_sampling_follows_the_model_dtype():
    torch.manual_seed(0)
    cnf = CNF(2, (8,)).double()
    assert cnf.sample(3).dtype == F64
    with pytest.raises(FlowDtypeError, match="dtype=torch.float32 differs.*cnf.float()"):
        cnf.sample(3, dtype=torch.float32)
    assert CNF(2, (8,)).sample(3).dtype == torch.float32
