"""on_step sees the solver's own state tensors: changing them in place is an error naming on_step
(not a SUCCESS with a wrong answer); reading them is free."""

from __future__ import annotations

import pytest
import torch

from nodecourse.solvers import odeint
from nodecourse.solvers._record import StepEventModifiedError


def decay(t, y):
    return -y


@pytest.mark.parametrize(
    "kw",
    [
        dict(method="dopri5"),
        dict(method="rk4", step_size=0.1),
        dict(method="dopri5", per_sample=True),
        dict(method="dopri5", gradient="checkpoint"),
    ],
    ids=["dopri5", "rk4", "per_sample", "checkpoint"],
)
def test_on_step_changing_the_event_in_place_is_named(kw):
    def scale(event):
        event.y1.mul_(2.0)

    with pytest.raises(StepEventModifiedError, match="on_step changed"):
        odeint(decay, torch.ones(2, 3), torch.tensor([0.0, 1.0]), on_step=scale, **kw)


def test_on_step_that_only_reads_leaves_the_answer_alone():
    seen = []
    ys = odeint(
        decay,
        torch.ones(2, 3),
        torch.tensor([0.0, 1.0]),
        on_step=lambda e: seen.append(float(e.y1[0, 0])),
        rtol=1e-6,
        atol=1e-8,
    ).ys
    assert seen and torch.allclose(ys[-1], torch.full((2, 3), torch.exp(torch.tensor(-1.0)).item()), rtol=1e-6)
