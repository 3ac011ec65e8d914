"""Inputs that used to fail deep inside torch with a raw error now fail at the boundary with an error
that names the argument and the fix."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nodecourse.deq import DEQ, fixed_point
from nodecourse.deq._layer import DEQInputError
from nodecourse.models import MLPField, ODEBlock
from nodecourse.solvers import odeint
from nodecourse.solvers._field_checks import PerSampleTimeError
from nodecourse.validation import WrongTypeError


def test_a_per_sample_field_that_does_not_broadcast_t_is_named():
    with pytest.raises(PerSampleTimeError, match=r"t has shape \(3,\).*t\[:, None\]"):
        odeint(lambda t, y: t * y, torch.ones(3, 2), torch.tensor([0.0, 1.0]), per_sample=True)


def test_a_per_sample_field_failing_for_another_reason_keeps_its_error():
    def broken(t, y):
        raise RuntimeError("the field's own bug")

    with pytest.raises(RuntimeError, match="the field's own bug") as info:
        odeint(broken, torch.ones(3, 2), torch.tensor([0.0, 1.0]), per_sample=True)
    assert not isinstance(info.value, PerSampleTimeError)


@pytest.mark.parametrize("t1, match", [("1", "t1='1' must be a real number > 0"), (0.0, "t1=0.0"), (-1, "t1=-1")])
def test_odeblock_t1_is_checked_by_name(t1, match):
    with pytest.raises((TypeError, ValueError), match=match):
        ODEBlock(MLPField(2), t1=t1)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(dim=True), "dim=True"),
        (dict(dim=0), "dim=0"),
        (dict(dim=2, hidden=(32, True)), "hidden="),
        (dict(dim=2, time_dependent="yes"), "time_dependent"),
    ],
)
def test_mlpfield_arguments_are_checked_by_name(kw, match):
    with pytest.raises((TypeError, ValueError), match=match):
        MLPField(**kw)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("method", ["picard", "anderson", "broyden"])
def test_fixed_point_refuses_half_precision_by_name(dtype, method):
    with pytest.raises(WrongTypeError, match=r"z0 has dtype.*z0.float\(\)"):
        fixed_point(lambda z: 0.5 * z + 1, torch.zeros(2, 3, dtype=dtype), method=method)


class Field(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, z, x):
        return torch.tanh(self.lin(z) + x)


@pytest.mark.parametrize(
    "state, match",
    [
        (lambda x: torch.zeros(x.shape[0], 5), r"state callable \(shape \(2, 5\)"),  # f cannot take it
        (lambda x: torch.zeros(7, 3), r"state callable returned shape \(7, 3\)"),  # wrong batch
        (lambda x: [0.0], "state callable returned list"),
    ],
)
def test_a_deq_state_callable_of_the_wrong_shape_is_named(state, match):
    with pytest.raises(DEQInputError, match=match):
        DEQ(Field(), state=state)(torch.ones(2, 3))


def test_a_deq_state_callable_of_the_right_shape_runs():
    z = DEQ(Field(), state=lambda x: x.new_zeros(x.shape[0], 3), warn=False)(torch.ones(2, 3))
    assert z.shape == (2, 3)
