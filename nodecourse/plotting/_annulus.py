"""Figures of lesson 3: decision boundaries and circle probes (matplotlib), training curves and
animated trajectories of the flow (plotly, with a time slider).

Import from the package: ``from nodecourse.plotting import decision_boundary_figure``.
The plotly figures are :class:`nodecourse.plotting.CourseFigure` objects, shown with the
``plotly_mimetype`` renderer, so they stay small in the saved notebook.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import plotly.graph_objects as go
import torch

from nodecourse.data import ANNULUS_RADII
from nodecourse.measure import CircleProbe, DecisionGrid
from nodecourse.plotting import CourseFigure, course_subplots, use_style

MODEL_COLORS = {"NODE": "#d62728", "ANODE": "#1f77b4", "ResNet": "#2ca02c"}
CLASS_COLORS = {-1.0: "#ff7f0e", 1.0: "#1f77b4"}


def _circle(ax, r: float, **kw) -> None:
    theta = torch.linspace(0, 2 * math.pi, 200)
    ax.plot(r * torch.cos(theta), r * torch.sin(theta), **kw)


def draw_decision_boundary(
    ax,
    grid: DecisionGrid,
    *,
    title: str = "",
    probe_radius: float | None = 1.25,
    radii: tuple[float, float, float] = ANNULUS_RADII,
    x=None,
    y=None,
) -> None:
    """Shade the predicted class on ``ax`` (orange: -1, blue: +1), draw the decision line
    (output = 0, black), the task's circles (dashed) and the probe circle (dotted).
    ``x`` ``(n, 2)`` and ``y`` ``(n, 1)``: optional sample points to overlay.
    """
    from matplotlib.colors import ListedColormap

    xs, ys, out = grid.xs.numpy(), grid.ys.numpy(), grid.outputs.numpy()
    ax.contourf(
        xs,
        ys,
        (out > 0).astype(float),
        levels=[-0.5, 0.5, 1.5],
        cmap=ListedColormap([CLASS_COLORS[-1.0], CLASS_COLORS[1.0]]),
        alpha=0.35,
    )
    ax.contour(xs, ys, out, levels=[0.0], colors="k", linewidths=1.2)
    for r in radii:
        _circle(ax, r, color="0.3", lw=0.8, ls="--")
    if probe_radius is not None:
        _circle(ax, probe_radius, color="k", lw=0.8, ls=":")
    if x is not None and y is not None:
        x, y = x.detach().cpu(), y.detach().cpu().reshape(-1)
        for label, color in CLASS_COLORS.items():
            sel = y == label
            ax.scatter(x[sel, 0], x[sel, 1], s=3, color=color, edgecolors="none")
    ax.set_aspect("equal")
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    ax.set_title(title, fontsize=10)


def decision_boundary_figure(
    grids: Mapping[str, DecisionGrid], *, probe_radius: float | None = 1.25, samples: tuple | None = None
):
    """One panel per entry of ``grids`` (title -> :class:`DecisionGrid`); returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    use_style()
    n = len(grids)
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n, 3.4), squeeze=False)
    for ax, (title, grid) in zip(axes[0], grids.items()):
        draw_decision_boundary(
            ax,
            grid,
            title=title,
            probe_radius=probe_radius,
            **({} if samples is None else {"x": samples[0], "y": samples[1]}),
        )
        ax.grid(False)
    fig.suptitle(
        f"predicted class (orange -1, blue +1); black: decision line; dotted: |x| = {probe_radius}", fontsize=9
    )
    fig.tight_layout()
    return fig


def circle_probe_figure(probes: Mapping[str, CircleProbe], *, zoom: bool = True):
    """Margin ``label * output`` along one circle for each model (title -> probe); negative = wrong.

    Returns a matplotlib figure with the whole circle on the left and, when
    ``zoom``, a close-up around the worst angle of the first probe with a wrong arc on the right.
    """
    import matplotlib.pyplot as plt

    use_style()
    fig, axes = plt.subplots(1, 2 if zoom else 1, figsize=(9 if zoom else 5, 3.2), squeeze=False)
    radius = next(iter(probes.values())).radius
    for name, p in probes.items():
        deg = p.angles.numpy() * 180 / math.pi
        margin = (p.label * p.outputs).numpy()
        for ax in axes[0]:
            ax.plot(
                deg,
                margin,
                lw=1.2,
                label=f"{name}: wrong {p.misclassified:.2%}, min {p.min_margin:.2f}",
                color=MODEL_COLORS.get(name),
            )
    for ax in axes[0]:
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_xlabel("angle on the circle (degrees)")
        ax.set_ylabel("margin  label x output")
    axes[0][0].set_title(f"circle probe at |x| = {radius}", fontsize=10)
    axes[0][0].legend(fontsize=8, loc="lower left")
    if zoom:
        wrong = [p for p in probes.values() if p.min_margin < 0]
        focus = wrong[0] if wrong else next(iter(probes.values()))
        centre = focus.worst_angle * 180 / math.pi
        axes[0][1].set_xlim(centre - 15, centre + 15)
        axes[0][1].set_title(f"close-up around {centre:.0f} degrees", fontsize=10)
    fig.tight_layout()
    return fig


