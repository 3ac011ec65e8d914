"""Every figure a committed lesson carries shows its data: each plotly trace has a mark plotly can
draw, and each saved PNG has ink inside its plot area.

Three charts were once committed empty (lesson 2's "Work per input", lesson 5's observation rates
and its AUC bars): their bars had text categories on an x axis forced to ``"linear"``, where plotly
places nothing, and the PNG beside each showed axes, a legend and no bars. These tests read the
saved outputs only (no kernel, no browser), so they run in ``make test-fast``.

:func:`figure_problems` is the whole check of one notebook; it can be pointed at a copy of a lesson
executed elsewhere (``figure_problems(Path("/tmp/x/05_....ipynb"))``).
"""

from __future__ import annotations

import base64
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

from nodecourse.course import site, site_notebook
from notebook_fixtures import REPO

PLOTLY = site_notebook.PLOTLY_MIME
#: plotly.js's axis types that place numbers; a text category on one of them is not drawn.
NUMERIC_AXES = ("linear", "log")
#: Where the saved PNG of a plotly figure is drawn when the layout names no size (kaleido's default).
KALEIDO_SIZE = (700, 500)
#: plotly.js's margins when the layout names none.
PLOTLY_MARGIN = {"l": 80, "r": 80, "t": 100, "b": 80}
#: A pixel is ink when one of its channels differs from the plot area's background by more than
#: this: plotly_white's grid and zero lines (#EBF0F8 on white, 20 at most) and matplotlib's grid
#: (alpha 0.3) stay below it; any trace colour, text or marker edge is above it.
INK_LEVEL = 48
#: Grid lines differ from the background by at most this in any channel (plotly_white's #EBF0F8).
GRID_LEVEL = 25
#: The least share of the plot area an image's ink must cover. Measured on the committed lessons
#: before the categorical-axis fix: the three empty charts 0.0000 (only grid lines inside), the
#: sparsest real figures 0.012 (lesson 1 cell 16, two lines, plotly) and 0.014 (lesson 7 cell 9,
#: matplotlib); one marker of plotly's default size covers about 0.0004 of a 700 x 360 figure's.
MIN_INK_SHARE = 0.002


# ---------------------------------------------------------------------------
# plotly JSON: does each trace have a mark plotly can draw?
# ---------------------------------------------------------------------------


def _values(trace: dict, key: str):
    """``trace[key]`` as a list (plotly's typed-array form ``{"dtype", "bdata"}`` decoded); None if absent."""
    value = trace.get(key)
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        return flat.reshape(value["shape"]).tolist() if "shape" in value else flat.tolist()
    return value


def _number(value) -> float | None:
    """``value`` as plotly.js reads it on a numeric axis (numbers and numeric strings), else None."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _axis(layout: dict, trace: dict, letter: str) -> dict:
    """The layout entry of the ``letter`` ("x" or "y") axis a 2-D trace is drawn on."""
    ref = trace.get(f"{letter}axis", letter)  # "x", "x2", ...
    return layout.get(f"{letter}axis{ref[1:]}", {}) or {}


def _placed(value, axis: dict) -> float | str | None:
    """Where ``value`` lands on ``axis``: a number (log10 of it on a log axis) or the category
    itself; None when plotly.js does not place it (text on a numeric axis, zero or less on a log
    axis, a missing value)."""
    kind = axis.get("type") or "-"  # "-": plotly.js picks the type from the data
    if kind in NUMERIC_AXES:
        x = _number(value)
        if x is None or (kind == "log" and x <= 0):
            return None
        return math.log10(x) if kind == "log" else x
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if kind == "-":  # text makes the axis categorical; numbers keep it numeric
        return _number(value) if _number(value) is not None else str(value)
    return str(value) if kind in ("category", "multicategory") else value


def _in_range(lo, hi, axis: dict) -> bool:
    """Whether the span [lo, hi] (placed values) meets the axis's fixed range; True with no fixed range."""
    rng = axis.get("range")
    if not rng or axis.get("autorange") is True or isinstance(lo, str) or isinstance(hi, str):
        return True
    a, b = (_number(r) for r in rng)
    if a is None or b is None:
        return True
    return max(lo, hi) >= min(a, b) and min(lo, hi) <= max(a, b)


