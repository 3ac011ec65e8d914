"""The solver explorer, driven headless: set a control's .value, read the result it updated."""

import math
import re

import numpy as np
import pytest
import torch

from nodecourse.widgets import PROBLEMS, SolverExplorer, run_solver


@pytest.fixture
def explorer():
    """A fresh explorer per test: each test sets what it needs, whichever worker and order runs it."""
    return SolverExplorer(render=False)


def test_initial_solve_is_accurate(explorer):
    res = explorer.result
    assert res.method == "dopri5" and res.status == "SUCCESS"
    assert res.nfe > 0 and res.n_accepted > 0
    assert res.max_error < 1e-4  # rtol 1e-6 on Van der Pol, against scipy's DOP853 at 1e-12
    assert "NFE" in explorer.status.value


def test_tolerance_slider_changes_work_and_error(explorer):
    explorer.method.value = "dopri5"
    explorer.rtol.value = 1e-9
    explorer.atol.value = 1e-11
    tight = explorer.result
    explorer.rtol.value = 1e-3
    explorer.atol.value = 1e-5
    loose = explorer.result
    assert loose.rtol == pytest.approx(1e-3) and tight.rtol == pytest.approx(1e-9)
    assert loose.nfe < tight.nfe
    assert loose.max_error > tight.max_error


def test_fixed_step_solver_uses_the_step_slider(explorer):
    explorer.method.value = "rk4"
    assert explorer.step_size.disabled is False and explorer.rtol.disabled is True
    explorer.step_size.value = 10**-2.5
    fine = explorer.result
    explorer.step_size.value = 10**-1.5  # below the output spacing (10 / 199), so it is the step used
    coarse = explorer.result
    assert coarse.step_size == pytest.approx(10**-1.5) and coarse.n_rejected == 0
    # Steps are cut to land on the 200 output times, so NFE grows about (not exactly) 10x.
    assert 5 < fine.nfe / coarse.nfe < 15
    # Fourth order: about 10x smaller steps give a much smaller error (a wide band: 1e2 .. 1e6).
    assert 1e2 < coarse.max_error / fine.max_error < 1e6


def test_stiff_problem_explicit_blows_up_implicit_copes(explorer):
    explorer.problem.value = "stiff: y' = -1000 (y - cos t)"
    # Loose tolerances, where accuracy alone would allow long steps: what limits dopri5 is stability.
    # (At rtol 1e-6 the trapezoid rule is held by accuracy too: 244 steps against dopri5's 364.)
    explorer.rtol.value = 1e-3
    explorer.atol.value = 1e-5
    explorer.method.value = "euler"
    explorer.step_size.value = 0.01  # beyond Euler's stability limit 2/1000
    assert (
        explorer.result.status != "SUCCESS"
        or not math.isfinite(explorer.result.max_error)
        or explorer.result.max_error > 1.0
    )
    explorer.method.value = "implicit_euler"
    assert explorer.rtol.disabled is False  # implicit methods are adaptive here: tolerances apply
    implicit = explorer.result
    assert implicit.status == "SUCCESS" and implicit.max_error < 1e-2
    explorer.method.value = "trapezoid"
    implicit = explorer.result
    assert implicit.status == "SUCCESS" and implicit.max_error < 1e-3
    explorer.method.value = "dopri5"
    explicit = explorer.result
    # The explicit pair is held to tiny steps by stability, not accuracy.
    assert explicit.n_accepted + explicit.n_rejected > 3 * (implicit.n_accepted + implicit.n_rejected)


def test_devices_offered_are_the_available_ones(explorer):
    from nodecourse.config import available_devices

    assert list(explorer.device.options) == available_devices()


@pytest.mark.parametrize("device", ["cuda", "mps"])
def test_runs_on_accelerator(device):
    from nodecourse.config import available_devices

    if device not in available_devices():
        pytest.skip(f"{device} not available")
    res = run_solver(PROBLEMS["van der pol (μ=2)"], "dopri5", 1e-6, 1e-8, None, device)
    assert res.device == device and res.status == "SUCCESS" and res.max_error < 1e-4


def test_render_builds_a_labelled_figure():
    ex = SolverExplorer(render=True, rtol=1e-4)
    fig = ex.figure
    assert fig is not None
    assert any(ax.title.text for ax in (fig.layout.xaxis, fig.layout.yaxis))


def _texts(widget):
    """Every text an explorer's widget tree shows (HTML and Label values), depth first."""
    import ipywidgets as w

    found = [widget.value] if isinstance(widget, (w.HTML, w.HTMLMath, w.Label)) else []
    for child in getattr(widget, "children", ()):
        found += _texts(child)
    return found


