"""Step 3: the tolerance sweep (test time), quality and time against the solver's precision.

The trained model is solved on the whole test set at settings from 100x looser to 10x (quick) or
100x (full) tighter than deployed (:data:`nodecourse.audit._context.Sizes.sweep`): ``rtol`` and ``atol`` of an adaptive
solver, the step size of a fixed-step one (larger steps are looser), ``tol`` of a DEQ. Nothing is
retrained. Quality at each setting is compared with the deployed setting's on the same rows
(paired bootstrap).

Verdict: *problem* when the deployed model and its tightest solve differ by more than
:data:`PROBLEM_GAPS` practical gaps (the model's quality is an artefact of its discretisation: it is
not the ODE or fixed point it is said to be); *warning* when they differ by more than one gap, or
when quality already breaks (worse by a gap, or solves fail) at the first looser setting (the
deployed setting sits at a cliff); *ok* otherwise. "Breaks" is always a comparison with the deployed
setting on the same rows: more failed rows than deployed (both counts shown), or quality worse by
more than the practical gap; a model that already fails rows at its deployed setting is not said to
break where a looser one fails no more. Each solve is swept from its own deployed setting.

A model with several solves also gets each solve
alone at the loosest and the tightest setting, the others as deployed (shown, not judged): which
solve its quality rests on.
"""

from __future__ import annotations

import contextlib
import math
import time

from nodecourse.audit import _quality as Q
from nodecourse.audit._context import AuditContext
from nodecourse.audit._discovery import scaled_settings, solver_settings
from nodecourse.audit._evaluate import run, work_unit
from nodecourse.audit._report import StepResult, new_figure, render, verdict_of

NAME = "Tolerance sweep"
PROBLEM_GAPS = 5.0


class NotResolvable(ValueError):
    """A setting the state's dtype cannot resolve (float32 asked for rtol 1e-8): not run."""


@contextlib.contextmanager
def scaled(cores, factor: float):
    """Every core at ``factor`` times its deployed setting (looser for ``factor > 1``); raises
    :class:`NotResolvable` before running anything when a core's dtype cannot hold the setting."""
    with contextlib.ExitStack() as stack:
        for core in cores:
            changes, label = scaled_settings(core, factor)
            if changes is None:
                raise NotResolvable(label)
            stack.enter_context(solver_settings([core], **{core.kind: changes}))
        yield


def _sweep(ctx: AuditContext, factors, primary, deployed, key: str, n_chunks: int):
    """The trained model at each factor of ``factors`` (an iterable, the progress bar): ``(points, runs, skipped)``."""
    metric, y = ctx.metric, ctx.y_test
    points, runs, skipped = [], {}, []
    for f in factors:
        _, label = scaled_settings(primary, f)
        if f == 1.0:
            r = deployed
        else:
            try:
                with scaled(ctx.cores, f):
                    r = run(ctx.model, ctx.cores, ctx.x_test, chunk=ctx.sizes.chunk)
            except NotResolvable as exc:
                skipped.append({"factor": f, "setting": label, "why": f"not measured: {exc}"})
                continue
            except ValueError as exc:  # the library refuses a setting (a float32 tolerance): named, not run
                skipped.append({"factor": f, "setting": label, "why": f"not measured: {str(exc).splitlines()[0]}"})
                continue
        runs[f] = r
        d = Q.difference(metric, (r.outputs, y), (deployed.outputs, y), n_boot=ctx.sizes.n_boot, seed=ctx.seed)
        points.append(
            {
                "factor": f,
                "setting": label,
                "quality": d["a"],
                "vs_deployed": d,
                "work_per_pass": r.work[key] / n_chunks,
                "seconds": r.seconds,
                "failed_rows": r.failed_rows,
                "errors": sorted(set(r.errors)),
            }
        )
    return points, runs, skipped


