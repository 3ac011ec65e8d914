"""Lesson 10's ledger rows: thin adapters over the studies and findings (thresholds: ``config``)."""

from __future__ import annotations

from dataclasses import asdict

import torch

from nodecourse.claims import ClaimVerdict, Measurement, claim, parts_text
from nodecourse.lessons.lesson10.config import (
    EXACT_THRESHOLD,
    FULL_EXACT,
    FULL_SEMINORM,
    FULL_TRAIN,
    KINETIC_SCALE,
    KINETIC_THRESHOLD,
    MEMORY_THRESHOLD,
    NFE_GROWTH_THRESHOLD,
    QUICK_EXACT,
    QUICK_SEMINORM,
    QUICK_TRAIN,
    SEMINORM_THRESHOLD,
)
from nodecourse.lessons.lesson10.findings import (
    LIBRARIES,
    ExactFindings,
    NFEGrowthFindings,
    RegularisationFindings,
    ReversibleMemoryFindings,
    SeminormFindings,
    points_span,
    span,
)
from nodecourse.lessons.lesson10.studies import exact_study, reversible_memory_study, seminorm_study, training_study


@claim(
    id="ode-nfe-growth",
    claim="The number of function evaluations of an adaptive solver climbs as a neural ODE trains",
    source="Chen et al. 2018 (Neural ODEs), Fig. 3d; Kelly et al. 2020, abstract",
    published="NFE increases throughout training (a curve, no number)",
    lesson="10",
    threshold=NFE_GROWTH_THRESHOLD,
)
def measure_nfe_growth(quick: bool) -> Measurement:
    config = QUICK_TRAIN if quick else FULL_TRAIN
    f = NFEGrowthFindings.from_runs(training_study(config, ("none",)))
    measured = (
        f"two moons, {len(config.seeds)} seeds, {config.steps} steps: forward NFE {min(f.first):.0f}-"
        f"{max(f.first):.0f} in the first tenth -> {min(f.last):.0f}-{max(f.last):.0f} in the last; "
        f"ratio per seed {', '.join(f'{r:.2f}' for r in f.ratios)}, 95 % interval {span(f.interval)}"
    )
    return Measurement(
        measured,
        f.verdict,
        {
            "config": asdict(config),
            "ratios": list(f.ratios),
            "first": list(f.first),
            "last": list(f.last),
            "reason": f.reason,
        },
        seeds=len(f.ratios),
    )


@claim(
    id="kinetic-regularization-nfe",
    claim="Kinetic-energy and Jacobian regularisation give dynamics that need fewer solver steps, without loss "
    "in performance, and train faster",
    source="Finlay et al. 2020 (How to train your neural ODE), abstract and Table 1",
    published="fewer discretizations, no loss in performance; about 2.8x faster training than FFJORD (MNIST)",
    lesson="10",
    threshold=KINETIC_THRESHOLD,
    published_scale=KINETIC_SCALE,
)
def measure_kinetic(quick: bool) -> Measurement:
    config = QUICK_TRAIN if quick else FULL_TRAIN
    f = RegularisationFindings.from_runs(training_study(config))
    none, reg = f.table["none"], f.table["kinetic+Jacobian"]
    names = [s.setting for s in f.table.settings]
    iv_nfe, iv_acc, iv_time = f.intervals
    measured = (
        f"two moons, {len(config.seeds)} seeds: NFE at the end {none.nfe_last:.1f} unregularised vs "
        f"{reg.nfe_last:.1f} with kinetic+Jacobian 0.01 (ratio interval {span(iv_nfe)}"
        + (f"; kinetic alone {f.table['kinetic'].nfe_last:.1f}" if "kinetic" in names else "")
        + f"); accuracy {none.accuracy:.1%} vs {reg.accuracy:.1%} (drop interval {points_span(iv_acc)}); "
        f"training wall-clock {none.seconds:.2f} s vs {reg.seconds:.2f} s (speed-up per seed "
        f"{', '.join(f'{v:.2f}' for v in f.speedup)}; median's interval {span(iv_time)}: {f.time_clause}). "
        f"The published 2.8x ({KINETIC_SCALE}) is not measurable at this scale. {parts_text(dict(f.parts))}"
    )
    return Measurement(
        measured,
        f.verdict,
        {
            "config": asdict(config),
            "table": [asdict(s) for s in f.table.settings],
            "nfe_ratio": list(f.nfe_ratio),
            "accuracy_drop": list(f.accuracy_drop),
            "speedup": list(f.speedup),
            "parts": {k: v.value for k, v in f.parts},
        },
        seeds=len(f.nfe_ratio),
    )


