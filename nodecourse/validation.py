"""Constraints as data: one way to check an argument, one way to word the error.

Every public entry point of the library (``odeint`` and its ``options`` and
``adjoint_options``, ``fixed_point`` and its methods, ``DEQ``, ``CNF``,
``SolveConfig``, the command line) declares what each argument may be as a
:class:`Constraint` (optionally wrapped in an :class:`Arg` that adds the fix an error
suggests) and calls :func:`check` (one argument), :func:`check_args` (a declared
spec of arguments), :func:`check_options` (a dict of named settings) or
:func:`argparse_type` (a command-line flag). The messages are generated from the
constraints, so the range in an error can never drift from the range that is
enforced, and :func:`invalid_values` generates the values a test must see refused.

One exception policy:

* an unknown *name* (an option key, a keyword) raises :class:`UnknownNameError`;
* a value of the wrong type raises :class:`WrongTypeError`;
* a value of the right type outside the valid set raises :class:`ValueError`.

Both error classes are :class:`TypeError` subclasses and also :class:`ValueError`
subclasses (as scikit-learn's ``InvalidParameterError``), so code that caught the
``ValueError`` some entry points raised for these before keeps working.

Each message names the argument, the value, what is valid, and how to fix it:

* ``rtol=1000000.0 is out of range: it must be in (0, 1) (default 1e-07); <fix>``
* ``max_steps=10.5 must be an int >= 1, not float (default 10000); <fix>``
* ``gradient='magic' is not one of ['backprop', 'adjoint', 'checkpoint']``
* ``options keys ['safty'] are not understood by method='dopri5'; known keys: safety, ...``

How to declare a new argument: add ``"name": Arg(Interval(float, 0, None, "neither"),
fix="e.g. name=0.1")`` (or a bare constraint) to the entry point's spec dict, and check
it at the boundary (``check_args``/``check``), once per call, never per step; the
parametrised test in ``tests/test_validation.py`` then feeds it every value
:func:`invalid_values` generates.
"""

from __future__ import annotations

import abc
import argparse
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Mapping

__all__ = [
    "Constraint",
    "Interval",
    "Options",
    "Flag",
    "InstanceOf",
    "IsCallable",
    "NoneAllowed",
    "AnyOf",
    "Arg",
    "WrongTypeError",
    "UnknownNameError",
    "check",
    "check_args",
    "check_options",
    "argparse_type",
    "invalid_values",
    "short_repr",
]
__all__ += ["SecondDerivativeError", "RandomFieldError"]


class WrongTypeError(TypeError, ValueError):
    """A value of the wrong type (a ``TypeError``; also a ``ValueError`` for callers that caught that)."""


class UnknownNameError(TypeError, ValueError):
    """An option key or keyword nobody understands (a ``TypeError``; also a ``ValueError``)."""


class SecondDerivativeError(RuntimeError):
    """A gradient route that cannot give a differentiable gradient was asked for one
    (``create_graph=True``: a gradient penalty, a Hessian-vector product). Raised at the route's
    first backward call, instead of a gradient whose graph is silently missing."""


class RandomFieldError(ValueError):
    """A gradient that cannot replay the random numbers a field drew (dropout in training mode):
    ``gradient="adjoint"`` (its backward solve evaluates the field at other states and times than the
    forward solve did), gradients with respect to the output times ``t`` (slopes evaluated again at
    each output), and ``DEQ(backward="implicit")`` (a fixed point of a map that changes at every
    call does not exist). No replay of the forward's random numbers exists, so the gradient would
    belong to no function that ran."""


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (error messages stay one line)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Constraint(abc.ABC):
    """What one argument may be.

    Subclasses define :meth:`type_ok` (is the value of an acceptable type?),
    :meth:`value_ok` (given the type, is it in the valid set?), :meth:`describe`
    (the valid set in words, used in every message), :meth:`convert` (the
    canonical value handed on, e.g. a numpy float as a Python float) and
    :meth:`invalid_examples` (values tests must see refused). :meth:`refusal` words
    a value of the right type that is outside the valid set.
    """

    @abc.abstractmethod
    def type_ok(self, value: Any) -> bool:
        """Is ``value`` of an acceptable type?"""

    def value_ok(self, value: Any) -> bool:
        return True

    @abc.abstractmethod
    def describe(self) -> str:
        """The valid set in words (used in every message)."""

    def describe_range(self) -> str:
        """The valid set once the type is known to be right (an interval drops its noun)."""
        return self.describe()

    def refusal(self, value: Any) -> str:
        """The words after ``name=value`` for a value of the right type outside the valid set."""
        return f"is not valid: it must be {self.describe_range()}"

    def convert(self, value: Any) -> Any:
        return value

    def invalid_examples(self) -> list:
        return []

    def is_satisfied_by(self, value: Any) -> bool:
        return self.type_ok(value) and self.value_ok(value)