def _positions(trace: dict, key: str, n: int) -> list:
    """The coordinates along ``key`` ("x" or "y"): given, or plotly's ``x0 + i dx`` default."""
    given = _values(trace, key)
    if given is not None:
        return list(given)
    start, step = trace.get(f"{key}0", 0), trace.get(f"d{key}", 1)
    return [start + i * step for i in range(n)]


def _scatter_marks(trace: dict, layout: dict) -> bool:
    """A 2-D scatter shows a marker or text at one placed point, or a line between two neighbours."""
    xa, ya = _axis(layout, trace, "x"), _axis(layout, trace, "y")
    ys = list(_values(trace, "y") or [])
    xs = _positions(trace, "x", len(ys))
    if _values(trace, "y") is None:  # x only: y is 0, 1, 2, ...
        ys = _positions(trace, "y", len(xs))
    points = [(_placed(x, xa), _placed(y, ya)) for x, y in zip(xs, ys)]
    shown = [p if None not in p and _in_range(p[0], p[0], xa) and _in_range(p[1], p[1], ya) else None for p in points]
    mode = trace.get("mode") or ("lines+markers" if len(points) < 20 else "lines")
    if ("markers" in mode or "text" in mode) and any(shown):
        return True
    if "lines" in mode:
        kept = [p for p in points if None not in p] if trace.get("connectgaps") else points
        for a, b in zip(kept, kept[1:]):
            if a is not None and b is not None and None not in a and None not in b:
                if _in_range(a[0], b[0], xa) and _in_range(a[1], b[1], ya):
                    return True
    return False


def _scatter3d_marks(trace: dict) -> bool:
    xs, ys, zs = (list(_values(trace, k) or []) for k in "xyz")
    finite = [all(_number(v) is not None for v in p) for p in zip(xs, ys, zs)]
    mode = trace.get("mode") or "lines+markers"
    if "markers" in mode or "text" in mode:
        return any(finite)
    return any(a and b for a, b in zip(finite, finite[1:]))


def _bar_marks(trace: dict, layout: dict) -> bool:
    """A bar shows where its category is placed and its length is not zero (positive on a log axis)."""
    horizontal = trace.get("orientation") == "h"
    pos_key, len_key = ("y", "x") if horizontal else ("x", "y")
    pos_axis = _axis(layout, trace, pos_key)
    len_axis = _axis(layout, trace, len_key)
    lengths = list(_values(trace, len_key) or [])
    positions = _positions(trace, pos_key, len(lengths))
    base = trace.get("base", 0)
    for position, length in zip(positions, lengths):
        at = _placed(position, pos_axis)
        if at is None or not _in_range(at, at, pos_axis):
            continue
        value = _number(length)
        if value is None or value == 0:
            continue
        if (len_axis.get("type") or "-") == "log":
            if value > 0:
                return True  # a bar on a log axis rises from the axis's foot
            continue
        start = _number(base) or 0.0
        if _in_range(start, start + value, len_axis):
            return True
    return False


def _grid_marks(trace: dict) -> bool:
    """A heatmap, contour or surface shows where its z has one finite value."""
    z = np.asarray(_values(trace, "z") or [], dtype=object).ravel()
    return any(_number(v) is not None for v in z)


def trace_problem(trace: dict, layout: dict) -> str | None:
    """Why ``trace`` draws no mark in a figure with ``layout`` (plotly JSON dicts); None when it draws one.

    A trace hidden on purpose (``visible`` false or ``"legendonly"``) needs no mark.
    """
    if trace.get("visible", True) is not True:
        return None
    kind = trace.get("type", "scatter")
    if kind in ("scatter", "scattergl"):
        shown = _scatter_marks(trace, layout)
    elif kind == "scatter3d":
        shown = _scatter3d_marks(trace)
    elif kind == "bar":
        shown = _bar_marks(trace, layout)
    elif kind in ("heatmap", "contour", "surface"):
        shown = _grid_marks(trace)
    else:
        return f"trace type {kind!r} is not checked yet: add what a visible mark of it is to {Path(__file__).name}"
    if shown:
        return None
    letters = ("y", "x") if trace.get("orientation") == "h" else ("x", "y")
    axes = {f"{c}axis": _axis(layout, trace, c).get("type", "-") for c in letters} if "3d" not in kind else {}
    return f"{kind} trace {trace.get('name') or ''!r} draws no mark (axis types {axes})"


