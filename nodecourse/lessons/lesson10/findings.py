"""Lesson 10's findings: the verdicts and numbers each paragraph of the lesson quotes, computed from the
studies' results and rendered by ``markdown()`` (a notebook cell displays them by ending with them).

Why this module is long: every lesson package keeps its findings in one module (``lessonNN/findings.py``
beside ``studies.py`` and ``rows.py``), which the notebook, the ledger rows and
``tests/test_lesson10_findings.py`` read; it holds one class per paragraph the lesson quotes numbers in (NFE
growth, regularisation, seminorms, exact gradients, reversible Heun, stability, the explorer, the closing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nodecourse.claims import (
    ClaimVerdict,
    ConfidenceInterval,
    MedianInterval,
    Threshold,
    combine,
    judge,
    judge_median,
    unrun_scale_parts,
    verdict_text,
)
from nodecourse.lessons.lesson10.config import (
    ACCURACY_DROP,
    FLAT_FACTOR,
    KINETIC_SCALE,
    KINETIC_THRESHOLD,
    MEMORY_THRESHOLD,
    NFE_GROWTH_THRESHOLD,
    PUBLISHED_SPEEDUP,
    SEMINORM_THRESHOLD,
)
from nodecourse.lessons.lesson10.studies import (
    ExactRow,
    MoonsRun,
    Route,
    SeminormTaskResult,
    StabilityCase,
    TrainedStability,
)
from nodecourse.lessons.study import Findings
from nodecourse.measure import MemorySweep, markdown_table

__all__ = [
    "FASTER_PART",
    "ClosingFindings",
    "ControlledSeminorm",
    "ExactFindings",
    "ExplorerFindings",
    "NFEGrowthFindings",
    "RegularisationFindings",
    "RegulariserCheck",
    "ReversibleMemoryFindings",
    "ReversibleRouteFindings",
    "RoundTrip",
    "SeminormFindings",
    "SeminormMoonsReading",
    "StabilityFindings",
    "TrainedStabilityFindings",
    "TrainingTable",
]

LIBRARIES = ("nodecourse", "torchdiffeq")


def _exp_interval(iv: ConfidenceInterval | None) -> ConfidenceInterval | None:
    """An interval judged on log ratios, mapped back to ratios (a geometric-mean interval)."""
    if iv is None:
        return None
    return ConfidenceInterval(
        math.exp(iv.mean), math.nan, math.exp(iv.lo), math.exp(iv.hi), math.exp(iv.minimum), math.exp(iv.maximum), iv.n
    )


def span(iv, fmt: str = "{:.2f}") -> str:
    """``[lo, hi]`` of an interval, or "no interval (too few seeds)"."""
    return "no interval (too few seeds)" if iv is None else f"[{fmt.format(iv.lo)}, {fmt.format(iv.hi)}]"


def _listed(values, fmt: str = "{:.2f}") -> str:
    return ", ".join(fmt.format(v) for v in values)


def points(fraction: float) -> str:
    """A signed accuracy difference in percentage points (0.021 -> "+2.1"): the unit of the 2-point margin."""
    return f"{100 * fraction:+.1f}"


def points_span(iv) -> str:
    """:func:`span` of an interval of accuracy differences, in points."""
    return "no interval (too few seeds)" if iv is None else f"[{points(iv.lo)}, {points(iv.hi)}] points"


# ----------------------------------------------------------------------------------------------
# Section 1-2: solver work in training, the regularisers


@dataclass(frozen=True)
class NFEGrowthFindings(Findings):
    """Unregularised runs: forward NFE per step in the first and last tenth of training, per seed."""

    first: tuple[float, ...]
    last: tuple[float, ...]
    ratios: tuple[float, ...]
    verdict: ClaimVerdict
    interval: ConfidenceInterval | None  # of the ratio (geometric mean)
    reason: str

    @classmethod
    def from_runs(cls, runs: tuple[MoonsRun, ...], threshold: Threshold = NFE_GROWTH_THRESHOLD) -> NFEGrowthFindings:
        mine = [r for r in runs if r.setting == "none"]
        ratios = tuple(r.last_tenth / r.first_tenth for r in mine)
        verdict, iv, reason = judge([math.log(r) for r in ratios], math.log(threshold.value))  # on a log scale
        return cls(
            tuple(r.first_tenth for r in mine),
            tuple(r.last_tenth for r in mine),
            ratios,
            verdict,
            _exp_interval(iv),
            reason,
        )

    def markdown(self) -> str:
        return (
            f"Without a regulariser the forward NFE per step went from {min(self.first):.0f}–{max(self.first):.0f} "
            f"(mean over the first tenth of training, per seed) to {min(self.last):.0f}–{max(self.last):.0f} "
            f"(last tenth): a factor of {_listed(self.ratios)} per seed (95 % interval "
            f"{span(self.interval)} of the geometric mean, over {len(self.ratios)} seeds). Against the "
            f"{NFE_GROWTH_THRESHOLD.value:g}x threshold: **{verdict_text(self.verdict, len(self.ratios))}**. "
            "Nothing in the loss asks the dynamics to stay easy to solve, and the solver pays for whatever "
            "shape the training gives them."
        )


@dataclass(frozen=True)
class RegulariserCheck(Findings):
    """The regularisers as extra state against direct computations on a dense trajectory."""

    kinetic_error: float  # largest relative difference, extra state vs the trapezoidal rule
    trapezoid_error: float  # the trapezoidal rule's own error (Richardson estimate)
    per_sample_min: float  # one-probe Jacobian estimate, relative error per sample
    per_sample_max: float
    batch_error: float  # of the batch mean
    standard_error: float  # of the batch mean, relative
    n_samples: int
    n_times: int
    nfe_with: int
    nfe_without: int

    @classmethod
    def from_trajectory(
        cls, kinetic_state, jacobian_state, slopes, frobenius2, ts, nfe_with: int, nfe_without: int
    ) -> RegulariserCheck:
        """From the wrapper's integrals ``(B,)``, the field's ``slopes (T, B, d)`` and ``||df/dz||_F^2 (T, B)``
        on a dense trajectory at times ``ts (T,)``, and the NFE with and without the extra state."""
        import torch

        kinetic_direct = torch.trapezoid(slopes.pow(2).sum(-1), ts, dim=0)
        kinetic_half = torch.trapezoid(slopes[::2].pow(2).sum(-1), ts[::2], dim=0)  # every other time
        jacobian_exact = torch.trapezoid(frobenius2, ts, dim=0)
        diff = jacobian_state - jacobian_exact
        per_sample = diff / jacobian_exact
        return cls(
            float(((kinetic_state - kinetic_direct).abs() / kinetic_direct).max()),
            float(((kinetic_half - kinetic_direct).abs() / kinetic_direct).max()) / 3,  # error ~ h^2
            float(per_sample.min()),
            float(per_sample.max()),
            float(diff.mean() / jacobian_exact.mean()),
            float(diff.std() / math.sqrt(len(diff)) / jacobian_exact.mean()),
            len(diff),
            len(ts),
            int(nfe_with),
            int(nfe_without),
        )

    def markdown(self) -> str:
        work = (
            "and here they added no steps."
            if self.nfe_with == self.nfe_without
            else f"and here they changed the work by {self.nfe_with - self.nfe_without:+d} evaluations."
        )
        return (
            f"Kinetic energy as extra state against the trapezoidal rule on {self.n_times} times: largest "
            f"relative difference {self.kinetic_error:.1e} over the {self.n_samples} samples; the trapezoidal "
            f"rule's own error, estimated from {(self.n_times + 1) // 2} against {self.n_times} times, is "
            f"{self.trapezoid_error:.1e}. The one-probe Jacobian estimate is noisy per sample (relative error "
            f"from {self.per_sample_min:+.0%} to {self.per_sample_max:+.0%}); its batch mean, which the loss "
            f"uses, is off by {self.batch_error:+.1%}, {abs(self.batch_error) / self.standard_error:.1f} "
            f"standard errors of the mean ({self.standard_error:.1%}): what an unbiased estimate with this "
            f"spread gives. The augmented solve took {self.nfe_with} evaluations and the plain one "
            f"{self.nfe_without}: the extra channels are under the same error control, {work}"
        )


@dataclass(frozen=True)
class SettingSummary:
    """Means over seeds of one training setting."""

    setting: str
    nfe_first: float
    nfe_last: float
    test_nfe: float
    accuracy: float
    seconds: float
    ms_per_evaluation: float  # training seconds over forward evaluations (backward work included)


@dataclass(frozen=True)
class TrainingTable(Findings):
    """One line per setting: NFE at the start and the end of training, test NFE, accuracy, seconds."""

    settings: tuple[SettingSummary, ...]

    @classmethod
    def from_runs(cls, runs: tuple[MoonsRun, ...]) -> TrainingTable:
        out = []
        for name in dict.fromkeys(r.setting for r in runs):
            mine = [r for r in runs if r.setting == name]
            mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
            out.append(
                SettingSummary(
                    name,
                    mean([r.first_tenth for r in mine]),
                    mean([r.last_tenth for r in mine]),
                    mean([r.test_nfe for r in mine]),
                    mean([r.accuracy for r in mine]),
                    mean([r.seconds for r in mine]),
                    1e3 * sum(r.seconds for r in mine) / sum(sum(r.nfe) for r in mine),
                )
            )
        return cls(tuple(out))

    def __getitem__(self, setting: str) -> SettingSummary:
        return next(s for s in self.settings if s.setting == setting)

    def markdown(self) -> str:
        return markdown_table(
            ["regulariser", "NFE first tenth", "NFE last tenth", "test NFE", "test accuracy", "train seconds"],
            [
                [
                    s.setting,
                    f"{s.nfe_first:.1f}",
                    f"{s.nfe_last:.1f}",
                    f"{s.test_nfe:.1f}",
                    f"{s.accuracy:.3f}",
                    f"{s.seconds:.2f}",
                ]
                for s in self.settings
            ],
        )


FASTER_PART = "analogue: training faster"
"""The part of ``kinetic-regularization-nfe`` that judges our training wall-clock (its direction)."""


def time_clause(verdict: ClaimVerdict) -> str:
    """What the speed-up's interval says about training time, chosen by the interval's verdict against 1
    (never by a mean): slower only when the whole interval is below 1, faster only when wholly above,
    "no clear difference" when it contains 1 (or there are too few seeds for one)."""
    if verdict is ClaimVerdict.DOES_NOT_HOLD:
        return (
            "training is slower: the Jacobian term's extra vector-Jacobian product per evaluation costs more "
            "than the steps it saves at this size"
        )
    if verdict is ClaimVerdict.HOLDS:
        return "training is faster: the steps it saves outweigh the Jacobian term's extra work per evaluation"
    return (
        "training shows no clear difference in time at this many seeds: the speed-up's interval contains 1 "
        "(or there are too few seeds for one), so neither faster nor slower is shown"
    )


@dataclass(frozen=True)
class RegularisationFindings(Findings):
    """``setting`` against "none", seed by seed: NFE ratio, accuracy drop, wall-clock speed-up; the published
    2.8x (not measurable at this scale) and three analogue parts."""

    setting: str
    nfe_ratio: tuple[float, ...]
    accuracy_drop: tuple[float, ...]
    speedup: tuple[float, ...]
    intervals: tuple[ConfidenceInterval | None, ConfidenceInterval | None, MedianInterval | None]
    parts: tuple[tuple[str, ClaimVerdict], ...]
    verdict: ClaimVerdict
    table: TrainingTable

    @classmethod
    def from_runs(
        cls, runs: tuple[MoonsRun, ...], setting: str = "kinetic+Jacobian", threshold: Threshold = KINETIC_THRESHOLD
    ) -> RegularisationFindings:
        base = {r.seed: r for r in runs if r.setting == "none"}
        reg = {r.seed: r for r in runs if r.setting == setting}
        seeds = sorted(set(base) & set(reg))
        nfe_ratio = tuple(base[s].last_tenth / reg[s].last_tenth for s in seeds)
        drop = tuple(base[s].accuracy - reg[s].accuracy for s in seeds)
        speed = tuple(base[s].seconds / reg[s].seconds for s in seeds)
        v_nfe, iv_nfe, _ = judge([math.log(r) for r in nfe_ratio], math.log(threshold.value))
        v_acc, iv_acc, _ = judge(drop, ACCURACY_DROP, above=False)
        # timing ratios are heavy-tailed (one run slowed by another program): the median's interval, strictly > 1
        v_time, iv_time, _ = judge_median(speed, 1.0, above=True, strict=True)
        parts = tuple(
            unrun_scale_parts(
                KINETIC_SCALE,
                {"analogue: fewer NFE": v_nfe, "analogue: accuracy within 2 points": v_acc, FASTER_PART: v_time},
            ).items()
        )
        return cls(
            setting,
            nfe_ratio,
            drop,
            speed,
            (_exp_interval(iv_nfe), iv_acc, iv_time),
            parts,
            combine(dict(parts)),
            TrainingTable.from_runs(runs),
        )

    def part(self, index: int) -> str:
        """The verdict of part ``index`` (0: the published 2.8x, not measurable here; 1: fewer NFE; 2: accuracy;
        3: training faster), as written."""
        return verdict_text(self.parts[index][1], len(self.nfe_ratio))

    @property
    def time_clause(self) -> str:
        """What the speed-up's interval says about training time (:func:`time_clause`)."""
        return time_clause(dict(self.parts)[FASTER_PART])

    def markdown(self) -> str:
        none, reg = self.table["none"], self.table[self.setting]
        iv_nfe, iv_acc, iv_time = self.intervals
        return "\n".join(
            [
                f"- **Solver work.** At the end of training the unregularised model needs {_listed(self.nfe_ratio)} "
                f"times the regularised one's forward NFE (per seed; 95 % interval {span(iv_nfe)}): {self.part(1)}.",
                f"- **Quality.** Test accuracy {none.accuracy:.1%} without, {reg.accuracy:.1%} with (drop per seed "
                f"{', '.join(points(d) for d in self.accuracy_drop)} points; interval {points_span(iv_acc)} "
                f"against at most {ACCURACY_DROP * 100:g} points): {self.part(2)}.",
                f"- **Time.** Training took {none.seconds:.2f} s without and {reg.seconds:.2f} s with (speed-up "
                f"per seed "
                f"{_listed(self.speedup)}; median's interval {span(iv_time)}): {self.time_clause} "
                f"({self.part(3)}). Per forward evaluation the regularised run "
                f"spends {reg.ms_per_evaluation:.2f} ms against {none.ms_per_evaluation:.2f} ms: each evaluation also "
                "computes a vector-Jacobian product for the Jacobian term, and that is paid again in the backward "
                f"pass. Against RNODE's published {PUBLISHED_SPEEDUP:g}x faster training (FFJORD on MNIST, days of GPU "
                f"time): {self.part(0)}.",
            ]
        )


