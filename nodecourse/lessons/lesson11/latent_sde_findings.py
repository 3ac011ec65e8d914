"""What lesson 11's latent SDE section quotes: each model's forecast coverage and width over seeds, read against
the expectation declared below before the committed run, and the figure of held-out paths with both bands.

No ledger row: no published figure or course threshold was declared for this comparison; the expectation is
the lesson's, and the findings say whether the measurement met it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from nodecourse.claims import ConfidenceInterval, seed_interval
from nodecourse.lessons.lesson11.latent_sde_studies import MODELS, LatentSDEStudy
from nodecourse.lessons.study import Findings
from nodecourse.measure import markdown_table

__all__ = ["EXPECTATION", "NEAR", "WELL_BELOW", "LatentSDEFindings", "plot_forecast_bands"]

#: How far from the nominal level the latent SDE's whole seed interval may lie and still be "near" it.
NEAR = 0.10
#: How far below the nominal level the latent ODE's whole seed interval must lie to be "well below" it.
WELL_BELOW = 0.15
EXPECTATION = (
    "Declared before the committed run (after a few prototype fits that chose the grid, the step and the observation "
    "noise): the latent SDE's nominal 90 % forecast interval covers near 90 % of the "
    f"held-out observations (the 95 % interval over seeds of its coverage within 90 % ± {NEAR * 100:.0f} points), "
    "because its prior SDE carries the process's noise past the window; the latent ODE's covers well below 90 % "
    f"(its whole interval under {(0.9 - WELL_BELOW) * 100:.0f} %), because past the window its only spread is "
    "q(z0) and the observation noise; and the paired gap SDE − ODE is above 0."
)


def _interval(values) -> ConfidenceInterval | None:
    """The 95 % seed interval of ``values``, or None with fewer than two seeds."""
    values = list(values)
    return seed_interval(values) if len(values) >= 2 else None


@dataclass(frozen=True)
class LatentSDEFindings(Findings):
    """Coverage of the nominal ``level`` interval per model (95 % interval over seeds), the paired gap
    SDE − ODE, mean widths (state units), the process's own interval on the same paths, and whether each part of
    :data:`EXPECTATION` was met (None: too few seeds to say)."""

    level: float
    seeds: int
    parameters: tuple[int, int]  # latent SDE, latent ODE
    sde_coverage: tuple[float, ...]  # per seed
    ode_coverage: tuple[float, ...]
    sde: ConfidenceInterval | None
    ode: ConfidenceInterval | None
    gap: ConfidenceInterval | None  # paired per seed: SDE - ODE
    sde_width: float
    ode_width: float
    oracle_coverage: float
    oracle_width: float
    sde_near_nominal: bool | None
    ode_well_below: bool | None
    gap_above_zero: bool | None

    @classmethod
    def from_study(cls, study: LatentSDEStudy) -> LatentSDEFindings:
        sde_runs, ode_runs = study.of(MODELS[0]), study.of(MODELS[1])
        if [r.seed for r in sde_runs] != [r.seed for r in ode_runs]:
            raise ValueError("the study's two models must share their seeds (the gap is paired per seed)")
        level = study.config.level
        sde_cov = tuple(r.coverage for r in sde_runs)
        ode_cov = tuple(r.coverage for r in ode_runs)
        sde, ode = _interval(sde_cov), _interval(ode_cov)
        gap = _interval(a - b for a, b in zip(sde_cov, ode_cov))
        return cls(
            level, len(sde_runs), (sde_runs[0].parameters, ode_runs[0].parameters), sde_cov, ode_cov, sde, ode, gap,
            statistics.fmean(r.width for r in sde_runs), statistics.fmean(r.width for r in ode_runs),
            study.oracle_coverage, study.oracle_width,
            None if sde is None else (level - NEAR <= sde.lo and sde.hi <= level + NEAR),
            None if ode is None else ode.hi < level - WELL_BELOW,
            None if gap is None else gap.lo > 0,
        )  # fmt: skip

    def table(self) -> str:
        """One line per model and one for the process's own interval: parameters, coverage, width."""

        def cov(iv, values):
            if iv is None:
                return ", ".join(f"{v:.1%}" for v in values)
            return f"{iv.mean:.1%} (95 % {iv.lo:.1%} to {iv.hi:.1%})"

        return markdown_table(
            ["forecast interval", "parameters", f"coverage of nominal {self.level:.0%}", "mean width (state units)"],
            [
                [MODELS[0], f"{self.parameters[0]:,}", cov(self.sde, self.sde_coverage), f"{self.sde_width:.2f}"],
                [MODELS[1], f"{self.parameters[1]:,}", cov(self.ode, self.ode_coverage), f"{self.ode_width:.2f}"],
                ["the process's own law, given the true X(window)", "–", f"{self.oracle_coverage:.1%}",
                 f"{self.oracle_width:.2f}"],
            ],
        )  # fmt: skip

    def markdown(self) -> str:
        def met(flag: bool | None, what: str) -> str:
            return f"{what}: " + {True: "met", False: "**not met**", None: "too few seeds to say"}[flag]

        gap = (
            "no interval (one seed)"
            if self.gap is None
            else f"{self.gap.mean * 100:+.1f} points (95 % {self.gap.lo * 100:+.1f} to {self.gap.hi * 100:+.1f})"
        )
        return (
            self.table() + "\n\n"
            f"{EXPECTATION}\n\nMeasured over {self.seeds} seed(s): paired coverage gap SDE − ODE {gap}. "
            + "; ".join(
                [
                    met(self.sde_near_nominal, f"latent SDE near {self.level:.0%}"),
                    met(self.ode_well_below, f"latent ODE below {self.level - WELL_BELOW:.0%}"),
                    met(self.gap_above_zero, "gap above 0"),
                ]
            )
            + f". The process's own interval covers {self.oracle_coverage:.1%} at width {self.oracle_width:.2f}: "
            "the width a model that had learned the law exactly would need." + self._shortfall()
        )

    def _shortfall(self) -> str:
        """A sentence when the latent SDE's band is narrower than the process's own and covers too little."""
        if self.sde is None or self.sde.hi >= self.level or self.sde_width >= self.oracle_width:
            return ""
        return (
            f" The latent SDE's band is {self.sde_width / self.oracle_width:.0%} as wide as the process's own: "
            "it has learned less noise than the process has, so it covers less than it claims, though far more "
            "than the latent ODE."
        )


