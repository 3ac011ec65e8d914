"""Per-sample adaptive stepping: each batch element keeps its own time, step size, stats and status.

The batch still moves together through ``func`` (one call per stage on the
whole batch, as torchode does), but accept/reject and the next step size are
decided per element by :class:`~nodecourse.solvers.control.BatchStepControl`
(the same rules as the scalar control), and an element stops once it reaches
the last output time or fails. So an easy input costs fewer of *its own* steps
than a hard one, which a batch-wide step size hides. ``func`` receives ``t`` of
shape ``(B,)``.
"""
from __future__ import annotations

import torch

from nodecourse.solvers.control import NONFIN, BatchStepControl
from nodecourse.solvers.record import OFF, Recorder
from nodecourse.solvers.rk import RKPlan, combine
from nodecourse.solvers.tableaux import ButcherTableau


def integrate_per_sample(func, y0: torch.Tensor, ts: list[float], tab: ButcherTableau, *, rtol: float,
                         atol: float, max_steps: int, options: dict, recorder: Recorder = OFF):
    """Integrate a batch ``y0`` (shape ``(B, ...)``) with per-element step control.

    Returns ``(ys, stats, status, message)`` where ``ys`` has shape ``(len(ts), B, ...)``
    (NaN where an element failed before an output time) and ``status`` is the worst
    element's. ``stats`` holds batch totals (``nfe`` = calls of func on the batch,
    ``n_batch_steps`` = batched step attempts, ``n_accepted``/``n_rejected``/``n_steps``
    summed over elements) and per-element tensors of shape ``(B,)``: ``nfe_per_sample``,
    ``n_steps_per_sample``, ``n_accepted_per_sample``, ``n_rejected_per_sample``,
    ``t_reached_per_sample`` and ``status_per_sample`` (:attr:`Status.code` values).
    """
    plan = RKPlan(tab)
    B, dev, dtype = y0.shape[0], y0.device, y0.dtype
    t_dtype = torch.float32 if dev.type == "mps" else torch.float64  # mps has no float64
    ctl = BatchStepControl(rtol=rtol, atol=atol, error_order=tab.error_order, options=options, t_start=ts[0],
                           t_end=ts[-1], max_steps=max_steps, batch=B, device=dev, t_dtype=t_dtype)
    bshape = (B,) + (1,) * (y0.dim() - 1)
    n_out = len(ts)
    direction = ctl.direction
    ts_t = torch.tensor(ts, dtype=t_dtype, device=dev)
    nodes = torch.tensor(plan.c, dtype=t_dtype, device=dev)
    t_end = ts[-1]
    recording = recorder.enabled

    t = torch.full((B,), ts[0], dtype=t_dtype, device=dev)
    y = y0
    f = func(t.to(dtype), y)
    nfe_each = torch.ones(B, dtype=torch.long, device=dev)
    idx = torch.ones(B, dtype=torch.long, device=dev)
    batch_index = torch.arange(B, device=dev)
    ys = torch.cat([y0.unsqueeze(0), torch.full((n_out - 1, *y0.shape), float("nan"), dtype=dtype, device=dev)])
    n_loops = 0

    bad_start = ~torch.isfinite(f.detach().reshape(B, -1)).all(dim=1)
    ctl.finish(bad_start, NONFIN, t)
    if n_out == 1:
        ctl.done[:] = True

    h, used = ctl.initial_step(func, t, y0, f)
    nfe_each += used

    while bool((~ctl.done).any()):
        active = ~ctl.done
        if n_loops >= max_steps:
            ctl.out_of_steps(t)
            break
        n_loops += 1
        h_use, t_new, last = ctl.propose(t, h, t_end)
        active = ctl.underflow(active, t, h_use)
        h_use = torch.where(active, h_use, torch.zeros_like(h_use))
        t_new = torch.where(active, t_new, t)
        hb = h_use.to(dtype).view(bshape)

        ks = [f]
        yi = y
        for i, row in enumerate(plan.rows, start=1):
            yi = torch.addcmul(y, hb, combine(None, ks, row, 1.0))
            ti = t_new if plan.c[i] == 1.0 else t + plan.c[i] * h_use
            ks.append(func(ti.to(dtype), yi))
        nfe_each += active.long() * plan.new_evals
        y1 = yi if plan.fsal else torch.addcmul(y, hb, combine(None, ks, plan.b, 1.0))
        if not plan.fsal:
            ks.append(func(t_new.to(dtype), y1))
            nfe_each += active.long()
        err = hb * combine(None, ks, plan.err, 1.0)
        ratio = ctl.error_ratio(err, y, y1)
        bad_ratio = active & ~torch.isfinite(ratio)
        if bool(bad_ratio.any()):  # rare: find which elements met NaN/inf, and when
            nonfinite, t_bad = _locate_nonfinite(ks, y1, t, h_use, nodes)
            nonfinite = nonfinite & active
            # Finite values with an overflowing ratio (tolerance tiny for the error): a large error.
            ratio = torch.where(bad_ratio & ~nonfinite, torch.full_like(ratio, float("inf")), ratio)
        else:
            nonfinite, t_bad = torch.zeros_like(active), t
        accept, h_next = ctl.judge(active, ratio, nonfinite, t_bad, h_use)
        if recording:
            recorder.step(t, h_use, ratio, accept, y, y1, active)

        # Outputs inside accepted steps, from the per-element interpolant.
        dense = None
        while True:
            j = idx.clamp(max=n_out - 1)
            tj = ts_t[j]
            hit = accept & (idx < n_out) & (direction * (tj - t_new) <= 0)
            if not bool(hit.any()):
                break
            if dense is None:
                dense = _DenseBatch(plan, y, y1, ks, hb)
            x = ((tj - t) / torch.where(h_use == 0, torch.ones_like(h_use), h_use)).to(dtype)
            value = torch.where((tj == t_new).view(bshape), y1, dense(x.view(bshape)))
            ys = ys.index_put((j[hit], batch_index[hit]), value[hit])
            idx = idx + hit.long()

        acc_b = accept.view(bshape)
        y = torch.where(acc_b, y1, y)
        f = torch.where(acc_b, ks[-1], f)
        t = torch.where(accept, t_new, t)
        h = torch.where(active, h_next, h)
        ctl.done = ctl.done | (accept & (idx >= n_out))

    status, message = ctl.statuses()
    n_acc, n_rej = ctl.n_accepted, ctl.n_rejected
    stats = {
        "nfe": func.nfe,
        "n_batch_steps": n_loops,
        "n_accepted": int(n_acc.sum()),
        "n_rejected": int(n_rej.sum()),
        "n_steps": int(n_acc.sum() + n_rej.sum()),
        "nfe_per_sample": nfe_each,
        "n_steps_per_sample": n_acc + n_rej,
        "n_accepted_per_sample": n_acc,
        "n_rejected_per_sample": n_rej,
        "t_reached_per_sample": t,
        "status_per_sample": ctl.code,
    }
    return ys, stats, status, message


