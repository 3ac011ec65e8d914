"""Step 5: the gradient the model trains with, against finite differences, with its spread.

On a small batch of test rows, the model's gradient **as written** (every solve on its own route:
torchdiffeq's ``odeint`` backprop, ``odeint_adjoint``'s adjoint, a library block's ``gradient``, a
torchdeq DEQ's IFT or phantom gradient) is compared with central finite differences along
``Sizes.directions`` random directions in the parameters (at least 8 in quick mode). The function
differentiated is a random projection of the outputs, ``L = <w, model(x)>`` (a vector-Jacobian
product, what every route computes; a trained model's own loss has a gradient near zero).

Per direction ``i`` the error is ``e_i = |g·v_i - fd_i| / rms(fd)``; the report gives the median of
the ``e_i`` and its 95 % bootstrap interval over directions (:data:`N_BOOT` resamples).

Precision. In float64 where the model runs in it (cast in place and restored afterwards: a deep
copy would miss weights that a closure made at construction reaches in the original); where the
cast fails (a field holding a float32 tensor that is neither a parameter nor a buffer), in the
model's own float32, and the report says so. The finite differences use a step and a reference tolerance the dtype
resolves (:data:`FD`): float64 step 1e-4 of the parameters' length (a long horizon makes the
truncation error of a larger step visible: lesson 4's planted model at 1e-3 shows 8e-4); the
reference solves at an rtol whose noise (about rtol / step) is a tenth of the ok threshold
(:func:`reference_tolerance`: 1e-7 for a model at rtol 1e-3, 1e-9 at 1e-6, never below 1e-10); float32
step 1e-2, rtol at least 1e-6 (about ten float32 epsilons). A fixed-step solve is differenced as deployed
(it *is* its discretisation). Their own noise (the change between step ``h`` and ``2h`` on one
direction) is reported.

The route judged is the one the model trains with: where the forward pass in train mode (gradients
on) makes other solves than in eval mode (another solver, tolerance, gradient route; FFJORD picks its
tolerances on ``self.training``), the check runs in train mode on those solves, every evaluation with
the same random draw (dropout, a sampled latent). A torchdeq DEQ's gradient is taken in training mode
(where torchdeq attaches it), its reference in eval mode, where torchdeq solves to the tolerance asked
(in training mode it returns the iterate at the index fixed when it was built).

Thresholds (the course's, declared before any run): the gradient is **ok** when the whole interval
lies at or below ``min(1 %, max(floor, 100 x the solve's rtol or tol))``: a tolerance-controlled
solve promises about a hundred times its tolerance (lesson 4), and never more than 1 %; ``floor``
(:data:`OK_MIN`: 1e-4 in float64, 1e-3 in float32) is what the finite differences resolve; a
**problem** when the whole interval lies above 10 % (the training step points elsewhere);
**warning** when it lies between the two; **undecided** when it straddles either threshold, or
when the finite differences are too noisy to certify "ok" (noise above half the ok threshold);
**not measured (reference noise ...)** when their noise is above the ok threshold itself, unless the
error's whole interval lies above both 10 % and :data:`NOISE_CLEAR` x that noise (then it is the
gradient's, a problem): an error the size of the reference's own noise is not the gradient's.

The library's other routes (backprop, checkpoint, adjoint; torchdiffeq's odeint against
odeint_adjoint) are computed beside it as what the user could switch to: shown, never a finding.
Cost: two solves per direction at the reference tolerance plus two for the noise estimate, and
one backward pass per route, on ``Sizes.grad_batch`` rows.
"""

from __future__ import annotations

import math
import time
import warnings as py_warnings

import numpy as np
import torch
from torch import nn

from nodecourse.audit import _inputs as I
from nodecourse.audit._context import AuditContext
from nodecourse.audit._discovery import core_parameters, solver_settings
from nodecourse.audit._observed import is_observed
from nodecourse.audit._report import StepResult, new_figure, render
from nodecourse.audit._state import kept_as_found

