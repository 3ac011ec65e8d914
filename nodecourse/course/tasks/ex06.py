"""Exercise 6 (Anderson, the implicit backward, Hutchinson) as task specs.

References: the library's batched ``anderson_weights``; the exact fixed point
of a random contraction and the library's Picard iteration on it; backprop
through unrolled Picard steps (``DEQ(backward="unrolled")``); the exact
Jacobian of a random ``EquilibriumBlock`` (its squared Frobenius norm is the
estimator's mean) and the estimator itself on the grader's probes.
The Anderson task is judged on evidence the grader checks itself: the points
where ``f`` was evaluated, each replayed outside the kernel as Anderson's step
from the points before it (a count reported by the kernel decides nothing);
the Hutchinson task runs the estimator on probes the grader
supplies (it seeds torch's generator before each call) and compares the
estimates exactly with the estimator's on the same probes, so the exact value
times noise fails.
"""

from __future__ import annotations

import numpy as np
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
    items,
    judged,
    max_diff,
    show,
)

EXERCISE = "06_deq_exercises"
# "Write it yourself": the library's functions that would answer these tasks raise while they run.
LIBRARY_ANSWERS = {"anderson": ("nodecourse.deq._anderson:anderson", "nodecourse.deq._fixed_point:fixed_point")}


def _seeded(g: torch.Generator, build):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_integer(g, 0, 2**31))
        return build()


# --- mixing-weights -------------------------------------------------------------------------------


def weights_inputs(seed: int) -> dict:
    g = _gen(seed, 61)
    n, d = _integer(g, 3, 6), _integer(g, 20, 40)
    return {"G": torch.randn(n, d, generator=g, dtype=F64)}


def weights_run(ns, inp) -> dict:
    G = inp["G"]
    return {"alpha": ns["mixing_weights"](G.clone()), "alpha_small": ns["mixing_weights"](1e-8 * G)}


def weights_reference(inp) -> dict:
    from nodecourse.deq import anderson_weights

    G = inp["G"]
    return {"alpha": anderson_weights(G[None], torch.ones(1, G.shape[0], dtype=torch.bool), 1e-10)[0], "G": G}


@judged
def weights_judge(answer, ref) -> None:
    expected, G = array(ref["alpha"], "the reference"), array(ref["G"], "G")
    alpha = array(field_of(answer, "alpha", "weights"), "mixing_weights(G)", expected.shape)
    small = array(field_of(answer, "alpha_small", "weights"), "mixing_weights(1e-8 * G)", expected.shape)
    if abs(alpha.sum() - 1) > 1e-12:
        raise Wrong(f"mixing_weights(G) sums to {alpha.sum():.15g}, not 1")
    if max_diff(alpha, expected) > 1e-8:
        raise Wrong(
            f"mixing_weights(G) = {show(alpha)}, the library's {show(expected)} (max difference "
            f"{max_diff(alpha, expected):.2e})"
        )
    if max_diff(small, expected) > 1e-6:
        raise Wrong(
            f"at 1e-8 times the residuals the weights change: {show(small)} instead of {show(expected)} "
            f"(max difference {max_diff(small, expected):.2e}); likely cause: the Tikhonov term is not "
            "scaled by s, the mean of diag(G G^T)"
        )
    best = float(np.linalg.norm(alpha @ G))
    for k in range(len(alpha)):
        step = np.full(len(alpha), -1.0 / (len(alpha) - 1))
        step[k] = 1.0  # sums to zero: the perturbed weights still sum to one
        other = float(np.linalg.norm((alpha + 1e-3 * step) @ G))
        if not other > best:
            raise Wrong(
                f"weights moved along direction {k} give a smaller combined residual ({other:.6g} < "
                f"{best:.6g}): not the minimiser"
            )


# --- anderson -------------------------------------------------------------------------------------


# Evidence, not testimony: the grader does not count the learner's calls of f (a counter in the
# kernel can be wound back through f's closure). The kernel keeps every point f was evaluated at; the
# grader evaluates f there itself, replays Anderson's step from each window of points (the weights of
# task 1 over the residuals it computed) and checks that each next point is that step. A trace that
# passes is Anderson's own iteration from z0, so its length is the work done, whatever was reported.

RECORD_LIMIT = 2000  # points kept by the kernel; more evaluations than Picard needs fail anyway
WINDOW = 6
TOL = 1e-8
LAM = 1e-10  # mixing_weights' default
STEP_RTOL, STEP_ATOL = 1e-6, 1e-12  # of a step's length, of the iterate's scale: rounding, not method


