"""The explorers say when they are busy (nodecourse/widgets/_base.py, FigureExplorer._recompute).

Driven headless through the controls' observers, with the computation replaced by a fake that
records what the explorer shows while it runs: the busy line, every control disabled, the figure
marked stale; all of it cleared after a result and after an error; a request superseded while it
ran never shown; sliders that report on release; a name on every control.
"""

from __future__ import annotations

import pytest

import nodecourse.widgets._adjoint_explorer as adjoint_mod
import nodecourse.widgets._annulus as annulus_mod
import nodecourse.widgets._cheaper_explorer as cheaper_mod
import nodecourse.widgets._deq_explorer as deq_mod
import nodecourse.widgets._solver_explorer as solver_mod
from nodecourse.widgets._base import BUSY_CLASS, ERROR_CLASS, STALE_CLASS, FigureExplorer


def _snapshot(ex) -> dict:
    """What the explorer shows at this moment."""
    return {
        "busy": ex.busy,
        "status": ex.status.value,
        "disabled": {c.description: c.disabled for c in ex.controls},
        "stale": STALE_CLASS in ex.output._dom_classes,
    }


@pytest.fixture
def recorded_solver(monkeypatch):
    """A SolverExplorer whose solves run the real solver after recording the explorer's state."""
    real = solver_mod.run_solver
    seen = []

    def recording(*args, **kwargs):
        seen.append((args, _snapshot(explorer) if explorer is not None else None))
        return real(*args, **kwargs)

    explorer = None
    monkeypatch.setattr(solver_mod, "run_solver", recording)
    explorer = solver_mod.SolverExplorer(render=False)
    seen.clear()
    return explorer, seen


def test_busy_while_solving_and_cleared_after(recorded_solver):
    ex, seen = recorded_solver
    before = ex.status.value
    assert not ex.busy and before == f"<code>{ex.result.summary()}</code>"

    ex.method.value = "rk4"  # the observer re-solves

    (args, during), *_ = seen
    assert args[1] == "rk4"
    assert during["busy"] is True
    assert BUSY_CLASS in during["status"] and "computing…" in during["status"]
    # the busy line names the settings being computed (the controls that apply to rk4)
    assert "solver rk4" in during["status"] and "fixed h 1.0e-01" in during["status"]
    assert "rtol" not in during["status"].split("</div>")[0]
    # the previous result stays readable, captioned as previous, and the figure is marked stale
    assert "previous result" in during["status"] and before in during["status"]
    assert during["stale"] is True
    assert all(during["disabled"].values()), during["disabled"]  # the solver control included

    after = _snapshot(ex)
    assert after["busy"] is False and after["stale"] is False
    assert after["status"] == f"<code>{ex.result.summary()}</code>" and ex.result.method == "rk4"
    # enabled again, except what does not apply to a fixed-step solver
    assert after["disabled"] == {
        "problem": False,
        "solver": False,
        "rtol": True,
        "atol": True,
        "fixed h": False,
        "device": False,
    }


def test_an_error_clears_the_busy_state_and_is_the_status_line(monkeypatch):
    ex = solver_mod.SolverExplorer(render=False)
    shown = ex.result

    def failing(*args, **kwargs):
        assert ex.busy
        raise RuntimeError("the Newton iteration did not converge")

    monkeypatch.setattr(solver_mod, "run_solver", failing)
    with pytest.raises(RuntimeError, match="did not converge"):
        ex.rtol.value = 1e-3
    assert ex.busy is False
    assert ERROR_CLASS in ex.status.value and "could not compute" in ex.status.value
    assert "RuntimeError: the Newton iteration did not converge" in ex.status.value
    assert "rtol 1e-03" in ex.status.value  # the settings it failed for
    assert ex.result is shown  # the last good result is kept, and shown as the previous one
    assert f"<code>{shown.summary()}</code>" in ex.status.value and "previous result" in ex.status.value
    assert STALE_CLASS in ex.output._dom_classes  # the figure is not for these settings
    assert [c.disabled for c in ex.controls] == [False, False, False, False, True, False]  # dopri5: h greyed

    monkeypatch.undo()  # the next change succeeds and clears the error and the stale mark
    ex.rtol.value = 1e-4
    assert ex.result.rtol == pytest.approx(1e-4) and ex.status.value == f"<code>{ex.result.summary()}</code>"
    assert STALE_CLASS not in ex.output._dom_classes


def test_a_request_superseded_while_it_runs_is_never_shown(monkeypatch):
    """A control changed while a solve runs starts a later request; the earlier result is dropped."""
    real = solver_mod.run_solver
    ex = solver_mod.SolverExplorer(render=False)
    calls, shown = [], []

    def slow(problem, method, rtol, *rest):
        calls.append(rtol)
        if len(calls) == 1:  # the learner changes rtol again before this solve ends
            ex.rtol.value = 1e-3
        return real(problem, method, rtol, *rest)

    real_show = solver_mod.show_result

    def recording_show(explorer, result, figure):
        shown.append(result.rtol)
        return real_show(explorer, result, figure)

    monkeypatch.setattr(solver_mod, "run_solver", slow)
    monkeypatch.setattr(solver_mod, "show_result", recording_show)
    ex.rtol.value = 1e-8
    assert calls == [pytest.approx(1e-8), pytest.approx(1e-3)]  # both requests computed ...
    assert shown == [pytest.approx(1e-3)]  # ... only the latest shown
    assert ex.result.rtol == pytest.approx(1e-3) and ex.status.value == f"<code>{ex.result.summary()}</code>"
    assert not ex.busy and STALE_CLASS not in ex.output._dom_classes
    assert not any(c.disabled for c in (ex.problem, ex.method, ex.rtol, ex.atol, ex.device))


