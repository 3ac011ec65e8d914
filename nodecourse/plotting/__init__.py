"""Plotting helpers shared by the lessons (plotly for interactive figures, matplotlib for static ones).

Importing this module sets plotly's default renderer to ``plotly_mimetype``:
a figure is stored in the notebook once, as JSON, rather than with a copy of
plotly.js, so executed notebooks stay small (well under 2 MB) and still render
in JupyterLab.
"""
from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

pio.renderers.default = "plotly_mimetype"

#: A fixed colour for each solver, so every figure of the course reads the same way.
SOLVER_COLORS = {
    "euler": "#1f77b4",
    "midpoint": "#ff7f0e",
    "rk4": "#2ca02c",
    "bosh3": "#d62728",
    "dopri5": "#9467bd",
    "implicit_euler": "#8c564b",
    "trapezoid": "#e377c2",
    "torchdiffeq": "#7f7f7f",
}

#: Matplotlib settings for static figures: modest size and dpi (notebooks stay small), readable labels.
MPL_STYLE: dict[str, Any] = {
    "figure.figsize": (6.0, 3.6),
    "figure.dpi": 80,
    "savefig.dpi": 80,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 10,
}


def use_style() -> None:
    """Apply :data:`MPL_STYLE` to matplotlib (call once at the top of a lesson)."""
    import matplotlib as mpl

    mpl.rcParams.update(MPL_STYLE)


def solver_color(name: str) -> str:
    """The course's colour for solver ``name`` (grey for one it does not know)."""
    return SOLVER_COLORS.get(name, "#555555")


def figure(title: str, x_title: str, y_title: str, *, log_x: bool = False, log_y: bool = False,
           height: int = 360, width: int | None = None) -> go.Figure:
    """An empty plotly figure with a title and labelled axes (put units in the titles)."""
    fig = go.Figure()
    fig.update_layout(
        title=title, height=height, width=width, template="plotly_white",
        margin=dict(l=60, r=20, t=50, b=50), legend=dict(font=dict(size=11)),
    )
    fig.update_xaxes(title=x_title, type="log" if log_x else "linear")
    fig.update_yaxes(title=y_title, type="log" if log_y else "linear")
    return fig


__all__ = ["MPL_STYLE", "SOLVER_COLORS", "figure", "solver_color", "use_style"]
