"""Lesson 11's SDE ledger rows: thin adapters over the studies and findings (thresholds: ``sde_config``)."""

from __future__ import annotations

from dataclasses import asdict

import torch

from nodecourse.claims import ClaimVerdict, Measurement, claim
from nodecourse.lessons.lesson11.sde_config import (
    ADJOINT_THRESHOLD,
    FULL_ADJOINT,
    FULL_SDE_MEMORY,
    FULL_STRONG,
    QUICK_ADJOINT,
    QUICK_SDE_MEMORY,
    QUICK_STRONG,
    SDE_MEMORY_THRESHOLD,
    STRONG_ORDER_THRESHOLD,
)
from nodecourse.lessons.lesson11.sde_findings import (
    SCHEME_NAMES,
    AdjointFindings,
    SDEMemoryFindings,
    StrongOrderFindings,
)
from nodecourse.lessons.lesson11.sde_studies import adjoint_study, sde_memory_study, strong_order_study


@claim(
    id="sde-strong-orders",
    claim="Euler-Maruyama converges with strong order 0.5 and Milstein (diagonal noise) with strong order 1.0",
    source="Kloeden & Platen 1992 (Numerical Solution of SDEs), Thms 10.2.2 and 10.3.5",
    published="strong order 0.5 (Euler-Maruyama) and 1.0 (Milstein)",
    lesson="11",
    threshold=STRONG_ORDER_THRESHOLD,
)
def measure_strong_orders(quick: bool) -> Measurement:
    config = QUICK_STRONG if quick else FULL_STRONG
    f = StrongOrderFindings.from_runs(strong_order_study(config))
    slopes = "; ".join(
        f"{SCHEME_NAMES[r.method]} slope {r.slope:.3f}, 95 % interval [{r.lo:.3f}, {r.hi:.3f}] ({v.value})"
        for r, (_, v) in zip(f.runs, f.parts)
    )
    measured = (
        f"geometric Brownian motion (mu {config.mu:g}, sigma {config.sigma:g}), {config.paths} paths, dt = "
        f"2^-{config.levels[0]} ... 2^-{config.levels[-1]} ({len(config.levels) - 1} halvings): {slopes}"
    )
    details = {
        "config": asdict(config),
        "runs": [asdict(r) for r in f.runs],
        "parts": {k: v.value for k, v in f.parts},
    }
    return Measurement(measured, f.verdict, details, seeds=config.paths, unit="path")


@claim(
    id="sde-adjoint-matches-backprop",
    claim="The stochastic adjoint computes the gradient of backprop through the solver on the same Brownian path, "
    "up to a discretisation error that vanishes as the step shrinks",
    source="Li, Wong, Chen and Duvenaud 2020 (Scalable gradients for SDEs, AISTATS), sec. 3 and Fig. 4",
    published="the adjoint's gradient error against the true gradient falls as the step shrinks (a figure)",
    lesson="11",
    threshold=ADJOINT_THRESHOLD,
)
def measure_adjoint(quick: bool) -> Measurement:
    config = QUICK_ADJOINT if quick else FULL_ADJOINT
    f = AdjointFindings.from_runs(adjoint_study(config))
    iv = f.interval
    span = "no interval" if iv is None else f"[{iv.lo:.2f}, {iv.hi:.2f}]"
    measured = (
        f"random neural SDEs (Stratonovich, diagonal noise), {len(f.runs)} seeds, reversible Heun at dt = "
        f"2^-{config.levels[0]} ... 2^-{config.levels[-1]}: slope of log error on log step "
        f"{', '.join(f'{s:.2f}' for s in f.slopes)} (95 % interval {span}); finest-step error {f.worst_finest:.1e} "
        f"at most. Beside it, reversible Heun's algebraic reverse: {f.worst_reversible:.0e} at most, every step"
    )
    details = {"config": asdict(config), "runs": [asdict(r) for r in f.runs], "reason": f.reason}
    return Measurement(measured, f.verdict, details, seeds=len(f.runs))


@claim(
    id="sde-adjoint-memory-flat",
    claim="The stochastic adjoint's memory is constant in the number of steps; backprop's grows linearly",
    source="Li, Wong, Chen and Duvenaud 2020 (Scalable gradients for SDEs, AISTATS), sec. 1 and Table 1",
    published="O(1) memory in the number of steps for the adjoint, O(L) for backprop",
    lesson="11",
    threshold=SDE_MEMORY_THRESHOLD,
)
def measure_memory(quick: bool) -> Measurement:
    from nodecourse.measure import cpu_peak_supported

    config = QUICK_SDE_MEMORY if quick else FULL_SDE_MEMORY
    if torch.device(config.device).type == "cpu" and config.cpu_method == "rss" and not cpu_peak_supported():
        return Measurement(
            "the resident-set peak needs Linux (/proc/self/clear_refs): use cpu_method='profiler'; nearest analogue: "
            "the bytes autograd keeps (nodecourse.measure.saved_tensor_bytes)",
            ClaimVerdict.NOT_MEASURABLE,
            {},
        )
    f = SDEMemoryFindings.from_result(sde_memory_study(config))
    r = f.result
    mib = {route: [round(p / 2**20, 2) for p in r.peak(route)] for route in r.routes}
    measured = (
        f"{r.steps[0]} -> {r.steps[1]} reversible Heun steps (batch {config.batch}, {config.device}): peak MiB "
        f"backprop {mib['backprop'][0]} -> {mib['backprop'][1]} ({r.growth('backprop'):.1f}x), adjoint (path cache "
        f"{config.cache_size}) {mib['adjoint'][0]} -> {mib['adjoint'][1]} ({r.growth('adjoint'):.2f}x)"
        + "".join(f"; {route} {r.growth(route):.2f}x" for route in r.routes[2:])
    )
    details = {"config": asdict(config), "steps": list(r.steps), "peaks": {k: list(v) for k, v in r.peaks}}
    return Measurement(measured, f.verdict, details, seeds=1, unit="run")