def test_a_superseded_request_that_fails_leaves_the_latest_result(monkeypatch):
    real = solver_mod.run_solver
    ex = solver_mod.SolverExplorer(render=False)

    def slow_then_fail(problem, method, rtol, *rest):
        if rtol < 1e-7:
            ex.rtol.value = 1e-3  # superseded while running ...
            raise RuntimeError("an error nobody should see")  # ... then fails
        return real(problem, method, rtol, *rest)

    monkeypatch.setattr(solver_mod, "run_solver", slow_then_fail)
    ex.rtol.value = 1e-8  # no error raised: the request it belongs to is no longer current
    assert ex.result.rtol == pytest.approx(1e-3) and ERROR_CLASS not in ex.status.value and not ex.busy


# -- every explorer: the same busy state, sliders on release, named controls ------------------------

_GRID = {
    (w, r): dict.fromkeys(cheaper_mod.KEYS, 1.0) for w in (0.0, 0.01) for r in ("backprop", "adjoint", "reversible")
}

# class, module attribute that computes, module attribute (or class method) that shows, a change to make
EXPLORERS = {
    "SolverExplorer": (lambda: solver_mod.SolverExplorer(render=False), solver_mod, "run_solver", ("rtol", 1e-3)),
    "AdjointExplorer": (lambda: adjoint_mod.AdjointExplorer(render=False), adjoint_mod, "run_gradient", ("T", 2.0)),
    "DEQExplorer": (lambda: deq_mod.DEQExplorer(render=False), deq_mod, "run_deq", ("method", "picard")),
    "CheaperExplorer": (
        lambda: cheaper_mod.CheaperExplorer(_GRID, render=False),
        cheaper_mod,
        "result_for",
        ("route", "adjoint"),
    ),
    "AnnulusExplorer": (
        lambda: annulus_mod.AnnulusExplorer(render=False),
        annulus_mod,
        "train_and_probe",
        ("epochs", 10),
    ),
}


class _Fake:
    def summary(self) -> str:
        return "fake result"


@pytest.fixture(params=list(EXPLORERS))
def faked(request, monkeypatch):
    """(explorer, states seen during each computation, change) with the computation and drawing faked."""
    build, module, compute_name, change = EXPLORERS[request.param]
    seen = []
    holder = {}

    def fake_compute(*args, **kwargs):
        if "ex" in holder:
            seen.append(_snapshot(holder["ex"]))
        return _Fake()

    def fake_show(explorer, result, figure=None):
        explorer.result = result
        explorer.status.value = f"<code>{result.summary()}</code>"
        return result

    monkeypatch.setattr(module, compute_name, fake_compute)
    if hasattr(module, "show_result"):
        monkeypatch.setattr(module, "show_result", fake_show)
    else:
        monkeypatch.setattr(annulus_mod.AnnulusExplorer, "_show", lambda self, r: fake_show(self, r))
    holder["ex"] = ex = build()
    return ex, seen, change


def test_every_explorer_is_busy_while_it_computes(faked):
    ex, seen, (name, value) = faked
    setattr(getattr(ex, name), "value", value)
    assert len(seen) == 1, "the change did not start exactly one computation"
    during = seen[0]
    assert during["busy"] and BUSY_CLASS in during["status"] and during["stale"]
    assert f"{ex.BUSY_VERB}…" in during["status"]
    assert all(during["disabled"].values()), during["disabled"]
    assert not ex.busy and not any(_snapshot(ex)["disabled"][c.description] for c in ex.controls if ex._applies(c))
    assert ex.status.value == "<code>fake result</code>" and STALE_CLASS not in ex.output._dom_classes


def test_every_explorer_updates_on_release_and_names_every_control(faked):
    ex, _, _ = faked
    sliders = [c for c in ex.controls if c.has_trait("continuous_update")]
    assert sliders or type(ex).__name__ == "CheaperExplorer", "no slider found: the check is out of date"
    for control in sliders:  # one computation when a slider is released, none per step of a drag
        assert control.continuous_update is False, control.description
    for control in ex.controls:
        assert control.description and control.tooltip, f"{type(control).__name__} without a name"


def test_a_control_without_a_description_is_refused():
    import ipywidgets as w

    class Bare(FigureExplorer):
        def __init__(self):
            self.controls = [w.FloatSlider()]
            self._observe_controls()

    with pytest.raises(ValueError, match="Bare: a control .FloatSlider. has no description"):
        Bare()