def anderson_inputs(seed: int) -> dict:
    from nodecourse.deq import contraction

    g = _gen(seed, 62)
    return {
        "problem": contraction(
            "linear", _uniform(g, 0.98, 0.99), dim=_integer(g, 20, 40), batch=1, seed=_integer(g, 0, 2**31)
        )
    }


def anderson_run(ns, inp) -> dict:
    p = inp["problem"]
    evaluated: list = []

    def f(v):
        if len(evaluated) < RECORD_LIMIT:
            evaluated.append(v.detach().clone())
        return p.f(v[None])[0]

    z, n = ns["anderson"](f, p.z0[0].clone(), m=WINDOW, tol=TOL, max_iter=3000)
    return {"z": z, "n": n, "evaluated": evaluated}


def anderson_reference(inp) -> dict:
    from nodecourse import fixed_point

    p = inp["problem"]
    picard = fixed_point(p.f, p.z0, method="picard", tol=TOL, max_iter=20000, warn=False)
    dim = p.z0.shape[1]
    b = p.f(torch.zeros(1, dim, dtype=F64))[0]
    A = (p.f(torch.eye(dim, dtype=F64)) - b).T  # f(z) = A z + b, read off f itself
    return {"z_star": p.z_star[0], "picard": int(picard.n_iter), "A": A, "b": b, "z0": p.z0[0]}


def _weights(G: np.ndarray, lam: float = LAM) -> np.ndarray:
    """Task 1's mixing weights of residual rows ``G`` (n, D), in the grader's own arithmetic."""
    H = G @ G.T
    s = max(float(np.mean(np.diag(H))), np.finfo(float).tiny)
    a = np.linalg.solve(H + lam * s * np.eye(len(G)), np.ones(len(G)))
    return a / a.sum()


def replay_failure(A: np.ndarray, b: np.ndarray, points, m: int = WINDOW) -> str:
    """ "" when each point after the first is Anderson's step (window ``m``) from the points before it,
    for f(z) = A z + b evaluated here; else which evaluation is not, and by how much. ``points``:
    the evaluated points in order, each (D,)."""
    X = np.stack([np.asarray(p, dtype=float) for p in points])
    F = X @ A.T + b
    for k in range(1, len(X)):
        lo = max(0, k - m)
        step = _weights(F[lo:k] - X[lo:k]) @ F[lo:k]
        off = float(np.linalg.norm(X[k] - step))
        allowed = STEP_RTOL * float(np.linalg.norm(X[k] - X[k - 1])) + STEP_ATOL * (1 + float(np.linalg.norm(X[k])))
        if not off <= allowed:
            return (
                f"evaluation {k + 1} of f is not an Anderson step from the {k - lo} evaluation(s) before it "
                f"(it is {off:.1e} away from the mixed point sum_i alpha_i f(x_i), the grader replaying "
                "the steps allows rounding only)"
            )
    return ""


@judged
def anderson_judge(answer, ref) -> None:
    z_star = array(ref["z_star"], "the fixed point")
    z = array(field_of(answer, "z", "iterate"), "the returned z", z_star.shape)
    n = field_of(answer, "n", "count")
    if isinstance(n, bool) or not isinstance(n, int):
        raise Wrong(f"the evaluation count is {describe(n)}, not an int")
    evaluated = field_of(answer, "evaluated", "points")
    if not isinstance(evaluated, list):
        raise Wrong(f"the points f was evaluated at are {describe(evaluated)}, not a list")
    if len(evaluated) >= RECORD_LIMIT:
        raise Wrong(
            f"f was evaluated at least {RECORD_LIMIT} times, Picard needs {ref['picard']}: Anderson "
            "should need at most half; likely cause: the step uses the iterates x_i, not f(x_i) = x_i + g_i"
        )
    if not evaluated:
        raise Wrong("anderson never evaluated f")
    points = [array(p, f"evaluation {k + 1}'s point", z_star.shape) for k, p in enumerate(evaluated)]
    z0 = array(ref["z0"], "z0")
    if max_diff(points[0], z0) > 0:
        raise Wrong("the first evaluation of f is not at z0: start the iteration from the z0 given")
    if n != len(points):
        raise Wrong(f"anderson reported {n} evaluations but called f {len(points)} times: report every evaluation")
    A, b = array(ref["A"], "A"), array(ref["b"], "b")
    distinct = [p for k, p in enumerate(points) if k == 0 or max_diff(p, points[k - 1]) > 0]
    replayed = replay_failure(A, b, distinct)
    if replayed:
        raise Wrong(
            replayed + "; likely cause: the window is not the last m points, or the step is not "
            "sum_i alpha_i (x_i + g_i) with alpha = mixing_weights(G)"
        )
    last = points[-1]
    residual = float(np.linalg.norm(last @ A.T + b - last) / np.linalg.norm(last @ A.T + b))
    if not residual <= 10 * TOL:
        raise Wrong(
            f"after {len(points)} evaluations the last point's residual |f(z) - z| / |f(z)| is {residual:.1e} "
            f"(tol {TOL:g}): the iteration stopped before converging"
        )
    err = float(np.linalg.norm(z - z_star) / np.linalg.norm(z_star))
    if not err < 1e-5:
        raise Wrong(f"relative error {err:.1e} to the exact fixed point after {len(points)} evaluations")
    if not len(points) <= ref["picard"] / 2:
        raise Wrong(
            f"{len(points)} evaluations, Picard needs {ref['picard']}: Anderson should need at most half; likely "
            "cause: the step uses the iterates x_i, not f(x_i) = x_i + g_i"
        )


