"""One declarative validation system (nodecourse.validation) and every entry point that declares its
arguments through it: odeint (and its options, adjoint_options), SolveConfig, fixed_point and its
methods, DEQ and its models, CNF, and the command line's numeric flags."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
import torch
from torch import nn

from nodecourse import DEQ, SolveConfig, fixed_point, odeint
from nodecourse.course import cli, physionet_cmd
from nodecourse.deq import _settings as deq_settings
from nodecourse.deq._anderson import anderson
from nodecourse.deq._broyden import broyden
from nodecourse.deq._fixed_point import METHODS, OPTIONS
from nodecourse.deq._models import DEQModel, EquilibriumBlock
from nodecourse.deq._picard import picard
from nodecourse.deq._tracking import Tracker
from nodecourse.models import _flows as flows
from nodecourse.solvers import _validate as v
from nodecourse.solvers._control import CONTROL_OPTIONS
from nodecourse.solvers._torchdiffeq_backend import TORCHDIFFEQ_ADAPTIVE_OPTIONS, TORCHDIFFEQ_OPTION_NAMES
from nodecourse.validation import (
    AnyOf,
    Arg,
    Flag,
    InstanceOf,
    Interval,
    IsCallable,
    NoneAllowed,
    Options,
    UnknownNameError,
    WrongTypeError,
    argparse_type,
    check,
    check_options,
    invalid_values,
)

F64 = torch.float64


# ---------------------------------------------------------------------------------------------- core

CORE_CONSTRAINTS = [
    Interval(float, 0, 1, "neither"),
    Interval(float, 0, 1, "right"),
    Interval(float, 0, None, "neither"),
    Interval(float, 1, math.inf, "both"),
    Interval(float, 1, math.inf, "right"),
    Interval(int, 1, None),
    Interval(int, 0, 10),
    Interval(float, None, 0, "left"),
    Options(("a", "b")),
    Options((False, True, "s"), (bool, str)),
    Flag(),
    InstanceOf(dict, "a dict"),
    IsCallable("a callable f(x)"),
    AnyOf((Interval(float, 0, None, "neither"), NoneAllowed())),
    AnyOf((Interval(int, 1, None), IsCallable("a callable"), NoneAllowed())),
]


def _assert_refused(name, value, constraint):
    """``check`` refuses ``value``: a wrong type as TypeError, a right type out of range as a ValueError
    that is not a TypeError; the message names the argument and shows the value."""
    with pytest.raises((TypeError, ValueError)) as info:
        check(name, value, constraint)
    c = constraint.constraint if isinstance(constraint, Arg) else constraint
    if c.type_ok(value):
        assert type(info.value) is ValueError, info.value
    else:
        assert isinstance(info.value, TypeError) and isinstance(info.value, WrongTypeError), info.value
    assert str(info.value).startswith(f"{name}=")


@pytest.mark.parametrize("constraint", CORE_CONSTRAINTS, ids=repr)
def test_every_generated_invalid_value_is_refused(constraint):
    bad = invalid_values(constraint)
    assert bad, "each constraint generates values to refuse"
    for value in bad:
        assert not constraint.is_satisfied_by(value)
        _assert_refused("arg", value, constraint)


def test_messages_are_generated_from_the_constraint():
    rtol = Interval(float, 0, 1, "neither")
    with pytest.raises(
        ValueError,
        match=r"^rtol=2.0 is out of range: it must be in \(0, 1\) \(default 0.1\); "
        r"use less$",
    ):
        check("rtol", 2.0, rtol, default=0.1, fix="use less")
    with pytest.raises(TypeError, match=r"^rtol='x' must be a real number in \(0, 1\), not str$"):
        check("rtol", "x", rtol)
    with pytest.raises(ValueError, match=r"^m=0 is out of range: it must be >= 1; e\.g\. m=6$"):
        check("m", 0, Arg(Interval(int, 1, None), fix="e.g. m=6"))
    with pytest.raises(ValueError, match=r"^mode='c' is not one of \['a', 'b'\]$"):
        check("mode", "c", Options(("a", "b")))
    with pytest.raises(TypeError, match=r"^flag=1 must be True or False, not int$"):
        check("flag", 1, Flag())
    with pytest.raises(ValueError, match=r"^h=0.0 is out of range: it must be > 0 \(the step\) or None$"):
        check("h", 0.0, AnyOf((Interval(float, 0, None, "neither", unit="(the step)"), NoneAllowed())))
    assert Interval(float, 1, math.inf, "right").describe() == "a real number > 1 (inf allowed)"
    assert Interval(int, 0, 65535).describe() == "an int in [0, 65535]"
    assert Options((False, True, "states"), (bool, str)).describe() == "False, True or 'states'"


def test_numpy_scalars_are_numbers_and_are_converted():
    out = check("tol", np.float32(1e-6), Interval(float, 0, None, "neither"))
    assert type(out) is float and out == pytest.approx(1e-6)
    out = check("n", np.int64(5), Interval(int, 1, None))
    assert type(out) is int and out == 5
    assert check("x", np.float64(0.5), AnyOf((Interval(float, 0, 1), NoneAllowed()))) == 0.5


def test_inf_and_nan():
    positive = Interval(float, 0, None, "neither")
    for bad in (math.inf, -math.inf, math.nan, np.float32("nan")):
        with pytest.raises(ValueError, match="is out of range"):
            check("x", bad, positive)
    assert check("x", math.inf, Interval(float, 1, math.inf, "both")) == math.inf  # declared: inf allowed
    with pytest.raises(ValueError):
        check("x", math.inf, Interval(float, 1, math.inf, "left"))  # open at inf
    with pytest.raises(ValueError):
        check("x", math.nan, Interval(float, 1, math.inf, "both"))  # nan never


def test_bools_and_ints_do_not_stand_in_for_each_other():
    for bad in (True, False):
        with pytest.raises(TypeError):
            check("n", bad, Interval(int, 0, None))
    with pytest.raises(TypeError):
        check("record_steps", 1, Options((False, True, "states"), (bool, str)))  # 1 == True, but not a bool
    assert check("record_steps", True, Options((False, True, "states"), (bool, str))) is True


def test_check_options_policy():
    spec = {"a": Interval(float, 0, 1)}
    with pytest.raises(UnknownNameError, match=r"^options keys \['b'\] are not understood by me; known keys: a$"):
        check_options({"b": 1}, spec, {"a": 0.5}, owner="me")
    assert issubclass(UnknownNameError, TypeError) and issubclass(UnknownNameError, ValueError)
    with pytest.raises(ValueError, match=r"^options\['a'\]=2 is out of range"):
        check_options({"a": 2}, spec, {"a": 0.5})
    with pytest.raises(ValueError, match=r"^a=2 is out of range"):
        check_options({"a": 2}, spec, {"a": 0.5}, as_keywords=True)
    with pytest.raises(TypeError, match=r"^options='x' must be a dict or None"):
        check_options("x", spec, {"a": 0.5})
    assert check_options({"a": np.float32(0.25)}, spec, {"a": 0.5, "free": None}) == {"a": 0.25, "free": None}


def test_argparse_type_uses_the_same_words():
    convert = argparse_type(Arg(Interval(int, 1, None), fix="e.g. 64"))
    assert convert("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match=r"^0 is out of range: it must be >= 1; e\.g\. 64$"):
        convert("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'x' is not an int >= 1"):
        convert("x")


# ------------------------------------------------------------------- every entry point, every bad value


class CountingField(nn.Module):
    """``f(t, y) = w * y`` (w = -1) that counts its calls."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(-1.0, dtype=F64))
        self.calls = 0

    def forward(self, t, y):
        self.calls += 1
        return self.w * y


