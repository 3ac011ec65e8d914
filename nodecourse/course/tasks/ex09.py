"""Exercise 9 (audit a model by hand) as task specs: every input drawn from the seed.

References: the library's solves (``ODEBlock.solve`` at the task's
tolerances) for the accuracy and the breaking tolerance; autograd's exact
directional derivative of a random float64 MLP; for the gradient routes, the
library's routes (``solver.replace(gradient=route)``) against central finite
differences of tight solves, computed in the reference process, and the route
whose error exceeds ``1e-2`` (the adjoint on the long-horizon model: its
backward solve meets the fast mode grown by ``e^(10 T)``).

Why this module is long: one exercise's task specs stay in one module:
:func:`~nodecourse.course.tasks.tasks_for` imports ``exNN`` by the exercise's key, and a task's run-time reach
rules are found from the module its ``run`` lives in (:func:`~nodecourse.course.tasks.reach.exercise_of`), so
a ``run`` moved elsewhere would lose them; exercise 9 has five checks, each with its inputs, run, reference
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
from nodecourse.course.tasks.spec import Task, Wrong, array, close, describe, field_of, items, judged

EXERCISE = "09_audit_exercises"
ROUTES = ("backprop", "checkpoint", "adjoint")
FD_STEP = 1e-4
WRONG_ABOVE = 1e-2
NOISE = 1e-4  # below this a route's error is the finite differences' own (about 1e-6 here)
DROP = 0.05  # breaking-tolerance: an accuracy more than this below the tightest's breaks
# directional-derivative: each parameter entry must be back within this (relative to max(1, |entry|)):
# adding and subtracting h v leaves rounding of about 1e-17 here; not restoring leaves h |v|, about 1e-5.
RESTORE_TOL = 1e-12
TIGHT = 1e-10  # route-error: the tolerance the task's finite differences are taken at


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- accuracy-at ----------------------------------------------------------------------------------


def _classifier(g: torch.Generator, low: float, high: float):
    from nodecourse.lessons.lesson09 import rotating_classifier

    omega = _uniform(g, low, high)
    model, _, (x, y) = rotating_classifier(omega=omega, n=2 * _integer(g, 100, 200), seed=_integer(g, 0, 2**31))
    return model, x, y, omega


def _accuracy(model, x, y, tol: float) -> tuple[float, int]:
    """The library's solve at rtol = atol = tol: (accuracy, nfe)."""
    with torch.no_grad():
        sol = model.block.solve(x, rtol=tol, atol=tol)
        hits = model.readout(sol.ys[-1]).argmax(dim=1) == y
    return float(hits.double().mean()), int(sol.stats["nfe"])


def accuracy_inputs(seed: int) -> dict:
    g = _gen(seed, 91)
    model, x, y, omega = _classifier(g, 40.0, 70.0)
    return {
        "model": model,
        "x": x,
        "y": y,
        "omega": omega,
        "tols": [10.0 ** -_integer(g, 5, 7), 10.0 ** -_integer(g, 2, 3)],
    }


def accuracy_run(ns, inp) -> dict:
    model = inp["model"]
    deployed = model.block.solver
    got = []
    for tol in inp["tols"]:
        value = ns["accuracy_at"](model, inp["x"], inp["y"], tol)
        got.append(list(value) if isinstance(value, (tuple, list)) else value)
    return {"got": got, "kept": model.block.solver is deployed}


def accuracy_reference(inp) -> dict:
    model, x, y = inp["model"], inp["x"], inp["y"]
    deployed = model.block.solver
    return {
        "expected": [list(_accuracy(model, x, y, tol)) for tol in inp["tols"]],
        "tols": inp["tols"],
        "deployed": list(_accuracy(model, x, y, deployed.rtol)),
        "n": int(y.numel()),
    }


def _accuracy_cause(a: float, nfe: int, acc: float, ref: dict) -> str:
    """The likely cause of a wrong (accuracy, nfe) pair ("" when none is recognised)."""
    n, half = ref["n"], 0.5 / ref["n"]
    if abs(a - ref["deployed"][0]) <= half and nfe == ref["deployed"][1]:
        return "likely cause: the solve uses the model's own tolerance, not tol (pass rtol=tol, atol=tol)"
    if abs(a - acc * n) < 0.5:
        return "likely cause: the number of correct rows, not the fraction"
    if abs(a - (1 - acc)) <= half:
        return "likely cause: the error rate (1 - accuracy), or the wrong side of the argmax"
    if abs(a - acc) < 0.02 and abs(a * n - round(a * n)) > 0.01:
        return (
            f"likely cause: the mean is computed in low precision (float16 or bfloat16?): {a!r} is not a whole "
            f"number of the {n} rows over {n}; compute it in float32 or float64"
        )
    return ""


