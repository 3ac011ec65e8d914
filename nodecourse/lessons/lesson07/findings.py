"""Lesson 7's findings: verdicts and the numbers its sentences and tables quote, computed from the studies'
results. Each class is built by a ``from_<input>`` classmethod: the ``*Findings`` classes and
:class:`MemoryGrowth` judge the rows' thresholds; the :class:`~nodecourse.lessons.study.Findings` classes render
the lesson's tables and sentences (a cell shows them in one line).

Why this module is long: every lesson package keeps its findings in one module (``lessonNN/findings.py``
beside ``studies.py`` and ``rows.py``), which the notebook, the ledger rows and
``tests/test_lesson07_findings.py`` read; lesson 7 quotes more tables than any other (the capstone's four
models, memory, tolerance, timing), about twenty classes, one per table or verdict.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from nodecourse.claims import (
    ClaimVerdict,
    ConfidenceInterval,
    MedianInterval,
    combine,
    escape_markdown_cell,
    judge,
    judge_median,
)
from nodecourse.lessons.study import Findings

from .config import MODELS, TRAINED_FLOOR, WORK_UNITS, CapstoneConfig
from .studies import DepthMemory, DialSolve, PeerBytes, StepMismatch, Timings
from .thresholds import (
    ADAPTIVE,
    CONSTANT_SLACK,
    DEQ_INFER_COST,
    DEQ_TRAIN_COST,
    DIAL,
    DIAL_SAVING,
    LINEAR_SLACK,
    MEMORY_REDUCTION,
    MISMATCH,
    MISMATCH_DEQ_SLACK,
    PARITY,
)

__all__ = [
    "AdaptiveFindings",
    "AdaptiveWork",
    "CapstoneTable",
    "CostFindings",
    "CostRatios",
    "DialAtTolerance",
    "DialFindings",
    "MemoryGrowth",
    "MismatchFindings",
    "ModelSummary",
    "ParityFindings",
    "PeakOrder",
    "PeerMemoryTable",
    "PerInputWork",
    "ReductionFindings",
    "ReductionReading",
    "TimeRatios",
    "ToleranceTable",
    "annulus_row",
    "cost_ratios",
    "format_summary",
    "summary_table",
]


def _mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


@dataclass(frozen=True)
class ModelSummary:
    """One row of the capstone table (:func:`summary_table`): one model, means over its seeds.

    ``accuracy_mean`` / ``accuracy_sd``: test accuracy (fraction) over ``seeds`` seeds; ``parameters``;
    ``saved_kib``: bytes saved for backward in one training step (KiB); ``peak_mib``: the measured peak of
    that step (MiB, None where the platform cannot measure it); ``work_mean`` / ``work_min`` / ``work_max``:
    forward work per input (blocks, NFE or iterations, :data:`WORK_UNITS`) over every measured input;
    ``work_first_epoch`` / ``work_last_epoch``: mean work per batch in the first and last training epoch;
    ``backward_work``: backward NFE or iterations of the last training step (None for explicit models);
    ``train_s``: the whole training run (s); ``inference_ms_per_1000``: inference (ms per 1000 inputs);
    ``train_step_ms``: one training step (ms, median), None without interleaved timings.
    """

    model: str
    accuracy_mean: float
    accuracy_sd: float
    seeds: int
    parameters: int
    saved_kib: float
    peak_mib: float | None
    work_mean: float
    work_min: float
    work_max: float
    work_last_epoch: float
    work_first_epoch: float
    backward_work: float | None
    train_s: float
    inference_ms_per_1000: float
    train_step_ms: float | None = None


def summary_table(runs, timings: Timings | None = None) -> list[ModelSummary]:
    """One row per model of :data:`MODELS`, in that order: accuracy mean and sd over seeds, parameters,
    memory, work, times.

    With ``timings`` (:func:`timing_study`) the inference time is the mean over seeds of its interleaved
    medians, and ``train_step_ms`` is set; without, the single timed pass of each run.
    """
    rows = []
    for name in MODELS:
        rs = [r for r in runs if r.name == name]
        acc_mean, acc_sd = _mean_sd([r.accuracy for r in rs])
        per_input = [w for r in rs for w in r.work_per_input]
        peaks = [r.peak_bytes for r in rs if r.peak_bytes is not None]
        inference_ms = statistics.fmean(r.inference_seconds_per_1000 for r in rs) * 1000
        train_step_ms = None
        if timings is not None:
            inference_ms = 1e6 * statistics.fmean(t / n for t, n in zip(timings.inference_s[name], timings.n_test))
            train_step_ms = 1000 * statistics.fmean(timings.train_step_s[name])
        rows.append(
            ModelSummary(
                model=name,
                accuracy_mean=acc_mean,
                accuracy_sd=acc_sd,
                seeds=len(rs),
                parameters=rs[0].n_parameters,
                saved_kib=statistics.fmean(r.saved_bytes for r in rs) / 1024,
                peak_mib=statistics.fmean(peaks) / 2**20 if peaks else None,
                work_mean=statistics.fmean(per_input),
                work_min=min(per_input),
                work_max=max(per_input),
                work_last_epoch=statistics.fmean(r.work_per_epoch[-1] for r in rs),
                work_first_epoch=statistics.fmean(r.work_per_epoch[0] for r in rs),
                backward_work=(
                    statistics.fmean(r.backward_work for r in rs) if rs[0].backward_work is not None else None
                ),
                train_s=statistics.fmean(r.train_seconds for r in rs),
                inference_ms_per_1000=inference_ms,
                train_step_ms=train_step_ms,
            )
        )
    return rows


def format_summary(rows: Sequence[ModelSummary], annulus: dict[str, str] | None = None) -> str:
    """The capstone table as Markdown (for ``IPython.display.Markdown``); text cells escaped, so a
    ``|x|`` in the annulus column cannot cut its cell."""
    step = all(r.train_step_ms is not None for r in rows)
    head = (
        "| model | test accuracy (mean ± sd) | parameters | saved for backward (KiB) | peak training "
        "memory (MiB) | forward work per input | whole training run (s) | "
        + ("train step (ms, median) | inference (ms / 1000 inputs, median)" if step else "inference (ms / 1000 inputs)")
        + " | annulus |"
    )
    lines = [head, "|" + "---|" * (10 if step else 9)]
    for r in rows:
        unit = WORK_UNITS[r.model]
        work = (
            f"{r.work_mean:.0f} {unit}"
            if r.work_min == r.work_max
            else f"{r.work_mean:.1f} {unit} ({r.work_min:.0f}–{r.work_max:.0f})"
        )
        peak = "n/a" if r.peak_mib is None else f"{r.peak_mib:.1f}"
        times = (
            f"| {r.train_s:.1f} " + (f"| {r.train_step_ms:.1f} " if step else "") + f"| {r.inference_ms_per_1000:.0f} "
        )
        lines.append(
            f"| {r.model} | {100 * r.accuracy_mean:.1f} ± {100 * r.accuracy_sd:.1f} % ({r.seeds} seeds) "
            f"| {r.parameters:,} | {r.saved_kib:.0f} | {peak} | {escape_markdown_cell(work)} {times}"
            f"| {escape_markdown_cell((annulus or {}).get(r.model, 'not measured'))} |"
        )
    return "\n".join(lines)


def annulus_row(quick: bool = True) -> dict[str, str]:
    """ "Can it represent the annulus", per model, from lesson 3's study (same configuration as its
    ledger row, so the runs are shared when both run in one process). Lesson 3 trained a plain
    neural ODE and a ResNet; the DEQ and the unrolled block were not trained on the annulus."""
    from nodecourse.lessons import lesson03

    config = lesson03.QUICK_ANNULUS if quick else lesson03.FULL_ANNULUS
    runs = lesson03.annulus_study(config)
    f = lesson03.AnnulusFindings.from_runs(runs)
    n = len(config.seeds)
    arc = sum(f.node_has_wrong_arc.values())
    by = {(r.model_name, r.seed): r for r in runs}
    resnet_ok = sum(by["ResNet", s].probes[1.25].min_margin > 0 for s in config.seeds)
    anode_ok = sum(by["ANODE", s].probes[1.25].min_margin > 0 for s in config.seeds)
    return {
        "ResNet": f"yes: positive margin on |x|=1.25 on {resnet_ok}/{n} seeds (lesson 3)",
        "Neural ODE": (
            f"not in its own dimension: wrong arc on |x|=1.25 on {arc}/{n} seeds; with one extra "
            f"dimension, margin positive on {anode_ok}/{n} (lesson 3)"
        ),
        "DEQ": "not measured (lesson 3 trained the flows and a ResNet only)",
        "Unrolled": "not measured (lesson 3 trained the flows and a ResNet only)",
    }


@dataclass(frozen=True)
class MismatchFindings:
    """The step-mismatch claim judged (:meth:`MismatchFindings.from_mismatch`); accuracies in percent, seeds in
    run order.

    ``unrolled_by_steps``: step count -> mean accuracy of the unrolled model over seeds; ``worst_steps``:
    the other step count with the worst mean; ``drops``: per seed, accuracy at the trained steps minus at
    ``worst_steps`` (points), ``drop_interval`` their 95 % interval (None with too few seeds);
    ``deq_as_trained`` / ``deq_tight``: the DEQ's mean accuracy as trained and with the 100x tighter solve;
    ``deq_changes``: per seed, ``|tight - as trained|`` (points), ``deq_interval`` their interval;
    ``reasons``: why each part was judged so (``"unrolled"``, ``"deq"``); ``parts``: part -> verdict.
    """

    unrolled_by_steps: dict[int, float]
    worst_steps: int
    drops: list[float]
    drop_interval: ConfidenceInterval | None
    deq_as_trained: float
    deq_tight: float
    deq_changes: list[float]
    deq_interval: ConfidenceInterval | None
    reasons: dict[str, str]
    parts: dict[str, ClaimVerdict]
    verdict: ClaimVerdict

    @classmethod
    def from_mismatch(cls, mismatch: StepMismatch, config: CapstoneConfig, *, min_seeds: int = 3) -> MismatchFindings:
        """Judge both parts of the step-mismatch claim against :data:`MISMATCH` (per-seed values, 95 % interval).

        Unrolled: the drop from the trained step count to the other step count with the worst mean, per seed,
        must be >= ``MISMATCH.value`` points. DEQ: ``|accuracy with a 100x tighter solve - as trained|`` per seed
        must be <= :data:`MISMATCH_DEQ_SLACK` points.
        """
        un = {k: [100 * a for a in v] for k, v in mismatch.unrolled.items()}
        un_mean = {k: statistics.fmean(v) for k, v in un.items()}
        trained = un[config.unrolled_steps]
        worst_k = min((k for k in un if k != config.unrolled_steps), key=lambda k: un_mean[k])
        drops = [t - w for t, w in zip(trained, un[worst_k])]
        as_trained = [100 * a for a in mismatch.deq["as trained"]]
        tight = [100 * a for a in mismatch.deq["tol / 100, 4x iterations"]]
        changes = [abs(t - a) for t, a in zip(tight, as_trained)]
        v_un, iv_un, why_un = judge(drops, MISMATCH.value, above=True, min_seeds=min_seeds)
        v_deq, iv_deq, why_deq = judge(changes, MISMATCH_DEQ_SLACK, above=False, min_seeds=min_seeds)
        parts = {"unrolled loses >= 5 points": v_un, "DEQ moves <= 1 point": v_deq}
        return cls(
            unrolled_by_steps=un_mean,
            worst_steps=worst_k,
            drops=drops,
            drop_interval=iv_un,
            deq_as_trained=statistics.fmean(as_trained),
            deq_tight=statistics.fmean(tight),
            deq_changes=changes,
            deq_interval=iv_deq,
            reasons={"unrolled": why_un, "deq": why_deq},
            parts=parts,
            verdict=combine(parts),
        )


@dataclass(frozen=True)
class MemoryGrowth:
    """One model's training memory against depth, judged (:meth:`MemoryGrowth.from_memory`): ``bytes`` saved
    for backward and ``work`` (blocks, steps, NFE or iterations) at three depths, shallowest first; ``ok``: the
    growth the claim names (constant or linear) is there; ``work_grows``: the deepest setting did more work."""

    ok: bool
    work_grows: bool
    bytes: list[int]
    work: list[float]

    @classmethod
    def from_memory(cls, mem: dict[str, Sequence[DepthMemory]]) -> dict[str, MemoryGrowth]:
        """Judge :data:`MEMORY_GROWTH`: constant (ODE, DEQ: saved bytes equal within :data:`CONSTANT_SLACK`
        while the work grows) and linear (ResNet, unrolled: equal positive increments per added depth,
        within :data:`LINEAR_SLACK`). ``mem``: from :func:`~.studies.memory_vs_depth`; returns model -> judged
        growth, one per model of ``mem``."""
        found = {}
        for name, rows in mem.items():
            b = [r.saved_bytes for r in rows]
            work_grows = rows[-1].work > rows[0].work
            if name in ("Neural ODE", "DEQ"):
                ok = max(b) <= (1 + CONSTANT_SLACK) * min(b)
            else:
                d1, d2 = b[1] - b[0], b[2] - b[1]
                ok = d1 > 0 and abs(d2 - d1) <= LINEAR_SLACK * d1
            found[name] = cls(ok, work_grows, b, [r.work for r in rows])
        return found


@dataclass(frozen=True)
class ReductionReading:
    """One reading (saved bytes or measured peak) of :meth:`ReductionFindings.from_bytes`. ``reductions``: peer ->
    ``1 - DEQ/peer`` per seed (fraction), None when the reading was not measured; ``best_peer``: the peer
    with the largest mean reduction; ``interval``: its 95 % interval over seeds; ``verdict`` and ``reason``
    as :func:`~nodecourse.claims.judge` gave them (the reason alone when not measured)."""

    reason: str
    reductions: dict[str, list[float]] | None = None
    best_peer: str | None = None
    interval: ConfidenceInterval | None = None
    verdict: ClaimVerdict | None = None


@dataclass(frozen=True)
class ReductionFindings:
    """:data:`MEMORY_REDUCTION` judged: ``readings`` (``"saved"``, ``"peak"``) -> :class:`ReductionReading`;
    ``parts``: ``"<reading> bytes"`` -> verdict; ``verdict``: both parts combined."""

    readings: dict[str, ReductionReading]
    parts: dict[str, ClaimVerdict]
    verdict: ClaimVerdict

    @classmethod
    def from_bytes(
        cls, deq_bytes: dict[str, list[float | None]], peers: dict[str, PeerBytes], *, min_seeds: int = 2
    ) -> ReductionFindings:
        """Judge :data:`MEMORY_REDUCTION` on each reading (``"saved"``, ``"peak"``).

        ``deq_bytes[reading]``: the trained DEQ's bytes per seed; ``peers``: from :func:`reduction_peers`.
        Per peer, the reduction ``1 - DEQ/peer`` per seed; the peer with the largest mean reduction is judged
        (95 % interval over seeds, ``min_seeds``: the bytes are set by the graph, not by training noise). The
        ledger row passes one peer, the one that does the DEQ's work (its block unrolled for the solve's
        iterations), so no choice of depth sets its verdict. Returns per reading the reductions by peer, the
        best peer, its interval and verdict, and the overall verdict (both readings must hold).
        """
        readings: dict[str, ReductionReading] = {}
        verdicts = {}
        for reading, key in (("saved", "saved_bytes"), ("peak", "peak_bytes")):
            deq = deq_bytes.get(reading) or []
            usable = {p: getattr(v, key) for p, v in peers.items() if getattr(v, key)}
            if not deq or any(d is None for d in deq) or not usable:
                verdicts[f"{reading} bytes"] = ClaimVerdict.NOT_MEASURABLE
                readings[reading] = ReductionReading("not measured on this platform")
                continue
            red = {p: [1 - d / peer_bytes for d in deq] for p, peer_bytes in usable.items()}
            best = max(red, key=lambda p: statistics.fmean(red[p]))
            verdict, iv, why = judge(red[best], MEMORY_REDUCTION.value, above=True, min_seeds=min_seeds)
            verdicts[f"{reading} bytes"] = verdict
            readings[reading] = ReductionReading(why, red, best, iv, verdict)
        return cls(readings, verdicts, combine(verdicts))


def _by_seed(sweep: Sequence[DialSolve], tol: float) -> dict[int, DialSolve]:
    return {row.seed: row for row in sweep if row.tol == tol}


@dataclass(frozen=True)
class AdaptiveFindings:
    """:data:`ADAPTIVE` judged per test-time tolerance (keys: tolerances, loosest first). ``spread``:
    tolerance -> seed -> largest minus smallest per-input NFE; ``ranges``: tolerance -> (smallest, largest)
    per-input NFE over all seeds; ``verdict_by_tol`` / ``interval_by_tol``: the spread judged;
    ``readings``: the two readings (at the training tolerance, at another) -> verdict; ``verdict``: combined."""

    spread: dict[float, dict[int, float]]
    ranges: dict[float, tuple[float, float]]
    verdict_by_tol: dict[float, ClaimVerdict]
    interval_by_tol: dict[float, ConfidenceInterval | None]
    readings: dict[str, ClaimVerdict]
    verdict: ClaimVerdict

    @classmethod
    def from_sweep(cls, sweep: Sequence[DialSolve], train_tol: float, *, min_seeds: int = 3) -> AdaptiveFindings:
        """Judge :data:`ADAPTIVE` (per-input NFE spread at the training tolerance) and the reading
        :data:`ADAPTIVE_OTHER` (the same at the other swept tolerances: holds if it holds at one)."""
        tols = sorted({row.tol for row in sweep}, reverse=True)
        spread = {
            t: {s: max(r.nfe_per_input) - min(r.nfe_per_input) for s, r in _by_seed(sweep, t).items()} for t in tols
        }
        ranges = {
            t: (
                min(min(r.nfe_per_input) for r in _by_seed(sweep, t).values()),
                max(max(r.nfe_per_input) for r in _by_seed(sweep, t).values()),
            )
            for t in tols
        }
        judged = {t: judge(list(spread[t].values()), ADAPTIVE.value, above=True, min_seeds=min_seeds) for t in tols}
        main = judged[train_tol][0]
        others = [judged[t][0] for t in tols if t != train_tol]
        if ClaimVerdict.HOLDS in others:
            other = ClaimVerdict.HOLDS
        elif ClaimVerdict.UNDECIDED in others or not others:
            other = ClaimVerdict.UNDECIDED
        else:
            other = ClaimVerdict.DOES_NOT_HOLD
        readings = {"at the training tolerance": main, "at another test-time tolerance": other}
        return cls(
            spread=spread,
            ranges=ranges,
            verdict_by_tol={t: v[0] for t, v in judged.items()},
            interval_by_tol={t: v[1] for t, v in judged.items()},
            readings=readings,
            verdict=combine(readings),
        )


@dataclass(frozen=True)
class DialAtTolerance:
    """:data:`DIAL` judged at one looser test-time tolerance, per seed (seeds in order): ``saving``: NFE
    saving ``1 - nfe(tol) / nfe(train_tol)`` (fraction); ``time_saving``: the same for the time; ``loss``:
    accuracy lost in points; their intervals, ``parts`` (part -> verdict) and ``verdict``."""

    saving: list[float]
    time_saving: list[float]
    loss: list[float]
    saving_interval: ConfidenceInterval | None
    loss_interval: ConfidenceInterval | None
    parts: dict[str, ClaimVerdict]
    verdict: ClaimVerdict


@dataclass(frozen=True)
class DialFindings:
    """:data:`DIAL` judged: ``looser``: the tolerances judged (10x and 100x looser than training, tightest
    first); ``per_tol``: tolerance -> :class:`DialAtTolerance`; ``verdict``: the best of theirs."""

    looser: list[float]
    per_tol: dict[float, DialAtTolerance]
    verdict: ClaimVerdict

    @classmethod
    def from_sweep(cls, sweep: Sequence[DialSolve], train_tol: float, *, min_seeds: int = 3) -> DialFindings:
        """Judge :data:`DIAL` at each test-time tolerance looser than ``train_tol`` (10x and 100x looser):
        per seed the NFE saving ``1 - nfe(tol) / nfe(train_tol)`` (>= :data:`DIAL_SAVING`) and the accuracy
        loss in points (<= ``DIAL.value``). The claim holds if both parts hold at one tolerance; a tolerance
        that saves nothing does not hold whatever its accuracy (a dial that does not turn)."""
        base = _by_seed(sweep, train_tol)
        looser = [t for t in sorted({row.tol for row in sweep}) if t > train_tol and t <= 100 * train_tol * (1 + 1e-9)]
        per_tol = {}
        for t in looser:
            rows = _by_seed(sweep, t)
            seeds = sorted(rows)
            saving = [1 - rows[s].nfe / base[s].nfe for s in seeds]
            time_saving = [1 - rows[s].seconds / base[s].seconds for s in seeds]
            loss = [100 * (base[s].accuracy - rows[s].accuracy) for s in seeds]
            v_save, iv_save, _ = judge(saving, DIAL_SAVING, above=True, min_seeds=min_seeds)
            v_loss, iv_loss, _ = judge(loss, DIAL.value, above=False, min_seeds=min_seeds)
            parts = {"NFE >= 20 % lower": v_save, "accuracy <= 1 point lower": v_loss}
            # No saving, no dial: an unchanged accuracy then says nothing about the trade-off.
            verdict = ClaimVerdict.DOES_NOT_HOLD if v_save is ClaimVerdict.DOES_NOT_HOLD else combine(parts)
            per_tol[t] = DialAtTolerance(saving, time_saving, loss, iv_save, iv_loss, parts, verdict)
        order = (ClaimVerdict.HOLDS, ClaimVerdict.HOLDS_IN_PART, ClaimVerdict.UNDECIDED, ClaimVerdict.DOES_NOT_HOLD)
        verdicts = [v.verdict for v in per_tol.values()]
        verdict = next((v for v in order if v in verdicts), ClaimVerdict.UNDECIDED)
        return cls(looser, per_tol, verdict)


@dataclass(frozen=True)
class CostRatios:
    """One model's time over the base model's, per seed (seeds in :class:`Timings` order): ``inference``
    on the whole test split and ``train`` for one training step (dimensionless ratios)."""

    inference: list[float]
    train: list[float]


def cost_ratios(timings: Timings, name: str, base: str = "ResNet") -> CostRatios:
    """Per seed, ``name``'s time over ``base``'s, at inference and for a training step."""
    return CostRatios(
        inference=[a / b for a, b in zip(timings.inference_s[name], timings.inference_s[base])],
        train=[a / b for a, b in zip(timings.train_step_s[name], timings.train_step_s[base])],
    )


@dataclass(frozen=True)
class CostFindings:
    """:data:`DEQ_COST` judged: ``ratios``: the DEQ's time over the ResNet's per seed (:func:`cost_ratios`);
    ``train_interval`` / ``inference_interval``: the medians' order-statistic intervals (None with too few
    seeds); ``parts`` (part -> verdict) and ``verdict``."""

    ratios: CostRatios
    train_interval: MedianInterval | None
    inference_interval: MedianInterval | None
    parts: dict[str, ClaimVerdict]
    verdict: ClaimVerdict

    @classmethod
    def from_timings(cls, timings: Timings, *, min_seeds: int = 5) -> CostFindings:
        """Judge :data:`DEQ_COST`: the DEQ's training-step and inference ratios over the ResNet's, per seed,
        against :data:`DEQ_TRAIN_COST` and :data:`DEQ_INFER_COST` (both parts), each on the median over seeds
        (:func:`~nodecourse.claims.judge_median`: timing ratios are heavy-tailed)."""
        ratios = cost_ratios(timings, "DEQ")
        v_train, iv_train, _ = judge_median(ratios.train, DEQ_TRAIN_COST.value, above=True, min_seeds=min_seeds)
        v_inf, iv_inf, _ = judge_median(ratios.inference, DEQ_INFER_COST.value, above=True, min_seeds=min_seeds)
        parts = {f"training >= {DEQ_TRAIN_COST.value:g}x": v_train, f"inference >= {DEQ_INFER_COST.value:g}x": v_inf}
        return cls(ratios, iv_train, iv_inf, parts, combine(parts))


@dataclass(frozen=True)
class ParityFindings:
    """:data:`PARITY` judged. ``means``: model -> mean test accuracy (percent); ``deficits``: model (not the
    ResNet) -> the ResNet's accuracy minus its own, per seed (points); ``by_model`` / ``intervals``: each
    model's deficit judged, with its 95 % interval; ``trained``: every model reached :data:`TRAINED_FLOOR`;
    ``verdict``; ``seeds``: seeds compared."""

    means: dict[str, float]
    deficits: dict[str, list[float]]
    by_model: dict[str, ClaimVerdict]
    intervals: dict[str, ConfidenceInterval | None]
    trained: bool
    verdict: ClaimVerdict
    seeds: int

    @classmethod
    def from_runs(cls, runs, *, min_seeds: int = 3) -> ParityFindings:
        """Each model's accuracy deficit to the ResNet (points, paired per seed), judged against :data:`PARITY`.

        The claim holds when every model's 95 % interval is within the margin. ``trained`` is False when some
        model's mean accuracy is under :data:`TRAINED_FLOOR` (quick mode: then the row is undecided, full mode
        trains enough).
        """
        acc = {(r.name, r.seed): 100 * r.accuracy for r in runs}
        seeds = sorted({r.seed for r in runs})
        deficits = {n: [acc["ResNet", s] - acc[n, s] for s in seeds] for n in MODELS if n != "ResNet"}
        means = {n: statistics.fmean(acc[n, s] for s in seeds) for n in MODELS}
        by_model, intervals = {}, {}
        for n, d in deficits.items():
            by_model[n], intervals[n], _ = judge(d, PARITY.value, above=False, min_seeds=min_seeds)
        trained = min(means.values()) >= 100 * TRAINED_FLOOR
        verdict = combine(by_model) if trained else ClaimVerdict.UNDECIDED
        return cls(means, deficits, by_model, intervals, trained, verdict, len(seeds))


# --- what the notebook shows ----------------------------------------------------------------------


@dataclass(frozen=True)
class CapstoneTable(Findings):
    """The capstone table: one row per model (:func:`summary_table`), and lesson 3's annulus column."""

    rows: tuple[ModelSummary, ...]
    annulus: dict[str, str]

    def markdown(self) -> str:
        return format_summary(self.rows, self.annulus)


