"""Argument checks for :func:`nodecourse.odeint`: each error names the argument, the value and the fix."""
from __future__ import annotations

import math
import numbers

import torch

from nodecourse.solvers.registry import ADAPTIVE, FIXED, IMPLICIT, SOLVERS, spec_for

GRADIENTS = ("backprop", "adjoint", "checkpoint")
NOT_YET_GRADIENTS: tuple = ()
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
    if t.device != y0.device:
        raise ValueError(f"t is on device {t.device} but y0 is on {y0.device}; move one: t.to(y0.device)")
    ts = [float(v) for v in t.detach().cpu().tolist()]
    if not all(math.isfinite(v) for v in ts):
        raise ValueError(f"t contains NaN or inf: {_short(ts)}")
    if len(ts) > 1:
        diffs = [b - a for a, b in zip(ts[:-1], ts[1:])]
        if not (all(d > 0 for d in diffs) or all(d < 0 for d in diffs)):
            bad = next(i for i, d in enumerate(diffs) if d == 0 or (d > 0) != (diffs[0] > 0))
            if len(ts) == 2:
                raise ValueError(
                    f"t={ts} has zero length (t[0] == t[1]): there is nothing to solve and y(t1) = y0. "
                    f"Skip the solve for a zero-length interval (e.g. `ys = y0[None]` when t1 == t0)")
            if diffs[bad] == 0:
                raise ValueError(
                    f"t must be strictly increasing or strictly decreasing; t[{bad}]={ts[bad]!r} and "
                    f"t[{bad + 1}]={ts[bad + 1]!r} repeat a time. If you want the state at a repeated time "
                    f"twice, solve at torch.unique(t, return_inverse=True)[0] and index with the inverse; if an "
                    f"interval of zero length is what you meant, skip that solve (the state does not change)")
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


def check_method(method, step_size, per_sample: bool):
    """A name or a ButcherTableau -> its :class:`SolverSpec`, checked against ``step_size`` and ``per_sample``."""
    spec = spec_for(method)  # unknown names raise ValueError listing the valid ones
    method = spec.name
    if spec.kind == IMPLICIT:
        from nodecourse.solvers.implicit import theta_of

        theta_of(spec.tableau)  # raises when the implicit integrator cannot run this tableau
        if step_size is None and spec.error_order is None:
            raise ValueError(f"method={method!r} is implicit without an error estimate (no b_low): give "
                             f"step_size for fixed steps, or add b_low and embedded_order to the tableau")
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


#: Half-precision dtypes the solvers refuse (their rounding swamps the error control).
HALF_DTYPES = (torch.float16, torch.bfloat16)

#: A tolerance this far below the dtype's epsilon cannot be met (the error test compares
#: differences of states that carry eps of relative rounding error each).
RESOLUTION_FACTOR = 10.0


def check_precision(y0: torch.Tensor, rtol: float, atol: float, spec, step_size) -> None:
    """Refuse half precision, and tolerances the dtype cannot resolve, before any solving."""
    if y0.dtype in HALF_DTYPES:
        eps = torch.finfo(y0.dtype).eps
        raise TypeError(
            f"y0 has dtype {y0.dtype} (eps={eps:.1e}): too coarse for the step-size control, which then "
            f"can report success with a wrong answer. Solve in float32 and cast back: "
            f"odeint(func, y0.float(), t.float(), ...).ys.to({y0.dtype}) (func must accept float32; "
            f"e.g. a module: func.float())")
    adaptive = spec.kind == ADAPTIVE or (spec.kind == IMPLICIT and step_size is None)
    if not adaptive:
        return
    eps = torch.finfo(y0.dtype).eps
    limit = eps / RESOLUTION_FACTOR
    size = max(1.0, float(y0.detach().abs().max()))
    if rtol < limit and atol < limit * size:
        dtype = str(y0.dtype).replace("torch.", "")
        raise ValueError(
            f"rtol={rtol!r} and atol={atol!r} ask for less error per step than {dtype} can resolve "
            f"(eps={eps:.1e}; the error test could never pass or would overflow). Use rtol >= {limit:.1e} "
            f"(e.g. rtol={max(1e3 * eps, 1e-12):.0e})" + (", or solve in float64: y0.double()"
                                                         if y0.dtype != torch.float64 else ""))


