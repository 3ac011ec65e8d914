"""A check as a task spec, and the helpers its judge uses.

A :class:`Task` says, for one check of an exercise:

- ``inputs(seed)``: the inputs, built from a seed (the grader draws a new seed
  every run; the notebook's self-check uses seed 0). Built the same way in every
  process that needs them.
- ``run(namespace, inputs)``: calls the function under test, found by name in
  ``namespace``, on the inputs; returns what to keep of its answer (tensors,
  numbers, lists, dicts of these). In the grader it runs in the learner's
  isolated kernel, and only its result, as plain data, leaves that process.
- ``reference(inputs)``: the same quantities computed without the learner's
  code (the library, a closed form), in a separate clean process.
- ``judge(answer, reference)``: plain data in, :class:`Verdict` out; runs in the
  grader's process (and, for the self-check, in the learner's).
- ``needs``: the answer cells (task ids) whose code ``run`` calls;
  ``after``: checks whose failure would make this one fail too (named in the
  message, so a learner fixes the first cause first).
- ``observed``: non-empty when the check must watch the learner's process (peak
  memory, a hook): the weaker kind, listed in CONTRIBUTING's trust model.
- ``hints``: (text found in an error message, likely cause) pairs for errors a
  learner typically meets.
- ``library_answers``: ``"module:function"`` names of the library's functions
  that would answer a "write it yourself" task; while the task runs in the
  grader's kernel they raise "this task asks you to write it (...)". The
  exercise's declared reach (:data:`nodecourse.course.tasks.reach.RUN_TIME`:
  torchdiffeq's and torchdeq's solvers too) is added when the task is made.
- ``weight``: the points this check is worth in a gradebook (default 1).
- ``measure_keys`` / ``measure``: for an observed check, what the grader
  measures itself from outside the kernel (see the field's comment).
- ``decidable``: in words, the condition every draw of ``inputs`` meets (the
  draw rejects and redraws from the seed until it holds:
  :func:`nodecourse.course.tasks.draw.redraw`); "" when every draw is decidable.
- ``calibration``: the seeds the calibration test runs the solution on
  (``tests/test_grading_calibration.py``); checks that train a model use fewer.

Judges fail safe: :func:`judged` refuses values no task asks for (integers too
large for a float, NaN, infinities) by name before the judge sees them, and
turns any exception inside a judge into that check's failure, with its cause.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from nodecourse.course.tasks.plain import Array


@dataclass(frozen=True)
class Verdict:
    """A judge's decision: passed, and what to tell the learner (the symptom, then the likely cause)."""

    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class Task:
    """One check of an exercise as a task spec (see the module docstring)."""

    check: str
    needs: tuple[str, ...]
    inputs: Callable[[int], dict]
    run: Callable[[Mapping[str, Any], dict], Any]
    reference: Callable[[dict], Any]
    judge: Callable[[Any, Any], Verdict]
    after: tuple[str, ...] = ()
    observed: str = ""
    hints: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    library_answers: tuple[str, ...] = ()
    weight: float = 1.0
    # An observed check measured from outside: ``measure_keys(inputs)`` lists what to measure, and
    # ``measure(namespace, inputs, key)`` runs one of them in the learner's kernel; the grader reads the
    # kernel process's peak memory around each run and gives the judge ``reference["measured"]``,
    # a list of ``{"key": key, "bytes": peak above the start}`` (absent in the notebook's self-check).
    measure_keys: Callable[[dict], list] | None = None
    measure: Callable[[Mapping[str, Any], dict, Any], Any] | None = None
    decidable: str = ""
    calibration: int = 2000

    def __post_init__(self) -> None:
        # The declared reach of the task's exercise (found from the module its ``run`` lives in) adds
        # to what the exercise module lists: one table decides, whoever builds the task.
        from nodecourse.course.tasks import reach

        exercise = reach.exercise_of(getattr(self.run, "__module__", "") or "")
        declared = reach.run_time(exercise, self.check) if exercise else ()
        merged = tuple(dict.fromkeys((*self.library_answers, *declared)))
        object.__setattr__(self, "library_answers", merged)

    def hint_for(self, message: str) -> str:
        """The likely cause of an error whose message contains one of :attr:`hints`' texts."""
        for text, cause in self.hints:
            if text in message:
                return cause
        return ""


