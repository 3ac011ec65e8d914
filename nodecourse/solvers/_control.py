"""The step-control core shared by every adaptive and implicit integrator.

One place for: the error norm, accept/reject, the step-size update, the
initial step, the underflow test, the non-finite bookkeeping and the
termination messages. :class:`StepControl` steers one trajectory (times and
step sizes are Python floats); :class:`BatchStepControl` steers each element of
a batch (``per_sample=True``; tensors of shape ``(B,)``). Both read the same
options and use the same formulas, so they cannot drift apart.

Order convention (one for all methods): ``error_order`` q is the power of h in
the local error *estimate*, ``ratio ~ C h**q``. For an explicit pair of orders
p(p̂) it is ``min(p, p̂) + 1`` (dopri5 5(4): q = 5; bosh3 3(2): q = 3); for
implicit_euler checked against the trapezoidal rule q = 2; for the trapezoidal
rule's divided-difference estimate q = 3. The controller's exponent is
``-1/q`` and Hairer's initial step uses the same q; nothing else takes an order.

Why this module is long: :class:`StepControl` and :class:`BatchStepControl` stay side by side, with the norms
and settings they share, so that a change to one formula is made beside its twin and the two cannot drift
apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from nodecourse.solvers._result import Status
from nodecourse.solvers._rk import time_tensor

#: Defaults of the options every adaptive and implicit method understands.
CONTROL_OPTIONS = {
    "safety": 0.9,  # step-size safety factor, in (0, 1]
    "ifactor": 10.0,  # largest growth of h per step, >= 1
    "dfactor": 0.2,  # largest shrink of h after a rejected step, in (0, 1)
    "first_step": None,  # initial |h| > 0; None = Hairer's estimate (one extra evaluation)
    "max_step": math.inf,  # largest |h| > 0
    "max_nonfinite_retries": 8,  # consecutive NaN/inf steps retried with a smaller h before giving up
    "norm": None,  # norm(tensor) -> scalar for the error ratio and the first step (as torchdiffeq); None = RMS
}

#: Underflow: a step is too small when ``t + h`` cannot be told from ``t`` (a few ulps of margin).
ULP_MARGIN = 4
TINY_STEP = 1e-300
#: The initial-step estimate is a guess, never a reason to stop: a guess below this many ulps of ``t0`` is
#: raised to it (25x the underflow margin, so rounding ``t0 + h`` moves the step by at most 0.5 %), and
#: the error control then decides. Why it matters: an entry that starts at 0 with a tiny ``atol`` (the
#: adjoint ``a`` and the parameter gradients of a backward solve, ``atol=1e-20``) has a scale of ``atol``,
#: so Hairer's estimate ``0.01 * |y0| / |f0|`` comes out near ``1e-18``, below ``4 ulp(t0)`` for any
#: ``t0`` away from 0, and the solve ended STEP_UNDERFLOW before trying one step (steps of that size and
#: larger have error ratios near 1e-13 there). The ulps are those of the state's dtype, the dtype ``func``
#: receives ``t`` in: in float32 a step below them does not move the time ``func`` sees, and the backward
#: solve of a float32 adjoint (rotated decay, rtol 1e-3, atol 1e-20) that started there never left: the
#: parameter-gradient entries' error estimates, float32 rounding noise over increments of ``h * slope``,
#: rejected every larger step until MAX_STEPS.
FIRST_STEP_ULPS = 100


def all_finite(x: torch.Tensor) -> bool:
    """Whether every entry of ``x`` is finite: one sum and one host read (``isfinite().all()`` is
    several kernels); a sum that overflows from finite entries is checked entry by entry."""
    if math.isfinite(float((x.detach() if x.requires_grad else x).sum())):
        return True
    return bool(torch.isfinite(x).all())


def _plain(x: torch.Tensor) -> torch.Tensor:
    """``x`` without its graph: ``x.detach()``, or ``x`` itself when it has none (one call less per read)."""
    return x.detach() if x.requires_grad else x


def resolvable_step(t0: float, dtype: torch.dtype = torch.float64) -> float:
    """The smallest first step the initial-step estimate may propose at time ``t0``:
    ``FIRST_STEP_ULPS`` ulps of ``t0`` in ``dtype`` (the state's, in which ``func`` receives ``t``;
    float64 ulps for float64 and wider), 0 at ``t0 = 0``, where any positive step resolves."""
    if t0 == 0:
        return 0.0
    return FIRST_STEP_ULPS * max(math.ulp(abs(t0)), _ulp_in(abs(t0), dtype))


def _ulp_in(x: float, dtype: torch.dtype) -> float:
    """The spacing of ``dtype``'s numbers at ``x > 0`` (normal range): ``eps * 2**floor(log2 x)``."""
    if not dtype.is_floating_point:
        return 0.0
    return torch.finfo(dtype).eps * 2.0 ** (math.frexp(x)[1] - 1)


