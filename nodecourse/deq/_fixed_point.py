"""``fixed_point(f, z0, ...)``: solve z = f(z) by Picard, Anderson or Broyden, batched.

Stopping criterion (stated once, used by every method): each iteration evaluates f at
the current iterate z_k of every sample b and records

    abs[k, b] = ||f(z_k) - z_k||,    rel[k, b] = abs[k, b] / (||f(z_k)|| + tiny)

(2-norms over all dimensions but the batch one). Sample b has converged at the first k
with ``rel[k, b] <= tol`` (``stop_mode="rel"``, the default) or ``abs[k, b] <= tol``
(``stop_mode="abs"``); it is then frozen at z_k. The solve stops when every sample has
converged, diverged (abs residual above ``divergence_factor`` times its first one, or
``||f(z_k)||`` above ``divergence_factor`` times ``max(||z_0||, ||f(z_0)||, 1)``: a run-away
iterate, which never counts as converged however small its relative residual) or
turned non-finite, or after ``max_iter`` evaluations of f. The status is SUCCESS only
when every sample converged; otherwise each sample's best iterate (lowest residual) is
returned, ``result.returned == "best"``, and a :class:`FixedPointWarning` is issued
(``warn=False`` silences it; ``throw=True`` raises :class:`FixedPointError` instead).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import warnings
from typing import Any, Callable

import torch

from nodecourse.deq._anderson import anderson
from nodecourse.deq._broyden import broyden
from nodecourse.deq._picard import picard
from nodecourse.deq._result import FixedPointResult, FixedPointStatus, FixedPointWarning, ResidualTrace
from nodecourse.deq._settings import FIXED_POINT_ARGS, check_method_options, check_tol, method_defaults
from nodecourse.deq._tracking import Tracker
from nodecourse.solvers import _field_checks as field_checks
from nodecourse.validation import WrongTypeError, check_args

__all__ = ["METHODS", "OPTIONS", "FixedPointError", "fixed_point"]

METHODS: dict[str, Callable] = {"picard": picard, "anderson": anderson, "broyden": broyden}
"""Fixed-point methods by name."""

OPTIONS: dict[str, tuple[str, ...]] = {name: tuple(method_defaults(method)) for name, method in METHODS.items()}
"""The extra keyword options each method accepts (read from its signature; ranges in
:data:`nodecourse.deq._settings.METHOD_OPTION_ARGS`)."""


class FixedPointError(RuntimeError):
    """A fixed-point solve failed and ``throw=True``; ``.result`` holds the details."""

    def __init__(self, result: FixedPointResult):
        self.result = result
        super().__init__(f"{result.message}. What to try: {result.status.remedy()}.")


class FixedPointShapeError(ValueError):
    """``f`` returned something other than a tensor of ``z0``'s shape (checked on every call)."""


class FixedPointBatchMixingError(ValueError):
    """``f``'s output for one sample depends on the other samples of the batch (probed on the first call)."""


def shape_error(out: Any, shape: torch.Size, call: int) -> FixedPointShapeError:
    got = f"shape {tuple(out.shape)}" if isinstance(out, torch.Tensor) else f"a {type(out).__name__}"
    return FixedPointShapeError(
        f"f returned {got} on call {call} for z of shape {tuple(shape)}; f must return a tensor of the shape of z0 "
        f"on every call (a transposed or resized output would be reshaped into the wrong entries)"
    )