@contextlib.contextmanager
def neutral_state() -> Iterator[None]:
    """Build inputs the same way in every process: torch's default dtype (float32), gradients on,
    and the global random state untouched afterwards (inputs draw from their own generators)."""
    import torch

    dtype = torch.get_default_dtype()
    with torch.random.fork_rng(devices=[]), torch.enable_grad():
        torch.set_default_dtype(torch.float32)
        try:
            yield
        finally:
            torch.set_default_dtype(dtype)


def make_inputs(task: Task, seed: int) -> dict:
    """``task.inputs(seed)`` in :func:`neutral_state`."""
    with neutral_state():
        return task.inputs(seed)


def paired_inputs(task: Task, seed: int) -> tuple[dict, dict]:
    """Two independent copies of ``seed``'s inputs, for the learner's side and the reference's side,
    as the grader's two processes each draw them: one draw and a deep copy, since a draw may run
    dozens of solves to be decidable (``draw.redraw``). Drawn twice instead where a copy would not
    be independent: a function in the inputs keeps its closure in both copies, and a tensor that is
    not a leaf cannot be copied."""
    first = make_inputs(task, seed)
    second = independent_copy(first)
    return first, second if second is not None else make_inputs(task, seed)


def independent_copy(inputs: dict) -> dict | None:
    """A deep copy of ``inputs`` that shares no state with them, or None where a copy cannot be
    (a function keeping its closure, a tensor that is not a leaf): draw again instead."""
    if _holds_function(inputs):
        return None
    try:
        return copy.deepcopy(inputs)
    except RuntimeError:  # "Only Tensors created explicitly by the user support the deepcopy protocol"
        return None


def _holds_function(value, _depth: int = 0) -> bool:
    """Whether ``value`` holds state a deep copy would share: a closure, a bound method or a partial
    (a plain function without a closure is shared harmlessly). Walks containers and objects' fields."""
    if isinstance(value, types.FunctionType):
        return bool(value.__closure__)
    if isinstance(value, (types.MethodType, types.BuiltinMethodType, functools.partial)):
        return not isinstance(getattr(value, "__self__", None), types.ModuleType)
    if _depth > 12:
        return True  # too deep to vouch for: draw again
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
    elif hasattr(value, "__dict__") and not isinstance(value, (type, types.ModuleType)):
        items = list(vars(value).values())
    else:
        return False
    return any(_holds_function(v, _depth + 1) for v in items)


class Wrong(Exception):
    """Raised inside a judge to stop at the first symptom (caught by :func:`judged`)."""


# Integers beyond this are no count or size a task asks for, and float() of them can overflow.
BIG_INT = 2**63