def training_curves_figure(runs: Sequence) -> go.Figure:
    """Loss, forward NFE per epoch and sample accuracy against epoch for each run (``AnnulusRun``s).

    One colour per model, one line per seed.
    """
    fig = course_subplots(
        rows=1, cols=3, subplot_titles=("training loss (SmoothL1)", "forward NFE per epoch", "sample accuracy")
    )
    shown = set()
    for r in runs:
        epochs = list(range(1, len(r.log.loss) + 1))
        color = MODEL_COLORS.get(r.model_name)
        for col, values in ((1, r.log.loss), (2, r.log.nfe), (3, r.log.accuracy)):
            fig.add_trace(
                go.Scatter(
                    x=epochs,
                    y=values,
                    mode="lines",
                    line=dict(color=color, width=1.3),
                    name=r.model_name,
                    legendgroup=r.model_name,
                    showlegend=(col == 1 and r.model_name not in shown),
                    hovertemplate=f"{r.model_name} seed {r.seed}<br>epoch %{{x}}: %{{y:.4g}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
        shown.add(r.model_name)
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_yaxes(title_text="loss", row=1, col=1)
    fig.update_yaxes(title_text="NFE (field evaluations)", row=1, col=2)
    fig.update_yaxes(title_text="fraction correct", row=1, col=3)
    for col in (1, 2, 3):
        fig.update_xaxes(title_text="epoch", row=1, col=col)
    fig.update_layout(height=340, template="plotly_white", margin=dict(l=60, r=20, t=50, b=50))
    return fig


def trajectory_figure(
    ts: torch.Tensor, zs: torch.Tensor, y: torch.Tensor, *, title: str = "", max_points: int = 150
) -> go.Figure:
    """The flow's states over time with a time slider and a play button.

    ``ts``: ``(T,)``; ``zs``: ``(T, n, D)`` with ``D`` 2 or 3 (an augmented flow's extra
    coordinate becomes the third axis); ``y``: ``(n, 1)`` labels. Faint lines show each
    point's whole trajectory; the markers move with the slider.
    """
    ts, zs, y = ts.detach().cpu(), zs.detach().cpu(), y.detach().cpu().reshape(-1)
    if zs.dim() != 3 or zs.shape[-1] not in (2, 3):
        raise ValueError(f"zs of shape {tuple(zs.shape)}: need (T, n, 2) or (T, n, 3)")
    zs, y = zs[:, :max_points], y[:max_points]
    three_d = zs.shape[-1] == 3
    colors = [CLASS_COLORS[float(v)] for v in y]
    Scatter = go.Scatter3d if three_d else go.Scatter

    def coords(z):
        # Three decimals are finer than a pixel here and keep the saved figure small.
        z = z.double().round(decimals=3)
        c = dict(x=z[..., 0].tolist(), y=z[..., 1].tolist())
        if three_d:
            c["z"] = z[..., 2].tolist()
        return c

    lines = []
    for i in range(zs.shape[1]):  # one faint line per point, its path over [0, t1]
        lines.append(
            Scatter(
                mode="lines",
                line=dict(color=colors[i], width=1),
                opacity=0.25,
                showlegend=False,
                hoverinfo="skip",
                **coords(zs[:, i]),
            )
        )
    marker = dict(color=colors, size=3 if three_d else 5)

    def points(k):
        return Scatter(mode="markers", marker=marker, showlegend=False, **coords(zs[k]))

    fig = CourseFigure(data=[*lines, points(0)])
    moving = len(lines)
    fig.frames = [go.Frame(data=[points(k)], traces=[moving], name=f"{float(t):.2f}") for k, t in enumerate(ts)]
    steps = [
        dict(
            method="animate",
            label=f"{float(t):.2f}",
            args=[[f"{float(t):.2f}"], dict(mode="immediate", frame=dict(duration=0, redraw=three_d))],
        )
        for t in ts
    ]
    fig.update_layout(
        title=title,
        height=440,
        template="plotly_white",
        margin=dict(l=40, r=20, t=50, b=40),
        sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix="time t = "), pad=dict(t=40))],
        updatemenus=[
            dict(
                type="buttons",
                showactive=False,
                x=0.0,
                y=-0.08,
                xanchor="left",
                buttons=[
                    dict(
                        label="play",
                        method="animate",
                        args=[None, dict(frame=dict(duration=150, redraw=three_d), fromcurrent=True)],
                    )
                ],
            )
        ],
    )
    if three_d:
        fig.update_layout(scene=dict(xaxis_title="z1", yaxis_title="z2", zaxis_title="z3 (augmented)"))
    else:
        fig.update_xaxes(title="z1")
        fig.update_yaxes(title="z2", scaleanchor="x", scaleratio=1)
    return fig


__all__ = [
    "CLASS_COLORS",
    "MODEL_COLORS",
    "circle_probe_figure",
    "decision_boundary_figure",
    "draw_decision_boundary",
    "trajectory_figure",
    "training_curves_figure",
]
