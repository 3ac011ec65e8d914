"""Plotting helpers shared by the lessons (plotly for interactive figures, matplotlib for static ones).

Plotly figures made here are :class:`CourseFigure` objects: shown (``fig.show()``, or as a
cell's last expression) with the ``plotly_mimetype+png`` renderer. The figure is stored in the
notebook once as JSON (interactive in JupyterLab, without a copy of plotly.js, so executed
notebooks stay small) and once as a PNG drawn by kaleido, the static fallback that nbconvert,
the course's website and GitHub's viewer show where plotly's JavaScript does not run. The
renderer is chosen per figure: importing this module leaves plotly's global
``plotly.io.renderers.default`` as it is.

This file is the package's surface: import from ``nodecourse.plotting``. The figures of the lessons
live in private modules (``_solvers``: lessons 1-2; ``_annulus``: lesson 3; ``_physionet``: lesson 5)
and are exported here by name, each module imported on first use (PEP 562) so that
``import nodecourse.plotting`` stays light; ``annulus``, ``physionet`` and ``solvers`` name those
modules as a whole (``from nodecourse.plotting import annulus as P``).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from nodecourse import _lazy
from nodecourse.solvers import SOLVERS

#: The renderer :class:`CourseFigure` uses when none is given: plotly's JSON and a PNG of it.
#: The PNG is drawn by kaleido, which needs Chrome or Chromium (``/usr/bin/chromium`` on Debian);
#: each figure takes about 3 s more to show.
RENDERER = "plotly_mimetype+png"
#: What :class:`CourseFigure` falls back to where the PNG cannot be drawn (kaleido not installed, or
#: no Chrome/Chromium for it, as on Binder): the interactive figure alone.
INTERACTIVE_RENDERER = "plotly_mimetype"


#: Why the last :class:`CourseFigure` was shown without its PNG; None while every PNG was drawn.
static_image_problem: str | None = None


class CourseFigure(go.Figure):
    """A ``plotly.graph_objects.Figure`` shown with :data:`RENDERER` unless a renderer is given.

    ``fig.show()`` and displaying ``fig`` (a cell's last expression, ``display(fig)``) use
    :data:`RENDERER`; ``fig.show(renderer=...)`` still picks another. Everything else is
    plotly's Figure.
    """

    def _show(self, *args, **kwargs):
        """Show the figure with :data:`RENDERER` (or the ``renderer`` given), as ``go.Figure.show``.

        Where kaleido cannot draw the PNG (plotly raises ``RuntimeError``: kaleido missing, no
        Chrome/Chromium) the figure is shown with :data:`INTERACTIVE_RENDERER` and the reason is
        kept in :data:`static_image_problem`; a committed lesson without its PNG fails
        ``tests/test_site.py``.
        """
        global static_image_problem
        if args or "renderer" in kwargs:  # plotly's first positional argument is the renderer
            return super().show(*args, **kwargs)
        try:
            return super().show(renderer=RENDERER, **kwargs)
        except RuntimeError as exc:
            static_image_problem = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            return super().show(renderer=INTERACTIVE_RENDERER, **kwargs)

    def show(self, *args, **kwargs):
        """Check that every trace can be drawn on its axes (:func:`text_on_numeric_axes`), then show
        the figure with :data:`RENDERER` (or the ``renderer`` given), as ``go.Figure.show``.

        Raises ``ValueError`` where a trace puts text categories on an axis set to ``"linear"`` or
        ``"log"``: plotly would draw axes and no marks there.
        """
        problems = text_on_numeric_axes(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self._show(*args, **kwargs)

    def _ipython_display_(self):
        # IPython's display() and a cell's last expression come here; plotly's own version would
        # read the global default renderer, which this module no longer sets.
        if pio.renderers.render_on_display:
            self.show()
        else:
            print(repr(self))


#: Axis types on which plotly.js places numbers only: a text category there gets no mark.
NUMERIC_AXIS_TYPES = ("linear", "log")


def _is_text_category(value) -> bool:
    """True for a string plotly.js cannot read as a number (``"ODE-RNN"``; not ``"2.5"``)."""
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False


def text_on_numeric_axes(fig: go.Figure) -> list[str]:
    """Each trace of ``fig`` that puts text categories on an axis whose type is set to ``"linear"``
    or ``"log"``, as a sentence naming the trace, the axis and the fix; empty when there is none.

    plotly draws axes and no bars or points for such a trace (it cannot place ``"ODE-RNN"`` on a
    number line), so a figure that shows them has lost its data. An axis whose type is not set
    takes its type from its data (``"category"`` for text), as :func:`figure` leaves it.
    """
    found = []
    for trace in fig.data:
        for letter in ("x", "y"):
            if f"{letter}axis" not in trace or trace[letter] is None:  # not a 2-D cartesian trace
                continue
            values = trace[letter]
            name = f"{letter}axis{(trace[f'{letter}axis'] or letter)[1:]}"  # "x" (the default), "x2", ...
            kind = fig.layout[name].type if name in fig.layout else None
            texts = [v for v in values if _is_text_category(v)]
            if kind in NUMERIC_AXIS_TYPES and texts:
                found.append(
                    f"trace {trace.name or trace.type!r} puts text categories ({', '.join(map(repr, texts[:3]))}"
                    f"{', ...' if len(texts) > 3 else ''}) on {name}, whose type is {kind!r}, where plotly "
                    f"draws none of them: leave that axis's type unset (as figure() does without log_{letter}=True) "
                    f"or make it categorical with fig.update_{letter}axes(type='category')"
                )
    return found


def course_subplots(**kwargs) -> CourseFigure:
    """``plotly.subplots.make_subplots(**kwargs)`` as a :class:`CourseFigure`."""
    return make_subplots(figure=CourseFigure(), **kwargs)


#: Fixed colours of the course's solvers, so every figure reads the same way; a solver registered
#: later without one here gets the next free colour of :data:`_SPARE_COLORS` (see :data:`SOLVER_COLORS`).
_PINNED_COLORS = {
    "euler": "#1f77b4",
    "midpoint": "#ff7f0e",
    "rk4": "#2ca02c",
    "rk38": "#17becf",
    "bosh3": "#d62728",
    "dopri5": "#9467bd",
    "implicit_euler": "#8c564b",
    "trapezoid": "#e377c2",
    "torchdiffeq": "#7f7f7f",
}
_SPARE_COLORS = (
    "#bcbd22",
    "#2f4b7c",
    "#a05195",
    "#ffa600",
    "#665191",
    "#d45087",
    "#003f5c",
    "#f95d6a",
    "#488f31",
    "#de425b",
    "#00876c",
    "#b15928",
)
#: Grey for a name that is not a registered solver (a learner's own tableau).
UNREGISTERED_COLOR = "#555555"


def solver_colors(names) -> dict[str, str]:
    """A distinct colour for each name in ``names`` (registered solver names, in order): the pinned
    colour where there is one, else the next spare one; plus ``"torchdiffeq"``'s."""
    colors = {name: _PINNED_COLORS[name] for name in names if name in _PINNED_COLORS}
    spare = [c for c in _SPARE_COLORS if c not in _PINNED_COLORS.values()]
    for name in names:
        if name not in colors:
            if not spare:
                raise ValueError(f"no colour left for solver {name!r}: add one to nodecourse.plotting._SPARE_COLORS")
            colors[name] = spare.pop(0)
    colors.setdefault("torchdiffeq", _PINNED_COLORS["torchdiffeq"])
    return colors


#: A colour for each registered solver (derived from :data:`nodecourse.SOLVERS`) and for torchdiffeq.
SOLVER_COLORS = solver_colors(list(SOLVERS))

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
    """The course's colour for solver ``name``; :data:`UNREGISTERED_COLOR` (grey) for a name that is
    not a registered solver, such as a learner's own tableau. Every registered solver has its own."""
    return SOLVER_COLORS.get(name, UNREGISTERED_COLOR)


def figure(
    title: str,
    x_title: str,
    y_title: str,
    *,
    log_x: bool = False,
    log_y: bool = False,
    height: int = 360,
    width: int | None = None,
) -> CourseFigure:
    """An empty plotly figure (a :class:`CourseFigure`) with a title and labelled axes (put units in the titles).

    ``log_x`` / ``log_y`` make that axis logarithmic; otherwise its type is left unset, so plotly
    takes it from the data: a number line for numbers, one slot per category for text (bars of
    named models, variables, inputs). Setting ``"linear"`` here would leave text bars undrawn.
    """
    fig = CourseFigure()
    fig.update_layout(
        title=title,
        height=height,
        width=width,
        template="plotly_white",
        margin=dict(l=60, r=20, t=50, b=50),
        legend=dict(font=dict(size=11)),
    )
    fig.update_xaxes(title=x_title, **({"type": "log"} if log_x else {}))
    fig.update_yaxes(title=y_title, **({"type": "log"} if log_y else {}))
    return fig


# The lessons' figures, imported on first use: ``{name: private module}``. The module names
# (``annulus``, ...) give the whole module; every other name is that module's attribute.
_LAZY = {
    "annulus": "._annulus",
    "physionet": "._physionet",
    "solvers": "._solvers",
    # lesson 3 (_annulus)
    "CLASS_COLORS": "._annulus",
    "MODEL_COLORS": "._annulus",
    "circle_probe_figure": "._annulus",
    "decision_boundary_figure": "._annulus",
    "draw_decision_boundary": "._annulus",
    "trajectory_figure": "._annulus",
    "training_curves_figure": "._annulus",
    # lesson 5 (_physionet)
    "DEFAULT_VARIABLES": "._physionet",
    "plot_auc_comparison": "._physionet",
    "plot_learning_curve": "._physionet",
    "plot_observation_rates": "._physionet",
    "plot_patient": "._physionet",
    "plot_scaled_time": "._physionet",
    # lessons 1-2 (_solvers)
    "ConvergenceRun": "._solvers",
    "StepTrace": "._solvers",
    "plot_convergence": "._solvers",
    "plot_step_sizes": "._solvers",
    "plot_tolerance_sweep": "._solvers",
    "plot_work_per_input": "._solvers",
    "trace_steps": "._solvers",
}

__getattr__, __dir__ = _lazy(__name__, _LAZY, whole=("annulus", "physionet", "solvers"))


__all__ = [
    "INTERACTIVE_RENDERER",
    "MPL_STYLE",
    "NUMERIC_AXIS_TYPES",
    "RENDERER",
    "SOLVER_COLORS",
    "CourseFigure",
    "course_subplots",
    "figure",
    "solver_color",
    "solver_colors",
    "text_on_numeric_axes",
    "use_style",
    # the figures of lessons 1-2, 3 and 5, each module as a whole and name by name
    *_LAZY,
]