def check_samples_independent(
    f: Callable[[torch.Tensor], torch.Tensor], z: torch.Tensor, fz: torch.Tensor, rng: Any = None
) -> None:
    """Raise :class:`FixedPointBatchMixingError` when f's output for sample 0 moves as the other
    samples move. ``z``, ``fz = f(z)``: ``(B, ...)`` with ``B >= 2``; one more evaluation of f.
    ``rng``: the random state ``fz``'s call started from (``field_checks.rng_state``); the probe
    replays it, so a map that draws random numbers per entry (dropout in training mode) draws the
    same ones and is not mistaken for one that mixes samples, and the caller's stream is left as it was.

    Samples 1..B-1 are shifted by half the state's scale and sample 0 is kept, so a mean over the
    batch moves sample 0's output by about half that shift whatever B is (perturbing one sample
    and watching the others would see only 1/B of it). A per-sample map leaves sample 0's output
    bit-identical; 16 ulp of its scale allow for kernels whose rounding depends on the batch.
    The probe runs without gradients, so no graph is built and the memory saved for backward is
    the solve's alone (a map that differentiates inside enables grad itself, as it must in a
    DEQ's forward solve, which runs without gradients too).
    """
    with torch.no_grad():
        z = z.detach()
        probe = z.clone()
        probe[1:] += 0.5 * (1 + z.abs().amax())
        with field_checks.replayed_rng(rng, z.device) if rng is not None else contextlib.nullcontext():
            moved = f(probe)
        if not isinstance(moved, torch.Tensor) or moved.shape != fz.shape:
            return  # the shape check of the next call names it
        before, after = fz.detach()[0], moved[0].to(fz.dtype)
        unchanged = (before == after) | (before.isnan() & after.isnan())
        moved_by = (after - before).abs().masked_fill(unchanged, 0.0).nan_to_num(nan=math.inf)
        scale = before.abs().nan_to_num(nan=0.0, posinf=0.0).amax()
        if not bool((moved_by > 16 * torch.finfo(fz.dtype).eps * scale).any()):
            return
        change, largest = float(moved_by.amax()), float(scale)
    raise FixedPointBatchMixingError(
        f"f mixes the samples of the batch: shifting samples 1..{len(z) - 1} of z (sample 0 kept) changed f(z)[0] "
        f"by {change:.3g} (largest |f(z)[0]| {largest:.3g}). fixed_point treats z0's first dimension as a batch of "
        f"independent problems and stops each sample once its own residual meets tol, so a map that mixes them "
        f"(a mean or sum over the batch, BatchNorm in training mode, attention across the batch) would end with "
        f"residuals above tol. Make f act on each sample alone, or solve the batch as one problem: "
        f"fixed_point(lambda v: f(v.reshape(z0.shape)).reshape(1, -1), z0.reshape(1, -1)). (The probe replays f's "
        f"random numbers, so dropout alone does not trip it; a map that draws from its own torch.Generator is "
        f"not replayed: pass check_batch=False for it)"
    )


