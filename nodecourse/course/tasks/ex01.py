"""Exercise 1 (ResNet as Euler) as task specs: every input drawn from the seed.

The references are the library's (``odeint(method="euler")``,
``ResidualStack``) and the closed form of ``dy/dt = -lambda y``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from nodecourse.course.tasks.draw import F64, odeint_last, redraw
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
    show,
)

EXERCISE = "01_resnet_as_euler_exercises"
# "Write it yourself": the library's functions that would answer these tasks raise while they run.
_ODE_SOLVE = ("nodecourse.solvers:odeint", "nodecourse.solvers._fixed:integrate_fixed")
LIBRARY_ANSWERS = {"euler-step": _ODE_SOLVE, "euler-integrate-matches": _ODE_SOLVE, "euler-order": _ODE_SOLVE}


def _euler(f, y0, t0: float, t1: float, h: float) -> torch.Tensor:
    """The library's Euler solution at t1 (steps of exactly h)."""
    return odeint_last(f, y0, t0, t1, method="euler", step_size=h)


# --- euler-step -----------------------------------------------------------------------------------


def step_inputs(seed: int) -> dict:
    g = _gen(seed, 1)
    dim = _integer(g, 2, 6)
    k, c = _uniform(g, 0.5, 3.0), _uniform(g, -1.0, 1.0)
    h, t0 = _uniform(g, 0.02, 0.3), _uniform(g, 0.0, 1.0)
    y0 = torch.randn(dim, generator=g, dtype=F64)
    return {"f": lambda t, y: -k * y + c * math.cos(float(t)), "t0": t0, "y0": y0, "h": h}


def step_run(ns, inp) -> dict:
    return {"y1": ns["euler_step"](inp["f"], inp["t0"], inp["y0"].clone(), inp["h"])}


def step_reference(inp) -> dict:
    f, t0, y0, h = inp["f"], inp["t0"], inp["y0"], inp["h"]
    return {"y1": _euler(f, y0, t0, t0 + h, h), "y0": y0, "f0": f(t0, y0), "h": h}


@judged
def step_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "y1", "euler_step's result")
    if close(got, expected, atol=1e-12):
        return
    y0, f0, h = array(ref["y0"], "y0"), array(ref["f0"], "f0"), ref["h"]
    cause = likely(
        got,
        {
            "likely cause: the step has the wrong sign (y - h f)": y0 - h * f0,
            "likely cause: y is not added (the result is h f)": h * f0,
            "likely cause: the step size h is missing (y + f)": y0 + f0,
            "likely cause: the result is y itself, no step taken": y0,
            "likely cause: the result is f(t, y), not the new state": f0,
        },
        atol=1e-10,
    )
    raise Wrong(
        f"expected {show(expected)}, got {show(got)} (max |difference| {max_diff(got, expected):.2e}, "
        f"h = {h:.4g})" + (f"; {cause}" if cause else "")
    )


# --- residual-block -------------------------------------------------------------------------------


def block_inputs(seed: int) -> dict:
    from nodecourse.models import ResidualStack

    g = _gen(seed, 2)
    dim, batch = _integer(g, 3, 8), _integer(g, 2, 6)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_integer(g, 0, 2**31))
        stack = ResidualStack(dim, n_blocks=1, hidden=(16,), shared=True).to(F64)
    return {"stack": stack, "z": torch.randn(batch, dim, generator=g, dtype=F64)}


def _out_and_grad(model, z) -> dict:
    z = z.clone().requires_grad_(True)
    out = model(z)
    (grad,) = torch.autograd.grad(out.square().sum(), z)
    return {"out": out, "grad": grad}


def block_run(ns, inp) -> dict:
    """The block run with the learner's ``euler_step`` swapped for a counting wrapper of itself
    (the block finds ``euler_step`` in the notebook's namespace when it runs): the task asks for it."""
    step = ns["euler_step"]
    calls = [0]

    def counting_euler_step(*args, **kwargs):
        calls[0] += 1
        return step(*args, **kwargs)

    ns["euler_step"] = counting_euler_step
    try:
        out = _out_and_grad(ns["EulerResidualBlock"](inp["stack"].fields[0]), inp["z"])
    finally:
        ns["euler_step"] = step
    return {**out, "euler_steps": calls[0]}


