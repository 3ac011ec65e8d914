"""The reversible Heun method (Kidger, Foster, Li and Lyons 2021) and ``gradient="reversible"``.

The method carries a second state ``z`` beside the solution ``y`` and the slope ``f = func(t, z)``;
one step of size ``h`` from ``t`` is

    z1 = 2 y - z + h f,      f1 = func(t + h, z1),      y1 = y + h/2 (f + f1)

(``z0 = y0``), one evaluation of ``func`` per step, second order for ODEs. The step can be undone
with algebra alone:

    z = 2 y1 - z1 - h f1,    f  = func(t, z),           y  = y1 - h/2 (f + f1).

``gradient="reversible"`` uses that: the forward solve keeps no graph and no intermediate state,
and the backward pass walks the steps last to first, *reconstructing* each step's inputs by the
inverse and taking the vector-Jacobian product of the step at them. The gradient is the gradient
of the discrete solve (what backprop through the same steps gives) up to float rounding, while
memory does not grow with the number of steps. Cost: ``n + 1`` evaluations forwards and ``n + 1``
evaluations with a graph (and ``n + 1`` vector-Jacobian products) backwards, for ``n`` steps.

What it does not do: make the discretisation accurate or stable. On ``y' = lam y`` with
``x = h lam`` one step multiplies ``(y, z)`` by ``[[1 + x, x^2/2], [2, x - 1]]``, whose
eigenvalues ``x +- sqrt(x^2 + 1)`` have product -1: both have modulus 1 only for ``x`` in the open
segment ``(-i, i)`` of the imaginary axis, and for every ``x`` off it one of them exceeds 1
(:func:`amplification`). A decaying mode (``lam < 0``) makes the parasitic component grow like
``exp(|lam| t)``: the method suits short horizons and oscillatory or mildly contracting
dynamics, not stiff ones.

``odeint(func, y0, t, method="reversible_heun", step_size=h, gradient="reversible")`` runs it;
``gradient="backprop"`` differentiates through the same steps (the reference the tests compare
with). Nothing here imports :func:`nodecourse.odeint`.
"""

from __future__ import annotations

import cmath
import contextlib
import math
import time
import warnings
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

import torch

from nodecourse.solvers import _field_checks as field_checks
from nodecourse.solvers import _observers as observers
from nodecourse.solvers._fixed import steps_per_interval
from nodecourse.solvers._gradient_run import backprop_replay, differentiable_solution, forward_solution, inspect_field
from nodecourse.solvers._result import Solution, SolverError, Status, warn_backward_failure
from nodecourse.solvers._rk import CheckedFunc, time_tensor
from nodecourse.solvers._transforms import refuse_transforms

REVERSIBLE = "reversible"


@dataclass(frozen=True)
class ReversibleSpec:
    """An algebraically reversible method: what :data:`REVERSIBLE_SOLVERS` holds for a name.

    ``kind`` is ``"reversible"`` (fixed steps, ``step_size`` required); ``evaluations_per_step``
    counts ``func`` calls per forward step; ``stability`` states the region of absolute stability.
    """

    name: str
    summary: str
    order: int
    evaluations_per_step: int
    stability: str
    kind: str = REVERSIBLE
    torchdiffeq: Any = None  # no torchdiffeq counterpart
    error_order: Any = None  # no error estimate: fixed steps only


#: The reversible methods, name -> :class:`ReversibleSpec` (kept apart from the Runge-Kutta
#: registry :data:`nodecourse.SOLVERS`: these are not a tableau, they carry a second state).
REVERSIBLE_SOLVERS = MappingProxyType(
    {
        "reversible_heun": ReversibleSpec(
            "reversible_heun",
            "reversible Heun (Kidger et al. 2021), 1 evaluation per step, exact inverse",
            2,
            1,
            "stable only for h*lam on the open segment (-i, i) of the imaginary axis; every decaying mode "
            "(Re lam < 0) excites a parasitic solution that grows like exp(|Re lam| t); for a growing mode the "
            "parasitic root (sqrt(1 + x^2) - x < 1 at x = h lam > 0) decays",
        ),
    }
)


