"""Solver library v2: the shared step control, the step record, checked tableaux and options,
precision, per-evaluation shape checks, failure diagnoses, per-sample status and the
torchdiffeq backend's status. Each reproduction from the issue is a test here."""

from __future__ import annotations

import math
import re

import pytest
import torch

from nodecourse import SOLVERS, SolverError, Status, odeint
from nodecourse.solvers import ButcherTableau
from nodecourse.solvers._registry import ADAPTIVE, FIXED, IMPLICIT, spec_for
from nodecourse.solvers._tableaux import RK4, RK38

F64 = torch.float64
T01 = torch.tensor([0.0, 1.0], dtype=F64)
DECAY = lambda t, y: -y  # noqa: E731
ALL_METHODS = [(n, {"step_size": 0.05} if s.kind == FIXED else {}) for n, s in SOLVERS.items()]


def _time_in(message: str) -> float:
    return float(re.search(r"at t=([-0-9.e+]+)", message).group(1))


# ---------------------------------------------------------------- the step record


@pytest.mark.parametrize("method,kw", ALL_METHODS)
def test_step_record_matches_stats_and_chains(method, kw):
    t = torch.linspace(0.0, 2.0, 5, dtype=F64)
    sol = odeint(
        lambda tt, y: -2.0 * y + torch.sin(5 * tt),
        torch.ones(2, dtype=F64),
        t,
        method=method,
        rtol=1e-6,
        atol=1e-8,
        record_steps=True,
        **kw,
    )
    rec = sol.steps
    assert len(rec) == sol.stats["n_steps"]
    assert (rec.n_accepted, rec.n_rejected) == (sol.stats["n_accepted"], sol.stats["n_rejected"])
    steps = rec.accepted_steps()
    assert steps[0][0] == 0.0
    for (t0, h), (t1, _) in zip(steps, steps[1:]):
        assert t1 == pytest.approx(t0 + h, abs=1e-12)
    assert steps[-1][0] + steps[-1][1] == pytest.approx(2.0, abs=1e-12)
    ratios = rec.as_tensors()["error_ratio"]
    acc = rec.as_tensors()["accepted"]
    if SOLVERS[method].kind == ADAPTIVE:
        assert bool((ratios[acc] <= 1).all()) and bool((ratios[~acc] > 1).all())
    if SOLVERS[method].kind == FIXED:
        assert bool(torch.isnan(ratios).all()) and bool(acc.all())


def test_step_record_off_by_default_and_states_on_request():
    t = torch.tensor([0.0, 0.3, 1.0], dtype=F64)
    assert odeint(DECAY, torch.ones(2, dtype=F64), t).steps is None
    sol = odeint(DECAY, torch.ones(2, dtype=F64), t, record_steps="states")
    rec = sol.steps
    assert len(rec.states) == rec.n_accepted + 1
    assert torch.equal(rec.states[0], torch.ones(2, dtype=F64))
    assert torch.allclose(rec.states[-1], sol.ys[-1])
    # Each state is the exact solution at its step's start time (to the tolerance).
    for (t0, _), state in zip(rec.accepted_steps(), rec.states):
        assert torch.allclose(state, torch.full((2,), math.exp(-t0), dtype=F64), atol=1e-7)
    assert not rec.states[1].requires_grad


def test_on_step_sees_every_attempt_live():
    events = []
    sol = odeint(
        lambda t, y: -50 * y,
        torch.ones(1, dtype=F64),
        T01,
        rtol=1e-8,
        atol=1e-10,
        on_step=events.append,
        record_steps=True,
        options={"first_step": 0.5},
    )
    assert len(events) == sol.stats["n_steps"] and sol.stats["n_rejected"] > 0
    assert [e.t0 for e in events] == sol.steps.t0 and [e.accepted for e in events] == sol.steps.accepted
    rejected = next(e for e in events if not e.accepted)
    assert rejected.error_ratio > 1 and rejected.y1.shape == (1,)