# --- implicit-hook --------------------------------------------------------------------------------


def hook_inputs(seed: int) -> dict:
    from nodecourse.deq import EquilibriumBlock

    g = _gen(seed, 63)
    state, dim = _integer(g, 4, 8), _integer(g, 2, 3)
    block = _seeded(g, lambda: EquilibriumBlock(state, dim, width=16, init_scale=0.5).to(F64))
    return {"block": block, "x": torch.randn(_integer(g, 3, 6), dim, generator=g, dtype=F64), "state": state}


def _grads(block, model, x) -> torch.Tensor:
    block.zero_grad()
    (model(x) ** 2).mean().backward()
    out = torch.cat([q.grad.flatten() for q in block.parameters()])
    block.zero_grad()
    return out


def _hooked_deq(block, state: int, make_hook):
    """A DEQ written by hand: the fixed point without autograd, one f(z, x) with a graph, and the hook
    ``make_hook(f_z, z)`` on the output (no hook when ``make_hook`` is None: one step's gradient)."""
    from nodecourse import fixed_point

    def deq(x):
        with torch.no_grad():
            z_star = fixed_point(
                lambda z: block(z, x), torch.zeros(x.shape[0], state, dtype=F64), tol=1e-13, max_iter=300
            ).z
        z = z_star.clone().requires_grad_()
        f_z = block(z, x)
        out = f_z.view_as(f_z)
        if make_hook is not None:
            out.register_hook(make_hook(f_z, z))
        return out

    return deq


def hook_run(ns, inp) -> dict:
    block, x, state = inp["block"], inp["x"], inp["state"]
    return {"grads": _grads(block, _hooked_deq(block, state, ns["make_implicit_hook"]), x)}


def hook_reference(inp) -> dict:
    from nodecourse import DEQ

    block, x, state = inp["block"], inp["x"], inp["state"]
    deq = DEQ(block, method="picard", backward="unrolled", tol=1e-300, max_iter=300, state=state)
    return {"grads": _grads(block, deq, x), "one_step": _grads(block, _hooked_deq(block, state, None), x)}


@judged
def hook_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "grads", "the parameter gradients")
    rel = float(np.linalg.norm(got - expected) / np.linalg.norm(expected))
    if not rel < 1e-6:
        one_step = array(ref["one_step"], "the one-step gradients")
        unchanged = float(np.linalg.norm(got - one_step) / np.linalg.norm(one_step)) < 1e-6
        cause = (
            "; likely cause: the hook returns the incoming gradient unchanged (no fixed-point solve)"
            if unchanged
            else ""
        )
        raise Wrong(f"relative difference to unrolled backprop {rel:.1e}{cause}")


# --- hutchinson -----------------------------------------------------------------------------------
# The estimator runs on probes the grader supplies: before each call the grader seeds torch's generator
# with a seed it drew, so the task's one torch.randn_like(f_out) per sample gives probes the reference
# draws too, and the estimates are compared exactly (to rounding), call by call, over four seeds.


