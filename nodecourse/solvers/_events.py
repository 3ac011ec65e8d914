"""Terminal events, as torchdiffeq has them: ``odeint(func, y0, t, event_fn=...)`` solves from
``t[0]`` until ``event_fn(t, y)`` crosses zero and returns the event time and the state there.

The solve has three parts:

1. **Search** (no graph): the solver steps from ``t[0]`` in the direction of ``t[1]`` (``t[1]`` only
   gives the direction, as in torchdiffeq), in chunks of doubling length, and ``event_fn`` is
   checked at the end of every accepted step. The first step whose end changes the sign brackets
   the event.
2. **Root** (no graph): inside that step, the event time is found to the dtype's resolution by
   false position (Illinois) on ``g(s) = event_fn(s, y(s))``, where ``y(s)`` is the solver's own
   partial step from the bracket's start, not an interpolant: the event time is the one of the
   method's solution.
3. **Solve** (with the chosen gradient route): ``odeint`` from ``t[0]`` to the event time, once,
   as any solve (status, ``stats``, ``steps``; every gradient route). Gradients then reach the
   event time by the implicit function theorem (:class:`EventTimeGradient`): with ``e`` the
   event function and ``tau`` the event time, ``e(tau, y(tau; theta)) = 0`` gives
   ``d tau / d theta = -(de/dy . dy/dtheta) / (de/dt + de/dy . f)``; torchdiffeq's rerouting.

Several event functions (an output with several entries) end the solve at the first that
crosses: as torchdiffeq does, each entry is multiplied by its sign at ``t[0]`` and the minimum
is watched. An entry that is exactly zero at ``t[0]`` is an event at ``t[0]`` (torchdiffeq's rule).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any, cast

import torch
from torch.autograd.functional import vjp

from nodecourse.solvers._result import Solution, SolverError, Status
from nodecourse.validation import SecondDerivativeError, WrongTypeError, short_repr


class _Crossed(Exception):
    """Raised from ``on_step`` to stop the search at the first accepted step whose end changed
    the sign of the event function."""

    def __init__(self, t0: float, h: float, y0: torch.Tensor, g1: float):
        super().__init__("event bracketed")
        self.t0, self.h, self.y0, self.g1 = t0, h, y0, g1


class Counting:
    """``func`` with its evaluations counted (the search's, which no returned Solution holds)."""

    def __init__(self, func):
        self.func, self.nfe = func, 0

    def __call__(self, t, y):
        self.nfe += 1
        return self.func(t, y)


class CombinedEvent:
    """``event_fn`` checked and combined into one scalar that is positive before the event.

    Every output must be a floating tensor with at least one entry and the shape of the first
    output; the named errors say so. ``signs`` are the entries' signs at ``t[0]``; the combined
    value is ``min(event_fn(t, y) * signs)`` (torchdiffeq's ``combine_event_functions``).
    ``calls`` counts evaluations (the search's).
    """

    def __init__(self, event_fn, t0: torch.Tensor, y0: torch.Tensor, split=None):
        self.event_fn, self.split = event_fn, split
        self.shape: torch.Size | None = None
        self.calls = 0
        with torch.no_grad():
            first = self.raw(t0, y0)
        if not bool(torch.isfinite(first).all()):
            raise ValueError(
                f"event_fn(t[0], y0) returned {short_repr(first.tolist())}, which is not finite; the event "
                f"function must be finite at the start so its sign there is known"
            )
        self.signs = torch.sign(first)

    def raw(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``event_fn`` on the user's state (a tuple of parts for a tuple state), checked."""
        self.calls += 1
        out = self.event_fn(t, self.split(y) if self.split is not None else y)
        if not isinstance(out, torch.Tensor):
            raise WrongTypeError(
                f"event_fn(t, y) returned {type(out).__name__} {short_repr(out)}; it must return a tensor "
                f"(its gradient gives the event time's): e.g. `return y[0] - 1.0`, not float(...)"
            )
        if not torch.is_floating_point(out) or out.numel() == 0:
            raise ValueError(
                f"event_fn(t, y) returned a tensor of dtype {out.dtype} and shape {tuple(out.shape)}; it must "
                f"return a floating tensor with at least one entry (one entry per event function)"
            )
        if self.shape is None:
            self.shape = out.shape
        elif out.shape != self.shape:
            raise ValueError(
                f"event_fn(t, y) returned shape {tuple(out.shape)} here and {tuple(self.shape)} at t[0]; "
                f"its output must keep one shape (one entry per event function)"
            )
        return out

    def __call__(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.min(self.raw(t, y) * self.signs)

    def value(self, t: float, y: torch.Tensor) -> float:
        return float(self(torch.tensor(t, dtype=y.dtype, device=y.device), y))


def _tensor_t(value: float, like: torch.Tensor) -> torch.Tensor:
    return torch.tensor([value], dtype=like.dtype, device=like.device)


class EventSearch:
    """Parts 1 and 2 of the module doc: where the event is, found without a graph.

    ``solve(y_start, t_pair, max_steps=..., on_step=...)`` runs the solver from a state over
    ``t_pair`` (shape ``(2,)``); ``fixed_step``: the method's step size when it takes fixed steps
    without a step record (the reversible methods: the search then goes one step per call).
    """

    def __init__(self, solve, event: CombinedEvent, y0: torch.Tensor, t: torch.Tensor, max_steps: int, fixed_step):
        self.solve, self.event, self.y0 = solve, event, y0
        ts = [float(v) for v in t.detach().cpu().tolist()]
        self.t0 = ts[0]
        self.direction = 1.0 if ts[1] > ts[0] else -1.0
        self.horizon = abs(ts[1] - ts[0])
        self.max_steps = max_steps
        self.fixed_step = fixed_step
        #: ``func`` for the Newton slope of the root search (None: false position only)
        self.field: Counting | None = None
        #: settings of a partial step of length ``h`` (an adaptive method is told to try it in one step)
        self.partial_step: Callable[[float], dict[str, Any]] = lambda h: {}
        self.n_steps = 0

    def _run(self, y_start, ta: float, tb: float, **kwargs) -> Solution:
        with torch.no_grad():
            return self.solve(y_start, torch.tensor([ta, tb], dtype=self.y0.dtype, device=self.y0.device), **kwargs)

    def bracket(self) -> tuple[Status, str, float, float, torch.Tensor, float]:
        """``(status, message, ta, h, y_a, g_b)``: the accepted step ``[ta, ta + h]`` whose end changed
        the event's sign, with the state at ``ta`` and the combined event value at the end; a status
        other than SUCCESS when the solve failed or the step budget ran out first."""
        ta, y = self.t0, self.y0.detach()
        length = self.fixed_step if self.fixed_step is not None else self.horizon

        def watch(step):
            self.n_steps += 1
            if step.accepted:
                g1 = self.event.value(step.t0 + step.h, step.y1)
                if g1 <= 0:
                    raise _Crossed(step.t0, step.h, step.y0.detach().clone(), g1)

        while True:
            left = self.max_steps - self.n_steps
            if left < 1:
                return (
                    Status.MAX_STEPS,
                    f"no event within the step budget: {self.n_steps} steps from t={self.t0!r} to t={ta!r} without "
                    f"event_fn changing sign",
                    ta,
                    0.0,
                    y,
                    0.0,
                )
            tb = ta + self.direction * length
            try:
                if self.fixed_step is not None:
                    sol = self._run(y, ta, tb, max_steps=left, throw=False)
                    g1 = self.event.value(tb, sol.ys[-1]) if sol.status is Status.SUCCESS else 1.0
                    if g1 <= 0:
                        self.n_steps += int(sol.stats.get("n_steps", 1))
                        return Status.SUCCESS, "", ta, tb - ta, y, g1
                else:
                    sol = self._run(y, ta, tb, max_steps=left, throw=False, on_step=watch)
            except _Crossed as crossed:
                return Status.SUCCESS, "", crossed.t0, crossed.h, crossed.y0, crossed.g1
            if self.fixed_step is not None:
                self.n_steps += int(sol.stats.get("n_steps", 1))
            if sol.status is Status.MAX_STEPS:
                return (
                    sol.status,
                    f"no event within the step budget: {self.n_steps} steps from t={self.t0!r} (the last stretch: "
                    f"{sol.message}) without event_fn changing sign",
                    ta,
                    0.0,
                    y,
                    0.0,
                )
            if sol.status is not Status.SUCCESS:
                return sol.status, f"before any event: {sol.message}", ta, 0.0, y, 0.0
            ta, y = tb, sol.ys[-1].detach()
            if self.fixed_step is None:
                length *= 2.0  # fewer restarts of the step-size control on a long search

    def root(self, ta: float, h: float, y_a: torch.Tensor, g_b: float) -> float:
        """The event time in the accepted step ``[ta, ta + h]`` (state ``y_a`` at ``ta``, combined
        event value ``g_b`` at the end), a root of ``g(s) = event(s, y(s))`` with each ``y(s)`` the
        solver's partial step from ``ta``. Newton steps (slope ``dg/ds = event_t + event_y . f``, one
        evaluation of ``func``) inside the bracket, Illinois false position when a Newton step would
        leave it, until a step or the bracket is a few units of the dtype's resolution. Returns the
        last estimate, or, when the bracket closed first, its end on the side where the sign has
        changed (the event has happened by then)."""
        a, b = ta, ta + h
        eps = torch.finfo(self.y0.dtype).eps
        tol = 4.0 * eps * max(abs(a), abs(b), abs(h))
        g_a = self.event.value(a, y_a)
        if g_b == 0.0:
            return b
        side = 0
        newton: float | None = None
        for _ in range(200):
            if abs(b - a) <= tol:
                break
            if newton is not None and min(a, b) < newton < max(a, b):
                c = newton
            else:
                c = (a * g_b - b * g_a) / (g_b - g_a)
            if not (min(a, b) < c < max(a, b)) or _same_time(a, c, self.y0) or _same_time(b, c, self.y0):
                c = 0.5 * (a + b)
                if _same_time(a, c, self.y0) or _same_time(b, c, self.y0):
                    break  # no time of this dtype lies between a and b
            y_c = self._state(ta, y_a, c)
            g_c = self.event.value(c, y_c)
            if g_c == 0.0:
                return c
            if g_c > 0:  # before the event: the root is in [c, b]
                a, g_a = c, g_c
                if side == -1:
                    g_b *= 0.5  # Illinois: an end kept twice has its value halved, so both ends move
                side = -1
            else:
                b, g_b = c, g_c
                if side == 1:
                    g_a *= 0.5
                side = 1
            slope = self._slope(c, y_c)
            newton = c - g_c / slope if slope is not None and slope != 0.0 else None
            if newton is not None and abs(newton - c) <= tol:  # converged to the resolution
                return c
        return b

    def _state(self, ta: float, y_a: torch.Tensor, s: float) -> torch.Tensor:
        """The state at ``s``, solved from ``(ta, y_a)`` (one partial step where the method allows)."""
        if _same_time(ta, s, self.y0):
            return y_a
        return self._run(y_a, ta, s, max_steps=self.max_steps, throw=False, **self.partial_step(abs(s - ta))).ys[-1]

    def _slope(self, s: float, y_s: torch.Tensor):
        """``d/ds event(s, y(s)) = event_t + event_y . func(s, y)``, or None where ``event_fn`` has no
        gradient (the search then keeps to false position)."""
        if self.field is None or not bool(torch.isfinite(y_s).all()):
            return None
        t_s = torch.tensor(s, dtype=y_s.dtype, device=y_s.device)
        with torch.no_grad():
            f_s = self.field(t_s, y_s)
        with torch.enable_grad():
            t_var, y_var = t_s.clone().requires_grad_(True), y_s.detach().clone().requires_grad_(True)
            value = self.event(t_var, y_var)
            if not value.requires_grad:
                return None
            d_t, d_y = torch.autograd.grad(value, (t_var, y_var), allow_unused=True)
        total = (float(d_t) if d_t is not None else 0.0) + (float((d_y * f_s).sum()) if d_y is not None else 0.0)
        return total if math.isfinite(total) else None

    def locate(self) -> tuple[Status, str, float]:
        """Bracket, then root: ``(status, message, event time)``."""
        status, message, ta, h, y_a, g_b = self.bracket()
        if status is not Status.SUCCESS:
            return status, message, ta
        return Status.SUCCESS, "", self.root(ta, h, y_a, g_b)


def _same_time(a: float, b: float, like: torch.Tensor) -> bool:
    """``a`` and ``b`` round to one time in the state's dtype (a solve between them has no length)."""
    if like.dtype == torch.float64:
        return a == b
    if like.dtype == torch.float32:
        return struct.pack("f", a) == struct.pack("f", b)
    pair = torch.tensor([a, b], dtype=like.dtype)
    return bool(pair[0] == pair[1])


class EventTimeGradient(torch.autograd.Function):
    """The event time and the state there, with the gradient rerouted through the event time by
    the implicit function theorem (torchdiffeq's ``ImplicitFnGradientRerouting``).

    ``forward(event_t, state_t, func, event, stats)``: ``event_t`` shape ``()`` (no graph),
    ``state_t`` the flat state at the event (with the solve's graph); returns both, connected to
    ``state_t``'s graph. Backward: with ``f = func(tau, y)`` and ``c = event(tau, y)``,
    ``dc/dt = dc/dt|_y + dc/dy . f``, and the state's incoming gradient gains
    ``-(g_tau + g_y . f) / (dc/dt) * dc/dy``. One evaluation of ``func``, counted in
    ``stats["nfe_backward"]``.
    """

    @staticmethod
    def forward(ctx, event_t, state_t, func, event, stats):
        ctx.func, ctx.event, ctx.stats = func, event, stats
        ctx.save_for_backward(event_t, state_t)
        return event_t.detach().clone(), state_t.detach().clone()

    @staticmethod
    def backward(ctx, grad_t, grad_state):
        if torch.is_grad_enabled():
            raise SecondDerivativeError(
                "create_graph=True through an event time (event_fn=...) is not available: the implicit "
                "function theorem's gradient is computed once, without a graph. Take second derivatives "
                "of a solve to a fixed time, or differentiate the event time once"
            )
        event_t, state_t = ctx.saved_tensors
        tau = event_t.detach().clone()
        y = state_t.detach().clone()
        with torch.enable_grad():
            f_val = ctx.func(tau, y).detach()
            _, (dc_dt, dc_dy) = vjp(ctx.event, (tau, y))
        if isinstance(ctx.stats, dict):
            ctx.stats["nfe_backward"] = ctx.stats.get("nfe_backward", 0) + 1
        total = dc_dt + torch.sum(dc_dy * f_val)
        if float(total) == 0.0:
            raise ValueError(
                "the event is grazing: d/dt event_fn(t, y(t)) is 0 at the event time, so the event time "
                "has no derivative (it touches zero without crossing); change event_fn so it crosses"
            )
        g_t = (grad_t if grad_t is not None else 0.0) + torch.sum(grad_state * f_val)
        return None, grad_state - dc_dy * (g_t / total), None, None, None


def reroute(event_t: torch.Tensor, state_t: torch.Tensor, func, event, stats=None):
    """Apply :class:`EventTimeGradient` (``state_t`` flat; ``func`` and ``event`` on flat states)."""
    return EventTimeGradient.apply(event_t, state_t, func, event, stats)


def solve_until_event(
    solve,
    func,
    y0,
    t: torch.Tensor,
    *,
    event_fn,
    flat_func,
    layout,
    settings: dict,
    fixed_step,
    torchdiffeq_search=None,
) -> Solution:
    """``odeint(..., event_fn=...)`` for a flat state ``y0`` (``layout`` splits tuple states for
    ``event_fn``; ``flat_func`` is ``func`` on the flat state). ``solve(func, y0, t, **settings)``
    is ``odeint`` itself (injected: this module does not import it). ``torchdiffeq_search``: a
    callable ``(func, event) -> float`` that finds the event time with torchdiffeq's own search
    (``backend="torchdiffeq"``). Returns the :class:`Solution` described in ``odeint``'s doc."""
    if t.dim() != 1 or t.numel() != 2:
        raise ValueError(
            f"with event_fn, t must hold two times, got shape {tuple(t.shape)}: t[0] is the start and "
            f"t[1] only gives the direction (as in torchdiffeq), e.g. t=torch.tensor([0.0, 1.0])"
        )
    split = layout.split if layout is not None else None
    event = CombinedEvent(event_fn, t[0].detach(), y0.detach(), split)
    throw = settings.get("throw", True)
    t0 = float(t[0].detach())
    counted = Counting(flat_func)
    searcher = EventSearch(
        lambda y_s, t_s, **kw: solve(counted, y_s, t_s, **{**_search_settings(settings), **kw}),
        event,
        y0.detach(),
        t.detach(),
        settings.get("max_steps", 10_000),
        fixed_step,
    )
    searcher.field = counted
    if settings.get("step_size") is None:  # adaptive: the partial steps of the root search try one step

        def one_step(h: float) -> dict:
            return {"options": {**(settings.get("options") or {}), "first_step": h}}

        searcher.partial_step = one_step
    if bool((event.signs == 0).any()):
        status, message, tau = Status.SUCCESS, "", t0  # torchdiffeq: an event function at zero ends at once
    elif torchdiffeq_search is not None:
        status, message, tau = Status.SUCCESS, "", torchdiffeq_search(counted, event)
    else:
        status, message, tau = searcher.locate()
    search_nfe = counted.nfe
    search_evals = event.calls
    if status is not Status.SUCCESS or _same_time(t0, tau, y0):
        solution = _no_solve(y0, t, tau, status, message, settings)
    else:
        # t[0] keeps its graph (a chain of events: the start is the last event time); the event time
        # enters as a constant, its gradient comes from the rerouting below
        t_event = torch.cat([t[:1], torch.tensor([tau], dtype=t.dtype, device=t.device)])
        solution = solve(flat_func, y0, t_event, **settings)
    solution.stats["nfe_event_search"] = search_nfe
    solution.stats["n_event_evals"] = search_evals
    if solution.status is not Status.SUCCESS:
        if throw:
            raise SolverError(solution.status, f"event search: {solution.message}", solution)
        return _finish(solution, layout, torch.tensor(float("nan"), dtype=t.dtype, device=t.device))
    event_t, state_t = reroute(solution.ts[-1].detach(), solution.ys[-1], flat_func, event, solution.stats)
    ys = torch.cat([cast(torch.Tensor, solution.ys)[:-1], state_t[None]], dim=0)  # flat state: one tensor
    solution.ys = ys
    solution.ts = torch.stack([t[0], event_t])
    return _finish(solution, layout, event_t)


def _search_settings(settings: dict) -> dict:
    """The search runs with backprop's route (no graph is kept) and no step record of the caller's."""
    out = dict(settings)
    for key in ("record_steps", "on_step", "adjoint_options"):
        out.pop(key, None)
    out["gradient"] = "backprop"
    return out


def _no_solve(y0, t, tau, status, message, settings) -> Solution:
    """The Solution of a search that failed (rows NaN) or of an event at ``t[0]`` (no solve)."""
    ok = status is Status.SUCCESS
    second = y0 if ok else torch.full_like(y0, float("nan")).detach()
    stats = {"nfe": 0, "n_steps": 0, "n_accepted": 0, "n_rejected": 0, "nfe_backward": 0}
    return Solution(
        ys=torch.stack([y0, second]),
        ts=torch.tensor([float(t[0].detach()), tau if ok else float("nan")], dtype=t.dtype, device=t.device),
        stats=stats,
        status=status,
        method=str(settings.get("method", "")),
        rtol=settings.get("rtol"),
        atol=settings.get("atol"),
        message=message,
    )


def _finish(solution: Solution, layout, event_t: torch.Tensor) -> Solution:
    solution.event_t = event_t
    if layout is not None:
        solution.ys = layout.split(solution.ys)
    return solution


def event_time_reroute(func, event_fn, y0, t0: torch.Tensor, event_t, solution, layout):
    """torchdiffeq's ``odeint_event`` rerouting for a result in torchdiffeq's form
    ``(event_t, solution)`` (``odeint_interface`` returned a pair): the state at the event gains
    the gradient through the event time. Returns ``(event_t, solution)`` in the same form."""
    split = layout.split if layout is not None else None
    flat_y0 = layout.flatten(y0) if layout is not None else y0
    event = CombinedEvent(event_fn, t0.detach().reshape(()), flat_y0.detach(), split)
    if layout is not None:
        from nodecourse.solvers._tuple_state import TupleFunc

        state_t = layout.flatten(tuple(s[-1] for s in solution))
        flat_func = TupleFunc(func, layout)
    else:
        state_t, flat_func = solution[-1], func
    event_t, state_t = reroute(event_t.reshape(()).to(flat_y0.dtype), state_t, flat_func, event)
    if layout is not None:
        parts = layout.split(state_t)
        return event_t, tuple(torch.cat([s[:-1], p[None]], dim=0) for s, p in zip(solution, parts))
    return event_t, torch.cat([solution[:-1], state_t[None]], dim=0)