def _span(values: Sequence[float]) -> tuple[float, float]:
    return min(values), max(values)


@dataclass(frozen=True)
class PerInputWork(Findings):
    """Forward work spent on each input by the DEQ (iterations) and the neural ODE (NFE), all seeds."""

    deq_iters: tuple[float, ...]
    ode_nfe: tuple[float, ...]

    @classmethod
    def from_runs(cls, runs) -> PerInputWork:
        return cls(
            tuple(w for r in runs if r.name == "DEQ" for w in r.work_per_input),
            tuple(w for r in runs if r.name == "Neural ODE" for w in r.work_per_input),
        )

    def markdown(self) -> str:
        (d_lo, d_hi), (o_lo, o_hi) = _span(self.deq_iters), _span(self.ode_nfe)
        ode = f"the same {o_lo:.0f} NFE on every input" if o_lo == o_hi else f"{o_lo:.0f} to {o_hi:.0f} NFE per input"
        return (
            f"The DEQ spends {d_lo:.0f} to {d_hi:.0f} iterations per input (mean "
            f"{statistics.fmean(self.deq_iters):.1f}); the neural ODE, at its training tolerance, spends {ode}."
        )


@dataclass(frozen=True)
class ToleranceRow:
    """The trained neural ODEs at one test-time tolerance (means over seeds; per-input NFE over all inputs)."""

    tol: float
    accuracy: float  # fraction
    nfe: float  # one batched solve
    nfe_min: float
    nfe_max: float
    seconds: float  # one batched forward pass
    trained: bool  # the training tolerance