def block_reference(inp) -> dict:
    ref = _out_and_grad(inp["stack"], inp["z"])
    with torch.no_grad():
        ref["field"] = inp["stack"].fields[0](None, inp["z"])
    ref["z"] = inp["z"]
    return ref


@judged
def block_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "out", "the block's output")
    if not close(got, expected, atol=1e-12):
        cause = likely(
            got,
            {
                "likely cause: the block returns field(z) without adding z": array(ref["field"], "f"),
                "likely cause: the block returns z unchanged": array(ref["z"], "z"),
            },
            atol=1e-10,
        )
        raise Wrong(
            f"outputs differ from the library's residual block by {max_diff(got, expected):.2e}"
            + (f"; {cause}" if cause else "")
        )
    grad_ref = array(ref["grad"], "the reference gradient")
    grad = array(field_of(answer, "grad", "gradient"), "the gradient", grad_ref.shape)
    if not close(grad, grad_ref, atol=1e-12):
        raise Wrong(
            f"outputs agree but gradients differ by {max_diff(grad, grad_ref):.2e}; likely cause: part of "
            "the computation is detached from the graph"
        )
    steps = field_of(answer, "euler_steps", "count of euler_step calls")
    if type(steps) is not int or steps != 1:
        count = steps if type(steps) is int else describe(steps)
        raise Wrong(
            f"the outputs agree, but the block called euler_step {count} times for one forward pass; the "
            "task asks for the block written as one Euler step: return euler_step(self.field, 0.0, z, 1.0)"
            + ("; likely cause: z + field(t, z) written out instead of calling euler_step" if steps == 0 else "")
        )


# --- euler-integrate ------------------------------------------------------------------------------


def _integrate_draw(g: torch.Generator) -> dict:
    h = 2.0 ** -_integer(g, 3, 5)  # exact in binary: every grid point is exact too
    n = _integer(g, 8, 40)
    t0 = h * _integer(g, 0, 8)
    a, b = _uniform(g, 0.5, 1.5), _uniform(g, 0.5, 1.5)
    y0 = torch.randn(_integer(g, 1, 4), generator=g, dtype=F64)
    return {"f": lambda t, y: -y * (a + b * float(t)), "y0": y0, "t0": t0, "t1": t0 + n * h, "n": n, "h": h}


# The named mistakes (one step too few or too many, the time not advanced) must land at least this far from
# the right answer, a million times the judge's tolerance: a draw whose solution has decayed to about 1e-13
# (t1 up to 6, rates up to 10) cannot tell them apart and is redrawn.
MISTAKE_GAP = 1e-4


def _integrate_decidable(inp: dict) -> bool:
    ref = integrate_reference(inp)
    right = ref["y1"]
    return all(float((ref[k] - right).abs().max()) > MISTAKE_GAP for k in ("fewer", "more", "frozen"))


def integrate_inputs(seed: int) -> dict:
    return redraw(seed, 3, _integrate_draw, _integrate_decidable)


def integrate_run(ns, inp) -> dict:
    return {"y1": ns["euler_integrate"](inp["f"], inp["y0"].clone(), inp["t0"], inp["t1"], inp["n"])}


def integrate_reference(inp) -> dict:
    f, y0, t0, t1, h = inp["f"], inp["y0"], inp["t0"], inp["t1"], inp["h"]
    frozen = lambda t, y: f(torch.tensor(t0, dtype=F64), y)  # noqa: E731 - the time never moves from t0
    return {
        "y1": _euler(f, y0, t0, t1, h),
        "fewer": _euler(f, y0, t0, t1 - h, h),
        "more": _euler(f, y0, t0, t1 + h, h),
        "frozen": _euler(frozen, y0, t0, t1, h),
        "n": inp["n"],
    }