def test_step_record_per_sample_and_torchdiffeq():
    y0 = torch.tensor([[1.0], [30.0]], dtype=F64)
    sol = odeint(
        lambda t, y: -y * torch.tensor([[1.0], [30.0]], dtype=F64), y0, T01, per_sample=True, record_steps=True
    )
    cols = sol.steps.as_tensors()
    assert cols["accepted"].shape == (sol.stats["n_batch_steps"], 2)
    assert torch.equal((cols["accepted"]).sum(0), sol.stats["n_accepted_per_sample"])
    td = odeint(DECAY, torch.ones(2, dtype=F64), T01, backend="torchdiffeq", record_steps=True)
    assert len(td.steps) == td.stats["n_steps"] and td.steps.n_accepted == td.stats["n_accepted"]
    with pytest.raises(ValueError, match="record_steps='states' keeps one trajectory"):
        odeint(DECAY, y0, T01, per_sample=True, record_steps="states")
    with pytest.raises(ValueError, match="record_steps=1.5 must be False, True or 'states'"):
        odeint(DECAY, y0, T01, record_steps=1.5)


# ---------------------------------------------------------------- one step-control core


def test_one_order_convention():
    """q = min(order, embedded order) + 1 for every method with an error estimate (order + 1 for the
    trapezoid's slope history); the known pairs pin the numbers, a new tableau is checked by the rule."""
    for name, spec in SOLVERS.items():
        if spec.kind == FIXED:
            assert spec.error_order is None, name
        elif spec.error_estimate == "slope_history":
            assert spec.error_order == spec.order + 1, name
        else:
            assert spec.error_order == min(spec.order, spec.tableau.embedded_order) + 1, name
    known = {"bosh3": 3, "dopri5": 5, "implicit_euler": 2, "trapezoid": 3}
    assert {n: SOLVERS[n].error_order for n in known} == known


def test_per_sample_takes_the_scalar_controllers_steps():
    """Same initial step, same controller: a batch of one steps exactly like the scalar solve
    (before v2 the per-sample initial step used another order convention)."""
    f = lambda t, y: torch.stack([y[..., 1], -y[..., 0] + 0.3 * torch.sin(3 * t) * y[..., 1]], dim=-1)  # noqa
    y0 = torch.tensor([1.0, 0.0], dtype=F64)
    t = torch.linspace(0, 5, 4, dtype=F64)
    for method in ("dopri5", "bosh3"):
        one = odeint(f, y0, t, method=method, rtol=1e-7, atol=1e-9, record_steps=True)
        batch = odeint(f, y0[None], t, method=method, rtol=1e-7, atol=1e-9, per_sample=True, record_steps=True)
        cols = batch.steps.as_tensors()
        # Same sequence up to round-off (the batched stage sums associate differently).
        assert cols["h"][:, 0].tolist() == pytest.approx(one.steps.h, rel=1e-6)
        assert cols["accepted"][:, 0].tolist() == one.steps.accepted
        assert torch.allclose(batch.ys[:, 0], one.ys, atol=1e-12)


def test_per_sample_underflow_fires_at_t0():
    y0 = torch.ones(2, 1, dtype=F64)
    opts = {"first_step": 1e-310}
    scalar = odeint(DECAY, y0[0], T01, options=opts, throw=False)
    batch = odeint(DECAY, y0, T01, options=opts, per_sample=True, throw=False)
    assert scalar.status is Status.STEP_UNDERFLOW
    assert batch.status is Status.STEP_UNDERFLOW and batch.sample_statuses() == [Status.STEP_UNDERFLOW] * 2


# ---------------------------------------------------------------- tableaux and the registry


def test_equal_weights_rk4_is_rejected():
    with pytest.raises(ValueError, match=r"declared order=4 but sum\(b_i c_i\^2\) = 0.375, not 0.333"):
        ButcherTableau(name="rk4_equal", c=RK4.c, a=RK4.a, b=(0.25, 0.25, 0.25, 0.25), order=4)