# ----------------------------------------------------------------------------------------------
# Section 3: the seminorm


def _route(routes: tuple[Route, ...], name: str) -> Route:
    return next(r for r in routes if r.name == name)


@dataclass(frozen=True)
class ControlledSeminorm(Findings):
    """The seminorm on lesson 4's controlled problem: backward NFE and gradient error, both norms."""

    full: Route
    seminorm: Route

    @classmethod
    def from_routes(cls, routes: tuple[Route, ...]) -> ControlledSeminorm:
        return cls(_route(routes, "adjoint (dopri5)"), _route(routes, "adjoint + seminorm"))

    def markdown(self) -> str:
        f, s = self.full, self.seminorm
        return (
            f"Lesson 4's problem ($\\lambda = -1$, $T = 1$, dopri5 at $10^{{-8}}$): backward NFE {f.nfe_backward} "
            f"with the full norm, {s.nfe_backward} with the seminorm ({1 - s.nfe_backward / f.nfe_backward:.0%} "
            f"fewer); gradient error against the closed form {f.error_vs_closed_form:.1e} and "
            f"{s.error_vs_closed_form:.1e}."
        )


@dataclass(frozen=True)
class SeminormFindings(Findings):
    """The seminorm over tasks: each task's mean reduction, the median over tasks per library, the verdict."""

    results: tuple[SeminormTaskResult, ...]
    readings: tuple[tuple[str, ClaimVerdict], ...]  # per library
    medians: tuple[MedianInterval | None, ...]  # per library
    verdict: ClaimVerdict

    @classmethod
    def from_results(
        cls, results: tuple[SeminormTaskResult, ...], threshold: Threshold = SEMINORM_THRESHOLD
    ) -> SeminormFindings:
        readings, medians = [], []
        for lib in LIBRARIES:
            v, mi, _ = judge_median([r.reduction(lib) for r in results], threshold.value)
            readings.append((lib, v))
            medians.append(mi)
        return cls(tuple(results), tuple(readings), tuple(medians), combine(dict(readings)))

    @property
    def n_tasks(self) -> int:
        return len(self.results)

    def reading(self, library: str) -> str:
        """The verdict of ``library``'s reading, as written (an undecided one says over how many tasks)."""
        verdict = dict(self.readings)[library]
        return f"undecided ({self.n_tasks} tasks)" if verdict is ClaimVerdict.UNDECIDED else verdict.value

    def table(self) -> str:
        """One line per task: seeds, mean backward NFE (full -> seminorm) and mean reduction, per library."""

        def cells(r: SeminormTaskResult, lib: str) -> list[str]:
            pairs = [
                (c.ours_full, c.ours_seminorm) if lib == "nodecourse" else (c.torchdiffeq_full, c.torchdiffeq_seminorm)
                for c in r.counts
            ]
            full, semi = (sum(p[i] for p in pairs) / len(pairs) for i in (0, 1))
            return [f"{full:.0f} → {semi:.0f}", f"{r.reduction(lib):+.0%}"]

        return markdown_table(
            ["task", "seeds", "ours: backward NFE", "ours: saved", "torchdiffeq: backward NFE", "torchdiffeq: saved"],
            [[r.task.name, len(r.counts), *cells(r, LIBRARIES[0]), *cells(r, LIBRARIES[1])] for r in self.results],
        )

    def markdown(self) -> str:
        def median(i: int) -> str:
            mi = self.medians[i]
            return (
                "too few tasks"
                if mi is None
                else (f"median {mi.median:+.0%}, interval [{mi.lo:+.0%}, {mi.hi:+.0%}] ({mi.confidence:.0%} coverage)")
            )

        return (
            self.table() + "\n\n"
            f"Over {self.n_tasks} tasks, the saving of our adjoint: {median(0)}, "
            f"**{self.reading('nodecourse')}** against the published median of "
            f"{SEMINORM_THRESHOLD.value:.0%}; torchdiffeq's: {median(1)}, **{self.reading('torchdiffeq')}**. "
            "The spread between tasks is the finding: the saving depends on the task, and on the loss's scale "
            "against the tolerance."
        )