# ----------------------------------------------------------------------------------------------
# One step, its inverse, and the linear stability of the pair


def heun_step(func, t: float, h: float, y, z, f):
    """One forward step from ``(y, z, f)`` at time ``t``; returns ``(y1, z1, f1)`` at ``t + h``."""
    z1 = 2 * y - z + h * f
    f1 = func(time_tensor(t + h, y), z1)
    return y + (0.5 * h) * (f + f1), z1, f1


def heun_inverse(func, t1: float, h: float, y1, z1, f1):
    """Undo :func:`heun_step`: from ``(y1, z1, f1)`` at ``t1`` back to ``(y, z, f)`` at ``t1 - h``."""
    z = 2 * y1 - z1 - h * f1
    f = func(time_tensor(t1 - h, y1), z)
    return y1 - (0.5 * h) * (f + f1), z, f


def amplification(x: complex) -> float:
    """Largest modulus of the eigenvalues ``x +- sqrt(x^2 + 1)`` of one step on ``y' = lam y``
    (``x = h lam``). Stable (no growth) where it is <= 1: only on the segment ``[-i, i]``, with
    a double eigenvalue (linear growth) at its ends."""
    root = cmath.sqrt(complex(x) ** 2 + 1)
    return max(abs(x + root), abs(x - root))


# ----------------------------------------------------------------------------------------------
# The forward solve


def _step_time(ta: float, tb: float, h: float, m: int, n: int) -> float:
    """Time at the start of step ``m`` of ``n`` in ``[ta, tb]``: the same float forwards and
    backwards (the ends exactly), so that the inverse evaluates ``func`` where the step did."""
    return ta if m == 0 else (tb if m == n else ta + m * h)


def integrate(func, y0: torch.Tensor, ts: list[float], step_size: float, max_steps: int):
    """Reversible Heun through the output times ``ts`` in equal steps of at most ``step_size`` per
    interval (graph kept when grad mode is on). Returns ``(outputs, (y, z, f), stats, status, message)``."""
    y, z = y0, y0
    f = func(time_tensor(ts[0], y0), z)
    outputs, n_steps = [y0], 0
    # the parasitic mode's growth, as lesson 10 derives it: log|mu_-| = asinh(|lam| h) per step for a mode
    # contracting at rate lam, with lam estimated along each step by the secant (f1 - f).(z1 - z) / |z1 - z|^2
    # (no extra evaluation; read on the host once, at the end)
    watch = _ParasiticWatch(y0)
    stats = lambda: {"nfe": func.nfe, "n_steps": n_steps, "n_accepted": n_steps, "n_rejected": 0}  # noqa: E731
    plan = steps_per_interval(ts, step_size)
    for (ta, tb), n in zip(zip(ts[:-1], ts[1:]), plan):
        h = (tb - ta) / n
        for m in range(n):
            if n_steps >= max_steps:
                return (
                    outputs,
                    (y, z, f),
                    stats(),
                    Status.MAX_STEPS,
                    (
                        f"max_steps={max_steps} steps of size {abs(h):.3g} used, "
                        f"reached t={_step_time(ta, tb, h, m, n):.6g}; "
                        f"the interval needs {sum(plan)} steps"
                    ),
                )
            t0, t1 = _step_time(ta, tb, h, m, n), _step_time(ta, tb, h, m + 1, n)
            y1, z1, f1 = heun_step(func, t0, t1 - t0, y, z, f)
            watch.step(t1 - t0, z1 - z, f1 - f)
            y, z, f = y1, z1, f1
            n_steps += 1
        if not (bool(torch.isfinite(y).all()) and bool(torch.isfinite(z).all())):
            return (
                outputs,
                (y, z, f),
                stats(),
                Status.NON_FINITE,
                (
                    f"the state became NaN/inf between t={ta:.6g} and t={tb:.6g} (reversible Heun is stable only for "
                    f"oscillatory modes: a fast decaying mode excites a parasitic solution that grows; use a smaller "
                    f"step_size, or method='rk4' with gradient='checkpoint')"
                ),
            )
        outputs.append(y)
    watch.report(step_size)
    return outputs, (y, z, f), stats(), Status.SUCCESS, ""