def test_order_conditions_checked_for_embedded_weights_too():
    with pytest.raises(ValueError, match=r"declared embedded_order=2 but sum\(b_low_i c_i\)"):
        ButcherTableau(name="bad", c=(0.0, 1.0), a=((1.0,),), b=(0.5, 0.5), order=2, b_low=(1.0, 0.0), embedded_order=2)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_registry_is_the_single_source(name):
    spec = SOLVERS[name]
    assert spec.order == spec.tableau.order
    assert spec.kind == (IMPLICIT if spec.tableau.implicit else ADAPTIVE if spec.tableau.adaptive else FIXED)
    if spec.torchdiffeq is not None:  # a method torchdiffeq really has (its own registry, not a copy of it)
        torchdiffeq_odeint = pytest.importorskip("torchdiffeq._impl.odeint")
        assert spec.torchdiffeq in torchdiffeq_odeint.SOLVERS, spec.torchdiffeq
    assert spec_for(spec.tableau) is spec


def test_our_rk38_is_torchdiffeqs_rk4_and_our_rk4_is_not():
    f = lambda t, y: torch.cos(3 * t) * y  # noqa: E731
    y0 = torch.ones(1, dtype=F64)
    kw = dict(step_size=0.1)
    theirs = odeint(f, y0, T01, method="rk4", backend="torchdiffeq", **kw).ys[-1]
    assert torch.allclose(odeint(f, y0, T01, method="rk38", **kw).ys[-1], theirs, rtol=0, atol=1e-15)
    assert not torch.allclose(odeint(f, y0, T01, method="rk4", **kw).ys[-1], theirs, rtol=0, atol=1e-12)
    assert "3/8" in SOLVERS["rk4"].torchdiffeq_differs and RK38.order == 4


def test_method_accepts_a_tableau():
    heun = ButcherTableau(
        name="heun", c=(0.0, 1.0), a=((1.0,),), b=(0.5, 0.5), order=2, b_low=(1.0, 0.0), embedded_order=1
    )
    sol = odeint(DECAY, torch.ones(1, dtype=F64), T01, method=heun, rtol=1e-6, atol=1e-9)
    assert sol.method == "heun" and sol.stats["n_rejected"] >= 0
    assert abs(float(sol.ys[-1, 0]) - math.exp(-1)) < 1e-5
    fixed = ButcherTableau(name="heun_fixed", c=(0.0, 1.0), a=((1.0,),), b=(0.5, 0.5), order=2)
    errs = [
        abs(float(odeint(DECAY, torch.ones(1, dtype=F64), T01, method=fixed, step_size=h).ys[-1, 0]) - math.exp(-1))
        for h in (0.1, 0.05)
    ]
    assert math.log2(errs[0] / errs[1]) == pytest.approx(2.0, abs=0.1)
    theta = ButcherTableau(name="theta07", c=(0.0, 1.0), a=((0.0,), (0.3, 0.7)), b=(0.3, 0.7), order=1)
    sol = odeint(DECAY, torch.ones(1, dtype=F64), T01, method=theta, step_size=0.01)
    assert abs(float(sol.ys[-1, 0]) - math.exp(-1)) < 1e-2
    with pytest.raises(ValueError, match="implicit without an error estimate"):
        odeint(DECAY, torch.ones(1, dtype=F64), T01, method=theta)
    with pytest.raises(TypeError, match="must be a registered name"):
        odeint(DECAY, torch.ones(1, dtype=F64), T01, method=3)


# ---------------------------------------------------------------- options with ranges


@pytest.mark.parametrize(
    "key,value,words",
    [
        ("ifactor", 0.5, r">= 1"),
        ("safety", 3, r"in \(0, 1\]"),
        ("safety", 0.0, r"in \(0, 1\]"),
        ("dfactor", 5, r"in \(0, 1\)"),
        ("dfactor", 1.0, r"in \(0, 1\)"),
        ("first_step", 0.0, "> 0"),
        ("max_step", -1.0, "> 0"),
        ("max_nonfinite_retries", 0, ">= 1"),
    ],
)
@pytest.mark.parametrize("method", ["dopri5", "trapezoid"])
def test_options_out_of_range_are_named(method, key, value, words):
    pattern = rf"options\['{key}'\]={re.escape(repr(type(value)(value) if key != 'max_nonfinite_retries' else value))}"
    with pytest.raises(ValueError, match=pattern + r".*out of range: it must be " + words):
        odeint(lambda t, y: -50 * y, torch.ones(1, dtype=F64), T01, method=method, options={key: value})


