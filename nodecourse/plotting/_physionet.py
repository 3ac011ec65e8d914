"""Figures of lesson 5 (PhysioNet 2012): irregular sampling, missingness, AUC beside published figures."""

from __future__ import annotations

import math
from typing import Sequence

import plotly.graph_objects as go
import torch

from nodecourse.plotting import figure

__all__ = [
    "DEFAULT_VARIABLES",
    "plot_auc_comparison",
    "plot_learning_curve",
    "plot_observation_rates",
    "plot_patient",
    "plot_scaled_time",
]

DEFAULT_VARIABLES = ("HR", "MAP", "Temp", "GCS", "Lactate", "Creatinine")


def plot_patient(data, index: int, variables: Sequence[str] = DEFAULT_VARIABLES, normalizer=None) -> go.Figure:
    """Observed values of one patient over the 48 hours, one trace per variable (markers only).

    ``data`` is a raw (not normalised) set, so values are in their clinical units; with
    ``normalizer`` they are shown in training-split standard deviations instead, so that
    variables share one axis.
    """
    unknown = [v for v in variables if v not in data.variables]
    if unknown:
        raise ValueError(f"variables {unknown} are not PhysioNet variables; choose from {data.variables}")
    values = data.values[index]
    if normalizer is not None:
        values = (values - normalizer.center) / normalizer.scale
    unit = "training-split standard deviations" if normalizer is not None else "clinical units"
    fig = figure(
        f"Patient {int(data.record_ids[index])}: what was measured, and when",
        "hours since ICU admission",
        f"value ({unit})",
    )
    for name in variables:
        j = data.variables.index(name)
        m = data.mask[index, :, j].bool()
        fig.add_trace(
            go.Scatter(
                x=data.times[m].tolist(),
                y=values[m, j].tolist(),
                mode="markers+lines",
                name=f"{name} ({int(m.sum())} obs)",
                # a variable never measured has no point to draw (its colour stays reserved)
                visible=True if bool(m.any()) else "legendonly",
            )
        )
    never = [name for name in variables if not bool(data.mask[index, :, data.variables.index(name)].any())]
    if never:  # plotly lists no legend entry for a trace without points, so name them beneath it
        fig.add_annotation(
            text="not measured:<br>" + ", ".join(never),
            x=1.02,
            y=0.0,
            xref="paper",
            yref="paper",
            xanchor="left",
            yanchor="bottom",
            align="left",
            showarrow=False,
            font=dict(size=11),
        )
    return fig


def plot_observation_rates(data) -> go.Figure:
    """Per variable: share of grid cells observed (log scale) — most of the tensor is missing."""
    rate = data.mask.mean(dim=(0, 1))
    order = torch.argsort(rate, descending=True).tolist()
    fig = figure(
        "How often each variable is observed (1-hour grid, all patients)",
        "variable",
        "fraction of (patient, hour) cells observed",
        log_y=True,
        height=380,
    )
    fig.add_trace(go.Bar(x=[data.variables[i] for i in order], y=[float(rate[i]) for i in order], showlegend=False))
    fig.update_xaxes(tickangle=-60)
    return fig


def plot_auc_comparison(
    ours: dict[str, tuple[float, float]], published: dict[str, tuple[float, float]], title: str
) -> go.Figure:
    """Mean AUC ± one standard deviation: our models beside the published table.

    ``ours`` and ``published`` map a model's label to (mean, standard deviation). The AUC axis
    shows 0.5 to 0.9, widened to take in every bar's top and whisker (a measured AUC below 0.5
    would otherwise have no bar in view).
    """
    fig = figure(title, "model", "test AUC (mortality)", height=380)
    fig.add_trace(
        go.Bar(
            name="measured here",
            x=list(ours),
            y=[m for m, _ in ours.values()],
            error_y=dict(type="data", array=[s for _, s in ours.values()]),
        )
    )
    fig.add_trace(
        go.Bar(
            name="published (Rubanova et al. 2019)",
            x=list(published),
            y=[m for m, _ in published.values()],
            error_y=dict(type="data", array=[s for _, s in published.values()]),
        )
    )
    ends = [m + k * s for m, s in [*ours.values(), *published.values()] for k in (-1, 0, 1)]
    ends = [e for e in ends if math.isfinite(e)]  # a spread of nan (one seed) widens nothing
    low, high = min([0.5, *(e - 0.02 for e in ends)]), max([0.9, *(e + 0.02 for e in ends)])
    fig.update_yaxes(range=[low, high])
    fig.update_layout(barmode="group")
    return fig


def plot_scaled_time(batches: dict[str, torch.Tensor], title: str) -> go.Figure:
    """Scaled time against real hours, one line per batch: per-batch scaling bends each differently."""
    fig = figure(title, "hours since admission", "time as the model sees it", height=340)
    for name, (hours, scaled) in batches.items():
        fig.add_trace(go.Scatter(x=hours.tolist(), y=scaled.tolist(), mode="lines+markers", name=name))
    return fig


def plot_learning_curve(
    result, published: dict[str, tuple[float, float]] | None = None, published_patients: int | None = None
) -> go.Figure:
    """Mean held-out AUC against training patients, one line per model, 95 % seed intervals as
    error bars (none with one seed); ``published`` (mean, std) drawn as markers at
    ``published_patients`` when given. ``result``: a :class:`~nodecourse.lessons.lesson05.curve.CurveResult`."""
    fig = figure(
        f"Learning curve on set A ({result.config.settings} settings, {result.data_source} data)",
        "training patients (set A)",
        "held-out AUC (in-hospital mortality)",
        height=400,
    )
    for model in result.config.models:
        rows = [s for s in result.summary() if s.model == model]
        if not rows:
            continue
        err = [None if s.low is None else s.high - s.mean for s in rows]
        fig.add_trace(
            go.Scatter(
                x=[s.n_train for s in rows],
                y=[s.mean for s in rows],
                mode="lines+markers",
                name=model,
                error_y=dict(type="data", array=[e or 0.0 for e in err], visible=any(e is not None for e in err)),
            )
        )
        if published and model in published and published_patients:
            mean, std = published[model]
            fig.add_trace(
                go.Scatter(
                    x=[published_patients],
                    y=[mean],
                    mode="markers",
                    marker_symbol="star",
                    marker_size=12,
                    name=f"{model}, published",
                    error_y=dict(type="data", array=[std]),
                )
            )
    return fig
