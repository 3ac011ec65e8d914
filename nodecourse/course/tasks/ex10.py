"""Exercise 10 (cheaper and exact) as task specs: every input drawn from the seed.

References: the field and the row-wise sum of squares of its value (closed
form) and the library's ``regularised_block`` (kinetic term only) for the
kinetic energy; the library's ``heun_step``, ``heun_inverse`` and
``odeint(method="reversible_heun")`` for reversible Heun; the RMS of the first
``2 n`` entries (closed form) and the library's adjoint with
``adjoint_options={"norm": "seminorm"}`` for the seminorm. The Heun tasks
count the learner's evaluations of ``func`` and the times they are made at.

Why this module is long: one exercise's task specs stay in one module:
:func:`~nodecourse.course.tasks.tasks_for` imports ``exNN`` by the exercise's key, and a task's run-time reach
rules are found from the module its ``run`` lives in (:func:`~nodecourse.course.tasks.reach.exercise_of`), so
a ``run`` moved elsewhere would lose them; exercise 10 has eight checks, each with its inputs, run, reference
and judge.
"""

from __future__ import annotations

import math

import torch

from nodecourse.course.tasks.draw import F64
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
    judged,
    likely,
    max_diff,
    show,
)

EXERCISE = "10_cheaper_and_exact_exercises"
# "Write it yourself" (the notebook says so): the library's reversible Heun raises while these run.
_HEUN = (
    "nodecourse.solvers._reversible:heun_step",
    "nodecourse.solvers._reversible:heun_inverse",
    "nodecourse.solvers._reversible:integrate",
)
LIBRARY_ANSWERS = {"heun-step": _HEUN, "heun-solve": _HEUN, "heun-inverse": _HEUN, "heun-roundtrip": _HEUN}


def _field(g: torch.Generator, dim: int, hidden: int):
    from nodecourse.models import MLPField

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_integer(g, 0, 2**31))
        return MLPField(dim, hidden=(hidden,)).to(F64)


def _t(value: float) -> torch.Tensor:
    return torch.tensor(value, dtype=F64)


def _triple(value):
    """A learner's (y, zh, f) as a list (the judge checks that there are three)."""
    return list(value) if isinstance(value, (tuple, list)) else value


def _three(answer, key: str, what: str) -> list:
    value = field_of(answer, key, what)
    if not isinstance(value, list) or len(value) != 3:
        raise Wrong(f"{what} returned {describe(value)}, not three tensors (y, zh, f)")
    return value


# --- kinetic-dynamics -----------------------------------------------------------------------------


def dynamics_inputs(seed: int) -> dict:
    g = _gen(seed, 101)
    d = _integer(g, 2, 5)
    state = torch.randn(_integer(g, 3, 8), d + 1, generator=g, dtype=F64)
    return {"field": _field(g, d, 16), "t": _uniform(g, 0.0, 1.0), "state": state, "E": _uniform(g, 2.0, 9.0)}


def dynamics_run(ns, inp) -> dict:
    field, state = inp["field"], inp["state"]
    out = ns["kinetic_dynamics"](field, _t(inp["t"]), state.clone())
    other = state.clone()
    other[:, -1] = inp["E"]  # a different E: the right-hand side must not change
    with torch.no_grad():
        out_other = ns["kinetic_dynamics"](field, _t(inp["t"]), other)
    grad = None
    if isinstance(out, torch.Tensor) and out.requires_grad and out.shape == state.shape:
        (grad,) = torch.autograd.grad(out[:, -1].sum(), field.net[0].weight)
    return {"out": out, "other": out_other, "grad": grad}


def dynamics_reference(inp) -> dict:
    field, state = inp["field"], inp["state"]
    f = field(_t(inp["t"]), state[:, :-1])
    sq = f.pow(2).sum(dim=1, keepdim=True)
    (grad,) = torch.autograd.grad(sq.sum(), field.net[0].weight)
    f = f.detach()
    return {
        "out": torch.cat([f, sq.detach()], dim=1),
        "grad": grad,
        "norm": torch.cat([f, f.norm(dim=1, keepdim=True)], dim=1),
        "mean": torch.cat([f, f.pow(2).mean(dim=1, keepdim=True)], dim=1),
        "with_e": torch.cat([f, sq.detach() + state[:, -1:]], dim=1),
    }


