"""Lesson 9's findings: the sentences the lesson shows, chosen from what the audit and the studies measured.

Each class takes the measurement (a :class:`~nodecourse.lessons.lesson09.models.CourseModel`, a step
of an :class:`~nodecourse.audit.AuditReport`, a :class:`StepBudget`) and words it: a sentence
says "a drop" only when the number dropped, "no extra steps" only when the log shows none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nodecourse.lessons.lesson09.models import CourseModel
from nodecourse.lessons.lesson09.studies import StepBudget
from nodecourse.lessons.study import Findings

__all__ = [
    "BaselineFindings",
    "AuditDataFindings",
    "FoundSolve",
    "MdeqFindings",
    "RouteFindings",
    "ShiftFindings",
    "StepSummaries",
    "VerdictTable",
    "WorkFindings",
]

#: MDEQ on ImageNet (Bai et al. 2020): top-1 of the DEQ and of its block truncated to 5 unrolled layers (%).
MDEQ_TOP1, MDEQ_TRUNCATED_TOP1 = 77.5, 75.9


def quality_text(metric: str, value: float, signed: bool = False) -> str:
    """A quality or a difference in the metric's own words: accuracy in (percentage) points, others as is."""
    if not math.isfinite(value):
        return "n/a"
    if metric == "accuracy":
        return f"{100 * value:+.1f} points" if signed else f"{100 * value:.1f} %"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def interval_side(low: float, high: float) -> str:
    """``"above"`` (the whole interval above zero), ``"below"``, ``"contains"`` (zero inside), or ``"none"``
    (no interval: too few rows to resample)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "none"
    return "above" if low > 0 else "below" if high < 0 else "contains"


@dataclass(frozen=True)
class AuditDataFindings(Findings):
    """What the ODE-RNN was trained and tested on, with a warning first when the data is the stand-in."""

    model: CourseModel

    def markdown(self) -> str:
        info, m = self.model.info, self.model.info["mortality"]
        head = (
            "**⚠ Synthetic data: PhysioNet set A was not found; every number below describes the stand-in** "
            "(see `nodecourse check`).\n\n"
            if info.get("synthetic")
            else ""
        )
        return head + (
            f"Trained on {info['n_train']} patients of the {', '.join(info['train_units'])} units "
            f"({100 * m['train']:.1f} % died), tested on {info['n_test']} held-out patients of the same units "
            f"({100 * m['test']:.1f} %) and on {info['n_shift']} patients of the {info['shift_unit']} ICU "
            f"({100 * m['shift']:.1f} %); {info['epochs']} epochs in {self.model.train_seconds:.0f} s."
        )


@dataclass(frozen=True)
class BaselineFindings(Findings):
    """Step 1 read as a sentence: is the paired difference decided, and what the baseline's forward pass costs."""

    metric: str
    diff: float
    low: float
    high: float
    baseline_time: float  # the baseline's forward time as a multiple of the model's

    @classmethod
    def from_step(cls, step) -> BaselineFindings:
        q = step.data["quality"]
        return cls(q["metric"], q["diff"], q["low"], q["high"], 1 / step.data["time_ratio"])

    def markdown(self) -> str:
        side = interval_side(self.low, self.high)
        q = lambda v: quality_text(self.metric, v, signed=True)  # noqa: E731
        reading = {
            "above": "it lies above zero, so on these inputs the model is better than its discrete counterpart.",
            "below": "it lies below zero, so on these inputs the discrete counterpart is better than the model.",
            "contains": "it contains zero, so on these inputs the audit cannot tell the model from its discrete "
            "counterpart.",
            "none": "there were too few inputs to resample, so nothing is decided.",
        }[side]
        return (
            f"The 95 % interval of the paired {self.metric} difference (model minus baseline, {q(self.diff)}) "
            f"runs from {q(self.low)} to {q(self.high)}: {reading} The baseline's forward pass takes "
            f"{self.baseline_time:.2f}x the model's time."
        )


