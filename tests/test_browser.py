"""The course in a real browser: `nodecourse lab` (JupyterLab) driven by headless Chromium.

What a learner does, checked in the page:

* the first page `nodecourse lab` opens is lesson 0's course map, and every lesson link in it
  opens that lesson (and the learner can come back);
* every lesson with an explorer runs its set-up cell and its explorer's cell in the page, as a
  learner who jumps to the explorer does (one lesson, ``RUN_ALL_LESSON``, runs top to bottom
  with Run > Run All Cells, quick mode; every lesson runs top to bottom in a kernel in
  tests/test_notebooks.py); each explorer renders (controls, result line, figure); changing its
  main controls through the page (solver, tolerance, ...) changes the numbers it shows (NFE,
  error, iterations, ...) and its figure, to exactly what the library computes in this test
  process for the same settings.

Screenshots of each explorer before and after the changes go to test-artifacts/browser/
(git-ignored). The lessons run in a copy of notebooks/, so the repository is never touched.

Adding a lesson's explorer: one ``ExplorerCase`` in ``EXPLORERS`` (its notebook, its class, the
settings the notebook builds it with, the changes to make, and how to compute the expected
numbers with the library). ``test_every_explorer_in_the_lessons_is_driven`` fails until it exists.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

import browser_support as B
from notebook_fixtures import REPO

CI = os.environ.get("CI", "").lower() == "true"
# one lesson, quick mode, on a loaded 2-core CI machine (NODECOURSE_BROWSER_RUN_ALL_S overrides)
RUN_ALL_TIMEOUT_MS = int(float(os.environ.get("NODECOURSE_BROWSER_RUN_ALL_S", 420)) * 1000)
UPDATE_TIMEOUT_MS = 180_000  # one explorer update (the annulus explorer retrains)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1500)]


def _unavailable(reason: str):
    """Under CI=true a browser that cannot start is a failure, elsewhere a skip."""
    if CI:
        pytest.fail(f"browser tests cannot run under CI=true: {reason}")
    pytest.skip(reason)


# ---------------------------------------------------------------------------
# the explorers: one table entry each
# ---------------------------------------------------------------------------

Settings = dict  # control name -> value, as the explorer's Python object holds it


@dataclass(frozen=True)
class Change:
    """Set control ``control`` (``nc-control-<control>`` in the page) to ``value``."""

    control: str
    kind: str  # "select" (a Dropdown: str(value) is the option label), "slider" (text typed in the
    # readout) or "keys" (text = the key pressed on the slider's handle, e.g. a SelectionSlider)
    value: object  # the Python value the control must end with
    text: str = ""  # what to type or press; default str(value)


@dataclass(frozen=True)
class ExplorerCase:
    notebook: str  # file in notebooks/
    cls: str  # the explorer's class name (CSS class nc-explorer-<cls>)
    initial: Settings  # the settings the notebook builds it with (quick mode)
    steps: tuple[tuple[Change, ...], ...]  # groups of changes; numbers and figure are checked after each
    expected: Callable[[Settings], "Expected"]  # the library's numbers for these settings
    parse: Callable[[str], dict]  # the numbers in the explorer's result line
    # compare the page's plot data with the library's result (``Expected.result``) for these settings
    plotly_check: Callable[[dict, Settings, "Expected"], None] | None = None

    @property
    def id(self) -> str:
        return f"{Path(self.notebook).stem}-{self.cls}"


@dataclass
class Expected:
    numbers: dict  # the same keys ``parse`` returns
    summary: str  # the library's result line (timings masked before comparing)
    result: object = None  # the library's result object itself (what ``plotly_check`` compares with)


def _single_thread(fn):
    """Compute expected values with one torch thread, as the lesson kernels run (OMP_NUM_THREADS=1)."""

    def wrapped(*args):
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn(*args)
        finally:
            torch.set_num_threads(before)

    return wrapped


# -- lesson 2: SolverExplorer ---------------------------------------------

_SOLVER_RE = re.compile(
    r"(?P<method>\S+) on (?P<device>\w+) \((?P<dtype>\w+)\)(?:, h=(?P<h>[\d.e+-]+))?: status (?P<status>\w+), "
    r"NFE (?P<nfe>\d+), accepted (?P<accepted>\d+), rejected (?P<rejected>\d+), max error (?P<error>\S+),"
)


def _parse_solver(text: str) -> dict:
    m = _SOLVER_RE.search(text)
    assert m, f"the solver explorer's result line has an unexpected form: {text!r}"
    d = m.groupdict()
    return {
        "method": d["method"],
        "status": d["status"],
        "nfe": int(d["nfe"]),
        "accepted": int(d["accepted"]),
        "rejected": int(d["rejected"]),
        "max_error": d["error"],
    }


@_single_thread
def _expected_solver(s: Settings) -> Expected:
    from nodecourse.widgets import PROBLEMS, run_solver

    r = run_solver(PROBLEMS[s["problem"]], s["method"], s["rtol"], s["atol"], s["step_size"], "cpu")
    return Expected(
        {
            "method": r.method,
            "status": r.status,
            "nfe": r.nfe,
            "accepted": r.n_accepted,
            "rejected": r.n_rejected,
            "max_error": f"{r.max_error:.2e}",
        },
        r.summary(),
        r,
    )


def _check_solver_plot(traces: dict, s: Settings, expected: Expected) -> None:
    """The plotted trajectory is the library's solution for these settings, point by point."""
    import numpy as np

    from nodecourse.widgets import PROBLEMS

    r = expected.result  # run_solver's result for ``s`` (solved once, in _expected_solver)
    for i, label in enumerate(PROBLEMS[s["problem"]].labels):
        name = f"{label} ({s['method']})"
        assert name in traces, f"no trace {name!r} in the page's figure; traces: {list(traces)}"
        np.testing.assert_allclose(
            np.array(traces[name], dtype=float),
            r.ys[:, i],
            rtol=1e-9,
            atol=1e-12,
            err_msg=f"page trace {name!r} differs from the library's solution",
        )