@claim(
    id="seminorm-backward-nfe",
    claim="Leaving the parameter-gradient channels out of the adjoint's error norm (a seminorm) cuts the "
    "backward pass's function evaluations",
    source="Kidger, Chen and Lyons 2021 ('Hey, that's not an ODE'), abstract",
    published="a median of 40 % fewer function evaluations (up to 62 %)",
    lesson="10",
    threshold=SEMINORM_THRESHOLD,
)
def measure_seminorm(quick: bool) -> Measurement:
    f = SeminormFindings.from_results(seminorm_study(QUICK_SEMINORM if quick else FULL_SEMINORM))

    def reading(i: int, lib: str) -> str:
        mi = f.medians[i]
        per_task = ", ".join(f"{r.reduction(lib):.0%}" for r in f.results)
        median = "n/a" if mi is None else f"median {mi.median:.0%}, interval [{mi.lo:.0%}, {mi.hi:.0%}]"
        return f"{lib}: saved per task {per_task} ({median})"

    tasks = "; ".join(r.task.name for r in f.results)
    measured = (
        f"{f.n_tasks} tasks ({tasks}): "
        + "; ".join(reading(i, lib) for i, lib in enumerate(LIBRARIES))
        + f". {parts_text(dict(f.readings))}"
    )
    details = {
        "tasks": [
            {
                "task": asdict(r.task),
                "counts": [asdict(c) for c in r.counts],
                **{f"{lib} reduction": r.reduction(lib) for lib in LIBRARIES},
            }
            for r in f.results
        ],
        "readings": {k: v.value for k, v in f.readings},
    }
    return Measurement(measured, f.verdict, details, seeds=f.n_tasks, unit="task")


@claim(
    id="reversible-gradient-exact",
    claim="An algebraically reversible solver's backward pass gives the gradient of its own discretisation "
    "exactly (to floating point), without storing the forward steps",
    source="Kidger, Foster, Li and Lyons 2021 (Efficient and accurate gradients for neural SDEs), sec. 3",
    published="exact gradients of the discretised solve, up to floating-point error",
    lesson="10",
    threshold=EXACT_THRESHOLD,
)
def measure_exact(quick: bool) -> Measurement:
    config = QUICK_EXACT if quick else FULL_EXACT
    f = ExactFindings.from_rows(exact_study(config), config.adjoint_tol, config.steps)
    errors = [r.reversible_error for r in f.rows]
    adj = [r.adjoint_error for r in f.rows]
    measured = (
        f"{len(f.rows)} random MLP fields, {config.steps} steps, float64: reversible vs backprop through the "
        f"same steps {max(errors):.1e} at most (interval {span(f.interval, '{:.1e}')}); beside it the dopri5 "
        f"adjoint vs backprop through dopri5 at tol {config.adjoint_tol:g}: {min(adj):.1e}-{max(adj):.1e}"
    )
    return Measurement(
        measured,
        f.verdict,
        {"config": asdict(config), "rows": [asdict(r) for r in f.rows], "reason": f.reason},
        seeds=len(f.rows),
    )


@claim(
    id="reversible-memory-flat",
    claim="Peak memory of the reversible route does not grow with the number of steps; backprop's does",
    source="Kidger et al. 2021 (reversible Heun); Zhuang et al. 2021 (MALI), sec. 3",
    published="memory constant in the number of solver steps",
    lesson="10",
    threshold=MEMORY_THRESHOLD,
)
def measure_memory(quick: bool) -> Measurement:
    from nodecourse.measure import cpu_peak_supported

    if not cpu_peak_supported() and not torch.cuda.is_available():
        return Measurement(
            "peak memory needs Linux (torch's CPU profiler) or CUDA; nearest analogue: the bytes "
            "autograd keeps (tests/test_solvers_reversible.py)",
            ClaimVerdict.NOT_MEASURABLE,
            {},
        )
    sweep = reversible_memory_study(quick)
    f = ReversibleMemoryFindings.from_sweep(sweep)
    c = sweep.config
    mib = {m: [round(p / 2**20, 2) for p in sweep.peaks(m)] for m in c.modes}
    measured = (
        f"{c.steps[0]}->{c.steps[-1]} reversible Heun steps (batch {c.batch}, {c.device}): peak MiB "
        f"backprop {mib['backprop'][0]}->{mib['backprop'][-1]} ({f.growth_of('backprop'):.1f}x), reversible "
        f"{mib['reversible'][0]}->{mib['reversible'][-1]} ({f.growth_of('reversible'):.2f}x). "
        f"{parts_text(dict(f.parts))}"
    )
    return Measurement(
        measured,
        f.verdict,
        {"config": asdict(c), "rows": sweep.rows, "growth": dict(f.growth), "parts": {k: v.value for k, v in f.parts}},
    )