Y0 = torch.ones(2, dtype=F64)
T = torch.tensor([0.0, 1.0], dtype=F64)


def _odeint(name, value):
    if name == "func":
        return odeint(value, Y0, T)
    return odeint(lambda t, y: -y, Y0, T, **{name: value})


def _odeint_option(name, value):
    method = "trapezoid" if name in ("newton_tol", "max_newton_iters") else "dopri5"
    return odeint(lambda t, y: -y, Y0, T, method=method, options={name: value})


def _odeint_adjoint_option(name, value):
    return odeint(CountingField(), Y0, T, gradient="adjoint", adjoint_options={name: value})


def _fixed_point(name, value):
    z0 = torch.zeros(2, 3, dtype=F64)
    f = lambda z: 0.5 * z + 1  # noqa: E731
    if name == "f":
        return fixed_point(value, z0)
    return fixed_point(f, z0, **{name: value})


def _fixed_point_option(method):
    def call(name, value):
        return fixed_point(lambda z: 0.5 * z + 1, torch.zeros(2, 3, dtype=F64), method=method, **{name: value})

    return call


def _method_direct(fn):
    def call(name, value):
        z0 = torch.zeros(2, 3, dtype=F64)
        tracker = Tracker(2, tol=1e-8, stop_mode="rel", divergence_factor=1e6, dtype=F64, device=z0.device)
        kwargs = {"max_iter": 10, name: value} if name != "max_iter" else {"max_iter": value}
        return fn(lambda z: 0.5 * z + 1, z0, tracker, **kwargs)

    return call


