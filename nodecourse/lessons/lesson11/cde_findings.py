"""What lesson 11's CDE paragraphs quote, computed from its studies and rendered by ``markdown()``.

- :class:`CausalityFindings`: how far each path's past moved when a future observation moved, and its figure;
- :func:`judge_ncde`: the ``ncde-vs-odernn`` rule on paired per-seed gaps (thresholds in :mod:`.config`);
- :class:`NCDEFindings`: the neural CDE beside lesson 5's models: AUC with intervals, paired gaps, parameters
  and cost per epoch, and its figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodecourse.claims import ClaimVerdict, ConfidenceInterval, judge, seed_interval
from nodecourse.lessons.lesson05.config import NAMES as LESSON05_NAMES
from nodecourse.lessons.lesson05.judging import paired_gaps
from nodecourse.lessons.lesson11.cde_studies import CausalityResult, NCDEStudy
from nodecourse.lessons.lesson11.config import NCDE_MARGIN, PARAMETER_TOLERANCE
from nodecourse.lessons.study import Findings

__all__ = ["NAMES", "judge_ncde", "interval_text", "CausalityFindings", "ModelLine", "NCDEFindings"]

NAMES = {**LESSON05_NAMES, "ncde": "neural CDE"}
_COLORS = {"hermite": "#1f77b4", "natural": "#d62728"}
_KIND_NAMES = {"hermite": "Hermite, backward differences", "natural": "natural cubic spline"}


def judge_ncde(gaps: list[float]) -> tuple[ClaimVerdict, ConfidenceInterval | None, str]:
    """The ``ncde-vs-odernn`` rule on per-seed paired gaps NCDE − ODE-RNN: holds when the 95 % interval lies
    above :data:`~.config.NCDE_MARGIN` (−0.02), does not hold when it lies below, undecided otherwise (or with
    fewer than three seeds)."""
    return judge(gaps, NCDE_MARGIN)


def interval_text(iv: ConfidenceInterval | None, fmt: str = ".3f") -> str:
    """``"0.741 (95 % 0.702 to 0.780)"``, or ``"n/a"`` without an interval."""
    return "n/a" if iv is None else f"{iv.mean:{fmt}} (95 % {iv.lo:{fmt}} to {iv.hi:{fmt}})"


@dataclass(frozen=True)
class CausalityFindings(Findings):
    """One series, one future observation moved: the largest change of each path before that observation."""

    result: CausalityResult

    @property
    def causal_kinds(self) -> tuple[str, ...]:
        """The paths whose past did not move (to rounding: 1e-12)."""
        return tuple(k for k, v in self.result.past_change.items() if v <= 1e-12)

    def markdown(self) -> str:
        r, c = self.result, self.result.config
        lines = [
            f"Observation {c.changed} (at t = {r.t[c.changed]:.2f} h) moved by {c.delta:g}; the largest change of "
            f"each path on [{r.t[0]:.0f}, {r.past_end:.2f}] h, before the observation that precedes it:",
            "",
            "| path | largest change of its past | causal |",
            "|---|---|---|",
        ]
        for kind, change in r.past_change.items():
            lines.append(f"| {_KIND_NAMES[kind]} | {change:.3g} | {'yes' if kind in self.causal_kinds else 'no'} |")
        return "\n".join(lines)

    def figure(self):
        """Both paths of both series (solid: as observed, dashed: one observation moved), the observations,
        and the end of the compared past."""
        from nodecourse.plotting import figure

        r = self.result
        fig = figure(
            "A future observation moved: which path's past changes?",
            "time since the first observation (h)",
            "value (units of the series)",
        )
        for kind, (before, after) in r.paths.items():
            for path, dash, tag in ((before, "solid", "as observed"), (after, "dash", "one observation moved")):
                fig.add_scatter(
                    x=r.grid, y=path, mode="lines", line=dict(color=_COLORS[kind], dash=dash),
                    name=f"{_KIND_NAMES[kind]}, {tag}",
                )  # fmt: skip
        fig.add_scatter(x=r.t, y=r.x, mode="markers", marker=dict(color="black", size=7), name="observations")
        k = r.config.changed
        fig.add_scatter(
            x=[r.t[k]], y=[r.x_moved[k]], mode="markers", marker=dict(color="black", symbol="x", size=10), name="moved"
        )
        fig.add_vrect(x0=r.t[0], x1=r.past_end, fillcolor="grey", opacity=0.08, line_width=0)
        return fig


@dataclass(frozen=True)
class ModelLine:
    """One model's line of the comparison: AUC over seeds, paired gap NCDE − it (None for the CDE itself),
    trainable parameters (None for the regression), wall and CPU seconds per epoch."""

    model: str
    auc: ConfidenceInterval
    gap: ConfidenceInterval | None
    parameters: int | None
    seconds_per_epoch: float
    cpu_per_epoch: float


@dataclass(frozen=True)
class NCDEFindings(Findings):
    """The neural CDE beside lesson 5's models on the same splits and seeds, and the row's rule."""

    study: NCDEStudy
    mode: str
    lines: tuple[ModelLine, ...]
    verdict: ClaimVerdict
    interval: ConfidenceInterval | None
    reason: str

    @classmethod
    def from_study(cls, study: NCDEStudy, mode: str) -> NCDEFindings:
        aucs = study.auc.aucs_by_model()
        lines = tuple(
            ModelLine(
                m,
                seed_interval(aucs[m]),
                None if m == "ncde" else seed_interval(paired_gaps(aucs, "ncde", m)),
                study.parameter_count(m),
                study.seconds_per_epoch(m),
                study.seconds_per_epoch(m, cpu=True),
            )
            for m in ("ncde", *(m for m in study.auc.models if m != "ncde"))
        )
        verdict, iv, reason = judge_ncde(paired_gaps(aucs, "ncde", "odernn"))
        return cls(study, mode, lines, verdict, iv, reason)

    def line(self, model: str) -> ModelLine:
        return next(x for x in self.lines if x.model == model)

    @property
    def parameter_ratio(self) -> float:
        """The CDE's trainable parameters over ODE-RNN's."""
        return self.line("ncde").parameters / self.line("odernn").parameters

    @property
    def matched(self) -> bool:
        """Whether the parameter counts are within :data:`~.config.PARAMETER_TOLERANCE`."""
        return abs(self.parameter_ratio - 1) <= PARAMETER_TOLERANCE

    @property
    def data_text(self) -> str:
        a = self.study.auc
        data = "the synthetic stand-in (set A was not found): not PhysioNet" if a.synthetic else "set A"
        n, c = a.config.n_patients or a.n_set, a.config
        return f"{n:,} patients of {data}, {len(c.seeds)} seeds, up to {c.epochs} epochs ({self.mode} mode)"

    def markdown(self) -> str:
        rows = [
            f"**{self.data_text}.** AUC is the test AUC over seeds; the gap is the neural CDE's AUC minus the "
            "model's, paired per seed (same patients); seconds per epoch include each epoch's validation (the "
            "regression has no epochs: its whole fit).",
            "",
            "| model | parameters | test AUC | gap NCDE − model | s / epoch (wall) | s / epoch (CPU) |",
            "|---|---|---|---|---|---|",
        ]
        for x in self.lines:
            params = "—" if x.parameters is None else f"{x.parameters:,}"
            gap = "—" if x.gap is None else interval_text(x.gap, "+.3f")
            rows.append(
                f"| {NAMES[x.model]} | {params} | {interval_text(x.auc)} | {gap} | {x.seconds_per_epoch:.2f} | "
                f"{x.cpu_per_epoch:.2f} |"
            )
        reason = self.reason.removeprefix("undecided: ")
        quick = " Quick mode does not decide it; the full study does." if self.study.auc.config.n_patients else ""
        rows += [
            "",
            f"Parameters: the neural CDE has {self.parameter_ratio:.3f}x ODE-RNN's "
            f"({'within' if self.matched else 'outside'} {PARAMETER_TOLERANCE:.0%}). The row's rule "
            f"(gap NCDE − ODE-RNN above {NCDE_MARGIN:+.2f}) at this scale: **{self.verdict.value}** ({reason})."
            f"{quick}",
        ]
        return "\n".join(rows)

    def figure(self):
        """Test AUC per seed (dots) and its mean (bar) for each model."""
        from nodecourse.plotting import figure

        fig = figure(f"Mortality AUC per seed, {self.data_text}", "model", "test AUC (1 = perfect ranking)")
        aucs = self.study.auc.aucs_by_model()
        names = [NAMES[x.model] for x in self.lines]
        fig.add_bar(x=names, y=[x.auc.mean for x in self.lines], name="mean over seeds", opacity=0.4)
        for i, seed in enumerate(self.study.auc.config.seeds):
            fig.add_scatter(x=names, y=[aucs[x.model][i] for x in self.lines], mode="markers", name=f"seed {seed}")
        fig.add_hline(y=0.5, line_dash="dot", annotation_text="chance")
        return fig
