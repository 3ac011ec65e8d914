"""Step 4: difficult regimes, with quality and solver work in each.

- **a longer horizon**, where the model's horizon is a setting (``t1`` of an ODE block or a CNF;
  ``Sizes.horizon_factor`` times as long): does the field stay solvable past where it was trained?
- **stiffness along trajectories**: the eigenvalues of ``∂f/∂z`` at states the solver visited on
  test inputs; ``max |λ| × horizon`` (what the verdict reads), which
  bounds the steps an explicit solver needs for stability alone. For a DEQ, the spectral radius of
  ``∂f/∂z`` at each fixed point (below 1: the map contracts there).
- **input noise** at a few levels (Gaussian, in units of each feature's spread in the training set).
- **distribution shift**: the ``shift`` set, when given (e.g. patients of another ICU type).

Verdict: *problem* when more than 1 % of the rows fail to solve under the smallest noise or under
the shift (inputs the model will meet); *warning* for a shift or smallest-noise drop beyond the
practical gap, work growing by more than :data:`WORK_GROWTH` there, ``max |λ| × horizon`` above
:data:`STIFF_INDEX`, a DEQ whose spectral radius reaches 1, or failures past the horizon; *ok* otherwise.
"""
from __future__ import annotations

import math
import statistics
import time

import torch

from nodecourse.audit import inputs as I
from nodecourse.audit import quality as Q
from nodecourse.audit.context import AuditContext
from nodecourse.audit.discovery import horizon_scaled
from nodecourse.audit.evaluate import per_input, run, work_unit
from nodecourse.audit.report import StepResult, new_figure, render, verdict_of

NAME = "Difficult regimes"
PROBLEM_FRACTION = 0.01
WORK_GROWTH = 1.5  # half as much work again for the same inputs, noisy or shifted
STIFF_INDEX = 100.0  # max |λ| T: dopri5's stability interval reaches about 3.3, so > 30 steps for stability alone
MAX_JACOBIAN_DIM = 512  # larger states: the Jacobian is not formed


def _record_states(ctx: AuditContext, core, rows) -> list[tuple]:
    """The (t, z) the core's field was called with on ``rows`` (ODE) or (x, z*) of the DEQ."""
    seen = []
    if core.kind == "deq":
        def hook(module, args, output):
            seen.append((args[0].detach(), output.detach()))
        handle = core.module.register_forward_hook(hook)
    else:
        def hook(module, args):
            if len(args) >= 2 and isinstance(args[1], torch.Tensor):
                seen.append((args[0], args[1].detach()))
        handle = core.field.register_forward_pre_hook(hook)
    try:
        with torch.no_grad():
            I.call(ctx.model, I.take(ctx.x_test, torch.tensor(rows)))
    finally:
        handle.remove()
    return seen


def _jacobians(field, t, z: torch.Tensor) -> torch.Tensor:
    """``∂f/∂z`` per row of ``z`` ``(m, d)``: ``(m, d, d)``, one vector-Jacobian product per dimension."""
    with torch.enable_grad():
        z = z.detach().clone().requires_grad_(True)
        f = field(t, z)
        rows = [torch.autograd.grad(f[:, i].sum(), z, retain_graph=True)[0] for i in range(z.shape[1])]
    return torch.stack(rows, dim=1).detach()