def run_step(ctx: AuditContext) -> StepResult:
    from tqdm.auto import tqdm

    start = time.perf_counter()
    metric, y = ctx.metric, ctx.y_test
    key, unit = work_unit(ctx.cores)
    primary = ctx.cores[0]
    deployed = ctx.test_run()
    n_chunks = -(-deployed.n_rows // ctx.sizes.chunk)
    factors = sorted(set(ctx.sizes.sweep) | {1.0}, reverse=True)  # loosest first
    # The bar is closed when the sweep ends, even by an exception, before the audit prints the step's line.
    with tqdm(factors, desc="step 3: tolerance sweep", disable=not ctx.progress, leave=False) as bar:
        points, runs, skipped = _sweep(ctx, bar, primary, deployed, key, n_chunks)
    by = {p["factor"]: p for p in points}
    sweep = factors  # as asked, for each solve alone below (a point skipped for all may run for one)
    factors = [f for f in factors if f in by]
    looser = [f for f in factors if f > 1.0]
    looser.sort()  # nearest first

    dep_failed = deployed.failed_rows

    def broken(p):  # worse than the deployed setting on the same rows: more failures, or a gap lost
        return p["failed_rows"] > dep_failed or Q.worse_beyond_gap(p["vs_deployed"])

    def failed_text(p):
        return f"{p['failed_rows']} rows failed against {dep_failed} at the deployed setting"

    breaks_at = next((f for f in looser if broken(by[f])), None)
    holds_to = max([f for f in looser if breaks_at is None or f < breaks_at], default=1.0)
    tight = by[min(factors)]
    has_tight = min(factors) < 1.0
    # deployed minus tightest, both ways: a gap either way means the discretisation is part of the model
    dt = (
        Q.difference(
            metric, (deployed.outputs, y), (runs[min(factors)].outputs, y), n_boot=ctx.sizes.n_boot, seed=ctx.seed
        )
        if has_tight
        else None
    )
    problems, warnings = [], []
    moved = has_tight and (Q.worse_beyond_gap(dt) or Q.better_beyond_gap(dt))
    if has_tight and (Q.worse_beyond_gap(dt, PROBLEM_GAPS) or Q.better_beyond_gap(dt, PROBLEM_GAPS)):
        problems.append(
            f"the deployed model and its {1 / min(factors):g}x tighter solve differ by more than "
            f"{PROBLEM_GAPS:g} practical gaps: {Q.interval_text(metric, dt)} (deployed minus tight)"
        )
    elif moved:
        warnings.append(
            f"the deployed model and its {1 / min(factors):g}x tighter solve differ by more than the "
            f"practical gap {metric.fmt_gap(dt['gap'])}: {Q.interval_text(metric, dt)}"
        )
    if looser and breaks_at == looser[0]:
        p = by[breaks_at]
        why = (
            failed_text(p)
            if p["failed_rows"] > dep_failed
            else f"{metric.name} {metric.fmt(p['quality'])} against {metric.fmt(deployed_quality(points))}"
        )
        warnings.append(f"quality breaks at the first looser setting ({p['setting']}, {breaks_at:g}x deployed): {why}")
    verdict, reasons = verdict_of(problems, warnings)
    kind = "step size" if primary.fixed_step else ("tol" if primary.kind == "deq" else "tolerance")
    dep = by[1.0]
    if breaks_at is None:
        where = f"quality holds up to {max(looser):g}x the deployed {kind}" if looser else "no looser setting tried"
    else:
        p = by[breaks_at]
        held = (
            f"quality holds up to {holds_to:g}x the deployed {kind} and breaks"
            if holds_to > 1
            else "quality breaks at the first looser setting,"
        )
        where = (
            f"{held} at {breaks_at:g}x ({p['setting']}: "
            + (failed_text(p) if p["failed_rows"] > dep_failed else f"{metric.name} {metric.fmt(p['quality'])}")
            + ")"
        )
    # several solves: each alone at the ends of the sweep, shown (the verdict reads the sweep of all together)
    per_solve = _per_solve(ctx, deployed, sweep, key, n_chunks) if len(ctx.cores) > 1 else []
    tight_fail = [p for p in points if p["factor"] < 1 and p["failed_rows"] > dep_failed]
    note = (
        f"; at {', '.join(p['setting'] for p in tight_fail)} {sum(p['failed_rows'] for p in tight_fail)} rows "
        "did not reach the tighter setting"
        if tight_fail
        else ""
    )
    if skipped:
        note += "; " + "; ".join(f"{p['factor']:g}x ({p['why']})" for p in skipped)
    if per_solve:
        note += "; each solve alone: " + "; ".join(
            f"{e['solve']} at {e['setting']}: "
            + (e["why"] if "why" in e else f"{metric.fmt(e['quality'])} at {e['work_per_pass']:.3g} {unit}")
            for e in per_solve
        )
    tighter = (
        f"{1 / min(factors):g}x tighter ({tight['setting']}): {metric.fmt(tight['quality'])} at "
        f"{tight['work_per_pass']:.3g} {unit} (deployed minus tight {Q.interval_text(metric, dt)})"
        if has_tight
        else "no tighter setting measured"
    )
    dep_fail = f", {dep_failed} of {deployed.n_rows} rows failed" if dep_failed else ""
    each = f" (each of {len(ctx.cores)} solves from its own deployed setting)" if len(ctx.cores) > 1 else ""
    summary = (
        f"Deployed ({dep['setting']}{each}): {metric.name} {metric.fmt(dep['quality'])} at "
        f"{dep['work_per_pass']:.3g} {unit} per forward pass{dep_fail}; {where}; {tighter}{note}."
    )
    table = {
        "columns": ["setting", "x deployed", metric.name, f"{unit} per pass", "seconds", "failed rows"],
        "rows": [
            [p["setting"], p["factor"], p["quality"], p["work_per_pass"], p["seconds"], p["failed_rows"]]
            for p in points
        ],
    }
    data = {
        "kind": kind,
        "points": points,
        "not_measured": skipped,
        "per_solve": per_solve,
        "breaks_at": breaks_at,
        "holds_to": holds_to,
        "deployed_vs_tightest": dt,
        "table": table,
    }
    return StepResult(
        3, NAME, verdict, summary, data, [_figure(points, metric, unit, kind)], reasons, time.perf_counter() - start
    )


def _per_solve(ctx, deployed, factors, key, n_chunks) -> list[dict]:
    """With several solves, each one alone at the loosest and the tightest setting, the others as
    deployed: which solve the quality rests on."""
    out = []
    y = ctx.y_test
    for core in ctx.cores:
        for f in (max(factors), min(factors)):
            if f == 1.0:
                continue
            changes, label = scaled_settings(core, f)
            entry = {"solve": core.path or core.label, "factor": f, "setting": label}
            if changes is None:
                entry["why"] = f"not measured ({label})"
                out.append(entry)
                continue
            with solver_settings([core], **{core.kind: changes}):
                r = run(ctx.model, ctx.cores, ctx.x_test, chunk=ctx.sizes.chunk)
            d = Q.difference(ctx.metric, (r.outputs, y), (deployed.outputs, y), n_boot=ctx.sizes.n_boot, seed=ctx.seed)
            entry.update(quality=d["a"], vs_deployed=d, work_per_pass=r.work[key] / n_chunks, failed_rows=r.failed_rows)
            out.append(entry)
    return out


def deployed_quality(points) -> float:
    return next(p["quality"] for p in points if p["factor"] == 1.0)


def _figure(points, metric, unit, kind):
    fig, (ax1, ax2) = new_figure(2, width=3.8)
    xs = [p["factor"] for p in points]
    scale = 100 if metric.name == "accuracy" else 1
    ax1.plot(xs, [scale * p["quality"] if math.isfinite(p["quality"]) else math.nan for p in points], marker="o")
    ax1.axvline(1.0, color="grey", ls=":")
    ax1.set(
        xscale="log",
        xlabel=f"test-time {kind} / deployed (right: looser)",
        ylabel=f"test {metric.name}" + (" (%)" if scale == 100 else ""),
        title="Quality against precision",
    )
    ax2.plot(xs, [p["work_per_pass"] for p in points], marker="o", label=unit)
    ax2.set(
        xscale="log",
        yscale="log",
        xlabel=f"test-time {kind} / deployed",
        ylabel=f"{unit} per forward pass",
        title="Work against precision",
    )
    ax3 = ax2.twinx()
    ax3.plot(xs, [1000 * p["seconds"] for p in points], marker="s", color="#dd8452")
    ax3.set_ylabel("forward time, test set (ms)", color="#dd8452")
    ax2.axvline(1.0, color="grey", ls=":")
    return render(
        fig,
        "Tolerance sweep",
        f"the trained model on the test set at test-time settings relative to the deployed one (dotted "
        f"line): {metric.name} (left); {unit} per forward pass (blue) and forward time in ms (orange, right)",
    )