@judged
def dynamics_judge(answer, ref) -> None:
    expected = array(ref["out"], "the reference")
    out = field_of(answer, "out", "result")
    got = array(out, "kinetic_dynamics' result")
    if got.shape != expected.shape:
        cause = (
            "; likely cause: the E column is missing (concatenate ||f||^2 as one more column)"
            if got.shape == (expected.shape[0], expected.shape[1] - 1)
            else ""
        )
        raise Wrong(f"kinetic_dynamics' result has shape {got.shape}, expected {expected.shape} (B, d + 1){cause}")
    if max_diff(got[:, :-1], expected[:, :-1]) > 1e-12:
        raise Wrong(
            f"the first d columns differ from field(t, z) by {max_diff(got[:, :-1], expected[:, :-1]):.2e}; "
            "likely cause: the field is called on the whole state (E included) or at another time"
        )
    if not close(got, expected, atol=1e-14, rtol=1e-12):
        cause = likely(
            got,
            {
                "likely cause: the norm, not its square": array(ref["norm"], "n"),
                "likely cause: the mean of the squares, not their sum": array(ref["mean"], "m"),
                "likely cause: E is added to the right-hand side (dE/dt does not depend on E)": array(
                    ref["with_e"], "e"
                ),
            },
            atol=1e-12,
        )
        raise Wrong(
            f"the last column should be {show(expected[:, -1])}, got {show(got[:, -1])}"
            + (f"; {cause}" if cause else "")
        )
    other = array(field_of(answer, "other", "result"), "the result for another E", expected.shape)
    if not close(other, expected, atol=1e-14, rtol=1e-12):
        raise Wrong(
            f"with the E column set to another value the result changes (max {max_diff(other, expected):.2e}); "
            "likely cause: E enters the right-hand side"
        )
    if not out.requires_grad or field_of(answer, "grad", "gradient") is None:
        raise Wrong(
            "the values are right, but the result carries no graph; likely cause: a .detach() or "
            "torch.no_grad() (the kinetic energy goes into a training loss)"
        )
    grad_ref = array(ref["grad"], "the reference gradient")
    grad = array(answer["grad"], "the gradient", grad_ref.shape)
    if not close(grad, grad_ref, atol=1e-12, rtol=1e-10):
        raise Wrong(
            f"the values are right, but the gradient of the last column differs by "
            f"{max_diff(grad, grad_ref):.2e}; likely cause: part of ||f||^2 is detached"
        )


# --- kinetic-energy -------------------------------------------------------------------------------


def energy_inputs(seed: int) -> dict:
    g = _gen(seed, 102)
    d = _integer(g, 2, 4)
    return {
        "field": _field(g, d, 16),
        "z0": torch.randn(_integer(g, 3, 8), d, generator=g, dtype=F64),
        "h": 1.0 / _integer(g, 10, 30),
    }


def energy_run(ns, inp) -> dict:
    from nodecourse import odeint

    field, z0, h = inp["field"], inp["z0"], inp["h"]
    start = torch.cat([z0, z0.new_zeros(z0.shape[0], 1)], dim=1)
    end = odeint(
        lambda t, s: ns["kinetic_dynamics"](field, t, s),
        start,
        torch.tensor([0.0, 1.0], dtype=F64),
        method="rk4",
        step_size=h,
    ).ys[-1]
    (grad,) = torch.autograd.grad(end[:, -1].mean(), field.net[0].weight)
    return {"energy": end[:, -1], "z": end[:, :-1], "grad": grad}


def energy_reference(inp) -> dict:
    from nodecourse.models import ODEBlock, regularised_block

    field = inp["field"]
    library = regularised_block(ODEBlock(field, method="rk4", step_size=inp["h"]), kinetic=True, jacobian=False)
    z = library(inp["z0"])
    (grad,) = torch.autograd.grad(library.kinetic.mean(), field.net[0].weight)
    return {"energy": library.kinetic, "z": z, "grad": grad}


@judged
def energy_judge(answer, ref) -> None:
    energy, expected = compared(answer, ref, "energy", "E(1)")
    if not close(energy, expected, atol=1e-12, rtol=1e-10):
        raise Wrong(
            f"E(1) = {show(energy)}, the library's regularised_block gives {show(expected)} "
            f"(max difference {max_diff(energy, expected):.2e})"
        )
    z, z_ref = compared(answer, ref, "z", "z(1)")
    if not close(z, z_ref, atol=1e-12, rtol=1e-10):
        raise Wrong(f"E(1) agrees but z(1) differs from the library's by {max_diff(z, z_ref):.2e}")
    grad, grad_ref = compared(answer, ref, "grad", "the gradient")
    if not close(grad, grad_ref, atol=1e-12, rtol=1e-8):
        raise Wrong(
            f"E(1) agrees but the gradient of its mean differs by {max_diff(grad, grad_ref):.2e}; likely "
            "cause: part of the right-hand side is detached"
        )


