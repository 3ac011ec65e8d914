"""Lesson 10's explorer (nodecourse/widgets/_cheaper_explorer.py), driven headless: set a control's
.value, read the result it updated; the grid it shows, computed by the lesson's code."""

import math
import re

import pytest

from nodecourse.widgets._cheaper_explorer import KEYS, CheaperExplorer, check_grid, result_figure

ROUTES = ("backprop", "adjoint", "reversible")
WEIGHTS = (0.0, 0.01)


def _entry(weight, route):
    # distinct numbers per pair, so that a lookup of the wrong pair shows
    k = ROUTES.index(route)
    return {
        "test NFE": 20 + int(100 * weight),
        "accuracy": 0.9 - weight,
        "NFE fwd": 20 + k,
        "NFE bwd": 0 if route == "backprop" else 20 + k,
        "error vs accurate": 10.0 ** (-3 - k),
        "error vs own steps": 0.0 if route != "adjoint" else 1e-4,
        "peak KiB": 100.0 * (3 - k),
    }


@pytest.fixture
def grid():
    return {(w, r): _entry(w, r) for w in WEIGHTS for r in ROUTES}


def test_controls_read_the_grid(grid):
    ex = CheaperExplorer(grid, weight=0.01, route="reversible", render=False)
    assert (ex.result.weight, ex.result.route) == (0.01, "reversible")
    assert ex.result.nfe == grid[0.01, "reversible"]["NFE fwd"] and ex.result.peak_kib == 100.0
    ex.route.value = "adjoint"  # an observed control re-runs update()
    assert ex.result.route == "adjoint" and ex.result.error_own == 1e-4
    ex.weight.value = 0.0
    assert ex.result.test_nfe == 20 and ex.result.accuracy == pytest.approx(0.9)
    assert ex.status.value == f"<code>{ex.result.summary()}</code>"
    assert list(ex.result.by_route) == list(ROUTES)
    assert list(ex.weight.options) == list(WEIGHTS) and list(ex.route.options) == list(ROUTES)


def test_figure_has_three_labelled_panels(grid):
    ex = CheaperExplorer(grid, render=False)
    fig = result_figure(ex.result)
    nfe, err, mem = fig.axes
    assert err.get_yscale() == "log"
    assert "evaluations" in nfe.get_ylabel() and "KiB" in mem.get_ylabel() and "error" in err.get_ylabel()
    assert [t.get_text() for t in mem.get_xticklabels()] == list(ROUTES)


@pytest.mark.parametrize(
    "arg,value,words", [("weight", 0.5, "valid: [0.0, 0.01]"), ("route", "symbolic", "valid: ['backprop'")]
)
def test_a_value_the_grid_lacks_is_refused_by_name(grid, arg, value, words):
    with pytest.raises(ValueError) as info:
        CheaperExplorer(grid, **{arg: value}, render=False)
    message = str(info.value)
    shown = f"{value:g}" if isinstance(value, float) else repr(value)
    assert message.startswith(f"CheaperExplorer: {arg}={shown} "), message
    assert words in message and re.search(r"pass one of these", message), message


def test_an_incomplete_grid_is_refused(grid):
    del grid[0.0, "adjoint"]
    with pytest.raises(ValueError, match=r"lacks the pairs \[\(0\.0, 'adjoint'\)\]"):
        check_grid(grid)
    with pytest.raises(ValueError, match="non-empty mapping"):
        check_grid({})
    bad = {(0.0, "backprop"): {k: 1 for k in KEYS if k != "peak KiB"}}
    with pytest.raises(ValueError, match="lacks \\['peak KiB'\\]"):
        check_grid(bad)


def test_the_explorer_builds_its_controls_through_the_one_rule():
    import inspect

    source = inspect.getsource(CheaperExplorer.__init__)
    assert "self._control(" in source and "w.Dropdown(" not in source


@pytest.mark.slow
def test_the_lessons_grid_separates_exact_from_accurate():
    """On the lesson's model: the reversible gradient equals backprop through its own steps to rounding
    while it differs from an accurate solve by the discretisation's error; backprop keeps more memory."""
    from nodecourse.lessons import lesson10 as L

    g = L.explorer_grid(weights=(0.0,), routes=("backprop", "reversible"))
    ex = CheaperExplorer(g, weight=0.0, route="reversible", render=False)
    rev, bp = ex.result.by_route["reversible"], ex.result.by_route["backprop"]
    assert rev["error vs own steps"] < 1e-12
    assert rev["error vs accurate"] > 100 * rev["error vs own steps"] and rev["error vs accurate"] > 1e-6
    assert rev["NFE bwd"] == rev["NFE fwd"] and bp["NFE bwd"] == 0
    assert bp["peak KiB"] > 2 * rev["peak KiB"]
    assert all(math.isfinite(v) for e in g.values() for v in e.values())
