"""The settings of the fixed-point solvers and the DEQ layer, declared as constraints.

One declaration for :func:`~nodecourse.deq._fixed_point.fixed_point`, its methods
(:func:`~nodecourse.deq._picard.picard`, :func:`~nodecourse.deq._anderson.anderson`,
:func:`~nodecourse.deq._broyden.broyden`, which check their own options too, so a direct
call is checked the same way) and :class:`~nodecourse.deq._layer.DEQ`; the messages come
from :mod:`nodecourse.validation`. Each range follows from what the setting does:

* ``tol``: the stopping threshold, > 0 and finite (``inf`` would stop at once with
  SUCCESS). With ``stop_mode="rel"`` the residual ``|f(z) - z| / |f(z)|`` is 1 at
  ``z = 0``, so a relative ``tol`` of 1 or more would accept the start: ``tol < 1``.
* ``damping`` in (0, 1]: the step is ``z + damping * (f(z) - z)``; 1 is the plain step,
  0 would never move, and above 1 over-relaxes, which none of the methods is built for.
* ``m`` >= 1: the history window (Anderson) or the number of rank-one updates (Broyden).
* ``lam`` > 0 (or None: sqrt(eps) of the dtype): Anderson's Tikhonov term, relative to the
  mean squared residual; 0 or less leaves the normal equations singular or indefinite.
* ``safeguard`` >= 1 (inf: never): a restart when the residual exceeds ``safeguard`` times the
  best so far; the best includes the current residual, so below 1 every step would restart.
* ``divergence_factor`` > 1 (inf: never): a sample is DIVERGED once its residual exceeds this
  times its first; at 1 or below the first iterate itself could count as diverged.
* ``max_iter`` >= 1: evaluations of f.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Mapping
from typing import Any, Callable

from nodecourse.validation import (
    AnyOf,
    Arg,
    Flag,
    InstanceOf,
    Interval,
    IsCallable,
    NoneAllowed,
    Options,
    check,
    check_options,
)

METHOD_NAMES = ("picard", "anderson", "broyden")
STOP_MODES = ("rel", "abs")
BACKWARDS = ("implicit", "unrolled")
WARN_MODES = (True, False, "backward")
"""``DEQ(warn=...)``: every unconverged solve, none, or (default) a backward pass through one."""

TOL = Arg(Interval(float, 0, None, "neither"), fix="e.g. tol=1e-6")
#: The extra bound on ``tol`` with ``stop_mode="rel"``.
REL_TOL = Arg(
    Interval(float, 0, 1, "neither"),
    fix="e.g. tol=1e-6 (with stop_mode='rel' the residual is relative to |f(z)|, 1 at z = 0: a tol of 1 "
    "or more accepts the start)",
)
MAX_ITER = Arg(Interval(int, 1, None), fix="e.g. max_iter=100")

#: The arguments of :func:`nodecourse.fixed_point` (its method options: :data:`METHOD_OPTION_ARGS`).
FIXED_POINT_ARGS: dict[str, Arg] = {
    "f": Arg(IsCallable("a callable f(z) -> a tensor of z's shape")),
    "method": Arg(Options(METHOD_NAMES)),
    "tol": TOL,
    "max_iter": MAX_ITER,
    "stop_mode": Arg(Options(STOP_MODES)),
    "divergence_factor": Arg(
        Interval(float, 1, math.inf, "right"), fix="e.g. divergence_factor=1e6 (inf: never declare divergence)"
    ),
    "warn": Arg(Flag()),
    "throw": Arg(Flag()),
    "check_batch": Arg(Flag()),
}

#: The options of the methods (keywords of ``fixed_point``, ``DEQ(method_options=...)``).
METHOD_OPTION_ARGS: dict[str, Arg] = {
    "damping": Arg(Interval(float, 0, 1, "right"), fix="e.g. damping=0.5 (1: the undamped step)"),
    "m": Arg(Interval(int, 1, None), fix="e.g. m=6 (the history window)"),
    "lam": Arg(
        AnyOf((Interval(float, 0, None, "neither"), NoneAllowed())),
        fix="e.g. lam=1e-8 (relative to the mean squared residual; None: sqrt(eps) of the dtype)",
    ),
    "safeguard": Arg(
        Interval(float, 1, math.inf, "both"),
        fix="e.g. safeguard=100 (restart when the residual exceeds safeguard x its best; inf: never)",
    ),
}

#: The arguments of :class:`nodecourse.DEQ`'s constructor.
DEQ_ARGS: dict[str, Arg] = {
    "f": Arg(IsCallable("an nn.Module or callable f(z, x) -> a tensor of z's shape")),
    "method": FIXED_POINT_ARGS["method"],
    "tol": TOL,
    "max_iter": MAX_ITER,
    "backward": Arg(Options(BACKWARDS)),
    "stop_mode": FIXED_POINT_ARGS["stop_mode"],
    "backward_method": Arg(AnyOf((Options(METHOD_NAMES), NoneAllowed())), fix="None: the forward method"),
    "backward_tol": Arg(AnyOf((TOL.constraint, NoneAllowed())), fix="None: the forward tol"),
    "backward_max_iter": Arg(AnyOf((MAX_ITER.constraint, NoneAllowed())), fix="None: the forward max_iter"),
    "method_options": Arg(
        AnyOf((InstanceOf(Mapping, "a dict of method options"), NoneAllowed())), fix="e.g. method_options={'m': 6}"
    ),
    "state": Arg(
        AnyOf((Interval(int, 1, None), IsCallable("a callable x -> z0"), NoneAllowed())),
        fix="an int width (z0 = zeros(B, state)) or a callable x -> z0",
    ),
    "warn": Arg(Options(WARN_MODES, kind=(bool, str)), fix="e.g. warn=False where an unconverged solve is intended"),
}


def check_tol(tol, stop_mode: str, *, name: str = "tol", default: Any = ...) -> float:
    """``tol`` > 0 and finite, and < 1 with ``stop_mode="rel"`` (``stop_mode`` already checked)."""
    return check(name, tol, REL_TOL if stop_mode == "rel" else TOL, default=default)


@functools.lru_cache(maxsize=None)
def method_defaults(method: Callable) -> dict[str, Any]:
    """The options of a fixed-point method (keyword-only arguments with defaults, besides
    ``max_iter``), read from its signature: the one place they are defined."""
    return {
        name: p.default
        for name, p in inspect.signature(method).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not inspect.Parameter.empty
    }


def check_method_options(
    method: Callable, options: Mapping | None, *, name: str = "options", as_keywords: bool = True
) -> dict[str, Any]:
    """``options`` of ``method`` (the function) checked against :data:`METHOD_OPTION_ARGS`; an unknown
    key raises :class:`~nodecourse.validation.UnknownNameError`. Returns the given options, converted."""
    given = dict(options or {})
    merged = check_options(
        given,
        METHOD_OPTION_ARGS,
        method_defaults(method),
        name=name,
        owner=f"method={method.__name__!r}",
        as_keywords=as_keywords,
    )
    return {key: merged[key] for key in given}


def check_method_call(method: Callable, max_iter, **options) -> dict[str, Any]:
    """The settings of a direct call of a method (``max_iter`` and every option), checked as
    :func:`~nodecourse.deq._fixed_point.fixed_point` checks them; returns the options, converted."""
    check("max_iter", max_iter, MAX_ITER)
    return check_method_options(method, options)


_SIZE = Interval(int, 1, None)
#: The sizes of :class:`~nodecourse.deq._models.EquilibriumBlock` and :class:`~nodecourse.deq._models.DEQModel`.
DEQ_MODEL_ARGS: dict[str, Arg] = {
    "input_dim": Arg(_SIZE, fix="the number of input features"),
    "output_dim": Arg(_SIZE, fix="the number of outputs"),
    "state_dim": Arg(_SIZE, fix="the width of the equilibrium state z, e.g. state_dim=16"),
    "width": Arg(_SIZE, fix="the hidden width of the block, e.g. width=50"),
    "init_scale": Arg(
        Interval(float, 0, None, "neither"),
        fix="e.g. init_scale=0.5 (W1 and W2 start at this scale, so the block starts as a contraction)",
    ),
}