# --- heun-step and heun-solve ---------------------------------------------------------------------


def _counted(field, calls: list):
    def func(t, z):
        calls.append(float(t) if isinstance(t, torch.Tensor) and t.numel() == 1 else describe_time(t))
        return field(t, z)

    return func


def describe_time(t) -> str:
    return f"a {type(t).__name__}" + (f" of shape {tuple(t.shape)}" if isinstance(t, torch.Tensor) else "")


def step_inputs(seed: int) -> dict:
    g = _gen(seed, 103)
    d, b = _integer(g, 2, 4), _integer(g, 3, 6)
    field = _field(g, d, 16)
    t, h = _uniform(g, 0.0, 1.0), _uniform(g, 0.02, 0.2)
    y, zh = torch.randn(b, d, generator=g, dtype=F64), torch.randn(b, d, generator=g, dtype=F64)
    with torch.no_grad():
        f = field(_t(t), zh)
    return {"field": field, "t": t, "h": h, "y": y, "zh": zh, "f": f}


def step_run(ns, inp) -> dict:
    calls: list = []
    with torch.no_grad():
        out = ns["reversible_heun_step"](
            _counted(inp["field"], calls), inp["t"], inp["h"], inp["y"].clone(), inp["zh"].clone(), inp["f"].clone()
        )
    return {"out": _triple(out), "calls": calls}


def step_reference(inp) -> dict:
    from nodecourse.solvers import heun_step

    field, t, h, y, zh, f = (inp[k] for k in ("field", "t", "h", "y", "zh", "f"))
    with torch.no_grad():
        y1, zh1, f1 = heun_step(field, t, h, y, zh, f)
        f_at_t = field(_t(t), zh1)
    return {
        "out": [y1, zh1, f1],
        "t_new": t + h,
        "t": t,
        "h": h,
        "euler": y + h * f,
        "only_f1": y + h * f1,
        "f_at_t": f_at_t,
        "y_stale": y + 0.5 * h * (f + f_at_t),
    }


@judged
def step_judge(answer, ref) -> None:
    out = _three(answer, "out", "reversible_heun_step")
    calls = field_of(answer, "calls", "calls")
    y1, zh1, f1 = (array(v, "the reference") for v in ref["out"])
    got = [array(v, name, w.shape) for v, name, w in zip(out, ("y1", "zh1", "f1"), (y1, zh1, f1))]
    if len(calls) != 1:
        raise Wrong(
            f"{len(calls)} evaluations of func (at t = {calls}), expected exactly 1 at t + h = {ref['t_new']:.6g}"
        )
    if not isinstance(calls[0], float):
        raise Wrong(f"func was called with {calls[0]} as its time, expected a 0-d tensor")
    if abs(calls[0] - ref["t_new"]) > 1e-12:
        cause = "; likely cause: the slope is evaluated at t, not t + h" if abs(calls[0] - ref["t"]) < 1e-12 else ""
        raise Wrong(f"func was evaluated at t = {calls[0]:.6g}, expected t + h = {ref['t_new']:.6g}{cause}")
    if not close(got[1], zh1, atol=1e-14, rtol=1e-12):
        raise Wrong(f"zh1 differs from 2y - zh + h f by {max_diff(got[1], zh1):.2e}")
    if not close(got[2], f1, atol=1e-14, rtol=1e-12):
        raise Wrong(f"f1 differs from func(t + h, zh1) by {max_diff(got[2], f1):.2e}")
    if not close(got[0], y1, atol=1e-14, rtol=1e-12):
        cause = likely(
            got[0],
            {
                "likely cause: an Euler step y + h f (the new slope f1 is not used)": array(ref["euler"], "e"),
                "likely cause: y + h f1 (the mean of the two slopes is not used)": array(ref["only_f1"], "o"),
            },
            atol=1e-12,
        )
        raise Wrong(f"y1 differs from y + h/2 (f + f1) by {max_diff(got[0], y1):.2e}" + (f"; {cause}" if cause else ""))


def solve_inputs(seed: int) -> dict:
    g = _gen(seed, 104)
    d, b = _integer(g, 2, 4), _integer(g, 3, 6)
    return {"field": _field(g, d, 16), "y0": torch.randn(b, d, generator=g, dtype=F64), "n": _integer(g, 10, 30)}