def plotly_problems(fig: dict) -> list[str]:
    """Why each trace of the plotly JSON ``fig`` (``{"data": [...], "layout": {...}}``) draws nothing."""
    layout = fig.get("layout", {})
    traces = fig.get("data", [])
    if not traces:
        return ["a figure with no trace"]
    return [p for t in traces if (p := trace_problem(t, layout))]


# ---------------------------------------------------------------------------
# saved PNGs: is there ink inside the plot area?
# ---------------------------------------------------------------------------


def _rgb(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.int16)


def _background(area: np.ndarray) -> np.ndarray:
    colours, counts = np.unique(area.reshape(-1, 3), axis=0, return_counts=True)
    return colours[counts.argmax()]


def _runs(row: np.ndarray) -> list[tuple[int, int]]:
    """The (start, end) columns of each run of True in the 1-D boolean ``row``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], row.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def _plotly_plot_area(img: np.ndarray, layout: dict) -> tuple[int, int, int, int]:
    """Rows and columns (top, bottom, left, right) of a plotly PNG's plot area.

    The layout's margins bound it, but plotly widens them for the legend and for long tick labels.
    Inside them, plotly_white's horizontal grid lines (light, anti-aliased over two rows) run
    across the plot area of each panel and stop short of the legend: the plot area (all panels
    together) spans what they span, down to the lowest of them.
    """
    h, w = img.shape[:2]
    width, height = layout.get("width") or KALEIDO_SIZE[0], layout.get("height") or KALEIDO_SIZE[1]
    sx, sy = w / width, h / height
    margin = {**PLOTLY_MARGIN, **(layout.get("margin") or {})}
    top, bottom = int(margin["t"] * sy), int(h - margin["b"] * sy)
    left, right = int(margin["l"] * sx), int(w - margin["r"] * sx)
    area = img[top:bottom, left:right]
    if area.size == 0:
        return top, bottom, left, right
    off = np.abs(area - _background(area)).max(axis=2)
    marked, light = off > 0, (off > 0) & (off <= GRID_LEVEL)
    grid_rows, starts, ends = [], [], []
    for r in range(area.shape[0]):
        # a grid line is one long run of marked pixels (marks crossing it included), mostly light
        long = [(a, b) for a, b in _runs(marked[r]) if b - a >= 0.15 * area.shape[1]]
        if long and sum(light[r, a:b].sum() for a, b in long) >= 0.5 * sum(b - a for a, b in long):
            grid_rows.append(r)
            starts.append(long[0][0])
            ends.append(long[-1][1])
    if grid_rows:
        bottom = top + max(grid_rows) + 2
        left, right = left + min(starts), left + max(ends)
    return top, bottom, left, right


def ink_share(png: bytes, layout: dict | None = None) -> float:
    """The share of the plot area's pixels that are ink (see :data:`INK_LEVEL`).

    With the plotly ``layout`` the PNG was drawn from, the plot area is found from it (see
    :func:`_plotly_plot_area`); without one (a matplotlib image) it is the centre 60 % of each side,
    inside the axes of the course's one- and two-panel figures.
    """
    img = _rgb(png)
    h, w = img.shape[:2]
    if layout is not None and "scene" not in layout:
        top, bottom, left, right = _plotly_plot_area(img, layout)
    else:
        top, bottom, left, right = int(0.2 * h), int(0.8 * h), int(0.2 * w), int(0.8 * w)
    area = img[top:bottom, left:right]
    if area.size == 0:
        return 0.0
    ink = np.abs(area - _background(area)).max(axis=2) > INK_LEVEL
    return float(ink.mean())


# ---------------------------------------------------------------------------
# one notebook
# ---------------------------------------------------------------------------


def figure_problems(path: Path) -> list[str]:
    """Every figure of the notebook at ``path`` that does not show its data, as "cell i: why"."""
    found = []
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            data = out.get("data", {})
            fig = data.get(PLOTLY)
            if fig is not None:
                found += [f"cell {i}: {p}" for p in plotly_problems(fig)]
            if "image/png" in data:
                png = base64.b64decode(data["image/png"])
                share = ink_share(png, fig.get("layout", {}) if fig is not None else None)
                if share < MIN_INK_SHARE:
                    kind = "the PNG beside the plotly figure" if fig is not None else "the PNG"
                    found.append(f"cell {i}: {kind} is blank in its plot area ({share:.4f} of it ink)")
    return found


LESSONS = site.lesson_notebooks(REPO)


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_figure_of_a_committed_lesson_shows_its_data(path):
    problems = figure_problems(path)
    assert not problems, f"{path.name}: " + "; ".join(problems)


def test_the_lessons_carry_figures_to_check():
    """The check above reads something: the lessons' plotly figures and PNGs are found."""
    counts = {"plotly": 0, "png": 0}
    for path in LESSONS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for out in cell.get("outputs", []):
                counts["plotly"] += PLOTLY in out.get("data", {})
                counts["png"] += "image/png" in out.get("data", {})
    assert counts["plotly"] >= 10 and counts["png"] >= 40, counts


