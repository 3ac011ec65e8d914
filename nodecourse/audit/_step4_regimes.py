"""Step 4: difficult regimes, with quality and solver work in each.

- **a longer horizon**, where the model's horizon is a setting (``t1`` of an ODE block or a CNF; an
  observed solve's grid, stretched about its first time; ``Sizes.horizon_factor`` times as long):
  does the field stay solvable past where it was trained? A ``z(t0) -> z(t1)`` model is scored there.
  For a **trajectory** (output on a grid of more than two times) the longer horizon is defined as the
  grid stretched ``horizon_factor`` times: the work per pass and the largest ``|state|`` are measured
  against the trained grid's, and quality is *not measured* (the targets exist on the trained grid only).
  A CDE solve's (``torchcde.cdeint``, :func:`nodecourse.cde.cdeint`) horizon is its control path's:
  the sentence says whether the stretched grid runs past the interpolation's last knot (past it the
  path is extrapolated, not observed), or that this is not known where the path's interval cannot
  be read (:mod:`nodecourse.audit._control`).
- **stiffness along trajectories**, per solve: the eigenvalues ``λ`` of ``∂f/∂z`` at states the
  solver visited on test inputs. Stiffness is about *contracting* modes: ``-min Re λ × horizon``
  (what the verdict reads) bounds the steps an explicit solver needs for stability alone.
  Oscillatory modes (``max |Im λ| × horizon``, in turns) and growing modes (``max Re λ × horizon``)
  are reported on their own lines: they cost accuracy, not stability, and no implicit method helps.
  For a DEQ, the spectral radius of ``∂f/∂z`` at each fixed point (below 1: the map contracts there).
- **input noise** at a few levels (Gaussian, in units of each feature's spread in the training set).
  Judged against the task's own sensitivity: for a regression, the targets themselves change when
  the inputs move (an initial condition's trajectory does), so an exact model loses quality under
  noise too. That change is estimated from the data (:func:`target_sensitivity`: the squared change
  of the targets between each test row and its nearest training row, per squared distance in the
  noise's units, the median over rows) and the noise's cost is the model's only when the whole
  interval of its loss growth lies above :data:`TARGET_MARGIN` x what that change would add
  (``per_unit x sigma^2 x features``). Classification and density keep the practical gap alone.
- **distribution shift**: the ``shift`` set, when given (e.g. patients of another ICU type).

Verdict: *problem* when more than 1 % of the rows fail to solve under the smallest noise or under
the shift *beyond those that fail on the clean test set* (inputs the model will meet; the counts of
both are shown); *warning* for a shift or smallest-noise drop beyond the
practical gap, work growing by more than :data:`WORK_GROWTH` there, ``-min Re λ × horizon`` above
:data:`STIFF_INDEX`, a DEQ whose spectral radius reaches 1, or failures past the horizon; *ok* otherwise.

Why this module is long: each step of the audit is one module (``_step1_baseline`` to ``_step5_gradients``),
and this step measures four regimes in one pass over the model (:func:`_measure`) for one verdict, with its
two figures.
"""

from __future__ import annotations

import math
import statistics
import time

import torch

from nodecourse.audit import _inputs as I
from nodecourse.audit import _quality as Q
from nodecourse.audit._context import AuditContext
from nodecourse.audit._control import cde_library, past_the_data
from nodecourse.audit._discovery import horizon_scaled
from nodecourse.audit._evaluate import per_input, run, work_unit
from nodecourse.audit._hook import active
from nodecourse.audit._observed import is_observed
from nodecourse.audit._report import StepResult, new_figure, render, verdict_of

NAME = "Difficult regimes"
PROBLEM_FRACTION = 0.01
TARGET_MARGIN = 2.0  # a regression's noise cost is the model's only beyond twice its targets' own change
WORK_GROWTH = 1.5  # half as much work again for the same inputs, noisy or shifted
STIFF_INDEX = 100.0  # -min Re λ T: dopri5's stability interval reaches about 3.3, so > 30 steps for stability alone
MAX_JACOBIAN_DIM = 512  # larger states: the Jacobian is not formed