@dataclass(frozen=True)
class SeminormMoonsReading(Findings):
    """Why the seminorm can save nothing, or cost steps, on the trained moons models (one task's counts)."""

    result: SeminormTaskResult
    n_state: int  # entries of z (and of a)
    n_params: int  # entries of g

    def markdown(self) -> str:
        counts = self.result.counts
        same = all(c.torchdiffeq_full == c.torchdiffeq_seminorm for c in counts)
        costlier = [c for c in counts if c.ours_seminorm > c.ours_full]
        tdq = (
            "identical counts on every seed say the parameter channels never set the step size there."
            if same
            else "where the counts differ, the parameter channels set the step size at some steps."
        )
        ours = (
            ", ".join(
                f"seed {c.seed} needed {c.ours_seminorm} backward evaluations with the seminorm against "
                f"{c.ours_full} without"
                for c in costlier
            )
            + "."
            if costlier
            else "no seed needed more backward evaluations with the seminorm there."
        )
        return "\n".join(
            [
                f"Two readings of the task *{self.result.task.name}*:",
                "- With torchdiffeq's norm (the largest of the per-tensor RMS norms) leaving $g$ out can only lower "
                f"the norm; {tdq}",
                f"- With the RMS over every entry ({self.n_state} in $z$, {self.n_state} in $a$, {self.n_params} in "
                f"$g$), channels whose error is small *dilute* the RMS, so leaving them out can raise it: {ours}",
                "The published saving comes from models whose parameter channels do set the step size; measure "
                "`nfe_backward` on yours before counting on it.",
            ]
        )