def plot_forecast_bands(study: LatentSDEStudy):
    """The first held-out paths (one panel each): observations, and each model's band past the window."""
    from nodecourse.plotting import course_subplots

    n = len(study.observed)
    fig = course_subplots(
        rows=1, cols=n, shared_yaxes=True, subplot_titles=[f"held-out path {i + 1}" for i in range(n)]
    )
    times, k = list(study.times), study.n_window
    colors = {MODELS[0]: "rgba(214,39,40,0.25)", MODELS[1]: "rgba(31,119,180,0.35)"}
    for i, observed in enumerate(study.observed):
        col = i + 1
        for band in study.bands:
            fig.add_scatter(
                x=times[k:] + times[k:][::-1], y=list(band.hi[i]) + list(band.lo[i])[::-1], mode="lines", fill="toself",
                fillcolor=colors[band.model], line=dict(width=0), name=f"{band.model}, {study.config.level:.0%} band",
                legendgroup=band.model, showlegend=i == 0, row=1, col=col,
            )  # fmt: skip
        fig.add_scatter(
            x=times, y=list(observed), mode="markers", marker=dict(color="black", size=5), name="observed",
            legendgroup="observed", showlegend=i == 0, row=1, col=col,
        )  # fmt: skip
        fig.update_xaxes(title_text="time (time units)", row=1, col=col)
    fig.add_vrect(x0=times[0], x1=times[k - 1], fillcolor="grey", opacity=0.12, line_width=0, row="all", col="all")
    fig.update_yaxes(title_text="X (state units)", row=1, col=1)
    fig.update_layout(
        title=f"forecasts past the observed window (shaded), seed {study.config.seeds[0]}", height=360,
        template="plotly_white", margin=dict(l=60, r=20, t=70, b=50),
    )  # fmt: skip
    return fig
