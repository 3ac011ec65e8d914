"""Step 5: gradients validated against finite differences.

On a small batch of test rows, in a float64 copy of the model (dropout off), every gradient route
the core offers (ODE: ``backprop``, ``checkpoint``, ``adjoint``; DEQ: ``implicit``, ``unrolled``) is
compared with central finite differences along random directions in the core's parameters. The
function differentiated is a random projection of the outputs, ``L = <w, model(x)>`` with ``w``
drawn once (a vector-Jacobian product, which is what every route computes): a trained model sits
near the minimum of its training loss, where that loss's gradient is close to zero and its
finite differences are mostly truncation error, while a random projection has a gradient of the
size of the outputs' sensitivity. The directions: ``Sizes.directions`` of them, each as long as the
parameter vector, step :data:`FD_STEP` of that length. The finite differences are taken of the model solved at a tight
setting (adaptive ODE: ``rtol`` 1e-10; DEQ: ``tol`` 1e-10), i.e. of the exact map the model
approximates; a fixed-step ODE *is* its discretisation, so its differences are taken as deployed.
The relative error of a route is ``||G v - fd|| / ||fd||`` over the directions.

What a route may err by (the audit's threshold, as in lesson 4): ``100 x`` the solver's tolerance
(``rtol``, or the DEQ's forward and backward ``tol``), between 1e-6 and 0.1; for a fixed-step
solve, which has no tolerance, :data:`FIXED_STEP_ALLOWED`.

Verdict: *problem* when the route the model trains with errs beyond what it may; *warning* when
another route does (switching to it would train on a wrong gradient), when a route cannot be
computed, or when the finite differences are too noisy to judge (their change between step ``h``
and ``2h`` exceeds half the allowed error); *ok* otherwise.
"""
from __future__ import annotations

import copy
import math
import time
import warnings as py_warnings

import torch

from nodecourse.audit import inputs as I
from nodecourse.audit.context import AuditContext
from nodecourse.audit.discovery import core_parameters, find_cores, solver_settings
from nodecourse.audit.report import StepResult, new_figure, render, verdict_of

NAME = "Gradients against finite differences"
ODE_ROUTES = ("backprop", "checkpoint", "adjoint")
DEQ_ROUTES = ("implicit", "unrolled")
FD_STEP = 1e-4  # relative to the length of the parameter vector
TIGHT = 1e-10  # the reference solve's tolerance (float64)
TOL_FACTOR = 100.0  # what a tolerance-controlled solve can promise its gradient (lesson 4's threshold)
FIXED_STEP_ALLOWED = 1e-2  # a fixed-step solve has no tolerance: 1 % is "the gradient of the loss it computes"


def allowed_error(core) -> tuple[float, str]:
    """What the core's gradient may err by, and why (see the module docstring)."""
    m = core.module
    if core.kind == "deq":
        tol = max(m.tol, m.backward_tol)
        return min(0.1, max(1e-6, TOL_FACTOR * tol)), f"{TOL_FACTOR:g} x tol {tol:g}"
    if core.fixed_step:
        return FIXED_STEP_ALLOWED, "a fixed-step solve: the course's 1 %"
    return min(0.1, max(1e-6, TOL_FACTOR * m.solver.rtol)), f"{TOL_FACTOR:g} x rtol {m.solver.rtol:g}"


def _reference_settings(cores) -> dict:
    ode = [c for c in cores if c.kind == "ode" and not c.fixed_step]
    return {"ode": {"rtol": TIGHT, "atol": TIGHT * 1e-2, "max_steps": 1_000_000} if ode else None,
            "deq": {"tol": TIGHT, "max_iter": 2000} if any(c.kind == "deq" for c in cores) else None}


def _adaptive(cores):
    return [c for c in cores if c.kind == "deq" or not c.fixed_step]