@dataclass(frozen=True)
class WorkFindings(Findings):
    """Step 2's median work per patient against the steps the horizon holds (:class:`StepBudget`)."""

    median: float
    budget: StepBudget

    def markdown(self) -> str:
        b, extra = self.budget, self.median - self.budget.ideal
        hours = b.horizon_hours * b.step
        step_name = "one-hour" if math.isclose(hours, 1.0) else f"{hours:g}-hour"
        head = f"Median {self.median:.0f} NFE per patient against the {b.ideal} {step_name} steps the horizon holds"
        grid = (
            f"The model divides float32 hours by {b.horizon_hours:g}; the step is 1/{b.ideal} as a Python float. "
            f"In that arithmetic {b.longer} of the grid's {b.gaps} gaps between observation times are longer "
            "than one step"
        )
        if extra > 0:
            return (
                f"{head}: {extra:.0f} more. {grid}; splitting each gap into whole steps gives {b.naive} steps, "
                f"the library's rule {b.by_rule}. Each extra step is a second, sliver-sized one: work no one "
                "asked for, visible only in a per-input log."
            )
        if extra < 0:
            return (
                f"{head}: {-extra:.0f} fewer, so the solve stops short of the horizon or skips steps; read the "
                "step log before trusting the model's times."
            )
        if b.longer:
            return (
                f"{head}: no extra steps. {grid}, by a rounding sliver: splitting each gap into "
                f"`ceil(gap / step)` steps would take {b.naive}. The library's fixed-step rule counts a gap "
                f"within float32 rounding of a whole number of steps as that number ({b.by_rule} steps), and "
                "the log confirms the solver took no sliver steps."
            )
        return f"{head}: no extra steps. {grid}: none is, so no gap could cost a sliver-sized second step here."


@dataclass(frozen=True)
class ShiftFindings(Findings):
    """Step 4's shifted set against the test set: the change's direction and whether its interval decides it."""

    shift_unit: str
    metric: str
    shifted: float
    test: float
    diff: float
    low: float
    high: float

    @classmethod
    def from_report(cls, report, shift_unit: str) -> ShiftFindings:
        v = report.step(4).data["shift"]["vs_test"]
        return cls(shift_unit, report.setup["metric"], v["a"], v["b"], v["diff"], v["low"], v["high"])

    def markdown(self) -> str:
        q = lambda v: quality_text(self.metric, v, signed=True)  # noqa: E731
        # the size unsigned beside its direction ("a drop of 0.106", never "a drop of -0.106"); the signed
        # difference and its interval follow, so the reader sees which way round it is taken
        direction = "a rise" if self.diff > 0 else "a drop" if self.diff < 0 else "no change"
        size = "" if self.diff == 0 else f" of {q(self.diff).lstrip('+-')}"
        side = interval_side(self.low, self.high)
        reading = {
            "above": "The whole interval is above zero: the shifted patients are scored better, and that is real "
            "at this size.",
            "below": "The whole interval is below zero: the drop is real at this size.",
            "contains": f"The interval contains zero: with this many deaths in each set, {direction} of this size "
            "is not decided.",
            "none": "There is no interval (too few patients or deaths to resample): nothing is decided.",
        }[side]
        return (
            f"{self.shift_unit.capitalize()}-ICU patients: {self.metric} {quality_text(self.metric, self.shifted)} "
            f"against {quality_text(self.metric, self.test)} on held-out patients of the training units, "
            f"{direction}{size} (shifted minus held-out: {q(self.diff)}, 95 % bootstrap interval {q(self.low)} "
            f"to {q(self.high)}, patients resampled within each set). {reading}"
        )


@dataclass(frozen=True)
class MdeqFindings(Findings):
    """MDEQ's published gap beside the digits DEQ's own: the DEQ minus its 5-step truncation."""

    metric: str
    diff: float
    low: float
    high: float
    truncation_time: float  # the truncation's forward time as a multiple of the DEQ's

    @classmethod
    def from_step(cls, step) -> MdeqFindings:
        q = step.data["quality"]
        return cls(q["metric"], q["diff"], q["low"], q["high"], 1 / step.data["time_ratio"])

    def markdown(self) -> str:
        q = lambda v: quality_text(self.metric, v, signed=True)  # noqa: E731
        side = interval_side(self.low, self.high)
        reading = {
            "above": "the DEQ is ahead, as in MDEQ",
            "below": "the truncation is ahead, unlike MDEQ",
            "contains": "the interval contains zero, so at this size neither is ahead",
            "none": "no interval could be computed",
        }[side]
        return (
            f"MDEQ on ImageNet: the DEQ {MDEQ_TOP1 - MDEQ_TRUNCATED_TOP1:.1f} points above the same block "
            f"truncated to 5 unrolled layers ({MDEQ_TOP1} % against {MDEQ_TRUNCATED_TOP1} %). Here, on digits, "
            f"the DEQ minus its 5-step truncation: {q(self.diff)} (95 % interval {q(self.low)} to {q(self.high)}): "
            f"{reading}; the truncation runs at {self.truncation_time:.2f}x the DEQ's forward time."
        )


