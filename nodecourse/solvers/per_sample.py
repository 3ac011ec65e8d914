"""Per-sample adaptive stepping: each batch element keeps its own time, step size and stats.

The batch still moves together through ``func`` (one call per stage on the
whole batch, as torchode does), but accept/reject and the next step size are
decided per element, and an element stops once it reaches the last output
time. So an easy input costs fewer of *its own* steps than a hard one, which a
batch-wide step size hides. ``func`` receives ``t`` of shape ``(B,)``.
"""
from __future__ import annotations

import torch

from nodecourse.solvers.result import Status
from nodecourse.solvers.rk import RKPlan, checked_slope, combine
from nodecourse.solvers.tableaux import ButcherTableau

_OK, _MAX, _UNDER, _NONFIN = 0, 1, 2, 3
_CODE_TO_STATUS = {_OK: Status.SUCCESS, _MAX: Status.MAX_STEPS, _UNDER: Status.STEP_UNDERFLOW,
                   _NONFIN: Status.NON_FINITE}


def _rms(x: torch.Tensor) -> torch.Tensor:
    """RMS over all but the first dimension: shape ``(B,)``."""
    return x.detach().reshape(x.shape[0], -1).pow(2).mean(dim=1).sqrt()


def integrate_per_sample(func, y0: torch.Tensor, ts: list[float], tab: ButcherTableau, *, rtol: float,
                         atol: float, max_steps: int, options: dict):
    """Integrate a batch ``y0`` (shape ``(B, ...)``) with per-element step control.

    Returns ``(ys, stats, status, message)`` where ``ys`` has shape ``(len(ts), B, ...)``
    (NaN where an element failed before an output time). ``stats`` holds batch totals
    (``nfe`` = calls of func on the batch, ``n_batch_steps`` = batched step attempts,
    ``n_accepted``/``n_rejected``/``n_steps`` summed over elements) and per-element
    tensors ``nfe_per_sample``, ``n_accepted_per_sample``, ``n_rejected_per_sample``
    (shape ``(B,)``) plus ``status_per_sample`` (a list of :class:`Status`).
    """
    plan = RKPlan(tab)
    B, dev, dtype = y0.shape[0], y0.device, y0.dtype
    t_dtype = torch.float32 if dev.type == "mps" else torch.float64  # mps has no float64
    bshape = (B,) + (1,) * (y0.dim() - 1)
    n_out = len(ts)
    direction = 1.0 if ts[-1] >= ts[0] else -1.0
    ts_t = torch.tensor(ts, dtype=t_dtype, device=dev)
    t_end = ts[-1]
    eps = torch.finfo(t_dtype).eps
    safety, ifactor, dfactor, max_step = options["safety"], options["ifactor"], options["dfactor"], options["max_step"]

    t = torch.full((B,), ts[0], dtype=t_dtype, device=dev)
    y = y0
    f = checked_slope(func(t.to(dtype), y), y, per_sample=True)
    nfe = 1
    nfe_each = torch.ones(B, dtype=torch.long, device=dev)
    n_acc = torch.zeros(B, dtype=torch.long, device=dev)
    n_rej = torch.zeros(B, dtype=torch.long, device=dev)
    code = torch.zeros(B, dtype=torch.long, device=dev)
    done = torch.zeros(B, dtype=torch.bool, device=dev)
    streak = torch.zeros(B, dtype=torch.long, device=dev)
    idx = torch.ones(B, dtype=torch.long, device=dev)
    batch_index = torch.arange(B, device=dev)
    ys = torch.cat([y0.unsqueeze(0), torch.full((n_out - 1, *y0.shape), float("nan"), dtype=dtype, device=dev)])
    n_loops = 0

    bad_start = ~torch.isfinite(_rms(f))
    code = torch.where(bad_start, _NONFIN, code)
    done = done | bad_start | (n_out == 1)

    if options["first_step"] is not None:
        h = torch.full((B,), direction * float(options["first_step"]), dtype=t_dtype, device=dev)
    else:
        h = _initial_steps(func, t, y0, f, tab.order, rtol, atol, direction).to(t_dtype)
        nfe += 1
        nfe_each += 1
    h = h.clamp(-max_step, max_step)

    while bool((~done).any()):
        active = ~done
        if n_loops >= max_steps:
            code = torch.where(active, _MAX, code)
            break
        n_loops += 1
        remaining = t_end - t
        last = h.abs() >= remaining.abs() * (1 - 1e-10)  # see adaptive.py
        h_use = torch.where(last, remaining, h)
        under = active & (h_use.abs() <= 4 * eps * t.abs())
        code = torch.where(under, _UNDER, code)
        done = done | under
        active = active & ~under
        h_use = torch.where(active, h_use, torch.zeros_like(h_use))
        t_new = torch.where(last, torch.full_like(t, t_end), t + h_use)
        hb = h_use.to(dtype).view(bshape)

        ks = [f]
        yi = y
        for i, row in enumerate(plan.rows, start=1):
            yi = torch.addcmul(y, hb, combine(None, ks, row, 1.0))
            ti = t_new if plan.c[i] == 1.0 else t + plan.c[i] * h_use
            ks.append(func(ti.to(dtype), yi))
        nfe += plan.new_evals
        nfe_each += active.long() * plan.new_evals
        y1 = yi if plan.fsal else torch.addcmul(y, hb, combine(None, ks, plan.b, 1.0))
        if not plan.fsal:
            ks.append(func(t_new.to(dtype), y1))
            nfe += 1
            nfe_each += active.long()
        err = hb * combine(None, ks, plan.err, 1.0)
        scale = torch.maximum(y.detach().abs(), y1.detach().abs()) * rtol + atol
        ratio = _rms(err / scale).to(t_dtype)
        finite = torch.isfinite(ratio)
        accept = active & finite & (ratio <= 1.0)
        n_acc += accept.long()
        n_rej += (active & ~accept).long()
        streak = torch.where(active & ~finite, streak + 1, torch.where(active, torch.zeros_like(streak), streak))
        gave_up = streak > options["max_nonfinite_retries"]
        code = torch.where(gave_up & ~done, _NONFIN, code)
        done = done | gave_up

        # Outputs inside accepted steps, from the per-element quartic interpolant.
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
        done = done | (accept & (idx >= n_out))

        safe_ratio = torch.where(finite, ratio, torch.ones_like(ratio))
        low = torch.where(safe_ratio <= 1.0, torch.ones_like(ratio), torch.full_like(ratio, dfactor))
        factor = torch.minimum(torch.maximum(safety * safe_ratio.clamp_min(1e-300) ** (-1.0 / tab.order), low),
                               torch.full_like(ratio, ifactor))
        factor = torch.where(ratio == 0, torch.full_like(ratio, ifactor), factor)
        factor = torch.where(finite, factor, torch.full_like(ratio, dfactor))
        h = torch.where(active, (h_use * factor).clamp(-max_step, max_step), h)

    statuses = [_CODE_TO_STATUS[c] for c in code.tolist()]
    stats = {
        "nfe": nfe,
        "n_batch_steps": n_loops,
        "n_accepted": int(n_acc.sum()),
        "n_rejected": int(n_rej.sum()),
        "n_steps": int(n_acc.sum() + n_rej.sum()),
        "nfe_per_sample": nfe_each,
        "n_accepted_per_sample": n_acc,
        "n_rejected_per_sample": n_rej,
        "status_per_sample": statuses,
    }
    failed = [s for s in statuses if s is not Status.SUCCESS]
    if not failed:
        return ys, stats, Status.SUCCESS, ""
    worst = next(s for s in (Status.NON_FINITE, Status.STEP_UNDERFLOW, Status.MAX_STEPS) if s in failed)
    return ys, stats, worst, f"{len(failed)} of {B} batch elements failed ({worst.name} first); see stats['status_per_sample']"


def _initial_steps(func, t, y0, f0, order: int, rtol: float, atol: float, direction: float) -> torch.Tensor:
    """Hairer's starting step for each element (shape ``(B,)``, signed); one batched evaluation."""
    with torch.no_grad():
        bshape = (y0.shape[0],) + (1,) * (y0.dim() - 1)
        scale = y0.detach().abs() * rtol + atol
        d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
        h0 = torch.where((d0 < 1e-5) | (d1 < 1e-5), torch.full_like(d0, 1e-6), 0.01 * d0 / d1.clamp_min(1e-300))
        y1 = y0.detach() + (direction * h0).view(bshape) * f0.detach()
        f1 = func((t + direction * h0.to(t.dtype)).to(y0.dtype), y1)
        d2 = _rms((f1 - f0.detach()) / scale) / h0
        small = (d1 <= 1e-15) & (d2 <= 1e-15)
        h1 = torch.where(small, torch.clamp(h0 * 1e-3, min=1e-6),
                         (0.01 / torch.maximum(d1, d2).clamp_min(1e-300)) ** (1.0 / order))
        h = torch.minimum(100 * h0, h1)
        h = torch.where(torch.isfinite(h) & (h > 0), h, torch.full_like(h, 1e-6))
    return direction * h


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
