"""``backend="torchdiffeq"``: the same call run through torchdiffeq, its work counted.

NFE is counted by wrapping ``func`` (whose every output is shape-checked with
our own error message); steps, the step budget and the failure status come from
torchdiffeq's step callbacks: ``callback_step`` sees each attempt's ``(t0, y0, dt)``
before torchdiffeq's own checks run, so the wrapper stops the solve itself (an
internal exception type) with the status it decided, never by reading
torchdiffeq's assertion texts. Differences worth knowing when comparing are in
each method's ``SolverSpec.torchdiffeq_differs`` (e.g. torchdiffeq's ``rk4`` is
the 3/8 rule; its fixed-step methods step on one grid from ``t[0]`` and
interpolate to the output times).
"""

from __future__ import annotations

import math

import torch

from nodecourse.solvers._control import CONTROL_OPTIONS, all_finite
from nodecourse.solvers._record import OFF, Recorder
from nodecourse.solvers._registry import ADAPTIVE
from nodecourse.solvers._result import Status
from nodecourse.solvers._rk import checked_slope

#: Our option names that torchdiffeq understands with the same meaning (its other options,
#: e.g. ``max_nonfinite_retries``, have no counterpart there).
TORCHDIFFEQ_OPTION_NAMES = ("safety", "ifactor", "dfactor", "first_step", "max_step", "norm")
#: Their defaults: ours, from the one definition in :data:`~nodecourse.solvers._control.CONTROL_OPTIONS`.
TORCHDIFFEQ_ADAPTIVE_OPTIONS = {name: CONTROL_OPTIONS[name] for name in TORCHDIFFEQ_OPTION_NAMES}


class _Stop(Exception):
    """Raised from a callback to end torchdiffeq's solve with a status we decided."""

    def __init__(self, status: Status, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class CountingFunc:
    """``func`` wrapped to count evaluations, check their shape, and watch torchdiffeq's steps.

    Budget: ``max_steps`` attempted steps in all (torchdiffeq's own ``max_num_steps``
    counts per output interval, so it is set above ours and never fires first).
    """

    def __init__(self, func, max_steps: int, adaptive: bool, recorder: Recorder = OFF):
        self.func = func
        self.max_steps = max_steps
        self.adaptive = adaptive
        self.recorder = recorder
        self.nfe = 0
        self.n_accepted = 0
        self.n_rejected = 0
        self.n_fixed_steps = 0
        self.since_accept: list = []  # (t, f) of the evaluations since the last accepted step

    def __call__(self, t, y):
        f = self.func(t, y)
        # the device once (a device comparison builds two objects); shape and dtype on every call
        if self.nfe == 0 or type(f) is not torch.Tensor or f.shape != y.shape or f.dtype != y.dtype:
            checked_slope(f, y)
        self.nfe += 1
        self.since_accept.append((t, f))
        return f

    def first_nonfinite(self):
        """Time of the first NaN/inf output since the last accepted step, or None (syncs; failure path only)."""
        for t, f in self.since_accept:
            if not bool(torch.isfinite(f).all()):
                return float(t)
        return None

    @property
    def n_attempts(self) -> int:
        return self.n_accepted + self.n_rejected + self.n_fixed_steps

    def callback_step(self, t0, y0, dt):
        if self.n_attempts >= self.max_steps:
            raise _Stop(Status.MAX_STEPS, f"max_steps={self.max_steps} steps used, reached t={float(t0):.6g}")
        if not self.adaptive:
            self.n_fixed_steps += 1
            if self.recorder.enabled:
                self.recorder.step(float(t0), float(dt), math.nan, True, y0, y0)
            return
        if not all_finite(y0):
            raise _Stop(Status.NON_FINITE, f"the state is NaN/inf at t={float(t0)!r}")
        # on host floats (two reads instead of three tensor ops and a sync): a step within one
        # epsilon of t0 in t's dtype no longer moves t, which torchdiffeq would assert on
        t_now, h = float(t0.detach()), float(dt.detach())
        if not abs(h) > torch.finfo(t0.dtype).eps * abs(t_now) or not math.isfinite(h):
            bad = self.first_nonfinite()
            if bad is not None:
                raise _Stop(
                    Status.NON_FINITE,
                    f"func returned NaN/inf at t={bad!r}; torchdiffeq's step shrank to {float(dt):.3g} after it",
                )
            raise _Stop(Status.STEP_UNDERFLOW, f"step size {abs(float(dt)):.3g} underflowed at t={float(t0)!r}")


class AdaptiveCountingFunc(CountingFunc):
    """:class:`CountingFunc` with the accept/reject callbacks, which only torchdiffeq's adaptive
    solvers call (a fixed-step solver given them warns "does not support callbacks" on every call)."""

    def callback_accept_step(self, t0, y0, dt):
        self.n_accepted += 1
        self.since_accept = self.since_accept[-1:]  # keep the new step's first slope (FSAL)
        if self.recorder.enabled:
            self.recorder.step(float(t0), float(dt), math.nan, True, y0, y0)

    def callback_reject_step(self, t0, y0, dt):
        self.n_rejected += 1
        if self.recorder.enabled:
            self.recorder.step(float(t0), float(dt), math.nan, False, y0, y0)


def integrate_torchdiffeq(
    func,
    y0: torch.Tensor,
    t: torch.Tensor,
    spec,
    *,
    rtol: float,
    atol: float,
    step_size,
    max_steps: int,
    options: dict,
    recorder: Recorder = OFF,
):
    """Run torchdiffeq's ``odeint``; returns ``(outputs, stats, status, message)`` (outputs: torchdiffeq's
    tensor of shape ``(T, *y0.shape)``, or ``[y0]`` when the solve was stopped).

    With ``record_steps`` the record has each step's ``t0``, ``h`` and ``accepted`` from the
    callbacks (``error_ratio`` is NaN: torchdiffeq does not expose it; in a StepEvent ``y1``
    is the step's start state too).
    """
    import torchdiffeq

    adaptive = spec.kind == ADAPTIVE
    counted = (AdaptiveCountingFunc if adaptive else CountingFunc)(func, max_steps, adaptive, recorder)
    if adaptive:
        td_options = {k: v for k, v in options.items() if v is not None and not (k == "max_step" and v == math.inf)}
        td_options["max_num_steps"] = max_steps + 1
    else:
        td_options = {"step_size": step_size}
    if recorder.enabled:
        recorder.start(y0)
    try:
        ys = torchdiffeq.odeint(counted, y0, t, rtol=rtol, atol=atol, method=spec.torchdiffeq, options=td_options)
    except _Stop as stop:
        return [y0], _stats(counted, spec), stop.status, f"torchdiffeq stopped: {stop.message}"
    stats = _stats(counted, spec)
    # ys as torchdiffeq stacked it (odeint uses a tensor as it is); one reduction and one host read
    if not all_finite(ys):
        return ys, stats, Status.NON_FINITE, "torchdiffeq returned NaN/inf values"
    return ys, stats, Status.SUCCESS, ""


def _stats(counted: CountingFunc, spec) -> dict:
    if spec.kind == ADAPTIVE:
        acc, rej = counted.n_accepted, counted.n_rejected
    else:
        acc, rej = counted.n_fixed_steps, 0
    return {"nfe": counted.nfe, "n_steps": acc + rej, "n_accepted": acc, "n_rejected": rej}