@dataclass(frozen=True)
class StepSummaries(Findings):
    """Some steps of one report, each with its verdict, sentence and reasons; ``note`` a closing sentence."""

    name: str
    steps: tuple
    note: str = ""

    @classmethod
    def from_report(cls, report, numbers, model: CourseModel | None = None) -> StepSummaries:
        note = ""
        if model is not None and model.unconverged_steps:
            note = (
                f"During training, {model.unconverged_steps} backward passes went through a forward solve that "
                "had not reached its tolerance (the DEQ warns about each; `course_model` counts the warnings)."
            )
        return cls(report.model["name"], tuple(report.step(n) for n in numbers), note)

    def markdown(self) -> str:
        parts = []
        for s in self.steps:
            reasons = "".join(f"\n- {r}" for r in s.reasons)
            parts.append(f"**{self.name}, step {s.step} ({s.verdict}).** {s.summary}{reasons}")
        return "\n\n".join(parts + ([self.note] if self.note else []))


@dataclass(frozen=True)
class FoundSolve(Findings):
    """The first solve the audit found in a model, as one sentence (where it is called and with what)."""

    entry: str
    state: tuple
    dtype: str
    grid: list
    rtol: float
    atol: float
    method: str
    gradient: str

    @classmethod
    def from_report(cls, report) -> FoundSolve:
        s = report.model["settings"][0]
        return cls(
            s["entry"], tuple(s["state"][1:]), s["dtype"], s["grid"], s["rtol"], s["atol"], s["method"], s["gradient"]
        )

    def markdown(self) -> str:
        return (
            f"Found `{self.entry}`: state {self.state} per row ({self.dtype}), grid {self.grid}, rtol "
            f"{self.rtol:g}, atol {self.atol:g}, method {self.method}, gradient route **{self.gradient}**."
        )


@dataclass(frozen=True)
class VerdictTable(Findings):
    """One row per step, one column per audited model (verdict and the step's seconds), and each audit's time."""

    reports: tuple  # ((name, report), ...)

    @classmethod
    def from_reports(cls, reports: dict) -> VerdictTable:
        return cls(tuple(reports.items()))

    def markdown(self) -> str:
        names = [name for name, _ in self.reports]
        first = self.reports[0][1]
        lines = ["| step | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        for s in first.steps:
            cells = [f"**{r.step(s.step).verdict}** ({r.step(s.step).seconds:.0f} s)" for _, r in self.reports]
            lines.append(f"| {s.step}. {s.name} | " + " | ".join(cells) + " |")
        lines.append("| whole audit | " + " | ".join(f"{r.seconds:.0f} s" for _, r in self.reports) + " |")
        return "\n".join(lines)


@dataclass(frozen=True)
class RouteFindings(Findings):
    """Step 5's gradient routes against its ok threshold: judged (the one the model trains with) or an
    alternative; within the threshold, not within it, or not run (with the solver's reason, said here)."""

    verdict: str
    route_used: str
    routes: tuple  # ((name, used, within the ok threshold or None when not run, why not run), ...)

    @classmethod
    def from_step(cls, step) -> RouteFindings:
        ok = step.data["ok_threshold"]
        routes = tuple(
            (r["route"], r["used"], None if r.get("median") is None else r["high"] <= ok, r.get("failed", ""))
            for r in step.data["routes"]
        )
        return cls(step.verdict, step.data["route_used"], routes)

    def markdown(self) -> str:
        lines = [f"step 5: {self.verdict}; trains with {self.route_used}"]
        for name, used, within, why in self.routes:
            role = "judged" if used else "an alternative"
            state = (
                f"not run: {why}"
                if within is None
                else "within the ok threshold"
                if within
                else "not within the ok threshold"
            )
            lines.append(f"- {name} ({role}): {state}")
        return "\n".join(lines)