@judged
def accuracy_judge(answer, ref) -> None:
    """Each (accuracy, nfe) pair: the accuracy within half an example of the library's (a mean computed
    in float32 differs by rounding only), the NFE exactly."""
    got = items(field_of(answer, "got", "results"), len(ref["tols"]), "results (one (accuracy, nfe) pair per tol)")
    half = 0.5 / ref["n"]
    for value, (acc, nfe), tol in zip(got, ref["expected"], ref["tols"]):
        if not isinstance(value, list) or len(value) != 2:
            raise Wrong(f"accuracy_at(..., tol={tol:g}) returned {describe(value)}, not a pair (accuracy, nfe)")
        a, n = value
        if not isinstance(a, float):
            raise Wrong(f"the accuracy at tol={tol:g} is {describe(a)}, not a float (use float(...))")
        if isinstance(n, bool) or not isinstance(n, int):
            raise Wrong(f"the NFE at tol={tol:g} is {describe(n)}, not an int")
        if abs(a - acc) <= half and n == nfe:
            continue
        cause = _accuracy_cause(a, n, acc, ref)
        raise Wrong(
            f"at tol={tol:g}: got accuracy {a!r} with NFE {n}, the library's solve gives {acc!r} "
            f"({round(acc * ref['n'])} of {ref['n']} rows; within half a row passes) with NFE {nfe}"
            + (f"; {cause}" if cause else "")
        )
    if field_of(answer, "kept", "settings") is not True:
        raise Wrong(
            "the results are right, but model.block.solver is not the object it was before the call; "
            "likely cause: the solver was replaced and not put back (solve(x, rtol=..., atol=...) "
            "changes the settings for one call only)"
        )


# --- breaking-tolerance ---------------------------------------------------------------------------


def _breaking_draw(g: torch.Generator) -> dict:
    """Two rotations, each with a list from tight to loose by decades and a short one; the fast rotation
    also with a list by quarter decades from 1e-4 (the accuracy declines by less than DROP a step there,
    so comparing with the previous accuracy gives another answer than comparing with the tightest)."""
    cases = []
    for low, high in ((50.0, 70.0), (15.0, 25.0)):
        model, x, y, omega = _classifier(g, low, high)
        tight = _integer(g, 6, 7)
        loose = _integer(g, 1, 2)
        lists = [[10.0**-k for k in range(tight, loose - 1, -1)], [10.0**-tight, 10.0 ** -(tight - 1)]]
        if low == 50.0:
            lists.append([10.0**-tight] + [10.0 ** (-4 + j / 4) for j in range(4 * (4 - loose) + 1)])
        cases += [{"model": model, "x": x, "y": y, "omega": omega, "tols": tols} for tols in lists]
    return {"cases": cases}


def _breaking_decidable(inp: dict) -> bool:
    """Whether a draw can be judged: no accuracy within half a row of its threshold (so the rule gives
    the same tolerance however a correct answer writes the comparison); some case breaks; and comparing
    with the previous accuracy gives another answer in some case (so that named mistake fails).
    Stores each case's accuracies (the reference's measurement)."""
    cache: dict = {}
    for c in inp["cases"]:
        c["acc"] = [
            cache.setdefault((id(c["model"]), t), _accuracy(c["model"], c["x"], c["y"], t)[0]) for t in c["tols"]
        ]
    right, previous = [], []
    for c in inp["cases"]:
        tols, acc, half = c["tols"], c["acc"], 0.5 / int(c["y"].numel())
        if any(abs(a - (acc[0] - DROP)) <= half or abs(a - (acc[k] - DROP)) <= half for k, a in enumerate(acc[1:])):
            return False
        want = _first_below(tols, acc, lambda k, a=acc: a[0])
        right.append(want)
        previous.append(_first_below(tols, acc, lambda k, a=acc: a[k - 1]))
    return any(r is not None for r in right) and right != previous


def breaking_inputs(seed: int) -> dict:
    return redraw(seed, 92, _breaking_draw, _breaking_decidable)