NAME = "Gradients against finite differences"
ODE_ROUTES = ("backprop", "checkpoint", "adjoint")
TORCHDIFFEQ_ROUTES = ("backprop", "adjoint")
DEQ_ROUTES = ("implicit", "unrolled")
OK_MAX = 1e-2  # never "ok" above 1 %
#: per dtype, the smallest ok threshold: what the finite differences resolve (float64 at step 1e-4:
#: truncation and solve noise about 1e-6 relative; float32 at step 1e-2: about 1e-4)
OK_MIN = {torch.float64: 1e-4, torch.float32: 1e-3}
PROBLEM = 0.1  # above 10 % the training step points elsewhere
TOL_FACTOR = 100.0  # what a tolerance-controlled solve promises its gradient (lesson 4)
N_BOOT = 1000
REFERENCE_MARGIN = 10.0  # the reference's own noise at a tenth of the ok threshold
NOISE_DIRECTIONS = 1  # the step-2h repeat costs two solves per direction: one direction tells the noise
#: per dtype: (finite-difference step relative to the parameters' length, reference rtol, atol)
FD = {torch.float64: (1e-4, 1e-10, 1e-12), torch.float32: (1e-2, 1e-6, 1e-8)}
FIXED_STEP_ALLOWED = OK_MAX
NOISE_CLEAR = 10.0  # an error ten times the reference's own noise is the gradient's, not the reference's
TRAINING_SEED = 20240607  # the one random draw every training-mode evaluation of step 5 makes


def ok_threshold(core, dtype: torch.dtype = torch.float64) -> tuple[float, str]:
    """What the solve's gradient may err by and still be "ok", and why (module docstring)."""
    floor = OK_MIN[dtype]
    bounds = f"between {floor:g} (what the finite differences resolve) and {OK_MAX:g}"
    if core.kind == "deq":
        tol = core.call.settings["tol"] if is_observed(core) else max(core.module.tol, core.module.backward_tol)
        return min(OK_MAX, max(floor, TOL_FACTOR * tol)), f"{TOL_FACTOR:g} x tol {tol:g}, {bounds}"
    if core.fixed_step:
        return FIXED_STEP_ALLOWED, "a fixed-step solve: the course's 1 %"
    rtol = core.call.settings["rtol"] if is_observed(core) else core.module.solver.rtol
    return min(OK_MAX, max(floor, TOL_FACTOR * rtol)), f"{TOL_FACTOR:g} x rtol {rtol:g}, {bounds}"


def allowed_error(core, dtype: torch.dtype = torch.float64) -> tuple[float, str]:
    """Kept name: the ok threshold (:func:`ok_threshold`)."""
    return ok_threshold(core, dtype)


class CastFailed(RuntimeError):
    """The model does not run in the dtype asked for (a captured tensor of another dtype)."""


def _cast(model: nn.Module, xb, dtype):
    """``model`` cast to ``dtype`` in place (the caller restores it) and ``xb`` cast; raises
    :class:`CastFailed` naming why when the model does not run in ``dtype``."""
    try:
        model.to(dtype)
        x = I.cast(xb, dtype)
        with torch.no_grad():
            out = I.call(model, x)
    except Exception as exc:  # a user's model: whatever breaks the cast, the check runs in its own dtype instead
        raise CastFailed(f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}") from exc
    if out.dtype != dtype:
        raise CastFailed(f"the cast model's output is {out.dtype}, not {dtype}")
    return x


def _torchdeq_train_mode(model: nn.Module) -> int:
    """torchdeq attaches its gradient only in training mode: its DEQ modules (only) put in it."""
    n = 0
    if "torchdeq" in __import__("sys").modules:
        from torchdeq.core import DEQBase

        for m in model.modules():
            if isinstance(m, DEQBase):
                m.train()
                n += 1
    return n


class _torchdeq_eval:
    """Within the block, torchdeq's DEQ modules of ``model`` in eval mode (their modes restored after)."""

    def __init__(self, model: nn.Module):
        self.model, self.saved = model, []

    def __enter__(self):
        if "torchdeq" in __import__("sys").modules:
            from torchdeq.core import DEQBase

            self.saved = [(m, m.training) for m in self.model.modules() if isinstance(m, DEQBase)]
            for m, _ in self.saved:
                m.train(False)
        return self

    def __exit__(self, *exc):
        for m, mode in self.saved:
            m.train(mode)


def _routes(cores) -> list[str]:
    primary = cores[0]
    if primary.kind == "deq":
        return [] if is_observed(primary) else list(DEQ_ROUTES)
    if is_observed(primary) and primary.call.entry.startswith("torchdiffeq"):
        return list(TORCHDIFFEQ_ROUTES)
    return list(ODE_ROUTES)


def reference_tolerance(dtype, ok_max: float) -> float:
    """The reference solves' rtol: tight enough that their noise in the finite differences (about
    rtol / step) is a tenth of the ok threshold, never looser than needed and never tighter than
    :data:`FD` (the dtype's limit): a loose model's check costs less (step 5's budget)."""
    h, floor, _ = FD[dtype]
    return max(floor, ok_max * h / REFERENCE_MARGIN)