def _record_states(ctx: AuditContext, core, rows) -> list[tuple]:
    """``(func, t, z)`` of the core's field evaluations on ``rows`` (ODE), ``(func, x, z*)`` of a DEQ
    (the library's: ``func`` is ``f(z, x)``; torchdeq's: ``f(z)``, ``x`` None)."""
    rows_x = I.take(ctx.x_test, torch.tensor(rows))
    if is_observed(core):
        hook = active()
        with hook.recording() as seen, torch.no_grad():
            I.call(ctx.model, rows_x)
        return [(f, t, z) for key, f, t, z in seen if key == core.key]
    seen = []
    if core.kind == "deq":

        def hook_fn(module, args, output):
            seen.append((core.field, args[0].detach(), output.detach()))

        handle = core.module.register_forward_hook(hook_fn)
    else:

        def hook_fn(module, args):
            if len(args) >= 2 and isinstance(args[1], torch.Tensor):
                seen.append((core.field, args[0], args[1].detach()))

        handle = core.field.register_forward_pre_hook(hook_fn)
    try:
        with torch.no_grad():
            I.call(ctx.model, rows_x)
    finally:
        handle.remove()
    return seen


def _jacobians(field, t, z: torch.Tensor) -> torch.Tensor:
    """``∂f/∂z`` per row of ``z`` ``(m, d)``: ``(m, d, d)``, one vector-Jacobian product per dimension
    (``t`` None: a DEQ's ``f(z)``)."""
    with torch.enable_grad():
        z = z.detach().clone().requires_grad_(True)
        f = field(z) if t is None else field(t, z)
        rows = [torch.autograd.grad(f[:, i].sum(), z, retain_graph=True)[0] for i in range(z.shape[1])]
    return torch.stack(rows, dim=1).detach()