# ----------------------------------------------------------------------------------------------
# Section 4: reversible Heun


@dataclass(frozen=True)
class RoundTrip(Findings):
    """``n`` steps forward and ``n`` back: largest distance from the start, reversible Heun (inverted) and
    the midpoint method (run backwards with ``-h``), per ``n``."""

    trips: tuple[tuple[int, float, float], ...]  # (n, reversible Heun, midpoint)

    def markdown(self) -> str:
        table = markdown_table(
            ["steps each way", "reversible Heun, inverted", "midpoint, run backwards"],
            [[n, f"{a:.1e}", f"{b:.1e}"] for n, a, b in self.trips],
        )
        mids = " and ".join(f"{b:.1e} with {n} steps" for n, _, b in self.trips)
        return (
            table + "\n\n"
            f"Reversible Heun gets the start back to rounding ({max(a for _, a, _ in self.trips):.0e}) whatever "
            f"the step count; the midpoint method (also second order) run backwards misses it by {mids}: its "
            "truncation error, which an adjoint's backward solve inherits."
        )


@dataclass(frozen=True)
class ExactFindings(Findings):
    """The exactness study: reversible vs backprop through the same steps, the adjoint beside it."""

    rows: tuple[ExactRow, ...]
    adjoint_tol: float
    steps: int
    verdict: ClaimVerdict
    interval: ConfidenceInterval | None
    reason: str

    @classmethod
    def from_rows(
        cls, rows: tuple[ExactRow, ...], adjoint_tol: float, steps: int, threshold: Threshold | None = None
    ) -> ExactFindings:
        from nodecourse.lessons.lesson10.config import EXACT_THRESHOLD

        verdict, iv, reason = judge(
            [r.reversible_error for r in rows], (threshold or EXACT_THRESHOLD).value, above=False
        )
        return cls(tuple(rows), adjoint_tol, steps, verdict, iv, reason)

    def markdown(self) -> str:
        rev = [r.reversible_error for r in self.rows]
        adj = [r.adjoint_error for r in self.rows]
        return (
            f"Over {len(self.rows)} random fields: reversible against backprop through the same {self.steps} "
            f"steps, relative error {min(rev):.1e} to {max(rev):.1e}; the dopri5 adjoint (tol "
            f"{self.adjoint_tol:g}) against backprop through dopri5, {min(adj):.1e} to {max(adj):.1e}. Work per "
            f"gradient: {self.rows[0].reversible_nfe} evaluations (reversible, forward + backward) and "
            f"{self.rows[0].adjoint_nfe} (adjoint)."
        )