def rms(x: torch.Tensor) -> torch.Tensor:
    """RMS over all elements (0-d tensor)."""
    return torch.linalg.vector_norm(x) / math.sqrt(max(x.numel(), 1))


def rms_rows(x: torch.Tensor) -> torch.Tensor:
    """RMS over all but the first dimension: shape ``(B,)``."""
    return x.reshape(x.shape[0], -1).pow(2).mean(dim=1).sqrt()


class UserNorm:
    """``options["norm"]``: the caller's ``norm(tensor) -> scalar`` (torchdiffeq's convention), used in
    place of :func:`rms` on the scaled error and in the initial-step estimate. The tensor has the
    state's shape (the flat state for a tuple state, which the tuple adapter splits back). The first
    result is checked to be one number; the absolute value is used (as torchdiffeq does)."""

    __slots__ = ("norm", "checked")

    def __init__(self, norm):
        if not callable(norm):
            raise TypeError(
                f"options['norm']={norm!r} must be a callable norm(tensor) -> scalar tensor (e.g. "
                f"lambda x: x.abs().max()), or None for the RMS norm"
            )
        self.norm = norm
        self.checked = False

    def __call__(self, x: torch.Tensor):
        out = self.norm(x)
        if not self.checked:
            if not (isinstance(out, torch.Tensor) and out.numel() == 1 or isinstance(out, (int, float))) or isinstance(
                out, bool
            ):
                shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                raise TypeError(
                    f"options['norm'] returned {shape} for a tensor of shape {tuple(x.shape)}; it must "
                    f"return one number (a 0-d tensor or a float), e.g. x.abs().max()"
                )
            self.checked = True
        return out.abs() if isinstance(out, torch.Tensor) else abs(out)


