"""Argument checks for :func:`nodecourse.odeint`: each error names the argument, the value and the fix.

The simple ones are declared as data (:data:`ODEINT_ARGS`, :data:`OPTION_RANGES`,
:data:`ADJOINT_OPTION_ARGS`) and checked through :mod:`nodecourse.validation`, which
words every message from the constraint; the rest are semantic (the time grid, the
dtype's resolution, which method takes which settings) and written out below. Everything
here runs once per solve, before the first evaluation of ``func``.

Why ``rtol < 1``: the error test accepts a step when its estimated error is at most
``atol + rtol * |y|``; with ``rtol >= 1`` that allows an error as large as the state
itself in every step, so the solve reports SUCCESS with no accuracy at all (``rtol=1e6``
on ``dy/dt = -y`` returns 176 where the answer is 4.5e-5). ``atol`` has no upper bound:
it is measured in the units of ``y``, which only the caller knows.

Why this module is long: every check :func:`nodecourse.odeint` and its adjoint make of their arguments is
here, the declared tables and the semantic checks, with torchdiffeq's keywords mapped onto the same checks
(:func:`torchdiffeq_keywords`), so each message is worded in one place.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import math
from collections.abc import Mapping
from typing import Any, Protocol

import torch

from nodecourse.solvers._adaptive import ADAPTIVE_OPTIONS
from nodecourse.solvers._control import all_finite
from nodecourse.solvers._fixed import FIXED_OPTIONS
from nodecourse.solvers._implicit import IMPLICIT_OPTIONS
from nodecourse.solvers._registry import ADAPTIVE, FIXED, IMPLICIT, SOLVERS, SolverSpec, spec_for
from nodecourse.solvers._reversible import REVERSIBLE, REVERSIBLE_SOLVERS
from nodecourse.solvers._tableaux import ButcherTableau
from nodecourse.solvers._torchdiffeq_backend import TORCHDIFFEQ_ADAPTIVE_OPTIONS
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
    check,
    check_options,
    short_repr,
)

GRADIENTS = ("backprop", "adjoint", "checkpoint", "reversible")
BACKENDS = ("nodecourse", "torchdiffeq")

#: The tolerances of the adaptive and implicit methods (shared with ``adjoint_options`` and SolveConfig).
RTOL = Arg(
    Interval(float, 0, 1, "neither"),
    fix="e.g. rtol=1e-6 (a relative tolerance of 1 or more allows an error as large as the state in every step)",
)
ATOL = Arg(Interval(float, 0, None, "neither"), fix="e.g. atol=1e-8 (in the units of y)")
STEP_SIZE = Arg(
    AnyOf((Interval(float, 0, None, "neither", unit="(the largest step)"), NoneAllowed())),
    fix="e.g. step_size=0.01 for a fixed-step method; None for an adaptive one",
)
MAX_STEPS = Arg(Interval(int, 1, None), fix="e.g. max_steps=10_000")

#: The arguments of :func:`nodecourse.odeint` whose valid values are a simple set (``y0``, ``t``
#: and ``method`` are checked by the functions below: shapes, dtypes, registry).
ODEINT_ARGS: dict[str, Arg] = {
    "func": Arg(IsCallable("a callable (a function or nn.Module f(t, y) -> dy/dt)")),
    "rtol": RTOL,
    "atol": ATOL,
    "step_size": STEP_SIZE,
    "max_steps": MAX_STEPS,
    "gradient": Arg(Options(GRADIENTS)),
    "throw": Arg(Flag()),
    "backend": Arg(Options(BACKENDS)),
    "per_sample": Arg(Flag()),
    "options": Arg(AnyOf((InstanceOf(Mapping, "a dict of method settings"), NoneAllowed()))),
    "adjoint_options": Arg(AnyOf((InstanceOf(Mapping, "a dict of backward-solve settings"), NoneAllowed()))),
    "record_steps": Arg(Options((False, True, "states"), kind=(bool, str))),
    "on_step": Arg(AnyOf((IsCallable("a callable taking a StepEvent"), NoneAllowed()))),
    "event_fn": Arg(AnyOf((IsCallable("a callable event_fn(t, y) -> tensor"), NoneAllowed()))),
    # torchdiffeq's odeint_adjoint keyword, the same as adjoint_options={"params": ...}
    "adjoint_params": Arg(
        AnyOf((InstanceOf((list, tuple), "a list or tuple of tensors that require grad"), NoneAllowed())),
        fix="adjoint_params=tuple(func.parameters()) with gradient='adjoint' (or adjoint_options={'params': ...})",
    ),
}

#: ``options`` of the adaptive and implicit methods: the valid values of each key (the
#: defaults are :data:`~nodecourse.solvers._control.CONTROL_OPTIONS` and ``IMPLICIT_OPTIONS``).
OPTION_RANGES: dict[str, Interval | AnyOf] = {
    "safety": Interval(float, 0, 1, "right"),
    "ifactor": Interval(float, 1, None, "left"),
    "dfactor": Interval(float, 0, 1, "neither"),
    "first_step": AnyOf((Interval(float, 0, None, "neither", unit="(the first |h|)"), NoneAllowed())),
    "max_step": Interval(float, 0, math.inf, "right", unit="(inf: no limit)"),
    "newton_tol": Interval(float, 0, None, "neither"),
    "max_newton_iters": Interval(int, 1, None),
    "max_nonfinite_retries": Interval(int, 1, None),
}

#: ``adjoint_options``: the backward solve's settings (each defaulting to the forward one's;
#: ``step_size`` and ``options`` only when the backward method is the forward one) and
#: ``params``, extra tensors to differentiate.
ADJOINT_OPTION_ARGS: dict[str, Arg] = {
    "method": Arg(InstanceOf((str, ButcherTableau, SolverSpec), "a solver name or a ButcherTableau")),
    "rtol": RTOL,
    "atol": ATOL,
    "step_size": STEP_SIZE,
    "max_steps": MAX_STEPS,
    "options": ODEINT_ARGS["options"],
    "params": Arg(InstanceOf((list, tuple), "a list or tuple of tensors that require grad")),
    # "seminorm": the backward error norm leaves out the parameter-gradient channels (Kidger et al. 2021)
    # or a callable: it receives torchdiffeq's tuple (t, y, adj_y, *adj_params) (adjoint.tuple_norm)
    "norm": Arg(
        AnyOf((Options(("seminorm",)), IsCallable("a callable norm(tuple of tensors) -> scalar"), NoneAllowed())),
        fix="adjoint_options={'norm': 'seminorm'} measures only the state and adjoint channels of the "
        "backward error; a callable gets torchdiffeq's tuple (t, y, adj_y, *adj_params); None (the "
        "default) measures all of them",
    ),
}
ADJOINT_OPTION_KEYS = tuple(ADJOINT_OPTION_ARGS)


#: ``odeint``'s keyword defaults (what a message shows), read from its signature by
#: :func:`register_defaults` when :mod:`nodecourse.solvers._odeint` is imported: this module never
#: imports ``odeint`` (that would close the cycle odeint -> adjoint -> validate -> odeint).
_ODEINT_DEFAULTS: dict = {}


def register_defaults(odeint) -> None:
    _ODEINT_DEFAULTS.update(
        {
            name: p.default
            for name, p in inspect.signature(odeint).parameters.items()
            if p.default is not inspect.Parameter.empty
        }
    )


def _odeint_defaults() -> dict:
    return _ODEINT_DEFAULTS


#: Set while a gradient mode calls ``odeint`` back on times it made itself (a replayed step on its
#: recorded float64 times): those are not the caller's times, so their precision is not checked.
_internal_times: contextvars.ContextVar[bool] = contextvars.ContextVar("internal_times", default=False)


@contextlib.contextmanager
def internal_times():
    token = _internal_times.set(True)
    try:
        yield
    finally:
        _internal_times.reset(token)


#: Values that passed :func:`check_arg`, by (name, type, value): a solve checks a dozen arguments, and
#: a batch-1 solve of 25 evaluations feels the constraint walk. Only plain immutable values (the type
#: is part of the key, so 1, 1.0 and True stay apart).
_CACHEABLE = frozenset({bool, int, float, str, type(None)})
_PASSED: dict = {}
_MISS = object()


def check_arg(name: str, value, defaults: dict | None = None):
    """``value`` checked against :data:`ODEINT_ARGS` ``[name]`` (converted); the message shows the
    default from ``defaults`` (by default ``odeint``'s)."""
    kind = type(value)
    cacheable = kind in _CACHEABLE
    if cacheable:
        hit = _PASSED.get((name, kind, value), _MISS)
        if hit is not _MISS:  # checked before: a dict lookup instead of the constraint's walk
            return hit
    declared = ODEINT_ARGS[name]
    if declared.constraint.is_satisfied_by(value):  # the common path: no message to build
        converted = declared.constraint.convert(value)
        if cacheable:
            if len(_PASSED) > 4096:  # bounded: a sweep over many tolerances does not grow it forever
                _PASSED.clear()
            _PASSED[(name, kind, value)] = converted
        return converted
    defaults = _odeint_defaults() if defaults is None else defaults
    return check(name, value, declared, default=defaults.get(name, ...))


def check_func(func) -> None:
    check_arg("func", func)


def check_y0(y0, per_sample: bool) -> None:
    if not isinstance(y0, torch.Tensor):
        raise WrongTypeError(
            f"y0 must be a torch.Tensor, got {type(y0).__name__} {short_repr(y0)}; "
            f"wrap it: torch.as_tensor(y0, dtype=torch.float32)"
        )
    if not torch.is_floating_point(y0):
        raise WrongTypeError(
            f"y0 has dtype {y0.dtype}; the solvers need a real floating dtype: use y0.float() or y0.double()"
        )
    if y0.numel() == 0:
        raise ValueError(f"y0 has shape {tuple(y0.shape)} with no elements; give at least one state variable")
    if not all_finite(y0):
        raise ValueError("y0 contains NaN or inf; the initial state must be finite")
    if per_sample and y0.dim() < 1:
        raise ValueError(
            f"per_sample=True needs y0 with a batch dimension first, shape (B, ...); got shape {tuple(y0.shape)}"
        )


def check_t(t, y0: torch.Tensor) -> list[float]:
    """Validate ``t`` and return it as a list of floats."""
    if not isinstance(t, torch.Tensor):
        raise WrongTypeError(
            f"t must be a 1-D torch.Tensor of times, got {type(t).__name__} {short_repr(t)}; "
            f"use torch.tensor(t, dtype=y0.dtype, device=y0.device)"
        )
    if t.dim() != 1 or t.numel() < 1:
        raise ValueError(
            f"t must be 1-D with at least one time, got shape {tuple(t.shape)}; "
            f"for a single interval use torch.tensor([t0, t1])"
        )
    if not torch.is_floating_point(t):
        raise WrongTypeError(f"t has dtype {t.dtype}; use a floating dtype, e.g. t.to(y0.dtype)")
    if t.device != y0.device:
        raise ValueError(f"t is on device {t.device} but y0 is on {y0.device}; move one: t.to(y0.device)")
    ts = [float(v) for v in t.detach().cpu().tolist()]
    if not all(math.isfinite(v) for v in ts):
        raise ValueError(f"t contains NaN or inf: {short_repr(ts)}")
    if len(ts) > 1:
        _check_monotone(ts)
        if not _internal_times.get():
            _check_time_precision(t, ts, y0)
    return ts


def _check_time_precision(t: torch.Tensor, ts: list[float], y0: torch.Tensor) -> None:
    """Refuse a ``t`` finer than ``y0``'s dtype whose values the cast to that dtype would move.

    ``func`` receives ``t`` in ``y0``'s dtype (as in torchdiffeq), so a float64 ``t`` with a float32
    state is rounded where ``func`` reads it. The rounding is harmless while it stays below one unit
    of the state's precision on the interval (``eps * |t[-1] - t[0]|``: e.g. 0.1 over [0, 1]); far
    from zero it is not (over [1e8, 1e8 + 1] float32 moves times by up to 4, and cos t is then
    solved at the wrong times with no error). Times are not carried at a finer precision than the
    state: a field computes in the state's dtype, so the choice is the caller's, made visible here.
    """
    if torch.finfo(t.dtype).eps >= torch.finfo(y0.dtype).eps:
        return
    rounded = [float(v) for v in t.detach().to(y0.dtype).cpu().tolist()]
    moved = max(abs(a - b) for a, b in zip(ts, rounded))
    span = abs(ts[-1] - ts[0])
    if moved <= torch.finfo(y0.dtype).eps * span:
        return
    dtype = str(y0.dtype).replace("torch.", "")
    raise ValueError(
        f"t has dtype {t.dtype}, but func receives times in y0's dtype {dtype}, and the cast moves them by up to "
        f"{moved:.3g} on an interval of length {span:.6g} (from t[0]={ts[0]!r}): the field would be evaluated at "
        f"other times than asked. Solve in {str(t.dtype).replace('torch.', '')} (y0.to(t.dtype), and the field's "
        f"parameters too), or shift time so it starts near 0: solve from t - t[0] with a field that adds t[0] back, "
        f"e.g. odeint(lambda s, y: func(s + t0, y), y0, t - t0) with t0 = t[0]"
    )


def _check_monotone(ts: list[float]) -> None:
    diffs = [b - a for a, b in zip(ts[:-1], ts[1:])]
    if all(d > 0 for d in diffs) or all(d < 0 for d in diffs):
        return
    bad = next(i for i, d in enumerate(diffs) if d == 0 or (d > 0) != (diffs[0] > 0))
    if len(ts) == 2:
        raise ValueError(
            f"t={ts} has zero length (t[0] == t[1]): there is nothing to solve and y(t1) = y0. "
            f"Skip the solve for a zero-length interval (e.g. `ys = y0[None]` when t1 == t0)"
        )
    if diffs[bad] == 0:
        raise ValueError(
            f"t must be strictly increasing or strictly decreasing; t[{bad}]={ts[bad]!r} and "
            f"t[{bad + 1}]={ts[bad + 1]!r} repeat a time. If you want the state at a repeated time "
            f"twice, solve at torch.unique(t, return_inverse=True)[0] and index with the inverse; if an "
            f"interval of zero length is what you meant, skip that solve (the state does not change)"
        )
    raise ValueError(
        f"t must be strictly increasing or strictly decreasing; t[{bad}]={ts[bad]!r}, "
        f"t[{bad + 1}]={ts[bad + 1]!r} break the order. Sort and deduplicate it: torch.unique(t)"
    )


def check_tolerances(rtol, atol, defaults: dict | None = None) -> tuple[float, float]:
    return check_arg("rtol", rtol, defaults), check_arg("atol", atol, defaults)


def check_method(method, step_size, per_sample: bool, *, prefix: str = ""):
    """A name or a ButcherTableau -> its :class:`SolverSpec`, checked against ``step_size`` and
    ``per_sample`` (``step_size`` must already satisfy :data:`STEP_SIZE`). ``prefix`` names the
    settings in messages, e.g. ``"adjoint_options"`` -> ``adjoint_options['method']``."""
    m_name, s_name = (f"{prefix}['method']", f"{prefix}['step_size']") if prefix else ("method", "step_size")
    if isinstance(method, str) and method in REVERSIBLE_SOLVERS:
        reversible_spec = REVERSIBLE_SOLVERS[method]
        if step_size is None:
            raise ValueError(f"{m_name}={method!r} takes fixed steps and needs {s_name}, e.g. {s_name}=0.05")
        if per_sample:
            raise ValueError(f"per_sample=True works with the adaptive methods, not {m_name}={method!r}")
        return reversible_spec
    spec = spec_for(method)  # unknown names raise ValueError listing the valid ones
    method = spec.name
    if spec.kind == IMPLICIT:
        from nodecourse.solvers._implicit import theta_of

        theta_of(spec.tableau)  # raises when the implicit integrator cannot run this tableau
        if step_size is None and spec.error_order is None:
            raise ValueError(
                f"{m_name}={method!r} is implicit without an error estimate (no b_low): give "
                f"{s_name} for fixed steps, or add b_low and embedded_order to the tableau"
            )
    if spec.kind == FIXED and step_size is None:
        raise ValueError(
            f"{m_name}={method!r} is a fixed-step method and needs {s_name}, e.g. "
            f"{s_name}=0.01; or use an adaptive method: {m_name}='dopri5'"
        )
    if spec.kind == ADAPTIVE and step_size is not None:
        raise ValueError(
            f"{s_name}={step_size!r} is only for fixed-step and implicit methods; "
            f"{m_name}={method!r} chooses its own steps (use options={{'first_step': ...}} "
            f"to set the first one)"
        )
    if per_sample and spec.kind != ADAPTIVE:
        adaptive = [n for n, s in SOLVERS.items() if s.kind == ADAPTIVE]
        raise ValueError(f"per_sample=True works with the adaptive methods {adaptive}, not method={method!r}")
    return spec


#: Half-precision dtypes the solvers refuse (their rounding swamps the error control).
HALF_DTYPES = (torch.float16, torch.bfloat16)

#: A tolerance this far below the dtype's epsilon cannot be met (the error test compares
#: differences of states that carry eps of relative rounding error each).
RESOLUTION_FACTOR = 10.0


def check_precision(
    y0: torch.Tensor, rtol: float, atol: float, spec, step_size, *, names: tuple[str, str] = ("rtol", "atol")
) -> None:
    """Refuse half precision, and tolerances the dtype cannot resolve, before any solving
    (``names``: how the message calls the two tolerances)."""
    if y0.dtype in HALF_DTYPES:
        eps = torch.finfo(y0.dtype).eps
        raise WrongTypeError(
            f"y0 has dtype {y0.dtype} (eps={eps:.1e}): too coarse for the step-size control, which then "
            f"can report success with a wrong answer. Solve in float32 and cast back: "
            f"odeint(func, y0.float(), t.float(), ...).ys.to({y0.dtype}) (func must accept float32; "
            f"e.g. a module: func.float())"
        )
    adaptive = spec.kind == ADAPTIVE or (spec.kind == IMPLICIT and step_size is None)
    if not adaptive:
        return
    eps = torch.finfo(y0.dtype).eps
    limit = eps / RESOLUTION_FACTOR
    if rtol >= limit:  # resolvable whatever the state's size: no reduction and no host read
        return
    size = max(1.0, float(y0.detach().abs().max()))
    if atol < limit * size:
        dtype = str(y0.dtype).replace("torch.", "")
        raise ValueError(
            f"{names[0]}={rtol!r} and {names[1]}={atol!r} ask for less error per step than {dtype} can resolve "
            f"(eps={eps:.1e}; the error test could never pass or would overflow). Use {names[0]} >= {limit:.1e} "
            f"(e.g. {names[0]}={max(1e3 * eps, 1e-12):.0e})"
            + (", or solve in float64: y0.double()" if y0.dtype != torch.float64 else "")
        )


def check_record(record_steps, on_step, per_sample: bool, gradient) -> bool | str:
    """``record_steps`` in (False, True, "states"); ``on_step`` None or callable."""
    record_steps = check_arg("record_steps", record_steps)
    check_arg("on_step", on_step)
    if record_steps == "states" and per_sample:
        raise ValueError(
            "record_steps='states' keeps one trajectory's states; with per_sample=True use "
            "record_steps=True (times, sizes and flags per element)"
        )
    if (record_steps or on_step is not None) and gradient == "adjoint":
        raise ValueError(
            "record_steps/on_step are not available with gradient='adjoint' in this version; "
            "record the forward steps with gradient='backprop' under torch.no_grad()"
        )
    return record_steps


def check_reversible_record(spec, record_steps, on_step) -> None:
    """The reversible methods keep no step record: refuse ``record_steps``/``on_step`` with them."""
    if spec.kind == REVERSIBLE and (record_steps or on_step is not None):
        raise ValueError(
            f"record_steps/on_step are not available with method={spec.name!r} in this version; its "
            f"steps are equal (step_size), so the step times are known beforehand: "
            f"torch.arange over t with step_size"
        )


def check_max_steps(max_steps, defaults: dict | None = None) -> int:
    return check_arg("max_steps", max_steps, defaults)


def check_gradient(gradient, spec, per_sample: bool, backend: str) -> None:
    check_arg("gradient", gradient)
    if gradient == "reversible" and spec.kind != REVERSIBLE:
        raise ValueError(
            f"gradient='reversible' undoes the steps of an algebraically reversible method by algebra; "
            f"method={spec.name!r} cannot be undone exactly. Use method='reversible_heun' with "
            f"step_size=..., or gradient='checkpoint' for the exact gradient of {spec.name!r}'s steps"
        )
    if spec.kind == REVERSIBLE and gradient not in ("reversible", "backprop"):
        raise ValueError(
            f"method={spec.name!r} works with gradient='reversible' (memory flat in the steps) or "
            f"'backprop' (the same gradient through a stored graph), not gradient={gradient!r}"
        )
    if gradient == "checkpoint" and (per_sample or backend != "nodecourse"):
        raise ValueError(
            f"gradient='checkpoint' replays the solver's own steps: it works with "
            f"backend='nodecourse' and per_sample=False (every method); got per_sample={per_sample}, "
            f"backend={backend!r}. Use gradient='backprop' or 'adjoint' here"
        )


def check_flag(name: str, value) -> bool:
    return check_arg(name, value)


def check_backend(backend, per_sample: bool = False, spec=None, *, method_name: str = "method") -> None:
    check_arg("backend", backend)
    if backend == "torchdiffeq":
        if per_sample:
            raise ValueError("per_sample=True needs backend='nodecourse' (torchdiffeq steps the whole batch together)")
        if spec is not None and spec.torchdiffeq is None:
            named = [n for n, s in SOLVERS.items() if s.torchdiffeq]
            raise ValueError(
                f"{method_name}={spec.name!r} has no torchdiffeq counterpart; use backend='nodecourse' "
                f"or one of {named}"
            )


def option_defaults(spec, backend: str) -> dict:
    """The ``options`` keys ``spec``'s method understands on ``backend``, with their defaults."""
    if backend == "torchdiffeq":
        return TORCHDIFFEQ_ADAPTIVE_OPTIONS if spec.kind == ADAPTIVE else {}
    by_kind = {FIXED: FIXED_OPTIONS, REVERSIBLE: FIXED_OPTIONS, ADAPTIVE: ADAPTIVE_OPTIONS}
    return by_kind.get(spec.kind, IMPLICIT_OPTIONS)


def merge_options(options, defaults: dict, method: str, *, name: str = "options") -> dict:
    """Defaults updated with ``options``: an unknown key raises ``TypeError`` listing the known ones,
    a value outside :data:`OPTION_RANGES` ``ValueError`` naming the option, the value and the range."""
    return check_options(options, OPTION_RANGES, defaults, name=name, owner=f"method={method!r}")


class ForwardSettings(Protocol):
    """What :func:`check_adjoint_options` reads of the forward solve: a
    :class:`~nodecourse.solvers._request.SolveRequest` or a :class:`~nodecourse.solvers.SolveConfig`."""

    @property
    def gradient(self) -> str: ...
    @property
    def method(self) -> Any: ...
    @property
    def rtol(self) -> float: ...
    @property
    def atol(self) -> float: ...
    @property
    def step_size(self) -> float | None: ...
    @property
    def max_steps(self) -> int: ...
    @property
    def options(self) -> Mapping | None: ...
    @property
    def adjoint_options(self) -> Mapping | None: ...


def check_adjoint_options(
    forward: ForwardSettings, *, backend: str = "nodecourse", y0: torch.Tensor | None = None
) -> dict | None:
    """Every setting of the backward solve of ``gradient="adjoint"`` (``forward.adjoint_options``),
    checked before the forward solve runs (the forward settings, ``forward``, are already checked).

    Returns None when ``adjoint_options`` is None and ``gradient`` is not ``"adjoint"``; otherwise
    the complete settings: ``method``, ``rtol``, ``atol``, ``step_size``, ``max_steps``, ``options``
    (each defaulting to the forward solve's; ``step_size`` and ``options`` only when the backward
    method is the forward one) and ``params`` (a list). Checking the result again returns it
    unchanged. ``y0`` (when given) lets the backward tolerances be checked against its dtype.
    """
    adjoint_options, gradient, method = forward.adjoint_options, forward.gradient, forward.method
    step_size, options = forward.step_size, forward.options
    check_arg("adjoint_options", adjoint_options)
    if gradient != "adjoint":
        if adjoint_options is not None:
            raise ValueError(f"adjoint_options are for gradient='adjoint', got gradient={gradient!r}; drop them")
        return None
    defaults = {
        "method": method,
        "rtol": forward.rtol,
        "atol": forward.atol,
        "step_size": step_size,
        "max_steps": forward.max_steps,
        "options": options,
        "params": (),
        "norm": None,
    }
    given = check_options(adjoint_options, ADJOINT_OPTION_ARGS, defaults, name="adjoint_options")
    b_spec = spec_for(given["method"])
    same = b_spec.name == spec_for(method).name
    adj = dict(adjoint_options or {})
    settings = dict(
        given,
        step_size=adj.get("step_size", step_size if same else None),
        options=adj.get("options", options if same else None),
        params=list(given["params"]),
    )
    check_method(settings["method"], settings["step_size"], False, prefix="adjoint_options")
    check_backend(backend, False, b_spec, method_name="adjoint_options['method']")
    merge_options(settings["options"], option_defaults(b_spec, backend), b_spec.name, name="adjoint_options['options']")
    if settings["norm"] is not None and b_spec.kind == FIXED:
        raise ValueError(
            f"adjoint_options['norm'] changes the error norm of an adaptive backward solve; "
            f"the backward method {b_spec.name!r} takes fixed steps and has none. Give "
            f"adjoint_options={{'method': 'dopri5', 'norm': 'seminorm'}} or drop the norm"
        )
    backward_norm = (settings["options"] or {}).get("norm")
    if settings["norm"] is not None and backward_norm not in (None, (options or {}).get("norm")):
        raise ValueError(
            "adjoint_options['norm'] and a norm of the backward solve's own "
            "(adjoint_options['options']['norm']) both set the backward error norm; give one of them"
        )
    for i, p in enumerate(settings["params"]):
        if not isinstance(p, torch.Tensor) or not p.requires_grad:
            got = "a tensor with requires_grad=False" if isinstance(p, torch.Tensor) else type(p).__name__
            raise WrongTypeError(
                f"adjoint_options['params'][{i}] must be a tensor that requires grad, got {got}; "
                f"pass the tensors to differentiate (p.requires_grad_(True))"
            )
    if y0 is not None:
        check_precision(
            y0,
            settings["rtol"],
            settings["atol"],
            b_spec,
            settings["step_size"],
            names=("adjoint_options['rtol']", "adjoint_options['atol']"),
        )
    return settings


# --- torchdiffeq's call surface -------------------------------------------------------------------
# Every keyword of torchdiffeq.odeint / odeint_adjoint, and every key of their ``options``, is either
# accepted here with torchdiffeq's meaning or refused by name with the spelling this package uses.

#: ``odeint_adjoint``'s keywords that set the backward solve: each is a key of ``adjoint_options``.
TORCHDIFFEQ_ADJOINT_KEYWORDS = {
    "adjoint_rtol": "rtol",
    "adjoint_atol": "atol",
    "adjoint_method": "method",
    "adjoint_params": "params",
}

_PIECES = (
    "solve in pieces instead: odeint(func, y0, t_a) up to the time, then odeint(func, sol.ys[-1], t_b) from it "
    "(a step never crosses a time it should not, and the field is evaluated afresh after it)"
)

#: torchdiffeq's ``options`` keys with no counterpart here: why, and what to write instead.
TORCHDIFFEQ_REFUSED_OPTIONS = {
    "grid_points": "torchdiffeq's (older) times that steps must end on; here output times never end a step, so "
    + _PIECES,
    "eps": "torchdiffeq's (older) offset around grid_points; here there are no grid points: " + _PIECES,
    "step_t": f"torchdiffeq's times that steps must end on; here output times never end a step, so {_PIECES}",
    "jump_t": f"torchdiffeq's times where the field jumps; {_PIECES}",
    "perturb": "torchdiffeq's perturb passes a `perturb` argument to the field at the grid points; fields here "
    "take (t, y) only: for a field with a jump, " + _PIECES,
    "grid_constructor": "torchdiffeq's custom grid of a fixed-step method; here give step_size=h (equal steps "
    "of at most h between output times) or list the grid times in t",
    "interp": "torchdiffeq's interpolation of a fixed-step method between its grid points; here the fixed-step "
    "methods step to every output time (equal steps of at most step_size) and an event is located by solving the "
    "partial step, so there is nothing to interpolate: drop it",
    "min_step": "torchdiffeq's smallest step; here a step that shrinks below the floating-point resolution ends "
    "the solve with Status.STEP_UNDERFLOW (throw=False returns it): drop min_step",
    "dtype": "torchdiffeq's dtype of the times; here the field receives times in y0's dtype: solve in "
    "float64 for finer times (y0.double())",
    "max_order": "a setting of torchdiffeq's Adams methods, which this package does not have: use method='dopri5'",
    "max_iters": "a setting of torchdiffeq's Adams methods, which this package does not have: use method='dopri5'",
}

#: ``options`` keys torchdiffeq accepts that are top-level keywords here (the name here).
TORCHDIFFEQ_OPTION_KEYWORDS = {"step_size": "step_size", "max_num_steps": "max_steps"}


def _closest(name: str, names) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def torchdiffeq_keywords(extra: dict, *, gradient, adjoint_options, adjoint_params):
    """``odeint_adjoint``'s keywords (``adjoint_rtol``, ``adjoint_atol``, ``adjoint_method``,
    ``adjoint_params``) merged into ``adjoint_options`` (returned); any other keyword in ``extra``
    is refused by name. They set the backward solve, so they need ``gradient="adjoint"``."""
    for name in extra:
        if name not in TORCHDIFFEQ_ADJOINT_KEYWORDS:
            known = list(ODEINT_ARGS) + ["method", "t", "y0"] + list(TORCHDIFFEQ_ADJOINT_KEYWORDS)
            if name in TORCHDIFFEQ_REFUSED_OPTIONS or name in TORCHDIFFEQ_OPTION_KEYWORDS:
                raise UnknownNameError(
                    f"odeint() got {name}= as a keyword; in torchdiffeq it is an options key, and here: "
                    + (
                        f"use {TORCHDIFFEQ_OPTION_KEYWORDS[name]}=..."
                        if name in TORCHDIFFEQ_OPTION_KEYWORDS
                        else TORCHDIFFEQ_REFUSED_OPTIONS[name]
                    )
                )
            raise UnknownNameError(f"odeint() got an unexpected keyword argument {name!r}{_closest(name, known)}")
    if (
        adjoint_params is not None
        and not isinstance(adjoint_params, (list, tuple))
        and hasattr(adjoint_params, "__next__")
    ):
        adjoint_params = tuple(adjoint_params)  # module.parameters(), as torchdiffeq takes it
    check_arg("adjoint_params", adjoint_params)
    given = {k: v for k, v in dict(extra, adjoint_params=adjoint_params).items() if v is not None}
    if not given:
        return adjoint_options
    names = ", ".join(f"{k}=" for k in given)
    if gradient != "adjoint":
        raise ValueError(
            f"{names} set the backward solve of the adjoint method (torchdiffeq's odeint_adjoint); here that is "
            f"gradient='adjoint': add it, or drop them (got gradient={gradient!r})"
        )
    if adjoint_options is not None and not isinstance(adjoint_options, Mapping):
        return adjoint_options  # check_adjoint_options names it
    merged = dict(adjoint_options or {})
    for name, value in given.items():
        key = TORCHDIFFEQ_ADJOINT_KEYWORDS[name]
        if key in merged and merged[key] is not value:
            raise ValueError(
                f"{name}= and adjoint_options[{key!r}] both set the backward solve's {key}; give one of them"
            )
        merged[key] = value
    return merged


def torchdiffeq_options(options, step_size, max_steps, *, name: str = "options"):
    """torchdiffeq's ``options`` keys that are keywords here, moved: ``step_size`` (fixed-step
    methods) and ``max_num_steps`` (-> ``max_steps``); keys with no counterpart are refused by name
    with what to write instead. Returns ``(options, step_size, max_steps)``."""
    if not isinstance(options, Mapping):
        return options, step_size, max_steps  # None, or a wrong type that check_options names
    for key in options:
        if key in TORCHDIFFEQ_REFUSED_OPTIONS:
            raise UnknownNameError(f"{name}[{key!r}] is not a setting here: {TORCHDIFFEQ_REFUSED_OPTIONS[key]}")
    if not any(key in options for key in TORCHDIFFEQ_OPTION_KEYWORDS):
        return options, step_size, max_steps
    opts = dict(options)
    if "step_size" in opts:
        h = opts.pop("step_size")
        if step_size is not None and h != step_size:
            raise ValueError(
                f"step_size={step_size!r} and {name}['step_size']={h!r} disagree; give one of them "
                f"(here it is the keyword step_size=...)"
            )
        step_size = h
    if "max_num_steps" in opts:
        n = opts.pop("max_num_steps")
        if max_steps != _odeint_defaults().get("max_steps", max_steps) and n != max_steps:
            raise ValueError(
                f"max_steps={max_steps!r} and {name}['max_num_steps']={n!r} disagree; give one of them "
                f"(here it is the keyword max_steps=...)"
            )
        max_steps = n
    return opts, step_size, max_steps


def check_adjoint_option_keys(adjoint_options) -> None:
    """torchdiffeq's ``adjoint_options`` is the backward method's ``options`` dict; here those settings
    sit one level down, in ``adjoint_options['options']``: a method setting at the top is refused
    naming that spelling (``step_size`` and ``norm`` mean the same at both places and are accepted)."""
    if not isinstance(adjoint_options, Mapping):
        return
    for key in adjoint_options:
        if key in ADJOINT_OPTION_ARGS:
            continue
        if key in OPTION_RANGES:
            raise UnknownNameError(
                f"adjoint_options[{key!r}] is a setting of the backward method (torchdiffeq's adjoint_options "
                f"is that method's options dict); here write adjoint_options={{'options': {{{key!r}: ...}}}}"
            )
        if key == "max_num_steps":
            raise UnknownNameError("adjoint_options['max_num_steps'] is spelled adjoint_options['max_steps'] here")
        if key in TORCHDIFFEQ_REFUSED_OPTIONS:
            raise UnknownNameError(
                f"adjoint_options[{key!r}] is not a setting here: {TORCHDIFFEQ_REFUSED_OPTIONS[key]}"
            )
