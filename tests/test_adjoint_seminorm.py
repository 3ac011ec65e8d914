"""adjoint_options={'norm': 'seminorm'}: the backward error norm leaves out the parameter-gradient
channels; fewer backward evaluations, the same gradient to the tolerance, as torchdiffeq's."""

from __future__ import annotations

import pytest
import torch

from nodecourse import SolveConfig, odeint
from nodecourse.models import MLPField

F64 = torch.float64
T01 = torch.tensor([0.0, 1.0], dtype=F64)


def _setup(seed=0):
    torch.manual_seed(seed)
    field = MLPField(2, hidden=(32,), activation="tanh").to(F64)
    return field, torch.randn(16, 2, dtype=F64)


def _run(field, y0, norm, **kw):
    field.zero_grad(set_to_none=True)
    sol = odeint(field, y0, T01, rtol=1e-6, atol=1e-6, gradient="adjoint", adjoint_options={"norm": norm}, **kw)
    sol.ys[-1].pow(2).sum().backward()
    return torch.cat([p.grad.flatten() for p in field.parameters()]), sol.stats


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_seminorm_saves_backward_evaluations_and_keeps_the_gradient(seed):
    field, y0 = _setup(seed)
    g_full, s_full = _run(field, y0, None)
    g_semi, s_semi = _run(field, y0, "seminorm")
    assert s_semi["nfe"] == s_full["nfe"]  # the forward solve is untouched
    assert s_semi["nfe_backward"] < s_full["nfe_backward"]
    assert float((g_semi - g_full).norm() / g_full.norm()) < 1e-4


def test_seminorm_against_torchdiffeq_where_they_overlap():
    torchdiffeq = pytest.importorskip("torchdiffeq")
    field, y0 = _setup(0)
    g_ours, s_ours = _run(field, y0, "seminorm")

    calls = {"n": 0}

    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = field

        def forward(self, t, y):
            calls["n"] += 1
            return self.inner(t, y)

    counting = Counting()
    field.zero_grad(set_to_none=True)
    out = torchdiffeq.odeint_adjoint(
        counting, y0, T01, rtol=1e-6, atol=1e-6, method="dopri5", adjoint_options=dict(norm="seminorm")
    )
    forward_calls = calls["n"]
    out[-1].pow(2).sum().backward()
    g_td = torch.cat([p.grad.flatten() for p in field.parameters()])
    backward_calls = calls["n"] - forward_calls
    assert float((g_ours - g_td).norm() / g_td.norm()) < 1e-4
    # another error estimator (see SOLVERS['dopri5']): counts agree within a third, not exactly
    assert abs(s_ours["nfe_backward"] - backward_calls) <= 0.35 * backward_calls, (
        s_ours["nfe_backward"],
        backward_calls,
    )


def test_seminorm_with_a_forward_norm_measures_state_and_adjoint_with_it():
    field, y0 = _setup(0)
    norm = lambda x: x.abs().max()  # noqa: E731
    _, s_full = _run(field, y0, None, options={"norm": norm})
    _, s_semi = _run(field, y0, "seminorm", options={"norm": norm})
    assert s_semi["nfe_backward"] <= s_full["nfe_backward"]


@pytest.mark.parametrize(
    "adjoint_options,pattern",
    [
        ({"norm": "semi"}, r"adjoint_options\['norm'\]='semi' is not valid"),
        ({"norm": 2}, r"adjoint_options\['norm'\]=2 must be"),
        ({"norm": "seminorm", "method": "rk4", "step_size": 0.1}, r"has none"),
        ({"norm": "seminorm", "options": {"norm": lambda x: x.abs().max()}}, r"give one of them"),
    ],
)
def test_bad_norm_settings_are_named(adjoint_options, pattern):
    field, y0 = _setup(0)
    with pytest.raises((TypeError, ValueError), match=pattern):
        odeint(field, y0, T01, gradient="adjoint", adjoint_options=adjoint_options)


def test_seminorm_needs_the_adjoint_and_travels_in_a_solve_config():
    with pytest.raises(ValueError, match="adjoint_options are for gradient='adjoint'"):
        odeint(lambda t, y: -y, torch.ones(1, dtype=F64), T01, adjoint_options={"norm": "seminorm"})
    config = SolveConfig(gradient="adjoint", adjoint_options={"norm": "seminorm"})
    assert config.odeint_kwargs()["adjoint_options"] == {"norm": "seminorm"}