def check_record(record_steps, on_step, per_sample: bool, gradient) -> bool | str:
    """``record_steps`` in (False, True, "states"); ``on_step`` None or callable."""
    if not (record_steps is False or record_steps is True or record_steps == "states"):
        raise ValueError(f"record_steps={_short(record_steps)} must be False, True or 'states'")
    if on_step is not None and not callable(on_step):
        raise TypeError(f"on_step={_short(on_step)} must be a callable taking a StepEvent, or None")
    if record_steps == "states" and per_sample:
        raise ValueError("record_steps='states' keeps one trajectory's states; with per_sample=True use "
                         "record_steps=True (times, sizes and flags per element)")
    if (record_steps or on_step is not None) and gradient == "adjoint":
        raise ValueError("record_steps/on_step are not available with gradient='adjoint' in this version; "
                         "record the forward steps with gradient='backprop' under torch.no_grad()")
    return record_steps


def check_max_steps(max_steps) -> int:
    if isinstance(max_steps, bool) or not isinstance(max_steps, numbers.Integral):
        raise TypeError(f"max_steps={_short(max_steps)} must be an int >= 1, e.g. max_steps=10_000")
    if max_steps < 1:
        raise ValueError(f"max_steps={max_steps} must be >= 1, e.g. max_steps=10_000")
    return int(max_steps)


def check_gradient(gradient, spec, per_sample: bool, backend: str) -> None:
    if gradient == "checkpoint":
        if per_sample or backend != "nodecourse":
            raise ValueError(f"gradient='checkpoint' replays the solver's own steps: it works with "
                             f"backend='nodecourse' and per_sample=False (every method); got per_sample={per_sample}, "
                             f"backend={backend!r}. Use gradient='backprop' or 'adjoint' here")
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


def check_backend(backend, per_sample: bool = False, spec=None) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend={_short(backend)} is not one of {list(BACKENDS)}")
    if backend == "torchdiffeq":
        if per_sample:
            raise ValueError("per_sample=True needs backend='nodecourse' (torchdiffeq steps the whole batch together)")
        if spec is not None and spec.torchdiffeq is None:
            named = [n for n, s in SOLVERS.items() if s.torchdiffeq]
            raise ValueError(f"method={spec.name!r} has no torchdiffeq counterpart; use backend='nodecourse' "
                             f"or one of {named}")


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
    for key, value in options.items():
        if key in OPTION_RANGES and not (key == "first_step" and value is None):
            merged[key] = _in_range(key, value, defaults[key], *OPTION_RANGES[key])
    return merged


#: option -> (kind, low, high, low_open, high_open, words); kind "real" or "int".
OPTION_RANGES = {
    "safety": ("real", 0.0, 1.0, True, False, "in (0, 1]"),
    "ifactor": ("real", 1.0, math.inf, False, True, ">= 1"),
    "dfactor": ("real", 0.0, 1.0, True, True, "in (0, 1)"),
    "first_step": ("real", 0.0, math.inf, True, True, "> 0 (the first |h|)"),
    "max_step": ("real", 0.0, math.inf, True, False, "> 0 (inf for no limit)"),
    "newton_tol": ("real", 0.0, math.inf, True, True, "> 0"),
    "max_newton_iters": ("int", 1, math.inf, False, True, ">= 1"),
    "max_nonfinite_retries": ("int", 1, math.inf, False, True, ">= 1"),
}


def _in_range(key, value, default, kind, low, high, low_open, high_open, words):
    """``value`` checked against the range; errors name the option, the value and the range."""
    name = f"options['{key}']"
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name}={_short(value)} must be an int {words} (default {default})")
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={_short(value)} must be a real number {words} (default {default})")
    number = int(value) if kind == "int" else float(value)
    below = number <= low if low_open else number < low
    above = number >= high if high_open else number > high
    if below or above or number != number:
        raise ValueError(f"{name}={number!r} is out of range: it must be {words} (default {default})")
    return number
