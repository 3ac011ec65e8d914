"""Step 2: solver work logged per input.

Each sampled test input is run on its own, so each gets its own steps: NFE, accepted and rejected
steps and the status of every ODE solve; iterations, final residual and status of every DEQ solve.
The distribution over inputs, the failures counted, and whether work follows difficulty: the rank
correlation (Spearman) between an input's work and its loss.

Verdict: *problem* when more than :data:`PROBLEM_FRACTION` of the inputs' solves fail (an ODE solve
that stops early, a DEQ that does not reach its tolerance and silently returns its best iterate);
*warning* for any failure, or when the most expensive input costs more than :data:`SPREAD` times
the median (a tail of inputs that a batch waits for); *ok* otherwise.
"""

from __future__ import annotations

import math
import statistics
import time

import torch

from nodecourse.audit._context import AuditContext
from nodecourse.audit._evaluate import per_input, work_unit
from nodecourse.audit._quality import per_row_loss
from nodecourse.audit._report import StepResult, new_figure, render, verdict_of

NAME = "Solver work per input"
PROBLEM_FRACTION = 0.01  # more than 1 % of inputs failing is not an edge case
SPREAD = 5.0  # max / median work: a tail the whole batch pays for


def spearman(a: list[float], b: list[float]) -> float | None:
    """Rank correlation of ``a`` and ``b``; None when either is constant."""
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def run_step(ctx: AuditContext) -> StepResult:
    start = time.perf_counter()
    rows = ctx.sample_rows(ctx.sizes.per_input, offset=2)
    key, unit = work_unit(ctx.cores)
    each = per_input(ctx.model, ctx.cores, ctx.x_test, rows, progress=ctx.progress, desc="step 2: one input at a time")
    work = [float(e[key]) for e in each]
    ok = [e["ok"] for e in each]
    outputs = torch.stack([e["output"] for e in each])
    y = None if ctx.y_test is None else ctx.y_test[rows]
    losses = per_row_loss(ctx.task, outputs, None if y is None else y.to(outputs.device)).tolist()
    finite = [(w, l) for w, l, good in zip(work, losses, ok) if good and math.isfinite(l)]
    rho = spearman([w for w, _ in finite], [l for _, l in finite])
    n, n_fail = len(each), ok.count(False)
    statuses = sorted({e["status"] for e in each if not e["ok"]})
    med, top = statistics.median(work), max(work)
    stats = {
        "n_inputs": n,
        "unit": unit,
        "mean": statistics.fmean(work),
        "median": med,
        "min": min(work),
        "max": top,
        "failures": n_fail,
        "failure_statuses": statuses,
        "spearman_work_loss": rho,
    }
    if ctx.cores[0].kind == "ode" and not getattr(ctx.cores[0], "observed", False):  # torchdiffeq keeps no step log
        stats["rejected_mean"] = statistics.fmean(e["n_rejected"] for e in each)
        stats["accepted_mean"] = statistics.fmean(e["n_accepted"] for e in each)
    sites = sorted({site for e in each for site in e["by_solve"]})
    if len(sites) > 1:  # several solves: each one's work per input on its own line
        stats["per_solve"] = {
            site: {
                "median": statistics.median(e["by_solve"].get(site, 0.0) for e in each),
                "max": max(e["by_solve"].get(site, 0.0) for e in each),
            }
            for site in sites
        }
    residuals = [e["residual"] for e in each if e["residual"] is not None]
    if residuals:
        stats["residual_max"] = max(residuals)
        stats["residual_median"] = statistics.median(residuals)

    problems, warnings = [], []
    if n_fail > PROBLEM_FRACTION * n:
        problems.append(f"{n_fail} of {n} inputs ({100 * n_fail / n:.1f} %) ended with status {', '.join(statuses)}")
    elif n_fail:
        warnings.append(f"{n_fail} of {n} inputs ended with status {', '.join(statuses)}")
    if med > 0 and top > SPREAD * med:
        warnings.append(f"the costliest input needs {top:.0f} {unit}, {top / med:.1f}x the median {med:.0f}")
    verdict, reasons = verdict_of(problems, warnings)
    follows = "work does not vary" if rho is None else f"rank correlation of work with the input's loss {rho:+.2f}"
    extra = ""
    if "rejected_mean" in stats:
        extra = f", {stats['accepted_mean']:.1f} accepted and {stats['rejected_mean']:.1f} rejected steps on average"
    if residuals:
        extra = f", final residual up to {stats['residual_max']:.1e}"
    if "per_solve" in stats:
        extra += "; per solve: " + "; ".join(
            f"{site} median {v['median']:.0f}, max {v['max']:.0f}" for site, v in stats["per_solve"].items()
        )
    summary = (
        f"Over {n} test inputs solved one at a time: {unit} median {med:.0f} (range {min(work):.0f}-"
        f"{top:.0f}, mean {stats['mean']:.1f}){extra}; {n_fail} failed solves; {follows}."
    )
    table = {
        "columns": ["", unit] + (["rejected steps"] if "rejected_mean" in stats else []),
        "rows": [
            [label, f(work)] + ([f([e["n_rejected"] for e in each])] if "rejected_mean" in stats else [])
            for label, f in (("min", min), ("median", statistics.median), ("max", max))
        ],
    }
    data = {**stats, "rows": rows, "work": work, "loss": losses, "ok": ok, "table": table}
    seconds = [float(e["seconds"]) for e in each]
    data["seconds"] = seconds
    figure = (
        _figure(work, losses, ok, unit, ctx.task)
        if max(work) > min(work)
        else _constant_work_figure(work[0], seconds, losses, ok, unit, ctx.task)
    )
    return StepResult(2, NAME, verdict, summary, data, [figure], reasons, time.perf_counter() - start)