def error_scale(y0: torch.Tensor, y1: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """``atol + rtol * max(|y0|, |y1|)``, elementwise, no graph."""
    return torch.maximum(y0.detach().abs(), y1.detach().abs()).mul_(rtol).add_(atol)


class _Knobs:
    """The attributes :func:`_read_settings` sets on both controllers (declared here for the type
    checker; no values at class level)."""

    rtol: float
    atol: float
    error_order: int
    exponent: float
    safety: float
    ifactor: float
    dfactor: float
    first_step: float | None
    max_step: float
    max_retries: int
    norm: Callable[[torch.Tensor], Any]  # rms or a UserNorm
    t_start: float
    t_end: float
    direction: float
    max_steps: int


def _read_settings(
    ctl: _Knobs, rtol: float, atol: float, error_order: int, options: dict, t_start: float, t_end: float, max_steps: int
) -> None:
    """The settings both controllers read (same names, same formulas): tolerances, the exponent
    ``-1/q``, the options, the interval and its direction, the step budget."""
    ctl.rtol, ctl.atol = rtol, atol
    ctl.error_order = error_order
    ctl.exponent = -1.0 / error_order
    ctl.safety, ctl.ifactor, ctl.dfactor = options["safety"], options["ifactor"], options["dfactor"]
    ctl.first_step, ctl.max_step = options["first_step"], options["max_step"]
    ctl.max_retries = options["max_nonfinite_retries"]
    ctl.norm = rms if options.get("norm") is None else UserNorm(options["norm"])
    ctl.t_start, ctl.t_end = t_start, t_end
    ctl.direction = 1.0 if t_end >= t_start else -1.0
    ctl.max_steps = max_steps


class StepControl(_Knobs):
    """Step control of one trajectory (scalar mode).

    Args:
        rtol, atol: tolerances (error per step ``<= atol + rtol * |y|`` in the RMS norm).
        error_order: q of the module docstring.
        options: the merged :data:`CONTROL_OPTIONS` (implicit methods add their own keys).
        t_start, t_end: the integration interval (its sign sets the direction).
        max_steps: budget of attempted steps.
    """

    def __init__(
        self, *, rtol: float, atol: float, error_order: int, options: dict, t_start: float, t_end: float, max_steps: int
    ):
        _read_settings(self, rtol, atol, error_order, options, t_start, t_end, max_steps)
        self.n_accepted = 0
        self.n_rejected = 0
        self.nonfinite_streak = 0
        self.nonfinite_t: float | None = None  # where func last gave NaN/inf, until a step is accepted
        self.nonfinite_what = ""
        self._y_last: torch.Tensor | None = None  # the last y1 seen by error_ratio
        self._abs_last: torch.Tensor | None = None  # and its |y1|

    # ------------------------------------------------------------------ step sizes
    def clip(self, h: float) -> float:
        """``h`` signed by the direction, ``|h| <= max_step``."""
        return self.direction * min(abs(h), self.max_step)

    def initial_step(self, func, t0: float, y0: torch.Tensor, f0: torch.Tensor) -> tuple[float, int]:
        """``(h, nfe_used)``: ``options["first_step"]`` or Hairer, Norsett & Wanner's estimate
        (Solving ODEs I, II.4; one evaluation of func), signed and clipped."""
        if self.first_step is not None:
            return self.clip(float(self.first_step)), 0
        with torch.no_grad():
            y0, f0 = y0.detach(), f0.detach()
            scale = y0.abs().mul_(self.rtol).add_(self.atol)
            if self.norm is rms:  # both norms in one reduction and one host read
                both = torch.stack((y0, f0)).div_(scale)
                d0, d1 = torch.linalg.vector_norm(both.view(2, -1), dim=1).div_(math.sqrt(y0.numel())).tolist()
            else:
                d0, d1 = float(self.norm(y0 / scale)), float(self.norm(f0 / scale))
            h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
            if not (math.isfinite(h0) and h0 > 0):  # e.g. an atol so small that d1 overflows
                h0 = 1e-6
            y1 = torch.add(y0, f0, alpha=self.direction * h0)
            f1 = func(time_tensor(t0 + self.direction * h0, y0), y1)
            change = (f1 - f0).div_(scale)
            if self.norm is rms:
                d2 = float(torch.linalg.vector_norm(change)) / math.sqrt(change.numel()) / h0
            else:
                d2 = float(self.norm(change)) / h0
            if not (math.isfinite(d1) and math.isfinite(d2)):
                h1 = h0
            elif d1 <= 1e-15 and d2 <= 1e-15:
                h1 = max(1e-6, h0 * 1e-3)
            else:
                h1 = (0.01 / max(d1, d2)) ** (1.0 / self.error_order)
        h = min(100 * h0, h1)
        if not math.isfinite(h) or h <= 0:
            h = 1e-6
        return self.clip(max(h, resolvable_step(t0, y0.dtype))), 1

    def propose(self, t: float, h: float, target: float) -> tuple[float, float]:
        """``(h_use, t_new)``: ``h`` or, when it reaches ``target``, exactly the rest.

        Within 1e-10 of the target counts as reaching it: steps of exactly
        ``(t1 - t0) / n`` must not leave a remainder of a few ulps.
        """
        remaining = target - t
        if abs(h) >= abs(remaining) * (1 - 1e-10):
            return remaining, target
        return h, t + h

    @staticmethod
    def underflows(t: float, h: float) -> bool:
        """True when ``t + h`` cannot be told apart from ``t`` (with a margin of a few ulps)."""
        return abs(h) <= ULP_MARGIN * math.ulp(abs(t)) or abs(h) < TINY_STEP

    def error_ratio(self, err: torch.Tensor, y0: torch.Tensor, y1: torch.Tensor) -> float:
        """RMS of ``err / (atol + rtol max(|y0|, |y1|))`` (the one host sync per step).

        A ratio <= 1 meets the tolerance (same norm as torchdiffeq); ``options["norm"]`` replaces the RMS.
        """
        scaled = (err.detach() if err.requires_grad else err) / self._error_scale(y0, y1)
        if self.norm is rms:  # the square root of the size on the host: one op less per step
            return float(torch.linalg.vector_norm(scaled)) / math.sqrt(max(scaled.numel(), 1))
        return float(self.norm(scaled))

    def _error_scale(self, y0: torch.Tensor, y1: torch.Tensor) -> torch.Tensor:
        """:func:`error_scale`, reusing ``|y1|`` of the previous call when ``y0`` is that ``y1`` (the
        step after an accepted one starts where it ended): one op less per accepted step."""
        abs_last = self._abs_last  # never None when y0 is self._y_last (both are set together)
        abs0 = abs_last if y0 is self._y_last and abs_last is not None else _plain(y0).abs()
        abs1 = _plain(y1).abs()
        self._y_last, self._abs_last = y1, abs1
        return torch.maximum(abs0, abs1).mul_(self.rtol).add_(self.atol)

    def factor(self, ratio: float) -> float:
        """Multiplier for the next step: ``safety * ratio**(-1/q)`` clipped to ``[dfactor, ifactor]``;
        an accepted step (ratio <= 1) never shrinks the next one."""
        if ratio == 0.0:
            return self.ifactor
        if not math.isfinite(ratio):
            return self.dfactor
        low = 1.0 if ratio <= 1.0 else self.dfactor
        return min(self.ifactor, max(self.safety * ratio**self.exponent, low))

    # ------------------------------------------------------------------ decisions
    def out_of_steps(self) -> bool:
        return self.n_accepted + self.n_rejected >= self.max_steps

    def judge(self, ratio: float, h_used: float) -> tuple[bool, float]:
        """Accept (ratio <= 1) or reject a finite-valued step; returns ``(accepted, next h)``."""
        accepted = ratio <= 1.0
        if accepted:
            self.n_accepted += 1
            self.nonfinite_streak = 0
            self.nonfinite_t = None
        else:
            self.n_rejected += 1
        return accepted, self.clip(h_used * self.factor(ratio))

    def reject(self, h_used: float, factor: float) -> float:
        """Reject a step for a reason other than its error (e.g. Newton did not converge); the next
        step is ``factor`` times this one."""
        self.n_rejected += 1
        return self.clip(h_used * factor)

    def reject_nonfinite(self, t_bad: float, h_used: float, what: str = "func returned NaN/inf") -> float:
        """A step met NaN/inf at time ``t_bad``: reject it, shrink by ``dfactor``; returns the next h.
        :meth:`gave_up` says when the retries are spent."""
        self.n_rejected += 1
        self.nonfinite_streak += 1
        self.nonfinite_t = t_bad
        self.nonfinite_what = what
        return self.clip(h_used * self.dfactor)

    def gave_up(self) -> bool:
        return self.nonfinite_streak > self.max_retries

    # ------------------------------------------------------------------ endings
    def nonfinite_failure(self, h_used: float) -> tuple[Status, str]:
        return Status.NON_FINITE, (
            f"{self.nonfinite_what} at t={self.nonfinite_t!r}; the step was shrunk "
            f"{self.nonfinite_streak} time(s), to |h|={abs(h_used):.3g}, without getting past it"
        )

    def underflow_failure(self, t: float, h_used: float) -> tuple[Status, str]:
        """Underflow, unless the steps shrank because func kept giving NaN/inf: then that is the cause."""
        if self.nonfinite_t is not None:
            return Status.NON_FINITE, (
                f"{self.nonfinite_what} at t={self.nonfinite_t!r}; the step shrank to |h|={abs(h_used):.3g} "
                f"(below float64 resolution at t={t:.10g}) trying to get past it"
            )
        return Status.STEP_UNDERFLOW, f"step size {abs(h_used):.3g} underflowed at t={t:.10g}"

    def max_steps_failure(self, t: float, func=None, y: torch.Tensor | None = None) -> tuple[Status, str]:
        """MAX_STEPS; with ``func`` and the state ``y`` reached at ``t``, a field whose slope at one
        ``(t, y)`` changes from call to call is named as the cause (:func:`random_slopes`)."""
        message = (
            f"max_steps={self.max_steps} steps used ({self.n_accepted} accepted, "
            f"{self.n_rejected} rejected), reached t={t:.6g} of "
            f"[{self.t_start:.6g}, {self.t_end:.6g}]"
        )
        if self.n_rejected and func is not None and y is not None and random_slopes(func, t, y):
            message += (
                f". The {self.n_rejected} rejections are not stiffness: func gives different slopes at the same "
                f"(t, y) (it draws random numbers: dropout or noise in training mode), so the error estimate is "
                f"noise that no step size brings under the tolerance. Solve with the field in eval mode "
                f"(func.eval()), or with fixed steps (method='rk4', step_size=...)"
            )
        return Status.MAX_STEPS, message


def random_slopes(func, t: float, y: torch.Tensor) -> bool:
    """Whether two calls ``func(t, y)`` differ (a field that draws random numbers). Two evaluations,
    only on the MAX_STEPS path; the random stream is left as it was."""
    devices = [y.device] if y.device.type == "cuda" else []
    call = getattr(func, "func", func)  # the field itself, not the solver's counting wrapper
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=devices):
            first, second = call(time_tensor(t, y), y), call(time_tensor(t, y), y)
    except Exception:  # noqa: BLE001 (a diagnosis on a failure path: keep the MAX_STEPS message as it is)
        return False
    if not isinstance(first, torch.Tensor) or not isinstance(second, torch.Tensor):
        return False
    return not torch.equal(first, second)