def stiffness(ctx: AuditContext) -> dict:
    """Eigenvalues of the field's Jacobian along test trajectories (ODE), spectral radius at the
    fixed points (DEQ); see the module docstring."""
    core = ctx.cores[0]
    rows = ctx.sample_rows(ctx.sizes.stiffness_inputs, offset=4)
    seen = _record_states(ctx, core, rows)
    if not seen:
        return {"measured": False, "why": "the core was not called"}
    if core.kind == "deq":
        from nodecourse.deq import spectral_radius

        x, z = seen[-1]
        d = z[0].numel()
        with torch.enable_grad():
            zz = z.clone().requires_grad_(True)
            f_out = core.field(zz, x)
            rho = spectral_radius(f_out, zz, n_iter=min(d, 60), generator=torch.Generator(z.device).manual_seed(0))
        rho = [float(v) for v in rho.cpu()]
        return {"measured": True, "kind": "deq", "spectral_radius": rho, "max_rho": max(rho),
                "median_rho": statistics.median(rho), "n_states": len(rho)}
    states = [(t, z) for t, z in seen if z.dim() == 2]
    if not states:
        return {"measured": False, "why": "the state is not flat (batch, d)"}
    d = states[0][1].shape[1]
    if d > MAX_JACOBIAN_DIM:
        return {"measured": False, "why": f"state of {d} dimensions (the Jacobian is formed up to {MAX_JACOBIAN_DIM})"}
    # an even spread over the recorded calls (every stage of every step), then rows within them
    pick = [states[i] for i in sorted({round(k * (len(states) - 1) / max(1, ctx.sizes.stiffness_states - 1))
                                       for k in range(ctx.sizes.stiffness_states)})]
    per_call = max(1, ctx.sizes.stiffness_states // len(pick))
    eig = []
    for t, z in pick:
        J = _jacobians(core.field, t, z[:per_call])
        eig.append(torch.linalg.eigvals(J.double()).reshape(-1))
    lam = torch.cat(eig)
    re, im = lam.real, lam.imag
    decay = (-re[re < 0])
    horizon = core.horizon or 1.0
    out = {"measured": True, "kind": "ode", "n_states": len(eig) * per_call, "dim": d, "horizon": horizon,
           "max_real": float(re.max()), "min_real": float(re.min()), "max_abs": float(lam.abs().max()),
           "stiffness_ratio": float(decay.max() / decay.min()) if len(decay) and float(decay.min()) > 0 else None,
           "stiffness_index": float(lam.abs().max()) * horizon,
           "eigenvalues": {"real": re.tolist(), "imag": im.tolist()}}
    return out


def _shift_work(ctx, x, n) -> float:
    k = min(n, ctx.sizes.shift_inputs)
    rows = sorted(torch.randperm(n, generator=ctx.generator(6))[:k].tolist())
    key, _ = work_unit(ctx.cores)
    return statistics.fmean(float(e[key]) for e in per_input(ctx.model, ctx.cores, x, rows))


def run_step(ctx: AuditContext) -> StepResult:
    from tqdm.auto import tqdm

    start = time.perf_counter()
    metric, y = ctx.metric, ctx.y_test
    key, unit = work_unit(ctx.cores)
    clean = ctx.test_run()
    n_chunks = -(-clean.n_rows // ctx.sizes.chunk)
    clean_work = clean.work[key] / n_chunks
    regimes = [{"regime": "test set", "quality": Q.score(metric, clean.outputs, y), "work_per_pass": clean_work,
                "failed_rows": clean.failed_rows}]
    problems, warnings = [], []
    jobs = ["noise"] * len(ctx.sizes.noise_levels) + ["horizon", "stiffness"] + (["shift"] if ctx.shift else [])
    bar = tqdm(total=len(jobs), desc="step 4: regimes", disable=not ctx.progress, leave=False)
    scale = I.feature_scale(ctx.train[0])
    noise = []
    for k, sigma in enumerate(ctx.sizes.noise_levels):
        x_noisy = I.add_noise(ctx.x_test, sigma, scale, ctx.generator(100 + k))
        r = run(ctx.model, ctx.cores, x_noisy, chunk=ctx.sizes.chunk)
        d = Q.difference(metric, (r.outputs, y), (clean.outputs, y), n_boot=ctx.sizes.n_boot, seed=ctx.seed)
        row = {"regime": f"noise {sigma:g}", "sigma": sigma, "quality": d["a"], "vs_test": d,
               "work_per_pass": r.work[key] / n_chunks, "failed_rows": r.failed_rows}
        noise.append(row)
        regimes.append(row)
        bar.update()
    if noise:
        first = noise[0]
        if first["failed_rows"] > PROBLEM_FRACTION * clean.n_rows:
            problems.append(f"{first['failed_rows']} of {clean.n_rows} rows fail to solve with input noise "
                            f"{first['sigma']:g}")
        if Q.worse_beyond_gap(first["vs_test"]):
            warnings.append(f"input noise {first['sigma']:g} costs more than the practical gap: "
                            f"{Q.interval_text(metric, first['vs_test'])}")
        if clean_work > 0 and first["work_per_pass"] > WORK_GROWTH * clean_work:
            warnings.append(f"input noise {first['sigma']:g} raises the work from {clean_work:.3g} to "
                            f"{first['work_per_pass']:.3g} {unit} per pass")

    with horizon_scaled(ctx.cores, ctx.sizes.horizon_factor) as changed:
        if changed:
            r = run(ctx.model, ctx.cores, ctx.x_test, chunk=ctx.sizes.chunk)
            horizon = {"regime": f"horizon x{ctx.sizes.horizon_factor:g}", "measured": True,
                       "quality": Q.score(metric, r.outputs, y), "work_per_pass": r.work[key] / n_chunks,
                       "failed_rows": r.failed_rows, "errors": sorted(set(r.errors))}
            regimes.append(horizon)
            if r.failed_rows:
                warnings.append(f"at {ctx.sizes.horizon_factor:g}x the horizon {r.failed_rows} rows fail to solve "
                                f"({', '.join(horizon['errors'])})")
        else:
            why = ("a DEQ has no horizon" if ctx.cores[0].kind == "deq"
                   else "the horizon is set by the data's observation times")
            horizon = {"measured": False, "why": why}
    bar.update()

    stiff = stiffness(ctx)
    bar.update()
    if stiff.get("measured") and stiff["kind"] == "ode" and stiff["stiffness_index"] > STIFF_INDEX:
        warnings.append(f"stiff along its trajectories: max |λ| x horizon = {stiff['stiffness_index']:.3g} > "
                        f"{STIFF_INDEX:g} (an explicit solver's steps are set by stability; try an implicit method)")
    if stiff.get("measured") and stiff["kind"] == "deq" and stiff["max_rho"] >= 1.0:
        n_over = sum(r >= 1 for r in stiff["spectral_radius"])
        warnings.append(f"the spectral radius of ∂f/∂z reaches {stiff['max_rho']:.3g} at {n_over} of "
                        f"{stiff['n_states']} fixed points: not a contraction there (the fixed point need not be unique)")

    shift = None
    if ctx.shift:
        xs, ys = ctx.shift
        r = run(ctx.model, ctx.cores, xs, chunk=ctx.sizes.chunk)
        d = Q.difference(metric, (r.outputs, ys), (clean.outputs, y), n_boot=ctx.sizes.n_boot, seed=ctx.seed)
        w_test, w_shift = _shift_work(ctx, ctx.x_test, clean.n_rows), _shift_work(ctx, xs, r.n_rows)
        shift = {"regime": "shift", "quality": d["a"], "vs_test": d, "failed_rows": r.failed_rows,
                 "n_rows": r.n_rows, "work_per_input": {"test": w_test, "shift": w_shift},
                 "work_per_pass": w_shift}
        regimes.append(shift)
        if r.failed_rows > PROBLEM_FRACTION * r.n_rows:
            problems.append(f"{r.failed_rows} of {r.n_rows} shifted rows fail to solve")
        if Q.worse_beyond_gap(d):
            warnings.append(f"under the shift {metric.name} drops from {metric.fmt(d['b'])} to {metric.fmt(d['a'])}: "
                            f"{Q.interval_text(metric, d)}")
        if w_test > 0 and w_shift > WORK_GROWTH * w_test:
            warnings.append(f"the shifted inputs need {w_shift / w_test:.2g}x the work per input ({w_shift:.3g} "
                            f"against {w_test:.3g} {unit})")
        bar.update()
    bar.close()
    verdict, reasons = verdict_of(problems, warnings)
    summary = _summary(metric, unit, regimes, noise, horizon, stiff, shift)
    table = {"columns": ["regime", metric.name, f"{unit} per pass", "failed rows"],
             "rows": [[g["regime"], g["quality"], g["work_per_pass"], g["failed_rows"]] for g in regimes]}
    if shift:
        table["rows"][-1][2] = f"{shift['work_per_input']['shift']:.3g} per input (test {shift['work_per_input']['test']:.3g})"
    data = {"regimes": regimes, "horizon": horizon, "stiffness": stiff, "noise": noise, "shift": shift, "table": table}
    figs = [_regime_figure(metric, unit, regimes)]
    if stiff.get("measured"):
        figs.append(_stiffness_figure(stiff))
    return StepResult(4, NAME, verdict, summary, data, figs, reasons, time.perf_counter() - start)


def _summary(metric, unit, regimes, noise, horizon, stiff, shift) -> str:
    parts = []
    if noise:
        parts.append("input noise " + ", ".join(f"{n['sigma']:g}: {metric.fmt(n['quality'])}" for n in noise)
                     + f" (clean {metric.fmt(regimes[0]['quality'])})")
    if horizon.get("measured"):
        parts.append(f"{horizon['regime']}: {metric.fmt(horizon['quality'])} at {horizon['work_per_pass']:.3g} {unit} "
                     f"per pass ({horizon['failed_rows']} rows failed)")
    else:
        parts.append(f"no longer horizon ({horizon['why']})")
    if stiff.get("measured") and stiff["kind"] == "ode":
        parts.append(f"eigenvalues of ∂f/∂z along trajectories with real parts {stiff['min_real']:.3g} to "
                     f"{stiff['max_real']:.3g}, max |λ| x horizon {stiff['stiffness_index']:.3g}")
    elif stiff.get("measured"):
        parts.append(f"spectral radius of ∂f/∂z at the fixed points median {stiff['median_rho']:.3g}, max "
                     f"{stiff['max_rho']:.3g}")
    else:
        parts.append(f"stiffness not measured ({stiff['why']})")
    if shift:
        parts.append(f"shifted set ({shift['n_rows']} rows): {metric.name} {metric.fmt(shift['quality'])} against the "
                     f"test set's {metric.fmt(shift['vs_test']['b'])}, shifted minus test "
                     f"{Q.interval_text(metric, shift['vs_test'])}, {shift['work_per_input']['shift']:.3g} {unit} per "
                     f"input against {shift['work_per_input']['test']:.3g}")
    return "; ".join(parts) + "."


def _regime_figure(metric, unit, regimes):
    fig, (ax1, ax2) = new_figure(2, width=3.8)
    names = [g["regime"] for g in regimes]
    scale = 100 if metric.name == "accuracy" else 1
    vals = [scale * g["quality"] if math.isfinite(g["quality"]) else 0.0 for g in regimes]
    ax1.bar(names, vals, color="#4c72b0")
    ax1.set(ylabel=f"{metric.name}" + (" (%)" if scale == 100 else ""), title="Quality by regime")
    ax2.bar(names, [g["work_per_pass"] for g in regimes], color="#dd8452")
    ax2.set(ylabel=f"{unit} (per pass; shift: per input)", title="Work by regime")
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    return render(fig, "Difficult regimes",
                  f"{metric.name} (left) and solver work (right) on the clean test set, with input noise (in units "
                  "of each feature's spread), past the horizon and on the shifted set")


def _stiffness_figure(stiff):
    fig, (ax,) = new_figure(1, width=4.6)
    if stiff["kind"] == "ode":
        ax.scatter(stiff["eigenvalues"]["real"], stiff["eigenvalues"]["imag"], s=6, alpha=0.5)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set(xlabel="Re λ (1 / unit time)", ylabel="Im λ (1 / unit time)", title="Eigenvalues of ∂f/∂z")
        caption = (f"eigenvalues of the field's Jacobian at {stiff['n_states']} states visited on test inputs "
                   f"(horizon {stiff['horizon']:g})")
    else:
        ax.hist(stiff["spectral_radius"], bins=20, color="#4c72b0")
        ax.axvline(1.0, color="#cf222e", ls="--")
        ax.set(xlabel="spectral radius of ∂f/∂z at z*", ylabel="inputs", title="Contraction at the fixed points")
        caption = f"spectral radius at {stiff['n_states']} test inputs' fixed points; right of the dashed line: no contraction"
    return render(fig, "Stiffness" if stiff["kind"] == "ode" else "Contraction", caption)