SOLVER_INITIAL = dict(problem="van der pol (μ=2)", method="dopri5", rtol=1e-6, atol=1e-8, step_size=0.1, device="cpu")

# -- lesson 3: AnnulusExplorer --------------------------------------------

_ANNULUS_HEAD = (
    r"(?P<kind>plain NODE|ANODE \(\+\d+ zero dims\)), (?P<epochs>\d+) epochs, seed (?P<seed>\d+), "
    r"(?P<params>\d+) parameters: "
)
_ANNULUS_RE = re.compile(
    _ANNULUS_HEAD + r"sample accuracy (?P<acc>[\d.]+)%; on \|x\| = [\d.]+: wrong (?P<wrong>[\d.]+)% "
    r"of the circle, min margin (?P<margin>[+-][\d.]+); forward NFE at the last epoch (?P<nfe>\d+)"
)
# a model that gives one class to every point: the line says so instead of the circle probe's numbers
_ANNULUS_ONE_CLASS_RE = re.compile(
    _ANNULUS_HEAD + r"not fitted: it predicts one class, the (?P<one>ring \(\+1\)|disk \(-1\)), everywhere "
    r"on the grid; its sample accuracy (?P<acc>[\d.]+)% .*forward NFE at the last epoch (?P<nfe>\d+)"
)


def _parse_annulus(text: str) -> dict:
    m = _ANNULUS_RE.search(text) or _ANNULUS_ONE_CLASS_RE.search(text)
    assert m, f"the annulus explorer's result line has an unexpected form: {text!r}"
    d = m.groupdict()
    return {
        "kind": d["kind"],
        "epochs": int(d["epochs"]),
        "parameters": int(d["params"]),
        "sample_accuracy": d["acc"],
        "wrong": d.get("wrong"),
        "min_margin": d.get("margin"),
        "one_class": d.get("one"),
        "nfe": int(d["nfe"]),
    }


@_single_thread
def _expected_annulus(s: Settings) -> Expected:
    from nodecourse.widgets._annulus import train_and_probe

    r = train_and_probe(s["augment_dim"], s["epochs"], s["seed"])
    return Expected(_parse_annulus(r.summary()), r.summary())


# -- lesson 4: AdjointExplorer --------------------------------------------

