"""Argument checks for :func:`nodecourse.odeint`: each error names the argument, the value and the fix."""
from __future__ import annotations

import math
import numbers

import torch

from nodecourse.solvers.registry import ADAPTIVE, FIXED, SOLVERS

GRADIENTS = ("backprop", "checkpoint")
NOT_YET_GRADIENTS = ("adjoint",)
BACKENDS = ("nodecourse", "torchdiffeq")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_func(func) -> None:
    if not callable(func):
        raise TypeError(f"func={_short(func)} is not callable; pass a function or nn.Module f(t, y) -> dy/dt")


def check_y0(y0, per_sample: bool) -> None:
    if not isinstance(y0, torch.Tensor):
        raise TypeError(f"y0 must be a torch.Tensor, got {type(y0).__name__} {_short(y0)}; "
                        f"wrap it: torch.as_tensor(y0, dtype=torch.float32)")
    if not torch.is_floating_point(y0):
        raise TypeError(f"y0 has dtype {y0.dtype}; the solvers need a real floating dtype: "
                        f"use y0.float() or y0.double()")
    if y0.numel() == 0:
        raise ValueError(f"y0 has shape {tuple(y0.shape)} with no elements; give at least one state variable")
    if not bool(torch.isfinite(y0).all()):
        raise ValueError("y0 contains NaN or inf; the initial state must be finite")
    if per_sample and y0.dim() < 1:
        raise ValueError(f"per_sample=True needs y0 with a batch dimension first, shape (B, ...); "
                         f"got shape {tuple(y0.shape)}")


def check_t(t, y0: torch.Tensor) -> list[float]:
    """Validate ``t`` and return it as a list of floats."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"t must be a 1-D torch.Tensor of times, got {type(t).__name__} {_short(t)}; "
                        f"use torch.tensor(t, dtype=y0.dtype, device=y0.device)")
    if t.dim() != 1 or t.numel() < 1:
        raise ValueError(f"t must be 1-D with at least one time, got shape {tuple(t.shape)}; "
                         f"for a single interval use torch.tensor([t0, t1])")
    if not torch.is_floating_point(t):
        raise TypeError(f"t has dtype {t.dtype}; use a floating dtype, e.g. t.to(y0.dtype)")
    if t.requires_grad:
        raise ValueError("t requires grad, but gradients with respect to the output times are not supported "
                         "(they would silently be zero); pass t.detach()")
    if t.device != y0.device:
        raise ValueError(f"t is on device {t.device} but y0 is on {y0.device}; move one: t.to(y0.device)")
    ts = [float(v) for v in t.detach().cpu().tolist()]
    if not all(math.isfinite(v) for v in ts):
        raise ValueError(f"t contains NaN or inf: {_short(ts)}")
    if len(ts) > 1:
        diffs = [b - a for a, b in zip(ts[:-1], ts[1:])]
        if not (all(d > 0 for d in diffs) or all(d < 0 for d in diffs)):
            bad = next(i for i, d in enumerate(diffs) if d == 0 or (d > 0) != (diffs[0] > 0))
            raise ValueError(
                f"t must be strictly increasing or strictly decreasing; t[{bad}]={ts[bad]!r}, "
                f"t[{bad + 1}]={ts[bad + 1]!r} break the order. Sort and deduplicate it: torch.unique(t)")
    return ts


def _positive_number(name: str, value, hint: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={_short(value)} must be a positive real number ({hint})")
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name}={value!r} must be a finite number > 0 ({hint})")
    return value


def check_tolerances(rtol, atol) -> tuple[float, float]:
    return (_positive_number("rtol", rtol, "e.g. rtol=1e-6"), _positive_number("atol", atol, "e.g. atol=1e-8"))


def check_method(method: str, step_size, per_sample: bool):
    spec = SOLVERS[method]  # raises ValueError listing the valid names
    if spec.kind == FIXED and step_size is None:
        raise ValueError(f"method={method!r} is a fixed-step method and needs step_size, e.g. step_size=0.01; "
                         f"or use an adaptive method: method='dopri5'")
    if spec.kind == ADAPTIVE and step_size is not None:
        raise ValueError(f"step_size={step_size!r} is only for fixed-step and implicit methods; "
                         f"method={method!r} chooses its own steps (use options={{'first_step': ...}} "
                         f"to set the first one)")
    if step_size is not None:
        _positive_number("step_size", step_size, "the largest step, e.g. step_size=0.01")
    if per_sample and spec.kind != ADAPTIVE:
        adaptive = [n for n, s in SOLVERS.items() if s.kind == ADAPTIVE]
        raise ValueError(f"per_sample=True works with the adaptive methods {adaptive}, not method={method!r}")
    return spec


def check_max_steps(max_steps) -> int:
    if isinstance(max_steps, bool) or not isinstance(max_steps, numbers.Integral):
        raise TypeError(f"max_steps={_short(max_steps)} must be an int >= 1, e.g. max_steps=10_000")
    if max_steps < 1:
        raise ValueError(f"max_steps={max_steps} must be >= 1, e.g. max_steps=10_000")
    return int(max_steps)


def check_gradient(gradient, spec, per_sample: bool, backend: str) -> None:
    if gradient == "checkpoint":
        if spec.kind not in (FIXED, ADAPTIVE) or per_sample or backend != "nodecourse":
            explicit = [n for n, s in SOLVERS.items() if s.kind in (FIXED, ADAPTIVE)]
            raise ValueError(f"gradient='checkpoint' works with backend='nodecourse', per_sample=False and the "
                             f"explicit methods {explicit}; got method={spec.name!r}, per_sample={per_sample}, "
                             f"backend={backend!r}. Use gradient='backprop' here")
        return
    if gradient in GRADIENTS:
        return
    if gradient in NOT_YET_GRADIENTS:
        raise ValueError(f"gradient={gradient!r} is not available in this version; valid values: {list(GRADIENTS)}")
    raise ValueError(f"gradient={_short(gradient)} is not one of {list(GRADIENTS)}")


def check_flag(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name}={_short(value)} must be True or False")
    return value


def check_backend(backend) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend={_short(backend)} is not one of {list(BACKENDS)}")


def merge_options(options, defaults: dict, method: str) -> dict:
    """Defaults updated with ``options``; an unknown key raises ``TypeError`` listing the known ones."""
    if options is None:
        return dict(defaults)
    if not isinstance(options, dict):
        raise TypeError(f"options={_short(options)} must be a dict or None")
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        known = ", ".join(defaults) if defaults else "none"
        raise TypeError(f"options {unknown} are not understood by method={method!r}; known options: {known}")
    merged = dict(defaults)
    merged.update(options)
    for key in ("safety", "ifactor", "dfactor", "max_step", "newton_tol"):
        if key in options:
            _positive_number(f"options['{key}']", options[key], f"default {defaults[key]}")
    if options.get("first_step") is not None:
        _positive_number("options['first_step']", options["first_step"], "the first |h|, e.g. 1e-3")
    for key in ("max_newton_iters", "max_nonfinite_retries"):
        if key in options:
            value = options[key]
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"options['{key}']={_short(value)} must be an int >= 1 (default {defaults[key]})")
    return merged
