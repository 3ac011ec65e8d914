"""One status type per kind of solve, in every ``stats``: an enum that is also its string.

``odeint``'s ``Solution.status`` and ``stats["backward_status"]`` are :class:`Status`; a DEQ's
``stats["forward_status"]`` and ``["backward_status"]`` are :class:`FixedPointStatus` (they were the
bare strings ``'success'`` before). Both compare equal to their value and serialise as it, so code that
wrote ``status == "success"`` keeps working.
"""

from __future__ import annotations

import json

import torch

from nodecourse import DEQ, Status, odeint
from nodecourse.deq import FixedPointStatus


def test_a_deq_reports_its_statuses_as_fixed_point_statuses():
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 3)
    with torch.no_grad():
        layer.weight.mul_(0.3)
    deq = DEQ(lambda z, x: torch.tanh(layer(z)) + x, method="anderson", state=3)
    x = torch.randn(4, 3, requires_grad=True)
    deq(x).sum().backward()
    for key in ("forward_status", "backward_status"):
        status = deq.stats[key]
        assert isinstance(status, FixedPointStatus), (key, type(status))
        assert status is FixedPointStatus.SUCCESS and status == "success"
    assert json.loads(json.dumps(deq.stats["forward_status"])) == "success"


def test_an_odeint_backward_status_is_a_status_that_equals_its_value():
    y0 = torch.tensor([1.0], requires_grad=True)
    sol = odeint(lambda t, y: -y, y0, torch.tensor([0.0, 1.0]), method="dopri5", gradient="adjoint")
    sol.ys[-1].sum().backward()
    status = sol.stats["backward_status"]
    assert isinstance(status, Status) and status is Status.SUCCESS
    assert status == "success" and str(status) == "success" and f"{status}" == "success"
    assert sol.status == "success" and Status.MAX_STEPS != "success"