@dataclass(frozen=True)
class ReversibleRouteFindings(Findings):
    """Lesson 4's route table with reversible Heun, and what it says about the reversible route."""

    routes: tuple[Route, ...]
    heun_steps: int  # the reversible Heun steps of the table's solves

    def markdown(self) -> str:
        table = markdown_table(
            [
                "route",
                "error vs closed form",
                "error vs FD of its own steps",
                "NFE fwd",
                "NFE bwd",
                "KiB kept for backward",
                "ms",
            ],
            [
                [
                    r.name,
                    f"{r.error_vs_closed_form:.1e}",
                    f"{r.error_vs_own_fd:.1e}",
                    r.nfe_forward,
                    r.nfe_backward,
                    r.kib_kept,
                    f"{1e3 * r.seconds:.1f}",
                ]
                for r in self.routes
            ],
        )
        rev, bp = _route(self.routes, "reversible (reversible Heun)"), _route(self.routes, "backprop (reversible Heun)")
        dop = _route(self.routes, "backprop (dopri5)")
        return (
            table + "\n\n"
            f"The reversible route agrees with finite differences of its own steps to {rev.error_vs_own_fd:.1e} "
            f"(the finite differences' own error), as backprop through the same steps does "
            f"({bp.error_vs_own_fd:.1e}), while it keeps {rev.kib_kept} KiB for the backward pass against "
            f"backprop's {bp.kib_kept}. Against the closed form both are off by {rev.error_vs_closed_form:.1e}: "
            f"that is the error of {self.heun_steps} second-order steps, which no gradient route can remove; "
            f"dopri5 at $10^{{-8}}$ gets {dop.error_vs_closed_form:.1e} with {dop.nfe_forward} evaluations. The "
            f"price in work: the reversible backward pass evaluates $f$ once per step again ({rev.nfe_backward} "
            "evaluations, each with a vector-Jacobian product). Times are of one small gradient and vary from "
            "run to run; read them as orders of magnitude."
        )


