"""Step 1: an explicit baseline at matched parameters and compute.

A referee's first question: would a discrete network of the same size, trained the same way, do as
well for less? By default the core is swapped for its discrete counterpart
(:func:`nodecourse.audit._baseline.discrete_counterpart`) and trained by the audit with the same data,
loop and budget (``epochs``) as lesson 9 and ``nodecourse audit`` train the model, over
``Sizes.seeds`` seeds (2 quick, 3 full); ``baseline=`` takes the practitioner's own (used as given,
one "seed"). The counterpart matches the model's kind (:mod:`nodecourse.audit._baseline`): a
trajectory gets an explicit stack with the same work per output interval, a DEQ its block
unrolled; a density gets none, and the step says so (*not measured*) instead of comparing with a
model that is not a density. Quality, parameters, forward time and forward work side by side; the
interval of the difference includes the baseline's training variance (each bootstrap resample
draws a seed as well as the rows: :func:`nodecourse.audit._quality.difference_over_seeds`).

Verdict: *problem* when the baseline is better by more than :data:`PROBLEM_GAPS` practical gaps (the
whole 95 % interval of the paired difference); *warning* when it is better (the whole interval below
zero), or when the model is not better by a gap and takes more than :data:`SLOWER` times the
baseline's forward time; *ok* otherwise.
"""

from __future__ import annotations

import time

from torch import nn

from nodecourse.audit import _inputs as I
from nodecourse.audit import _quality as Q
from nodecourse.audit._baseline import UnrolledBlock, discrete_counterpart, forward_seconds, observed_counterpart, train
from nodecourse.audit._context import AuditContext
from nodecourse.audit._discovery import CoreNotFoundError, find_cores
from nodecourse.audit._evaluate import run, work_unit
from nodecourse.audit._observed import is_observed
from nodecourse.audit._report import StepResult, new_figure, render, verdict_of
from nodecourse.audit._state import independent_copy
from nodecourse.models import CNF, ResidualStack, count_parameters

NAME = "Explicit baseline at matched parameters"
PROBLEM_GAPS = 5.0  # the baseline better by five practical gaps: the continuous core costs quality
SLOWER = 2.0  # the model at more than twice the baseline's forward time, for no gain, is worth a warning


def _discrete_work(module: nn.Module) -> tuple[float, str] | None:
    """Block evaluations of a discrete model per forward pass (residual blocks, unrolled steps)."""
    blocks = sum(m.n_blocks for m in module.modules() if isinstance(m, ResidualStack))
    blocks += sum(m.steps for m in module.modules() if isinstance(m, UnrolledBlock))
    return (float(blocks), "block evaluations") if blocks else None


def _work_per_pass(r, n_chunks: int, key: str) -> float:
    return r.work[key] / max(n_chunks, 1)