def hutchinson_inputs(seed: int) -> dict:
    from nodecourse.deq import EquilibriumBlock

    g = _gen(seed, 64)
    state = _integer(g, 6, 10)
    block = _seeded(g, lambda: EquilibriumBlock(state, 2, width=32, init_scale=1.0).to(F64))
    b = _integer(g, 3, 6)
    # 1, 2 and 3 samples in every draw (an average over the samples shows only with more than one)
    calls = [{"seed": _integer(g, 0, 2**31), "n_samples": n} for n in (1, 2, 3, _integer(g, 1, 3))]
    return {
        "block": block,
        "z": torch.randn(b, state, generator=g, dtype=F64),
        "x": torch.randn(b, 2, generator=g, dtype=F64),
        "calls": calls,
    }


def _estimate(fn, block, z, x, call: dict):
    """``fn(f(z), z, n_samples)`` with torch's generator seeded by the grader (the global state is kept)."""
    zr = z.clone().requires_grad_()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(call["seed"])
        return fn(block(zr, x), zr, call["n_samples"])


def _reference_hutchinson(f_out, z, n_samples):
    """The estimator as the task states it: one torch.randn_like(f_out) probe per sample, in order."""
    total = 0
    for _ in range(n_samples):
        eps = torch.randn_like(f_out)
        total = total + torch.autograd.grad(f_out, z, eps, create_graph=True)[0].pow(2).sum(dim=1)
    return total / n_samples


def hutchinson_run(ns, inp) -> dict:
    return {"estimates": [_estimate(ns["hutchinson"], inp["block"], inp["z"], inp["x"], c) for c in inp["calls"]]}


def hutchinson_reference(inp) -> dict:
    block, z, x = inp["block"], inp["z"], inp["x"]
    jac = torch.stack(
        [torch.autograd.functional.jacobian(lambda v: block(v[None], x[i : i + 1])[0], z[i]) for i in range(z.shape[0])]
    )
    return {
        "estimates": [_estimate(_reference_hutchinson, block, z, x, c).detach() for c in inp["calls"]],
        "exact": jac.square().sum(dim=(1, 2)),
        "calls": inp["calls"],
    }


@judged
def hutchinson_judge(answer, ref) -> None:
    """Each call's estimates equal the estimator's on the same probes; they carry a gradient."""
    calls = ref["calls"]
    got = items(field_of(answer, "estimates", "estimates"), len(calls), "results (one per call)")
    exact = array(ref["exact"], "the exact values")
    for k, (value, want, call) in enumerate(zip(got, ref["estimates"], calls)):
        want = array(want, "the reference")
        est = array(value, f"hutchinson's result (call {k + 1}, n_samples={call['n_samples']})", want.shape)
        if not close(est, want, atol=1e-12, rtol=1e-10):
            cause = (
                "likely cause: the exact value, not an estimate"
                if close(est, exact, atol=1e-10, rtol=1e-8)
                else "likely cause: not one torch.randn_like(f_out) probe per sample, in order, or not "
                "||eps^T J||^2 summed per row and averaged over the samples"
            )
            raise Wrong(
                f"on the grader's probes (seed {call['seed']}, n_samples={call['n_samples']}) the estimates "
                f"are {show(est)}, the estimator gives {show(want)} (exact values {show(exact)}); {cause}"
            )
        if not value.requires_grad:
            raise Wrong(
                "the estimates are right, but carry no gradient; likely cause: create_graph=True is "
                "missing in torch.autograd.grad (the estimate is trained through)"
            )


TASKS = (
    Task("mixing-weights", ("mixing-weights",), weights_inputs, weights_run, weights_reference, weights_judge),
    Task(
        "anderson",
        ("mixing-weights", "anderson"),
        anderson_inputs,
        anderson_run,
        anderson_reference,
        anderson_judge,
        after=("mixing-weights",),
    ),
    Task("implicit-hook", ("implicit-hook",), hook_inputs, hook_run, hook_reference, hook_judge),
    Task(
        "hutchinson",
        ("hutchinson",),
        hutchinson_inputs,
        hutchinson_run,
        hutchinson_reference,
        hutchinson_judge,
        hints=(
            ("does not require grad", "likely cause: z must require grad (use the z you were given)"),
            (
                "backward through the graph a second time",
                "likely cause: create_graph=True is missing in "
                "torch.autograd.grad (it keeps the graph for the next probe, and the estimate is trained "
                "through)",
            ),
        ),
    ),
)