class ReversibleStabilityWarning(UserWarning):
    """A reversible Heun solve whose field contracts fast enough, over its horizon, for the method's
    parasitic mode to grow past :data:`WARN_GROWTH` (lesson 10, section 5)."""


#: Growth of the parasitic mode over a solve above which reversible Heun warns.
WARN_GROWTH = 1e3


class _ParasiticWatch:
    """Accumulates ``sum_k asinh(|lam_k| h_k)`` over the steps (``lam_k``: the secant estimate of the
    field's contraction rate along step ``k``, 0 where it expands), on the state's device."""

    def __init__(self, y0: torch.Tensor):
        self.log_growth = torch.zeros((), dtype=y0.dtype, device=y0.device)
        self.fastest = torch.zeros((), dtype=y0.dtype, device=y0.device)

    def step(self, h: float, dz: torch.Tensor, df: torch.Tensor) -> None:
        tiny = torch.finfo(dz.dtype).tiny
        dz, df = dz.detach(), df.detach()  # a diagnosis: never on the graph
        rate = (df * dz).sum() / (dz * dz).sum().clamp_min(tiny)
        contraction = torch.nan_to_num((-rate).clamp_min(0.0), nan=0.0, posinf=0.0)
        self.log_growth = self.log_growth + torch.asinh(contraction * abs(h))
        self.fastest = torch.maximum(self.fastest, contraction)

    def report(self, step_size: float) -> None:
        log_growth = float(self.log_growth)
        if log_growth <= math.log(WARN_GROWTH):
            return
        warnings.warn(
            f"method='reversible_heun' is outside its stability region here: the field contracts at rates up to "
            f"about {float(self.fastest):.3g} per unit time along the solve (secant estimates of df/dy along the "
            f"steps), and with step_size={step_size:.3g} the method's parasitic mode grows by up to "
            f"exp({log_growth:.3g}) = {math.exp(min(log_growth, 700.0)):.3g} over the solve (it is stable only for "
            f"h*lam on the segment (-i, i) of the imaginary axis, and smaller steps do not reduce this growth). The "
            f"result may be dominated by it: use method='rk4' (or 'dopri5') with gradient='checkpoint', or a "
            f"shorter horizon",
            ReversibleStabilityWarning,
            stacklevel=4,
        )


def _solution(outputs, stats, status, message, t, y0, name, started) -> Solution:
    missing = len(t) - len(outputs)
    rows = outputs + [torch.full_like(y0, float("nan"))] * max(missing, 0)
    stats.setdefault("nfe_backward", 0)
    if observers.listening():
        observers.notify(
            {
                "method": name,
                "rtol": None,
                "atol": None,
                "step_size": stats.get("step_size"),
                "backend": "nodecourse",
                "per_sample": False,
                "shape": tuple(y0.shape),
                "n_times": len(t),
                "stats": stats,
                "status": status,
                "seconds": time.perf_counter() - started,
            }
        )
    return Solution(
        ys=torch.stack(rows, dim=0),
        ts=t,
        stats=stats,
        status=status,
        method=name,
        rtol=None,
        atol=None,
        message=message,
    )


# ----------------------------------------------------------------------------------------------
# gradient="reversible": the backward pass that reconstructs the steps


@dataclass
class _Run:
    func: Any
    ts: list
    step_size: float
    max_steps: int
    throw: bool
    name: str
    started: float
    solution: Solution | None = None
    final: tuple = ()
    random: bool = False  # the field draws random numbers; rng: the state the forward solve started from
    rng: Any = None
    deps: Any = None  # the stand-ins of the non-leaf closed-over tensors (dependencies.Dependencies)


