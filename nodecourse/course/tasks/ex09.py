"""Exercise 9 (audit a model by hand) as task specs: every input drawn from the seed.

References: the library's solves (``ODEBlock.solve`` at the task's
tolerances) for the accuracy and the breaking tolerance; autograd's exact
directional derivative of a random float64 MLP; for the gradient routes, the
library's routes (``solver.replace(gradient=route)``) against central finite
differences of tight solves, computed in the reference process, and the route
whose error exceeds ``1e-2`` (the adjoint on the long-horizon model: its
backward solve meets the fast mode grown by ``e^(10 T)``).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from nodecourse.course.tasks.draw import F64, generator as _gen, integer as _integer, uniform as _uniform
from nodecourse.course.tasks.spec import Task, Wrong, array, describe, field_of, judged

EXERCISE = "09_audit_exercises"
ROUTES = ("backprop", "checkpoint", "adjoint")
FD_STEP = 1e-4
WRONG_ABOVE = 1e-2
NOISE = 1e-4  # below this a route's error is the finite differences' own (about 1e-6 here)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- accuracy-at ----------------------------------------------------------------------------------

def _classifier(g: torch.Generator, low: float, high: float):
    from nodecourse.lessons.lesson09 import rotating_classifier

    omega = _uniform(g, low, high)
    model, _, (x, y) = rotating_classifier(omega=omega, n=2 * _integer(g, 100, 200), seed=_integer(g, 0, 2 ** 31))
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
    return {"model": model, "x": x, "y": y, "omega": omega,
            "tols": [10.0 ** -_integer(g, 5, 7), 10.0 ** -_integer(g, 2, 3)]}


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
    return {"expected": [list(_accuracy(model, x, y, tol)) for tol in inp["tols"]], "tols": inp["tols"],
            "deployed": list(_accuracy(model, x, y, deployed.rtol)), "n": int(y.numel())}


@judged
def accuracy_judge(answer, ref) -> None:
    got = field_of(answer, "got", "results")
    for value, (acc, nfe), tol in zip(got, ref["expected"], ref["tols"]):
        if not isinstance(value, list) or len(value) != 2:
            raise Wrong(f"accuracy_at(..., tol={tol:g}) returned {describe(value)}, not a pair (accuracy, nfe)")
        a, n = value
        if not _is_number(a) or not isinstance(a, float):
            raise Wrong(f"the accuracy at tol={tol:g} is {describe(a)}, not a float")
        if isinstance(n, bool) or not isinstance(n, int):
            raise Wrong(f"the NFE at tol={tol:g} is {describe(n)}, not an int")
        if abs(a - acc) <= 1e-12 and n == nfe:
            continue
        cause = ""
        if abs(a - ref["deployed"][0]) <= 1e-12 and n == ref["deployed"][1]:
            cause = "likely cause: the solve uses the model's own tolerance, not tol (pass rtol=tol, atol=tol)"
        elif n == nfe and abs(a - acc * ref["n"]) < 0.5:
            cause = "likely cause: the number of correct rows, not the fraction"
        elif n == nfe and abs(a - (1 - acc)) < 1e-12:
            cause = "likely cause: the error rate (1 - accuracy), or the wrong side of the argmax"
        raise Wrong(f"at tol={tol:g}: got accuracy {a!r} with NFE {n}, the library's solve gives {acc!r} with "
                    f"NFE {nfe}" + (f"; {cause}" if cause else ""))
    if field_of(answer, "kept", "settings") is not True:
        raise Wrong("the results are right, but model.block.solver is not the object it was before the call; "
                    "likely cause: the solver was replaced and not put back (solve(x, rtol=..., atol=...) "
                    "changes the settings for one call only)")


# --- breaking-tolerance ---------------------------------------------------------------------------

def breaking_inputs(seed: int) -> dict:
    g = _gen(seed, 92)
    cases = []
    for low, high in ((50.0, 70.0), (15.0, 25.0)):
        model, x, y, omega = _classifier(g, low, high)
        tight = _integer(g, 6, 7)
        loose = _integer(g, 1, 2)
        for tols in ([10.0 ** -k for k in range(tight, loose - 1, -1)], [10.0 ** -tight, 10.0 ** -(tight - 1)]):
            cases.append({"model": model, "x": x, "y": y, "omega": omega, "tols": tols})
    return {"cases": cases}


def breaking_run(ns, inp) -> dict:
    return {"got": [ns["breaking_tolerance"](c["model"], c["x"], c["y"], list(c["tols"])) for c in inp["cases"]]}


def breaking_reference(inp) -> dict:
    out = []
    for c in inp["cases"]:
        acc = [_accuracy(c["model"], c["x"], c["y"], t)[0] for t in c["tols"]]
        out.append({"omega": c["omega"], "tols": c["tols"], "acc": acc})
    return {"cases": out}


def _first_below(tols, acc, base_of):
    """The first tols[k] (k >= 1) whose accuracy is below base_of(k) - 0.05, or None."""
    return next((t for k, (t, a) in enumerate(zip(tols, acc)) if k >= 1 and a < base_of(k) - 0.05), None)


@judged
def breaking_judge(answer, ref) -> None:
    got = field_of(answer, "got", "answers")
    cases = ref["cases"]
    if not isinstance(got, list) or len(got) != len(cases):
        raise Wrong(f"expected {len(cases)} answers, got {describe(got)}")
    expected = [_first_below(c["tols"], c["acc"], lambda k, a=c["acc"]: a[0]) for c in cases]
    if all(e is None for e in expected):
        raise Wrong("the course's cases have no breaking tolerance (a fault of the check, not of your answer)")
    for value, want, c in zip(got, expected, cases):
        if value is not None and not _is_number(value):
            raise Wrong(f"breaking_tolerance returned {describe(value)}: a tolerance from tols or None")
        if value == want or (value is not None and want is not None and math.isclose(value, want, rel_tol=1e-12)):
            continue
        tols, acc = c["tols"], c["acc"]
        previous = _first_below(tols, acc, lambda k: acc[k - 1])
        index = tols.index(want) if want is not None else None
        cause = ""
        if value is not None and previous is not None and math.isclose(value, previous, rel_tol=1e-12):
            cause = "likely cause: each accuracy is compared with the previous one, not with the tightest"
        elif index is not None and value is not None and index >= 2 and math.isclose(value, tols[index - 1],
                                                                                      rel_tol=1e-12):
            cause = "likely cause: the tolerance before the break is returned (the last good one)"
        elif want is not None and value is None:
            cause = "likely cause: the threshold (0.05 below the tightest's accuracy) is not reached by your rule"
        accs = ", ".join(f"{t:g}: {a:.3f}" for t, a in zip(tols, acc))
        raise Wrong(f"omega {c['omega']:.4g}, {len(tols)} tolerances: got {value!r}, expected {want!r} "
                    f"(accuracies {accs})" + (f"; {cause}" if cause else ""))


# --- directional-derivative -----------------------------------------------------------------------

def directional_inputs(seed: int) -> dict:
    g = _gen(seed, 93)
    d_in, width = _integer(g, 2, 4), _integer(g, 6, 12)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_integer(g, 0, 2 ** 31))
        net = torch.nn.Sequential(torch.nn.Linear(d_in, width), torch.nn.Tanh(), torch.nn.Linear(width, 1)).to(F64)
    x = torch.randn(_integer(g, 3, 8), d_in, generator=g, dtype=F64)
    v = [torch.randn(p.shape, generator=g, dtype=F64) for p in net.parameters()]
    return {"net": net, "x": x, "v": v, "h": 1e-5}


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
    with torch.no_grad():
        base = float(net(x).sum())
        for p, d in zip(params, v):
            p.add_(h * d)
        up = float(net(x).sum())
        for p, d in zip(params, v):
            p.sub_(h * d)
    return {"exact": exact, "forward": (up - base) / h, "before": [p.detach().clone() for p in params], "h": h}


@judged
def directional_judge(answer, ref) -> None:
    value = field_of(answer, "value", "derivative")
    exact = ref["exact"]
    if not isinstance(value, float):
        raise Wrong(f"directional_derivative returned {describe(value)}, not a float (use float(...))")
    if not abs(value - exact) <= 1e-6 * abs(exact):
        ratio = value / exact if exact else float("nan")
        cause = ""
        if abs(ratio + 1) < 1e-3:
            cause = "likely cause: the difference is taken the wrong way round (L(theta - h v) - L(theta + h v))"
        elif abs(ratio - 2) < 1e-3:
            cause = "likely cause: divided by h, not by 2h"
        elif abs(ratio - 0.5) < 1e-3:
            cause = "likely cause: divided by 4h (or the step is h / 2 each way)"
        elif abs(value - ref["forward"]) <= 1e-9 * abs(exact):
            cause = "likely cause: a one-sided difference (L(theta + h v) - L(theta)) / h, not the central one"
        raise Wrong(f"got {value:.10g}, autograd's exact directional derivative {exact:.10g} (ratio {ratio:.6g}, "
                    f"relative error {abs(value - exact) / abs(exact):.1e} > 1e-6 at h = {ref['h']:g})"
                    + (f"; {cause}" if cause else ""))
    after = field_of(answer, "after", "parameters")
    for k, (a, b) in enumerate(zip(after, ref["before"])):
        got, want = array(a, f"parameter {k}"), array(b, "the reference")
        if got.shape != want.shape or not np.array_equal(got, want):
            diff = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("inf")
            raise Wrong(f"the derivative is right, but parameter {k} is not what it was (max change {diff:.2e}); "
                        "likely cause: the parameters are not restored exactly (save copies and copy_ them back; "
                        "adding and subtracting h v again leaves rounding)")


# --- route-error and wrong-route ------------------------------------------------------------------

def _regressor(g: torch.Generator, gradient: str) -> dict:
    from nodecourse.lessons.lesson09 import long_horizon_regressor

    model, train, (x, _) = long_horizon_regressor(gradient, seed=_integer(g, 0, 2 ** 31))
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


def _route_numbers(model, x, dirs, route: str) -> dict:
    """The route's directional derivatives, and central differences of tight solves."""
    params = list(model.block.field.parameters())
    deployed = model.block.solver
    try:
        model.block.solver = deployed.replace(gradient=route)
        grads = torch.autograd.grad(model(x).sum(), params)
        model.block.solver = deployed.replace(rtol=1e-10, atol=1e-10)
        fd = [_central(model, x, params, v, FD_STEP) for v in dirs]
    finally:
        model.block.solver = deployed
    ad = [sum(float((gr * d).sum()) for gr, d in zip(grads, v)) for v in dirs]
    return {"ad": ad, "fd": fd}


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


