"""Exercise 8 (Hutchinson's trace inside a CNF) as task specs.

References: the trace of the exact Jacobian of a random field; the library's
``divergence_hutchinson`` and ``CNFDynamics`` on the same probes; the closed
form of a diagonal linear flow. The Hutchinson task also checks that the
estimate carries a gradient (a missing ``create_graph=True`` is named here,
not left to surface as a wrong gradient in task 3).
"""

from __future__ import annotations

import torch
from torch import nn

from nodecourse.course.tasks.draw import F64
from nodecourse.course.tasks.draw import generator as _gen
from nodecourse.course.tasks.draw import integer as _integer
from nodecourse.course.tasks.draw import uniform as _uniform
from nodecourse.course.tasks.plain import Array
from nodecourse.course.tasks.spec import Task, Wrong, array, compared, describe, field_of, items, judged, max_diff

EXERCISE = "08_continuous_normalising_flows_exercises"
N_ESTIMATES = 20_000
NO_GRAPH = (
    "likely cause: create_graph=True is missing in torch.autograd.grad (the divergence is "
    "differentiated again in training and in task 3)"
)


def _field(g: torch.Generator, dim: int, **kw):
    from nodecourse.models import MLPField

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_integer(g, 0, 2**31))
        return MLPField(dim, hidden=(16,), activation="tanh", **kw).to(F64)


def _probes(g: torch.Generator, shape) -> torch.Tensor:
    from nodecourse.models import sample_probes

    return sample_probes(shape, generator=torch.Generator().manual_seed(_integer(g, 0, 2**31)), dtype=F64)


# --- exact-divergence -----------------------------------------------------------------------------


def exact_inputs(seed: int) -> dict:
    g = _gen(seed, 81)
    d = _integer(g, 3, 6)
    return {"field": _field(g, d), "z": torch.randn(_integer(g, 3, 6), d, generator=g, dtype=F64)}


def exact_run(ns, inp) -> dict:
    z = inp["z"].clone().requires_grad_(True)
    return {"div": ns["exact_divergence"](inp["field"](None, z), z)}


def exact_reference(inp) -> dict:
    field = inp["field"]
    traces = [torch.trace(torch.autograd.functional.jacobian(lambda v: field(None, v[None])[0], zb)) for zb in inp["z"]]
    return {"div": torch.stack(traces)}


def _same_and_differentiable(answer, ref, key: str, what: str, symptom: str) -> None:
    """The learner's ``key`` equals the reference to 1e-10 (else ``symptom`` with the difference), and
    carries a gradient (else the likely cause: create_graph)."""
    got, expected = compared(answer, ref, key, what)
    if max_diff(got, expected) > 1e-10:
        raise Wrong(symptom.format(diff=max_diff(got, expected)))
    if not answer[key].requires_grad:
        raise Wrong(f"the values are right but carry no gradient; {NO_GRAPH}")


@judged
def exact_judge(answer, ref) -> None:
    _same_and_differentiable(
        answer,
        ref,
        "div",
        "exact_divergence's result",
        "differs from the trace of the Jacobian by {diff:.2e}; likely cause: entry i of the "
        "gradient of f_i is not the one summed",
    )


# --- hutchinson -----------------------------------------------------------------------------------


def hutchinson_inputs(seed: int) -> dict:
    g = _gen(seed, 82)
    d, b = _integer(g, 4, 7), _integer(g, 3, 6)
    return {
        "field": _field(g, d),
        "z": torch.randn(b, d, generator=g, dtype=F64),
        "probes": _probes(g, (_integer(g, 2, 4), b, d)),
        "many": _probes(g, (1, N_ESTIMATES, d)),
    }


def hutchinson_run(ns, inp) -> dict:
    field, fn = inp["field"], ns["hutchinson_divergence"]
    z = inp["z"].clone().requires_grad_(True)
    mine = fn(field(None, z), z, inp["probes"].clone())
    zz = inp["z"][:1].expand(N_ESTIMATES, -1).clone().requires_grad_(True)
    estimates = fn(field(None, zz), zz, inp["many"].clone())
    return {"mine": mine, "estimates": estimates.detach()}


def hutchinson_reference(inp) -> dict:
    from nodecourse.models import divergence_exact, divergence_hutchinson

    field = inp["field"]
    z = inp["z"].clone().requires_grad_(True)
    zz = inp["z"][:1].expand(N_ESTIMATES, -1).clone().requires_grad_(True)
    return {
        "mine": divergence_hutchinson(field(None, z), z, inp["probes"]),
        "estimates": divergence_hutchinson(field(None, zz), zz, inp["many"]).detach(),
        "exact": float(divergence_exact(field(None, z), z)[0]),
    }


@judged
def hutchinson_judge(answer, ref) -> None:
    """On the grader's probes, the learner's estimates equal the library's (no statistical window: a correct
    estimator never fails on an unlucky draw, and one with its own probes or noise always does)."""
    _same_and_differentiable(
        answer,
        ref,
        "mine",
        "hutchinson_divergence's result",
        "largest difference from the library on the same probes {diff:.2e}; likely cause: the "
        "mean over probes, or (eps^T J) eps summed per row",
    )
    want = array(ref["estimates"], "the reference")
    est = array(field_of(answer, "estimates", "estimates"), "the 20,000 estimates", want.shape)
    if max_diff(est, want) > 1e-10:
        raise Wrong(
            f"on {N_ESTIMATES} of the grader's probes the estimates differ from the library's by up to "
            f"{max_diff(est, want):.2e} (their mean {est.mean():.6g}, the exact trace {ref['exact']:.6g}); "
            "likely cause: the probes passed in are not the ones used"
        )


