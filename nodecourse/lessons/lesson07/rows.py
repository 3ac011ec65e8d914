"""Lesson 7's ledger rows (:data:`ROW_IDS`): thin adapters over its studies and findings, each with its threshold
(:mod:`.thresholds`), declared before anything runs."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict

from nodecourse.claims import ClaimVerdict, Measurement, claim, combine, parts_text, unrun_scale_parts

from .config import MODELS, TRAINED_FLOOR, WORK_UNITS, CapstoneConfig, capstone_config
from .findings import (
    AdaptiveFindings,
    CostFindings,
    DialFindings,
    MemoryGrowth,
    MismatchFindings,
    ParityFindings,
    ReductionFindings,
)
from .studies import (
    capstone_study,
    memory_vs_depth,
    ode_tolerance_sweep,
    reduction_peers,
    step_mismatch_study,
    timing_study,
)
from .thresholds import (
    ADAPTIVE,
    ADAPTIVE_OTHER,
    DEQ_COST,
    DEQ_COST_SCALE,
    DIAL,
    MEMORY_GROWTH,
    MEMORY_REDUCTION,
    MEMORY_SCALE,
    MISMATCH,
    PARITY,
    PARITY_SCALE,
)

__all__ = [
    "ROW_IDS",
    "measure_accuracy_parity",
    "measure_adaptive_compute",
    "measure_deq_cost",
    "measure_deq_memory",
    "measure_step_mismatch",
    "measure_tolerance_dial",
    "measure_training_memory",
]


def _measurement(measured: str, verdict: ClaimVerdict, details: dict, seeds: int) -> Measurement:
    """A row's measurement; an undecided verdict carries its seed count ("undecided (2 seeds)")."""
    return Measurement(measured, verdict, details, seeds=seeds if verdict is ClaimVerdict.UNDECIDED else None)


def _config(quick: bool) -> CapstoneConfig:
    return capstone_config(quick)


def _iv(iv, fmt: str = ".2f", unit: str = "") -> str:
    """An interval as ``mean (lo–hi)``, or ``n/a`` when there were too few seeds for one."""
    return "n/a" if iv is None else f"{iv.mean:{fmt}}{unit} (95 % interval {iv.lo:{fmt}}–{iv.hi:{fmt}}{unit})"


def _median_iv(mi) -> str:
    """A median with its order-statistic interval, or ``n/a`` when there were too few seeds for one."""
    return "n/a" if mi is None else f"median {mi.median:.1f}x, {mi.confidence:.0%} interval {mi.lo:.1f}–{mi.hi:.1f}x"


def _range(values, fmt: str = ".2f", unit: str = "") -> str:
    return f"{min(values):{fmt}}–{max(values):{fmt}}{unit}"


@claim(
    id="capstone-accuracy-parity",
    claim="At matched parameter count, an explicit ResNet, a neural ODE, a DEQ and an unrolled shared block "
    "reach about the same test accuracy (digits)",
    source="Chen et al. 2018 (Neural ODEs), sec. 3 and table 1; Bai et al. 2019 (Deep Equilibrium Models)",
    published="no matched-size comparison of the four: Chen et al.'s MNIST test errors (ResNet 0.41 %, 0.60 M "
    "parameters; ODE-Net 0.42 %, 0.22 M) compare unmatched sizes, and no DEQ is in that table",
    lesson="07",
    threshold=PARITY,
    published_scale=PARITY_SCALE,
)
def measure_accuracy_parity(quick: bool) -> Measurement:
    config = _config(quick)
    runs = capstone_study(config)
    f = ParityFindings.from_runs(runs)
    params = [r.n_parameters for r in runs]
    deficits = "; ".join(f"{n} {_range(d, '+.2f')} ({_iv(f.intervals[n], '+.2f')})" for n, d in f.deficits.items())
    measured = (
        "test accuracy "
        + ", ".join(f"{n} {m:.1f}%" for n, m in f.means.items())
        + f" ({len(config.seeds)} seeds, {config.epochs} epochs; "
        f"parameters {min(params):,}–{max(params):,}); "
        f"deficit to the ResNet in points, per seed: {deficits}. Against {PARITY.value:g} points: "
        + ", ".join(f"{n} {v.value}" for n, v in f.by_model.items())
        + f". Chen et al.'s {PARITY_SCALE} errors are not measurable at this scale"
    )
    # an under-trained model leaves every part undecided (the findings' verdict); else each model's deficit
    analogue = {f"analogue: {n}": v if f.trained else ClaimVerdict.UNDECIDED for n, v in f.by_model.items()}
    parts = unrun_scale_parts(PARITY_SCALE, analogue)
    if not f.trained:
        measured += f"; some model is below {100 * TRAINED_FLOOR:.0f} %: under-trained at this scale, run full mode"
    elif len(config.seeds) < 3:
        measured += f"; {len(config.seeds)} seeds cannot give an interval: run full mode"
    details = {
        "config": asdict(config),
        "means": f.means,
        "deficits": f.deficits,
        "by_model": {n: v.value for n, v in f.by_model.items()},
        "parts": {k: v.value for k, v in parts.items()},
        "trained": f.trained,
        "intervals": {n: None if iv is None else asdict(iv) for n, iv in f.intervals.items()},
    }
    return _measurement(measured, combine(parts), details, f.seeds)