def _reference(cores, rtol: float) -> dict:
    atol = rtol * 1e-2
    ode = [c for c in cores if c.kind == "ode" and not c.fixed_step]
    out = {
        "ode": {"rtol": rtol, "atol": atol} if ode else None,
        "deq": {"tol": rtol, "max_iter": 2000} if any(c.kind == "deq" for c in cores) else None,
    }
    if ode and any(not is_observed(c) for c in ode):
        out["ode"]["max_steps"] = 1_000_000
    return out


def median_interval(errors: list[float], seed: int) -> tuple[float, float, float]:
    """Median of ``errors`` and the 95 % bootstrap interval of the median over them."""
    e = np.asarray(errors, dtype=np.float64)
    rng = np.random.default_rng(seed)
    meds = np.median(e[rng.integers(0, len(e), size=(N_BOOT, len(e)))], axis=1)
    lo, hi = np.percentile(meds, [2.5, 97.5])
    return float(np.median(e)), float(lo), float(hi)


def reference_too_noisy(lo: float, fd_noise: float, ok_max: float) -> bool:
    """The finite differences' own noise is above the ok threshold and the error does not stand
    clear of it (its whole interval above both :data:`PROBLEM` and :data:`NOISE_CLEAR` x the noise):
    the error measured may be the reference's, so nothing is measured."""
    if not fd_noise > ok_max:
        return False
    return not (lo > PROBLEM and lo > NOISE_CLEAR * fd_noise)


def verdict_for(lo: float, hi: float, ok_max: float, noisy: bool) -> str:
    if lo > PROBLEM:
        return "problem"
    if noisy:
        return "undecided"
    if hi <= ok_max:
        return "ok"
    if lo > ok_max and hi <= PROBLEM:
        return "warning"
    return "undecided"


def run_step(ctx: AuditContext) -> StepResult:
    """The check runs on the model itself, cast to float64 in place and restored afterwards (a deep
    copy would miss weights a closure made at construction still reaches in the original)."""
    start = time.perf_counter()
    rows = torch.tensor(ctx.sample_rows(ctx.sizes.grad_batch, offset=5))
    xb = I.take(ctx.x_test, rows)
    try:
        with kept_as_found(ctx.model):
            x = _cast(ctx.model, xb, torch.float64)
            return _check(ctx, x, rows, torch.float64, "float64 (the model cast in place, restored afterwards)", start)
    except CastFailed as exc:
        why64 = str(exc)
    dtype = I.dtype_of(xb) if I.dtype_of(xb).is_floating_point else torch.float32
    if dtype not in FD:
        raise RuntimeError(
            f"the gradient check runs in float64 or float32; the model computes in {dtype} and a "
            f"float64 cast fails ({why64})"
        )
    with kept_as_found(ctx.model):
        return _check(
            ctx, xb, rows, dtype, f"{str(dtype).replace('torch.', '')} (a float64 cast fails: {why64})", start
        )


