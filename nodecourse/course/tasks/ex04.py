"""Exercise 4 (the adjoint) as task specs.

References: autograd's vector-Jacobian products on the same field (task 1),
backpropagation through the library's RK4 solve on the same steps (task 2).
Task 3 (flat memory) is of the weaker, *observed* kind: the grader measures
the peak memory of forward + backward itself, through the learner's
``LearnerAdjoint`` and through plain backprop, at step counts drawn per run,
in a fresh sandbox that runs the learner's answers, reading every process
of it (:class:`nodecourse.course.grading_kernel.TreeMemory`: a forked decoy or
a short-lived child only adds), and the learner's ``peak_bytes`` must agree
with that measurement. Flat is not enough: the adjoint at the larger size
must hold less than backprop at the smaller (memory padded at the small size
looks flat too).
"""

from __future__ import annotations

import numpy as np
import torch

from nodecourse.course.tasks.draw import F64
from nodecourse.course.tasks.draw import generator as _gen
from nodecourse.course.tasks.draw import integer as _integer
from nodecourse.course.tasks.draw import uniform as _uniform
from nodecourse.course.tasks.spec import Task, Wrong, array, describe, field_of, judged, max_diff

EXERCISE = "04_adjoint_exercises"
MIB = 2**20
NO_GRAD_HINTS = (
    (
        "does not require grad",
        "likely cause: no torch.enable_grad() around the vector-Jacobian product "
        "(a backward pass runs with gradients off)",
    ),
    (
        "appears to not have been used in the graph",
        "likely cause: differentiate with respect to the detached "
        "copy of z that requires grad, the one func was called on",
    ),
)


def _field(g: torch.Generator, dim: int, hidden: int):
    from nodecourse.models import MLPField

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_integer(g, 0, 2**31))
        return MLPField(dim, hidden=(hidden,)).to(F64)


def _ratio(got: np.ndarray, ref: np.ndarray) -> float:
    denom = float(np.sum(ref * ref))
    return float(np.sum(got * ref)) / denom if denom > 0 else float("nan")


def _ratio_cause(got: np.ndarray, ref: np.ndarray) -> str:
    r = _ratio(got, ref)
    if abs(r + 1) < 0.05:
        return "; likely cause: the sign (yours is the negative of the reference: -a^T df/dz, -a^T df/dtheta)"
    if abs(r - 2) < 0.05:
        return "; likely cause: counted twice (yours is twice the reference)"
    return ""


# --- adjoint-dynamics -----------------------------------------------------------------------------


def dynamics_inputs(seed: int) -> dict:
    g = _gen(seed, 41)
    d, b = _integer(g, 2, 4), _integer(g, 3, 6)
    return {
        "field": _field(g, d, _integer(g, 6, 10)),
        "t": torch.tensor(_uniform(g, 0.0, 1.0), dtype=F64),
        "z": torch.randn(b, d, generator=g, dtype=F64),
        "a": torch.randn(b, d, generator=g, dtype=F64),
    }


def dynamics_run(ns, inp) -> dict:
    params = list(inp["field"].parameters())
    with torch.no_grad():  # as in a backward pass
        f, da, dg = ns["adjoint_dynamics"](inp["field"], params, inp["t"], inp["z"].clone(), inp["a"].clone())
    return {"f": f, "da": da, "dg": list(dg)}


def dynamics_reference(inp) -> dict:
    field, params = inp["field"], list(inp["field"].parameters())
    z = inp["z"].clone().requires_grad_(True)
    f = field(inp["t"], z)
    vjps = torch.autograd.grad(f, (z, *params), grad_outputs=inp["a"])
    return {"f": f, "da": -vjps[0], "dg": [-v for v in vjps[1:]]}


@judged
def dynamics_judge(answer, ref) -> None:
    f_ref = array(ref["f"], "the reference")
    f = array(field_of(answer, "f", "f"), "f", f_ref.shape)
    if max_diff(f, f_ref) > 1e-12:
        raise Wrong(f"f differs from func(t, z) by {max_diff(f, f_ref):.2e}")
    da_ref = array(ref["da"], "the reference")
    da_value = field_of(answer, "da", "da")
    da = array(da_value, "da", da_ref.shape)
    if not np.allclose(da, da_ref, rtol=1e-9, atol=1e-12):
        raise Wrong(f"max |da - reference| = {max_diff(da, da_ref):.2e}{_ratio_cause(da, da_ref)}")
    dg = field_of(answer, "dg", "dg")
    if not isinstance(dg, list) or len(dg) != len(ref["dg"]):
        raise Wrong(f"dg is {describe(dg)}; expected a list of {len(ref['dg'])} tensors, one per parameter")
    for k, (got, want) in enumerate(zip(dg, ref["dg"])):
        want = array(want, "the reference")
        got = array(got, f"dg[{k}]", want.shape)
        if not np.allclose(got, want, rtol=1e-9, atol=1e-12):
            raise Wrong(f"max |dg[{k}] - reference| = {max_diff(got, want):.2e}{_ratio_cause(got, want)}")
    if da_value.requires_grad or any(v.requires_grad for v in dg):
        raise Wrong("da or dg still requires grad: return detached tensors (no graph leaks out of a backward pass)")