def breaking_run(ns, inp) -> dict:
    return {"got": [ns["breaking_tolerance"](c["model"], c["x"], c["y"], list(c["tols"])) for c in inp["cases"]]}


def breaking_reference(inp) -> dict:
    """The library's accuracies at each tolerance (measured by the draw, in this clean process)."""
    return {"cases": [{"omega": c["omega"], "tols": c["tols"], "acc": c["acc"]} for c in inp["cases"]]}


def _first_below(tols, acc, base_of):
    """The first tols[k] (k >= 1) whose accuracy is below base_of(k) - DROP, or None."""
    return next((t for k, (t, a) in enumerate(zip(tols, acc)) if k >= 1 and a < base_of(k) - DROP), None)


def _same(a, b) -> bool:
    """The same tolerance (or both None), up to float rounding."""
    return a == b or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12))


@judged
def breaking_judge(answer, ref) -> None:
    cases = ref["cases"]
    got = items(field_of(answer, "got", "answers"), len(cases), "answers (one per case)")
    expected = [_first_below(c["tols"], c["acc"], lambda k, a=c["acc"]: a[0]) for c in cases]
    for value, want, c in zip(got, expected, cases):
        if value is not None and not _is_number(value):
            raise Wrong(f"breaking_tolerance returned {describe(value)}: a tolerance from tols or None")
        if _same(value, want):
            continue
        tols, acc = c["tols"], c["acc"]
        previous = _first_below(tols, acc, lambda k: acc[k - 1])
        index = tols.index(want) if want is not None else None
        # every mistake that gives this answer is named: on some draws two give the same (both None)
        causes = []
        if _same(value, previous):
            causes.append("each accuracy is compared with the previous one, not with the tightest")
        if index is not None and index >= 1 and value is not None and _same(value, tols[index - 1]):
            causes.append("the tolerance before the break is returned (the last good one)")
        if want is not None and value is None:
            causes.append("the threshold (0.05 below the tightest's accuracy) is not reached by your rule")
        cause = ("likely cause: " + ", or ".join(causes)) if causes else ""
        accs = ", ".join(f"{t:g}: {a:.3f}" for t, a in zip(tols, acc))
        raise Wrong(
            f"omega {c['omega']:.4g}, {len(tols)} tolerances: got {value!r}, expected {want!r} "
            f"(accuracies {accs})" + (f"; {cause}" if cause else "")
        )


# --- directional-derivative -----------------------------------------------------------------------

# directional-derivative: the central difference must be within DD_TOL (relative) of autograd's value. A
# draw is used when the solution's central difference is 10 times inside it and a one-sided difference
# 10 times outside it, so neither lands near the edge.
DD_TOL = 1e-6


def _directional_draw(g: torch.Generator) -> dict:
    d_in, width = _integer(g, 2, 4), _integer(g, 6, 12)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_integer(g, 0, 2**31))
        net = torch.nn.Sequential(torch.nn.Linear(d_in, width), torch.nn.Tanh(), torch.nn.Linear(width, 1)).to(F64)
    x = torch.randn(_integer(g, 3, 8), d_in, generator=g, dtype=F64)
    v = [torch.randn(p.shape, generator=g, dtype=F64) for p in net.parameters()]
    return {"net": net, "x": x, "v": v, "h": 1e-5}


def _directional_decidable(inp: dict) -> bool:
    ref = directional_reference(inp)
    exact = ref["exact"]
    return (
        exact != 0
        and abs(ref["central"] - exact) < 0.1 * DD_TOL * abs(exact)
        and abs(ref["forward"] - exact) > 10 * DD_TOL * abs(exact)
    )


def directional_inputs(seed: int) -> dict:
    return redraw(seed, 93, _directional_draw, _directional_decidable)


def directional_run(ns, inp) -> dict:
    net, x = inp["net"], inp["x"]
    params = list(net.parameters())
    value = ns["directional_derivative"](lambda: net(x).sum(), params, [t.clone() for t in inp["v"]], inp["h"])
    return {"value": value, "after": [p.detach().clone() for p in params]}


