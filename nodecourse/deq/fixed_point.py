"""``fixed_point(f, z0, ...)``: solve z = f(z) by Picard, Anderson or Broyden, batched.

Stopping criterion (stated once, used by every method): each iteration evaluates f at
the current iterate z_k of every sample b and records

    abs[k, b] = ||f(z_k) - z_k||,    rel[k, b] = abs[k, b] / (||f(z_k)|| + tiny)

(2-norms over all dimensions but the batch one). Sample b has converged at the first k
with ``rel[k, b] <= tol`` (``stop_mode="rel"``, the default) or ``abs[k, b] <= tol``
(``stop_mode="abs"``); it is then frozen at z_k. The solve stops when every sample has
converged, diverged (abs residual above ``divergence_factor`` times its first one) or
turned non-finite, or after ``max_iter`` evaluations of f. The status is SUCCESS only
when every sample converged; otherwise each sample's best iterate (lowest residual) is
returned, ``result.returned == "best"``, and a :class:`FixedPointWarning` is issued
(``warn=False`` silences it; ``throw=True`` raises :class:`FixedPointError` instead).
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import torch

from nodecourse.deq.anderson import anderson
from nodecourse.deq.broyden import broyden
from nodecourse.deq.picard import picard
from nodecourse.deq.result import FixedPointResult, FixedPointStatus, FixedPointWarning, ResidualTrace
from nodecourse.deq.tracking import Tracker

METHODS: dict[str, Callable] = {"picard": picard, "anderson": anderson, "broyden": broyden}
"""Fixed-point methods by name."""

OPTIONS: dict[str, tuple[str, ...]] = {
    "picard": ("damping",),
    "anderson": ("m", "lam", "damping", "safeguard"),
    "broyden": ("m", "damping", "safeguard"),
}
"""The extra keyword options each method accepts."""

STOP_MODES = ("rel", "abs")


class FixedPointError(RuntimeError):
    """A fixed-point solve failed and ``throw=True``; ``.result`` holds the details."""

    def __init__(self, result: FixedPointResult):
        self.result = result
        super().__init__(f"{result.message}. What to try: {result.status.remedy()}.")


def check_settings(method: str, tol: float, max_iter: int, stop_mode: str, options: dict[str, Any]) -> None:
    """Validate solver settings at the boundary; errors name the argument, the value and the fix."""
    if method not in METHODS:
        raise ValueError(f"method={method!r} is unknown; use one of {sorted(METHODS)}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0:
        raise ValueError(f"tol={tol!r} must be a positive number, e.g. tol=1e-6")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter={max_iter!r} must be a positive int, e.g. max_iter=100")
    if stop_mode not in STOP_MODES:
        raise ValueError(f"stop_mode={stop_mode!r} is unknown; use one of {STOP_MODES}")
    unknown = sorted(set(options) - set(OPTIONS[method]))
    if unknown:
        raise ValueError(f"option(s) {unknown} are not accepted by method={method!r}; "
                         f"it accepts {list(OPTIONS[method])}")
    damping = options.get("damping", 1.0)
    if not isinstance(damping, (int, float)) or not 0 < damping <= 1:
        raise ValueError(f"damping={damping!r} must be in (0, 1], e.g. damping=0.5")
    m = options.get("m", 1)
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ValueError(f"m={m!r} (history size) must be a positive int, e.g. m=6")


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
            residual is declared DIVERGED (and stops).
        warn, throw: on a non-success status, warn (default) or raise :class:`FixedPointError`.
        options: per method: picard ``damping``; anderson ``m`` (window, 6), ``lam`` (relative
            Tikhonov), ``damping``, ``safeguard``; broyden ``m`` (memory, 50), ``damping``, ``safeguard`` (1e4).

    Returns:
        :class:`FixedPointResult` with ``z`` (shape of ``z0``), ``n_iter``, ``residuals``
        (absolute and relative, ``(n_iter, B)``), ``status``, ``converged`` ``(B,)``.

    Gradients: with autograd enabled the iterations are recorded (unrolled differentiation);
    for implicit differentiation use :class:`nodecourse.DEQ`.
    """
    if not isinstance(z0, torch.Tensor) or not z0.is_floating_point():
        raise TypeError(f"z0 must be a floating-point torch.Tensor, got {type(z0).__name__}"
                        + (f" of dtype {z0.dtype}" if isinstance(z0, torch.Tensor) else ""))
    check_settings(method, tol, max_iter, stop_mode, options)
    if isinstance(divergence_factor, bool) or not isinstance(divergence_factor, (int, float)) \
            or not divergence_factor > 1:
        raise ValueError(f"divergence_factor={divergence_factor!r} must be a number > 1, e.g. 1e6")
    shape = z0.shape
    flat0 = z0.reshape(shape[0], -1) if z0.dim() >= 2 else z0.reshape(1, -1)
    checked = []

    def F(z_flat: torch.Tensor) -> torch.Tensor:
        out = f(z_flat.reshape(shape))
        if not checked:
            if not isinstance(out, torch.Tensor) or out.shape != shape:
                got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                raise ValueError(f"f returned {got} for z of shape {tuple(shape)}; f must return the shape of z0")
            checked.append(True)
        return out.reshape(flat0.shape)

    tracker = Tracker(flat0.shape[0], tol=float(tol), stop_mode=stop_mode, divergence_factor=divergence_factor,
                      dtype=z0.dtype, device=z0.device)
    stats = METHODS[method](F, flat0, tracker, max_iter=max_iter, **options)
    absolute, relative = tracker.stack()
    if bool(tracker.converged.all()):
        status = FixedPointStatus.SUCCESS
    elif bool(tracker.non_finite.any()):
        status = FixedPointStatus.NON_FINITE
    elif bool(tracker.diverged.any()):
        status = FixedPointStatus.DIVERGED
    else:
        status = FixedPointStatus.MAX_ITER
    result = FixedPointResult(
        z=tracker.best_z.reshape(shape), n_iter=len(absolute), residuals=ResidualTrace(absolute, relative),
        status=status, converged=tracker.converged, best_iter=tracker.best_iter,
        returned="converged" if status is FixedPointStatus.SUCCESS else "best",
        method=method, tol=float(tol), max_iter=max_iter, stop_mode=stop_mode, stats=stats,
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
