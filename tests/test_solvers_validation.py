"""Every bad argument to odeint raises a clear error naming the argument, the value and the fix."""

from __future__ import annotations

import pytest
import torch

from nodecourse import odeint

F = lambda t, y: -y
Y0 = torch.ones(2)
T = torch.tensor([0.0, 1.0])

CASES = [
    # (kwargs overriding a good call, exception type, regex that must appear in the message)
    ({"func": 3}, TypeError, r"func=3 must be a callable \(a function or nn.Module f\(t, y\) -> dy/dt\), not int"),
    ({"y0": [1.0, 2.0]}, TypeError, r"y0 must be a torch.Tensor.*list"),
    ({"y0": torch.ones(2, dtype=torch.int64)}, TypeError, r"y0 has dtype torch.int64.*y0.float\(\)"),
    ({"y0": torch.ones(0)}, ValueError, r"y0 has shape \(0,\)"),
    ({"y0": torch.tensor([1.0, float("nan")])}, ValueError, r"y0 contains NaN"),
    ({"t": [0.0, 1.0]}, TypeError, r"t must be a 1-D torch.Tensor.*torch.tensor\(t"),
    ({"t": torch.ones(2, 2)}, ValueError, r"t must be 1-D.*shape \(2, 2\)"),
    ({"t": torch.tensor([0, 1])}, TypeError, r"t has dtype torch.int64"),
    ({"t": torch.tensor([0.0, 1.0, 1.0])}, ValueError, r"t\[1\]=1.0 and t\[2\]=1.0 repeat a time.*skip that solve"),
    ({"t": torch.tensor([0.5, 0.5])}, ValueError, r"zero length.*Skip the solve"),
    ({"t": torch.tensor([0.0, 1.0, 0.5])}, ValueError, r"strictly.*t\[1\]=1.0, t\[2\]=0.5"),
    ({"t": torch.tensor([0.0, float("inf")])}, ValueError, r"t contains NaN or inf"),
    ({"t": torch.empty(2, device="meta")}, ValueError, r"t is on device meta but y0 is on cpu.*t.to\(y0.device\)"),
    ({"method": "rk45"}, ValueError, r"method='rk45' is not a registered solver; valid names: euler, midpoint, rk4"),
    ({"method": "rk4"}, ValueError, r"method='rk4' is a fixed-step method and needs step_size"),
    ({"step_size": 0.1}, ValueError, r"step_size=0.1 is only for fixed-step.*first_step"),
    (
        {"method": "euler", "step_size": -0.1},
        ValueError,
        r"step_size=-0.1 is out of range: it must be > 0 \(the largest step\) or None.*e.g. step_size=0.01",
    ),
    ({"rtol": 0.0}, ValueError, r"rtol=0.0 is out of range: it must be in \(0, 1\) \(default 1e-07\); e.g. rtol=1e-6"),
    ({"atol": -1e-9}, ValueError, r"atol=-1e-09 is out of range: it must be > 0 \(default 1e-09\); e.g. atol=1e-8"),
    ({"rtol": "1e-3"}, TypeError, r"rtol='1e-3' must be a real number in \(0, 1\), not str"),
    (
        {"max_steps": 0},
        ValueError,
        r"max_steps=0 is out of range: it must be >= 1 \(default 10000\); e.g. max_steps=10_000",
    ),
    ({"max_steps": 10.5}, TypeError, r"max_steps=10.5 must be an int"),
    ({"gradient": "checkpoint", "per_sample": True, "y0": torch.ones(2, 1)}, ValueError, r"per_sample=True"),
    ({"gradient": "checkpoint", "backend": "torchdiffeq"}, ValueError, r"backend='torchdiffeq'"),
    (
        {"gradient": "magic"},
        ValueError,
        r"gradient='magic' is not one of \['backprop', 'adjoint', 'checkpoint', 'reversible'\]",
    ),
    ({"backend": "scipy"}, ValueError, r"backend='scipy' is not one of \['nodecourse', 'torchdiffeq'\]"),
    ({"throw": "yes"}, TypeError, r"throw='yes' must be True or False"),
    (
        {"per_sample": True, "method": "rk4", "step_size": 0.1},
        ValueError,
        r"per_sample=True works with the adaptive methods",
    ),
    ({"per_sample": True, "y0": torch.tensor(1.0)}, ValueError, r"per_sample=True needs y0 with a batch dimension"),
    ({"per_sample": True, "backend": "torchdiffeq"}, ValueError, r"per_sample=True needs backend='nodecourse'"),
    (
        {"options": {"safty": 0.8}},
        TypeError,
        r"options keys \['safty'\] are not understood by method='dopri5'; known keys: safety",
    ),
    (
        {"method": "euler", "step_size": 0.1, "options": {"safety": 0.8}},
        TypeError,
        r"options keys \['safety'\] are not understood by method='euler'; known keys: none",
    ),
    (
        {"options": {"safety": -1}},
        ValueError,
        r"options\['safety'\]=-1 is out of range: it must be in \(0, 1\] \(default 0.9\)",
    ),
    ({"options": "fast"}, TypeError, r"options='fast' must be a dict"),
    (
        {"method": "trapezoid", "options": {"max_newton_iters": 0}},
        ValueError,
        r"options\['max_newton_iters'\]=0 is out of range: it must be >= 1",
    ),
    (
        {"method": "trapezoid", "backend": "torchdiffeq"},
        ValueError,
        r"method='trapezoid' has no torchdiffeq counterpart",
    ),
]


@pytest.mark.parametrize("override,exc,pattern", CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_arguments_raise_clear_errors(override, exc, pattern):
    kwargs = {"func": F, "y0": Y0, "t": T}
    kwargs.update(override)
    func, y0, t = kwargs.pop("func"), kwargs.pop("y0"), kwargs.pop("t")
    with pytest.raises(exc, match=pattern):
        odeint(func, y0, t, **kwargs)


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError):
        odeint(F, Y0, T, tolerance=1e-3)


def test_single_time_returns_initial_state():
    sol = odeint(F, Y0, torch.tensor([0.0]))
    assert sol.ys.shape == (1, 2) and torch.equal(sol.ys[0], Y0) and sol.success


@pytest.mark.parametrize(
    "method,kw", [("dopri5", {}), ("rk4", {"step_size": 0.1}), ("trapezoid", {}), ("dopri5", {"per_sample": True})]
)
def test_func_output_of_wrong_shape_is_named(method, kw):
    y0 = torch.ones(3, 1)
    bad = lambda t, y: y * torch.ones(3)  # (3, 1) * (3,) broadcasts to (3, 3)
    with pytest.raises(ValueError, match=r"func\(t, y\) returned shape \(3, 3\) for y of shape \(3, 1\)"):
        odeint(bad, y0, T, method=method, **kw)
    with pytest.raises(TypeError, match=r"func\(t, y\) returned float"):
        odeint(lambda t, y: 1.0, y0, T, method=method, **kw)