def directional_reference(inp) -> dict:
    net, x, v, h = inp["net"], inp["x"], inp["v"], inp["h"]
    params = list(net.parameters())
    grads = torch.autograd.grad(net(x).sum(), params)
    exact = sum(float((gr * d).sum()) for gr, d in zip(grads, v))
    before = [p.detach().clone() for p in params]  # taken before any change: the values to restore
    with torch.no_grad():
        base = float(net(x).sum())
        for p, d in zip(params, v):
            p.add_(h * d)
        up = float(net(x).sum())
        for p, b, d in zip(params, before, v):
            p.copy_(b - h * d)
        down = float(net(x).sum())
        for p, b in zip(params, before):
            p.copy_(b)
    return {"exact": exact, "forward": (up - base) / h, "central": (up - down) / (2 * h), "before": before, "h": h}


@judged
def directional_judge(answer, ref) -> None:
    value = field_of(answer, "value", "derivative")
    exact = ref["exact"]
    if not isinstance(value, float):
        raise Wrong(f"directional_derivative returned {describe(value)}, not a float (use float(...))")
    if not abs(value - exact) <= DD_TOL * abs(exact):
        if exact == 0:
            raise Wrong(f"got {value:.10g}, autograd's exact directional derivative is 0")
        ratio = value / exact
        cause = ""
        if abs(ratio + 1) < 1e-3:
            cause = "likely cause: the difference is taken the wrong way round (L(theta - h v) - L(theta + h v))"
        elif abs(ratio - 2) < 1e-3:
            cause = "likely cause: divided by h, not by 2h"
        elif abs(ratio - 0.5) < 1e-3:
            cause = "likely cause: divided by 4h (or the step is h / 2 each way)"
        elif abs(value - ref["forward"]) <= 1e-9 * abs(exact):
            cause = "likely cause: a one-sided difference (L(theta + h v) - L(theta)) / h, not the central one"
        raise Wrong(
            f"got {value:.10g}, autograd's exact directional derivative {exact:.10g} (ratio {ratio:.6g}, "
            f"relative error {abs(value - exact) / abs(exact):.1e} > {DD_TOL:g} at h = {ref['h']:g})"
            + (f"; {cause}" if cause else "")
        )
    after = items(field_of(answer, "after", "parameters"), len(ref["before"]), "parameters")
    for k, (a, b) in enumerate(zip(after, ref["before"])):
        want = array(b, "the reference")
        got = array(a, f"parameter {k}", want.shape)
        if not close(got, want, atol=RESTORE_TOL, rtol=RESTORE_TOL):
            diff = float(np.max(np.abs(got - want)))
            raise Wrong(
                f"the derivative is right, but parameter {k} is not what it was (max change {diff:.2e}, "
                f"more than the {RESTORE_TOL:g} allowed); likely cause: the parameters are not restored "
                "(save copies before the first change and copy_ them back, in a finally: block)"
            )


# --- route-error and wrong-route ------------------------------------------------------------------


def _regressor(g: torch.Generator, gradient: str) -> dict:
    from nodecourse.lessons.lesson09 import long_horizon_regressor

    seed = _integer(g, 0, 2**31)
    torch.manual_seed(seed)  # the readout's initial weights: the same in every process (inputs run in fork_rng)
    model, train, (x, _) = long_horizon_regressor(gradient, seed=seed)
    params = list(model.block.field.parameters())
    norm = math.sqrt(sum(float(p.detach().pow(2).sum()) for p in params))
    dirs = []
    for _ in range(3):
        v = [torch.randn(p.shape, generator=g, dtype=p.dtype) for p in params]
        n = math.sqrt(sum(float(t.pow(2).sum()) for t in v))
        dirs.append([t * norm / n for t in v])
    return {"model": model, "x": x, "dirs": dirs}


def _central(model, x, params, v, h: float) -> float:
    with torch.no_grad():
        saved = [p.clone() for p in params]
        try:
            for p, d in zip(params, v):
                p.add_(h * d)
            up = float(model(x).sum())
            for p, s, d in zip(params, saved, v):
                p.copy_(s - h * d)
            down = float(model(x).sum())
        finally:
            for p, s in zip(params, saved):
                p.copy_(s)
    return (up - down) / (2 * h)