_CLOSED = {"both": (True, True), "left": (True, False), "right": (False, True), "neither": (False, False)}


@dataclass(frozen=True)
class Interval(Constraint):
    """A real (``kind=float``) or integer (``kind=int``) number in an interval.

    ``closed`` is ``"both"``, ``"left"``, ``"right"`` or ``"neither"``; ``None`` for
    ``low``/``high`` leaves that side open to infinity. NaN is never valid; infinity
    only when the interval reaches it and that side is closed (``high=math.inf``,
    ``closed="both"`` or ``"right"``). Booleans are not numbers here; numpy scalars
    are (``np.float32(1e-6)`` is a real number). ``unit`` (optional) is appended to
    the description, e.g. ``"(the first |h|)"``.
    """

    kind: type
    low: float | None
    high: float | None
    closed: str = "both"
    unit: str = ""

    def __post_init__(self):
        if self.kind not in (int, float):
            raise ValueError(f"Interval kind={self.kind!r} must be int or float")
        if self.closed not in _CLOSED:
            raise ValueError(f"Interval closed={self.closed!r} must be one of {sorted(_CLOSED)}")

    def type_ok(self, value):
        if isinstance(value, bool):
            return False
        return isinstance(value, numbers.Integral if self.kind is int else numbers.Real)

    def value_ok(self, value):
        number = float(value)
        if math.isnan(number):
            return False
        left_closed, right_closed = _CLOSED[self.closed]
        low = -math.inf if self.low is None else self.low
        high = math.inf if self.high is None else self.high
        if number < low or (number == low and not left_closed):
            return False
        if number > high or (number == high and not right_closed):
            return False
        if math.isinf(number) and not ((number == high and right_closed) or (number == low and left_closed)):
            return False
        return True

    def convert(self, value):
        return int(value) if self.kind is int else float(value)

    def _bounds_text(self) -> str:
        left_closed, right_closed = _CLOSED[self.closed]
        if self.low is not None and self.high is not None and not math.isinf(self.high):
            return f"in {'[' if left_closed else '('}{_num(self.low)}, {_num(self.high)}{']' if right_closed else ')'}"
        if self.low is not None:
            text = f"{'>=' if left_closed else '>'} {_num(self.low)}"
            if self.high is not None and math.isinf(self.high) and right_closed:
                text += " (inf allowed)"
            return text
        if self.high is not None:
            return f"{'<=' if right_closed else '<'} {_num(self.high)}"
        return "(any finite value)"

    def describe_range(self):
        text = self._bounds_text()
        return f"{text} {self.unit}" if self.unit else text

    def describe(self):
        noun = "an int" if self.kind is int else "a real number"
        return f"{noun} {self.describe_range()}"

    def refusal(self, value):
        return f"is out of range: it must be {self.describe_range()}"

    def invalid_examples(self):
        left_closed, right_closed = _CLOSED[self.closed]
        bad: list = ["1", None, True]
        if self.low is not None:
            bad.append(self.low if not left_closed else self.low - 1)
        if self.high is not None and not math.isinf(self.high):
            bad.append(self.high if not right_closed else self.high + 1)
        if self.kind is float:
            bad.append(math.nan)
            if not (self.high is not None and math.isinf(self.high) and right_closed):
                bad.append(math.inf)
        else:
            bad.append(1.5)
        return [b for b in bad if not self.is_satisfied_by(b)]