# --- learner-adjoint ------------------------------------------------------------------------------


def adjoint_inputs(seed: int) -> dict:
    g = _gen(seed, 42)
    d = _integer(g, 2, 3)
    return {
        "field": _field(g, d, _integer(g, 12, 16)),
        "y0": torch.randn(_integer(g, 2, 4), d, generator=g, dtype=F64),
        "t1": _uniform(g, 0.6, 1.2),
        "n": _integer(g, 30, 50),
    }


def _loss_grads(z1, y0, params) -> list:
    return list(torch.autograd.grad(z1.pow(2).sum(), [y0, *params]))


def adjoint_run(ns, inp) -> dict:
    field, params = inp["field"], list(inp["field"].parameters())
    y0 = inp["y0"].clone().requires_grad_(True)
    z1 = ns["LearnerAdjoint"].apply(field, inp["t1"], inp["n"], y0, *params)
    return {"grads": _loss_grads(z1, y0, params)}


def adjoint_reference(inp) -> dict:
    from nodecourse.course.tasks.draw import odeint_last

    field, params = inp["field"], list(inp["field"].parameters())
    y0 = inp["y0"].clone().requires_grad_(True)
    z1 = odeint_last(field, y0, 0.0, inp["t1"], method="rk4", step_size=inp["t1"] / inp["n"])
    return {"grads": _loss_grads(z1, y0, params)}


@judged
def adjoint_judge(answer, ref) -> None:
    grads = field_of(answer, "grads", "gradients")
    if not isinstance(grads, list) or len(grads) != len(ref["grads"]):
        raise Wrong(f"expected gradients for y0 and {len(ref['grads']) - 1} parameters, got {describe(grads)}")
    names = ["dL/dy0"] + [f"dL/dparams[{k}]" for k in range(len(grads) - 1)]
    for name, got, want in zip(names, grads, ref["grads"]):
        want = array(want, "the reference")
        got = array(got, name, want.shape)
        worst = float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want)))) if want.size else 0.0
        if not worst < 1e-5:
            raise Wrong(
                f"{name}: largest relative difference to backprop through the same RK4 solve {worst:.1e}"
                + (
                    _ratio_cause(got, want)
                    or "; possible causes: adjoint_dynamics (its own check comes "
                    "first), the augmented state solved forward in time instead of from t1 back to 0, or "
                    "its parts [z, a, g] split out of order"
                )
            )


# --- flat-memory (observed) -----------------------------------------------------------------------

MEMORY_SEEDS = 200  # the calibration seeds of flat-memory (see its Task)


def memory_inputs(seed: int) -> dict:
    g = _gen(seed, 43)
    a = _integer(g, 6, 10)
    return {"steps": [a, 4 * a]}


def _once(ns, use_adjoint: bool, n_steps: int) -> None:
    """One forward + backward (the backward pass always included)."""
    from nodecourse import odeint

    field, params, y0 = ns["field3"], ns["params3"], ns["y03"]
    if use_adjoint:
        z1 = ns["LearnerAdjoint"].apply(field, 1.0, n_steps, y0, *params)
    else:
        z1 = odeint(field, y0, torch.tensor([0.0, 1.0]), method="rk4", step_size=1.0 / n_steps).ys[-1]
    z1.pow(2).sum().backward()


def _own_peak(ns, use_adjoint: bool, n_steps: int) -> int:
    """The measurement in the kernel (the notebook's self-check; peak_bytes must agree with it)."""
    from nodecourse.measure import measure_peak

    return int(measure_peak(lambda: _once(ns, use_adjoint, n_steps)))


def memory_keys(inp) -> list:
    """What the grader measures from outside the kernel: a warm-up each way, then both ways at both sizes."""
    return [[True, 4], [False, 4]] + [[adj, n] for adj in (True, False) for n in inp["steps"]]


def memory_measure(ns, inp, key) -> None:
    """One of :func:`memory_keys`, run in the kernel while the grader watches its peak memory."""
    _clear_grads(ns)
    _once(ns, bool(key[0]), int(key[1]))
    _clear_grads(ns)


def _clear_grads(ns) -> None:
    """Every measurement starts with no gradient buffers (each backward allocates them anew)."""
    for p in [ns["y03"], *ns["params3"]]:
        p.grad = None


def _measure(ns, fn, use_adjoint: bool, n_steps: int):
    _clear_grads(ns)
    return fn(use_adjoint, n_steps)