def stiffness(ctx: AuditContext, core=None) -> dict:
    """Eigenvalues of the field's Jacobian along test trajectories (ODE), spectral radius at the
    fixed points (DEQ); see the module docstring. ``core``: default the first."""
    core = core or ctx.cores[0]
    rows = ctx.sample_rows(ctx.sizes.stiffness_inputs, offset=4)
    if is_observed(core) and len(core.call.state) > 1:
        return {
            "measured": False,
            "why": f"a tuple state {core.call.state} (the Jacobian is formed for one tensor state (batch, d))",
            "solve": core.path,
        }
    seen = _record_states(ctx, core, rows)
    if not seen:
        return {
            "measured": False,
            "why": "the field was not called with a tensor state on the sampled rows",
            "solve": core.path,
        }
    if core.kind == "deq":
        return _contraction(core, seen)
    states = [(f, t, z) for f, t, z in seen if z.dim() == 2]
    if not states:
        return {
            "measured": False,
            "why": f"the state is not flat (batch, d): {tuple(seen[0][2].shape)}",
            "solve": core.path,
        }
    d = states[0][2].shape[1]
    if d > MAX_JACOBIAN_DIM:
        return {
            "measured": False,
            "why": f"state of {d} dimensions (the Jacobian is formed up to {MAX_JACOBIAN_DIM})",
            "solve": core.path,
        }
    # an even spread over the recorded calls (every stage of every step), then rows within them
    pick = [
        states[i]
        for i in sorted(
            {
                round(k * (len(states) - 1) / max(1, ctx.sizes.stiffness_states - 1))
                for k in range(ctx.sizes.stiffness_states)
            }
        )
    ]
    per_call = max(1, ctx.sizes.stiffness_states // len(pick))
    eig = []
    for f, t, z in pick:
        J = _jacobians(f, t, z[:per_call])
        eig.append(torch.linalg.eigvals(J.double()).reshape(-1))
    lam = torch.cat(eig)
    re, im = lam.real, lam.imag
    horizon = core.horizon or 1.0
    contracting = float((-re).clamp_min(0).max())  # -min Re λ where negative
    return {
        "measured": True,
        "kind": "ode",
        "solve": core.path,
        "n_states": len(eig) * per_call,
        "dim": d,
        "horizon": horizon,
        "max_real": float(re.max()),
        "min_real": float(re.min()),
        "max_imag": float(im.abs().max()),
        "stiffness_index": contracting * horizon,
        "oscillation_index": float(im.abs().max()) * horizon,
        "growth_index": max(0.0, float(re.max())) * horizon,
        "eigenvalues": {"real": re.tolist(), "imag": im.tolist()},
    }


def _contraction(core, seen) -> dict:
    from nodecourse.deq import spectral_radius

    f, x, z = seen[-1]
    d = z[0].numel()
    with torch.enable_grad():
        zz = z.clone().requires_grad_(True)
        f_out = f(zz) if x is None else f(zz, x)
        rho = spectral_radius(f_out, zz, n_iter=min(d, 60), generator=torch.Generator(z.device).manual_seed(0))
    rho = [float(v) for v in rho.cpu()]
    return {
        "measured": True,
        "kind": "deq",
        "solve": core.path,
        "spectral_radius": rho,
        "max_rho": max(rho),
        "median_rho": statistics.median(rho),
        "n_states": len(rho),
    }


def target_sensitivity(ctx: AuditContext, scale: torch.Tensor) -> dict | None:
    """How much a regression task's targets change when its inputs move (module docstring): the
    median over test rows of ``mean((y_i - y_j)^2) / |(x_i - x_j) / scale|^2`` with ``j`` the nearest
    training row, in the units the noise is drawn in. ``None`` for other tasks (their targets are
    labels or absent) or inputs without a floating part."""
    if ctx.task != "regression":
        return None
    floating = [k for k, p in enumerate(I.parts(ctx.train[0])) if p.is_floating_point()]
    if not floating:
        return None
    k = floating[0]
    xs = (I.parts(ctx.train[0])[k] / scale).reshape(I.n_rows(ctx.train[0]), -1).double()
    xt = (I.parts(ctx.x_test)[k] / scale).reshape(I.n_rows(ctx.x_test), -1).double()
    ys = ctx.train[1].reshape(xs.shape[0], -1).double()
    yt = ctx.y_test.reshape(xt.shape[0], -1).double()
    dist = torch.cdist(xt, xs).pow(2)
    j = dist.argmin(dim=1)
    d2 = dist[torch.arange(len(j)), j]
    keep = d2 > 0
    if not bool(keep.any()):
        return None
    ratio = (yt - ys[j]).pow(2).mean(dim=1)[keep] / d2[keep]
    # the median of an even count is the mean of the middle two (torch.median would take the lower)
    return {"per_unit": float(ratio.quantile(0.5)), "features": int(xs.shape[1]), "rows": int(keep.sum())}


def _shift_work(ctx, x, n) -> float:
    k = min(n, ctx.sizes.shift_inputs)
    rows = sorted(torch.randperm(n, generator=ctx.generator(6))[:k].tolist())
    key, _ = work_unit(ctx.cores)
    return statistics.fmean(float(e[key]) for e in per_input(ctx.model, ctx.cores, x, rows))


def run_step(ctx: AuditContext) -> StepResult:
    from tqdm.auto import tqdm

    jobs = len(ctx.sizes.noise_levels) + 2 + bool(ctx.shift)  # noise levels, horizon, stiffness, shift
    # The bar is closed when the step ends, even by an exception, before the audit prints the step's line.
    with tqdm(total=jobs, desc="step 4: regimes", disable=not ctx.progress, leave=False) as bar:
        return _measure(ctx, bar)


def _measure(ctx: AuditContext, bar) -> StepResult:
    start = time.perf_counter()
    metric, y = ctx.metric, ctx.y_test
    key, unit = work_unit(ctx.cores)
    clean = ctx.test_run()
    n_chunks = -(-clean.n_rows // ctx.sizes.chunk)
    clean_work = clean.work[key] / n_chunks
    regimes = [
        {
            "regime": "test set",
            "quality": Q.score(metric, clean.outputs, y),
            "work_per_pass": clean_work,
            "failed_rows": clean.failed_rows,
        }
    ]
    problems, warnings = [], []
    scale = I.feature_scale(ctx.train[0])
    sensitivity = target_sensitivity(ctx, scale)
    noise = []
    for k, sigma in enumerate(ctx.sizes.noise_levels):
        x_noisy = I.add_noise(ctx.x_test, sigma, scale, ctx.generator(100 + k))
        r = run(ctx.model, ctx.cores, x_noisy, chunk=ctx.sizes.chunk)
        d = Q.difference(metric, (r.outputs, y), (clean.outputs, y), n_boot=ctx.sizes.n_boot, seed=ctx.seed)
        row = {
            "regime": f"noise {sigma:g}",
            "sigma": sigma,
            "quality": d["a"],
            "vs_test": d,
            "work_per_pass": r.work[key] / n_chunks,
            "failed_rows": r.failed_rows,
        }
        if sensitivity is not None:  # the MSE the targets' own change under this noise would add
            row["target_growth"] = sensitivity["per_unit"] * sigma**2 * sensitivity["features"]
        noise.append(row)
        regimes.append(row)
        bar.update()
    if noise:
        first = noise[0]
        if first["failed_rows"] - clean.failed_rows > PROBLEM_FRACTION * clean.n_rows:
            problems.append(
                f"{first['failed_rows']} of {clean.n_rows} rows fail to solve with input noise {first['sigma']:g}, "
                f"against {clean.failed_rows} on the clean test set"
            )
        expected = first.get("target_growth")
        if Q.worse_beyond_gap(first["vs_test"]) and (
            expected is None or -first["vs_test"]["high"] > TARGET_MARGIN * expected
        ):
            beside = (
                ""
                if expected is None
                else f", more than {TARGET_MARGIN:g}x the {expected:.3g} its targets' own change would cost"
            )
            warnings.append(
                f"input noise {first['sigma']:g} costs more than the practical gap{beside}: "
                f"{Q.interval_text(metric, first['vs_test'])}"
            )
        if clean_work > 0 and first["work_per_pass"] > WORK_GROWTH * clean_work:
            warnings.append(
                f"input noise {first['sigma']:g} raises the work from {clean_work:.3g} to "
                f"{first['work_per_pass']:.3g} {unit} per pass"
            )

    horizon = _longer_horizon(ctx, clean, y, key, unit, n_chunks, regimes, warnings)
    bar.update()

    stiffs = [stiffness(ctx, c) for c in ctx.cores]
    stiff = stiffs[0]
    bar.update()
    for st in stiffs:
        if st.get("measured") and st["kind"] == "ode" and st["stiffness_index"] > STIFF_INDEX:
            warnings.append(
                f"stiff along its trajectories ({st['solve'] or 'the model'}): contracting modes with "
                f"-min Re λ x horizon = {st['stiffness_index']:.3g} > {STIFF_INDEX:g} (an explicit "
                "solver's steps are set by stability there; an implicit method may take fewer)"
            )
    for st in stiffs:
        if st.get("measured") and st["kind"] == "deq" and st["max_rho"] >= 1.0:
            n_over = sum(r >= 1 for r in st["spectral_radius"])
            warnings.append(
                f"the spectral radius of ∂f/∂z reaches {st['max_rho']:.3g} at {n_over} of "
                f"{st['n_states']} fixed points: not a contraction there (the fixed point need not be "
                "unique)"
            )

    shift = None
    if ctx.shift:
        xs, ys = ctx.shift
        r = run(ctx.model, ctx.cores, xs, chunk=ctx.sizes.chunk)
        d = Q.difference(metric, (r.outputs, ys), (clean.outputs, y), n_boot=ctx.sizes.n_boot, seed=ctx.seed)
        w_test, w_shift = _shift_work(ctx, ctx.x_test, clean.n_rows), _shift_work(ctx, xs, r.n_rows)
        shift = {
            "regime": "shift",
            "quality": d["a"],
            "vs_test": d,
            "failed_rows": r.failed_rows,
            "n_rows": r.n_rows,
            "work_per_input": {"test": w_test, "shift": w_shift},
            "work_per_pass": w_shift,
        }
        regimes.append(shift)
        clean_share = clean.failed_rows / max(1, clean.n_rows)
        if r.failed_rows / max(1, r.n_rows) - clean_share > PROBLEM_FRACTION:
            problems.append(
                f"{r.failed_rows} of {r.n_rows} shifted rows fail to solve, against {clean.failed_rows} of "
                f"{clean.n_rows} test rows"
            )
        if Q.worse_beyond_gap(d):
            warnings.append(
                f"under the shift {metric.name} drops from {metric.fmt(d['b'])} to {metric.fmt(d['a'])}: "
                f"{Q.interval_text(metric, d)}"
            )
        if w_test > 0 and w_shift > WORK_GROWTH * w_test:
            warnings.append(
                f"the shifted inputs need {w_shift / w_test:.2g}x the work per input ({w_shift:.3g} "
                f"against {w_test:.3g} {unit})"
            )
        bar.update()
    verdict, reasons = verdict_of(problems, warnings)
    summary = _summary(metric, unit, regimes, noise, horizon, stiffs, shift)
    table = {
        "columns": ["regime", metric.name, f"{unit} per pass", "failed rows"],
        "rows": [[g["regime"], g["quality"], g["work_per_pass"], g["failed_rows"]] for g in regimes],
    }
    if shift:
        work = shift["work_per_input"]
        table["rows"][-1][2] = f"{work['shift']:.3g} per input (test {work['test']:.3g})"
    data = {
        "regimes": regimes,
        "horizon": horizon,
        "stiffness": stiff,
        "stiffness_per_solve": stiffs,
        "noise": noise,
        "target_sensitivity": sensitivity,
        "shift": shift,
        "table": table,
    }
    figs = [_regime_figure(metric, unit, regimes)]
    if stiff.get("measured"):
        figs.append(_stiffness_figure(stiff))
    return StepResult(4, NAME, verdict, summary, data, figs, reasons, time.perf_counter() - start)


def _summary(metric, unit, regimes, noise, horizon, stiffs, shift) -> str:
    parts = []
    if noise:
        parts.append(
            "input noise "
            + ", ".join(
                f"{n['sigma']:g}: {metric.fmt(n['quality'])}"
                + (f" (its targets' own change adds about {n['target_growth']:.3g})" if "target_growth" in n else "")
                + (f" ({n['failed_rows']} rows failed)" if n["failed_rows"] or regimes[0]["failed_rows"] else "")
                for n in noise
            )
            + f" (clean {metric.fmt(regimes[0]['quality'])}"
            + (f", {regimes[0]['failed_rows']} rows failed)" if regimes[0]["failed_rows"] else ")")
        )
    if horizon.get("measured") and horizon.get("quality_measured", True):
        parts.append(
            f"{horizon['regime']}: {metric.fmt(horizon['quality'])} at {horizon['work_per_pass']:.3g} {unit} "
            f"per pass ({horizon['failed_rows']} rows failed"
            + (f"; {horizon['extrapolated']}" if horizon.get("extrapolated") else "")
            + ")"
        )
    elif horizon.get("measured"):
        parts.append(
            f"{horizon['regime']} ({horizon['definition']}): {horizon['work_per_pass']:.3g} {unit} per pass "
            f"against {horizon['clean_work_per_pass']:.3g}, "
            f"largest |state| at the end {_g(horizon['state_max'])} "
            f"against {_g(horizon['clean_state_max'])}, {horizon['failed_rows']} rows failed; quality "
            f"not measured ({horizon['why_no_quality']})"
            + (f"; {horizon['extrapolated']}" if horizon.get("extrapolated") else "")
        )
    else:
        parts.append(f"no longer horizon ({horizon['why']})")
    for st in stiffs:
        where = f" ({st['solve']})" if len(stiffs) > 1 and st.get("solve") else ""
        if st.get("measured") and st["kind"] == "ode":
            parts.append(
                f"eigenvalues of ∂f/∂z along trajectories{where}: real parts {st['min_real']:.3g} to "
                f"{st['max_real']:.3g}, stiffness (contracting modes, -min Re λ x horizon) "
                f"{st['stiffness_index']:.3g}"
            )
            parts.append(
                f"oscillatory modes{where}: max |Im λ| x horizon {st['oscillation_index']:.3g} "
                f"({st['oscillation_index'] / (2 * math.pi):.2g} turns; accuracy, not stiffness); growing "
                f"modes: max Re λ x horizon {st['growth_index']:.3g}"
            )
        elif st.get("measured"):
            parts.append(
                f"spectral radius of ∂f/∂z at the fixed points{where} median {st['median_rho']:.3g}, max "
                f"{st['max_rho']:.3g}"
            )
        else:
            parts.append(f"stiffness not measured{where} ({st['why']})")
    if shift:
        parts.append(
            f"shifted set ({shift['n_rows']} rows): {metric.name} {metric.fmt(shift['quality'])} against the "
            f"test set's {metric.fmt(shift['vs_test']['b'])}, shifted minus test "
            f"{Q.interval_text(metric, shift['vs_test'])}, {shift['work_per_input']['shift']:.3g} {unit} per "
            f"input against {shift['work_per_input']['test']:.3g}"
        )
    return "; ".join(parts) + "."


def _g(v) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def _longer_horizon(ctx, clean, y, key, unit, n_chunks, regimes, warnings) -> dict:
    """The regime past the horizon. A ``z(t0) -> z(t1)`` model is solved ``horizon_factor`` times as
    long and scored. A trajectory (output on a grid of more than two times) is solved over a grid
    stretched ``horizon_factor`` times about its first time: its work and the largest ``|state|``
    are measured, its quality is not (the targets exist on the trained grid only)."""
    factor = ctx.sizes.horizon_factor
    with horizon_scaled(ctx.cores, factor) as changed:
        if not changed:
            why = (
                "a DEQ has no horizon"
                if ctx.cores[0].kind == "deq"
                else "the horizon is set by the data's observation times"
            )
            return {"measured": False, "why": why}
        r = run(ctx.model, ctx.cores, ctx.x_test, chunk=ctx.sizes.chunk)
    trajectory = any(getattr(c, "trajectory", False) for c in changed)
    out = {
        "regime": f"horizon x{factor:g}",
        "measured": True,
        "work_per_pass": r.work[key] / n_chunks,
        "failed_rows": r.failed_rows,
        "errors": sorted(set(r.errors)),
        "solves": [c.path for c in changed],
    }
    paths = [past_the_data(c.call, factor) for c in changed if is_observed(c) and cde_library(c.call.func)]
    if paths:  # a CDE's horizon is its control path's: past the last knot the path is extrapolated
        out["control_paths"] = paths
        out["extrapolated"] = "; ".join(p["sentence"] for p in paths)
    if trajectory:
        sites = [c.path for c in changed if getattr(c, "trajectory", False)]
        out.update(
            quality_measured=False,
            quality=math.nan,
            definition=f"the output grid stretched {factor:g}x about its first time",
            why_no_quality="a trajectory's targets exist on the trained grid only",
            clean_work_per_pass=clean.work[key] / n_chunks,
            state_max=max((r.by_solve.get(s, {}).get("state_max") or 0.0) for s in sites),
            clean_state_max=max((clean.by_solve.get(s, {}).get("state_max") or 0.0) for s in sites),
        )
    else:
        out["quality"] = Q.score(ctx.metric, r.outputs, y)
    regimes.append(out)
    if r.failed_rows > clean.failed_rows:
        warnings.append(
            f"at {factor:g}x the horizon {r.failed_rows} rows fail to solve ({', '.join(out['errors'])}), against "
            f"{clean.failed_rows} at the trained horizon"
        )
    return out


def _regime_figure(metric, unit, regimes):
    fig, (ax1, ax2) = new_figure(2, width=3.8)
    names = [g["regime"] for g in regimes]
    scale = 100 if metric.name == "accuracy" else 1
    vals = [scale * g["quality"] if math.isfinite(g["quality"]) else math.nan for g in regimes]  # no bar: not measured
    ax1.bar(names, vals, color="#4c72b0")
    ax1.set(ylabel=f"{metric.name}" + (" (%)" if scale == 100 else ""), title="Quality by regime")
    ax2.bar(names, [g["work_per_pass"] for g in regimes], color="#dd8452")
    ax2.set(ylabel=f"{unit} (per pass; shift: per input)", title="Work by regime")
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    return render(
        fig,
        "Difficult regimes",
        f"{metric.name} (left) and solver work (right) on the clean test set, with input noise (in units "
        "of each feature's spread), past the horizon and on the shifted set",
    )


def _stiffness_figure(stiff):
    fig, (ax,) = new_figure(1, width=4.6)
    if stiff["kind"] == "ode":
        ax.scatter(stiff["eigenvalues"]["real"], stiff["eigenvalues"]["imag"], s=6, alpha=0.5)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set(xlabel="Re λ (1 / unit time)", ylabel="Im λ (1 / unit time)", title="Eigenvalues of ∂f/∂z")
        caption = (
            f"eigenvalues of the field's Jacobian at {stiff['n_states']} states visited on test inputs "
            f"(horizon {stiff['horizon']:g})"
        )
    else:
        ax.hist(stiff["spectral_radius"], bins=20, color="#4c72b0")
        ax.axvline(1.0, color="#cf222e", ls="--")
        ax.set(xlabel="spectral radius of ∂f/∂z at z*", ylabel="inputs", title="Contraction at the fixed points")
        caption = (
            f"spectral radius at {stiff['n_states']} test inputs' fixed points; "
            "right of the dashed line: no contraction"
        )
    return render(fig, "Stiffness" if stiff["kind"] == "ode" else "Contraction", caption)