@dataclass(frozen=True)
class ToleranceTable(Findings):
    """The tolerance dial of the trained neural ODEs (:func:`~.studies.ode_tolerance_sweep`), loosest first."""

    rows: tuple[ToleranceRow, ...]

    @classmethod
    def from_sweep(cls, sweep: Sequence[DialSolve], train_tol: float) -> ToleranceTable:
        rows = []
        for t in sorted({r.tol for r in sweep}, reverse=True):
            at = [r for r in sweep if r.tol == t]
            each = [v for r in at for v in r.nfe_per_input]
            rows.append(
                ToleranceRow(
                    t,
                    statistics.fmean(r.accuracy for r in at),
                    statistics.fmean(r.nfe for r in at),
                    min(each),
                    max(each),
                    statistics.fmean(r.seconds for r in at),
                    t == train_tol,
                )
            )
        return cls(tuple(rows))

    def markdown(self) -> str:
        lines = [
            "| test-time tolerance | test accuracy | NFE, one batch | NFE per input (min–max) | time, one batch (ms) |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r.tol:g}{' (trained)' if r.trained else ''} | {100 * r.accuracy:.2f} % | {r.nfe:.0f} | "
            f"{r.nfe_min:.0f}–{r.nfe_max:.0f} | {1000 * r.seconds:.1f} |"
            for r in self.rows
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class AdaptiveWork(Findings):
    """Whether the trained neural ODE spends different work on different inputs, at the training tolerance and
    at the others (per-input NFE ranges from the dial sweep), with the row's readings."""

    train_tol: float
    ranges: dict[float, tuple[float, float]]
    readings: dict[str, ClaimVerdict]

    @classmethod
    def from_sweep(cls, sweep: Sequence[DialSolve], train_tol: float) -> AdaptiveWork:
        f = AdaptiveFindings.from_sweep(list(sweep), train_tol)
        return cls(train_tol, f.ranges, f.readings)

    def markdown(self) -> str:
        lo, hi = self.ranges[self.train_tol]
        varied = [f"{t:g} ({a:.0f}–{b:.0f})" for t, (a, b) in self.ranges.items() if b > a and t != self.train_tol]
        text = f"At the training tolerance {self.train_tol:g} every test input gets " + (
            f"the same {lo:.0f} NFE: the per-input adaptation the paper names is not there in this model as trained"
            if lo == hi
            else f"{lo:.0f} to {hi:.0f} NFE"
        )
        if varied:
            text += f". Inputs differ at other tolerances: {', '.join(varied)}"
        return text + (
            ". In one batch the solver takes one set of steps for all inputs (its error norm covers the "
            "batch), so a batched model spends the hardest input's work on every input."
        )


@dataclass(frozen=True)
class TimeRatio:
    """One model's times over the ResNet's, per seed: a training step, inference, the whole training run."""

    model: str
    train: tuple[float, ...]
    inference: tuple[float, ...]
    whole: tuple[float, ...]


def _ratio_range(values: Sequence[float]) -> str:
    return f"{min(values):.1f}x to {max(values):.1f}x"


@dataclass(frozen=True)
class TimeRatios(Findings):
    """Every model's times as ratios to the ResNet's, per seed (interleaved medians, :func:`~.studies.timing_study`)."""

    ratios: tuple[TimeRatio, ...]

    @classmethod
    def from_studies(cls, timings: dict, runs) -> TimeRatios:
        out = []
        for name in MODELS:
            r = cost_ratios(timings, name)
            mine, base = ([x for x in runs if x.name == n] for n in (name, "ResNet"))
            whole = tuple(a.train_seconds / b.train_seconds for a, b in zip(mine, base))
            out.append(TimeRatio(name, tuple(r.train), tuple(r.inference), whole))
        return cls(tuple(out))

    def markdown(self) -> str:
        by = {r.model: r for r in self.ratios}
        lines = [
            "| model | training step / ResNet's | inference / ResNet's | whole training run / ResNet's |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {r.model} | {_ratio_range(r.train)} | {_ratio_range(r.inference)} | {_ratio_range(r.whole)} |"
            for r in self.ratios
        ]
        ode, deq = by["Neural ODE"], by["DEQ"]
        lines += [
            "",
            f"Over the seeds, the neural ODE's training step takes {_ratio_range(ode.train)} the ResNet's "
            f"and its inference {_ratio_range(ode.inference)}; its whole training run took "
            f"{_ratio_range(ode.whole)} the ResNet's. The DEQ: training step {_ratio_range(deq.train)}, "
            f"inference {_ratio_range(deq.inference)}.",
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class PeakOrder(Findings):
    """The measured peak of one training step per model (MiB; None where this platform cannot measure it)."""

    peak_mib: dict[str, float | None]
    batch: int

    @classmethod
    def from_table(cls, rows: Sequence[ModelSummary], config: CapstoneConfig) -> PeakOrder:
        return cls({r.model: r.peak_mib for r in rows}, config.memory_batch)

    def markdown(self) -> str:
        if any(v is None for v in self.peak_mib.values()):
            return "The peak of a training step cannot be measured on this platform; the saved bytes above stand."
        order = sorted(self.peak_mib, key=self.peak_mib.get, reverse=True)
        return (
            f"Measured peak of one training step (batch {self.batch}), highest first: "
            + ", ".join(f"{n} {self.peak_mib[n]:.2f} MiB" for n in order)
            + "."
        )


@dataclass(frozen=True)
class PeerMemory:
    """One explicit peer of the DEQ: its parameters and training memory, and the DEQ's reductions against it."""

    name: str
    parameters: int
    saved_bytes: int
    peak_bytes: int | None
    saved_reduction: float
    peak_reduction: float | None


@dataclass(frozen=True)
class PeerMemoryTable(Findings):
    """The trained DEQ's training memory (means over seeds) against deeper explicit peers
    (:func:`~.studies.reduction_peers`)."""

    deq_saved: float
    deq_peak: float | None
    peers: tuple[PeerMemory, ...]

    @classmethod
    def from_studies(cls, peers: dict[str, PeerBytes], runs) -> PeerMemoryTable:
        deq = [r for r in runs if r.name == "DEQ"]
        saved = statistics.fmean(r.saved_bytes for r in deq)
        peaks = [r.peak_bytes for r in deq]
        peak = None if None in peaks else statistics.fmean(peaks)
        rows = tuple(
            PeerMemory(
                k,
                p.parameters,
                p.saved_bytes,
                p.peak_bytes,
                1 - saved / p.saved_bytes,
                None if peak is None or p.peak_bytes is None else 1 - peak / p.peak_bytes,
            )
            for k, p in peers.items()
        )
        return cls(saved, peak, rows)

    def markdown(self) -> str:
        lines = [
            "| peer | parameters | saved for backward (KiB) | DEQ's reduction, saved | measured peak (MiB) | "
            "DEQ's reduction, peak |",
            "|---|---|---|---|---|---|",
        ]
        for p in self.peers:
            peak = "n/a" if p.peak_bytes is None else f"{p.peak_bytes / 2**20:.2f}"
            red = "n/a" if p.peak_reduction is None else f"{100 * p.peak_reduction:.0f} %"
            lines.append(
                f"| {escape_markdown_cell(p.name)} | {p.parameters:,} | {p.saved_bytes / 1024:.0f} | "
                f"{100 * p.saved_reduction:.0f} % | {peak} | {red} |"
            )
        deq_peak = "n/a" if self.deq_peak is None else f"{self.deq_peak / 2**20:.2f} MiB"
        lines += ["", f"The DEQ (trained): saved {self.deq_saved / 1024:.0f} KiB, peak {deq_peak}."]
        return "\n".join(lines)