@claim(
    id="capstone-training-memory",
    claim="Training memory: the neural ODE (adjoint) and the DEQ (implicit backward) save the same for backward "
    "whatever their depth (steps, iterations); the ResNet and the unrolled block save more with every block/step",
    source="Chen et al. 2018, table 1 (O(1) vs O(L) memory); Bai et al. 2019, sec. 3.3",
    published="ODE-Net O(1) memory, ResNet O(L); DEQ constant memory in its depth",
    lesson="07",
    threshold=MEMORY_GROWTH,
)
def measure_training_memory(quick: bool) -> Measurement:
    config = _config(quick)
    mem = memory_vs_depth(config)
    f = MemoryGrowth.from_memory(mem)
    measured = "; ".join(
        f"{n}: "
        + "/".join(f"{w:.0f}" for w in f[n].work)
        + f" {WORK_UNITS[n]} -> saved "
        + "/".join(f"{b / 1024:.0f}" for b in f[n].bytes)
        + " KiB"
        for n in MODELS
    )
    measured += " (bytes set by the graph: the same on every seed and machine)"
    if not all(f[n].work_grows for n in MODELS):
        verdict = ClaimVerdict.NOT_MEASURABLE
        measured += "; a tighter tolerance did not add work for " + ", ".join(n for n in MODELS if not f[n].work_grows)
    else:
        verdict = ClaimVerdict.HOLDS if all(f[n].ok for n in MODELS) else ClaimVerdict.DOES_NOT_HOLD
    memory = {name: [asdict(row) for row in rows] for name, rows in mem.items()}
    findings = {name: asdict(growth) for name, growth in f.items()}
    return Measurement(measured, verdict, {"memory": memory, "findings": findings})


@claim(
    id="capstone-step-mismatch",
    claim="A weight-tied block unrolled k times and trained that way loses accuracy when run with another number "
    "of steps; a DEQ built from the same block gives the same accuracy with a tighter solve",
    source="Ott et al. 2021 (ResNet after all? Neural ODEs and their numerical solution); Bai et al. 2019",
    published="accuracy drops when the test-time discretisation differs from training (Ott et al.); a DEQ's output "
    "is its fixed point, independent of the solver's path when that fixed point is unique",
    lesson="07",
    threshold=MISMATCH,
)
def measure_step_mismatch(quick: bool) -> Measurement:
    config = _config(quick)
    mm = step_mismatch_study(config)
    f = MismatchFindings.from_mismatch(mm, config)
    un = f.unrolled_by_steps
    starts = mm.random_start
    n_in, n_both, n_other = (
        sum(s.inputs for s in starts),
        sum(s.both_converged for s in starts),
        sum(s.other_point for s in starts),
    )
    measured = (
        f"unrolled trained with {config.unrolled_steps} steps: "
        + ", ".join(f"{k} steps {un[k]:.1f}%" for k in config.mismatch_steps)
        + f"; drop at {f.worst_steps} steps per seed {_range(f.drops, '.1f')} points "
        f"({_iv(f.drop_interval, '.1f')}); DEQ as trained {f.deq_as_trained:.1f}%, tol/100 "
        f"{f.deq_tight:.1f}% (|change| per seed {_range(f.deq_changes, '.2f')} points); from a random "
        f"start (accuracy {_range([100 * s.accuracy for s in starts], '.1f', '%')}) {n_both} of {n_in} "
        f"test solves converge from both starts, and {n_other} of those land on another fixed point "
        + (
            "(no sign of a second fixed point)"
            if n_other == 0
            else "(not unique there: the answer depends on the start)"
        )
        + f". {parts_text(f.parts)}"
    )
    if len(config.seeds) < 3:
        measured += f"; {len(config.seeds)} seeds cannot give an interval: run full mode"
    details = {
        "mismatch": mm.as_dict(),
        "worst_steps": f.worst_steps,
        "drops": f.drops,
        "deq_changes": f.deq_changes,
        "parts": {k: v.value for k, v in f.parts.items()},
    }
    return _measurement(measured, f.verdict, details, len(config.seeds))