def _num(x: float) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e6:
        return str(int(x)) if abs(x) >= 1 or x == 0 else repr(x)
    return repr(x) if not isinstance(x, float) else f"{x:g}"


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type (``1`` is not ``True``, ``1.0`` is not ``1``)."""
    return type(a) is type(b) and a == b


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set of values (names of methods, modes, ...).

    ``kind`` is the accepted type (or a tuple of types, e.g. ``(bool, str)`` for
    ``False, True or 'states'``); a value must equal one of ``values`` *and* have its
    type, so ``1`` never stands in for ``True``.
    """

    values: tuple
    kind: type | tuple = str

    def type_ok(self, value):
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        if isinstance(value, bool) and bool not in kinds:
            return False
        return isinstance(value, kinds)

    def value_ok(self, value):
        for valid in self.values:  # a loop, not any(...): checked on every solve
            if value is valid or _same(value, valid):
                return True
        return False

    def describe(self):
        words = [repr(v) for v in self.values]
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]

    def describe_range(self):
        return f"one of {list(self.values)}"

    def refusal(self, value):
        return f"is not one of {list(self.values)}"

    def invalid_examples(self):
        bad = ["not-an-option", 3, None, 1]
        return [b for b in bad if not self.is_satisfied_by(b)]


@dataclass(frozen=True)
class Flag(Constraint):
    """``True`` or ``False`` (not 0, 1 or a string)."""

    def type_ok(self, value):
        return isinstance(value, bool)

    def describe(self):
        return "True or False"

    def invalid_examples(self):
        return [0, 1, "yes", None]


@dataclass(frozen=True)
class InstanceOf(Constraint):
    """An instance of ``types`` (described as ``what``, e.g. ``"a torch.Tensor"``)."""

    types: type | tuple
    what: str

    def type_ok(self, value):
        return isinstance(value, self.types)

    def describe(self):
        return self.what

    def invalid_examples(self):
        return [b for b in ("text", 1.5, None) if not self.is_satisfied_by(b)]


@dataclass(frozen=True)
class IsCallable(Constraint):
    """A callable (``what`` says what it is called with)."""

    what: str = "a callable"

    def type_ok(self, value):
        return callable(value)

    def describe(self):
        return self.what

    def invalid_examples(self):
        return [1, "f", None]


@dataclass(frozen=True)
class NoneAllowed(Constraint):
    """``None`` (always used inside :class:`AnyOf`, e.g. "an int >= 1 or None")."""

    def type_ok(self, value):
        return value is None

    def describe(self):
        return "None"


@dataclass(frozen=True)
class AnyOf(Constraint):
    """Valid when any of ``constraints`` is; the ones whose type fits decide the value check."""

    constraints: tuple

    def type_ok(self, value):
        return any(c.type_ok(value) for c in self.constraints)

    def value_ok(self, value):
        return self.is_satisfied_by(value)

    def is_satisfied_by(self, value):
        for c in self.constraints:  # one pass (checked on every solve)
            if c.type_ok(value) and c.value_ok(value):
                return True
        return False

    def convert(self, value):
        for c in self.constraints:
            if c.is_satisfied_by(value):
                return c.convert(value)
        return value

    def describe(self):
        return " or ".join(c.describe() for c in self.constraints)

    def refusal(self, value):
        fitting = [c for c in self.constraints if c.type_ok(value)]
        words = " or ".join(c.describe_range() if c.type_ok(value) else c.describe() for c in self.constraints)
        verb = "is out of range" if any(isinstance(c, Interval) for c in fitting) else "is not valid"
        return f"{verb}: it must be {words}"

    def invalid_examples(self):
        seen: list[Any] = []
        for c in self.constraints:
            for b in c.invalid_examples():
                if not self.is_satisfied_by(b) and not any(b is s or _same(b, s) for s in seen):
                    seen.append(b)
        return seen


@dataclass(frozen=True)
class Arg:
    """A declared argument: its ``constraint`` and the ``fix`` an error suggests (e.g. ``"e.g. tol=1e-6"``).

    Specs (dicts name -> :class:`Arg` or bare :class:`Constraint`) are what an entry point
    declares; :func:`check_args` and :func:`check_options` read either form.
    """

    constraint: Constraint
    fix: str = ""


def _unpack(declared: Constraint | Arg) -> tuple[Constraint, str]:
    return (declared.constraint, declared.fix) if isinstance(declared, Arg) else (declared, "")