def screen(value, where: str = "the answer", _depth: int = 0) -> None:
    """:class:`Wrong` naming the first value in ``value`` that no task asks for: an integer too large
    for a float, NaN or an infinity (in a number or a tensor)."""
    if _depth > 40:
        raise Wrong(f"{where} is nested too deeply")
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        if abs(value) >= BIG_INT:
            raise Wrong(
                f"{where} is an integer of {len(str(abs(value)))} digits: too large for any count or value "
                "this task asks for"
            )
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Wrong(f"{where} is {value!r}: every number the task asks for is finite")
        return
    if isinstance(value, Array):
        bad = ~np.isfinite(value.values)
        if bad.any():
            kind = "NaN" if np.isnan(value.values[bad]).any() else "an infinity"
            raise Wrong(
                f"{where} ({describe(value)}) holds {kind} at {int(bad.sum())} of {bad.size} entries: "
                "every value the task asks for is finite"
            )
        return
    if isinstance(value, list):
        for k, item in enumerate(value):
            screen(item, f"{where}[{k}]", _depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            screen(item, f"{where}[{key!r}]", _depth + 1)


def judged(fn: Callable[[Any, Any], None]) -> Callable[[Any, Any], Verdict]:
    """A judge written as a function that raises :class:`Wrong` with the symptom, or returns to pass.

    The answer is screened first (:func:`screen`); any other exception inside the judge (a value of
    a type or shape it did not expect) is the check's failure, never the grader's crash."""

    def judge(answer, reference) -> Verdict:
        try:
            screen(answer)
            fn(answer, reference)
        except Wrong as exc:
            return Verdict(False, str(exc))
        except Exception as exc:  # noqa: BLE001 - whatever the answer held, the grader goes on
            return Verdict(False, unjudgeable(exc))
        return Verdict(True)

    judge.__doc__ = fn.__doc__
    judge.__name__ = fn.__name__
    return judge


def unjudgeable(exc: BaseException) -> str:
    """The failure message for an exception raised while judging an answer."""
    text = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
    return (
        f"the answer could not be judged ({type(exc).__name__}{': ' + text if text else ''}); likely cause: "
        "a value of another type, length or shape than the task asks for"
    )


def field_of(answer, key: str, what: str):
    """``answer[key]`` from a task's plain result (a dict), or :class:`Wrong` saying what is missing."""
    if not isinstance(answer, dict) or key not in answer:
        raise Wrong(f"no {what} came back")
    return answer[key]


def array(value, what: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """``value`` as a float64 array, or :class:`Wrong` naming what came instead (and the shape expected)."""
    if isinstance(value, Array):
        arr = value.values
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        arr = np.array(float(value))
    else:
        raise Wrong(f"{what} is {describe(value)}, not a tensor")
    if shape is not None and tuple(arr.shape) != tuple(shape):
        raise Wrong(f"{what} has shape {tuple(arr.shape)}, expected {tuple(shape)}")
    return arr


def number(value, what: str) -> float:
    """``value`` as a float when it is a real number (an int or a float, not a bool), or :class:`Wrong`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Wrong(f"{what} is {describe(value)}, not a number")
    return float(value)


def items(value, n: int, what: str) -> list:
    """``value`` when it is a list of exactly ``n`` items, or :class:`Wrong` naming what came instead."""
    if not isinstance(value, list) or len(value) != n:
        raise Wrong(f"expected {n} {what}, got {describe(value)}")
    return value


def compared(answer, ref, key: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``(learner's, reference)`` arrays of ``key``: the learner's must be there, with the reference's shape."""
    expected = array(ref[key], "the reference")
    return array(field_of(answer, key, what), what, expected.shape), expected


def describe(value) -> str:
    """A short description of a plain value, for a message."""
    if isinstance(value, Array):
        return f"a {value.dtype} tensor of shape {value.shape}"
    if value is None:
        return "None"
    if isinstance(value, (list, dict)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"{type(value).__name__} {value!r}"[:80]


def max_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest absolute difference (inf when shapes differ or a value is not finite where the other is)."""
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):
        d = np.abs(a - b)
    return float(np.nanmax(np.where(np.isnan(a) != np.isnan(b), np.inf, d)))


def close(a: np.ndarray, b: np.ndarray, atol: float, rtol: float = 0.0) -> bool:
    """Same shape, and ``|a - b| <= atol + rtol |b|`` everywhere (NaN only where NaN)."""
    if a.shape != b.shape:
        return False
    if np.any(np.isnan(a) != np.isnan(b)):
        return False
    ok = np.isnan(a) | (a == b) | (np.abs(a - b) <= atol + rtol * np.abs(b))
    return bool(np.all(ok))


def show(arr: np.ndarray, n: int = 6) -> str:
    """The first ``n`` values of an array, rounded, for a message."""
    flat = arr.reshape(-1)
    body = ", ".join(f"{v:.6g}" for v in flat[:n])
    return f"[{body}{', ...' if flat.size > n else ''}]"


def likely(answer: np.ndarray, candidates: Mapping[str, np.ndarray], atol: float) -> str:
    """The first named mistake whose value ``answer`` matches ("" when none does)."""
    for cause, value in candidates.items():
        if close(answer, value, atol=atol, rtol=1e-9):
            return cause
    return ""