def _locate_nonfinite(ks, y1, t, h_use, nodes):
    """Per element: whether a stage or the new state is NaN/inf, and the time of the first bad stage
    (``t + h`` when only the state is bad). Shapes ``(B,)``."""
    B = y1.shape[0]
    stage_ok = torch.stack([torch.isfinite(k.detach().reshape(B, -1)).all(dim=1) for k in ks])
    y1_ok = torch.isfinite(y1.detach().reshape(B, -1)).all(dim=1)
    all_ok = stage_ok.all(dim=0)
    first_bad = torch.where(all_ok, len(nodes) - 1, (~stage_ok).long().argmax(dim=0)).clamp(max=len(nodes) - 1)
    t_bad = torch.where(all_ok, t + h_use, t + nodes[first_bad] * h_use)
    return ~(all_ok & y1_ok), t_bad


class _DenseBatch:
    """The quartic interpolant of :class:`nodecourse.solvers.rk.DenseOutput` with a step per element."""

    def __init__(self, plan: RKPlan, y0, y1, ks, hb):
        f0, f1 = ks[0], ks[-1]
        self.e = y0
        self.d = hb * f0
        if plan.mid is None:  # cubic Hermite
            self.c = 3 * (y1 - y0) - hb * (2 * f0 + f1)
            self.b = 2 * (y0 - y1) + hb * (f0 + f1)
            self.a = torch.zeros_like(y0)
            return
        y_mid = torch.addcmul(y0, hb, combine(None, ks, plan.mid, 1.0))
        self.c = -11 * y0 - 5 * y1 + 16 * y_mid + hb * (f1 - 4 * f0)
        self.b = 18 * y0 + 14 * y1 - 32 * y_mid + hb * (5 * f0 - 3 * f1)
        self.a = -8 * (y1 + y0) + 16 * y_mid + 2 * hb * (f1 - f0)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.e + x * (self.d + x * (self.c + x * (self.b + x * self.a)))