def test_ifactor_reproduction_no_longer_underflows():
    with pytest.raises(ValueError, match=r"options\['ifactor'\]=0.5 is out of range"):
        odeint(lambda t, y: -50 * y, torch.ones(1), torch.tensor([0.0, 1.0]), options={"ifactor": 0.5})
    assert odeint(lambda t, y: -50 * y, torch.ones(1), torch.tensor([0.0, 1.0]), options={"ifactor": 1.0}).success


# ---------------------------------------------------------------- precision


@pytest.mark.parametrize("method,kw", [("dopri5", {}), ("bosh3", {}), ("rk4", {"step_size": 0.1})])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_is_refused_never_success(method, kw, dtype):
    with pytest.raises(TypeError, match=rf"y0 has dtype {dtype}.*Solve in float32"):
        odeint(lambda t, y: -y, torch.tensor([1.0, 2.0]).to(dtype), torch.linspace(0, 1, 5), method=method, **kw)


def test_tolerances_below_resolution_fail_before_solving():
    calls = []

    def f(t, y):
        calls.append(1)
        return -y

    with pytest.raises(
        ValueError,
        match=r"rtol=1e-300 and atol=1e-300 ask for less error per step than "
        r"float64 can resolve",
    ):
        odeint(f, torch.ones(2, dtype=F64), T01, rtol=1e-300, atol=1e-300)
    with pytest.raises(ValueError, match=r"float32 can resolve.*y0.double\(\)"):
        odeint(f, torch.ones(2), torch.tensor([0.0, 1.0]), rtol=1e-10, atol=1e-12)
    assert calls == []
    # The defaults in float32, and tight float64 tolerances, are fine.
    assert odeint(f, torch.ones(2), torch.tensor([0.0, 1.0])).success
    assert odeint(f, torch.ones(2, dtype=F64), T01, rtol=1e-13, atol=1e-15).success


def test_tiny_atol_with_zero_component_is_not_called_non_finite():
    """A ratio that overflows with finite values is a large error, not NaN from func."""
    sol = odeint(
        lambda t, y: torch.stack([-y[0], 1e-3 * torch.ones_like(y[1])]),
        torch.tensor([1.0, 0.0], dtype=F64),
        T01,
        rtol=1e-8,
        atol=1e-310,
        throw=False,
    )
    assert sol.status is not Status.NON_FINITE


# ---------------------------------------------------------------- every evaluation shape-checked


@pytest.mark.parametrize(
    "method,kw", ALL_METHODS + [("dopri5", {"per_sample": True}), ("dopri5", {"backend": "torchdiffeq"})]
)
def test_shape_change_after_first_call_is_caught_at_once(method, kw):
    calls = []
    y0 = torch.ones(2, dtype=F64) if not kw.get("per_sample") else torch.ones(2, 2, dtype=F64)

    def shifty(t, y):
        calls.append(1)
        out = -y
        return out if len(calls) == 1 else out.unsqueeze(-1)

    with pytest.raises(ValueError, match=r"func\(t, y\) returned shape .* for y of shape"):
        odeint(shifty, y0, torch.linspace(0, 1, 3, dtype=F64), method=method, **kw)
    assert len(calls) == 2


# ---------------------------------------------------------------- NaN/inf named with its time


def _nan_after_half(t, y):
    bad = torch.where(t > 0.5, torch.full_like(t, float("nan")), torch.zeros_like(t))
    return -y + (bad[:, None] if t.dim() == 1 and y.dim() == 2 else bad)


@pytest.mark.parametrize("method,kw", ALL_METHODS + [("dopri5", {"per_sample": True})])
def test_nan_for_t_above_half_is_non_finite_with_its_time(method, kw):
    y0 = torch.ones(2, 1, dtype=F64) if kw.get("per_sample") else torch.ones(1, dtype=F64)
    sol = odeint(_nan_after_half, y0, T01, method=method, throw=False, **kw)
    assert sol.status is Status.NON_FINITE, sol.message
    when = _time_in(sol.message)
    assert 0.5 < when <= 0.5 + (0.05 if SOLVERS[method].kind == FIXED else 1e-9), sol.message
    with pytest.raises(SolverError, match="NON_FINITE.*check func there"):
        odeint(_nan_after_half, y0, T01, method=method, **kw)