def locate_nonfinite(ks: list[torch.Tensor], y1: torch.Tensor, t0: float, h: float, nodes) -> tuple[float, str] | None:
    """Where a step with a non-finite error ratio met NaN/inf: ``(time, what)``, or None when
    every stage and the new state are finite (then only the ratio overflowed: tolerances too small
    for the error). Only called on that rare path (one host sync per stage)."""
    for k, c in zip(ks, nodes):
        if not bool(torch.isfinite(k).all()):
            return t0 + c * h, "func returned NaN/inf"
    if not bool(torch.isfinite(y1).all()):
        return t0 + h, "the state overflowed to NaN/inf"
    return None


# ====================================================================== per-sample variant
OK, MAX, UNDER, NONFIN = (
    Status.SUCCESS.code,
    Status.MAX_STEPS.code,
    Status.STEP_UNDERFLOW.code,
    Status.NON_FINITE.code,
)


class BatchStepControl(_Knobs):
    """The same control for each element of a batch (``per_sample=True``).

    Times ``t`` and sizes ``h`` are tensors of shape ``(B,)`` in float64 (float32 on MPS) on
    the state's device. Codes are :attr:`Status.code` values, per element.
    """

    def __init__(
        self,
        *,
        rtol: float,
        atol: float,
        error_order: int,
        options: dict,
        t_start: float,
        t_end: float,
        max_steps: int,
        batch: int,
        device: torch.device,
        t_dtype: torch.dtype,
    ):
        if options.get("norm") is not None:
            raise ValueError(
                "options['norm'] is not available with per_sample=True: the error norm there is the "
                "RMS of each row (shape (B,)). Drop the norm, or use per_sample=False"
            )
        _read_settings(self, rtol, atol, error_order, options, t_start, t_end, max_steps)
        self.t_dtype = t_dtype
        self.eps = torch.finfo(t_dtype).eps
        self.tiny = max(TINY_STEP, torch.finfo(t_dtype).tiny)
        zeros = lambda dt: torch.zeros(batch, dtype=dt, device=device)  # noqa: E731
        self.n_accepted = zeros(torch.long)
        self.n_rejected = zeros(torch.long)
        self.code = zeros(torch.long)
        self.done = zeros(torch.bool)
        self.streak = zeros(torch.long)
        self.nonfinite_seen = zeros(torch.bool)  # func met NaN/inf since this element's last accepted step
        self.nonfinite_t = torch.full((batch,), math.nan, dtype=t_dtype, device=device)
        self.fail_t = torch.full((batch,), math.nan, dtype=t_dtype, device=device)
        # where() takes a 0-d tensor faster than a Python number (this runs every step)
        const = lambda value, dt=t_dtype: torch.tensor(value, dtype=dt, device=device)  # noqa: E731
        self._one, self._dfactor, self._target = const(1.0), const(self.dfactor), const(t_end)

    def clip(self, h: torch.Tensor) -> torch.Tensor:
        return h if self.max_step == math.inf else h.clamp(-self.max_step, self.max_step)

    def initial_step(self, func, t: torch.Tensor, y0: torch.Tensor, f0: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Per-element Hairer estimate (one batched evaluation) or ``first_step``; ``(h (B,), nfe)``."""
        if self.first_step is not None:
            return self.clip(torch.full_like(t, self.direction * float(self.first_step))), 0
        with torch.no_grad():
            bshape = (y0.shape[0],) + (1,) * (y0.dim() - 1)
            scale = y0.detach().abs() * self.rtol + self.atol
            d0, d1 = rms_rows(y0.detach() / scale), rms_rows(f0.detach() / scale)
            h0 = torch.where((d0 < 1e-5) | (d1 < 1e-5), torch.full_like(d0, 1e-6), 0.01 * d0 / d1.clamp_min(1e-300))
            y1 = y0.detach() + (self.direction * h0).view(bshape) * f0.detach()
            f1 = func((t + self.direction * h0.to(t.dtype)).to(y0.dtype), y1)
            d2 = rms_rows((f1 - f0.detach()) / scale) / h0
            small = (d1 <= 1e-15) & (d2 <= 1e-15)
            h1 = torch.where(
                small,
                torch.clamp(h0 * 1e-3, min=1e-6),
                (0.01 / torch.maximum(d1, d2).clamp_min(1e-300)) ** (1.0 / self.error_order),
            )
            h = torch.minimum(100 * h0, h1)
            h = torch.where(torch.isfinite(h) & (h > 0), h, torch.full_like(h, 1e-6))
            # a guess below the times' resolution is raised to it (see FIRST_STEP_ULPS)
            h = torch.maximum(h.to(self.t_dtype), FIRST_STEP_ULPS * self.eps * t.abs())
        return self.clip((self.direction * h).to(self.t_dtype)), 1

    def propose(self, t: torch.Tensor, h: torch.Tensor, target: float):
        """``(h_use, t_new, last)`` per element (see :meth:`StepControl.propose`)."""
        remaining = target - t
        last = h.abs() >= remaining.abs() * (1 - 1e-10)
        h_use = torch.where(last, remaining, h)
        t_new = torch.where(last, self._target if target == self.t_end else target, t + h_use)
        return h_use, t_new, last

    def underflows(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """The scalar test per element: ``|h| <= 4 ulp(t)`` or ``|h|`` below the smallest step
        (the second part is what fires at ``t = 0``)."""
        size = h.abs()
        return (size <= ULP_MARGIN * self.eps * t.abs()) | (size < self.tiny)

    def error_ratio(self, err: torch.Tensor, y0: torch.Tensor, y1: torch.Tensor) -> torch.Tensor:
        """Per-element RMS error ratio, shape ``(B,)`` in the time dtype (no host sync; the norm
        accumulates in that dtype, so squares of a float32 error cannot overflow)."""
        scaled = (err.detach() / error_scale(y0, y1, self.rtol, self.atol)).reshape(err.shape[0], -1)
        norms = torch.linalg.vector_norm(scaled, dim=1, dtype=self.t_dtype)
        return norms.mul_(1.0 / math.sqrt(max(scaled.shape[1], 1)))

    def factor(self, ratio: torch.Tensor) -> torch.Tensor:
        """:meth:`StepControl.factor` per element: 0 gives ``ifactor`` (0 is clamped to 1e-300, whose
        power clips there), NaN/inf give ``dfactor`` (as inf, whose power is 0)."""
        r = torch.nan_to_num(ratio, nan=math.inf, posinf=math.inf).clamp_min_(1e-300)
        low = torch.where(r <= 1.0, self._one, self._dfactor)  # an accepted step never shrinks the next one
        return torch.maximum(r.pow_(self.exponent).mul_(self.safety), low).clamp_max_(self.ifactor)

    def finish(self, mask: torch.Tensor, code: int, t: torch.Tensor) -> None:
        """Mark the elements in ``mask`` (not yet done) finished with ``code`` at time ``t``."""
        mask = mask & ~self.done
        self.code = torch.where(mask, code, self.code)
        self.fail_t = torch.where(mask, t, self.fail_t)
        self.done = self.done | mask

    def underflowing(self, active: torch.Tensor, t: torch.Tensor, h_use: torch.Tensor) -> torch.Tensor:
        """The active elements whose step underflows: they sit this step out, and
        :meth:`finish_underflow` ends them (the caller checks for any along with its other rare cases:
        one host sync per step for both)."""
        return active & self.underflows(t, h_use)

    def finish_underflow(self, under: torch.Tensor, t: torch.Tensor) -> None:
        """End the elements in ``under``: NON_FINITE when func's NaN/inf made them shrink, else
        STEP_UNDERFLOW, at time ``t``."""
        self.finish(under & self.nonfinite_seen, NONFIN, self.nonfinite_t)
        self.finish(under, UNDER, t)

    def judge(self, active, ratio, nonfinite, t_bad, h_use) -> tuple[torch.Tensor, torch.Tensor]:
        """Accept/reject per element. ``nonfinite`` marks elements whose step met NaN/inf (at
        ``t_bad``); None when none did (the common case: the same rules in fewer ops). Returns
        ``(accepted, next h)`` (h unchanged for inactive elements)."""
        if nonfinite is None:
            accept = active & (ratio <= 1.0)
            self.n_accepted += accept
            self.n_rejected += active & ~accept
            self.streak.masked_fill_(accept, 0)
            self.nonfinite_seen &= ~accept
            return accept, self.clip(h_use * self.factor(ratio))
        accept = active & ~nonfinite & (ratio <= 1.0)
        self.n_accepted += accept.long()
        self.n_rejected += (active & ~accept).long()
        bad = active & nonfinite
        self.streak = torch.where(bad, self.streak + 1, torch.where(accept, 0, self.streak))
        self.nonfinite_seen = (self.nonfinite_seen | bad) & ~accept
        self.nonfinite_t = torch.where(bad, t_bad, self.nonfinite_t)
        self.finish(self.streak > self.max_retries, NONFIN, self.nonfinite_t)
        ratio = torch.where(nonfinite, torch.full_like(ratio, math.inf), ratio)
        return accept, self.clip(h_use * self.factor(ratio))

    def out_of_steps(self, t: torch.Tensor) -> None:
        self.finish(~self.done, MAX, t)

    def statuses(self) -> tuple[Status, str]:
        """The worst status and a sentence naming how many elements failed, how, and where."""
        codes = self.code.tolist()
        failed = [c for c in codes if c != OK]
        if not failed:
            return Status.SUCCESS, ""
        worst = next(Status.from_code(c) for c in (NONFIN, UNDER, MAX) if c in failed)
        first = codes.index(worst.code)
        where = float(self.fail_t[first])
        what = {
            Status.NON_FINITE: "func returned NaN/inf",
            Status.STEP_UNDERFLOW: "the step size underflowed",
            Status.MAX_STEPS: f"max_steps={self.max_steps} batched steps ran out",
        }[worst]
        return worst, (
            f"{len(failed)} of {len(codes)} batch elements failed, worst {worst.name}: element {first}: "
            f"{what} at t={where!r}; see solution.status_per_sample"
        )
