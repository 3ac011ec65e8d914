"""torchdiffeq's call surface on ``nodecourse.odeint``: every keyword of ``torchdiffeq.odeint`` and
``odeint_adjoint``, and every ``options`` key of torchdiffeq's solvers, is accepted with torchdiffeq's
meaning or refused by name with the spelling used here. The lists are read from torchdiffeq's own
signatures, so an option torchdiffeq adds shows up here."""

import inspect

import pytest
import torch
import torchdiffeq
from torch import nn
from torchdiffeq._impl.rk_common import RKAdaptiveStepsizeODESolver
from torchdiffeq._impl.solvers import AdaptiveStepsizeODESolver, FixedGridODESolver

import nodecourse as nc
from nodecourse.solvers import Status
from nodecourse.validation import UnknownNameError

F64 = torch.float64
Y0 = torch.tensor([1.0, 0.5], dtype=F64)
T = torch.tensor([0.0, 0.5, 1.0], dtype=F64)


class Field(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([[-0.5, 1.0], [-1.0, -0.2]], dtype=F64))

    def forward(self, t, y):
        return torch.tanh(y @ self.w.T)


def decay(t, y):
    return -y


def _signature_names(fn, skip):
    return [n for n in inspect.signature(fn).parameters if n not in skip]


#: torchdiffeq's keywords and what each becomes here (None: a keyword of the same name)
KEYWORDS = _signature_names(torchdiffeq.odeint_adjoint, {"func", "y0", "t"})
OPTION_KEYS = sorted(
    set(_signature_names(RKAdaptiveStepsizeODESolver.__init__, {"self", "func", "y0", "rtol", "atol", "kwargs"}))
    | set(_signature_names(AdaptiveStepsizeODESolver.__init__, {"self", "y0", "unused_kwargs"}))
    | set(_signature_names(FixedGridODESolver.__init__, {"self", "func", "y0", "unused_kwargs"}))
)


def test_the_lists_are_torchdiffeqs_whole_surface():
    assert set(KEYWORDS) == {
        "rtol", "atol", "method", "options", "event_fn",
        "adjoint_rtol", "adjoint_atol", "adjoint_method", "adjoint_options", "adjoint_params",
    }  # fmt: skip
    assert {"step_size", "max_num_steps", "jump_t", "step_t", "perturb", "interp", "grid_constructor"} <= set(
        OPTION_KEYS
    )


# --- every keyword of torchdiffeq.odeint / odeint_adjoint ----------------------------------------------


def _adjoint_grads(**kwargs):
    f = Field()
    y0 = Y0.clone().requires_grad_(True)
    sol = nc.odeint(f, y0, T, gradient="adjoint", **kwargs)
    sol.ys[-1].sum().backward()
    return [y0.grad.clone(), f.w.grad.clone()], sol.stats


@pytest.mark.parametrize("keyword", ["adjoint_rtol", "adjoint_atol", "adjoint_method"])
def test_adjoint_tolerance_and_method_keywords_are_adjoint_options(keyword):
    key, value = keyword.removeprefix("adjoint_"), {"adjoint_rtol": 1e-4, "adjoint_atol": 1e-5}.get(keyword, "bosh3")
    ours, stats = _adjoint_grads(**{keyword: value})
    spelled, stats_spelled = _adjoint_grads(adjoint_options={key: value})
    default, stats_default = _adjoint_grads()
    assert stats["nfe_backward"] == stats_spelled["nfe_backward"] != stats_default["nfe_backward"]
    for a, b in zip(ours, spelled):
        assert torch.equal(a, b)


def test_adjoint_params_is_adjoint_options_params():
    q = torch.tensor(0.7, dtype=F64, requires_grad=True)
    field = lambda t, y: -q * y  # noqa: E731  (a closure: the adjoint needs its tensors named)
    grads = []
    for kwargs in ({"adjoint_params": (q,)}, {"adjoint_options": {"params": (q,)}}, {"adjoint_params": iter([q])}):
        (g,) = torch.autograd.grad(nc.odeint(field, Y0, T, gradient="adjoint", **kwargs).ys[-1].sum(), q)
        grads.append(g)
    (exact,) = torch.autograd.grad(nc.odeint(field, Y0, T).ys[-1].sum(), q)
    assert torch.equal(grads[0], grads[1]) and torch.equal(grads[0], grads[2])
    assert abs(float(grads[0] - exact)) < 1e-6


def test_adjoint_keywords_need_the_adjoint_and_one_spelling():
    with pytest.raises(ValueError, match=r"adjoint_rtol=.*gradient='adjoint'"):
        nc.odeint(decay, Y0, T, adjoint_rtol=1e-4)
    with pytest.raises(ValueError, match=r"adjoint_params=.*gradient='adjoint'"):
        nc.odeint(decay, Y0, T, adjoint_params=())
    with pytest.raises(ValueError, match=r"adjoint_method= and adjoint_options\['method'\] both"):
        nc.odeint(Field(), Y0, T, gradient="adjoint", adjoint_method="bosh3", adjoint_options={"method": "dopri5"})
    with pytest.raises(TypeError, match="adjoint_params="):
        nc.odeint(Field(), Y0, T, gradient="adjoint", adjoint_params="w")