def _deq(name, value):
    block = lambda z, x: 0.5 * z + x  # noqa: E731
    if name == "f":
        return DEQ(value)
    return DEQ(block, **{name: value})


def _deq_model(name, value):
    kwargs = {"input_dim": 3, "output_dim": 1, "state_dim": 4, "width": 5, "init_scale": 0.5, name: value}
    return DEQModel(kwargs.pop("input_dim"), kwargs.pop("output_dim"), **kwargs)


def _block(name, value):
    kwargs = {"state_dim": 4, "input_dim": 3, "width": 5, "init_scale": 0.5, name: value}
    return EquilibriumBlock(**kwargs)


def _cnf(name, value):
    return flows.CNF(**{name: value})


def _cnf_dynamics(name, value):
    return flows.CNFDynamics(nn.Linear(2, 2), **{name: value})


def _solve_config(name, value):
    return SolveConfig(**{name: value})


def _names_with(spec, exclude=()):
    return [name for name in spec if name not in exclude]


ENTRY_POINTS = [
    # (entry point, its declared spec, the names to feed, how to call it with one argument overridden,
    #  how the message names the argument)
    ("odeint", v.ODEINT_ARGS, list(v.ODEINT_ARGS), _odeint, "{}="),
    ("odeint options", v.OPTION_RANGES, list(v.OPTION_RANGES), _odeint_option, "options['{}']="),
    (
        "odeint adjoint_options",
        v.ADJOINT_OPTION_ARGS,
        list(v.ADJOINT_OPTION_ARGS),
        _odeint_adjoint_option,
        "adjoint_options['{}']=",
    ),
    (
        "SolveConfig",
        v.ODEINT_ARGS,
        ["rtol", "atol", "step_size", "max_steps", "gradient", "per_sample", "options", "adjoint_options"],
        _solve_config,
        "{}=",
    ),
    ("fixed_point", deq_settings.FIXED_POINT_ARGS, list(deq_settings.FIXED_POINT_ARGS), _fixed_point, "{}="),
    ("fixed_point(method='rel' tol)", {"tol": deq_settings.REL_TOL}, ["tol"], _fixed_point, "{}="),
    *[
        (
            f"fixed_point(method={m!r}) options",
            deq_settings.METHOD_OPTION_ARGS,
            list(OPTIONS[m]),
            _fixed_point_option(m),
            "{}=",
        )
        for m in METHODS
    ],
    *[
        (
            f"{fn.__name__}()",
            {**deq_settings.METHOD_OPTION_ARGS, "max_iter": deq_settings.MAX_ITER},
            [*OPTIONS[fn.__name__], "max_iter"],
            _method_direct(fn),
            "{}=",
        )
        for fn in (picard, anderson, broyden)
    ],
    ("DEQ", deq_settings.DEQ_ARGS, list(deq_settings.DEQ_ARGS), _deq, "{}="),
    ("DEQModel", deq_settings.DEQ_MODEL_ARGS, list(deq_settings.DEQ_MODEL_ARGS), _deq_model, "{}="),
    ("EquilibriumBlock", deq_settings.DEQ_MODEL_ARGS, ["state_dim", "input_dim", "width", "init_scale"], _block, "{}="),
    ("CNF", flows.CNF_ARGS, list(flows.CNF_ARGS), _cnf, "{}="),
    ("CNFDynamics", flows.CNF_ARGS, ["trace", "n_probes", "noise"], _cnf_dynamics, "{}="),
]

CASES = [
    (entry, name, value, call, label)
    for entry, spec, names, call, label in ENTRY_POINTS
    for name in names
    for value in invalid_values(spec[name])
]