@claim(
    id="adaptive-compute-per-input",
    claim="A neural ODE adapts its evaluation strategy to each input: the solver spends different work on "
    "different inputs",
    source="Chen et al. 2018 (Neural ODEs), abstract and sec. 3",
    published="continuous-depth models 'adapt their evaluation strategy to each input'",
    lesson="07",
    threshold=ADAPTIVE,
)
def measure_adaptive_compute(quick: bool) -> Measurement:
    config = _config(quick)
    sweep = ode_tolerance_sweep(config)
    f = AdaptiveFindings.from_sweep(sweep, config.ode_tol)
    lo, hi = f.ranges[config.ode_tol]
    others = ", ".join(f"{t:g}: {a:.0f}–{b:.0f}" for t, (a, b) in f.ranges.items() if t != config.ode_tol)
    n_inputs = len(sweep[0].nfe_per_input)
    measured = (
        f"the trained neural ODEs ({len(config.seeds)} seeds, {n_inputs} test inputs each, each input "
        f"solved on its own) spend {lo:.0f} to {hi:.0f} NFE per input at the training tolerance "
        f"{config.ode_tol:g}; at other test-time tolerances: {others}. "
        f"{parts_text(f.readings)}"
    )
    if f.readings["at the training tolerance"] is ClaimVerdict.DOES_NOT_HOLD:
        measured += (
            "; as trained, every input gets the same steps: the adaptation the claim names is not there at this scale"
        )
    if len(config.seeds) < 3:
        measured += f"; {len(config.seeds)} seeds cannot give an interval: run full mode"
    details = {
        "spread_by_tol": {f"{t:g}": s for t, s in f.spread.items()},
        "range_by_tol": {f"{t:g}": r for t, r in f.ranges.items()},
        "verdict_by_tol": {f"{t:g}": v.value for t, v in f.verdict_by_tol.items()},
        "readings": {k: v.value for k, v in f.readings.items()},
        "other_reading": ADAPTIVE_OTHER.describe(),
    }
    return _measurement(measured, f.verdict, details, len(config.seeds))


@claim(
    id="deq-inference-cost",
    claim="A DEQ is several times slower than an explicit network of similar size, in training and at inference",
    source="Bai et al. 2021 (Stabilizing Equilibrium Models by Jacobian Regularization), table 1 and sec. 3.2",
    published="DEQ-Transformer: 30 NFE, 3.1x the training time of an 18-layer Transformer-XL (WikiText-103); "
    "a multiscale DEQ is over 4x slower than ResNet-101 (ImageNet)",
    lesson="07",
    threshold=DEQ_COST,
    published_scale=DEQ_COST_SCALE,
)
def measure_deq_cost(quick: bool) -> Measurement:
    config = _config(quick)
    runs = capstone_study(config)
    f = CostFindings.from_timings(timing_study(config))
    r = f.ratios
    iters = statistics.fmean(w for run in runs if run.name == "DEQ" for w in run.work_per_input)
    parts = unrun_scale_parts(DEQ_COST_SCALE, {f"analogue: {k}": v for k, v in f.parts.items()})
    verdict = combine(parts)
    measured = (
        f"the published 3.1x (WikiText-103) and over 4x (ImageNet) are not measurable at this scale. Analogue, "
        f"the trained digits DEQ over the trained ResNet at matched parameters ({len(config.seeds)} seeds, "
        f"medians of interleaved repeats): training step {_range(r.train, '.1f', 'x')} "
        f"({_median_iv(f.train_interval)}); inference {_range(r.inference, '.1f', 'x')} "
        f"({_median_iv(f.inference_interval)}); {iters:.1f} forward iterations per input. {parts_text(parts)}"
    )
    if len(config.seeds) < 3:
        measured += f"; {len(config.seeds)} seeds cannot give an interval: run full mode"
    details = {
        "ratios": asdict(r),
        "timings": timing_study(config).as_dict(),
        "parts": {k: v.value for k, v in parts.items()},
        "deq_iterations_per_input": iters,
    }
    return _measurement(measured, verdict, details, len(config.seeds))


