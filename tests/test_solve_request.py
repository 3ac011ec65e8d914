"""One checked settings object through every gradient route: :class:`SolveRequest`.

``odeint`` builds the request once; the adjoint and checkpoint routes derive their backward and replayed
solves from it with ``dataclasses.replace`` and call ``odeint`` back with :meth:`SolveRequest.keywords`.
A setting ``odeint`` gains must reach those solves, and ``check_adjoint_options`` reads the forward
settings from a request and from the model-facing ``SolveConfig`` alike.
"""

import dataclasses
import inspect

import torch

from nodecourse import SolveConfig, odeint
from nodecourse.solvers._odeint import solve_again
from nodecourse.solvers._request import SolveRequest
from nodecourse.solvers._validate import check_adjoint_options

#: odeint's keywords that are not settings of one solve: the event search (its own route) and
#: torchdiffeq's spellings, which odeint folds into adjoint_options before the request is built.
NOT_SETTINGS = {"event_fn", "adjoint_params"}


def _defaults() -> dict:
    return dict(method="dopri5", rtol=1e-6, atol=1e-8, step_size=None, max_steps=100)


def test_request_keywords_are_odeints_settings():
    params = inspect.signature(odeint).parameters
    settings = {
        name for name, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in NOT_SETTINGS
    }
    req = SolveRequest(func=lambda t, y: -y, y0=torch.ones(2), t=torch.tensor([0.0, 1.0]), **_defaults())
    assert set(req.keywords()) == settings


def test_a_replaced_request_solves_as_odeint_with_those_settings():
    t = torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64)
    y0 = torch.tensor([1.0, 2.0], dtype=torch.float64)
    req = SolveRequest(func=lambda t, y: -y, y0=y0, t=t, **_defaults())
    fixed = dataclasses.replace(req, method="rk4", step_size=0.25)
    got = solve_again(fixed)
    want = odeint(lambda t, y: -y, y0, t, method="rk4", step_size=0.25, rtol=1e-6, atol=1e-8, max_steps=100)
    assert torch.equal(got.ys, want.ys)
    assert got.stats["nfe"] == want.stats["nfe"] == 4 * 4
    assert got.method == "rk4"


def test_check_adjoint_options_reads_a_config_and_a_request_alike():
    config = SolveConfig(gradient="adjoint", rtol=1e-4, atol=1e-6, adjoint_options={"atol": 1e-5})
    req = SolveRequest(
        func=lambda t, y: -y,
        y0=torch.ones(2),
        t=torch.tensor([0.0, 1.0]),
        method="dopri5",
        rtol=1e-4,
        atol=1e-6,
        step_size=None,
        max_steps=10_000,
        gradient="adjoint",
        adjoint_options={"atol": 1e-5},
    )
    from_config, from_request = check_adjoint_options(config), check_adjoint_options(req, y0=req.y0)
    assert from_config == from_request
    assert from_request is not None
    assert (from_request["rtol"], from_request["atol"], from_request["method"]) == (1e-4, 1e-5, "dopri5")
