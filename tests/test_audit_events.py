"""The audit on solves with events: torchdiffeq's and the library's ``odeint(..., event_fn=...)`` and
``odeint_event`` (its default ``odeint_interface`` bound at definition, or one held by the model) are
found when called and refused by name (:class:`~nodecourse.audit._hook.EventSolveError`): "events",
the solve's entry and call site, and what the audit would need; never an error that blames the data,
never "no solve found". The models run as written outside the audit (their landing times checked
against free fall by hand), and the audit leaves them and the solvers as it found them.
"""

from __future__ import annotations

from pathlib import Path

import outside_models as O
import pytest
import torch

import nodecourse
from nodecourse.audit import audit
from nodecourse.audit._hook import EVENTS_NEED, EventSolveError, HookError

torch.set_num_threads(1)
SOURCE = Path(O.__file__).name
HERE = Path(__file__).name
torchdiffeq = pytest.importorskip("torchdiffeq")
if not hasattr(torchdiffeq, "odeint_event"):  # events came with torchdiffeq 0.2.0
    pytest.skip("this torchdiffeq has no odeint_event", allow_module_level=True)


def _line_of(path: str, text: str, nth: int = 0) -> int:
    """The line of ``text``'s ``nth`` occurrence in the file at ``path`` (1-based)."""
    lines = Path(path).read_text().splitlines()
    return [i + 1 for i, line in enumerate(lines) if text in line][nth]


def _refusal(model, train, test, task="regression") -> str:
    """The audit's refusal of ``model``, checked to be the events refusal (not the data's, not "no solve")."""
    before = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    with pytest.raises(EventSolveError) as err:
        audit(model, train, test, task=task, quick=True, progress=False, epochs=1)
    text = str(err.value)
    assert isinstance(err.value, HookError) and isinstance(err.value, TypeError)
    assert "events" in text and EVENTS_NEED in text
    for wrong in ("width", "first two rows", "no solve", "not at fault; this solve's form"):
        assert wrong not in text, text
    # the model as found: its weights and its mode
    assert model.training and all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    return text


@pytest.mark.parametrize(
    ("cls", "kwargs", "called_with"),
    [
        (O.BouncingBall, {}, "odeint_interface=torchdiffeq._impl.odeint.odeint"),
        (O.BouncingBall, {"adjoint": True}, "odeint_interface=torchdiffeq._impl.adjoint.odeint_adjoint"),
        (O.BouncingBall, {"interface": None}, "its default odeint_interface"),
    ],
    ids=["odeint", "odeint_adjoint", "default-interface"],
)
def test_torchdiffeqs_odeint_event_is_refused_by_name_whatever_its_interface(cls, kwargs, called_with):
    model, train, test, task = O.build_bouncing_ball(cls=cls, **kwargs)
    with torch.no_grad():  # the model runs as written: free fall's landing, recomputed by hand
        assert torch.allclose(model(test[0]), O.landing(test[0]), atol=1e-4)
    text = _refusal(model, train, test, task)
    site = f"{SOURCE}:{_line_of(O.__file__, 'torchdiffeq.odeint_event(self.dynamics')} (BouncingBall.forward)"
    assert f"torchdiffeq.odeint_event at {site}, called with event_fn=... and {called_with};" in text


@pytest.mark.parametrize("adjoint", [False, True], ids=["odeint", "odeint_adjoint"])
def test_torchdiffeqs_odeint_with_event_fn_is_refused_by_name(adjoint):
    model, train, test, task = O.build_bouncing_ball(cls=O.FallingBallByOdeint, adjoint=adjoint)
    with torch.no_grad():
        assert torch.allclose(model(test[0]), O.landing(test[0]), atol=1e-4)
    text = _refusal(model, train, test, task)
    entry = "torchdiffeq.odeint_adjoint" if adjoint else "torchdiffeq.odeint"
    site = f"{SOURCE}:{_line_of(O.__file__, 'self.odeint(self.dynamics, state, t, event_fn')}"
    # self.odeint was bound before the audit, out of the entry points' reach: the event search finds it
    found = "called with event_fn=... (found by its event search);"
    assert f"{entry} at {site} (FallingBallByOdeint.forward), {found}" in text


