"""Plain data between processes: what a task's answer may be on its way to the grader.

:func:`encode` turns a task's result into JSON-able data: numbers, strings,
booleans, None, lists, string-keyed dicts, and arrays (a tensor or numpy array
becomes ``{"__array__": nested list, "shape": [...], "dtype": "...",
"requires_grad": bool}``, read through the tensor base class's C methods, so a
subclass's overrides are not called). Anything else is refused by name.

:func:`decode` is the grader's side: ``json.loads`` of text (never pickle, never
an object constructor), then a walk that accepts only those types, within size
and depth limits, turning arrays into :class:`Array`. Whatever the learner's
process sent, the grader gets plain values or :class:`NotPlain`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

MAX_TEXT = 50_000_000  # characters of JSON from one task
MAX_DEPTH = 32
ARRAY_KEY = "__array__"


class NotPlain(ValueError):
    """A value that is not plain data (or text that does not decode to it)."""


@dataclass(frozen=True)
class Array:
    """An array as the grader holds it: float64 values, plus what the sender said of it."""

    values: np.ndarray  # float64 (booleans as 0.0 / 1.0)
    dtype: str  # the sender's dtype, e.g. "torch.float64", "float32", "torch.bool"
    requires_grad: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)


def _encode_tensor(value) -> dict:
    import torch

    base = torch._C.TensorBase
    with torch._C.DisableTorchFunction():
        if base.is_complex(value):
            raise NotPlain("a complex tensor; return real values")
        t = base.detach(value)
        t = base.resolve_neg(base.resolve_conj(t))
        dtype = str(base.dtype.__get__(t))
        requires_grad = bool(base.requires_grad.__get__(value))
        arr = np.array(base.numpy(base.cpu(t)), copy=True)
    return {ARRAY_KEY: arr.tolist(), "shape": list(arr.shape), "dtype": dtype, "requires_grad": requires_grad}


def encode(value, _depth: int = 0):
    """``value`` as JSON-able plain data (see the module docstring); :class:`NotPlain` otherwise."""
    if _depth > MAX_DEPTH:
        raise NotPlain("nested too deeply")
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return value
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    try:
        import torch

        if isinstance(value, torch._C.TensorBase):
            return _encode_tensor(value)
    except ImportError:
        pass
    if isinstance(value, np.ndarray):
        if np.iscomplexobj(value):
            raise NotPlain("a complex array; return real values")
        arr = np.array(value, copy=True, subok=False)
        return {ARRAY_KEY: arr.tolist(), "shape": list(arr.shape), "dtype": str(arr.dtype), "requires_grad": False}
    if t in (list, tuple):
        return [encode(v, _depth + 1) for v in value]
    if t is dict and all(type(k) is str for k in value):
        return {k: encode(v, _depth + 1) for k, v in value.items()}
    raise NotPlain(f"a {t.__module__}.{t.__qualname__}; return numbers, tensors or arrays")


def dumps(value) -> str:
    """:func:`encode` then JSON text (NaN and infinities allowed)."""
    return json.dumps(encode(value), allow_nan=True)


def _refuse_constant(name):
    if name in ("NaN", "Infinity", "-Infinity"):
        return float(name.replace("Infinity", "inf").replace("NaN", "nan"))
    raise NotPlain(f"unknown constant {name!r}")


def _walk(value, depth: int):
    if depth > MAX_DEPTH:
        raise NotPlain("nested too deeply")
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return value
    if t is list:
        return [_walk(v, depth + 1) for v in value]
    if t is dict:
        if ARRAY_KEY in value:
            return _array(value)
        return {k: _walk(v, depth + 1) for k, v in value.items()}
    raise NotPlain(f"a {t.__name__} in the data")


def _array(value: dict) -> Array:
    shape = value.get("shape")
    if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
        raise NotPlain("an array without a valid shape")
    try:
        values = np.array(value[ARRAY_KEY], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise NotPlain(f"an array whose values are not numbers ({exc})") from None
    if values.shape != tuple(shape) or values.dtype != np.float64 or math.prod(shape) != values.size:
        raise NotPlain(f"an array whose values do not have its stated shape {shape}")
    dtype, grad = value.get("dtype"), value.get("requires_grad")
    if type(dtype) is not str or type(grad) is not bool:
        raise NotPlain("an array without a dtype or a requires_grad flag")
    return Array(values, dtype, grad)


def decode(text) -> object:
    """Plain data from JSON ``text`` (see the module docstring); :class:`NotPlain` for anything else."""
    if type(text) is not str:
        raise NotPlain(f"a reply of type {type(text).__name__}, not text")
    if len(text) > MAX_TEXT:
        raise NotPlain(f"a reply of {len(text)} characters (the limit is {MAX_TEXT})")
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise NotPlain(f"text that is not JSON ({str(exc)[:80]})") from None
    return _walk(data, 0)