def solve_run(ns, inp) -> dict:
    field, y0, n = inp["field"], inp["y0"], inp["n"]
    h = 1.0 / n
    with torch.no_grad():
        y, zh, f = y0.clone(), y0.clone(), field(_t(0.0), y0)
        for k in range(n):
            y, zh, f = ns["reversible_heun_step"](field, k * h, h, y, zh, f)
    return {"y": y}


def solve_reference(inp) -> dict:
    from nodecourse import odeint

    with torch.no_grad():
        y = odeint(
            inp["field"],
            inp["y0"],
            torch.tensor([0.0, 1.0], dtype=F64),
            method="reversible_heun",
            step_size=1.0 / inp["n"],
        ).ys[-1]
    return {"y": y, "n": inp["n"]}


@judged
def solve_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "y", "y(1)")
    if not close(got, expected, atol=1e-12, rtol=1e-10):
        raise Wrong(
            f"after {ref['n']} steps y differs from odeint(method='reversible_heun') by {max_diff(got, expected):.2e}"
        )


# --- heun-inverse and heun-roundtrip --------------------------------------------------------------


def inverse_inputs(seed: int) -> dict:
    g = _gen(seed, 105)
    d, b = _integer(g, 2, 4), _integer(g, 3, 6)
    field = _field(g, d, 16)
    t1, h = _uniform(g, 0.3, 1.0), _uniform(g, 0.02, 0.2)
    y1, zh1 = torch.randn(b, d, generator=g, dtype=F64), torch.randn(b, d, generator=g, dtype=F64)
    with torch.no_grad():
        f1 = field(_t(t1), zh1)  # a state a step can reach: f1 is the slope at zh1
    return {"field": field, "t1": t1, "h": h, "y1": y1, "zh1": zh1, "f1": f1}


def inverse_run(ns, inp) -> dict:
    calls: list = []
    with torch.no_grad():
        out = ns["reversible_heun_inverse"](
            _counted(inp["field"], calls), inp["t1"], inp["h"], inp["y1"].clone(), inp["zh1"].clone(), inp["f1"].clone()
        )
    return {"out": _triple(out), "calls": calls}


def inverse_reference(inp) -> dict:
    from nodecourse.solvers import heun_inverse, heun_step

    field, t1, h, y1, zh1, f1 = (inp[k] for k in ("field", "t1", "h", "y1", "zh1", "f1"))
    with torch.no_grad():
        y, zh, f = heun_inverse(field, t1, h, y1, zh1, f1)
        again = heun_step(field, t1 - h, h, y, zh, f)  # the step from there lands back on (y1, zh1, f1)
        zh_plus = 2 * y1 - zh1 + h * f1
    return {
        "out": [y, zh, f],
        "forward_error": float(max((a - b).abs().max() for a, b in zip(again, (y1, zh1, f1)))),
        "t_new": t1 - h,
        "t1": t1,
        "zh_sign": zh_plus,
        "euler": y1 - h * f1,
    }


@judged
def inverse_judge(answer, ref) -> None:
    if ref["forward_error"] > 1e-12:
        raise Wrong(
            f"the library's step does not undo its inverse here ({ref['forward_error']:.1e}): a fault of "
            "the check, not of your answer"
        )
    out = _three(answer, "out", "reversible_heun_inverse")
    calls = field_of(answer, "calls", "calls")
    y, zh, f = (array(v, "the reference") for v in ref["out"])
    got = [array(v, name, w.shape) for v, name, w in zip(out, ("y", "zh", "f"), (y, zh, f))]
    if len(calls) != 1:
        raise Wrong(
            f"{len(calls)} evaluations of func (at t = {calls}), expected exactly 1 at t1 - h = {ref['t_new']:.6g}"
        )
    if not isinstance(calls[0], float):
        raise Wrong(f"func was called with {calls[0]} as its time, expected a 0-d tensor")
    if abs(calls[0] - ref["t_new"]) > 1e-12:
        cause = "; likely cause: the slope is evaluated at t1, not t1 - h" if abs(calls[0] - ref["t1"]) < 1e-12 else ""
        raise Wrong(f"func was evaluated at t = {calls[0]:.6g}, expected t1 - h = {ref['t_new']:.6g}{cause}")
    if not close(got[1], zh, atol=1e-14, rtol=1e-12):
        cause = likely(
            got[1],
            {"likely cause: + h f1 where the inverse has - h f1 (zh = 2 y1 - zh1 - h f1)": array(ref["zh_sign"], "z")},
            atol=1e-12,
        )
        raise Wrong(f"zh differs from the start by {max_diff(got[1], zh):.2e}" + (f"; {cause}" if cause else ""))
    if not close(got[2], f, atol=1e-14, rtol=1e-12):
        raise Wrong(f"f differs from the start's slope by {max_diff(got[2], f):.2e}")
    if not close(got[0], y, atol=1e-14, rtol=1e-12):
        cause = likely(
            got[0],
            {"likely cause: y1 - h f1 (the mean of the two slopes is not used)": array(ref["euler"], "e")},
            atol=1e-12,
        )
        raise Wrong(f"y differs from the start by {max_diff(got[0], y):.2e}" + (f"; {cause}" if cause else ""))