# --- dynamics -------------------------------------------------------------------------------------


def dynamics_inputs(seed: int) -> dict:
    g = _gen(seed, 83)
    d, b = _integer(g, 2, 4), _integer(g, 4, 8)
    return {
        "field": _field(g, d, time_dependent=True),
        "state": torch.randn(b, d + 1, generator=g, dtype=F64),
        "probes": _probes(g, (_integer(g, 1, 3), b, d)),
        "t": torch.tensor(_uniform(g, 0, 1), dtype=F64),
    }


def _out_and_param_grads(dynamics, inp) -> dict:
    out = dynamics(inp["t"], inp["state"].clone())
    grads = torch.autograd.grad(out.square().sum(), list(inp["field"].parameters()), allow_unused=True)
    return {
        "out": out,
        "grads": [g if g is not None else torch.zeros_like(p) for g, p in zip(grads, inp["field"].parameters())],
    }


def dynamics_run(ns, inp) -> dict:
    mine = ns["HutchinsonDynamics"](inp["field"])
    mine.probes = inp["probes"].clone()
    with torch.no_grad():  # as a solver may call it (log_prob's solve does)
        mine(inp["t"], inp["state"].clone())
    return _out_and_param_grads(mine, inp)


def dynamics_reference(inp) -> dict:
    from nodecourse.models import CNFDynamics

    library = CNFDynamics(inp["field"], trace="hutchinson", n_probes=inp["probes"].shape[0])
    library.probes = inp["probes"]
    return _out_and_param_grads(library, inp)


@judged
def dynamics_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "out", "the dynamics' output")
    if max_diff(got, expected) > 1e-10:
        d = expected.shape[1] - 1
        part = "the divergence column" if max_diff(got[:, :d], expected[:, :d]) <= 1e-10 else "f(t, z)"
        raise Wrong(
            f"largest output difference {max_diff(got, expected):.2e}, in {part}"
            + ("; likely cause: the sign (d/dt log p = -tr)" if part == "the divergence column" else "")
        )
    grads = items(field_of(answer, "grads", "gradients"), len(ref["grads"]), "parameter gradients")
    for k, (g, want) in enumerate(zip(grads, ref["grads"])):
        want = array(want, "the reference")
        got_g = array(g, f"gradient {k}", want.shape)
        if max_diff(got_g, want) > 1e-10:
            raise Wrong(
                f"outputs agree but the field's parameter gradients differ (parameter {k}: "
                f"{max_diff(got_g, want):.2e}); {NO_GRAPH}"
            )


# --- log-prob -------------------------------------------------------------------------------------


class DiagonalField(nn.Module):
    """f(t, z) = z * diag: a linear field whose divergence every Rademacher probe gets exactly."""

    def __init__(self, diag):
        super().__init__()
        self.diag = nn.Parameter(diag)

    def forward(self, t, z):
        return z * self.diag


def logp_inputs(seed: int) -> dict:
    g = _gen(seed, 84)
    d, b = _integer(g, 2, 4), _integer(g, 4, 8)
    return {
        "diag": (torch.rand(d, generator=g, dtype=F64) * 2 - 1),
        "x": torch.randn(b, d, generator=g, dtype=F64),
        "probes": _probes(g, (1, b, d)),
    }


def logp_run(ns, inp) -> dict:
    dynamics = ns["HutchinsonDynamics"](DiagonalField(inp["diag"].clone()))
    with torch.no_grad():
        got, nfe = ns["log_prob"](dynamics, inp["x"].clone(), inp["probes"].clone())
    return {"log_p": got, "nfe": nfe}


def logp_reference(inp) -> dict:
    from nodecourse.models import standard_normal_log_prob

    diag, x = inp["diag"], inp["x"]
    return {
        "log_p": standard_normal_log_prob(x * diag.exp()) + diag.sum(),
        "wrong_sign": standard_normal_log_prob(x * diag.exp()) - diag.sum(),
    }


@judged
def logp_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "log_p", "log_prob's result")
    if max_diff(got, expected) > 1e-6:
        cause = (
            "; likely cause: the sign of Δlog p (log p = log N(z(t1)) - Δlog p(t1))"
            if max_diff(got, array(ref["wrong_sign"], "w")) <= 1e-6
            else ""
        )
        raise Wrong(f"largest error {max_diff(got, expected):.2e} against the closed form log N(e^D x) + tr D{cause}")
    nfe = field_of(answer, "nfe", "NFE")
    nfe_value = float(nfe.values.reshape(-1)[0]) if isinstance(nfe, Array) and nfe.values.size == 1 else nfe
    if isinstance(nfe_value, bool) or not isinstance(nfe_value, (int, float)) or not nfe_value > 0:
        raise Wrong(f"the NFE is {describe(nfe)}; return the solve's stats['nfe']")


TASKS = (
    Task("exact-divergence", ("exact-divergence",), exact_inputs, exact_run, exact_reference, exact_judge),
    Task("hutchinson", ("hutchinson",), hutchinson_inputs, hutchinson_run, hutchinson_reference, hutchinson_judge),
    Task(
        "dynamics",
        ("hutchinson", "dynamics"),
        dynamics_inputs,
        dynamics_run,
        dynamics_reference,
        dynamics_judge,
        after=("hutchinson",),
        hints=(
            (
                "does not require grad",
                "likely cause: no torch.enable_grad() around the field's evaluation "
                "(the solver calls the dynamics with gradients off)",
            ),
        ),
    ),
    Task(
        "log-prob",
        ("hutchinson", "dynamics", "log-prob"),
        logp_inputs,
        logp_run,
        logp_reference,
        logp_judge,
        after=("dynamics",),
    ),
)
