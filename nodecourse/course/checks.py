"""The check helper that exercise notebooks call after each task.

A check cell looks like::

    # NBVAL_CHECK_OUTPUT
    from nodecourse.course.checks import check, close
    check("euler-step", close(y1, expected, atol=1e-12), f"max error {err:.1e}")

On success it prints one line, ``PASS <name>``, which is the cell's expected
output. On failure it raises :class:`CheckFailed`, so the cell errors and the
grader reports the reason. In a notebook the error shows as its one line,
``FAIL <name>: <what is wrong>``, not as a traceback; the traceback is there on
request: :func:`show_traceback` prints the last failed check's, and with the
environment variable ``NODECOURSE_TRACEBACK=1`` (``%env NODECOURSE_TRACEBACK=1``
in a cell) every failed check shows its own.

``passed`` must be a real truth value: a ``bool``, a numpy bool or a one-element
bool tensor of the plain ``torch.Tensor`` type. Anything else (an object whose
``__bool__`` or ``__eq__`` was written to say True) fails the check with a
reason.

Compare a learner's values with :func:`close`, :func:`equal` and :func:`same`:
they turn the values into plain float64 numpy arrays (or plain Python
numbers) through functions captured when this module was imported, which the
grader does before any answer runs, and reject objects that are not plain
numbers, arrays or tensors. So a patched ``torch.allclose``, a tensor subclass
whose comparisons always say True, or an object with a forged ``__eq__``
cannot make them pass.
"""

from __future__ import annotations

import builtins as _builtins
import math as _math
import os as _os

import numpy as _np

__all__ = [
    "CheckFailed",
    "NotPlainValue",
    "TRACEBACK_ENV",
    "check",
    "close",
    "equal",
    "plain",
    "same",
    "show_traceback",
]

# Captured at import (before any answer ran in the grader's kernel): later
# patches of these names do not reach the functions below.
_isinstance, _type, _len, _float, _bool, _abs = (
    _builtins.isinstance,
    _builtins.type,
    _builtins.len,
    _builtins.float,
    _builtins.bool,
    _builtins.abs,
)
_print, _zip, _all = _builtins.print, _builtins.zip, _builtins.all
_isfinite, _isnan = _math.isfinite, _math.isnan
_ndarray, _np_array, _np_bool, _np_float64 = _np.ndarray, _np.array, _np.bool_, _np.float64
_np_generic = _np.generic
_ndarray_tolist = _np.ndarray.tolist
_ndarray_shape = _np.ndarray.shape.__get__

try:
    import torch as _torch

    _Tensor, _Parameter = _torch.Tensor, _torch.nn.Parameter
    _TensorBase = _torch._C.TensorBase
    # C methods of the tensor base class, called unbound: a subclass cannot override them here.
    _t_detach, _t_cpu, _t_to, _t_numpy, _t_numel, _t_is_complex = (
        _TensorBase.detach,
        _TensorBase.cpu,
        _TensorBase.to,
        _TensorBase.numpy,
        _TensorBase.numel,
        _TensorBase.is_complex,
    )
    _t_resolve_conj, _t_resolve_neg = _TensorBase.resolve_conj, _TensorBase.resolve_neg
    _t_dtype = _TensorBase.dtype.__get__
    _float64, _torch_bool = _torch.float64, _torch.bool
    _NoTorchFunction = _torch._C.DisableTorchFunction
except ImportError:  # the checks also work without torch
    _torch = None

_PLAIN_SCALARS = (bool, int, float)


TRACEBACK_ENV = "NODECOURSE_TRACEBACK"
"""Set to 1 (not empty, not 0) and a failed check shows its whole traceback in a notebook."""

_last_failure: BaseException | None = None


class CheckFailed(AssertionError):
    """A check in an exercise notebook did not pass; its text is the ``FAIL <name>: ...`` line.

    IPython shows an exception through its ``_render_traceback_`` when it has one: here the FAIL
    line and how to see the traceback, or the whole traceback when :data:`TRACEBACK_ENV` asks for
    it. Only the display changes: the cell still errors (nbval and the grader read the error's name
    and text, not its display).
    """

    def _render_traceback_(self) -> list[str]:
        global _last_failure
        _last_failure = self
        if _os.environ.get(TRACEBACK_ENV, "") not in ("", "0"):
            return _traceback_lines(self)
        return [
            str(self),
            f"(where it failed: run nodecourse.course.checks.show_traceback(), or set {TRACEBACK_ENV}=1)",
        ]