LOSS_NAMES = {"classification": "loss (cross-entropy, nats)", "regression": "squared error", "density": "-log p (nats)"}


def _constant_work_figure(work: float, seconds, losses, ok, unit, task):
    """Every input cost the same work (a fixed-step solve): a histogram of one bar says nothing, so the
    figure shows what does vary, the wall time per input, and the loss against it."""
    fig, (ax1, ax2) = new_figure(2, width=3.8)
    ms = [1e3 * s for s in seconds]
    ax1.hist(ms, bins=20, color="#4c72b0")
    ax1.set(
        xlabel="milliseconds for one input (wall time)", ylabel="test inputs", title=f"Every input: {work:.0f} {unit}"
    )
    good = [(t, l) for t, l, g in zip(ms, losses, ok) if g and math.isfinite(l)]
    bad = [(t, l) for t, l, g in zip(ms, losses, ok) if not g and math.isfinite(l)]
    if good:
        ax2.scatter([t for t, _ in good], [l for _, l in good], s=10, label="solved")
    if bad:
        ax2.scatter([t for t, _ in bad], [l for _, l in bad], s=14, color="#cf222e", marker="x", label="failed")
        ax2.legend(fontsize=8)
    ax2.set(xlabel="milliseconds for one input (wall time)", ylabel=LOSS_NAMES[task], title="Time against difficulty")
    return render(
        fig,
        "Work per input",
        f"each sampled test input solved on its own took the same {work:.0f} {unit}; what varies is its "
        "wall time in milliseconds (left, a histogram) and its loss (right, against the wall time); "
        "red crosses: solves that failed",
    )


def _figure(work, losses, ok, unit, task):
    fig, (ax1, ax2) = new_figure(2, width=3.8)
    lo, hi = min(work), max(work)
    bins = range(int(lo), int(hi) + 2) if hi - lo <= 60 else 30
    ax1.hist(work, bins=bins, align="left" if hi - lo <= 60 else "mid", color="#4c72b0")
    ax1.set(xlabel=f"{unit} for one input", ylabel="test inputs", title="Work per input")
    good = [(w, l) for w, l, g in zip(work, losses, ok) if g and math.isfinite(l)]
    bad = [(w, l) for w, l, g in zip(work, losses, ok) if not g and math.isfinite(l)]
    if good:
        ax2.scatter([w for w, _ in good], [l for _, l in good], s=10, label="solved")
    if bad:
        ax2.scatter([w for w, _ in bad], [l for _, l in bad], s=14, color="#cf222e", marker="x", label="failed")
    loss_name = LOSS_NAMES[task]
    ax2.set(xlabel=f"{unit} for one input", ylabel=loss_name, title="Work against difficulty")
    if bad:
        ax2.legend(fontsize=8)
    return render(
        fig,
        "Work per input",
        f"each sampled test input solved on its own: {unit} per input (left) and against that input's "
        "loss (right); red crosses: solves that failed",
    )
