"""Exercise 11 (beyond ODEs) as task specs: every input drawn from the seed.

References: the Euler-Maruyama formula evaluated here (one step), and Euler-Maruyama on geometric
Brownian motion in closed form (a product of ``1 + mu h + sigma dW`` over the steps) beside the exact
solution ``y0 exp((mu - sigma^2 / 2) T + sigma W(T))`` on the same Brownian increments (the strong
order); a batched matrix-vector product and the library's ``cdeint`` (the CDE contraction); the
library's interpolations (``nodecourse.cde.interpolate``) for the change of a path when one
observation changes.

Why this module is long: one exercise's task specs stay in one module:
:func:`~nodecourse.course.tasks.tasks_for` imports ``exNN`` by the exercise's key, and a task's run-time reach
rules are found from the module its ``run`` lives in (:func:`~nodecourse.course.tasks.reach.exercise_of`), so
a ``run`` moved elsewhere would lose them; exercise 11 has six checks, each with its inputs, run, reference
and judge.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from nodecourse.course.tasks.draw import F64, redraw
from nodecourse.course.tasks.draw import generator as _gen
from nodecourse.course.tasks.draw import integer as _integer
from nodecourse.course.tasks.draw import uniform as _uniform
from nodecourse.course.tasks.spec import (
    Task,
    Wrong,
    array,
    close,
    compared,
    describe,
    field_of,
    items,
    judged,
    likely,
    max_diff,
    number,
    show,
)

EXERCISE = "11_beyond_odes_exercises"

# --- em-step --------------------------------------------------------------------------------------


def _time(t) -> float | str:
    """A time a drift or diffusion was called with, as a float (or what it was instead)."""
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        return float(t)
    if isinstance(t, torch.Tensor) and t.numel() == 1:
        return float(t)
    return f"a {type(t).__name__}" + (f" of shape {tuple(t.shape)}" if isinstance(t, torch.Tensor) else "")


def _coefficients(inp: dict, calls: dict):
    """The drift ``tanh(y A + c t)`` and the diagonal diffusion ``s (1.5 + sin(y + w t))`` (entry i of g
    depends on entry i of y only), each recording the times it is called at."""
    A, c, s, w = inp["A"], inp["c"], inp["s"], inp["w"]

    def f(t, y):
        calls["f"].append(_time(t))
        return torch.tanh(y @ A + c * torch.as_tensor(t, dtype=y.dtype))

    def g(t, y):
        calls["g"].append(_time(t))
        return s * (1.5 + torch.sin(y + w * torch.as_tensor(t, dtype=y.dtype)))

    return f, g


def step_inputs(seed: int) -> dict:
    g = _gen(seed, 111)
    b, d = _integer(g, 2, 6), _integer(g, 1, 4)
    h = _uniform(g, 0.01, 0.2)
    return {
        "A": 0.7 * torch.randn(d, d, generator=g, dtype=F64),
        "c": torch.randn(d, generator=g, dtype=F64),
        "s": 0.3 + torch.rand(d, generator=g, dtype=F64),
        "w": torch.randn(d, generator=g, dtype=F64),
        "t": _uniform(g, 0.0, 1.0),
        "h": h,
        "y": torch.randn(b, d, generator=g, dtype=F64),
        "dw": math.sqrt(h) * torch.randn(b, d, generator=g, dtype=F64),
    }


def step_run(ns, inp) -> dict:
    calls: dict = {"f": [], "g": []}
    f, g = _coefficients(inp, calls)
    with torch.no_grad():
        out = ns["euler_maruyama_step"](f, g, inp["t"], inp["y"].clone(), inp["h"], inp["dw"].clone())
    return {"out": out, "f_calls": calls["f"], "g_calls": calls["g"]}


def step_reference(inp) -> dict:
    calls: dict = {"f": [], "g": []}
    f, g = _coefficients(inp, calls)
    t, y, h, dw = inp["t"], inp["y"], inp["h"], inp["dw"]
    fy, gy = f(t, y), g(t, y)
    return {
        "out": y + fy * h + gy * dw,
        "t": t,
        "sqrt_h": y + fy * h + gy * dw * math.sqrt(h),
        "noise_h": y + fy * h + gy * h,
        "drift_no_h": y + fy + gy * dw,
        "no_drift": y + gy * dw,
        "minus": y + fy * h - gy * dw,
    }


def _one_call_at(calls, what: str, t: float) -> None:
    if not isinstance(calls, list) or len(calls) != 1:
        raise Wrong(f"{what} was evaluated {describe(calls)} (times), expected exactly once, at t = {t:.6g}")
    if not isinstance(calls[0], float):
        raise Wrong(f"{what} was called with {calls[0]} as its time, expected t (a number or a 0-d tensor)")
    if abs(calls[0] - t) > 1e-12:
        raise Wrong(
            f"{what} was evaluated at t = {calls[0]:.6g}, expected t = {t:.6g}; likely cause: Euler-Maruyama "
            "evaluates drift and diffusion at the start of the step (Ito: nothing from the step's end)"
        )


@judged
def step_judge(answer, ref) -> None:
    expected = array(ref["out"], "the reference")
    got = array(field_of(answer, "out", "result"), "euler_maruyama_step's result", expected.shape)
    _one_call_at(field_of(answer, "f_calls", "calls"), "the drift f", ref["t"])
    _one_call_at(field_of(answer, "g_calls", "calls"), "the diffusion g", ref["t"])
    if not close(got, expected, atol=1e-13, rtol=1e-12):
        cause = likely(
            got,
            {
                "likely cause: dw is already the Brownian increment over the step (variance h): multiplying it "
                "by sqrt(h) scales the noise twice": array(ref["sqrt_h"], "a"),
                "likely cause: the noise term uses h, not the increment dw": array(ref["noise_h"], "b"),
                "likely cause: the drift is not multiplied by h": array(ref["drift_no_h"], "c"),
                "likely cause: the drift term f(t, y) h is missing": array(ref["no_drift"], "d"),
                "likely cause: the sign of the noise term": array(ref["minus"], "e"),
            },
            atol=1e-12,
        )
        raise Wrong(
            f"y1 = {show(got)}, y + f(t, y) h + g(t, y) dw = {show(expected)} (max difference "
            f"{max_diff(got, expected):.2e})" + (f"; {cause}" if cause else "")
        )


# --- em-order -------------------------------------------------------------------------------------

FACTORS = [1, 2, 4, 8, 16]
FINE_STEPS = 256
PATHS = 400
# The measured order must lie in ORDER_WINDOW; every draw has its exact order (of the reference's
# errors) inside ORDER_BAND, so a correct answer has a margin to the window on every seed.
ORDER_WINDOW = (0.3, 0.7)
ORDER_BAND = (0.38, 0.62)


def _fit(hs, errors) -> float:
    """The least-squares slope of log(error) against log(h)."""
    x, y = np.log(np.asarray(hs, dtype=float)), np.log(np.asarray(errors, dtype=float))
    return float(np.polyfit(x, y, 1)[0])


def _gbm(inp) -> dict:
    """Euler-Maruyama's end states (closed form) and the exact end state, on the draw's increments."""
    mu, sigma, y0, T, dw = inp["mu"], inp["sigma"], inp["y0"], inp["T"], inp["dw"]
    n = dw.shape[0]
    exact = y0 * torch.exp((mu - 0.5 * sigma**2) * T + sigma * dw.sum(0))
    no_ito = y0 * torch.exp(mu * T + sigma * dw.sum(0))
    em, skipped = [], []
    for k in FACTORS:
        h = T * k / n
        coarse = dw.reshape(n // k, k, *dw.shape[1:]).sum(1)
        em.append(y0 * torch.prod(1 + mu * h + sigma * coarse, dim=0))
        skipped.append(y0 * torch.prod(1 + mu * h + sigma * dw[::k], dim=0))
    return {"exact": exact, "no_ito": no_ito, "em": em, "skipped": skipped}


def _order_draw(g: torch.Generator) -> dict:
    T = 1.0
    return {
        "mu": _uniform(g, -0.5, 1.0),
        "sigma": _uniform(g, 0.6, 1.2),
        "y0": _uniform(g, 0.5, 2.0),
        "T": T,
        "dw": math.sqrt(T / FINE_STEPS) * torch.randn(FINE_STEPS, PATHS, 1, generator=g, dtype=F64),
        "factors": list(FACTORS),
    }


def _hs(inp) -> list[float]:
    return [inp["T"] * k / inp["dw"].shape[0] for k in inp["factors"]]


def _errors(inp) -> list[float]:
    paths = _gbm(inp)
    return [float((y - paths["exact"]).abs().mean()) for y in paths["em"]]


def order_inputs(seed: int) -> dict:
    return redraw(seed, 112, _order_draw, lambda inp: ORDER_BAND[0] < _fit(_hs(inp), _errors(inp)) < ORDER_BAND[1])


def order_run(ns, inp) -> dict:
    with torch.no_grad():
        out = ns["measure_strong_order"](
            inp["mu"], inp["sigma"], inp["y0"], inp["T"], inp["dw"].clone(), list(inp["factors"])
        )
    if isinstance(out, tuple):
        out = list(out)
    if isinstance(out, list) and out and isinstance(out[0], tuple):
        out[0] = list(out[0])
    return {"out": out}


def order_reference(inp) -> dict:
    paths, hs = _gbm(inp), _hs(inp)
    errors = [float((y - paths["exact"]).abs().mean()) for y in paths["em"]]
    return {
        "errors": errors,
        "order": _fit(hs, errors),
        "hs": hs,
        "no_ito": [float((y - paths["no_ito"]).abs().mean()) for y in paths["em"]],
        "skipped": [float((y - paths["exact"]).abs().mean()) for y in paths["skipped"]],
        "rms": [float((y - paths["exact"]).pow(2).mean().sqrt()) for y in paths["em"]],
        "max": [float((y - paths["exact"]).abs().max()) for y in paths["em"]],
    }


@judged
def order_judge(answer, ref) -> None:
    out = items(field_of(answer, "out", "result"), 2, "results (errors, order)")
    errors = items(out[0], len(ref["errors"]), "errors, one per factor")
    errors = np.array([number(e, f"errors[{i}]") for i, e in enumerate(errors)])
    expected = np.array(ref["errors"])
    if not close(errors, expected, atol=0.0, rtol=1e-9):
        cause = likely(
            errors,
            {
                "likely cause: the exact solution without the Ito correction (y0 exp((mu - sigma^2/2) T + "
                "sigma W(T)) is the solution of the Ito SDE)": np.array(ref["no_ito"]),
                "likely cause: every k-th fine increment is used, not the sum of k of them (the coarse path "
                "must be the same Brownian path)": np.array(ref["skipped"]),
                "likely cause: the root-mean-square error, not the mean absolute error": np.array(ref["rms"]),
                "likely cause: the largest error over the paths, not their mean": np.array(ref["max"]),
            },
            atol=1e-12,
        )
        raise Wrong(
            f"errors = {show(errors)}, expected {show(expected)} (mean |Y_N - y(T)| for step sizes "
            f"{show(np.array(ref['hs']))})" + (f"; {cause}" if cause else "")
        )
    order = number(out[1], "the order")
    if abs(order - ref["order"]) > 1e-6:
        cause = ""
        if abs(order + ref["order"]) < 1e-6:
            cause = "; likely cause: fitted against the number of steps, not the step size (the sign flips)"
        raise Wrong(
            f"order = {order:.6g}, but the least-squares slope of log(error) against log(h) of your errors is "
            f"{ref['order']:.6g}{cause}"
        )
    if not ORDER_WINDOW[0] < order < ORDER_WINDOW[1]:
        raise Wrong(f"order = {order:.3f}, outside {ORDER_WINDOW}: Euler-Maruyama's strong order is 0.5")


# --- cde-contract ---------------------------------------------------------------------------------

_WRONG_AXIS = (
    "likely cause: contracted over the wrong axis (the sum runs over channels, the last axis of f(z): "
    "out[b, i] = sum_j f[b, i, j] dX[b, j])"
)


def contract_inputs(seed: int) -> dict:
    g = _gen(seed, 113)
    hidden, channels = _integer(g, 2, 6), _integer(g, 2, 6)
    channels = channels + 1 if channels == hidden else channels  # different: a transpose fails on the shapes
    square = _integer(g, 2, 5)
    shapes = [
        (_integer(g, 2, 5), hidden, channels),  # hidden != channels
        (_integer(g, 2, 5), square, square),  # a transpose passes the shapes here, not the values
        (1, hidden, channels),  # batch 1: .squeeze() drops it
        (_integer(g, 2, 5), hidden, 1),  # channels 1
        (_integer(g, 2, 5), 1, channels),  # hidden 1
        (1, 1, 1),
    ]
    cases = [
        (torch.randn(b, h, c, generator=g, dtype=F64).requires_grad_(True), torch.randn(b, c, generator=g, dtype=F64))
        for b, h, c in shapes
    ]
    return {"cases": cases}


def contract_run(ns, inp) -> dict:
    out = []
    for fz, dx in inp["cases"]:
        try:
            out.append(ns["cde_vector_field"](fz.clone(), dx.clone()))
        except NotImplementedError:
            raise
        except (RuntimeError, ValueError, IndexError, TypeError) as exc:  # a shape error: named per case
            if str(exc).startswith("this task asks you to write it"):
                raise
            out.append(f"{type(exc).__name__}: {str(exc).strip()[:200]}")
    return {"out": out}


def contract_reference(inp) -> dict:
    cases = []
    for fz, dx in inp["cases"]:
        fz = fz.detach()
        b, h, c = fz.shape
        case = {"shape": [b, h, c], "out": torch.einsum("bhc,bc->bh", fz, dx)}
        if h == c:
            case["transposed"] = torch.einsum("bch,bc->bh", fz, dx)
            case["over_hidden"] = torch.einsum("bhc,bh->bc", fz, dx)
        cases.append(case)
    return {"cases": cases}


@judged
def contract_judge(answer, ref) -> None:
    outs = items(field_of(answer, "out", "results"), len(ref["cases"]), "results, one per case")
    for got, case in zip(outs, ref["cases"]):
        b, h, c = case["shape"]
        where = f"for f(z) of shape {(b, h, c)} and dX/dt of shape {(b, c)}"
        if isinstance(got, str):
            shapes = any(word in got for word in ("size", "shape", "dimension", "mat1", "match"))
            raise Wrong(f"{where} your function raised {got}" + (f"; {_WRONG_AXIS}" if shapes else ""))
        expected = array(case["out"], "the reference")
        value = array(got, f"the result {where}")
        if value.shape != expected.shape:
            cause = _WRONG_AXIS
            if value.size == expected.size and tuple(s for s in expected.shape if s != 1) == value.shape:
                cause = (
                    "likely cause: .squeeze() removed a dimension of size 1 (batch or hidden); squeeze only the "
                    "last axis (.squeeze(-1)) or use torch.einsum"
                )
            raise Wrong(
                f"{where} the result has shape {value.shape}, expected {expected.shape} (batch, hidden); {cause}"
            )
        if not close(value, expected, atol=1e-13, rtol=1e-12):
            named = {k: array(case[k], k) for k in ("transposed", "over_hidden") if k in case}
            cause = likely(value, {_WRONG_AXIS + f" ({k.replace('_', ' ')})": v for k, v in named.items()}, 1e-12)
            raise Wrong(
                f"{where} the result differs from f(z) dX/dt by {max_diff(value, expected):.2e}"
                + (f"; {cause}" if cause else "")
            )
        if not got.requires_grad:
            raise Wrong(
                f"{where} the values are right, but the result carries no graph to f(z); likely cause: a .detach(), "
                "torch.no_grad() or a trip through numpy (a neural CDE trains f through this product)"
            )


# --- cde-solve ------------------------------------------------------------------------------------


SOLVE_STEP = 0.05


class _Matrix(torch.nn.Module):
    """``f(t, z)``: ``(batch, hidden) -> (batch, hidden, channels)``, a linear layer and tanh."""

    def __init__(self, hidden: int, channels: int, g: torch.Generator):
        super().__init__()
        self.hidden, self.channels = hidden, channels
        self.weight = torch.nn.Parameter(torch.randn(hidden * channels, hidden, generator=g, dtype=F64) / hidden)
        self.bias = torch.nn.Parameter(0.3 * torch.randn(hidden * channels, generator=g, dtype=F64))

    def forward(self, t, z):
        return torch.tanh(z @ self.weight.T + self.bias).view(*z.shape[:-1], self.hidden, self.channels)


def solve_inputs(seed: int) -> dict:
    g = _gen(seed, 114)
    b, length, channels, hidden = _integer(g, 1, 4), _integer(g, 4, 6), _integer(g, 1, 3), _integer(g, 2, 5)
    gaps = 0.3 + torch.rand(length - 1, generator=g, dtype=F64)
    times = torch.cat([torch.zeros(1, dtype=F64), torch.cumsum(gaps, 0) / gaps.sum()])  # irregular, on [0, 1]
    return {
        "x": torch.randn(b, length, channels, generator=g, dtype=F64),
        "t": times,
        "func": _Matrix(hidden, channels, g),
        "z0": torch.randn(b, hidden, generator=g, dtype=F64),
    }


def solve_run(ns, inp) -> dict:
    from nodecourse import odeint
    from nodecourse.cde import interpolate

    X, func = interpolate(inp["x"], inp["t"], kind="hermite"), inp["func"]
    end = odeint(
        lambda t, z: ns["cde_vector_field"](func(t, z), X.derivative(t)),
        inp["z0"],
        X.interval,
        method="rk4",
        step_size=SOLVE_STEP,
    ).ys[-1]
    (grad,) = torch.autograd.grad(end.pow(2).sum(), func.weight)
    return {"z": end, "grad": grad}


def solve_reference(inp) -> dict:
    from nodecourse.cde import cdeint, interpolate

    X, func = interpolate(inp["x"], inp["t"], kind="hermite"), inp["func"]
    end = cdeint(X, func, inp["z0"], X.interval, method="rk4", step_size=SOLVE_STEP).ys[-1]
    (grad,) = torch.autograd.grad(end.pow(2).sum(), func.weight)
    return {"z": end, "grad": grad}


@judged
def solve_judge(answer, ref) -> None:
    z, z_ref = compared(answer, ref, "z", "z(T)")
    if not close(z, z_ref, atol=1e-12, rtol=1e-10):
        raise Wrong(f"z(T) differs from the library's cdeint on the same path and steps by {max_diff(z, z_ref):.2e}")
    grad, grad_ref = compared(answer, ref, "grad", "the gradient")
    if not close(grad, grad_ref, atol=1e-12, rtol=1e-9):
        raise Wrong(
            f"z(T) agrees but the gradient with respect to f's weight differs by {max_diff(grad, grad_ref):.2e}"
        )


# --- path-change and missing-lookahead ------------------------------------------------------------

KINDS = ("hermite", "natural")
MOVED = 1e-9  # the threshold the task states: a query time where some channel moves by more
# Every draw keeps each query time's change either below QUIET or above LOUD, far from MOVED either way.
QUIET, LOUD = 1e-13, 1e-7


def _change(inp, kind: str) -> tuple[torch.Tensor, float | None]:
    from nodecourse.cde import interpolate

    x, t, k, s = inp["x"], inp["t"], inp["k"], inp["s"]
    x_new = x.clone()
    x_new[k] = inp["new"]
    change = interpolate(x_new, t, kind=kind).evaluate(s) - interpolate(x, t, kind=kind).evaluate(s)
    moved = change.abs().amax(dim=-1) > MOVED
    return change, (float(s[moved][0]) if bool(moved.any()) else None)


def _decidable(inp, kinds) -> bool:
    t, k = inp["t"], inp["k"]
    for kind in kinds:
        change, first = _change(inp, kind)
        size = change.abs().amax(dim=-1)
        if bool(((size > QUIET) & (size < LOUD)).any()) or first is None:
            return False
        if kind == "natural" and not first < float(t[k - 1]):  # the draw shows the spline is not causal
            return False
    return True


def _path_draw(g: torch.Generator, *, missing: bool) -> dict:
    length, channels = _integer(g, 6, 10), _integer(g, 1, 3)
    t = torch.cat([torch.zeros(1, dtype=F64), torch.cumsum(0.2 + torch.rand(length - 1, generator=g, dtype=F64), 0)])
    x = torch.randn(length, channels, generator=g, dtype=F64)
    k = _integer(g, 3 if missing else 2, length - 1)
    new = x[k] + (0.5 + torch.rand(channels, generator=g, dtype=F64)) * torch.where(
        torch.rand(channels, generator=g) < 0.5, -1.0, 1.0
    ).to(F64)
    if missing:  # one channel unobserved just before k (and maybe once more before that)
        channel = _integer(g, 0, channels - 1)
        x[k - 1, channel] = math.nan
        if k >= 4 and _integer(g, 0, 1):
            x[k - 2, channel] = math.nan
    # 3 to 5 query times inside each interval between observations: a change on any piece is seen
    s = torch.cat(
        [t[j] + (t[j + 1] - t[j]) * torch.rand(_integer(g, 3, 5), generator=g, dtype=F64) for j in range(length - 1)]
    )
    s = torch.sort(s).values
    return {"x": x, "t": t, "k": k, "new": new, "s": s}


def path_inputs(seed: int) -> dict:
    return redraw(seed, 115, lambda g: _path_draw(g, missing=False), lambda inp: _decidable(inp, KINDS))


def missing_inputs(seed: int) -> dict:
    def shows_lookahead(inp) -> bool:
        return _decidable(inp, ("hermite",)) and _change(inp, "hermite")[1] < float(inp["t"][inp["k"] - 1])

    return redraw(seed, 116, lambda g: _path_draw(g, missing=True), shows_lookahead)


def _path_run(ns, inp, kinds) -> dict:
    out = {}
    for kind in kinds:
        x = inp["x"].clone()
        result = ns["path_change"](x, inp["t"].clone(), inp["k"], inp["new"].clone(), kind, inp["s"].clone())
        result = list(result) if isinstance(result, tuple) else result
        same = x.shape == inp["x"].shape and bool(torch.equal(x.isnan(), inp["x"].isnan()))
        same = same and bool(torch.equal(x.nan_to_num(), inp["x"].nan_to_num()))
        out[kind] = {"result": result, "x_kept": same}
    return out


def path_run(ns, inp) -> dict:
    return _path_run(ns, inp, KINDS)


def missing_run(ns, inp) -> dict:
    return _path_run(ns, inp, ("hermite",))


def _path_reference(inp, kinds) -> dict:
    out = {}
    for kind in kinds:
        change, first = _change(inp, kind)
        other, _ = _change(inp, "hermite" if kind == "natural" else "natural")
        out[kind] = {
            "change": change,
            "first": first,
            "other_kind": other,
            "t": inp["t"],
            "k": inp["k"],
            "s": inp["s"],
            "missing": bool(inp["x"].isnan().any()),
        }
    return out


def path_reference(inp) -> dict:
    return _path_reference(inp, KINDS)


def missing_reference(inp) -> dict:
    return _path_reference(inp, ("hermite",))


_SAID = {
    "hermite": "the Hermite path with backward differences",
    "natural": "the natural cubic spline",
}


def _judge_kind(answer, ref, kind: str) -> None:
    mine = field_of(answer, kind, f"result for kind={kind!r}")
    if not isinstance(mine, dict):
        raise Wrong(f"no result for kind={kind!r}")
    result = items(field_of(mine, "result", "result"), 2, f"results (change, first) for kind={kind!r}")
    expected = array(ref["change"], "the reference")
    change = array(result[0], f"the change for kind={kind!r}", expected.shape)
    t, k = array(ref["t"], "t"), ref["k"]
    if not close(change, expected, atol=1e-10, rtol=1e-8):
        cause = likely(
            change,
            {
                "likely cause: x was changed before the old path was built (both paths see the new value)": (
                    0 * expected
                ),
                "likely cause: the old path minus the new one (the change is X_new(s) - X_old(s))": -expected,
                "likely cause: the path is built with the other kind (pass kind on to the interpolation)": array(
                    ref["other_kind"], "o"
                ),
            },
            atol=1e-10,
        )
        raise Wrong(
            f"for {_SAID[kind]} the change X_new(s) - X_old(s) differs from the reference by "
            f"{max_diff(change, expected):.2e}" + (f"; {cause}" if cause else "")
        )
    if not mine.get("x_kept", False):
        raise Wrong(
            f"for {_SAID[kind]} the values are right, but x was changed in place (the caller's observations); "
            "change a copy: x_new = x.clone()"
        )
    first, want = result[1], ref["first"]
    if first is None or isinstance(first, bool) or not isinstance(first, (int, float)):
        raise Wrong(
            f"for {_SAID[kind]} first is {describe(first)}, expected the query time {want:.6g} (the path moves "
            f"there by more than {MOVED:g})"
        )
    if abs(float(first) - want) > 1e-12:
        s = array(ref["s"], "s")
        after = s[s > t[k - 1]]
        cause = ""
        if after.size and abs(float(first) - float(after[0])) < 1e-12:
            lookahead = ": a missing value before k is filled by interpolating towards x[k]" if ref["missing"] else ""
            cause = (
                "; likely cause: first is read off the knots (the first query time after t[k - 1]), not from the "
                f"change{lookahead}"
            )
        raise Wrong(
            f"for {_SAID[kind]} first = {float(first):.6g}, but the first query time at which the path moves by "
            f"more than {MOVED:g} is {want:.6g} (observation k = {k} is at t = {float(t[k]):.6g}, the one "
            f"before at {float(t[k - 1]):.6g}){cause}"
        )


@judged
def path_judge(answer, ref) -> None:
    for kind in KINDS:
        _judge_kind(answer, ref[kind], kind)


@judged
def missing_judge(answer, ref) -> None:
    _judge_kind(answer, ref["hermite"], "hermite")


TASKS = (
    Task("em-step", ("em-step",), step_inputs, step_run, step_reference, step_judge),
    Task(
        "em-order",
        ("em-step", "strong-order"),
        order_inputs,
        order_run,
        order_reference,
        order_judge,
        after=("em-step",),
        decidable=f"the exact order of the draw's errors is inside {ORDER_BAND}, inside the window {ORDER_WINDOW}",
    ),
    Task("cde-contract", ("cde-contract",), contract_inputs, contract_run, contract_reference, contract_judge),
    Task(
        "cde-solve",
        ("cde-contract",),
        solve_inputs,
        solve_run,
        solve_reference,
        solve_judge,
        after=("cde-contract",),
    ),
    Task(
        "path-change",
        ("path-change",),
        path_inputs,
        path_run,
        path_reference,
        path_judge,
        decidable=(
            f"every query time's change is below {QUIET:g} or above {LOUD:g}; the natural spline moves before "
            "the observation preceding k"
        ),
    ),
    Task(
        "missing-lookahead",
        ("path-change",),
        missing_inputs,
        missing_run,
        missing_reference,
        missing_judge,
        after=("path-change",),
        decidable=(
            f"every query time's change is below {QUIET:g} or above {LOUD:g}; the Hermite path moves before "
            "the observation preceding k"
        ),
    ),
)