def _route_numbers(model, x, dirs) -> dict:
    """Each route's directional derivatives, and central differences of tight solves (the same for
    every route: taken once)."""
    params = list(model.block.field.parameters())
    deployed = model.block.solver
    grads = {}
    try:
        for route in ROUTES:
            model.block.solver = deployed.replace(gradient=route)
            grads[route] = torch.autograd.grad(model(x).sum(), params)
        model.block.solver = deployed.replace(rtol=TIGHT, atol=TIGHT)
        fd = [_central(model, x, params, v, FD_STEP) for v in dirs]
    finally:
        model.block.solver = deployed
    return {
        route: {"ad": [sum(float((gr * d).sum()) for gr, d in zip(grads[route], v)) for v in dirs], "fd": fd}
        for route in ROUTES
    }


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _errors(numbers: dict) -> dict:
    return {route: _rel(n["ad"], n["fd"]) for route, n in numbers.items()}


def _agrees(got: float, ref: float) -> bool:
    """Within a factor of 2; below NOISE when the reference is (finite-difference noise, not a route's error)."""
    return got < NOISE if ref < NOISE else ref / 2 <= got <= 2 * ref


def route_inputs(seed: int) -> dict:
    return _regressor(_gen(seed, 94), "backprop")


def _solves_seen(block, log: list):
    """A forward pre-hook on the block: logs (rtol, atol, gradients on) of every solve the model makes."""

    def hook(module, args):
        log.append([float(module.solver.rtol), float(module.solver.atol), torch.is_grad_enabled()])

    return block.register_forward_pre_hook(hook)


def route_run(ns, inp) -> dict:
    model = inp["model"]
    deployed = model.block.solver
    got, solves = {}, {}
    for route in ROUTES:
        solves[route] = []
        handle = _solves_seen(model.block, solves[route])
        try:
            got[route] = ns["route_error"](model, inp["x"], route, inp["dirs"])
        finally:
            handle.remove()
    return {"errors": got, "kept": model.block.solver is deployed, "solves": solves}


def _check_tolerances(solves, n_dirs: int) -> None:
    """The finite differences (solves with gradients off) are taken at the tight tolerance the task asks for."""
    for route in ROUTES:
        log = solves.get(route) if isinstance(solves, dict) else None
        if not isinstance(log, list):
            raise Wrong("no record of the solves came back")
        off = [entry for entry in log if isinstance(entry, list) and len(entry) == 3 and entry[2] is False]
        loose = [entry for entry in off if not (entry[0] <= 10 * TIGHT and entry[1] <= 10 * TIGHT)]
        if loose or len(off) < 2 * n_dirs:
            seen = sorted({f"{e[0]:g}" for e in off}) or ["none"]
            raise Wrong(
                f"for route {route!r} the finite differences were solved at rtol {', '.join(seen)} "
                f"({len(off)} solves without gradients, {2 * n_dirs} expected), not at {TIGHT:g}; likely "
                f"cause: the finite differences are taken at the model's own (loose) tolerance: set "
                f"model.block.solver = model.block.solver.replace(rtol={TIGHT:g}, atol={TIGHT:g}) while "
                "you take them"
            )


def route_reference(inp) -> dict:
    return {"numbers": _route_numbers(inp["model"], inp["x"], inp["dirs"]), "n_dirs": len(inp["dirs"])}


@judged
def route_judge(answer, ref) -> None:
    got = field_of(answer, "errors", "errors")
    numbers = ref["numbers"]
    expected = _errors(numbers)
    if not isinstance(got, dict):
        raise Wrong(f"expected one error per route, got {describe(got)}")
    for route in ROUTES:
        if not _is_number(got.get(route)):
            raise Wrong(f"route_error(..., {route!r}, ...) returned {describe(got.get(route))}, not a float")
    if field_of(answer, "kept", "settings") is not True:
        raise Wrong(
            "model.block.solver is not the object it was before the call; likely cause: the deployed "
            "solver is not put back (keep it and restore it in a finally:), so the later routes ran "
            "with other settings"
        )
    _check_tolerances(field_of(answer, "solves", "record of the solves"), ref["n_dirs"])
    bad = [r for r in ROUTES if not _agrees(float(got[r]), expected[r])]
    if bad:
        route = bad[0]
        value = float(got[route])
        n = numbers[route]
        cause = ""
        if route != "backprop" and _agrees(value, expected["backprop"]):
            cause = (
                "likely cause: the route is not applied (set model.block.solver = "
                "model.block.solver.replace(gradient=route) before computing the gradient)"
            )
        elif _agrees(value, _rel(n["fd"], n["ad"])):
            cause = "likely cause: divided by the norm of the route's derivatives, not of the finite differences"
        table = "; ".join(f"{r}: got {float(got[r]):.2e}, expected {expected[r]:.2e}" for r in ROUTES)
        raise Wrong(f"the {route} error is off by more than a factor of 2 ({table})" + (f"; {cause}" if cause else ""))