def roundtrip_inputs(seed: int) -> dict:
    g = _gen(seed, 106)
    d, b = _integer(g, 2, 4), _integer(g, 4, 10)
    return {"field": _field(g, d, 16), "y0": torch.randn(b, d, generator=g, dtype=F64), "n": _integer(g, 30, 60)}


def roundtrip_run(ns, inp) -> dict:
    field, y0, n = inp["field"], inp["y0"], inp["n"]
    h = 1.0 / n
    with torch.no_grad():
        y, zh, f = y0.clone(), y0.clone(), field(_t(0.0), y0)
        for k in range(n):
            y, zh, f = ns["reversible_heun_step"](field, k * h, h, y, zh, f)
        for k in range(n, 0, -1):
            y, zh, f = ns["reversible_heun_inverse"](field, k * h, h, y, zh, f)
    return {"y": y}


def roundtrip_reference(inp) -> dict:
    return {"y": inp["y0"], "n": inp["n"]}


@judged
def roundtrip_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "y", "y after the round trip")
    if not close(got, expected, atol=1e-12):
        raise Wrong(f"after {ref['n']} steps there and back y differs from the start by {max_diff(got, expected):.2e}")


# --- seminorm -------------------------------------------------------------------------------------


def values_inputs(seed: int) -> dict:
    g = _gen(seed, 107)
    n, p = _integer(g, 3, 9), _integer(g, 4, 20)
    return {"n": n, "x": torch.randn(2 * n + p, generator=g, dtype=F64), "big": _uniform(g, 1e5, 1e7)}


def values_run(ns, inp) -> dict:
    n, x = inp["n"], inp["x"]
    norm = ns["make_seminorm"](n)
    moved = x.clone()
    moved[2 * n :] = inp["big"]
    return {"value": norm(x.clone()), "moved": norm(moved)}


def values_reference(inp) -> dict:
    n, x = inp["n"], inp["x"]
    head = x[: 2 * n]
    return {
        "value": float(head.pow(2).mean().sqrt()),
        "n": n,
        "size": int(x.numel()),
        "full": float(x.pow(2).mean().sqrt()),
        "l2": float(head.norm()),
        "first_n": float(x[:n].pow(2).mean().sqrt()),
        "tail": float(x[2 * n :].pow(2).mean().sqrt()),
    }


@judged
def values_judge(answer, ref) -> None:
    expected = ref["value"]
    value = field_of(answer, "value", "norm")
    got = array(value, "norm(x)")
    if got.shape != ():
        raise Wrong(f"norm(x) has shape {got.shape}, expected a 0-d tensor")
    v = float(got)
    if not math.isclose(v, expected, rel_tol=1e-12):
        cause = ""
        for text, key in (
            ("the RMS over every entry (the parameter entries are not left out)", "full"),
            ("the 2-norm of the first 2 n entries, not their RMS (divide by sqrt(2 n))", "l2"),
            ("the RMS of the first n entries only (z without a)", "first_n"),
            ("the RMS of the last entries (g), not of the first 2 n", "tail"),
        ):
            if math.isclose(v, ref[key], rel_tol=1e-9):
                cause = f"likely cause: {text}"
                break
        raise Wrong(
            f"norm(x) = {v:.10g}, the RMS of the first 2 n = {2 * ref['n']} of {ref['size']} entries is "
            f"{expected:.10g}" + (f"; {cause}" if cause else "")
        )
    moved = float(array(field_of(answer, "moved", "norm"), "norm of the moved x"))
    if not math.isclose(moved, expected, rel_tol=1e-12):
        raise Wrong(
            f"with the last {ref['size'] - 2 * ref['n']} entries changed the norm changes ({moved:.6g} "
            f"instead of {expected:.6g}); likely cause: the parameter entries are not left out"
        )