@dataclass(frozen=True)
class ReversibleMemoryFindings(Findings):
    """Peak memory against the number of steps: backprop grows, the reversible route stays flat."""

    steps: tuple[int, ...]
    growth: tuple[tuple[str, float], ...]  # per mode: largest peak over smallest-steps peak
    parts: tuple[tuple[str, ClaimVerdict], ...]
    verdict: ClaimVerdict
    batch: int
    dims: tuple[int, ...]

    @classmethod
    def from_sweep(cls, sweep: MemorySweep, threshold: Threshold = MEMORY_THRESHOLD) -> ReversibleMemoryFindings:
        grows = sweep.growth("backprop") >= threshold.value
        flat = max(sweep.peaks("reversible")) <= FLAT_FACTOR * min(sweep.peaks("reversible"))
        yes = lambda ok: ClaimVerdict.HOLDS if ok else ClaimVerdict.DOES_NOT_HOLD  # noqa: E731
        parts = (("backprop grows", yes(grows)), ("reversible flat", yes(flat)))
        c = sweep.config
        return cls(
            tuple(c.steps),
            tuple((m, sweep.growth(m)) for m in c.modes),
            parts,
            combine(dict(parts)),
            c.batch,
            tuple(c.dims),
        )

    def growth_of(self, mode: str) -> float:
        return dict(self.growth)[mode]

    def markdown(self) -> str:
        return (
            f"From {self.steps[0]} to {self.steps[-1]} steps ({self.steps[-1] / self.steps[0]:.0f}x more), "
            f"backprop's peak grows {self.growth_of('backprop'):.1f}x and the reversible route's "
            f"{self.growth_of('reversible'):.2f}x (batch {self.batch}, MLP {'-'.join(map(str, self.dims))}). "
            "Lesson 4's adjoint is flat too, but with a gradient of the continuous equations; the reversible "
            "route is flat with the gradient of the steps taken."
        )


def _error_text(err: float) -> str:
    return "overflow" if not math.isfinite(err) else f"{err:.1e}"


@dataclass(frozen=True)
class StabilityFindings(Findings):
    """Reversible Heun and rk4 on ``y' = lam y``: the parasitic root's growth and the errors it amplifies."""

    cases: tuple[StabilityCase, ...]

    def case(self, lam: complex, h: float) -> StabilityCase:
        return next(c for c in self.cases if c.lam == complex(lam) and c.h == h)

    def table(self) -> str:
        return markdown_table(
            [
                "λ",
                "h",
                "largest root modulus per step",
                "parasitic growth over T",
                "reversible Heun error / size of y(T)",
                "rk4 error / size of y(T)",
                "size of y(T)",
            ],
            [
                [
                    c.label,
                    c.h,
                    f"{c.max_root:.4f}",
                    f"{c.parasitic_growth:.1e}",
                    _error_text(c.heun_error),
                    _error_text(c.rk4_error),
                    f"{c.solution_size:.1e}",
                ]
                for c in self.cases
            ],
        )

    def markdown(self) -> str:
        hs = sorted({c.h for c in self.cases}, reverse=True)
        big, small = hs[0], hs[-1]
        d1, d2 = self.case(-1, big), self.case(-1, small)
        g1, g2 = self.case(1, big), self.case(1, small)
        b5, s5 = self.case(-5, big), self.case(-5, small)
        r1, r2 = self.case(2j, big), self.case(2j, small)
        seed = s5.heun_absolute_error / s5.parasitic_growth
        return (
            self.table() + "\n\n"
            f"At $\\lambda = -1$ reversible Heun's error is {d1.heun_error:.1e} with $h = {big:g}$ and "
            f"{d2.heun_error:.1e} with $h = {small:g}$ (relative to $y(T) = e^{{{-d1.T:g}}}$): smaller steps cut "
            f"it {d1.heun_error / d2.heun_error:.0e}-fold, because the seed shrinks; the parasitic root's growth "
            f"over the horizon is {d1.parasitic_growth:.1e} and {d2.parasitic_growth:.1e} ($e^{{{d1.T:g}}} = "
            f"{math.exp(d1.T):.1e}$) and stays. At $\\lambda = +1$ the same root has modulus "
            f"$\\sqrt{{1 + x^2}} - x < 1$: over the horizon it shrinks to {g1.parasitic_growth:.1e}, and the "
            f"error is {g1.heun_error:.1e} and {g2.heun_error:.1e}, an ordinary second-order error. At "
            f"$\\lambda = -5$ the growth is {s5.parasitic_growth:.0e} and the error {_error_text(s5.heun_error)} "
            f"even at $h = {small:g}$; that is relative to a solution of size $e^{{{-5 * s5.T:g}}} = "
            f"{s5.solution_size:.0e}$: in absolute terms the error is {s5.heun_absolute_error:.0e}, the growth "
            f"times a seed of {seed:.0e}. {self._growth_against_step(b5, s5)} "
            f"The rotation ($\\lambda = 2i$) sits on the stable segment: "
            f"{_error_text(r1.heun_error)} and {_error_text(r2.heun_error)}, an ordinary second-order error."
        )

    @staticmethod
    def _growth_against_step(big: StabilityCase, small: StabilityCase) -> str:
        """How the parasitic growth of one decaying mode at two step sizes compares with e^{|lam| T}: the
        per-step growth is e^{asinh(|lam| h)}, a little below e^{|lam| h}, so a large step grows less."""
        bound = math.exp(abs(big.lam.real) * big.T)
        below_big, below_small = bound / big.parasitic_growth, bound / small.parasitic_growth
        trend = (
            "smaller steps bring it closer to that bound and do not reduce it"
            if small.parasitic_growth >= big.parasitic_growth
            else "here the smaller step grows less"
        )
        return (
            f"Against $e^{{{abs(big.lam.real) * big.T:g}}} = {bound:.1e}$ that growth is {below_big:.1f} times "
            f"smaller with $h = {big.h:g}$ and {below_small:.2f} times smaller with $h = {small.h:g}$ (a step "
            f"grows it by $e^{{\\operatorname{{asinh}}(|\\lambda| h)}}$, a little less than "
            f"$e^{{|\\lambda| h}}$): {trend}."
        )


