"""What a solve returns: :class:`Solution`, :class:`Status` and :class:`SolverError`."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Optional

import torch

__all__ = ["BackwardSolveWarning", "Solution", "SolverError", "Status"]


class Status(enum.StrEnum):
    """How a solve ended.

    A string enum, as :class:`~nodecourse.deq.FixedPointStatus` is: ``status == "success"`` and
    ``json.dumps`` work on a member, and ``str(status)`` is its value.
    """

    SUCCESS = "success"
    MAX_STEPS = "max_steps"  # the step budget ran out before the last output time
    STEP_UNDERFLOW = "step_underflow"  # the step size shrank below floating-point resolution
    NON_FINITE = "non_finite"  # func or the state produced NaN or inf

    def remedy(self) -> str:
        """What to try when a solve ends with this status."""
        return _REMEDIES[self]

    @property
    def code(self) -> int:
        """Integer code used in per-sample status tensors: 0 success, 1 max steps, 2 underflow, 3 non-finite."""
        return _CODES[self]

    @classmethod
    def from_code(cls, code: int) -> "Status":
        return _FROM_CODE[int(code)]


_CODES = {Status.SUCCESS: 0, Status.MAX_STEPS: 1, Status.STEP_UNDERFLOW: 2, Status.NON_FINITE: 3}
_FROM_CODE = {v: k for k, v in _CODES.items()}

_REMEDIES = {
    Status.SUCCESS: "nothing to do",
    Status.MAX_STEPS: (
        "raise max_steps; if the problem is stiff (fast decaying modes), use method='implicit_euler' or "
        "'trapezoid'; if atol is tiny (say 1e-20) and some entries sit at or near zero, raise atol to the size "
        "below which those entries do not matter (their rounding noise fails a tiny atol at every step "
        "size, which no rtol cures cheaply); otherwise loosen rtol"
    ),
    Status.STEP_UNDERFLOW: (
        "if the solution blows up in finite time near the t named (as y' = y**2 does), no setting helps: end "
        "the solve before that time; if atol is tiny (say 1e-20) and some entries sit at or near zero, raise "
        "atol to the size below which those entries do not matter: their rounding noise fails a tiny atol at "
        "every step size, which a tighter rtol does not cure and a looser one cures only at many more steps; "
        "for a stiff problem use "
        "method='trapezoid' or 'implicit_euler'; float64 (y0.double()) gives a float32 solve more room"
    ),
    Status.NON_FINITE: (
        "func returned NaN/inf (or the state overflowed) at the time given: check func there (a log, sqrt "
        "or division outside its domain? a solution that blows up?), use float64 (y0.double()), "
        "or try method='trapezoid' for stiff problems"
    ),
}


@dataclass
class Solution:
    """The result of :func:`nodecourse.odeint`.

    Attributes:
        ys: states at the output times, shape ``(len(t), *y0.shape)``. After a failed
            solve (``throw=False``) the rows not reached are NaN. For a tuple ``y0``
            (torchdiffeq's convention, :mod:`nodecourse.solvers._tuple_state`): a tuple of
            tensors, part ``i`` of shape ``(len(t), *y0[i].shape)``.
        ts: the output times, shape ``(len(t),)`` (the ``t`` given).
        stats: solver work: ``nfe`` (calls of func), ``n_steps`` (attempted steps),
            ``n_accepted``, ``n_rejected``; implicit methods add ``n_newton_iters``,
            ``n_jacobians``; per-sample mode adds per-element tensors (shape ``(B,)``);
            ``nfe_backward``: evaluations of func made by backward passes, updated as they
            run, in this same dict (0 with ``gradient="backprop"``, whose backward pass
            differentiates the recorded operations; the replayed steps with ``"checkpoint"``;
            the adjoint solve's with ``"adjoint"``); ``nfe_setup`` (when not 0): evaluations
            made by checks before the solve (the per-sample probe that rows stay apart, the
            dependency probe of ``"adjoint"`` and ``"checkpoint"``).
        status: how the solve ended (per-sample mode: the worst element's).
        steps: the solver's :class:`~nodecourse.solvers._record.StepRecord` when
            ``record_steps`` was asked for, else None.
        status_per_sample: per-sample mode only: a long tensor of shape ``(B,)`` of
            :attr:`Status.code` values (see :meth:`sample_statuses`).
        method, rtol, atol: the settings used, echoed.
        message: a sentence describing a failure (empty on success).
        event_t: with ``odeint(..., event_fn=...)``: the event time, shape ``()`` (it carries
            gradients); ``ts`` is then ``[t[0], event_t]`` and ``ys`` the states there. Else None.
    """

    ys: torch.Tensor | tuple[torch.Tensor, ...]
    ts: torch.Tensor
    stats: dict[str, Any]
    status: Status
    method: str = ""
    rtol: Optional[float] = None
    atol: Optional[float] = None
    message: str = ""
    steps: Optional[Any] = None
    status_per_sample: Optional[torch.Tensor] = None
    event_t: Optional[torch.Tensor] = None

    def sample_statuses(self) -> list[Status]:
        """Per-sample mode: the status of each batch element, as :class:`Status` values."""
        if self.status_per_sample is None:
            raise ValueError("sample_statuses() needs a per_sample=True solve")
        return [Status.from_code(c) for c in self.status_per_sample.tolist()]

    @property
    def success(self) -> bool:
        return self.status is Status.SUCCESS

    def __repr__(self) -> str:
        work = ", ".join(
            f"{k}={v}"
            for k, v in self.stats.items()
            if isinstance(v, (int, float)) and not (k == "nfe_backward" and v == 0)
        )
        shape = tuple(tuple(part.shape) for part in self.ys) if isinstance(self.ys, tuple) else tuple(self.ys.shape)
        return f"Solution(method={self.method!r}, status={self.status.name}, ys.shape={shape}, {work})"


class BackwardSolveWarning(RuntimeWarning):
    """A backward pass (``gradient="adjoint"``, ``"checkpoint"``, ``"reversible"``, ...) failed with
    ``throw=False``: the gradients it returned are NaN. ``.status`` is the :class:`Status` it ended
    with (also in ``solution.stats["backward_status"]``); the text names it and what to try."""

    def __init__(self, status: Status, message: str):
        self.status = status
        super().__init__(
            f"the backward pass ended with status {status.name}, so its gradients are NaN: {message}. "
            f"What to try: {status.remedy()}. (throw=True raises this as a SolverError.)"
        )


def warn_backward_failure(status: Status, message: str) -> None:
    """Warn (:class:`BackwardSolveWarning`) that a backward pass under ``throw=False`` failed: its NaN
    gradients must never pass unnoticed."""
    import warnings

    warnings.warn(BackwardSolveWarning(status, message), stacklevel=3)


class SolverError(RuntimeError):
    """A solve failed and ``throw=True``. ``.status`` and ``.solution`` hold the details."""

    def __init__(self, status: Status, message: str, solution: Optional[Solution] = None):
        self.status = status
        self.solution = solution
        super().__init__(f"solve ended with status {status.name}: {message}. What to try: {status.remedy()}.")