def check(name: str, value: Any, constraint: Constraint | Arg, *, fix: str = "", default: Any = ...) -> Any:
    """``value`` if it satisfies ``constraint`` (converted: a numpy float becomes a float);
    otherwise a :class:`WrongTypeError` (wrong type) or ``ValueError`` (out of range) naming
    ``name``, the value, the valid set, the default (when given) and ``fix`` (an :class:`Arg`
    brings its own)."""
    constraint, declared_fix = _unpack(constraint)
    if constraint.is_satisfied_by(value):
        return constraint.convert(value)
    fix = fix or declared_fix
    tail = (f" (default {default!r})" if default is not ... else "") + (f"; {fix}" if fix else "")
    if not constraint.type_ok(value):
        raise WrongTypeError(
            f"{name}={short_repr(value)} must be {constraint.describe()}, not {type(value).__name__}{tail}"
        )
    raise ValueError(f"{name}={short_repr(value)} {constraint.refusal(value)}{tail}")


def check_args(
    values: Mapping[str, Any], spec: Mapping[str, Constraint | Arg], *, defaults: Mapping[str, Any] | None = None
) -> dict:
    """Each of ``values`` (keyword name -> value) checked against ``spec[name]`` (in the order
    of ``values``); returns the converted values. Every name must be declared in ``spec``
    (a missing declaration is a bug of the entry point, so it raises ``KeyError``)."""
    defaults = defaults or {}
    return {key: check(key, value, spec[key], default=defaults.get(key, ...)) for key, value in values.items()}


def check_options(
    options: Mapping | None,
    spec: Mapping[str, Constraint | Arg],
    defaults: Mapping[str, Any],
    *,
    name: str = "options",
    owner: str = "",
    as_keywords: bool = False,
) -> dict:
    """``defaults`` updated with ``options``, each value checked against ``spec``.

    An unknown key raises :class:`UnknownNameError` listing the known ones (``owner`` says
    whose options they are, e.g. ``"method='dopri5'"``); a bad value raises as :func:`check`
    does, naming ``options['key']`` (or ``key`` alone with ``as_keywords=True``, for options
    passed as keyword arguments). Keys in ``defaults`` without a constraint in ``spec`` are
    passed on unchecked (the caller checks them, e.g. a callable ``norm``).
    """
    if options is None:
        return dict(defaults)
    if not isinstance(options, Mapping):
        raise WrongTypeError(f"{name}={short_repr(options)} must be a dict or None, not {type(options).__name__}")
    unknown = sorted(str(k) for k in options if k not in defaults)
    if unknown:
        known = ", ".join(defaults) if defaults else "none"
        whose = f" by {owner}" if owner else ""
        raise UnknownNameError(f"{name} keys {unknown} are not understood{whose}; known keys: {known}")
    merged = dict(defaults)
    for key, value in options.items():
        if key in spec:
            label = str(key) if as_keywords else f"{name}[{key!r}]"
            merged[key] = check(label, value, spec[key], default=defaults[key])
        else:
            merged[key] = value
    return merged


def argparse_type(constraint: Constraint | Arg, parse: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """An ``argparse`` ``type=`` that parses the text (``parse``: default from the constraint,
    ``int`` or ``float``) and refuses values outside ``constraint`` with the same wording as
    the library (argparse prefixes the flag's name: ``argument --batch-size: 0 is out of
    range: it must be >= 1``)."""
    constraint, fix = _unpack(constraint)
    if parse is None:
        parse = constraint.kind if isinstance(constraint, Interval) else str
    tail = f"; {fix}" if fix else ""

    def convert(text: str):
        try:
            value = parse(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{text!r} is not {constraint.describe()}{tail}") from None
        if not constraint.is_satisfied_by(value):
            raise argparse.ArgumentTypeError(f"{text} {constraint.refusal(value)}{tail}")
        return constraint.convert(value)

    convert.__name__ = getattr(parse, "__name__", "value")  # argparse names the type in its messages
    return convert


def invalid_values(constraint: Constraint | Arg) -> list:
    """Values ``constraint`` refuses, for tests (each must raise TypeError or ValueError)."""
    return _unpack(constraint)[0].invalid_examples()