_ADJOINT_RE = re.compile(
    r"(?P<mode>\w+) on (?P<device>\w+): gradient error (?P<error>\S+), NFE forward (?P<nfe>\d+), "
    r"backward (?P<nfe_b>\d+), peak memory .*?, backward status (?P<status>\w+)"
)


def _parse_adjoint(text: str) -> dict:
    m = _ADJOINT_RE.search(text)
    assert m, f"the adjoint explorer's result line has an unexpected form: {text!r}"
    d = m.groupdict()
    return {
        "mode": d["mode"],
        "error": d["error"],
        "nfe": int(d["nfe"]),
        "nfe_backward": int(d["nfe_b"]),
        "status": d["status"],
    }


@_single_thread
def _expected_adjoint(s: Settings) -> Expected:
    from nodecourse.widgets._adjoint_explorer import run_gradient

    r = run_gradient(s["lam"], s["T"], s["tol"], s["mode"], "cpu")
    return Expected(_parse_adjoint(r.summary()), r.summary())


# -- lesson 6: DEQExplorer -------------------------------------------------

_DEQ_RE = re.compile(
    r"(?P<method>\w+), tol (?P<tol>\S+), trained with Jacobian weight (?P<w>[\d.]+), (?P<device>\w+): "
    r"(?P<status>\w+), (?P<iters>\d+) iterations, final relative residual (?P<res>\S+),"
)


def _parse_deq(text: str) -> dict:
    m = _DEQ_RE.search(text)
    assert m, f"the DEQ explorer's result line has an unexpected form: {text!r}"
    d = m.groupdict()
    return {
        "method": d["method"],
        "tol": d["tol"],
        "jac_weight": d["w"],
        "status": d["status"],
        "iterations": int(d["iters"]),
        "residual": d["res"],
    }


@_single_thread
def _expected_deq(s: Settings) -> Expected:
    from nodecourse.widgets._deq_explorer import run_deq

    r = run_deq(s["method"], s["tol"], s["jac_weight"], "cpu")
    return Expected(_parse_deq(r.summary()), r.summary(), r)


def _check_deq_plot(traces: dict, s: Settings, expected: Expected) -> None:
    """The plotted residual trace is the library's, iteration by iteration."""
    import numpy as np

    r = expected.result  # run_deq's result for ``s`` (solved once, in _expected_deq)
    assert s["method"] in traces, f"no trace {s['method']!r} in the page's figure; traces: {list(traces)}"
    np.testing.assert_allclose(
        np.array(traces[s["method"]], dtype=float),
        np.array(r.residuals, dtype=float),
        rtol=1e-6,
        err_msg="page residual trace differs from the library's",
    )


# -- lesson 10: CheaperExplorer -------------------------------------------

_CHEAPER_RE = re.compile(
    r"weight (?P<w>[\d.]+), (?P<route>[^:]+): test NFE (?P<test_nfe>\d+), test accuracy (?P<acc>[\d.]+)%; gradient "
    r"NFE forward (?P<nfe>\d+), backward (?P<nfe_b>\d+); gradient error (?P<err>\S+) against an accurate solve, "
    r"(?P<own>\S+) against backprop through its own steps"
)


def _parse_cheaper(text: str) -> dict:
    m = _CHEAPER_RE.search(text)
    assert m, f"the lesson 10 explorer's result line has an unexpected form: {text!r}"
    d = m.groupdict()
    return {
        "weight": d["w"],
        "route": d["route"],
        "test_nfe": int(d["test_nfe"]),
        "accuracy": d["acc"],
        "nfe": int(d["nfe"]),
        "nfe_backward": int(d["nfe_b"]),
        "error": d["err"],
        "error_own": d["own"],
    }


@_single_thread
def _expected_cheaper(s: Settings) -> Expected:
    from nodecourse.lessons import lesson10 as L
    from nodecourse.widgets._cheaper_explorer import result_for

    grid = {(s["weight"], route): L.explore(s["weight"], route) for route in L.EXPLORER_ROUTES}
    r = result_for(grid, s["weight"], s["route"])
    return Expected(_parse_cheaper(r.summary()), r.summary())


# -- the table ------------------------------------------------------------