def run_step(ctx: AuditContext) -> StepResult:
    start = time.perf_counter()
    model = copy.deepcopy(ctx.model).double().eval()
    cores = find_cores(model)
    primary = cores[0]
    kind = primary.kind
    params, seen = [], set()
    for c in cores:
        for p in core_parameters(c):
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
    rows = torch.tensor(ctx.sample_rows(ctx.sizes.grad_batch, offset=5))
    xb = I.cast(I.take(ctx.x_test, rows), torch.float64)

    gen = ctx.generator(7)
    with torch.no_grad():
        shape = I.call(model, xb).shape
    w = torch.randn(shape, generator=gen, dtype=torch.float64)

    def loss():
        out = I.call(model, xb)
        return (w.to(out.device) * out).sum() / shape[0]

    norm = math.sqrt(sum(float(p.detach().pow(2).sum()) for p in params)) or 1.0
    directions = []
    for _ in range(ctx.sizes.directions):
        v = [torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.device) for p in params]
        vn = math.sqrt(sum(float(t.pow(2).sum()) for t in v))
        directions.append([t * (norm / vn) for t in v])

    ref = _reference_settings(cores)
    with solver_settings(_adaptive(cores), ode=ref["ode"], deq=ref["deq"]):
        fd = [_central(loss, params, v, FD_STEP) for v in directions]
        fd2 = [_central(loss, params, v, 2 * FD_STEP) for v in directions]
    fd_norm = _norm(fd)
    fd_noise = _norm([a - b for a, b in zip(fd, fd2)]) / fd_norm if fd_norm > 0 else math.inf

    routes = DEQ_ROUTES if kind == "deq" else ODE_ROUTES
    rows_out = []
    for route in routes:
        settings = {"deq": {"backward": route}} if kind == "deq" else {"ode": {"gradient": route}}
        entry = {"route": route, "used": route == primary.route}
        try:
            with solver_settings(cores, **settings), py_warnings.catch_warnings(record=True) as caught:
                py_warnings.simplefilter("always")
                grads = torch.autograd.grad(loss(), params, allow_unused=True)
            g = [torch.zeros_like(p) if gr is None else gr for gr, p in zip(grads, params)]
            directional = [sum(float((a * b).sum()) for a, b in zip(g, v)) for v in directions]
            err = _norm([a - b for a, b in zip(directional, fd)]) / fd_norm if fd_norm > 0 else math.inf
            entry.update(rel_error=err, directional=directional,
                         warnings=sorted({str(w.message).split("\n")[0][:200] for w in caught}))
        except (ValueError, TypeError, RuntimeError) as exc:  # a route the solver refuses, or a failed solve
            entry.update(rel_error=None, failed=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        rows_out.append(entry)

    allowed, why = allowed_error(primary)
    problems, warnings = [], []
    conclusive = fd_noise <= allowed / 2
    if not conclusive:
        warnings.append(f"the finite differences change by {fd_noise:.1e} (relative) between steps h and 2h: too "
                        f"noisy to judge errors of {allowed:.0e}")
    for e in rows_out:
        if e.get("rel_error") is None:
            (warnings if not e["used"] else problems).append(
                f"the {e['route']} route could not be computed ({e['failed']})")
            continue
        if e["rel_error"] > allowed and conclusive:
            text = (f"the {e['route']} gradient errs by {e['rel_error']:.2g} (relative), beyond the {allowed:.0e} "
                    f"its solver allows ({why})")
            (problems if e["used"] else warnings).append(
                text + ("; the model trains with it" if e["used"] else "; the model does not use it, but switching "
                        "to it would train on a wrong gradient"))
    verdict, reasons = verdict_of(problems, warnings)
    ref_text = ("the deployed fixed steps" if kind == "ode" and primary.fixed_step else f"a solve at tol {TIGHT:g}")
    errs = ", ".join(f"{e['route']} {e['rel_error']:.1e}" if e.get("rel_error") is not None else f"{e['route']} n/a"
                     for e in rows_out)
    summary = (f"On {len(rows)} test rows in float64, a random projection of the outputs differentiated along "
               f"{len(directions)} random directions in the core's {sum(p.numel() for p in params):,} parameters: "
               f"relative error against central finite differences "
               f"(of {ref_text}; their own noise {fd_noise:.1e}): {errs}; allowed {allowed:.0e} ({why}); the model "
               f"trains with {primary.route}.")
    table = {"columns": ["route", "relative error", "allowed", "used by the model"],
             "rows": [[e["route"], e.get("rel_error") if e.get("rel_error") is not None else "n/a", allowed,
                       "yes" if e["used"] else ""] for e in rows_out]}
    data = {"routes": rows_out, "allowed": allowed, "allowed_why": why, "fd": fd, "fd_noise": fd_noise,
            "fd_step": FD_STEP, "reference": ref_text, "n_rows": len(rows), "n_directions": len(directions),
            "n_parameters": sum(p.numel() for p in params), "route_used": primary.route, "table": table}
    return StepResult(5, NAME, verdict, summary, data, [_figure(rows_out, allowed, fd_noise)], reasons,
                      time.perf_counter() - start)


def _norm(values) -> float:
    return math.sqrt(sum(v * v for v in values))


@torch.no_grad()
def _central(loss, params, v, step) -> float:
    """``(L(θ + h v) - L(θ - h v)) / 2h`` with the parameters put back exactly afterwards."""
    saved = [p.detach().clone() for p in params]
    try:
        for p, d in zip(params, v):
            p.add_(step * d)
        up = float(loss())
        for p, s, d in zip(params, saved, v):
            p.copy_(s - step * d)
        down = float(loss())
    finally:
        for p, s in zip(params, saved):
            p.copy_(s)
    return (up - down) / (2 * step)


def _figure(rows, allowed, fd_noise):
    fig, (ax,) = new_figure(1, width=5.0)
    names = [e["route"] + (" (used)" if e["used"] else "") for e in rows]
    vals = [e["rel_error"] if e.get("rel_error") is not None else math.nan for e in rows]
    shown = [max(v, 1e-17) if math.isfinite(v) else math.nan for v in vals]
    colours = ["#cf222e" if (math.isfinite(v) and v > allowed) else "#4c72b0" for v in vals]
    ax.bar(names, shown, color=colours)
    ax.axhline(allowed, color="#9a6700", ls="--", label=f"allowed {allowed:.0e}")
    if math.isfinite(fd_noise) and fd_noise > 0:
        ax.axhline(fd_noise, color="grey", ls=":", label=f"finite-difference noise {fd_noise:.0e}")
    ax.set(yscale="log", ylabel="relative error of the directional derivatives", title="Gradient routes")
    ax.legend(fontsize=8)
    return render(fig, "Gradient routes against finite differences",
                  "relative error of each route's gradient along random directions in the core's parameters, "
                  "against central finite differences (log scale); red: beyond what the solver allows (dashed)")