# wrong-route: a draw is used when exactly one route errs, by a factor of WRONG_MARGIN on each side of
# WRONG_ABOVE (the adjoint here errs by 1e7-1e9, the others by 1e-7-1e-5), so however a correct answer
# computes the errors it names the same route.
WRONG_MARGIN = 10.0


def _wrong_decidable(inp: dict) -> bool:
    """Stores every route's error against tight finite differences (the reference's measurement)."""
    inp["errors"] = _errors(_route_numbers(inp["model"], inp["x"], inp["dirs"]))
    high = [r for r in ROUTES if inp["errors"][r] > WRONG_ABOVE * WRONG_MARGIN]
    low = [r for r in ROUTES if inp["errors"][r] < WRONG_ABOVE / WRONG_MARGIN]
    return len(high) == 1 and len(low) == len(ROUTES) - 1


def wrong_inputs(seed: int) -> dict:
    return redraw(seed, 95, lambda g: _regressor(g, "adjoint"), _wrong_decidable)


def wrong_run(ns, inp) -> dict:
    return {"route": ns["wrong_route"](inp["model"], inp["x"], inp["dirs"])}


def wrong_reference(inp) -> dict:
    """Every route's error (measured by the draw, in this clean process)."""
    return {"errors": inp["errors"]}


@judged
def wrong_judge(answer, ref) -> None:
    errors = ref["errors"]
    flagged = [r for r in ROUTES if errors[r] > WRONG_ABOVE]
    table = ", ".join(f"{r} {errors[r]:.1e}" for r in ROUTES)
    if len(flagged) != 1:
        raise Wrong(f"the reference flags {flagged} ({table}): a fault of the check, not of your answer")
    value = field_of(answer, "route", "route")
    if value == flagged[0]:
        return
    if value is not None and not isinstance(value, str):
        raise Wrong(f"wrong_route returned {describe(value)}: a route name or None")
    cause = ""
    if value is None:
        cause = "likely cause: the comparison with 1e-2 is the wrong way round, or the errors are not relative"
    elif value == ROUTES[0]:
        cause = "likely cause: the first route is returned whatever its error (compare each error with 1e-2)"
    raise Wrong(
        f"got {value!r}, expected {flagged[0]!r} (relative errors against tight finite differences: "
        f"{table})" + (f"; {cause}" if cause else "")
    )


TASKS = (
    Task("accuracy-at", ("accuracy-at",), accuracy_inputs, accuracy_run, accuracy_reference, accuracy_judge),
    Task(
        "breaking-tolerance",
        ("accuracy-at", "breaking-tolerance"),
        breaking_inputs,
        breaking_run,
        breaking_reference,
        breaking_judge,
        after=("accuracy-at",),
        decidable="no accuracy within half a row of a threshold; some case breaks; the rule against the "
        "previous accuracy answers differently in some case",
    ),
    Task(
        "directional-derivative",
        ("directional-derivative",),
        directional_inputs,
        directional_run,
        directional_reference,
        directional_judge,
        decidable=f"the central difference within {0.1 * DD_TOL:g} of autograd's value, a one-sided one "
        f"beyond {10 * DD_TOL:g} (relative)",
        hints=(
            (
                "a leaf Variable that requires grad is being used in an in-place operation",
                "likely cause: the parameters are changed in place outside torch.no_grad()",
            ),
        ),
    ),
    Task(
        "route-error",
        ("directional-derivative", "route-error"),
        route_inputs,
        route_run,
        route_reference,
        route_judge,
        after=("directional-derivative",),
        hints=(
            (
                "does not require grad",
                "likely cause: the loss is computed under torch.no_grad() (only the finite differences need it)",
            ),
        ),
    ),
    Task(
        "wrong-route",
        ("directional-derivative", "route-error", "wrong-route"),
        wrong_inputs,
        wrong_run,
        wrong_reference,
        wrong_judge,
        after=("directional-derivative", "route-error"),
        decidable=f"exactly one route errs by more than {WRONG_ABOVE * WRONG_MARGIN:g} and the others by less "
        f"than {WRONG_ABOVE / WRONG_MARGIN:g}",
    ),
)
