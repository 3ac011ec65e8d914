"""Per-sample adaptive stepping: each batch element keeps its own time, step size, stats and status.

The batch still moves together through ``func`` (one call per stage on the
whole batch, as torchode does), but accept/reject and the next step size are
decided per element by :class:`~nodecourse.solvers._control.BatchStepControl`
(the same rules as the scalar control), and an element stops once it reaches
the last output time or fails. So an easy input costs fewer of *its own* steps
than a hard one, which a batch-wide step size hides. ``func`` receives ``t`` of
shape ``(B,)``.

Every step is a fixed sequence of batched tensor operations (no Python loop over
elements), kept short: at small states each operation costs about as much as its
launch, so the count is what ``benchmarks/bench_overhead.py`` measures.
"""

from __future__ import annotations

import math

import torch

from nodecourse.solvers._control import NONFIN, BatchStepControl
from nodecourse.solvers._record import OFF, Recorder
from nodecourse.solvers._rk import RKPlan, combine, plan_for
from nodecourse.solvers._tableaux import ButcherTableau


def integrate_per_sample(
    func,
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
    """Integrate a batch ``y0`` (shape ``(B, ...)``) with per-element step control.

    Returns ``(ys, stats, status, message)`` where ``ys`` has shape ``(len(ts), B, ...)``
    (NaN where an element failed before an output time) and ``status`` is the worst
    element's. ``stats`` holds batch totals (``nfe`` = calls of func on the batch,
    ``n_batch_steps`` = batched step attempts, ``n_accepted``/``n_rejected``/``n_steps``
    summed over elements) and per-element tensors of shape ``(B,)``: ``nfe_per_sample``,
    ``n_steps_per_sample``, ``n_accepted_per_sample``, ``n_rejected_per_sample``,
    ``t_reached_per_sample`` and ``status_per_sample`` (:attr:`Status.code` values).
    """
    plan = plan_for(tab)
    error_order, err_weights = tab.error_order, plan.err
    if error_order is None or err_weights is None:  # odeint sends only embedded pairs here
        raise ValueError(f"tableau {tab.name!r} has no embedded pair (b_low): per-sample stepping needs one")
    B, dev, dtype = y0.shape[0], y0.device, y0.dtype
    t_dtype = torch.float32 if dev.type == "mps" else torch.float64  # mps has no float64
    ctl = BatchStepControl(
        rtol=rtol,
        atol=atol,
        error_order=error_order,
        options=options,
        t_start=ts[0],
        t_end=ts[-1],
        max_steps=max_steps,
        batch=B,
        device=dev,
        t_dtype=t_dtype,
    )
    bshape = (B,) + (1,) * (y0.dim() - 1)
    n_out = len(ts)
    # Output times, then one that is never reached: an element past its last output finds no more.
    ts_t = torch.tensor(ts + [ctl.direction * math.inf], dtype=t_dtype, device=dev)
    reached = torch.le if ctl.direction > 0 else torch.ge  # reached(t_out, t_new): t_out lies within the step
    nodes = torch.tensor(plan.c, dtype=t_dtype, device=dev)
    t_end = ts[-1]
    recording = recorder.enabled
    stage_rows = [_lead_form(row) for row in plan.rows]
    b_row = _lead_form(plan.b)
    err_j, err_w, err_rest = _lead_form(err_weights)
    dense = _BatchDense(plan, dtype, dev)
    # Stages strictly inside the step get their times t + c_i h in one op; those at c = 1 take t_new.
    inner = [i for i, c in enumerate(plan.c) if 0 < i and c != 1.0]
    inner_nodes = torch.tensor([plan.c[i] for i in inner], dtype=t_dtype, device=dev).view(-1, 1)
    zero = torch.zeros((), dtype=t_dtype, device=dev)  # where() takes a tensor faster than a Python number

    t = torch.full((B,), ts[0], dtype=t_dtype, device=dev)
    y = y0
    f = func(t.to(dtype), y)
    idx = torch.ones(B, dtype=torch.long, device=dev)  # each element's next output time
    batch_index = torch.arange(B, device=dev)
    ys = torch.cat([y0.unsqueeze(0), torch.full((n_out - 1, *y0.shape), float("nan"), dtype=dtype, device=dev)])
    n_loops = 0

    bad_start = ~torch.isfinite(f.detach().reshape(B, -1)).all(dim=1)
    ctl.finish(bad_start, NONFIN, t)
    if n_out == 1:
        ctl.done[:] = True

    h, used = ctl.initial_step(func, t, y0, f)

    while True:
        active = ~ctl.done
        if not bool(active.any()):
            break
        if n_loops >= max_steps:
            ctl.out_of_steps(t)
            break
        n_loops += 1
        h_use, t_new, _ = ctl.propose(t, h, t_end)
        under = ctl.underflowing(active, t, h_use)
        active = active & ~under
        h_use = torch.where(active, h_use, zero)
        t_new = torch.where(active, t_new, t)
        hb = h_use.to(dtype).view(bshape)
        t_end_of_step = t_new.to(dtype)
        times = dict(zip(inner, torch.addcmul(t, inner_nodes, h_use).to(dtype).unbind(0))) if inner else {}

        ks = [f]
        yi = y
        for i, (j0, a0, rest) in enumerate(stage_rows, start=1):
            yi = torch.addcmul(y, hb, combine(ks[j0], ks, rest, 1.0), value=a0)
            ks.append(func(times.get(i, t_end_of_step), yi))
        y1 = yi if plan.fsal else torch.addcmul(y, hb, combine(ks[b_row[0]], ks, b_row[2], 1.0), value=b_row[1])
        if not plan.fsal:
            ks.append(func(t_end_of_step, y1))
        with torch.no_grad():  # the error estimate only steers the step sizes
            err = combine(ks[err_j], ks, err_rest, 1.0) * (hb * err_w)
        ratio = ctl.error_ratio(err, y, y1)
        bad_ratio = active & ~torch.isfinite(ratio)
        rare = bool((under | bad_ratio).any())  # the step's host sync, for both rare cases
        if rare and bool(under.any()):
            ctl.finish_underflow(under, t)
        if rare and bool(bad_ratio.any()):  # find which elements met NaN/inf, and when
            nonfinite, t_bad = _locate_nonfinite(ks, y1, t, h_use, nodes)
            nonfinite = nonfinite & active
            # Finite values with an overflowing ratio (tolerance tiny for the error): a large error.
            ratio = torch.where(bad_ratio & ~nonfinite, torch.full_like(ratio, float("inf")), ratio)
        else:
            nonfinite, t_bad = None, t  # no element met NaN/inf: judge takes its short path
        accept, h_next = ctl.judge(active, ratio, nonfinite, t_bad, h_use)
        if recording:
            recorder.step(t, h_use, ratio, accept, y, y1, active)

        # Outputs inside accepted steps, from the per-element interpolant.
        while True:
            tj = ts_t[idx]
            hit = accept & reached(tj, t_new)
            if not bool(hit.any()):
                break
            x = torch.where(hit, (tj - t) / h_use, zero).to(dtype)  # rows not hit: 0, never NaN
            value = torch.where((tj == t_new).view(bshape), y1, dense(y, ks, hb, x))
            rows = hit.nonzero().squeeze(1)
            ys.index_put_((idx[rows], batch_index[rows]), value[rows])
            idx += hit

        acc_b = accept.view(bshape)
        y = torch.where(acc_b, y1, y)
        f = torch.where(acc_b, ks[-1], f)
        t = torch.where(accept, t_new, t)
        h = torch.where(active, h_next, h)
        ctl.done = ctl.done | (accept & (idx >= n_out))

    status, message = ctl.statuses()
    n_acc, n_rej = ctl.n_accepted, ctl.n_rejected
    n_steps_each = n_acc + n_rej  # the steps each element took part in
    evals_per_step = plan.new_evals + (0 if plan.fsal else 1)
    stats = {
        "nfe": func.nfe,
        "n_batch_steps": n_loops,
        "n_accepted": int(n_acc.sum()),
        "n_rejected": int(n_rej.sum()),
        "n_steps": int(n_steps_each.sum()),
        "nfe_per_sample": 1 + used + evals_per_step * n_steps_each,
        "n_steps_per_sample": n_steps_each,
        "n_accepted_per_sample": n_acc,
        "n_rejected_per_sample": n_rej,
        "t_reached_per_sample": t,
        "status_per_sample": ctl.code,
    }
    return ys, stats, status, message


def _lead_form(coeffs: list[tuple[int, float]]) -> tuple[int, float, list[tuple[int, float]]]:
    """``sum_j a_j ks[j]`` as ``a_lead * (ks[lead] + sum_j (a_j / a_lead) ks[j])``, lead = the largest
    ``|a_j|``: ``(lead, a_lead, rest)``. The sum then starts from a slope instead of a multiply on the
    state, and ``a_lead`` goes into the ``value`` of the ``addcmul`` that applies the step sizes."""
    lead = max(range(len(coeffs)), key=lambda i: abs(coeffs[i][1]))
    j0, a0 = coeffs[lead]
    return j0, a0, [(j, a / a0) for i, (j, a) in enumerate(coeffs) if i != lead]


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


class _BatchDense:
    """The interpolant of :class:`nodecourse.solvers._rk.DenseOutput` (the same polynomials,
    :func:`~nodecourse.solvers._rk.dense_coefficients`) with a step size and an ``x`` per element."""

    def __init__(self, plan: RKPlan, dtype: torch.dtype, device: torch.device):
        self.slopes = [j for j, _ in plan.dense]
        # (4, n): row p holds the coefficient of x^(p+1) of each slope's weight
        self.coefficients = torch.tensor([c for _, c in plan.dense], dtype=dtype, device=device).T

    def __call__(self, y0: torch.Tensor, ks: list[torch.Tensor], hb: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``y0 + hb * sum_j w_j(x) ks[j]``; ``x`` shape ``(B,)`` in the state's dtype, ``hb`` the step
        sizes shaped to broadcast, ``(B, 1, ...)``. Returns ``y0``'s shape."""
        x2 = x * x
        weights = torch.stack([x, x2, x2 * x, x2 * x2], dim=1) @ self.coefficients  # (B, n)
        columns = weights.T.reshape((len(self.slopes),) + tuple(hb.shape)).unbind(0)
        acc = ks[self.slopes[0]] * columns[0]
        for j, w in zip(self.slopes[1:], columns[1:]):
            acc = torch.addcmul(acc, w, ks[j])
        return torch.addcmul(y0, hb, acc)