class ReversibleFunction(torch.autograd.Function):
    """``(t, y0, *params) -> ys``: the forward solve without a graph (only the final ``(y, z)`` is
    kept); the backward pass reconstructs every step by :func:`heun_inverse`, last to first."""

    @staticmethod
    def forward(ctx, run: _Run, t, y0, *params):
        if run.random:
            run.rng = field_checks.rng_state(y0.device)
        checked = CheckedFunc(run.func, y0)
        with torch.no_grad():
            outputs, final, stats, status, message = integrate(checked, y0, run.ts, run.step_size, run.max_steps)
        stats["step_size"] = run.step_size
        solution = _solution(outputs, stats, status, message, t, y0, run.name, run.started)
        run.solution = solution
        if status is not Status.SUCCESS and run.throw:
            raise SolverError(status, f"method={run.name!r}: {message}", solution)
        run.final = (final[0].detach(), final[1].detach())
        ctx.run = run
        ctx.save_for_backward(t, y0, *params)
        return cast(torch.Tensor, solution.ys).detach()  # one tensor: the method takes a flat state

    @staticmethod
    def backward(ctx, grad_ys):
        run: _Run = ctx.run
        t, y0, *params = ctx.saved_tensors
        if torch.is_grad_enabled() or run.random:
            # create_graph=True (the reconstruction is not differentiable), or a random field (the
            # inverse steps cannot draw the forward's numbers): the same steps again with a graph, from
            # the forward's random state: backprop's gradient through the function that ran
            def solve(y_in, t_in):
                return solve_reversible(
                    run.func,
                    y_in,
                    t_in,
                    ts=run.ts,
                    gradient="backprop",
                    step_size=run.step_size,
                    max_steps=run.max_steps,
                    throw=False,
                    name=run.name,
                )

            return (
                None,
                None,
                *backprop_replay(
                    run, solve, t, y0, grad_ys, params, need_y0=ctx.needs_input_grad[2], route="gradient='reversible'"
                ),
            )
        live = run.deps.live(params) if run.deps is not None else contextlib.nullcontext(list(params))
        with live as stand:
            grads = reversible_backward(run, grad_ys, stand)
        return (None, None, *grads)


def reversible_backward(run: _Run, grad_ys: torch.Tensor, params: list) -> list:
    """``[dL/dy0, *dL/dparams]`` by walking the steps backwards from the final ``(y, z)``.

    With adjoints ``(a_y, a_z, a_f)`` of the step's outputs and ``c = a_f + h/2 a_y``, the
    vector-Jacobian product of :func:`heun_step` is ``g = a_z + J(z1)^T c``,
    ``(a_y, a_z, a_f) <- (a_y + 2 g, -g, h g + h/2 a_y)`` (and ``(d func/d theta)^T c`` for the
    parameters): one evaluation of ``func`` with a graph at each reconstructed ``z``.
    Records ``nfe_backward`` and ``backward_status``.
    """
    forward = forward_solution(run)
    stats = forward.stats
    nan_grads = lambda: (
        [torch.full_like(grad_ys[0], float("nan"))]
        + [
            torch.full_like(p, float("nan"))  # noqa: E731
            for p in params
        ]
    )

    def fail(status: Status, message: str):
        stats["backward_status"], stats["backward_message"] = status, message
        if run.throw:
            raise SolverError(status, f"gradient='reversible': {message}")
        warn_backward_failure(status, f"gradient='reversible': {message}")
        return nan_grads()

    if forward.status is not Status.SUCCESS:
        return fail(
            forward.status,
            f"the forward solve ended with status {forward.status.name}; its gradient is undefined",
        )
    ts = run.ts
    func = run.func
    y, z = run.final
    a_y = torch.zeros_like(y)
    a_z = torch.zeros_like(y)
    a_f = torch.zeros_like(y)
    g_params: list = [None] * len(params)  # None until an evaluation uses the parameter (backprop's None)
    nfe = 0

    def evaluate(t_value: float, z_in: torch.Tensor):
        nonlocal nfe
        nfe += 1
        leaf = z_in.detach().requires_grad_(True)
        with torch.enable_grad():
            return leaf, func(time_tensor(t_value, leaf), leaf)

    def pull(leaf, out, cotangent):
        """``J^T cotangent`` at ``leaf`` and the parameters' share."""
        if not out.requires_grad:
            return torch.zeros_like(leaf), [None] * len(params)
        got = torch.autograd.grad(out, [leaf, *params], grad_outputs=cotangent, allow_unused=True)
        return (got[0] if got[0] is not None else torch.zeros_like(leaf)), list(got[1:])

    leaf, f_graph = evaluate(ts[-1], z)
    plan = steps_per_interval(ts, run.step_size)
    for i in range(len(ts) - 1, 0, -1):
        a_y = a_y + grad_ys[i]
        ta, tb, n = ts[i - 1], ts[i], plan[i - 1]
        h_nominal = (tb - ta) / n
        for m in range(n - 1, -1, -1):
            t0, t1 = _step_time(ta, tb, h_nominal, m, n), _step_time(ta, tb, h_nominal, m + 1, n)
            h = t1 - t0
            c = a_f + (0.5 * h) * a_y
            jt_c, p_share = pull(leaf, f_graph, c)
            for k, g in enumerate(p_share):
                if g is not None:
                    g_params[k] = g if g_params[k] is None else g_params[k] + g
            g_vec = a_z + jt_c
            a_y, a_z, a_f = a_y + 2 * g_vec, -g_vec, h * g_vec + (0.5 * h) * a_y
            # reconstruct the step's inputs: z, then f = func(t0, z) (with a graph, for the next product)
            f1 = f_graph.detach()
            z = 2 * y - z - h * f1
            leaf, f_graph = evaluate(t0, z)
            y = y - (0.5 * h) * (f_graph.detach() + f1)
        if not (bool(torch.isfinite(y).all()) and bool(torch.isfinite(z).all())):
            stats["nfe_backward"] = stats.get("nfe_backward", 0) + nfe
            return fail(
                Status.NON_FINITE,
                f"reconstructing the steps between t={tb:.6g} and t={ta:.6g} gave NaN/inf; use a smaller step_size",
            )
    # z0 = y0 and f0 = func(t0, y0): y0 reaches the loss through all three
    jt_c, p_share = pull(leaf, f_graph, a_f)
    for k, g in enumerate(p_share):
        if g is not None:
            g_params[k] = g if g_params[k] is None else g_params[k] + g
    grad_y0 = a_y + a_z + jt_c + grad_ys[0]
    stats["nfe_backward"] = stats.get("nfe_backward", 0) + nfe
    stats["backward_status"], stats["backward_message"] = Status.SUCCESS, ""
    return [grad_y0] + g_params