# ---------------------------------------------------------------- per-sample status and stats


def test_per_sample_status_tensor_and_stats_tensors():
    rates = torch.tensor([[1.0], [float("nan")], [2.0]], dtype=F64)
    sol = odeint(lambda t, y: -rates * y, torch.ones(3, 1, dtype=F64), T01, per_sample=True, throw=False)
    assert sol.status is Status.NON_FINITE and "1 of 3 batch elements failed" in sol.message
    assert sol.status_per_sample.shape == (3,) and sol.status_per_sample.dtype == torch.long
    assert sol.sample_statuses() == [Status.SUCCESS, Status.NON_FINITE, Status.SUCCESS]
    for key in (
        "nfe_per_sample",
        "n_steps_per_sample",
        "n_accepted_per_sample",
        "n_rejected_per_sample",
        "t_reached_per_sample",
    ):
        assert sol.stats[key].shape == (3,), key
    assert sol.stats["t_reached_per_sample"].tolist() == [1.0, 0.0, 1.0]
    assert torch.isnan(sol.ys[-1, 1]).all() and torch.isfinite(sol.ys[-1, 0]).all()


# ---------------------------------------------------------------- torchdiffeq backend status


def test_torchdiffeq_backend_does_not_read_exception_text():
    def assertion_in_func(t, y):
        raise AssertionError("Tensor information missing")

    with pytest.raises(AssertionError, match="Tensor information missing"):
        odeint(assertion_in_func, torch.ones(2), torch.tensor([0.0, 1.0]), backend="torchdiffeq")


def test_torchdiffeq_backend_statuses_from_callbacks():
    sol = odeint(lambda t, y: -1e4 * y, torch.ones(1, dtype=F64), T01, backend="torchdiffeq", max_steps=20, throw=False)
    assert sol.status is Status.MAX_STEPS and sol.stats["n_steps"] == 20
    nan = odeint(_nan_after_half, torch.ones(1, dtype=F64), T01, backend="torchdiffeq", throw=False)
    assert nan.status is Status.NON_FINITE and 0.5 < _time_in(nan.message) < 1.0, nan.message


@pytest.mark.parametrize("method,kw", [("dopri5", {}), ("rk4", {"step_size": 0.1})])
def test_torchdiffeq_backend_shape_errors_read_like_ours(method, kw):
    with pytest.raises(ValueError, match=r"func\(t, y\) returned shape \(3, 3\) for y of shape \(3, 1\)"):
        odeint(
            lambda t, y: y * torch.ones(3),
            torch.ones(3, 1),
            torch.tensor([0.0, 1.0]),
            method=method,
            backend="torchdiffeq",
            **kw,
        )


# ---------------------------------------------------------------- stats that models keep


def test_backprop_reports_nfe_backward_zero_and_it_stays_true():
    from nodecourse.models import MLPField, ODEBlock

    block = ODEBlock(MLPField(2, hidden=(8,)).double(), method="dopri5", rtol=1e-4, atol=1e-6)
    calls = []
    block.field.register_forward_hook(lambda *a: calls.append(1))
    sol = block.solve(torch.randn(4, 2, dtype=F64))
    n_forward = len(calls)
    sol.ys[-1].sum().backward()
    assert len(calls) == n_forward and block.last_stats["nfe_backward"] == 0


def test_odeblock_last_stats_nfe_backward_true_after_backward():
    from nodecourse.models import MLPField, ODEBlock

    torch.manual_seed(0)
    block = ODEBlock(MLPField(2, hidden=(8,)).double(), method="dopri5", rtol=1e-4, atol=1e-6, gradient="checkpoint")
    sol = block.solve(torch.randn(4, 2, dtype=F64))
    assert block.last_stats["nfe_backward"] == 0
    sol.ys[-1].sum().backward()
    assert block.last_stats["nfe_backward"] == sol.stats["nfe_backward"] > 0