def route_run(ns, inp) -> dict:
    model = inp["model"]
    deployed = model.block.solver
    got = {route: ns["route_error"](model, inp["x"], route, inp["dirs"]) for route in ROUTES}
    return {"errors": got, "kept": model.block.solver is deployed}


def route_reference(inp) -> dict:
    return {"numbers": {route: _route_numbers(inp["model"], inp["x"], inp["dirs"], route) for route in ROUTES}}


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
    bad = [r for r in ROUTES if not _agrees(float(got[r]), expected[r])]
    if bad:
        route = bad[0]
        value = float(got[route])
        n = numbers[route]
        cause = ""
        if route != "backprop" and _agrees(value, expected["backprop"]):
            cause = ("likely cause: the route is not applied (set model.block.solver = "
                     "model.block.solver.replace(gradient=route) before computing the gradient)")
        elif _agrees(value, _rel(n["fd"], n["ad"])):
            cause = "likely cause: divided by the norm of the route's derivatives, not of the finite differences"
        table = "; ".join(f"{r}: got {float(got[r]):.2e}, expected {expected[r]:.2e}" for r in ROUTES)
        raise Wrong(f"the {route} error is off by more than a factor of 2 ({table})" + (f"; {cause}" if cause else ""))
    if field_of(answer, "kept", "settings") is not True:
        raise Wrong("the errors are right, but model.block.solver is not the object it was before the call; "
                    "likely cause: the deployed solver is not put back (keep it and restore it in a finally:)")