@pytest.mark.parametrize("entry,name,value,call,label", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]!r}" for c in CASES])
def test_each_declared_argument_refuses_each_invalid_value(entry, name, value, call, label):
    with pytest.raises((TypeError, ValueError)) as info:
        call(name, value)
    assert label.format(name) in str(info.value), f"{entry}: the message must name {name}: {info.value}"


def test_every_entry_point_declares_every_argument_it_checks():
    """The specs cover the arguments: a new keyword without a declaration fails here."""
    import inspect

    def keywords(fn, skip=()):
        return {
            n
            for n, p in inspect.signature(fn).parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and n not in skip
        }

    assert keywords(odeint, {"y0", "t", "method"}) <= set(v.ODEINT_ARGS)
    assert keywords(fixed_point, {"z0"}) <= set(deq_settings.FIXED_POINT_ARGS)
    assert keywords(DEQ.__init__, {"self"}) <= set(deq_settings.DEQ_ARGS)
    assert keywords(flows.CNF.__init__, {"self"}) <= set(flows.CNF_ARGS)
    assert set(METHODS) == set(deq_settings.METHOD_NAMES)
    for options in OPTIONS.values():
        assert set(options) <= set(deq_settings.METHOD_OPTION_ARGS)


def test_parser_flags_refuse_each_invalid_number():
    parser = cli.build_parser()
    flags = [("physionet", flag, arg, ["--model", "odernn"]) for flag, arg in physionet_cmd.FLAGS.items()]
    flags += [
        (command, flag, arg, ["nb.ipynb"] if command == "grade" else []) for (command, flag), arg in cli.FLAGS.items()
    ]
    for command, flag, arg, rest in flags:
        texts = [str(x) for x in invalid_values(arg) if isinstance(x, (int, float)) and not isinstance(x, bool)]
        for text in [*texts, "x"]:
            with pytest.raises(SystemExit) as info:
                parser.parse_args([command, *rest, flag, text])
            assert info.value.code == 2, (command, flag, text)


# ---------------------------------------------------------------------------- the cases of the issue


def test_rtol_of_one_or_more_is_refused():
    """``rtol=1e6`` returned 176 (exact 4.5e-5) with SUCCESS: a relative tolerance >= 1 allows an error
    as large as the state in every step."""
    with pytest.raises(ValueError, match=r"rtol=1000000.0 is out of range: it must be in \(0, 1\)"):
        odeint(lambda t, y: -y, torch.ones(1), torch.tensor([0.0, 10.0]), rtol=1e6, atol=1e6)
    with pytest.raises(ValueError, match=r"rtol=1.0 is out of range"):
        odeint(lambda t, y: -y, torch.ones(1), torch.tensor([0.0, 10.0]), rtol=1.0)
    sol = odeint(lambda t, y: -y, torch.ones(1, dtype=F64), torch.tensor([0.0, 10.0], dtype=F64), rtol=1e-8)
    assert abs(float(sol.ys[-1, 0]) - math.exp(-10)) < 1e-8


@pytest.mark.parametrize(
    "adjoint_options,pattern",
    [
        (
            {"method": "rk4"},
            r"adjoint_options\['method'\]='rk4' is a fixed-step method and needs "
            r"adjoint_options\['step_size'\]",
        ),
        ({"rtol": 2.0}, r"adjoint_options\['rtol'\]=2.0 is out of range"),
        ({"max_steps": 0}, r"adjoint_options\['max_steps'\]=0 is out of range"),
        ({"options": {"safty": 0.5}}, r"adjoint_options\['options'\] keys \['safty'\] are not understood"),
        ({"method": "dopri5", "step_size": 0.1}, r"adjoint_options\['step_size'\]=0.1 is only for fixed-step"),
        ({"params": [torch.ones(1)]}, r"adjoint_options\['params'\]\[0\] must be a tensor that requires grad"),
        ({"method": "nope"}, r"method='nope' is not a registered solver"),
        ({"tol": 1e-3}, r"adjoint_options keys \['tol'\] are not understood; known keys"),
        (
            {"rtol": 1e-300, "atol": 1e-300},
            r"adjoint_options\['rtol'\]=1e-300 and adjoint_options\['atol'\]=1e-300 ask",
        ),
    ],
)
def test_adjoint_options_are_checked_before_the_forward_solve(adjoint_options, pattern):
    field = CountingField()
    with pytest.raises((TypeError, ValueError), match=pattern):
        odeint(field, Y0, T, gradient="adjoint", adjoint_options=adjoint_options)
    assert field.calls == 0  # not one evaluation: the forward solve never started