@functools.lru_cache(maxsize=None)
def _fixed_point_defaults() -> dict[str, Any]:
    """``fixed_point``'s keyword defaults, read from its signature (shown in error messages)."""
    return {
        name: p.default
        for name, p in inspect.signature(fixed_point).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def check_settings(
    method: str,
    tol: float,
    max_iter: int,
    stop_mode: str,
    options: dict[str, Any],
    *,
    options_name: str = "options",
    as_keywords: bool = True,
) -> dict[str, Any]:
    """Check solver settings at the boundary against :mod:`nodecourse.deq._settings` (errors name the
    argument, the value, the valid range and the fix; unknown options raise ``TypeError``); returns
    ``options`` with canonical values (a numpy float as a float)."""
    defaults = _fixed_point_defaults()
    check_args({"method": method, "max_iter": max_iter, "stop_mode": stop_mode}, FIXED_POINT_ARGS, defaults=defaults)
    check_tol(tol, stop_mode, default=defaults["tol"])
    return check_method_options(METHODS[method], options, name=options_name, as_keywords=as_keywords)


def check_frozen_samples(
    relative: torch.Tensor, stopping: torch.Tensor, converged: torch.Tensor, best_iter: torch.Tensor, tol: float
) -> None:
    """Raise :class:`FixedPointBatchMixingError` when a converged sample's residual at the last
    evaluation exceeds ``tol`` although its iterate stayed frozen since it converged.

    Traces ``(n_iter, B)``: ``relative`` and ``stopping`` (the stop mode's), ``converged`` and
    ``best_iter`` ``(B,)``. Free: a converged sample is frozen, so the last evaluation of f saw
    it at its returned iterate, beside the other samples' last iterates; a per-sample map gives
    the same residual there as when it converged, so its last residual certifies the returned z.
    A move above 64 ulp (of the relative residual) that ends above ``tol`` means f's value for
    that sample changed with the other samples or between calls (a map that mixes the batch
    only after the first call's probe, a square state transposed).
    """
    at_convergence = relative.gather(0, best_iter.view(1, -1)).squeeze(0)
    moved = (relative[-1] - at_convergence).abs() > 64 * torch.finfo(relative.dtype).eps
    relapsed = converged & moved & (stopping[-1] > tol)
    if not bool(relapsed.any()):
        return
    b = int(relapsed.nonzero()[0, 0])
    raise FixedPointBatchMixingError(
        f"sample {b} met tol={tol:g} at evaluation {int(best_iter[b]) + 1} and was frozen there, but the last "
        f"evaluation of f ({len(relative)}) gave it residual {float(stopping[-1, b]):.3g} at the same iterate: f's "
        f"output for a sample changed with the other samples or between calls, so the returned z is not a fixed "
        f"point. Make f the same per-sample map on every call, or solve the batch as one problem: "
        f"fixed_point(lambda v: f(v.reshape(z0.shape)).reshape(1, -1), z0.reshape(1, -1))"
    )


def fixed_point(
    f: Callable[[torch.Tensor], torch.Tensor],
    z0: torch.Tensor,
    *,
    method: str = "anderson",
    tol: float = 1e-6,
    max_iter: int = 100,
    stop_mode: str = "rel",
    divergence_factor: float = 1e6,
    warn: bool = True,
    throw: bool = False,
    check_batch: bool = True,
    **options: Any,
) -> FixedPointResult:
    """Find z with z = f(z), starting at ``z0``.

    Args:
        f: maps a tensor of ``z0``'s shape to one of the same shape.
        z0: initial iterate. With ``z0.dim() >= 2`` the first dimension is a batch of
            independent problems ``(B, ...)`` (f must act on each sample separately);
            a 0-d or 1-d ``z0`` is one problem.
        method: ``"picard"``, ``"anderson"`` or ``"broyden"``.
        tol, stop_mode: the stopping criterion (module docstring): per sample, relative
            (default) or absolute residual ``<= tol``.
        max_iter: the most evaluations of f.
        divergence_factor: a sample whose absolute residual exceeds this times its first
            residual, or whose ``||f(z)||`` exceeds this times ``max(||z0||, ||f(z0)||, 1)``,
            is declared DIVERGED (and stops).
        warn, throw: on a non-success status, warn (default) or raise :class:`FixedPointError`.
        check_batch: with a batch (``B >= 2``), probe f once, on the first call, for mixing across
            samples (one extra evaluation, without gradients, reported as ``stats["probe_evals"]``),
            and at the end check that no converged sample's residual moved while it was frozen
            (free: :func:`check_frozen_samples`); either raises :class:`FixedPointBatchMixingError`.
            ``False`` skips both, for a map known to act per sample.
        options: per method: picard ``damping``; anderson ``m`` (window, 6), ``lam`` (relative
            Tikhonov), ``damping``, ``safeguard``; broyden ``m`` (memory, 50), ``damping``, ``safeguard`` (1e4).

    Returns:
        :class:`FixedPointResult` with ``z`` (shape of ``z0``), ``n_iter``, ``residuals``
        (absolute and relative, ``(n_iter, B)``), ``status``, ``converged`` ``(B,)``. An empty
        ``z0`` (a batch of 0 samples, or 0 entries per sample) is solved without evaluating f:
        ``n_iter == 0`` and SUCCESS (every one of its no samples converged), as torch's layers
        accept an empty batch.

    Raises:
        FixedPointShapeError: f returned another shape than ``z0``'s (checked on every call).
        FixedPointBatchMixingError: f mixes the samples of the batch (see ``check_batch``).

    Gradients: with autograd enabled the iterations are recorded (unrolled differentiation);
    for implicit differentiation use :class:`nodecourse.DEQ`.
    """
    if not isinstance(z0, torch.Tensor) or not z0.is_floating_point():
        raise TypeError(
            f"z0 must be a floating-point torch.Tensor, got {type(z0).__name__}"
            + (f" of dtype {z0.dtype}" if isinstance(z0, torch.Tensor) else "")
        )
    if z0.dtype in (torch.float16, torch.bfloat16):
        # as odeint: the residual test and Anderson/Broyden's linear algebra need more than half precision
        raise WrongTypeError(
            f"z0 has dtype {z0.dtype} (eps={torch.finfo(z0.dtype).eps:.1e}): too coarse for the stopping test (a "
            f"tolerance below eps can never be met) and for the solvers' linear algebra (not implemented in half "
            f"precision on the CPU). Solve in float32 and cast back: fixed_point(f, z0.float(), ...).z.to({z0.dtype}) "
            f"(f must accept float32)"
        )
    check_args(
        {"f": f, "divergence_factor": divergence_factor, "warn": warn, "throw": throw, "check_batch": check_batch},
        FIXED_POINT_ARGS,
        defaults=_fixed_point_defaults(),
    )
    options = check_settings(method, tol, max_iter, stop_mode, options)
    shape = z0.shape
    batch = shape[0] if z0.dim() >= 2 else 1
    if z0.numel() == 0:
        return empty_result(z0, batch, method=method, tol=float(tol), max_iter=max_iter, stop_mode=stop_mode)
    flat0 = z0.reshape(batch, -1)
    calls = 0
    probe = check_batch and batch >= 2

    rng = None

    def F(z_flat: torch.Tensor) -> torch.Tensor:
        nonlocal calls, rng
        z = z_flat.reshape(shape)
        if calls == 0 and probe:
            rng = field_checks.rng_state(z.device)  # the probe replays the first call's random numbers
        out = f(z)
        calls += 1
        # every call: a tuple comparison, cheap; a resized or transposed output would otherwise be
        # reshaped silently into the wrong entries
        if not isinstance(out, torch.Tensor) or out.shape != shape:
            raise shape_error(out, shape, calls)
        if calls == 1 and probe:
            check_samples_independent(f, z, out, rng)
            calls += 1  # the probe's call, so that "call k" counts every call of f
        return out.reshape(flat0.shape)

    tracker = Tracker(
        batch,
        tol=float(tol),
        stop_mode=stop_mode,
        divergence_factor=divergence_factor,
        dtype=z0.dtype,
        device=z0.device,
    )
    stats = METHODS[method](F, flat0, tracker, max_iter=max_iter, **options)
    absolute, relative = tracker.stack()
    if probe:
        stats["probe_evals"] = 1
        check_frozen_samples(
            relative, relative if stop_mode == "rel" else absolute, tracker.converged, tracker.best_iter, float(tol)
        )
    if bool(tracker.converged.all()):
        status = FixedPointStatus.SUCCESS
    elif bool(tracker.non_finite.any()):
        status = FixedPointStatus.NON_FINITE
    elif bool(tracker.diverged.any()):
        status = FixedPointStatus.DIVERGED
    else:
        status = FixedPointStatus.MAX_ITER
    best_z = tracker.best_z
    if best_z is None:  # every method records at least one iterate (max_iter >= 1 is checked)
        raise RuntimeError(f"fixed_point: method={method!r} recorded no iterate")
    result = FixedPointResult(
        z=best_z.reshape(shape),
        n_iter=len(absolute),
        residuals=ResidualTrace(absolute, relative),
        status=status,
        converged=tracker.converged,
        best_iter=tracker.best_iter,
        returned="converged" if status is FixedPointStatus.SUCCESS else "best",
        method=method,
        tol=float(tol),
        max_iter=max_iter,
        stop_mode=stop_mode,
        stats=stats,
    )
    if status is not FixedPointStatus.SUCCESS:
        n_bad = int((~tracker.converged).sum())
        result.message = (
            f"fixed_point(method={method!r}) ended with status {status.name}: {n_bad} of "
            f"{flat0.shape[0]} sample(s) did not reach {stop_mode} residual <= {tol:g} in {result.n_iter} "
            f"evaluations (best {stop_mode} residual {result.final_residual():.3g}); returning the best iterate"
        )
        if throw:
            raise FixedPointError(result)
        if warn:
            warnings.warn(f"{result.message}. What to try: {status.remedy()}.", FixedPointWarning, stacklevel=2)
    return result


def empty_result(z0: torch.Tensor, batch: int, **settings: Any) -> FixedPointResult:
    """The result of a solve on an empty ``z0``: nothing to iterate, so no evaluation of f and SUCCESS."""
    none = torch.zeros(0, batch, dtype=z0.dtype, device=z0.device)
    return FixedPointResult(
        z=z0.clone(),
        n_iter=0,
        residuals=ResidualTrace(none, none.clone()),
        status=FixedPointStatus.SUCCESS,
        converged=torch.ones(batch, dtype=torch.bool, device=z0.device),
        best_iter=torch.zeros(batch, dtype=torch.long, device=z0.device),
        returned="converged",
        **settings,
    )
