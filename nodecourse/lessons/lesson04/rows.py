"""Ledger rows of lesson 4: thin adapters over the studies and findings.

- ``reversal-steps``: dz/dt = lam z on [0, 1]: the steps a first-order method needs to recover z(0) = 1
  from z(1) = e^lam within 1 % at lam = -100, against the derived 50 lam^2; the underflow at lam = -1e4.
- ``adjoint-memory``: peak memory of forward + backward against rk4 steps for backprop, checkpoint, adjoint.
- ``adjoint-gradient-error``: where reconstructing the forward state backwards drifts, the adjoint's
  gradient error grows with the horizon T while checkpointing stays at solver accuracy; judged at atol = tol
  and at a tiny atol.
- ``adjoint-error-rotated``: the same system rotated in the plane: the adjoint stays wrong with a tiny atol.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import torch

from nodecourse.claims import ClaimVerdict, Measurement, claim, combine, parts_text
from nodecourse.lessons.lesson04.config import (
    FULL_GRADIENT,
    FULL_REVERSAL,
    GRADIENT_THRESHOLD,
    MEMORY_THRESHOLD,
    PROBE,
    QUICK_GRADIENT,
    QUICK_REVERSAL,
    REVERSAL_LAMBDA,
    REVERSAL_THRESHOLD,
    ROTATED_THRESHOLD,
    TIGHT_ATOL,
    UNDERFLOW_LAMBDA,
    UNLOCATED_REVERSAL_STEPS,
)
from nodecourse.lessons.lesson04.findings import (
    METHOD_NAMES,
    GradientErrorFindings,
    MemoryFindings,
    ProbeFindings,
    ReversalFindings,
    RotatedFindings,
)
from nodecourse.lessons.lesson04.studies import (
    atol_probe,
    gradient_error_study,
    memory_study,
    reversal_study,
    underflow_demo,
)

__all__ = ["measure_reversal", "measure_memory", "measure_gradient_error", "measure_rotated"]


def _steps(n) -> str:
    return "none" if n is None else f"{n:,}"


def _plain(rows) -> list[dict]:
    """Rows for a row's ``details``: a non-finite number (a failed solve's error) becomes the string
    ``"inf"``/``"nan"``, so ``--json`` prints standard JSON."""
    return [{k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()} for r in rows]


@claim(
    id="reversal-steps",
    claim="Recovering z(0) from z(1) for dz/dt = lam z on [0, 1] to within 1 % takes a first-order method about "
    "50 lam^2 = 500,000 steps at lam = -100 (derived in lesson 4); at lam = -1e4, e^lam underflows to 0 in "
    "float64 and no method can",
    source="derived in lesson 4 (error lam^2 / (2n) of a first-order reversal); the reversal instability itself "
    "and the figure of about 200,000 steps at lam = -100 for a low-order method: quoted with Gholami et al. 2019 "
    "(ANODE), with no method or tolerance attached (shown, not used as the threshold)",
    published="50 lam^2 = 500,000 steps at lam = -100 (derived; the 200,000 quoted with ANODE names no method "
    "or tolerance); e^-1e4 = 0 in float64",
    lesson="04",
    threshold=REVERSAL_THRESHOLD,
)
def measure_reversal(quick: bool) -> Measurement:
    config = QUICK_REVERSAL if quick else FULL_REVERSAL
    rows = reversal_study(config)
    (under,) = underflow_demo((UNDERFLOW_LAMBDA,))
    f = ReversalFindings.from_study(rows, under)
    by = {(r.method, r.lam): r.steps for r in rows}
    first = ", ".join(
        f"{METHOD_NAMES[m]} {_steps(n)}" + ("" if n is None else f" ({f.ratio(m):.3f}x 50 lam^2)")
        for m, n in f.counts.items()
    )
    others = ", ".join(
        f"{m} {_steps(by[m, REVERSAL_LAMBDA])}"
        for m in ("midpoint", "trapezoid", "rk4", "dopri5 (adaptive)")
        if (m, REVERSAL_LAMBDA) in by
    )
    quoted = ", ".join(
        f"{UNLOCATED_REVERSAL_STEPS / n:.2f}x {METHOD_NAMES[m]}'s" for m, n in f.counts.items() if n is not None
    )
    measured = (
        f"lam=-100, 1 %: {first}; derived 50 lam^2 = {f.derived:,.0f}; second order and up: {others}. "
        f"The {UNLOCATED_REVERSAL_STEPS:,} quoted with ANODE (no method or tolerance given) is {quoted} count. "
        f"e^-1e4 in float64 = {under.z1:g}, reversal returns z(0) = {under.recovered:g}. Solver runs "
        f"confirm {f.checks[0]}/{f.checks[1]} counts (up to {config.verify_up_to:,} steps). "
        f"{parts_text(f.parts)}"
    )
    return Measurement(
        measured,
        f.verdict,
        {
            "config": asdict(config),
            "rows": [asdict(r) for r in rows],
            "underflow": asdict(under),
            "counts": f.counts,
            "derived_steps": f.derived,
            "quoted_figure": UNLOCATED_REVERSAL_STEPS,
            "parts": {k: v.value for k, v in f.parts.items()},
            "quoted_figure_method_and_tolerance_given": False,
        },
    )


@claim(
    id="adjoint-memory",
    claim="Peak memory of backprop through the solver grows with the number of steps; the adjoint's stays flat; "
    "checkpointing (one state per step) lies in between",
    source="Chen et al. 2018 (Neural ODEs), sec. 2: constant memory cost in depth with the adjoint",
    published="O(1) memory in the number of steps for the adjoint, O(steps) for backprop",
    lesson="04",
    threshold=MEMORY_THRESHOLD,
)
def measure_memory(quick: bool) -> Measurement:
    from nodecourse.measure import cpu_peak_supported

    if not cpu_peak_supported() and not torch.cuda.is_available():
        return Measurement(
            "peak memory needs Linux (torch's CPU profiler) or CUDA; nearest analogue: none on this platform",
            ClaimVerdict.NOT_MEASURABLE,
            {},
        )
    sweep = memory_study(quick, "cuda" if torch.cuda.is_available() else "cpu")
    f = MemoryFindings.from_sweep(sweep)
    c = sweep.config
    mib = {m: [round(p / 2**20, 1) for p in sweep.peaks(m)] for m in c.modes}
    measured = (
        f"{c.steps[0]}->{c.steps[-1]} rk4 steps (batch {c.batch}, {c.device}): peak MiB backprop "
        f"{mib['backprop'][0]}->{mib['backprop'][-1]} ({f.growth['backprop']:.1f}x), checkpoint "
        f"{mib['checkpoint'][0]}->{mib['checkpoint'][-1]}, adjoint {mib['adjoint'][0]}->{mib['adjoint'][-1]} "
        f"({f.growth['adjoint']:.2f}x). {parts_text(f.parts)}"
    )
    return Measurement(
        measured,
        f.verdict,
        {
            "config": asdict(c),
            "rows": sweep.rows,
            "growth": f.growth,
            "backprop_grows": f.backprop_grows,
            "adjoint_flat": f.adjoint_flat,
            "checkpoint_between": f.checkpoint_between,
        },
    )


def _sweep_details(f, suffix: str) -> dict:
    return {
        f"adjoint_grows_{suffix}": {str(k): v for k, v in f.adjoint_grows.items()},
        f"checkpoint_at_solver_accuracy_{suffix}": f.checkpoint_at_solver_accuracy,
        f"growth_{suffix}": {
            str(k): (str(v) if v is not None and not math.isfinite(v) else v) for k, v in f.growth.items()
        },
    }


@claim(
    id="adjoint-gradient-error",
    claim="Where reconstructing the forward state backwards drifts (a fast decaying mode feeding a slow one), "
    "the adjoint's gradient error grows with the horizon T; checkpointing stays at solver accuracy",
    source="Gholami et al. 2019 (ANODE), sec. 3; the controlled problem and the sweep are lesson 4's",
    published="adjoint gradients can be wrong (reversal unstable); checkpointing is exact for the discrete solve",
    lesson="04",
    threshold=GRADIENT_THRESHOLD,
)
def measure_gradient_error(quick: bool) -> Measurement:
    config = QUICK_GRADIENT if quick else FULL_GRADIENT
    loose = gradient_error_study(config)
    tight = gradient_error_study(config, TIGHT_ATOL)
    f_loose, f_tight = GradientErrorFindings.from_sweep(loose, config), GradientErrorFindings.from_sweep(tight, config)
    probe = ProbeFindings.from_probe(atol_probe(0.0))
    p = PROBE
    readings = {"atol = tol": f_loose.verdict, f"atol = {TIGHT_ATOL:g}": f_tight.verdict}
    T = f"T {min(config.horizons):g} -> {max(config.horizons):g}"
    measured = (
        f"lam={config.lam:g}, {config.method}, rtol = tol, {T}. "
        f"atol = tol: {f_loose.sweep_text()}. "
        f"atol = {TIGHT_ATOL:g}: {f_tight.sweep_text()}. On this axis-aligned problem the "
        f"growth comes from the absolute tolerance: at T={p.T:g}, rtol {p.rtol:g}, the adjoint's error on "
        f"dL/dtheta is {probe.theta_error_loose:.1e} with atol {p.rtol:g} and "
        f"{probe.theta_error_tight:.1e} with atol {p.tight_atol:g} "
        f"(mixed modes: adjoint-error-rotated). {parts_text(readings)}"
    )
    return Measurement(
        measured,
        combine(readings),
        {
            "config": asdict(config),
            "rows": _plain(loose),
            "rows_tight_atol": _plain(tight),
            "probe": _plain([asdict(r) for r in atol_probe(0.0)]),
            "readings": {k: v.value for k, v in readings.items()},
            **_sweep_details(f_loose, "atol_tol"),
            **_sweep_details(f_tight, "atol_tight"),
        },
    )


@claim(
    id="adjoint-error-rotated",
    claim="With the decayed mode mixed into every coordinate (the controlled problem rotated by 0.7 rad), the "
    "adjoint's gradient stays wrong even with a tiny absolute tolerance, while checkpointing stays at "
    "solver accuracy",
    source="Gholami et al. 2019 (ANODE), sec. 3 (reversal instability of the adjoint); the rotated problem is "
    "lesson 4's",
    published="adjoint gradients can have O(1) errors; checkpointing (discretise-then-optimise) is exact for the "
    "discrete solve",
    lesson="04",
    threshold=ROTATED_THRESHOLD,
)
def measure_rotated(quick: bool) -> Measurement:
    p = PROBE
    probe = atol_probe(p.angle)
    f = RotatedFindings.from_probe(probe)
    config = QUICK_GRADIENT if quick else FULL_GRADIENT
    sweep = gradient_error_study(config, TIGHT_ATOL, p.angle)
    fs = GradientErrorFindings.from_sweep(sweep, config)
    theta = next(r.theta_error for r in probe if r.route == "adjoint" and r.atol == p.tight_atol)
    measured = (
        f"lam={p.lam:g}, T={p.T:g}, {p.method}, rtol {p.rtol:g}, rotated {p.angle:g} rad: adjoint "
        f"{f.adjoint:.1e} (dL/dtheta {theta:.1e}) with atol {p.tight_atol:g}, {f.adjoint_loose:.1e} with "
        f"atol {p.rtol:g}; checkpoint {f.checkpoint:.1e} with atol {p.tight_atol:g}. Sweep at atol "
        f"{TIGHT_ATOL:g}, T {min(config.horizons):g} -> {max(config.horizons):g}: {fs.sweep_text()}. "
        f"{parts_text(f.parts)}"
    )
    return Measurement(
        measured,
        f.verdict,
        {
            "probe_config": asdict(p),
            "probe": _plain([asdict(r) for r in probe]),
            "parts": {k: v.value for k, v in f.parts.items()},
            "config": asdict(config),
            "rows_tight_atol": _plain(sweep),
            **_sweep_details(fs, "atol_tight"),
        },
    )