EXPLORERS: tuple[ExplorerCase, ...] = (
    ExplorerCase(
        "02_solvers_and_tolerance.ipynb",
        "SolverExplorer",
        SOLVER_INITIAL,
        steps=(
            (Change("method", "select", "bosh3"), Change("rtol", "slider", 1e-3, "1e-3")),
            (Change("method", "select", "rk4"), Change("step_size", "slider", 0.01, "0.01")),
            (
                Change("problem", "select", "stiff: y' = -1000 (y - cos t)"),
                Change("method", "select", "dopri5"),
                Change("atol", "slider", 1e-6, "1e-6"),
            ),
        ),
        expected=_expected_solver,
        parse=_parse_solver,
        plotly_check=_check_solver_plot,
    ),
    ExplorerCase(
        "03_annulus.ipynb",
        "AnnulusExplorer",
        dict(augment_dim=0, epochs=30, seed=0),
        steps=((Change("augment_dim", "slider", 1, "1"), Change("epochs", "slider", 10, "10")),),
        expected=_expected_annulus,
        parse=_parse_annulus,
    ),
    ExplorerCase(
        "04_adjoint.ipynb",
        "AdjointExplorer",
        dict(lam=-10.0, T=1.0, tol=1e-6, mode="adjoint", device="cpu"),
        steps=(
            (Change("mode", "select", "checkpoint"), Change("tol", "slider", 1e-4, "1e-4")),
            (
                Change("mode", "select", "adjoint"),
                Change("lam", "slider", -20.0, "-20"),
                Change("T", "slider", 2.0, "2"),
            ),
        ),
        expected=_expected_adjoint,
        parse=_parse_adjoint,
    ),
    ExplorerCase(
        "06_deq.ipynb",
        "DEQExplorer",
        dict(method="anderson", tol=1e-4, jac_weight=0.0, device="cpu"),
        steps=(
            (Change("method", "select", "picard"), Change("tol", "keys", 1e-6, "ArrowRight")),
            (Change("jac_weight", "select", 1.0),),
        ),
        expected=_expected_deq,
        parse=_parse_deq,
        plotly_check=_check_deq_plot,
    ),
    ExplorerCase(
        "10_cheaper_and_exact.ipynb",
        "CheaperExplorer",
        dict(weight=0.01, route="reversible"),
        steps=(
            (Change("route", "select", "adjoint"),),
            (Change("weight", "select", 0.1), Change("route", "select", "backprop")),
        ),
        expected=_expected_cheaper,
        parse=_parse_cheaper,
    ),
)

EXPLORER_IDS = [case.id for case in EXPLORERS]
# The one lesson the page runs top to bottom (Run > Run All Cells): the others run their set-up
# cell and their explorer's cell, since a lesson's own cells are tests/test_notebooks.py's.
RUN_ALL_LESSON = "10_cheaper_and_exact.ipynb"


def _explorer_cell(path: Path, cls: str) -> int:
    """Index (among code cells) of the one cell of notebook ``path`` that builds explorer ``cls``.

    Each explorer needs only the lesson's set-up cell (the first code cell: imports, threads,
    dtype) before it: a learner who jumps to the explorer runs those two."""
    import nbformat

    code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    shown = [i for i, source in enumerate(code) if re.search(rf"\b{cls}\(", source)]
    assert len(shown) == 1, f"{path.name} should display one {cls}; code cells doing so: {shown}"
    return shown[0]


_EXPECTED_CACHE: dict = {}


def _expected(case: ExplorerCase, settings: Settings) -> Expected:
    """``case.expected(settings)``, computed once per settings (training is seconds)."""
    key = (case.id, tuple(sorted(settings.items())))
    if key not in _EXPECTED_CACHE:
        _EXPECTED_CACHE[key] = case.expected(dict(settings))
    return _EXPECTED_CACHE[key]


def _masked(summary: str) -> str:
    """A result line without its wall-clock and memory figures (never compared)."""
    summary = re.sub(r"peak memory [^,]+", "peak memory <bytes>", summary)  # allocator-dependent
    return re.sub(r"[\d.]+ ?(ms|s)\b", "<time>", summary)