def memory_run(ns, inp) -> dict:
    own = lambda adj, n: _own_peak(ns, adj, n)  # noqa: E731
    for adj in (True, False):  # warm-up: lazy initialisation is not part of the measure
        _measure(ns, own, adj, 4)
        _measure(ns, ns["peak_bytes"], adj, 4)
    rows = []
    for adj in (True, False):
        for n in inp["steps"]:
            rows.append(
                {
                    "adjoint": adj,
                    "n": n,
                    "own": _measure(ns, own, adj, n),
                    "yours": _measure(ns, ns["peak_bytes"], adj, n),
                }
            )
    _clear_grads(ns)
    return {"rows": rows}


def memory_reference(inp) -> dict:
    return {"steps": inp["steps"]}


def _measured_outside(ref, a: int, b: int) -> dict | None:
    """``{(adjoint, n): peak bytes}`` the grader measured from outside, or None (the self-check)."""
    measured = ref.get("measured") if isinstance(ref, dict) else None
    if not isinstance(measured, list):
        return None
    out = {}
    for m in measured:
        key = m.get("key") if isinstance(m, dict) else None
        if isinstance(key, list) and len(key) == 2 and key[1] in (a, b):
            out[bool(key[0]), int(key[1])] = float(m.get("bytes", 0))
    if len(out) != 4:
        raise Wrong(f"the grader's own measurements are incomplete ({len(out)} of 4)")
    return out


@judged
def memory_judge(answer, ref) -> None:
    rows = field_of(answer, "rows", "measurements")
    if not isinstance(rows, list) or len(rows) != 4:
        raise Wrong(f"expected four measurements, got {describe(rows)}")
    own, yours = {}, {}
    for r in rows:
        key = (r.get("adjoint"), r.get("n"))
        value = r.get("yours")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Wrong(f"peak_bytes{key} returned {describe(value)}, not a number of bytes")
        own[key], yours[key] = r.get("own"), float(value)
    a, b = ref["steps"]
    outside = _measured_outside(ref, a, b)
    for key, measured in own.items():
        if not abs(yours[key] - measured) <= 0.03 * measured + 64 * 1024:
            cause = (
                "likely cause: backward() is left out"
                if yours[key] < measured
                else "likely cause: more than one forward + backward is measured"
            )
            raise Wrong(
                f"peak_bytes(use_adjoint={key[0]}, n_steps={key[1]}) = {yours[key] / MIB:.2f} MiB, but "
                f"one forward + backward measured by the grader takes {measured / MIB:.2f} MiB; {cause}"
            )
    if outside is not None:
        own = outside  # the flatness is decided on what the grader measured from outside the kernel
    grow_back = own[False, b] - own[False, a]
    grow_adj = own[True, b] - own[True, a]
    sizes = (
        f"MiB at {a} / {b} steps: adjoint {own[True, a] / MIB:.1f} / {own[True, b] / MIB:.1f}, backprop "
        f"{own[False, a] / MIB:.1f} / {own[False, b] / MIB:.1f}"
    )
    if not (own[False, b] >= 2 * own[False, a] and grow_adj < 0.1 * grow_back):
        raise Wrong(
            f"{sizes}: the adjoint's memory is not flat; likely "
            "cause: LearnerAdjoint keeps a graph (forward must solve under torch.no_grad())"
        )
    # Flat is not enough: memory allocated at the small size to match the large one is flat too. The
    # adjoint holds one step's graph at a time, so at the large size it stays below backprop at the small.
    if not own[True, b] < own[False, a]:
        raise Wrong(
            f"{sizes}: the adjoint at {b} steps holds more than backprop at {a} steps; likely cause: "
            "LearnerAdjoint keeps more than one step's graph at a time (or allocates memory it does not need)"
        )


TASKS = (
    Task(
        "adjoint-dynamics",
        ("adjoint-dynamics",),
        dynamics_inputs,
        dynamics_run,
        dynamics_reference,
        dynamics_judge,
        hints=NO_GRAD_HINTS,
    ),
    Task(
        "learner-adjoint",
        ("adjoint-dynamics", "learner-adjoint"),
        adjoint_inputs,
        adjoint_run,
        adjoint_reference,
        adjoint_judge,
        after=("adjoint-dynamics",),
        hints=NO_GRAD_HINTS,
    ),
    Task(
        "flat-memory",
        ("adjoint-dynamics", "learner-adjoint", "flat-memory"),
        memory_inputs,
        memory_run,
        memory_reference,
        memory_judge,
        after=("learner-adjoint",),
        hints=NO_GRAD_HINTS,
        observed="peak memory exists only in the processes that run the learner's code: the grader reads the "
        "peak resident memory of every process of the sandbox itself, from outside it (/proc/<pid>/status, "
        "summed; children that exit in between counted by their page faults), around runs at step counts "
        "drawn per run; code there can only add to what it measures",
        measure_keys=memory_keys,
        measure=memory_measure,
        # 16 peak-memory measurements per seed (about 6 s) and only 5 distinct draws: 200 seeds measure
        # each draw 40 times, which samples the measurement's noise; 2,000 would take 3.6 CPU hours.
        calibration=MEMORY_SEEDS,
    ),
)