@dataclass(frozen=True)
class TrainedStabilityFindings(Findings):
    """Reversible Heun on the trained moons fields: contraction rates and convergence, per setting."""

    rows: tuple[TrainedStability, ...]

    def table(self) -> str:
        steps = self.rows[0].steps
        lines = []
        for name in dict.fromkeys(r.setting for r in self.rows):
            rs = [r for r in self.rows if r.setting == name]
            contracting = [r.most_contracting for r in rs]
            lines.append(
                [
                    name,
                    f"{min(contracting):.2f} to {max(contracting):.2f}",
                    f"{max(r.parasitic_bound for r in rs):.1f}",
                    f"{min(r.errors[0] for r in rs):.1e} to {max(r.errors[0] for r in rs):.1e}",
                    f"{min(r.errors[-1] for r in rs):.1e} to {max(r.errors[-1] for r in rs):.1e}",
                ]
            )
        return markdown_table(
            [
                "setting",
                "c (most negative Re λ), over seeds",
                "largest exp(-c T)",
                f"error at {steps[0]} steps",
                f"error at {steps[-1]} steps",
            ],
            lines,
        )

    def markdown(self) -> str:
        steps = self.rows[0].steps
        worst = min(r.most_contracting for r in self.rows)
        ratio = [r.errors[0] / r.errors[-1] for r in self.rows]
        second = (steps[-1] / steps[0]) ** 2
        seeds = sorted({r.seed for r in self.rows})
        by = {(r.setting, r.seed): r for r in self.rows}
        reg_better = sum(
            by[("kinetic+Jacobian", s)].errors[0] < by[("none", s)].errors[0]
            for s in seeds
            if ("kinetic+Jacobian", s) in by and ("none", s) in by
        )
        order = (
            "the method converges at its order on every one of them."
            if min(ratio) > second / 2
            else "slower than its order on some of them."
        )
        return (
            self.table() + "\n\n"
            f"Here the fastest contraction is $c = {worst:.2f}$, so the parasitic mode can grow at most "
            f"{math.exp(max(0.0, -worst)):.1f}x over $T = 1$. From {steps[0]} to {steps[-1]} steps the error "
            f"falls {min(ratio):.0f}–{max(ratio):.0f}-fold on the trained models (second order predicts "
            f"{second:.0f}): {order} The regularised field has the lower error at {steps[0]} steps on "
            f"{reg_better} of {len(seeds)} seeds."
        )