@judged
def integrate_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "y1", "euler_integrate's result")
    if close(got, expected, atol=1e-10):
        return
    cause = likely(
        got,
        {
            "likely cause: one step too few (n - 1 steps)": array(ref["fewer"], "y"),
            "likely cause: one step too many (n + 1 steps)": array(ref["more"], "y"),
            "likely cause: the time is not advanced (every step evaluates f at t0: add t = t + h "
            "after each step)": array(ref["frozen"], "y"),
        },
        atol=1e-10,
    )
    raise Wrong(
        f"differs from odeint(method='euler') with {ref['n']} steps by {max_diff(got, expected):.2e}"
        + (f"; {cause}" if cause else "")
    )


# --- euler-order ----------------------------------------------------------------------------------
# Euler's order on -lambda y over seeds 0-1999 (closed form of the Euler iterates): 0.967-1.012, so the
# window leaves a margin of at least 0.067 below and 0.088 above; a second-order step measures about 2.
ORDER_WINDOW = (0.9, 1.1)


def order_inputs(seed: int) -> dict:
    g = _gen(seed, 4)
    lam, t1, y0 = _uniform(g, 0.5, 1.5), _uniform(g, 1.5, 2.5), _uniform(g, 0.5, 2.0)
    base = _integer(g, 12, 20)
    return {"lam": lam, "t1": t1, "y0": y0, "steps": [base * 2**k for k in range(5)]}


def order_run(ns, inp) -> dict:
    lam = inp["lam"]
    return {
        "y1": [
            ns["euler_integrate"](lambda t, y: -lam * y, torch.tensor([inp["y0"]], dtype=F64), 0.0, inp["t1"], n)
            for n in inp["steps"]
        ]
    }


def order_reference(inp) -> dict:
    return {"exact": inp["y0"] * math.exp(-inp["lam"] * inp["t1"]), "steps": inp["steps"], "t1": inp["t1"]}


@judged
def order_judge(answer, ref) -> None:
    steps = ref["steps"]
    values = items(field_of(answer, "y1", "results"), len(steps), "results (one per step count)")
    ys = [array(v, f"the result for n = {n}").reshape(-1) for v, n in zip(values, steps)]
    if any(y.size != 1 for y in ys):
        raise Wrong("each result should hold one value (y0 has one component)")
    errors = np.array([abs(float(y[0]) - ref["exact"]) for y in ys])
    if not np.all(np.isfinite(errors)) or np.any(errors == 0):
        raise Wrong(
            f"errors {show(errors)} against the exact solution: an order needs finite, non-zero errors "
            "(Euler's method is never exact here)"
        )
    sizes = np.array([ref["t1"] / n for n in steps])
    slope = float(np.polyfit(np.log(sizes), np.log(errors), 1)[0])
    low, high = ORDER_WINDOW
    if not low < slope < high:
        raise Wrong(f"measured order {slope:.2f}, expected 1 (errors {show(errors)} at n = {steps})")


TASKS = (
    Task("euler-step", ("euler-step",), step_inputs, step_run, step_reference, step_judge),
    Task(
        "residual-block",
        ("euler-step", "residual-block"),
        block_inputs,
        block_run,
        block_reference,
        block_judge,
        after=("euler-step",),
        hints=(
            (
                "does not require grad",
                "likely cause: the block's output is not connected to z (a detach, .data or torch.no_grad())",
            ),
        ),
    ),
    Task(
        "euler-integrate-matches",
        ("euler-step", "euler-integrate"),
        integrate_inputs,
        integrate_run,
        integrate_reference,
        integrate_judge,
        after=("euler-step",),
        decidable=f"one step too few, one too many and the time not advanced each land more than {MISTAKE_GAP:g} "
        "from the right answer",
    ),
    Task(
        "euler-order",
        ("euler-step", "euler-integrate"),
        order_inputs,
        order_run,
        order_reference,
        order_judge,
        after=("euler-step", "euler-integrate-matches"),
    ),
)