def _check(ctx: AuditContext, x, rows, dtype, precision: str, start: float) -> StepResult:
    model = ctx.model
    training = ctx.train_cores is not None  # the training pass differs from the eval pass: judge it
    if training:
        model.train()
        cores = list(ctx.train_cores)
        n_deq_train = 0
    else:
        model.eval()
        n_deq_train = _torchdeq_train_mode(model)
        cores = list(ctx.cores)
    lib = [c for c in cores if not is_observed(c)]
    primary = cores[0]
    params, seen = [], set()
    for c in lib:
        for p in core_parameters(c):
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
    if not params or any(is_observed(c) for c in cores):
        params = [p for p in model.parameters() if p.requires_grad]
    n_params = sum(p.numel() for p in params)

    gen = ctx.generator(7)
    with torch.no_grad():
        shape = I.call(model, x).shape
    w = torch.randn(shape, generator=gen, dtype=dtype)

    def loss():
        if training:  # train mode may draw noise (dropout, a sampled latent): the same draw every time
            torch.manual_seed(TRAINING_SEED)
        out = I.call(model, x)
        return (w.to(out.device) * out).sum() / shape[0]

    norm = math.sqrt(sum(float(p.detach().double().pow(2).sum()) for p in params)) or 1.0
    directions = []
    for _ in range(ctx.sizes.directions):
        v = [torch.randn(p.shape, generator=gen, dtype=dtype).to(p.device) for p in params]
        vn = math.sqrt(sum(float(t.double().pow(2).sum()) for t in v))
        directions.append([t * (norm / vn) for t in v])
    h = FD[dtype][0]
    ok_max, why_ok = ok_threshold(primary, dtype)
    ref_rtol = reference_tolerance(dtype, ok_max)
    ref = _reference(cores, ref_rtol)
    adaptive = [c for c in cores if c.kind == "deq" or not c.fixed_step]
    # torchdeq's DEQs in eval mode for the reference: in training mode torchdeq returns the iterate at
    # the index fixed when it was built, whatever tolerance the reference asks; in eval mode it solves
    # to the reference tolerance (its eval budget raised with it)
    with solver_settings(adaptive, ode=ref["ode"], deq=ref["deq"]), _torchdeq_eval(model):
        fd = [_central(loss, params, v, h) for v in directions]
        fd2 = [_central(loss, params, v, 2 * h) for v in directions[:NOISE_DIRECTIONS]]
    rms = math.sqrt(sum(f * f for f in fd) / len(fd))
    fd_noise = (math.sqrt(sum((a - b) ** 2 for a, b in zip(fd, fd2)) / len(fd2)) / rms) if rms > 0 else math.inf

    written = sorted({c.route for c in cores})
    entries = [
        _route_entry(
            "as written (" + ", ".join(written) + ")", True, cores, None, loss, params, directions, fd, rms, ctx.seed
        )
    ]
    for route in _routes(cores):
        if [route] == written:
            continue
        changes = {"deq": {"backward": route}} if primary.kind == "deq" else {"ode": {"gradient": route}}
        entries.append(_route_entry(route, False, cores, changes, loss, params, directions, fd, rms, ctx.seed))

    used = entries[0]
    noisy = not (fd_noise <= ok_max / 2)
    reasons = []
    if used.get("median") is None:
        verdict = "not measured"
        reasons.append(f"the model's own gradient could not be computed ({used['failed']})")
    elif reference_too_noisy(used["low"], fd_noise, ok_max):
        verdict = "not measured"
        reasons.append(
            f"not measured (reference noise {fd_noise:.1e} above the ok threshold {ok_max:.0e}): the finite "
            f"differences cannot tell the gradient's error (median {used['median']:.2g}) from their own"
        )
    else:
        verdict = verdict_for(used["low"], used["high"], ok_max, noisy)
        interval = f"median {used['median']:.2g} (95 % interval {used['low']:.2g} to {used['high']:.2g})"
        if verdict == "problem":
            reasons.append(
                f"the gradient the model trains with errs by {interval}: the whole interval is above {PROBLEM:g}"
            )
        elif verdict == "warning":
            reasons.append(
                f"the gradient the model trains with errs by {interval}: above the ok threshold "
                f"{ok_max:.0e} ({why_ok}), below {PROBLEM:g}"
            )
        elif verdict == "undecided":
            why = (
                f"the finite differences' own noise {fd_noise:.1e} is above half the ok threshold {ok_max:.0e}"
                if noisy
                else f"the interval straddles a threshold (ok at or below {ok_max:.0e}, problem above {PROBLEM:g})"
            )
            reasons.append(f"undecided: {interval}; {why}")
    # A route the solver refuses says why where it is named (not "n/a" with the cause elsewhere).
    others = ", ".join(
        f"{e['route']} {e['median']:.1e}"
        if e.get("median") is not None
        else f"{e['route']} not run ({e.get('failed', 'no gradient')})"
        for e in entries[1:]
    )
    ref_text = (
        "the deployed fixed steps"
        if primary.kind == "ode" and primary.fixed_step
        else f"solves at rtol/tol {ref_rtol:g}"
    )
    own = (
        f"median {used['median']:.2g} (95 % interval {used['low']:.2g} to {used['high']:.2g})"
        if used.get("median") is not None
        else "not computed"
    )
    deq_note = " (torchdeq's DEQ in training mode, where it attaches its gradient)" if n_deq_train else ""
    if training:
        deq_note = " (the model in training mode, the route it trains with: it differs from its eval route)"
    if any(c.kind == "deq" and is_observed(c) for c in cores):
        deq_note += "; the reference solves torchdeq's DEQ in eval mode, to the reference tolerance"
    errs = f"errs by {own}"
    if verdict == "not measured" and used.get("median") is not None:
        errs = (
            f"is not measured (reference noise {fd_noise:.1e} above the ok threshold {ok_max:.0e}; against "
            f"the noisy reference it differs by {own})"
        )
    summary = (
        f"On {len(rows)} test rows in {precision}, a random projection of the outputs differentiated along "
        f"{len(directions)} random directions in {n_params:,} parameters{deq_note}: the gradient as written "
        f"({', '.join(written)}) {errs} (relative to finite differences of {ref_text}, step {h:g}, "
        f"their own noise {fd_noise:.1e}); ok at or below {ok_max:.0e} ({why_ok}), problem above "
        f"{PROBLEM:g}" + (f"; routes it could switch to: {others}" if others else "") + "."
    )
    table = {
        "columns": ["route", "median error", "95 % low", "95 % high", "used by the model"],
        "rows": [
            [
                e["route"],
                _num(e.get("median"), e.get("failed")),
                _num(e.get("low")),
                _num(e.get("high")),
                "yes" if e["used"] else "alternative",
            ]
            for e in entries
        ],
    }
    data = {
        "routes": entries,
        "ok_threshold": ok_max,
        "allowed": ok_max,
        "allowed_why": why_ok,
        "problem_threshold": PROBLEM,
        "fd": fd,
        "fd_noise": fd_noise,
        "fd_step": h,
        "reference": ref_text,
        "precision": precision,
        "dtype": str(dtype).replace("torch.", ""),
        "n_rows": len(rows),
        "n_directions": len(directions),
        "n_parameters": n_params,
        "route_used": ", ".join(written),
        "training_mode": training,
        "table": table,
    }
    return StepResult(
        5, NAME, verdict, summary, data, [_figure(entries, ok_max, fd_noise)], reasons, time.perf_counter() - start
    )