@dataclass(frozen=True)
class ExplorerFindings(Findings):
    """What the explorer's grid says, lowest weight against highest."""

    grid: tuple[tuple[tuple[float, str], tuple[tuple[str, float], ...]], ...]
    weights: tuple[float, ...]
    train_steps: int

    @classmethod
    def from_grid(cls, grid: dict, train_steps: int = 40) -> ExplorerFindings:
        weights = tuple(sorted({w for w, _ in grid}))
        return cls(tuple((k, tuple(v.items())) for k, v in grid.items()), weights, train_steps)

    def at(self, weight: float, route: str) -> dict:
        return dict(dict(self.grid)[weight, route])

    def markdown(self) -> str:
        w_lo, w_hi = self.weights[0], self.weights[-1]
        lo, hi = self.at(w_lo, "reversible"), self.at(w_hi, "reversible")
        own = max(self.at(w, "reversible")["error vs own steps"] for w in self.weights)
        peaks = ", ".join(
            f"{route} {self.at(w_lo, route)['peak KiB']:.0f}"
            for route in ("backprop", "checkpoint", "adjoint", "reversible")
        )
        return (
            f"From weight {w_lo:g} to {w_hi:g}: test NFE {lo['test NFE']} → {hi['test NFE']}, test accuracy "
            f"{lo['accuracy']:.1%} → {hi['accuracy']:.1%} (after {self.train_steps} steps). The reversible "
            f"gradient's error against an accurate solve goes from {lo['error vs accurate']:.1e} to "
            f"{hi['error vs accurate']:.1e} (its steps are set by dopri5's evaluations, so this is the "
            f"discretisation's error at matched work), while against its own steps it stays at rounding "
            f"({own:.0e} at most). Peak memory at weight {w_lo:g}, KiB: {peaks}."
        )


# ----------------------------------------------------------------------------------------------
# The closing note


@dataclass(frozen=True)
class ClosingFindings(Findings):
    """Each published figure beside this lesson's, with the ledger's verdicts (``results``: ClaimResults)."""

    results: tuple  # ClaimResult, in the order of the ledger cell
    growth: NFEGrowthFindings
    regularisation: RegularisationFindings
    seminorm: SeminormFindings
    exact: ExactFindings
    memory: ReversibleMemoryFindings

    def verdict(self, claim_id: str) -> str:
        """The row's verdict as written; the seminorm's undecided verdict counts tasks, not seeds."""
        result = next(r for r in self.results if r.id == claim_id)
        if claim_id == "seminorm-backward-nfe" and result.verdict is ClaimVerdict.UNDECIDED:
            return f"undecided ({self.seminorm.n_tasks} tasks)"
        return result.verdict_text

    def markdown(self) -> str:
        g, k, s, m = self.growth, self.regularisation, self.seminorm, self.memory
        saved = {lib: [r.reduction(lib) for r in s.results] for lib in LIBRARIES}
        rows = [
            [
                "NFE climbs in training",
                "a rising curve, no number (Chen et al. 2018, fig. 3d)",
                f"{min(g.ratios):.2f}x to {max(g.ratios):.2f}x, last tenth over first",
                self.verdict("ode-nfe-growth"),
            ],
            [
                "RNODE: fewer steps, same quality, faster",
                "no loss in performance; about 2.8x faster training (MNIST)",
                f"NFE {min(k.nfe_ratio):.2f}x to {max(k.nfe_ratio):.2f}x fewer; accuracy drop "
                f"{points(max(k.accuracy_drop))} points "
                f"at most; wall-clock speed-up {min(k.speedup):.2f}x to {max(k.speedup):.2f}x",
                self.verdict("kinetic-regularization-nfe"),
            ],
            [
                "seminorm: fewer backward evaluations",
                "median 40 % fewer (up to 62 %)",
                f"over {s.n_tasks} tasks, ours {min(saved['nodecourse']):+.0%} to {max(saved['nodecourse']):+.0%}, "
                f"torchdiffeq {min(saved['torchdiffeq']):+.0%} to {max(saved['torchdiffeq']):+.0%}",
                self.verdict("seminorm-backward-nfe"),
            ],
            [
                "reversible gradient exact",
                "exact up to floating point",
                f"{max(r.reversible_error for r in self.exact.rows):.1e} at most against backprop of the same steps",
                self.verdict("reversible-gradient-exact"),
            ],
            [
                "reversible memory flat",
                "constant in the number of steps",
                f"{m.growth_of('reversible'):.2f}x over {m.steps[-1] // m.steps[0]}x more steps (backprop "
                f"{m.growth_of('backprop'):.1f}x)",
                self.verdict("reversible-memory-flat"),
            ],
        ]
        not_held = [f"`{r.id}` ({self.verdict(r.id)})" for r in self.results if r.verdict is not ClaimVerdict.HOLDS]
        time = f"{k.time_clause} (speed-up interval {span(k.intervals[2])})."
        medians = [mi.median for mi in s.medians if mi is not None]
        sem = (
            ""
            if len(medians) < 2
            else f" The seminorm's median saving over tasks was {medians[0]:+.0%} (ours) and "
            f"{medians[1]:+.0%} (torchdiffeq); section 3 reads those numbers task by task."
        )
        return (
            markdown_table(["claim", "published", "here", "verdict"], rows) + "\n\n"
            f"Rows that do not hold in full at this scale: {', '.join(not_held) or 'none'}. RNODE's 2.8x is a "
            f"training-time figure for FFJORD on MNIST (days of GPU time); here the regularised {time}{sem} "
            "Exactness and flat memory follow from reversible Heun's algebra (an exact inverse, nothing stored "
            "per step), and the rows measure them as stated."
        )