# ---------------------------------------------------------------------------
# the checks themselves, and the course's style
# ---------------------------------------------------------------------------


def _bar_figure(**axes) -> dict:
    import plotly.graph_objects as go

    from nodecourse.plotting import figure

    fig = figure("t", "model", "AUC", **axes)
    fig.add_trace(go.Bar(x=["ode-rnn", "latent ode"], y=[0.8, 0.83], name="measured"))
    return fig.to_plotly_json()


def test_a_course_bar_figure_with_text_categories_keeps_its_bars():
    fig = _bar_figure()
    assert fig["layout"].get("xaxis", {}).get("type") not in NUMERIC_AXES
    assert plotly_problems(fig) == []


def test_a_course_figure_keeps_the_log_axes_it_asks_for():
    from nodecourse.plotting import figure

    layout = figure("t", "x", "y", log_x=True, log_y=True).to_plotly_json()["layout"]
    assert layout["xaxis"]["type"] == layout["yaxis"]["type"] == "log"


def test_the_check_finds_text_bars_on_a_linear_axis():
    fig = _bar_figure()
    fig["layout"].setdefault("xaxis", {})["type"] = "linear"
    (problem,) = plotly_problems(fig)
    assert "bar trace 'measured' draws no mark" in problem and "'xaxis': 'linear'" in problem