def _traceback_lines(exc: BaseException) -> list[str]:
    """``exc``'s whole traceback (its cause included) as lines: IPython's, coloured, in a kernel."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            return list(shell.InteractiveTB.structured_traceback(_type(exc), exc, exc.__traceback__))
    except Exception:  # noqa: BLE001 - no IPython, or it could not format: the standard library's text
        pass
    import traceback

    return "".join(traceback.format_exception(_type(exc), exc, exc.__traceback__)).rstrip("\n").split("\n")


def show_traceback() -> None:
    """Print the whole traceback of the last check that failed in this kernel (the display of a
    failed check is its FAIL line only)."""
    if _last_failure is None:
        _print("no check has failed in this kernel yet")
        return
    _print("\n".join(_traceback_lines(_last_failure)))


class NotPlainValue(TypeError):
    """A value given to a comparison is not a plain number, array or tensor."""


_refusal: str | None = None


def _refuse(reason: str | None) -> None:
    """Set by the grader before each check cell: a reason no check may pass (None: none)."""
    global _refusal
    _refusal = reason or None


def _truth(passed) -> bool:
    t = _type(passed)
    if t is bool:
        return passed
    if t is _np_bool:
        return _bool(_ndarray_tolist(_np_array(passed)))
    if _torch is not None and t is _Tensor:
        with _NoTorchFunction():
            if _t_numel(passed) == 1 and _t_dtype(passed) == _torch_bool:
                return _ndarray_tolist(_t_numpy(_t_cpu(_t_detach(passed))).reshape(-1))[0] is True
    raise CheckFailed(
        f"the check's result is a {t.__name__}, not a bool; compare values with "
        "nodecourse.course.checks.close / equal / same"
    )


def check(name: str, passed, detail: str = "") -> None:
    """Print ``PASS name`` when ``passed`` is true, else raise :class:`CheckFailed` with ``detail``."""
    if _type(name) is not str or not name:
        raise ValueError(f"name={name!r}: give each check a short non-empty name")
    if _refusal:
        raise CheckFailed(f"FAIL {name}: {_refusal}")
    try:
        truth = _truth(passed)
    except CheckFailed as exc:  # the FAIL line names the check whatever went wrong
        raise CheckFailed(f"FAIL {name}: {exc}") from None
    if truth:
        _print(f"PASS {name}")
        return
    raise CheckFailed(f"FAIL {name}" + (f": {detail}" if detail else ""))


def plain(value) -> "_np.ndarray":
    """``value`` as a new float64 numpy array, via functions captured before any answer ran.

    Accepts Python bool/int/float, numpy arrays and scalars, torch tensors (any
    device; a subclass is read through the base class, so its overrides are
    not called), and (nested) lists/tuples of these. Raises
    :class:`NotPlainValue` for anything else.
    """
    t = _type(value)
    if t in _PLAIN_SCALARS:
        return _np_array(_float(value), dtype=_np_float64)
    if _torch is not None and _isinstance(value, _TensorBase):
        with _NoTorchFunction():
            if _t_is_complex(value):
                raise NotPlainValue("a complex tensor; compare real values")
            base = _t_resolve_neg(_t_resolve_conj(_t_detach(value)))
            return _np_array(_t_numpy(_t_to(_t_cpu(base), _float64)), dtype=_np_float64, copy=True)
    if _isinstance(value, (_ndarray, _np_generic)):
        arr = _np_array(value, dtype=_np_float64, copy=True, subok=False)
        if _type(arr) is not _ndarray:
            raise NotPlainValue(f"an array of type {t.__name__}")
        return arr
    if t is list or t is tuple:
        parts = [plain(v) for v in value]
        return _np_array(parts, dtype=_np_float64) if parts else _np_array([], dtype=_np_float64)
    raise NotPlainValue(f"a {t.__module__}.{t.__qualname__}: give numbers, arrays or tensors")


def _as_plain(label: str, value):
    try:
        arr = plain(value)
        return _ndarray_tolist(arr), _ndarray_shape(arr)
    except NotPlainValue as exc:
        raise CheckFailed(f"{label} is {exc}") from None
    except ValueError as exc:  # ragged nested lists
        raise CheckFailed(f"{label} cannot be read as an array: {exc}") from None


def _flat(x):
    if _type(x) is list:
        out = []
        for v in x:
            out += _flat(v)
        return out
    return [x]


def close(actual, expected, *, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    """True when ``actual`` and ``expected`` have the same shape and
    ``|actual - expected| <= atol + rtol * |expected|`` everywhere (NaN only where NaN).

    Both are read with :func:`plain`; a value that is not a plain number, array
    or tensor makes the check fail with a reason.
    """
    a, a_shape = _as_plain("the value checked", actual)
    e, e_shape = _as_plain("the expected value", expected)
    if a_shape != e_shape:
        return False
    for x, y in _zip(_flat(a), _flat(e)):
        if _isnan(x) or _isnan(y):
            if not (_isnan(x) and _isnan(y)):
                return False
            continue
        if x == y:
            continue  # equal infinities included
        if not (_isfinite(x) and _isfinite(y)) or _abs(x - y) > atol + rtol * _abs(y):
            return False
    return True


def equal(actual, expected) -> bool:
    """True when ``actual`` and ``expected`` have the same shape and exactly the same values."""
    return close(actual, expected, rtol=0.0, atol=0.0)


def same(actual, expected) -> bool:
    """Exact equality for plain Python data (str, bool, int, float, None, tuples and lists of
    them), compared without calling any method of ``actual``: a forged ``__eq__`` is not used."""
    t = _type(actual)
    if t is not _type(expected) and not (t in (int, float) and _type(expected) in (int, float)):
        return False
    if t in (list, tuple):
        return _len(actual) == _len(expected) and _all(same(x, y) for x, y in _zip(actual, expected))
    if t in (str, bool, int, float) or actual is None:
        return actual == expected  # both exact built-in types: their own comparison
    return False