@claim(
    id="deq-memory-reduction",
    claim="A DEQ trains with much less memory than its explicit peers",
    source="Bai et al. 2019 (Deep Equilibrium Models), abstract and the memory columns of its tables",
    published="up to 88 % less training memory than explicit peers (WikiText-103 language models)",
    lesson="07",
    threshold=MEMORY_REDUCTION,
    published_scale=MEMORY_SCALE,
)
def measure_deq_memory(quick: bool) -> Measurement:
    config = _config(quick)
    runs = capstone_study(config)
    deq = [r for r in runs if r.name == "DEQ"]
    deq_bytes = {"saved": [r.saved_bytes for r in deq], "peak": [r.peak_bytes for r in deq]}
    # The peer that does the DEQ's work explicitly: its block unrolled for as many steps as the solve takes.
    steps = math.ceil(statistics.median(statistics.fmean(r.work_per_input) for r in deq))
    same_work = f"Unrolled {steps}"
    f = ReductionFindings.from_bytes(deq_bytes, {same_work: reduction_peers(config, depths=(steps,))[same_work]})
    peers = reduction_peers(config)
    beside = ReductionFindings.from_bytes(deq_bytes, peers)
    parts = unrun_scale_parts(MEMORY_SCALE, {f"analogue: {k}": v for k, v in f.parts.items()})
    verdict = combine(parts)
    texts = []
    for reading, unit in (("saved", "saved for backward"), ("peak", "measured peak")):
        rd, other = f.readings[reading], beside.readings[reading]
        if rd.reductions is None:
            texts.append(f"{unit}: {rd.reason}")
            continue
        shown = ", ".join(f"{p} {100 * statistics.fmean(v):.0f} %" for p, v in other.reductions.items())
        texts.append(
            f"{unit}: {100 * statistics.fmean(rd.reductions[same_work]):.0f} % less than the block unrolled "
            f"{steps} steps ({_iv(rd.interval, '.3f')}); beside it, deciding nothing: {shown}"
        )
    measured = (
        f"the published 'up to 88 %' (WikiText-103) is not measurable at this scale. Analogue, one training step "
        f"on {config.memory_batch} digits: the trained DEQ ({len(deq)} seeds; median {steps} forward iterations "
        f"per input, rounded up) against its block unrolled {steps} steps, the same work kept for backward. "
        + "; ".join(texts)
        + f". {parts_text(parts)}"
    )
    details = {
        "deq_bytes": deq_bytes,
        "same_work_steps": steps,
        "peers": {name: asdict(peer) for name, peer in peers.items()},
        "reductions": {k: v.reductions for k, v in f.readings.items()},
        "reductions_beside": {k: v.reductions for k, v in beside.readings.items()},
        "parts": {k: v.value for k, v in parts.items()},
    }
    return _measurement(measured, verdict, details, len(config.seeds))


@claim(
    id="tolerance-dial-trained",
    claim="A trained neural ODE has a precision/speed dial: at test time the tolerance can be loosened to save "
    "time with little accuracy lost",
    source="Chen et al. 2018 (Neural ODEs), sec. 3 and fig. 3",
    published="'tuning the tolerance gives us a trade-off between accuracy and computational cost'; time is "
    "proportional to NFE (fig. 3b); train accurately, switch to a lower accuracy at test time",
    lesson="07",
    threshold=DIAL,
)
def measure_tolerance_dial(quick: bool) -> Measurement:
    config = _config(quick)
    sweep = ode_tolerance_sweep(config)
    f = DialFindings.from_sweep(sweep, config.ode_tol)
    tols = sorted({row.tol for row in sweep}, reverse=True)
    table = "; ".join(
        f"{t:g}: {100 * statistics.fmean(r.accuracy for r in sweep if r.tol == t):.1f}% / "
        f"{statistics.fmean(r.nfe for r in sweep if r.tol == t):.0f} NFE / "
        f"{1000 * statistics.fmean(r.seconds for r in sweep if r.tol == t):.1f} ms"
        for t in tols
    )
    looser = "; ".join(
        f"at {t:g}: NFE {_range([100 * v for v in p.saving], '.0f', ' %')} lower, time "
        f"{_range([100 * v for v in p.time_saving], '.0f', ' %')} lower, accuracy "
        f"{_range(p.loss, '.2f')} points lower ({parts_text(p.parts)})"
        for t, p in f.per_tol.items()
    )
    measured = (
        f"trained at {config.ode_tol:g}, {len(config.seeds)} seeds, whole test split in one batch; "
        f"tolerance: accuracy / NFE / time: {table}. {looser}"
    )
    if len(config.seeds) < 3:
        measured += f"; {len(config.seeds)} seeds cannot give an interval: run full mode"
    details = {
        "sweep": [{k: v for k, v in asdict(row).items() if k != "nfe_per_input"} for row in sweep],
        "per_tol": {
            f"{t:g}": {
                "saving": p.saving,
                "time_saving": p.time_saving,
                "loss": p.loss,
                "parts": {k: v.value for k, v in p.parts.items()},
            }
            for t, p in f.per_tol.items()
        },
    }
    return _measurement(measured, f.verdict, details, len(config.seeds))


ROW_IDS = (
    "capstone-accuracy-parity",
    "capstone-training-memory",
    "capstone-step-mismatch",
    "adaptive-compute-per-input",
    "deq-inference-cost",
    "deq-memory-reduction",
    "tolerance-dial-trained",
)

"""The lesson's ledger rows, in the order the notebook shows them."""
