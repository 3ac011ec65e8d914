"""The audit's progress: each step's bars close before its line prints, in step order; and two things a
reader of a step sees (step 2 when every input costs the same work, step 5 naming why a route did not run)."""

import re

import pytest
import torch
from torch import nn
from tqdm import tqdm

from nodecourse.audit import _step3_tolerance as step3_tolerance
from nodecourse.audit import _step5_gradients as step5_gradients
from nodecourse.audit import audit
from nodecourse.models import LinearField, ODEBlock, Readout

torch.set_num_threads(1)


def _classifier(n=160, **solver):
    """A decaying linear flow then logits (z0, -z0); class 0 where x0 > 0 (the model is right on all)."""
    field = LinearField(rates=(-0.5, -0.2), angle=0.0, dtype=torch.float32)
    readout = nn.Linear(2, 2)
    with torch.no_grad():
        readout.weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        readout.bias.zero_()
    model = Readout(ODEBlock(field, t1=1.0, **solver), readout)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 2, generator=g)
    x[:, 0] = x[:, 0].sign() * (x[:, 0].abs() + 0.3)
    y = (x[:, 0] < 0).long()
    return model, (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :])


@pytest.fixture(scope="module")
def fixed_step_run():
    model, train, test = _classifier(method="rk4", step_size=0.1)
    return model, train, test


def _positions(text: str, marks: list[str]) -> list[int]:
    return [text.index(m) for m in marks]


def test_each_steps_line_follows_its_bars_in_step_order(fixed_step_run, capsys):
    model, train, test = fixed_step_run
    audit(model, train, test, quick=True, progress=True, epochs=1)
    err = capsys.readouterr().err
    lines = [m.group(1) for m in re.finditer(r"audit: step (\d)/5", err)]
    assert lines == ["1", "2", "3", "4", "5"]
    order = _positions(
        err,
        [
            "baseline, seed",
            "audit: step 1/5",
            "step 2: one input at a time",
            "audit: step 2/5",
            "step 3: tolerance sweep",
            "audit: step 3/5",
            "step 4: regimes",
            "audit: step 4/5",
            "audit: step 5/5",
        ],
    )
    assert order == sorted(order), err
    assert not tqdm._instances  # every bar the audit opened is closed


def test_a_step_that_raises_mid_sweep_closes_its_bar_before_its_line(fixed_step_run, capsys, monkeypatch):
    model, train, test = fixed_step_run

    def broken(*args, **kwargs):
        raise RuntimeError("planted failure in the sweep")

    monkeypatch.setattr(step3_tolerance, "run", broken)
    report = audit(model, train, test, quick=True, progress=True, epochs=1)
    assert report.step(3).verdict == "failed" and "planted failure" in report.step(3).summary
    assert not tqdm._instances
    err = capsys.readouterr().err
    assert err.index("audit: step 3/5") < err.index("audit: step 4/5")


def test_constant_work_shows_wall_time_per_input(fixed_step_run):
    model, train, test = fixed_step_run
    step = audit(model, train, test, quick=True, progress=False, epochs=1).step(2)
    assert step.data["min"] == step.data["max"]  # rk4 at a fixed step: the same NFE for every input
    assert len(step.data["seconds"]) == step.data["n_inputs"]
    figure = step.figures[0]
    assert "took the same" in figure.caption and "milliseconds" in figure.caption
    assert figure.png.startswith(b"\x89PNG")


def test_a_route_that_did_not_run_says_why_where_it_is_named():
    assert step5_gradients._num(None, "ValueError: the adjoint needs an nn.Module") == (
        "not run: ValueError: the adjoint needs an nn.Module"
    )
    assert step5_gradients._num(None) == "n/a" and step5_gradients._num(0.5) == 0.5