class CourseBall(torch.nn.Module):
    """The falling ball through the library: ``nodecourse.odeint_event`` (its default interface, or
    ``nodecourse.odeint`` given) or ``nodecourse.odeint(..., event_fn=...)`` (also held as
    ``self.solve``); a tensor state ``(pos, vel)``."""

    def __init__(self, how: str):
        super().__init__()
        self.field = O.BallField()
        self.how = how
        self.solve = nodecourse.odeint

    def dynamics(self, t, y):
        pos, vel, _ = self.field(t, (y[:1], y[1:2], y[:1]))
        return torch.cat([pos, vel])

    def forward(self, x):
        event = lambda t, y: y[0] - 0.2  # noqa: E731 (the ball's bottom touches the ground)
        out = []
        for row in x:
            if self.how == "odeint_event":
                t_ev, ys = nodecourse.odeint_event(self.dynamics, row, torch.tensor(0.0), event_fn=event)
            elif self.how == "odeint_event+interface":
                t_ev, ys = nodecourse.odeint_event(
                    self.dynamics, row, torch.tensor(0.0), event_fn=event, odeint_interface=nodecourse.odeint
                )
            elif self.how == "odeint":
                sol = nodecourse.odeint(self.dynamics, row, torch.tensor([0.0, 10.0]), event_fn=event)
                t_ev, ys = sol.event_t, sol.ys
            else:  # a name held before the audit: the entry points' patches do not reach it
                sol = self.solve(self.dynamics, row, torch.tensor([0.0, 10.0]), event_fn=event)
                t_ev, ys = sol.event_t, sol.ys
            out.append(torch.stack([t_ev.reshape(()), ys[-1][1].abs()]))
        return torch.stack(out)


@pytest.mark.parametrize(
    ("how", "entry", "called_with"),
    [
        ("odeint_event", "nodecourse.odeint_event", "event_fn=... and its default odeint_interface"),
        (
            "odeint_event+interface",
            "nodecourse.odeint_event",
            "event_fn=... and odeint_interface=nodecourse.solvers._odeint.odeint",
        ),
        ("odeint", "nodecourse.odeint", "event_fn=..."),
        ("attribute", "nodecourse.odeint", "event_fn=... (found by its event search)"),
    ],
)
def test_the_librarys_events_are_refused_by_name(how, entry, called_with):
    _, train, test, task = O.build_bouncing_ball()
    model = CourseBall(how)
    with torch.no_grad():
        assert torch.allclose(model(test[0]), O.landing(test[0]), atol=1e-4)
    text = _refusal(model, train, test, task)
    calls = {"odeint": "nodecourse.odeint(self.dynamics", "attribute": "self.solve(self.dynamics"}
    text_of_call = calls.get(how, "t_ev, ys = nodecourse.odeint_event(")
    line = _line_of(__file__, text_of_call, nth=1 if how == "odeint_event+interface" else 0)
    assert f"{entry} at {HERE}:{line} (CourseBall.forward), called with {called_with};" in text


class EventsWhenTraining(O.BouncingBall):
    """Events on the training route only: evaluated by a plain solve to a fixed time (a model that
    picks its solve on ``self.training``)."""

    def forward(self, x):
        if self.training:
            return super().forward(x)
        state = (x[:, :1], x[:, 1:2], self.log_radius.expand(x.shape[0], 1))
        _, vel, _ = odeint_fixed(self.dynamics, state, torch.tensor([0.0, 0.5]))
        return torch.cat([vel[-1], vel[-1]], dim=1)


def odeint_fixed(func, y0, t):
    return torchdiffeq.odeint(func, y0, t, rtol=1e-6, atol=1e-6)


def test_events_on_the_training_route_only_are_refused_not_passed_over():
    _, train, test, task = O.build_bouncing_ball()
    text = _refusal(EventsWhenTraining(), train, test, task)
    assert "torchdiffeq.odeint_event at" in text and "(BouncingBall.forward)" in text


def test_the_solvers_are_put_back_and_events_run_after_the_refusal():
    model, train, test, task = O.build_bouncing_ball(interface=None)
    originals = (torchdiffeq.odeint_event, torchdiffeq.odeint, nodecourse.odeint_event, nodecourse.odeint)
    _refusal(model, train, test, task)
    after = (torchdiffeq.odeint_event, torchdiffeq.odeint, nodecourse.odeint_event, nodecourse.odeint)
    assert all(a is b for a, b in zip(after, originals))
    assert not hasattr(O.torchdiffeq.odeint_event, "__nodecourse_original__")
    with torch.no_grad():
        assert torch.allclose(model(test[0]), O.landing(test[0]), atol=1e-4)


def test_the_command_line_prints_the_refusal_not_a_traceback(tmp_path, capsys):
    import argparse

    from nodecourse.course.audit_cmd import add_arguments, main

    path = tmp_path / "ball.py"
    path.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import outside_models as O\n"
        "def build():\n"
        "    return O.build_bouncing_ball(adjoint=True)\n"
    )
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    code = main(parser.parse_args(["--model", f"{path}:build", "--quick", "--no-progress"]))
    err = capsys.readouterr().err
    assert code == 2 and "error: the audit's hook found a solve with events: torchdiffeq.odeint_event" in err