def run_step(ctx: AuditContext) -> StepResult:
    start = time.perf_counter()
    metric, y = ctx.metric, ctx.y_test
    model_run = ctx.test_run()
    key, unit = work_unit(ctx.cores)
    n_chunks = -(-model_run.n_rows // ctx.sizes.chunk)
    trained_here = ctx.baseline == "auto"
    if trained_here:
        reason = _no_baseline(ctx)
        if reason:
            return StepResult(
                1,
                NAME,
                "not measured",
                f"No automatic baseline: {reason}.",
                {"baseline": None},
                reasons=[reason],
                seconds=time.perf_counter() - start,
            )
        bases, how = [], ""
        for k in range(ctx.sizes.seeds):
            try:
                baseline, how = _counterpart(ctx, ctx.seed + k)
                if not independent_copy(ctx.model, baseline, I.take(ctx.x_test, slice(0, 2))):
                    raise ValueError(
                        "the model reaches some of its weights through a closure made when it was built "
                        "(e.g. self.f = lambda z: self.W(z)), so a copy trained here would train the "
                        "original's weights; pass baseline= a model of your own"
                    )
            except ValueError as exc:
                return StepResult(
                    1,
                    NAME,
                    "not measured",
                    f"No automatic baseline: {exc}.",
                    {"baseline": None},
                    reasons=[str(exc)],
                    seconds=time.perf_counter() - start,
                )
            train(
                baseline,
                ctx.train,
                task=ctx.task,
                epochs=ctx.epochs,
                lr=ctx.lr,
                batch_size=ctx.batch_size,
                seed=ctx.seed + k,
                progress=ctx.progress,
                desc=f"baseline, seed {ctx.seed + k}",
            )
            bases.append(baseline)
    else:
        bases, how = [ctx.baseline], f"your own {type(ctx.baseline).__name__}, as given (not trained by the audit)"
    baseline = bases[0]
    base_runs = []
    for b in bases:
        was_training = b.training
        b.eval()
        try:
            base_cores = find_cores(b)
        except CoreNotFoundError:
            base_cores = []
        base_runs.append(run(b, base_cores, ctx.x_test, chunk=ctx.sizes.chunk))
        b.train(was_training)
    base_run = base_runs[0]
    baseline.eval()
    t_model = forward_seconds(ctx.model, ctx.x_test)
    t_base = forward_seconds(baseline, ctx.x_test)
    observed_base = isinstance(baseline, nn.Module) and type(baseline).__name__ == "Overridden"

    model_work = _work_per_pass(model_run, n_chunks, key)
    if observed_base:
        base_work, base_unit = _work_per_pass(base_run, n_chunks, key), unit
    elif base_cores:
        b_key, b_unit = work_unit(base_cores)
        base_work, base_unit = _work_per_pass(base_run, n_chunks, b_key), b_unit
    else:
        base_work, base_unit = _discrete_work(baseline) or (float("nan"), "n/a")
    d = Q.difference_over_seeds(
        metric, model_run.outputs, y, [r.outputs for r in base_runs], n_boot=ctx.sizes.n_boot, seed=ctx.seed
    )
    n_test = model_run.n_rows
    ms = {"model": 1000 * t_model / n_test * 1000, "baseline": 1000 * t_base / n_test * 1000}
    ratio = t_model / t_base if t_base > 0 else float("inf")
    p_model, p_base = count_parameters(ctx.model), count_parameters(baseline)

    problems, warnings = [], []
    gap = metric.fmt_gap(d["gap"]) if d["gap"] == d["gap"] else "n/a"
    if d["diff"] != d["diff"]:
        warnings.append(
            f"the quality of one of the two could not be measured ({model_run.failed_rows} model rows, "
            f"{base_run.failed_rows} baseline rows failed: see step 2)"
        )
    elif Q.worse_beyond_gap(d, PROBLEM_GAPS):
        problems.append(
            f"the baseline is better by more than {PROBLEM_GAPS:g} practical gaps ({gap} each): "
            f"model minus baseline {Q.interval_text(metric, d)}"
        )
    elif Q.worse_beyond_gap(d):
        warnings.append(
            f"the baseline is better by more than the practical gap ({gap}): model minus baseline "
            f"{Q.interval_text(metric, d)}"
        )
    elif Q.worse_beyond_gap(d, 0.0):
        warnings.append(
            f"the baseline is better (the whole interval is below zero, though not by the practical gap "
            f"{gap}): model minus baseline {Q.interval_text(metric, d)}"
        )
    elif not Q.better_beyond_gap(d) and ratio > SLOWER:
        warnings.append(
            f"the model is not better than the baseline by the practical gap ({gap}) and takes "
            f"{ratio:.3g}x its forward time"
        )
    verdict, reasons = verdict_of(problems, warnings)
    budget = (
        f"trained here for {ctx.epochs} epochs over {len(bases)} seeds, mean quality; the interval includes "
        "training variance"
        if trained_here
        else "as given"
    )
    summary = (
        f"The baseline ({how}; {budget}) scores {metric.name} {metric.fmt(d['b'])} against the model's "
        f"{metric.fmt(d['a'])} (model minus baseline {Q.interval_text(metric, d)}) with {p_base:,} "
        f"parameters to the model's {p_model:,}, at {1 / ratio:.2g}x the model's forward time "
        f"({base_work:.3g} {base_unit} against {model_work:.3g} {unit} per forward pass of up to "
        f"{ctx.sizes.chunk} rows)."
    )
    table = {
        "columns": ["", "parameters", metric.name, "forward ms / 1000 inputs", "work per forward pass"],
        "rows": [
            ["model", p_model, d["a"], ms["model"], f"{model_work:.3g} {unit}"],
            ["baseline", p_base, d["b"], ms["baseline"], f"{base_work:.3g} {base_unit}"],
        ],
    }
    data = {
        "baseline": how,
        "trained_by_audit": trained_here,
        "epochs": ctx.epochs if trained_here else None,
        "seeds": len(bases),
        "quality_per_seed": d.get("per_seed"),
        "parameters": {"model": p_model, "baseline": p_base},
        "quality": {"metric": metric.name, **d},
        "forward_ms_per_1000": ms,
        "time_ratio": ratio,
        "work_per_pass": {"model": model_work, "model_unit": unit, "baseline": base_work, "baseline_unit": base_unit},
        "failed_rows": {"model": model_run.failed_rows, "baseline": base_run.failed_rows},
        "table": table,
    }
    return StepResult(1, NAME, verdict, summary, data, [_figure(metric, d, ms)], reasons, time.perf_counter() - start)


def _no_baseline(ctx: AuditContext) -> str | None:
    """Why no automatic baseline is fair for this model, or None."""
    if ctx.task == "density" or any(isinstance(c.module, CNF) for c in ctx.cores if not is_observed(c)):
        return (
            "a density model's fair counterpart is a discrete flow with an exact log-determinant at matched "
            "parameters, which the audit does not build for you (an explicit stack of the field is not a "
            "density: its exp(log p) need not integrate to 1); pass baseline= your own trained flow (a RealNVP, "
            "a residual flow) to compare"
        )
    return None


def _counterpart(ctx: AuditContext, seed: int):
    if any(is_observed(c) for c in ctx.cores):
        return observed_counterpart(ctx.model, [c for c in ctx.cores if is_observed(c)], seed=seed)
    return discrete_counterpart(ctx.model, ctx.x_test, seed=seed)


def _figure(metric, d, ms):
    fig, (ax1, ax2) = new_figure(2, width=3.6)
    names = ["model", "baseline"]
    vals = [d["a"], d["b"]]
    scale = 100 if metric.name == "accuracy" else 1
    ax1.bar(names, [scale * v for v in vals], color=["#4c72b0", "#999999"])
    ax1.set(ylabel=f"test {metric.name}" + (" (%)" if scale == 100 else ""), title="Quality")
    low = min(scale * v for v in vals if v == v) if any(v == v for v in vals) else 0
    if metric.higher_better and low > 0:
        ax1.set_ylim(bottom=0.9 * low)
    ax2.bar(names, [ms["model"], ms["baseline"]], color=["#4c72b0", "#999999"])
    ax2.set(ylabel="forward time (ms per 1000 inputs)", title="Cost")
    return render(
        fig,
        "Model and explicit baseline",
        f"test {metric.name} (left) and forward wall time in milliseconds per 1000 test inputs, "
        "median of three passes (right)",
    )