def test_torchdiffeqs_adjoint_options_keys_are_spelled_one_level_down():
    # torchdiffeq's adjoint_options is the backward method's options dict
    with pytest.raises(UnknownNameError, match=r"adjoint_options\['first_step'\].*adjoint_options=\{'options'"):
        nc.odeint(Field(), Y0, T, gradient="adjoint", adjoint_options={"first_step": 0.1})
    with pytest.raises(UnknownNameError, match=r"adjoint_options\['max_num_steps'\].*'max_steps'"):
        nc.odeint(Field(), Y0, T, gradient="adjoint", adjoint_options={"max_num_steps": 10})
    with pytest.raises(UnknownNameError, match=r"adjoint_options\['jump_t'\]"):
        nc.odeint(Field(), Y0, T, gradient="adjoint", adjoint_options={"jump_t": T})
    # step_size and norm mean the same at both places: accepted
    for settings in ({"method": "rk4", "step_size": 0.01}, {"norm": "seminorm"}):
        grads, _ = _adjoint_grads(adjoint_options=settings)
        assert all(torch.isfinite(g).all() for g in grads)


def test_method_none_is_dopri5():
    a = nc.odeint(decay, Y0, T, method=None)
    b = nc.odeint(decay, Y0, T, method="dopri5")
    assert a.method == "dopri5" and torch.equal(a.ys, b.ys)


def test_every_torchdiffeq_keyword_is_understood():
    """Each keyword of odeint_adjoint, called as torchdiffeq would (with gradient='adjoint' for the
    adjoint_* ones): none is an unexpected keyword."""
    values = {
        "rtol": 1e-6,
        "atol": 1e-8,
        "method": "dopri5",
        "options": {"first_step": 0.01},
        "event_fn": lambda t, y: y[0] - 0.5,
        "adjoint_rtol": 1e-6,
        "adjoint_atol": 1e-8,
        "adjoint_method": "dopri5",
        "adjoint_options": {"norm": "seminorm"},
        "adjoint_params": (),
    }
    assert set(values) == set(KEYWORDS)
    for name, value in values.items():
        gradient = "adjoint" if name.startswith("adjoint") else "backprop"
        t = T[:2] if name == "event_fn" else T
        sol = nc.odeint(Field(), Y0, t, gradient=gradient, **{name: value})
        assert sol.status is Status.SUCCESS, name


def test_an_unknown_keyword_is_refused_by_name_with_a_suggestion():
    with pytest.raises(UnknownNameError, match=r"unexpected keyword argument 'rtoll'.*'rtol'"):
        nc.odeint(decay, Y0, T, rtoll=1e-6)
    with pytest.raises(UnknownNameError, match=r"max_num_steps= as a keyword.*max_steps="):
        nc.odeint(decay, Y0, T, max_num_steps=10)
    with pytest.raises(UnknownNameError, match=r"jump_t= as a keyword.*in pieces"):
        nc.odeint(decay, Y0, T, jump_t=T)


# --- every options key of torchdiffeq's solvers ----------------------------------------------------------

#: options keys accepted with torchdiffeq's meaning (the others are refused by name, below)
ACCEPTED = {"first_step", "max_step", "safety", "ifactor", "dfactor", "norm", "step_size", "max_num_steps"}
REFUSED = {
    "min_step": "STEP_UNDERFLOW",
    "step_t": "in pieces",
    "jump_t": "in pieces",
    "perturb": "in pieces",
    "grid_constructor": "step_size=h",
    "interp": "nothing to interpolate",
    "dtype": "y0's dtype",
    "grid_points": "in pieces",
    "eps": "in pieces",
}


def test_every_torchdiffeq_option_key_is_accepted_or_refused():
    assert set(OPTION_KEYS) <= ACCEPTED | set(REFUSED), set(OPTION_KEYS) - ACCEPTED - set(REFUSED)


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_option_without_a_counterpart_is_refused_by_name(key):
    with pytest.raises(UnknownNameError, match=rf"options\['{key}'\] is not a setting here.*{REFUSED[key]}"):
        nc.odeint(decay, Y0, T, options={key: None})


def test_options_step_size_is_the_step_size_keyword():
    a = nc.odeint(decay, Y0, T, method="rk4", options={"step_size": 0.05})
    b = nc.odeint(decay, Y0, T, method="rk4", step_size=0.05)
    assert torch.equal(a.ys, b.ys) and a.stats["n_steps"] == b.stats["n_steps"] == 20
    td = torchdiffeq.odeint(decay, Y0, T, method="rk4", options={"step_size": 0.05})
    c = nc.odeint(decay, Y0, T, method="rk4", options={"step_size": 0.05}, backend="torchdiffeq")
    assert torch.allclose(c.ys, td)
    with pytest.raises(ValueError, match=r"step_size=0.1 and options\['step_size'\]=0.05 disagree"):
        nc.odeint(decay, Y0, T, method="rk4", step_size=0.1, options={"step_size": 0.05})
    with pytest.raises(ValueError, match="step_size=.*only for fixed-step"):
        nc.odeint(decay, Y0, T, method="dopri5", options={"step_size": 0.05})


def test_options_max_num_steps_is_max_steps():
    sol = nc.odeint(decay, Y0, torch.tensor([0.0, 50.0], dtype=F64), options={"max_num_steps": 3}, throw=False)
    assert sol.status is Status.MAX_STEPS and sol.stats["n_steps"] == 3
    with pytest.raises(ValueError, match=r"max_steps=5 and options\['max_num_steps'\]=3 disagree"):
        nc.odeint(decay, Y0, T, max_steps=5, options={"max_num_steps": 3})


@pytest.mark.parametrize("key, value", [("first_step", 0.01), ("max_step", 0.1), ("safety", 0.8), ("dfactor", 0.3)])
def test_shared_options_mean_the_same_as_in_torchdiffeq(key, value):
    ours = nc.odeint(decay, Y0, T, options={key: value}, rtol=1e-8, atol=1e-10)
    theirs = torchdiffeq.odeint(decay, Y0, T, options={key: value}, rtol=1e-8, atol=1e-10)
    assert torch.allclose(ours.ys, theirs, rtol=1e-6, atol=1e-8)