@pytest.mark.parametrize(
    "trace, layout, shown",
    [
        ({"type": "scatter", "mode": "lines", "x": [1, 2], "y": [1, float("nan")]}, {}, False),
        ({"type": "scatter", "mode": "lines", "x": [1, 2, 3], "y": [1, None, 2]}, {}, False),
        ({"type": "scatter", "mode": "lines", "x": [1, 2], "y": [1, 2]}, {}, True),
        ({"type": "scatter", "mode": "markers", "x": [1], "y": [1]}, {}, True),
        ({"type": "scatter", "mode": "markers", "x": [1], "y": [0]}, {"yaxis": {"type": "log"}}, False),
        ({"type": "scatter", "mode": "markers", "x": [1], "y": [5]}, {"yaxis": {"range": [0, 1]}}, False),
        ({"type": "scatter", "mode": "markers", "x": ["a"], "y": [1]}, {"xaxis": {"type": "linear"}}, False),
        ({"type": "scatter", "mode": "markers", "x": ["2.5"], "y": [1]}, {"xaxis": {"type": "linear"}}, True),
        ({"type": "scatter", "mode": "markers", "y": [1, 2]}, {}, True),
        ({"type": "bar", "x": ["a"], "y": [0.4]}, {"yaxis": {"range": [0.5, 0.9]}}, False),
        ({"type": "bar", "x": ["a"], "y": [0.8]}, {"yaxis": {"range": [0.5, 0.9]}}, True),
        ({"type": "bar", "x": ["a"], "y": [0]}, {}, False),
        ({"type": "bar", "x": ["a"], "y": [0.1]}, {"xaxis": {"type": "category"}, "yaxis": {"type": "log"}}, True),
        ({"type": "bar", "y": ["a"], "x": [2], "orientation": "h"}, {"yaxis": {"type": "linear"}}, False),
        ({"type": "bar", "x": ["a"], "y": [1], "visible": "legendonly"}, {"xaxis": {"type": "linear"}}, True),
        ({"type": "heatmap", "z": [[float("nan"), None]]}, {}, False),
        ({"type": "contour", "z": [[1.0, 2.0], [3.0, None]]}, {}, True),
        ({"type": "scatter3d", "mode": "lines", "x": [0, 1], "y": [0, 1], "z": [0, 1]}, {}, True),
        ({"type": "scatter3d", "mode": "lines", "x": [0, 1], "y": [0, 1], "z": [0, None]}, {}, False),
        ({"type": "scatter", "mode": "markers", "x": {"dtype": "f8", "bdata": "AAAAAAAA8D8="}, "y": [1]}, {}, True),
    ],
)
def test_what_counts_as_a_visible_mark(trace, layout, shown):
    assert (trace_problem(trace, layout) is None) is shown


def test_an_unknown_trace_type_is_named_not_passed():
    assert "'sankey' is not checked yet" in trace_problem({"type": "sankey"}, {})


def _png(draw) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=80)
    ax.grid(True, alpha=0.3)
    draw(ax)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def test_a_png_of_empty_axes_is_blank_and_one_with_bars_is_not():
    empty = _png(lambda ax: ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="x", ylabel="y", title="nothing"))
    bars = _png(lambda ax: ax.bar(["a", "b", "c"], [1, 2, 3]))
    assert ink_share(empty) < MIN_INK_SHARE <= ink_share(bars)


def test_a_course_figure_refuses_to_show_text_categories_on_a_numeric_axis():
    """Shown, such a figure would be axes without marks; the error names the axis and the fix."""
    import plotly.graph_objects as go

    from nodecourse.plotting import figure, text_on_numeric_axes

    fig = figure("t", "variable", "rate", log_x=True)
    fig.add_trace(go.Bar(x=["HR", "MAP"], y=[0.5, 0.2], name="rate"))
    (problem,) = text_on_numeric_axes(fig)
    assert "'HR', 'MAP'" in problem and "xaxis" in problem and "type='category'" in problem
    with pytest.raises(ValueError, match="xaxis, whose type is 'log'"):
        fig.show()
    assert text_on_numeric_axes(figure("t", "variable", "rate").add_trace(go.Bar(x=["HR"], y=[1.0]))) == []


def test_lesson_5_figures_draw_each_trace_they_show(tmp_path):
    """A variable never measured is named beside the legend, not drawn; a measured AUC below 0.5
    keeps its bar in view."""
    from physionet_fixtures import synthetic_set

    from nodecourse.plotting import plot_auc_comparison, plot_observation_rates, plot_patient

    data = synthetic_set(tmp_path, 4, seed=0, quantization=1.0)
    data.mask[0, :, data.variables.index("Lactate")] = 0
    fig = plot_patient(data, 0, variables=("HR", "Lactate")).to_plotly_json()
    assert [t["visible"] for t in fig["data"]] == [True, "legendonly"]
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["not measured:<br>Lactate"]
    assert plotly_problems(fig) == []
    assert plotly_problems(plot_observation_rates(data).to_plotly_json()) == []
    fig = plot_auc_comparison({"ODE-RNN": (0.45, 0.03)}, {"ODE-RNN": (0.833, 0.009)}, "t").to_plotly_json()
    low, high = fig["layout"]["yaxis"]["range"]
    assert low <= 0.42 and high >= 0.9 and plotly_problems(fig) == []