def test_the_result_line_is_shown_once():
    """The solve's summary is the status line; the figure does not repeat it as its title."""
    ex = SolverExplorer(render=True)
    summary = ex.result.summary()
    assert summary in ex.status.value
    assert [t for t in _texts(ex.widget) if "NFE" in t] == [ex.status.value]
    fig = ex.figure
    figure_texts = [fig.layout.title.text or ""] + [a.text for a in fig.layout.annotations]
    assert not any("NFE" in t for t in figure_texts), figure_texts


def test_the_error_axis_is_fixed_with_plain_exponents():
    """Tightening rtol moves the error curve down a fixed axis; ticks read 1e-8, never 10n or 20µ."""
    ex = SolverExplorer(render=True, rtol=1e-3, atol=1e-5)
    loose = ex.figure.layout.yaxis2
    loose_err = ex.result.error
    ex.rtol.value, ex.atol.value = 1e-9, 1e-11
    tight = ex.figure.layout.yaxis2
    assert loose.type == tight.type == "log"
    assert tuple(loose.range) == tuple(tight.range) == (-14, 2) and tight.autorange is False
    assert list(loose.ticktext) == list(tight.ticktext)
    assert all(re.fullmatch(r"1e-?\d+", t) for t in tight.ticktext), tight.ticktext
    assert [float(t) for t in tight.ticktext] == pytest.approx(list(tight.tickvals))
    assert not any(prefix in "".join(tight.ticktext) for prefix in ("µ", "n", "p", "m"))
    drawn = ex.figure.data[-1].y
    assert np.nanmedian(drawn) < np.nanmedian(np.where(loose_err > 0, loose_err, np.nan)) / 100


def test_errors_off_the_axis_are_noted_not_hidden(explorer):
    explorer.problem.value = "stiff: y' = -1000 (y - cos t)"
    explorer.method.value = "euler"
    explorer.step_size.value = 0.01  # beyond Euler's stability limit: the error explodes
    from nodecourse.widgets._solver_explorer import errors_off_axis

    assert "above 1e2" in errors_off_axis(explorer.result)
    explorer.problem.value = "van der pol (μ=2)"
    explorer.method.value = "dopri5"
    assert errors_off_axis(explorer.result) == ""


def test_the_greyed_control_says_why(explorer):
    explorer.method.value = "dopri5"
    assert explorer.step_size.disabled is True
    assert "greyed" in explorer.step_size.tooltip and "fixed-step" in explorer.step_size.tooltip
    note = explorer.note.value
    assert "fixed h" in note and "greyed out" in note and "rk4" in note
    assert explorer.note in explorer.widget.children
    explorer.method.value = "rk4"
    assert explorer.step_size.disabled is False and explorer.rtol.disabled is True
    assert "rtol and atol are greyed out" in explorer.note.value


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="method='rk5'"):
        SolverExplorer(method="rk5", render=False)
    with pytest.raises(ValueError, match="problem='lorenz'"):
        SolverExplorer(problem="lorenz", render=False)
    with pytest.raises(ValueError, match="device='tpu'"):
        SolverExplorer(device="tpu", render=False)


# --- solver figures (nodecourse.plotting._solvers) ---------------------------------------------


def test_step_trace_is_the_solvers_record_and_covers_the_interval():
    from nodecourse.plotting import plot_step_sizes, trace_steps

    vdp = PROBLEMS["van der pol (μ=2)"]
    y0 = torch.tensor(vdp.y0, dtype=torch.float64)
    t = torch.linspace(0.0, vdp.t1, 20, dtype=torch.float64)
    for method in ("bosh3", "dopri5", "trapezoid"):
        tr = trace_steps(vdp.f_torch, y0, t, method=method, rtol=1e-5, atol=1e-7)
        assert tr.n_rejected > 0 and (tr.n_accepted, tr.n_rejected) == (tr.stats["n_accepted"], tr.stats["n_rejected"])
        acc = [(s, h) for s, h, a in zip(tr.t_start, tr.h, tr.accepted) if a]
        # Accepted steps tile [0, t1]: each starts where the previous ended.
        assert acc[0][0] == 0.0
        assert all(a[0] + a[1] == pytest.approx(b[0], abs=1e-12) for a, b in zip(acc, acc[1:]))
        assert acc[-1][0] + acc[-1][1] == pytest.approx(vdp.t1, abs=1e-12)
        if method != "trapezoid":  # rejected attempts are exactly those over the tolerance
            assert all((r <= 1.0) == a for r, a in zip(tr.error_ratio, tr.accepted))
    fig = plot_step_sizes([tr])
    assert len(fig.data) == 2 and fig.layout.xaxis.title.text.startswith("time")


def test_step_trace_needs_a_record():
    from nodecourse import odeint
    from nodecourse.plotting import StepTrace

    with pytest.raises(ValueError, match="record_steps=True"):
        StepTrace.from_solution(odeint(lambda t, y: -y, torch.ones(1), torch.tensor([0.0, 1.0])))