def adjoint_inputs(seed: int) -> dict:
    g = _gen(seed, 108)
    for _ in range(20):  # a problem where the seminorm saves backward steps, so the full norm is told apart
        field, z0 = _field(g, 2, 64), torch.randn(_integer(g, 6, 10), 2, generator=g, dtype=F64)
        if _adjoint(field, z0, adjoint_options={"norm": "seminorm"})[0] < _adjoint(field, z0)[0]:
            break
    return {"field": field, "z0": z0}


def _adjoint(field, z0, **options) -> tuple[int, torch.Tensor]:
    from nodecourse import odeint

    field.zero_grad(set_to_none=True)
    sol = odeint(field, z0, torch.tensor([0.0, 1.0], dtype=F64), rtol=1e-6, atol=1e-6, gradient="adjoint", **options)
    sol.ys[-1].pow(2).sum().backward()
    grad = torch.cat([p.grad.flatten() for p in field.parameters()])
    field.zero_grad(set_to_none=True)
    return int(sol.stats["nfe_backward"]), grad


def adjoint_run(ns, inp) -> dict:
    field, z0 = inp["field"], inp["z0"]
    nfe, grad = _adjoint(field, z0, adjoint_options={"options": {"norm": ns["make_seminorm"](z0.numel())}})
    return {"nfe": nfe, "grad": grad}


def adjoint_reference(inp) -> dict:
    field, z0 = inp["field"], inp["z0"]
    nfe, grad = _adjoint(field, z0, adjoint_options={"norm": "seminorm"})
    full, _ = _adjoint(field, z0)
    return {"nfe": nfe, "grad": grad, "full": full}


@judged
def adjoint_judge(answer, ref) -> None:
    nfe, full = field_of(answer, "nfe", "NFE"), ref["full"]
    if nfe != ref["nfe"]:
        cause = "; likely cause: the norm still covers the parameter entries" if nfe == full else ""
        raise Wrong(f"backward NFE: yours {nfe}, the library's seminorm {ref['nfe']}, the full norm {full}{cause}")
    grad, grad_ref = compared(answer, ref, "grad", "the gradient")
    if not close(grad, grad_ref, atol=1e-14, rtol=1e-10):
        raise Wrong(
            f"the backward NFE agrees ({nfe}, full norm {full}), but the gradient differs from the "
            f"library's by {max_diff(grad, grad_ref):.2e}"
            + ("; likely cause: the norm still covers the parameter entries" if nfe == full else "")
        )


_NOT_FLOAT = (
    "unsupported operand",
    "likely cause: t and h are Python floats; the time passed to func must be "
    "torch.tensor(t + h, dtype=y.dtype, device=y.device)",
)

TASKS = (
    Task("kinetic-dynamics", ("kinetic-dynamics",), dynamics_inputs, dynamics_run, dynamics_reference, dynamics_judge),
    Task(
        "kinetic-energy",
        ("kinetic-dynamics",),
        energy_inputs,
        energy_run,
        energy_reference,
        energy_judge,
        after=("kinetic-dynamics",),
        hints=(
            (
                "does not require grad",
                "likely cause: the right-hand side is detached (a .detach() or torch.no_grad() in kinetic_dynamics)",
            ),
        ),
    ),
    Task("heun-step", ("heun-step",), step_inputs, step_run, step_reference, step_judge, hints=(_NOT_FLOAT,)),
    Task(
        "heun-solve",
        ("heun-step",),
        solve_inputs,
        solve_run,
        solve_reference,
        solve_judge,
        after=("heun-step",),
        hints=(_NOT_FLOAT,),
    ),
    Task(
        "heun-inverse",
        ("heun-inverse",),
        inverse_inputs,
        inverse_run,
        inverse_reference,
        inverse_judge,
        hints=(_NOT_FLOAT,),
    ),
    Task(
        "heun-roundtrip",
        ("heun-step", "heun-inverse"),
        roundtrip_inputs,
        roundtrip_run,
        roundtrip_reference,
        roundtrip_judge,
        after=("heun-step", "heun-inverse"),
    ),
    Task("seminorm-values", ("seminorm",), values_inputs, values_run, values_reference, values_judge),
    Task(
        "seminorm-adjoint",
        ("seminorm",),
        adjoint_inputs,
        adjoint_run,
        adjoint_reference,
        adjoint_judge,
        after=("seminorm-values",),
    ),
)
