"""Adaptive explicit Runge-Kutta integration (embedded pairs: bosh3, dopri5, or a user tableau).

One step: the stages, the embedded error estimate, then accept/reject and the
next step size from :class:`~nodecourse.solvers._control.StepControl`. Outputs
between steps come from the dense-output polynomial, so output times never
force extra steps (as in torchdiffeq, which keeps NFE comparable).
"""

from __future__ import annotations

import math

import torch

from nodecourse.solvers._control import CONTROL_OPTIONS, StepControl, all_finite, locate_nonfinite
from nodecourse.solvers._record import OFF, Recorder
from nodecourse.solvers._result import Status
from nodecourse.solvers._rk import CheckedFunc, DenseOutput, plan_for, time_tensor
from nodecourse.solvers._tableaux import ButcherTableau

ADAPTIVE_OPTIONS = dict(CONTROL_OPTIONS)


def integrate_adaptive(
    func: CheckedFunc,
    y0: torch.Tensor,
    ts: list[float],
    tab: ButcherTableau,
    *,
    rtol: float,
    atol: float,
    max_steps: int,
    options: dict,
    recorder: Recorder = OFF,
):
    """Integrate ``y' = func(t, y)`` through the times ``ts`` (strictly monotone).

    Args:
        func: the shape-checked, counting ``func`` (:class:`~nodecourse.solvers._rk.CheckedFunc`).
        y0: initial state, any shape ``S``.
        ts: output times as floats, ``ts[0]`` is the initial time.
        recorder: receives every attempted step (``record_steps`` / ``on_step``).
    Returns:
        ``(outputs, stats, status, message)``: a list of states (shape ``S``) for the
        output times reached, the work counters, a :class:`Status` and a sentence.
    """
    plan = plan_for(tab)
    error_order = tab.error_order
    if error_order is None:  # odeint sends only embedded pairs here
        raise ValueError(f"tableau {tab.name!r} has no embedded pair (b_low): adaptive stepping needs one")
    ctl = StepControl(
        rtol=rtol,
        atol=atol,
        error_order=error_order,
        options=options,
        t_start=ts[0],
        t_end=ts[-1],
        max_steps=max_steps,
    )
    t, t_end = ts[0], ts[-1]
    y = y0
    f = func(time_tensor(t, y0), y0)
    outputs = [y0]
    n_out = len(ts)
    stats = lambda: {
        "nfe": func.nfe,
        "n_steps": ctl.n_accepted + ctl.n_rejected,  # noqa: E731
        "n_accepted": ctl.n_accepted,
        "n_rejected": ctl.n_rejected,
    }
    recording = recorder.enabled
    if recording:
        recorder.start(y0)
    if n_out == 1:
        return outputs, stats(), Status.SUCCESS, ""
    if not all_finite(f):
        return outputs, stats(), Status.NON_FINITE, f"func(t0, y0) at t0={t} is not finite"

    h, _ = ctl.initial_step(func, t, y0, f)
    next_i = 1
    while True:
        if ctl.out_of_steps():
            return (outputs, stats(), *ctl.max_steps_failure(t, func, y))
        h_use, t_new = ctl.propose(t, h, t_end)
        if ctl.underflows(t, h_use):
            return (outputs, stats(), *ctl.underflow_failure(t, h_use))

        y1, ks = plan.step(func, t, h_use, y, f)
        ratio = ctl.error_ratio(plan.error(ks, h_use), y, y1)  # the one host sync per step

        if not math.isfinite(ratio):
            where = locate_nonfinite(ks, y1, t, h_use, plan.c)
            if where is not None:
                h = ctl.reject_nonfinite(where[0], h_use, where[1])
                if recording:
                    recorder.step(t, h_use, math.inf, False, y, y1)
                if ctl.gave_up():
                    return (outputs, stats(), *ctl.nonfinite_failure(h_use))
                continue
            ratio = math.inf  # finite values, overflowing ratio: tolerances too small for this error

        accepted, h = ctl.judge(ratio, h_use)
        if recording:
            recorder.step(t, h_use, ratio, accepted, y, y1)
        if not accepted:
            continue
        if not plan.fsal:
            ks = ks + [func(time_tensor(t_new, y1), y1)]
        dense = None
        while next_i < n_out and ctl.direction * (ts[next_i] - t_new) <= 0:
            if ts[next_i] == t_new:
                outputs.append(y1)
            else:
                if dense is None:
                    dense = DenseOutput(plan, y, ks, h_use)
                outputs.append(dense((ts[next_i] - t) / h_use))
            next_i += 1
        y, f, t = y1, ks[-1], t_new
        if next_i >= n_out:
            return outputs, stats(), Status.SUCCESS, ""