def test_problems_live_in_the_library():
    import numpy as np

    from nodecourse.measure import PROBLEMS as LIB_PROBLEMS
    from nodecourse.measure import reference_solution

    assert LIB_PROBLEMS is PROBLEMS
    stiff = LIB_PROBLEMS["stiff: y' = -1000 (y - cos t)"]
    ref = reference_solution(stiff, np.linspace(0.0, 1.0, 5))
    exact = (1e6 * np.cos(1.0) + 1e3 * np.sin(1.0) - 1e6 * np.exp(-1000.0)) / (1e6 + 1)
    assert ref.shape == (5, 1) and abs(ref[-1, 0] - exact) < 1e-9


def test_plots_take_measured_rows():
    from nodecourse.lessons.lesson02 import convergence
    from nodecourse.measure import tolerance_sweep
    from nodecourse.plotting import plot_convergence, plot_tolerance_sweep, plot_work_per_input

    fig = plot_convergence([convergence("rk4", (8, 16, 32))])
    assert "slope 4" in fig.data[0].name or "slope 3.9" in fig.data[0].name
    rows = tolerance_sweep(
        lambda t, y: -y, torch.ones(1, dtype=torch.float64), torch.tensor([0.0, 1.0], dtype=torch.float64), [1e-3, 1e-6]
    )
    fig = plot_tolerance_sweep({"dopri5": rows, "dict rows": [{"rtol": 1e-3, "error": 1e-4, "nfe": 20}]})
    assert len(fig.data) == 3 + 2  # three panels for SweepRows (with time), two for dicts without time
    fig = plot_work_per_input(["a", "b"], [10, 10], [3, 10])
    assert [list(d.y) for d in fig.data] == [[10, 10], [3, 10]]


@pytest.mark.slow
def test_importing_plotting_leaves_plotlys_renderer_unchanged():
    """No import-time side effect: checked in a fresh interpreter (here the module is imported already)."""
    import subprocess
    import sys

    code = (
        "import plotly.io as pio; pio.renderers.default = 'json'; import nodecourse.plotting, "
        "nodecourse.plotting._solvers, nodecourse.plotting._annulus, nodecourse.plotting._physionet; "
        "print(repr(pio.renderers.default))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "'json'"


def test_course_figures_show_with_the_mimetype_renderer_and_a_modest_matplotlib_style(monkeypatch):
    """The renderer is chosen per figure: fig.show() and display(fig) use plotly_mimetype (small
    notebooks), whatever the global default; an explicit renderer still wins."""
    import matplotlib as mpl
    import plotly.io as pio

    import nodecourse.plotting as plotting
    from nodecourse.plotting import plot_tolerance_sweep, plot_work_per_input

    shown = []
    monkeypatch.setattr(pio, "show", lambda fig, *a, **kw: shown.append((a, kw.get("renderer"))))
    monkeypatch.setattr(pio.renderers, "default", "browser")  # a global choice must not matter
    figures = [
        plotting.figure("t", "x", "y"),
        plotting.course_subplots(rows=1, cols=2),
        plot_work_per_input(["a"], [1], [1]),
        plot_tolerance_sweep({"dict rows": [{"rtol": 1e-3, "error": 1e-4, "nfe": 20}]}),
    ]
    for fig in figures:
        assert isinstance(fig, plotting.CourseFigure)
        fig.show()
        fig._ipython_display_()  # what IPython calls for display(fig) and a cell's last expression
    assert shown == [((), plotting.RENDERER)] * (2 * len(figures))
    shown.clear()
    figures[0].show(renderer="json")
    figures[0].show("png")  # plotly's positional renderer
    assert shown == [((), "json"), (("png",), None)]
    assert pio.renderers.default == "browser"
    plotting.use_style()
    assert mpl.rcParams["figure.dpi"] <= 100


def test_every_registered_solver_has_its_own_colour():
    """Colours derive from SOLVERS: no registered solver falls back to the grey of unknown names."""
    from nodecourse import SOLVERS
    from nodecourse.plotting import SOLVER_COLORS, UNREGISTERED_COLOR, solver_color, solver_colors

    assert set(SOLVERS) | {"torchdiffeq"} == set(SOLVER_COLORS)
    assert len(set(SOLVER_COLORS.values())) == len(SOLVER_COLORS)  # distinct
    assert UNREGISTERED_COLOR not in SOLVER_COLORS.values()
    assert all(solver_color(name) == SOLVER_COLORS[name] for name in SOLVERS)
    assert solver_color("my_ralston") == UNREGISTERED_COLOR  # a learner's own tableau
    more = solver_colors([*SOLVERS, "heun3", "dopri8"])  # what a new registry line would get
    assert {k: more[k] for k in SOLVER_COLORS} == SOLVER_COLORS  # existing colours stay
    assert len(set(more.values())) == len(more)