def _settings_shown(box, case: ExplorerCase, settings: Settings) -> None:
    """The page's controls show ``settings`` (dropdown labels exact, slider readouts as numbers)."""
    for name, value in settings.items():
        control = box.locator(f".nc-control-{name}").first
        if control.locator("select").count():
            shown = B.selected_option(box, name)
            assert shown == str(value), f"{case.id}: control {name} shows {shown!r}, expected {value!r}"
        elif control.locator(".widget-readout").count() and isinstance(value, (int, float)):
            shown = B.slider_readout(box, name)
            assert math.isclose(float(shown), float(value), rel_tol=0.06), (
                f"{case.id}: slider {name} reads {shown!r}, expected {value!r}"
            )


# ---------------------------------------------------------------------------
# fixtures: one server and one browser for the module
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab():
    if not B.CHROMIUM.exists():
        _unavailable(f"{B.CHROMIUM} not found (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        _unavailable(f"playwright is not installed: {exc}")
    with tempfile.TemporaryDirectory(prefix="nodecourse-browser-") as tmp:
        work = Path(tmp)
        root = B.copy_course(work / "course")
        with B.lab_server(root, work) as server:
            try:
                browser_cm = B.chromium(work / "chromium-profile")
                context = browser_cm.__enter__()
            except Exception as exc:  # noqa: BLE001 - any launch failure means no browser
                _unavailable(f"Chromium did not start: {exc}")
            try:
                yield server, context
            finally:
                browser_cm.__exit__(None, None, None)


@pytest.fixture
def page(lab):
    server, context = lab
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        yield page
    finally:
        page.close()
        B.shutdown_kernels(server)  # the next lesson runs alone on the CI machine's two cores


# ---------------------------------------------------------------------------
# lesson 0: the course map
# ---------------------------------------------------------------------------

LESSON_FILE = re.compile(r"^(\d\d)_.+\.ipynb$")


def test_lab_opens_at_the_course_map_and_every_lesson_link_works(lab, page):
    server, _ = lab
    # the page `nodecourse lab` opens for a learner
    page.goto(server.opened_url())
    B.wait_for_notebook(page)
    assert B.current_tab(page) == "00_start_here.ipynb"
    panel = B.active_panel(page)
    panel.locator("h2", has_text="The course map").first.wait_for(state="visible")
    B.screenshot(panel, "lesson00-course-map.png")

    # every link to a file of the course (lessons, exercises, README); in-page anchors are skipped
    links = panel.locator(".jp-MarkdownOutput a[href]")
    files_prefix = f"{server.url}/files/"
    targets = []  # (index of the link, path relative to the course root)
    for i in range(links.count()):
        href = links.nth(i).get_attribute("href") or ""
        if href.startswith(files_prefix):
            rel = urllib.parse.unquote(href[len(files_prefix) :].split("?")[0].split("#")[0])
            targets.append((i, rel))
    lessons = sorted(
        f"notebooks/{p.name}"
        for p in (REPO / "notebooks").glob("*.ipynb")
        if LESSON_FILE.match(p.name) and not p.name.startswith("00_")
    )
    linked = {rel for _, rel in targets}
    missing = sorted(set(lessons) - linked)
    assert not missing, f"lessons in notebooks/ that the course map does not link: {missing}"

    for i, rel in targets:
        assert (server.root / rel).is_file(), f"the course map links {rel}, which does not exist"
        name = rel.split("/")[-1]
        link = B.active_panel(page).locator(".jp-MarkdownOutput a[href]").nth(i)
        link.scroll_into_view_if_needed()
        link.click()
        B.wait_current_tab(page, name)
        if name.endswith(".ipynb"):
            B.wait_for_notebook(page)
            title = B.active_panel(page).locator(".jp-MarkdownOutput h1").first
            title.wait_for(state="visible")
            if rel.startswith("notebooks/"):
                number = int(name[:2])
                assert title.inner_text().strip().startswith(f"{number} "), (
                    f"{rel} opened, but its title is {title.inner_text()!r}"
                )
        # and back to the course map: close the tab (a notebook's kernel shuts down with it) and
        # click the course map's tab
        B.close_current_tab(page)
        B.activate_tab(page, "00_start_here.ipynb")
        B.active_panel(page).locator("h2", has_text="The course map").first.wait_for(state="visible")
        assert B.current_tab(page) == "00_start_here.ipynb"
    assert not B.error_outputs(page)


# ---------------------------------------------------------------------------
# the explorers
# ---------------------------------------------------------------------------


def test_every_explorer_in_the_lessons_is_driven():
    """A lesson that displays an explorer class has a table entry here (so it is driven in the page)."""
    import nbformat

    shown = set()
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                shown |= {(path.name, cls) for cls in re.findall(r"\b(\w+Explorer)\(", cell.source)}
    covered = {(case.notebook, case.cls) for case in EXPLORERS}
    assert shown, "no lesson displays an explorer; the pattern used to find them is out of date"
    assert shown <= covered, f"explorers displayed by lessons but not driven in the browser: {sorted(shown - covered)}"
    assert RUN_ALL_LESSON in {case.notebook for case in EXPLORERS}, f"RUN_ALL_LESSON={RUN_ALL_LESSON!r} has no explorer"


@pytest.mark.parametrize("case", EXPLORERS, ids=EXPLORER_IDS)
def test_explorer_in_the_page_shows_what_the_library_computes(lab, page, case):
    server, _ = lab
    notebook = f"notebooks/{case.notebook}"
    B.open_notebook(page, server, notebook)
    try:
        if case.notebook == RUN_ALL_LESSON:
            B.run_all_cells(page, RUN_ALL_TIMEOUT_MS)
        else:
            B.run_code_cells(page, [0, _explorer_cell(server.root / notebook, case.cls)], RUN_ALL_TIMEOUT_MS)
    finally:
        B.ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(B.ARTIFACTS / f"{case.id}-page.png"))
    errors = B.error_outputs(page)
    assert not errors, f"{case.notebook} raised in the page:\n{errors[0][:2000]}"
    assert page.locator("text=Error displaying widget").count() == 0

    box = B.explorer(page, case.cls)
    box.scroll_into_view_if_needed()
    box.wait_for(state="visible")
    # it renders: each control, the result line and the figure are visible
    for name in case.initial:
        expect_visible = box.locator(f".nc-control-{name}").first
        assert expect_visible.is_visible(), f"{case.id}: control {name} is not visible"
    box.locator(".nc-status").first.wait_for(state="visible")
    box.locator(".nc-figure .jp-OutputArea-output").first.wait_for(state="visible")
    fig_box = box.locator(".nc-figure").first.bounding_box()
    assert fig_box and fig_box["width"] > 200 and fig_box["height"] > 150, f"{case.id}: figure too small: {fig_box}"

    settings = dict(case.initial)
    _settings_shown(box, case, settings)
    status = B.status_text(box)
    expected = _expected(case, settings)
    assert case.parse(status) == expected.numbers
    assert _masked(status) == _masked(expected.summary)
    figure = B.figure_signature(box)
    assert figure, f"{case.id}: no figure in the page"
    if case.plotly_check:
        case.plotly_check(B.plotly_traces(box), settings, _expected(case, settings))
    B.screenshot(box, f"{case.id}-0-before.png")

    for n, step in enumerate(case.steps, start=1):
        numbers_before = case.parse(status)
        for change in step:
            previous = status
            if change.kind == "select":
                B.select_option(box, change.control, str(change.value))
            elif change.kind == "slider":
                B.set_slider(box, change.control, change.text or str(change.value))
            elif change.kind == "keys":
                B.press_on_slider(box, change.control, change.text)
            else:  # pragma: no cover - a table typo
                raise ValueError(f"Change.kind={change.kind!r}: use 'select', 'slider' or 'keys'")
            was = _expected(case, settings)
            settings[change.control] = change.value
            if _masked(_expected(case, settings).summary) != _masked(was.summary):
                status = B.wait_status_change(page, box, previous, UPDATE_TIMEOUT_MS)
                # the explorer writes its result line, then redraws: wait for this change's figure
                figure = B.wait_figure_change(page, box, figure, UPDATE_TIMEOUT_MS)
            else:  # the library says nothing shown changes: let the kernel take the change
                page.wait_for_timeout(1_000)
                B.wait_kernel_idle(page, UPDATE_TIMEOUT_MS)
                status = B.status_text(box)
        _settings_shown(box, case, settings)
        expected = _expected(case, settings)
        shown = case.parse(status)
        assert shown == expected.numbers, f"{case.id} step {n}: page shows {shown}, library computes {expected.numbers}"
        assert _masked(status) == _masked(expected.summary)
        assert shown != numbers_before, f"{case.id} step {n}: the numbers did not change"
        if case.plotly_check:
            case.plotly_check(B.plotly_traces(box), settings, _expected(case, settings))
        B.screenshot(box, f"{case.id}-{n}-after.png")
    assert not B.error_outputs(page)