def solve_reversible(
    func,
    y0: torch.Tensor,
    t: torch.Tensor,
    *,
    ts: list[float],
    gradient: str,
    step_size: float,
    max_steps: int,
    throw: bool = True,
    name: str = "reversible_heun",
) -> Solution:
    """``odeint(..., method="reversible_heun", step_size=h, gradient=...)`` (arguments checked there).

    ``gradient="backprop"``: autograd records the steps (memory grows with them);
    ``gradient="reversible"``: :class:`ReversibleFunction` (memory flat in the steps; ``stats``
    gains ``nfe_backward`` and ``backward_status`` after ``backward()``).
    """
    started = time.perf_counter()
    y0 = y0.clone()  # func never sees the caller's tensor
    if gradient == "backprop":
        checked = CheckedFunc(func, y0)
        outputs, _, stats, status, message = integrate(checked, y0, ts, step_size, max_steps)
        stats["step_size"] = step_size
        solution = _solution(outputs, stats, status, message, t, y0, name, started)
        if status is not Status.SUCCESS and throw:
            raise SolverError(status, f"method={name!r}: {message}", solution)
        return solution
    if gradient != REVERSIBLE:
        raise ValueError(f"gradient={gradient!r}: method={name!r} takes gradient='reversible' or 'backprop'")
    refuse_transforms("gradient='reversible'", func, y0, t)
    deps, random = inspect_field(func, y0, t[0], route="gradient='reversible'")
    params = deps.params
    run = _Run(
        func=func,
        ts=ts,
        step_size=step_size,
        max_steps=max_steps,
        throw=throw,
        name=name,
        started=started,
        random=random,
        deps=deps,
    )
    ys = ReversibleFunction.apply(run, t, y0, *params)
    return differentiable_solution(run, ys, t)


__all__ = ["REVERSIBLE_SOLVERS", "ReversibleStabilityWarning", "amplification", "heun_inverse", "heun_step"]
