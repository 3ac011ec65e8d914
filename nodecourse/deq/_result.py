"""What a fixed-point solve returns: :class:`FixedPointResult`, :class:`FixedPointStatus`,
:class:`ResidualTrace`, and the warning raised when a solve does not reach its tolerance."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["FixedPointResult", "FixedPointStatus", "FixedPointWarning", "ResidualTrace"]


class FixedPointStatus(enum.StrEnum):
    """How a fixed-point solve ended (the worst sample of the batch decides).

    A string enum, as :class:`~nodecourse.solvers.Status` is: it compares equal to its value.
    """

    SUCCESS = "success"  # every sample reached the tolerance
    MAX_ITER = "max_iter"  # the iteration budget ran out first (e.g. z -> 1 - z under Picard: it cycles)
    DIVERGED = "diverged"  # the residual, or the size of f(z), grew far above its start: the iteration runs away
    NON_FINITE = "non_finite"  # f or the iterate produced NaN or inf

    def remedy(self) -> str:
        """What to try when a solve ends with this status."""
        return _REMEDIES[self]


_REMEDIES = {
    FixedPointStatus.SUCCESS: "nothing to do",
    FixedPointStatus.MAX_ITER: (
        "raise max_iter, loosen tol, use method='anderson' or 'broyden', or damp Picard (damping=0.5); "
        "the map may have no attracting fixed point"
    ),
    FixedPointStatus.DIVERGED: (
        "the map is not a contraction near the iterates: damp the iteration (damping < 1), start closer "
        "(z0), or use method='broyden'; in a DEQ, add the Jacobian regulariser or normalise the weights"
    ),
    FixedPointStatus.NON_FINITE: ("f returned NaN/inf: check f and z0, use float64, damp the iteration (damping < 1)"),
}


class FixedPointWarning(RuntimeWarning):
    """A fixed-point solve ended without reaching its tolerance; the best iterate was returned."""


@dataclass
class ResidualTrace:
    """Residual per iteration and per sample, shapes ``(n_iter, B)``.

    ``absolute[k, b] = ||f(z_k) - z_k||`` (2-norm over all but the batch dimension) and
    ``relative[k, b] = absolute[k, b] / (||f(z_k)|| + eps)``, with ``eps`` the dtype's
    smallest normal number (the relative residual of a fixed point at the origin is
    therefore not defined; use ``stop_mode="abs"`` there).
    """

    absolute: torch.Tensor
    relative: torch.Tensor

    def worst(self, mode: str = "rel") -> list[float]:
        """The batch's largest residual at each iteration, as host floats (for plots and tables)."""
        trace = self.relative if mode == "rel" else self.absolute
        if trace.numel() == 0:
            return []
        return trace.detach().amax(dim=1).cpu().tolist()

    def __len__(self) -> int:
        return int(self.absolute.shape[0])


@dataclass
class FixedPointResult:
    """The result of :func:`nodecourse.fixed_point`.

    Attributes:
        z: the returned iterate, shape of ``z0``. On success, each sample's first iterate
            that met the tolerance; otherwise each sample's *best* iterate (lowest residual
            in ``stop_mode``), and ``returned == "best"`` says so.
        n_iter: evaluations of ``f`` made (each iteration evaluates ``f`` once, at the
            iterate whose residual it records), equal to ``len(residuals)``.
        residuals: the residual trace, absolute and relative, shape ``(n_iter, B)``.
        status: how the solve ended (:class:`FixedPointStatus`).
        converged: ``(B,)`` bool, which samples reached the tolerance.
        best_iter: ``(B,)`` long, the iteration whose iterate was returned per sample.
        returned: ``"converged"`` or ``"best"`` (the best iterate of a solve that failed).
        method, tol, max_iter, stop_mode: the settings used, echoed.
        message: a sentence describing a failure (empty on success).
        stats: extra solver work (e.g. Anderson restarts, Broyden resets).
    """

    z: torch.Tensor
    n_iter: int
    residuals: ResidualTrace
    status: FixedPointStatus
    converged: torch.Tensor
    best_iter: torch.Tensor
    returned: str
    method: str
    tol: float
    max_iter: int
    stop_mode: str
    message: str = ""
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.status is FixedPointStatus.SUCCESS

    def final_residual(self, mode: str | None = None) -> float:
        """The batch's largest residual at the returned iterates (``mode`` defaults to ``stop_mode``);
        0.0 for an empty batch (nothing was left unsolved)."""
        mode = mode or self.stop_mode
        trace = self.residuals.relative if mode == "rel" else self.residuals.absolute
        if trace.numel() == 0:
            return 0.0
        picked = trace.gather(0, self.best_iter.view(1, -1)).squeeze(0)
        return float(picked.detach().amax().cpu())

    def __repr__(self) -> str:
        return (
            f"FixedPointResult(method={self.method!r}, status={self.status.name}, n_iter={self.n_iter}, "
            f"residual({self.stop_mode})={self.final_residual():.2e}, tol={self.tol:g}, returned={self.returned!r})"
        )