def _num(v, failed: str | None = None):
    if v is None:
        return f"not run: {failed}" if failed else "n/a"
    return v


def _route_entry(route, used, cores, changes, loss, params, directions, fd, rms, seed) -> dict:
    entry = {"route": route, "used": used}
    try:
        ctx_changes = changes or {}
        with solver_settings(cores, **ctx_changes), py_warnings.catch_warnings(record=True) as caught:
            py_warnings.simplefilter("always")
            grads = torch.autograd.grad(loss(), params, allow_unused=True)
        if all(g is None for g in grads):
            raise RuntimeError("no parameter receives a gradient on this route")
        g = [torch.zeros_like(p) if gr is None else gr for gr, p in zip(grads, params)]
        directional = [sum(float((a * b).double().sum()) for a, b in zip(g, v)) for v in directions]
        errors = [abs(a - b) / rms if rms > 0 else math.inf for a, b in zip(directional, fd)]
        med, lo, hi = median_interval(errors, seed)
        entry.update(
            median=med,
            low=lo,
            high=hi,
            errors=errors,
            directional=directional,
            rel_error=med,
            warnings=sorted({str(w.message).split("\n")[0][:200] for w in caught}),
        )
    except (ValueError, TypeError, RuntimeError, AssertionError) as exc:  # a route the solver refuses
        entry.update(median=None, rel_error=None, failed=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    return entry


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


def _figure(entries, ok_max, fd_noise):
    fig, (ax,) = new_figure(1, width=5.0)
    for k, e in enumerate(entries):
        if e.get("errors"):
            ax.scatter(
                [k] * len(e["errors"]),
                [max(v, 1e-17) for v in e["errors"]],
                s=10,
                alpha=0.5,
                color="#4c72b0" if e["used"] else "#999999",
            )
            ax.errorbar(
                [k],
                [max(e["median"], 1e-17)],
                yerr=[[max(e["median"] - e["low"], 0)], [max(e["high"] - e["median"], 0)]],
                fmt="o",
                color="black",
                capsize=4,
            )
    ax.set_xticks(
        range(len(entries)),
        [e["route"] + ("" if e["used"] else " (alt.)") + ("\n(not run)" if e.get("failed") else "") for e in entries],
        fontsize=7,
        rotation=15,
    )
    ax.axhline(ok_max, color="#1a7f37", ls="--", label=f"ok at or below {ok_max:.0e}")
    ax.axhline(PROBLEM, color="#cf222e", ls="--", label=f"problem above {PROBLEM:g}")
    if math.isfinite(fd_noise) and fd_noise > 0:
        ax.axhline(fd_noise, color="grey", ls=":", label=f"finite-difference noise {fd_noise:.0e}")
    ax.set(yscale="log", ylabel="error per direction (relative to rms of FD)", title="Gradient routes")
    ax.legend(fontsize=7)
    return render(
        fig,
        "Gradient routes against finite differences",
        "error of each route's directional derivative per random direction (dots), their median and its "
        "95 % bootstrap interval (black); the route as written in blue, alternatives in grey; log scale",
    )