# ---------------------------------------------------------------------------
# the busy state: lesson 2's slow case
# ---------------------------------------------------------------------------

# implicit_euler on van der pol at rtol 1e-6 is the explorer's slowest setting: 16.0 s on one
# thread here (every other solver under 1.2 s), long enough to see the page while it runs.
SLOW_CASE = dict(SOLVER_INITIAL, method="implicit_euler")


def test_solver_explorer_says_it_is_busy_and_clears(lab, page):
    """Choosing the slow solver shows the busy line, locks the controls and dims the figure; when
    the solve ends they clear and the page shows the library's result. Slider handles are named."""
    server, _ = lab
    notebook = "notebooks/02_solvers_and_tolerance.ipynb"
    B.open_notebook(page, server, notebook)
    # the cells between the set-up and the explorer (the lesson's own solves) have nothing to do
    # with the busy state
    B.run_code_cells(page, [0, _explorer_cell(server.root / notebook, "SolverExplorer")], RUN_ALL_TIMEOUT_MS)
    errors = B.error_outputs(page)
    assert not errors, f"lesson 2 raised in the page:\n{errors[0][:2000]}"
    box = B.explorer(page, "SolverExplorer")
    box.scroll_into_view_if_needed()
    box.locator(".nc-figure .jp-OutputArea-output").first.wait_for(state="visible")

    # every slider handle has an accessible name: its description (ipywidgets 8 gives none)
    for control, name in (("rtol", "rtol"), ("atol", "atol"), ("step_size", "fixed h")):
        handle = box.locator(f".nc-control-{control} .noUi-handle").first
        page.wait_for_function("([h, n]) => h.getAttribute('aria-label') === n", arg=[handle.element_handle(), name])
    figure_before = B.figure_signature(box)

    B.select_option(box, "method", "implicit_euler")
    busy = box.locator(".nc-status .nc-busy").first
    busy.wait_for(state="visible", timeout=60_000)
    text = busy.inner_text()
    assert "computing…" in text and "solver implicit_euler" in text and "rtol 1e-06" in text, text
    assert "previous result" in B.status_text(box)
    assert box.locator(".nc-control-method select").first.is_disabled()
    assert box.locator(".nc-control-rtol .noUi-target").first.get_attribute("disabled") is not None
    figure = box.locator(".nc-figure").first
    assert "nc-stale" in (figure.get_attribute("class") or "")
    assert float(figure.evaluate("el => getComputedStyle(el).opacity")) < 1  # dimmed
    B.screenshot(box, "02_solvers_and_tolerance-busy.png")

    busy.wait_for(state="detached", timeout=UPDATE_TIMEOUT_MS)
    B.wait_figure_change(page, box, figure_before, UPDATE_TIMEOUT_MS)
    assert "nc-stale" not in (figure.get_attribute("class") or "")
    assert not box.locator(".nc-control-method select").first.is_disabled()
    assert box.locator(".nc-control-rtol .noUi-target").first.get_attribute("disabled") is None
    status = B.status_text(box)
    expected = _expected_solver(SLOW_CASE)
    assert _parse_solver(status) == expected.numbers
    assert _masked(status) == _masked(expected.summary)
    _check_solver_plot(B.plotly_traces(box), SLOW_CASE, expected)
    B.screenshot(box, "02_solvers_and_tolerance-busy-cleared.png")
    assert not B.error_outputs(page)