def test_valid_adjoint_options_reach_the_backward_solve():
    field = CountingField()
    sol = odeint(field, Y0, T, gradient="adjoint", adjoint_options={"method": "rk4", "step_size": 0.1})
    sol.ys[-1].sum().backward()
    assert sol.stats["backward_n_steps"] == 10 and sol.stats["nfe_backward"] == 40  # rk4: 4 stages x 10 steps


def test_fixed_point_tol_inf_is_refused_and_a_numpy_tol_accepted():
    f, z0 = (lambda z: 0.5 * z + 1), torch.zeros(2, 3, dtype=F64)
    with pytest.raises(ValueError, match=r"tol=inf is out of range: it must be in \(0, 1\)"):
        fixed_point(f, z0, tol=math.inf)
    with pytest.raises(ValueError, match=r"tol=inf is out of range: it must be > 0"):
        fixed_point(f, z0, tol=math.inf, stop_mode="abs")
    r = fixed_point(f, z0, tol=np.float32(1e-6))
    assert r.success and type(r.tol) is float and r.tol == pytest.approx(1e-6)
    assert float((r.z - 2.0).abs().max()) < 1e-5


@pytest.mark.parametrize(
    "kwargs,exc,pattern",
    [
        ({"lam": -5}, ValueError, r"lam=-5 is out of range: it must be > 0 or None"),
        ({"lam": "x"}, TypeError, r"lam='x' must be a real number > 0 or None, not str"),
        ({"safeguard": 0}, ValueError, r"safeguard=0 is out of range: it must be >= 1"),
        ({"damping": 0}, ValueError, r"damping=0 is out of range: it must be in \(0, 1\]"),
        ({"m": 0}, ValueError, r"m=0 is out of range: it must be >= 1"),
        ({"divergence_factor": 1}, ValueError, r"divergence_factor=1 is out of range: it must be > 1"),
    ],
)
def test_fixed_point_method_options_are_checked(kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        fixed_point(lambda z: 0.5 * z + 1, torch.zeros(2, 3, dtype=F64), method="anderson", **kwargs)


@pytest.mark.parametrize("lam,exc", [(-1, ValueError), ("x", TypeError), (0, ValueError)])
def test_anderson_called_directly_checks_lam(lam, exc):
    """``anderson(lam=-1)`` raised a LinAlgError from inside the solve, ``lam='x'`` a raw traceback."""
    z0 = torch.zeros(2, 3, dtype=F64)
    tracker = Tracker(2, tol=1e-8, stop_mode="rel", divergence_factor=1e6, dtype=F64, device=z0.device)
    calls = []
    with pytest.raises(exc, match=r"lam="):
        anderson(lambda z: calls.append(1) or 0.5 * z + 1, z0, tracker, max_iter=20, lam=lam)
    assert not calls


def test_unknown_fixed_point_option_is_a_type_error():
    with pytest.raises(
        TypeError,
        match=r"options keys \['m'\] are not understood by method='picard'; known keys: "
        r"damping",
    ):
        fixed_point(lambda z: 0.5 * z, torch.zeros(1, 2), method="picard", m=3)
    # the same error was a ValueError before: it still is one, for callers that caught that
    with pytest.raises(ValueError):
        fixed_point(lambda z: 0.5 * z, torch.zeros(1, 2), method="anderson", window=3)
    with pytest.raises(TypeError, match=r"method_options keys \['window'\]"):
        DEQ(lambda z, x: z, method_options={"window": 3})


def test_solve_config_carries_options_and_adjoint_options():
    cfg = SolveConfig(
        options={"max_step": 0.05}, gradient="adjoint", adjoint_options={"method": "rk4", "step_size": 0.1}
    )
    assert hash(cfg) == hash(
        SolveConfig(options={"max_step": 0.05}, gradient="adjoint", adjoint_options={"method": "rk4", "step_size": 0.1})
    )
    with pytest.raises(TypeError):
        cfg.options["max_step"] = 1.0  # read-only: checked once, cannot change afterwards
    kwargs = cfg.odeint_kwargs()
    assert kwargs["options"] == {"max_step": 0.05} and type(kwargs["options"]) is dict
    assert kwargs["adjoint_options"] == {"method": "rk4", "step_size": 0.1}

    from nodecourse.models import ODEBlock

    field = CountingField()
    block = ODEBlock(field, solver=cfg)
    out = block(torch.ones(3, 2, dtype=F64))
    assert block.last_stats["n_accepted"] >= 20  # max_step 0.05 on [0, 1]
    out.sum().backward()
    assert block.last_stats["backward_n_steps"] == 10  # the backward solve ran rk4 at step 0.1


@pytest.mark.parametrize(
    "kwargs,exc,pattern",
    [
        ({"rtol": 2.0}, ValueError, r"rtol=2.0 is out of range: it must be in \(0, 1\) \(default 0.001\)"),
        ({"max_steps": 0}, ValueError, r"max_steps=0 is out of range"),
        ({"method": "rk4"}, ValueError, r"method='rk4' is a fixed-step method and needs step_size"),
        ({"method": "euler", "step_size": -1.0}, ValueError, r"step_size=-1.0 is out of range"),
        ({"options": {"safty": 0.5}}, TypeError, r"options keys \['safty'\] are not understood by method='dopri5'"),
        ({"options": {"safety": 2}}, ValueError, r"options\['safety'\]=2 is out of range"),
        ({"adjoint_options": {"method": "rk4"}}, ValueError, r"adjoint_options are for gradient='adjoint'"),
        (
            {"gradient": "adjoint", "adjoint_options": {"method": "rk4"}},
            ValueError,
            r"adjoint_options\['method'\]='rk4' is a fixed-step method",
        ),
        ({"gradient": "checkpoint", "per_sample": True}, ValueError, r"gradient='checkpoint' replays"),
        ({"per_sample": 1}, TypeError, r"per_sample=1 must be True or False"),
    ],
)
def test_solve_config_checks_its_values_at_construction(kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        SolveConfig(**kwargs)
    with pytest.raises(exc, match=pattern):
        SolveConfig().replace(**kwargs)


def test_models_check_their_solver_settings_when_built():
    from nodecourse.models import ODEBlock

    field = CountingField()
    with pytest.raises(ValueError, match=r"rtol=2.0 is out of range"):
        ODEBlock(field, rtol=2.0)
    with pytest.raises(ValueError, match=r"atol=-1.0 is out of range"):
        flows.CNF(2, atol=-1.0)
    assert field.calls == 0
    cfg = SolveConfig(rtol=np.float32(1e-3))
    assert type(cfg.rtol) is float  # canonical values are stored


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--batch-size", "0"], "argument --batch-size: 0 is out of range: it must be >= 1"),
        (["--epochs", "-1"], "argument --epochs: -1 is out of range: it must be >= 0"),
        (["--quantization", "0"], "argument --quantization: 0 is out of range: it must be in [0.0166667, 48]"),
        (["--seed", "-3"], "argument --seed: -3 is out of range"),
    ],
)
def test_physionet_numeric_flags_are_refused_by_the_parser(capsys, argv, message):
    """``--batch-size 0`` and ``--epochs -1`` gave raw tracebacks from inside training."""
    with pytest.raises(SystemExit) as info:
        cli.build_parser().parse_args(["physionet", "--model", "odernn", *argv])
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_torchdiffeq_options_derive_from_the_control_options():
    assert TORCHDIFFEQ_ADAPTIVE_OPTIONS == {name: CONTROL_OPTIONS[name] for name in TORCHDIFFEQ_OPTION_NAMES}
    assert set(TORCHDIFFEQ_OPTION_NAMES) <= set(CONTROL_OPTIONS)  # one definition of names and defaults


def test_option_range_messages_are_the_declared_ranges():
    """No hand-written range beside the data: each option's message quotes its constraint."""
    for key, constraint in v.OPTION_RANGES.items():
        bad = next(x for x in invalid_values(constraint) if constraint.type_ok(x))
        method = "trapezoid" if key in ("newton_tol", "max_newton_iters") else "dopri5"
        with pytest.raises(ValueError) as info:
            odeint(lambda t, y: -y, Y0, T, method=method, options={key: bad})
        assert constraint.refusal(bad) in str(info.value)