def wrong_inputs(seed: int) -> dict:
    return _regressor(_gen(seed, 95), "adjoint")


def wrong_run(ns, inp) -> dict:
    return {"route": ns["wrong_route"](inp["model"], inp["x"], inp["dirs"])}


def wrong_reference(inp) -> dict:
    numbers = {route: _route_numbers(inp["model"], inp["x"], inp["dirs"], route) for route in ROUTES}
    return {"errors": _errors(numbers)}


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
    raise Wrong(f"got {value!r}, expected {flagged[0]!r} (relative errors against tight finite differences: "
                f"{table})" + (f"; {cause}" if cause else ""))


TASKS = (
    Task("accuracy-at", ("accuracy-at",), accuracy_inputs, accuracy_run, accuracy_reference, accuracy_judge),
    Task("breaking-tolerance", ("accuracy-at", "breaking-tolerance"), breaking_inputs, breaking_run,
         breaking_reference, breaking_judge, after=("accuracy-at",)),
    Task("directional-derivative", ("directional-derivative",), directional_inputs, directional_run,
         directional_reference, directional_judge,
         hints=(("a leaf Variable that requires grad is being used in an in-place operation",
                 "likely cause: the parameters are changed in place outside torch.no_grad()"),)),
    Task("route-error", ("directional-derivative", "route-error"), route_inputs, route_run, route_reference,
         route_judge, after=("directional-derivative",),
         hints=(("does not require grad", "likely cause: the loss is computed under torch.no_grad() "
                                          "(only the finite differences need it)"),)),
    Task("wrong-route", ("directional-derivative", "route-error", "wrong-route"), wrong_inputs, wrong_run,
         wrong_reference, wrong_judge, after=("directional-derivative", "route-error")),
)
